"""How the command's output looks: colour, aligned tables, problem lines, JSON and YAML values.

Colour is for terminals only, never with NO_COLOR set. Every JSON output spells a value the
same way (`value_json`): its JSON form, its repr, and its origin's fields. Every text output
writes a value as `value_text` does (re-exported here): its repr, shortened, never raising on
an int too long to print or a broken ``__repr__``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from layerconf.cli.scrub import stdout
from layerconf.core.values import MAX_INT_BITS, json_key, jsonable, value_text
from layerconf.exceptions import one_line

__all__ = [
    "Paint",
    "dump_json",
    "heading",
    "json_text",
    "problem_line",
    "setting_json",
    "table",
    "utf8_text",
    "value_json",
    "value_text",
    "yaml_flow",
]

if TYPE_CHECKING:
    from layerconf.core.records import Origin, Setting
    from layerconf.exceptions import Problem

    # A table cell: its text, and a colour applied after padding (alignment ignores ANSI).
    Cell = tuple[str, Callable[[str], str] | None]

_LAYER_COLOURS: Mapping[str, str] = {
    "default": "2",
    "argv": "36",
    "file": "32",
    "rule": "35",
    "runtime": "33",
}
_SEVERITY_COLOURS: Mapping[str, str] = {"error": "1;31", "warning": "1;33", "note": "1;36"}


class Paint:
    """ANSI colour for one stream: only on a terminal, never with NO_COLOR set (any value)."""

    def __init__(self, stream: TextIO) -> None:
        self.on = _colour_wanted(stream)

    def __call__(self, text: str, code: str | None) -> str:
        if not self.on or not code or not text:
            return text
        return f"\033[{code}m{text}\033[0m"

    def layer(self, kind: str) -> Callable[[str], str]:
        """A painter for the name of a layer of `kind` (default, argv, file, rule)."""
        code = _LAYER_COLOURS.get(kind)
        return lambda text: self(text, code)

    def severity(self, text: str) -> str:
        return self(text, _SEVERITY_COLOURS.get(text))


def _colour_wanted(stream: TextIO) -> bool:
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


def table(rows: Sequence[Sequence[Cell]], *, indent: str = "", cap: int = 72) -> list[str]:
    """Aligned rows; a cell longer than `cap` does not widen its column (it overflows)."""
    if not rows:
        return []
    # A character of a cell that is not printable (a control character or a bidi override of
    # a forged record's layer name) shown escaped, never sent to the terminal; the cells' paint
    # adds the only escape sequences.
    rows = [[(one_line(text), paint) for text, paint in row] for row in rows]
    columns = max(len(row) for row in rows)
    widths = [0] * columns
    for row in rows:
        for index, (text, _) in enumerate(row):
            if len(text) <= cap:
                widths[index] = max(widths[index], len(text))
    lines = []
    for row in rows:
        parts = []
        last = max((i for i, (text, _) in enumerate(row) if text), default=-1)
        for index, (text, paint) in enumerate(row[: last + 1]):
            padded = text if index == last else text.ljust(widths[index])
            if paint is not None and text:
                padded = paint(text) + padded[len(text) :]
            parts.append(padded)
        lines.append((indent + "  ".join(parts)).rstrip())
    return lines


def heading(texts: Sequence[str], paint: Paint) -> list[Cell]:
    """A table's first row: each text in bold."""
    return [(text, lambda t: paint(t, "1")) for text in texts]


def problem_line(problem: Problem, paint: Paint) -> str:
    """``where: error: message (hint)``; an info notice reads ``note:``, as gcc's do."""
    severity = "note" if problem.severity == "info" else problem.severity
    return problem.formatted(paint.severity(severity))


# ---------------------------------------------------------------------------------------------
# JSON


def dump_json(data: Any) -> None:
    """`data` on stdout as `json_text` writes it."""
    stdout().write(json_text(data))


def json_text(data: Any) -> str:
    """`data` as indented JSON (not ASCII-escaped, no NaN) and a newline, always UTF-8."""
    import json

    return utf8_text(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)) + "\n"


def utf8_text(text: str) -> str:
    """`text` with each character outside ASCII that is not printable as JSON escapes it: a
    lone surrogate (a byte of argv or of a path that was not UTF-8), ``\\udcff``, so that what
    must be UTF-8 (JSON, workflow commands) stays so whatever the output's error handler
    (surrogateescape, in the C locale, would write the byte back); a C1 control, a bidi
    override or a line separator (from a record from anywhere), ``\\u202e``, so that it does
    not reach a terminal. (JSON's own escapes cover ASCII's controls.)"""
    return _escape_unprintable(text, yaml=False)


def _escape_unprintable(text: str, *, yaml: bool) -> str:
    """`text` (JSON, or YAML whose characters outside ASCII are all in double-quoted strings)
    with each character outside ASCII that is not printable escaped: ``\\u202e``; past
    U+FFFF, JSON's surrogate pair or YAML's ``\\U000e0001``."""
    if text.isascii() or text.isprintable():
        return text
    import re

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        code = ord(char)
        if char.isprintable():
            return char
        if code <= 0xFFFF:
            return f"\\u{code:04x}"
        if yaml:
            return f"\\U{code:08x}"
        high, low = divmod(code - 0x10000, 0x400)
        return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"

    return re.sub("[^\x00-\x7f]", escape, text)


def value_json(value: Any, origin: Origin | None) -> dict[str, Any]:
    """A value as every JSON output shows it: value, repr, and its origin's fields."""
    from layerconf.core.records import origin_json

    return {"value": jsonable(value), "repr": value_text(value, None)} | origin_json(origin)


def setting_json(setting: Setting) -> dict[str, Any]:
    """One explained value in the JSON shape of a setting (`layerconf.core.records.setting_json`),
    values as `jsonable` gives them, each with its ``repr`` too; secrets redacted
    (`Setting.redacted`), whether or not the caller did."""
    from layerconf.core.records import setting_json as shape

    setting = setting.redacted()
    return _with_repr(shape(setting, jsonable), setting)


def _with_repr(data: dict[str, Any], setting: Setting) -> dict[str, Any]:
    """`data` with ``repr`` after ``value``, as every JSON output has it (`value_json`), and
    the role first: ``role``, ``key``, ``value``, ``repr``, the origin's fields, ``history``."""
    ordered = {"role": data["role"]} if "role" in data else {}
    ordered |= {"key": data["key"], "value": data["value"], "repr": value_text(setting.value, None)}
    ordered |= {name: field for name, field in data.items() if name not in ordered}
    if "history" in data:
        ordered["history"] = [
            _with_repr(entry, shadowed)
            for entry, shadowed in zip(data["history"], setting.history, strict=True)
        ]
    return ordered


# ---------------------------------------------------------------------------------------------
# YAML


def yaml_flow(value: Any) -> str:
    """`value` as one line of YAML that `yaml.safe_load` reads back (enums as their name; an
    int too long to print in decimal as its hexadecimal literal, which YAML reads as the int)."""
    from layerconf.sources.yaml import flow_line

    if type(value) is int and value.bit_length() > MAX_INT_BITS:
        return hex(value)

    text = flow_line(_yamlable(value))
    if text is not None and not text.isprintable():  # (a bidi override, a C1 control...)
        text = flow_line(_yamlable(value), ascii=True)  # escaped in double quotes
    if text is None:  # a multi-line string: JSON's escapes are YAML double-quoted strings
        import json

        return _escape_unprintable(json.dumps(jsonable(value), ensure_ascii=False), yaml=True)
    return text


def _yamlable(value: Any) -> Any:
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return float(value)  # YAML has .inf and .nan
    if isinstance(value, Mapping):
        return {json_key(key): _yamlable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_yamlable(item) for item in value]
    return jsonable(value)
