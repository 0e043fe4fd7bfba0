"""Bundled profiles: the real parser of a training stack, rebuilt as a new `ArgumentParser`.

A profile is compiled data (``profiles/<module>.json``, written by
``layerconf.profiles._compile``) plus a module of the enums and ``type=`` callables it names
(``profiles/<module>.py``). The data is read and decoded once per process; each
`load_profile` call then builds a fresh parser from it.

Speed: the parser is built by constructing each action and registering it with its group,
the two steps ``add_argument`` ends with. What this skips is ``add_argument``'s keyword
juggling and checks (a new help formatter per action, the registry lookups, the metavar/nargs
check); the compiler and the tests check those once instead, and a test compares every action
with a parser built through ``add_argument``. The data's rows hold each action's arguments in
``argparse.Action``'s order, a flag's nargs and const included, and only the few rows the data
lists as special (enums, SUPPRESS, an environment default) are decoded further. An action of a
plain kind is made by ``argparse.Action.__init__`` given its row's arguments (two probes a
process prove it gives what the kind's constructor gives, attributes in order, on this Python,
and the rows agree with the constructor's nargs and const; else the constructor is called).
The actions are registered as ``_add_action`` registers them with one conflict check for all:
when two option strings collide (or one is the parser's own ``-h``), the parser is built again
through ``_add_action``, which reports the conflict as argparse does. The parser itself, its
``-h`` included, is made without asking the terminal for its width (no `shutil` import).
"""

from __future__ import annotations

import argparse
import enum
import functools
import importlib
import json
import operator
import os
from collections.abc import Mapping, Sequence
from typing import Any

from layerconf.core._secret_flags import has_seed, seed_secret_options
from layerconf.core._unmeasured import UnmeasuredFormatter
from layerconf.core.secrets import SECRETS, secret_dests
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
FORMAT = 2
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
    secrets = spec.secrets
    if secrets is not None and not has_seed(SECRETS, secrets[0]):
        # The scan for secret flags, done when the data was compiled: used for each parser
        # with this one's option strings and dests, under the policy the data was compiled for.
        seed_secret_options(parser._option_string_actions, SECRETS, *secrets)
    secret_dests(parser, SECRETS)  # (its option strings that name a secret's, kept with it)
    return parser


class _Spec:
    """A profile decoded once: parser settings, group titles and one row per action.

    (A plain class, as `_Environment` is: creating a NamedTuple class costs a process ~0.6M
    instructions, on the path of every command.)
    """

    __slots__ = ("groups", "parser", "plain", "rows", "secrets", "types")

    def __init__(
        self,
        parser: Mapping[str, Any],
        groups: tuple[str, ...],
        rows: Sequence[Sequence[Any]],
        types: Mapping[str | None, Any],
        secrets: tuple[tuple[str, ...], frozenset[str]] | None,
    ) -> None:
        self.parser = parser
        self.groups = groups
        # The data's rows (see `layerconf.profiles._compile`), its special rows decoded: an
        # enum default or choices as members, SUPPRESS as argparse's, an environment default
        # as an `_Environment`. Never handed out: `_build` copies every list into each parser.
        self.rows = rows
        # Per action kind, whether ``argparse.Action.__init__`` given a row's arguments makes
        # its action as the kind's constructor does (`_shapes`, and the rows of that kind
        # agree).
        self.plain = _plain(rows)
        # The type callables by the names the rows give.
        self.types = types
        # The default secret policy's candidate secret flags and those of them it names a
        # secret's (`layerconf.core._secret_flags.seed_secret_options`), None when the data's
        # policy is not this layerconf's default.
        self.secrets = secrets


class _Environment(tuple[str, str]):
    """A default read from the environment when a parser is built: (variable, fallback), the
    action's type applied to the variable's value or to the fallback when it is not set (as
    Megatron does)."""

    __slots__ = ()


def _parser(settings: Mapping[str, Any]) -> argparse.ArgumentParser:
    """A new `ArgumentParser` of `settings` (its ``-h`` included), built without asking the
    terminal for its width (see `layerconf.core._unmeasured`)."""
    parser = argparse.ArgumentParser(**settings, formatter_class=UnmeasuredFormatter)
    parser.formatter_class = argparse.HelpFormatter
    return parser


def _build(spec: _Spec, *, bulk: bool = True) -> argparse.ArgumentParser:
    parser = _parser(spec.parser)
    groups = [parser._optionals]
    groups.extend(parser.add_argument_group(title=title) for title in spec.groups[1:])
    plain = spec.plain if bulk else (False,) * len(KIND_CLASSES)
    types = spec.types
    environ = os.environ
    init = argparse.Action.__init__
    made: list[argparse.Action] = []
    for row in spec.rows:
        kind, group, strings, dest, nargs, const, default, type_, choices, required, help_, mv = row
        type_ = types[type_]
        if type(default) is list:
            default = [*default]
        elif type(default) is _Environment:
            default = type_(environ.get(*default))
        if choices is not None:
            choices = [*choices]
        cls = KIND_CLASSES[kind]
        if plain[kind]:
            # argparse.Action's constructor, given what the class's own gives it: the same
            # attributes, without the calls in between.
            action = cls.__new__(cls)
            init(
                action, [*strings], dest, nargs, const, default, type_, choices, required, help_, mv
            )
        else:
            action = _constructed(
                kind, [*strings], dest, nargs, default, type_, choices, required, help_, mv
            )
        owner = groups[group]
        if bulk:  # what _add_action does, less the conflict check (made once, below)
            action.container = owner
            owner._group_actions.append(action)
            made.append(action)
        else:
            owner._add_action(action)
    if not bulk:
        return parser
    parser._actions.extend(made)
    table = parser._option_string_actions
    known = len(table)  # the parser's own: -h, --help
    options = [(option, action) for action in made for option in action.option_strings]
    table.update(options)
    if len(table) != known + len(options):
        # Two actions share an option string, or one is -h: built again through
        # _add_action, whose conflict check reports it as argparse does.
        return _build(spec, bulk=False)
    negative = parser._has_negative_number_optionals
    if not negative and _looks_negative(tuple(table), parser._negative_number_matcher.pattern):
        negative.append(True)
    return parser


def _constructed(
    kind: int,
    strings: list[str],
    dest: str,
    nargs: Any,
    default: Any,
    type_: Any,
    choices: list[Any] | None,
    required: bool,
    help_: str | None,
    metavar: Any,
) -> argparse.Action:
    """An action of `kind` made by its class's constructor, as ``add_argument`` makes it."""
    cls = KIND_CLASSES[kind]
    if kind in _FLAG_KINDS:
        action = cls(strings, dest, default=default, required=required, help=help_)
        if kind == _BOOLEAN_OPTIONAL:
            # Set after construction: BooleanOptionalAction's `type` argument is deprecated
            # (3.12) and gone (3.14), yet Megatron passes one and the attribute stays.
            action.type = type_
        return action
    return cls(
        strings,
        dest,
        nargs=nargs,
        default=default,
        type=type_,
        choices=choices,
        required=required,
        help=help_,
        metavar=metavar,
    )


# Two probes, different in every argument a constructor takes: (option_strings, dest, nargs,
# default, type, choices, required, help, metavar).
_PROBES = (
    (["--probe-a"], "a", None, None, None, None, False, "a", None),
    (["--probe-b", "-b"], "b", "+", [1], int, [1, 2], True, "b", "B"),
)


@functools.cache
def _shapes() -> tuple[tuple[Any, Any] | None, ...]:
    """Per action kind, the nargs (a flag's; else None) and const its constructor gives
    `argparse.Action`'s, or None where the constructor is to be called.

    The probes prove on this Python that ``Action.__init__``, given an action's arguments and
    those, gives what the constructor gives, attributes in order: a constructor that derives
    an attribute from its arguments, or sets one ``Action.__init__`` does not take, gets None,
    and so does boolean_optional (which derives its --no- option strings).
    """
    shapes: list[tuple[Any, Any] | None] = []
    for kind, cls in enumerate(KIND_CLASSES):
        shape: tuple[Any, Any] | None = None
        flag = kind in _FLAG_KINDS
        for probe in _PROBES:
            made = vars(_constructed(kind, *_arguments(probe, flag)))
            found = (made.get("nargs") if flag else None, made.get("const"))
            if kind == _BOOLEAN_OPTIONAL or shape not in (None, found):
                shape = None
                break
            shape = found
            rebuilt = cls.__new__(cls)
            arguments = _arguments(probe, flag)
            if flag:
                arguments[2] = found[0]
            arguments.insert(3, found[1])  # const, after nargs: Action.__init__'s order
            argparse.Action.__init__(rebuilt, *arguments)
            if list(vars(rebuilt).items()) != list(made.items()):
                shape = None
                break
        shapes.append(shape)
    return tuple(shapes)


def _arguments(probe: tuple[Any, ...], flag: bool) -> list[Any]:
    """A probe's arguments, as `_constructed` takes them, each list new (an action keeps
    the lists it is given); a flag's constructor takes no nargs, type, choices or metavar."""
    strings, dest, nargs, default, type_, choices, required, help_, metavar = probe
    if flag:
        nargs = type_ = choices = metavar = None
    copied = [None if item is None else list(item) for item in (default, choices)]
    return [list(strings), dest, nargs, copied[0], type_, copied[1], required, help_, metavar]


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
    rows: list[Sequence[Any]] = data["actions"]
    enums: Mapping[str, type[enum.Enum]] = types_module.ENUMS
    for index in data["special"]:
        rows[index] = _decoded(rows[index], enums)
    types = {None: None, **BUILTIN_TYPES, **types_module.TYPES}
    shipped = data.get("secrets")
    secrets = None
    if (
        isinstance(shipped, dict)
        and shipped.get("names") == sorted(SECRETS.names)
        and shipped.get("suffixes") == list(SECRETS.suffixes)
        and isinstance(shipped.get("candidates"), list)
        and isinstance(shipped.get("named"), list)
    ):
        secrets = (tuple(shipped["candidates"]), frozenset(shipped["named"]))
    return _Spec(data["parser"], tuple(data["groups"]), rows, types, secrets)


def _decoded(row: Sequence[Any], enums: Mapping[str, type[enum.Enum]]) -> tuple[Any, ...]:
    """`row` with its stand-ins decoded: enum members, an `_Environment`, argparse.SUPPRESS."""
    default, choices, help_ = row[6], row[8], row[10]
    if type(default) is dict:
        if "env" in default:
            default = _Environment((default["env"], default["else"]))
        else:
            default = enums[default["enum"]][default["member"]]
    elif default == argparse.SUPPRESS:
        default = argparse.SUPPRESS
    if type(choices) is dict:
        choices = list(enums[choices["enum"]])
    if help_ == argparse.SUPPRESS:
        help_ = argparse.SUPPRESS  # argparse tests `help is SUPPRESS`
    return (*row[:6], default, row[7], choices, row[9], help_, row[11])


def _plain(rows: Sequence[Sequence[Any]]) -> tuple[bool, ...]:
    """`_Spec.plain` for `rows`: a kind's shape is known, and every row of it gives the nargs
    (a flag's) and const its constructor gives."""
    shapes = _shapes()
    plain = [shape is not None for shape in shapes]
    for kind, nargs, const in set(map(operator.itemgetter(0, 4, 5), rows)):
        shape = shapes[kind]
        if shape is not None and (const != shape[1] or shape[0] not in (None, nargs)):
            plain[kind] = False
    return tuple(plain)


def _read_data(module: str) -> bytes:
    path = os.path.join(os.path.dirname(__file__), f"{module}.json")
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:
        # Imported from an archive (zipimport): ask the import system for the file instead.
        from importlib.resources import files

        return files("layerconf.profiles").joinpath(f"{module}.json").read_bytes()
