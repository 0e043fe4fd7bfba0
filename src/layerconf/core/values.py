"""Configuration values: copying them without sharing anything mutable, comparing them, their
JSON form, and their text (`value_text`, the one safe repr every formatter uses).

Most configuration values are atomic (numbers, strings, booleans, None, enum members), and
those are shared as they are; only containers and unknown objects are copied. This is what lets
a resolution be cheap and still never share a mutable value with its inputs.
"""

from __future__ import annotations

import copy
import enum
import math
import operator
import os
import sys
from collections.abc import Mapping
from itertools import compress, repeat
from typing import Any

__all__ = [
    "ATOMIC_TYPES",
    "MAX_DEPTH",
    "MAX_INT_BITS",
    "NESTED",
    "TEXT_LIMIT",
    "Shown",
    "Unkept",
    "copy_value",
    "full_text",
    "int_text",
    "is_atomic",
    "json_key",
    "jsonable",
    "other_keys",
    "same_value",
    "shorten",
    "snapshot",
    "unreadable",
    "value_text",
]

#: Types whose values are immutable and shared as they are.
ATOMIC_TYPES = frozenset({int, float, bool, str, bytes, complex, type(None)})
#: The longest int (in bits) that is printed in decimal: Python 3.11+ refuses to print ints of
#: more than 4,300 digits (sys.set_int_max_str_digits); longer ones are written some other way.
MAX_INT_BITS = 13_000
#: How many containers deep a value is followed: copied (`copy_value`), compared
#: (`same_value`), shown (`value_text`, `jsonable`) or redacted. A container further down is
#: shown as ``<nested more than 100 levels>`` (`NESTED`), as an audit record shows it
#: (`layerconf.audits.codec.MAX_VALUE_DEPTH`), shared by a copy, compared with ``==``; so
#: that no value, however deep, raises RecursionError or takes unbounded time.
MAX_DEPTH = 100
#: The types of values that hold no text a secret could be in.
TEXTLESS_TYPES = frozenset({int, float, bool, type(None)})


class Shown:
    """What a formatter shows in place of a value it cannot show: its `text` is its repr (a
    container past `MAX_DEPTH`, `NESTED`; one that cannot be read, `unreadable`)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __reduce__(self) -> tuple[Any, ...]:
        return (Shown, (self.text,))


#: Stands in, in a value as it is shown (redacted), for a container past `MAX_DEPTH`.
NESTED = Shown(f"<nested more than {MAX_DEPTH} levels>")


def unreadable(value: Any, error: BaseException) -> Shown:
    """What a value whose reading raised `error` is shown as (a mapping whose ``items()``,
    ``__iter__`` or ``__getitem__`` raises): ``<unreadable Foo: RuntimeError>``, none of its
    own text (its repr may hold what was not searched for secrets)."""
    return Shown(f"<unreadable {type(value).__qualname__}: {type(error).__name__}>")


def other_keys(values: dict[str, Any]) -> list[str]:
    """The keys of `values` whose value is not of an atomic type, in order.

    A real layer holds a thousand values and a handful of others (lists, dicts, enum members),
    so the values' types are checked in C: on CPython 3.11+ ``issuperset`` stops at the first
    type it lacks, so one pass asks it again after each miss over one shared iterator of a
    plain dict, and the iterator's length hint says where each miss was. The answer is taken
    only if its positions are as many as the misses, in order, each of another type: exactly
    the other values (else the plain pass below answers, as before 3.11, where ``issuperset``
    reads the whole iterator first: a type's entry in `_NOT_ATOMIC`, True for a type not in
    it, selects its key).
    """
    atomic = ATOMIC_TYPES
    if _STOPS_AT_MISS and type(values) is dict:
        items = iter(values.values())
        types = map(type, items)
        size = len(values)
        positions = []
        while not atomic.issuperset(types):
            positions.append(size - operator.length_hint(items) - 1)
        if not positions:
            return []
        keys = list(values)
        if (
            positions[0] >= 0
            and positions[-1] < size
            and all(map(operator.lt, positions, positions[1:]))
        ):
            found = [keys[position] for position in positions]
            if not atomic.intersection(type(values[key]) for key in found):
                return found
    return list(compress(values, map(_NOT_ATOMIC.get, map(type, values.values()), _TRUE)))


#: False for each atomic type: ``_NOT_ATOMIC.get(type, True)`` tells a value to look at.
_NOT_ATOMIC = dict.fromkeys(ATOMIC_TYPES, False)
_TRUE = repeat(True)
#: Whether ``frozenset.issuperset(iterator)`` stops at the first item it lacks (CPython 3.11+).
_STOPS_AT_MISS = sys.implementation.name == "cpython" and sys.version_info >= (3, 11)


def is_atomic(value: Any, _depth: int = 0) -> bool:
    """True when `value` can be shared safely: it is immutable all the way down (False for
    one nested more than `MAX_DEPTH` levels: not looked at)."""
    kind = type(value)
    if kind in ATOMIC_TYPES:
        return True
    if kind is tuple or kind is frozenset:
        return _depth < MAX_DEPTH and all(map(is_atomic, value, repeat(_depth + 1)))
    # Enum members are singletons by contract; copying one returns the member itself.
    return isinstance(value, enum.Enum)


def copy_value(value: Any, _memo: dict[int, Any] | None = None, _depth: int = 0) -> Any:
    """A copy of `value` sharing nothing mutable with it; every mapping becomes a plain dict.

    A container that holds itself is copied as one that holds its copy (no RecursionError);
    one more than `MAX_DEPTH` levels down, or a mapping whose reading raises, is shared as it
    is.
    """
    kind = type(value)
    atomic = ATOMIC_TYPES
    if kind in atomic:
        return value
    if _memo is None:  # the common containers, copied in C (nothing inside them to share)
        if kind is list and atomic.issuperset(map(type, value)):
            return list(value)
        if kind is dict and atomic.issuperset(map(type, value.values())):
            return dict(value)
    if kind is list or kind is dict or isinstance(value, Mapping):
        if _depth >= MAX_DEPTH:
            return value
        memo: dict[int, Any] = {} if _memo is None else _memo
        _depth += 1
        done = memo.get(id(value))
        if done is not None:
            return done
        if kind is list:
            items: list[Any] = []
            memo[id(value)] = items
            items.extend(
                item if type(item) in atomic else copy_value(item, memo, _depth) for item in value
            )
            return items
        mapping: dict[Any, Any] = {}
        memo[id(value)] = mapping
        try:
            for key, item in value.items():
                mapping[key] = item if type(item) in atomic else copy_value(item, memo, _depth)
        except Exception:  # a mapping that cannot be read cannot be copied: it is shared
            memo[id(value)] = value
            return value
        return mapping
    if is_atomic(value):
        return value
    try:
        return copy.deepcopy(value, _memo)
    except Exception:  # a lock, an open file...: it cannot be copied, so it is shared
        return value


def same_value(recorded: Any, current: Any, *, copied: bool = True) -> bool:
    """Whether `current` is still the value that was `recorded`.

    Same type all the way down and equal: ``1``, ``1.0`` and ``True`` differ; floats compare
    by their text, so ``-0.0`` differs from ``0.0`` and a NaN equals a NaN. When `current`
    may be a copy of `recorded` (`copied`), an object whose type compares by identity, or
    whose ``==`` is not a truth value (an array), cannot be told apart from its copy and
    counts as the same; otherwise such objects are the same only if they are one object.
    Containers that hold themselves compare without a RecursionError; those more than
    `MAX_DEPTH` levels down compare with ``==`` (as other objects: a RecursionError of theirs
    counts as `copied`).
    """
    return _same(recorded, current, copied, set())


def _same(recorded: Any, current: Any, copied: bool, active: set[tuple[int, int]]) -> bool:
    if recorded is current:
        return True
    kind = type(recorded)
    if kind is not type(current):
        return False
    if kind is float:
        return repr(recorded) == repr(current)
    if (kind is list or kind is tuple or kind is dict) and len(active) < MAX_DEPTH:
        pair = (id(recorded), id(current))  # (`active`: the pairs it is inside, as deep)
        if pair in active:  # met again inside itself: the same so far, as far as it goes
            return True
        if len(recorded) != len(current):
            return False
        active.add(pair)
        try:
            if kind is dict:
                return recorded.keys() == current.keys() and all(
                    _same(recorded[key], current[key], copied, active) for key in recorded
                )
            return all(_same(a, b, copied, active) for a, b in zip(recorded, current, strict=True))
        finally:
            active.discard(pair)
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
    floats JSON cannot hold (nan, inf) the strings ``"nan"``, ``"inf"``, ``"-inf"``, and an int
    too long to print in decimal (`MAX_INT_BITS`) its exact hexadecimal text (``"0x1f..."``).
    Other objects are their repr (`value_text`: never raising); a container inside itself is
    ``"<cycle>"``, one more than `MAX_DEPTH` levels down ``"<nested more than 100 levels>"``
    (as an audit record shows them), one whose reading raises `unreadable`'s text.
    """
    return _jsonable(value, set())


def _jsonable(value: Any, active: set[int]) -> Any:
    if value is None or value is True or value is False:
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        number = int(value)
        return number if number.bit_length() <= MAX_INT_BITS else hex(number)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(float(value))
    mapping = isinstance(value, Mapping)
    if mapping or isinstance(value, (list, tuple, set, frozenset)):
        marker = id(value)
        if marker in active:
            return "<cycle>"
        if len(active) >= MAX_DEPTH:  # (`active`: the containers it is inside, as deep)
            return repr(NESTED)
        active.add(marker)
        try:
            if mapping:
                return {json_key(key): _jsonable(item, active) for key, item in value.items()}
            items = [_jsonable(item, active) for item in value]
        except Exception as error:  # (a subclass's items() or iteration that raises)
            return repr(unreadable(value, error))
        finally:
            active.discard(marker)
        if isinstance(value, (list, tuple)):
            return items
        import json

        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        return path if isinstance(path, str) else path.decode("utf-8", "backslashreplace")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "backslashreplace")
    return value_text(value, None)


def json_key(key: Any) -> str:
    """A mapping key as JSON names it: text as it is, ``true``, ``null``, ``1``, an enum's name."""
    if type(key) is str:
        return key
    import json

    encoded = jsonable(key)
    return encoded if isinstance(encoded, str) else json.dumps(encoded)


# ---------------------------------------------------------------------------------------------
# Values kept by runtime writes


#: How many containers and items a runtime write copies at most; a larger value is not copied.
SNAPSHOT_ITEMS = 256
_SNAPSHOT_TYPES = (list, tuple, dict, set, frozenset)


class Unkept:
    """What a runtime write keeps of a value it does not copy: its type and size, and which
    object it was (compared with `describes`, never followed).

    A value too large to copy cheaply (more than `SNAPSHOT_ITEMS` items), one that holds itself,
    or of a type that is not a plain container is never duplicated nor kept alive by the
    record: it prints as ``<bytearray of 209,715,200 items, not kept>``. Nothing of the
    value's own code runs (no ``repr``, no ``len`` on an unknown type), so this never raises
    and never quotes a secret.
    """

    __slots__ = ("_ident", "size", "type_name")

    def __init__(self, value: Any, size: int | None = None) -> None:
        self.type_name: str = type(value).__qualname__
        self.size = size
        self._ident = id(value)

    def describes(self, value: Any) -> bool:
        """Whether `value` is (still) the object this was made from: the same type and id."""
        return id(value) == self._ident and type(value).__qualname__ == self.type_name

    def __repr__(self) -> str:
        if self.size is None:
            return f"<{self.type_name} object, not kept>"
        return f"<{self.type_name} of {self.size:,} items, not kept>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unkept, (self.type_name, self.size))

    # Immutable: a copy is the same object (and still describes its value).
    def __copy__(self) -> Unkept:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Unkept:
        return self

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is Unkept
            and other.type_name == self.type_name
            and other.size == self.size
            and other._ident == self._ident
        )

    def __hash__(self) -> int:
        return hash((self.type_name, self.size, self._ident))


def _unkept(type_name: str, size: int | None) -> Unkept:
    """An `Unkept` read back from a pickle: it describes no object of this process."""
    made = Unkept.__new__(Unkept)
    made.type_name, made.size, made._ident = type_name, size, -1
    return made


def snapshot(value: Any) -> Any:
    """What a runtime write keeps of `value`: the value itself when it is immutable, a copy
    of a small plain container (at most `SNAPSHOT_ITEMS` items in all, no cycle), else an
    `Unkept` (see there): bounded time and memory whatever the value."""
    kind = type(value)
    atomic = ATOMIC_TYPES
    if kind in atomic or isinstance(value, enum.Enum):
        return value
    if kind in (list, tuple, frozenset) and len(value) <= SNAPSHOT_ITEMS:
        # The common case, a few numbers: a list is copied, a tuple or frozenset is immutable.
        for item in value:
            if type(item) not in atomic:
                break
        else:
            return value.copy() if kind is list else value
    budget = [SNAPSHOT_ITEMS]
    copied = _snapshot(value, budget, set())
    if copied is not _TOO_BIG:
        return copied
    size = len(value) if type(value) in (*_SNAPSHOT_TYPES, bytearray) else None
    return Unkept(value, size)


_TOO_BIG: Any = object()


def _snapshot(value: Any, budget: list[int], active: set[int]) -> Any:
    kind = type(value)
    if kind in ATOMIC_TYPES or isinstance(value, enum.Enum):
        return value
    if kind not in _SNAPSHOT_TYPES or id(value) in active:
        return _TOO_BIG
    budget[0] -= 1 + len(value)
    if budget[0] < 0:
        return _TOO_BIG
    active.add(id(value))
    try:
        if kind is dict:
            mapping = {}
            for key, item in value.items():
                mapping[key] = copied = _snapshot(item, budget, active)
                if copied is _TOO_BIG or type(key) not in ATOMIC_TYPES:
                    return _TOO_BIG
            return mapping
        items = []
        for item in value:
            items.append(copied := _snapshot(item, budget, active))
            if copied is _TOO_BIG:
                return _TOO_BIG
        return items if kind is list else kind(items)
    finally:
        active.discard(id(value))


# ---------------------------------------------------------------------------------------------
# Text

#: How long a value's text is at most in text output (`value_text`): ``str(explain(...))``,
#: the command's tables.
TEXT_LIMIT = 300


def shorten(text: str, limit: int = 200) -> str:
    """`text` as a message quotes it: at most `limit` characters, ``...`` at the end when cut
    (a file from elsewhere may hold megabytes where a name should be)."""
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def int_text(value: int) -> str:
    """An int as text: its repr, or for one too long to print (Python refuses more than 4,300
    digits) ``<int of 6,021 digits: 1234...5678>``, computed in bounded time."""
    bits = value.bit_length()
    if bits <= MAX_INT_BITS:
        return repr(value)
    sign = "-" if value < 0 else ""
    magnitude = abs(int(value))
    tail = f"{magnitude % 10_000:04d}"
    if bits > 200_000:  # exact digit counts of larger ints cost seconds: say about how many
        return f"<int of about {bits * math.log10(2):,.0f} digits: {sign}...{tail}>"
    digits = int(bits * math.log10(2)) + 1
    if magnitude < 10 ** (digits - 1):
        digits -= 1
    head = magnitude // 10 ** (digits - 4)
    return f"<int of {digits:,} digits: {sign}{head}...{tail}>"


def value_text(value: Any, limit: int | None = TEXT_LIMIT) -> str:
    """``repr(value)`` as every formatter shows a value: it never raises and costs what its
    output does.

    An int too long to print is `int_text`'s ``<int of 6,021 digits: 1234...5678>``, a value
    whose ``repr`` raises ``<unprintable Foo: ValueError>``, a container that holds itself
    shows ``[...]`` where it does, as Python's own repr, and one more than `MAX_DEPTH` levels
    down ``<nested more than 100 levels>``. With a `limit`, the text is at most
    that long (`shorten`), and a long string or container is cut before it is formatted, not
    after. A secret is not this function's business: redact first (`Setting.redacted`).
    """
    out: list[str] = []
    _text(value, out, [limit if limit is not None else -1], set())
    text = "".join(out)
    return text if limit is None else shorten(text, limit)


def full_text(value: Any) -> str:
    """``repr(value)`` whole, as a namespace's and a layer's repr show it; `value_text` (without
    a limit) when repr() raises: an int past Python's digits limit, a ``__repr__`` that raises
    somewhere inside (its error's text is not shown). repr() first: it is C's, and the same."""
    try:
        return repr(value)
    except Exception:
        return value_text(value, None)


def _text(value: Any, out: list[str], left: list[int], active: set[int]) -> None:
    kind = type(value)
    bounded = left[0] >= 0
    if bounded and left[0] == 0:
        return
    if kind is int:
        text = int_text(value)
    elif kind in (str, bytes, bytearray) and bounded and len(value) > left[0]:
        text = repr(value[: left[0]])
    elif kind in _CONTAINERS:
        _container(value, out, left, active)
        return
    else:
        text = _repr(value)
    out.append(text)
    if bounded:
        left[0] = max(left[0] - len(text), 0)


_CONTAINERS: dict[type, tuple[str, str]] = {
    list: ("[", "]"),
    tuple: ("(", ")"),
    dict: ("{", "}"),
    set: ("{", "}"),
    frozenset: ("{", "}"),
}


def _container(value: Any, out: list[str], left: list[int], active: set[int]) -> None:
    kind = type(value)
    opening, closing = _CONTAINERS[kind]
    if id(value) in active:
        out.append(f"{opening}...{closing}")
        return
    if len(active) >= MAX_DEPTH:  # (`active`: the containers it is inside, as deep)
        out.append(repr(NESTED))
        return
    if not value and kind in (set, frozenset):
        out.append(f"{kind.__name__}()")
        return
    out.append(opening if kind is not frozenset else "frozenset({")
    active.add(id(value))
    try:
        items = value.items() if kind is dict else value
        for index, item in enumerate(items):
            if left[0] >= 0 and left[0] <= 0:
                out.append(", ...")
                break
            if index:
                out.append(", ")
            if kind is dict:
                _text(item[0], out, left, active)
                out.append(": ")
                _text(item[1], out, left, active)
            else:
                _text(item, out, left, active)
        if kind is tuple and len(value) == 1:
            out.append(",")
    finally:
        active.discard(id(value))
    out.append(closing if kind is not frozenset else "})")


def _repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception as error:  # a broken __repr__ (or a huge int inside) must not break output
        return f"<unprintable {type(value).__qualname__}: {type(error).__name__}>"
    if not isinstance(text, str):
        return f"<unprintable {type(value).__qualname__}>"
    return text
