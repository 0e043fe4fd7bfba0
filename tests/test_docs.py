"""Every ```python block of the README and docs/ runs as written: a failing example is a bug."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


@pytest.mark.parametrize("page", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's python blocks run in order, in one namespace, in an empty directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LAYERCONF_REPO", str(ROOT))
    scope: dict[str, object] = {"__name__": "__doc_example__"}
    for number, block in enumerate(BLOCK.findall(page.read_text()), start=1):
        code = compile(block, f"{page.name} block {number}", "exec")
        exec(code, scope)
    assert os.getcwd() == str(tmp_path)
