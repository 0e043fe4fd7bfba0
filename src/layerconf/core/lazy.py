"""Import cost: work a module would do at import time, done on first use or once for all.

`record_repr` is the ``__repr__`` attrs writes for a record, written once: attrs compiles one
per class at import (a third of the code it compiles for a frozen class), and a record's repr
serves only a developer reading it, never a resolution.
`record_eq` and `record_hash` are the ``__eq__`` and ``__hash__`` attrs writes, written once
too (another third): a record compares and hashes as before, by its fields in order.
`LazyPattern` compiles a regular expression the first time it is used: the patterns that find
secrets in free text, or the line breaks that locate a YAML error, serve messages a resolution
rarely writes, and compiling one costs more than importing a small module. `sha256_hex` is the
SHA-256 of a file's bytes without ``import hashlib``, which loads OpenSSL (~5 ms) for a digest
CPython also implements itself. benchmarks/run.py measures what ``import layerconf`` and a first
resolution import.
"""

from __future__ import annotations

import operator
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

__all__ = ["LazyPattern", "record_eq", "record_hash", "record_repr", "sha256_hex"]


def _sha256_function() -> Callable[[bytes], Any]:
    """CPython's own SHA-256 (``_sha256`` up to 3.11, ``_sha2`` since), else OpenSSL's."""
    for name in ("_sha256", "_sha2"):
        try:
            function: Callable[[bytes], Any] = __import__(name).sha256
        except (ImportError, AttributeError):  # another version, or a build without it
            continue
        return function
    import hashlib

    return hashlib.sha256


_SHA256 = _sha256_function()


class LazyPattern:
    """A regular expression compiled on its first use, with the `re.Pattern` methods used here.

    Thread-safe: threads that use it first at the same moment may each compile it; they get
    equal patterns, and whichever is stored last is kept.
    """

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled now if it is the first use)."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.pattern)
        return compiled

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.compiled().finditer(text)

    def findall(self, text: str) -> list[Any]:
        return self.compiled().findall(text)

    def sub(self, replacement: str | Callable[[re.Match[str]], str], text: str) -> str:
        return self.compiled().sub(replacement, text)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r})"


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of `data` in hex, as ``hashlib.sha256(data).hexdigest()`` gives it."""
    digest: str = _SHA256(data).hexdigest()
    return digest


_PRINTING = threading.local()  # per thread: the records being printed, against cycles


def record_repr(self: Any, **shown: Callable[[Any], str]) -> str:
    """``Name(field=value, ...)`` as attrs' own ``__repr__`` writes it, for any attrs class.

    A class gets it with ``__repr__ = record_repr`` in its body (attrs then writes none). The
    fields attrs prints are those with ``repr=True`` (``!r``) or a callable (its result, or
    that of the one `shown` gives for the field); a record met again inside itself prints
    ``...``.
    """
    printing: set[int] | None = getattr(_PRINTING, "ids", None)
    if printing is None:
        printing = _PRINTING.ids = set()
    if id(self) in printing:
        return "..."
    printing.add(id(self))
    try:
        parts = []
        for field in self.__attrs_attrs__:
            if field.repr is False:
                continue
            value = (
                getattr(self, field.name)
                if field.init
                else getattr(self, field.name, attrs.NOTHING)
            )
            text = shown.get(field.name, field.repr)
            parts.append(
                f"{field.name}={value!r}" if text is True else f"{field.name}={text(value)}"
            )
        return f"{self.__class__.__qualname__.rsplit('>.', 1)[-1]}({', '.join(parts)})"
    finally:
        printing.remove(id(self))


_Fields = tuple[tuple[str, Callable[[Any], Any] | None], ...]  # (name, eq_key) of each field
_KEYS = "__record_keys__"  # a record class's own (compared fields, hash key), made on first use


def _hash_key(cls: type, fields: _Fields) -> Callable[[Any], tuple[Any, ...]]:
    """What `record_hash` hashes for a record of `cls`: the class's seed and the values."""
    seed = hash(f"<record {cls.__module__}.{cls.__qualname__}>")
    names = [name for name, _ in fields]
    if any(key is not None for _, key in fields):
        return lambda record: (
            seed,
            *[
                getattr(record, name) if key is None else key(getattr(record, name))
                for name, key in fields
            ],
        )
    if not names:
        return lambda record: (seed,)
    values = operator.attrgetter(*names)  # one value, or a tuple of them
    return lambda record: (seed, values(record))


def _record_keys(cls: type) -> tuple[_Fields, Callable[[Any], tuple[Any, ...]]]:
    keys: tuple[_Fields, Callable[[Any], tuple[Any, ...]]] | None = cls.__dict__.get(_KEYS)
    if keys is None:
        # attrs' stubs do not declare `eq_key`, which every Attribute has.
        fields: Sequence[Any] = cls.__attrs_attrs__  # type: ignore[attr-defined]
        compared = tuple((field.name, field.eq_key) for field in fields if field.eq)
        hashed = tuple(
            (field.name, field.eq_key)
            for field in fields
            if (field.eq if field.hash is None else field.hash)
        )
        keys = (compared, _hash_key(cls, hashed))
        setattr(cls, _KEYS, keys)  # a subclass makes its own: looked up in the class's dict
    return keys


def record_eq(self: Any, other: object) -> Any:
    """``==`` as attrs' own ``__eq__`` answers it, for any attrs class: `NotImplemented` for an
    object of another class (a subclass too); else ``self.a == other.a and self.b == other.b
    ...`` over the fields with ``eq=True`` (through their ``eq_key``), in order, so NaN is not
    equal to itself, and the answer is the first false comparison's, else the last's.

    A class gets it with ``__eq__ = record_eq`` and ``__hash__ = record_hash`` in its body
    (attrs then writes neither); ``!=`` is Python's default, the negation.
    """
    if other.__class__ is not self.__class__:
        return NotImplemented
    fields = _record_keys(self.__class__)[0]
    if not fields:
        return True
    for name, key in fields[:-1]:
        if key is None:
            equal = getattr(self, name) == getattr(other, name)
        else:
            equal = key(getattr(self, name)) == key(getattr(other, name))
        if not equal:
            return equal
    name, key = fields[-1]
    if key is None:
        return getattr(self, name) == getattr(other, name)
    return key(getattr(self, name)) == key(getattr(other, name))


def record_hash(self: Any) -> int:
    """``hash()`` as attrs' own ``__hash__`` computes it: from the class and the fields with
    ``hash=True`` (by default those with ``eq=True``, through their ``eq_key``), so equal
    records hash alike."""
    return hash(_record_keys(self.__class__)[1](self))
