"""The types of a public function's arguments, checked where the function starts.

A wrong type (a command line as one string, a preset's name where a `Preset` goes, None for a
path) fails at once with one `TypeError` that names the function, the argument and what it
takes, instead of an ``AttributeError`` from deep inside. The value itself is never quoted
(it may be a credential): only its type is named.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

__all__ = ["PATH", "check_iterable", "check_type", "typed"]

#: What a path argument takes.
PATH = (str, os.PathLike)


def check_type(
    function: str, name: str, value: object, expected: type | tuple[type, ...], takes: str
) -> None:
    """Raise `TypeError` unless `value` (argument `name` of `function`) is an `expected`;
    `takes` says what it takes in words (``"a Preset, such as layerconf.SLIME"``)."""
    if not isinstance(value, expected):
        raise TypeError(f"{function}() takes {name} as {takes} (got {_kind(value)})")


def check_iterable(function: str, name: str, value: object, takes: str) -> None:
    """Like `check_type` for a collection of items: a str or bytes is refused too (it would
    be read one character at a time)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{function}() takes {name} as {takes} (got {_kind(value)})")


def typed(expected: type | tuple[type, ...], takes: str) -> Any:
    """An attrs validator that calls `check_type` with the class and the field's name."""

    def validate(instance: object, attribute: Any, value: object) -> None:
        check_type(type(instance).__name__, attribute.name, value, expected, takes)

    return validate


def _kind(value: object) -> str:
    if value is None:
        return "None"
    name = type(value).__name__
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name
