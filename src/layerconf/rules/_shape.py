"""Whether a parser gained or replaced an action since a cache entry was made of it, and the
dests of its actions, read once per build of a preset's rules."""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import operator
import weakref
from collections.abc import Iterator

__all__ = ["ParserShape", "parser_shape", "reading_dests", "same_shape", "shape_dests"]

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

# The dests of the parser whose rules are being built (`reading_dests`), for this thread or
# task only: one reading serves every rule of one build.
_READING: contextvars.ContextVar[tuple[argparse.ArgumentParser, list[str]] | None] = (
    contextvars.ContextVar("layerconf_reading_dests", default=None)
)


@contextlib.contextmanager
def reading_dests(parser: argparse.ArgumentParser) -> Iterator[None]:
    """While it lasts, `shape_dests(parser)` reads `parser`'s dests once and shares them.

    A build of one preset's rules (the role file dest's check, `UnknownKeys`, `TypeCoercion`'s
    table) reads a thousand dests three times otherwise, about as much as the rest of a first
    call's rules. Outside it, every reading is fresh: a dest renamed in place (which changes
    neither the count of actions nor the last one) is seen by the next rule built.
    """
    token = _READING.set((parser, list(map(_DEST, parser._actions))))  # (in C)
    try:
        yield
    finally:
        _READING.reset(token)


def shape_dests(parser: argparse.ArgumentParser) -> list[str]:
    """The dest of each of `parser`'s actions, in order: the reading of `reading_dests` while
    one lasts for `parser`, else a fresh one. Read-only: the list may be shared."""
    shared = _READING.get()
    if shared is not None and shared[0] is parser:
        return shared[1]
    return list(map(_DEST, parser._actions))
