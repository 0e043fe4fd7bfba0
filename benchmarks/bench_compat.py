"""Where the drop-in `layerconf.compat.slime.parse_megatron_role_args` spends its time.

On the real slime PPO launch: the namespace `parse_known_args` gives, and its role file. slime's
driver calls ``parse_megatron_role_args`` for the actor and then for the critic, with the same
namespace and file; the whole-call rows do the same (each round starts with layerconf's cache of
role files empty and no base layer kept, as a trainer's process starts: the actor's call builds
the namespace's layer, the critic's finds it kept). The part rows time each step of one call
apart: reading the role file (parsed, or the same bytes again), building the base layer from
``vars(base_args)`` (or finding it kept), and resolving one role with slime's rules. Baseline:
slime's own function, as `benchmarks/run.py` reproduces it.

Run: ``python benchmarks/bench_compat.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from _timing import cold, measure, report, save
from layerconf.presets.slime import _base_layer, check_role_file, compat
from run import FIXTURES, real_workload, slime_parse_megatron_role_args

ROLES = ("actor", "critic")


def main() -> None:
    workload = real_workload(Path(tempfile.mkdtemp()))
    os.chdir(FIXTURES)  # the command line names its role file relatively
    base, path = workload.base, workload.role_file
    role_file = check_role_file(path, ROLES, layer_name=compat.LAYER)
    base_layers = compat._base_layers(base)[0]

    def fresh(function: Callable[[], object]) -> Callable[[], object]:
        """`function` with no base layer kept (and, through `cold`, no role file)."""

        def call() -> object:
            _base_layer._BASE[0] = None
            return function()

        return cold(call)

    def slime_pair() -> object:
        return [slime_parse_megatron_role_args(base, path, role) for role in ROLES]

    def compat_pair() -> object:
        return [compat.parse_megatron_role_args(base, path, role) for role in ROLES]

    each_cold = [
        cold(functools.partial(compat.parse_megatron_role_args, base, path, role)) for role in ROLES
    ]

    def parsed_each_time() -> object:
        _base_layer._BASE[0] = None
        return [call() for call in each_cold]

    def layers_of_base() -> object:
        return compat._base_layers(base)

    _base_layer._BASE[0] = None
    layers_of_base()
    kept = _base_layer._BASE[0]  # what the actor's call keeps for the critic's (used once)

    def layers_kept() -> object:
        _base_layer._BASE[0] = kept
        return compat._base_layers(base)

    def resolve(role: str) -> object:  # as the drop-in resolves
        return compat._resolved(base_layers, role_file.layers[role], compat._RULES, role)

    baseline = "slime's parse_megatron_role_args, actor then critic"
    rows = [
        (baseline, measure(slime_pair)),
        ("compat, actor then critic (the file parsed once)", measure(fresh(compat_pair))),
        ("compat, actor then critic (the file parsed for each)", measure(parsed_each_time)),
        ("  part: the role file read and parsed", measure(cold(lambda: check_role_file(path)))),
        ("  part: the same bytes read again", measure(lambda: check_role_file(path))),
        ("  part: the base layer from vars(base_args)", measure(fresh(layers_of_base))),
        ("  part: the same namespace again (its layer kept)", measure(layers_kept)),
        ("  part: the actor resolved with slime's rules", measure(lambda: resolve("actor"))),
        ("  part: the critic resolved with slime's rules", measure(lambda: resolve("critic"))),
    ]
    keys = len(vars(base))
    table = report(f"The drop-in on the real launch ({keys:,} keys, 2 roles)", rows, baseline)
    print(f"\nsaved {save('bench_compat', {'keys': keys, 'rows': table})}")


if __name__ == "__main__":
    main()
