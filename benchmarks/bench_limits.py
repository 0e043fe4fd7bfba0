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
- 20,000 repeats of ``--lr 1e-5``, refused before parsing (``MAX_OPTIONS``), and
  ``MAX_OPTIONS`` options, parsed; with the share of the time that is layerconf's own (the rest
  is argparse's, which grows with the square of the options) at 1,000 to 4,000 options.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
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
    setup = "from layerconf import load_audit"
    return {
        f"deepest JSON ({size:,} bytes of '[')": child(setup, f"load_audit({str(deepest)!r})"),
        f"JSON nested {depth} deep (read, not a record)": child(
            setup, f"load_audit({str(nested)!r})"
        ),
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


def own_share() -> list[dict[str, Any]]:
    """layerconf's own time against argparse's for n repeats of one option (the fastest of 5
    rounds of each, interleaved: the difference of two noisy medians can be negative)."""
    import argparse
    import time

    from layerconf import PLAIN, resolve_roles

    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float)
    rows = []
    for n in (100, 200) if QUICK else (1000, 2000, 4000):
        argv = ["--lr", "1e-5"] * n
        plain, ours = [], []
        for _ in range(5):
            start = time.perf_counter()
            parser.parse_known_args(argv)
            plain.append(time.perf_counter() - start)
            start = time.perf_counter()
            resolve_roles(parser, argv, preset=PLAIN)
            ours.append(time.perf_counter() - start)
        argparse_s, total_s = min(plain), min(ours)
        rows.append(
            {"options": n, "argparse_s": argparse_s, "layerconf_own_s": total_s - argparse_s}
        )
    return rows


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
    print("\nRepeated options: argparse's time and layerconf's own (resolve_roles - argparse)")
    for row in results["own_share"]:
        print(
            f"  {row['options']:>6,} options: argparse {row['argparse_s']:.3f} s, "
            f"layerconf's own {row['layerconf_own_s']:.3f} s"
        )
    save("limits", results)


if __name__ == "__main__":
    main()
