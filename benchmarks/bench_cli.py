"""The whole `layerconf` command, as a user runs it: a fresh process per call.

Target: ``layerconf explain lr -- <the real 109-token slime command line>`` costs at most 2.5x
a process that only imports layerconf's three dependencies and argparse
(``python -c "import yaml, attrs, deepmerge, argparse"``), the floor of any tool built on them,
with a bytecode cache as an installed package has (the table without one is for scale).
The commands run as ``python -m layerconf`` (what the console script runs, plus runpy), from
``tests/fixtures`` because the command line names its role file relatively.

Each setting's commands run in 21 interleaved rounds (every command once a round, forwards
then backwards), each row the median of its rounds and the target's ratio the median of the
per-round ratios: a shared machine's load that comes and goes hits every command alike.

Two settings, both measured in every run:

- with a bytecode cache, as an installed package has (``pip install`` compiles the modules):
  the children write and read ``.pyc`` files under a temporary ``PYTHONPYCACHEPREFIX``, warmed
  by one call, so the working tree is left alone;
- without one (``PYTHONDONTWRITEBYTECODE=1`` and no cache), as in a development environment
  that sets it: every layerconf module is compiled from source in every process, while the
  dependencies in site-packages keep their installed caches. The children import layerconf
  from a copy of ``src/`` made for the run without its ``__pycache__`` folders: Python still
  reads a ``.pyc`` that an earlier run (the tests, say) left beside the sources, and the
  figure would then be the cached one.

Run: ``python benchmarks/bench_cli.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import operator
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import interleaved, report, save

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
ARGV = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
TARGET = 2.5

BASELINE = "python -c 'import yaml, attrs, deepmerge, argparse'"
EXPLAIN = "layerconf explain lr -- <fixture argv>"
COMMANDS: dict[str, list[str]] = {
    "python -c pass (the interpreter alone)": ["-c", "pass"],
    BASELINE: ["-c", "import yaml, attrs, deepmerge, argparse"],
    "python -c 'import layerconf'": ["-c", "import layerconf"],
    EXPLAIN: ["-m", "layerconf", "explain", "lr", "--", *ARGV],
    "layerconf check -- <fixture argv>": ["-m", "layerconf", "check", "--", *ARGV],
    "layerconf diff -- <fixture argv>": ["-m", "layerconf", "diff", "--", *ARGV],
    "layerconf show -- <fixture argv> (2 x 1,041 keys)": ["-m", "layerconf", "show", "--", *ARGV],
    "layerconf schema": ["-m", "layerconf", "schema"],
}


def _environment(cache: str | None, source: str | None = None) -> dict[str, str]:
    """The children's environment: with the bytecode `cache` folder, or without a cache,
    importing layerconf from `source` (a copy of ``src/`` with no ``.pyc`` in it) first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPYCACHE", "NO_COLOR"))}
    env["PYTHONPATH"] = os.pathsep.join([*([source] if source else []), *sys.path])
    if cache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
    return env


def _run(arguments: list[str], env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, *arguments],
        cwd=FIXTURES,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )


def _table(title: str, env: dict[str, str], *, judged: bool) -> list[dict[str, object]]:
    """Each command's median over 21 rounds that run every command once, in turn (forwards,
    then backwards: `_timing.interleaved`), so that a load that comes and goes on a shared
    machine hits them alike; the explain ratio is the median of its per-round ratios."""
    commands = {
        name: (lambda arguments=arguments: _run(arguments, env))
        for name, arguments in COMMANDS.items()
    }
    # (interleaved() makes one warm-up call of each first: it fills the bytecode cache, if any)
    samples = interleaved(commands, 21, slot=0.0)
    rows = [(name, statistics.median(times)) for name, times in samples.items()]
    records = report(title, rows, baseline=BASELINE)
    ratio = statistics.median(map(operator.truediv, samples[EXPLAIN], samples[BASELINE]))
    if judged:  # (the target is an installed package's: with its bytecode cache)
        verdict = "met" if ratio <= TARGET else "MISSED"
        print(f"explain / baseline = {ratio:.2f}x (target at most {TARGET}x: {verdict})")
    else:
        print(f"explain / baseline = {ratio:.2f}x (for scale: the target is with a cache)")
    return records


def _copy_sources(folder: Path) -> None:
    """The package the children import, and the console script's module, into `folder`,
    without their ``__pycache__`` folders."""
    import _layerconf_cli
    import layerconf

    package = Path(layerconf.__file__).parent
    shutil.copytree(package, folder / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(_layerconf_cli.__file__, folder)


def main() -> None:
    results = {}
    with tempfile.TemporaryDirectory(prefix="layerconf-pycache-") as cache:
        results["bytecode_cache"] = _table(
            "one process per call, with a bytecode cache (as installed)",
            _environment(cache),
            judged=True,
        )
    with tempfile.TemporaryDirectory(prefix="layerconf-source-") as source:
        _copy_sources(Path(source))
        results["no_bytecode_cache"] = _table(
            "one process per call, without a bytecode cache (PYTHONDONTWRITEBYTECODE=1)",
            _environment(None, source),
            judged=False,
        )
    path = save("bench_cli", results)
    print(f"\nsaved {path}")


if __name__ == "__main__":
    main()
