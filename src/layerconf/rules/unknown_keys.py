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
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.rules import Decision, RuleContext
from layerconf.core.suggest import Suggestions, dest_of_flag
from layerconf.exceptions import Problem
from layerconf.rules._shape import shape_dests

__all__ = ["UnknownKeys", "parser_dests"]


def parser_dests(parser: argparse.ArgumentParser) -> tuple[frozenset[str], dict[str, str]]:
    """The dests of `parser` (help excluded) and a map from each option string to its dest."""
    return _index_of(parser._actions, [action.dest for action in parser._actions])


def _index_of(
    actions: list[argparse.Action], dests: list[str]
) -> tuple[frozenset[str], dict[str, str]]:
    """`parser_dests` of `actions`, whose dests are `dests`."""
    known: set[str] = set()
    flags: dict[str, str] = {}
    for action, dest in zip(actions, dests, strict=True):
        if isinstance(action, argparse._HelpAction) or dest == argparse.SUPPRESS:
            continue
        known.add(dest)
        for option in action.option_strings:
            flags[option] = dest
    return frozenset(known), flags


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
    __eq__ = record_eq
    __hash__ = record_hash

    parser: argparse.ArgumentParser = attrs.field(eq=False, repr=False)
    action: Literal["error", "warn"] = attrs.field(
        default="error", validator=attrs.validators.in_(("error", "warn"))
    )
    layer: str = "role-config"
    also_known: frozenset[str] = attrs.field(default=frozenset(), converter=_names)
    name: str = "unknown-keys"
    stage: Literal["layers"] = "layers"
    # The actions and their dests when the rule was made, in order: a key is looked up in
    # them at C speed (list.index), not by a set of a thousand dests built for ten keys.
    _actions: list[argparse.Action] = attrs.field(init=False, eq=False, repr=False)
    _dest_list: list[str] = attrs.field(init=False, eq=False, repr=False)
    # Each key looked up so far: whether it is a dest (a resolution per role asks again).
    _seen: dict[str, bool] = attrs.field(init=False, eq=False, repr=False, factory=dict)
    # The full index (`parser_dests` of those actions), built on the first unknown key.
    _lazy: dict[str, tuple[int, tuple[frozenset[str], dict[str, str]]]] = attrs.field(
        init=False, eq=False, repr=False, factory=dict
    )

    @_actions.default
    def _read_actions(self) -> list[argparse.Action]:
        check_type("UnknownKeys", "parser", self.parser, argparse.ArgumentParser, _PARSER)
        return list(self.parser._actions)

    @_dest_list.default
    def _read_dests(self) -> list[str]:
        return shape_dests(self.parser)  # (one reading for all the rules of a preset build)

    def __call__(self, context: RuleContext) -> Iterator[Decision]:
        layer = context.layer(self.layer)
        if layer is None:
            return
        suggest: Suggestions | None = None  # (bounded per layer: see SUGGESTED)
        for key in layer.values:
            known = self._seen.get(key)
            if known is None:
                if len(self._seen) >= 4096:  # bounded, whatever the role files hold
                    self._seen.clear()
                known = self._seen[key] = key in self.also_known or self._is_dest(key)
            if known:
                continue
            dests, flags = self._index()
            dest = self._dest_of_flag(key, dests, flags)
            if dest is not None:
                message = f"{key!r} is a command-line flag; role files use argparse dest names"
                hint = f"write {dest}"
            else:
                message = f"{key!r} is not an argument of this parser"
                suggest = suggest or Suggestions(dests)
                close = suggest(key)
                hint = f"did you mean {close!r}?" if close else "check the spelling in --help"
            if self.action == "warn":
                message += "; it is set anyway"
            yield Problem.at(
                layer.key_origin_at((key,)),
                message,
                key=key,
                hint=hint,
                severity="warning" if self.action == "warn" else "error",
            )

    def _is_dest(self, key: str) -> bool:
        """Whether `key` is the dest of an action (help excluded) when the rule was made."""
        dests, at = self._dest_list, 0
        while True:
            try:
                at = dests.index(key, at) + 1
            except ValueError:
                return False
            if key != argparse.SUPPRESS and not isinstance(
                self._actions[at - 1], argparse._HelpAction
            ):
                return True

    def _index(self) -> tuple[frozenset[str], dict[str, str]]:
        """The known keys and each option string's dest (`parser_dests`), built once, and
        again when the parser's table of option strings grew or shrank since (an option
        string given to an action in place)."""
        options = len(self.parser._option_string_actions)
        kept = self._lazy.get("index")
        if kept is None or kept[0] != options:
            dests, flags = _index_of(self._actions, self._dest_list)
            kept = self._lazy["index"] = (options, (dests | self.also_known, flags))
        return kept[1]

    def _dest_of_flag(self, key: str, dests: frozenset[str], flags: dict[str, str]) -> str | None:
        for option in (key, "--" + key, "-" + key):
            if option in flags:
                return flags[option]
        return dest_of_flag(key, dests)
