"""Bundled profiles: the real parser of a training stack, rebuilt as a new `ArgumentParser`.

A profile is compiled data (``profiles/<module>.json``, written by
``layerconf.profiles._compile``) plus a module of the enums and ``type=`` callables it names
(``profiles/<module>.py``). The data is read and decoded once per process; each
`load_profile` call then builds a fresh parser from it.

Speed: the parser is built by constructing each action from its class and registering it
with its group's ``_add_action``, the two steps ``add_argument`` ends with. What this skips is
``add_argument``'s keyword juggling and checks (a new help formatter per action, the registry
lookups, the metavar/nargs check); the compiler and the tests check those once instead, and a
test compares every action with a parser built through ``add_argument``.
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


def _build(spec: _Spec) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(**spec.parser)
    groups = [parser._optionals]
    groups.extend(parser.add_argument_group(title=title) for title in spec.groups[1:])
    kinds = KIND_CLASSES
    environ = os.environ
    for row in spec.rows:
        kind, group, strings, dest, required, help_, default, type_, nargs, choices, mv, env = row
        if env is not None:
            default = type_(environ.get(*env))
        elif type(default) is list:
            default = list(default)
        if kind in _FLAG_KINDS:
            action = kinds[kind](
                list(strings), dest, default=default, required=required, help=help_
            )
            if kind == _BOOLEAN_OPTIONAL:
                # Set after construction: BooleanOptionalAction's `type` argument is deprecated
                # (3.12) and gone (3.14), yet Megatron passes one and the attribute stays.
                action.type = type_
        else:
            action = kinds[kind](
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
        groups[group]._add_action(action)
    return parser


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
