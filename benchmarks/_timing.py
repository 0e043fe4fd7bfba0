"""Timing helpers shared by the benchmarks: medians of many repetitions, reported as ratios.

The machines are shared and noisy, so every benchmark measures its baseline in the same run
and reports ratios; absolute times are printed for context only.
"""

from __future__ import annotations

import gc
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

QUICK = "--quick" in sys.argv


def measure(function: Callable[[], object], *, repeat: int = 31, number: int = 0) -> float:
    """Median seconds per call of `function` over `repeat` rounds of `number` calls each.

    `number` 0 picks a count that makes one round last about 20 ms. In quick mode (``--quick``,
    used by CI to prove the benchmark still runs) it does three short rounds.
    """
    function()  # warm-up
    if number <= 0:
        number = 1
        while True:
            start = time.perf_counter()
            for _ in range(number):
                function()
            if time.perf_counter() - start > (0.002 if QUICK else 0.02) or number >= 1 << 20:
                break
            number *= 2
    rounds = 3 if QUICK else repeat
    samples = []
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(number):
                function()
            samples.append((time.perf_counter() - start) / number)
    finally:
        if gc_was_enabled:
            gc.enable()
    return statistics.median(samples)


#: The confidence of the interval a figure is reported with (the median's, see `spread`).
CONFIDENCE = 0.95


def interleaved(
    functions: Mapping[str, Callable[[], object]], rounds: int, *, slot: float = 0.01
) -> dict[str, list[float]]:
    """Seconds per call of each function, `rounds` samples each, taken round by round.

    A round times every function once (a slot of `number` calls, `number` chosen after a
    warm-up so that a slot lasts about `slot` seconds; one call for a slower function), in
    turn, forwards in even rounds and backwards in odd ones: a neighbour's load, a frequency
    change or the order itself hits every function of a round alike, so a ratio of two
    samples of one round compares like with like. The garbage collector is off while timing,
    as in `measure`.
    """
    numbers = {}
    for name, function in functions.items():
        start = time.perf_counter()
        function()  # warm-up, and a first estimate
        first = time.perf_counter() - start
        numbers[name] = max(1, min(1 << 20, int(slot / max(first, 1e-9))))
    if QUICK:
        rounds = min(rounds, 3)
        numbers = dict.fromkeys(numbers, 1)
    names = list(functions)
    samples: dict[str, list[float]] = {name: [] for name in names}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for index in range(rounds):
            for name in names if index % 2 == 0 else reversed(names):
                function, number = functions[name], numbers[name]
                start = time.perf_counter()
                for _ in range(number):
                    function()
                samples[name].append((time.perf_counter() - start) / number)
    finally:
        if gc_was_enabled:
            gc.enable()
    return samples


def spread(samples: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(median, low, high): the median of `samples` and a confidence interval for it.

    The interval holds the population's median with probability at least `confidence`
    whatever the distribution of the samples (order statistics: the k-th smallest and k-th
    largest sample, k the largest with P(Binomial(n, 1/2) < k) <= (1 - confidence) / 2).
    It narrows as 1/sqrt(n) with more samples, unlike the interquartile range; about n = 20
    it is close to it. With fewer than 6 samples no k qualifies, and (min, max) is given,
    which holds the median with less confidence (75% for 3 samples).
    """
    ordered = sorted(samples)
    n = len(ordered)
    if n == 0:
        raise ValueError("no samples")
    if any(math.isnan(value) for value in ordered):
        raise ValueError("a sample is NaN: leave out the rounds that gave no figure")
    tail, k = (1 - confidence) / 2, 0
    below = 0.0  # P(Binomial(n, 1/2) < k + 1)
    while k < n // 2:
        below += math.comb(n, k) / 2**n
        if below > tail:
            break
        k += 1
    k = max(k, 1)  # k-th smallest, 1-based
    return statistics.median(ordered), ordered[k - 1], ordered[n - k]


def judge(low: float, high: float, goal: float, *, at_most: bool) -> str:
    """PASS when the whole interval [low, high] meets the goal (``<= goal`` if `at_most`, else
    ``>= goal``), MISS when none of it does, and "borderline" when the goal lies inside it."""
    if at_most:
        return "PASS" if high <= goal else "MISS" if low > goal else "borderline"
    return "PASS" if low >= goal else "MISS" if high < goal else "borderline"


def cold(function: Callable[[], object]) -> Callable[[], object]:
    """`function`, called with layerconf's cache of role files emptied first.

    layerconf keeps the role files it read lately (by path and sha256 of the bytes), which
    spares slime's second ``parse_megatron_role_args`` call re-reading the file the first one
    read. A benchmark repeats one job many times, so each call starts with that cache emptied:
    every round reads and checks its role file. The drop-in's base layer, kept by an actor's
    call for the critic's with the same namespace, is dropped too. Only these are emptied: the
    per-parser tables a first call builds (default layer, rule tables, option index, origin
    tables) stay, so a round costs what a *steady* call costs, not what a trainer's first call
    in a fresh process costs; ``bench_first_call.py`` measures that one, a process per sample.
    """
    from layerconf.presets.role_file import _ROLE_FILES
    from layerconf.presets.slime._base_layer import _BASE

    def call() -> object:
        _ROLE_FILES.clear()
        _BASE[0] = None  # the drop-in's base layer kept for a next call with one namespace
        return function()

    return call


def report(title: str, rows: Sequence[tuple[str, float]], baseline: str) -> list[dict[str, Any]]:
    """Print one aligned table (name, median, ratio to `baseline`) and return it as records."""
    base = dict(rows)[baseline]
    width = max(len(name) for name, _ in rows)
    print(f"\n{title}")
    print(f"{'approach':<{width}}  {'median':>12}  {'ratio':>8}")
    records = []
    for name, seconds in rows:
        ratio = seconds / base
        print(f"{name:<{width}}  {_human(seconds):>12}  {ratio:>7.2f}x")
        records.append({"approach": name, "median_s": seconds, "ratio": ratio})
    print(f"(ratio: time / time of {baseline!r}; lower is faster)")
    return records


def save(name: str, data: object) -> Path:
    """Write `data` as JSON to benchmarks/results/<name>.json and return the path."""
    out = Path(__file__).parent / "results" / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    return out


def _human(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.1f} µs"
    return f"{seconds * 1e9:.0f} ns"
