"""The layerconf command: explain, show, diff, check and schema, run as a user runs them."""

from __future__ import annotations

import argparse
import enum
import json
import math
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from layerconf import SLIME, ConfigError, Layer, LayerStack, Origin, TypeCoercion, load_profile
from layerconf.cli import main
from layerconf.core.values import jsonable
from layerconf.presets import role_file_schema
from layerconf.presets.schema import FLOAT_PATTERN, INT_PATTERN

ROOT = Path(__file__).parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = ROOT / "examples"
SLIME_ARGV = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
PPO_ARGV = (EXAMPLES / "ppo_argv.txt").read_text().splitlines()
COMMANDS = ("explain", "show", "diff", "check", "schema", "audit")
# Commands that read audit records: no trainer parser, no trainer command line.
RECORD_COMMANDS = (
    "audit diff",
    "audit replay",
    "audit verify",
    "audit relaunch",
    "audit explain",
)
# Commands that take no trainer parser nor command line, and read no record.
OWN_COMMANDS = ("completion",)

# Where a value came from, as every JSON output spells it.
ORIGIN_FIELDS = (
    "layer",
    "kind",
    "source",
    "line",
    "column",
    "argv_index",
    "token",
    "rule",
    "label",
)

# Every launcher of the command: `python -m layerconf` always, the console script if installed.
LAUNCHERS = {"python -m layerconf": [sys.executable, "-m", "layerconf"]}
_SCRIPT = shutil.which(
    "layerconf",
    path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
)
if _SCRIPT is not None:
    LAUNCHERS["layerconf script"] = [_SCRIPT]

# A user's own trainer parser, imported with --parser from the directory the command runs in.
TRAINER = """\
import argparse
import enum
import pathlib


class Color(enum.Enum):
    red = 1
    blue = 2


def color(name):
    return Color[name]


def get_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--color", type=color, choices=list(Color), default=Color.red)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("/tmp/out"))
    parser.add_argument("--size", type=int, nargs=2, default=(1, 2))
    parser.add_argument("--tags", default=frozenset({"b", "a"}))
    parser.add_argument("--ratio", type=float, default=float("inf"))
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--megatron-config-path")
    return parser


PARSER = get_parser()
NOT_A_PARSER = 42


def broken():
    raise RuntimeError("no GPU here")
"""

TRAINER_ROLES = """\
megatron:
  - role: critic
    overrides:
      lr: 1e-3
      color: blue
"""


@pytest.fixture(params=list(LAUNCHERS), ids=list(LAUNCHERS))
def launcher(request: pytest.FixtureRequest) -> list[str]:
    return LAUNCHERS[request.param]


def run(launcher: list[str], *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    return subprocess.run(
        [*launcher, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr


def explain_json(*args: str, argv: list[str]) -> list[dict[str, Any]]:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["explain", *args, "--json", "--", *argv]) == 0
    data: list[dict[str, Any]] = json.loads(buffer.getvalue())
    return data


def usage_of(help_text: str) -> str:
    """The usage lines at the top of a --help text."""
    return help_text.split("\n\n")[0]


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    """A directory holding a user's trainer module and a role file for it."""
    (tmp_path / "mytrainer.py").write_text(TRAINER)
    (tmp_path / "roles.yaml").write_text(TRAINER_ROLES)
    return tmp_path


@pytest.fixture
def misspelt(tmp_path: Path) -> Path:
    """A copy of the real fixture whose critic entry misspells lr as lrr."""
    text = (FIXTURES / "slime_ppo_megatron.yaml").read_text()
    assert text.count("      lr: 1e-5\n") == 1
    (tmp_path / "slime_ppo_megatron.yaml").write_text(text.replace("lr: 1e-5", "lrr: 1e-5"))
    return tmp_path


class TestExplain:
    """explain: the final value of each key per role, its origin and what it shadowed."""

    def test_the_example_from_the_repository_root(self, launcher: list[str]) -> None:
        """The README's command explains lr, save and kl_coef of both roles."""
        result = run(launcher, "explain", "lr", "save", "kl_coef", "--", *PPO_ARGV)
        assert result.returncode == 0, result.stderr
        heads = [line for line in result.stdout.splitlines() if " = " in line]
        assert heads == [
            "lr (actor) = 1e-06",
            "lr (critic) = 1e-05",
            "save (actor) = '/path/to/actor_ckpt'",
            "save (critic) = '/path/to/critic_ckpt'",
            "kl_coef (actor) = 0.01",
            "kl_coef (critic) = 0",
        ]
        assert "  from     1e-05   role-config  examples/megatron_ppo.yaml:10:11" in result.stdout
        assert "converted by type-coercion" in result.stdout
        assert "argv[26] '--lr'" in result.stdout
        assert "forced by critic-defaults" in result.stdout
        assert result.stderr == ""

    def test_json_shape(self, launcher: list[str]) -> None:
        """--json is a list of objects with the documented keys; history entries drop role."""
        result = run(
            launcher,
            "explain",
            "lr",
            "attention_backend",
            "--json",
            "--",
            *SLIME_ARGV,
            cwd=FIXTURES,
        )
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert [(d["key"], d["role"]) for d in data] == [
            ("lr", "actor"),
            ("lr", "critic"),
            ("attention_backend", "actor"),
            ("attention_backend", "critic"),
        ]
        keys = {"role", "key", "value", "repr", *ORIGIN_FIELDS, "history"}
        assert all(set(d) == keys for d in data)
        # In the order docs/cli.md shows, repr after value as show and diff have it (before:
        # role and repr came last).
        assert all(
            list(d) == ["role", "key", "value", "repr", *ORIGIN_FIELDS, "history"] for d in data
        )
        assert list(data[1]["history"][0]) == [
            "key",
            "value",
            "repr",
            *ORIGIN_FIELDS,
            "reason",
            "by",
        ]
        critic_lr = data[1]
        assert (
            critic_lr["value"],
            critic_lr["layer"],
            critic_lr["source"],
            critic_lr["line"],
            critic_lr["column"],
        ) == (1e-05, "role-config", "slime_ppo_megatron.yaml", 6, 11)
        first = critic_lr["history"][0]
        assert set(first) == keys - {"role", "history"} | {"reason", "by"}
        assert (first["value"], first["reason"], first["by"]) == (
            "1e-5",
            "converted",
            "type-coercion",
        )
        assert [h["layer"] for h in critic_lr["history"]] == ["role-config", "cli", "default"]
        assert critic_lr["history"][1]["argv_index"] == 31
        assert critic_lr["history"][1]["token"] == "--lr"
        backend = data[2]
        assert (backend["value"], backend["repr"]) == ("flash", "<AttnBackend.flash: 1>")

    def test_rule_values_carry_their_note(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A value a rule set says which rule and why."""
        monkeypatch.chdir(ROOT)
        [critic] = explain_json("kl_coef", "--role", "critic", argv=PPO_ARGV)
        assert (critic["layer"], critic["kind"], critic["rule"]) == (
            "rule:critic-defaults",
            "rule",
            "critic-defaults",
        )
        assert critic["label"] == "slime always runs the critic with this value"
        assert critic["history"][0]["reason"] == "forced"

    def test_one_role(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--role explains that role only."""
        monkeypatch.chdir(ROOT)
        assert main(["explain", "lr", "--role", "critic", "--", *PPO_ARGV]) == 0
        out = capsys.readouterr().out
        assert "lr (critic) = 1e-05" in out
        assert "(actor)" not in out

    def test_unknown_key(self, launcher: list[str]) -> None:
        """An unknown key exits 1 with a did-you-mean; the other keys are still explained."""
        result = run(launcher, "explain", "lr", "lrr", "--", *PPO_ARGV)
        assert result.returncode == 1
        assert result.stdout.startswith("lr (actor) = 1e-06")
        assert result.stderr == "layerconf explain: error: unknown key 'lrr'; did you mean 'lr'?\n"

    def test_flag_spelling_suggests_the_dest(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A key written as its flag is answered with the dest to write."""
        monkeypatch.chdir(ROOT)
        assert main(["explain", "tensor-model-parallel-size", "--", *PPO_ARGV]) == 1
        assert "did you mean 'tensor_model_parallel_size'?" in capsys.readouterr().err

    def test_a_failed_resolution(
        self, misspelt: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A configuration that does not resolve: its problems on stderr, exit 1."""
        monkeypatch.chdir(misspelt)
        assert main(["explain", "lr", "--", *SLIME_ARGV]) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.splitlines() == [
            "slime_ppo_megatron.yaml:6:7: error: 'lrr' is not an argument of this parser (did you mean 'lr'?)",
            "1 error, 0 warnings",
        ]

    def test_warnings_go_to_stderr(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A resolution with warnings explains, and prints the warnings on stderr."""
        monkeypatch.chdir(tmp_path)
        Path("roles.yaml").write_text(
            "megatron:\n  - role: actor\n    overrides:\n      num_nodes: 2\n"
        )
        argv = ["--rollout-batch-size", "8", "--megatron-config-path", "roles.yaml"]
        assert main(["explain", "lr", "--", *argv]) == 0
        captured = capsys.readouterr()
        assert "lr (actor)" in captured.out
        assert captured.err.startswith("roles.yaml:4:7: warning: 'num_nodes' is ignored")


class TestShow:
    """show: the resolved configuration of each role with the origin of each value."""

    def test_table(
        self,
        launcher: list[str],
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """Every key of both roles, one row each, headed by the role and its counts."""
        monkeypatch.chdir(FIXTURES)
        assert main(["show", "--all", "--json", "--", *SLIME_ARGV]) == 0
        shown = json.loads(capsys.readouterr().out)
        result = run(launcher, "show", "--all", "--", *SLIME_ARGV, cwd=FIXTURES)
        assert result.returncode == 0, result.stderr
        blocks = result.stdout.rstrip("\n").split("\n\n")
        for role, block in zip(("actor", "critic"), blocks, strict=True):
            title, *rows = block.splitlines()
            changed = sum(entry["kind"] != "default" for entry in shown[role].values())
            assert title == f"{role}: {len(shown[role])} values, {changed} not from defaults"
            assert [row.split()[0] for row in rows] == list(shown[role])
        row = next(line for line in blocks[0].splitlines() if line.startswith("  lr "))
        assert re.fullmatch(r"  lr +1e-06 +role-config +slime_ppo_megatron\.yaml:10:11", row)

    def test_changed(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--changed keeps only the values that do not come from defaults."""
        monkeypatch.chdir(ROOT)
        assert main(["show", "--changed", "--role", "actor", "--json", "--", *PPO_ARGV]) == 0
        data = json.loads(capsys.readouterr().out)
        assert list(data) == ["actor"]
        actor = data["actor"]
        assert "seed" not in actor
        assert "lr" in actor
        assert {entry["layer"] for entry in actor.values()} == {"cli", "role-config"}

    def test_json_shape(self, launcher: list[str]) -> None:
        """--json maps each role to each key's value, repr and origin."""
        result = run(launcher, "show", "--all", "--json", "--", *PPO_ARGV)
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert list(data) == list(SLIME.roles)
        lr = data["critic"]["lr"]
        assert lr == {
            "value": 1e-05,
            "repr": "1e-05",
            "layer": "role-config",
            "kind": "file",
            "source": "examples/megatron_ppo.yaml",
            "line": 10,
            "column": 11,
            "argv_index": None,
            "token": None,
            "rule": None,
            "label": "default",
        }
        assert data["actor"]["attention_backend"]["value"] == "auto"
        assert list(data["actor"]) == sorted(data["actor"])

    def test_yaml(self, launcher: list[str]) -> None:
        """--yaml is YAML that reads back to the values (enums by name), origins as comments."""
        result = run(launcher, "show", "--all", "--yaml", "--", *PPO_ARGV)
        assert result.returncode == 0, result.stderr
        data = yaml.safe_load(result.stdout)
        assert data["critic"]["lr"] == 1e-05
        assert isinstance(data["critic"]["lr"], float)
        assert data["actor"]["attention_backend"] == "auto"
        assert data["actor"]["save"] == "/path/to/actor_ckpt"
        assert re.search(
            r"^  lr: 1\.0e-05 +# role-config examples/megatron_ppo\.yaml:10:11$",
            result.stdout,
            re.MULTILINE,
        )

    def test_json_and_yaml_exclude_each_other(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--json and --yaml together are a usage error."""
        assert main(["show", "--json", "--yaml", "--", *PPO_ARGV]) == 2
        assert "not allowed with argument" in capsys.readouterr().err


class TestDiff:
    """diff: the keys whose values differ between actor and critic, with both origins."""

    def test_table(self, launcher: list[str]) -> None:
        """One row per differing key, each side's value and origin; the count on stderr."""
        result = run(launcher, "diff", "--", *PPO_ARGV)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0].split() == ["key", "actor", "critic"]
        keys = [line.split()[0] for line in lines[1:]]
        assert keys == [
            "disable_param_buffers_cpu_backup",
            "kl_coef",
            "lr",
            "save",
            "untie_embeddings_and_output_weights",
        ]
        lr = next(line for line in lines if line.startswith("lr "))
        assert lr.split() == [
            "lr",
            "1e-06",
            "role-config",
            "examples/megatron_ppo.yaml:5:11",
            "1e-05",
            "role-config",
            "examples/megatron_ppo.yaml:10:11",
        ]
        assert result.stderr == "5 keys differ between actor and critic\n"

    def test_json_shape(self, launcher: list[str]) -> None:
        """--json lists each differing key with each role's value and origin (null: unset)."""
        result = run(launcher, "diff", "--json", "--", *PPO_ARGV)
        assert result.returncode == 0, result.stderr
        data = {entry["key"]: entry["roles"] for entry in json.loads(result.stdout)}
        assert data["kl_coef"]["actor"]["value"] == 0.01
        assert data["kl_coef"]["critic"]["layer"] == "rule:critic-defaults"
        assert data["disable_param_buffers_cpu_backup"]["actor"] is None
        assert set(data["lr"]["critic"]) == {"value", "repr", *ORIGIN_FIELDS}

    def test_no_difference_exits_0(self, launcher: list[str]) -> None:
        """Without a role file both roles are the command line: nothing differs, exit 0."""
        result = run(launcher, "diff", "--", "--rollout-batch-size", "8")
        assert (result.returncode, result.stdout) == (0, "")
        assert result.stderr == "no key differs between actor and critic\n"
        result = run(launcher, "diff", "--json", "--", "--rollout-batch-size", "8")
        assert (result.returncode, json.loads(result.stdout)) == (0, [])

    def test_failed_resolution_exits_1(self, launcher: list[str]) -> None:
        """A configuration that does not resolve exits 1."""
        result = run(launcher, "diff", "--", "--lr", "fast")
        assert result.returncode == 1
        assert "argv[1]: error: argument --lr: invalid float value: 'fast'" in result.stderr
        no_traceback(result)

    def test_usage_error_exits_2(self, launcher: list[str]) -> None:
        """A usage error exits 2."""
        result = run(launcher, "diff", "--role", "actor", "--", "--lr", "1")
        assert result.returncode == 2
        no_traceback(result)


class TestCheck:
    """check: every problem at once, as FILE:LINE:COL lines editors and CI annotate."""

    def test_the_real_slime_launch_is_clean(self, launcher: list[str]) -> None:
        """The real slime PPO launch and its role file: no error, the 4 SGLang flags noted."""
        result = run(launcher, "check", "--strict", "--", *SLIME_ARGV, cwd=FIXTURES)
        assert result.returncode == 0, result.stdout + result.stderr
        lines = result.stdout.splitlines()
        assert [line.split(": ")[0:2] for line in lines] == [
            ["argv[88]", "note"],
            ["argv[90]", "note"],
            ["argv[92]", "note"],
            ["argv[94]", "note"],
        ]
        assert (
            lines[0]
            == "argv[88]: note: '--sglang-mem-fraction-static 0.8' is not an argument of this parser; it is passed on (slime hands such arguments to its pre-parser or to SGLang's parser)"
        )
        assert result.stderr == "0 errors, 0 warnings, 4 notes\n"

    def test_a_misspelt_key(self, launcher: list[str], misspelt: Path) -> None:
        """A misspelt key in a copy of the role file: did-you-mean at its file:line:col, exit 1."""
        result = run(launcher, "check", "--", *SLIME_ARGV, cwd=misspelt)
        assert result.returncode == 1
        assert result.stdout.splitlines()[0] == (
            "slime_ppo_megatron.yaml:6:7: error: 'lrr' is not an argument of this parser (did you mean 'lr'?)"
        )
        assert result.stderr == "1 error, 0 warnings, 4 notes\n"

    def test_every_problem_at_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Problems of every rule are reported together in file order, then the notes."""
        monkeypatch.chdir(tmp_path)
        Path("ppo.yaml").write_text(
            "megatron:\n"
            "  - role: critic\n"
            "    overrides:\n"
            "      lr: fast\n"
            "      micro_batch_size: 2.0\n"
            "      num_nodes: 2\n"
            "      lr_decay_style: cosin\n"
        )
        argv = [
            "--rollout-batch-size",
            "8",
            "--use-critic",
            "--megatron-config-path",
            "ppo.yaml",
            "--sglang-x",
            "1",
        ]
        assert main(["check", "--", *argv]) == 1
        captured = capsys.readouterr()
        assert captured.out.splitlines() == [
            "ppo.yaml:4:11: error: 'lr' must be a float (got 'fast') (write a number such as 1e-5)",
            "ppo.yaml:5:25: error: 'micro_batch_size' must be an int (got 2.0) (write 2)",
            "ppo.yaml:6:7: warning: 'num_nodes' is ignored: resources come from the command line (remove it; set --actor-num-nodes / --critic-num-nodes on the command line)",
            "ppo.yaml:7:23: error: 'lr_decay_style' must be one of 'constant', 'linear', 'cosine', 'inverse-square-root', 'WSD' (got 'cosin') (did you mean 'cosine'?)",
            "argv[5]: note: '--sglang-x 1' is not an argument of this parser; it is passed on (slime hands such arguments to its pre-parser or to SGLang's parser)",
        ]
        assert captured.err == "3 errors, 1 warning, 1 note\n"

    def test_warnings_fail_only_with_strict(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A warning exits 0, and 1 with --strict."""
        monkeypatch.chdir(tmp_path)
        Path("ppo.yaml").write_text(
            "megatron:\n  - role: actor\n    overrides:\n      num_gpus_per_node: 4\n"
        )
        argv = ["--rollout-batch-size", "8", "--megatron-config-path", "ppo.yaml"]
        assert main(["check", "--", *argv]) == 0
        assert main(["check", "--strict", "--", *argv]) == 1
        assert capsys.readouterr().err == "0 errors, 1 warning\n" * 2

    def test_the_flags_of_slimes_pre_parser_pass(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--train-backend, --debug-rollout-only, --debug-train-only, --load-debug-rollout-data
        are read by slime's pre-parser, not the training parser: notes, passing --strict (they
        were warnings, and --load-debug-rollout-data an error suggesting another flag)."""
        argv = ["--rollout-batch-size", "8", "--train-backend", "megatron", "--debug-train-only"]
        argv += ["--load-debug-rollout-data", "/d/{rollout_id}.pt", "--debug-rollout-only"]
        assert main(["check", "--strict", "--", *argv]) == 0
        captured = capsys.readouterr()
        assert [line.split(": ")[0:2] for line in captured.out.splitlines()] == [
            ["argv[2]", "note"],
            ["argv[4]", "note"],
            ["argv[5]", "note"],
            ["argv[7]", "note"],
        ]
        assert captured.out.splitlines()[2] == (
            "argv[5]: note: '--load-debug-rollout-data /d/{rollout_id}.pt' is not an argument of "
            "this parser; it is passed on (slime hands such arguments to its pre-parser or to "
            "SGLang's parser)"
        )
        assert captured.err == "0 errors, 0 warnings, 4 notes\n"

    def test_what_only_begins_like_a_pre_parser_flag_does_not_pass(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The pre-parser's four are flags, not prefixes: a typo of the training parser's
        --load-debug-rollout-data-subsample is an error with its did-you-mean, as any flag very
        close to one of the parser's, and --train-backend-x a warning (--strict fails)."""
        argv = ["--rollout-batch-size", "8", "--load-debug-rollout-data-subsamp", "0.5"]
        assert main(["check", "--", *argv]) == 1
        out = capsys.readouterr().out
        assert "argv[2]: error: '--load-debug-rollout-data-subsamp' is not an argument" in out
        assert "did you mean '--load-debug-rollout-data-subsample'?" in out
        argv = ["--rollout-batch-size", "8", "--train-backend-x", "megatron"]
        assert main(["check", "--strict", "--", *argv]) == 1
        assert "argv[2]: warning: '--train-backend-x megatron'" in capsys.readouterr().out

    def test_json_shape(self, launcher: list[str], misspelt: Path) -> None:
        """--json lists every problem with its fields; severities are error, warning, info."""
        result = run(launcher, "check", "--json", "--", *SLIME_ARGV, cwd=misspelt)
        assert result.returncode == 1
        problems = json.loads(result.stdout)
        assert [p["severity"] for p in problems] == ["error", "info", "info", "info", "info"]
        assert problems[0] == {
            "message": "'lrr' is not an argument of this parser",
            "key": "lrr",
            "layer": "role-config",
            "source": "slime_ppo_megatron.yaml",
            "line": 6,
            "column": 7,
            "argv_index": None,
            "hint": "did you mean 'lr'?",
            "severity": "error",
            "rule": "unknown-keys",
        }

    @pytest.mark.parametrize(
        ("argv", "line"),
        [
            (
                ["--rollout-batch-size", "8", "--lr", "fast"],
                "argv[3]: error: argument --lr: invalid float value: 'fast'",
            ),
            (
                ["--rollout-batch-size", "8", "--lr=fast"],
                "argv[2]: error: argument --lr: invalid float value: 'fast'",
            ),
            (
                ["--rollout-batch-size", "8", "--lr-decay-style", "cosin"],
                # argparse's list of choices is worded differently across Python versions
                "argv[3]: error: argument --lr-decay-style: invalid choice: 'cosin' (choose from ... (did you mean 'cosine'?)",
            ),
            (
                ["--rollout-batch-size", "8", "--attention-backend", "flsh"],
                "argv[3]: error: argument --attention-backend: invalid value 'flsh' (KeyError: 'flsh') (did you mean 'flash'?)",
            ),
            (
                ["--lr", "1e-6"],
                "cli: error: the following arguments are required: --rollout-batch-size (add them to the command line)",
            ),
            (  # the required flag misspelt: the token meant is named, with what to write
                ["--lr", "1e-6", "--rollout-batch-sise=8"],
                "argv[2]: error: the following arguments are required: --rollout-batch-size ('--rollout-batch-sise' is not --rollout-batch-size: write --rollout-batch-size)",
            ),
            (  # `$(cat argv.txt)` of a file with Windows line endings: every token ends in \r
                ["--lr\r", "1e-6\r", "--rollout-batch-size\r", "8\r"],
                (
                    "argv[0]: error: '--lr\\r' ends in a carriage return: ... so do argv[1] (convert the file (dos2unix FILE) and run again)",
                    "argv[2]: error: the following arguments are required: --rollout-batch-size ('--rollout-batch-size\\r' ends in a carriage return: the command line was read from a file with Windows line endings; convert the file (dos2unix FILE) and run again)",
                ),
            ),
            (  # a flag of the parser's own close to the required one is not taken for it
                ["--rollout-shuffle\r", "--lr\r", "1e-6\r", "--rollout-batch-size\r", "8\r"],
                (
                    "argv[0]: error: '--rollout-shuffle\\r' ends in a carriage return: ... so do argv[1], argv[2] (convert the file (dos2unix FILE) and run again)",
                    "argv[3]: error: the following arguments are required: --rollout-batch-size ('--rollout-batch-size\\r' ends in a carriage return: the command line was read from a file with Windows line endings; convert the file (dos2unix FILE) and run again)",
                ),
            ),
            (  # argparse refuses 'adam' + CR: the line ending is named, not a did-you-mean
                ["--rollout-batch-size", "8", "--optimizer", "adam\r"],
                "argv[3]: error: argument --optimizer: invalid choice: 'adam\\r' (choose from ... (argv[3] ends in a carriage return: the command line was read from a file with Windows line endings; convert the file (dos2unix FILE) and run again)",
            ),
            (
                ["--rollout-batch-size", "8", "--help"],
                "argv[2]: error: '--help' makes the trainer print and exit instead of training (remove it)",
            ),
        ],
        ids=[
            "type",
            "type-equals",
            "choice",
            "uncaught-enum",
            "required",
            "required-misspelt",
            "required-crlf",
            "required-crlf-near-flag",
            "choice-crlf",
            "help",
        ],
    )
    def test_command_line_errors(
        self, argv: list[str], line: str | tuple[str, ...], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A command line the trainer's parser refuses is an argv[N] error, never a traceback;
        what else the command line holds is an error of its own (`line`: several)."""
        assert main(["check", "--", *argv]) == 1
        captured = capsys.readouterr()
        lines = (line,) if isinstance(line, str) else line
        assert len(captured.out.splitlines()) == len(lines)
        for written, expected in zip(captured.out.splitlines(), lines, strict=True):
            start, _, end = expected.partition(" ... ")
            assert written.startswith(start)
            assert written.endswith(end or start)
        count = len(lines)
        assert captured.err == f"{count} error{'s' if count > 1 else ''}, 0 warnings\n"

    def test_every_command_line_error_at_once(self, capsys: pytest.CaptureFixture[str]) -> None:
        """argparse stops at its first error: check reads on past each one, and names every
        error of the command line, each at its own token, a secret never quoted."""
        argv = [
            *("--lr", "abc", "--optimizer", "adamw", "--wandb-key", "SEKRIT-4242"),
            *("--tensor-model-paralel-size", "2", "--lr", "2", "--lr=xyz"),
            *("--attention-backend", "flsh", "--rollout-batch-sise", "8"),
        ]
        assert main(["check", "--", *argv]) == 1
        captured = capsys.readouterr()
        assert [line.partition(" (")[0] for line in captured.out.splitlines()] == [
            "argv[1]: error: argument --lr: invalid float value: 'abc'",
            "argv[3]: error: argument --optimizer: invalid choice: 'adamw'",
            "argv[6]: error: '--tensor-model-paralel-size' is not an argument of this parser",
            "argv[10]: error: argument --lr: invalid float value: 'xyz'",
            "argv[12]: error: argument --attention-backend: invalid value 'flsh'",
            "argv[13]: error: the following arguments are required: --rollout-batch-size",
        ]
        assert captured.err == "6 errors, 0 warnings\n"
        assert "SEKRIT" not in captured.out + captured.err

    def test_command_line_and_role_file_errors_at_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The parser stopped on the command line: the role file it names is still checked,
        on its own as `check FILE` checks it (ppo-scope, which the refused estimator would
        decide, is not run, and the counts say so)."""
        monkeypatch.chdir(tmp_path)
        (tmp_path / "bad.yaml").write_text(
            "megatron:\n"
            "  - role: critic\n"
            "    overrides:\n"
            "      lrr: 1e-5\n"
            "  - role: actor\n"
            "    overrides:\n"
            "      lr_decay_style: cosin\n"
        )
        argv = ["--rollout-batch-size", "8", "--lr", "x", "--megatron-config-path", "bad.yaml"]
        assert main(["check", "--", *argv, "--advantage-estimator", "ppoo"]) == 1
        captured = capsys.readouterr()
        assert [line.partition(" (")[0] for line in captured.out.splitlines()] == [
            "argv[3]: error: argument --lr: invalid float value: 'x'",
            "argv[7]: error: argument --advantage-estimator: invalid choice: 'ppoo'",
            "bad.yaml:4:7: error: 'lrr' is not an argument of this parser",
            "bad.yaml:7:23: error: 'lr_decay_style' must be one of 'constant', 'linear', "
            "'cosine', 'inverse-square-root', 'WSD'",
        ]
        assert captured.err == (
            "4 errors, 0 warnings; not checked until the command line parses: ppo-scope, "
            "distinct-across-roles\n"
        )

    def test_sub_commands_errors_at_once(
        self, trainer_module: Callable[..., str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A trainer parser with sub-commands: a sub-command's refused value is a problem line
        (before: its usage and exit 2, as 'layerconf go'); a required option taken out with
        its refused value is not then said missing; a refused sub-command name is placed;
        what argparse stopped at is taken out with as many values as its option takes (the
        sub-command's name after '--n q' stays)."""
        trainer_module(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--lr', type=float, default=1.0)\n"
            "p.add_argument('--n', type=int, required=True)\n"
            "p.add_argument('--api-key', type=int)\n"
            "go = p.add_subparsers(dest='cmd').add_parser('go')\n"
            "go.add_argument('--x', type=int)\n",
            "sub_trainer",
        )
        given = ["--lr", "x", "--api-key", "SEKRIT-77", "--n", "q", "go", "--x", "y"]
        assert main(["check", "--parser", "sub_trainer:p", "--", *given]) == 1
        captured = capsys.readouterr()
        assert captured.out.splitlines() == [
            "argv[1]: error: argument --lr: invalid float value: 'x'",
            "argv[3]: error: argument --api-key: invalid int value: '<redacted>'",
            "argv[5]: error: argument --n: invalid int value: 'q'",
            "argv[8]: error: argument --x: invalid int value: 'y'",
        ]
        assert captured.err == "4 errors, 0 warnings\n"
        assert main(["check", "--parser", "sub_trainer:p", "--", "--n", "1", "goo"]) == 1
        assert capsys.readouterr().out == (
            "argv[2]: error: argument cmd: invalid choice: 'goo' (choose from 'go') "
            "(did you mean 'go'?)\n"
        )

    def test_abbreviations_and_short_clusters_are_read_as_argparse_reads_them(
        self, trainer_module: Callable[..., str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A trainer whose parser takes abbreviations (argparse's default): '--lr-dec=cosin'
        is --lr-decay-style's value, '-kq' is -k's (before: no index, and check read no
        further), '-qkx' is -q then -k's, '--he' is --help; each error is at its token, a
        required option given cut short is not then said missing, and the secret that
        '--hf-tok' takes is never quoted."""
        parser = trainer_module(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--lr-decay-style', choices=['cosine', 'linear'])\n"
            "p.add_argument('--hf-token', type=int)\n"
            "p.add_argument('-k', type=int)\n"
            "p.add_argument('-q', action='store_true')\n"
            "p.add_argument('--num-steps', type=int, required=True)\n"
            "p.add_argument('--lr', type=float)\n"
        )
        given = ["--num-st", "q", "-kq", "--lr-dec=cosin", "-qkx", "--hf-tok", "SEKRIT-31337"]
        assert main(["check", "--parser", parser, "--", *given, "--lr", "y", "--he"]) == 1
        captured = capsys.readouterr()
        assert captured.out.splitlines() == [
            "argv[1]: error: argument --num-steps: invalid int value: 'q'",
            "argv[2]: error: argument -k: invalid int value: 'q'",
            "argv[3]: error: argument --lr-decay-style: invalid choice: 'cosin' (choose from "
            "'cosine', 'linear') (did you mean 'cosine'?)",
            "argv[4]: error: argument -k: invalid int value: 'x'",
            "argv[6]: error: argument --hf-token: invalid int value: '<redacted>'",
            "argv[8]: error: argument --lr: invalid float value: 'y'",
            "argv[9]: error: '--he' makes the trainer print and exit instead of training "
            "(remove it)",
        ]
        assert captured.err == "7 errors, 0 warnings\n"
        assert "SEKRIT" not in captured.out + captured.err

    @pytest.mark.parametrize("python", ["3.12.6", "3.13.0", "3.13.1"])
    def test_each_pythons_reading_of_a_token_is_understood(self, python: str) -> None:
        """argparse's _parse_optional answers (action, option string, value) up to Python
        3.12.6, (action, option string, separator, value) in 3.13.0, a list of those from
        3.12.7 and 3.13.1 on (two for an ambiguous abbreviation, which an earlier one refuses
        itself, through error() or by raising): check places errors alike on each."""
        from layerconf.cli._argv_reading import read_as

        class Answering(argparse.ArgumentParser):
            def _parse_optional(self, arg_string: str) -> Any:
                if arg_string == "--l":
                    if python == "3.13.1":
                        return [(decay, "--lr-decay-style", None, None), (lr, "--lr", None, None)]
                    if python == "3.13.0":
                        raise argparse.ArgumentError(None, "ambiguous option")
                    self.error("ambiguous option")
                answer = answers.get(arg_string)
                if answer is None or python == "3.13.0":
                    return answer
                return [answer] if python == "3.13.1" else (*answer[:2], answer[3])

        parser = Answering()
        decay = parser.add_argument("--lr-decay-style")
        lr = parser.add_argument("--lr")
        k = parser.add_argument("-k", type=int)
        q = parser.add_argument("-q", action="store_true")
        answers = {
            "--lr-dec=x": (decay, "--lr-decay-style", "=", "x"),
            "-qk3": (q, "-q", "", "k3"),
            "-qk": (q, "-q", "", "k"),
            "--zz": (None, "--zz", None, None),
        }
        argv = ["--lr-dec=x", "-qk3", "--zz", "v", "--l", "1", "-qk", "2", "w"]
        assert [(r.tokens, r.option, r.actions, r.attached) for r in read_as(argv, parser)] == [
            (range(1), True, (decay,), "x"),
            (range(1, 2), True, (q, k), "3"),
            (range(2, 3), True, (), None),
            (range(3, 4), False, (), None),
            (range(4, 5), True, (), None),
            (range(5, 6), False, (), None),
            (range(6, 8), True, (q, k), None),
            (range(8, 9), False, (), None),
        ]

    def test_a_secret_given_twice_is_blamed_where_refused(
        self, trainer_module: Callable[..., str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A secret flag given twice, one value refused: argparse's message quotes neither
        value ('<redacted>'), and the error is at the one it refused, once (before, the other
        was blamed too), the secret never quoted."""
        parser = trainer_module(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--api-key', type=int)\n"
            "p.add_argument('--n', type=int)\n"
        )
        for given, index in (
            (["--api-key=SEKRIT-4242", "--n", "1", "--api-key", "5"], 0),
            (["--api-key", "5", "--n", "1", "--api-k", "SEKRIT-4242"], 5),
        ):
            assert main(["check", "--parser", parser, "--", *given]) == 1
            captured = capsys.readouterr()
            assert captured.out == (
                f"argv[{index}]: error: argument --api-key: invalid int value: '<redacted>'\n"
            )
            assert "SEKRIT" not in captured.out + captured.err

    def test_a_refused_sub_command_is_taken_out_alone(
        self, trainer_module: Callable[..., str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A refused sub-command's name after '--a 1': reading on takes out the name, not
        --a with it (before: '--b' given with '--a' went unreported)."""
        parser = trainer_module(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "both = p.add_mutually_exclusive_group()\n"
            "both.add_argument('--a', type=int)\n"
            "both.add_argument('--b', type=int)\n"
            "p.add_subparsers(dest='cmd').add_parser('go')\n"
        )
        assert main(["check", "--parser", parser, "--", "--a", "1", "goo", "--b", "2"]) == 1
        assert capsys.readouterr().out.splitlines() == [
            "argv[2]: error: argument cmd: invalid choice: 'goo' (choose from 'go') "
            "(did you mean 'go'?)",
            "argv[3]: error: argument --b: not allowed with argument --a",
        ]

    def test_reading_on_ends_where_a_token_left_is_read_otherwise(
        self, trainer_module: Callable[..., str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Taking a refused option out changes how the tokens around it are read: a sub-command's
        name becomes a value of the option before, a stray value is taken by it, a positional
        moves to the argument before. Before, check reported errors the command line does not
        have (--list refusing 'go', '--m=2' unknown, "required: a, b") and passed over the stray
        '3'; now reading ends there, with its note. Where every token left reads as before
        (options after the refused one), it still reads on to the end, into the sub-command."""
        parser = trainer_module(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--list', nargs='+', type=int)\n"
            "p.add_argument('--opt', nargs='?')\n"
            "p.add_argument('--n', type=int)\n"
            "p.add_argument('--lr-decay-style', choices=['cosine', 'linear'])\n"
            "go = p.add_subparsers(dest='cmd').add_parser('go')\n"
            "go.add_argument('--m', type=int)\n"
        )
        positionals = trainer_module(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('a', type=int)\n"
            "p.add_argument('b', choices=['y', 'z'])\n"
            "p.add_argument('--n', type=int)\n"
        )
        cosin = (
            "error: argument --lr-decay-style: invalid choice: 'cosin' (choose from 'cosine', "
            "'linear') (did you mean 'cosine'?)"
        )
        x = "error: argument --n: invalid int value: 'x'"

        def note(count: int) -> str:
            return (
                f"cli: note: the command line ({count} tokens) was not read past its first "
                "error (correct it and check again)"
            )

        cases = [
            (parser, "--list 1 2 --lr-decay-style cosin go --m=2", [f"argv[4]: {cosin}", note(7)]),
            (parser, "--opt --n x go --m 2", [f"argv[2]: {x}", note(6)]),
            (parser, "--list 1 2 --n x 3", [f"argv[4]: {x}", note(6)]),
            (
                parser,
                "--n 1 goo go --m 2",
                [
                    "argv[2]: error: argument cmd: invalid choice: 'goo' (choose from 'go') "
                    "(did you mean 'go'?)",
                    note(6),
                ],
            ),
            (
                positionals,
                "x y --n q",
                ["argv[0]: error: argument a: invalid int value: 'x'", note(4)],
            ),
            (
                positionals,
                "1 w --n q",
                [
                    "argv[1]: error: argument b: invalid choice: 'w' (choose from 'y', 'z')",
                    "argv[3]: error: argument --n: invalid int value: 'q'",
                ],
            ),
            (
                parser,
                "--n x --lr-decay-style cosin go --m y",
                [
                    f"argv[1]: {x}",
                    f"argv[3]: {cosin}",
                    "argv[6]: error: argument --m: invalid int value: 'y'",
                ],
            ),
        ]
        for module, given, expected in cases:
            assert main(["check", "--parser", module, "--", *given.split()]) == 1
            assert capsys.readouterr().out.splitlines() == expected, given

    def test_an_ambiguous_abbreviation_is_placed(
        self, trainer_module: Callable[..., str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An abbreviation of several options: at its token, with the options to write (before:
        at no token, and check read no further), the same abbreviation written again named
        with it and taken out at once (before reading on, one parse each), reading on past
        them and their values; a value a secret flag would take never quoted, however short;
        of many options, the first few listed."""
        parser = trainer_module(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--hf-token')\n"
            "p.add_argument('--hf-tokenizer')\n"
            "p.add_argument('--lr', type=float)\n"
            "p.add_argument('--lr-decay-style')\n"
            "for n in range(40):\n"
            "    p.add_argument(f'--option-{n}')\n"
        )
        given = ["--hf-tok=Zq9", "--l", "2", "--lr", "y", "--l", "3", "--opt", "--l=4"]
        assert main(["check", "--parser", parser, "--", *given]) == 1
        captured = capsys.readouterr()
        assert captured.out.splitlines() == [
            "argv[0]: error: ambiguous option: --hf-tok=<redacted> could match --hf-token, "
            "--hf-tokenizer (write one of --hf-token, --hf-tokenizer in full)",
            "argv[1]: error: ambiguous option: --l could match --lr, --lr-decay-style; so do "
            "argv[5] (write one of --lr, --lr-decay-style in full)",
            "argv[4]: error: argument --lr: invalid float value: 'y'",
            "argv[7]: error: ambiguous option: --opt could match --option-0, --option-1, "
            "--option-2, --option-3, --option-4, ... (40 in all) (write the option in full)",
            "argv[8]: error: ambiguous option: --l=4 could match --lr, --lr-decay-style (write "
            "one of --lr, --lr-decay-style in full)",
        ]
        assert "Zq9" not in captured.out + captured.err

    def test_what_a_trainers_parser_raises_is_its_problem(
        self, trainer_module: Callable[..., str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A type= whose exception cannot be printed (before: exit 70, 'a bug in layerconf'),
        one that raises GeneratorExit (before: a traceback) or SystemExit (before: check ended
        with its status, saying nothing: 0 passed the launch), one whose message is megabytes
        long (before: printed whole), an action that calls sys.exit(0): each is the command
        line's problem, its message cut at 200 characters."""
        parser = trainer_module(
            "import argparse, sys\n"
            "class Weird(Exception):\n"
            "    def __str__(self):\n"
            "        raise RuntimeError('no')\n"
            "def weird(text):\n"
            "    raise Weird()\n"
            "def gen(text):\n"
            "    raise GeneratorExit('g')\n"
            "def leave(text):\n"
            "    sys.exit(3)\n"
            "def huge(text):\n"
            "    raise KeyError('x' * 5_000_000)\n"
            "class Leave(argparse.Action):\n"
            "    def __call__(self, parser, namespace, values, option_string=None):\n"
            "        sys.exit(0)\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--w', type=weird)\n"
            "p.add_argument('--g', type=gen)\n"
            "p.add_argument('--s', type=leave)\n"
            "p.add_argument('--h', type=huge)\n"
            "p.add_argument('--x', action=Leave)\n",
            "raising_trainer",
        )
        for flag, said in [
            ("--w", "Weird: <its message cannot be read>"),
            ("--g", "GeneratorExit: g"),
            ("--s", "SystemExit: 3"),
            ("--h", "KeyError: '" + "x" * 196 + "..."),
        ]:
            assert main(["check", "--parser", parser, "--", flag, "1"]) == 1
            assert capsys.readouterr().out == (
                f"argv[1]: error: argument {flag}: invalid value '1' ({said}) (check the value)\n"
            )
        assert main(["check", "--parser", parser, "--", "--x", "1"]) == 2
        assert capsys.readouterr().err.startswith(
            "layerconf check: error: the trainer's parser raised SystemExit: 0 at "
        )

    def test_what_is_missing_is_said_once_and_whole(
        self, trainer_module: Callable[..., str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Required options missing beside one given with a refused value: the given one is not
        said missing (before: the whole list, or nothing when all were given); a required
        group missing too is said (before: the group was made optional with the options)."""
        parser = trainer_module(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('file')\n"
            "p.add_argument('--n', type=int, required=True)\n"
            "p.add_argument('--m', type=int)\n"
            "group = p.add_mutually_exclusive_group(required=True)\n"
            "group.add_argument('--a', action='store_true')\n"
            "group.add_argument('--b', type=int)\n"
            "p.add_argument('--api-key', required=True)\n"
        )
        assert main(["check", "--parser", parser, "--", "--n", "x", "--m", "y"]) == 1
        assert capsys.readouterr().out.splitlines() == [
            "cli: error: the following arguments are required: file, --api-key (add them to "
            "the command line)",
            "cli: error: one of the arguments --a --b is required (add one of them to the "
            "command line)",
            "argv[1]: error: argument --n: invalid int value: 'x'",
            "argv[3]: error: argument --m: invalid int value: 'y'",
        ]

    def test_the_trainers_option_after_a_sub_command(
        self, trainer_module: Callable[..., str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The trainer's own option written after a sub-command's name, which argparse leaves
        unknown: said so, with where to write it (before: 'not an argument of this parser
        (did you mean' the same option?)); its secret value not quoted."""
        parser = trainer_module(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--api-key')\n"
            "p.add_subparsers(dest='cmd').add_parser('go').add_argument('--m', type=int)\n"
        )
        assert main(["check", "--parser", parser, "--", "go", "--m", "1", "--api-key", "Zq9"]) == 1
        captured = capsys.readouterr()
        assert captured.out == (
            "argv[3]: error: '--api-key <redacted>' comes after a sub-command's name: the "
            "sub-command's parser does not take it, though the trainer's own does (write "
            "--api-key before the sub-command's name)\n"
        )
        assert "Zq9" not in captured.out + captured.err

    def test_the_trainers_option_after_a_double_dash(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The trainer's own option written after '--', which ends the options: said so, with
        the '--' to remove (before: 'not an argument of this parser (did you mean' the same
        option?)); its secret value not quoted."""
        argv = [*PPO_ARGV, "--", "--wandb-key", "Zq9Wv4Lm", "--lr", "2"]
        dash = len(PPO_ARGV)
        assert main(["check", "--", *argv]) == 1
        captured = capsys.readouterr()
        assert (
            f"argv[{dash + 1}]: error: '--wandb-key <redacted>' comes after '--', which ends the "
            "options: the trainer reads it as a plain argument, not as --wandb-key (remove the "
            f"'--' at argv[{dash}], or write --wandb-key before it)\n"
        ) in captured.out
        assert f"argv[{dash + 3}]: error: '--lr 2' comes after '--'" in captured.out
        assert "did you mean" not in captured.out
        assert "Zq9" not in captured.out + captured.err

    def test_a_secrets_values_are_parsed_again_once(
        self,
        trainer_module: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A secret flag given twice, the second refused, the first with many values, all
        quoted alike ('<redacted>'): its values are parsed again once to find the refused one
        (before: once for each value, a time growing with their square)."""
        import layerconf.cli.stops as stops

        calls: list[object] = []
        real = stops._refused_alone

        def counted(argv: list[str], read: Any) -> bool:
            calls.append(read)
            return real(argv, read)

        monkeypatch.setattr(stops, "_refused_alone", counted)
        parser = trainer_module(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--api-key', nargs='+', type=int)\n"
            "p.add_argument('--n', type=int)\n"
        )
        given = ["--api-key", *["5"] * 50, "--n", "1", "--api-key", "SEKRIT-4242"]
        assert main(["check", "--parser", parser, "--", *given]) == 1
        assert capsys.readouterr().out == (
            "argv[54]: error: argument --api-key: invalid int value: '<redacted>'\n"
        )
        assert len(calls) == 2

    def test_reading_on_is_bounded(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Past 20 errors, or on a long command line sooner (argparse before Python 3.13 takes
        a time growing with the square of its options), a note says check stopped reading."""
        argv = ["--rollout-batch-size", "8"] + [f"--lr=x{n}" for n in range(30)]
        assert main(["check", "--", *argv]) == 1
        out = capsys.readouterr().out.splitlines()
        assert len(out) == 22
        assert out[-1] == (
            "cli: note: the command line (32 tokens) was not read past its first 21 errors "
            "(correct these and check again)"
        )
        argv = ["--rollout-batch-size", "8"] + ["--lr", "1"] * 3000 + ["--lr=x", "--lr=y"]
        assert main(["check", "--", *argv]) == 1
        assert capsys.readouterr().out.splitlines() == [
            "argv[6002]: error: argument --lr: invalid float value: 'x'",
            "cli: note: the command line (6,004 tokens) was not read past its first error "
            "(correct it and check again)",
        ]

    # A trainer whose actions stop and raise where argparse names no token (`stop_trainer`).
    STOP_TRAINER = (
        "import argparse\n"
        "class Boom(argparse.Action):\n"
        "    def __call__(self, parser, namespace, values, option_string=None):\n"
        "        raise KeyError(values)\n"
        "class Clash(argparse.Action):\n"
        "    def __call__(self, parser, namespace, values, option_string=None):\n"
        "        parser.error('--mode and --both cannot be given together')\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--lr', type=float, default=1.0)\n"
        "p.add_argument('--mode', action=Boom)\n"
        "p.add_argument('--both', action=Clash)\n"
        "p.add_argument('--megatron-config-path')\n"
        "g = argparse.ArgumentParser()\n"
        "g.add_argument('--lr', type=float, default=1.0)\n"
        "g.add_argument('--megatron-config-path')\n"
        "one = g.add_mutually_exclusive_group(required=True)\n"
        "one.add_argument('--a')\n"
        "one.add_argument('--b')\n"
        "s = argparse.ArgumentParser()\n"
        "s.add_argument('--lr', type=float, default=1.0)\n"
        "s.add_argument('--megatron-config-path')\n"
        "go = s.add_subparsers(dest='cmd').add_parser('go')\n"
        "go.add_argument('--x', type=int, required=True)\n"
    )

    @pytest.mark.parametrize(
        ("parser", "argv", "lines"),
        [
            (  # an action raises: at no value of the command line
                "p",
                ["--lr", "x", "--mode", "fast", "--megatron-config-path", "bad.yaml"],
                [
                    "argv[1]: error: argument --lr: invalid float value: 'x'",
                    "bad.yaml:4:7: error: 'lrr' is not an argument of this parser (did you mean 'lr'?)",
                    "cli: note: the command line (6 tokens) was not read past its first error: "
                    "read on without it, the trainer's parser raised KeyError: 'fast' at "
                    "{file}:4 (correct it and check again)",
                ],
            ),
            (  # an action's own parser.error(): at no token to take out
                "p",
                ["--lr", "x", "--both", "1", "--megatron-config-path", "bad.yaml"],
                [
                    "cli: error: --mode and --both cannot be given together",
                    "argv[1]: error: argument --lr: invalid float value: 'x'",
                    "bad.yaml:4:7: error: 'lrr' is not an argument of this parser (did you mean 'lr'?)",
                    "cli: note: the command line (6 tokens) was not read past its first 2 "
                    "errors (correct these and check again)",
                ],
            ),
            (  # a sub-command's required option: its parser is not relaxed
                "s",
                ["--lr", "x", "--megatron-config-path", "bad.yaml", "go"],
                [
                    "cli: error: the following arguments are required: --x (add them to the "
                    "command line)",
                    "argv[1]: error: argument --lr: invalid float value: 'x'",
                    "bad.yaml:4:7: error: 'lrr' is not an argument of this parser (did you mean 'lr'?)",
                    "cli: note: the command line (5 tokens) was not read past its first 2 "
                    "errors (correct these and check again)",
                ],
            ),
            (  # a required group missing is read past, as a required option is
                "g",
                ["--lr", "x", "--megatron-config-path", "bad.yaml", "--zz"],
                [
                    "cli: error: one of the arguments --a --b is required (add one of them to "
                    "the command line)",
                    "argv[1]: error: argument --lr: invalid float value: 'x'",
                    "argv[4]: warning: '--zz' is not an argument of this parser; it is passed "
                    "on to slime's pre-parser or SGLang's parser, which is declared to take "
                    "only --sglang-*, --train-backend, --debug-rollout-only, "
                    "--debug-train-only, --load-debug-rollout-data (training ignores it: check "
                    "the spelling in --help, or remove it)",
                    "bad.yaml:4:7: error: 'lrr' is not an argument of this parser (did you mean 'lr'?)",
                ],
            ),
        ],
        ids=["action-raises", "action-stops", "sub-command-required", "required-group"],
    )
    def test_reading_on_that_ends_early_says_so(
        self,
        parser: str,
        argv: list[str],
        lines: list[str],
        tmp_path: Path,
        trainer_module: Callable[..., str],
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """Reading on past argparse's first error may end before the command line parses: at
        an error at no token to take out, where the trainer's parser raises at no value (what
        it raised is named), at a sub-command's required option. A note says the rest was not
        read, and the role file the command line names is checked on its own all the same
        (before: neither, as if the command line had been read whole)."""
        trainer_module(self.STOP_TRAINER, "stop_trainer")
        (tmp_path / "bad.yaml").write_text(
            "megatron:\n  - role: critic\n    overrides:\n      lrr: 1e-5\n"
        )
        command = ["check", "--parser", f"stop_trainer:{parser}", "--preset", "slime"]
        assert main([*command, "--", *argv]) == 1
        file = sys.modules["stop_trainer"].__file__
        assert capsys.readouterr().out.splitlines() == [line.format(file=file) for line in lines]

    def test_reading_on_names_the_whole_command_lines_tokens(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Read on without '--lr x', a hint still names each token by its index in the command
        line as written (before: its index in what was left, argv[1] for argv[3])."""
        argv = ["--lr", "x", "--optimizer", "adam\r", "--rollout-batch-size", "8"]
        assert main(["check", "--", *argv]) == 1
        assert capsys.readouterr().out.splitlines() == [
            "argv[1]: error: argument --lr: invalid float value: 'x'",
            "argv[3]: error: argument --optimizer: invalid choice: 'adam\\r' (choose from "
            "'adam', 'sgd', 'muon', 'dist_muon', 'lion', 'soap', 'adaptive_muon') (argv[3] ends "
            "in a carriage return: the command line was read from a file with Windows line "
            "endings; convert the file (dos2unix FILE) and run again)",
        ]
        argv = ["--lr", "x", "--save", "/ckpt\r", "--load", "/in\r", "--rollout-batch-size", "8"]
        assert main(["check", "--", *argv]) == 1
        assert capsys.readouterr().out.splitlines() == [
            "argv[1]: error: argument --lr: invalid float value: 'x'",
            "argv[3]: error: '/ckpt\\r' ends in a carriage return: the command line was read "
            "from a file with Windows line endings; so do argv[5] (convert the file (dos2unix "
            "FILE) and run again)",
        ]

    def test_a_crashing_type_or_action_never_quotes_a_secret(
        self, trainer_module: Callable[..., str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A secret flag's type= callable or action raises what argparse does not catch (a
        lookup's KeyError, the trainer's own exception quoting the value): the value, too short
        for the output's scrubber to look for everywhere, is quoted nowhere, nor the
        exception's message that holds it (before: both, as the trainer's traceback would)."""
        trainer_module(
            "import argparse\n"
            "class Refused(Exception):\n"
            "    pass\n"
            "def lookup(text):\n"
            "    return {'a': 1}[text]\n"
            "def refuse(text):\n"
            "    raise Refused(f'no key {text} here')\n"
            "class Boom(argparse.Action):\n"
            "    def __call__(self, parser, namespace, values, option_string=None):\n"
            "        raise KeyError(values)\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--lr', type=float, default=1.0)\n"
            "p.add_argument('--api-key', type=lookup)\n"
            "p.add_argument('--wandb-key', type=refuse)\n"
            "p.add_argument('--hf-token', action=Boom)\n",
            "secret_trainer",
        )
        command = ["check", "--parser", "secret_trainer:p", "--"]
        assert main([*command, "--api-key", "Zq9", "--lr", "x"]) == 1
        captured = capsys.readouterr()
        assert captured.out.splitlines() == [
            "argv[1]: error: argument --api-key: invalid value '<redacted>' "
            "(KeyError: <redacted>) (check the value)",
            "argv[3]: error: argument --lr: invalid float value: 'x'",
        ]
        assert "Zq9" not in captured.out + captured.err
        assert main([*command, "--lr", "x", "--wandb-key=Zq9"]) == 1
        captured = capsys.readouterr()
        assert captured.out.splitlines() == [
            "argv[1]: error: argument --lr: invalid float value: 'x'",
            "argv[2]: error: argument --wandb-key: invalid value '<redacted>' "
            "(Refused: <redacted>) (check the value)",
        ]
        assert "Zq9" not in captured.out + captured.err
        file = sys.modules["secret_trainer"].__file__
        assert main([*command, "--hf-token", "Zq9"]) == 2
        captured = capsys.readouterr()
        assert captured.err == (
            "layerconf check: error: the trainer's parser raised KeyError: <redacted> at "
            f"{file}:10; run the trainer with the same command line to see the traceback\n"
        )
        assert "Zq9" not in captured.out
        assert main([*command, "--lr", "x", "--hf-token", "Zq9"]) == 1
        captured = capsys.readouterr()
        assert captured.out.splitlines() == [
            "argv[1]: error: argument --lr: invalid float value: 'x'",
            "cli: note: the command line (4 tokens) was not read past its first error: read on "
            f"without it, the trainer's parser raised KeyError: <redacted> at {file}:10 "
            "(correct it and check again)",
        ]
        assert "Zq9" not in captured.out + captured.err

    def test_a_graph_of_sub_command_parsers_is_copied_once(
        self,
        trainer_module: Callable[..., str],
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A trainer's sub-commands that name one another (the same three under each, 8 deep,
        and the trainer's own parser among them): each parser is copied a few times, not once
        per path through the graph (before: 383,744 copies, 20 s), the copies of a cycle are
        one copy, and the trainer's parsers are left as they were."""
        import copy
        import importlib

        from layerconf.cli._parser_copies import guarded

        trainer_module(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--lr', type=float, default=1.0)\n"
            "commands = p.add_subparsers(dest='cmd')\n"
            "wide = [commands.add_parser(f'q{n}') for n in range(3)]\n"
            "for q in wide:\n"
            "    q.add_argument('--x', type=int)\n"
            "    then = q.add_subparsers(dest='then')\n"
            "    for n, other in enumerate(wide):\n"
            "        then._name_parser_map[f'q{n}'] = other\n"
            "    then._name_parser_map['top'] = p\n",
            "graph_trainer",
        )
        copies = 0
        plain_copy = copy.copy

        def counted(value: Any) -> Any:
            nonlocal copies
            copies += isinstance(value, argparse.ArgumentParser)
            return plain_copy(value)

        sys.path.insert(0, str(tmp_path))
        graph_trainer = importlib.import_module("graph_trainer")
        parsers = [graph_trainer.p, *graph_trainer.wide]

        def shape() -> list[Any]:
            """What the trainer's parsers are: their attributes, actions, sub-commands."""
            return [
                (
                    sorted(vars(parser)),
                    parser._actions,
                    list(parser._actions),
                    [dict(a.choices or {}) for a in parser._actions],
                )
                for parser in parsers
            ]

        before = shape()
        monkeypatch.setattr(copy, "copy", counted)
        argv = ["--lr", "x", "q0", "--x", "y", "q1", "top", "--lr", "z", "q2", "--x", "1"]
        assert main(["check", "--parser", "graph_trainer:p", "--", *argv]) == 1
        assert capsys.readouterr().out.splitlines() == [
            "argv[1]: error: argument --lr: invalid float value: 'x'",
            "argv[4]: error: argument --x: invalid int value: 'y'",
            "argv[8]: error: argument --lr: invalid float value: 'z'",
        ]
        assert copies < 100
        assert shape() == before
        safe = guarded(graph_trainer.p)
        command = next(a for a in safe._actions if isinstance(a, argparse._SubParsersAction))
        then = next(
            a for a in command.choices["q0"]._actions if isinstance(a, argparse._SubParsersAction)
        )
        assert then.choices["top"] is safe
        assert then.choices["q1"] is command.choices["q1"]
        assert shape() == before

    def test_a_misspelt_training_flag_is_an_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        """slime would drop it and run with TP 1: check stops the launch, with the did-you-mean."""
        argv = ["--rollout-batch-size", "8", "--tensor-model-paralel-size", "2"]
        assert main(["check", "--", *argv]) == 1
        out = capsys.readouterr().out
        assert out.startswith(
            "argv[2]: error: '--tensor-model-paralel-size' is not an argument of this parser "
            "(did you mean '--tensor-model-parallel-size'?)"
        )

    def test_what_a_files_encoding_leaves_on_the_command_line_is_an_error(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`$(cat argv.txt)` of a file with Windows line endings or a byte-order mark: the
        parser takes '/ckpt' + CR as a directory of that name and a flag behind a BOM as an
        unknown token; check stops the launch once for each, naming the other tokens, and
        quotes no secret's value."""
        argv = ["\ufeff--lr", "1e-6", "--save", "/ckpt\r", "--load", "/in\r"]
        argv += ["--wandb-key", "SEKRIT-1234567\r", "--rollout-batch-size", "8"]
        assert main(["check", "--", *argv]) == 1
        out = capsys.readouterr().out
        assert out.splitlines() == [
            "argv[0]: error: '\\ufeff--lr' begins with a byte-order mark "
            "(U+FEFF): the command line was read from a file saved with one (save the file as "
            "UTF-8 without a byte-order mark and run again)",
            "argv[3]: error: '/ckpt\\r' ends in a carriage return: the command line was read "
            "from a file with Windows line endings; so do argv[5], argv[7] (convert the file "
            "(dos2unix FILE) and run again)",
        ]
        assert main(["check", "--", "--rollout-batch-size", "8", *argv[6:8]]) == 1
        out = capsys.readouterr().out
        assert "SEKRIT" not in out
        assert out.startswith("argv[3]: error: a secret's value (not shown) ends in a carriage")

    @pytest.mark.parametrize(
        ("flag", "meant"),
        [
            ("--LR", "--lr"),
            ("--Tensor-Model-Parallel-Size", "--tensor-model-parallel-size"),
            ("--tensor-model-parallel", "--tensor-model-parallel-size"),  # no abbreviations
        ],
    )
    def test_a_flag_in_other_case_or_cut_short_is_an_error(
        self, flag: str, meant: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Not too far to be a typo: the parser takes neither, so training would drop it."""
        assert main(["check", "--", "--rollout-batch-size", "8", flag, "2"]) == 1
        out = capsys.readouterr().out
        assert out.startswith(
            f"argv[2]: error: {flag!r} is not an argument of this parser (did you mean {meant!r}?)"
        )

    def test_an_undeclared_flag_fails_only_with_strict(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Not a declared pass-through (--sglang-*), like no flag: a warning, an error with --strict."""
        argv = ["--rollout-batch-size", "8", "--zzz-qqq", "1"]
        assert main(["check", "--", *argv]) == 0
        assert main(["check", "--strict", "--", *argv]) == 1
        captured = capsys.readouterr()
        assert captured.out.startswith("argv[2]: warning: '--zzz-qqq 1' is not an argument")
        assert captured.err == "0 errors, 1 warning\n" * 2

    def test_a_missing_role_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A role file that does not exist is a problem of the configuration: exit 1."""
        monkeypatch.chdir(tmp_path)
        assert (
            main(
                ["check", "--", "--rollout-batch-size", "8", "--megatron-config-path", "nope.yaml"]
            )
            == 1
        )
        assert capsys.readouterr().out.startswith("nope.yaml: error: file not found")


@pytest.fixture
def trainer_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., str]:
    """Writes a trainer's parser module (`source`, its parser `p`) as `name` (else one of its
    own) in `tmp_path`, the directory the command runs in, to be imported by --parser; gives
    its --parser argument. What the import adds to sys.path and sys.modules is undone."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    count = iter(range(1000))

    def write(source: str, name: str | None = None) -> str:
        name = name or f"user_trainer_{next(count)}"
        (tmp_path / f"{name}.py").write_text(source)
        return f"{name}:p"

    return write


def overrides_of(schema: dict[str, Any]) -> dict[str, Any]:
    """The properties of a schema's overrides: a mapping (or null) of dest to its schema."""
    properties: dict[str, Any] = schema["$defs"]["overrides"]["anyOf"][0]["properties"]
    return properties


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    """The schema of the bundled profile's role files."""
    return role_file_schema(load_profile())


class TestSchema:
    """schema: a JSON Schema of role files, for editors."""

    def test_printed(self, launcher: list[str], schema: dict[str, Any]) -> None:
        """The command prints the schema of the profile as JSON."""
        result = run(launcher, "schema")
        assert result.returncode == 0, result.stderr
        printed = json.loads(result.stdout)
        assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert printed["title"] == "role file of layerconf profile 'megatron-slime'"
        assert printed["$defs"] == schema["$defs"]

    def test_shape(self, schema: dict[str, Any]) -> None:
        """megatron is a list of entries with name, role, overrides and args; unknown keys refused."""
        assert schema["required"] == ["megatron"]
        assert schema["additionalProperties"] is False
        entry = schema["$defs"]["entry"]
        assert set(entry["properties"]) == {"name", "role", "overrides", "args"}
        assert entry["properties"]["role"]["enum"] == list(SLIME.roles)
        assert entry["additionalProperties"] is False
        overrides, null = schema["$defs"]["overrides"]["anyOf"]
        assert overrides["additionalProperties"] is False
        assert null == {"type": "null"}

    def test_help_fields_as_help_fills_them(self) -> None:
        """%(type)s, %(default)s, %(choices)s read as in --help; a bad field stays as written."""
        parser = argparse.ArgumentParser(prog="t")
        parser.add_argument(
            "--x",
            type=int,
            default=3,
            choices=[1, 2, 3],
            help="an %(type)s, default %(default)s of %(choices)s",
        )
        parser.add_argument("--y", help="bad %(nope)s")
        properties = overrides_of(role_file_schema(parser))
        assert properties["x"]["description"].startswith("an int, default 3 of 1, 2, 3\n")
        assert properties["y"]["description"].startswith("bad %(nope)s\n")

    def test_every_dest(self, schema: dict[str, Any]) -> None:
        """Every dest has a property with a description, and its default where JSON holds it."""
        parser = load_profile()
        properties = overrides_of(schema)
        dests = {a.dest for a in parser._actions if a.dest != "help"}
        assert dests <= set(properties)
        assert all(properties[dest]["description"] for dest in dests)
        assert properties["lr"]["default"] == parser.get_default("lr")
        assert "Initial learning rate" in properties["lr"]["description"]
        assert properties["lr_decay_style"]["enum"] == [
            "constant",
            "linear",
            "cosine",
            "inverse-square-root",
            "WSD",
        ]
        assert properties["attention_backend"]["enum"] == [
            "flash",
            "fused",
            "unfused",
            "local",
            "auto",
        ]
        assert properties["use_kl_loss"]["type"] == "boolean"
        assert [kind["type"] for kind in properties["offload_train"]["anyOf"]] == [
            "boolean",
            "null",
        ]
        rampup = properties["rampup_batch_size"]["anyOf"][0]
        assert rampup["minItems"] == rampup["maxItems"] == 3
        assert properties["num_nodes"]["deprecated"] is True
        assert properties["num_nodes"]["deprecationMessage"].startswith("Ignored in a role file")

    def test_validates_the_contract(self, schema: dict[str, Any]) -> None:
        """The contract's example, the bundled example and the real role file are valid."""
        jsonschema = pytest.importorskip("jsonschema")
        validator = jsonschema.Draft202012Validator(schema)
        validator.check_schema(schema)
        for path in (EXAMPLES / "megatron_ppo.yaml", FIXTURES / "slime_ppo_megatron.yaml"):
            assert list(validator.iter_errors(yaml.safe_load(path.read_text()))) == []
        empty = {
            "megatron": [
                {"name": "default", "role": "critic", "overrides": None},
                {"role": "actor", "args": {"lr": 1e-6}},
            ]
        }
        assert validator.is_valid(empty)

    @pytest.mark.parametrize(
        ("overrides", "role", "message"),
        [
            (
                {"lrr": "1e-5"},
                "critic",
                "Additional properties are not allowed ('lrr' was unexpected)",
            ),
            ({"lr_decay_style": "cosin"}, "critic", "'cosin' is not one of"),
            ({"micro_batch_size": "fast"}, "critic", "'fast' does not match"),
            ({"lr": "fast"}, "critic", "'fast' does not match"),
            ({"use_kl_loss": "false"}, "critic", "'false' is not of type 'boolean'"),
            ({"profile_ranks": 3}, "critic", "3 is not of type 'array'"),
            ({"lr": 1e-5}, "acter", "'acter' is not one of ['actor', 'critic']"),
        ],
        ids=[
            "unknown-key",
            "bad-choice",
            "int-type",
            "float-type",
            "bool-type",
            "list-type",
            "unknown-role",
        ],
    )
    def test_rejects(
        self, schema: dict[str, Any], overrides: dict[str, Any], role: str, message: str
    ) -> None:
        """An unknown key, a bad choice, a wrong type and an unknown role are invalid."""
        jsonschema = pytest.importorskip("jsonschema")
        document = {"megatron": [{"role": role, "overrides": overrides}]}
        errors = []
        pending = list(jsonschema.Draft202012Validator(schema).iter_errors(document))
        while pending:  # an anyOf's error holds each alternative's in its context
            error = pending.pop()
            errors.append(error.message)
            pending += error.context or []
        assert any(message in error for error in errors), errors

    @pytest.mark.parametrize(
        ("key", "value", "flag"),
        [
            ("use_critic", True, "--use-critic"),
            ("advantage_estimator", "ppo", "--advantage-estimator"),
            ("megatron_config_path", "other.yaml", "--megatron-config-path"),
        ],
    )
    def test_run_wide_keys_are_refused(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        schema: dict[str, Any],
        key: str,
        value: Any,
        flag: str,
    ) -> None:
        """A run-wide key is invalid whatever its value, as check says of it, and the schema
        says why and where to set it (its deprecationMessage, which an editor shows)."""
        jsonschema = pytest.importorskip("jsonschema")
        document = {"megatron": [{"role": "critic", "overrides": {key: value}}]}
        assert not jsonschema.Draft202012Validator(schema).is_valid(document)
        note = overrides_of(schema)[key]["deprecationMessage"]
        assert note == (
            f"'{key}' is not allowed in a role file: it decides the whole run (every role), "
            f"not one role (remove it and set {flag} on the command line)"
        )
        path = tmp_path / "roles.yaml"
        path.write_text(yaml.safe_dump(document))
        code = main(["check", str(path)])
        assert code == 1
        assert f"'{key}' is not allowed in a role file" in capsys.readouterr().out

    def test_rejects_both_overrides_and_args(self, schema: dict[str, Any]) -> None:
        """An entry with overrides and args together is invalid, as it is to the reader."""
        jsonschema = pytest.importorskip("jsonschema")
        document = {"megatron": [{"role": "actor", "overrides": {}, "args": {"lr": 1e-6}}]}
        assert not jsonschema.Draft202012Validator(schema).is_valid(document)

    def test_accepts_whatever_layerconf_accepts(self, schema: dict[str, Any]) -> None:
        """No value the type-coercion rule converts is refused by the schema, for any dest."""
        jsonschema = pytest.importorskip("jsonschema")
        parser = load_profile()
        properties = overrides_of(schema)
        # (the run-wide keys are refused whatever their value: test_run_wide_keys_are_refused)
        dests = sorted(
            {a.dest for a in parser._actions if a.dest != "help"} - set(SLIME.run_wide_keys)
        )
        validators = {dest: jsonschema.Draft202012Validator(properties[dest]) for dest in dests}
        samples: list[Any] = [
            0,
            7,
            "1e-5",
            " 8 ",
            "1",
            " 02 ",
            "1_000",
            "inf",
            "flash",
            "x",
            True,
            None,
            2.5,
            [1],
            ["1", "2", "3"],
            [],
            {"a": 1},
            "(1,2)",
        ]
        refused = []
        for value in samples:
            origin = Origin("role-config", "file", source="role.yaml")
            layer = Layer("role-config", "file", dict.fromkeys(dests, value), origin)
            try:
                LayerStack([layer], rules=[TypeCoercion(parser)]).resolve()
                failed: set[str | None] = set()
            except ConfigError as error:
                failed = {problem.key for problem in error.problems}
            refused += [
                (dest, value)
                for dest in dests
                if dest not in failed and not validators[dest].is_valid(value)
            ]
        assert refused == []

    def test_choices_take_what_layerconf_converts_to_one(self) -> None:
        """A choice written as the command line would write it resolves (timing_log_level: '1',
        zero_stage: 2 for the choice '2'), so the schema takes it too; for int and str choices,
        exactly what resolves (but 1.0, which JSON Schema counts as 1: only check sees it)."""
        jsonschema = pytest.importorskip("jsonschema")
        parser = argparse.ArgumentParser()
        parser.add_argument("--level", type=int, choices=[0, 1, 10, -2], default=0)
        parser.add_argument("--stage", choices=["0", "2", "-3", "01", "auto"], default="auto")
        parser.add_argument("--ratio", type=float, choices=[0.5, 1.0], default=0.5)
        properties = overrides_of(role_file_schema(parser, preset=SLIME))
        said = {alternative["errorMessage"] for alternative in properties["level"]["anyOf"]}
        assert said == {"'level' must be one of 0, 1, 10, -2"}  # no "such as 8"
        samples: list[Any] = [0, 1, 2, 10, -2, -3, 0.5, True, None, "auto", "0", "1", "2"]
        samples += [" 01 ", "+1", "-0", "00", "1_0", "0_1_0", "-02", "-3", "1__0", "_1", "1e1"]
        samples += ["10.", "5e-1", "0x1", "01", "٣", ""]
        for dest in ("level", "stage", "ratio"):
            validator = jsonschema.Draft202012Validator(properties[dest])
            for value in samples:
                origin = Origin("role-config", "file", source="role.yaml")
                layer = Layer("role-config", "file", {dest: value}, origin)
                try:
                    LayerStack([layer], rules=[TypeCoercion(parser)]).resolve()
                    resolves = True
                except ConfigError:
                    resolves = False
                if dest == "ratio":  # any string float() reads: which float is for check
                    assert validator.is_valid(value) or not resolves, (dest, value)
                else:
                    assert validator.is_valid(value) is resolves, (dest, value)

    @pytest.mark.parametrize(
        "text",
        ["1e-5", "1E5", "-1.5", "+.5", "5.", "1_000.5", " 8 ", "inf", "-Infinity", "NaN", "1e-1_0"],
    )
    def test_float_pattern_takes_what_float_takes(self, text: str) -> None:
        """A numeric-looking string passes for a float dest: layerconf converts it."""
        float(text)
        assert re.search(FLOAT_PATTERN, text)

    @pytest.mark.parametrize("text", ["fast", "1e", "1..2", "_1", "1__0", "e5", "0x10", "", "in f"])
    def test_float_pattern_refuses_what_float_refuses(self, text: str) -> None:
        """A string float() refuses does not match the float pattern."""
        with pytest.raises(ValueError, match="could not convert"):
            float(text)
        assert not re.search(FLOAT_PATTERN, text)

    @pytest.mark.parametrize(
        ("text", "valid"),
        [
            ("8", True),
            (" -3 ", True),
            ("1_000", True),
            ("010", True),
            ("2.0", False),
            ("0x1F", False),
            ("eight", False),
        ],
    )
    def test_int_pattern(self, text: str, valid: bool) -> None:
        """The int pattern matches exactly the strings int() reads."""
        try:
            int(text)
        except ValueError:
            taken = False
        else:
            taken = True
        assert taken is valid
        assert bool(re.search(INT_PATTERN, text)) is valid

    def test_a_users_parser(self, launcher: list[str], trainer: Path) -> None:
        """--parser gives the schema of the user's own parser."""
        result = run(
            launcher, "schema", "--parser", "mytrainer:get_parser", "--preset", "slime", cwd=trainer
        )
        assert result.returncode == 0, result.stderr
        properties = overrides_of(json.loads(result.stdout))
        assert properties["color"]["enum"] == ["red", "blue"]
        assert properties["size"]["minItems"] == 2
        assert [kind["type"] for kind in properties["ratio"]["anyOf"]] == ["number", "string"]
        assert "default" not in properties["ratio"]  # inf: JSON cannot hold it
        assert properties["out"]["default"] == "/tmp/out"

    def test_no_secret(self, launcher: list[str], tmp_path: Path) -> None:
        """A default holding a secret (read from the environment, say) is not written into the
        schema, a file editors and repositories share: not as the default, in the description,
        in the help's %(default)s or spelt out in the help, nor as a choice of a secret."""
        (tmp_path / "keyed.py").write_text(
            "import argparse\n"
            "def get_parser():\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--megatron-config-path')\n"
            "    parser.add_argument('--wandb-key', default='SEKRIT-1', help='(%(default)s)')\n"
            "    parser.add_argument('--hf-token', default='SEKRIT-2', choices=['SEKRIT-2'])\n"
            "    parser.add_argument('--db-url', default='postgres://u:SEKRIT-3@h/db')\n"
            "    parser.add_argument('--env-vars', default='{\"HF_TOKEN\": \"SEKRIT-4\"}')\n"
            "    parser.add_argument('--env', type=dict, default={'WANDB_API_KEY': 'SEKRIT-5'})\n"
            "    parser.add_argument('--lr', type=float, default=0.5)\n"
            "    parser.add_argument('--api-key', dest='auth', default='SEKRIT-6')\n"
            "    parser.add_argument('--api-token', default='SEKRIT-7', help='SEKRIT-7 is it')\n"
            "    parser.add_argument('--wandb-key-set', dest='keyed', action='store_true')\n"
            "    return parser\n"
        )
        result = run(
            launcher, "schema", "--parser", "keyed:get_parser", "--preset", "slime", cwd=tmp_path
        )
        assert result.returncode == 0, result.stderr
        assert "SEKRIT" not in result.stdout
        properties = overrides_of(json.loads(result.stdout))
        assert properties["wandb_key"]["description"].startswith("(<redacted>)\n")
        assert (
            "--db-url; str; default: 'postgres://u:<redacted>@h/db'"
            in (properties["db_url"]["description"])
        )
        assert "enum" not in properties["hf_token"]
        assert not {"default"} & {*properties["wandb_key"], *properties["db_url"]}
        assert properties["lr"]["default"] == 0.5
        # A secret flag's dest whatever its name; a flag that takes no value holds none, as
        # `show` says of it too.
        assert "default" not in properties["auth"]
        assert properties["keyed"]["default"] is False

    @pytest.mark.parametrize("preset", [(), ("--preset", "plain")], ids=["default", "named"])
    def test_no_role_file_no_schema(
        self, preset: tuple[str, ...], launcher: list[str], trainer: Path
    ) -> None:
        """--parser alone is the plain preset, which reads no role file: a schema of one
        would describe a file nothing reads, so it is a usage error that says what to give."""
        result = run(launcher, "schema", "--parser", "mytrainer:get_parser", *preset, cwd=trainer)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == (
            "layerconf schema: error: preset 'plain' reads no role file, so there is none to "
            "describe: name a preset with a role file (--preset slime, or MODULE:ATTR)\n"
        )


OWN_TRAINER = EXAMPLES / "own_trainer"


def run_env(
    launcher: list[str], *args: str, cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`run` with variables added to the environment."""
    full = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | env
    return subprocess.run(
        [*launcher, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=120
    )


class TestPresetsAndSources:
    """--preset chooses the trainer's roles, role file and rules; --env-prefix reads variables."""

    OWN = ("--parser", "trainer:get_parser", "--preset", "trainer:PRESET")

    def test_a_users_parser_alone_is_plain(self, launcher: list[str], trainer: Path) -> None:
        """--parser without --preset: one role, no role file, nothing of slime's."""
        result = run(
            launcher,
            "show",
            "--changed",
            "--parser",
            "mytrainer:get_parser",
            "--",
            "--lr",
            "3",
            cwd=trainer,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[:2] == [
            "main: 1 of 7 values not from defaults",
            "  lr  3.0  cli  argv[0] '--lr'",
        ]
        check = run(
            launcher, "check", "--parser", "mytrainer:get_parser", "--", "--lrr", "3", cwd=trainer
        )
        assert check.returncode == 1
        assert check.stdout == (
            "argv[0]: error: '--lrr 3' is not an argument of this parser (did you mean '--lr'?)\n"
        )
        assert "SGLang" not in check.stdout + check.stderr

    def test_a_users_preset(self, launcher: list[str]) -> None:
        """examples/own_trainer: three roles, its own role file and rule, from the command line."""
        result = run(
            launcher,
            "explain",
            "lr",
            "frozen",
            "--role",
            "reward",
            *self.OWN,
            "--",
            "--lr",
            "3e-6",
            "--roles-file",
            "roles.yaml",
            cwd=OWN_TRAINER,
        )
        assert result.returncode == 0, result.stderr
        assert result.stderr == (
            "roles.yaml:9:11: warning: the reward model is frozen: its 'lr' is never used "
            "(remove lr from the reward entry)\n"
        )
        frozen = result.stdout.split("\n\n")[1].splitlines()
        assert frozen[0] == "frozen (reward) = True"
        assert frozen[1].split() == [
            "from",
            "True",
            "rule:reward-is-frozen",
            *["the", "reward", "model", "never", "trains"],
        ]
        roles = run(
            launcher, "diff", *self.OWN, "--", "--roles-file", "roles.yaml", cwd=OWN_TRAINER
        )
        assert roles.stdout.splitlines()[0].split() == ["key", "actor", "critic", "reward"]
        assert roles.stderr.endswith("3 keys differ between actor, critic and reward\n")

    def test_its_schema(self, launcher: list[str]) -> None:
        result = run(launcher, "schema", *self.OWN, cwd=OWN_TRAINER)
        assert result.returncode == 0, result.stderr
        schema = json.loads(result.stdout)
        assert schema["required"] == ["roles"]
        assert schema["$defs"]["entry"]["properties"]["role"]["enum"] == [
            "actor",
            "critic",
            "reward",
        ]

    def test_a_role_the_preset_does_not_have(self, launcher: list[str]) -> None:
        result = run(launcher, "explain", "lr", "--role", "critc", *self.OWN, "--", cwd=OWN_TRAINER)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == (
            "layerconf explain: error: argument --role: invalid choice: 'critc' (choose from "
            "'actor', 'critic', 'reward'); did you mean 'critic'?\n"
        )

    @pytest.mark.parametrize(
        ("spec", "message"),
        [
            (
                "slim",
                "--preset takes slime, plain or MODULE:ATTR, such as train:PRESET (got 'slim'); did you mean 'slime'?",
            ),
            (
                "trainer:PRESTE",
                "--preset: 'trainer' has no attribute 'PRESTE'; did you mean 'PRESET'?",
            ),
            (
                "trainer:get_parser",
                "--preset: trainer:get_parser() returned the ArgumentParser ",
            ),
            (
                "nosuch:PRESET",
                "--preset: no module named 'nosuch' (looked in the current directory and on sys.path)",
            ),
        ],
    )
    def test_a_preset_that_cannot_be_had(
        self, launcher: list[str], spec: str, message: str
    ) -> None:
        result = run(
            launcher,
            "check",
            "--parser",
            "trainer:get_parser",
            "--preset",
            spec,
            "--",
            cwd=OWN_TRAINER,
        )
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr.startswith(f"layerconf check: error: {message}")
        assert result.stderr.count("\n") == 1
        no_traceback(result)

    def test_environment_variables(self, launcher: list[str]) -> None:
        """--env-prefix: a layer between the defaults and the command line, origin env NAME."""
        secret = "wandb-0123456789-secret"
        result = run_env(
            launcher,
            "explain",
            "batch_size",
            "model",
            "wandb_key",
            "--role",
            "actor",
            "--env-prefix",
            "TRAIN_",
            *self.OWN,
            "--",
            "--batch-size",
            "8",
            cwd=OWN_TRAINER,
            env={"TRAIN_BATCH_SIZE": "64", "TRAIN_MODEL": "large", "TRAIN_WANDB_KEY": secret},
        )
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == "batch_size (actor) = 8"
        assert lines[2].split() == ["shadows", "64", "env", "TRAIN_BATCH_SIZE", "overridden"]
        assert lines[5] == "model (actor) = 'large'"
        assert lines[6].split() == ["from", "'large'", "env", "TRAIN_MODEL"]
        assert secret not in result.stdout + result.stderr

    def test_a_bad_environment_value(self, launcher: list[str]) -> None:
        result = run_env(
            launcher,
            "check",
            "--env-prefix",
            "TRAIN_",
            *self.OWN,
            "--",
            cwd=OWN_TRAINER,
            env={"TRAIN_BATCH_SIZE": "many"},
        )
        assert result.returncode == 1
        assert result.stdout == (
            "env: error: environment variable TRAIN_BATCH_SIZE: argument --batch-size: invalid "
            "int value: 'many' (write the value as you would after --batch-size)\n"
        )

    @pytest.mark.parametrize("command", [["check"], ["show"], ["explain", "lr"], ["audit"]])
    def test_an_empty_prefix(self, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
        """--env-prefix '' (a shell variable that was not set) is a usage error; before, no
        variable was read and the command passed as if the environment had been checked."""
        assert main([*command, "--env-prefix", "", "--", "--rollout-batch-size", "8"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == (
            f"layerconf {command[0]}: error: --env-prefix '' names no prefix (is the shell "
            "variable that gives it unset?): with it, every variable of the environment (PATH, "
            "HOME...) would be read as configuration; give the trainer's prefix, such as SLIME_\n"
        )


class TestUsersParser:
    """--parser MODULE:ATTR: the user's own trainer parser, imported from the current directory."""

    def test_a_function(self, launcher: list[str], trainer: Path) -> None:
        """A function returning a parser; the role file applies; JSON encodes every value."""
        result = run(
            launcher,
            "explain",
            "lr",
            "color",
            "out",
            "size",
            "tags",
            "ratio",
            "--role",
            "critic",
            "--json",
            "--parser",
            "mytrainer:get_parser",
            "--preset",
            "slime",
            "--",
            "--megatron-config-path",
            "roles.yaml",
            cwd=trainer,
        )
        assert result.returncode == 0, result.stderr
        values = {
            entry["key"]: (entry["value"], entry["repr"]) for entry in json.loads(result.stdout)
        }
        assert values == {
            "lr": (0.001, "0.001"),
            "color": ("blue", "<Color.blue: 2>"),
            "out": (
                "/tmp/out",
                "PosixPath('/tmp/out')" if os.name == "posix" else values["out"][1],
            ),
            "size": ([1, 2], "(1, 2)"),
            "tags": (["a", "b"], values["tags"][1]),  # the repr's order varies with the hash seed
            "ratio": ("inf", "inf"),
        }
        assert values["tags"][1].startswith("frozenset({")

    def test_a_parser_object(self, launcher: list[str], trainer: Path) -> None:
        """An ArgumentParser object; diff compares the roles it resolves."""
        result = run(
            launcher,
            "diff",
            "--parser",
            "mytrainer:PARSER",
            "--preset",
            "slime",
            "--",
            "--megatron-config-path",
            "roles.yaml",
            cwd=trainer,
        )
        assert result.returncode == 0, result.stderr
        keys = [line.split()[0] for line in result.stdout.splitlines()]
        assert keys[0] == "key"
        assert {"color", "lr"} <= set(keys)
        assert "size" not in keys

    def test_a_parser_whose_own_code_raises(self, launcher: list[str], tmp_path: Path) -> None:
        """The trainer's action raising is one line naming it and where, not a traceback."""
        (tmp_path / "broken.py").write_text(
            "import argparse\n"
            "class Boom(argparse.Action):\n"
            "    def __call__(self, parser, namespace, values, option_string=None):\n"
            "        raise RuntimeError('boom')\n"
            "PARSER = argparse.ArgumentParser()\n"
            "PARSER.add_argument('--x', action=Boom)\n"
        )
        result = run(launcher, "check", "--parser", "broken:PARSER", "--", "--x", "1", cwd=tmp_path)
        assert result.returncode == 2
        assert "Traceback" not in result.stderr
        assert result.stderr.splitlines() == [
            "layerconf check: error: the trainer's parser raised RuntimeError: boom at "
            f"{tmp_path / 'broken.py'}:4; run the trainer with the same command line to see "
            "the traceback"
        ]

    def test_a_file_named_as_an_imported_module(self, launcher: list[str], tmp_path: Path) -> None:
        """A parser file named yaml.py must not replace the yaml module layerconf uses."""
        # In a folder of its own: `python -m` puts the working directory first on sys.path.
        (tmp_path / "trainer").mkdir()
        (tmp_path / "trainer" / "yaml.py").write_text(
            "import argparse\nPARSER = argparse.ArgumentParser()\n"
        )
        result = run(launcher, "check", "--parser", "trainer/yaml.py:PARSER", "--", cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr.startswith(
            "layerconf check: error: --parser: trainer/yaml.py would replace the module 'yaml' imported "
            "from elsewhere; rename the file"
        ), result.stderr

    def test_a_file_path(self, launcher: list[str], trainer: Path) -> None:
        """MODULE may be a path to a .py file."""
        result = run(
            launcher,
            "show",
            "--changed",
            "--parser",
            f"{trainer / 'mytrainer.py'}:get_parser",
            "--preset",
            "slime",
            "--",
            "--lr",
            "3",
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[:2] == [
            "actor: 1 of 7 values not from defaults",
            "  lr  3.0  cli  argv[0] '--lr'",
        ]

    def test_yaml_of_values_json_cannot_hold(
        self, trainer: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """show --yaml writes enums, paths, tuples, sets and infinity as YAML reads them back."""
        (trainer / "yaml_trainer.py").write_text(TRAINER)  # a name no other test imports
        monkeypatch.chdir(trainer)
        monkeypatch.setattr(sys, "path", list(sys.path))
        try:
            assert (
                main(
                    [
                        "show",
                        "--all",
                        "--yaml",
                        "--role",
                        "actor",
                        "--parser",
                        "yaml_trainer:get_parser",
                        "--preset",
                        "slime",
                        "--",
                    ]
                )
                == 0
            )
        finally:
            sys.modules.pop("yaml_trainer", None)
        data = yaml.safe_load(capsys.readouterr().out)["actor"]
        assert (data["color"], data["out"], data["size"]) == ("red", "/tmp/out", [1, 2])
        assert (data["tags"], data["ratio"]) == (["a", "b"], math.inf)

    @pytest.mark.parametrize(
        ("spec", "message"),
        [
            ("mytrainer", "--parser takes MODULE:ATTR, such as train:get_parser (got 'mytrainer')"),
            (
                "nosuchmodule:get_parser",
                "--parser: no module named 'nosuchmodule' (looked in the current directory and on sys.path)",
            ),
            (
                "mytrainer:get_parsr",
                "--parser: 'mytrainer' has no attribute 'get_parsr'; did you mean 'get_parser'?",
            ),
            (
                "mytrainer:NOT_A_PARSER",
                "--parser: mytrainer:NOT_A_PARSER is neither an argparse.ArgumentParser nor a function returning one (it is the int 42)",
            ),
            ("mytrainer:broken", "--parser: mytrainer:broken() raised RuntimeError: no GPU here"),
            ("mytrainer:Color", "--parser: mytrainer:Color() raised TypeError"),
            ("mytrainer:color", "--parser: mytrainer:color() raised TypeError"),
            (
                "mytrainer:argparse.Namespace",
                "--parser: mytrainer:argparse.Namespace() returned the Namespace Namespace(), not an argparse.ArgumentParser",
            ),
            ("nothere.py:get_parser", "--parser: no such file: nothere.py"),
        ],
        ids=[
            "no-colon",
            "no-module",
            "no-attribute",
            "not-a-parser",
            "raises",
            "wrong-callable",
            "needs-arguments",
            "returns-other",
            "no-file",
        ],
    )
    def test_bad_parser(self, launcher: list[str], trainer: Path, spec: str, message: str) -> None:
        """A --parser that cannot give a parser is one line on stderr and exit 2."""
        result = run(launcher, "check", "--parser", spec, "--", "--lr", "1", cwd=trainer)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr.startswith("layerconf check: error: " + message)
        assert result.stderr.count("\n") == 1
        no_traceback(result)

    def test_what_the_parser_prints_is_not_output(
        self, launcher: list[str], tmp_path: Path
    ) -> None:
        """A trainer module that prints when imported or building its parser (a banner, a
        missing-kernel notice) prints on stderr: stdout stays the JSON, record or schema."""
        (tmp_path / "noisy.py").write_text(
            "import argparse, sys\n"
            "print('loading the trainer')\n"
            "def get_parser():\n"
            "    sys.stdout.write('building its parser\\n')\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--megatron-config-path')\n"
            "    parser.add_argument('--lr', type=float, default=0.5)\n"
            "    return parser\n"
        )
        noisy = ("--parser", "noisy:get_parser")
        shown = run(launcher, "show", "--json", *noisy, "--", "--lr", "1", cwd=tmp_path)
        assert json.loads(shown.stdout)["main"]["lr"]["value"] == 1.0
        assert "loading the trainer\nbuilding its parser\n" in shown.stderr
        schema = run(launcher, "schema", *noisy, "--preset", "slime", cwd=tmp_path)
        assert (
            json.loads(schema.stdout)["title"] == "role file of layerconf --parser noisy:get_parser"
        )

    def test_parser_with_an_empty_dest(self, launcher: list[str], tmp_path: Path) -> None:
        """argparse takes dest="", which no value can be named by: a usage error naming the
        option, not an internal error (exit 70) from deep in the resolution."""
        (tmp_path / "unnamed.py").write_text(
            "import argparse\n"
            "def get_parser():\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--lr', type=float)\n"
            "    parser.add_argument('--empty', dest='')\n"
            "    return parser\n"
        )
        result = run(launcher, "show", "--parser", "unnamed:get_parser", "--", cwd=tmp_path)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == (
            "layerconf show: error: --parser: unnamed:get_parser has an argument with an empty "
            "dest (--empty): layerconf names every value by its dest; give it one "
            "(dest='name')\n"
        )


def records(*argvs: list[str], directory: Path) -> list[Path]:
    """Write one audit record per command line (resolved from the repository root)."""
    from layerconf import resolve_roles, write_audit

    paths = []
    cwd = os.getcwd()
    os.chdir(ROOT)  # the example command line names its role file relatively
    try:
        for number, argv in enumerate(argvs, start=1):
            roles = resolve_roles(load_profile(), argv)
            paths.append(write_audit(roles, directory / f"run-{number:03}"))
    finally:
        os.chdir(cwd)
    return paths


def outputs(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """main(args) in this process: its exit code, stdout and stderr."""
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


class TestAudit:
    """audit: the audit record of the resolved roles, printed or written atomically."""

    def test_printed_as_write_audit_writes_it(
        self, launcher: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without -o the record goes to stdout, byte for byte what write_audit writes."""
        from layerconf import load_audit, resolve_roles, write_audit

        result = run(launcher, "audit", "--", *PPO_ARGV)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        monkeypatch.chdir(ROOT)
        written = write_audit(resolve_roles(load_profile(), PPO_ARGV), tmp_path)
        assert result.stdout == written.read_text()
        printed = tmp_path / "printed.json"
        printed.write_text(result.stdout)
        record = load_audit(printed)
        assert record.roles == ("actor", "critic")
        assert record.setting("critic", "lr").origin.where == (
            "role-config examples/megatron_ppo.yaml:10:11"
        )

    @pytest.mark.parametrize("form", ["slash", "existing"])
    def test_into_a_directory(
        self,
        form: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """-o DIR/ (or an existing directory) writes DIR/layerconf-audit.json, as write_audit."""
        from layerconf import load_audit

        monkeypatch.chdir(ROOT)
        target = tmp_path / "runs" / "001"
        if form == "existing":
            target.mkdir(parents=True)
        output = str(target) + ("/" if form == "slash" else "")
        code, out, err = outputs(capsys, "audit", "-o", output, "--", *PPO_ARGV)
        assert (code, out) == (0, "")
        path = target / "layerconf-audit.json"
        record = load_audit(target)
        assert err == f"wrote {path} (fingerprint {record.fingerprint})\n"
        assert sorted(p.name for p in target.iterdir()) == ["layerconf-audit.json"]

    def test_into_a_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """-o FILE writes that file (its directories created), replacing an old one whole."""
        from layerconf import load_audit

        monkeypatch.chdir(ROOT)
        path = tmp_path / "a" / "b" / "before.json"
        assert main(["audit", "--output", str(path), "--", *PPO_ARGV]) == 0
        first = load_audit(path)
        assert main(["audit", "-o", str(path), "--", *PPO_ARGV, "--seed", "7"]) == 0
        assert load_audit(path).fingerprint != first.fingerprint
        assert sorted(p.name for p in path.parent.iterdir()) == ["before.json"]  # no temp file
        assert capsys.readouterr().out == ""

    def test_a_path_that_cannot_be_written(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A PATH that cannot be written is a usage error: one line, exit 2."""
        monkeypatch.chdir(ROOT)
        blocker = tmp_path / "file.txt"
        blocker.write_text("")
        code, out, err = outputs(capsys, "audit", "-o", str(blocker / "x.json"), "--", *PPO_ARGV)
        assert (code, out) == (2, "")
        assert err.startswith("layerconf audit: error: cannot write the audit record: ")
        assert err.count("\n") == 1

    def test_a_failed_resolution(self, launcher: list[str], tmp_path: Path) -> None:
        """A configuration that does not resolve: its errors on stderr, exit 1, nothing written."""
        result = run(launcher, "audit", "-o", str(tmp_path / "r.json"), "--", "--lr", "fast")
        assert result.returncode == 1
        assert "argv[1]: error: argument --lr: invalid float value: 'fast'" in result.stderr
        assert list(tmp_path.iterdir()) == []
        no_traceback(result)

    def test_a_users_parser(self, launcher: list[str], trainer: Path) -> None:
        """--parser records the user's own parser's roles, enums by class."""
        result = run(
            launcher,
            "audit",
            "--parser",
            "mytrainer:get_parser",
            "--preset",
            "slime",
            "--",
            "--megatron-config-path",
            "roles.yaml",
            cwd=trainer,
        )
        assert result.returncode == 0, result.stderr
        critic = json.loads(result.stdout)["roles"]["critic"]["settings"]
        assert critic["color"]["value"] == {
            "$type": "enum",
            "class": "mytrainer.Color",
            "name": "blue",
        }


class TestAuditDiff:
    """audit diff: the values that changed between two records, with the layer of each side."""

    def test_table(self, launcher: list[str], tmp_path: Path) -> None:
        """One row per changed value, each side's value and origin; the count on stderr."""
        before, after = records(
            PPO_ARGV, [*PPO_ARGV, "--seed", "7", "--kl-coef", "0.1"], directory=tmp_path
        )
        result = run(launcher, "audit", "diff", str(before), str(after))
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == [
            "role    key      before                            after",
            "actor   seed     1234    default                   7      cli argv[34] '--seed'",
            "actor   kl_coef  0.01    cli argv[28] '--kl-coef'  0.1    cli argv[36] '--kl-coef'",
            "critic  seed     1234    default                   7      cli argv[34] '--seed'",
        ]
        assert result.stderr == f"3 changes between {before} and {after}\n"

    def test_directories_and_no_change(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Directories name their record; equal records print nothing and exit 0."""
        first, second = records(PPO_ARGV, PPO_ARGV, directory=tmp_path)
        a, b = str(first.parent), str(second.parent)
        assert outputs(capsys, "audit", "diff", a, b) == (0, "", f"no change between {a} and {b}\n")
        assert outputs(capsys, "audit", "diff", "--json", a, b)[:2] == (0, "[]\n")

    def test_json_shape(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--json lists each change with both sides' value, repr and origin (null: absent)."""
        before, after = records(PPO_ARGV, [*PPO_ARGV, "--seed", "7"], directory=tmp_path)
        code, out, _ = outputs(capsys, "audit", "diff", "--json", str(before), str(after))
        assert code == 0
        changes = json.loads(out)
        assert [(c["role"], c["key"], c["kind"]) for c in changes] == [
            ("actor", "seed", "changed"),
            ("critic", "seed", "changed"),
        ]
        assert changes[0]["before"] == {
            "value": 1234,
            "repr": "1234",
            "layer": "default",
            "kind": "default",
            "source": None,
            "line": None,
            "column": None,
            "argv_index": None,
            "token": None,
            "rule": None,
            "label": None,
        }
        assert (changes[0]["after"]["value"], changes[0]["after"]["token"]) == (7, "--seed")

    def test_roles_and_keys_added_or_removed(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A role in one record only is one row; a key in one side only reads (unset)."""
        from layerconf import audit, resolve_roles

        monkeypatch_cwd = os.getcwd()
        os.chdir(ROOT)
        try:
            roles = resolve_roles(load_profile(), PPO_ARGV)
        finally:
            os.chdir(monkeypatch_cwd)
        both = audit(roles)
        actor = audit({"actor": roles["actor"]})
        (tmp_path / "both.json").write_text(json.dumps(both))
        (tmp_path / "actor.json").write_text(json.dumps(actor))
        code, out, err = outputs(
            capsys, "audit", "diff", str(tmp_path / "both.json"), str(tmp_path / "actor.json")
        )
        assert code == 0
        assert out.splitlines()[1].split() == ["critic", "(role)", "(1041", "keys)", "(unset)"]
        assert err.startswith("1 change between ")
        code, out, _ = outputs(
            capsys,
            "audit",
            "diff",
            "--json",
            str(tmp_path / "actor.json"),
            str(tmp_path / "both.json"),
        )
        assert json.loads(out) == [
            {"role": "critic", "key": None, "kind": "added", "before": None, "after": None}
        ]

    def test_unreadable_records(self, launcher: list[str], tmp_path: Path) -> None:
        """A missing or damaged record is one line each on stderr, and exit 1."""
        [good] = records(PPO_ARGV, directory=tmp_path)
        broken = tmp_path / "broken.json"
        broken.write_text(good.read_text()[:500])
        result = run(launcher, "audit", "diff", str(broken), str(tmp_path / "nothere"))
        assert (result.returncode, result.stdout) == (1, "")
        lines = result.stderr.splitlines()
        assert len(lines) == 2
        assert lines[0].startswith(f"layerconf audit diff: error: {broken}:")
        assert ": not a layerconf audit record: it is not valid JSON (" in lines[0]
        assert lines[1].startswith(
            f"layerconf audit diff: error: {tmp_path / 'nothere'}: no such audit record (check "
        )
        no_traceback(result)

    def test_an_edited_record(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A record whose values were edited after writing is refused: its fingerprint lies."""
        [path] = records(PPO_ARGV, directory=tmp_path)
        path.write_text(path.read_text().replace('"value": 1234', '"value": 4321'))
        code, out, err = outputs(capsys, "audit", "diff", str(path), str(path))
        assert (code, out) == (1, "")
        assert "does not match the recorded values" in err


class TestAuditReplay:
    """audit replay: a record's roles rebuilt and shown as show shows the resolved ones."""

    @pytest.mark.parametrize(
        "form", [[], ["--json"], ["--yaml"], ["--changed", "--role", "critic"]]
    )
    def test_shown_as_show_shows_the_launch(
        self,
        form: list[str],
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """Replaying the record prints what show prints for the launch it recorded."""
        [path] = records(PPO_ARGV, directory=tmp_path)
        monkeypatch.chdir(ROOT)
        shown = outputs(capsys, "show", *form, "--", *PPO_ARGV)
        monkeypatch.chdir(tmp_path)
        replayed = outputs(capsys, "audit", "replay", *form, str(path.parent))
        assert replayed == shown
        assert replayed[0] == 0

    def test_a_subprocess(self, launcher: list[str], tmp_path: Path) -> None:
        """As a process: the critic's lr with its recorded origin."""
        [path] = records(PPO_ARGV, directory=tmp_path)
        result = run(launcher, "audit", "replay", str(path), "--role", "critic", "--changed")
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("critic: 21 of 1041 values not from defaults\n")
        row = next(line for line in result.stdout.splitlines() if line.startswith("  lr "))
        assert row.split() == ["lr", "1e-05", "role-config", "examples/megatron_ppo.yaml:10:11"]

    def test_an_unknown_role(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A role the record does not hold is a usage error with a did-you-mean."""
        [path] = records(PPO_ARGV, directory=tmp_path)
        assert outputs(capsys, "audit", "replay", str(path), "--role", "critc") == (
            2,
            "",
            f"layerconf audit replay: error: unknown role 'critc'; did you mean 'critic'? "
            f"(roles of {path}: actor, critic)\n",
        )

    def test_an_unreadable_record(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A file that is not a record exits 1 with what is wrong and what to do."""
        (tmp_path / "empty.json").write_text("")
        code, out, err = outputs(capsys, "audit", "replay", str(tmp_path / "empty.json"))
        assert (code, out) == (1, "")
        assert err == (
            f"layerconf audit replay: error: {tmp_path / 'empty.json'}: the file is empty, not an "
            "audit record; write it again with layerconf.write_audit(roles, directory) or "
            "'layerconf audit -o FILE -- ARGV...'\n"
        )

    def test_an_enum_that_cannot_be_imported(self, launcher: list[str], trainer: Path) -> None:
        """A value whose enum class cannot be imported here cannot be replayed: exit 1."""
        audited = run(
            launcher,
            "audit",
            "-o",
            "run/",
            "--parser",
            "mytrainer:get_parser",
            "--preset",
            "slime",
            "--",
            cwd=trainer,
        )
        assert audited.returncode == 0, audited.stderr
        elsewhere = trainer / "elsewhere"
        elsewhere.mkdir()
        result = run(launcher, "audit", "replay", "../run", cwd=elsewhere)
        assert (result.returncode, result.stdout) == (1, "")
        assert "cannot rebuild" in result.stderr
        assert "mytrainer.Color" in result.stderr
        assert result.stderr.count("\n") == 1
        no_traceback(result)

    def test_the_parser_is_trusted_with_parser(self, launcher: list[str], trainer: Path) -> None:
        """audit replay --parser MODULE:ATTR rebuilds that parser's enums; without it, not even
        next to the module (a record never makes layerconf import one)."""
        audited = run(
            launcher, "audit", "-o", "run/", "--parser", "mytrainer:get_parser", "--", cwd=trainer
        )
        assert audited.returncode == 0, audited.stderr
        alone = run(launcher, "audit", "replay", "run", "--json", cwd=trainer)
        assert alone.returncode == 1
        assert "'mytrainer.Color' is not a registered value type" in alone.stderr
        trusted = run(
            launcher,
            "audit",
            "replay",
            "run",
            "--all",
            "--json",
            "--parser",
            "mytrainer:get_parser",
            cwd=trainer,
        )
        assert trusted.returncode == 0, trusted.stderr
        color = json.loads(trusted.stdout)["main"]["color"]
        assert (color["value"], color["repr"]) == ("red", "<Color.red: 1>")


SECRET = "sk-XYZ"


@pytest.fixture
def two_runs_with_secrets(tmp_path: Path) -> tuple[Path, Path]:
    """Two records of the example launch with different W&B keys on the command line."""
    return tuple(  # type: ignore[return-value]
        records(
            [*PPO_ARGV, "--use-wandb", "--wandb-key", SECRET],
            [*PPO_ARGV, "--use-wandb", f"--wandb-key={SECRET}-2", "--seed", "3"],
            directory=tmp_path,
        )
    )


class TestSecrets:
    """No command ever prints a secret, whichever way it was given."""

    def test_secrets_of_every_role_are_learned(self) -> None:
        """A value the roles share is visited once; one only a later role holds, or a shared
        key whose value differs there, is still found."""
        from layerconf.cli.scrub import _secret_texts

        shared = {"url": "https://user:pa55word-shared@host/x"}
        actor = argparse.Namespace(wandb_key="k-actor-1234", extra=shared, plain=1)
        critic = argparse.Namespace(
            wandb_key="k-critic-5678", extra=shared, plain=1, hf_token="hf-only-critic"
        )
        found = _secret_texts({"actor": actor, "critic": critic})
        assert set(found) == {"k-actor-1234", "k-critic-5678", "pa55word-shared", "hf-only-critic"}
        assert found.count("pa55word-shared") == 1  # the shared mapping, visited once

    def test_numbers_are_secrets_only_under_secret_keys(self) -> None:
        """Numbers, booleans and None under plain keys hold no secret (they are skipped
        before the mapping check); a secret key's number is one; a Mapping that is not a
        dict is still searched."""
        import types

        from layerconf.cli.scrub import _secret_texts

        inner = types.MappingProxyType({"api_key": 98765, "n": 1.5, "on": True, "x": None})
        args = argparse.Namespace(seed=1234, lr=1e-5, flag=False, none=None, wandb_key=4321)
        args.nested = inner
        assert sorted(_secret_texts({"actor": args})) == ["4321", "98765"]

    def test_secrets_inside_what_a_type_makes_are_learned(self) -> None:
        """A namedtuple's, a dataclass's field, a list subclass's and a tuple's items are
        searched as a mapping is (a field by its name); a value nested thousands of levels
        deep is searched as far as it is shown, without a RecursionError."""
        import collections
        import dataclasses

        from layerconf.cli.scrub import _secret_texts

        creds = collections.namedtuple("creds", "user api_key")

        @dataclasses.dataclass
        class Login:
            user: str
            password: str

        class Items(list):  # type: ignore[type-arg]
            pass

        deep: Any = [{"hf_token": "hf-too-deep"}]
        for _ in range(5000):
            deep = [deep]
        args = argparse.Namespace(
            a=creds("me", "k-namedtuple"),
            b=Login("me", "k-dataclass"),
            c=Items([{"hf_token": "k-list-subclass"}]),
            d=({"api_key": "k-in-a-tuple"},),
            e=deep,
        )
        assert sorted(filter(None, _secret_texts({"actor": args}))) == [
            "k-dataclass",
            "k-in-a-tuple",
            "k-list-subclass",
            "k-namedtuple",
        ]

    def test_a_role_file_value_the_parsers_type_makes_a_record_of(
        self,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A role file's text that the trainer's own type= makes into a namedtuple with an
        api_key: no command, no record and no warning (slime's function would set the text)
        shows the key, neither in the value nor in the text it was made of."""
        (tmp_path / "credtrainer.py").write_text(
            "import argparse, collections\n"
            "Creds = collections.namedtuple('Creds', 'user api_key')\n"
            "def creds(text):\n"
            "    return Creds(*text.split(':', 1))\n"
            "def get_parser():\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--creds', type=creds)\n"
            "    parser.add_argument('--megatron-config-path')\n"
            "    return parser\n"
        )
        (tmp_path / "roles.yaml").write_text(
            "megatron:\n  - role: actor\n    overrides:\n      creds: me:sk-roleFILEkey\n"
        )
        monkeypatch.chdir(tmp_path)
        monkeypatch.syspath_prepend(str(tmp_path))
        options = ["--parser", "credtrainer:get_parser", "--preset", "slime"]
        argv = ["--", "--megatron-config-path", "roles.yaml"]
        said = ""
        for command in (["show"], ["show", "--json"], ["explain", "creds"], ["diff"]):
            code, out, err = outputs(capsys, *command, *options, *argv)
            assert code == 0, err
            said += out + err
        code, out, err = outputs(capsys, "audit", "-o", "record.json", *options, *argv)
        said += out + err + Path("record.json").read_text()
        assert "Creds(user='me', api_key='<redacted>')" in said
        import credtrainer  # type: ignore[import-not-found]

        from layerconf import audit, explain, resolve_roles

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            roles = resolve_roles(credtrainer.get_parser(), argv[1:])
        said += "\n".join(str(warning.message) for warning in caught)
        said += str(explain(roles["actor"], "creds")) + json.dumps(audit(roles))
        assert "slime's own parse_megatron_role_args sets the string <redacted>" in said
        assert "roleFILEkey" not in said

    @pytest.mark.parametrize(
        "spelling",
        [
            ["--wandb-key", SECRET],
            [f"--wandb-key={SECRET}"],
            ["--wandb-key", SECRET, "--sglang-api-key", SECRET],
        ],
        ids=["separate", "equals", "passed-on-to-sglang"],
    )
    @pytest.mark.parametrize(
        "command",
        [
            ["show"],
            ["show", "--json"],
            ["show", "--yaml"],
            ["explain", "wandb_key"],
            ["explain", "wandb_key", "--json"],
            ["diff"],
            ["diff", "--json"],
            ["check"],
            ["check", "--json"],
            ["audit"],
        ],
        ids=lambda args: " ".join(args),
    )
    def test_commands_of_a_launch(
        self,
        command: list[str],
        spelling: list[str],
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A key on the command line never reaches stdout or stderr."""
        monkeypatch.chdir(ROOT)
        code, out, err = outputs(capsys, *command, "--", *PPO_ARGV, "--use-wandb", *spelling)
        assert code == 0, err
        assert SECRET not in out + err
        if command[0] in ("show", "explain", "audit"):  # these print wandb_key itself
            assert "<redacted>" in out

    @pytest.mark.parametrize(
        "command",
        [
            ["audit", "diff"],
            ["audit", "diff", "--json"],
            ["audit", "replay"],
            ["audit", "replay", "--json"],
        ],
        ids=lambda args: " ".join(args),
    )
    def test_commands_of_records(
        self,
        command: list[str],
        two_runs_with_secrets: tuple[Path, Path],
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """Records hold no secret, and nothing the commands print about them does."""
        before, after = two_runs_with_secrets
        paths = [str(before), str(after)] if command[1] == "diff" else [str(after)]
        code, out, err = outputs(capsys, *command, *paths)
        assert code == 0, err
        assert SECRET not in out + err + before.read_text() + after.read_text()
        assert "seed" in out

    def test_as_processes(self, launcher: list[str], tmp_path: Path) -> None:
        """The same through the real command: show --json, explain, audit -o and replay."""
        argv = [*PPO_ARGV, "--use-wandb", "--wandb-key", SECRET]
        written = run(launcher, "audit", "-o", str(tmp_path) + "/", "--", *argv)
        for result in (
            run(launcher, "show", "--json", "--", *argv),
            run(launcher, "explain", "wandb_key", "--", *argv),
            written,
            run(launcher, "audit", "replay", str(tmp_path), "--role", "critic"),
        ):
            assert result.returncode == 0, result.stderr
            assert SECRET not in result.stdout + result.stderr
        assert SECRET not in (tmp_path / "layerconf-audit.json").read_text()

    @pytest.mark.parametrize(
        "misplaced",
        [
            ["--wandb-k", "sk-misplaced-1"],
            ["--wandb-ke=sk-misplaced-1"],
            ["-x", "--wandb-k=sk-misplaced-1"],
        ],
        ids=["abbreviated", "abbreviated-equals", "after-another"],
    )
    def test_a_trainers_secret_written_before_the_separator(
        self, misplaced: list[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A secret flag of the trainer's, abbreviated and written before '--' (with a '--'
        after it), is a usage error that quotes it redacted, as without the '--'."""
        for separator in (["--", "--rollout-batch-size", "8"], []):
            code, out, err = outputs(capsys, "show", "--role", "critic", *misplaced, *separator)
            assert code == 2
            assert out == ""
            assert "unrecognized arguments: " in err
            assert "sk-misplaced-1" not in err
            assert "<redacted>" in err

    def test_a_short_secret_in_a_token(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--wandb-key=VALUE is redacted in the token, however short VALUE is."""
        monkeypatch.chdir(ROOT)
        code, out, _ = outputs(capsys, "explain", "wandb_key", "--", *PPO_ARGV, "--wandb-key=q7Z")
        assert code == 0
        assert "q7Z" not in out
        assert "argv[34] '--wandb-key=<redacted>'" in out

    def test_secrets_of_a_role_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A role file's secrets, even inside the raw JSON text a value was converted from."""
        monkeypatch.chdir(tmp_path)
        Path("roles.yaml").write_text(
            "megatron:\n"
            "  - role: critic\n"
            "    overrides:\n"
            """      train_env_vars: '{"HF_TOKEN": "hf_abcdefgh", "OMP_NUM_THREADS": "4"}'\n"""
            "      wandb_key: wk-from-the-role-file\n"
        )
        argv = ["--rollout-batch-size", "8", "--use-critic", "--megatron-config-path", "roles.yaml"]
        code, out, err = outputs(
            capsys, "explain", "train_env_vars", "wandb_key", "--role", "critic", "--", *argv
        )
        assert code == 0, err
        assert "hf_abcdefgh" not in out
        assert "wk-from-the-role-file" not in out
        assert """'{"HF_TOKEN": "<redacted>", "OMP_NUM_THREADS": "4"}'""" in out


class TestToolErrors:
    """Mistakes in the layerconf command line: one clear line on stderr, exit 2."""

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (
                ["explain", "lr"],
                "layerconf explain: error: give the trainer's command line after '--'",
            ),
            (
                ["check", "--strict"],
                "layerconf check: error: give role files to check (check FILE...) or the "
                "trainer's command line after '--'",
            ),
            (
                ["check", "--profile", "megatron_slime", "--"],
                "layerconf check: error: unknown profile 'megatron_slime' (available: 'megatron-slime'); did you mean 'megatron-slime'?",
            ),
            (
                ["explian", "lr", "--"],
                "layerconf: error: unknown command 'explian'; did you mean 'explain'? (commands: explain, show, diff, check, schema, audit, completion)",
            ),
            (
                ["--versoin"],
                "layerconf: error: unknown option '--versoin'; did you mean '--version'? (commands: explain, show, diff, check, schema, audit, completion)",
            ),
            (
                ["explain", "--"],
                "layerconf explain: error: the following arguments are required: KEY",
            ),
            (
                ["explain", "lr", "--role", "acter", "--"],
                "layerconf explain: error: argument --role: invalid choice: 'acter'",
            ),
            (
                ["-v"],
                "layerconf: error: unknown option '-v'; did you mean '--version'? (commands: explain, show, diff, check, schema, audit, completion)",
            ),
            (
                ["check", "--stict", "--"],
                "layerconf check: error: unrecognized arguments: --stict; did you mean '--strict'? (see 'layerconf check --help')",
            ),
            (
                ["show", "--rol", "critic", "--role_file", "--"],
                "layerconf show: error: unrecognized arguments: --rol critic --role_file; did you mean '--role'?",
            ),
            (
                ["check", "--profile", "megatron-slime", "--parser", "x:y", "--"],
                "layerconf check: error: argument --parser: not allowed with argument --profile",
            ),
            (
                ["schema", "--", "--lr", "1"],
                "layerconf schema: error: schema takes no trainer command line",
            ),
            (
                [],
                "layerconf: error: choose a command: explain, show, diff, check, schema, audit, completion",
            ),
            (
                ["audit", "-o", "x.json"],
                "layerconf audit: error: give the trainer's command line after '--'",
            ),
            (
                ["audit", "dif", "a.json", "b.json"],
                "layerconf audit: error: unknown audit command 'dif'; did you mean 'diff'? (audit commands: diff, replay, verify, relaunch, explain)",
            ),
            (
                ["audit", "diff", "a.json"],
                "layerconf audit diff: error: the following arguments are required: AFTER",
            ),
            (
                ["audit", "diff", "a.json", "b.json", "--", "--lr", "1"],
                "layerconf audit diff: error: audit diff takes no trainer command line",
            ),
            (
                ["audit", "replay", "r.json", "--profile", "megatron-slime"],
                "layerconf audit replay: error: unrecognized arguments: --profile",
            ),
            (
                ["audit", "diff", "--", "a.json", "b.json"],
                "layerconf audit diff: error: audit diff takes no trainer command line: its arguments go without '--': layerconf audit diff a.json b.json",
            ),
            (
                ["audit", "replay", "--role", "critic", "--", "r.json"],
                "layerconf audit replay: error: audit replay takes no trainer command line: its arguments go without '--': layerconf audit replay --role critic r.json",
            ),
            (
                ["--profile", "megatron-slime", "show", "--role", "critic", "--", "--lr", "1"],
                "layerconf: error: '--profile' is an option of 'layerconf show', not of 'layerconf' itself: write the command's options after its name: layerconf show --profile megatron-slime --role critic -- ...",
            ),
            (
                ["check", "--format", "jsn", "x.yaml"],
                "layerconf check: error: argument --format: invalid choice: 'jsn' (choose from 'text', 'json', 'github', 'sarif'); did you mean 'json'?",
            ),
            (
                ["completion", "fishh"],
                "layerconf completion: error: argument SHELL: invalid choice: 'fishh' (choose from 'bash', 'zsh', 'fish'); did you mean 'fish'?",
            ),
            (
                ["--json", "audit", "diff", "a.json", "b.json"],
                "layerconf: error: '--json' is an option of 'layerconf audit diff', not of 'layerconf' itself: write the command's options after its name: layerconf audit diff --json a.json b.json",
            ),
            (  # (a secret shell-quoted is no form the output's scrubbing knows: never quoted)
                ["audit", "diff", "--", "a.json", "--wandb-key", "it's-Zq9Wv4Lm"],
                "layerconf audit diff: error: audit diff takes no trainer command line: its arguments go without '--': layerconf audit diff a.json --wandb-key '<redacted>'",
            ),
        ],
        ids=[
            "explain-no-separator",
            "check-no-separator",
            "profile",
            "command",
            "top-option",
            "no-key",
            "role",
            "top-short-option",
            "option",
            "option-with-value",
            "two-parsers",
            "schema-argv",
            "nothing",
            "audit-no-separator",
            "audit-command",
            "audit-diff-one-record",
            "audit-diff-argv",
            "audit-replay-profile",
            "audit-diff-records-after-separator",
            "audit-replay-record-after-separator",
            "command-option-before-command",
            "format-choice",
            "completion-shell-choice",
            "command-option-before-audit-command",
            "audit-diff-secret-after-separator",
        ],
    )
    def test_usage_errors(
        self, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Each is exit 2 with the message on stderr and nothing on stdout."""
        assert main(args) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert message in captured.err
        assert captured.err.rstrip("\n").splitlines()[-1].startswith(message.split(":")[0])

    @pytest.mark.parametrize(
        "args",
        [
            ["audit", "replay", "r.json", "--profile", "megatron-slime"],
            ["show", "--zzzz", "--"],
            ["--json"],
            ["check", "-p", "x", "--"],  # --parser or --profile: no guess
        ],
    )
    def test_no_far_fetched_option(
        self, args: list[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An unknown option that no option of the command is close to is named alone:
        `audit replay --profile` is not a misspelt `--role`, nor `--json` `--version`, nor
        `-p` one of two long options of its letter."""
        assert main(args) == 2
        assert "did you mean" not in capsys.readouterr().err

    def test_as_a_process(self, launcher: list[str]) -> None:
        """No '--' in a real process: exit 2, one line, no traceback."""
        result = run(launcher, "explain", "lr")
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1
        no_traceback(result)

    def test_version(self, launcher: list[str]) -> None:
        """--version prints the version."""
        from layerconf import __version__

        result = run(launcher, "--version")
        assert (result.returncode, result.stdout) == (0, f"layerconf {__version__}\n")


class TestInternalErrors:
    """A bug of layerconf's own met by a command: one line on stderr, exit 70, no secret; the
    traceback with LAYERCONF_TRACEBACK=1 (the tests set it: tests/conftest.py)."""

    SECRET = "internal-secret-0123456789"

    @staticmethod
    def _show_raises(monkeypatch: pytest.MonkeyPatch, message: str) -> None:
        """`show` raises a TypeError of `message`."""
        import layerconf.cli.app as app

        load = app._load

        def broken_run(options: argparse.Namespace, argv: list[str]) -> int:
            raise TypeError(message)

        def loaded(name: str) -> Any:
            command = load(name)
            return command._replace(run=broken_run) if name == "show" else command

        monkeypatch.setattr(app, "_load", loaded)

    @pytest.fixture
    def broken(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """`show` raises a TypeError that quotes the command line's secret."""
        self._show_raises(monkeypatch, f"boom: {self.SECRET}\nsecond line")

    def test_one_line(
        self, broken: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.delenv("LAYERCONF_TRACEBACK")
        code = main(["show", "--", *PPO_ARGV, "--wandb-key", self.SECRET])
        out, err = capsys.readouterr()
        assert (code, out) == (70, "")
        assert err == (
            "layerconf: internal error: TypeError: boom: <redacted>\\nsecond line (a bug in "
            "layerconf: please report it with the command that met it; LAYERCONF_TRACEBACK=1 "
            "shows where it happened)\n"
        )

    def test_a_long_secret_past_the_cut(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A secret as long as a JWT that the error quotes past the length the line keeps: it
        is hidden before the line is cut, so that no start of it shows."""
        secret = "eyJ" + "x" * 400
        self._show_raises(monkeypatch, f"boom: {'p' * 150} {secret}")
        monkeypatch.delenv("LAYERCONF_TRACEBACK")
        assert main(["show", "--", *PPO_ARGV, "--wandb-key", secret]) == 70
        err = capsys.readouterr().err
        assert f"TypeError: boom: {'p' * 150} <redacted> (a bug in layerconf" in err
        assert "eyJ" not in err

    @pytest.mark.parametrize("value", ["1", "yes"])
    def test_the_traceback_when_asked(
        self, broken: None, monkeypatch: pytest.MonkeyPatch, value: str
    ) -> None:
        monkeypatch.setenv("LAYERCONF_TRACEBACK", value)
        with pytest.raises(TypeError, match="boom"):
            main(["show", "--", *PPO_ARGV])

    def test_the_tests_see_every_bug(self) -> None:
        assert os.environ.get("LAYERCONF_TRACEBACK") == "1"


class TestHelp:
    """--help for the tool and every command; docs/cli.md matches it."""

    def test_top_level(self, launcher: list[str]) -> None:
        """layerconf --help lists the commands."""
        result = run(launcher, "--help")
        assert result.returncode == 0
        assert result.stdout.startswith(
            "usage: layerconf [-h] [--version] COMMAND [OPTIONS] -- ARGV...\n"
        )
        for command in (*COMMANDS, *RECORD_COMMANDS, *OWN_COMMANDS):
            assert f"\n  {command} " in result.stdout

    @pytest.mark.parametrize("command", [*COMMANDS, *RECORD_COMMANDS, *OWN_COMMANDS])
    def test_every_command(self, command: str, capsys: pytest.CaptureFixture[str]) -> None:
        """Each command's help starts with its usage, which names every option it has."""
        assert main([*command.split(), "--help"]) == 0
        out = capsys.readouterr().out
        usage = usage_of(out)
        parser_options = (
            ""
            if command in (*RECORD_COMMANDS, *OWN_COMMANDS)
            else " [--profile NAME | --parser MODULE:ATTR]"
        )
        assert usage.startswith(f"usage: layerconf {command} [-h]{parser_options}")
        assert all(len(line) <= 88 for line in usage.splitlines())
        for option in re.findall(r"^  (--?[\w-]+)", out, re.MULTILINE):
            assert option in usage

    @pytest.mark.parametrize("command", ["", *COMMANDS, *RECORD_COMMANDS, *OWN_COMMANDS])
    def test_docs_match_help(self, command: str, capsys: pytest.CaptureFixture[str]) -> None:
        """docs/cli.md shows each usage verbatim, and every option of each command."""
        doc = (ROOT / "docs" / "cli.md").read_text()
        assert main([*command.split(), "--help"]) == 0
        out = capsys.readouterr().out
        assert "\n" + usage_of(out) + "\n" in doc
        for option in re.findall(r"^  (--[\w-]+)", out, re.MULTILINE):
            assert f"`{option}" in doc, option


class TestOutputForPeople:
    """Readable without colour; colour only on a terminal and never with NO_COLOR."""

    def test_no_colour_when_piped(self, launcher: list[str]) -> None:
        """Output to a pipe has no escape codes."""
        result = run(launcher, "explain", "lr", "--", *PPO_ARGV)
        assert "\033[" not in result.stdout + result.stderr

    def test_colour_on_a_terminal(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """On a terminal the key is bold and layers are coloured; the text is otherwise the same."""
        monkeypatch.chdir(ROOT)
        monkeypatch.delenv("NO_COLOR", raising=False)
        monkeypatch.delenv("TERM", raising=False)
        assert main(["explain", "lr", "--", *PPO_ARGV]) == 0
        plain = capsys.readouterr().out
        monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
        assert main(["explain", "lr", "--", *PPO_ARGV]) == 0
        coloured = capsys.readouterr().out
        assert "\033[1mlr\033[0m (actor)" in coloured
        assert re.sub(r"\033\[[0-9;]*m", "", coloured) == plain

    @pytest.mark.parametrize("value", ["", "1"])
    def test_no_colour_with_no_color(
        self, value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """NO_COLOR set to any value, even empty, turns colour off."""
        monkeypatch.chdir(ROOT)
        monkeypatch.setenv("NO_COLOR", value)
        monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
        assert main(["check", "--", *PPO_ARGV]) == 0
        assert "\033[" not in capsys.readouterr().out

    def test_aligned(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The rows of an explanation are aligned in columns."""
        monkeypatch.chdir(ROOT)
        assert main(["explain", "lr", "--role", "critic", "--", *PPO_ARGV]) == 0
        rows = capsys.readouterr().out.splitlines()[1:]
        assert rows == [
            "  from     1e-05   role-config  examples/megatron_ppo.yaml:10:11",
            "  shadows  '1e-5'  role-config  examples/megatron_ppo.yaml:10:11  converted by type-coercion",
            "           2e-06   cli          argv[26] '--lr'                   overridden",
            "           1e-06   default                                        overridden",
        ]


class TestJsonEncoding:
    """Values JSON cannot hold are encoded, never a crash."""

    def test_values(self) -> None:
        """Enums by name, tuples and sets as arrays, paths as text, non-finite floats as text."""

        class Mode(enum.Enum):
            fast = 1

        assert jsonable(Mode.fast) == "fast"
        assert jsonable((1, (2, 3))) == [1, [2, 3]]
        assert jsonable({3, 1, 2}) == [1, 2, 3]
        assert jsonable(Path("/a/b")) == "/a/b"
        assert [jsonable(float(x)) for x in ("nan", "inf", "-inf")] == ["nan", "inf", "-inf"]
        assert jsonable({1: Mode.fast, None: b"\xff", (1, 2): object}) == {
            "1": "fast",
            "null": "\\xff",
            "[1, 2]": repr(object),
        }
        json.dumps(jsonable({"x": [Mode.fast, {1.5}, complex(1, 2)]}), allow_nan=False)


class TestExamples:
    """The examples run from the repository root, as the README says."""

    def test_explain_ppo(self) -> None:
        """examples/explain_ppo.py explains lr, save and kl_coef of each role."""
        result = subprocess.run(
            [sys.executable, "examples/explain_ppo.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert [line.split("  from ")[0] for line in lines] == [
            "lr = 1e-06",
            "save = '/path/to/actor_ckpt'",
            "kl_coef = 0.01",
            "lr = 1e-05",
            "save = '/path/to/critic_ckpt'",
            "kl_coef = 0",
        ]
        assert lines[3].startswith(
            "lr = 1e-05  from role-config examples/megatron_ppo.yaml:10:11 (role critic)"
        )

    def test_the_example_argv_is_clean(self, launcher: list[str]) -> None:
        """check --strict passes on the example launch."""
        result = run(launcher, "check", "--strict", "--", *PPO_ARGV)
        assert result.returncode == 0, result.stdout
        assert result.stderr == "0 errors, 0 warnings, 1 note\n"

    def test_the_role_file_is_the_contracts(self) -> None:
        """examples/megatron_ppo.yaml is the contract's Format example, verbatim."""
        contract = (FIXTURES / "megatron-config.md").read_text()
        block = re.search(r"## Format\n.*?```yaml\n(.*?)```", contract, re.DOTALL)
        assert block is not None
        assert (EXAMPLES / "megatron_ppo.yaml").read_text() == block.group(1)


class TestHostilePaths:
    """A device or a silent FIFO where a file should be: one line each, at once, never a hang."""

    def test_audit_diff_of_devices(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["audit", "diff", "/dev/zero", "/dev/zero"]) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        assert (
            captured.err.splitlines()
            == [
                "layerconf audit diff: error: /dev/zero: is a character device, not a file (give "
                "the path of a file, or of a pipe or FIFO)"
            ]
            * 2
        )

    @pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
    def test_check_with_a_fifo_as_role_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        import layerconf.sources.files as files_module

        monkeypatch.setattr(files_module, "PIPE_WAIT", 0.2)
        fifo = tmp_path / "roles.yaml"
        os.mkfifo(fifo)
        argv = ["--rollout-batch-size", "4", "--megatron-config-path", str(fifo)]
        assert main(["check", "--", *argv]) == 1
        out = capsys.readouterr().out
        assert f"{fifo}: error: is a pipe or FIFO that nothing was written to" in out

    def test_a_parser_module_too_large_to_be_code(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--parser MODULE:ATTR whose file is 1 GB is refused before it is imported (before:
        read whole, 1 GB of memory), as its PATH.py:ATTR form is."""
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr(sys, "path", list(sys.path))
        with (tmp_path / "oversized_trainer_module.py").open("wb") as file:
            file.truncate(1 << 30)  # sparse: no disk used
        assert (
            main(["explain", "--parser", "oversized_trainer_module:p", "x", "--", "--x", "1"]) == 2
        )
        err = capsys.readouterr().err
        assert err.startswith("layerconf explain: error: --parser: ")
        assert "oversized_trainer_module.py: is larger than 16,777,216 bytes" in err
        assert "oversized_trainer_module" not in sys.modules

    def test_a_parser_module_is_read_once(
        self,
        trainer_module: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """--parser MODULE:ATTR sizes the module's file by its status: the import is what
        reads it (before: read whole by layerconf to size it, then again by the import)."""
        import layerconf.sources.files as files_module

        read: list[str] = []
        real = files_module.read_bounded

        def recorded(source: str, **kwargs: Any) -> bytes:
            read.append(source)
            return real(source, **kwargs)

        monkeypatch.setattr(files_module, "read_bounded", recorded)
        trainer_module(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--x', type=int, default=0)\n",
            "read_once_trainer",
        )
        assert main(["explain", "--parser", "read_once_trainer:p", "x", "--", "--x", "1"]) == 0
        assert capsys.readouterr().out.startswith("x (main) = 1\n")
        assert [path for path in read if path.endswith("read_once_trainer.py")] == []

    @pytest.mark.parametrize(
        ("made", "message"),
        [
            ("directory", "is a directory, not a file (give the path of the Python file itself)"),
            ("device", "is a character device, not a file"),
            ("loop", "cannot be read: Too many levels of symbolic links"),
            ("huge", "is larger than 16,777,216 bytes"),
            ("fifo", "is a pipe or FIFO that nothing was written to (or finished) within"),
        ],
    )
    def test_a_parser_path_that_is_no_python_file(
        self,
        made: str,
        message: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """--parser PATH:ATTR naming no Python file says what is there, at once, in bounded
        memory (before: 'no such file' for a path that exists, and a 1 GB file read whole)."""
        import layerconf.sources.files as files_module

        monkeypatch.setattr(files_module, "PIPE_WAIT", 0.2)
        path = tmp_path / "train.py"
        if made == "directory":
            path.mkdir()
        elif made == "device":
            path = Path(os.devnull)
        elif made == "loop":
            path.symlink_to(path)
        elif made == "huge":
            with path.open("wb") as file:
                file.truncate(1 << 30)  # sparse: no disk used
        else:
            if not hasattr(os, "mkfifo"):
                pytest.skip("needs FIFOs")
            os.mkfifo(path)
        assert main(["explain", "--parser", f"{path}:get_parser", "x", "--", "--x", "1"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.startswith(f"layerconf explain: error: --parser: {path}: {message}")
        assert captured.err.count("\n") == 1
        assert "train" not in sys.modules

    @pytest.mark.parametrize(
        ("command", "argument"),
        [
            (["check", ""], "FILE"),
            (["check", "ok.yaml", ""], "FILE"),
            (["audit", "replay", ""], "RECORD"),
            (["audit", "diff", "", "b.json"], "BEFORE"),
            (["audit", "relaunch", ""], "RECORD"),
            (["audit", "explain", "", "lr"], "RECORD"),
            (["audit", "verify", "--key-file", "key", ""], "RECORD"),
            (["audit", "verify", "--key-file", "", "r.json"], "--key-file"),
            (["audit", "--key-file", "", "--", "--lr", "1"], "--key-file"),
            (["schema", "-o", ""], "-o/--output"),
        ],
    )
    def test_an_empty_path(
        self, command: list[str], argument: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An empty path (a shell variable that was not set) is a usage error naming the
        argument; before, check reported a 'role-config' file not found, the audit commands
        read ./layerconf-audit.json, and '--key-file ' was 'file not found'."""
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"error: argument {argument}: the path is empty, so it names no file" in err

    @pytest.mark.parametrize(
        "command", [["check"], ["audit", "replay"], ["audit", "diff", "other.json"]]
    )
    def test_a_file_whose_name_starts_with_a_dash(
        self,
        command: list[str],
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A file named '-x.yaml' is read by argparse as an option: the usage error says that
        it is a file and how to write it, instead of calling it the trainer's command line
        or a missing argument."""
        monkeypatch.chdir(tmp_path)
        Path("-x.yaml").write_text("megatron: []\n")
        assert main([*command, "-x.yaml"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert (
            "-x.yaml is a file: write ./-x.yaml (a name that starts with '-' is read as an option)"
            in err
        )
        assert main([*command, "./-x.yaml"]) != 2

    @pytest.mark.parametrize(
        "command",
        [
            ["audit", "-o", "{}", "--", "--rollout-batch-size", "1"],
            ["schema", "-o", "{}"],
            ["show", "--role-file", "-o", "{}", "--", "--rollout-batch-size", "1"],
            ["schema", "-o", "{}/"],  # refused: a usage error that quotes the path
        ],
        ids=["audit", "schema", "show-role-file", "usage-error"],
    )
    @pytest.mark.parametrize("name", ["a\nb.json", "clear\x1b[2J.json", "rtl\u202e.json"])
    def test_an_output_path_reaches_stderr_escaped(
        self,
        command: list[str],
        name: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """'wrote PATH' and a usage error quoting PATH are one line, the path's control
        characters escaped (as every other message shows a path): none reaches the terminal."""
        monkeypatch.chdir(tmp_path)
        main([part.replace("{}", name) for part in command])
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert err.isprintable() or err[:-1].isprintable()
        assert repr(name)[1:-1] in err

    @pytest.mark.parametrize(
        ("command", "spec"),
        [
            (["schema", "--preset", "slime", "-o", "{out}"], "{path}:get_parser"),
            (["audit", "-o", "{out}", "--", "--x", "1"], "guarded_trainer:get_parser"),
            (
                ["show", "--preset", "slime", "--role-file", "-o", "{out}", "--", "--x", "1"],
                "{path}:get_parser",
            ),
        ],
        ids=["schema", "audit", "show-role-file"],
    )
    def test_the_parsers_module_is_never_replaced(
        self,
        command: list[str],
        spec: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """'-o' naming the file --parser was imported from is refused (exit 2, nothing
        written): before, 'schema --parser train.py:get_parser -o train.py' replaced the
        trainer's code with the schema."""
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr(sys, "path", list(sys.path))
        monkeypatch.delitem(sys.modules, "guarded_trainer", raising=False)
        source = (
            "import argparse\n\n\ndef get_parser():\n    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--x', type=int)\n"
            "    parser.add_argument('--megatron-config-path')\n    return parser\n"
        )
        path = tmp_path / "guarded_trainer.py"
        path.write_text(source)
        for out in (str(path), "guarded_trainer.py"):
            parser = ["--parser", spec.format(path=path)]
            args = [part.format(out=out) for part in command]
            assert main([*args[:1], *parser, *args[1:]]) == 2
            err = capsys.readouterr().err
            assert "is the module of --parser" in err
            assert "nothing was written" in err
            assert path.read_text() == source
        assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".py") == [path.name]


class TestCommandEdges:
    """The command's edges: misplaced options, failures under --json, key selection."""

    ARGV: ClassVar[list[str]] = ["--rollout-batch-size", "8", "--lr", "2e-6"]

    @pytest.mark.parametrize(
        ("command", "option"),
        [
            (["explain", "lr"], ["--role", "critic"]),
            (["show"], ["--json"]),
            (["check"], ["--strict"]),
        ],
    )
    def test_own_options_after_the_separator(
        self, command: list[str], option: list[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Written after '--' they would go to the trainer: say so, and where to write them."""
        assert main([*command, "--", *self.ARGV, *option]) == 2
        err = capsys.readouterr().err
        name = command[0]
        assert f"'{option[0]}' is an option of layerconf {name}, written after '--'" in err
        assert f"layerconf {name} {' '.join(option)}" in err

    def test_forgetting_the_separator(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The trainer's flags without '--': unrecognized, and what to write instead."""
        assert main(["check", *self.ARGV]) == 2
        err = capsys.readouterr().err
        assert "unrecognized arguments: --rollout-batch-size 8 --lr 2e-6" in err
        assert "layerconf check -- --rollout-batch-size 8 --lr 2e-6" in err

    @pytest.mark.parametrize("command", [["explain", "lr"], ["show"], ["diff"]])
    def test_json_when_it_does_not_resolve(
        self, command: list[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The problems on stdout as check --json prints them, exit 1."""
        argv = ["--rollout-batch-size", "8", "--lr", "fast"]
        assert main(["check", "--json", "--", *argv]) == 1
        expected = json.loads(capsys.readouterr().out)
        assert main([*command, "--json", "--", *argv]) == 1
        assert json.loads(capsys.readouterr().out) == expected

    def test_a_key_in_other_case(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["explain", "LR", "--", *self.ARGV]) == 1
        assert "unknown key 'LR'; did you mean 'lr'?" in capsys.readouterr().err

    @pytest.mark.parametrize("role", ["Critic", "CRITIC"])
    def test_a_role_in_other_case(self, role: str, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["explain", "lr", "--role", role, "--", *self.ARGV]) == 2
        assert "did you mean 'critic'?" in capsys.readouterr().err

    def test_a_glob_selects_keys(self, capsys: pytest.CaptureFixture[str]) -> None:
        """'lr*' explains every key that matches, in each role."""
        assert main(["explain", "lr_decay*", "--role", "actor", "--json", "--", *self.ARGV]) == 0
        keys = [entry["key"] for entry in json.loads(capsys.readouterr().out)]
        assert keys == ["lr_decay_iters", "lr_decay_samples", "lr_decay_style"]

    @pytest.mark.parametrize("key", ["[" * 50_000 + "x", "l" * 100_000], ids=["glob", "plain"])
    def test_an_enormous_key_is_answered_at_once(
        self, key: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A KEY of 100,000 characters costs no more than a short one (fnmatch translates
        '[[[...' in quadratic time: 50,000 of them took minutes), and is quoted shortened."""
        import time

        started = time.monotonic()
        assert main(["explain", key, "lr", "--role", "actor", "--", *self.ARGV]) == 1
        assert time.monotonic() - started < 5
        captured = capsys.readouterr()
        assert captured.out.startswith("lr (actor) = 2e-06")
        assert captured.err.startswith(f"layerconf explain: error: unknown key '{key[:20]}")
        assert "longer than any key" in captured.err
        assert len(captured.err) < 500

    def test_one_unknown_key_does_not_stop_the_others(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["explain", "nope", "lr", "--role", "actor", "--", *self.ARGV]) == 1
        captured = capsys.readouterr()
        assert captured.out.startswith("lr (actor) = 2e-06")
        assert "unknown key 'nope'" in captured.err

    def test_show_shows_what_changed_by_default(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Keys at the parser's default are left out unless --all."""
        assert main(["show", "--json", "--role", "actor", "--", *self.ARGV]) == 0
        changed = json.loads(capsys.readouterr().out)["actor"]
        assert set(changed) == {"rollout_batch_size", "lr"}
        assert main(["show", "--all", "--json", "--role", "actor", "--", *self.ARGV]) == 0
        every = json.loads(capsys.readouterr().out)["actor"]
        assert len(every) > 1000

    @pytest.mark.parametrize(
        "text",
        [
            "megatron:\n  - role: critic\n    overrides:\n      lr: fast\n",
            "megatron:\n  - role: critic\n    overrides: {tensor_model_parallel_size: 4}\n",
            "megatron:\n  - role: actor\n  - role: actor\n",
            "megatron:\n  - role: actor\n    overrides: {}\n    args: {}\n",
            "megatron:\n  - role: critic\n    overrides: {save: /ckpt/}\n",
        ],
        ids=["type", "topology", "two-entries", "overrides-and-args", "shared-save"],
    )
    def test_a_line_does_not_repeat_its_location(
        self,
        text: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """The line starts with where; the message says the rest."""
        monkeypatch.chdir(tmp_path)
        Path("ppo.yaml").write_text(text)
        argv = [*self.ARGV, "--use-critic", "--save", "/ckpt", "--megatron-config-path", "ppo.yaml"]
        assert main(["check", "--json", "--", *argv]) == 1
        problems = json.loads(capsys.readouterr().out)
        errors = [p for p in problems if p["severity"] == "error"]
        assert errors
        for problem in errors:
            if problem["line"] is not None:
                assert f"ppo.yaml:{problem['line']}:{problem['column']}" not in problem["message"]
                assert f"line {problem['line']}" not in problem["message"]
            if problem["argv_index"] is not None:
                assert f"argv[{problem['argv_index']}]" not in problem["message"]

    def test_an_indentation_error_gets_an_indentation_hint(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.chdir(tmp_path)
        Path("ppo.yaml").write_text(
            "megatron:\n  - role: critic\n    overrides:\n      lr: 1\n     seed: 2\n"
        )
        assert main(["check", "--", *self.ARGV, "--megatron-config-path", "ppo.yaml"]) == 1
        line = capsys.readouterr().out.splitlines()[0]
        assert line.startswith("ppo.yaml:5:6: error: invalid YAML")
        assert "indent" in line
        assert "bracket" not in line


class TestTheTrainersTokensWithoutSeparator:
    """Tokens layerconf does not know, and no '--': the command line to write instead, and the
    command's own option when one of them is a misspelling of it."""

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (
                ["explain", "lr", "--lr", "1"],
                "layerconf explain: error: unrecognized arguments: --lr 1: the trainer's command "
                "line goes after '--': layerconf explain lr -- --lr 1",
            ),
            (
                ["explain", "lr", "--jsn"],
                "layerconf explain: error: unrecognized arguments: --jsn; did you mean '--json'? "
                "If --jsn is the trainer's, its command line goes after '--': "
                "layerconf explain lr -- --jsn",
            ),
            (
                ["show", "--rol", "actor", "--wandb-key=S3CR3T-abc123"],
                "layerconf show: error: unrecognized arguments: --rol actor "
                "--wandb-key=<redacted>; did you mean '--role'? If --rol is the trainer's, its "
                "command line goes after '--': layerconf show -- --rol actor "
                "--wandb-key=<redacted>",
            ),
            (
                ["explain", "lr", "--wandb-k", "S3CR3T1"],
                "layerconf explain: error: unrecognized arguments: --wandb-k <redacted>: the "
                "trainer's command line goes after '--': layerconf explain lr -- --wandb-k "
                "<redacted>",
            ),
        ],
    )
    def test_says_where_they_go(
        self, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(args) == 2
        out, err = capsys.readouterr()
        assert (out, err) == ("", message + "\n")
