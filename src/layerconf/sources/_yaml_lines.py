"""Where a YAML reader's marks are, as editors and ``grep -n`` count lines and columns."""

from __future__ import annotations

from typing import Any, NamedTuple

from layerconf.core.lazy import LazyPattern

__all__ = ["Lines", "Position"]


# The call form: the class form evaluates its (string) annotations at import, at twice the cost.
Position = NamedTuple("Position", [("line", int), ("column", int)])  # noqa: UP014
Position.__doc__ = """A 1-based line and column in a file."""


# YAML also breaks lines at NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR; editors and grep -n
# break them only at \n, \r\n and \r.
_YAML_BREAK = LazyPattern("\r\n|[\r\n\x85\u2028\u2029]")
_EDITOR_BREAK = LazyPattern("\r\n|[\r\n]")
_YAML_ONLY_BREAKS = ("\x85", "\u2028", "\u2029")


class Lines:
    """Positions in `text` as editors and ``grep -n`` count them (lines end at \\n, \\r\\n, \\r).

    A YAML reader also ends a line at U+0085, U+2028 and U+2029, so after one of them its line
    numbers run ahead of the editor's; `at` turns a reader's mark into the editor's position.
    A text without those characters (nearly every file) costs three scans and nothing per mark.
    """

    __slots__ = ("_editor", "_text", "_yaml", "plain")

    def __init__(self, text: str) -> None:
        self._text = text
        self._editor: list[int] | None = None
        self._yaml: list[int] | None = None
        #: True when a reader's lines are the editor's (no U+0085, U+2028, U+2029): positions
        #: are then the reader's own, which the walker writes inline.
        self.plain = not any(character in text for character in _YAML_ONLY_BREAKS)
        if not self.plain:
            self._yaml = [0, *(found.end() for found in _YAML_BREAK.finditer(text))]

    def offset(self, mark: Any) -> int:
        """The index in the text of the character `mark` points at (from its line and column:
        libyaml's error marks count bytes in their `index`)."""
        starts = self._yaml if self._yaml is not None else self._editor_starts()
        line: int = mark.line
        column: int = mark.column
        return starts[min(line, len(starts) - 1)] + column

    def at(self, mark: Any) -> Position:
        """The 1-based line and column of `mark`, as an editor shows them."""
        if self._yaml is None:
            return Position(mark.line + 1, mark.column + 1)
        return self.position(self.offset(mark))

    def position(self, index: int) -> Position:
        """The 1-based line and column of the character at `index`, as an editor shows them."""
        import bisect  # only to locate a message: not at import

        starts = self._editor_starts()
        line = bisect.bisect_right(starts, index)
        return Position(line, index - starts[line - 1] + 1)

    def _editor_starts(self) -> list[int]:
        if self._editor is None:
            self._editor = [0, *(found.end() for found in _EDITOR_BREAK.finditer(self._text))]
        return self._editor
