"""The plain block YAML most configuration files are written in, read without composing nodes.

A role file is a few indented lines: ``key: value``, ``- key: value``, ``key:`` opening a
nested block, comments. libyaml composes such a file into nodes, calling PyYAML's Python code
for every node, mark and tag (about 0.15 ms for ten lines, most of a first call's reading),
and the walker then builds the data from the nodes. `read_simple` reads that shape line by line
instead and gives what the walker would give (data, the position of every value and key), or
None for anything else, which is then read as before. It accepts only

- ASCII text of lines ending in ``\\n``, indented with spaces; blank and comment lines;
- block mappings whose keys are plain words (``lr``, ``lr-decay-style``, ``adam_beta1``) that
  YAML reads as strings, each once per mapping;
- block sequences (``- item``), one ``-`` a line, of scalars or of mappings;
- scalar values that are plain words without spaces (``1e-5``, ``/data/x.jsonl``, ``true``,
  ``0.98``) or quoted without escapes or quotes inside (``'a b'``, ``"a b"``), each on its
  line;

and, of those, only the scalars that ``yaml.safe_load`` reads as a string, null, bool, int or
float, a number only when written as it reads (not ``010``, ``1:30``: the walker warns of
those; a date, an empty value, a multi-line scalar, a flow collection, a tag, an anchor or an
alias, a document marker: None). Plain scalars are resolved by PyYAML's own resolver and built
by the constructors the walker uses, so a value is what the walker gives; the tests compare
both ways on generated documents (tests/test_yaml_simple.py).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from layerconf.sources._yaml_lines import Position
from layerconf.sources._yaml_numbers import yaml11_number
from layerconf.sources._yaml_walk import (
    _NUMBERS,
    _SCALARS,
    _STR,
    MAX_NUMBER_CHARACTERS,
    YamlPath,
)

__all__ = ["read_simple"]

# What a plain word (a key, or a scalar without quotes) may hold: no space, no character YAML
# reads as an indicator ('#', ',', '[', '&', '!', '*', '|', '>', '"', "'", '%', '@', '`'...).
_KEY_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_WORD_CHARACTERS = _KEY_CHARACTERS | frozenset("/~+:")
_NUMBER_START = frozenset("0123456789.")  # (what may follow a plain word's leading '-')
_READ_AS = frozenset(_SCALARS) - {"tag:yaml.org,2002:binary", "tag:yaml.org,2002:timestamp"}


class _Decline(Exception):
    """The text is not of the simple shape: the full reader reads it."""


# One line of content: (its number, its indentation, the column of its '- ' or -1, the column
# of what follows the '- ' (else its indentation), key, value and its column, item); columns
# count from 0.
_Line = tuple[int, int, int, int, str | None, str | None, int, str | None]


def read_simple(
    text: str, loader: type[Resolver], max_nodes: int, max_depth: int
) -> tuple[Any, dict[YamlPath, Position], dict[YamlPath, Position]] | None:
    """(data, positions, key positions) of `text`, as the walker gives them for a document
    `loader` composes without problems, or None when `text` is not of the simple shape (see
    the module); nor is a document of more than `max_nodes` values, or a mapping or list
    nested `max_depth` deep (the walker's limits: it reports them)."""
    if not text.isascii() or "\t" in text or "\r" in text or loader.yaml_path_resolvers:
        return None  # (a path resolver gives tags by where a scalar is: the loader's job)
    lines = _lines(text)
    if not lines:
        return None
    reader = _Reader(lines, max_depth, loader.yaml_implicit_resolvers)
    try:
        data, end = reader.node(0, ())
    except _Decline:
        return None
    if end != len(lines) or len(reader.positions) > max_nodes:
        return None  # a line outside the document's first block; too many values
    return data, reader.positions, reader.key_positions


def _lines(text: str) -> list[_Line]:
    """The lines of `text` that hold content, parsed; empty when one is not of the shape."""
    found: list[_Line] = []
    for number, line in enumerate(text.split("\n"), 1):
        content = line.lstrip(" ")
        if not content or content[0] == "#":
            continue
        if not content.isprintable():
            return []  # a control character: the reader's problem to report
        indent = len(line) - len(content)
        dash = -1
        if content[0] == "-" and content[1:2] == " ":  # a list item
            dash = indent
            rest = content[1:].lstrip(" ")
            if not rest:
                return []  # an item on the lines below, or an empty one
            inner = indent + len(content) - len(rest)
        else:
            rest, inner = content, indent
        colon = rest.find(":")
        key = rest[:colon]
        if colon > 0 and rest[colon + 1 : colon + 2] in ("", " ") and _is_key(key):
            after = rest[colon + 1 :]
            text_of = after.lstrip(" ")
            if not text_of or text_of[0] == "#":
                value = None
            else:
                value = _scalar_text(text_of)
                if value is None:
                    return []
            at = inner + colon + 1 + len(after) - len(text_of)
            found.append((number, indent, dash, inner, key, value, at, None))
        else:
            item = _scalar_text(rest)
            if item is None:
                return []
            found.append((number, indent, dash, inner, None, None, -1, item))
    return found


def _is_key(text: str) -> bool:
    """Whether `text` is a plain word of the shape's keys (a letter or '_' first)."""
    return (text[0].isalpha() or text[0] == "_") and _KEY_CHARACTERS.issuperset(text)


def _scalar_text(text: str) -> str | None:
    """The scalar `text` begins with, when it is one of the shape and only spaces or a comment
    follow it; else None."""
    first = text[0]
    if first == "'" or first == '"':
        end = text.find(first, 1)
        if end < 0:
            return None
        scalar = text[: end + 1]
        if first == '"' and "\\" in scalar:
            return None  # an escape
    else:
        scalar = text.split(" ", 1)[0]
        if not (
            _WORD_CHARACTERS.issuperset(scalar)
            and first != ":"
            and scalar[-1] != ":"
            and (first != "-" or scalar[1:2] in _NUMBER_START)  # ('-1', '-.5')
        ):
            return None
    rest = text[len(scalar) :]
    tail = rest.lstrip(" ")
    if tail and not (tail[0] == "#" and len(rest) > len(tail)):
        return None  # more after the scalar ('a b', "'a' b", "'it''s'"): not of the shape
    return scalar


class _Reader:
    """The block structure of parsed lines, read top-down into data and positions."""

    def __init__(
        self, lines: list[_Line], max_depth: int, resolvers: dict[Any, list[tuple[str, Any]]]
    ) -> None:
        self.lines = lines
        self.max_depth = max_depth
        self.resolvers = resolvers  # the loader's implicit resolvers, by first character
        self.positions: dict[YamlPath, Position] = {}
        self.key_positions: dict[YamlPath, Position] = {}

    def node(self, index: int, path: YamlPath) -> tuple[Any, int]:
        """The block node whose first line is `index`: a sequence when that line starts with
        '- ', else a mapping; and the index of the line after it."""
        number, _, dash, inner, _, _, _, _ = self.lines[index]
        if dash >= 0:
            self.positions[path] = Position(number, dash + 1)
            return self._sequence(index, dash, path)
        self.positions[path] = Position(number, inner + 1)
        return self._mapping(index, inner, path)

    def _sequence(self, index: int, column: int, path: YamlPath) -> tuple[list[Any], int]:
        """The items of the sequence whose '- ' are at `column`, from line `index` on."""
        if len(path) >= self.max_depth:
            raise _Decline  # (the walker's problem to report)
        lines = self.lines
        items: list[Any] = []
        while index < len(lines) and lines[index][2] == column:
            number, _, _, inner, key, _, _, item = lines[index]
            child = (*path, len(items))
            self.positions[child] = Position(number, inner + 1)
            if key is not None:  # '- key: ...': a mapping whose first key is on this line
                value, index = self._mapping(index, inner, child)
            elif item is not None:
                value = self._scalar(item)
                index = self._after_scalar(index + 1, column)
            else:
                raise _Decline
            items.append(value)
        return items, index

    def _mapping(self, index: int, column: int, path: YamlPath) -> tuple[dict[str, Any], int]:
        """The entries of the mapping whose keys are at `column`, from line `index` on."""
        if len(path) >= self.max_depth:
            raise _Decline
        lines = self.lines
        result: dict[str, Any] = {}
        while index < len(lines):
            number, indent, dash, inner, key, value, at, _ = lines[index]
            # The first key may follow the '- ' of its sequence item; every other one starts
            # its line, at the column of the first.
            if inner != column or (result and (dash >= 0 or indent != column)):
                break
            if key is None or key in result or self._scalar(key) is not key:
                # a scalar among keys, a key twice (the walker reports it), or a key YAML
                # reads as another type ('on', 'null', '1')
                raise _Decline
            child = (*path, key)
            self.key_positions[child] = Position(number, column + 1)
            if value is not None:
                self.positions[child] = Position(number, at + 1)
                result[key] = self._scalar(value)
                index = self._after_scalar(index + 1, column)
                continue
            index += 1
            following = lines[index] if index < len(lines) else None
            if following is None or not (following[1] > column or following[2] == column):
                raise _Decline  # 'key:' with nothing under it: an empty value
            # A nested block, or a sequence at the key's own column (YAML allows that).
            result[key], index = self.node(index, child)
        return result, index

    def _scalar(self, text: str) -> Any:
        """The value ``yaml.safe_load`` reads from the scalar `text` (plain or quoted): its
        tag is the first of the loader's implicit resolvers for its first character (then of
        those for any character) whose pattern matches it, as the loader's `resolve` finds."""
        first = text[0]
        if first == "'" or first == '"':
            return text[1:-1]
        resolvers = self.resolvers
        tag = _STR
        for found, pattern in [*resolvers.get(first, ()), *resolvers.get(None, ())]:
            if pattern.match(text):
                tag = found
                break
        if tag == _STR:
            return text
        if tag not in _READ_AS or (tag in _NUMBERS and len(text) > MAX_NUMBER_CHARACTERS):
            raise _Decline
        try:
            value = _SCALARS[tag](ScalarNode(tag, text))
        except (ValueError, TypeError, OverflowError, yaml.YAMLError):
            raise _Decline from None  # the walker's problem to report
        if (
            tag in _NUMBERS
            and ("_" in text or ":" in text or text.lstrip("+-")[:1] == "0")
            and yaml11_number(text, value) is not None
        ):
            raise _Decline  # a number its writer may not mean: the walker warns of it
        return value

    def _after_scalar(self, index: int, column: int) -> int:
        """`index`, the line after a scalar value of the block at `column`; a line indented
        further would continue the scalar (a multi-line scalar is not of the shape)."""
        lines = self.lines
        if index < len(lines) and lines[index][1] > column:
            raise _Decline
        return index
