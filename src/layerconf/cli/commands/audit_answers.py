"""``layerconf audit relaunch`` and ``audit explain``: answers from a record alone.

``audit relaunch`` prints the command line a record kept, shell-quoted, as Hydra's saved
overrides re-launch a run; ``audit explain`` says why a key has its value, with the values it
shadowed, as ``explain`` says it of a command line.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Mapping
from typing import Any

from layerconf.audits.codec import compact
from layerconf.audits.scrubbed import SCRUBBED
from layerconf.cli.command import Command, a_path, usage
from layerconf.cli.commands.audit import _key_option, _types_option, read_record
from layerconf.cli.commands.explain import explain_keys, print_explained
from layerconf.cli.errors import EXIT_OK, EXIT_PROBLEMS, PROG, print_error
from layerconf.cli.scrub import stderr, stdout


def _record_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "record", metavar="RECORD", type=a_path, help="an audit record, or its directory"
    )


# ---------------------------------------------------------------------------------------------
# audit relaunch


def _relaunch_options(parser: argparse.ArgumentParser) -> None:
    _record_option(parser)
    parser.add_argument(
        "--role",
        metavar="ROLE",
        help="the command line this role was resolved from, when the record holds one of its "
        "own (default: the record's)",
    )
    _key_option(parser)
    parser.set_defaults(parser=None)


def _run_relaunch(options: argparse.Namespace, argv: list[str]) -> int:
    del argv
    prog = f"{PROG} audit relaunch"
    found = read_record(options, prog)
    if found is None:
        return EXIT_PROBLEMS
    record, _ = found
    sections = record.data["roles"]
    recorded = record.argv
    if options.role is not None and "argv" in sections[options.role]:
        own = sections[options.role]["argv"]
        recorded = None if own is None else tuple(own)
    others = [role for role in record.roles if "argv" in sections[role]]
    if options.role is None and others:
        print(
            f"{prog}: note: role {', '.join(others)} was resolved from another command line: "
            f"--role {others[0]} prints it",
            file=stderr(),
        )
    if recorded is None:
        print_error(
            f"{prog}: error: {record.path}: the record holds no command line (the roles were "
            "resolved from values, not parsed): there is nothing to re-launch"
        )
        return EXIT_PROBLEMS
    from layerconf.audits._argv import keep_own_tokens
    from layerconf.core.secrets import SECRETS, redact_argv

    roles = (
        [options.role] if options.role is not None else [r for r in record.roles if r not in others]
    )
    # A record never holds a secret's value, but an edited or foreign one may: redacted too,
    # but for a token the record says a key that is no secret's took (a positional's).
    hidden = redact_argv(recorded)[0]
    owners = [
        (key, entry.get("argv_index"), entry.get("token"))
        for role in roles
        for key, entry in sections[role]["settings"].items()
        if entry.get("kind") == "argv"
    ]
    keep_own_tokens(recorded, hidden, [], owners, SECRETS)
    recorded = tuple(hidden)
    print(" ".join(map(shell_word, recorded)), file=stdout())
    for index, flag in redacted_flags(recorded):
        print(
            f"{prog}: argv[{index}]: supply the secret of {shell_word(flag)}: the record holds a "
            "placeholder in its place",
            file=stderr(),
        )
    # The command line alone does not set what the environment did: each variable is said.
    for variable, (keys, value) in _from_the_environment(sections, roles).items():
        # A secret by name, a value the record holds scrubbed (a URL's password), or one
        # whose form shows a secret (an edited or foreign record may hold its value): the
        # secret to supply, with what the record shows of it, never its marker nor the secret.
        shown = value
        if isinstance(value, Mapping) and value.get("$type") == SCRUBBED:
            shown = value.get("shown")
        shown = SECRETS.redact(keys[0], shown)
        if any(map(SECRETS.is_secret, [variable, *keys])) or shown == SECRETS.placeholder:
            what = "supply the secret it held"
        elif shown != value:
            what = f"supply the secret it held (the record shows {compact(shown)})"
        else:
            what = f"set it again (the record's value: {compact(value)})"
        print(
            f"{prog}: environment variable {shell_word(variable)} set "
            f"{', '.join(map(shell_word, keys))}, which the "
            f"command line does not hold: {what}",
            file=stderr(),
        )
    return EXIT_OK


def _from_the_environment(
    sections: Mapping[str, Any], roles: list[str]
) -> dict[str, tuple[list[str], Any]]:
    """Each environment variable that set a value of `roles`, with the keys it set and the
    recorded (encoded) value."""
    found: dict[str, tuple[list[str], Any]] = {}
    for role in roles:
        for key, entry in sections[role]["settings"].items():
            if entry.get("kind") != "env" or not isinstance(entry.get("token"), str):
                continue
            keys, _ = found.setdefault(entry["token"], ([], entry.get("value")))
            if key not in keys:
                keys.append(str(key))
    return found


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shell_word(token: str) -> str:
    """`token` as a shell word: `shlex.quote`'s, or, for a token holding a character a terminal
    would act on (an escape sequence from a forged record, a line break, a right-to-left
    override), bash's ANSI-C quoting (zsh and ksh read it too) with that character escaped:
    ``$'/ckpt\\x1b[2J'``, ``\\n``, ``\\u202e`` (``\\u009b`` for a C1 control). A byte of argv
    that was not UTF-8 (a lone surrogate) is written as that byte, ``\\xff``, so that the
    shell gives back the very token."""
    if token.isprintable():
        return shlex.quote(token)
    out = []
    for char in token:
        code = ord(char)
        if char in "\\'":
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        elif char in _NAMED:
            out.append(_NAMED[char])
        elif code < 0x80:  # (bash's \\xHH is a byte: above 0x7f it would not be UTF-8)
            out.append(f"\\x{code:02x}")
        elif 0xDC80 <= code <= 0xDCFF:  # surrogateescape's byte
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "$'" + "".join(out) + "'"


def redacted_flags(argv: tuple[str, ...]) -> list[tuple[int, str]]:
    """The index and flag of each redacted value in a recorded command line."""
    from layerconf.core.secrets import SECRETS

    found = []
    for index, token in enumerate(argv):
        if SECRETS.placeholder not in token:
            continue
        if token.startswith("-") and "=" in token:  # --wandb-key=<redacted>
            found.append((index, token.split("=", 1)[0]))
        elif index and argv[index - 1].startswith("-"):  # --wandb-key <redacted>
            found.append((index, argv[index - 1]))
        else:
            found.append((index, f"the token {token!r}"))
    return found


# ---------------------------------------------------------------------------------------------
# audit explain


def _explain_options(parser: argparse.ArgumentParser) -> None:
    _record_option(parser)
    parser.add_argument(
        "keys",
        nargs="+",
        metavar="KEY",
        help="a dest name such as lr, a dotted path into a mapping value, or a glob such "
        "as 'lr*' (quoted, so that the shell leaves it alone)",
    )
    parser.add_argument(
        "--role", metavar="ROLE", help="only this role (default: every role of the record)"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    _types_option(parser)
    _key_option(parser)


def _run_explain(options: argparse.Namespace, argv: list[str]) -> int:
    from layerconf.exceptions import AuditError

    del argv
    prog = f"{PROG} audit explain"
    found = read_record(options, prog)
    if found is None:
        return EXIT_PROBLEMS
    record, roles = found
    try:
        known = sorted({key for role in roles for key in record.values(role, strict=False)})
        settings, unknown = explain_keys(
            roles, known, list(dict.fromkeys(options.keys)), record.setting
        )
    except AuditError as error:  # a value the record cannot rebuild
        print_error(f"{prog}: error: {error}")
        return EXIT_PROBLEMS
    return print_explained(settings, unknown, options.json, prog)


COMMANDS = (
    Command(
        "audit relaunch",
        usage("audit relaunch", "[--role ROLE] [--key-file FILE] RECORD", takes_parser=False),
        "the command line that re-launches a recorded run",
        "Print the command line an audit record kept, shell-quoted (shlex.quote; a token "
        "holding a\ncontrol character in bash's $'...', the character escaped), as Hydra's "
        "saved overrides\nre-launch a run. Secrets were redacted when the record was written: "
        "each one\nis a placeholder, and a line on stderr names the flag whose secret to "
        "supply.",
        "example:\n"
        f'  eval "python train.py $({PROG} audit relaunch runs/001)"\n\n'
        "exit status: 0 printed; 1 a record that cannot be read, or holds no command line; 2 "
        "a\nusage error.",
        _relaunch_options,
        _run_relaunch,
        takes_argv=False,
        takes_parser=False,
    ),
    Command(
        "audit explain",
        usage(
            "audit explain",
            "[--role ROLE] [--json] [--parser MODULE:ATTR]\n"
            + " " * len("usage: layerconf audit explain ")
            + "[--key-file FILE] RECORD KEY [KEY ...]",
            takes_parser=False,
        ),
        "where a recorded value came from, and what it shadowed",
        "For each role and KEY of an audit record: the value, where it came from and every "
        "value it\nshadowed, newest first, as 'explain' shows them for a command line. "
        "Secrets stay redacted.",
        "examples:\n"
        f"  {PROG} audit explain runs/001 kl_coef --role critic\n"
        f"  {PROG} audit explain runs/001 'lr*' --json\n\n"
        "exit status: 0 explained; 1 an unknown KEY (the others are still explained) or a "
        "record\nthat cannot be read; 2 a usage error (an unknown ROLE).",
        _explain_options,
        _run_explain,
        takes_argv=False,
        takes_parser=False,
    ),
)
