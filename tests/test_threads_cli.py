"""Every command of the CLI's `main()`, run by 8 threads at once, prints what it prints alone.

Each thread's standard output and error are its own here (a stream that keeps what each
thread writes apart), so each thread's status, output and messages are compared whole with
one run alone; the module-level caches are emptied before the threads start. A completeness
check fails when a new command has no case.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from layerconf.cli import main
from layerconf.cli.app import _commands
from tests.test_threads_public import (
    ARGV,
    FIXTURES,
    OWN_ARGV,
    ROLE_FILE,
    THREADS,
    _cold,
    _together,
)

_SECRET_ARGV = [*ARGV, "--use-wandb", "--wandb-key", "sk-threads-0123456789"]


class _PerThread:
    """A text stream that keeps what each thread writes apart."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self) -> None:
        self.texts: dict[int, list[str]] = {}

    def write(self, text: str) -> int:
        self.texts.setdefault(threading.get_ident(), []).append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def take(self) -> str:
        """What the calling thread wrote, since it last took it."""
        return "".join(self.texts.pop(threading.get_ident(), []))


class Records:
    """The audit records the audit commands read, written once before the threads start."""

    def __init__(self, directory: Path) -> None:
        self.key = directory / "key"
        self.key.write_bytes(b"thread-key")
        self.before = self._write(directory / "before", ARGV)
        self.after = self._write(directory / "after", [*ARGV, "--seed", "99"])

    def _write(self, directory: Path, argv: list[str]) -> str:
        assert main(["audit", "-o", str(directory), "--key-file", str(self.key), "--", *argv]) == 0
        return str(directory)


#: Command -> its arguments (from the records, for the audit commands).
CASES: dict[str, Callable[[Records], list[str]]] = {
    "explain": lambda _: ["explain", "lr", "seed", "wandb_key", "--", *_SECRET_ARGV],
    "show": lambda _: ["show", "--all", "--", *_SECRET_ARGV],
    "diff": lambda _: ["diff", "--json", "--", *ARGV],
    "check": lambda _: ["check", "--strict", "--format", "sarif", ROLE_FILE],
    "schema": lambda _: ["schema"],
    "audit": lambda _: ["audit", "--", *_SECRET_ARGV],
    "audit diff": lambda r: ["audit", "diff", "--key-file", str(r.key), r.before, r.after],
    "audit replay": lambda r: ["audit", "replay", "--all", "--key-file", str(r.key), r.after],
    "audit verify": lambda r: ["audit", "verify", "--key-file", str(r.key), r.before, r.after],
    "audit relaunch": lambda r: ["audit", "relaunch", r.before],
    "audit explain": lambda r: ["audit", "explain", "--json", r.after, "seed", "lr"],
    "completion": lambda _: ["completion", "bash"],
}
#: Arguments that end in problems (exit 1) or a usage error (exit 2), each printed by every
#: thread as alone.
PROBLEMS = {
    "argparse": ["show", "--", *OWN_ARGV, "--lr", "fast"],
    # (one in five of the bad role files: the test stays quick)
    "role files": ["check", *sorted(map(str, (FIXTURES.parent / "bad_role_files").glob("*")))[::5]],
    "usage": ["explain", "--", *ARGV],
}


class TestEveryCommand:
    """Each command from 8 threads at once prints, per thread, what it prints alone."""

    def test_every_command_has_a_case(self) -> None:
        assert set(_commands()) == set(CASES)

    @pytest.mark.parametrize("argv", [*CASES, *(f"problem: {name}" for name in PROBLEMS)])
    def test_threads_equal_one(
        self,
        argv: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        monkeypatch.chdir(FIXTURES)  # the command line names its role file relatively
        if argv.startswith("problem: "):
            arguments = PROBLEMS[argv.removeprefix("problem: ")]
        else:
            arguments = CASES[argv](Records(tmp_path))
        # Set here, not in a fixture: pytest puts its own capture back before the test runs.
        out, err = _PerThread(), _PerThread()
        monkeypatch.setattr("sys.stdout", out)
        monkeypatch.setattr("sys.stderr", err)

        def run() -> tuple[int, str, str]:
            status = main(arguments)
            return status, out.take(), err.take()

        alone = run()
        assert alone[1] or alone[2]  # it printed something to compare
        assert alone[0] == (0 if argv in CASES else 2 if "usage" in argv else 1), alone
        _cold()
        assert _together(run) == [alone] * THREADS
