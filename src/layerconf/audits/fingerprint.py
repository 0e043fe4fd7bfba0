"""The fingerprint of an audit record: the sha256 of the canonical text of every role's values."""

from __future__ import annotations

import functools
import hashlib
import operator
from collections.abc import Mapping
from typing import Any

from layerconf.audits.codec import FORMAT, canonical

__all__ = ["fingerprint"]

_PREFIXES = {FORMAT: b"layerconf-fingerprint-2\n", 1: b"layerconf-fingerprint-1\n"}


def fingerprint(roles: Mapping[str, Mapping[str, Any]], version: int = FORMAT) -> str:
    """sha256 of the canonical text of every role's values (see docs/audit.md).

    Format 2 covers the digest of every value a secret's text was scrubbed from; format 1
    records had no such values, and only their prefix differs.
    """
    values = {}
    for role, section in roles.items():
        settings = section["settings"]
        # Sorted already (a sorted list sorts at once), in C; a trainer's keys repeat.
        order = _sorted_keys(tuple(settings))
        values[role] = dict(zip(order, map(_VALUE, map(settings.__getitem__, order)), strict=True))
    prefix = _PREFIXES[FORMAT] if version == FORMAT else _PREFIXES[1]
    return hashlib.sha256(prefix + canonical(values).encode("ascii")).hexdigest()


_VALUE = operator.itemgetter("value")


@functools.lru_cache(maxsize=16)
def _sorted_keys(keys: tuple[Any, ...]) -> tuple[Any, ...]:
    """`keys` sorted; as they are when they cannot be (the canonical text then says why)."""
    try:
        return tuple(sorted(keys))
    except TypeError:
        return keys
