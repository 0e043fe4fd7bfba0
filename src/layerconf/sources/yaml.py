"""Plain YAML with the position of every key and value: `parse_yaml`, `check_yaml`, `load_yaml`.

The reader composes the document once with ``yaml.compose``-style node building (libyaml's
``CSafeLoader`` when PyYAML has it, else the pure-Python ``SafeLoader``) and walks the nodes
itself (`layerconf.sources._yaml_walk`). Scalars are built by PyYAML's own ``SafeConstructor``
methods, so every value is exactly what ``yaml.safe_load`` gives (YAML 1.1: ``1e-5`` stays the
string ``'1e-5'``, ``2024-01-01`` is a `datetime.date`); coercing values is a rule's job.
Walking the nodes ourselves is what lets the reader

- record the 1-based line and column of every mapping key and every value, keyed by path
  tuples (list items by their index);
- report duplicate keys (PyYAML silently keeps the last one) with both positions;
- refuse Python tags (``!!python/object``) and any tag that is not plain YAML, at its position;
- bound the work a document can cause: a document of more than `MAX_NODES` nodes or
  `MAX_DEPTH` levels of nesting is refused while it is composed, where the limit is reached
  (a text longer than `_C_COMPOSE_BELOW` characters is composed by a counting composer over
  libyaml's events; a shorter one, which cannot hold that many nodes, by libyaml alone);
  aliases are expanded (every path gets its own copy and its own positions) and every node
  built counts again, so a "billion laughs" file is refused in about 0.1 s;
- refuse what libyaml reads and ``yaml.safe_load`` does not (`_yaml_walk.misread_character`):
  a tab between tokens (``lr:<tab>1e-6``), in PyYAML's own words, and a byte order mark
  that starts a line;
- report lines and columns as editors and ``grep -n`` count them, although YAML also breaks
  lines at U+0085, U+2028 and U+2029 (`_yaml_lines.Lines`);
- support merge keys (``<<: *defaults``): the mapping's own keys win over merged ones. A key
  that two merged mappings both set is an error, because YAML readers disagree on which wins
  (see `Walker._merged`). A merged key's positions are where it is written, that is inside
  the anchored mapping.

A document in the plain block shape most configuration files have (`key: value` lines, list
items, comments; see `layerconf.sources._yaml_simple`) is read line by line instead, to the
same data and positions, without composing nodes; any other document is composed as above.

`flow_line` writes plain data back as one line of YAML (the command's ``--yaml`` output);
`dump_yaml` writes it as a block-style document (a role file written by ``show --role-file``).
This is the only module (with its walker) that imports ``yaml``. Role files, a format built
on this reader, are read by `layerconf.presets.role_file`.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Mapping
from typing import Any

import attrs
import yaml
from yaml.nodes import Node

from layerconf.core.checks import PATH, check_type
from layerconf.core.lazy import record_eq, record_hash, record_repr, sha256_hex
from layerconf.exceptions import ConfigError, Problem
from layerconf.sources._yaml_lines import Lines, Position
from layerconf.sources._yaml_simple import read_simple
from layerconf.sources._yaml_walk import (
    Abort,
    Walker,
    YamlPath,
    bounded_loader,
    misread_character,
)
from layerconf.sources.files import MAX_BYTES, UnreadableFile, read_bounded

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_NODES",
    "Position",
    "YamlDocument",
    "YamlPath",
    "check_yaml",
    "dump_yaml",
    "flow_line",
    "load_yaml",
    "parse_yaml",
    "parse_yaml_bytes",
    "read_yaml_bytes",
    "reader_settings",
]

#: The most nodes one document may build, aliases expanded. A role file holds tens of values;
#: even every one of Megatron's 1,038 arguments for several roles stays under 10,000. Building
#: a node costs about a microsecond, so a hostile file is refused in a fraction of a second.
MAX_NODES = 100_000
#: The deepest nesting of mappings and lists. Configuration values nest a few levels; the bound
#: also keeps the walk (and PyYAML's pure-Python composer) far from Python's recursion limit.
MAX_DEPTH = 100

#: libyaml's loader, None where PyYAML was built without it (it then has no ``CSafeLoader``).
_C_LOADER: Any = getattr(yaml, "CSafeLoader", None) if yaml.__with_libyaml__ else None
_LOADER: Any = _C_LOADER or yaml.SafeLoader
_BOUNDED_LOADER: Any = bounded_loader(_LOADER)
#: Texts shorter than this are composed by libyaml alone (fast): a node takes at least two
#: characters but for '?' (``[?,?]`` makes three nodes of two characters), so such a text holds
#: at most 1.5 x this many nodes, fewer than `MAX_NODES`.
_C_COMPOSE_BELOW = MAX_NODES // 2


@attrs.frozen
class YamlDocument:
    """One YAML document read with positions: its data, where each part is, what is wrong.

    `data` holds plain Python values (dict, list, str, int, float, bool, None, and the dates and
    bytes that ``yaml.safe_load`` also builds). `positions` maps the path of every value (the
    root is ``()``) to where the value starts; `key_positions` maps the path of every mapping
    entry to where its key starts. A value that could not be read (a refused tag) is None in
    `data` and its path is in `unreadable`; when the whole document could not be read (a syntax
    error, an unreadable file, an empty document) `data` is None and ``()`` is in `unreadable`.
    `sha256` is the hex digest of the file's bytes (None for text, or an unreadable file).
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    source: str
    data: Any
    positions: Mapping[YamlPath, Position]
    key_positions: Mapping[YamlPath, Position]
    problems: tuple[Problem, ...] = ()
    unreadable: frozenset[YamlPath] = frozenset()
    sha256: str | None = None

    @property
    def errors(self) -> tuple[Problem, ...]:
        """Only the problems of severity ``error``."""
        return tuple(p for p in self.problems if p.severity == "error")


def parse_yaml(text: str, *, source: str = "<string>", layer: str | None = None) -> YamlDocument:
    """Read YAML `text` with positions; problems are returned in `.problems`, never raised.

    `source` names the text in problems; `layer` is recorded in them.
    """
    check_type("parse_yaml", "text", text, str, "str (decode bytes, or use check_yaml)")
    check_type("parse_yaml", "source", source, str, "str")
    return _parse(text, source, layer, None, _EMPTY_HINT)


def check_yaml(path: str | os.PathLike[str], *, layer: str | None = None) -> YamlDocument:
    """Read the YAML file at `path` with positions; problems are returned, never raised.

    An unreadable or missing file, a directory, bytes that are not UTF-8, a syntax error, an
    empty document or more than one document are problems too (``data`` is then None).
    A UTF-8 byte order mark is accepted.
    """
    check_type("check_yaml", "path", path, PATH, "a path (str or pathlib.Path)")
    data = read_yaml_bytes(path, layer=layer)
    if isinstance(data, YamlDocument):
        return data
    return _decode(data, os.fspath(path), layer, _EMPTY_HINT)


def load_yaml(path: str | os.PathLike[str], *, layer: str | None = None) -> YamlDocument:
    """Like `check_yaml`, but raise `ConfigError` listing every problem if any is an error."""
    check_type("load_yaml", "path", path, PATH, "a path (str or pathlib.Path)")
    document = check_yaml(path, layer=layer)
    if document.errors:
        raise ConfigError(document.problems)
    return document


def read_yaml_bytes(
    path: str | os.PathLike[str], *, layer: str | None = None
) -> bytes | YamlDocument:
    """The bytes of a YAML file, or a failed `YamlDocument` saying why they cannot be read.

    With `parse_yaml_bytes`, for a format built on YAML that decides what to do with the bytes
    first (a cache by their sha256, say).
    """
    source = os.fspath(path)
    try:
        return read_bounded(source, limit=MAX_BYTES, kind="YAML file")
    except UnreadableFile as error:
        problem = Problem(error.message, layer=layer, source=source, hint=error.hint)
        return _failed(source, problem)


def parse_yaml_bytes(
    data: bytes,
    *,
    source: str,
    layer: str | None = None,
    empty_hint: str | None = None,
    sha256: str | None = None,
) -> YamlDocument:
    """Read the YAML `data` of the file `source` (UTF-8, a byte order mark allowed).

    `empty_hint` says what to do about a file without a document; `sha256`, if known, saves
    hashing `data` again.
    """
    return _decode(data, source, layer, empty_hint or _EMPTY_HINT, sha256)


def flow_line(data: Any, *, ascii: bool = False) -> str | None:
    """Plain `data` as one line of YAML flow style that `parse_yaml` reads back, or None when
    YAML needs more than one line for it (a string with a line break); with `ascii`, every
    character outside ASCII escaped in a double-quoted string."""
    text: str = yaml.safe_dump(
        data, default_flow_style=True, width=1 << 30, allow_unicode=not ascii, sort_keys=False
    )
    if text.endswith("\n...\n"):
        text = text[: -len("\n...\n")]
    text = text.rstrip("\n")
    return None if "\n" in text else text


def dump_yaml(data: Any) -> str:
    """Plain `data` (dict, list, str, int, float, bool, None) as a block-style YAML document
    that `parse_yaml` reads back as `data`; mappings keep their order."""
    text: str = yaml.safe_dump(
        data, default_flow_style=False, width=1 << 30, allow_unicode=True, sort_keys=False
    )
    return text


def reader_settings() -> tuple[Any, ...]:
    """What the reader's results depend on besides the bytes: a cache key part."""
    return (_LOADER, MAX_NODES, MAX_DEPTH, _C_COMPOSE_BELOW)


# -- reading -------------------------------------------------------------------------------

_EMPTY_HINT = "write the YAML document, or do not pass this file"


def _failed(source: str, problem: Problem, sha256: str | None = None) -> YamlDocument:
    return YamlDocument(source, None, {}, {}, (problem,), frozenset({()}), sha256)


def _decode(
    data: bytes, source: str, layer: str | None, empty_hint: str, sha256: str | None = None
) -> YamlDocument:
    sha256 = sha256 or sha256_hex(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return _failed(source, _decode_problem(data, error, source, layer), sha256)
    return _parse(text, source, layer, sha256, empty_hint)


def _decode_problem(
    data: bytes, error: UnicodeDecodeError, source: str, layer: str | None
) -> Problem:
    start = error.start
    before = data[:start].decode("utf-8", errors="replace")  # valid up to the error
    line, column = Lines(before).position(len(before))
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):  # (before UTF-16's: FF FE)
        hint = "it looks like UTF-32: save it as UTF-8"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        hint = "it looks like UTF-16: save it as UTF-8"
    else:
        hint = "save it as UTF-8; a Latin-1 file converts with iconv -f latin1 -t utf-8"
    return Problem(
        f"is not UTF-8 text: byte 0x{data[start]:02x} cannot be decoded",
        layer=layer,
        source=source,
        line=line,
        column=column,
        hint=hint,
    )


def _parse(
    text: str, source: str, layer: str | None, sha256: str | None, empty_hint: str
) -> YamlDocument:
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark; YAML allows one
        text = text[1:]
        if text.startswith("\ufeff"):  # a second: safe_load keeps it, either loader here would not
            return _failed(source, _misread_problem(text, 0, Lines(text), source, layer), sha256)
    simple = (
        read_simple(text, _LOADER, MAX_NODES, MAX_DEPTH) if len(text) < _C_COMPOSE_BELOW else None
    )
    if simple is not None:  # (the common shape, read without composing nodes)
        data, positions, key_positions = simple
        return YamlDocument(source, data, positions, key_positions, sha256=sha256)
    return _parse_nodes(text, source, layer, sha256, empty_hint)


def _parse_nodes(
    text: str, source: str, layer: str | None, sha256: str | None, empty_hint: str
) -> YamlDocument:
    """`_parse` of any text: composed into nodes, then walked."""
    lines = Lines(text)
    try:
        root = _compose(text, source, layer, lines)
    except Abort as abort:
        return _failed(source, abort.problem, sha256)
    except yaml.MarkedYAMLError as error:
        return _failed(source, _syntax_problem(error, lines, text, source, layer), sha256)
    except yaml.reader.ReaderError as error:
        return _failed(source, _reader_problem(error, lines, text, source, layer), sha256)
    except RecursionError:  # the pure-Python composer on very deep nesting
        problem = Problem(
            "the document is nested too deeply for the YAML parser",
            layer=layer,
            source=source,
            hint=f"nest mappings and lists at most {MAX_DEPTH} levels deep",
        )
        return _failed(source, problem, sha256)
    if root is None:
        problem = Problem(
            "the file holds no YAML document: it is empty or only comments",
            layer=layer,
            source=source,
            hint=empty_hint,
        )
        return _failed(source, problem, sha256)
    if ("\t" in text or "\ufeff" in text) and _LOADER is _C_LOADER:
        misread = misread_character(text, root, lines)  # (PyYAML's own reader is exact)
        if misread is not None:
            return _failed(source, _misread_problem(text, misread, lines, source, layer), sha256)
    walker = Walker(source, layer, MAX_NODES, MAX_DEPTH, lines)
    try:
        data = walker.value(root, (), 0)
    except Abort as abort:
        return _failed(source, abort.problem, sha256)
    return YamlDocument(
        source,
        data,
        walker.positions,
        walker.key_positions,
        tuple(walker.problems),
        frozenset(walker.unreadable),
        sha256,
    )


def _compose(text: str, source: str, layer: str | None, lines: Lines) -> Node | None:
    """The one document of `text` as a node graph (None when it has no document); `Abort`
    when it holds more than `MAX_NODES` nodes or nests deeper than `MAX_DEPTH`."""
    # The pure-Python Reader already checks characters when the loader is made.
    if len(text) < _C_COMPOSE_BELOW and _LOADER is _C_LOADER:
        loader = _LOADER(text)
    else:
        loader = _BOUNDED_LOADER(text, source, layer, lines, MAX_NODES, MAX_DEPTH)
    try:
        root: Node | None = loader.get_single_node()
    finally:
        loader.dispose()
    return root


def _syntax_problem(
    error: yaml.MarkedYAMLError, lines: Lines, text: str, source: str, layer: str | None
) -> Problem:
    mark = error.problem_mark or error.context_mark
    line = column = None
    if mark is not None:
        line, column = lines.at(mark)
    if error.context == "expected a single document in the stream":
        return Problem(
            "the file holds more than one YAML document; the second one starts here",
            layer=layer,
            source=source,
            line=line,
            column=column,
            hint="keep one document: delete this '---' line and merge the documents",
        )
    message = f"invalid YAML: {error.problem or error.context}"
    context = error.context_mark
    if error.problem and error.context:
        message += f"; {error.context}"
        if context is not None and (mark is None or context.index != mark.index):
            where = lines.at(context)
            message += f" from line {where.line}, column {where.column}"
    index = None
    if mark is not None:  # (libyaml's mark.index counts bytes; line and column count characters)
        index = lines.offset(mark)
    problem = error.problem or ""
    if index is not None and (text[index : index + 1] == "\t" or "'\\t'" in problem):
        hint = _tab_hint(text, index)
    elif "nesting depth" in problem:
        hint = f"nest mappings and lists at most {MAX_DEPTH} levels deep"
    elif "mapping values are not allowed" in problem:
        hint = "check the indentation, and quote a value that contains ': '"
    elif "undefined alias" in problem:
        hint = "define the anchor &name before the alias *name that uses it"
    elif "did not find expected key" in problem:
        hint = "check the indentation: indent each key of a mapping as far as its first key"
    elif "expected '-' indicator" in problem:
        hint = "check the indentation: each item of a list starts with '- ' where its first does"
    elif "expected ':'" in problem or "simple key" in (error.context or ""):
        hint = "write each mapping entry as 'key: value', and close every quote"
    else:
        hint = "fix the YAML at this position: close every bracket and quote"
    return Problem(message, layer=layer, source=source, line=line, column=column, hint=hint)


_INDENT_WITH_SPACES = "indent with spaces: YAML does not allow tabs for indentation"


def _tab_hint(text: str, index: int) -> str:
    """What to write instead of the tab at `index` of `text`."""
    line_start = max(text.rfind("\n", 0, index), text.rfind("\r", 0, index)) + 1
    if text[line_start:index].strip(" \t"):  # (the tab follows the line's indentation)
        return (
            "replace the tab with spaces: yaml.safe_load allows a tab only inside quotes, "
            "a block scalar or a comment"
        )
    return _INDENT_WITH_SPACES


def _misread_problem(
    text: str, index: int, lines: Lines, source: str, layer: str | None
) -> Problem:
    """The problem of a character libyaml read and ``yaml.safe_load`` does not
    (`misread_character`): a tab in the words of PyYAML's own scanner, or a byte order mark."""
    line, column = lines.position(index)
    if text[index] == "\t":
        message = (
            "invalid YAML: found character '\\t' that cannot start any token; "
            "while scanning for the next token"
        )
        hint = _tab_hint(text, index)
    else:
        message = (
            "a byte order mark (U+FEFF) starts this line: yaml.safe_load reads it as a "
            "character of what follows, or refuses it"
        )
        hint = "delete it: only the file's first character may be a byte order mark"
    return Problem(message, layer=layer, source=source, line=line, column=column, hint=hint)


def _reader_problem(
    error: yaml.reader.ReaderError, lines: Lines, text: str, source: str, layer: str | None
) -> Problem:
    # libyaml gives a byte offset and PyYAML a character offset: find the character ourselves.
    found = yaml.reader.Reader.NON_PRINTABLE.search(text)
    line = column = None
    if found is not None:
        line, column = lines.position(found.start())
        code = ord(found.group())
    else:  # pragma: no cover - PyYAML refused a character its own pattern allows
        code = error.character if isinstance(error.character, int) else ord(error.character)
    return Problem(
        f"character U+{code:04X} is not allowed in YAML",
        layer=layer,
        source=source,
        line=line,
        column=column,
        hint="remove it: control characters have no place in a YAML file",
    )
