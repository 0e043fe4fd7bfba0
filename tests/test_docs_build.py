"""The documentation site builds with warnings as errors: the narrative pages, their links
between each other, and the API reference generated from the docstrings (mkdocs.yml)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import missing_tool

ROOT = Path(__file__).parent.parent
_NEEDED = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")


def _missing() -> list[str]:
    missing = []
    for name in _NEEDED:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # the parent package itself is missing
            found = False
        if not found:
            missing.append(name)
    return missing


def test_site_builds_strict(tmp_path: Path) -> None:
    """``mkdocs build --strict`` succeeds: no broken link, no docstring the reference refuses."""
    missing = _missing()
    if missing:
        missing_tool(f"the docs extra ({', '.join(missing)})", "pip install -e '.[docs]'")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    reference = tmp_path / "site" / "reference"
    for module in (
        "layerconf",
        "layerconf.sources",
        "layerconf.rules",
        "layerconf.presets",
        "layerconf.audits",
        "layerconf.compat.slime",
        "layerconf.exceptions",
    ):
        page = (reference / module / "index.html").read_text()
        assert f'id="{module}"' in page, module  # the module's own heading, from its docstring
    assert 'id="layerconf.explain"' in (reference / "layerconf" / "index.html").read_text()
    assert (tmp_path / "site" / "cli" / "index.html").exists()
