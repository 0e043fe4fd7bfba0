"""A minimal PPO-style trainer on Ray whose configuration comes from layerconf.

Run it from the repository root, with layerconf and Ray installed (``pip install "ray>=2.9"``):

    python examples/ray/train.py --run-dir runs/ray-001 -- $(cat examples/ppo_argv.txt)

What it does, as a real trainer (slime's ``train.py``) would:

1. The driver resolves the roles from the trainer's command line (everything after ``--``)
   with ``resolve_roles(load_profile(), argv)``; a bad launch stops here, before any worker.
2. It writes the audit record into the run directory (``layerconf-audit.json``).
3. It starts one Ray actor per role (``RoleWorker``) and sends each its own role's namespace.
   The namespace is pickled with its provenance, so ``layerconf.explain(args, "lr")`` works in
   the worker. Each worker proves it received the configuration the driver resolved: it
   computes the fingerprint of its role, ``layerconf.audit({role: args})["fingerprint"]``,
   and refuses to start if it differs from the driver's.
4. Each worker fills in what only it knows (``args.world_size``): an assignment after
   resolution, which layerconf records with this file and line. At the end the driver asks the
   workers for their namespaces and writes a second record, ``workers/layerconf-audit.json``,
   so ``layerconf audit diff RUN_DIR RUN_DIR/workers`` shows what the workers changed.

The driver prints one line per role and writes ``workers.json`` (what each worker answered)
into the run directory; it exits 1 if a worker's answers differ from the driver's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ray

import layerconf


@ray.remote
class RoleWorker:
    """One role's training process: PPO's actor or critic, in its own Ray worker process."""

    def __init__(self, role: str, args: argparse.Namespace, fingerprint: str) -> None:
        # The fingerprint of the values this process received: equal to the driver's, or the
        # configuration changed on the way (a different layerconf, a lost key, a bad pickle).
        received = layerconf.audit({role: args})["fingerprint"]
        if received != fingerprint:
            raise RuntimeError(
                f"{role}: the configuration received has fingerprint {received}, the driver "
                f"resolved {fingerprint}: refusing to train with another configuration"
            )
        self.role = role
        self.args = args
        self.fingerprint = received
        # What only the worker knows, set as Megatron's initialize() sets it. layerconf records
        # the assignment: explain(args, "world_size") answers "runtime train.py:<this line>".
        args.world_size = getattr(args, f"{role}_num_nodes") * getattr(
            args, f"{role}_num_gpus_per_node"
        )

    def report(self) -> dict[str, Any]:
        """What this worker sees: its process, fingerprint, and the origin of some values."""
        return {
            "role": self.role,
            "pid": os.getpid(),
            "fingerprint": self.fingerprint,
            "explain": {
                key: str(layerconf.explain(self.args, key))
                for key in ("lr", "save", "kl_coef", "world_size")
            },
        }

    def explain(self, key: str) -> layerconf.Setting:
        """`layerconf.explain` of one key, computed in this worker (a Setting pickles back)."""
        return layerconf.explain(self.args, key)

    def step(self, rollout: int) -> dict[str, Any]:
        """One PPO update of this role's model; a stand-in that says what it would use."""
        return {"role": self.role, "rollout": rollout, "lr": self.args.lr, "pid": os.getpid()}

    def configuration(self) -> argparse.Namespace:
        """This worker's namespace now, its runtime assignments included."""
        return self.args


def role_fingerprints(roles: Mapping[str, argparse.Namespace]) -> dict[str, str]:
    """Each role's own fingerprint: what its worker computes from the namespace it receives."""
    return {role: layerconf.audit({role: args})["fingerprint"] for role, args in roles.items()}


def start_workers(roles: Mapping[str, argparse.Namespace]) -> dict[str, Any]:
    """One `RoleWorker` per role, each sent its own namespace and the fingerprint to expect."""
    fingerprints = role_fingerprints(roles)
    return {role: RoleWorker.remote(role, args, fingerprints[role]) for role, args in roles.items()}


def train(options: argparse.Namespace, trainer_argv: list[str]) -> int:
    """Resolve, audit, start the workers, check what they received, run a few rollouts."""
    roles = layerconf.resolve_roles(layerconf.load_profile(), trainer_argv)
    run_dir = Path(options.run_dir)
    record_path = layerconf.write_audit(roles, run_dir)
    record = layerconf.load_audit(record_path)
    # For W&B: wandb.init(config={**layerconf.flatten(record), "layerconf": record.fingerprint})
    print(f"{record_path}: fingerprint {record.fingerprint}")

    workers = start_workers(roles)
    expected = role_fingerprints(roles)
    reports = ray.get([worker.report.remote() for worker in workers.values()])
    mismatches = 0
    for report in reports:
        role = report["role"]
        same = report["fingerprint"] == expected[role]
        for key in ("lr", "save", "kl_coef"):
            same = same and report["explain"][key] == str(layerconf.explain(roles[role], key))
        mismatches += not same
        print(
            f"{role:<6}  pid {report['pid']}  fingerprint {report['fingerprint'][:16]}  "
            f"{'= driver' if same else '!= DRIVER'}  {report['explain']['lr']}"
        )
    for rollout in range(options.rollouts):
        steps = ray.get([worker.step.remote(rollout) for worker in workers.values()])
        print(f"rollout {rollout}: " + ", ".join(f"{s['role']} lr {s['lr']!r}" for s in steps))

    # The configuration the workers ended with, runtime assignments included.
    configurations = ray.get([worker.configuration.remote() for worker in workers.values()])
    final = dict(zip(workers, configurations, strict=True))
    layerconf.write_audit(final, run_dir / "workers")
    (run_dir / "workers.json").write_text(json.dumps(reports, indent=2) + "\n")
    return 1 if mismatches else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``train.py [--run-dir DIR] [--rollouts N] [--num-cpus N] -- TRAINER ARGV...``."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    split = arguments.index("--") if "--" in arguments else len(arguments)
    parser = argparse.ArgumentParser(
        description="A PPO-style trainer on Ray; the trainer's command line follows '--'.",
        usage="%(prog)s [--run-dir DIR] [--rollouts N] [--num-cpus N] -- TRAINER ARGV...",
    )
    parser.add_argument(
        "--run-dir", metavar="DIR", default="runs/ray-example", help="where records go"
    )
    parser.add_argument("--rollouts", metavar="N", type=int, default=2, help="rollouts to run")
    parser.add_argument("--num-cpus", metavar="N", type=int, default=2, help="local Ray CPUs")
    options = parser.parse_args(arguments[:split])
    # A real launch joins its cluster instead: ray.init(address="auto").
    ray.init(num_cpus=options.num_cpus, include_dashboard=False)
    try:
        return train(options, arguments[split + 1 :])
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
