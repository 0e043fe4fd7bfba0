"""``layerconf audit`` and ``audit diff`` / ``replay`` / ``verify``: write, compare, show, check.

``audit`` resolves the roles and writes their record as `write_audit` would (signed with
``--key-file``); the others read records instead of a trainer's command line.
"""

from __future__ import annotations

import argparse
import enum
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from layerconf.cli.command import Command, a_path, usage
from layerconf.cli.commands.show import show_roles, shown_options
from layerconf.cli.errors import EXIT_OK, EXIT_PROBLEMS, PROG, UsageError, print_error
from layerconf.cli.render import Paint, dump_json, heading, table, value_json, value_text
from layerconf.cli.resolving import report_failure, resolved
from layerconf.cli.scrub import stderr, stdout
from layerconf.cli.trainer import imported_files
from layerconf.exceptions import one_line

if TYPE_CHECKING:
    from pathlib import Path

    from layerconf.audits import AuditChange, AuditRecord
    from layerconf.cli.render import Cell
    from layerconf.core.records import Origin

# ---------------------------------------------------------------------------------------------
# audit


def _audit_options(parser: argparse.ArgumentParser) -> None:
    from layerconf.audits import AUDIT_FILE

    parser.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        type=a_path,
        help="write the record to this file, atomically (a new path, or over a regular file: "
        "never a FIFO, a device, the key file or a role file the command read); a directory "
        f"(existing, or written with a trailing '/') "
        f"gets {AUDIT_FILE} in it; '-' or none: print it",
    )
    _key_option(parser, signs=True)


def _run_audit(options: argparse.Namespace, argv: list[str]) -> int:
    # record_bytes and write_atomic are what write_audit() does, given the record once: the
    # same bytes go to stdout or to any file name, and the fingerprint is reported.
    from layerconf.audits import audit, record_bytes, sign

    key = _key(options, f"{PROG} audit")
    outcome = resolved(options, argv)
    if outcome.roles is None:
        return report_failure(outcome)
    record = audit(outcome.roles, key=key)  # the key digests scrubbed values too
    if key is not None:
        record = sign(record, key)
    data = record_bytes(record)
    if options.output in (None, "-"):
        stdout().write(data.decode("ascii"))
        return EXIT_OK
    read = dict.fromkeys(record["files"], "a role file the record was made from")
    read.update(imported_files(options))
    if options.key_file is not None:
        read[options.key_file] = "the --key-file"
    written = _write(options.output, data, read)
    print(f"wrote {one_line(str(written))} (fingerprint {record['fingerprint']})", file=stderr())
    return EXIT_OK


def _write(output: str, data: bytes, read: dict[str, str]) -> Path:
    """Write a record's `data` where -o `output` says, atomically; a failure is a usage error,
    and so is a path that names one of the files the command `read` (path: what it is)."""
    from pathlib import Path

    from layerconf.audits import AUDIT_FILE
    from layerconf.cli.streams import refuse_an_input, write_atomically

    prog = f"{PROG} audit"
    if output.endswith(("/", os.sep)) or os.path.isdir(output):
        directory, name = Path(output), AUDIT_FILE
    else:
        directory, name = Path(output).parent, Path(output).name
    refuse_an_input(directory / name, read, what="the audit record", shown=output, prog=prog)
    return write_atomically(directory, name, data, what="the audit record", shown=output, prog=prog)


# ---------------------------------------------------------------------------------------------
# Reading records


def _key_option(
    parser: argparse.ArgumentParser, *, signs: bool = False, required: bool = False
) -> None:
    """--key-file FILE: the key records are signed with (`signs`) or checked against."""
    parser.add_argument(
        "--key-file",
        metavar="FILE",
        type=a_path,
        required=required,
        help="sign the record with the key in FILE (HMAC-SHA256; the file's bytes, without one "
        "trailing newline)"
        if signs
        else "check each record's signature with the key in FILE: a record not signed with it "
        "is refused",
    )


def _key(options: argparse.Namespace, prog: str) -> bytes | None:
    """The key in --key-file's file, or None without one; never printed."""
    path: str | None = getattr(options, "key_file", None)
    if path is None:
        return None
    from layerconf.sources.files import UnreadableFile, read_bounded

    try:
        key = read_bounded(path, limit=64 * 1024, kind="key file")
    except UnreadableFile as error:
        raise UsageError(f"--key-file {path}: {error.message} ({error.hint})", prog) from None
    key = key.removesuffix(b"\n").removesuffix(b"\r")
    if not key:
        raise UsageError(f"--key-file {path}: the file is empty: it holds no key", prog)
    return key


def _types_option(parser: argparse.ArgumentParser) -> None:
    """--parser MODULE:ATTR: whose enum classes a record's values are rebuilt as."""
    parser.add_argument(
        "--parser",
        metavar="MODULE:ATTR",
        help="the trainer's parser, imported as other commands import it: the enum classes "
        "of its arguments are rebuilt from the record (a record itself never makes layerconf "
        "import a module)",
    )


def _trusted_enums(options: argparse.Namespace) -> list[type[enum.Enum]]:
    """The enum classes of the --parser's arguments: their defaults, choices, consts, types."""
    if options.parser is None:
        return []
    from layerconf.cli.trainer import trainer_parser

    found: dict[type[enum.Enum], None] = {}
    for action in trainer_parser(options)._actions:
        candidates = [action.default, action.const, action.type, *(action.choices or ())]
        for candidate in candidates:
            cls = candidate if isinstance(candidate, type) else type(candidate)
            if issubclass(cls, enum.Enum) and cls not in (enum.Enum, enum.Flag):
                found[cls] = None
    return list(found)


def read_record(
    options: argparse.Namespace, prog: str
) -> tuple[AuditRecord, tuple[str, ...]] | None:
    """The record `options.record` names and the roles asked of it (`--role`, else every
    role); None if it cannot be read (said on stderr). An unknown role is a usage error."""
    records = _read_records([options.record], prog, options)
    if records is None:
        return None
    [record] = records
    roles = record.roles
    if options.role is None:
        return record, roles
    if options.role not in roles:
        from layerconf.core.suggest import suggestion

        raise UsageError(
            f"unknown role {options.role!r}{suggestion(options.role, roles)} (roles of "
            f"{record.path}: {', '.join(roles)})",  # (one line: UsageError)
            prog,
        )
    return record, (options.role,)


def _read_records(
    paths: Sequence[str], prog: str, options: argparse.Namespace
) -> list[AuditRecord] | None:
    """The records at `paths` (files, or directories holding one); None if any is unreadable.

    Each unreadable record is one error line on stderr, naming the file and what is wrong.
    """
    records = _each_record(paths, prog, options)
    return None if None in records else [record for record in records if record is not None]


def _each_record(
    paths: Sequence[str], prog: str, options: argparse.Namespace
) -> list[AuditRecord | None]:
    """The record at each of `paths`, or None for one that is unreadable (one error line on
    stderr each, naming the file and what is wrong); the key file read once."""
    from layerconf.audits import load_audit
    from layerconf.exceptions import AuditError

    types = _trusted_enums(options)
    key = _key(options, prog)
    records: list[AuditRecord | None] = []
    for path in paths:
        record = None
        try:
            record = load_audit(path, types=types, key=key)
        except AuditError as error:
            print_error(f"{prog}: error: {one_line(str(error))}")
        except FileNotFoundError as error:
            print_error(f"{prog}: error: {one_line(_missing_record(path, error))}")
        except OSError as error:
            where = error.filename if isinstance(error.filename, str) else path
            print_error(f"{prog}: error: {one_line(f'{where}: {error.strerror or error}')}")
        records.append(record)
    return records


def _missing_record(path: str, error: FileNotFoundError) -> str:
    """What a user reads for a record that is not there: where it was looked for, and what
    makes one."""
    where = error.filename if isinstance(error.filename, str) else path
    looked = (
        f"the directory {path} holds no {os.path.basename(where)}"
        if os.path.isdir(path)
        else "check the path"
    )
    relative = (
        ""
        if os.path.isabs(where)
        else (f"; a relative path is read from the current directory {os.getcwd()}")
    )
    return (
        f"{where}: no such audit record ({looked}{relative}; a record is written by "
        "'layerconf audit -o FILE' or layerconf.write_audit(roles, directory))"
    )


# ---------------------------------------------------------------------------------------------
# audit diff


def _audit_diff_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "before", metavar="BEFORE", type=a_path, help="an audit record, or its directory"
    )
    parser.add_argument("after", metavar="AFTER", type=a_path, help="the record to compare it with")
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    _types_option(parser)
    _key_option(parser)


def _run_audit_diff(options: argparse.Namespace, argv: list[str]) -> int:
    from layerconf.audits import diff_audits
    from layerconf.audits.diff import diff_files

    del argv
    records = _read_records([options.before, options.after], f"{PROG} audit diff", options)
    if records is None:
        return EXIT_PROBLEMS
    before, after = records
    changes = diff_audits(before, after)
    files = diff_files(before, after)
    if options.json:
        dump_json(
            [_change_json(change) for change in changes]
            + [
                {"role": None, "key": None, "kind": "file", "file": f.path}
                | {"before": f.before, "after": f.after}
                for f in files
            ]
        )
    else:
        if changes:
            print("\n".join(_changes_table(changes, before, after)), file=stdout())
        if files:  # a role file edited, even if no value changed
            print("\n".join(f"role file {change}" for change in files), file=stdout())
    count = len(changes)
    between = f"between {options.before} and {options.after}"
    if count:
        summary = f"{count} change{'' if count == 1 else 's'} {between}"
    else:
        summary = f"no change {between}"
    if files:
        summary += f"; {len(files)} file{'' if len(files) == 1 else 's'} with other sha256"
    print(summary, file=stderr())
    return EXIT_OK


def _change_json(change: AuditChange) -> dict[str, Any]:
    """A change as ``audit diff --json`` lists it: role, key, kind, and each side (or null)."""
    from layerconf.core.secrets import redact

    def side(key: str | None, value: Any, origin: Origin | None) -> dict[str, Any]:
        value = redact(key or "", value)  # a record holds no secret; a hand-made one might
        return value_json(value, origin)

    return {
        "role": change.role,
        "key": change.key,
        "kind": change.kind,
        "before": None
        if change.kind == "added" or change.key is None
        else side(change.key, change.before, change.before_origin),
        "after": None
        if change.kind == "removed" or change.key is None
        else side(change.key, change.after, change.after_origin),
    }


def _changes_table(
    changes: Sequence[AuditChange], before: AuditRecord, after: AuditRecord
) -> list[str]:
    """A row per change: role, key, and each side's value and origin (a whole role: its size)."""
    from layerconf.core.secrets import redact

    paint = Paint(stdout())
    rows: list[list[Cell]] = [heading(("role", "key", "before", "", "after", ""), paint)]
    for change in changes:
        row: list[Cell] = [(change.role, None)]
        if change.key is None:  # a whole role
            held = (before if change.kind == "removed" else after).data["roles"][change.role]
            present: list[Cell] = [(f"({len(held['settings'])} keys)", None), ("", None)]
            unset: list[Cell] = [("(unset)", None), ("", None)]
            row.append(("(role)", None))
            row += present + unset if change.kind == "removed" else unset + present
            rows.append(row)
            continue
        row.append((change.key, None))
        for kind, value, origin in (
            ("added", change.before, change.before_origin),
            ("removed", change.after, change.after_origin),
        ):
            if change.kind == kind:
                row += [("(unset)", None), ("", None)]
                continue
            row.append((value_text(redact(change.key, value), limit=None), None))
            if origin is None:
                row.append(("", None))
            else:
                row.append((origin.where, paint.layer(origin.kind)))
        rows.append(row)
    return table(rows)


# ---------------------------------------------------------------------------------------------
# audit replay


def _audit_replay_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "record", metavar="RECORD", type=a_path, help="an audit record, or its directory"
    )
    parser.add_argument(
        "--role", metavar="ROLE", help="only this role (default: every role of the record)"
    )
    shown_options(parser)
    _types_option(parser)
    _key_option(parser)


def _run_audit_replay(options: argparse.Namespace, argv: list[str]) -> int:
    from layerconf.exceptions import AuditError

    del argv
    prog = f"{PROG} audit replay"
    found = read_record(options, prog)
    if found is None:
        return EXIT_PROBLEMS
    record, roles = found
    try:
        replayed = {role: record.namespace(role) for role in roles}
    except AuditError as error:  # an enum class that is not trusted
        print_error(f"{prog}: error: {error}")
        return EXIT_PROBLEMS
    show_roles(replayed, options)
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# audit verify


def _audit_verify_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "records",
        nargs="+",
        metavar="RECORD",
        type=a_path,
        help="an audit record, or its directory",
    )
    _key_option(parser, required=True)
    parser.set_defaults(parser=None)


def _run_audit_verify(options: argparse.Namespace, argv: list[str]) -> int:
    del argv
    prog = f"{PROG} audit verify"
    records = _each_record(options.records, prog, options)
    for record in records:  # (each good one said, whichever others fail)
        if record is not None:
            print(
                f"{record.path}: signed with this key and unchanged since "
                f"(fingerprint {record.fingerprint})",
                file=stdout(),
            )
    return EXIT_PROBLEMS if None in records else EXIT_OK


COMMANDS = (
    Command(
        "audit",
        usage("audit", "[-o PATH] [--key-file FILE] -- ARGV..."),
        "the audit record of the configuration, as JSON run metadata",
        "Resolve the roles and write their audit record (what layerconf.write_audit "
        "writes): every\nvalue of every role with its origin and what it shadowed, the "
        "command line, the role\nfiles' sha256 and a fingerprint of the values, secrets "
        "redacted. Printed on stdout,\nor written atomically with -o.",
        "examples:\n"
        f"  {PROG} audit -o runs/001/ -- $(cat launch_argv.txt)\n"
        f"  {PROG} audit -- $(cat launch_argv.txt) > before.json\n\n"
        "then:\n"
        f"  {PROG} audit diff BEFORE AFTER     the values that changed between two "
        "records\n"
        f"  {PROG} audit replay RECORD         a record's roles, shown as 'show' shows "
        "them\n"
        f"  {PROG} audit verify RECORD         check a signed record (--key-file)\n"
        f"  {PROG} audit relaunch RECORD       the command line that re-launches the run\n"
        f"  {PROG} audit explain RECORD KEY    where a recorded value came from\n\n"
        "exit status: 0 written; 1 a configuration that does not resolve; 2 a usage "
        "error\n(or a PATH that cannot be written).",
        _audit_options,
        _run_audit,
    ),
    Command(
        "audit diff",
        usage(
            "audit diff",
            "[--json] [--parser MODULE:ATTR] [--key-file FILE]\n"
            + " " * len("usage: layerconf audit diff ")
            + "BEFORE AFTER",
            takes_parser=False,
        ),
        "the values that changed between two audit records",
        "The values that changed between two runs' audit records, per role and key, "
        "with the layer\nthat set each side. Values compare as recorded (1 and 1.0 "
        "differ); mappings are compared\nleaf by leaf; redacted secrets compare "
        "equal. BEFORE and AFTER are record files, or the\ndirectories "
        "write_audit() wrote them into.",
        "example:\n"
        f"  {PROG} audit diff runs/001 runs/002\n\n"
        "exit status: 0 whatever the differences; 1 a record that cannot be read; 2 a "
        "usage error.",
        _audit_diff_options,
        _run_audit_diff,
        takes_argv=False,
        takes_parser=False,
    ),
    Command(
        "audit replay",
        usage(
            "audit replay",
            "[--role ROLE] [--changed | --all] [--json | --yaml]\n"
            + " " * len("usage: layerconf audit replay ")
            + "[--parser MODULE:ATTR] [--key-file FILE] RECORD",
            takes_parser=False,
        ),
        "a role's configuration rebuilt from an audit record",
        "Rebuild each role's namespace from an audit record (AuditRecord.namespace) and "
        "show it as\n'show' does: every key, its value and its recorded origin. "
        "Secrets stay redacted.",
        "example:\n"
        f"  {PROG} audit replay runs/001 --role critic --changed\n\n"
        "exit status: 0 shown; 1 a record that cannot be read or replayed; 2 a usage "
        "error\n(an unknown ROLE).",
        _audit_replay_options,
        _run_audit_replay,
        takes_argv=False,
        takes_parser=False,
    ),
    Command(
        "audit verify",
        usage("audit verify", "--key-file FILE RECORD [RECORD ...]", takes_parser=False),
        "check that audit records were signed with a key, and not changed since",
        "Check each record's signature (layerconf audit --key-file, write_audit(..., key=)) "
        "with the\nkey in FILE: a record signed with it and unchanged since passes; one that "
        "is not signed,\nsigned with another key or changed after it was signed is refused. "
        "The fingerprint alone\ndetects accidents; a signature also says who could have "
        "written the record.",
        "example:\n"
        f"  {PROG} audit -o runs/001/ --key-file ~/.layerconf-key -- $(cat launch_argv.txt)\n"
        f"  {PROG} audit verify --key-file ~/.layerconf-key runs/001\n\n"
        "exit status: 0 every record verified; 1 a record that cannot be read or verified; 2 "
        "a usage\nerror (a key file that cannot be read).",
        _audit_verify_options,
        _run_audit_verify,
        takes_argv=False,
        takes_parser=False,
    ),
)
