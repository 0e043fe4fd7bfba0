"""YAML sources: plain YAML with the position of every key and value, and slime's role files.

The generic reader (`load_yaml`, `check_yaml`, `parse_yaml`) composes the document once with
``yaml.compose``-style node building (libyaml's ``CSafeLoader`` when PyYAML has it, else the
pure-Python ``SafeLoader``) and walks the nodes itself. Scalars are built by PyYAML's own
``SafeConstructor`` methods, so every value is exactly what ``yaml.safe_load`` gives (YAML 1.1:
``1e-5`` stays the string ``'1e-5'``, ``2024-01-01`` is a `datetime.date`); coercing values is
another rule's job. Walking the nodes ourselves is what lets the reader

- record the 1-based line and column of every mapping key and every value, keyed by path
  tuples (list items by their index);
- report duplicate keys (PyYAML silently keeps the last one) with both positions;
- refuse Python tags (``!!python/object``) and any tag that is not plain YAML, at its position;
- bound the work an alias can cause: aliases are expanded (every path gets its own copy and its
  own positions), every node built counts, and a document past `MAX_NODES` nodes or `MAX_DEPTH`
  levels of nesting fails at once, so a "billion laughs" file is refused in about 0.1 s;
- support merge keys (``<<: *defaults``): the mapping's own keys win over merged ones. A key
  that two merged mappings both set is an error, because YAML readers disagree on which wins
  (see `_Walker._merged`). A merged key's positions are where it is written, that is inside
  the anchored mapping.

`read_role_file` and `check_role_file` read the file of slime's ``--megatron-config-path``
contract (``megatron:`` list of ``role`` entries with ``overrides``) into one `Layer` per role.
They check the file's structure only: whether override keys are real argument names, and
whether their values have the right types, is decided by other rules. A trainer reads its role
file once per role (slime does): the last few role files read are kept by the sha256 of their
bytes, so reading the same bytes again costs a read and a hash, not a parse.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, NoReturn

import attrs
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from layerconf.core.records import Layer, Origin, join_path
from layerconf.core.suggest import did_you_mean, suggestion
from layerconf.exceptions import ConfigError, Problem, Severity

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_NODES",
    "Position",
    "RoleFile",
    "YamlDocument",
    "YamlPath",
    "check_role_file",
    "check_yaml",
    "load_yaml",
    "parse_yaml",
    "read_role_file",
]

#: A path into a YAML document: mapping keys (usually strings) and list indices.
YamlPath = tuple[Hashable, ...]

#: The most nodes one document may build, aliases expanded. A role file holds tens of values;
#: even every one of Megatron's 1,038 arguments for several roles stays under 10,000. Building
#: a node costs about a microsecond, so a hostile file is refused in a fraction of a second.
MAX_NODES = 100_000
#: The deepest nesting of mappings and lists. Configuration values nest a few levels; the bound
#: also keeps the walk (and PyYAML's pure-Python composer) far from Python's recursion limit.
MAX_DEPTH = 100
#: The largest file read. A role file is a few hundred bytes; this only stops a wrong path
#: (a checkpoint, a device) from being read whole into memory.
MAX_BYTES = 16 * 1024 * 1024

_LOADER: Any = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader

_YAML_TAG = "tag:yaml.org,2002:"
_STR = _YAML_TAG + "str"
_MAP = _YAML_TAG + "map"
_SEQ = _YAML_TAG + "seq"
_MERGE = _YAML_TAG + "merge"
_VALUE = _YAML_TAG + "value"  # a plain '=': a string as a key, refused as a value (as PyYAML)
_PYTHON = _YAML_TAG + "python/"
_COLLECTION_TAGS = frozenset(_YAML_TAG + name for name in ("set", "omap", "pairs"))

_constructor = yaml.constructor.SafeConstructor()
# The scalar constructors of `yaml.safe_load`, by tag (``str`` has a fast path in `_Walker`).
_SCALARS: dict[str, Callable[[ScalarNode], Any]] = {
    _YAML_TAG + "null": _constructor.construct_yaml_null,
    _YAML_TAG + "bool": _constructor.construct_yaml_bool,
    _YAML_TAG + "int": _constructor.construct_yaml_int,
    _YAML_TAG + "float": _constructor.construct_yaml_float,
    _YAML_TAG + "binary": _constructor.construct_yaml_binary,
    _YAML_TAG + "timestamp": _constructor.construct_yaml_timestamp,
}


class Position(NamedTuple):
    """A 1-based line and column in a file."""

    line: int
    column: int


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
    return _parse(text, source, layer, None, _EMPTY_HINT)


def check_yaml(path: str | os.PathLike[str], *, layer: str | None = None) -> YamlDocument:
    """Read the YAML file at `path` with positions; problems are returned, never raised.

    An unreadable or missing file, a directory, bytes that are not UTF-8, a syntax error, an
    empty document or more than one document are problems too (``data`` is then None).
    A UTF-8 byte order mark is accepted.
    """
    return _read(path, layer, _EMPTY_HINT)


def load_yaml(path: str | os.PathLike[str], *, layer: str | None = None) -> YamlDocument:
    """Like `check_yaml`, but raise `ConfigError` listing every problem if any is an error."""
    document = check_yaml(path, layer=layer)
    _raise_for_errors(document.problems)
    return document


# -- reading -------------------------------------------------------------------------------

_EMPTY_HINT = "write the YAML document, or do not pass this file"


class _Abort(Exception):
    """The document cannot be read any further (its problem is in `problem`)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def _failed(source: str, problem: Problem, sha256: str | None = None) -> YamlDocument:
    return YamlDocument(source, None, {}, {}, (problem,), frozenset({()}), sha256)


def _read(path: str | os.PathLike[str], layer: str | None, empty_hint: str) -> YamlDocument:
    source = os.fspath(path)
    data = _read_bytes(source, layer)
    if isinstance(data, YamlDocument):
        return data
    return _decode(data, source, layer, empty_hint)


def _read_bytes(source: str, layer: str | None) -> bytes | YamlDocument:
    """The bytes of the file at `source`, or a failed document saying why it cannot be read."""

    def fail(message: str, hint: str) -> YamlDocument:
        return _failed(source, Problem(message, layer=layer, source=source, hint=hint))

    limit = MAX_BYTES + 1
    try:
        # os.read, not open(): no file object to build for a file read in one or two calls.
        descriptor = os.open(source, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            # read(n) allocates n bytes first: ask for the file's size and one byte more (a
            # second, empty read says it ended), or for 64 KiB at a time from files that
            # report no size (pipes, /proc); never for more than `limit` in all.
            size = os.fstat(descriptor).st_size
            step = size + 1 if 0 < size <= MAX_BYTES else 1 << 16
            chunks: list[bytes] = []
            total = 0
            while total < limit:
                chunk = os.read(descriptor, min(step, limit - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            data = b"".join(chunks)
        finally:
            os.close(descriptor)
    except FileNotFoundError:
        return fail(
            "file not found",
            f"check the path; a relative path is read from the current directory {os.getcwd()}",
        )
    except IsADirectoryError:
        return fail("is a directory, not a file", "give the path of the YAML file itself")
    except PermissionError:
        if os.path.isdir(source):
            return fail("is a directory, not a file", "give the path of the YAML file itself")
        return fail(
            "cannot be read: permission denied",
            "make it readable by this user, e.g. with chmod a+r, or copy it somewhere readable",
        )
    except OSError as error:
        return fail(
            f"cannot be read: {error.strerror or error}", "check that the path names a YAML file"
        )
    if len(data) > MAX_BYTES:
        return fail(
            f"is larger than {MAX_BYTES:,} bytes: not a configuration file",
            "check the path: it should name a small YAML file",
        )
    return data


def _decode(
    data: bytes, source: str, layer: str | None, empty_hint: str, sha256: str | None = None
) -> YamlDocument:
    sha256 = sha256 or hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return _failed(source, _decode_problem(data, error, source, layer), sha256)
    return _parse(text, source, layer, sha256, empty_hint)


def _decode_problem(
    data: bytes, error: UnicodeDecodeError, source: str, layer: str | None
) -> Problem:
    start = error.start
    line_start = data.rfind(b"\n", 0, start) + 1
    line = data.count(b"\n", 0, start) + 1
    column = len(data[line_start:start].decode("utf-8", errors="replace")) + 1
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
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
    try:
        root = _compose(text)
    except yaml.MarkedYAMLError as error:
        return _failed(source, _syntax_problem(error, text, source, layer), sha256)
    except yaml.reader.ReaderError as error:
        return _failed(source, _reader_problem(error, text, source, layer), sha256)
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
    walker = _Walker(source, layer)
    try:
        data = walker.value(root, (), 0)
    except _Abort as abort:
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


def _compose(text: str) -> Node | None:
    """The one document of `text` as a node graph (None when it has no document)."""
    loader = _LOADER(text)  # the pure-Python Reader already checks characters here
    try:
        root: Node | None = loader.get_single_node()
    finally:
        loader.dispose()
    return root


def _syntax_problem(
    error: yaml.MarkedYAMLError, text: str, source: str, layer: str | None
) -> Problem:
    mark = error.problem_mark or error.context_mark
    line = column = None
    if mark is not None:
        line, column = mark.line + 1, mark.column + 1
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
            message += f" from line {context.line + 1}, column {context.column + 1}"
    at = ""
    if mark is not None:  # (libyaml's mark.index counts bytes; line and column count characters)
        lines = text.split("\n")
        if mark.line < len(lines) and mark.column < len(lines[mark.line]):
            at = lines[mark.line][mark.column]
    problem = error.problem or ""
    if at == "\t" or "'\\t'" in problem:
        hint = "indent with spaces: YAML does not allow tabs for indentation"
    elif "nesting depth" in problem:
        hint = f"nest mappings and lists at most {MAX_DEPTH} levels deep"
    elif "mapping values are not allowed" in problem:
        hint = "check the indentation, and quote a value that contains ': '"
    elif "undefined alias" in problem:
        hint = "define the anchor &name before the alias *name that uses it"
    elif "expected ':'" in problem or "simple key" in (error.context or ""):
        hint = "write each mapping entry as 'key: value', and close every quote"
    else:
        hint = "fix the YAML at this position: close every bracket and quote"
    return Problem(message, layer=layer, source=source, line=line, column=column, hint=hint)


def _reader_problem(
    error: yaml.reader.ReaderError, text: str, source: str, layer: str | None
) -> Problem:
    # libyaml gives a byte offset and PyYAML a character offset: find the character ourselves.
    found = yaml.reader.Reader.NON_PRINTABLE.search(text)
    line = column = None
    if found is not None:
        index = found.start()
        line = text.count("\n", 0, index) + 1
        column = index - text.rfind("\n", 0, index)
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


def _raise_for_errors(problems: Iterable[Problem]) -> None:
    problems = tuple(problems)
    if any(p.severity == "error" for p in problems):
        raise ConfigError(problems)


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML_TAG) :] if tag.startswith(_YAML_TAG) else tag


def _kind(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    return "a list" if isinstance(node, SequenceNode) else "a scalar"


class _Walker:
    """Builds plain data from composed nodes, recording positions and problems."""

    def __init__(self, source: str, layer: str | None) -> None:
        self.source = source
        self.layer = layer
        self.positions: dict[YamlPath, Position] = {}
        self.key_positions: dict[YamlPath, Position] = {}
        self.problems: list[Problem] = []
        self.unreadable: set[YamlPath] = set()
        self._reported: set[tuple[int, int, str]] = set()
        self._visits = 0
        self._active: set[int] = set()  # ids of the collections being built (alias cycles)

    def _problem(self, node: Node, message: str, hint: str) -> Problem:
        mark = node.start_mark
        return Problem(
            message,
            layer=self.layer,
            source=self.source,
            line=mark.line + 1,
            column=mark.column + 1,
            hint=hint,
        )

    def _report(self, node: Node, message: str, hint: str) -> None:
        # A node reached through several aliases is walked several times: report it once.
        mark = node.start_mark
        seen = (mark.line, mark.column, message)
        if seen not in self._reported:
            self._reported.add(seen)
            self.problems.append(self._problem(node, message, hint))

    def _abort(self, node: Node, message: str, hint: str) -> NoReturn:
        raise _Abort(self._problem(node, message, hint))

    def _count(self, node: Node) -> None:
        self._visits += 1
        if self._visits > MAX_NODES:
            self._abort(
                node,
                f"the document builds more than {MAX_NODES:,} values once its aliases are "
                "expanded (an alias bomb?)",
                "every alias *name copies its anchor &name again: write the values out, "
                "or use fewer aliases of large anchors",
            )

    def value(self, node: Node, path: YamlPath, depth: int) -> Any:
        """The plain value of `node` at `path`, recording its position (and its children's)."""
        self._count(node)
        mark = node.start_mark
        self.positions[path] = Position(mark.line + 1, mark.column + 1)
        tag = node.tag
        if isinstance(node, ScalarNode):
            if tag == _STR:
                return node.value
            return self._scalar(node, path)
        if depth >= MAX_DEPTH:
            self._abort(
                node,
                f"the document nests mappings and lists more than {MAX_DEPTH} levels deep",
                "flatten the structure: configuration values need only a few levels",
            )
        if id(node) in self._active:
            self._abort(
                node,
                "an alias refers to a mapping or list that contains it: the value is infinite",
                "an alias *name can only use an anchor &name whose value ends before the alias",
            )
        if isinstance(node, MappingNode) and tag == _MAP:
            self._active.add(id(node))
            result = self._mapping(node, path, depth)
            self._active.discard(id(node))
            return result
        if isinstance(node, SequenceNode) and tag == _SEQ:
            self._active.add(id(node))
            items = [
                self.value(item, (*path, index), depth + 1) for index, item in enumerate(node.value)
            ]
            self._active.discard(id(node))
            return items
        self._refuse(node)
        self.unreadable.add(path)
        return None

    def _scalar(self, node: ScalarNode, path: YamlPath) -> Any:
        ok, value = self._construct(node)
        if not ok:
            self.unreadable.add(path)
        return value

    def _construct(self, node: ScalarNode) -> tuple[bool, Any]:
        """``(True, value)`` for a scalar ``yaml.safe_load`` reads, else ``(False, None)``."""
        construct = _SCALARS.get(node.tag)
        if construct is None:
            self._refuse(node)
            return False, None
        try:
            return True, construct(node)
        except (ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError):
            self._report(
                node,
                f"{node.value!r} cannot be read as {_short_tag(node.tag)}",
                "remove the tag, or write a value of that type",
            )
            return False, None

    def _refuse(self, node: Node) -> None:
        """Report a tag that is not plain YAML."""
        tag = node.tag
        short = _short_tag(tag)
        if tag.startswith(_PYTHON):
            message = (
                f"the Python tag {short!r} is not allowed: only plain YAML is allowed, "
                "no Python objects"
            )
            hint = "write the value as plain YAML: a string, number, boolean, list or mapping"
        elif tag in (_MERGE, _VALUE):
            text = "<<" if tag == _MERGE else "="
            message = f"a plain {text!r} is a YAML 1.1 key indicator, not a value"
            hint = f"quote it, '{text}', to write the text"
        elif tag in _COLLECTION_TAGS:
            message = f"the tag {short!r} is not supported: only mappings, lists and scalars"
            hint = "write a mapping or a list instead"
        elif tag in (_STR, _MAP, _SEQ) or tag in _SCALARS:
            message = f"the tag {short!r} cannot be used on {_kind(node)}"
            hint = "remove the tag"
        else:
            message = f"unknown tag {short!r}: only plain YAML is allowed"
            hint = "remove the tag; plain values need none"
        self._report(node, message, hint)

    def _key(self, node: Node) -> tuple[bool, Hashable]:
        """``(True, key)`` for a usable mapping key, else ``(False, None)`` (reported)."""
        if isinstance(node, ScalarNode):
            if node.tag in (_STR, _VALUE):
                return True, node.value
            return self._construct(node)
        self._report(
            node,
            f"a mapping key must be a scalar, not {_kind(node)}",
            "write a plain key such as 'name:'",
        )
        return False, None

    def _mapping(self, node: MappingNode, path: YamlPath, depth: int) -> dict[Hashable, Any]:
        result: dict[Hashable, Any] = {}
        written: dict[Hashable, Node] = {}
        merges: list[tuple[Node, Node]] = []
        for key_node, value_node in node.value:
            if self._is_merge(key_node, merges):
                merges.append((key_node, value_node))
                continue
            ok, key = self._key(key_node)
            if not ok:
                continue
            mark = key_node.start_mark
            at = Position(mark.line + 1, mark.column + 1)
            first = written.setdefault(key, key_node)
            if first is not key_node:
                self._duplicate(key, first, key_node)
            child = (*path, key)
            self.key_positions[child] = at
            result[key] = self.value(value_node, child, depth + 1)
        # Merged entries are walked only where they win, so no position is left behind.
        for key, (key_node, value_node) in self._merged(merges, result, depth).items():
            mark = key_node.start_mark
            child = (*path, key)
            self.key_positions[child] = Position(mark.line + 1, mark.column + 1)
            result[key] = self.value(value_node, child, depth + 1)
        return result

    def _duplicate(self, key: Hashable, first: Node, again: Node) -> None:
        mark = first.start_mark
        self._report(
            again,
            f"duplicate key {key!r}: first at line {mark.line + 1}, column {mark.column + 1}; "
            "YAML would silently keep only this last one",
            "remove one of them",
        )

    def _is_merge(self, key_node: Node, merges: list[tuple[Node, Node]]) -> bool:
        if not (isinstance(key_node, ScalarNode) and key_node.tag == _MERGE):
            return False
        if merges:
            self._report(
                key_node,
                "duplicate merge key '<<' in this mapping",
                "write one merge key with a list of aliases: '<<: [*a, *b]'",
            )
        return True

    def _merged(
        self, merges: list[tuple[Node, Node]], own: Mapping[Hashable, Any], depth: int
    ) -> dict[Hashable, tuple[Node, Node]]:
        """The entries that merge keys add to a mapping whose own keys are `own`.

        A mapping's own keys win over merged ones (every YAML reader agrees). When two merged
        mappings set one key, readers disagree: the YAML 1.1 merge spec and PyYAML before 6.0.4
        keep the first, PyYAML 6.0.4 the last. slime reads these files with
        ``yaml.safe_load``, so such a key is an error rather than a silent choice.
        """
        merged: dict[Hashable, tuple[Node, Node]] = {}
        for merge_key, merge in merges:
            sources = merge.value if isinstance(merge, SequenceNode) else [merge]
            for source in sources:
                for key, pair in self._flatten(source, depth).items():
                    if key in own:
                        continue
                    earlier = merged.setdefault(key, pair)
                    if earlier[0] is not pair[0]:  # the same mapping merged twice is fine
                        first, second = (p[0].start_mark.line + 1 for p in (earlier, pair))
                        self._report(
                            merge_key,
                            f"two merged mappings set {key!r}, at line {first} and line {second}; "
                            "YAML readers disagree on which one wins",
                            f"set {key!r} in this mapping itself, or merge only one mapping "
                            "that sets it",
                        )
        return merged

    def _flatten(self, node: Node, depth: int) -> dict[Hashable, tuple[Node, Node]]:
        """The (key node, value node) entries of merged mapping `node`, its own merges applied."""
        self._count(node)
        if not (isinstance(node, MappingNode) and node.tag == _MAP):
            self._report(
                node,
                f"a merge key '<<' takes a mapping or a list of mappings, not {_kind(node)}",
                "merge an anchored mapping: '<<: *defaults' or '<<: [*a, *b]'",
            )
            return {}
        if depth >= MAX_DEPTH:
            self._abort(
                node,
                f"merge keys are chained more than {MAX_DEPTH} levels deep",
                "merge fewer mappings into one another",
            )
        if id(node) in self._active:
            self._abort(
                node,
                "a merge key merges a mapping into itself: the value is infinite",
                "merge only mappings defined before and outside this one",
            )
        self._active.add(id(node))
        entries: dict[Hashable, tuple[Node, Node]] = {}
        merges: list[tuple[Node, Node]] = []
        for key_node, value_node in node.value:
            self._count(key_node)
            if self._is_merge(key_node, merges):
                merges.append((key_node, value_node))
                continue
            ok, key = self._key(key_node)
            if not ok:
                continue
            if key in entries:
                self._duplicate(key, entries[key][0], key_node)
            entries[key] = (key_node, value_node)  # the last one, as in PyYAML
        entries.update(self._merged(merges, entries, depth + 1))
        self._active.discard(id(node))
        return entries


# -- role files ----------------------------------------------------------------------------

_TOP_KEY = "megatron"
_FIELDS = ("name", "role", "overrides", "args")
_ROLE_EMPTY_HINT = (
    "list role entries under 'megatron:', or leave out --megatron-config-path so that every "
    "role inherits the command line"
)


@attrs.frozen
class RoleFile:
    """A role file read: one `Layer` per role it lists, and every problem found in it.

    `layers` maps each role present to its layer (kind ``file``): the entry's overrides, the
    entry's position as the layer's origin and, in `Layer.origins`, the position of every
    override value (leaves and the nested mappings that hold them), labelled with the entry's
    ``name``. `roles_missing` lists the roles without an entry, which inherit the command line.
    `sha256` is the hex digest of the file's bytes, for audit records (None if unreadable).
    From `check_role_file`, `layers` holds what could be read even when `problems` has errors.
    """

    path: str
    sha256: str | None
    layers: Mapping[str, Layer]
    roles_missing: tuple[str, ...]
    problems: tuple[Problem, ...] = ()

    @property
    def errors(self) -> tuple[Problem, ...]:
        """Only the problems of severity ``error``."""
        return tuple(p for p in self.problems if p.severity == "error")


def read_role_file(
    path: str | os.PathLike[str],
    roles: Sequence[str] = ("actor", "critic"),
    *,
    layer_name: str = "role-config",
) -> RoleFile:
    """Read a role file (slime's ``--megatron-config-path``) into one layer per role.

    Raises `ConfigError` listing every problem of the file at once (warnings included) when
    any of them is an error; warnings alone are kept in `RoleFile.problems`.
    """
    role_file = check_role_file(path, roles, layer_name=layer_name)
    _raise_for_errors(role_file.problems)
    return role_file


def check_role_file(
    path: str | os.PathLike[str],
    roles: Sequence[str] = ("actor", "critic"),
    *,
    layer_name: str = "role-config",
) -> RoleFile:
    """Read a role file like `read_role_file`, returning its problems instead of raising.

    Every problem is located at ``file:line:column`` and says what to write instead; they are
    sorted by position. This is what a ``check`` command reports. The file is read on every
    call; when its bytes are those of a recent call, that call's result is given again.
    """
    valid = _valid_roles(roles)
    if not isinstance(layer_name, str) or not layer_name:
        raise ValueError(f"layer_name must be a non-empty string (got {layer_name!r})")
    source = os.fspath(path)
    data = _read_bytes(source, layer_name)
    if isinstance(data, YamlDocument):
        return _RoleReader(data, valid, layer_name).read()
    # The same bytes read the same way: a trainer reads its role file once per role.
    sha256 = hashlib.sha256(data).hexdigest()
    key = (source, valid, layer_name, sha256, _LOADER, MAX_NODES, MAX_DEPTH)
    with _ROLE_FILES_LOCK:
        role_file = _ROLE_FILES.get(key)
    if role_file is None:
        document = _decode(data, source, layer_name, _ROLE_EMPTY_HINT, sha256)
        role_file = _RoleReader(document, valid, layer_name).read()
        with _ROLE_FILES_LOCK:
            _ROLE_FILES[key] = role_file
            while len(_ROLE_FILES) > _ROLE_FILES_KEPT:  # forget the oldest
                del _ROLE_FILES[next(iter(_ROLE_FILES))]
    return RoleFile(
        role_file.path,
        role_file.sha256,
        dict(role_file.layers),
        role_file.roles_missing,
        role_file.problems,
    )


#: Role files read lately, by path, roles, layer name, sha256 of the bytes and the reader's
#: settings. What is kept is immutable (a `RoleFile`'s layers dict is copied on the way out),
#: and a file whose bytes changed has another key, so a hit is exactly what reading the file
#: again would give.
_ROLE_FILES: dict[tuple[Any, ...], RoleFile] = {}
_ROLE_FILES_KEPT = 8
_ROLE_FILES_LOCK = threading.Lock()


def _valid_roles(roles: Sequence[str]) -> tuple[str, ...]:
    if isinstance(roles, str):
        raise TypeError(f"roles must be a sequence of role names, not one string ({roles!r})")
    valid = tuple(roles)
    if not valid:
        raise ValueError("roles must name at least one role")
    for role in valid:
        if not isinstance(role, str) or not role:
            raise ValueError(f"every role must be a non-empty string (got {role!r})")
    if len(set(valid)) != len(valid):
        raise ValueError(f"roles must be distinct (got {list(valid)})")
    return valid


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"the {type(value).__name__} {value}"


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in names)


class _RoleReader:
    """Checks a document against the role-file contract and builds the layers."""

    def __init__(self, document: YamlDocument, roles: tuple[str, ...], layer_name: str) -> None:
        self.document = document
        self.roles = roles
        self.layer_name = layer_name
        self.source = document.source
        self.problems: list[Problem] = list(document.problems)
        self.layers: dict[str, Layer] = {}
        self.first_entry: dict[str, int] = {}  # role -> index of its (first) entry

    def read(self) -> RoleFile:
        if () not in self.document.unreadable:
            self._top(self.document.data)
        layers = {role: self.layers[role] for role in self.roles if role in self.layers}
        missing = tuple(role for role in self.roles if role not in self.first_entry)
        problems = sorted(self.problems, key=lambda p: (p.line or 0, p.column or 0))
        return RoleFile(self.source, self.document.sha256, layers, missing, tuple(problems))

    # Positions and problems --------------------------------------------------------------

    def _at(self, path: YamlPath, *, key: bool = False) -> Position | None:
        positions = self.document.key_positions if key else self.document.positions
        return positions.get(path)

    def _error(
        self,
        path: YamlPath,
        message: str,
        hint: str,
        *,
        key: bool = False,
        severity: Severity = "error",
        config_key: str | None = None,
    ) -> None:
        at = self._at(path, key=key)
        self.problems.append(
            Problem(
                message,
                key=config_key,
                layer=self.layer_name,
                source=self.source,
                line=at.line if at else None,
                column=at.column if at else None,
                hint=hint,
                severity=severity,
            )
        )

    def _origin(self, path: YamlPath, label: str | None, *, key: bool = False) -> Origin:
        at = self._at(path, key=key)
        return Origin(
            self.layer_name,
            "file",
            source=self.source,
            line=at.line if at else None,
            column=at.column if at else None,
            label=label,
        )

    # The structure -------------------------------------------------------------------------

    def _top(self, data: Any) -> None:
        if not isinstance(data, dict):
            if isinstance(data, list) and any(isinstance(item, dict) for item in data):
                hint = f"write '{_TOP_KEY}:' on the first line and indent the entries under it"
            else:
                hint = (
                    f"start the file with '{_TOP_KEY}:' and list one '- role: ...' entry per role"
                )
            self._error(
                (),
                f"the top level must be a mapping with a {_TOP_KEY!r} list (got {_describe(data)})",
                hint,
            )
            return
        suggested = False
        for key in data:
            if key == _TOP_KEY:
                continue
            match = did_you_mean(key, [_TOP_KEY]) if isinstance(key, str) else None
            suggested = suggested or match is not None
            self._error(
                (key,),
                f"unknown top-level key {key!r}" + (f"; did you mean {match!r}?" if match else ""),
                f"write {match!r}"
                if match
                else f"the only top-level key is {_TOP_KEY!r}: put role entries under it",
                key=True,
            )
        if _TOP_KEY not in data:
            if not suggested:
                self._error(
                    (),
                    f"no {_TOP_KEY!r} list at the top level",
                    f"add '{_TOP_KEY}:' with one '- role: ...' entry per role; "
                    f"roles: {_quoted(self.roles)}",
                )
            return
        path: YamlPath = (_TOP_KEY,)
        if path in self.document.unreadable:
            return
        entries = data[_TOP_KEY]
        if not isinstance(entries, list):
            self._not_a_list(entries)
            return
        if not entries:
            self._error(
                path,
                f"{_TOP_KEY!r} lists no role entries: every role inherits the command line",
                "add a '- role: ...' entry, or leave the file out",
                severity="warning",
            )
        for index, entry in enumerate(entries):
            self._entry(index, entry)

    def _not_a_list(self, entries: Any) -> None:
        roles_as_keys = isinstance(entries, dict) and any(key in self.roles for key in entries)
        one_entry = isinstance(entries, dict) and any(key in _FIELDS for key in entries)
        if one_entry:
            hint = (
                "make it a list: write '- ' before the entry's first field, e.g. '  - role: actor'"
            )
        elif roles_as_keys:
            hint = (
                "write one list item per role: '- role: actor' with 'overrides:' under it, "
                "instead of 'actor:'"
            )
        else:
            hint = "write each entry as a list item: '- role: actor' with 'overrides:' under it"
        self._error(
            (_TOP_KEY,),
            f"{_TOP_KEY!r} must be a list of role entries (got {_describe(entries)})",
            hint,
        )

    def _entry(self, index: int, entry: Any) -> None:
        path: YamlPath = (_TOP_KEY, index)
        number = index + 1
        if path in self.document.unreadable:
            return
        if not isinstance(entry, dict):
            if isinstance(entry, str) and entry in self.roles:
                hint = f"write '- role: {entry}' with 'overrides:' under it"
            else:
                hint = "write 'role: ...' and 'overrides:' under the '- '"
            self._error(
                path,
                f"{_TOP_KEY} entry {number} must be a mapping with 'role' and 'overrides' "
                f"(got {_describe(entry)})",
                hint,
            )
            return
        for key in entry:
            if key not in _FIELDS:
                self._unknown_field(path, number, key)
        label = self._name(path, number, entry)
        role = self._role(path, number, entry)
        values, origins = self._overrides(path, number, entry, label)
        if role is None:
            return
        first = self.first_entry.get(role)
        if first is not None:
            earlier = self._at((_TOP_KEY, first, "role"))
            here = self._at((*path, "role"))
            self._error(
                (*path, "role"),
                f"role {role!r} has two entries: {_TOP_KEY} entry {first + 1}"
                + (f" at line {earlier.line}" if earlier else "")
                + f" and entry {number}"
                + (f" at line {here.line}" if here else ""),
                "keep one entry per role: move these overrides into the first one",
            )
            return
        self.first_entry[role] = index
        field = "overrides" if "overrides" in entry else "args"
        key_origins = {
            leaf: self._origin((*path, field, *leaf), label, key=True) for leaf in origins
        }
        self.layers[role] = Layer(
            self.layer_name, "file", values, self._origin(path, label), origins, key_origins
        )

    def _unknown_field(self, path: YamlPath, number: int, key: Hashable) -> None:
        match = did_you_mean(key, _FIELDS) if isinstance(key, str) else None
        if match:
            hint = f"write {match!r}"
        else:
            hint = (
                f"the fields are {_quoted(_FIELDS[:3])}, and 'args' as the old name of "
                "'overrides'; argument overrides go under 'overrides:'"
            )
        self._error(
            (*path, key),
            f"unknown field {key!r} in {_TOP_KEY} entry {number}"
            + (f"; did you mean {match!r}?" if match else ""),
            hint,
            key=True,
        )

    def _name(self, path: YamlPath, number: int, entry: dict[Any, Any]) -> str | None:
        if "name" not in entry or (*path, "name") in self.document.unreadable:
            return None
        name = entry["name"]
        if isinstance(name, str):
            return name
        if isinstance(name, (dict, list)) or name is None:
            hint = "write a label such as 'name: default', or remove the line"
        else:
            hint = f'quote it: name: "{name}"'
        self._error(
            (*path, "name"),
            f"'name' of {_TOP_KEY} entry {number} must be a string (got {_describe(name)})",
            hint,
        )
        return None

    def _role(self, path: YamlPath, number: int, entry: dict[Any, Any]) -> str | None:
        valid = f"valid roles: {_quoted(self.roles)}"
        if "role" not in entry:
            self._error(
                path,
                f"{_TOP_KEY} entry {number} has no 'role'",
                f"add 'role: {self.roles[0]}'; {valid}",
            )
            return None
        if (*path, "role") in self.document.unreadable:
            return None
        role = entry["role"]
        if not isinstance(role, str):
            self._error(
                (*path, "role"),
                f"'role' of {_TOP_KEY} entry {number} must name a role (got {_describe(role)})",
                valid,
            )
            return None
        if role not in self.roles:
            self._error(
                (*path, "role"),
                f"unknown role {role!r} in {_TOP_KEY} entry {number}"
                + suggestion(role, self.roles),
                valid,
            )
            return None
        return role

    def _overrides(
        self, path: YamlPath, number: int, entry: dict[Any, Any], label: str | None
    ) -> tuple[dict[str, Any], dict[tuple[str, ...], Origin]]:
        values: dict[str, Any] = {}
        origins: dict[tuple[str, ...], Origin] = {}
        has_overrides, has_args = "overrides" in entry, "args" in entry
        if has_overrides and has_args:
            first = self._at((*path, "overrides"), key=True)
            second = self._at((*path, "args"), key=True)
            self._error(
                (*path, "args"),
                f"{_TOP_KEY} entry {number} has both 'overrides'"
                + (f" at line {first.line}" if first else "")
                + " and 'args'"
                + (f" at line {second.line}" if second else ""),
                "'args' is the old name of 'overrides': move its keys into 'overrides' "
                "and delete 'args'",
                key=True,
            )
        if not (has_overrides or has_args):
            return values, origins
        field = "overrides" if has_overrides else "args"
        field_path = (*path, field)
        raw = entry[field]
        if raw is None or field_path in self.document.unreadable:
            return values, origins  # 'overrides:' with nothing, or 'null': no overrides
        if not isinstance(raw, dict):
            self._error(
                field_path,
                f"{field!r} of {_TOP_KEY} entry {number} must be a mapping of argument names "
                f"to values (got {_describe(raw)})",
                f"write one 'name: value' per line, indented under '{field}:', such as 'lr: 1e-5'",
            )
            return values, origins
        self._copy(raw, field_path, (), values, origins, label)
        return values, origins

    def _copy(
        self,
        raw: dict[Any, Any],
        file_path: YamlPath,
        layer_path: tuple[str, ...],
        out: dict[str, Any],
        origins: dict[tuple[str, ...], Origin],
        label: str | None,
    ) -> None:
        """Copy an overrides mapping, checking its keys and recording every value's origin."""
        for key, value in raw.items():
            child = (*file_path, key)
            if not isinstance(key, str) or not key:
                self._bad_key(child, key, layer_path)
                continue
            if child in self.document.unreadable:
                continue
            path = (*layer_path, key)
            origins[path] = self._origin(child, label)
            if isinstance(value, dict):
                nested: dict[str, Any] = {}
                self._copy(value, child, path, nested, origins, label)
                out[key] = nested
            else:
                out[key] = value

    def _bad_key(self, path: YamlPath, key: Any, layer_path: tuple[str, ...]) -> None:
        if key == "":
            message = "an override key is empty"
            hint = "write the argument's attribute name, e.g. 'lr'"
        else:
            message = f"override key {key!r} is {_describe(key)}, not a string"
            if isinstance(key, bool):
                hint = (
                    "YAML reads unquoted yes/no/on/off/true/false as booleans: quote the key, "
                    "e.g. 'on':"
                )
            elif key is None:
                hint = "YAML reads an unquoted ~ or null as null: write the argument's name"
            else:
                hint = (
                    "keys are argument attribute names such as 'lr'; quote the key if it is "
                    f"meant as text: '{key}':"
                )
        self._error(path, message, hint, key=True, config_key=join_path((*layer_path, str(key))))
