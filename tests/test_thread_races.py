"""Races on layerconf's caches, each made to happen every time: no timing, no luck.

A thread is held at the exact point of a cache update (inside a call the cache makes) while
another thread asks the same cache; the second must get what it would get alone.
"""

from __future__ import annotations

import argparse
import sys
import threading
import types
import uuid
from pathlib import Path
from typing import Any

import pytest

import layerconf
from layerconf import Layer, LayerStack
from layerconf.cli import main

WAIT = 30  # seconds a held thread waits at most: a safety net, never a measure


def _inside(function: str) -> bool:
    """Whether the calling code runs (a few frames down) inside a function of that name."""
    frame = sys._getframe(2)
    for _ in range(6):
        if frame is None:
            return False
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back
    return False


class _Gate:
    """Holds one thread where `GatedStore` is read inside `held_in`, until released."""

    def __init__(self, held_in: str) -> None:
        self.held_in = held_in
        self.thread: threading.Thread | None = None
        self.holding = threading.Event()
        self.release = threading.Event()

    def maybe_hold(self) -> None:
        if threading.current_thread() is self.thread and _inside(self.held_in):
            self.holding.set()
            self.release.wait(WAIT)


GATE = _Gate("dest_spec")


class GatedStore(argparse._StoreAction):
    """A store action whose `required` holds the gate's thread when a spec is compiled."""

    @property  # type: ignore[override]
    def required(self) -> bool:
        GATE.maybe_hold()
        return self._required

    @required.setter
    def required(self, value: bool) -> None:
        self._required = value


def _verdict(stack: LayerStack) -> Any:
    try:
        return stack.resolve(warn=False).mode
    except layerconf.ConfigError as error:
        return str(error)


def test_a_spec_recompiled_in_another_thread_is_never_half_seen() -> None:
    """After `choices` changed in place, a thread that finds another thread recompiling the
    spec never gets the old spec: 'c', now a choice, is accepted in both."""
    parser = argparse.ArgumentParser()
    action = parser.add_argument("--mode", action=GatedStore, choices=["a", "b"], default="a")
    stack = LayerStack(
        [Layer.from_mapping("role-config", {"mode": "c"})], rules=[layerconf.TypeCoercion(parser)]
    )
    assert "must be one of 'a', 'b'" in _verdict(stack)  # the spec is compiled and kept
    action.choices = ["a", "b", "c"]
    results: dict[str, Any] = {}
    GATE.thread = threading.Thread(target=lambda: results.update(held=_verdict(stack)))
    GATE.holding.clear()
    GATE.release.clear()
    GATE.thread.start()
    try:
        assert GATE.holding.wait(WAIT), "the first thread never compiled the spec"
        results["other"] = _verdict(stack)  # while the first is inside the recompile
    finally:
        GATE.release.set()
        GATE.thread.join(WAIT)
        GATE.thread = None
    assert results == {"held": "c", "other": "c"}


def test_origins_of_one_command_line_are_not_shared_across_parsers() -> None:
    """Two parsers (two threads, say) parsing the same command line: the origin of a flag that
    is a secret in the second parser only holds its token redacted, as it does alone."""
    plain = argparse.ArgumentParser()
    plain.add_argument("--key", dest="key")
    secret = argparse.ArgumentParser()
    secret.add_argument("--key", dest="wandb_key")
    argv = ["--key=abcdef123456"]
    layerconf.parse_args(plain, argv)  # the same command line, another parser, first
    origin = layerconf.explain(layerconf.parse_args(secret, argv), "wandb_key").origin
    assert origin.token == "--key=<redacted>"


def test_two_commands_import_one_parser_file_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two threads run ``show --parser trainer.py:get_parser``: the second, arriving while the
    first imports the file, gets the parser too (it waits for the import), not 'no attribute'."""
    gate = types.ModuleType(f"layerconf_gate_{uuid.uuid4().hex}")
    gate.entered, gate.release = threading.Event(), threading.Event()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, gate.__name__, gate)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command adds the file's directory
    trainer = tmp_path / f"trainer_{uuid.uuid4().hex}.py"
    trainer.write_text(
        f"import argparse\nimport {gate.__name__} as gate\n\n"
        "gate.entered.set()\n"
        f"gate.release.wait({WAIT})  # the first import stops here\n\n\n"
        "def get_parser():\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--lr', type=float, default=1.0)\n"
        "    return parser\n"
    )
    statuses: dict[str, int] = {}

    def run(name: str) -> None:
        statuses[name] = main(["show", "--parser", f"{trainer}:get_parser", "--", "--lr", "2"])

    first = threading.Thread(target=run, args=("first",))
    second = threading.Thread(target=run, args=("second",))
    try:
        first.start()
        assert gate.entered.wait(WAIT)  # type: ignore[attr-defined]
        second.start()
        # The second returns at once with the half-made module; waiting for the import (the
        # fix), it is still running after this bounded wait, and the import is let finish.
        second.join(5)
    finally:
        gate.release.set()  # type: ignore[attr-defined]
        first.join(WAIT)
        second.join(WAIT)
        sys.modules.pop(trainer.stem, None)
    assert "no attribute" not in capsys.readouterr().err
    assert statuses == {"first": 0, "second": 0}
