"""Whether a parser gained or replaced an action since a cache entry was made of it."""

from __future__ import annotations

import argparse
import weakref

__all__ = ["ParserShape", "parser_shape", "same_shape"]

#: What a parser's actions looked like: their number and a weak reference to the last one.
ParserShape = tuple[int, "weakref.ref[argparse.Action] | None"]


def parser_shape(parser: argparse.ArgumentParser) -> ParserShape:
    """A mark telling whether `parser` gained or replaced an action since (`same_shape`).

    argparse only ever appends actions, a ``conflict_handler="resolve"`` replacement too, so
    the count and the last action tell. The action is held weakly: it refers to its parser,
    which a cache keyed weakly by the parser must not keep alive.
    """
    actions = parser._actions
    return len(actions), weakref.ref(actions[-1]) if actions else None


def same_shape(parser: argparse.ArgumentParser, shape: ParserShape) -> bool:
    """Whether `parser`'s actions are still those `shape` was taken of."""
    actions = parser._actions
    size, last = shape
    return size == len(actions) and (last is None or last() is actions[-1])
