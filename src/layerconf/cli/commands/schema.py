"""``layerconf schema``: a JSON Schema for the role files of a parser, for editors."""

from __future__ import annotations

import argparse

from layerconf.cli.command import Command, a_path, usage
from layerconf.cli.errors import EXIT_OK, PROG, UsageError
from layerconf.cli.render import json_text
from layerconf.cli.scrub import stderr
from layerconf.cli.streams import emit
from layerconf.cli.trainer import imported_files, preset_of, trainer_parser
from layerconf.exceptions import one_line


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        type=a_path,
        help="write the schema to FILE, atomically (a new path, or over a regular file: never "
        "a directory, a FIFO or a device); '-' or none: print it",
    )


def _run(options: argparse.Namespace, argv: list[str]) -> int:
    del argv
    parser = trainer_parser(options)
    preset = preset_of(options)
    if preset.config_dest is None:  # plain, the default with --parser
        raise UsageError(
            f"preset {preset.name!r} reads no role file, so there is none to describe: name a "
            "preset with a role file (--preset slime, or MODULE:ATTR)",
            f"{PROG} schema",
        )
    if options.parser is not None:
        title = f"role file of {PROG} --parser {options.parser}"
    else:
        title = f"role file of {PROG} profile {options.profile!r}"
    from layerconf.presets import role_file_schema

    schema = role_file_schema(parser, title=title, preset=preset)
    text = json_text(schema)  # as dump_json prints it, to stdout or the file alike
    written = emit(
        text,
        options.output,
        what="the schema",
        example="roles.schema.json",
        prog=f"{PROG} schema",
        read=imported_files(options),
    )
    if written is not None:
        print(f"wrote {one_line(str(written))}", file=stderr())
    return EXIT_OK


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
        "  # yaml-language-server: $schema=megatron-config.schema.json\n\n"
        "exit status: 0 printed or written; 2 a usage error (or a FILE that cannot be written).",
        _options,
        _run,
        takes_argv=False,
    ),
)
