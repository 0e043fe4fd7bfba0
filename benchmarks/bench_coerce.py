"""The cost of type coercion: a 10-key role layer on the real Megatron + slime parser.

The parser is `layerconf.load_profile()`: the Megatron-LM + slime parser with its real type
callables and enums.

Run: ``python benchmarks/bench_coerce.py`` (``--quick`` to only prove it runs).
The baseline is slime's own coercion: for each override, ``type(getattr(ns, key))(value)``
when the command-line value is a number, nothing else. The rule does more (every dest's type,
choices, nargs, flags, null, all errors located), so the question is what that costs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _timing import measure, report, save
from layerconf import Layer, LayerStack, RuleContext, load_profile
from layerconf.rules.coercion import _TABLES, TypeCoercion, _Table, expected_kind

# What a critic overrides: two values to convert ('1e-5', an int for a float), eight right.
ROLE = {
    "lr": "1e-5",
    "min_lr": 0,
    "lr_warmup_iters": 10,
    "lr_decay_style": "cosine",
    "weight_decay": 0.1,
    "adam_beta2": 0.98,
    "clip_grad": 1.0,
    "save": "/ckpt/critic",
    "load": "/ckpt/critic",
    "profile_ranks": [0, 1],
}


def main() -> None:
    parser = load_profile()
    defaults: dict[str, Any] = {}  # what argparse sets before parsing: a dest's first default
    for action in parser._actions:
        if action.default is not argparse.SUPPRESS:
            defaults.setdefault(action.dest, action.default)
    namespace = argparse.Namespace(**defaults)
    default_layer = Layer.from_mapping("default", defaults, kind="default")
    role_layer = Layer.from_mapping("role-config", ROLE, source="critic.yaml")
    context = RuleContext("layers", "critic", (default_layer, role_layer))
    rule = TypeCoercion(parser)
    plain = LayerStack([default_layer, role_layer])
    coerced = LayerStack([default_layer, role_layer], rules=[rule])
    assert len(rule(context)) == 2  # '1e-5' and 0 are converted, the rest are right
    assert coerced.resolve("critic").lr == 1e-05

    def slime_way() -> dict[str, Any]:
        result = {}
        for key, value in ROLE.items():
            current = getattr(namespace, key)
            if isinstance(current, (int, float)) and not isinstance(current, bool):
                value = type(current)(value)
            result[key] = value
        return result

    def first_call() -> object:
        _TABLES.pop(parser, None)
        return rule(context)

    def every_dest() -> object:
        return [expected_kind(action) for action in parser._actions]

    rows = [
        ("slime: type(getattr(ns, k))(v) per override", measure(slime_way)),
        ("TypeCoercion, warm (table cached)", measure(lambda: rule(context))),
        ("TypeCoercion, first call (builds the table)", measure(first_call)),
        ("indexing the parser's dests alone", measure(lambda: _Table(parser))),
        (f"expected_kind of all {len(parser._actions):,} actions", measure(every_dest)),
        ("LayerStack.resolve, no rules", measure(lambda: plain.resolve("critic"))),
        ("LayerStack.resolve with TypeCoercion", measure(lambda: coerced.resolve("critic"))),
    ]
    records = report(
        f"Coercing a {len(ROLE)}-key role layer, {len(parser._actions):,}-action parser"
        f" (python {sys.version.split()[0]})",
        rows,
        baseline="slime: type(getattr(ns, k))(v) per override",
    )
    save("coerce", {"n_actions": len(parser._actions), "n_role_keys": len(ROLE), "rows": records})


if __name__ == "__main__":
    main()
