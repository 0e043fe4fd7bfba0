"""The cost of a runtime write: ``args.consumed_train_samples = n`` in a trainer's loop.

Run: ``python benchmarks/bench_writes.py`` (``--quick`` to only prove it runs).

Megatron writes a counter on the namespace every step. layerconf records every write to a
resolved namespace (where it was made, so that `explain` can say it), keeping per key the
first write, the latest few and a count. Measured in one run, on the same machine:

* a plain ``argparse.Namespace`` setattr (the baseline);
* the floor of any Python-level write: a subclass whose ``__setattr__`` only calls
  ``object.__setattr__`` (and one whose ``__setattr__`` does nothing at all);
* the floor of any recording that can say file:line (`Recorder`): the least a write can do
  and still know where it was made, without keeping the caller's frame alive;
* layerconf's write, of an int (the loop's case) and of a small list (copied).

The target (issue 13) is a write at most ~10x a plain setattr: reported as PASS/MISS, never
asserted, beside the ratios to both floors, which no recording can go under. Then the memory
and the pickle size of a namespace after one write and after 1M writes to a key.
"""

from __future__ import annotations

import argparse
import gc
import pickle
import statistics
import sys
import timeit
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _timing import QUICK, report, save
from layerconf import Layer, LayerStack, Namespace

#: The target: a recorded write costs at most this many plain setattrs.
TARGET = 10.0
WRITES = 10_000 if QUICK else 1_000_000


class Floor(argparse.Namespace):
    """The least a Python-level __setattr__ can do and still set the attribute."""

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)


class Empty(argparse.Namespace):
    """A Python-level __setattr__ that does nothing: the cost of the call alone."""

    def __setattr__(self, name: str, value: Any) -> None:
        pass


_frame = sys._getframe
_ATOMIC = frozenset({int, float, bool, str, bytes, complex, type(None)})


class Recorder(argparse.Namespace):
    """The least any recording with file:line can do: the recording floor.

    Per write: the caller's frame (`sys._getframe`), one tuple of the key, the value (a
    list copy when not atomic), the caller's code object and instruction offset (not the
    frame itself, which would keep the trainer's locals alive), one append, the instance
    dict store, and a length check. Every 512 writes it throws its log away: it keeps
    nothing, checks nothing (freezing, descriptors, subclasses) and takes no lock, so
    layerconf's write, which does all of that and folds the log into bounded histories,
    cannot cost less.
    """

    __slots__ = ("_log",)

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)
        object.__setattr__(self, "_log", [])

    def __setattr__(
        self, name: str, value: Any, _frame: Any = _frame, _atomic: Any = _ATOMIC
    ) -> None:
        log = self._log
        caller = _frame(1)
        log.append(
            (name, value if type(value) in _atomic else list(value), caller.f_code, caller.f_lasti)
        )
        self.__dict__[name] = value
        if len(log) >= 512:
            del log[:]


def resolved() -> Namespace:
    """A resolved namespace of 1,000 keys, as a trainer holds one."""
    values = {f"key_{index}": index for index in range(1000)}
    values["consumed_train_samples"] = 0
    return LayerStack([Layer.from_mapping("default", values, kind="default")]).resolve()


def interleaved(targets: dict[str, tuple[object, str]], rounds: int) -> dict[str, float]:
    """Median seconds per statement of each target, timed in alternation.

    `targets` maps a name to (an object bound as ``o``, a statement). Not `_timing.measure`:
    that times a function call around each write, which costs more than a plain setattr and
    would flatter every ratio. Here `timeit` runs the bare statement in its loop, and the
    rounds alternate between the targets, so that a noisy moment hits them all alike.
    """
    number = 20_000 if QUICK else 200_000
    samples: dict[str, list[float]] = {name: [] for name in targets}
    timers = {
        name: timeit.Timer(statement, globals={"o": target})
        for name, (target, statement) in targets.items()
    }
    for _ in range(rounds):
        for name, timer in timers.items():
            samples[name].append(timer.timeit(number) / number)
    return {name: statistics.median(times) for name, times in samples.items()}


def timings() -> list[dict[str, Any]]:
    plain = argparse.Namespace(**vars(resolved()))
    targets: dict[str, tuple[object, str]] = {
        "argparse.Namespace: args.x = 1": (plain, "o.consumed_train_samples = 1"),
        "Python __setattr__ doing nothing": (Empty(), "o.consumed_train_samples = 1"),
        "Python __setattr__ -> object.__setattr__ (floor)": (
            Floor(**vars(plain)),
            "o.consumed_train_samples = 1",
        ),
        "recording floor (Recorder): args.x = 1": (
            Recorder(**vars(plain)),
            "o.consumed_train_samples = 1",
        ),
        "layerconf Namespace: args.x = 1 (recorded)": (
            resolved(),
            "o.consumed_train_samples = 1",
        ),
        "layerconf Namespace: args.x = [0, 1] (copied)": (resolved(), "o.profile_ranks = [0, 1]"),
        "argparse.Namespace: args.x = [0, 1]": (plain, "o.profile_ranks = [0, 1]"),
    }
    medians = interleaved(targets, 3 if QUICK else 15)
    rows = list(medians.items())
    records = report("One runtime write (timeit, bare statement)", rows, baseline=rows[0][0])
    plain_s = medians["argparse.Namespace: args.x = 1"]
    floor_s = medians["Python __setattr__ -> object.__setattr__ (floor)"]
    recording_s = medians["recording floor (Recorder): args.x = 1"]
    ours = medians["layerconf Namespace: args.x = 1 (recorded)"]
    verdict = "PASS" if ours <= TARGET * plain_s else "MISS"
    print(
        f"\n{verdict}: a recorded int write costs {ours / plain_s:.1f}x a plain setattr "
        f"(target <= {TARGET:.0f}x); {ours / floor_s:.1f}x the Python-level floor, which is "
        f"itself {floor_s / plain_s:.1f}x a plain setattr; {ours / recording_s:.2f}x the "
        f"recording floor, which is itself {recording_s / plain_s:.1f}x a plain setattr"
    )
    for record in records:
        record["ns_per_write"] = record["median_s"] * 1e9
    return [*records, {"target": TARGET, "verdict": verdict}]


def kept_bytes(writes: int) -> tuple[int, int]:
    """Bytes a namespace holds more after `writes` int writes to one key (tracemalloc), and
    the size of its pickle."""
    gc.collect()
    tracemalloc.start()
    args = resolved()
    before = tracemalloc.get_traced_memory()[0]
    for step in range(writes):
        args.consumed_train_samples = step
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return after - before, len(pickle.dumps(args))


def memory() -> dict[str, Any]:
    once, pickled_once = kept_bytes(1)
    many, pickled_many = kept_bytes(WRITES)
    print("\nMemory kept by the writes to one key (tracemalloc) and the namespace's pickle:")
    print(f"  after 1 write:          {once:>10,} bytes; pickle {pickled_once:>10,} bytes")
    print(f"  after {WRITES:>9,} writes: {many:>10,} bytes; pickle {pickled_many:>10,} bytes")
    return {
        "writes": WRITES,
        "kept_bytes_1": once,
        "kept_bytes_many": many,
        "pickle_bytes_1": pickled_once,
        "pickle_bytes_many": pickled_many,
    }


def main() -> None:
    print(f"python {sys.version.split()[0]}")
    rows = timings()
    save("writes", {"rows": rows, "memory": memory()})


if __name__ == "__main__":
    main()
