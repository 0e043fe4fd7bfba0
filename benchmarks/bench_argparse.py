"""The cost of command-line provenance: `layerconf.parse_known_args` against the parser's own.

The workload is the real one: the Megatron-LM + slime parser (1,038 actions) and the 109-token
slime PPO command line (`tests/fixtures/slime_ppo_argv.txt`). Two parsers are measured: a
stand-in built from `tests/fixtures/megatron_slime_args.json` (custom types mapped to `str`)
and, when it is available, the bundled `layerconf.load_profile()` with its real type callables.

Rows: the plain ``parser.parse_known_args(argv)``; ``layerconf.parse_known_args(parser, argv)``
as every parse after the first on a parser costs (the default layer is built once per parser
and reused while argparse produces the same defaults); and a first parse, with that cache and
the per-command-line origins emptied before every call. The target is at most 1.3x.

Run: ``python benchmarks/bench_argparse.py`` (``--quick`` to only prove it runs).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import layerconf
from _timing import QUICK, measure, report, save
from layerconf import _argparse

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
ARGV = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
TARGET = 1.3

_ACTIONS: dict[str, Any] = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "BooleanOptionalAction": argparse.BooleanOptionalAction,
    "_AppendAction": "append",
}
_TYPES: dict[str, Any] = {"int": int, "float": float, "str": str, "bool": bool}


def _enum_name(value: Any) -> Any:
    """An enum default or choice dumped as ``{"repr": "<AttnBackend.flash: 1>"}`` -> "flash"."""
    if isinstance(value, dict) and "repr" in value:
        match = re.match(r"<\w+\.(\w+):", value["repr"])
        assert match is not None
        return match.group(1)
    return value


def _positive(option_strings: list[str]) -> list[str]:
    """A BooleanOptionalAction's own flags, without the ``--no-`` forms argparse adds."""
    flags, index = [], 0
    while index < len(option_strings):
        flag = option_strings[index]
        flags.append(flag)
        following = option_strings[index + 1] if index + 1 < len(option_strings) else None
        index += 2 if following == "--no-" + flag[2:] else 1
    return flags


def stand_in_parser() -> argparse.ArgumentParser:
    """The Megatron + slime parser rebuilt from the fixture; custom type callables become str."""
    spec = json.loads((FIXTURES / "megatron_slime_args.json").read_text())
    settings = spec["parser"]
    parser = argparse.ArgumentParser(
        description=settings["description"], allow_abbrev=settings["allow_abbrev"]
    )
    for action in spec["actions"]:
        kind = _ACTIONS[action["action"]]
        options = action["option_strings"]
        kwargs: dict[str, Any] = {
            "dest": action["dest"],
            "action": kind,
            "default": _enum_name(action["default"]),
        }
        if kind is argparse.BooleanOptionalAction:
            options = _positive(options)
        if kind in ("store", "append"):
            if action["type"] is not None:
                kwargs["type"] = _TYPES.get(action["type"], str)
            for name in ("nargs", "const"):
                if action[name] is not None:
                    kwargs[name] = action[name]
            if action["choices"] is not None:
                kwargs["choices"] = [_enum_name(choice) for choice in action["choices"]]
        if action["required"]:
            kwargs["required"] = True
        parser.add_argument(*options, **kwargs)
    return parser


def _first_parse(parser: argparse.ArgumentParser) -> Any:
    _argparse._CACHE.clear()
    _argparse._ORIGIN_TABLES.clear()
    return layerconf.parse_known_args(parser, ARGV)


def bench(title: str, parser: argparse.ArgumentParser) -> dict[str, Any]:
    plain, unknown = parser.parse_known_args(ARGV)
    traced, traced_unknown = layerconf.parse_known_args(parser, ARGV)
    assert vars(traced) == vars(plain)
    assert traced_unknown == unknown
    rows = [
        ("plain parser.parse_known_args", measure(lambda: parser.parse_known_args(ARGV))),
        ("layerconf.parse_known_args", measure(lambda: layerconf.parse_known_args(parser, ARGV))),
        ("layerconf.parse_known_args, first parse", measure(lambda: _first_parse(parser))),
        ("explain(args, 'lr') (for scale)", measure(lambda: layerconf.explain(traced, "lr"))),
    ]
    records = report(title, rows, "plain parser.parse_known_args")
    ratio = records[1]["ratio"]
    verdict = "within" if ratio <= TARGET else "OVER"
    print(f"steady-state ratio {ratio:.2f}x: {verdict} the {TARGET}x target")
    return {"title": title, "rows": records}


def main() -> None:
    results = [bench(f"stand-in parser ({len(ARGV)} tokens)", stand_in_parser())]
    load_profile = getattr(layerconf, "load_profile", None)
    if load_profile is not None:
        results.append(bench(f"load_profile() ({len(ARGV)} tokens)", load_profile()))
    if not QUICK:
        print(f"\nsaved {save('argparse', results)}")


if __name__ == "__main__":
    main()
