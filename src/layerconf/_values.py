"""Copying configuration values without sharing anything mutable.

Most configuration values are atomic (numbers, strings, booleans, None, enum members), and
those are shared as they are; only containers and unknown objects are copied. This is what lets
a resolution be cheap and still never share a mutable value with its inputs.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping
from typing import Any

#: Types whose values are immutable and shared as they are.
ATOMIC_TYPES = frozenset({int, float, bool, str, bytes, complex, type(None)})


def is_atomic(value: Any) -> bool:
    """True when `value` can be shared safely: it is immutable all the way down."""
    kind = type(value)
    if kind in ATOMIC_TYPES:
        return True
    if kind is tuple or kind is frozenset:
        return all(is_atomic(item) for item in value)
    # Enum members are singletons by contract; copying one returns the member itself.
    return isinstance(value, enum.Enum)


def copy_value(value: Any) -> Any:
    """A copy of `value` sharing nothing mutable with it; every mapping becomes a plain dict."""
    kind = type(value)
    atomic = ATOMIC_TYPES
    if kind in atomic:
        return value
    if kind is list:
        return [item if type(item) in atomic else copy_value(item) for item in value]
    if kind is dict or isinstance(value, Mapping):
        return {
            key: item if type(item) in atomic else copy_value(item) for key, item in value.items()
        }
    if is_atomic(value):
        return value
    try:
        return copy.deepcopy(value)
    except Exception:  # a lock, an open file...: it cannot be copied, so it is shared
        return value


def same_value(recorded: Any, current: Any, *, copied: bool = True) -> bool:
    """Whether `current` is still the value that was `recorded`.

    Same type all the way down and equal: ``1``, ``1.0`` and ``True`` differ; floats compare
    by their text, so ``-0.0`` differs from ``0.0`` and a NaN equals a NaN. When `current`
    may be a copy of `recorded` (`copied`), an object whose type compares by identity, or
    whose ``==`` is not a truth value (an array), cannot be told apart from its copy and
    counts as the same; otherwise such objects are the same only if they are one object.
    """
    if recorded is current:
        return True
    kind = type(recorded)
    if kind is not type(current):
        return False
    if kind is float:
        return repr(recorded) == repr(current)
    if kind is list or kind is tuple:
        return len(recorded) == len(current) and all(
            same_value(a, b, copied=copied) for a, b in zip(recorded, current, strict=True)
        )
    if kind is dict:
        return recorded.keys() == current.keys() and all(
            same_value(recorded[key], current[key], copied=copied) for key in recorded
        )
    if kind.__eq__ is object.__eq__:  # type: ignore[comparison-overlap]
        return copied and not is_atomic(current)
    try:
        return bool(recorded == current)
    except Exception:
        return copied
