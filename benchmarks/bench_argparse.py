"""The cost of command-line provenance: `layerconf.parse_known_args` against the parser's own.

The workload is the real one: the Megatron-LM + slime parser (`layerconf.load_profile()`, with
its real type callables) and the 109-token slime PPO command line
(`tests/fixtures/slime_ppo_argv.txt`).

Rows: the plain ``parser.parse_known_args(argv)``; ``layerconf.parse_known_args(parser, argv)``
as every parse after the first on a parser costs (the default layer is built once per parser
and reused while argparse produces the same defaults); and a first parse, with that cache and
the per-command-line origins emptied before every call. The target is at most 1.3x.

Run: ``python benchmarks/bench_argparse.py`` (``--quick`` to only prove it runs).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import layerconf
from _timing import QUICK, measure, report, save
from layerconf.sources import _argv_recorder
from layerconf.sources import argv as argv_source

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
ARGV = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
TARGET = 1.3


def _first_parse(parser: argparse.ArgumentParser) -> Any:
    argv_source._CACHE.clear()
    _argv_recorder._ORIGIN_TABLES.clear()
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
    results = [bench(f"load_profile() ({len(ARGV)} tokens)", layerconf.load_profile())]
    if not QUICK:
        print(f"\nsaved {save('argparse', results)}")


if __name__ == "__main__":
    main()
