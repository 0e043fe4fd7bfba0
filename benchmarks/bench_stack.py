"""The cost of provenance: resolving a 1,500-key stack of three layers, against plain dicts.

Run: ``python benchmarks/bench_stack.py`` (``--quick`` to only prove it runs).
The data has the shape of a Megatron namespace: 60% numbers, 15% booleans, 15% strings,
7% None, 3% short lists; a command-line layer of 60 keys; a role layer of 10 keys.

The generator (`synthetic`, and `synthetic_parser`, `synthetic_argv`, `synthetic_role_file`
for a whole slime-shaped job of any size) is shared with ``benchmarks/run.py``'s scaling runs.
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
import tracemalloc
from collections.abc import Sequence
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


def synthetic_parser(values: dict[str, Any]) -> argparse.ArgumentParser:
    """A parser with one option per key of `values` (``key_7`` -> ``--key-7``), defaulting to it.

    Numbers get ``type=int`` / ``float``, strings and None ``type=str``, booleans a
    ``store_true`` / ``store_false`` flag, lists ``nargs="+"`` of ints; plus slime's
    ``--megatron-config-path`` and ``--use-critic``, so that `layerconf.resolve_roles` and
    slime's role resolution both run on it. ``allow_abbrev`` is off, as in Megatron.
    """
    parser = argparse.ArgumentParser(allow_abbrev=False, add_help=False)
    parser.add_argument("--megatron-config-path", default=None)
    parser.add_argument("--use-critic", action="store_true")
    for key, value in values.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            parser.add_argument(flag, dest=key, action="store_false" if value else "store_true")
        elif isinstance(value, list):
            parser.add_argument(flag, dest=key, type=int, nargs="+", default=value)
        elif value is None or isinstance(value, str):
            parser.add_argument(flag, dest=key, type=str, default=value)
        else:
            parser.add_argument(flag, dest=key, type=type(value), default=value)
    return parser


def synthetic_argv(
    values: dict[str, Any], *, config: str | None = None, flags: int = 60, unknown: int = 2
) -> list[str]:
    """A command line for `synthetic_parser(values)`: `flags` options spread over the keys,
    ``--use-critic``, ``--megatron-config-path config`` and `unknown` options the parser does
    not own (as slime's SGLang flags). Its length does not grow with the number of keys."""
    argv = ["--use-critic"]
    if config is not None:
        argv += ["--megatron-config-path", config]
    keys = list(values)
    for index, key in enumerate(keys[:: max(1, len(keys) // flags)][:flags]):
        flag, value = "--" + key.replace("_", "-"), values[key]
        if isinstance(value, bool):
            argv.append(flag)
        elif isinstance(value, list):
            argv += [flag, "1", "2"]
        elif isinstance(value, (int, float)):
            argv += [flag, str(value + 1)]
        else:
            argv += [flag, f"cli-{index}"]
    for index in range(unknown):
        argv += [f"--sglang-option-{index}", str(index)]
    return argv


def synthetic_role_file(
    values: dict[str, Any], roles: Sequence[str], *, overrides: int = 10
) -> str:
    """A slime role file (a ``megatron:`` list) giving each role `overrides` values, written as
    real role files write them: floats as ``2e-5`` (a string to YAML 1.1: both slime and
    layerconf convert it), ints as ints, strings as checkpoint paths."""
    scalars = [key for key, value in values.items() if type(value) in (int, float, str)]
    chosen = scalars[:: max(1, len(scalars) // overrides)][:overrides]
    lines = ["megatron:"]
    for index, role in enumerate(roles):
        lines += ["  - name: default", f"    role: {role}", "    overrides:"]
        for key in chosen:
            value = values[key]
            if type(value) is float:
                text = f"{index + 1}e-5"
            elif type(value) is int:
                text = str(index + 2)
            else:
                text = f"/ckpt/{role}/{key}"
            lines.append(f"      {key}: {text}")
    return "\n".join(lines) + "\n"


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
        tracked.key_5 = 1.0  # what is kept of the writes is bounded (bench_writes.py)

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
