"""Configuration values: copying them without sharing anything mutable, comparing them, and
their JSON form.

Most configuration values are atomic (numbers, strings, booleans, None, enum members), and
those are shared as they are; only containers and unknown objects are copied. This is what lets
a resolution be cheap and still never share a mutable value with its inputs.
"""

from __future__ import annotations

import copy
import enum
import math
import os
from collections.abc import Mapping
from typing import Any

#: Types whose values are immutable and shared as they are.
ATOMIC_TYPES = frozenset({int, float, bool, str, bytes, complex, type(None)})
#: The longest int (in bits) that is printed in decimal: Python 3.11+ refuses to print ints of
#: more than 4,300 digits (sys.set_int_max_str_digits); longer ones are written some other way.
MAX_INT_BITS = 13_000


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


def jsonable(value: Any) -> Any:
    """`value` as JSON can hold it; see docs/cli.md for the encoding.

    Enum members are their name (``"flash"``: what the command line and YAML take), tuples
    and lists arrays, sets sorted arrays, paths and other objects strings, mapping keys strings,
    and floats JSON cannot hold (nan, inf) the strings ``"nan"``, ``"inf"``, ``"-inf"``.
    """

    if value is None or value is True or value is False:
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(float(value))
    if isinstance(value, Mapping):
        return {json_key(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, (set, frozenset)):
        import json

        items = [jsonable(item) for item in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        return path if isinstance(path, str) else path.decode("utf-8", "backslashreplace")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "backslashreplace")
    return repr(value)


def json_key(key: Any) -> str:
    """A mapping key as JSON names it: text as it is, ``true``, ``null``, ``1``, an enum's name."""
    import json

    encoded = jsonable(key)
    return encoded if isinstance(encoded, str) else json.dumps(encoded)
