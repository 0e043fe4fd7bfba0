"""No public function changes the process's global state: what a trainer relies on is as it was.

Each public callable's case of `test_threads_public` (its inputs made, then its call) runs
between two snapshots of everything a library could change behind a trainer's back: the
umask, the standard streams, warning filters, logging's configuration, signal handlers, the
environment, the locale, the working directory, the random generator, hooks and interpreter
settings.
"""

from __future__ import annotations

import decimal
import faulthandler
import gc
import locale
import logging
import os
import random
import signal
import socket
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.test_threads_public import CASES, Inputs


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _loggers() -> dict[str, Any]:
    found = {"": logging.getLogger()}
    found.update(
        (name, logger)
        for name, logger in logging.Logger.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    )
    states = {
        name: (logger.level, list(logger.handlers), logger.propagate, logger.disabled)
        for name, logger in found.items()
    }
    untouched = (logging.NOTSET, [], True, False)  # a logger made on first use, as made
    return {name: state for name, state in states.items() if state != untouched}


def _signals() -> dict[Any, Any]:
    return {
        number: signal.getsignal(number)
        for number in signal.valid_signals()
        if number not in (signal.SIGKILL, signal.SIGSTOP)
    }


def snapshot() -> dict[str, Any]:
    """What a library must leave as it found it."""
    return {
        "umask": _umask(),
        "streams": (sys.stdin, sys.stdout, sys.stderr),
        "warnings": list(warnings.filters),
        "showwarning": warnings.showwarning,
        "logging": _loggers(),
        "logging.disable": logging.root.manager.disable,
        "logging.lastResort": logging.lastResort,
        "logging.raiseExceptions": logging.raiseExceptions,
        "logger class": logging.getLoggerClass(),
        "log record factory": logging.getLogRecordFactory(),
        "signals": _signals(),
        "environ": dict(os.environ),
        "locale": locale.setlocale(locale.LC_ALL, None),
        "cwd": os.getcwd(),
        "random": random.getstate(),
        "hooks": (sys.excepthook, threading.excepthook, sys.displayhook, sys.unraisablehook),
        "interpreter": (
            sys.getrecursionlimit(),
            sys.getswitchinterval(),
            sys.get_int_max_str_digits(),
            gc.isenabled(),
            gc.get_threshold(),
            faulthandler.is_enabled(),
        ),
        "path": list(sys.path),
        "argv": list(sys.argv),
        "tempdir": tempfile.tempdir,
        "socket timeout": socket.getdefaulttimeout(),
        "decimal": repr(decimal.getcontext()),
        "trace": (sys.gettrace(), sys.getprofile()),
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_global_state_is_unchanged(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).parent / "fixtures")  # the cases' relative role file
    before = snapshot()
    CASES[name](Inputs(tmp_path / "inputs"))()
    after = snapshot()
    assert {key: value for key, value in after.items() if before[key] != value} == {}
