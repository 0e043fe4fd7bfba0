"""``layerconf schema``: a JSON Schema for the role files of a parser, for editors."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from layerconf.cli.command import Command, usage
from layerconf.cli.errors import EXIT_OK, PROG, UsageError
from layerconf.cli.scrub import stderr, stdout
from layerconf.cli.trainer import preset_of, trainer_parser


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the schema to FILE, atomically (a new path, or over a regular file: never "
        "a directory, a FIFO or a device); '-' or none: print it",
    )


def _run(options: argparse.Namespace, argv: list[str]) -> int:
    del argv
    parser = trainer_parser(options)
    if options.parser is not None:
        title = f"role file of {PROG} --parser {options.parser}"
    else:
        title = f"role file of {PROG} profile {options.profile!r}"
    from layerconf.presets import role_file_schema

    schema = role_file_schema(parser, title=title, preset=preset_of(options))
    # As dump_json prints it, to stdout or the file alike.
    text = json.dumps(schema, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if options.output in (None, "-"):
        stdout().write(text)
    else:
        written = _write(options.output, text.encode("utf-8"))
        print(f"wrote {written}", file=stderr())
    return EXIT_OK


def _write(output: str, data: bytes) -> Path:
    """Write the schema's `data` to the file -o names, atomically, as ``audit -o`` writes a
    record; a path that cannot be written is a usage error naming it and why."""
    from layerconf.audits import write_atomic
    from layerconf.exceptions import AuditError

    path = Path(output)
    prog = f"{PROG} schema"
    kind = "a directory" if output.endswith(("/", os.sep)) else _not_a_file(path)
    if kind is not None:
        raise UsageError(
            f"cannot write the schema: {output} is {kind}, not a file: the schema is written "
            "only to a new path or over a regular file (name a file such as roles.schema.json)",
            prog,
        )
    try:
        return write_atomic(path.parent, path.name, data)
    except AuditError as error:  # not a regular file: a directory, a FIFO, a device...
        raise UsageError(f"cannot write the schema: {error}", prog) from None
    except OSError as error:
        where = error.filename if isinstance(error.filename, str) else output
        # mkdir() meeting a file where a directory should be says "File exists".
        reason = "Not a directory" if isinstance(error, FileExistsError) else error.strerror
        raise UsageError(f"cannot write the schema: {where}: {reason or error}", prog) from None


COMMANDS = (
    Command(
        "schema",
        usage("schema", "[-o FILE]", takes_argv=False),
        "a JSON Schema for role files, for editors",
        "A JSON Schema (draft 2020-12) for the role files of a parser: every dest with "
        "its type,\nchoices, default and help, unknown keys rejected, so that an editor "
        "with\nyaml-language-server completes and validates role files as they are "
        "typed.",
        "example:\n"
        f"  {PROG} schema -o megatron-config.schema.json\n"
        "  then, on the first line of a role file:\n"
        "  # yaml-language-server: $schema=megatron-config.schema.json",
        _options,
        _run,
        takes_argv=False,
    ),
)


def _not_a_file(path: Path) -> str | None:
    """What is at `path` if a schema must not replace it (None: nothing yet, or a regular
    file, or a link to one); `write_atomic` checks again as it writes."""
    import stat

    from layerconf.sources.files import describe_mode

    try:
        found = os.stat(path)
    except FileNotFoundError:
        return "a symbolic link that leads nowhere" if os.path.islink(path) else None
    except OSError:
        return None  # write_atomic says why it cannot be written
    return None if stat.S_ISREG(found.st_mode) else describe_mode(found.st_mode)
