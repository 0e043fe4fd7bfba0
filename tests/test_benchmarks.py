"""The benchmarks still run: ``benchmarks/run.py --quick`` and every ``bench_*.py --quick``.

Each runs as a subprocess on a copy of ``benchmarks/`` in a temporary directory (with
``tests/`` linked beside it, where they find the fixtures), so that a quick run never
overwrites the results of a real one in ``benchmarks/results/``. They run concurrently, as
they time nothing here: only their exit status and the shape of ``run.json`` are checked.
Peers that are not installed are skipped by run.py with a note, and their tests here. They are
never imported into the test process: importing ConfigArgParse replaces argparse's
``add_argument`` for every parser of the process (each action gains ``env_var`` and three more
attributes), which would change what later tests of the profile see. So `_require` skips on
``importlib.util.find_spec`` where ``pytest.importorskip`` would import the module.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from layerconf import load_profile, resolve_roles

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("bench_*.py"))
PEERS = {
    "omegaconf": "omegaconf",
    "dynaconf": "dynaconf",
    "configargparse": "configargparse",
    "jsonargparse": "jsonargparse",
}
TIMEOUT = 300


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _require(module: str) -> None:
    """``pytest.importorskip`` without the import (see the module's docstring)."""
    if not _has(module):
        pytest.skip(f"{module} is not installed")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every benchmark's quick run, started at once; name -> (returncode, output, workdir)."""
    work = tmp_path_factory.mktemp("bench")
    copy = work / "benchmarks"
    copy.mkdir()
    for script in BENCHMARKS.glob("*.py"):
        shutil.copy(script, copy / script.name)
    (work / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    env = dict(os.environ)
    env["MPLBACKEND"] = "Agg"
    plots = work / "plots"
    commands = {"run.py": [sys.executable, "run.py", "--quick", "--confirm", "--plots", str(plots)]}
    commands.update({name: [sys.executable, name, "--quick"] for name in SCRIPTS})
    started = {
        name: subprocess.Popen(
            command,
            cwd=copy,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name, command in commands.items()
    }
    finished = {}
    try:
        for name, process in started.items():
            output, _ = process.communicate(timeout=TIMEOUT)
            finished[name] = (process.returncode, output)
    finally:
        for process in started.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    return {"results": finished, "work": work, "plots": plots}


@pytest.fixture(scope="module")
def run_json(runs: dict[str, Any]) -> dict[str, Any]:
    code, output = runs["results"]["run.py"]
    assert code == 0, output[-3000:]
    path = runs["work"] / "benchmarks" / "results" / "run.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_benchmark_runs(runs: dict[str, Any], script: str) -> None:
    code, output = runs["results"][script]
    assert code == 0, output[-3000:]


def test_instruction_counts(runs: dict[str, Any]) -> None:
    """Under callgrind, the drop-in's first pair counts millions of instructions (a count of
    the interpreter's start instead would be hundreds of millions; none, a marker not found)."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    code, output = runs["results"]["bench_instructions.py"]
    assert code == 0, output[-3000:]
    path = runs["work"] / "benchmarks" / "results" / "instructions.json"
    counts = json.loads(path.read_text())["instructions"]
    assert 1e6 < counts["first call: the drop-in's pair"] < 50e6, output[-3000:]


def test_no_instruction_count_of_a_failed_workload(tmp_path: Path) -> None:
    """A workload that fails (an uncaught exception exits 1) ends the run with its error, no
    count: callgrind's count stops where it failed, which is not the workload's."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    code = (
        "import sys, bench_instructions as b; "
        "print(b.count('call', ['-c', 'divmod(7, 2); 1 / 0'], sys.argv[1]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=BENCHMARKS,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert "failed under callgrind (exit 1)" in done.stderr
    assert "ZeroDivisionError" in done.stderr


def test_run_json_shape(run_json: dict[str, Any]) -> None:
    assert run_json["format"] == 1
    assert run_json["quick"] is True
    assert run_json["command"].startswith("python benchmarks/run.py")
    machine = run_json["machine"]
    assert {"platform", "cpu_count", "python", "versions"} <= set(machine)
    assert machine["versions"]["layerconf"]
    assert run_json["workload"]["roles"] == ["actor", "critic"]
    assert run_json["workload"]["argv_tokens"] == 109
    assert set(run_json["groups"]) == {"argv", "namespace", "per-key", "process"}
    for row in run_json["rows"]:
        assert {"group", "approach", "median_s", "ratio", "repeat"} <= set(row)
        assert row["group"] in run_json["groups"]
        assert row["median_s"] > 0
    baselines = {row["approach"] for row in run_json["rows"]}
    for group in run_json["groups"].values():
        assert group["baseline"] in baselines
    keys = {row["key"] for row in run_json["rows"]}
    assert {"slime", "layerconf", "slime-ns", "compat", "explain", "explain-mean"} <= keys
    assert {"audit", "write_audit", "load_profile"} <= keys
    processes = {row["approach"] for row in run_json["rows"] if row["group"] == "process"}
    assert "python -c 'import layerconf'" in processes
    assert "layerconf explain lr -- <fixture argv>" in processes


def test_targets(run_json: dict[str, Any]) -> None:
    """Every target judged PASS, MISS or borderline with a number and its interval (never
    asserted to pass); the first-call and runtime-write figures without a goal are reported,
    with "-"."""
    targets = {target["target"]: target for target in run_json["targets"]}
    for name in (
        "audit(roles), every key of both roles, vs one resolve_roles",
        "write_audit(roles, dir), fsync included, vs one resolve_roles",
        "first call, imports done: layerconf vs slime's way",
        "compat first call: drop-in vs slime's function",
        "layerconf check -- <fixture argv> (whole process) vs the bare imports",
        "import layerconf + what its first resolution imports, vs yaml, attrs, deepmerge",
        "a runtime write (args.x = 1, recorded with its file:line), vs a plain setattr",
        "the namespace's pickle after 10,000 writes to one key, vs after one",
    ):
        assert name in targets
    assert len(targets) == 19
    assert run_json["confirm"] is True
    for target in targets.values():
        judged = target["goal"] != "(reported)"
        assert target["verdict"] in (("PASS", "MISS", "borderline") if judged else ("-",))
        assert isinstance(target["measured"], float)
        assert math.isfinite(target["measured"])
        assert target["low"] <= target["measured"] <= target["high"]
        assert 0 <= target["confirmed_rounds"] < target["rounds"]
        assert f"{target['rounds']} rounds" in target["how"] or target["rounds"] == 1
    assert "ms" in run_json["first_call_floor"]
    assert "floor" in run_json["first_call_floor"]


def test_memory(run_json: dict[str, Any]) -> None:
    memory = run_json["memory"]
    deep = memory["layerconf_deep"]
    assert deep["kept"] == deep["own"] + deep["provenance"]
    assert deep["own"] > 0
    assert {row["key"] for row in memory["rows"]} >= {"slime", "layerconf"}
    assert set(memory["definition"]) == {"kept_bytes", "peak_bytes", "deep"}


def test_layerconf_gives_slime_values(run_json: dict[str, Any]) -> None:
    """Checked inside the run: layerconf and the drop-in compute slime's values, every key."""
    capabilities = run_json["capabilities"]
    assert capabilities["layerconf"]["values_equal_slime"] is True
    assert capabilities["compat"]["values_equal_slime"] is True


def test_scaling(run_json: dict[str, Any]) -> None:
    scaling = run_json["scaling"]
    assert set(scaling) == {"keys", "layers", "roles"}
    for dimension in scaling.values():
        layerconf = dimension["layerconf"]
        assert len(layerconf["sizes"]) == len(layerconf["time_s"]) >= 2
        assert isinstance(layerconf["time_exponent"], float)
        assert isinstance(layerconf["memory_exponent"], float)
    deep = scaling["keys"]["layerconf"]
    assert len(deep["provenance_bytes"]) == len(deep["sizes"])
    checks = run_json["linearity"]
    assert len(checks) == 6  # time and memory, in keys, layers and roles
    assert {check["verdict"] for check in checks} <= {"PASS", "MISS", "borderline"}
    for check in checks:
        assert check["low"] <= check["exponent"] <= check["high"]
        assert check["rounds"] >= (2 if "time" in check["check"] else 1)
    for dimension in scaling.values():
        faults = dimension["layerconf"].get("page_faults_per_call")
        if faults is not None:  # where the platform counts them
            assert len(faults) == len(dimension["layerconf"]["sizes"])


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_peer_measured(run_json: dict[str, Any], peer: str) -> None:
    _require(PEERS[peer])
    assert peer in {row["key"] for row in run_json["rows"]}
    assert peer in run_json["scaling"]["keys"]
    assert peer not in run_json["skipped"]


def test_missing_peers_are_skipped_with_a_note(run_json: dict[str, Any]) -> None:
    measured = {row["key"] for row in run_json["rows"]}
    for peer, module in PEERS.items():
        if not _has(module):
            assert peer not in measured
            assert "not installed" in run_json["skipped"][peer]


def test_plots(runs: dict[str, Any], run_json: dict[str, Any]) -> None:
    _require("matplotlib")
    for dimension in ("keys", "layers", "roles"):
        path = runs["plots"] / f"scaling-{dimension}.png"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(run_json["plots"]) == 3


# ---------------------------------------------------------------------------------------------
# slime's way, as the benchmark writes it, computes what layerconf computes on the fixture


@pytest.fixture(scope="module")
def bench_run() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("layerconf_bench_run", BENCHMARKS / "run.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))
        sys.modules.pop("layerconf_bench_run", None)


def _same(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [
        key for key in a.keys() | b.keys() if key not in a or key not in b or a[key] != b[key]
    ] + [key for key in a.keys() & b.keys() if type(a[key]) is not type(b[key])]


def test_slime_baseline_matches_layerconf(
    bench_run: ModuleType,
    fixtures_dir: Path,
    slime_argv: list[str],
    slime_expected: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(fixtures_dir)  # the command line names its role file relatively
    parser = load_profile()
    slime = bench_run.slime_resolve_roles(parser, slime_argv)
    ours = resolve_roles(parser, slime_argv)
    assert list(slime) == list(ours) == ["actor", "critic"]
    for role in slime:
        assert isinstance(slime[role], argparse.Namespace)
        assert _same(vars(slime[role]), vars(ours[role])) == []
    expected = slime_expected["megatron_yaml"]["role_args_via_slime_parse_megatron_role_args"]
    for role, values in expected.items():
        for key, value in values.items():
            if value == "<<absent>>":
                assert not hasattr(slime[role], key)
            else:
                assert getattr(slime[role], key) == value
                assert type(getattr(slime[role], key)) is type(value)


# ---------------------------------------------------------------------------------------------
# How a figure is judged: the median's confidence interval, the verdict, --confirm


@pytest.fixture(scope="module")
def timing() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import _timing

        yield _timing
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_spread_is_the_order_statistics_interval(timing: ModuleType) -> None:
    # n = 21: P(Binomial(21, 1/2) <= 5) = 0.013 and <= 6 is 0.039, so the 6th and 16th values.
    assert timing.spread([float(value) for value in range(21, 0, -1)]) == (11.0, 6.0, 16.0)
    # n = 7: only k = 1 keeps each tail under 2.5%: the extremes.
    assert timing.spread([3.0, 1.0, 2.0, 7.0, 5.0, 4.0, 6.0]) == (4.0, 1.0, 7.0)
    assert timing.spread([2.5]) == (2.5, 2.5, 2.5)
    # more samples of the same spread give a narrower interval
    few = timing.spread([float(value % 10) for value in range(20)])
    many = timing.spread([float(value % 10) for value in range(200)])
    assert many[2] - many[1] < few[2] - few[1]
    with pytest.raises(ValueError, match="no samples"):
        timing.spread([])
    with pytest.raises(ValueError, match="NaN"):
        timing.spread([1.0, math.nan, 2.0])  # a NaN would sort anywhere: order statistics lie


def test_rounds_without_a_figure_are_left_out_never_judged_borderline(
    bench_run: ModuleType,
) -> None:
    def show(value: float) -> str:
        return f"{value:.2f}"

    none = bench_run.Figure("layers", "<= 1.1", 1.1, True, show, [math.nan] * 7)
    assert none.verdict == "MISS"  # nothing measured, nothing claimed
    assert "no figure in any of 7 rounds" in none.how()
    assert none.record()["measured"] is None
    some = bench_run.Figure("layers", "<= 1.1", 1.1, True, show, [1.0] * 7 + [math.nan] * 2)
    assert some.verdict == "PASS"
    assert "2 rounds gave no figure" in some.how()
    assert some.record()["rounds"] == 9


@pytest.mark.parametrize(
    ("low", "high", "at_most", "verdict"),
    [
        (4.9, 5.2, False, "borderline"),
        (5.0, 5.2, False, "PASS"),
        (4.1, 4.99, False, "MISS"),
        (0.008, 0.0099, True, "PASS"),
        (0.009, 0.011, True, "borderline"),
        (0.0101, 0.02, True, "MISS"),
    ],
)
def test_judge(timing: ModuleType, low: float, high: float, at_most: bool, verdict: str) -> None:
    goal = 0.01 if at_most else 5.0
    assert timing.judge(low, high, goal, at_most=at_most) == verdict


def test_interleaved_alternates_the_order(timing: ModuleType) -> None:
    order: list[str] = []
    functions = {name: (lambda name=name: order.append(name)) for name in "abc"}
    samples = timing.interleaved(functions, 2, slot=0.0)
    assert {name: len(values) for name, values in samples.items()} == dict.fromkeys("abc", 2)
    assert order[:3] == ["a", "b", "c"]  # the warm-up calls
    assert order[3:] == ["a", "b", "c", "c", "b", "a"]  # one call a slot: forwards, backwards


def test_confirm_measures_only_borderline_figures_again(bench_run: ModuleType) -> None:
    asked: list[int] = []

    def again(rounds: int) -> list[float]:
        asked.append(rounds)
        return [5.5] * rounds

    def show(value: float) -> str:
        return f"{value:.2f}x"

    borderline = bench_run.Figure("b", ">= 5x", 5.0, False, show, [4.0, 5.5, 6.0], remeasure=again)
    passing = bench_run.Figure("p", ">= 5x", 5.0, False, show, [6.0, 7.0, 8.0], remeasure=again)
    assert borderline.verdict == "borderline"
    assert bench_run.confirm([borderline, passing]) == [borderline]
    assert asked == [bench_run.CONFIRM_FACTOR * 3]
    assert borderline.added == asked[0]
    assert len(borderline.samples) == 3 + asked[0]
    assert borderline.verdict == "PASS"  # 12 rounds: the interval is now above 5
    assert "borderline at 3 rounds" in borderline.how()
    assert passing.added == 0


def test_first_call_target_in_milliseconds_beside_the_floor(timing: ModuleType) -> None:
    import bench_first_call

    reachable = bench_first_call.what_the_target_means(
        {"slime": 0.014, "floor": 0.006, "layerconf": 0.012}
    )
    assert "would take 7.00 ms" in reachable
    assert "a dict copy per role) takes 6.00 ms" in reachable
    assert "1.17x the floor, 1.00 ms over it" in reachable
    assert "layerconf now: 12.00 ms, 2.00x the floor" in reachable
    below = bench_first_call.what_the_target_means(
        {"slime": 0.010, "floor": 0.006, "layerconf": 0.012}
    )
    assert "0.83x the floor, below it" in below
