"""Copying and comparing configuration values."""

from __future__ import annotations

import enum
import math
import threading
from typing import Any

import pytest

from layerconf.core.values import copy_value, is_atomic, same_value


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
