"""Compile a dumped argparse spec into a profile data file: only what a parser needs, checked.

Refresh the bundled profile after a new dump of the real parser (see docs/profile.md)::

    python -m layerconf.profiles._compile tests/fixtures/megatron_slime_args.json

The input is the dump described in ``tests/fixtures/README.md``; the output replaces
``megatron_slime.json`` beside this file. Everything the loader relies on is checked here, so a
dump that breaks an assumption fails loudly instead of producing a subtly different parser.

Data format 2, one JSON object, ASCII:

- ``parser``: the `argparse.ArgumentParser` keyword arguments.
- ``kinds``: action kinds by index (``store``, ``store_true``, ``store_false``,
  ``boolean_optional``, ``append``).
- ``groups``: group titles in creation order; index 0 is the parser's own group of optionals.
- ``actions``: one row per action, in parser order: ``[kind, group, option_strings, dest,
  nargs, const, default, type, choices, required, help, metavar]``, from option_strings on
  the arguments of `argparse.Action`'s constructor in its order, as the action's class gives
  them (a flag's nargs 0 and const included). ``option_strings`` are the ones given to
  ``add_argument`` (a ``boolean_optional`` action derives its ``--no-`` forms). ``type`` is
  ``int``, ``str``, ``float``, ``bool`` or a key of the profile module's ``TYPES``. A
  ``default`` may be ``{"enum": CLASS, "member": NAME}`` or ``{"env": VARIABLE, "else": TEXT}``
  (the action's type applied to the variable's value when the parser is built, as Megatron
  does); ``choices`` may be ``{"enum": CLASS}`` (every member, in definition order).
  ``"==SUPPRESS=="`` stands for `argparse.SUPPRESS`.
- ``special``: the indexes of the rows that hold one of those stand-ins, in order (the loader
  decodes only these rows).
- ``additions``: the dests this profile adds to the dumped parser.
- ``secrets``: the default secret policy's ``names`` and ``suffixes``, the ``candidates`` its
  scan finds among the parser's flags (`layerconf.core._secret_flags.secret_candidates`), and
  those of them it ``named`` a secret's (by the dest or an option string of their action): a
  parser built from the data is not scanned for its secret flags while the policy is that one,
  nor is the policy asked about a candidate whose option strings are the data's.
"""

from __future__ import annotations

import argparse
import enum
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from layerconf.core._secret_flags import _secret_named, secret_candidates
from layerconf.core.secrets import SECRETS
from layerconf.profiles import loader, megatron_slime

__all__ = ["FORMAT", "KINDS", "compile_profile", "dumps", "main", "reference_parser"]

# The data format is the loader's (one definition): its version, action kinds and types.
FORMAT = loader.FORMAT
KINDS = loader.KIND_NAMES
_KIND_OF_CLASS = {cls.__name__: kind for kind, cls in enumerate(loader.KIND_CLASSES)}
_CONST_OF_KIND = {0: None, 1: True, 2: False, 3: None, 4: None}
_BUILTIN_TYPES = frozenset(loader.BUILTIN_TYPES)
_OWN_GROUP = "options"  # argparse's title for the parser's own optionals group (Python >= 3.10)
_PARSER_KEYS = (
    "description",
    "allow_abbrev",
    "add_help",
    "prefix_chars",
    "conflict_handler",
    "fromfile_prefix_chars",
    "argument_default",
)

# Defaults the real parser reads from the environment when it is built (the dump saw them unset).
ENV_DEFAULTS: Mapping[str, tuple[str, str]] = {
    "inprocess_active_world_size": (
        "WORLD_SIZE",
        "1",
    ),  # Megatron: int(os.getenv('WORLD_SIZE', '1'))
    "local_rank": ("LOCAL_RANK", "0"),  # Megatron's config: int(os.getenv("LOCAL_RANK", "0"))
}

# The flags of the role-override contract that slime 624b824a derives instead of parsing.
ADDITIONS: Sequence[Mapping[str, Any]] = (
    {
        "option_strings": ["--use-critic"],
        "dest": "use_critic",
        "action": "_StoreTrueAction",
        "type": None,
        "default": False,
        "nargs": 0,
        "const": True,
        "required": False,
        "group": "options",
        "help": "Train a critic next to the actor (PPO). Added by layerconf: the role-override "
        "contract documents this flag; slime 624b824a derives it instead.",
    },
    {
        "option_strings": ["--critic-num-nodes"],
        "dest": "critic_num_nodes",
        "action": "_StoreAction",
        "type": "int",
        "default": 1,
        "nargs": None,
        "const": None,
        "required": False,
        "group": "options",
        "help": "Number of nodes for training critic. Added by layerconf (role-override contract).",
    },
    {
        "option_strings": ["--critic-num-gpus-per-node"],
        "dest": "critic_num_gpus_per_node",
        "action": "_StoreAction",
        "type": "int",
        "default": 8,
        "nargs": None,
        "const": None,
        "required": False,
        "group": "options",
        "help": "Number of gpus per node for training critic. Added by layerconf "
        "(role-override contract).",
    },
)

_ENUM_REPR = re.compile(r"<(?P<cls>\w+)\.(?P<member>\w+): -?\d+>")

# Enums whose members differ by platform and Python version: `signal.Signals` has SIGSTKFLT on
# Linux since Python 3.11 only. Their choices are stored as "every member", so each Python's
# parser offers its own signals, as the real parser does when it runs there; a dumped choice
# this Python lacks is left out here. A default must exist on every Python.
_PLATFORM_ENUMS = frozenset({"Signals"})


def _fail(action: Mapping[str, Any], message: str) -> ValueError:
    return ValueError(f"action {action.get('option_strings')} ({action.get('dest')}): {message}")


def _enum_member(value: Mapping[str, Any], action: Mapping[str, Any]) -> enum.Enum:
    match = _ENUM_REPR.fullmatch(str(value.get("repr")))
    enum_type = megatron_slime.ENUMS.get(str(value.get("type")))
    if match is None or enum_type is None or match["cls"] != enum_type.__name__:
        raise _fail(action, f"cannot rebuild the enum value {value!r}")
    member = enum_type[match["member"]]
    if repr(member) != value["repr"]:
        raise _fail(action, f"{value['repr']} is {member!r} here")
    return member


def _enum_choices(
    choices: Sequence[Mapping[str, Any]], action: Mapping[str, Any]
) -> list[enum.Enum]:
    """The members of dumped enum `choices`, less the platform members this Python lacks."""
    members: list[enum.Enum] = []
    for choice in choices:
        match = _ENUM_REPR.fullmatch(str(choice.get("repr")))
        enum_type = megatron_slime.ENUMS.get(str(choice.get("type")))
        if (
            match is not None
            and enum_type is not None
            and enum_type.__name__ in _PLATFORM_ENUMS
            and match["member"] not in enum_type.__members__
        ):
            continue
        members.append(_enum_member(choice, action))
    return members


def _constructor_option_strings(action: Mapping[str, Any]) -> list[str]:
    """The option strings given to add_argument; BooleanOptionalAction adds the ``--no-`` forms."""
    strings: list[str] = list(action["option_strings"])
    if action["action"] != "BooleanOptionalAction":
        return strings
    given: list[str] = []
    i = 0
    while i < len(strings):
        given.append(strings[i])
        if strings[i].startswith("--"):
            if i + 1 >= len(strings) or strings[i + 1] != "--no-" + strings[i][2:]:
                raise _fail(action, "its --no- option strings are not where argparse puts them")
            i += 1
        i += 1
    return given


def _type_key(action: Mapping[str, Any]) -> str | None:
    name = action["type"]
    if name is None or name in _BUILTIN_TYPES:
        return name  # type: ignore[no-any-return]
    if name == "enum_type_handler":
        name = f"enum_type_handler:{action['default']['type']}"
    if name not in megatron_slime.TYPES:
        raise _fail(action, f"no rebuilt type callable for {name!r}")
    return name  # type: ignore[no-any-return]


def _row(action: Mapping[str, Any], group: int) -> list[Any]:
    kind = _KIND_OF_CLASS.get(action["action"])
    if kind is None:
        raise _fail(action, f"unsupported action class {action['action']}")
    if action.get("mutually_exclusive_group") is not None:
        raise _fail(action, "mutually exclusive groups are not supported")
    if action.get("const") != _CONST_OF_KIND[kind]:
        raise _fail(action, f"unexpected const {action.get('const')!r}")
    if kind in (1, 2, 3) and (
        action.get("nargs") != 0 or action.get("choices") or action.get("metavar")
    ):
        raise _fail(action, "a flag action with nargs, choices or a metavar")
    if kind in (1, 2) and action.get("type") is not None:
        raise _fail(action, "a store_true/store_false action with a type")

    type_key = _type_key(action)
    default: Any = action["default"]
    choices: Any = action.get("choices")
    if isinstance(default, dict):
        default = {"enum": default["type"], "member": _enum_member(default, action).name}
    if action["dest"] in ENV_DEFAULTS:
        variable, fallback = ENV_DEFAULTS[action["dest"]]
        if default != int(fallback):
            raise _fail(action, f"default {default!r} is not what ${variable} unset gives")
        default = {"env": variable, "else": fallback}
    if choices and isinstance(choices[0], dict):
        members = _enum_choices(choices, action)
        enum_type = type(members[0])
        if members != list(enum_type):
            raise _fail(action, f"choices are not every member of {enum_type.__name__} in order")
        choices = {"enum": enum_type.__name__}

    return [
        kind,
        group,
        _constructor_option_strings(action),
        action["dest"],
        action.get("nargs"),
        action.get("const"),
        default,
        type_key,
        choices,
        bool(action["required"]),
        action.get("help"),
        action.get("metavar"),
    ]


def _special(row: Sequence[Any]) -> bool:
    """Whether `row` holds a stand-in the loader decodes (an enum, an environment default,
    argparse.SUPPRESS)."""
    default, choices, help_ = row[6], row[8], row[10]
    suppressed = argparse.SUPPRESS in (default, help_)
    return suppressed or isinstance(default, dict) or isinstance(choices, dict)


def compile_profile(spec: Mapping[str, Any], *, name: str = "megatron-slime") -> dict[str, Any]:
    """The profile data for the dumped parser `spec` (plus `ADDITIONS`), checked."""
    parser = spec["parser"]
    if parser.get("set_defaults"):
        raise ValueError("parser.set_defaults() values are not supported")
    actions: list[Mapping[str, Any]] = [*spec["actions"], *ADDITIONS]
    dests = [action["dest"] for action in spec["actions"]]
    for added in ADDITIONS:
        if added["dest"] in dests:
            raise ValueError(f"{added['dest']} is in the dump already: drop it from ADDITIONS")

    groups = [_OWN_GROUP]
    rows = []
    previous = None
    for action in actions:
        title = action["group"]
        # Groups are rebuilt by title, in order of first use: a title whose actions are apart
        # may be two groups of the real parser.
        if title != previous and title in groups and title != _OWN_GROUP:
            raise _fail(action, f"group {title!r} is not contiguous")
        if title not in groups:
            groups.append(title)
        previous = title
        rows.append(_row(action, groups.index(title)))
    expected = spec.get("counts", {}).get("argument_groups")
    if expected is not None and expected != len(groups) + 1:  # + "positional arguments"
        raise ValueError(f"the dump has {expected} argument groups; the actions use {len(groups)}")
    table = reference_parser(spec)._option_string_actions
    candidates = secret_candidates(table, SECRETS)
    return {
        "format": FORMAT,
        "profile": name,
        "sources": {key: spec["sources"][key] for key in sorted(spec["sources"])},
        "parser": {key: parser[key] for key in _PARSER_KEYS},
        "kinds": list(KINDS),
        "groups": groups,
        "special": [index for index, row in enumerate(rows) if _special(row)],
        "additions": [added["dest"] for added in ADDITIONS],
        "secrets": {
            "names": sorted(SECRETS.names),
            "suffixes": list(SECRETS.suffixes),
            "candidates": candidates,
            "named": [option for option in candidates if _secret_named(table[option], SECRETS)],
        },
        "actions": rows,
    }


_ACTION_OF_KIND: Mapping[int, Any] = {
    0: "store",
    1: "store_true",
    2: "store_false",
    3: argparse.BooleanOptionalAction,
    4: "append",
}


def reference_parser(spec: Mapping[str, Any]) -> argparse.ArgumentParser:
    """The parser of dump `spec` (plus `ADDITIONS`) built the ordinary way, by ``add_argument``.

    The slow, obviously faithful path: the tests prove `layerconf.load_profile` builds the same
    parser, and the benchmark measures against it.
    """
    settings = spec["parser"]
    parser = argparse.ArgumentParser(**{key: settings[key] for key in _PARSER_KEYS})
    groups: dict[str, argparse._ArgumentGroup] = {_OWN_GROUP: parser._optionals}
    types = {**loader.BUILTIN_TYPES, **megatron_slime.TYPES}
    for action in [*spec["actions"], *ADDITIONS]:
        kind = _KIND_OF_CLASS[action["action"]]
        group = groups.get(action["group"])
        if group is None:
            group = groups[action["group"]] = parser.add_argument_group(title=action["group"])
        default = action["default"]
        if isinstance(default, dict):
            default = _enum_member(default, action)
        if action["dest"] in ENV_DEFAULTS:
            default = int(os.environ.get(*ENV_DEFAULTS[action["dest"]]))
        help_ = action.get("help")
        kwargs: dict[str, Any] = {
            "action": _ACTION_OF_KIND[kind],
            "dest": action["dest"],
            "default": argparse.SUPPRESS if default == argparse.SUPPRESS else default,
            "required": action["required"],
            "help": argparse.SUPPRESS if help_ == argparse.SUPPRESS else help_,
        }
        type_key = _type_key(action)
        type_ = None if type_key is None else types[type_key]
        if kind in (0, 4):
            choices = action.get("choices")
            if choices and isinstance(choices[0], dict):
                choices = _enum_choices(choices, action)
            kwargs.update(
                type=type_, nargs=action["nargs"], choices=choices, metavar=action.get("metavar")
            )
        added = group.add_argument(*_constructor_option_strings(action), **kwargs)
        if kind == 3:
            added.type = type_  # deprecated as an argument since Python 3.12
    return parser


def dumps(profile: Mapping[str, Any]) -> str:
    """`profile` as JSON text with one action per line, so a refresh diffs readably; ASCII, which
    decodes faster than text of wider characters."""
    head = {key: value for key, value in profile.items() if key != "actions"}
    text = json.dumps(head, indent=1)
    rows = ",\n".join(json.dumps(row, separators=(",", ":")) for row in profile["actions"])
    return f'{text[:-2]},\n "actions": [\n{rows}\n ]\n}}\n'


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m layerconf.profiles._compile DUMP.json [OUT.json]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    source = Path(args[0])
    out = Path(args[1]) if len(args) == 2 else Path(__file__).with_name("megatron_slime.json")
    profile = compile_profile(json.loads(source.read_text(encoding="utf-8")))
    out.write_text(dumps(profile), encoding="utf-8")
    print(f"{out}: {len(profile['actions'])} actions in {len(profile['groups'])} groups")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
