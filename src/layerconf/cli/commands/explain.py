"""``layerconf explain``: where a value came from, and what it shadowed.

``audit explain`` answers from a record with the same lookup and text (`explain_keys`,
`print_explained`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from layerconf.cli.command import Command, usage
from layerconf.cli.errors import EXIT_OK, EXIT_PROBLEMS, PROG, print_error
from layerconf.cli.render import Paint, dump_json, setting_json, table, value_text
from layerconf.cli.resolving import report_failure, resolved
from layerconf.cli.scrub import stdout
from layerconf.cli.trainer import role_option, selected
from layerconf.exceptions import one_line

if TYPE_CHECKING:
    from layerconf.cli.render import Cell
    from layerconf.core.records import Setting


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "keys",
        nargs="+",
        metavar="KEY",
        help="a dest name such as lr, a dotted path into a mapping value, or a glob such "
        "as 'lr*' (quoted, so that the shell leaves it alone)",
    )
    role_option(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def _run(options: argparse.Namespace, argv: list[str]) -> int:
    from layerconf.core.explain import explain

    outcome = resolved(options, argv)
    if outcome.roles is None:
        return report_failure(outcome, options)
    roles = selected(outcome.roles, options.role)
    known = sorted({name for namespace in roles.values() for name in vars(namespace)})
    settings, unknown = explain_keys(
        list(roles),
        known,
        list(dict.fromkeys(options.keys)),
        lambda role, key: explain(roles[role], key),
    )
    return print_explained(settings, unknown, options.json, f"{PROG} explain")


def print_explained(
    settings: Sequence[Setting], unknown: Sequence[str], json: bool, prog: str
) -> int:
    """Print `settings` as ``explain`` does (a block each, or ``--json``'s list), then an error
    line for each message of `unknown`; the exit status."""
    if json:
        dump_json([setting_json(setting) for setting in settings])
    elif settings:
        paint = Paint(stdout())
        blocks = ["\n".join(explained(setting, paint)) for setting in settings]
        print("\n\n".join(blocks), file=stdout())
    for message in unknown:  # after the others: one unknown key does not hide them
        print_error(f"{prog}: error: {message}")
    return EXIT_PROBLEMS if unknown else EXIT_OK


#: The longest KEY looked up or matched: far beyond any dest or dotted path.
MAX_KEY = 1_000


def explain_keys(
    roles: Sequence[str],
    known: Sequence[str],
    keys: Sequence[str],
    lookup: Callable[[str, str], Setting],
) -> tuple[list[Setting], list[str]]:
    """Each key explained in each role that has it; a message for each key no role has.

    `lookup(role, key)` gives the setting, or raises `KeyError`; `known` are the top-level
    keys. A KEY with ``*``, ``?`` or ``[`` is a glob over them (``'lr*'``), matched
    case-insensitively; the keys it matches are explained in sorted order. Settings come
    redacted.
    """
    import fnmatch

    from layerconf.core.values import shorten

    settings: list[Setting] = []
    unknown: list[str] = []
    for pattern in keys:
        if len(pattern) > MAX_KEY:  # (fnmatch translates '[[[...' in quadratic time)
            unknown.append(
                f"unknown key {shorten(pattern, 60)!r}: longer than any key (a KEY has at "
                f"most {MAX_KEY:,} characters)"
            )
            continue
        if any(char in pattern for char in "*?["):
            matched = [key for key in known if fnmatch.fnmatch(key.lower(), pattern.lower())]
            if not matched:
                unknown.append(f"no key matches {pattern!r}")
        else:
            matched = [pattern]
        for key in matched:
            found = False
            for role in roles:
                try:
                    settings.append(lookup(role, key).redacted())
                except KeyError:
                    continue
                found = True
            if not found:
                unknown.append(f"unknown key {key!r}{_did_you_mean(key, known)}")
    return settings, unknown


def _did_you_mean(key: str, known: Sequence[str]) -> str:
    """``; did you mean 'lr'?`` for ``LR``: the same key in other case first, else a close one
    (`layerconf.core.suggest.did_you_mean`)."""
    from layerconf.core.suggest import suggestion

    return suggestion(key, known)


def explained(setting: Setting, paint: Paint) -> list[str]:
    """A heading, then one aligned row for the final value and one per shadowed value."""
    # (one line: the key and role of an audit record from anywhere are any text)
    value = value_text(setting.value, limit=None)
    head = f"{paint(one_line(setting.key), '1')} ({one_line(str(setting.role))}) = {value}"
    note = setting.origin.label if setting.origin.kind == "rule" else None
    rows: list[list[Cell]] = [
        [
            ("from", None),
            (value_text(setting.value, limit=None), None),
            (setting.origin.layer, paint.layer(setting.origin.kind)),
            (setting.origin.place, None),
            (note or "", None),
        ]
    ]
    for number, entry in enumerate(setting.history):
        reason = "" if entry.reason is None else entry.reason.value
        if entry.by:
            reason += f" by {entry.by}"
        rows.append(
            [
                ("shadows" if number == 0 else "", None),
                (value_text(entry.value, limit=None), None),
                (entry.origin.layer, paint.layer(entry.origin.kind)),
                (entry.origin.place, None),
                (reason, lambda text: paint(text, "2")),
            ]
        )
    return [head, *table(rows, indent="  ")]


COMMANDS = (
    Command(
        "explain",
        usage("explain", "[--role ROLE] [--json] KEY [KEY ...] -- ARGV..."),
        "where a value came from, and what it shadowed",
        "For each role and KEY: the final value, where it came from (file:line:col, "
        "argv index\nand token, rule, default) and every value it shadowed, newest "
        "first.",
        "examples:\n"
        f"  {PROG} explain lr save -- --rollout-batch-size 32 --lr 2e-6 "
        "--megatron-config-path ppo.yaml\n"
        f"  {PROG} explain kl_coef --role critic --json -- $(cat launch_argv.txt)\n"
        f"  {PROG} explain 'lr*' --role actor -- $(cat launch_argv.txt)\n\n"
        "exit status: 0 explained; 1 an unknown KEY (the others are still explained) or a\n"
        "configuration that does not resolve; 2 a usage error.",
        _options,
        _run,
    ),
)
