"""examples/ray/train.py with real Ray: workers in their own processes explain and fingerprint
the configuration exactly as the driver does."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from layerconf import audit, diff_audits, explain, load_audit, load_profile, resolve_roles

ray = pytest.importorskip("ray")

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "ray" / "train.py"
PPO_ARGV = (ROOT / "examples" / "ppo_argv.txt").read_text().splitlines()
SECRET = "wandb-0123456789abcdef"
ARGV = [*PPO_ARGV, "--use-wandb", "--wandb-key", SECRET]
KEYS = ("lr", "save", "kl_coef", "attention_backend", "wandb_key", "world_size")


@pytest.fixture(scope="module")
def roles() -> dict[str, Any]:
    """The example launch, resolved from the repository root as the driver resolves it."""
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return dict(resolve_roles(load_profile(), ARGV))
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def example() -> Iterator[ModuleType]:
    """The example imported as a module; Ray ships its classes by value to the workers."""
    name = "layerconf_ray_example"
    spec = importlib.util.spec_from_file_location(name, EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    ray.cloudpickle.register_pickle_by_value(module)  # the workers cannot import it
    try:
        yield module
    finally:
        ray.cloudpickle.unregister_pickle_by_value(module)
        del sys.modules[name]


@pytest.fixture(scope="module")
def workers(example: ModuleType, roles: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A local Ray with real worker processes, and one RoleWorker per role of the launch."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield example.start_workers(roles)
    finally:
        ray.shutdown()


class TestWorkers:
    """Each role's namespace, sent to its own Ray actor, is the driver's configuration."""

    def test_in_other_processes(self, workers: dict[str, Any]) -> None:
        """Each role runs in a process of its own, not in the driver's."""
        pids = {role: ray.get(w.report.remote())["pid"] for role, w in workers.items()}
        assert os.getpid() not in pids.values()
        assert len(set(pids.values())) == len(pids)

    def test_explain_answers_as_the_driver(
        self, workers: dict[str, Any], roles: dict[str, Any]
    ) -> None:
        """explain() in a worker gives the driver's Setting: value, origin and history."""
        for role, worker in workers.items():
            for key in KEYS[:-1]:
                assert ray.get(worker.explain.remote(key)) == explain(roles[role], key)
        critic_lr = ray.get(workers["critic"].explain.remote("lr"))
        assert critic_lr.origin.where == "role-config examples/megatron_ppo.yaml:10:11"
        assert [entry.origin.layer for entry in critic_lr.history] == [
            "role-config",
            "cli",
            "default",
        ]

    def test_fingerprints_equal_the_drivers(
        self, workers: dict[str, Any], roles: dict[str, Any], example: ModuleType
    ) -> None:
        """The fingerprint each worker computes is the one of its role computed here."""
        for role, worker in workers.items():
            fingerprint = ray.get(worker.report.remote())["fingerprint"]
            assert fingerprint == audit({role: roles[role]})["fingerprint"]
            assert fingerprint == example.role_fingerprints(roles)[role]
        assert len({ray.get(w.report.remote())["fingerprint"] for w in workers.values()}) == 2

    def test_another_configuration_is_refused(
        self, workers: dict[str, Any], roles: dict[str, Any], example: ModuleType
    ) -> None:
        """A worker sent another fingerprint than its namespace's refuses to start."""
        del workers  # only for the running Ray
        other = example.role_fingerprints(roles)["actor"]
        worker = example.RoleWorker.remote("critic", roles["critic"], other)
        with pytest.raises(ray.exceptions.RayActorError, match="refusing to train"):
            ray.get(worker.report.remote())

    def test_runtime_writes_are_recorded(
        self, workers: dict[str, Any], roles: dict[str, Any]
    ) -> None:
        """A worker's assignment comes back with the file and line that made it."""
        final = {role: ray.get(w.configuration.remote()) for role, w in workers.items()}
        setting = explain(final["critic"], "world_size")
        assert (setting.value, setting.origin.layer) == (8, "runtime")
        assert setting.origin.source is not None
        assert setting.origin.source.endswith("train.py")
        changes = diff_audits(audit(roles), audit(final))
        assert [(c.role, c.key, c.kind) for c in changes] == [
            ("actor", "world_size", "added"),
            ("critic", "world_size", "added"),
        ]


class TestTheExample:
    """The example run as a user runs it, in its own process with its own Ray."""

    def test_runs(self, tmp_path: Path, roles: dict[str, Any]) -> None:
        """It exits 0, writes both records, and its workers answered as the driver."""
        run_dir = tmp_path / "run"
        result = subprocess.run(
            [
                sys.executable,
                str(EXAMPLE),
                "--run-dir",
                str(run_dir),
                "--rollouts",
                "1",
                "--",
                *ARGV,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert SECRET not in result.stdout + result.stderr
        lines = result.stdout.splitlines()
        assert [line.split()[0] for line in lines[1:3]] == ["actor", "critic"]
        assert all("= driver" in line for line in lines[1:3])
        assert lines[3] == "rollout 0: actor lr 1e-06, critic lr 1e-05"

        record = load_audit(run_dir)
        assert record.fingerprint == audit(roles)["fingerprint"]
        reports = {
            report["role"]: report for report in json.loads((run_dir / "workers.json").read_text())
        }
        for role, args in roles.items():
            assert reports[role]["fingerprint"] == audit({role: args})["fingerprint"]
            for key in ("lr", "save", "kl_coef"):
                assert reports[role]["explain"][key] == str(explain(args, key))
        assert reports["actor"]["explain"]["world_size"].startswith("world_size = 8  from runtime ")
        assert {report["pid"] for report in reports.values()}.isdisjoint({os.getpid(), 0})

        changes = diff_audits(record, load_audit(run_dir / "workers"))
        assert [(c.role, c.key, c.after_origin.layer) for c in changes if c.after_origin] == [
            ("actor", "world_size", "runtime"),
            ("critic", "world_size", "runtime"),
        ]
        assert SECRET not in (run_dir / "layerconf-audit.json").read_text()
        assert SECRET not in (run_dir / "workers" / "layerconf-audit.json").read_text()
