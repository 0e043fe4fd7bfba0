"""Walking composed YAML nodes into plain data, with positions, problems and bounds.

`Walker` builds what ``yaml.safe_load`` would build from a node graph, recording the 1-based
line and column of every key and value, reporting what plain YAML does not allow, and counting
every node it builds so that aliases cannot make a small file expensive (`MAX_NODES` and
`MAX_DEPTH` of `layerconf.sources.yaml`, given to each walker). `bounded_loader` composes a
large document while counting its nodes, so that a file with too many stops being read where
the limit is reached; it warns of a number YAML 1.1 reads otherwise than it shows
(`_yaml_numbers`), and writes positions as editors count lines (`_yaml_lines.Lines`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, NoReturn

import yaml
from yaml.events import MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from layerconf.core.lazy import LazyPattern
from layerconf.core.secrets import SECRETS
from layerconf.exceptions import Problem, Severity
from layerconf.sources._yaml_lines import _YAML_BREAK, _YAML_ONLY_BREAKS, Lines, Position
from layerconf.sources._yaml_numbers import shortened, yaml11_number

#: A path into a YAML document: mapping keys (usually strings) and list indices.
YamlPath = tuple[Hashable, ...]

_YAML_TAG = "tag:yaml.org,2002:"
_STR = _YAML_TAG + "str"
_MAP = _YAML_TAG + "map"
_SEQ = _YAML_TAG + "seq"
_MERGE = _YAML_TAG + "merge"
_VALUE = _YAML_TAG + "value"  # a plain '=': a string as a key, refused as a value (as PyYAML)
_PYTHON = _YAML_TAG + "python/"
_COLLECTION_TAGS = frozenset(_YAML_TAG + name for name in ("set", "omap", "pairs"))

_constructor = yaml.constructor.SafeConstructor()
# The scalar constructors of `yaml.safe_load`, by tag (``str`` has a fast path in `Walker`).
_SCALARS: dict[str, Callable[[ScalarNode], Any]] = {
    _YAML_TAG + "null": _constructor.construct_yaml_null,
    _YAML_TAG + "bool": _constructor.construct_yaml_bool,
    _YAML_TAG + "int": _constructor.construct_yaml_int,
    _YAML_TAG + "float": _constructor.construct_yaml_float,
    _YAML_TAG + "binary": _constructor.construct_yaml_binary,
    _YAML_TAG + "timestamp": _constructor.construct_yaml_timestamp,
}


#: The longest int or float scalar read: Python writes and reads ints of at most 4,300 digits.
MAX_NUMBER_CHARACTERS = 4300
_NUMBERS = frozenset({_YAML_TAG + "int", _YAML_TAG + "float"})


def _shown(node: ScalarNode, quote: bool) -> str:
    """A scalar's text for a message: shortened, or the placeholder for a credential's."""
    return shortened(node.value) if quote else SECRETS.placeholder


class Abort(Exception):
    """The document cannot be read any further (its problem is in `problem`)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def located(
    message: str,
    hint: str,
    source: str,
    layer: str | None,
    at: Position | None,
    severity: Severity = "error",
) -> Problem:
    """A problem of the file `source` at `at` (None: the whole file)."""
    line, column = (at.line, at.column) if at is not None else (None, None)
    return Problem(
        message,
        layer=layer,
        source=source,
        line=line,
        column=column,
        hint=hint,
        severity=severity,
    )


def node_limit_problem(limit: int, source: str, layer: str | None, at: Position | None) -> Problem:
    """The problem of a document with more than `limit` nodes, at the first one past it."""
    return located(
        f"the document holds more than {limit:,} YAML nodes (mappings, lists and scalars; "
        "the limit layerconf.sources.yaml.MAX_NODES): reading stopped here",
        "a configuration file holds tens or hundreds of values: check that the path names "
        "one, and keep large data in a file of its own that the configuration names",
        source,
        layer,
        at,
    )


def depth_limit_problem(limit: int, source: str, layer: str | None, at: Position | None) -> Problem:
    """The problem of a mapping or list nested more than `limit` levels deep."""
    return located(
        f"the document nests mappings and lists more than {limit} levels deep "
        "(the limit layerconf.sources.yaml.MAX_DEPTH)",
        f"flatten the structure: nest mappings and lists at most {limit} levels deep",
        source,
        layer,
        at,
    )


class _CountingComposer(yaml.composer.Composer):
    """PyYAML's composer, counting the nodes it builds and the depth it nests."""

    peek_event: Callable[[], Any]  # the parser's and resolver's, later in a loader's bases
    yaml_path_resolvers: dict[Any, Any]

    source: str
    layer: str | None
    lines: Lines
    max_nodes: int
    max_depth: int
    nodes: int
    depth: int

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self.nodes += 1
        event = self.peek_event()
        if self.nodes > self.max_nodes:
            at = self.lines.at(event.start_mark)
            raise Abort(node_limit_problem(self.max_nodes, self.source, self.layer, at))
        if type(event) is ScalarEvent and not self.yaml_path_resolvers:
            # PyYAML's compose_node for a scalar, without its no-op resolver bookkeeping.
            anchor = event.anchor
            if anchor is not None and anchor in self.anchors:
                return super().compose_node(parent, index)  # PyYAML's own error
            return self.compose_scalar_node(anchor)  # type: ignore[arg-type]
        if self.depth >= self.max_depth and isinstance(
            event, (SequenceStartEvent, MappingStartEvent)
        ):
            at = self.lines.at(event.start_mark)
            raise Abort(depth_limit_problem(self.max_depth, self.source, self.layer, at))
        self.depth += 1
        try:
            node: Node | None = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        return node


def bounded_loader(base: type[Any]) -> type[Any]:
    """A loader class like `base` (``CSafeLoader`` or ``SafeLoader``) whose composer counts the
    nodes it builds and the depth it nests, and stops (`Abort`) once either is past its limit.

    Built on ``CSafeLoader``, libyaml still scans and parses; only the node graph is built in
    Python (PyYAML's own `Composer`), so that a document too large is refused after
    ``max_nodes`` nodes rather than after all of them.
    """

    class BoundedLoader(_CountingComposer, base):  # type: ignore[misc]
        def __init__(
            self,
            text: str,
            source: str,
            layer: str | None,
            lines: Lines,
            max_nodes: int,
            max_depth: int,
        ) -> None:
            base.__init__(self, text)
            yaml.composer.Composer.__init__(self)  # CSafeLoader composes in C: not done yet
            self.source, self.layer, self.lines = source, layer, lines
            self.max_nodes, self.max_depth = max_nodes, max_depth
            self.nodes = self.depth = 0

    return BoundedLoader


# At a line's start, a byte order mark, or a tab before any '#', in a text whose scalars are
# masked (so that every '#' left starts a comment) and whose lines all end in \n.
_MISREAD = LazyPattern(r"(?m)^(?:\ufeff|[^#\t\n]*\t)")


def misread_character(text: str, root: Node, lines: Lines) -> int | None:
    """The index of the first character in `text` that libyaml reads and ``yaml.safe_load``
    does not, or None: a tab or a byte order mark (U+FEFF).

    libyaml reads a tab wherever YAML separates tokens (``lr:<tab>1e-6``, ``save: /ckpt<tab>``);
    PyYAML's own scanner, which ``yaml.safe_load`` uses, refuses one anywhere but inside a
    quoted scalar, in the lines of a block scalar (``|``, ``>``) or in a comment. libyaml also
    drops a byte order mark that starts a line between tokens (files joined with ``cat``);
    PyYAML reads it as a character of what follows, or refuses it. `root` is the document
    libyaml composed from `text`: its scalars say where quotes and block scalars are. Those
    are masked, and every '#' and byte order mark in a plain scalar, so that every '#' left
    starts a comment: then one search in C finds the first such tab or byte order mark.
    """
    # (An ASCII text's marks count characters whichever way libyaml counts.)
    offset: Callable[[Any], int] = _mark_index if text.isascii() else lines.offset
    # (start, end, what): quotes and a top-level block scalar are masked whole; in a block
    # scalar below the top its tabs (a line starting with a byte order mark is past its end); in
    # a plain scalar its '#' and byte order marks
    masks: list[tuple[int, int, str]] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ScalarNode):
            start, end = offset(node.start_mark), offset(node.end_mark)
            if node.style in ("'", '"'):  # from its opening quote: an anchor or a tag before
                masks.append((max(text.find(node.style, start, end), start), end, "whole"))
            elif node.style in ("|", ">"):  # its lines start after the header's line break
                header_end = _YAML_BREAK.compiled().search(text, start)
                if header_end is not None:
                    masks.append((header_end.end(), end, "whole" if node is root else "block"))
            else:
                masks.append((start, end, "plain"))
        elif isinstance(node, MappingNode):
            stack.extend(part for pair in node.value for part in pair)
        else:
            stack.extend(node.value)
    pieces: list[str] = []
    done = 0
    for start, end, what in sorted(masks):
        pieces.append(text[done:start])
        if what == "whole":
            pieces.append("x" * (end - start))
        elif what == "block":
            pieces.append(text[start:end].replace("\t", "x"))
        else:
            pieces.append(text[start:end].replace("#", "x").replace("\ufeff", "x"))
        done = end
    pieces.append(text[done:])
    masked = "".join(pieces)
    for line_break in ("\r", *_YAML_ONLY_BREAKS):  # (\r\n becomes \n\n: the same lines)
        if line_break in masked:
            masked = masked.replace(line_break, "\n")
    found = _MISREAD.compiled().search(masked)
    return None if found is None else found.end() - 1


def _mark_index(mark: Any) -> int:
    index: int = mark.index
    return index


def short_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML_TAG) :] if tag.startswith(_YAML_TAG) else tag


def _kind(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    return "a list" if isinstance(node, SequenceNode) else "a scalar"


class Walker:
    """Builds plain data from composed nodes, recording positions and problems."""

    def __init__(
        self, source: str, layer: str | None, max_nodes: int, max_depth: int, lines: Lines
    ) -> None:
        self.source = source
        self.lines = lines
        self.layer = layer
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        self.positions: dict[YamlPath, Position] = {}
        self.key_positions: dict[YamlPath, Position] = {}
        self.problems: list[Problem] = []
        self.unreadable: set[YamlPath] = set()
        self._reported: set[tuple[int, int, str]] = set()
        self._visits = 0
        self._active: set[int] = set()  # ids of the collections being built (alias cycles)

    def _problem(
        self, node: Node, message: str, hint: str, severity: Severity = "error"
    ) -> Problem:
        at = self.lines.at(node.start_mark)
        return located(message, hint, self.source, self.layer, at, severity)

    def _report(self, node: Node, message: str, hint: str, severity: Severity = "error") -> None:
        # A node reached through several aliases is walked several times: report it once.
        mark = node.start_mark
        seen = (mark.line, mark.column, message)
        if seen not in self._reported:
            self._reported.add(seen)
            self.problems.append(self._problem(node, message, hint, severity))

    def _abort(self, node: Node, message: str, hint: str) -> NoReturn:
        raise Abort(self._problem(node, message, hint))

    def _count(self, node: Node) -> None:
        self._visits += 1
        if self._visits > self.max_nodes:
            self._abort(
                node,
                f"the document builds more than {self.max_nodes:,} values once its aliases are "
                "expanded (an alias bomb? the limit is layerconf.sources.yaml.MAX_NODES)",
                "every alias *name copies its anchor &name again: write the values out, "
                "or use fewer aliases of large anchors",
            )

    def value(self, node: Node, path: YamlPath, depth: int) -> Any:
        """The plain value of `node` at `path`, recording its position (and its children's)."""
        self._count(node)
        mark = node.start_mark
        self.positions[path] = (
            Position(mark.line + 1, mark.column + 1) if self.lines.plain else self.lines.at(mark)
        )
        tag = node.tag
        if isinstance(node, ScalarNode):
            if tag == _STR:
                return node.value
            return self._scalar(node, path)
        if depth >= self.max_depth:
            at = self.lines.at(node.start_mark)
            raise Abort(depth_limit_problem(self.max_depth, self.source, self.layer, at))
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
        secret = bool(path) and isinstance(path[-1], str) and SECRETS.is_secret(path[-1])
        ok, value = self._construct(node, quote=not secret)
        if not ok:
            self.unreadable.add(path)
        elif node.tag in _NUMBERS and not node.style:  # (a plain scalar: no quotes)
            misread = yaml11_number(node.value, value, quote=not secret)
            if misread is not None:
                self._report(node, *misread, severity="warning")
        return value

    def _construct(self, node: ScalarNode, *, quote: bool = True) -> tuple[bool, Any]:
        """``(True, value)`` for a scalar ``yaml.safe_load`` reads, else ``(False, None)``.

        Without `quote` (a credential's value) the problem does not repeat the text.
        """
        construct = _SCALARS.get(node.tag)
        if construct is None:
            self._refuse(node)
            return False, None
        if node.tag in _NUMBERS and len(node.value) > MAX_NUMBER_CHARACTERS:
            # int('1' * 5000) is refused by Python, and '59:59:...' (base 60) costs the square
            # of its length: neither is a configuration value.
            self._report(
                node,
                f"{_shown(node, quote)} cannot be read as {short_tag(node.tag)}: a number of "
                f"{len(node.value):,} characters (at most {MAX_NUMBER_CHARACTERS:,})",
                "write a shorter number, or quote it to keep it as text",
            )
            return False, None
        try:
            return True, construct(node)
        except OverflowError:  # a base-60 float past the largest float
            self._report(
                node,
                f"{_shown(node, quote)} cannot be read as {short_tag(node.tag)}: it is too large",
                "write a smaller number, or quote it to keep it as text",
            )
        except (ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError):
            self._report(
                node,
                f"{_shown(node, quote)} cannot be read as {short_tag(node.tag)}",
                "remove the tag, or write a value of that type",
            )
        return False, None

    def _refuse(self, node: Node) -> None:
        """Report a tag that is not plain YAML."""
        tag = node.tag
        short = short_tag(tag)
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
        plain = self.lines.plain
        for key_node, value_node in node.value:
            if self._is_merge(key_node, merges):
                merges.append((key_node, value_node))
                continue
            ok, key = self._key(key_node)
            if not ok:
                continue
            mark = key_node.start_mark
            at = Position(mark.line + 1, mark.column + 1) if plain else self.lines.at(mark)
            first = written.setdefault(key, key_node)
            if first is not key_node:
                self._duplicate(key, first, key_node)
            child = (*path, key)
            self.key_positions[child] = at
            result[key] = self.value(value_node, child, depth + 1)
        # Merged entries are walked only where they win, so no position is left behind.
        for key, (key_node, value_node) in self._merged(merges, result, depth).items():
            child = (*path, key)
            self.key_positions[child] = self.lines.at(key_node.start_mark)
            result[key] = self.value(value_node, child, depth + 1)
        return result

    def _duplicate(self, key: Hashable, first: Node, again: Node) -> None:
        at = self.lines.at(first.start_mark)
        self._report(
            again,
            f"duplicate key {key!r}: first at line {at.line}, column {at.column}; "
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
                        first, second = (
                            self.lines.at(p[0].start_mark).line for p in (earlier, pair)
                        )
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
        if depth >= self.max_depth:
            self._abort(
                node,
                f"merge keys are chained more than {self.max_depth} levels deep",
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
