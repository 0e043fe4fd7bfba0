"""``layerconf diff``: the keys whose values differ between the roles, each with its origin."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from layerconf.cli.command import Command, usage
from layerconf.cli.errors import EXIT_OK, PROG
from layerconf.cli.render import Paint, dump_json, heading, table, value_json, value_text
from layerconf.cli.resolving import report_failure, resolved
from layerconf.cli.scrub import stderr, stdout

if TYPE_CHECKING:
    from layerconf.cli.render import Cell
    from layerconf.core.namespace import Namespace
    from layerconf.core.records import Setting

    # A key that differs, and each role's setting of it (None: the role does not have it).
    _Difference = tuple[str, dict[str, Setting | None]]


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def _run(options: argparse.Namespace, argv: list[str]) -> int:
    outcome = resolved(options, argv)
    if outcome.roles is None:
        return report_failure(outcome, options)
    roles = outcome.roles
    names = list(roles)
    differing = _differing(roles)
    if options.json:
        dump_json(
            [
                {
                    "key": key,
                    "roles": {
                        role: None if setting is None else value_json(setting.value, setting.origin)
                        for role, setting in sides.items()
                    },
                }
                for key, sides in differing
            ]
        )
    elif differing:
        print("\n".join(_diff_table(differing, names)), file=stdout())
    count = len(differing)
    between = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 2 else names)
    if count:
        summary = f"{count} key{'' if count == 1 else 's'} differ between {between}"
    else:
        summary = f"no key differs between {between}"
    print(summary, file=stderr())
    return EXIT_OK


def _differing(roles: Mapping[str, Namespace]) -> list[_Difference]:
    """The keys whose values are not the same in every role (a key some role lacks too)."""
    from layerconf.core.explain import explain
    from layerconf.core.values import same_value

    keys = sorted({key for namespace in roles.values() for key in vars(namespace)})
    absent: Any = object()
    differing: list[_Difference] = []
    for key in keys:
        values = [vars(namespace).get(key, absent) for namespace in roles.values()]
        if all(same_value(values[0], other) for other in values[1:]):
            continue
        differing.append(
            (
                key,
                {
                    role: explain(namespace, key).redacted() if key in vars(namespace) else None
                    for role, namespace in roles.items()
                },
            )
        )
    return differing


def _diff_table(differing: Sequence[_Difference], names: Sequence[str]) -> list[str]:
    """A row per key: each role's value and where it came from."""
    paint = Paint(stdout())
    head = ["key"]
    for role in names:
        head += [role, ""]
    rows: list[list[Cell]] = [heading(head, paint)]
    for key, sides in differing:
        row: list[Cell] = [(key, None)]
        for role in names:
            setting = sides[role]
            if setting is None:
                row += [("(unset)", None), ("", None)]
                continue
            origin = setting.origin
            shown = value_text(setting.value, limit=None)
            row += [(shown, None), (origin.where, paint.layer(origin.kind))]
        rows.append(row)
    return table(rows)


COMMANDS = (
    Command(
        "diff",
        usage("diff", "[--json] -- ARGV..."),
        "the keys whose values differ between the roles",
        "The keys whose values differ between the roles, each side with its origin. "
        "A value of\nanother type counts as different (the critic's kl_coef 0 against "
        "the actor's 0.0).",
        "example:\n"
        f"  {PROG} diff -- $(cat launch_argv.txt)\n\n"
        "exit status: 0 whether or not the roles differ; 1 a configuration that does "
        "not resolve;\n2 a usage error.",
        _options,
        _run,
    ),
)
