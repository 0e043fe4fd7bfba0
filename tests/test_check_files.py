"""``layerconf check FILE...``: role files on their own, and check's output formats."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from layerconf import load_profile
from layerconf.cli import main

ROOT = Path(__file__).parent.parent
GOOD = ROOT / "examples" / "megatron_ppo.yaml"
PPO_ARGV = (ROOT / "examples" / "ppo_argv.txt").read_text().splitlines()
SARIF_SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
SECRET = "wandb-secret-0123456789abcdef"

# Every kind of mistake a role file can hold on its own, one a line.
MISTAKES = """\
megatron:
  - role: actor
    overrides:
      lrr: 1e-6
      lr: fast
      use_critic: true
      tensor_model_parallel_size: 2
  - role: critic
    overrides:
      tensor_model_parallel_size: 4
"""


def check(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["check", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


class TestFileMode:
    """Positional files are role files, each checked on its own against the parser's defaults."""

    def test_a_good_file_is_clean(self, capsys: pytest.CaptureFixture[str]) -> None:
        """No command line is needed: the trainer's required flags are not demanded."""
        code, out, err = check(capsys, "--strict", GOOD)
        assert (code, out) == (0, ""), err
        assert "rollout-batch-size" not in out + err
        assert "0 errors, 0 warnings" in err

    def test_every_problem_of_a_file(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Keys, values, run-wide keys and the topology within the file, each at its line."""
        bad = write(tmp_path / "megatron_bad.yaml", MISTAKES)
        code, out, _ = check(capsys, bad)
        assert code == 1
        lines = out.splitlines()
        assert any(line.startswith(f"{bad}:4:7: error:") and "'lrr'" in line for line in lines)
        assert any(line.startswith(f"{bad}:5:11: error:") and "fast" in line for line in lines)
        assert any(line.startswith(f"{bad}:6:7: error:") and "use_critic" in line for line in lines)
        assert any("parallel topology" in line for line in lines), out

    def test_in_reading_order(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """The reader's warnings and the rules' problems of both roles, line by line."""
        path = write(
            tmp_path / "roles.yaml",
            "megatron:\n  - role: actor\n    overrides:\n      seed: 010\n"
            "      save: 2024_01_05\n  - role: critic\n    overrides:\n      load: 0712\n"
            "      seed: 0b1\n",
        )
        for args in ([path], ["--", *PPO_ARGV, "--megatron-config-path", str(path)]):
            code, out, err = check(capsys, *args)
            lines = [line for line in out.splitlines() if line.startswith(str(path))]
            found = [tuple(map(int, line.split(":")[1:3])) for line in lines]
            assert found == sorted(found), out
            assert len(found) >= 6, out
            assert code == 0, err  # (warnings only)

    def test_every_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A problem in one file hides nothing of another, and a good file among them stays clean."""
        first = write(tmp_path / "a.yaml", "megatron:\n  - role: critc\n")
        second = write(tmp_path / "b.yaml", "megatron:\n  - role: actor\n    overrides: {lr: x}\n")
        missing = tmp_path / "missing.yaml"
        code, out, err = check(capsys, first, GOOD, missing, second)
        assert code == 1
        assert re.search(rf"^{re.escape(str(first))}:2:\d+: error: unknown role 'critc'", out, re.M)
        assert re.search(rf"^{re.escape(str(second))}:3:\d+: error: .*'x'", out, re.M)
        assert str(missing) in out
        assert str(GOOD) not in out
        assert "3 errors" in err

    def test_the_run_s_rules_are_not_run(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Whether a critic runs is the command line's: no PPO-scope warning, and stderr says
        what file mode leaves out."""
        code, out, err = check(capsys, "--strict", GOOD)
        assert code == 0
        assert "no critic runs" not in out + err
        assert "not checked" in err
        assert "ppo-scope" in err
        assert "distinct-across-roles" in err

    def test_null_for_a_required_option(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A role file's null for a required option is an error on its own, as with any command
        line (the role file overrides it) and as the schema says; only the command line's own
        missing flag is not demanded."""
        path = write(
            tmp_path / "roles.yaml",
            "megatron:\n  - role: critic\n    overrides:\n      rollout_batch_size: null\n",
        )
        code, out, _ = check(capsys, path)
        assert code == 1
        assert out.startswith(f"{path}:4:27: error: 'rollout_batch_size' must be an int (got null)")
        assert "the option is required" in out

    def test_the_parser_is_left_as_it_was(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The profile's required flags are relaxed on a copy only."""
        check(capsys, GOOD)
        parser = load_profile("megatron-slime")
        assert [a.dest for a in parser._actions if a.required] == ["rollout_batch_size"]

    def test_a_file_name_with_an_equals_sign(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The file's name is handed on whole, whatever it holds."""
        monkeypatch.chdir(tmp_path)
        write(tmp_path / "a=b.yaml", "megatron:\n  - role: actor\n    overrides: {lrr: 1}\n")
        code, out, _ = check(capsys, "a=b.yaml")
        assert code == 1
        assert out.startswith("a=b.yaml:3:")

    def test_files_and_a_command_line_together(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Either role files or a command line: both is a usage error saying so."""
        code, out, err = check(capsys, GOOD, "--", *PPO_ARGV)
        assert (code, out) == (2, "")
        assert "not both" in err

    def test_a_preset_without_a_role_file(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The plain preset reads no role file: file mode has nothing to check."""
        code, _, err = check(capsys, "--preset", "plain", GOOD)
        assert code == 2
        assert "reads no role file" in err

    def test_the_command_line_mode_is_as_before(self, capsys: pytest.CaptureFixture[str]) -> None:
        """`check -- ARGV` still demands what the trainer demands."""
        code, out, _ = check(capsys, "--", "--megatron-config-path", GOOD)
        assert code == 1
        assert "--rollout-batch-size" in out

    def test_nothing_to_check(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Neither files nor a command line: a usage error."""
        code, _, err = check(capsys)
        assert code == 2
        assert "role files" in err


class TestFormats:
    """--format text|json|github|sarif; --json is --format json."""

    def test_json_is_an_alias(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        bad = write(tmp_path / "bad.yaml", MISTAKES)
        _, alias, _ = check(capsys, "--json", bad)
        _, named, _ = check(capsys, "--format", "json", bad)
        assert alias == named
        assert {p["line"] for p in json.loads(named)} >= {4, 5, 6}

    def test_json_and_another_format(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, _, err = check(capsys, "--json", "--format", "sarif", GOOD)
        assert code == 2
        assert "--json" in err

    def test_github_annotations(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """One workflow command a problem: file, line, col, and the message."""
        bad = write(tmp_path / "bad.yaml", MISTAKES)
        code, out, _ = check(capsys, "--format", "github", bad)
        assert code == 1
        lines = out.splitlines()
        assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines)
        prefix = f"::error file={bad},line=4,col=7,title=layerconf check::"
        assert any(line.startswith(prefix) and "'lrr'" in line for line in lines), out

    def test_github_escaping(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Properties escape % CR LF : and , ; the message % CR LF (as @actions/core does)."""
        odd = tmp_path / "a,b:c%d.yaml"
        write(odd, "megatron:\n  - role: actor\n    overrides: {lrr: 1}\n")
        code, out, _ = check(capsys, "--format", "github", odd)
        assert code == 1
        escaped = str(odd).replace("%", "%25").replace(":", "%3A").replace(",", "%2C")
        assert out.startswith(f"::error file={escaped},line=3,col=")

    def test_github_message_escaping(self) -> None:
        from layerconf.cli.commands.check import github_line
        from layerconf.exceptions import Problem

        problem = Problem("50% off\r\nnext", source="x:y,z.yaml", line=1, column=2, hint="a:b")
        line = github_line(problem)
        assert line == (
            "::error file=x%3Ay%2Cz.yaml,line=1,col=2,title=layerconf check::"
            "50%25 off%0D%0Anext (a:b)"
        )
        assert "\n" not in line

    def test_github_problem_of_a_layer(self) -> None:
        """A problem of another source (the environment) starts with where it is, as in text."""
        from layerconf.cli.commands.check import github_line
        from layerconf.exceptions import Problem

        problem = Problem("environment variable SLIME_LR: bad", layer="env", severity="warning")
        assert github_line(problem) == "::warning title=layerconf check::env: environment " + (
            "variable SLIME_LR: bad"
        )

    def test_github_argv_problem_has_no_file(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, out, _ = check(
            capsys, "--format", "github", "--", "--rollout-batch-size", "8", "--lr", "x"
        )
        assert code == 1
        assert out.startswith("::error title=layerconf check::argv[3]: argument --lr")
        assert "file=" not in out

    def sarif(self, capsys: pytest.CaptureFixture[str], *args: str | Path) -> dict[str, Any]:
        import jsonschema

        code, out, _ = check(capsys, "--format", "sarif", *args)
        assert code in (0, 1)
        log: dict[str, Any] = json.loads(out)
        schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
        jsonschema.Draft4Validator.check_schema(schema)
        jsonschema.Draft4Validator(schema).validate(log)
        return log

    def test_sarif_is_valid(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """SARIF 2.1.0, valid against the OASIS schema, a result per problem at its region."""
        bad = write(tmp_path / "bad.yaml", MISTAKES)
        log = self.sarif(capsys, bad, GOOD)
        assert log["version"] == "2.1.0"
        (run,) = log["runs"]
        assert run["tool"]["driver"]["name"] == "layerconf"
        results = run["results"]
        first = results[0]
        assert first["level"] == "error"
        location = first["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == bad.as_uri()
        assert location["region"] == {"startLine": 4, "startColumn": 7}

    def test_sarif_clean(self, capsys: pytest.CaptureFixture[str]) -> None:
        """No result; the rules not checked on a role file alone are the run's notification."""
        log = self.sarif(capsys, GOOD)
        (run,) = log["runs"]
        assert run["results"] == []
        (invocation,) = run["invocations"]
        (note,) = invocation["toolExecutionNotifications"]
        assert note["message"]["text"].startswith("not checked without the command line: ppo-")

    def test_sarif_argv_problem(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A problem of the command line has no file: its argv index is in a property bag."""
        log = self.sarif(capsys, "--", "--rollout-batch-size", "8", "--lr", "x")
        (result,) = log["runs"][0]["results"]
        assert "locations" not in result
        assert result["properties"]["argvIndex"] == 3


class TestSecrets:
    """A planted --wandb-key value reaches no format's output."""

    @pytest.mark.parametrize("form", ["text", "json", "github", "sarif"])
    def test_a_role_file_secret(
        self, form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        bad = write(
            tmp_path / "bad.yaml",
            f"megatron:\n  - role: actor\n    overrides:\n      wandb_key: [{SECRET}]\n"
            f"      wandb_kye: {SECRET}\n",
        )
        code, out, err = check(capsys, "--format", form, bad)
        assert code == 1
        assert "'wandb_key' must be a string (got <redacted>)" in out
        assert SECRET not in out + err

    @pytest.mark.parametrize("form", ["text", "json", "github", "sarif"])
    def test_an_argv_secret(self, form: str, capsys: pytest.CaptureFixture[str]) -> None:
        code, out, err = check(capsys, "--format", form, "--", "--wandb-key", SECRET, "--lr", "x")
        assert code == 1
        assert SECRET not in out + err
