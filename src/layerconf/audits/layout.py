"""The text of a record file: nested down to a role's entries, then one line per key of a
role (easy to grep and diff), each compact; what `write_audit` and `record_bytes` write.
"""

from __future__ import annotations

import itertools
import json
import json.encoder
import operator
from collections.abc import Callable, Mapping
from typing import Any

from layerconf.audits.codec import compact
from layerconf.audits.texts import Section, Texts, compact_chunks, key_heads
from layerconf.core.explain import values_at

__all__ = ["RecordText", "dumps", "known_lines"]


def dumps(value: Any, depth: int = 0) -> str:
    """The record as text: one line per key of a role (easy to grep and diff), else compact."""
    return RecordText().dumps(value, depth)


class RecordText:
    """`dumps` of one record: nested down to a role's entries, then one compact line each.

    The entries (thousands in a record) are encoded by one JSON encoder made for the record,
    in loops that run in C (`map`), rather than by `compact` one call at a time; the pieces of
    the whole text go to one list, joined once (a level's text is never copied into the
    level above it): the text is the same, character for character.
    """

    def __init__(self, known: Mapping[int, Section] | None = None) -> None:
        # What is known of a role's settings, by the settings' id (`known_lines`).
        self.known = known or {}
        self.encode = compact_chunks()

    def dumps(self, value: Any, depth: int, end: str = "") -> str:
        """The text of `value` at `depth`, then `end`."""
        pieces: list[str] = []
        self._write(value, depth, pieces)
        pieces.append(end)
        return "".join(pieces)

    def _write(self, value: Any, depth: int, pieces: list[str]) -> None:
        """Add the pieces of the text of `value` at `depth` to `pieces`."""
        kind = type(value)
        if depth >= 4 or (kind is not dict and kind is not list) or not value:
            pieces += self.encode(value, 0)
            return
        between = ",\n" + " " * (depth + 1)
        pieces.append(("{\n" if kind is dict else "[\n") + between[2:])
        if depth == 3 and kind is dict:  # a role's entries (each on one line with its key)
            self._entries(value, between, pieces)
        elif kind is list and (depth == 3 or _CONTAINERS.isdisjoint(map(type, value))):
            # a list's items each encoded whole (at depth 3, or none a dict or a list: the
            # command line's tokens), in C
            lines = list(map("".join, map(self.encode, value, itertools.repeat(0))))
            block = [between] * (2 * len(lines) - 1)
            block[::2] = lines
            pieces += block
        elif kind is dict:
            key_text = _key_text(value)
            for index, (key, item) in enumerate(value.items()):
                if index:
                    pieces.append(between)
                pieces += (key_text(key), ": ")  # the key first, then its value
                self._write(item, depth + 1, pieces)
        else:
            for index, item in enumerate(value):
                if index:
                    pieces.append(between)
                self._write(item, depth + 1, pieces)
        pieces.append(("\n" + " " * depth) + ("}" if kind is dict else "]"))

    def _entries(self, entries: dict[Any, Any], between: str, pieces: list[str]) -> None:
        """Add the lines of `entries` (key, ``: ``, entry), `between` them, to `pieces`: those
        of a role's settings `audit` made with their lines by `_template_lines`; any other
        entry's as its known line, else encoded."""
        known = self.known.get(id(entries))
        if known is not None and known.settings is entries and known.tails:
            self._template_lines(entries, known, between, pieces)
            return
        lines = known.lines if known is not None and known.settings is entries else {}
        keys = list(entries)
        found: list[Any] = list(map(lines.get, keys))  # one piece a line: known, else encoded
        block: list[Any] = [between] * (2 * len(keys) - 1)
        block[0::2] = found
        items, key_text = list(entries.values()), _key_text(entries)
        for index in itertools.compress(range(len(keys)), map(operator.not_, found)):
            # the key first, as the other levels write them
            block[2 * index] = key_text(keys[index]) + ": " + "".join(self.encode(items[index], 0))
        pieces += block

    def _template_lines(
        self, entries: dict[str, Any], known: Section, between: str, pieces: list[str]
    ) -> None:
        """`_entries` of a role's settings whose lines' ends are known (`Section.tails`,
        every key's: `audit` made them): three pieces a line (its key's head, its value's
        text, the end), found by the keys in C (`values_at`); then the line of each key whose
        entry is not made from a template (`Section.own`, in order: each found in the keys
        after the one before it), known or encoded, in place of its three."""
        keys = known.keys
        block: list[Any] = [between] * (4 * len(keys) - 1)
        block[0::4] = key_heads(keys, ': {"value": ')
        block[1::4] = values_at(known.values, keys)
        block[2::4] = values_at(known.tails, keys)
        index = -1
        for key in known.own:
            index = keys.index(key, index + 1)
            line = known.lines.get(key)
            if line is None:
                line = _ascii(key) + ": " + "".join(self.encode(entries[key], 0))
            block[4 * index : 4 * index + 3] = (line, "", "")
        pieces += block


def _key_text(mapping: Mapping[Any, Any]) -> Callable[[Any], str]:
    """How the keys of `mapping` are written (every key a str: as JSON strings, at once)."""
    return _ascii if set(map(type, mapping)) == {str} else _object_key


def _object_key(key: Any) -> str:
    """`key` as a JSON object's key, as `compact` writes the keys of the mappings it encodes
    (a number or None as its text in quotes; another type refused as json refuses it)."""
    return compact({key: 0})[1 : -len(": 0}")]


def known_lines(texts: Texts) -> Mapping[int, Section]:
    """What `texts` holds of each role's settings, when writing (`Section`: the lines of
    its entries with a history, its value texts, its lines' ends and the keys whose entries
    are not made from a template): what `RecordText` writes for each, character for character
    (the tests compare both ways). Empty when nothing is known (every entry is then
    encoded)."""
    return texts.sections if texts.lines else {}


_ascii = json.encoder.encode_basestring_ascii
#: The kinds of item `RecordText` writes over lines of their own (a non-empty one).
_CONTAINERS = frozenset({dict, list})
