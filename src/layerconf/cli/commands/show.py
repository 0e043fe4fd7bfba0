"""``layerconf show``: the resolved configuration of each role, with origins.

`show_roles` also shows the roles ``audit replay`` rebuilds from a record.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from layerconf.cli.command import Command, usage
from layerconf.cli.errors import EXIT_OK, PROG
from layerconf.cli.render import Paint, dump_json, table, value_json, value_text, yaml_flow
from layerconf.cli.resolving import report_failure, resolved
from layerconf.cli.scrub import stdout
from layerconf.cli.trainer import role_option, selected

if TYPE_CHECKING:
    from layerconf.cli.render import Cell
    from layerconf.core.records import Setting


def shown_options(parser: argparse.ArgumentParser) -> None:
    """--changed (the default) or --all, and --json or --yaml: the options `show_roles` reads."""
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--changed",
        dest="all",
        action="store_false",
        help="only the keys not at the parser's default: set by the command line, a source, a "
        "role file or a rule (the default)",
    )
    which.add_argument(
        "--all",
        dest="all",
        action="store_true",
        help="every key, defaults included",
    )
    parser.set_defaults(all=False)
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print a JSON object")
    form.add_argument(
        "--yaml", action="store_true", help="print YAML, each value's origin as a comment"
    )


def _options(parser: argparse.ArgumentParser) -> None:
    role_option(parser)
    shown_options(parser)


def _run(options: argparse.Namespace, argv: list[str]) -> int:
    outcome = resolved(options, argv)
    if outcome.roles is None:
        return report_failure(outcome, options)
    show_roles(selected(outcome.roles, options.role), options)
    return EXIT_OK


def show_roles(roles: Mapping[str, argparse.Namespace], options: argparse.Namespace) -> None:
    """Every key of each role, sorted, with its value and origin: a table, JSON or YAML.

    `options` are those of `shown_options`: ``all`` (else only the keys not at the parser's
    default), ``json``, ``yaml``.
    """
    from layerconf.core.explain import explain_all

    shown_settings: dict[str, list[Setting]] = {}
    totals: dict[str, int] = {}
    for role, namespace in roles.items():
        explained = explain_all(namespace)
        settings = [explained[key].redacted() for key in sorted(explained)]
        totals[role] = len(settings)
        if not options.all:
            settings = [s for s in settings if s.origin.kind != "default"]
        shown_settings[role] = settings

    if options.json:
        dump_json(
            {
                role: {s.key: value_json(s.value, s.origin) for s in settings}
                for role, settings in shown_settings.items()
            }
        )
    elif options.yaml:
        stdout().write(_show_yaml(shown_settings))
    else:
        print(_show_table(shown_settings, totals, changed=not options.all), file=stdout())


def _show_table(
    shown_settings: Mapping[str, Sequence[Setting]], totals: Mapping[str, int], *, changed: bool
) -> str:
    """A titled table per role: key, value, layer, place."""
    paint = Paint(stdout())
    blocks = []
    for role, settings in shown_settings.items():
        not_default = sum(s.origin.kind != "default" for s in settings)
        title = f"{role}: {totals[role]} values, {not_default} not from defaults"
        if changed:
            title = f"{role}: {len(settings)} of {totals[role]} values not from defaults"
        rows: list[list[Cell]] = [
            [
                (s.key, None),
                (value_text(s.value, limit=None), None),
                (s.origin.layer, paint.layer(s.origin.kind)),
                (s.origin.place, None),
            ]
            for s in settings
        ]
        blocks.append("\n".join([paint(title, "1"), *table(rows, indent="  ")]))
    return "\n\n".join(blocks)


def _show_yaml(shown_settings: Mapping[str, Sequence[Setting]]) -> str:
    """One YAML mapping per role, a value a line in flow style, its origin as a comment."""
    lines = [f"# resolved by {PROG}: each value's origin follows it as a comment"]
    for role, settings in shown_settings.items():
        lines.append(f"{yaml_flow(role)}:" + ("" if settings else " {}"))
        rows = [(f"{yaml_flow(s.key)}: {yaml_flow(s.value)}", s.origin) for s in settings]
        width = max((len(text) for text, _ in rows if len(text) <= 60), default=0)
        for text, origin in rows:
            comment = origin.where
            lines.append(f"  {text.ljust(width)}  # {comment}")
    return "\n".join(lines) + "\n"


COMMANDS = (
    Command(
        "show",
        usage("show", "[--role ROLE] [--changed | --all] [--json | --yaml] -- ARGV..."),
        "the resolved configuration of each role, with origins",
        "The resolved configuration of each role: each key not at the parser's default (--all:\n"
        "every key), its value and where it came from.",
        "examples:\n"
        f"  {PROG} show -- $(cat launch_argv.txt)\n"
        f"  {PROG} show --all --json -- $(cat launch_argv.txt) > every-value.json\n"
        f"  {PROG} show --role critic --yaml -- $(cat launch_argv.txt) > critic.yaml\n\n"
        "exit status: 0 shown; 1 a configuration that does not resolve; 2 a usage "
        "error.",
        _options,
        _run,
    ),
)
