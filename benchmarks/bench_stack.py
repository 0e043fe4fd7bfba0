"""The cost of provenance: resolving a 1,500-key stack of three layers, against plain dicts.

Run: ``python benchmarks/bench_stack.py`` (``--quick`` to only prove it runs).
The data has the shape of a Megatron namespace: 60% numbers, 15% booleans, 15% strings,
7% None, 3% short lists; a command-line layer of 60 keys; a role layer of 10 keys.
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _timing import measure, report, save
from layerconf import Layer, LayerStack, explain


def synthetic(n: int, seed: int = 0) -> dict[str, Any]:
    rng = random.Random(seed)
    values: dict[str, Any] = {}
    for i in range(n):
        roll = rng.random()
        if roll < 0.6:
            value: Any = rng.randint(0, 100) if roll < 0.3 else rng.random()
        elif roll < 0.75:
            value = rng.random() < 0.5
        elif roll < 0.9:
            value = f"value-{i}"
        elif roll < 0.97:
            value = None
        else:
            value = [rng.randint(0, 9) for _ in range(3)]
        values[f"key_{i}"] = value
    return values


def main() -> None:
    n = 1500
    default = synthetic(n)
    keys = list(default)
    cli = {key: default[key] for key in keys[::25]}  # 60 keys
    role = dict.fromkeys(keys[5:15], 1e-05)  # 10 keys
    layers = [
        Layer.from_mapping("default", default, kind="default"),
        Layer.from_mapping("cli", cli, kind="argv"),
        Layer.from_mapping("role-config", role, source="role.yaml"),
    ]
    stack = LayerStack(layers)
    args = stack.resolve()
    namespace = argparse.Namespace(**default)

    def rebuild(layer: Layer) -> Layer:
        return Layer.from_mapping(layer.name, layer.values)

    def plain_dicts() -> dict[str, Any]:
        result = dict(default)
        result.update(cli)
        result.update(role)
        return result

    def deepcopy_and_setattr() -> argparse.Namespace:
        result = copy.deepcopy(namespace)
        for key, value in role.items():
            setattr(result, key, value)
        return result

    rows = [
        ("dict copy + update (no provenance)", measure(plain_dicts)),
        ("layerconf LayerStack.resolve()", measure(stack.resolve)),
        ("copy.deepcopy(ns) + setattr (slime's way, per role)", measure(deepcopy_and_setattr)),
        ("building the three layers", measure(lambda: [rebuild(layer) for layer in layers])),
        ("explain(args, key) (a role-file key)", measure(lambda: explain(args, keys[5]))),
    ]
    records = report(
        f"Resolving {n} keys in three layers (python {sys.version.split()[0]})",
        rows,
        baseline="dict copy + update (no provenance)",
    )

    # An assignment after resolution is recorded with its file and line: what does it cost?
    tracked = stack.resolve()
    plain = argparse.Namespace(**vars(tracked))

    def write_plain() -> None:
        plain.key_5 = 1.0

    def write_tracked() -> None:
        tracked.key_5 = 1.0
        del tracked._layerconf_writes["key_5"]  # keep the record from growing

    write_rows = [
        ("argparse.Namespace: args.x = v", measure(write_plain)),
        ("layerconf Namespace: args.x = v (recorded)", measure(write_tracked)),
    ]
    records += report("One assignment after resolution", write_rows, baseline=write_rows[0][0])

    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    kept = [stack.resolve() for _ in range(10)]
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    per_result = sum(s.size_diff for s in after.compare_to(before, "filename")) / len(kept)
    print(f"memory per resolved namespace (layers shared): {per_result / 1024:.1f} KiB")
    save("stack", {"n_keys": n, "rows": records, "memory_per_result_bytes": per_result})


if __name__ == "__main__":
    main()
