"""``layerconf show``: the resolved configuration of each role, with origins.

`show_roles` also shows the roles ``audit replay`` rebuilds from a record. ``show --role-file``
writes what each role's role file layer set as a role file (`role_file_of`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from layerconf.cli.command import Command, a_path, usage
from layerconf.cli.errors import EXIT_OK, EXIT_PROBLEMS, PROG, UsageError, print_error
from layerconf.cli.render import Paint, dump_json, table, value_json, value_text, yaml_flow
from layerconf.cli.resolving import report_failure, resolved
from layerconf.cli.scrub import stderr, stdout
from layerconf.cli.streams import emit
from layerconf.cli.trainer import (
    imported_files,
    preset_of,
    role_option,
    selected,
    trainer_parser,
)
from layerconf.exceptions import one_line

if TYPE_CHECKING:
    from layerconf.cli.render import Cell
    from layerconf.core.records import Setting
    from layerconf.presets import Preset


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
    parser.add_argument(
        "--role-file",
        action="store_true",
        help="print a role file in the preset's format instead: per role, the values its role "
        "file layer set (those that override the command line), which resolve with the same "
        "command line to the same values",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        type=a_path,
        help="with --role-file: write it to FILE, atomically, instead of printing it",
    )


def _run(options: argparse.Namespace, argv: list[str]) -> int:
    prog = f"{PROG} show"
    if options.role_file and (options.json or options.yaml or options.all):
        raise UsageError("--role-file prints a role file: leave out --json, --yaml and --all", prog)
    if options.output is not None and not options.role_file:
        raise UsageError("-o/--output writes a role file: add --role-file", prog)
    preset = preset_of(options)
    if options.role_file and preset.config_dest is None:
        raise UsageError(f"--role-file: the preset {preset.name!r} reads no role file", prog)
    outcome = resolved(options, argv)
    if outcome.roles is None:
        return report_failure(outcome, options)
    roles = selected(outcome.roles, options.role)
    if not options.role_file:
        show_roles(roles, options)
        return EXIT_OK
    try:
        text = role_file_of(roles, preset)
    except ValueError as error:
        print_error(f"{prog}: error: {error}")
        return EXIT_PROBLEMS
    read = dict.fromkeys(files_read(outcome.roles), "a role file") | imported_files(options)
    written = emit(
        text, options.output, what="the role file", example="roles.yaml", prog=prog, read=read
    )
    if written is not None:
        flags = [
            action.option_strings[-1]
            for action in trainer_parser(options)._actions
            if action.dest == preset.config_dest and action.option_strings
        ]
        shown = one_line(str(written))
        print(f"wrote {shown}: pass it as {flags[0] if flags else '-'} {shown}", file=stderr())
    return EXIT_OK


def _set_by(
    namespace: argparse.Namespace, path: tuple[str, ...], setting: Setting, layer: str
) -> bool:
    """Whether `layer` set the value at `path`, or a leaf of it (a mapping whose other leaves a
    later layer set is written whole: merged again, it gives the same mapping)."""
    from layerconf.core.explain import explain
    from layerconf.core.records import join_path

    if setting.origin.layer == layer:
        return True
    value = setting.value
    if type(value) is not dict:
        return False
    for name in value:
        if type(name) is not str or not name or "." in name:
            continue  # not a leaf explain can name
        inner = (*path, name)
        if _set_by(namespace, inner, explain(namespace, join_path(inner)), layer):
            return True
    return False


def role_file_of(roles: Mapping[str, argparse.Namespace], preset: Preset) -> str:
    """A role file of `preset`'s format holding, per role, the values whose origin is the
    preset's role layer: with the same command line it resolves to the same values.

    A mapping is written whole when the role layer set one of its leaves. What the command
    line, the other sources and the rules set is left to them (the rules run again: a value a
    rule set, such as slime's critic defaults, is never written as an override). A secret, or
    a list under the ``append`` policy, is never written: `ValueError` names the key.
    """
    from layerconf.core.explain import explain_all
    from layerconf.core.held_secrets import policy_of
    from layerconf.core.namespace import provenance_of
    from layerconf.presets.role_file import role_file_text

    overrides: dict[str, dict[str, Any]] = {}
    for role, namespace in roles.items():
        values = vars(namespace)
        provenance = provenance_of(namespace)
        policies = {} if provenance is None else provenance.policies
        secrets = policy_of(() if provenance is None else provenance.layers)
        chosen: dict[str, Any] = {}
        for key, setting in sorted(explain_all(namespace).items()):
            if not _set_by(namespace, (key,), setting, preset.layer):
                continue
            value = values[key]
            if secrets.redact(key, value) is not value:
                raise ValueError(
                    f"role {role!r}: {key!r} holds a secret, which {PROG} never writes: set it "
                    "in the environment or on the trainer's command line, not in a role file"
                )
            if policies.get((key,)) == "append" and type(value) is list:
                raise ValueError(
                    f"role {role!r}: {key!r} appends each layer's list to the one before: its "
                    "value cannot be written whole as an override; write the role file's own "
                    "items by hand"
                )
            chosen[key] = value
        overrides[role] = chosen
    comment = (
        f"written by {PROG} show --role-file: the values each role's role file layer set;\n"
        "the rest comes from the command line, which this file goes with"
    )
    return role_file_text(overrides, form=preset.role_file, comment=comment)


def files_read(roles: Mapping[str, argparse.Namespace]) -> list[str]:
    """The files the resolution of `roles` read (their role files), as their origins name them."""
    from layerconf.core.namespace import provenance_of
    from layerconf.sources.base import FILES

    read: dict[str, None] = {}
    for namespace in roles.values():
        provenance = provenance_of(namespace)
        if provenance is not None:
            read.update(dict.fromkeys(provenance.inputs.get(FILES, {})))
    return list(read)


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
        name = one_line(role)  # (a role of an audit record from anywhere is any text)
        title = f"{name}: {totals[role]} values, {not_default} not from defaults"
        if changed:
            title = f"{name}: {len(settings)} of {totals[role]} values not from defaults"
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
            # (an audit record's layer name is any text: a line break would start a YAML line)
            lines.append(f"  {text.ljust(width)}  # {one_line(origin.where)}")
    return "\n".join(lines) + "\n"


COMMANDS = (
    Command(
        "show",
        usage(
            "show",
            "[--role ROLE] [--changed | --all] [--json | --yaml]\n"
            + " " * len("usage: layerconf show ")
            + "[--role-file [-o FILE]] -- ARGV...",
        ),
        "the resolved configuration of each role, with origins",
        "The resolved configuration of each role: each key not at the parser's default (--all:\n"
        "every key), its value and where it came from.",
        "examples:\n"
        f"  {PROG} show -- $(cat launch_argv.txt)\n"
        f"  {PROG} show --all --json -- $(cat launch_argv.txt) > every-value.json\n"
        f"  {PROG} show --role critic --yaml -- $(cat launch_argv.txt) > critic.yaml\n"
        f"  {PROG} show --role-file -o roles.yaml -- $(cat launch_argv.txt)\n\n"
        "exit status: 0 shown; 1 a configuration that does not resolve; 2 a usage "
        "error.",
        _options,
        _run,
    ),
)
