"""The cost of type coercion: a 10-key role layer on the 1,038-action Megatron + slime parser.

Run: ``python benchmarks/bench_coerce.py`` (``--quick`` to only prove it runs).
The baseline is slime's own coercion: for each override, ``type(getattr(ns, key))(value)``
when the command-line value is a number, nothing else. The rule does more (every dest's type,
choices, nargs, flags, null, all errors located), so the question is what that costs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _timing import measure, report, save
from layerconf import Layer, LayerStack, RuleContext
from layerconf._coerce import _TABLES, TypeCoercion, _Table, expected_kind

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "megatron_slime_args.json"
_ACTIONS: dict[str, Any] = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_AppendAction": "append",
    "BooleanOptionalAction": argparse.BooleanOptionalAction,
}
_TYPES: dict[str, Any] = {"int": int, "float": float, "str": str, "bool": bool, "loads": json.loads}

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


def standin_parser() -> argparse.ArgumentParser:
    """The dumped parser's actions; custom types become str, enum choices their names."""
    parser = argparse.ArgumentParser(allow_abbrev=False, add_help=False)
    for action in json.loads(FIXTURE.read_text())["actions"]:
        kwargs: dict[str, Any] = {"dest": action["dest"], "action": _ACTIONS[action["action"]]}
        default = action["default"]
        kwargs["default"] = default["repr"] if isinstance(default, dict) else default
        if action["action"] in ("_StoreAction", "_AppendAction"):
            if action["choices"] is not None:
                kwargs["choices"] = [
                    c["repr"] if isinstance(c, dict) else c for c in action["choices"]
                ]
            if action["type"] is not None:
                kwargs["type"] = _TYPES.get(action["type"], str)
            if action["nargs"] is not None:
                kwargs["nargs"] = action["nargs"]
        parser.add_argument(*action["option_strings"], **kwargs)
    return parser


def main() -> None:
    parser = standin_parser()
    defaults = {action.dest: action.default for action in parser._actions}
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
        ("expected_kind of all 1,038 actions", measure(every_dest)),
        ("LayerStack.resolve, no rules", measure(lambda: plain.resolve("critic"))),
        ("LayerStack.resolve with TypeCoercion", measure(lambda: coerced.resolve("critic"))),
    ]
    records = report(
        f"Coercing a 10-key role layer, 1,038-action parser (python {sys.version.split()[0]})",
        rows,
        baseline="slime: type(getattr(ns, k))(v) per override",
    )
    save("coerce", {"n_actions": len(parser._actions), "n_role_keys": len(ROLE), "rows": records})


if __name__ == "__main__":
    main()
