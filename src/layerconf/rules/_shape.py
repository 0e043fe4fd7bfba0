"""Whether a parser gained or replaced an action since a cache entry was made of it, and the
dests of its actions, read once per such shape."""

from __future__ import annotations

import argparse
import operator
import weakref

__all__ = ["ParserShape", "parser_shape", "same_shape", "shape_dests"]

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


_DEST = operator.attrgetter("dest")

# Each parser's dests as of its shape: weakly keyed, so a parser can still be freed.
_DESTS: weakref.WeakKeyDictionary[argparse.ArgumentParser, tuple[ParserShape, list[str]]] = (
    weakref.WeakKeyDictionary()
)


def shape_dests(parser: argparse.ArgumentParser) -> list[str]:
    """The dest of each of `parser`'s actions, in order; read again when an action is added or
    replaced (`same_shape`). Read-only: the list is shared.

    Reading a thousand dests costs about as much as the rest of a role file's rules on a first
    call; the role file dest's check, `UnknownKeys` and `TypeCoercion` share one reading.
    """
    try:
        cached = _DESTS.get(parser)
    except TypeError:  # a parser class that is not hashable: no cache
        return list(map(_DEST, parser._actions))
    if cached is None or not same_shape(parser, cached[0]):
        # (in C: no Python pass over the actions)
        cached = _DESTS[parser] = (parser_shape(parser), list(map(_DEST, parser._actions)))
    return cached[1]
