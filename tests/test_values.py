"""Copying and comparing configuration values."""

from __future__ import annotations

import enum
import math
import operator
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerconf.core.values import (
    ATOMIC_TYPES,
    MAX_DEPTH,
    SNAPSHOT_ITEMS,
    TEXT_LIMIT,
    Unkept,
    copy_value,
    int_text,
    is_atomic,
    jsonable,
    other_keys,
    same_value,
    shorten,
    snapshot,
    value_text,
)


class Color(enum.Enum):
    red = 1
    blue = 2


class Plain:
    pass


class TestSameValue:
    """Equal and of the same type all the way down, with copies in mind."""

    @pytest.mark.parametrize(
        ("a", "b", "same"),
        [
            (1, 1, True),
            (1, 1.0, False),
            (1, True, False),
            (0.0, -0.0, False),
            (math.nan, math.nan, True),
            ([1, {"a": 1.0}], [1, {"a": 1.0}], True),
            ([1, {"a": 1.0}], [1, {"a": 1}], False),
            ((1, 2), [1, 2], False),
            ({"a": 1}, {"a": 1, "b": 2}, False),
            (Color.red, Color.red, True),
            (Color.red, Color.blue, False),
        ],
    )
    def test_table(self, a: Any, b: Any, same: bool) -> None:
        """Types are never mixed; floats compare by their text."""
        assert same_value(a, b) is same

    def test_copied_objects(self) -> None:
        """A copy of an identity-compared object counts as the same only where copies are expected."""
        original = Plain()
        assert same_value(original, copy_value(original))
        assert not same_value(original, copy_value(original), copied=False)


class TestSameValueOfCycles:
    """Containers that hold themselves compare without a RecursionError."""

    def test_a_cycle_and_its_copy(self) -> None:
        """A cyclic list equals its copy; a changed copy differs."""
        loop: list[Any] = [1]
        loop.append(loop)
        copied = copy_value(loop)
        assert same_value(loop, copied)
        copied[0] = 2
        assert not same_value(loop, copied)
        table: dict[str, Any] = {"a": 1.0}
        table["self"] = table
        assert same_value(table, copy_value(table))


class TestCopyValue:
    """Copies share nothing mutable; what cannot be copied is shared, not lost."""

    def test_containers_are_copied(self) -> None:
        """Nested dicts and lists are new objects."""
        value = {"a": [1, {"b": 2}]}
        copied = copy_value(value)
        assert copied == value
        assert copied["a"] is not value["a"]
        assert copied["a"][1] is not value["a"][1]

    def test_atomic_values_are_shared(self) -> None:
        """Numbers, strings, enum members and tuples of them are immutable: shared."""
        for value in (1, 1.5, "x", None, Color.red, (1, "a")):
            assert is_atomic(value)
            assert copy_value(value) is value

    def test_uncopyable_is_shared(self) -> None:
        """A lock cannot be deep-copied: it is shared rather than raising."""
        lock = threading.Lock()
        assert copy_value(lock) is lock

    def test_a_cycle_is_copied_as_a_cycle(self) -> None:
        """A list or dict holding itself is copied without a RecursionError."""
        loop: list[Any] = [1]
        loop.append(loop)
        copied = copy_value(loop)
        assert copied is not loop
        assert copied[1] is copied
        table: dict[str, Any] = {}
        table["self"] = table
        assert copy_value(table)["self"] is not table


class TestDepth:
    """Every walker of a value goes `MAX_DEPTH` containers down at most, whatever the depth."""

    def test_at_the_limit(self) -> None:
        """Down to `MAX_DEPTH` containers a value is copied and shown whole; one further
        down is shared by a copy, shown as an audit record shows it, compared with ==."""
        shown = f"<nested more than {MAX_DEPTH} levels>"
        for depth, cut in ((MAX_DEPTH, False), (MAX_DEPTH + 1, True), (100_000, True)):
            value: Any = Plain()  # (copied by a copy: a new object)
            for _ in range(depth):
                value = [value]
            copied = copy_value(value)
            innermost, original = copied, value
            for _ in range(MAX_DEPTH):
                innermost, original = innermost[0], original[0]
            assert (innermost is original) is cut
            assert same_value(value, copied)
            assert (shown in value_text(value, None)) is cut
            assert (shown in str(jsonable(value))) is cut
            assert not is_atomic(tuple(value)) if cut else True

    def test_a_value_holding_itself_twice_is_shown_once(self) -> None:
        """A list holding itself twice is no tree of 2**100 paths: its cycles are marked."""
        loop: list[Any] = []
        loop += [loop, loop]
        assert jsonable(loop) == ["<cycle>", "<cycle>"]
        assert value_text(loop, None) == "[[...], [...]]"


class Broken:
    def __repr__(self) -> str:
        raise ValueError("no")


class TestValueText:
    """The one safe repr: never raises, never costs more than its output."""

    @pytest.mark.parametrize(
        ("value", "text"),
        [
            (1.5, "1.5"),
            ([1, "a", None], "[1, 'a', None]"),
            ({"a": (1,)}, "{'a': (1,)}"),
            (frozenset(), "frozenset()"),
            (set(), "set()"),
            (Color.red, "<Color.red: 1>"),
            (Broken(), "<unprintable Broken: ValueError>"),
            ([Broken()], "[<unprintable Broken: ValueError>]"),
            (1 << 20000, "<int of 6,021 digits: 3980...9376>"),
            (-(1 << 20000), "<int of 6,021 digits: -3980...9376>"),
            ({"seed": 1 << 20000}, "{'seed': <int of 6,021 digits: 3980...9376>}"),
        ],
        ids=lambda value: value_text(value, 40),
    )
    def test_table(self, value: Any, text: str) -> None:
        """Huge ints shortened, a raising repr named, the rest as repr() writes it."""
        assert value_text(value) == text

    @pytest.mark.parametrize(
        "value", [[1, [2, {"a": (3, frozenset({4}))}]], {"x": {1, 2}}, "q'uote\n", b"\x00b"]
    )
    def test_as_repr(self, value: Any) -> None:
        """What repr() can print, value_text prints the same (without a limit)."""
        assert value_text(value, None) == repr(value)

    def test_a_cycle(self) -> None:
        """A container that holds itself shows [...] where it does, as repr does."""
        loop: list[Any] = [1]
        loop.append(loop)
        assert value_text(loop) == repr(loop) == "[1, [...]]"

    def test_long_values_are_cut_before_formatting(self) -> None:
        """A 100 MB bytearray or a million-item list costs what 300 characters cost."""
        for value in (bytearray(100_000_000), list(range(1_000_000)), "x" * 10_000_000):
            text = value_text(value)
            assert len(text) == TEXT_LIMIT
            assert text.endswith("...")

    def test_ints_past_any_limit(self) -> None:
        """An int of millions of digits is described in bounded time (no exact digit count)."""
        assert int_text(1 << 10_000_000) == "<int of about 3,010,300 digits: ...9376>"
        assert int_text(10**3900) == str(10**3900)
        assert int_text(-(10**4000)) == "<int of 4,001 digits: -1000...0000>"

    def test_shorten(self) -> None:
        """At most the limit, with ... when cut."""
        assert shorten("abcdef", 5) == "ab..."
        assert shorten("abc", 5) == "abc"


class TestSnapshot:
    """What a runtime write keeps: bounded, never a large copy, never a crash."""

    def test_immutable_values_are_kept_as_they_are(self) -> None:
        """Numbers, strings (even large) and enum members are not copied."""
        large = "x" * 1_000_000
        for value in (1, 1.5, None, large, Color.red, (1, 2)):
            assert snapshot(value) is value or snapshot(value) == value

    def test_small_containers_are_copied(self) -> None:
        """A small list is a copy: later changes to the original do not reach it."""
        value = {"ranks": [0, 1]}
        kept = snapshot(value)
        value["ranks"].append(2)
        assert kept == {"ranks": [0, 1]}

    @pytest.mark.parametrize(
        ("make", "text"),
        [
            (lambda: bytearray(10), "<bytearray of 10 items, not kept>"),
            (
                lambda: list(range(SNAPSHOT_ITEMS + 1)),
                f"<list of {SNAPSHOT_ITEMS + 1} items, not kept>",
            ),
            (lambda: Plain(), "<Plain object, not kept>"),
            (lambda: threading.Lock(), "<lock object, not kept>"),
            (lambda: [Broken()], "<list of 1 items, not kept>"),
        ],
    )
    def test_others_are_described(self, make: Callable[[], Any], text: str) -> None:
        """Anything else is described by type and size, and recognised as the same object."""
        value = make()
        kept = snapshot(value)
        assert isinstance(kept, Unkept)
        assert repr(kept) == text
        assert kept.describes(value)
        assert not kept.describes(make())

    def test_a_cycle_is_described(self) -> None:
        """A list holding itself is not followed."""
        loop: list[Any] = [1]
        loop.append(loop)
        assert repr(snapshot(loop)) == "<list of 2 items, not kept>"


class TestOutputsOfHugeInts:
    """An int too long to print in decimal reaches JSON and YAML exactly, as hexadecimal."""

    def test_json(self) -> None:
        """jsonable gives its hex text; the command's JSON shape dumps."""
        import json

        from layerconf.cli.render import value_json

        huge = 1 << 20000
        assert jsonable(huge) == hex(huge)
        assert jsonable([huge, 1]) == [hex(huge), 1]
        data = json.loads(json.dumps(value_json(huge, None)))
        assert int(data["value"], 16) == huge
        assert data["repr"] == "<int of 6,021 digits: 3980...9376>"

    def test_yaml(self) -> None:
        """yaml_flow writes the hex literal, which YAML reads back as the same int."""
        import yaml

        from layerconf.cli.render import yaml_flow

        huge = -(1 << 20000)
        assert yaml.safe_load(yaml_flow(huge)) == huge
        assert yaml.safe_load(yaml_flow(12)) == 12

    def test_an_object_with_a_broken_repr(self) -> None:
        """An object JSON cannot hold is its repr, or says it has none."""
        assert jsonable(Broken()) == "<unprintable Broken: ValueError>"


@pytest.mark.parametrize(
    "value",
    [[], [1, "a", None, 2.5], {}, {"a": 1, 2: "b"}, [[1]], {"a": [1]}, [1, [2, [3]]]],
)
def test_copy_value_shares_no_container(value: Any) -> None:
    """A copy is equal, of the same type, and shares no list or dict with the original."""
    copied = copy_value(value)
    assert copied == value
    assert type(copied) is type(value)

    def containers(item: Any) -> list[int]:
        if isinstance(item, list):
            return [id(item), *(i for x in item for i in containers(x))]
        if isinstance(item, dict):
            return [id(item), *(i for x in item.values() for i in containers(x))]
        return []

    assert not set(containers(copied)) & set(containers(value))


# Values of every kind a layer may hold, atomic or not, many of them (a real layer holds a
# thousand values and a handful that are not atomic).
_any_values = st.one_of(
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.text(max_size=3),
    st.binary(max_size=2),
    st.none(),
    st.complex_numbers(allow_nan=False),
    st.sampled_from(Color),
    st.lists(st.integers(0, 9), max_size=2),
    st.dictionaries(st.text(max_size=1), st.integers(), max_size=2),
    st.tuples(st.integers(0, 9)),
    st.builds(Plain),
)


@given(st.dictionaries(st.text(min_size=1, max_size=4), _any_values, max_size=60))
def test_other_keys_are_the_keys_of_values_not_of_an_atomic_type(values: dict[str, Any]) -> None:
    """`other_keys` names exactly the keys whose value's type is not atomic, in order."""
    expected = [key for key, value in values.items() if type(value) not in ATOMIC_TYPES]
    assert other_keys(values) == expected


def test_other_keys_without_the_iterator_that_stops_at_a_miss(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pass for Python 3.10 (whose issuperset reads its iterator whole) gives the same."""
    import layerconf.core.values as values_module

    values = {f"k{index}": [index] if index % 7 == 3 else index for index in range(50)}
    expected = other_keys(values)
    monkeypatch.setattr(values_module, "_STOPS_AT_MISS", False)
    assert other_keys(values) == expected == [f"k{index}" for index in range(3, 50, 7)]


@pytest.mark.parametrize("hint", [0, 10**6, 1, 2])
def test_other_keys_when_a_length_hint_is_wrong(monkeypatch: pytest.MonkeyPatch, hint: int) -> None:
    """A length hint that does not say where each miss was is caught (positions out of the
    dict, out of order, or at an atomic value): the plain pass answers."""
    import types

    import layerconf.core.values as values_module

    values = {"a": 1, "b": [2], "c": 3, "d": {}, "e": "x", "f": [6]}
    wrong = types.SimpleNamespace(length_hint=lambda _: hint, lt=operator.lt)
    monkeypatch.setattr(values_module, "operator", wrong)
    assert other_keys(values) == ["b", "d", "f"]


def test_other_keys_of_a_dict_subclass() -> None:
    """A dict subclass may give its values otherwise than its iterator says: the plain pass."""

    class Odd(dict[str, Any]):
        def values(self) -> Any:  # type: ignore[override]
            return iter(list(super().values()))

    assert other_keys(Odd(a=[1], b=2, c=[3])) == ["a", "c"]
