"""The fingerprint of an audit record: the sha256 of the canonical text of every role's values."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json.encoder
import operator
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from layerconf.audits.codec import FORMAT, canonical, canonical_chunks
from layerconf.audits.texts import Texts, key_heads, scalar_texts
from layerconf.core.explain import values_at

__all__ = ["entry_texts", "fingerprint"]

_PREFIXES = {FORMAT: b"layerconf-fingerprint-2\n", 1: b"layerconf-fingerprint-1\n"}


def fingerprint(
    roles: Mapping[str, Mapping[str, Any]], version: int = FORMAT, *, texts: Texts | None = None
) -> str:
    """sha256 of the canonical text of every role's values (see docs/audit.md).

    Format 2 covers the digest of every value a secret's text was scrubbed from; format 1
    records had no such values, and only their prefix differs. `texts` holds the texts of
    values already worked out (`audit` makes them on the way): the same text, put together
    from them rather than encoded again (the tests compare both ways).
    """
    prefix = _PREFIXES[FORMAT] if version == FORMAT else _PREFIXES[1]
    if texts is not None:
        digest = hashlib.sha256(prefix)
        digest.update(_known_text(roles, texts).encode("ascii"))
        return digest.hexdigest()
    values = {}
    for role, section in roles.items():
        settings = section["settings"]
        # Sorted already (a sorted list sorts at once), in C; a trainer's keys repeat.
        order = _sorted_keys(tuple(settings))
        values[role] = dict(zip(order, map(_VALUE, values_at(settings, order)), strict=True))
    return hashlib.sha256(prefix + canonical(values).encode("ascii")).hexdigest()


def _known_text(roles: Mapping[str, Mapping[str, Any]], texts: Texts) -> str:
    """`canonical` of the values of `roles` (string role names and keys, as `audit` makes
    them), each value's text taken from `texts` where known, else encoded; its pieces put
    together by one join."""
    pieces = ["{"]
    for number, role in enumerate(sorted(roles)):
        settings = roles[role]["settings"]
        section = texts.section(settings)
        order, heads = _ordered(section.keys or tuple(settings))
        known = section.values
        if len(known) < len(order):  # (the texts known are of keys of `settings`)
            missing = list(itertools.filterfalse(known.__contains__, order))
            known = {**known, **entry_texts(settings, missing)}
        shown = values_at(known, order)
        body = [""] * (2 * len(order))  # each key's head, then its value's text
        body[::2] = heads
        body[1::2] = shown
        pieces.append(f"{',' if number else ''}{_ascii(role)}:{{")
        pieces += body
        pieces.append("}")
    pieces.append("}")
    return "".join(pieces)


def entry_texts(settings: Mapping[str, Any], keys: list[str]) -> dict[str, str]:
    """The canonical text of the value of the entry of each of `keys` in `settings` (a
    role's), by key."""
    values = [settings[key]["value"] for key in keys]
    texts = scalar_texts(values)
    if not all(texts):  # (one encoder: an error ends the call)
        encode = canonical_chunks()
        texts = [
            text or "".join(encode(value, 0)) for text, value in zip(texts, values, strict=True)
        ]
    return dict(zip(keys, texts, strict=True))


_T = TypeVar("_T")

#: The most keys an ordering kept for the next record holds: a trainer's role has ~1,100, and
#: a reader of large records from elsewhere keeps none of theirs (16 of 198,000 keys: ~240 MB).
_CACHED_KEYS = 10_000


class _CachedWhenSmall(Generic[_T]):
    """A function of a tuple of keys, its last 16 results kept (`kept`) for tuples of at most
    `_CACHED_KEYS` keys: a trainer's keys repeat from one record to the next."""

    def __init__(self, function: Callable[[tuple[Any, ...]], _T]) -> None:
        self.function = function
        self.kept = functools.lru_cache(maxsize=16)(function)

    def __call__(self, keys: tuple[Any, ...]) -> _T:
        return self.kept(keys) if len(keys) <= _CACHED_KEYS else self.function(keys)


@_CachedWhenSmall
def _ordered(keys: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`keys` sorted, and the JSON text of each followed by ":", each but the first after a
    ","."""
    order = _sorted_keys(keys)
    heads = key_heads(order, ":")
    return order, heads[:1] + tuple(map(operator.add, itertools.repeat(","), heads[1:]))


_VALUE = operator.itemgetter("value")
_ascii = json.encoder.encode_basestring_ascii


@_CachedWhenSmall
def _sorted_keys(keys: tuple[Any, ...]) -> tuple[Any, ...]:
    """`keys` sorted; as they are when they cannot be (the canonical text then says why)."""
    try:
        return tuple(sorted(keys))
    except TypeError:
        return keys
