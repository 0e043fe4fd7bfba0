"""The repository's pre-commit hook (.pre-commit-hooks.yaml), run by the real pre-commit.

pre-commit installs a hook from a git repository at a commit: each test commits a copy of the
working tree (what the hook needs to install: pyproject.toml, README.md, LICENSE, src/ and the
hook file) into a temporary repository, so that the working tree is tested, not the last
commit. pre-commit then builds a virtual environment and installs layerconf into it with pip,
which needs the package index for layerconf's dependencies. Without pre-commit the tests skip,
except under ``CI=true``, where it is a failure (the ``test`` extra installs it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import missing_tool

ROOT = Path(__file__).parent.parent
GOOD = (ROOT / "examples" / "megatron_ppo.yaml").read_text(encoding="utf-8")
BAD = "megatron:\n  - role: actor\n    overrides:\n      lrr: 1e-6\n"
#: What the hook installs from: the working tree's copy of these.
PACKAGE = ("pyproject.toml", "README.md", "LICENSE", ".pre-commit-hooks.yaml", "src")


def _pre_commit() -> list[str]:
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        missing_tool("pre-commit", "python -m pip install -e '.[test]'")
    return [sys.executable, "-m", "pre_commit"]


def _git(cwd: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.org", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return result.stdout.strip()


def _committed(path: Path, files: dict[str, str] | None = None) -> str:
    """`path` made a git repository with `files` (or layerconf's package) committed: the commit."""
    path.mkdir()
    if files is None:
        for name in PACKAGE:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, path / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, path / name)
    else:
        for name, text in files.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text(text, encoding="utf-8")
    _git(path, "init", "-q")
    _git(path, "add", ".")
    _git(path, "commit", "-q", "-m", "snapshot")
    return _git(path, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of hook environments for the module's tests."""
    return tmp_path_factory.mktemp("pre-commit-home")


def _run(command: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(home),
        "PRE_COMMIT_COLOR": "never",
        "NO_COLOR": "1",
        "PYTHONPATH": "",  # the hook runs the layerconf installed in its own environment
    }
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


class TestHook:
    """pre-commit runs `layerconf check` on the files it is given, as the docs say."""

    def test_try_repo(self, tmp_path: Path, pre_commit_home: Path) -> None:
        """A good and a bad role file: the hook fails, naming the bad file's line and column."""
        pre_commit = _pre_commit()
        _committed(tmp_path / "layerconf")
        user = tmp_path / "user"
        _committed(user, {"megatron_good.yaml": GOOD, "megatron_bad.yaml": BAD})
        files = ["megatron_good.yaml", "megatron_bad.yaml"]
        result = _run(
            [
                *pre_commit,
                "try-repo",
                str(tmp_path / "layerconf"),
                "layerconf-check",
                "--files",
                *files,
            ],
            user,
            pre_commit_home,
        )
        output = result.stdout + result.stderr
        assert result.returncode == 1, output
        assert "layerconf check (role files)" in output
        assert "Failed" in output
        assert re.search(r"^megatron_bad\.yaml:4:7: error: 'lrr' is not an argument", output, re.M)
        assert "megatron_good.yaml:" not in output
        assert "Traceback" not in output

    def test_the_documented_config(self, tmp_path: Path, pre_commit_home: Path) -> None:
        """docs/cli.md's .pre-commit-config.yaml, pointed at the working tree's copy: its files
        pattern picks the role files; a good one passes, a bad one fails."""
        pre_commit = _pre_commit()
        rev = _committed(tmp_path / "layerconf")
        config = _documented_config()
        config = re.sub(r"(?m)^(\s*- repo: )\S+", rf"\g<1>{tmp_path / 'layerconf'}", config)
        config = re.sub(r"(?m)^(\s*rev: )\S+", rf"\g<1>{rev}", config)
        user = tmp_path / "user"
        _committed(
            user,
            {
                ".pre-commit-config.yaml": config,
                "configs/ppo.yaml": GOOD,
                "configs/grpo.yaml": BAD,
                "other.yaml": "not: [a role file",
            },
        )
        good = _run(
            [*pre_commit, "run", "--files", "configs/ppo.yaml", "other.yaml"], user, pre_commit_home
        )
        assert good.returncode == 0, good.stdout + good.stderr
        assert "Passed" in good.stdout
        bad = _run([*pre_commit, "run", "--all-files"], user, pre_commit_home)
        assert bad.returncode == 1, bad.stdout + bad.stderr
        assert re.search(r"^configs/grpo\.yaml:4:7: error: ", bad.stdout, re.M), bad.stdout
        assert "other.yaml" not in bad.stdout


def _documented_config() -> str:
    """The ```yaml block of docs/cli.md that configures the hook."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    (config,) = [block for block in blocks if "id: layerconf-check" in block]
    return str(config)
