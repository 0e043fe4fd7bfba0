"""The public functions called from several threads at once give what one thread gets.

A trainer may resolve, explain and audit from several threads (a data loader, a checkpoint
writer, a logger). Each public function is called by 8 threads at once, each on a fresh parser
or on shared namespaces, with the per-parser caches cold at the start (the first calls race to
build them); every result must equal the one computed alone, and nothing may raise.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import layerconf
from layerconf.audits import AUDIT_FILE, record_bytes
from layerconf.presets.role_file import _ROLE_FILES

FIXTURES = Path(__file__).parent / "fixtures"
ARGV = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
THREADS = 8


def _together(call: Callable[[int], Any]) -> list[Any]:
    """`call(i)` in THREADS threads started together; their results, or the first error."""
    barrier = threading.Barrier(THREADS)
    results: list[Any] = [None] * THREADS
    errors: list[BaseException] = []

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = call(index)
        except BaseException as error:  # reported below, with its traceback
            errors.append(error)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]
    return results


def _values(roles: dict[str, Any]) -> dict[str, Any]:
    return {role: json.dumps(vars(ns), sort_keys=True, default=repr) for role, ns in roles.items()}


@pytest.fixture
def in_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES)  # the command line names its role file relatively


def test_resolve_roles_on_fresh_parsers(in_fixtures: None) -> None:
    """Cold caches on one shared parser, raced by every thread's first call."""
    alone = _values(layerconf.resolve_roles(layerconf.load_profile(), ARGV, warn=False))
    parser = layerconf.load_profile()
    _ROLE_FILES.clear()
    results = _together(lambda _: layerconf.resolve_roles(parser, ARGV, warn=False))
    assert [_values(roles) for roles in results] == [alone] * THREADS


def test_explain_and_audit_of_shared_namespaces(in_fixtures: None) -> None:
    """explain, explain_all and audit of the same namespaces from every thread."""
    roles = layerconf.resolve_roles(layerconf.load_profile(), ARGV, warn=False)
    key = b"thread-key"
    alone = (
        str(layerconf.explain(roles["critic"], "lr")),
        {k: str(s) for k, s in layerconf.explain_all(roles["actor"]).items()},
        record_bytes(layerconf.audit(roles, key=key)),
    )

    def everything(_: int) -> tuple[Any, ...]:
        return (
            str(layerconf.explain(roles["critic"], "lr")),
            {k: str(s) for k, s in layerconf.explain_all(roles["actor"]).items()},
            record_bytes(layerconf.audit(roles, key=key)),
        )

    assert _together(everything) == [alone] * THREADS


def test_write_and_load_audits(in_fixtures: None, tmp_path: Path) -> None:
    """Writers racing on one directory leave one whole record; readers read whole ones."""
    roles = layerconf.resolve_roles(layerconf.load_profile(), ARGV, warn=False)
    expected = layerconf.audit(roles)["fingerprint"]

    def write_then_load(_: int) -> str:
        layerconf.write_audit(roles, tmp_path)
        return layerconf.load_audit(tmp_path).fingerprint

    assert _together(write_then_load) == [expected] * THREADS
    assert sorted(path.name for path in tmp_path.iterdir()) == [AUDIT_FILE]


def test_role_files_and_check(tmp_path: Path) -> None:
    """check_role_file of distinct files and of one file, cache and all, from every thread."""
    source = (FIXTURES / "slime_ppo_megatron.yaml").read_text()
    paths = []
    for index in range(THREADS):
        path = tmp_path / f"roles-{index}.yaml"
        path.write_text(source.replace("1e-5", f"{index + 1}e-5"))
        paths.append(path)
    _ROLE_FILES.clear()
    own = _together(lambda index: layerconf.check_role_file(paths[index]))
    shared = _together(lambda _: layerconf.check_role_file(paths[0]))
    alone = [layerconf.check_role_file(path) for path in paths]
    assert [file.layers for file in own] == [file.layers for file in alone]
    assert [file.layers for file in shared] == [alone[0].layers] * THREADS


def test_audit_while_another_thread_writes_args(tmp_path: Path) -> None:
    """A trainer's thread setting, adding and deleting attributes (a dict among the values)
    while others audit: every record is whole and loads, nothing raises (each section is
    the namespace as one snapshot of it said)."""
    values = {f"k{i}": i for i in range(300)} | {"table": {"a": 1, "b": {"c": 2}}}
    layers = [
        layerconf.Layer.from_mapping("defaults", values, kind="defaults"),
        layerconf.Layer.from_mapping("cli", {"k1": 5, "table": {"a": 3}}, kind="argv"),
    ]
    namespace = layerconf.LayerStack(layers).resolve(role="main", warn=False)
    stop = threading.Event()

    def writes() -> None:
        count = 0
        while not stop.is_set():
            count += 1
            setattr(namespace, f"k{count % 300}", [{"x": 1}, 7, {"d": {"e": 1}}, "s"][count % 4])
            setattr(namespace, f"new{count}", count)
            if count > 3:
                delattr(namespace, f"new{count - 3}")
            time.sleep(0)  # let the auditors run between writes

    writer = threading.Thread(target=writes)
    writer.start()
    try:
        paths = _together(
            lambda index: [
                layerconf.write_audit({"main": namespace}, tmp_path / f"{index}-{round}")
                for round in range(6)
            ]
        )
    finally:
        stop.set()
        writer.join(timeout=60)
    for path in (path for written in paths for path in written):
        assert layerconf.load_audit(path).namespace("main") is not None
