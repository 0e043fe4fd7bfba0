"""Every ```python block of the README and docs/ runs as written: a failing example is a bug.

A comment that follows a ``print(...)`` line (on it, or on the lines right after it) shows
what it prints, and is checked against what it really prints; ``...`` in it stands for any
text (a detail that differs between Python versions).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def shown_output(block: str) -> list[str]:
    """The lines a block's comments say its print calls write."""
    shown: list[str] = []
    after_print = False
    for line in block.splitlines():
        stripped = line.strip()
        if after_print and stripped.startswith("# "):
            shown.append(stripped[2:])
            continue
        after_print = stripped.startswith("print(")
        if after_print and "  # " in line:
            shown.append(line.split("  # ", 1)[1].strip())
    return shown


@pytest.mark.parametrize("page", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's python blocks run in order, in one namespace, in an empty directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LAYERCONF_REPO", str(ROOT))
    scope: dict[str, object] = {"__name__": "__doc_example__"}
    for number, block in enumerate(BLOCK.findall(page.read_text()), start=1):
        code = compile(block, f"{page.name} block {number}", "exec")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(code, scope)
        lines = [line.rstrip() for line in printed.getvalue().splitlines()]
        for expected in shown_output(block):
            pattern = re.compile(".*?".join(map(re.escape, expected.split("..."))))
            assert any(pattern.fullmatch(line) for line in lines), (
                f"{page.name} block {number} does not print {expected!r}; it prints:\n"
                + "\n".join(lines)
            )
    assert os.getcwd() == str(tmp_path)


#: The width the prose of the pages keeps (a link's target is not counted: a URL cannot wrap).
PROSE_WIDTH = 97
FENCE = re.compile(r"^\s*```")
LINK_TARGET = re.compile(r"\]\([^)\s]*\)")


def long_prose_lines(text: str) -> list[tuple[int, int]]:
    """The line numbers and widths of the lines of prose (outside code blocks and tables)
    wider than `PROSE_WIDTH`."""
    found: list[tuple[int, int]] = []
    in_code = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            in_code = not in_code
        elif not in_code and not line.startswith("|"):
            width = len(LINK_TARGET.sub("]()", line))
            if width > PROSE_WIDTH:
                found.append((number, width))
    return found


# docs/performance.md is left out: its results are pasted from benchmarks/run.py's Markdown,
# whose lines (a machine's name, a command, a row of figures) are as long as they come.
PROSE_PAGES = [page for page in DOCS if page.name != "performance.md"]


@pytest.mark.parametrize("page", PROSE_PAGES, ids=[str(p.relative_to(ROOT)) for p in PROSE_PAGES])
def test_prose_keeps_the_width(page: Path) -> None:
    """Every page's prose is wrapped at the width the others keep, so that it reads in a
    terminal and a side-by-side diff."""
    assert long_prose_lines(page.read_text(encoding="utf-8")) == [], page.name
