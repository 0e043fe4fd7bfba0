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
