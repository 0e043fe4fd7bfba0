"""Bundled profiles: the real parser of a training stack, rebuilt as a new `ArgumentParser`.

A profile is compiled data (``profiles/<module>.json``, written by
``layerconf.profiles._compile``) plus a module of the enums and ``type=`` callables it names
(``profiles/<module>.py``). The data is read and decoded once per process; each
`load_profile` call then builds a fresh parser from it.

Speed: the parser is built by constructing each action and registering it with its group,
the two steps ``add_argument`` ends with. What this skips is ``add_argument``'s keyword
juggling and checks (a new help formatter per action, the registry lookups, the metavar/nargs
check); the compiler and the tests check those once instead, and a test compares every action
with a parser built through ``add_argument``. An action of a plain kind is made by
``argparse.Action.__init__`` with the arguments its class's constructor would add (two probes
a process prove it gives the same attributes, in order, on this Python; else the constructor
is called), and the actions are registered as ``_add_action`` registers them with one conflict
check for all: when two option strings collide (or one is the parser's own ``-h``), the parser
is built again through ``_add_action``, which reports the conflict as argparse does.
"""

from __future__ import annotations

import argparse
import enum
import functools
import importlib
import json
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from layerconf.core._secret_flags import has_seed, seed_secret_options
from layerconf.core.secrets import SECRETS
from layerconf.exceptions import LayerconfError, UnknownProfileError

__all__ = [
    "BUILTIN_TYPES",
    "FORMAT",
    "KIND_CLASSES",
    "KIND_NAMES",
    "available_profiles",
    "bundled_enums",
    "load_profile",
]

# Profile name -> the module name of its data file and type module under layerconf.profiles.
_PROFILES: Mapping[str, str] = {"megatron-slime": "megatron_slime"}

# The data format, shared with the compiler (`layerconf.profiles._compile`): its version, the
# action kinds by index (their classes and names) and the type names every profile may use.
FORMAT = 1
KIND_CLASSES: tuple[type[argparse.Action], ...] = (
    argparse._StoreAction,
    argparse._StoreTrueAction,
    argparse._StoreFalseAction,
    argparse.BooleanOptionalAction,
    argparse._AppendAction,
)
KIND_NAMES = ("store", "store_true", "store_false", "boolean_optional", "append")
_BOOLEAN_OPTIONAL = 3
_FLAG_KINDS = frozenset({1, 2, _BOOLEAN_OPTIONAL})  # store_true, store_false, boolean_optional
BUILTIN_TYPES: Mapping[str, Any] = {"int": int, "str": str, "float": float, "bool": bool}
_ROW_LENGTH = 11


def available_profiles() -> tuple[str, ...]:
    """The names of the bundled profiles, sorted."""
    return tuple(sorted(_PROFILES))


def bundled_enums() -> list[type[enum.Enum]]:
    """The enum classes the bundled profiles' parsers produce (audit records may hold them)."""
    found: list[type[enum.Enum]] = []
    for module in _PROFILES.values():
        types_module = importlib.import_module(f"layerconf.profiles.{module}")
        found.extend(types_module.VALUE_TYPES)
    return found


def load_profile(name: str = "megatron-slime") -> argparse.ArgumentParser:
    """A new `ArgumentParser` that behaves as the named profile's real parser.

    Every call returns an independent parser (change yours freely). The bundled
    ``megatron-slime`` profile is the Megatron-LM + slime training parser with every action in
    order, in its argument group, plus ``--use-critic``, ``--critic-num-nodes`` and
    ``--critic-num-gpus-per-node`` (see docs/profile.md). Raises `UnknownProfileError` for a
    name that is not bundled.
    """
    if not isinstance(name, str):
        raise TypeError(f"a profile name must be a string (got {type(name).__name__})")
    module = _PROFILES.get(name)
    if module is None:
        raise UnknownProfileError(name, available_profiles())
    spec = _spec(module)
    parser = _build(spec)
    candidates = spec.secret_candidates
    if candidates is not None and not has_seed(SECRETS, candidates):
        # The scan for secret flags, done when the data was compiled: used for each parser
        # with this one's option strings and dests, under the policy the data was compiled for.
        seed_secret_options(parser._option_string_actions, SECRETS, candidates)
    return parser


class _Spec(NamedTuple):
    """A profile decoded once: parser settings, group titles and one tuple per action."""

    parser: Mapping[str, Any]
    groups: tuple[str, ...]
    # (kind, group, option_strings, dest, required, help, default, type, nargs, choices,
    #  metavar, env). Never handed out: `_build` copies every list into each parser. `env` is
    # (variable, fallback) for a default read from the environment when a parser is built.
    rows: tuple[tuple[Any, ...], ...]
    # The default secret policy's candidate secret flags, None when the data's policy is not
    # this layerconf's default.
    secret_candidates: tuple[str, ...] | None


def _build(spec: _Spec, *, bulk: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(**spec.parser)
    groups = [parser._optionals]
    groups.extend(parser.add_argument_group(title=title) for title in spec.groups[1:])
    table = parser._option_string_actions
    known = len(table)  # the parser's own: -h, --help
    registered: list[str] = []
    actions = parser._actions
    shapes = _shapes()
    init = argparse.Action.__init__
    environ = os.environ
    for row in spec.rows:
        kind, group, strings, dest, required, help_, default, type_, nargs, choices, mv, env = row
        if env is not None:
            default = type_(environ.get(*env))
        elif type(default) is list:
            default = list(default)
        cls = KIND_CLASSES[kind]
        shape = shapes[kind]
        if shape is None:  # boolean_optional (it derives its --no- strings), or a new argparse
            action = _constructed(cls, row, default)
        else:
            # argparse.Action's constructor, which the class's own calls with `shape` (its
            # fixed arguments): the same attributes, without the calls in between.
            action = cls.__new__(cls)
            if kind in _FLAG_KINDS:
                init(
                    action,
                    list(strings),
                    dest,
                    default=default,
                    required=required,
                    help=help_,
                    **shape,
                )
            else:
                init(
                    action,
                    list(strings),
                    dest,
                    nargs=nargs,
                    default=default,
                    type=type_,
                    choices=None if choices is None else list(choices),
                    required=required,
                    help=help_,
                    metavar=mv,
                    **shape,
                )
        owner = groups[group]
        if bulk:  # what _add_action does, less the conflict check (made once, below)
            actions.append(action)
            action.container = owner  # type: ignore[attr-defined]
            for option in action.option_strings:
                table[option] = action
                registered.append(option)
            owner._group_actions.append(action)
        else:
            owner._add_action(action)
    if not bulk:
        return parser
    if len(table) != known + len(registered):
        # Two actions share an option string, or one is -h: built again through
        # _add_action, whose conflict check reports it as argparse does.
        return _build(spec, bulk=False)
    negative = parser._has_negative_number_optionals
    if not negative and _looks_negative(tuple(registered), parser._negative_number_matcher.pattern):
        negative.append(True)
    return parser


def _constructed(cls: type[argparse.Action], row: tuple[Any, ...], default: Any) -> argparse.Action:
    """The action of `row` made by its class's constructor, `default` given."""
    kind, _, strings, dest, required, help_, _, type_, nargs, choices, mv, _ = row
    if kind in _FLAG_KINDS:
        action = cls(list(strings), dest, default=default, required=required, help=help_)
        if kind == _BOOLEAN_OPTIONAL:
            # Set after construction: BooleanOptionalAction's `type` argument is deprecated
            # (3.12) and gone (3.14), yet Megatron passes one and the attribute stays.
            action.type = type_
        return action
    return cls(
        list(strings),
        dest,
        nargs=nargs,
        default=default,
        type=type_,
        choices=None if choices is None else list(choices),
        required=required,
        help=help_,
        metavar=mv,
    )


_WRITTEN_FLAG = ("option_strings", "dest", "default", "required", "help")
_WRITTEN = (*_WRITTEN_FLAG, "nargs", "type", "metavar", "choices")


@functools.cache
def _shapes() -> tuple[dict[str, Any] | None, ...]:
    """Per action kind, the arguments its constructor gives `argparse.Action`'s besides the
    row's (a flag's ``nargs=0``, its ``const``...), or None where it must be called.

    Two probes per kind, different in every argument, prove on this Python that calling
    ``Action.__init__`` with them gives what the constructor gives, attributes in order: a
    constructor that derives an attribute from its arguments, or sets one ``Action.__init__``
    does not take, gets None.
    """
    probes = [
        (None, 0, ("--probe-a",), "a", False, "a", None, None, None, None, None, None),
        (None, 0, ("--probe-b", "-b"), "b", True, "b", [1], int, "+", (1, 2), "B", None),
    ]
    shapes: list[dict[str, Any] | None] = []
    for kind, cls in enumerate(KIND_CLASSES):
        if kind == _BOOLEAN_OPTIONAL:  # derives its --no- option strings
            shapes.append(None)
            continue
        written = _WRITTEN_FLAG if kind in _FLAG_KINDS else _WRITTEN
        shape: dict[str, Any] | None = None
        for probe in probes:
            row = (kind, *probe[1:])
            made = vars(_constructed(cls, row, probe[6]))
            fixed = {key: value for key, value in made.items() if key not in written}
            if shape is not None and fixed != shape:
                shape = None
                break
            rebuilt = cls.__new__(cls)
            given: dict[str, Any] = {key: made.get(key) for key in written}
            try:
                argparse.Action.__init__(rebuilt, **given, **fixed)
            except TypeError:  # an attribute Action.__init__ does not take
                shape = None
                break
            if list(vars(rebuilt).items()) != list(made.items()):
                shape = None
                break
            shape = fixed
        shapes.append(shape)
    return tuple(shapes)


@functools.cache
def _looks_negative(strings: tuple[str, ...], pattern: str) -> bool:
    """Whether one of `strings` looks like a negative number to argparse (`pattern`)."""
    import re

    matcher = re.compile(pattern)
    return any(matcher.match(string) for string in strings)


@functools.cache
def _spec(module: str) -> _Spec:
    """Read and decode the data of the profile whose files are named `module`."""
    data = json.loads(_read_data(module))
    if data.get("format") != FORMAT or tuple(data.get("kinds", ())) != KIND_NAMES:
        raise LayerconfError(
            f"the data of profile {data.get('profile')!r} has format {data.get('format')!r};"
            f" this layerconf reads format {FORMAT}: reinstall layerconf"
        )
    types_module = importlib.import_module(f"layerconf.profiles.{module}")
    types: Mapping[str, Any] = {**BUILTIN_TYPES, **types_module.TYPES}
    enums: Mapping[str, type[enum.Enum]] = types_module.ENUMS
    rows = []
    for raw in data["actions"]:
        row = raw + [None] * (_ROW_LENGTH - len(raw))
        kind, group, strings, dest, required, help_, default, type_key, nargs, choices, mv = row
        env = None
        if isinstance(default, dict):
            if "env" in default:
                env = (default["env"], default["else"])
            else:
                default = enums[default["enum"]][default["member"]]
        elif default == argparse.SUPPRESS:
            default = argparse.SUPPRESS
        if isinstance(choices, dict):
            choices = list(enums[choices["enum"]])
        if help_ == argparse.SUPPRESS:
            help_ = argparse.SUPPRESS  # argparse tests `help is SUPPRESS`
        type_ = None if type_key is None else types[type_key]
        rows.append(
            (
                kind,
                group,
                tuple(strings),
                dest,
                required,
                help_,
                default,
                type_,
                nargs,
                choices,
                mv,
                env,
            )
        )
    shipped = data.get("secrets")
    candidates = None
    if (
        isinstance(shipped, dict)
        and shipped.get("names") == sorted(SECRETS.names)
        and shipped.get("suffixes") == list(SECRETS.suffixes)
    ):
        candidates = tuple(shipped["candidates"])
    return _Spec(data["parser"], tuple(data["groups"]), tuple(rows), candidates)


def _read_data(module: str) -> bytes:
    path = os.path.join(os.path.dirname(__file__), f"{module}.json")
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:
        # Imported from an archive (zipimport): ask the import system for the file instead.
        from importlib.resources import files

        return files("layerconf.profiles").joinpath(f"{module}.json").read_bytes()
