"""Time and peak memory for the worst inputs under layerconf's caps (docs/performance.md, Limits).

Run: ``python benchmarks/bench_limits.py`` (``--quick`` to only prove it runs, on small inputs).
Each input is read in a fresh child process, so that its peak memory is its own: the child
imports what it needs, then reports the seconds of the one call (``time.perf_counter``) and
how much its peak resident memory grew during it (Linux's ``VmHWM``, else ru_maxrss: libyaml's
C allocations count in too, which tracemalloc would miss).

- the largest alias-free role file under the size cap (``MAX_BYTES``, 16 MiB: ``lr: [0,0,...]``,
  about 8M items), refused at ``MAX_NODES`` nodes while it is composed, and the largest
  document accepted (``MAX_NODES`` nodes);
- the deepest JSON: an audit record of 32 MiB of ``[`` (``MAX_RECORD_BYTES``), refused, and
  one nested just under what the JSON reader takes, refused as not a record;
- the densest audit record under the size cap: a role of 1,000,000 keys of one small value
  each (26 MB, 4M JSON values), refused before it is decoded (``MAX_RECORD_VALUES``);
- 20,000 repeats of ``--lr 1e-5``, refused before parsing (``MAX_OPTIONS``), and
  ``MAX_OPTIONS`` options, parsed;
- 500 to 4,000 repeats of ``--lr 1e-5`` through bare ``parser.parse_known_args``,
  ``layerconf.parse_known_args`` and ``resolve_roles``, on the running Python, with the growth
  exponent of each and of layerconf's own share (its time minus argparse's): argparse before
  Python 3.13 finds each next option with a ``min()`` over all of them (quadratic), 3.13's
  scans forward; layerconf's own share should grow linearly on every Python.
"""

from __future__ import annotations

import gc
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _timing import QUICK, save

SRC = Path(__file__).resolve().parent.parent / "src"

CHILD = """
import json, resource, sys, time
{setup}
def peak():  # KiB; VmHWM is the new process's own (ru_maxrss keeps the parent's across exec)
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
before = peak()
start = time.perf_counter()
try:
    outcome = {call}
except Exception as error:
    outcome = type(error).__name__ + ": " + str(error)[:160]
seconds = time.perf_counter() - start
after = peak()
print(json.dumps({{"seconds": seconds, "peak_growth_kib": after - before,
                  "peak_kib": after, "outcome": str(outcome)[:200]}}))
"""


def child(setup: str, call: str) -> dict[str, Any]:
    """Run `call` after `setup` in a fresh interpreter; its seconds, memory and outcome."""
    code = CHILD.format(setup=textwrap.dedent(setup), call=call)
    env = dict(os.environ)  # the layerconf this process imports, from a checkout's src first
    if SRC.is_dir():
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def yaml_cases(directory: Path) -> dict[str, dict[str, Any]]:
    from layerconf.sources.yaml import MAX_BYTES, MAX_NODES

    size = 200_000 if QUICK else MAX_BYTES - 16
    largest = directory / "largest.yaml"
    head = "megatron:\n  - role: actor\n    overrides:\n      lr: ["
    items = (size - len(head) - 2) // 2
    largest.write_text(head + ",".join(["0"] * items) + "]\n")
    accepted = directory / "accepted.yaml"
    nodes = (MAX_NODES - 10) if not QUICK else 1000
    accepted.write_text(head + ",".join(["0"] * nodes) + "]\n")
    setup = "from layerconf.presets.slime import check_role_file"
    return {
        f"largest alias-free role file ({largest.stat().st_size:,} bytes, {items:,} items)": child(
            setup, f"[p.message for p in check_role_file({str(largest)!r}).errors][:1]"
        ),
        f"largest document accepted ({nodes:,} items)": child(
            setup, f"len(check_role_file({str(accepted)!r}).errors)"
        ),
    }


def json_cases(directory: Path) -> dict[str, dict[str, Any]]:
    from layerconf.audits.io import MAX_RECORD_BYTES

    deepest = directory / "deepest.json"
    size = 100_000 if QUICK else MAX_RECORD_BYTES
    with open(deepest, "w") as stream:
        stream.write("[" * size)
    nested = directory / "nested.json"
    depth = 900  # under the JSON reader's recursion bound (Python's, 1,000 by default)
    nested.write_text("[" * depth + "]" * depth)
    dense = directory / "dense.json"
    keys = 5_000 if QUICK else 1_000_000
    with open(dense, "w") as stream:
        stream.write('{"format":2,"layerconf":"0","fingerprint":"","argv":null,"files":{},')
        stream.write('"roles":{"r":{"settings":{')
        stream.write(",".join(f'"k{i}":{{"value":{i}}}' for i in range(keys)))
        stream.write("}}}}")
    setup = "from layerconf import load_audit"
    return {
        f"deepest JSON ({size:,} bytes of '[')": child(setup, f"load_audit({str(deepest)!r})"),
        f"JSON nested {depth} deep (read, not a record)": child(
            setup, f"load_audit({str(nested)!r})"
        ),
        f"densest record ({keys:,} keys of one role)": child(setup, f"load_audit({str(dense)!r})"),
    }


def argv_cases() -> dict[str, dict[str, Any]]:
    setup = """
        import argparse
        from layerconf import PLAIN, resolve_roles
        from layerconf.sources.argv import MAX_OPTIONS
        parser = argparse.ArgumentParser()
        parser.add_argument("--lr", type=float)
    """
    repeats = 2_000 if QUICK else 20_000
    limit = 200 if QUICK else "MAX_OPTIONS"
    return {
        f"{repeats:,} repeats of --lr 1e-5": child(
            setup, f"resolve_roles(parser, ['--lr', '1e-5'] * {repeats}, preset=PLAIN)"
        ),
        "MAX_OPTIONS repeats of --lr 1e-5 (parsed)": child(
            setup, f"resolve_roles(parser, ['--lr', '1e-5'] * {limit}, preset=PLAIN)['main'].lr"
        ),
    }


#: The repeats of ``--lr 1e-5`` whose times give the growth exponents.
REPEATS = (100, 200, 400) if QUICK else (500, 1000, 2000, 4000)


def exponent(sizes: list[int], seconds: list[float]) -> float | None:
    """The least-squares slope of log(seconds) against log(size): 1 is linear, 2 quadratic.

    None when a time is not positive (a difference of two times within the noise)."""
    if min(seconds) <= 0:
        return None
    xs = [math.log(size) for size in sizes]
    ys = [math.log(second) for second in seconds]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def own_share() -> dict[str, Any]:
    """Bare ``parser.parse_known_args`` against layerconf's (the argv source, and
    `resolve_roles`) for n repeats of one option, on the running Python, with the growth
    exponent of each and of layerconf's own share (layerconf's time minus argparse's).

    Each time is the CPU time of the process (`time.process_time`: the machines are shared,
    and time spent waiting for a core is not the parse's), the fastest of its rounds, the
    three calls interleaved round by round, with the collector off while timed.
    """
    import argparse

    from layerconf import PLAIN, resolve_roles
    from layerconf.sources.argv import parse_known_args

    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float)
    calls = {
        "argparse": lambda argv: parser.parse_known_args(argv),
        "layerconf.parse_known_args": lambda argv: parse_known_args(parser, argv),
        "resolve_roles": lambda argv: resolve_roles(parser, argv, preset=PLAIN),
    }
    for call in calls.values():  # first calls build per-parser tables: not what is measured
        call(["--lr", "1"])
    collecting = gc.isenabled()
    gc.disable()
    try:
        rows = [_round(calls, n) for n in REPEATS]
    finally:
        if collecting:
            gc.enable()
    sizes = [row["options"] for row in rows]
    growth = {name: exponent(sizes, [row[name] for row in rows]) for name in calls}
    for name in ("layerconf.parse_known_args", "resolve_roles"):
        own = [row[name] - row["argparse"] for row in rows]
        growth[f"{name} - argparse"] = exponent(sizes, own)
    return {"rows": rows, "exponents": growth}


def _round(calls: dict[str, Any], n: int) -> dict[str, Any]:
    """The fastest CPU time of each call for n repeats of ``--lr 1e-5``."""
    argv = ["--lr", "1e-5"] * n
    best = dict.fromkeys(calls, math.inf)
    for _ in range(3 if QUICK else 7 if n <= 1000 else 5):
        for name, call in calls.items():
            start = time.process_time()
            call(argv)
            best[name] = min(best[name], time.process_time() - start)
    return {"options": n, **best}


def show_share(share: dict[str, Any]) -> None:
    print(
        "\nRepeated options (n x --lr 1e-5; CPU time, the fastest round): bare parse_known_args, "
        "layerconf's, and layerconf's own share (layerconf's - argparse's)"
    )
    print(f"{'n':>6} {'argparse':>10} {'source':>10} {'own':>9} {'resolve_roles':>14} {'own':>9}")
    for row in share["rows"]:
        base = row["argparse"]
        source, resolve = row["layerconf.parse_known_args"], row["resolve_roles"]
        own, own_resolve = (source - base) * 1e3, (resolve - base) * 1e3
        print(
            f"{row['options']:>6,} {base * 1e3:>8.1f}ms {source * 1e3:>8.1f}ms {own:>7.1f}ms "
            f"{resolve * 1e3:>12.1f}ms {own_resolve:>7.1f}ms"
        )
    print("growth exponent (time ~ n^k; 1 linear, 2 quadratic):")
    for name, found in share["exponents"].items():
        shown = f"{found:.2f}" if found is not None else "n/a (a difference within the noise)"
        print(f"  {name:<38} {shown}")
    if (share["exponents"]["argparse"] or 0) > 1.5:
        print(
            "  (argparse is quadratic here: layerconf's share is a small difference of two large"
            " times, which a loaded machine blurs; instruction counts settle it, see"
            " docs/performance.md)"
        )


def main() -> None:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="layerconf-limits-") as name:
        directory = Path(name)
        results["yaml"] = yaml_cases(directory)
        results["json"] = json_cases(directory)
    results["argv"] = argv_cases()
    results["own_share"] = own_share()
    print(f"Worst inputs under the caps (python {sys.version.split()[0]}; one child each)")
    print(f"{'input':<64} {'time':>9} {'peak +MiB':>10}  outcome")
    for group in ("yaml", "json", "argv"):
        for case, found in results[group].items():
            growth = found["peak_growth_kib"] / 1024
            outcome = found["outcome"][:70]
            print(f"{case:<64} {found['seconds']:>8.3f}s {growth:>10.1f}  {outcome}")
    show_share(results["own_share"])
    save("limits", results)


if __name__ == "__main__":
    main()
