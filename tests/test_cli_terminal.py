"""The ``layerconf`` command on a real terminal: closed pipes, full disks, Ctrl-C, odd bytes.

Each test starts the console script in a subprocess, as a shell would.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parent.parent
PPO_ARGV = (ROOT / "examples" / "ppo_argv.txt").read_text().splitlines()
BAD = str(ROOT / "tests" / "bad_role_files" / "not_a_mapping.yaml")

# What pip (24 on) writes as the console script (`layerconf`) of pyproject's entry point. (An
# older pip's script imports `re` first: an interrupt there is a traceback no entry point can
# prevent. CI upgrades pip in each of its venvs.)
_WRAPPER = """\
import sys
from {module} import {attr}
if __name__ == '__main__':
    sys.argv[0] = sys.argv[0].removesuffix('.exe')
    sys.exit({attr}())
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The console script of pyproject.toml's entry point, run by this Python.

    The installed one when it is that entry's (a fresh install); else the same wrapper pip
    writes, so that a stale install elsewhere cannot hide what the entry point does.
    """
    pyproject = (ROOT / "pyproject.toml").read_text()  # (no tomllib on Python 3.10)
    scripts = pyproject.split("\n[project.scripts]\n", 1)[1].split("\n[", 1)[0]
    found = re.search(r'^layerconf = "([\w.]+):(\w+)"$', scripts, re.MULTILINE)
    assert found is not None, scripts
    module, attr = found.groups()
    wrapper = _WRAPPER.format(module=module, attr=attr)
    installed = Path(sys.executable).parent / "layerconf"
    if installed.is_file() and installed.read_text().endswith("\n" + wrapper):
        return [sys.executable, str(installed)]
    path = tmp_path_factory.mktemp("bin") / "layerconf"
    path.write_text(wrapper)
    return [sys.executable, str(path)]


def environment(**changes: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    env["NO_COLOR"] = "1"
    env.update(changes)
    return env


def start(script: list[str], *args: str | bytes, **popen: Any) -> subprocess.Popen[bytes]:
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    popen.setdefault("env", environment())
    popen.setdefault("cwd", ROOT)
    return subprocess.Popen([*script, *args], stdin=subprocess.DEVNULL, **popen)


def closed_pipe_run(script: list[str], *args: str) -> tuple[int, str]:
    """Run with stdout a pipe whose reader has gone away before the first write."""
    read, write = os.pipe()
    os.close(read)
    try:
        process = start(script, *args, stdout=write)
    finally:
        os.close(write)
    _, stderr = process.communicate(timeout=120)
    return process.returncode, stderr.decode()


class TestClosedPipe:
    """A reader that goes away (`| head`) is no failure: quiet, the command's own status."""

    def test_show(self, script: list[str]) -> None:
        """show's output to a closed pipe: exit 0, nothing on stderr."""
        status, stderr = closed_pipe_run(script, "show", "--", *PPO_ARGV)
        assert (status, stderr) == (0, "")

    def test_head(self, script: list[str]) -> None:
        """`layerconf show ... | head -n 1` under pipefail succeeds."""
        command = 'set -o pipefail; "$@" show -- $(cat examples/ppo_argv.txt) | head -n 1'
        result = subprocess.run(
            ["bash", "-c", command, "bash", *script],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=environment(),
            timeout=120,
        )
        assert (result.returncode, result.stderr) == (0, "")
        assert result.stdout.count("\n") == 1

    def test_problems_keep_their_status(self, script: list[str]) -> None:
        """check still exits 1 for a configuration with problems, the pipe closed or not."""
        args = ("check", "--", *PPO_ARGV, "--megatron-config-path", BAD)
        status, stderr = closed_pipe_run(script, *args)
        assert status == 1
        assert "Traceback" not in stderr


class TestOutputErrors:
    """Output that cannot be written: one line on stderr, exit 74."""

    def test_full_disk(self, script: list[str]) -> None:
        """`> /dev/full`: the reason on stderr, status 74."""
        with open("/dev/full", "wb") as full:
            process = start(script, "show", "--", *PPO_ARGV, stdout=full)
            _, stderr = process.communicate(timeout=120)
        assert process.returncode == 74
        assert stderr.decode() == (
            "layerconf: error: cannot write the output: No space left on device\n"
        )

    @pytest.mark.parametrize("args", [["--help"], ["show", "--help"], ["audit", "diff", "-h"]])
    def test_help_on_a_full_disk(self, script: list[str], args: list[str]) -> None:
        """Help that cannot be written is status 74 too (argparse swallows a failed write of
        its help: the stream remembers the failure and reports it when flushed)."""
        with open("/dev/full", "wb") as full:
            process = start(script, *args, stdout=full)
            _, stderr = process.communicate(timeout=120)
        assert process.returncode == 74
        assert stderr.decode() == (
            "layerconf: error: cannot write the output: No space left on device\n"
        )

    def test_closed_stdout(self, script: list[str]) -> None:
        """`>&-`: the reason on stderr, status 74."""
        process = start(
            script, "explain", "lr", "--", *PPO_ARGV, stdout=None, preexec_fn=lambda: os.close(1)
        )
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 74
        assert stderr.decode() == (
            "layerconf: error: cannot write the output: standard output is closed\n"
        )

    def test_messages_that_cannot_be_written(self, script: list[str]) -> None:
        """`2> /dev/full` or `2>&-`: a check's messages lost is status 74, not 0 or 1."""
        with open("/dev/full", "wb") as full:
            process = start(script, "check", "--", *PPO_ARGV, stderr=full)
            stdout, _ = process.communicate(timeout=120)
        assert process.returncode == 74
        assert b"Traceback" not in stdout
        process = start(
            script, "check", "--", *PPO_ARGV, stderr=None, preexec_fn=lambda: os.close(2)
        )
        process.communicate(timeout=120)
        assert process.returncode == 74


def values(data: Any) -> Iterator[Any]:
    """Every value in parsed JSON `data`, all the way down."""
    if isinstance(data, dict):
        for item in data.values():
            yield from values(item)
    elif isinstance(data, list):
        for item in data:
            yield from values(item)
    else:
        yield data


STRICT_OUTPUTS = pytest.mark.parametrize(
    "env",
    [
        {"PYTHONIOENCODING": "utf-8:strict"},
        {"PYTHONIOENCODING": "ascii:strict"},
        {"LC_ALL": "C", "PYTHONIOENCODING": "utf-8:strict", "PYTHONUTF8": "0"},
    ],
    ids=["utf-8", "ascii", "C-locale"],
)


class TestOddBytes:
    """Bytes that are not UTF-8, in argv or a path, are shown escaped on a strict output."""

    @STRICT_OUTPUTS
    def test_argv_in_json(self, script: list[str], env: dict[str, str]) -> None:
        """show --json escapes them as JSON does: the value reads back as Python decoded it."""
        name = b"run-\xff-\xc3\xa9"  # 0xff is never UTF-8; then an é
        process = start(
            script, "show", "--json", "--", *PPO_ARGV, b"--wandb-exp-name", name,
            env=environment(**env),
        )  # fmt: skip
        stdout, stderr = process.communicate(timeout=120)
        assert (process.returncode, stderr.decode()) == (0, "")
        text = stdout.decode("utf-8")
        assert "run-\\udcff-" in text
        # é is two more such bytes in the C locale, where argv is read as ASCII
        shown = [v for v in values(json.loads(text)) if str(v).startswith("run-\udcff-")]
        assert shown

    @STRICT_OUTPUTS
    def test_argv_in_text(self, script: list[str], env: dict[str, str]) -> None:
        """explain shows the byte escaped, as repr() does."""
        process = start(
            script, "explain", "wandb_exp_name", "--", *PPO_ARGV, b"--wandb-exp-name", b"r\xff",
            env=environment(**env),
        )  # fmt: skip
        stdout, stderr = process.communicate(timeout=120)
        assert (process.returncode, stderr.decode()) == (0, "")
        assert "'r\\udcff'" in stdout.decode("utf-8")

    def test_path(self, script: list[str], tmp_path: Path) -> None:
        """A role file whose name is not UTF-8: its problems name it escaped."""
        directory = os.fsencode(tmp_path)
        path = directory + b"/bad-\xfe.yaml"
        with open(path, "wb") as file:
            file.write(b"- not a mapping\n")
        process = start(
            script,
            "check",
            "--",
            *PPO_ARGV,
            "--megatron-config-path",
            path,
            env=environment(PYTHONIOENCODING="utf-8:strict"),
        )
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 1
        assert "Traceback" not in stderr.decode("utf-8", "replace")
        assert "bad-\\udcfe.yaml:1:1: error:" in stdout.decode("utf-8")

    @pytest.mark.parametrize("form", ["json", "sarif", "github"])
    def test_path_in_check_formats(self, script: list[str], tmp_path: Path, form: str) -> None:
        """check FILE on a name that is not UTF-8, on an output that would write the byte
        back (surrogateescape, as in the C locale): valid UTF-8, valid JSON, no traceback."""
        path = b"bad-\xfe.yaml"  # relative: SARIF's URI of it is quoted, not Path.as_uri()
        with open(os.fsencode(tmp_path) + b"/" + path, "wb") as file:
            file.write(b"- not a mapping\n")
        process = start(
            script, "check", "--format", form, path, cwd=tmp_path,
            env=environment(PYTHONIOENCODING="utf-8:surrogateescape"),
        )  # fmt: skip
        stdout, stderr = process.communicate(timeout=120)
        assert "Traceback" not in stderr.decode("utf-8", "replace")
        assert process.returncode == 1
        text = stdout.decode("utf-8")
        if form != "github":
            assert "bad-" in json.dumps(json.loads(text))
        assert "bad-" in text

    def test_argv_in_json_on_a_lenient_output(self, script: list[str]) -> None:
        """show --json: the byte is escaped as JSON escapes it, never written back raw."""
        process = start(
            script, "show", "--json", "--", *PPO_ARGV, b"--wandb-exp-name", b"run-\xff",
            env=environment(PYTHONIOENCODING="utf-8:surrogateescape"),
        )  # fmt: skip
        stdout, stderr = process.communicate(timeout=120)
        assert (process.returncode, stderr.decode()) == (0, "")
        text = stdout.decode("utf-8")
        assert "run-\\udcff" in text
        assert any(str(v) == "run-\udcff" for v in values(json.loads(text)))


# Delays from "before Python has started" to "after the command has finished" on this machine.
DELAYS = [0.0, 0.001, 0.003, 0.006, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1,
          0.12, 0.15, 0.2, 0.25, 0.3, 0.4, 0.6]  # fmt: skip


class TestInterrupt:
    """Ctrl-C at any moment: exit 130 and no traceback (or the command's own end, if first)."""

    @pytest.mark.parametrize("delay", DELAYS)
    def test_sigint(self, script: list[str], delay: float) -> None:
        process = start(script, "show", "--", *PPO_ARGV)
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
        text = stderr.decode()
        # Before any code of layerconf runs, only the interpreter can be interrupted: its own
        # start-up (the io and site modules, and the .pth files of site-packages that site
        # runs), then its finding the entry module (the console script's line `from
        # _layerconf_cli import main`). What it prints then never names a file of layerconf.
        frames = re.findall(r'^ *File "([^"]+)"', text, re.MULTILINE)
        ours = [f for f in frames if f != script[-1] and "layerconf" in Path(f).parts]
        assert ours == [], text
        if text.startswith("Fatal Python error: init_"):
            assert process.returncode == 1, text  # the interpreter's own status for that
            return
        assert all(frame == script[-1] or frame.startswith("<frozen ") for frame in frames), text
        # 130; or killed by the signal before Python set its handler (a shell shows 130 too);
        # or done before the signal came.
        assert process.returncode in (130, -signal.SIGINT, 0), text
