"""The cost of `load_profile("megatron-slime")`, which sits on the path of every CLI call.

Baseline: the obvious way, ``json.load`` of the 583 KB dump and one ``add_argument`` per action
(`layerconf.profiles._compile.reference_parser`, which builds an identical parser). Also
measured: each part of both paths, copying a cached parser instead (``copy.deepcopy``), parsing
the real 109-token command line for scale, and the whole first call in fresh interpreters.

Run: ``python benchmarks/bench_profile.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from _timing import QUICK, measure, report, save
from layerconf.profiles import loader
from layerconf.profiles._compile import reference_parser

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "megatron_slime_args.json"
ARGV = (ROOT / "tests" / "fixtures" / "slime_ppo_argv.txt").read_text().splitlines()
MODULE = "megatron_slime"

# Each child imports what both paths need, then prints the seconds of one first build: the
# interpreter is fresh (no data decoded, argparse never used yet, cold caches) and gc runs.
_PRELUDE = """
import json, time, layerconf.profiles.loader as p, layerconf.profiles._compile as c
import layerconf.profiles.megatron_slime
"""
_CHILD = {
    "fresh process: first load_profile()": """
t = time.perf_counter(); p.load_profile(); print(time.perf_counter() - t)
""",
    "fresh process: naive json.load + add_argument": f"""
t = time.perf_counter()
with open({str(FIXTURE)!r}, "rb") as f: c.reference_parser(json.load(f))
print(time.perf_counter() - t)
""",
    "fresh process: import layerconf.profiles.loader and its type module": """
import sys
for name in ("layerconf.profiles.loader", "layerconf.profiles.megatron_slime"):
    del sys.modules[name]
t = time.perf_counter()
import layerconf.profiles.loader, layerconf.profiles.megatron_slime
print(time.perf_counter() - t)
""",
}


def _fresh(code: str, runs: int) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    samples = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _PRELUDE + code],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        samples.append(float(out.stdout.strip()))
    return statistics.median(samples)


def main() -> None:
    raw_fixture = FIXTURE.read_bytes()
    fixture = json.loads(raw_fixture)
    raw_profile = loader._read_data(MODULE)
    cached_parser = loader.load_profile()

    def naive() -> object:
        return reference_parser(json.loads(raw_fixture))

    def cold() -> object:
        loader._spec.cache_clear()
        return loader.load_profile()

    rows = [
        ("naive: json.loads(583 KB dump) + add_argument", measure(naive)),
        ("  its json.loads(583 KB dump) alone", measure(lambda: json.loads(raw_fixture))),
        ("  its add_argument per action alone", measure(lambda: reference_parser(fixture))),
        ("load_profile, first call (read + decode + build)", measure(cold)),
        ("  json.loads(185 KB profile data) alone", measure(lambda: json.loads(raw_profile))),
        ("  read + decode, once per process", measure(lambda: loader._spec.__wrapped__(MODULE))),
        ("load_profile, later calls (build only)", measure(loader.load_profile)),
        (
            "alternative: copy.deepcopy(a cached parser)",
            measure(lambda: copy.deepcopy(cached_parser)),
        ),
        (
            "for scale: parse_known_args(109-token argv)",
            measure(lambda: cached_parser.parse_known_args(ARGV)),
        ),
    ]
    records = report(
        "load_profile('megatron-slime'): 1,041 actions, 38 groups",
        rows,
        baseline="naive: json.loads(583 KB dump) + add_argument",
    )

    runs = 3 if QUICK else 15
    fresh = [(name, _fresh(code, runs)) for name, code in _CHILD.items()]
    fresh_records = report(
        f"first call in a fresh interpreter (median of {runs} processes, gc on)",
        fresh,
        baseline="fresh process: naive json.load + add_argument",
    )
    path = save("bench_profile", {"in_process": records, "fresh_process": fresh_records})
    print(f"\nsaved {path}")


if __name__ == "__main__":
    main()
