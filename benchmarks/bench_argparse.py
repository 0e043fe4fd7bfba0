"""The cost of command-line provenance: `layerconf.parse_known_args` against the parser's own.

The workload is the real one: the Megatron-LM + slime parser (`layerconf.load_profile()`, with
its real type callables) and the 109-token slime PPO command line
(`tests/fixtures/slime_ppo_argv.txt`).

Rows: the plain ``parser.parse_known_args(argv)``; ``layerconf.parse_known_args(parser, argv)``
as every parse after the first on a parser costs (the default layer is built once per parser
and reused while argparse produces the same defaults); and a first parse, with that cache and
the per-command-line origins emptied before every call. The target: a parse with provenance
at most 1.3x the plain one, judged as `run.py` judges its targets (the median of 21 paired
rounds, each timing both, with its 95% interval: PASS, MISS or borderline).

Run: ``python benchmarks/bench_argparse.py`` (``--quick`` to only prove it runs).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import layerconf
from _timing import QUICK, interleaved, judge, measure, report, save, spread
from layerconf.sources import _argv_recorder
from layerconf.sources import argv as argv_source

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
ARGV = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
TARGET = 1.3
ROUNDS = 21


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
    # The target from paired rounds (both parses timed in each round), as run.py's targets.
    paired = interleaved(
        {
            "plain": lambda: parser.parse_known_args(ARGV),
            "layerconf": lambda: layerconf.parse_known_args(parser, ARGV),
            "first": lambda: _first_parse(parser),
        },
        ROUNDS,
    )
    target: dict[str, Any] = {"goal": TARGET}
    for name in ("layerconf", "first"):
        ratios = [a / b for a, b in zip(paired[name], paired["plain"], strict=True)]
        median, low, high = spread(ratios)
        target[name] = {"median": median, "low": low, "high": high, "rounds": len(ratios)}
        figure = f"{median:.2f}x [{low:.2f}x to {high:.2f}x, {len(ratios)} rounds]"
        if name == "layerconf":
            verdict = judge(low, high, TARGET, at_most=True)
            print(f"steady parse with provenance / plain: {figure}: {verdict} (<= {TARGET}x)")
        else:
            print(f"first parse with provenance / plain: {figure}")
    return {"title": title, "rows": records, "target": target}


def main() -> None:
    results = [bench(f"load_profile() ({len(ARGV)} tokens)", layerconf.load_profile())]
    if not QUICK:
        print(f"\nsaved {save('argparse', results)}")


if __name__ == "__main__":
    main()
