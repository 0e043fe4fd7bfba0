"""The reader of simple block YAML (`layerconf.sources._yaml_simple`) against the full reader.

Whatever `read_simple` accepts, it must read exactly as the composer and walker do (data, types,
the position of every value and key) for a document they read without a problem; anything else
it must decline. Documents are generated from the shapes role files are written in, with the
spellings YAML reads in surprising ways, then mutated character by character.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerconf.sources import yaml as yaml_source
from layerconf.sources._yaml_simple import read_simple
from layerconf.sources.yaml import MAX_DEPTH, MAX_NODES, Position, parse_yaml

ROOT = Path(__file__).parent.parent
LOADER = yaml_source._LOADER

#: Scalars of the simple shape, some of which YAML reads as another type than they look.
SIMPLE_SCALARS = [
    "1e-5", "1e-6", "1.0e-5", "0.98", "-1", "+2", "0", "007", "0x1F", "0b101", "1_000", "1:30",
    "190:20:30", ".inf", "-.inf", ".NaN", ".5", "yes", "No", "on", "OFF", "true", "False", "~",
    "null", "Null", "constant", "cosine", "adam", "/root/models/Qwen3-4B/", "a.b", "a:b",
    "http://x", "x-y", "_x", "0o17", "1.5.2", "'a b'", "''", '""', '"a b # c"', "'#x'",
    "'-'", '"yes"', "'1'", "+.inf", "1__0", "0.1_5",
]  # fmt: skip
#: Scalars the simple reader must decline (or the full reader refuses).
ODD_SCALARS = [
    "2024-01-01", "2001-12-14t21:59:43.10-05:00", "'it''s'", '"a\\"b"', '"\\u0041"', "a b",
    "a#b", "-", "--", "---", "<<", "=", "!!str x", "!!int 1", "&a x", "*a", "[1, 2]", "{}",
    "{a: 1}", "|", ">", "? x", "@x", "`x", "%x", "!x", "1" * 4400, "a: b", "- x", "é", "a\tb",
    "'unclosed", '"unclosed', "x #", "'a' b", "...", "'a'#b", "a:", ":a", "-a", "-.", "'a''",
    '"a" x', "a::b", "a\\b", "~x", "- ", "-  #", "'",
]  # fmt: skip
SIMPLE_KEYS = ["lr", "save", "a.b", "x-y", "_k", "megatron", "overrides", "role", "name", "K"]
ODD_KEYS = ["on", "null", "1", "yes", "~", "a b", "'q'", "<<", "=", "? k", "lr"]


def _blocks(keys: list[str], scalars: list[str]) -> st.SearchStrategy[Any]:
    """Nested mappings (lists of key/value pairs: a key may repeat) and lists of scalars."""
    leaf = st.sampled_from(scalars)
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(st.tuples(st.sampled_from(keys), inner), min_size=1, max_size=4),
            st.lists(inner, min_size=1, max_size=3).map(tuple),
        ),
        max_leaves=12,
    )


@st.composite
def documents(draw: st.DrawFn, keys: list[str], scalars: list[str]) -> str:
    """A block YAML document with `keys` and `scalars`, formatted in the ways people write:
    indentation widths, spaces after '- ', sequences at their key's column or indented,
    comments, blank lines, trailing spaces."""
    tree = draw(st.lists(st.tuples(st.sampled_from(keys), _blocks(keys, scalars)), min_size=1))
    width = draw(st.integers(1, 4))
    compact = draw(st.booleans())  # a list at its key's column
    decorate = draw(st.booleans())
    lines: list[str] = []

    def tail() -> str:
        if not decorate:
            return ""
        return draw(st.sampled_from(["", "", " ", "  # note", " #", "   "]))

    def extra() -> None:
        if decorate and draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["", "  ", "# comment", "   # indented"])))

    def write(node: Any, column: int, lead: str) -> None:
        """`node` starting at `column`; `lead` is what opens its first line ('- ' or '')."""
        if isinstance(node, list):  # a mapping
            for index, (key, value) in enumerate(node):
                start = lead if index == 0 else " " * len(lead)
                prefix = " " * column + start
                extra()
                if isinstance(value, str):
                    lines.append(f"{prefix}{key}: {value}{tail()}")
                else:
                    lines.append(f"{prefix}{key}:{tail()}")
                    inner = column + len(start)
                    nested = inner if compact and isinstance(value, tuple) else inner + width
                    write(value, nested, "")
        elif isinstance(node, tuple):  # a list
            assert not lead
            for item in node:
                extra()
                dash = "-" + " " * draw(st.integers(1, 3))
                if isinstance(item, str):
                    lines.append(f"{' ' * column}{dash}{item}{tail()}")
                elif isinstance(item, list):
                    write(item, column, dash)
                else:  # a list in a list: on the next line, indented
                    lines.append(f"{' ' * column}-{tail()}")
                    write(item, column + width, "")
        else:
            lines.append(f"{' ' * column}{lead}{node}{tail()}")

    write(tree, draw(st.integers(0, 2)), "")
    end = draw(st.sampled_from(["\n", "", "\n\n"])) if decorate else "\n"
    return "\n".join(lines) + end


def _full(text: str) -> Any:
    """What the composer and the walker read."""
    return yaml_source._parse_nodes(text, "<test>", None, None, "hint")


def _check(text: str) -> bool:
    """Assert that `read_simple` declines `text` or reads it as the full reader does; True when
    it read it."""
    simple = read_simple(text, LOADER, MAX_NODES, MAX_DEPTH)
    if simple is None:
        return False
    full = _full(text)
    assert full.problems == (), text
    assert not full.unreadable, text
    data, positions, key_positions = simple
    assert repr(data) == repr(full.data), text  # (repr: types, nan and key order compared)
    assert positions == dict(full.positions), text
    assert key_positions == dict(full.key_positions), text
    return True


@settings(max_examples=400, deadline=None)
@given(documents(SIMPLE_KEYS, SIMPLE_SCALARS))
def test_simple_documents_are_read_as_the_full_reader_reads_them(text: str) -> None:
    # Every line of these is of the shape, a key twice or a YAML-typed key aside.
    assert _check(text) or _declined_for_a_reason(text)


def _declined_for_a_reason(text: str) -> bool:
    """True when a generated simple document holds what the simple reader rightly declines: a
    key twice in a mapping (the full reader reports it), a list item that is a list, or a
    scalar YAML reads as a type it does not take."""
    full = _full(text)
    return bool(full.problems) or re.search(r"(?m)^ *- *(#.*)?$", text) is not None


@settings(max_examples=600, deadline=None)
@given(documents(SIMPLE_KEYS + ODD_KEYS, SIMPLE_SCALARS + ODD_SCALARS))
def test_odd_documents_are_declined_or_read_exactly(text: str) -> None:
    _check(text)


@settings(max_examples=600, deadline=None)
@given(
    documents(SIMPLE_KEYS, SIMPLE_SCALARS),
    st.lists(
        st.tuples(
            st.integers(0, 10_000), st.sampled_from([" ", "-", ":", "#", "\n", "'", "", "  "])
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_mutated_documents_are_declined_or_read_exactly(
    text: str, edits: list[tuple[int, str]]
) -> None:
    for at, piece in edits:
        at %= len(text) + 1
        text = text[:at] + piece + text[at + (piece == "") :]  # insert, or delete one
    _check(text)


def test_the_bundled_role_file_is_read_by_the_simple_reader() -> None:
    text = (ROOT / "tests" / "fixtures" / "slime_ppo_megatron.yaml").read_text()
    assert _check(text)
    data, positions, key_positions = read_simple(text, LOADER, MAX_NODES, MAX_DEPTH)  # type: ignore[misc]
    assert data["megatron"][0]["overrides"] == {"lr": "1e-5"}  # YAML 1.1: a str
    assert positions[("megatron", 0, "overrides", "lr")] == Position(6, 11)
    assert key_positions[("megatron", 1, "role")] == Position(8, 5)


def test_every_yaml_file_of_the_project_is_declined_or_read_exactly() -> None:
    read = 0
    for path in sorted([*ROOT.glob("tests/**/*.y*ml"), *ROOT.glob("docs/**/*.y*ml")]):
        try:
            text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError:
            continue
        read += _check(text)
    assert read >= 10  # (most of them are of the simple shape)


@pytest.mark.parametrize(
    "text",
    [
        "a:\n  b: 1\n c: 2\n",  # a key between two columns
        "a: 1\n  b: 2\n",  # a line under a scalar: a multi-line scalar, or an error
        "a:\n",  # an empty value
        "a:\nb: 1\n",
        "- a\nb: 1\n",  # a mapping after the document's list
        "a: 1\na: 2\n",  # a key twice
        "a: 1\r\nb: 2\r\n",  # CRLF
        "a:\t1\n",
        "a: 1\n---\nb: 2\n",
        "a: é\n",
        "a: \x07\n",
        "- - a\n",
        "a: &x 1\nb: *x\n",
        "%YAML 1.1\n---\na: 1\n",
        "",
        "# only a comment\n",
        "plain\n",
    ],
)
def test_what_the_simple_reader_declines(text: str) -> None:
    assert read_simple(text, LOADER, MAX_NODES, MAX_DEPTH) is None


def test_a_document_nested_too_deep_is_left_to_the_walker() -> None:
    def nested(depth: int) -> str:
        return "".join(f"{' ' * level}k:\n" for level in range(depth)) + f"{' ' * depth}k: 1\n"

    assert _check(nested(MAX_DEPTH - 1))
    assert read_simple(nested(MAX_DEPTH), LOADER, MAX_NODES, MAX_DEPTH) is None
    assert parse_yaml(nested(MAX_DEPTH)).errors  # the walker's problem, as before


def test_a_document_of_more_values_than_the_limit_is_left_to_the_walker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "a: 1\nb:\n  c: 2\n"  # four values: the document, a, b, c
    assert read_simple(text, LOADER, 4, MAX_DEPTH) is not None
    assert read_simple(text, LOADER, 3, MAX_DEPTH) is None
    monkeypatch.setattr(yaml_source, "MAX_NODES", 3)
    assert "more than 3" in str(parse_yaml(text).errors)


def test_parse_yaml_gives_the_simple_readers_document() -> None:
    text = "a: 1e-5\nb:\n- x\n- 2\n"
    document = parse_yaml(text, source="f.yaml")
    assert document.data == {"a": "1e-5", "b": ["x", 2]}
    assert document == _full(text).__class__(
        "f.yaml",
        *read_simple(text, LOADER, MAX_NODES, MAX_DEPTH),  # type: ignore[misc]
    )


def test_the_loaders_own_resolvers_decide_a_scalars_type(monkeypatch: pytest.MonkeyPatch) -> None:
    # A program may add an implicit resolver to the loader class: both readers follow it.
    resolvers = {key: list(value) for key, value in LOADER.yaml_implicit_resolvers.items()}
    resolvers.setdefault("z", []).insert(0, ("tag:yaml.org,2002:null", re.compile("^zzz$")))
    monkeypatch.setattr(LOADER, "yaml_implicit_resolvers", resolvers)
    text = "a: zzz\nb: zz\n"
    assert _check(text)
    assert parse_yaml(text).data == {"a": None, "b": "zz"}


def test_a_loader_with_path_resolvers_reads_every_document(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LOADER, "yaml_path_resolvers", {(("x",), str): "tag:yaml.org,2002:str"})
    assert read_simple("a: 1\n", LOADER, MAX_NODES, MAX_DEPTH) is None
