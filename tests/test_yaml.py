"""Tests of the YAML source: positions, refusals, file errors, and the role-file contract."""

from __future__ import annotations

import codecs
import datetime
import hashlib
import json
import os
import re
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import layerconf.presets.role_file as role_file_module
import layerconf.sources.files as files_module
import layerconf.sources.yaml as yaml_source
from layerconf import ConfigError, Layer, Origin
from layerconf.presets.role_file import RoleFile
from layerconf.presets.slime import check_role_file, read_role_file
from layerconf.sources._yaml_walk import bounded_loader
from layerconf.sources.yaml import (
    MAX_DEPTH,
    MAX_NODES,
    Position,
    YamlPath,
    check_yaml,
    load_yaml,
    parse_yaml,
)

HERE = Path(__file__).parent
BAD = HERE / "bad_role_files"
FIXTURE = HERE / "fixtures" / "slime_ppo_megatron.yaml"
EXPECTED: dict[str, list[str]] = {
    name: value
    for name, value in json.loads((BAD / "expected.json").read_text()).items()
    if not name.startswith("_")
}
LOADERS = {"libyaml": yaml.CSafeLoader, "pure-python": yaml.SafeLoader}
if not yaml.__with_libyaml__:  # pragma: no cover - PyYAML built without libyaml
    del LOADERS["libyaml"]
BOUNDED = {name: bounded_loader(base) for name, base in LOADERS.items()}


@pytest.fixture(params=sorted(LOADERS))
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once with each YAML loader the reader may use."""
    monkeypatch.setattr(yaml_source, "_LOADER", LOADERS[request.param])
    monkeypatch.setattr(yaml_source, "_BOUNDED_LOADER", BOUNDED[request.param])
    return str(request.param)


def write(directory: Path, text: str, name: str = "role.yaml") -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def located(problem: Any) -> str:
    """``line:col: severity: message`` with ``-`` for an unknown position."""
    line = "-" if problem.line is None else problem.line
    column = "-" if problem.column is None else problem.column
    return f"{line}:{column}: {problem.severity}: {problem.message}"


def all_paths(value: Any, path: YamlPath = ()) -> Iterator[YamlPath]:
    """Every path of `value`: the root, mapping entries and list items."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from all_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from all_paths(item, (*path, index))


def entry_paths(value: Any, path: YamlPath = ()) -> Iterator[YamlPath]:
    """The paths of the mapping entries of `value` (those that have a key)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from entry_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from entry_paths(item, (*path, index))


class TestPositions:
    """The reader records the 1-based line and column of every key and every value."""

    def test_block_mapping(self) -> None:
        """Keys point at their first character, values at the start of their token."""
        document = parse_yaml("a: 1\nb:\n  c: 'x'\n  d: [1, 2]\n")
        assert document.key_positions == {
            ("a",): (1, 1),
            ("b",): (2, 1),
            ("b", "c"): (3, 3),
            ("b", "d"): (4, 3),
        }
        assert document.positions == {
            (): (1, 1),
            ("a",): (1, 4),
            ("b",): (3, 3),  # a block mapping starts at its first key
            ("b", "c"): (3, 6),  # the opening quote
            ("b", "d"): (4, 6),
            ("b", "d", 0): (4, 7),
            ("b", "d", 1): (4, 10),
        }

    def test_positions_are_named(self) -> None:
        """A position is a (line, column) named tuple."""
        position = parse_yaml("a: 1\n").positions[("a",)]
        assert isinstance(position, Position)
        assert (position.line, position.column) == (1, 4)

    def test_columns_count_characters(self) -> None:
        """Columns count characters, not bytes, so non-ASCII text does not shift them."""
        document = parse_yaml("name: café\nlr: 1\n")
        assert document.positions[("lr",)] == (2, 5)
        assert parse_yaml("é: 1\n").positions[("é",)] == (1, 4)

    def test_crlf_line_ends(self) -> None:
        """Windows line ends count as one line break."""
        document = parse_yaml("a: 1\r\nb: 2\r\n")
        assert document.positions[("b",)] == (2, 4)

    def test_aliases_get_the_anchor_position(self) -> None:
        """Every path an alias reaches gets its own entry, pointing where the value is written."""
        document = parse_yaml("a: &x {b: 1}\nc: *x\n")
        assert document.positions[("c", "b")] == document.positions[("a", "b")] == (1, 11)
        assert document.data == {"a": {"b": 1}, "c": {"b": 1}}
        assert document.data["a"] is not document.data["c"]  # expanded, never shared

    @given(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=6),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=6), inner, max_size=3)
            ),
            max_leaves=15,
        )
    )
    def test_every_path_has_a_position(self, data: Any) -> None:
        """Positions cover exactly the paths of the data, keys exactly its mapping entries."""
        document = parse_yaml(yaml.safe_dump(data))
        assert set(document.positions) == set(all_paths(document.data))
        assert set(document.key_positions) == set(entry_paths(document.data))


class TestSafeLoadCompatibility:
    """Values are exactly what ``yaml.safe_load`` builds from the same text."""

    def test_yaml_11_scalars(self) -> None:
        """YAML 1.1 resolution, quirks included: ``1e-5`` stays a string."""
        text = (
            "a: 1e-5\nb: 1.0e-5\nc: 0x1f\nd: 1_000\ne: 1:30\nf: yes\ng: off\nh: ~\n"
            "i: .inf\nj: 2024-01-02\nk: 2024-01-02 03:04:05\nl: !!binary aGk=\nm: !!str 1\n"
            "n: '1'\no: ''\np: !!float 1\n"
        )
        document = parse_yaml(text)
        assert document.errors == ()
        # (1:30 reads as 90, which its writer may not mean: a warning, TestNumberForms)
        assert [(p.line, p.severity) for p in document.problems] == [(5, "warning")]
        assert document.data == yaml.safe_load(text)
        assert document.data["a"] == "1e-5"
        assert parse_yaml("=: 1\n").data == yaml.safe_load("=: 1\n") == {"=": 1}
        assert document.data["j"] == datetime.date(2024, 1, 2)

    def test_real_fixture(self) -> None:
        """The real slime role file reads as slime reads it."""
        assert load_yaml(FIXTURE).data == yaml.safe_load(FIXTURE.read_text())

    @given(
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats(allow_nan=False)
            | st.text(max_size=10),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(st.text(max_size=8), inner, max_size=4)
            ),
            max_leaves=25,
        )
    )
    def test_random_documents(self, data: Any) -> None:
        """Any dumped document reads back equal to ``yaml.safe_load``'s reading."""
        text = yaml.safe_dump(data)
        document = parse_yaml(text)
        assert document.problems == ()
        assert document.data == yaml.safe_load(text)

    # Every place a tab or a byte order mark can be: plain, quoted and block scalars, flow
    # collections, comments, line breaks of every kind.
    _MISREAD_DOCUMENT = (
        "megatron:\n  - name: default\n    role: actor\n    overrides:\n      lr: 1e-6\n"
        "      save: /ckpt/a # c\n      betas: [0.9,\n        0.95]\n      m: {a: 1, b: 2}\r\n"
        "      s: 'x\n        y'\n      d: \"q z\"\r      blk: |2 # h\n        one\n"
        "         two\n      f: >-\n        folded\n# full line\n      e: x#y\n"
        "      t: &a 'q'\n      u: !!str \"w\"\n"
    )

    @pytest.mark.parametrize("node", ["&x\t'1e-5'", '!!str\t"d"', "&x !!str\t'd'"])
    def test_a_tab_after_an_anchor_or_a_tag(self, node: str) -> None:
        """libyaml's quoted scalar starts at its anchor or tag: the tab before the quote is
        still found, as PyYAML refuses it."""
        text = f"megatron:\n  - role: actor\n    overrides:\n      lr: {node}\n"
        with pytest.raises(yaml.YAMLError):
            yaml.safe_load(text)
        [problem] = parse_yaml(text).problems
        assert (problem.line, problem.column) == (4, 11 + node.index("\t"))

    @given(
        st.lists(
            st.tuples(st.integers(0, len(_MISREAD_DOCUMENT)), st.sampled_from(["\t", "\ufeff"])),
            min_size=1,
            max_size=3,
        )
    )
    @settings(max_examples=300)
    def test_tabs_and_byte_order_marks_as_safe_load_reads_them(
        self, inserted: list[tuple[int, str]]
    ) -> None:
        """A document with tabs or byte order marks is read only if ``yaml.safe_load`` reads it,
        to its data; a tab it refuses is refused where PyYAML stops. (libyaml reads more: a tab
        between tokens, ``lr:<tab>1e-6``; it drops a byte order mark that starts a line, which
        PyYAML keeps. It also refuses a few tabs PyYAML reads, in a block scalar's
        indentation.)"""
        text = self._MISREAD_DOCUMENT
        for index, character in sorted(inserted, reverse=True):
            text = text[:index] + character + text[index:]
        document = parse_yaml(text)
        try:
            data, refused = yaml.safe_load(text), None
        except yaml.YAMLError as error:
            data, refused = None, error
        if refused is None:
            if not document.problems:
                assert document.data == data
            return
        assert document.data is None, str(refused)
        [problem] = document.problems
        if "'\\t'" in problem.message:
            mark = refused.problem_mark  # type: ignore[attr-defined]
            assert problem.line == mark.line + 1
            if "\ufeff" not in text:  # (PyYAML counts no column for a byte order mark)
                assert problem.column == mark.column + 1

    def test_loaders_agree(self, loader: str) -> None:
        """libyaml and the pure-Python loader give the same data and positions."""
        document = parse_yaml(FIXTURE.read_text())
        assert document.data == yaml.safe_load(FIXTURE.read_text())
        assert document.positions[("megatron", 0, "overrides", "lr")] == (6, 11)


class TestMergeKeys:
    """Merge keys (``<<``) work as in ``yaml.safe_load``; merged values keep their own positions."""

    TEXT = (
        "base: &base {lr: 1e-5, save: /ckpt}\n"
        "more: &more {seed: 1, tp: 2}\n"
        "one:\n  <<: *base\n  save: /other\n"
        "two:\n  <<: [*more, *base]\n"
        "nested:\n  <<: {<<: *base, seed: 3}\n"
    )

    def test_same_values_as_safe_load(self) -> None:
        """A mapping's own keys win over merged ones; merges nest."""
        document = parse_yaml(self.TEXT)
        assert document.problems == ()
        assert document.data == yaml.safe_load(self.TEXT)
        assert document.data["one"] == {"lr": "1e-5", "save": "/other"}
        assert document.data["two"] == {"seed": 1, "tp": 2, "lr": "1e-5", "save": "/ckpt"}

    def test_merged_positions(self) -> None:
        """A merged value points into the anchored mapping; an own value where it is written."""
        document = parse_yaml(self.TEXT)
        assert document.positions[("one", "lr")] == (1, 18)
        assert document.positions[("one", "save")] == (5, 9)
        assert document.positions[("two", "seed")] == (2, 20)
        assert document.key_positions[("two", "save")] == (1, 24)
        assert set(document.positions) == set(all_paths(document.data))
        assert set(document.key_positions) == set(entry_paths(document.data))

    def test_conflicting_merged_mappings(self) -> None:
        """Two merged mappings setting one key is an error: PyYAML versions disagree on it."""
        text = "a: &a {lr: 1}\nb: &b {lr: 2}\nc:\n  <<: [*a, *b]\n"
        assert [located(p) for p in parse_yaml(text).problems] == [
            "4:3: error: two merged mappings set 'lr', at line 1 and line 2; "
            "YAML readers disagree on which one wins"
        ]

    @pytest.mark.parametrize(
        "merge", ["<<: [*a, *b]\n  lr: 3", "<<: [*a, *a]", "<<: *a", "<<: [*b, *c]"]
    )
    def test_unambiguous_merges(self, merge: str) -> None:
        """Own keys settle a conflict; merging one mapping twice is no conflict."""
        text = f"a: &a {{lr: 1}}\nb: &b {{lr: 2}}\nc: &c {{<<: *b}}\nd:\n  {merge}\n"
        document = parse_yaml(text)  # (c merges b: both give b's own 'lr')
        assert document.problems == ()
        assert document.data == yaml.safe_load(text)

    def test_duplicate_merge_key(self) -> None:
        """Two ``<<`` keys in one mapping are reported (PyYAML would merge both silently)."""
        document = parse_yaml("a: &a {x: 1}\nb: &b {y: 2}\nc:\n  <<: *a\n  <<: *b\n")
        assert [located(p) for p in document.problems] == [
            "5:3: error: duplicate merge key '<<' in this mapping"
        ]

    def test_duplicate_inside_an_inline_merge(self) -> None:
        """A duplicate key of a mapping written inside a merge is reported too."""
        document = parse_yaml("a:\n  <<: {x: 1, x: 2}\n")
        assert [p.column for p in document.problems] == [14]


class TestRefusals:
    """Input that is not plain, bounded, single-document YAML is refused at its position."""

    def test_python_tags_are_never_executed(self, tmp_path: Path) -> None:
        """A Python tag is an error at its position, and nothing runs."""
        marker = tmp_path / "ran"
        text = f"a: !!python/object/apply:os.system ['touch {marker}']\n"
        document = parse_yaml(text)
        assert [located(p) for p in document.problems] == [
            "1:4: error: the Python tag '!!python/object/apply:os.system' is not allowed: "
            "only plain YAML is allowed, no Python objects"
        ]
        assert document.data == {"a": None}
        assert document.unreadable == {("a",)}
        assert not marker.exists()

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("a: !foo x\n", "1:4: error: unknown tag '!foo'"),
            ("a: !!set {x}\n", "1:4: error: the tag '!!set' is not supported"),
            ("a: !!omap [x: 1]\n", "1:4: error: the tag '!!omap' is not supported"),
            ("a: !!int abc\n", "1:4: error: 'abc' cannot be read as !!int"),
            ("a: !!str {x: 1}\n", "1:4: error: the tag '!!str' cannot be used on a mapping"),
            ("a: <<\n", "1:4: error: a plain '<<' is a YAML 1.1 key indicator"),
            ("a: =\n", "1:4: error: a plain '=' is a YAML 1.1 key indicator"),
            ("!!python/name:os.system : 1\n", "1:1: error: the Python tag"),
            ("[1, 2]: 3\n", "1:1: error: a mapping key must be a scalar, not a list"),
        ],
    )
    def test_tags_and_keys(self, text: str, message: str) -> None:
        """Tags that are not plain YAML and keys that are not scalars are errors."""
        assert [located(p)[: len(message)] for p in parse_yaml(text).problems] == [message]

    def test_duplicate_keys_name_both_lines(self) -> None:
        """A duplicate key is reported at the second occurrence, naming the first."""
        document = parse_yaml("x:\n  lr: 1\n  seed: 2\n  lr: 3\n")
        assert [located(p) for p in document.problems] == [
            "4:3: error: duplicate key 'lr': first at line 2, column 3; "
            "YAML would silently keep only this last one"
        ]
        assert document.data == yaml.safe_load("x:\n  lr: 1\n  seed: 2\n  lr: 3\n")

    def test_keys_equal_after_resolution_are_duplicates(self) -> None:
        """``1`` and ``true`` are one dict key in Python, so they are duplicates here too."""
        problems = parse_yaml("1: a\ntrue: b\n").problems
        assert [p.line for p in problems] == [2]

    def test_billion_laughs(self) -> None:
        """An alias bomb is refused (its rejection time is measured in the benchmark)."""
        with pytest.raises(ConfigError, match="more than 100,000 values") as caught:
            read_role_file(BAD / "billion_laughs.yaml")
        assert len(caught.value.problems) == 1

    def test_node_bound_is_adjustable(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The bound counts every value built, aliases expanded."""
        monkeypatch.setattr(yaml_source, "MAX_NODES", 5)
        assert parse_yaml("[1, 2, 3, 4]\n").problems == ()
        assert parse_yaml("a: &a [1, 2]\nb: *a\n").problems != ()

    def test_merge_bombs_are_bounded(self) -> None:
        """Merge keys count towards the bound too: merging cannot multiply work unseen."""
        lines = ["a0: &a0 {k: v}"]
        lines += [f"a{i}: &a{i} {{<<: [{', '.join([f'*a{i - 1}'] * 10)}]}}" for i in range(1, 8)]
        assert "more than 100,000" in parse_yaml("\n".join(lines) + "\n").problems[0].message

    @pytest.mark.parametrize(
        "text", ["a: &a [*a]\n", "a: &a {b: *a}\n", "a: &a {<<: *a}\n", "a: &a {b: {<<: *a}}\n"]
    )
    def test_recursive_aliases(self, text: str) -> None:
        """A value that contains itself is refused (it would be infinite)."""
        document = parse_yaml(text)
        assert document.data is None
        assert "infinite" in document.problems[0].message

    def test_depth_bound(self, loader: str) -> None:
        """Nesting deeper than MAX_DEPTH is refused; MAX_DEPTH itself is fine."""
        ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
        assert parse_yaml(ok).problems == ()
        deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
        assert [located(p) for p in parse_yaml(deep).problems] == [
            f"1:{MAX_DEPTH + 1}: error: the document nests mappings and lists more than "
            f"{MAX_DEPTH} levels deep (the limit layerconf.sources.yaml.MAX_DEPTH)"
        ]

    def test_nesting_past_the_parsers(self, loader: str) -> None:
        """Nesting too deep for the parser itself is a located problem, not a crash."""
        problems = parse_yaml("a: " + "[" * 5000 + "]" * 5000 + "\n").problems
        assert len(problems) == 1
        assert problems[0].severity == "error"
        assert "nest" in (problems[0].hint or "")

    def test_control_character_after_non_ascii(self, loader: str) -> None:
        """A refused character is located in characters (libyaml itself counts bytes)."""
        [problem] = parse_yaml("name: café\nsave: /ckpt/\x00x\n").problems
        assert located(problem) == "2:13: error: character U+0000 is not allowed in YAML"

    def test_multiple_documents(self) -> None:
        """A second document is an error where it starts."""
        document = parse_yaml("--- \na: 1\n...\n---\nb: 2\n")
        assert [located(p)[:6] for p in document.problems] == ["4:1: e"]
        assert parse_yaml("---\na: 1\n...\n").problems == ()

    def test_syntax_error_at_pyyaml_mark(self, loader: str) -> None:
        """A syntax error is located at PyYAML's problem mark, converted to 1-based."""
        with pytest.raises(yaml.MarkedYAMLError) as caught:
            yaml.compose("a: [1, 2\nb: 3\n", Loader=yaml_source._LOADER)
        mark = caught.value.problem_mark
        assert mark is not None
        expected = (mark.line + 1, mark.column + 1)
        problem_text = str(caught.value.problem)
        [problem] = parse_yaml("a: [1, 2\nb: 3\n").problems
        assert (problem.line, problem.column) == expected
        assert problem.message.startswith(f"invalid YAML: {problem_text}")

    @pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
    def test_empty_document(self, text: str) -> None:
        """No document is a problem of the whole file (no line)."""
        document = parse_yaml(text, source="x.yaml")
        assert [str(p) for p in document.problems] == [
            "x.yaml: error: the file holds no YAML document: it is empty or only comments "
            "(write the YAML document, or do not pass this file)"
        ]
        assert document.unreadable == {()}


class TestNumbersTooLarge:
    """Numbers no configuration holds are one located problem each, never an exception."""

    @pytest.mark.parametrize(
        ("value", "message"),
        [
            ("59:" * 300 + "59.5", "cannot be read as !!float: it is too large"),
            ("59:" * 2000 + "59", "cannot be read as !!int: a number of 6,002 characters"),
            ("9" * 4301, "cannot be read as !!int: a number of 4,301 characters"),
            ("1" * 4301 + ".5", "cannot be read as !!float: a number of 4,303 characters"),
        ],
    )
    def test_refused_where_written(self, loader: str, value: str, message: str) -> None:
        """Each is refused at its line and column, with every other problem of the file."""
        document = parse_yaml(f"a: 1\nlr: {value}\nb: !!int x\n")
        assert [(p.line, p.column) for p in document.problems] == [(2, 5), (3, 4)]
        assert message in document.problems[0].message
        assert len(document.problems[0].message) < 200  # the value is shortened

    def test_role_file(self, tmp_path: Path) -> None:
        """read_role_file raises ConfigError (not OverflowError) listing every problem."""
        text = f"megatron:\n  - role: actor\n    overrides: {{lr: {'59:' * 300}59.5, x: !!int y}}\n"
        with pytest.raises(ConfigError) as caught:
            read_role_file(write(tmp_path, text))
        assert [(p.line, p.column) for p in caught.value.problems] == [(3, 21), (3, 930)]

    def test_the_longest_number_read(self) -> None:
        """An int of 4,300 digits is read, as Python reads it."""
        assert parse_yaml(f"seed: {'9' * 4300}\n").data == {"seed": int("9" * 4300)}


class TestNumberForms:
    """A plain number in a form its writer may not mean (YAML 1.1 reads ``010`` as 8, ``1:30``
    as 90, ``2024_01_05`` as 20240105; a YAML 1.2 reader otherwise) is read as PyYAML reads it,
    with a warning at its line and column saying what it became and how to keep the text."""

    @pytest.mark.parametrize(
        ("text", "value", "words"),
        [
            ("010", 8, "with a leading 0 as octal"),
            ("-0712", -458, "with a leading 0 as octal"),
            ("0_10", 8, "with a leading 0 as octal"),
            ("1:30", 90, "with ':' in base 60"),
            ("1:30.5", 90.5, "with ':' in base 60"),
            ("0b101", 5, "'0b' as a binary number"),
            ("2024_01_05", 20240105, "ignores '_' in a number"),
            ("1_0.5", 10.5, "ignores '_' in a number"),
            ("1000_000", 1000000, "ignores '_' in a number"),
        ],
    )
    def test_warned_where_written(self, loader: str, text: str, value: Any, words: str) -> None:
        for document_text, line, column in (
            (f"a: 1\nsave: {text}\n", 2, 7),  # the plain block shape
            (f"a: [1, {text}]\n", 1, 8),  # a flow list: composed
        ):
            document = parse_yaml(document_text)
            assert document.data == yaml.safe_load(document_text)
            (problem,) = document.problems
            assert (problem.line, problem.column, problem.severity) == (line, column, "warning")
            assert words in problem.message
            assert f"{text!r} is read as the {type(value).__name__} {value!r}" in problem.message
            assert f"quote it, '{text}', to keep the text" in problem.hint

    @pytest.mark.parametrize(
        "text",
        [
            "10",
            "0",
            "07",
            "-07",
            "00",
            "0x1F",
            "1_000_000",
            "12_345.5",
            "-1_000",
            "1.5",
            "1e-5",
            "'010'",
            '"1:30"',
            "09",
            ".5",
            "0.5",
            "0o17",
        ],
    )
    def test_forms_read_as_written_are_not(self, loader: str, text: str) -> None:
        """A number that reads as it shows (digits grouped by three, '07', a hex number), a
        quoted one, or text YAML 1.1 keeps as text, is no warning."""
        assert parse_yaml(f"a: 1\nsave: {text}\n").problems == ()

    def test_a_long_number_keeps_the_message_short(self) -> None:
        """A number of thousands of digits is described, not written out."""
        for text in (
            "0" + "7" * 4299,
            "0b" + "1" * 4298,
            "1_" * 2149 + "1",
            "1:" + "59:" * 1432 + "5",
        ):
            (problem,) = parse_yaml(f"a: {text}\n").problems
            assert len(str(problem)) < 300
            assert " is read as an int of " in problem.message

    def test_review_cases(self, loader: str) -> None:
        """A hex number with a '_' past Python's digit limit is described (its decimal text
        raised ValueError); '0_7' offers 7 once; a negative number's digits exclude the sign."""
        (problem,) = parse_yaml("a: 0x" + "F" * 4000 + "_F\n").problems
        assert " is read as an int of about 4,818 digits" in problem.message
        (problem,) = parse_yaml("a: 0_7\n").problems
        assert problem.hint == "write 7 for the number, or quote it, '0_7', to keep the text"

    def test_octal_hint_names_both_numbers(self) -> None:
        (problem,) = parse_yaml("seed: 010\n").problems
        assert problem.hint == (
            "write 8 for this number or 10 for the decimal one, or quote it, '010', to keep "
            "the text"
        )

    def test_a_secret_is_not_repeated(self, loader: str) -> None:
        """A credential's value (an API key of digits with a leading 0) is never quoted."""
        for text in ("wandb_key: 0123456\n", "x: {hf_token: 0123456}\n", "wandb_key: 1:2:3\n"):
            (problem,) = parse_yaml(text).problems
            assert "123" not in str(problem)
            assert "42798" not in str(problem)
            assert problem.message.startswith("the value is read as ")

    def test_role_file_warns_and_resolves_as_slime(self, tmp_path: Path) -> None:
        """A role file reads on (a warning is no error), with slime's value."""
        path = write(tmp_path, "megatron:\n  - role: critic\n    overrides:\n      seed: 010\n")
        role_file = read_role_file(path)
        assert role_file.layers["critic"].values == {"seed": 8}
        assert [(p.line, p.column, p.severity) for p in role_file.problems] == [(4, 13, "warning")]

    @given(
        st.from_regex(r"\A[-+]?[0-9_:.]{1,12}\Z")
        | st.from_regex(r"\A[-+]?0[bx][0-9a-fA-F_]{1,8}\Z")
    )
    @settings(max_examples=300, deadline=None)
    def test_values_are_safe_loads(self, text: str) -> None:
        """Whatever the form, the value is safe_load's, and only a number is ever warned of."""
        document_text = f"k: {text}\n"
        try:
            expected = yaml.safe_load(document_text)
        except (yaml.YAMLError, ValueError, OverflowError):
            return
        document = parse_yaml(document_text)
        if document.errors:
            return
        assert document.data == expected
        if document.problems:
            assert type(expected["k"]) in (int, float)


class TestNodeLimitWhileComposing:
    """A document with too many nodes stops being read where the limit is reached."""

    @staticmethod
    def long_list(items: int) -> str:
        return "lr: [" + ",".join(["0"] * items) + "]\n"

    def test_alias_free_file_names_the_limit_and_where(self, loader: str) -> None:
        """No alias is blamed: the message names MAX_NODES at the first node past it."""
        [problem] = parse_yaml(self.long_list(MAX_NODES + 50), source="big.yaml").problems
        # nodes: the root mapping, the key 'lr', the list, then its items one by one
        past = MAX_NODES + 1 - 3 - 1  # the index of the item that is one node too many
        assert (problem.line, problem.column) == (1, len("lr: [") + 2 * past + 1)
        assert "MAX_NODES" in problem.message
        assert "alias" not in problem.message + (problem.hint or "")

    def test_exactly_the_limit_is_read(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A document of MAX_NODES nodes (keys included) is read, one more is refused."""
        monkeypatch.setattr(yaml_source, "MAX_NODES", 53)
        monkeypatch.setattr(yaml_source, "_C_COMPOSE_BELOW", 0)
        assert parse_yaml(self.long_list(50)).problems == ()
        [problem] = parse_yaml(self.long_list(51)).problems
        assert "more than 53 YAML nodes" in problem.message

    @pytest.mark.parametrize("item", ["a", "? ", "[]", "-"])
    def test_short_texts_cannot_reach_the_limit(self, item: str) -> None:
        """What libyaml composes alone (the densest texts) holds fewer than MAX_NODES nodes."""
        below = yaml_source._C_COMPOSE_BELOW
        text = "{" + ",".join([item] * (below // (len(item) + 1) - 1)) + "}"
        assert len(text) < below
        root = yaml.compose(text, Loader=yaml.CSafeLoader)
        nodes = 1 + sum(1 + (1 if v.value == "" else 1 + len(v.value)) for _, v in root.value)
        assert below * 3 // 2 < MAX_NODES
        assert nodes <= below * 3 // 2

    def test_memory_is_bounded_by_the_limit(self) -> None:
        """Refusing a 2 MB alias-free list builds at most MAX_NODES nodes, not a million."""
        text = self.long_list(1_000_000)
        tracemalloc.start()
        try:
            [problem] = parse_yaml(text).problems
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert "MAX_NODES" in problem.message
        assert peak < 100 * 1024 * 1024  # about 300 bytes a node: 300 MB before the limit

    def test_depth_on_the_counting_path(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The counting composer refuses deep nesting where it starts, naming MAX_DEPTH."""
        monkeypatch.setattr(yaml_source, "_C_COMPOSE_BELOW", 0)
        [problem] = parse_yaml("a:\n  b: " + "[" * 120 + "]" * 120 + "\n").problems
        assert (problem.line, problem.column) == (2, 6 + MAX_DEPTH - 2)
        assert "MAX_DEPTH" in problem.message

    def test_the_same_data_on_both_paths(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The counting composer builds what libyaml's does: data, positions and problems."""
        text = FIXTURE.read_text() + "x: &a {b: [1, 2]}\ny: *a\nz: {<<: *a, c: !!int 3}\n"
        fast = parse_yaml(text)
        monkeypatch.setattr(yaml_source, "_C_COMPOSE_BELOW", 0)
        counted = parse_yaml(text)
        assert (counted.data, counted.positions, counted.key_positions) == (
            fast.data,
            fast.positions,
            fast.key_positions,
        )
        assert counted.problems == fast.problems


class TestEditorLines:
    """Lines are counted as editors and grep -n count them: NEL, U+2028, U+2029 break none."""

    TEXT = (
        "a: 'one\u2028two\x85three'  # a comment ending in a separator\u2029\n"
        'b: "\u2029"\r\n'
        "c: [1, 2]\n"
        "c: 3\n"
    )

    @staticmethod
    def grep_line(text: str, needle: str) -> int:
        """The 1-based line `grep -n` gives the first line holding `needle`."""
        lines = re.split("\r\n|\r|\n", text)
        return next(number for number, line in enumerate(lines, 1) if needle in line)

    def test_positions(self, loader: str) -> None:
        """Keys and values after those characters are on the editor's line and column."""
        document = parse_yaml(self.TEXT)
        c_line = self.grep_line(self.TEXT, "c: [1, 2]")
        assert document.key_positions[("b",)] == (2, 1)
        assert document.positions[("b",)] == (2, 4)
        assert document.positions[("c", 1)] == (c_line, 8)
        [duplicate] = document.problems
        assert (duplicate.line, duplicate.column) == (c_line + 1, 1)
        assert f"first at line {c_line}, column 1" in duplicate.message

    def test_errors(self, loader: str) -> None:
        """A syntax error and a refused character after them are on the editor's line."""
        [syntax] = parse_yaml(self.TEXT + "d: [1, 2\n").problems
        assert syntax.line == self.grep_line(self.TEXT, "c: 3") + 2
        [control] = parse_yaml(self.TEXT + "e: '\x01'\n").problems
        assert (control.line, control.column) == (self.grep_line(self.TEXT, "c: 3") + 1, 5)

    def test_a_lone_carriage_return_breaks_a_line(self, tmp_path: Path) -> None:
        """A bare \\r ends a line for editors, also where the bytes are not UTF-8."""
        path = tmp_path / "role.yaml"
        path.write_bytes(b"a: 1\rb: 2\rc: '\xff'\n")
        [problem] = check_yaml(path).problems
        assert (problem.line, problem.column) == (3, 5)

    def test_role_file_problems(self, tmp_path: Path) -> None:
        """A role file's own problems use the editor's lines too."""
        text = "# actor and critic \x85\nmegatron:\n  - name: 'a\u2028b'\n    colour: red\n"
        path = write(tmp_path, text)
        [problem] = [p for p in check_role_file(path).problems if "colour" in p.message]
        assert problem.line == self.grep_line(text, "colour")


class TestFiles:
    """Reading the file: once, as UTF-8, with a problem for every way it can fail."""

    def test_sha256_and_source(self, tmp_path: Path) -> None:
        """The digest is of the file's bytes; the source is the path as given."""
        path = write(tmp_path, "a: 1\n")
        document = load_yaml(path)
        assert document.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert document.source == str(path)

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing file is a problem naming the path, with the directory it was read from."""
        path = tmp_path / "nope.yaml"
        [problem] = check_yaml(path, layer="role-config").problems
        assert (problem.source, problem.line, problem.layer) == (str(path), None, "role-config")
        assert problem.message == "file not found"
        assert os.getcwd() in (problem.hint or "")
        with pytest.raises(ConfigError, match=r"nope\.yaml: error: file not found"):
            load_yaml(path)

    def test_directory(self, tmp_path: Path) -> None:
        """A directory is refused with a hint to name the file inside it."""
        [problem] = check_yaml(tmp_path).problems
        assert problem.message == "is a directory, not a file"

    @pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
    def test_unreadable_file(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A file that cannot be opened is a problem, not a traceback."""
        path = write(tmp_path, "a: 1\n")

        def refuse(*args: object, **kwargs: object) -> object:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(yaml_source.os, "open", refuse)
        [problem] = check_yaml(path).problems
        assert problem.message == "cannot be read: permission denied"

    def test_too_large(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A file past MAX_BYTES is refused without being read whole."""
        monkeypatch.setattr(yaml_source, "MAX_BYTES", 8)
        [problem] = check_yaml(write(tmp_path, "a: 123456789\n")).problems
        assert "larger than" in problem.message

    def test_a_small_file_is_read_without_a_large_buffer(self, tmp_path: Path) -> None:
        """Reading asks for the file's size (and a byte more), never for MAX_BYTES."""
        path = write(tmp_path, "a: 1\n")
        yaml_source.read_yaml_bytes(path)  # warm: first-call allocations are not ours
        tracemalloc.start()
        try:
            data = yaml_source.read_yaml_bytes(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert data == b"a: 1\n"
        assert peak < 64 * 1024 < yaml_source.MAX_BYTES

    @pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
    def test_a_fifo_nothing_writes_to_is_refused_in_bounded_time(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A FIFO without a writer never hangs the reader: refused after PIPE_WAIT."""
        monkeypatch.setattr(files_module, "PIPE_WAIT", 0.2)
        fifo = tmp_path / "roles.yaml"
        os.mkfifo(fifo)
        started = time.monotonic()
        [problem] = check_role_file(fifo).problems
        assert time.monotonic() - started < 5
        assert problem.message == (
            "is a pipe or FIFO that nothing was written to (or finished) within 0.2 seconds"
        )

    @pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
    def test_a_device_is_refused_without_reading(self, device: str) -> None:
        """/dev/zero would never end, a terminal would wait: a device is refused at once."""
        if not Path(device).exists():
            pytest.skip(f"no {device}")
        [problem] = check_yaml(device).problems
        assert problem.message == "is a character device, not a file"

    @pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="needs /dev/fd")
    def test_file_without_a_size(self) -> None:
        """A pipe (size 0 to fstat) is read up to the bound."""
        read_end, write_end = os.pipe()
        os.write(write_end, b"a: 1\n")
        os.close(write_end)
        try:
            assert check_yaml(f"/dev/fd/{read_end}").data == {"a": 1}
        finally:
            os.close(read_end)

    def test_a_byte_order_mark_inside_is_refused(self, tmp_path: Path, loader: str) -> None:
        """A byte order mark starting a later line (files joined with cat) is no second BOM:
        ``yaml.safe_load`` reads the key '\\ufeffmegatron', so slime finds no 'megatron' list;
        libyaml would drop it and read the file as if it were not there."""
        text = "# PPO roles\n\ufeffmegatron:\n  - role: critic\n    overrides:\n      lr: 1e-5\n"
        [problem] = check_role_file(write(tmp_path, text)).problems
        assert (problem.line, problem.column, problem.severity) == (2, 1, "error")
        if loader == "libyaml":
            assert problem.message.startswith("a byte order mark (U+FEFF) starts this line")
        else:
            assert problem.message.startswith("unknown top-level key '\\ufeffmegatron'")
        [twice] = parse_yaml("\ufeff\ufeffmegatron: []\n").problems  # (safe_load keeps one)
        assert (twice.line, twice.column) == (1, 1)
        assert twice.message.startswith("a byte order mark (U+FEFF) starts this line")

    def test_utf8_bom_accepted(self, tmp_path: Path) -> None:
        """A UTF-8 byte order mark is skipped; columns on line 1 are not shifted."""
        path = tmp_path / "bom.yaml"
        path.write_bytes(b"\xef\xbb\xbfa: 1\n")
        document = load_yaml(path)
        assert document.data == {"a": 1}
        assert document.positions[("a",)] == (1, 4)
        assert document.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()

    def test_latin1(self, tmp_path: Path) -> None:
        """Bytes that are not UTF-8 are located at the first bad byte."""
        path = tmp_path / "latin1.yaml"
        path.write_bytes("a: 1\nname: café\n".encode("latin-1"))
        [problem] = check_yaml(path).problems
        assert located(problem) == "2:10: error: is not UTF-8 text: byte 0xe9 cannot be decoded"
        assert "iconv" in (problem.hint or "")

    @pytest.mark.parametrize(
        ("encoded", "named"),
        [
            (codecs.BOM_UTF16_LE + "a: 1\n".encode("utf-16-le"), "UTF-16"),
            (codecs.BOM_UTF16_BE + "a: 1\n".encode("utf-16-be"), "UTF-16"),
            (codecs.BOM_UTF32_LE + "a: 1\n".encode("utf-32-le"), "UTF-32"),
            (codecs.BOM_UTF32_BE + "a: 1\n".encode("utf-32-be"), "UTF-32"),
        ],
    )
    def test_another_encoding_named_by_its_mark(
        self, encoded: bytes, named: str, tmp_path: Path
    ) -> None:
        """A file that starts with UTF-16's or UTF-32's byte-order mark is said to be in that
        encoding (before: UTF-32's, whose little-endian mark begins as UTF-16's, was UTF-16)."""
        path = tmp_path / "roles.yaml"
        path.write_bytes(encoded)
        [problem] = check_yaml(path).problems
        assert problem.hint == f"it looks like {named}: save it as UTF-8"


class TestRoleFileGood:
    """Valid role files become one layer per role, with the position of every override."""

    def test_real_fixture(self) -> None:
        """slime's PPO role file: values as PyYAML reads them, each at its value's position."""
        role_file = read_role_file(FIXTURE)
        assert isinstance(role_file, RoleFile)
        assert role_file.problems == ()
        assert role_file.roles_missing == ()
        assert role_file.path == str(FIXTURE)
        assert role_file.sha256 == hashlib.sha256(FIXTURE.read_bytes()).hexdigest()
        critic, actor = role_file.layers["critic"], role_file.layers["actor"]
        assert critic.values == {"lr": "1e-5"}  # a string: coercion is another rule's job
        assert actor.values == {"lr": "1e-6"}
        # The fixture starts with an empty line, so 'lr: 1e-5' is line 6 and 'lr: 1e-6' line 10.
        where = f"role-config {FIXTURE}"
        assert critic.origin_at(("lr",)).where == f"{where}:6:11"
        assert actor.origin_at(("lr",)).where == f"{where}:10:11"
        assert critic.origin == Origin(
            "role-config", "file", source=str(FIXTURE), line=3, column=5, label="default"
        )
        assert (critic.name, critic.kind, critic.source) == ("role-config", "file", str(FIXTURE))
        assert list(role_file.layers) == ["actor", "critic"]  # in the order of `roles`

    def test_contract_examples(self, tmp_path: Path) -> None:
        """Every YAML example of the contract reads without a problem."""
        spec = (HERE / "fixtures" / "megatron-config.md").read_text()
        examples = re.findall(r"^```yaml\n(.*?)^```", spec, re.DOTALL | re.MULTILINE)
        assert examples
        for number, text in enumerate(examples):
            role_file = read_role_file(write(tmp_path, text, f"example{number}.yaml"))
            assert role_file.problems == ()
            entries = yaml.safe_load(text)["megatron"]
            assert {entry["role"]: entry["overrides"] for entry in entries} == {
                role: layer.values for role, layer in role_file.layers.items()
            }

    def test_args_alias(self, tmp_path: Path) -> None:
        """``args`` alone is the backward-compatible name of ``overrides``."""
        path = write(tmp_path, "megatron:\n  - role: actor\n    args:\n      lr: 1e-6\n")
        layer = read_role_file(path).layers["actor"]
        assert layer.values == {"lr": "1e-6"}
        assert layer.origin_at(("lr",)).line == 4

    def test_one_role(self, tmp_path: Path) -> None:
        """A role without an entry is listed in roles_missing and has no layer."""
        path = write(tmp_path, "megatron:\n  - role: critic\n    overrides: {lr: 1e-5}\n")
        role_file = read_role_file(path)
        assert list(role_file.layers) == ["critic"]
        assert role_file.roles_missing == ("actor",)

    @pytest.mark.parametrize("overrides", ["", " null", " ~", " {}"])
    def test_no_overrides(self, tmp_path: Path, overrides: str) -> None:
        """``overrides:`` empty, null or ``{}`` means no overrides: an empty layer."""
        path = write(tmp_path, f"megatron:\n  - role: actor\n    overrides:{overrides}\n")
        role_file = read_role_file(path)
        assert role_file.problems == ()
        assert role_file.layers["actor"].values == {}

    def test_entry_without_overrides(self, tmp_path: Path) -> None:
        """An entry with only a role is valid: that role inherits everything."""
        role_file = read_role_file(write(tmp_path, "megatron:\n  - role: actor\n"))
        assert role_file.layers["actor"].values == {}
        assert role_file.roles_missing == ("critic",)

    def test_name_is_the_label(self, tmp_path: Path) -> None:
        """The entry's ``name`` labels the layer's origin and every override's origin."""
        text = "megatron:\n  - name: warmup\n    role: actor\n    overrides: {lr: 1e-6}\n"
        layer = read_role_file(write(tmp_path, text)).layers["actor"]
        assert layer.origin.label == "warmup"
        assert layer.origin_at(("lr",)).label == "warmup"
        text = "megatron:\n  - role: actor\n    overrides: {lr: 1e-6}\n"
        assert read_role_file(write(tmp_path, text)).layers["actor"].origin.label is None

    def test_nested_overrides(self, tmp_path: Path) -> None:
        """Nested mappings get an origin per leaf and per mapping; a list is one leaf."""
        text = (
            "megatron:\n"
            "  - role: critic\n"
            "    overrides:\n"
            "      optimizer:\n"
            "        betas: [0.9, 0.95]\n"
            "        eps: 1.0e-8\n"
            "      lr: 1e-5\n"
        )
        layer = read_role_file(write(tmp_path, text)).layers["critic"]
        assert layer.values == {"optimizer": {"betas": [0.9, 0.95], "eps": 1e-8}, "lr": "1e-5"}
        positions = {path: (o.line, o.column) for path, o in layer.origins.items()}
        assert positions == {
            ("optimizer",): (5, 9),
            ("optimizer", "betas"): (5, 16),
            ("optimizer", "eps"): (6, 14),
            ("lr",): (7, 11),
        }

    def test_shared_overrides_through_a_merge_key(self, tmp_path: Path) -> None:
        """An anchored overrides mapping can be merged into another role's overrides."""
        text = (
            "megatron:\n"
            "  - role: actor\n"
            "    overrides: &shared\n"
            "      lr: 1e-6\n"
            "      save: /ckpt\n"
            "  - role: critic\n"
            "    overrides:\n"
            "      <<: *shared\n"
            "      lr: 1e-5\n"
        )
        layers = read_role_file(write(tmp_path, text)).layers
        assert layers["critic"].values == {"lr": "1e-5", "save": "/ckpt"}
        assert layers["critic"].origin_at(("save",)).line == 5  # where it is written
        assert layers["critic"].origin_at(("lr",)).line == 9

    def test_custom_roles_and_layer_name(self, tmp_path: Path) -> None:
        """Roles and the layer's name are parameters."""
        text = "megatron:\n  - role: reward\n    overrides: {lr: 1}\n"
        role_file = read_role_file(
            write(tmp_path, text), roles=["reward", "ref"], layer_name="roles"
        )
        layer = role_file.layers["reward"]
        assert (layer.name, layer.origin.layer, layer.origin_at(("lr",)).layer) == (
            "roles",
            "roles",
            "roles",
        )
        assert role_file.roles_missing == ("ref",)

    def test_layers_are_private_copies(self, tmp_path: Path) -> None:
        """A layer is an ordinary `Layer`, ready for a `LayerStack`."""
        path = write(tmp_path, "megatron:\n  - role: actor\n    overrides: {opt: {a: 1}}\n")
        layer = read_role_file(path).layers["actor"]
        assert isinstance(layer, Layer)
        assert layer.lookup(("opt", "a")) == (True, 1)


class TestRoleFileErrors:
    """Every mistake of a role file is reported at once, located, with what to write instead."""

    def test_corpus_is_complete(self) -> None:
        """Every bad file has its expectation and every expectation its file (at least 40)."""
        files = {path.name for path in BAD.glob("*.yaml")}
        assert files == set(EXPECTED)
        assert len(files) >= 40

    @pytest.mark.parametrize("name", sorted(EXPECTED))
    def test_bad_file(self, name: str, loader: str) -> None:
        """The file's problems are exactly the expected ones, in order, with either loader."""
        role_file = check_role_file(BAD / name)
        got = [located(problem) for problem in role_file.problems]
        expected = EXPECTED[name]
        assert len(got) == len(expected), got
        for line, want in zip(got, expected, strict=True):
            where, _, substring = want.partition(": ")
            severity, _, message = substring.partition(": ")
            assert line.startswith(f"{where}: {severity}: "), (line, want)
            assert message in line, (line, want)
        for problem in role_file.problems:
            assert problem.hint, problem  # every problem says what to do
            assert problem.source == str(BAD / name)
            assert problem.layer == "role-config"

    @pytest.mark.parametrize("name", sorted(EXPECTED))
    def test_read_raises_on_errors(self, name: str) -> None:
        """`read_role_file` raises one ConfigError with every problem, unless all are warnings."""
        role_file = check_role_file(BAD / name)
        if not role_file.errors:
            assert read_role_file(BAD / name).problems == role_file.problems
            return
        with pytest.raises(ConfigError) as caught:
            read_role_file(BAD / name)
        assert caught.value.problems == role_file.problems

    def test_many_problems_at_once(self) -> None:
        """One file with six mistakes reports six compiler-style lines."""
        path = BAD / "many_problems.yaml"
        with pytest.raises(ConfigError) as caught:
            read_role_file(path)
        lines = str(caught.value).splitlines()
        assert len(lines) == 6
        assert lines[0] == (
            f"{path}:4:5: error: unknown field 'override' in megatron entry 1; "
            "did you mean 'overrides'? (write 'overrides')"
        )

    def test_overrides_never_fall_back_to_args(self) -> None:
        """Empty ``overrides`` beside ``args`` is an error, not a silent use of ``args``."""
        role_file = check_role_file(BAD / "empty_overrides_and_args.yaml")
        assert role_file.layers["actor"].values == {}
        assert [p.column for p in role_file.errors] == [5]

    def test_override_key_problem_names_the_key(self) -> None:
        """A bad override key carries its dotted path as the problem's key."""
        [problem] = check_role_file(BAD / "nested_override_int_key.yaml").problems
        assert problem.key == "moe_layer_freq.2"

    def test_no_cascade_from_refused_values(self) -> None:
        """A refused value is reported once, not again as a wrong type."""
        problems = check_role_file(BAD / "python_tag_role.yaml").problems
        assert len(problems) == 1

    def test_check_keeps_what_could_be_read(self) -> None:
        """`check_role_file` still builds the layers of the valid entries."""
        role_file = check_role_file(BAD / "duplicate_role.yaml")
        assert role_file.layers["critic"].values == {"lr": "1e-5"}  # the first entry
        assert role_file.layers["actor"].values == {"lr": "1e-6"}

    def test_missing_file(self) -> None:
        """A missing role file is one problem naming the path as given."""
        with pytest.raises(ConfigError) as caught:
            read_role_file("no/such/megatron.yaml")
        [problem] = caught.value.problems
        assert str(problem).startswith("no/such/megatron.yaml: error: file not found")

    @pytest.mark.parametrize(
        ("roles", "error"),
        [
            ("actor", TypeError),
            ((), ValueError),
            (("actor", ""), ValueError),
            (("actor", "actor"), ValueError),
            ((1,), ValueError),
        ],
    )
    def test_bad_roles_argument(self, roles: Any, error: type[Exception]) -> None:
        """A wrong `roles` argument is a programming error, raised at once."""
        with pytest.raises(error):
            check_role_file(FIXTURE, roles)

    def test_bad_layer_name(self) -> None:
        """The layer name must be a non-empty string."""
        with pytest.raises(ValueError, match="layer_name"):
            check_role_file(FIXTURE, layer_name="")


class TestRoleFileReadAgain:
    """A role file read again with the same bytes gives what the first read gave."""

    TEXT = "megatron:\n  - role: actor\n    overrides:\n      lr: 1.0e-6\n"

    def test_same_bytes_same_result(self, tmp_path: Path) -> None:
        path = write(tmp_path, self.TEXT)
        first, again = check_role_file(path), check_role_file(path)
        assert again == first
        assert again.layers["actor"] is first.layers["actor"]  # immutable, so shared

    def test_changed_bytes_are_read(self, tmp_path: Path) -> None:
        path = write(tmp_path, self.TEXT)
        stat = path.stat()
        assert check_role_file(path).layers["actor"].values == {"lr": 1e-6}
        write(tmp_path, self.TEXT.replace("1.0e-6", "3.0e-6"))  # same size
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same mtime
        assert check_role_file(path).layers["actor"].values == {"lr": 3e-6}

    def test_a_caller_changing_the_result_changes_no_later_read(self, tmp_path: Path) -> None:
        path = write(tmp_path, self.TEXT)
        first = check_role_file(path)
        first.layers.clear()  # type: ignore[attr-defined]
        assert check_role_file(path).layers["actor"].values == {"lr": 1e-6}

    def test_the_path_roles_and_layer_name_are_part_of_the_read(self, tmp_path: Path) -> None:
        path = write(tmp_path, self.TEXT)
        copy = write(tmp_path, self.TEXT, "copy.yaml")
        assert check_role_file(copy).path == str(copy)
        assert check_role_file(path).layers["actor"].origin.source == str(path)
        assert check_role_file(path, ("actor",)).roles_missing == ()
        assert check_role_file(path).roles_missing == ("critic",)
        assert check_role_file(path, layer_name="roles").layers["actor"].name == "roles"

    def test_the_reader_settings_are_part_of_the_read(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = write(tmp_path, self.TEXT)
        assert not check_role_file(path).errors
        monkeypatch.setattr(yaml_source, "MAX_NODES", 3)
        assert "more than 3" in str(check_role_file(path).errors)

    def test_only_the_latest_files_are_kept(self, tmp_path: Path) -> None:
        for number in range(3 * role_file_module._ROLE_FILES_KEPT):
            check_role_file(write(tmp_path, self.TEXT, f"role{number}.yaml"))
        assert len(role_file_module._ROLE_FILES) == role_file_module._ROLE_FILES_KEPT
        kept = {key[0] for key in role_file_module._ROLE_FILES}
        assert str(tmp_path / f"role{3 * role_file_module._ROLE_FILES_KEPT - 1}.yaml") in kept
        assert str(tmp_path / "role0.yaml") not in kept


ROLES = ("actor", "critic")
_NO_BREAKS = st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"))
override_keys = st.from_regex(r"[a-z_][a-z0-9_]{0,20}", fullmatch=True).filter(
    lambda key: yaml.safe_load(key) == key
)
override_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(_NO_BREAKS, max_size=12),
)


@st.composite
def role_files(draw: st.DrawFn) -> tuple[list[dict[str, Any]], str]:
    """Random role files: entries for a subset of the roles, dumped by ``yaml.safe_dump``."""
    entries = []
    for role in draw(st.lists(st.sampled_from(ROLES), unique=True)):
        entry: dict[str, Any] = {}
        name = draw(st.none() | st.text(_NO_BREAKS, max_size=8))
        if name is not None:
            entry["name"] = name
        entry["role"] = role
        field = draw(st.sampled_from(["overrides", "args"]))
        entry[field] = draw(st.dictionaries(override_keys, override_values, max_size=6))
        entries.append(entry)
    return entries, yaml.safe_dump({"megatron": entries}, sort_keys=False)


class TestRoleFileProperties:
    """Random role files read back as ``yaml.safe_load`` reads them, with the right lines."""

    @settings(max_examples=150, deadline=None)
    @given(role_files())
    def test_random_role_files(
        self, tmp_path_factory: pytest.TempPathFactory, generated: tuple[list[Any], str]
    ) -> None:
        """Values equal safe_load's; each override's origin is on its key's line."""
        entries, text = generated
        path = write(tmp_path_factory.getbasetemp(), text, "random_role.yaml")
        role_file = read_role_file(path)
        assert [p for p in role_file.problems if p.severity == "error"] == []
        loaded = {entry["role"]: entry for entry in yaml.safe_load(text)["megatron"]}
        assert set(role_file.layers) == set(loaded)
        assert role_file.roles_missing == tuple(r for r in ROLES if r not in loaded)
        lines = text.splitlines()
        cursor = 0

        def next_line(pattern: str) -> tuple[int, str]:
            nonlocal cursor
            for index in range(cursor, len(lines)):
                if re.match(pattern, lines[index]):
                    cursor = index + 1
                    return index + 1, lines[index]
            raise AssertionError(f"{pattern!r} not found in\n{text}")

        for entry in entries:
            layer = role_file.layers[entry["role"]]
            overrides = entry.get("overrides", entry.get("args"))
            assert layer.values == loaded[entry["role"]].get(
                "overrides", loaded[entry["role"]].get("args")
            )
            assert layer.origin.label == entry.get("name")
            next_line(r"\s*(- )?role: ")
            for key in overrides:
                line, written = next_line(rf"\s+{re.escape(key)}:( |$)")
                origin = layer.origin_at((key,))
                assert origin.line == line
                assert origin.column == written.index(f"{key}:") + len(key) + 3


DOC = HERE.parent / "docs" / "role-files.md"
DOC_PAIRS = re.findall(r"^```yaml\n([^`]*)```\n```text\n([^`]*)```", DOC.read_text(), re.MULTILINE)


class TestDocumentedErrors:
    """Every error example of docs/role-files.md reports exactly what the page shows."""

    def test_the_page_has_examples(self) -> None:
        """The pairs were found (the pattern did not silently stop matching)."""
        assert len(DOC_PAIRS) >= 30

    @pytest.mark.parametrize(("text", "report"), DOC_PAIRS, ids=range(len(DOC_PAIRS)))
    def test_example(
        self, text: str, report: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The example, saved as role.yaml, gives the documented lines (libyaml's wording)."""
        monkeypatch.chdir(tmp_path)
        write(tmp_path, text)
        got = [str(problem) for problem in check_role_file("role.yaml").problems]
        want = report.rstrip("\n").splitlines()
        if yaml.__with_libyaml__:
            assert got == want
        else:  # pragma: no cover - the pure-Python parser words syntax errors differently
            assert [line.split(": ")[0] for line in got] == [w.split(": ")[0] for w in want]


def test_a_pyyaml_built_without_libyaml(tmp_path: Path) -> None:
    """PyYAML built without libyaml has no CSafeLoader: role files are read with its
    pure-Python loader, their problems placed alike (before: every read stopped with
    AttributeError, the command's exit 70, 'a bug in layerconf')."""
    import subprocess
    import sys

    (tmp_path / "roles.yaml").write_text(
        "megatron:\n  - role: critic\n    overrides:\n      lr: 1e-5\n\tsave: x\n"
    )
    code = (
        "import sys, yaml\n"
        "for name in [n for n in dir(yaml) if n[:1] == 'C' and n[1:2].isupper()]:\n"
        "    delattr(yaml, name)\n"
        "yaml.__with_libyaml__ = False\n"
        "sys.modules['yaml.cyaml'] = sys.modules['yaml._yaml'] = None\n"
        "from layerconf.cli.app import main\n"
        "sys.exit(main(['check', 'roles.yaml']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("roles.yaml:5:1: error: invalid YAML: found character '\\t'")
