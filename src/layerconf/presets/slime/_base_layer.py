"""The base layer of a plain namespace for slime's drop-in, kept between its two calls.

slime asks for the actor, then the critic, with one namespace: its layer is built once and
reused by the next call while the namespace is unchanged (`_plain_base`). `_all_plain` tells
whether a namespace's values are plain data that no two places share, which the layers'
copies then reproduce as slime's deep copy does.
"""

from __future__ import annotations

import argparse
import operator
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from layerconf.core.records import Layer, Origin
from layerconf.core.values import ATOMIC_TYPES

#: The base layer of the plain namespace given last, for the next call with it: slime asks
#: for the actor, then the critic, with one namespace (a thousand values copied once, not
#: twice). Used once, only while the namespace holds the very same values in the same order
#: and its containers are still what they were (`_Kept`), then dropped: a layer (with any
#: secret the namespace held) outlives neither that call nor the namespace.
_BASE: list[_Kept | None] = [None]
_PLAIN_DEPTH = 16


@attrs.frozen
class _Kept:
    """A namespace's base layer, with what tells whether the namespace changed since."""

    ref: weakref.ref[argparse.Namespace]
    keys: list[str]
    values: list[Any]
    containers: Callable[[Mapping[str, Any]], Any]  # picks its containers (lists, dicts)
    shown: str  # their repr then
    layer: Layer

    def holds(self, current: dict[str, Any]) -> bool:
        """Whether `current` holds what the namespace held: the very same values under the
        same keys, and containers of the same repr that still hold plain values only
        (`_plain`: an item changed in place may be of any type, and its repr say anything),
        whose repr tells 1, 1.0 and True, -0.0 and 0.0 apart: an equal repr is an equal
        value. The common case is compared in C."""
        if not (
            len(current) == len(self.values)
            and all(map(operator.is_, current.values(), self.values))
            and list(current) == self.keys
        ):
            return False
        containers = self.containers(current)
        return _all_plain(containers) and _shown(containers) == self.shown


def _plain_base(base_args: argparse.Namespace, current: dict[str, Any]) -> tuple[Layer, bool]:
    """The layer of a namespace without provenance (the one kept if nothing changed since),
    and whether its values are all plain data."""
    kept = _BASE[0]
    if kept is not None and kept.ref() is base_args:
        _BASE[0] = None  # used once (slime's critic after its actor), then not kept on
        if kept.holds(current):
            return kept.layer, True
    layer = Layer("base", "mapping", current, Origin("base", "mapping"))
    mutable = tuple(layer.mutable_keys)
    if not _all_plain(map(current.__getitem__, mutable)):  # the namespace's own, not copies
        return layer, False
    containers = _picker(mutable)
    shown = _shown(containers(current))
    try:
        ref = weakref.ref(base_args, _forget)
    except TypeError:  # a namespace class without weak references: nothing kept
        return layer, True
    if shown is not None:
        _BASE[0] = _Kept(ref, list(current), list(current.values()), containers, shown, layer)
    return layer, True


def _picker(keys: tuple[str, ...]) -> Callable[[Mapping[str, Any]], Any]:
    """A function giving the tuple of the values of `keys` (in C: an itemgetter)."""
    if len(keys) < 2:  # an itemgetter of one key gives the value, not a tuple
        return lambda values: tuple(map(values.__getitem__, keys))
    return operator.itemgetter(*keys)


def _shown(values: Any) -> str | None:
    try:
        return repr(values)
    except ValueError:  # an int too long to write: never equal, nothing kept
        return None


def _all_plain(values: Iterable[Any]) -> bool:
    """Whether every one of `values` is `_plain`, no list, tuple or dict among them held twice
    (slime's one deep copy keeps it one object; copies per key would not); a list, tuple or
    dict of atomic values (the containers of a real namespace) is told in C, without a call."""
    atomic = ATOMIC_TYPES
    seen: set[int] = set()
    for value in values:
        kind = type(value)
        if kind in atomic:
            continue
        if id(value) in seen:
            return False
        if (kind is list or kind is tuple) and atomic.issuperset(map(type, value)):
            seen.add(id(value))
            continue
        if (
            kind is dict
            and atomic.issuperset(map(type, value))
            and atomic.issuperset(map(type, value.values()))
        ):
            seen.add(id(value))
            continue
        if not _plain(value, 0, seen):
            return False
    return True


def _plain(value: Any, depth: int, seen: set[int]) -> bool:
    """Whether `value` is made of lists, tuples, dicts and atomic values only, none of its
    containers among the ids `seen` (which gets them)."""
    kind = type(value)
    if kind in ATOMIC_TYPES:
        return True
    if depth > _PLAIN_DEPTH or id(value) in seen:  # (a container holding itself, too)
        return False
    seen.add(id(value))
    if kind is list or kind is tuple:
        return _plain_items(value, depth, seen)
    if kind is dict:
        return _plain_items(value.keys(), depth, seen) and _plain_items(value.values(), depth, seen)
    return False


def _plain_items(items: Iterable[Any], depth: int, seen: set[int]) -> bool:
    # Atomic items, the common case, are told in C.
    return ATOMIC_TYPES.issuperset(map(type, items)) or all(
        _plain(item, depth + 1, seen) for item in items
    )


def _forget(ref: weakref.ref[argparse.Namespace]) -> None:
    kept = _BASE[0]
    if kept is not None and kept.ref is ref:
        _BASE[0] = None
