"""Instructions, not time: the counts docs/performance.md quotes beside its timings.

A wall-clock figure moves with the machine's load; an instruction count does not, so a change's
cost can be told from noise in one run. Each count is one fresh process under valgrind's
callgrind, with ``PYTHONHASHSEED=0`` (set and dict orders, and with them the counts, repeat
from run to run), the bytecode cached as an installed package has it:

- *first calls*, exactly as ``bench_first_call.py``'s child makes them (imports done, the
  set-up's garbage collected), counted inside the call alone: the child makes the call through
  ``divmod`` and callgrind counts only while CPython's ``builtin_divmod`` runs
  (``--toggle-collect``). layerconf's ``resolve_roles``, slime's way, the floor; the drop-in's
  pair (actor then critic) and slime's function's;
- *steady calls*, as ``run.py`` times them (the role-file cache emptied before each,
  ``_timing.cold``): the mean of 10 counted calls after 3 uncounted ones, for
  ``resolve_roles`` and the drop-in's pair;
- *whole processes*, as ``run.py`` times them: the bare imports, ``import layerconf`` with what
  its first resolution imports, ``layerconf check -- <fixture argv>``; counted from start to
  exit; and inside the imports of layerconf, the part that is attrs building its record
  classes (counted inside attrs' class builder alone): how far the imports could come down
  without attrs records.

Beside each pair, the ratio the timed target is about: an instruction ratio that passes while
the timed one misses says the time goes to code run once, cold, not to the work.

Needs valgrind and an interpreter whose ``builtin_divmod`` callgrind can name (a build with
symbols, as pyenv's and most distributions' are); without them it says so and exits 0.

Run: ``python benchmarks/bench_instructions.py`` (about two minutes; ``--quick``: the drop-in's
first pair alone).
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _timing import QUICK, save

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIXTURES = ROOT / "tests" / "fixtures"
ARGV = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
STEADY_CALLS = 10

#: name -> (how it is counted, the child's command line after the interpreter)
FIRST_CALLS = {
    f"first call: {name}": (
        "call",
        [str(HERE / "bench_first_call.py"), "--child", approach, "--counted"],
    )
    for name, approach in [
        ("layerconf resolve_roles", "layerconf"),
        ("slime's way", "slime"),
        ("floor", "floor"),
        ("the drop-in's pair", "compat"),
        ("slime's function's pair", "slime-fn"),
    ]
}
STEADY = {
    f"steady, per call: {name}": ("calls", [str(Path(__file__).resolve()), "--steady", kind])
    for name, kind in [("layerconf resolve_roles", "resolve"), ("the drop-in's pair", "compat")]
}
#: The modules a first resolution imports (run.py's FIRST_RESOLUTION_IMPORTS).
FIRST_RESOLUTION_MODULES = (
    "layerconf",
    "layerconf.presets",
    "layerconf.presets.slime",
    "layerconf.rules",
    "layerconf.sources.argv",
    "layerconf.sources.yaml",
)
IMPORTS = "process: import layerconf + what its first resolution imports"
PROCESSES = {
    "process: import yaml, attrs, deepmerge": ("process", ["-c", "import yaml, attrs, deepmerge"]),
    IMPORTS: (
        "process",
        ["-c", "import " + ", ".join(FIRST_RESOLUTION_MODULES)],
    ),
    "process: layerconf check -- <fixture argv>": (
        "process",
        ["-m", "layerconf", "check", "--", *ARGV],
    ),
}
#: The part of the imports' count that is attrs building layerconf's record classes (each
#: class's methods generated as source text and compiled), counted inside the builder alone.
ATTRS_SHARE = "inside those imports: attrs building the record classes"
ATTRS = {ATTRS_SHARE: ("call", [str(Path(__file__).resolve()), "--attrs"])}
#: (numerator, denominator, what the timed target asks of the same ratio)
RATIOS = [
    ("first call: slime's way", "first call: layerconf resolve_roles", ">= 2x fewer"),
    ("first call: slime's function's pair", "first call: the drop-in's pair", ">= 5x fewer"),
    ("first call: layerconf resolve_roles", "first call: floor", "(the floor's multiple)"),
    (
        "process: import layerconf + what its first resolution imports",
        "process: import yaml, attrs, deepmerge",
        "<= 1.2x",
    ),
    (
        "process: layerconf check -- <fixture argv>",
        "process: import yaml, attrs, deepmerge",
        "<= 1.5x",
    ),
]


def _steady(kind: str) -> None:
    """The child of a steady count: 3 calls uncounted, then `STEADY_CALLS` counted ones."""
    import layerconf
    from _timing import cold
    from bench_first_call import Counted
    from layerconf.compat.slime import parse_megatron_role_args

    parser = layerconf.load_profile()
    if kind == "resolve":
        call = cold(lambda: layerconf.resolve_roles(parser, ARGV))
    else:
        base, _ = parser.parse_known_args(ARGV)
        path = base.megatron_config_path
        call = cold(lambda: [parse_megatron_role_args(base, path, r) for r in ("actor", "critic")])
    for _ in range(3):
        call()
    for _ in range(STEADY_CALLS):
        divmod(Counted(call), 1)


def _attrs() -> None:
    """The child of `ATTRS_SHARE`: the imports of `PROCESSES`' second entry, each attrs class
    built through ``divmod`` (its builder's ``__init__`` and ``build_class``), so that callgrind
    counts the building alone. (Patched in this child only: a measurement, not the library.)"""
    import attr._make

    from bench_first_call import Counted

    builder: Any = attr._make._ClassBuilder

    def counted(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            made = []
            divmod(Counted(lambda: made.append(method(*args, **kwargs))), 1)
            return made[0]

        return call

    builder.__init__ = counted(builder.__init__)
    builder.build_class = counted(builder.build_class)
    for module in FIRST_RESOLUTION_MODULES:
        importlib.import_module(module)


def _environment(cache: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHONPYCACHE")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(PYTHONPYCACHEPREFIX=cache, PYTHONHASHSEED="0", NO_COLOR="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(HERE), *sys.path])
    return env


def count(how: str, arguments: list[str], cache: str) -> int | None:
    """Instructions of one workload (None: callgrind counted nothing); a workload that fails
    ends the run, exit status 1. One run outside callgrind first fills the bytecode cache:
    what is counted reads it."""
    env = _environment(cache)
    subprocess.run([sys.executable, *arguments], cwd=FIXTURES, env=env, capture_output=True)
    with tempfile.TemporaryDirectory(prefix="layerconf-callgrind-") as scratch:
        out = Path(scratch) / "callgrind.out"
        toggle = [] if how == "process" else ["--toggle-collect=builtin_divmod"]
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                *toggle,
                sys.executable,
                *arguments,
            ],
            cwd=FIXTURES,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        found = (
            re.search(r"^summary:\s*(\d+)", out.read_text(), re.MULTILINE) if out.exists() else None
        )
    if done.returncode != 0:  # (its count stops where it failed: not the workload's)
        sys.exit(
            f"failed under callgrind (exit {done.returncode}): {arguments}\n{done.stderr[-3000:]}"
        )
    if found is None or int(found.group(1)) == 0:
        return None
    total = int(found.group(1))
    return total // STEADY_CALLS if how == "calls" else total


def main() -> None:
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts (apt install valgrind)")
        return
    workloads = (
        dict(list(FIRST_CALLS.items())[3:4])
        if QUICK
        else {**FIRST_CALLS, **STEADY, **PROCESSES, **ATTRS}
    )
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="layerconf-pycache-") as cache:
        for name, (how, arguments) in workloads.items():
            found = count(how, arguments, cache)
            if found is None:
                print(f"callgrind counted nothing for {name!r}: an interpreter without symbols?")
                return
            counts[name] = found
            print(f"{found / 1e6:10.2f}M  {name}")
    print()
    for numerator, denominator, target in RATIOS:
        if numerator in counts and denominator in counts:
            ratio = counts[numerator] / counts[denominator]
            print(f"{ratio:6.2f}x  {numerator} / {denominator}  (timed target: {target})")
    if ATTRS_SHARE in counts and IMPORTS in counts:
        bare = counts["process: import yaml, attrs, deepmerge"]
        share, imports = counts[ATTRS_SHARE], counts[IMPORTS]
        print(
            f"{share / (imports - bare):6.1%}   of what the imports add to the bare ones is attrs "
            f"building classes; without it they would be {(imports - share) / bare:.2f}x the bare "
            "imports"
        )
    path = save("instructions", {"instructions": counts})
    print(f"results: {path}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--steady":
        _steady(sys.argv[2])
    elif sys.argv[1:] == ["--attrs"]:
        _attrs()
    else:
        main()
