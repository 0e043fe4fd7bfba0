"""The speed a trainer sees: one first call in a fresh process, beside the steady state.

A trainer resolves its configuration once per process. The steady-state figures of
``benchmarks/run.py`` repeat one call on one parser, so the per-parser tables layerconf builds on
a first call (default layer, rule tables, option index, origin tables) are paid once and then
amortised; here every sample is a new Python process that builds the parser, then times exactly
one call. Samples of the approaches alternate round by round, so a noisy neighbour hurts them
alike, and each figure is the median of its per-round ratios (the two approaches' processes
of one round), given with the 95% confidence interval of that median; a verdict is PASS or
MISS only when the whole interval is on one side of the target, borderline otherwise.

On the real workload (the bundled ``megatron-slime`` parser, 1,041 actions; the real 109-token
PPO command line; its role file, read from ``tests/fixtures``):

- ``first call, imports done``: every module the call needs is imported before the clock
  starts (what a trainer that already imported layerconf pays), layerconf's
  ``resolve_roles(parser, argv)`` (argv -> both roles with full provenance) against slime's way
  (``parse_known_args``, then ``parse_megatron_role_args`` per role, as
  ``tests/slime_reference.py`` transcribes it).
  Target: layerconf >= 2x faster.
- ``first call, lazy imports counted``: only ``import layerconf`` and its dependencies before
  the clock; the first call also pays the modules it imports on first use.
- ``compat first call``: the drop-in ``layerconf.compat.slime.parse_megatron_role_args`` for
  actor then critic, on a namespace ``parse_known_args`` gave before the clock, against slime's
  own function. Target: the drop-in >= 5x faster.
- ``floor``: ``parse_known_args``, one C-loader read of the role file and one ``vars`` copy per
  role, the least any tool can do; both approaches are reported as multiples of it, and the
  2x target is printed in milliseconds beside it: how close to the floor a first call that
  records provenance would have to come.

Each child collects the set-up's garbage before its clock starts (the garbage collector stays on
during the call: what the call's own objects set off is counted, as a trainer would pay it).

Run: ``python benchmarks/bench_first_call.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _timing import QUICK, judge, save, spread

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = 3 if QUICK else 25
ARGV_TARGET = 2.0
COMPAT_TARGET = 5.0

#: Modules imported before the clock in "imports done": everything the first call imports.
_EVERYTHING = (
    "layerconf.presets",
    "layerconf.presets.slime",
    "layerconf.presets.slime.compat",
    "layerconf.compat.slime",  # (the name the drop-in is imported by, in the timed call)
    "layerconf.rules",
    "layerconf.sources.argv",
    "layerconf.sources.yaml",
    "difflib",
)


# ---------------------------------------------------------------------------------------------
# The child: one process, one timed call.


def _child(approach: str, *, counted: bool = False) -> dict[str, float]:
    """Set `approach` up, time its one call, return seconds (run in a fresh process).

    `counted`: instead of timing it, make the call through ``divmod`` (`bench_instructions.py`
    has callgrind count only while CPython's ``builtin_divmod`` runs); returns no seconds."""
    import gc
    import importlib
    import time

    import attrs  # noqa: F401  (the trainer has its dependencies imported)
    import deepmerge  # noqa: F401
    import yaml

    sys.path.insert(0, str(ROOT))
    from tests import slime_reference as slime  # slime's way, step by step (no layerconf)

    import layerconf

    if not approach.endswith("+lazy"):
        for module in _EVERYTHING:
            importlib.import_module(module)
    argv = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
    parser = layerconf.load_profile()
    base = None
    if approach.startswith(("compat", "slime-fn")):
        base, _ = parser.parse_known_args(argv)
    kind = approach.removesuffix("+lazy")

    def layerconf_argv() -> object:
        return layerconf.resolve_roles(parser, argv)

    def slime_argv() -> object:
        return slime.slime_resolve_roles(parser, argv)

    def compat() -> object:
        from layerconf.compat.slime import parse_megatron_role_args

        path = base.megatron_config_path  # type: ignore[union-attr]
        return [parse_megatron_role_args(base, path, role) for role in ("actor", "critic")]

    def slime_function() -> object:
        path = base.megatron_config_path  # type: ignore[union-attr]
        return [
            slime.slime_parse_megatron_role_args(base, path, role) for role in ("actor", "critic")
        ]

    def floor() -> object:
        args, _ = parser.parse_known_args(argv)
        with open(args.megatron_config_path, "rb") as stream:
            yaml.load(stream, Loader=yaml.CSafeLoader)
        return [dict(vars(args)) for _ in ("actor", "critic")]

    call = {
        "layerconf": layerconf_argv,
        "slime": slime_argv,
        "compat": compat,
        "slime-fn": slime_function,
        "floor": floor,
    }[kind]
    # The collector's debt of the set-up (the imports, the parser: ~25,000 objects) is paid
    # before the clock: otherwise the young-generation collection it owes falls in whichever
    # call comes first (~0.9 ms here, the same for every approach). The collector stays on:
    # the collections a call's own objects set off are counted.
    gc.collect()
    if counted:
        divmod(Counted(call), 1)
        return {}
    start = time.perf_counter()
    call()
    return {"seconds": time.perf_counter() - start}


class Counted:
    """Calls `function` as ``divmod(Counted(function), 1)``: the one C function a callgrind run
    is told to count inside (``--toggle-collect=builtin_divmod``), so that only the call is
    counted, not the interpreter's start, the imports or the set-up."""

    def __init__(self, function: Callable[[], object]) -> None:
        self.function = function

    def __divmod__(self, _other: object) -> tuple[int, int]:
        self.function()
        return (0, 0)


# ---------------------------------------------------------------------------------------------
# The parent: alternate fresh processes, report medians and ratios.


def _sample(approach: str, cache: str) -> float:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHONPYCACHE")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as an installed package has
    env["PYTHONPYCACHEPREFIX"] = cache
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *sys.path])
    done = subprocess.run(
        [sys.executable, __file__, "--child", approach],
        cwd=FIXTURES,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{approach} failed in its child process:\n{done.stderr}")
    return float(json.loads(done.stdout.splitlines()[-1])["seconds"])


APPROACHES = ("layerconf", "slime", "layerconf+lazy", "compat", "slime-fn", "compat+lazy", "floor")
#: The figures: name, (numerator, denominator) of the per-round ratio, target, what it reads as.
FIGURES: tuple[tuple[str, tuple[str, str], float | None, str], ...] = (
    (
        "first call, imports done: layerconf vs slime's way",
        ("slime", "layerconf"),
        ARGV_TARGET,
        "x faster (argv -> both roles, full provenance)",
    ),
    (
        "first call, lazy imports counted: layerconf vs slime's way",
        ("slime", "layerconf+lazy"),
        None,
        "x faster",
    ),
    (
        "compat first call: drop-in vs slime's function",
        ("slime-fn", "compat"),
        COMPAT_TARGET,
        "x faster (actor then critic)",
    ),
    ("compat first call, lazy imports counted", ("slime-fn", "compat+lazy"), None, "x faster"),
    ("layerconf / floor", ("layerconf", "floor"), None, "x the floor (lower is better)"),
    ("slime's way / floor", ("slime", "floor"), None, "x the floor (lower is better)"),
)


def measure_first_calls(
    samples: int = SAMPLES, approaches: Sequence[str] = APPROACHES
) -> dict[str, list[float]]:
    """Seconds of one first call per fresh process: `samples` rounds, each running every
    approach once, in turn (forwards, then backwards the next round)."""
    times: dict[str, list[float]] = {approach: [] for approach in approaches}
    # The children read and write their .pyc files under a temporary PYTHONPYCACHEPREFIX
    # (PYTHONDONTWRITEBYTECODE dropped): "lazy imports counted" times imports, not compiling.
    with tempfile.TemporaryDirectory(prefix="layerconf-pycache-") as cache:
        for approach in approaches:  # one untimed round fills the bytecode cache
            _sample(approach, cache)
        for index in range(samples):
            for approach in approaches if index % 2 == 0 else reversed(approaches):
                times[approach].append(_sample(approach, cache))
    return times


def ratios(times: dict[str, list[float]], numerator: str, denominator: str) -> list[float]:
    """The figure of each round: `numerator`'s time over `denominator`'s, both of that round."""
    return [a / b for a, b in zip(times[numerator], times[denominator], strict=True)]


def figures(times: dict[str, list[float]]) -> list[dict[str, Any]]:
    """The headline figures: each the median of its per-round ratios, with the confidence
    interval of that median (`_timing.spread`) and, where there is a target, the verdict:
    PASS or MISS when the whole interval is on one side of it, borderline otherwise."""
    rows: list[dict[str, Any]] = []
    for name, (numerator, denominator), target, note in FIGURES:
        values = ratios(times, numerator, denominator)
        ratio, low, high = spread(values)
        verdict = "" if target is None else judge(low, high, target, at_most=False)
        rows.append(
            {
                "figure": name,
                "ratio": ratio,
                "low": low,
                "high": high,
                "rounds": len(values),
                "pair": [numerator, denominator],
                "target": target,
                "verdict": verdict,
                "note": note,
            }
        )
    return rows


def what_the_target_means(medians: dict[str, float]) -> str:
    """The 2x target in milliseconds, beside the floor: how close to the floor a first call
    that records provenance would have to be."""
    goal = medians["slime"] / ARGV_TARGET
    floor, now = medians["floor"], medians["layerconf"]
    if goal > floor:
        room = f"{(goal - floor) * 1e3:.2f} ms over it for everything provenance adds"
    else:
        room = "below it: no call that parses the command line and reads the file can reach it"
    return (
        f"The {ARGV_TARGET:g}x target: slime's way takes {medians['slime'] * 1e3:.2f} ms, so "
        f"layerconf's first call would take {goal * 1e3:.2f} ms; the floor (parse_known_args "
        f"+ one C-loader read + a dict copy per role) takes {floor * 1e3:.2f} ms: that is "
        f"{goal / floor:.2f}x the floor, {room} (layerconf now: {now * 1e3:.2f} ms, "
        f"{now / floor:.2f}x the floor)."
    )


def main() -> None:
    times = measure_first_calls()
    medians = {approach: statistics.median(values) for approach, values in times.items()}
    print(f"\nOne first call per fresh process (median of {SAMPLES} processes each)")
    for approach in APPROACHES:
        print(f"  {approach:<16} {medians[approach] * 1e3:8.3f} ms")
    rows = figures(times)
    print("Per-round ratios: median [95% confidence interval of the median]")
    for item in rows:
        target = f" (target >= {item['target']:g}x)" if item["target"] else ""
        print(
            f"{item['verdict'] or '    ':<10}  {item['figure']}: {item['ratio']:.2f}"
            f" [{item['low']:.2f} to {item['high']:.2f}]{item['note']}{target}"
        )
    meaning = what_the_target_means(medians)
    print(meaning)
    path = save(
        "first_call",
        {"samples": SAMPLES, "medians_s": medians, "figures": rows, "target_means": meaning},
    )
    print(f"results: {path}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], counted="--counted" in sys.argv[3:])))
    else:
        main()
