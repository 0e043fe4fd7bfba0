"""The JSON text of the plain values of one record, worked out once and used twice.

An audit writes thousands of values JSON holds as they are (None, a bool, an int, a finite
float, a string with no secret to look for in it). Their text is needed twice: in the
fingerprint (the canonical text of every value, `layerconf.audits.fingerprint`) and, when the
record is written to a file, in the line of each entry (`layerconf.audits.io`). For a scalar
both texts are the same, so `Texts` works each out once, in loops that run in C (`map`), and
hands it to both.
"""

from __future__ import annotations

import collections
import functools
import itertools
import json.encoder
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from layerconf.audits.codec import c_chunks, compact
from layerconf.core.explain import Plain
from layerconf.core.secrets import may_show_secret
from layerconf.core.values import MAX_INT_BITS

__all__ = [
    "WAITING",
    "Section",
    "TextGroup",
    "Texts",
    "compact_chunks",
    "compact_encoder",
    "fill",
    "filled",
    "group_tails",
    "group_texts",
    "key_heads",
    "known_history",
    "scalar_texts",
]


def _int_text(value: int) -> str:
    return int.__repr__(value) if value.bit_length() <= MAX_INT_BITS else ""


def _float_text(value: float) -> str:
    return float.__repr__(value) if math.isfinite(value) else ""


def _str_text(value: str) -> str:
    if may_show_secret(value):  # a URL's password, JSON's secrets: the encoder searches it
        return ""
    return _ascii(value)


def _other_text(value: Any) -> str:
    return ""


_ascii = json.encoder.encode_basestring_ascii
#: The JSON text of a value `Encoder.value` gives back as it is, with no secret to look for in
#: it, by its exact type ("" for any other value): what `compact`'s and `canonical`'s encoders
#: write for it (their C part calls these too).
_TEXT: dict[type, Callable[[Any], str]] = {
    type(None): {None: "null"}.__getitem__,
    bool: {True: "true", False: "false"}.__getitem__,
    int: _int_text,
    float: _float_text,
    str: _str_text,
}
#: f(value), in C where the Python has it (3.11).
_call: Callable[[Callable[[Any], str], Any], str] = getattr(
    operator, "call", lambda function, value: function(value)
)


def scalar_texts(values: list[Any]) -> list[str]:
    """The JSON text of each of `values` that `Encoder.value` gives back as it is, with no
    secret to look for in it (None, a bool, an int or finite float JSON holds, a plain string
    that `may_show_secret` clears), "" for any other; in one C-level loop."""
    kinds = map(_TEXT.get, map(type, values), itertools.repeat(_other_text))
    return list(map(_call, kinds, values))


class TextGroup(NamedTuple):
    """The texts of a group of values, as `group_texts` gives them: read-only (shared by
    the audits that ask about the same keys and values), but for `tails`, which
    `group_tails` replaces whole."""

    #: Each value's text ("" for a value with none: `scalar_texts`).
    shown: list[str]
    #: The keys of the values with a text, in order, and those values.
    keys: list[str]
    current: list[Any]
    #: The keys of the values without one, in order.
    blank: list[str]
    #: Their texts, by key.
    texts: dict[str, str]
    #: (end of line, each of `keys` with that end): the last asked of `group_tails`.
    tails: list[tuple[str, dict[str, str]]]


def group_texts(keys: list[str], values: list[Any]) -> TextGroup:
    """`scalar_texts(values)`, `values` those of `keys`, with the keys and values that have
    a text, and their texts by key: kept for a large group (a profile's defaults, audit after
    audit) and given back while the keys are the same and each value that had a text is still
    the very object it was made of (a text depends on its value alone; those values are kept
    with it, so that no other object takes their place). Values without a text (containers,
    enum members, any object: the caller encodes them whole) are never kept: they go with
    their namespace."""
    large = len(values) >= _GROUP
    kept = _KEPT.get(len(values)) if large else None
    if kept is not None and kept[0] == keys and _gives(kept[1], values):
        return kept[1]
    shown = scalar_texts(values)
    if all(shown):
        plain, current, blank = list(keys), list(values), []
    else:
        plain = list(itertools.compress(keys, shown))
        current = list(itertools.compress(values, shown))
        blank = list(itertools.compress(keys, map(operator.not_, shown)))
    texts = dict(zip(plain, filter(None, shown), strict=True))
    group = TextGroup(shown, plain, current, blank, texts, [])
    if large:
        if len(_KEPT) >= _KEPT_MAX:
            _KEPT.clear()
        _KEPT[len(values)] = (list(keys), group)
    return group


def _gives(group: TextGroup, values: list[Any]) -> bool:
    """Whether `values` (as many as `group` was made of) have `group`'s texts where it has one."""
    if len(group.current) == len(values):  # (every value had a text: the common case)
        return all(map(operator.is_, values, group.current))
    # (a value with no text there is encoded whole by the caller, whatever it is now)
    return all(map(operator.is_, itertools.compress(values, group.shown), group.current))


def group_tails(group: TextGroup, tail: str) -> dict[str, str]:
    """Each key of `group` with a text, with `tail`, the end of its line (the dict given back
    is shared: read-only; the last one asked is kept in ``group.tails``)."""
    last = group.tails[-1] if group.tails else None
    if last is not None and last[0] == tail:
        return last[1]
    tails = dict.fromkeys(group.keys, tail)
    group.tails[:] = [(tail, tails)]
    return tails


#: The size from which a group's texts are kept (`group_texts`), and how many are kept.
_GROUP = 32
_KEPT_MAX = 8
#: The texts of the last group of each size: its keys, and their `TextGroup`.
_KEPT: dict[int, tuple[list[str], TextGroup]] = {}


@functools.lru_cache(maxsize=64)
def key_heads(keys: tuple[str, ...], after: str) -> tuple[str, ...]:
    """The JSON text of each of `keys` (strings), followed by `after` (cached: a trainer's
    keys repeat, call after call)."""
    return tuple(map(operator.add, map(_ascii, keys), itertools.repeat(after)))


def compact_encoder() -> Callable[[Any], str]:
    """A function giving what `compact` gives, by one JSON encoder made for the caller (its
    own: the encoder's cycle check keeps state while it runs)."""
    encode = compact_chunks()
    return lambda value: "".join(encode(value, 0))


def compact_chunks() -> Callable[[Any, int], list[str]]:
    """`compact`'s own JSON encoder (its checks: cycles, NaN, types; its separators), made for
    the caller alone: ``encode(value, 0)`` gives the text's chunks."""
    return c_chunks(_JSON, compact)


#: The options `compact` encodes with (its `default` refuses a value JSON cannot hold).
_JSON = json.JSONEncoder(ensure_ascii=True, allow_nan=False)


class Section:
    """What a record's writers know of the text of one role's settings (`Texts.section`):
    kept with those settings, by their id."""

    __slots__ = ("keys", "lines", "own", "settings", "tails", "values")

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = settings
        #: The keys of `settings` in their order, once `audit` made the section (every key a
        #: str: it makes it only then); else empty.
        self.keys: tuple[str, ...] = ()
        #: The JSON text of the value of each key known, by key (the fingerprint's): every
        #: key's, once `audit` made the section.
        self.values: dict[str, str] = {}
        #: When the record is written: the line of each entry with a history known, by key.
        self.lines: dict[str, str] = {}
        #: When the record is written: the end of each key's line after its value's text (the
        #: template's text after its value, for an entry made from one; "" for the others).
        #: Such a line is the key's head (`key_heads`), its value's text, then this.
        self.tails: dict[str, str] = {}
        #: When the record is written: the keys whose entries are not made from a template, in
        #: the settings' order (their lines are known in `lines`, or encoded).
        self.own: list[str] = []


class Texts:
    """What is known of the text of each role's settings (`section`), and whether the lines
    of its entries are worked out too (`lines`: when the record is written).

    `deferred` (when writing: the file needs the lines, not the entries) lets the entries
    whose line is known without them wait (those made from a template, and those with a
    history whose line an audit made before: `known_history`): until `make_entries`, each
    such key holds `WAITING`, which
    the file never reads (its line is known) and nothing encodes; whatever reads the entries
    (signing, scrubbing, encoding an entry anew) makes them first."""

    def __init__(self, *, lines: bool = False, deferred: bool = False) -> None:
        #: Each role's `Section`, by the id of its settings (kept in it).
        self.sections: dict[int, Section] = {}
        #: Whether the lines are worked out (scrubbing, which makes new entries, turns it off).
        self.lines = lines
        #: `compact` of a value, by an encoder made for this record (`compact` makes one
        #: per call): the same text, character for character.
        self.compact = compact_encoder()
        #: What makes the entries still to make, each in its place in its settings, or None
        #: when entries are made at once.
        self.deferred: list[Callable[[], None]] | None = [] if lines and deferred else None

    def make_entries(self) -> None:
        """Make the entries that wait (`deferred`); from now on entries are made at once."""
        waiting, self.deferred = self.deferred or [], None
        for make in waiting:
            make()

    def section(self, settings: Mapping[str, Any]) -> Section:
        """What is known of `settings` (a role's), to add to."""
        known = self.sections.get(id(settings))
        if known is None or known.settings is not settings:
            known = self.sections[id(settings)] = Section(settings)
        return known

    def history_line(
        self, key: str, secret: bool, value: Any, plain: Plain, entry: Mapping[str, Any]
    ) -> str:
        """The line of `entry`, the entry of `key` (a str) with a history: `value`, `secret`
        or not, `plain` the walk's answer; kept (`known_history`) when nothing in it is a
        secret's or has one to look for (its value and shadowed values have their text:
        `scalar_texts`; it is not `secret`) and it is short."""
        line = _ascii(key) + ": " + self.compact(entry)
        shown = scalar_texts([value, *(then for then, _ in plain.shadowed)])
        if not secret and all(shown) and len(line) <= _HISTORY_CHARS:
            if len(_HISTORIES) >= _HISTORIES_MAX:
                _HISTORIES.clear()
            _HISTORIES[key] = (value, plain, line, shown[0])
        return line


def known_history(key: str, secret: bool, value: Any, plain: Plain) -> tuple[str, str] | None:
    """The line `Texts.history_line` made of an entry of `key` with the same value, origins
    and shadowed values (the same objects, of types that cannot change), in any audit, and
    its value's text: None when there is none, or the entry is `secret`. Nothing in such a
    line is a text the secret policy would look at (its values are plain scalars), so an
    audit that takes it need not make the entry it stands for."""
    known = _HISTORIES.get(key)
    if known is None or secret or known[0] is not value:
        return None
    if known[1] is plain or _same_answer(known[1], plain):
        return known[2], known[3]
    return None


#: The lines `Texts.history_line` keeps, by key, with what each was made of (value, the
#: walk's answer) and its value's text, audit after audit (a trainer's command line sets
#: the same keys over the same defaults); how many are kept, and the longest line kept.
_HISTORIES: dict[str, tuple[Any, Plain, str, str]] = {}
_HISTORIES_MAX = 2048
_HISTORY_CHARS = 1024


def _same_answer(known: Plain, plain: Plain) -> bool:
    """`known` and `plain` hold the same objects: origin, shadowed values and origins."""
    return (
        known.origin is plain.origin
        and len(known.shadowed) == len(plain.shadowed)
        and all(
            map(
                operator.is_,
                itertools.chain.from_iterable(known.shadowed),
                itertools.chain.from_iterable(plain.shadowed),
            )
        )
    )


def fill(
    settings: dict[str, Any], keys: list[str], template: dict[str, Any], values: list[Any]
) -> None:
    """Put the entry of each of `keys` in `settings`: `filled(template, values)`."""
    settings.update(zip(keys, filled(template, values), strict=True))


def filled(template: dict[str, Any], values: list[Any]) -> list[dict[str, Any]]:
    """An entry per value: a copy of `template` with the value as its ``"value"``."""
    entries: list[dict[str, Any]] = list(map(dict.copy, itertools.repeat(template, len(values))))
    collections.deque(map(operator.setitem, entries, _VALUES, values), maxlen=0)
    return entries


class _Waiting:
    """What a waiting entry holds until `Texts.make_entries` makes it: not an entry, and
    nothing JSON can write, so that a record read too early fails loudly instead of giving
    wrong values."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<an audit entry not made yet: Texts.make_entries>"


WAITING = _Waiting()

#: The key of each entry's value, as many times as `map` asks.
_VALUES = itertools.repeat("value")
