"""The unknown-keys rule: a role file's keys are argparse dest names, and known ones.

A typo in a role file must be caught before a 512-GPU job starts, not an hour into it. A
flag-style key (``tensor-model-parallel-size``, ``--lr``) is an error naming the dest to write,
also where the dest differs from the flag (``disable-bias-linear`` -> ``add_bias_linear``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from typing import Literal

import attrs

from layerconf.core.checks import check_type
from layerconf.core.lazy import record_repr
from layerconf.core.rules import Decision, RuleContext
from layerconf.core.suggest import dest_of_flag, did_you_mean_hint
from layerconf.exceptions import Problem

__all__ = ["UnknownKeys", "parser_dests"]


def parser_dests(parser: argparse.ArgumentParser) -> tuple[frozenset[str], dict[str, str]]:
    """The dests of `parser` (help excluded) and a map from each option string to its dest."""
    dests: set[str] = set()
    flags: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.dest == argparse.SUPPRESS:
            continue
        dests.add(action.dest)
        for option in action.option_strings:
            flags[option] = action.dest
    return frozenset(dests), flags


_PARSER = "an argparse.ArgumentParser"


def _names(keys: Iterable[str]) -> frozenset[str]:
    return frozenset(keys)


@attrs.frozen
class UnknownKeys:
    """Refuse (``error``, default) or warn about and keep (``warn``, slime's way) unknown keys.

    The parser's dests are read once, when the rule is made; `also_known` adds keys that are
    meaningful though the parser has no such dest.
    """

    __repr__ = record_repr

    parser: argparse.ArgumentParser = attrs.field(eq=False, repr=False)
    action: Literal["error", "warn"] = attrs.field(
        default="error", validator=attrs.validators.in_(("error", "warn"))
    )
    layer: str = "role-config"
    also_known: frozenset[str] = attrs.field(default=frozenset(), converter=_names)
    name: str = "unknown-keys"
    stage: Literal["layers"] = "layers"
    _index: tuple[frozenset[str], dict[str, str]] = attrs.field(init=False, eq=False, repr=False)
    _dests: frozenset[str] = attrs.field(init=False, eq=False, repr=False)

    @_index.default
    def _read_index(self) -> tuple[frozenset[str], dict[str, str]]:
        check_type("UnknownKeys", "parser", self.parser, argparse.ArgumentParser, _PARSER)
        return parser_dests(self.parser)  # one walk over the parser's actions

    @_dests.default
    def _read_dests(self) -> frozenset[str]:
        return self._index[0] | self.also_known

    def __call__(self, context: RuleContext) -> Iterator[Decision]:
        layer = context.layer(self.layer)
        if layer is None:
            return
        for key in layer.values:
            if key in self._dests:
                continue
            dest = self._dest_of_flag(key)
            if dest is not None:
                message = f"{key!r} is a command-line flag; role files use argparse dest names"
                hint = f"write {dest}"
            else:
                message = f"{key!r} is not an argument of this parser"
                hint = did_you_mean_hint(key, self._dests) or "check the spelling in --help"
            if self.action == "warn":
                message += "; it is set anyway"
            yield Problem.at(
                layer.key_origin_at((key,)),
                message,
                key=key,
                hint=hint,
                severity="warning" if self.action == "warn" else "error",
            )

    def _dest_of_flag(self, key: str) -> str | None:
        for option in (key, "--" + key, "-" + key):
            if option in self._index[1]:
                return self._index[1][option]
        return dest_of_flag(key, self._dests)
