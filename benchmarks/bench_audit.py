"""The cost of an audit record of the real slime PPO launch (two roles, ~1,040 keys each).

Baselines measured in the same run: ``json.dumps(vars(ns), default=repr)`` for each role (a
dump with no origins, no tags, no fingerprint) and one `resolve_roles` call (the resolution
the record describes). Also measured: `write_audit` (with its fsyncs), the record and its text
by the public way (`record_bytes(audit(roles))`, which encodes every entry; `write_audit`
writes most entries from their origin's template instead, to the same bytes) and the durable
file write alone (write, fsync, rename, fsync of the directory: the disk's time, measured apart),
reading the record back, replaying both roles, `flatten`, `diff_audits`, and `explain` on
every key of both roles (what the bulk origin walk of `audit` replaces), and shipping one
role to a worker: pickling its namespace, loading it, and the one-role audit a worker checks
its fingerprint with.

Run: ``python benchmarks/bench_audit.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import tempfile
from pathlib import Path

from _timing import cold, measure, report, save
from layerconf import explain, load_profile, resolve_roles
from layerconf.audits import (
    AUDIT_FILE,
    audit,
    diff_audits,
    flatten,
    load_audit,
    record_bytes,
    write_atomic,
    write_audit,
)

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
ARGV = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
_FILE = "write_atomic(dir, bytes) (the file: write, fsync, rename, fsync the dir)"


def main() -> None:
    os.chdir(FIXTURES)  # the real command line names its role file relatively
    parser = load_profile()
    roles = resolve_roles(parser, ARGV)
    record = audit(roles)
    other = audit(resolve_roles(parser, [*ARGV, "--seed", "7"]))
    keys = sum(len(vars(namespace)) for namespace in roles.values())
    critic = roles["critic"]
    shipped = pickle.dumps(critic)

    def one_role() -> None:
        audit({"critic": critic})

    def plain_json() -> None:
        for namespace in roles.values():
            json.dumps(vars(namespace), default=repr)

    def explain_every_key() -> None:
        for namespace in roles.values():
            for key in vars(namespace):
                explain(namespace, key)

    with tempfile.TemporaryDirectory() as directory:
        path = write_audit(roles, directory)
        size = path.stat().st_size
        data = path.read_bytes()

        def text() -> None:
            record_bytes(audit(roles))

        def replay() -> None:
            loaded = load_audit(path)
            for role in loaded.roles:
                loaded.namespace(role)

        rows = [
            ("json.dumps(vars(ns)) per role (no origins)", measure(plain_json)),
            ("resolve_roles(parser, argv)", measure(cold(lambda: resolve_roles(parser, ARGV)))),
            ("audit(roles)", measure(lambda: audit(roles))),
            (
                "write_audit(roles, dir) (fsync included)",
                measure(lambda: write_audit(roles, directory)),
            ),
            ("record_bytes(audit(roles)) (every entry encoded)", measure(text)),
            (_FILE, measure(lambda: write_atomic(Path(directory), AUDIT_FILE, data))),
            ("load_audit(path)", measure(lambda: load_audit(path))),
            ("load_audit + namespace() of both roles", measure(replay)),
            ("flatten(record)", measure(lambda: flatten(record))),
            ("diff_audits(record, other)", measure(lambda: diff_audits(record, other))),
            ("explain() on every key (per-key alternative)", measure(explain_every_key)),
            ("pickle.dumps(one role's namespace)", measure(lambda: pickle.dumps(critic))),
            ("pickle.loads(one role's namespace)", measure(lambda: pickle.loads(shipped))),
            ("audit({role: args}) of one role (a worker's check)", measure(one_role)),
        ]
    timings = dict(rows)
    own = timings["write_audit(roles, dir) (fsync included)"] - timings[_FILE]
    rows.insert(4, ("write_audit less write_atomic (its own work: the disk's time apart)", own))
    title = (
        f"Auditing the real slime PPO launch: 2 roles, {keys} keys, "
        f"{size / 1024:.0f} KiB file, {len(shipped) / 1024:.0f} KiB a role pickled "
        f"(python {sys.version.split()[0]})"
    )
    by_json = report(title, rows, baseline="json.dumps(vars(ns)) per role (no origins)")
    by_resolve = report("The same, against one resolution", rows, "resolve_roles(parser, argv)")
    save(
        "audit",
        {
            "keys": keys,
            "file_bytes": size,
            "pickled_role_bytes": len(shipped),
            "rows_vs_json": by_json,
            "rows_vs_resolve_roles": by_resolve,
        },
    )


if __name__ == "__main__":
    main()
