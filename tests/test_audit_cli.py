"""``audit relaunch``, ``audit explain`` and the role files of ``audit diff``: answers from a
record alone, through the real command."""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from layerconf import audit, load_profile, resolve_roles
from layerconf.audits import AuditRecord, load_audit
from layerconf.audits.diff import FileChange, diff_files
from layerconf.cli import main
from layerconf.core.secrets import is_secret

PARSER = load_profile()
SECRET = "hunter2-secret-value"


def _argv(fixtures: Path, role_file: Path) -> list[str]:
    argv = (fixtures / "slime_ppo_argv.txt").read_text().splitlines()
    argv[argv.index("--megatron-config-path") + 1] = str(role_file)
    return [*argv, "--wandb-key", SECRET]


def forge_lr(source: Path, target: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Write to `target` the record at `source` with the critic's ``lr`` entry changed by
    `edit` and the fingerprint made again, as a forger would."""
    from layerconf.audits import record as record_module

    data = json.loads(source.read_text())
    edit(data["roles"]["critic"]["settings"]["lr"])
    data["fingerprint"] = record_module._fingerprint(data["roles"])
    target.write_text(json.dumps(data))


@pytest.fixture
def recorded(tmp_path: Path, fixtures_dir: Path) -> tuple[Path, list[str]]:
    """A record of the real slime command line with a secret, and that command line."""
    role_file = tmp_path / "roles.yaml"
    shutil.copy(fixtures_dir / "slime_ppo_megatron.yaml", role_file)
    argv = _argv(fixtures_dir, role_file)
    assert main(["audit", "-o", str(tmp_path / "run"), "--", *argv]) == 0
    return tmp_path / "run", argv


class TestRelaunch:
    """The recorded command line, shell-quoted, secrets as placeholders."""

    def test_parses_back_to_the_recorded_values(
        self, recorded: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Re-parsing the printed line gives the recorded value of every non-secret key."""
        capsys.readouterr()
        assert main(["audit", "relaunch", str(recorded[0])]) == 0
        out, err = capsys.readouterr()
        assert SECRET not in out + err
        argv = shlex.split(out)
        assert argv[-2:] == ["--wandb-key", "<redacted>"]
        assert "argv[110]: supply the secret of --wandb-key" in err
        record = load_audit(recorded[0])
        again = AuditRecord.from_dict(audit(resolve_roles(PARSER, argv)))
        for role in record.roles:
            before, after = record.values(role), again.values(role)
            assert before.keys() == after.keys()
            for key, value in before.items():
                if not is_secret(key):
                    assert after[key] == value, key

    def test_quotes_what_the_shell_would_split(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A value with spaces and quotes comes back as one token."""
        argv = ["--rollout-batch-size", "8", "--save", "a dir/it's here"]
        (tmp_path / "r.json").write_text(json.dumps(audit(resolve_roles(PARSER, argv))))
        assert main(["audit", "relaunch", str(tmp_path / "r.json")]) == 0
        assert shlex.split(capsys.readouterr().out) == argv

    def test_a_secret_a_record_holds_is_not_printed(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A record edited (or written by another tool) to hold a secret in its command line
        is relaunched with the placeholder there, as replay and explain show its values."""
        argv = ["--rollout-batch-size", "8"]
        record = audit(resolve_roles(PARSER, argv))
        record["argv"] = [*argv, "--wandb-key", SECRET, f"--hf-token={SECRET}"]
        (tmp_path / "r.json").write_text(json.dumps(record))
        assert main(["audit", "relaunch", str(tmp_path / "r.json")]) == 0
        out, err = capsys.readouterr()
        assert SECRET not in out + err
        assert shlex.split(out) == [*argv, "--wandb-key", "<redacted>", "--hf-token=<redacted>"]
        assert "argv[3]: supply the secret of --wandb-key" in err
        assert "argv[4]: supply the secret of --hf-token" in err

    def test_values_the_environment_set_are_said(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The command line alone does not set what the environment did: each variable is named
        on stderr with what to do (its recorded value, or the secret to supply); a forged
        record's secret under a secret name is not printed, nor a key's escape sequence."""
        from layerconf import EnvSource
        from layerconf.audits.fingerprint import fingerprint

        argv = ["--rollout-batch-size", "8"]
        environ = {"SLIME_SEED": "99", "SLIME_WANDB_KEY": SECRET}
        source = EnvSource(prefix="SLIME_", environ=environ)
        record = audit(resolve_roles(PARSER, argv, sources=[source]))
        settings = record["roles"]["actor"]["settings"]
        env = {"layer": "env", "kind": "env"}
        settings["hf_token"] = {"value": SECRET, **env, "token": "SLIME_HF_TOKEN"}
        settings["note\x1b[2J"] = {"value": 1, **env, "token": "SLIME_NOTE"}
        record["fingerprint"] = fingerprint(record["roles"])
        (tmp_path / "r.json").write_text(json.dumps(record))
        assert main(["audit", "relaunch", str(tmp_path / "r.json")]) == 0
        out, err = capsys.readouterr()
        assert shlex.split(out) == argv
        assert SECRET not in out + err
        assert "\x1b" not in err
        assert err.splitlines() == [
            "layerconf audit relaunch: environment variable SLIME_SEED set seed, which the "
            "command line does not hold: set it again (the record's value: 99)",
            "layerconf audit relaunch: environment variable SLIME_WANDB_KEY set wandb_key, which "
            "the command line does not hold: supply the secret it held",
            "layerconf audit relaunch: environment variable SLIME_HF_TOKEN set hf_token, which "
            "the command line does not hold: supply the secret it held",
            "layerconf audit relaunch: environment variable SLIME_NOTE set $'note\\x1b[2J', "
            "which the command line does not hold: set it again (the record's value: 1)",
        ]

    def test_a_value_that_held_a_secret_is_not_to_set_again(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A value the record holds scrubbed (a URL's password) is the secret to supply, said
        with what the record shows, not its JSON marker to set again; a forged record's URL
        password is not printed."""
        from layerconf import EnvSource
        from layerconf.audits.fingerprint import fingerprint

        environ = {"SLIME_LOAD": "https://me:PASSWORD99@host/ckpt"}
        source = EnvSource(prefix="SLIME_", environ=environ)
        record = audit(resolve_roles(PARSER, ["--rollout-batch-size", "8"], sources=[source]))
        settings = record["roles"]["actor"]["settings"]
        forged = {"value": "https://me:FORGED99@host/x", "layer": "env", "kind": "env"}
        settings["mirror"] = {**forged, "token": "SLIME_MIRROR"}
        record["fingerprint"] = fingerprint(record["roles"])
        (tmp_path / "r.json").write_text(json.dumps(record))
        assert main(["audit", "relaunch", str(tmp_path / "r.json")]) == 0
        err = capsys.readouterr().err
        assert "PASSWORD99" not in err
        assert "FORGED99" not in err
        assert "$type" not in err
        assert err.splitlines() == [
            "layerconf audit relaunch: environment variable SLIME_LOAD set load, which the "
            "command line does not hold: supply the secret it held (the record shows "
            '"https://me:<redacted>@host/ckpt")',
            "layerconf audit relaunch: environment variable SLIME_MIRROR set mirror, which the "
            "command line does not hold: supply the secret it held (the record shows "
            '"https://me:<redacted>@host/x")',
        ]

    def test_no_command_line(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A record of values without a command line says there is nothing to re-launch."""
        import argparse

        (tmp_path / "r.json").write_text(json.dumps(audit({"main": argparse.Namespace(a=1)})))
        assert main(["audit", "relaunch", str(tmp_path / "r.json")]) == 1
        assert "holds no command line" in capsys.readouterr().err


class TestForgedURLPasswords:
    """A record written by hand shows a URL's password, however short, in no command's output:
    not in a value, nor in an origin's token."""

    @pytest.mark.parametrize(
        "command",
        [
            ["audit", "explain", "RECORD", "load"],
            ["audit", "explain", "--json", "RECORD", "load"],
            ["audit", "replay", "RECORD"],
            ["audit", "replay", "--json", "RECORD"],
            ["audit", "diff", "BEFORE", "RECORD"],
        ],
    )
    def test_not_printed(
        self, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from layerconf.audits.fingerprint import fingerprint

        record = audit(resolve_roles(PARSER, ["--rollout-batch-size", "8"]))
        (tmp_path / "before.json").write_text(json.dumps(record))
        forged = "https://me:Qx7@host/ckpt"
        for section in record["roles"].values():
            section["settings"]["load"] = {
                "value": forged,
                "layer": "cli",
                "kind": "argv",
                "argv_index": 2,
                "token": forged,
            }
        record["fingerprint"] = fingerprint(record["roles"])
        path = tmp_path / "r.json"
        path.write_text(json.dumps(record))
        capsys.readouterr()
        paths = {"RECORD": str(path), "BEFORE": str(tmp_path / "before.json")}
        main([paths.get(part, part) for part in command])
        out, err = capsys.readouterr()
        assert "Qx7" not in out + err
        assert "https://me:<redacted>@host/ckpt" in out + err


class TestAuditExplain:
    """``audit explain`` prints what ``explain`` prints, from the record."""

    def test_same_text_as_explain(
        self,
        recorded: tuple[Path, list[str]],
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """The history of shadowed values, in explain's own text, for plain and glob keys."""
        monkeypatch.setenv("NO_COLOR", "1")
        capsys.readouterr()
        assert main(["explain", "kl_coef", "lr*", "--role", "critic", "--", *recorded[1]]) == 0
        live = capsys.readouterr().out
        assert (
            main(["audit", "explain", str(recorded[0]), "kl_coef", "lr*", "--role", "critic"]) == 0
        )
        answered = capsys.readouterr().out
        assert answered == live
        assert (
            "shadows  0.0  cli                   argv[48] '--kl-coef'  forced by critic-defaults"
            in answered
        )

    def test_json_and_secrets(
        self, recorded: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--json lists each role's setting; a secret stays redacted."""
        capsys.readouterr()
        assert main(["audit", "explain", str(recorded[0]), "wandb_key", "lr", "--json"]) == 0
        out = capsys.readouterr().out
        assert SECRET not in out
        listed = json.loads(out)
        assert [(s["role"], s["key"]) for s in listed] == [
            ("actor", "wandb_key"),
            ("critic", "wandb_key"),
            ("actor", "lr"),
            ("critic", "lr"),
        ]
        assert listed[0]["value"] == "<redacted>"
        assert listed[3]["history"][0]["reason"] == "converted"

    def test_unknown_key_and_role(
        self, recorded: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An unknown key is exit 1 with a did-you-mean; an unknown role a usage error."""
        assert main(["audit", "explain", str(recorded[0]), "lrr", "kl_coef"]) == 1
        out, err = capsys.readouterr()
        assert "kl_coef (critic) = 0" in out
        assert "unknown key 'lrr'; did you mean 'lr'?" in err
        assert main(["audit", "explain", str(recorded[0]), "lr", "--role", "critc"]) == 2
        assert "unknown role 'critc'" in capsys.readouterr().err

    def test_control_characters_of_a_record_are_escaped(
        self, recorded: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A forged record's origin cannot drive the terminal (a title, the clipboard...)."""
        path = recorded[0]

        def edit(lr: dict[str, Any]) -> None:
            lr["source"] = "\x1b]0;pwned\x07/x.yaml"
            lr["history"][0]["layer"] = "\x1b[2J"

        forge_lr(path, path, edit)
        capsys.readouterr()
        assert main(["audit", "explain", str(path), "lr", "--role", "critic"]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out
        assert "\x07" not in out
        assert "\\x1b]0;pwned\\x07/x.yaml" in out
        assert "\\x1b[2J" in out


class TestDiffFiles:
    """``audit diff`` says when a role file's bytes changed, even when no value did."""

    def test_edited_role_file(
        self,
        recorded: tuple[Path, list[str]],
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A comment added to the role file: no value changed, its sha256 did."""
        run, argv = recorded
        role_file = Path(argv[argv.index("--megatron-config-path") + 1])
        role_file.write_text(role_file.read_text() + "# a comment\n")
        assert main(["audit", "-o", str(tmp_path / "after"), "--", *argv]) == 0
        before, after = load_audit(run), load_audit(tmp_path / "after")
        [change] = diff_files(before, after)
        assert change == FileChange(
            str(role_file), before.files[str(role_file)], after.files[str(role_file)]
        )
        capsys.readouterr()
        assert main(["audit", "diff", str(run), str(tmp_path / "after")]) == 0
        out, err = capsys.readouterr()
        assert f"role file {role_file}: sha256 {change.before} -> {change.after}" in out
        assert "no change between" in err
        assert "1 file with other sha256" in err
        assert main(["audit", "diff", "--json", str(run), str(tmp_path / "after")]) == 0
        assert json.loads(capsys.readouterr().out) == [
            {
                "role": None,
                "key": None,
                "kind": "file",
                "file": str(role_file),
                "before": change.before,
                "after": change.after,
            }
        ]

    def test_same_files(self, recorded: tuple[Path, list[str]]) -> None:
        """A record compared with itself has no file change."""
        assert diff_files(load_audit(recorded[0]), load_audit(recorded[0])) == []


def test_relaunch_a_role_of_its_own_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A role resolved from another command line: a note names it, --role prints its own."""
    first = ["--rollout-batch-size", "8", "--seed", "1"]
    second = ["--rollout-batch-size", "8", "--seed", "2"]
    record = audit(
        {
            "actor": resolve_roles(PARSER, first)["actor"],
            "critic": resolve_roles(PARSER, second)["critic"],
        }
    )
    (tmp_path / "r.json").write_text(json.dumps(record))
    assert main(["audit", "relaunch", str(tmp_path / "r.json")]) == 0
    out, err = capsys.readouterr()
    assert shlex.split(out) == first
    assert (
        "note: role critic was resolved from another command line: --role critic prints it" in err
    )
    assert main(["audit", "relaunch", "--role", "critic", str(tmp_path / "r.json")]) == 0
    assert shlex.split(capsys.readouterr().out) == second
    assert main(["audit", "relaunch", "--role", "critc", str(tmp_path / "r.json")]) == 2
    assert "unknown role 'critc'; did you mean 'critic'?" in capsys.readouterr().err


class TestOutputIsNotAnInput:
    """``audit -o`` never writes the record over a file the command read."""

    @pytest.mark.parametrize("which", ["key", "link to the key", "role file"])
    def test_refused_and_kept(
        self,
        tmp_path: Path,
        fixtures_dir: Path,
        capsys: pytest.CaptureFixture[str],
        which: str,
    ) -> None:
        """The key file (or a link to it) and the role file stay as they were: exit 2."""
        role_file = tmp_path / "roles.yaml"
        shutil.copy(fixtures_dir / "slime_ppo_megatron.yaml", role_file)
        key_file = tmp_path / "key"
        key_file.write_bytes(b"the only copy of the key\n")
        (tmp_path / "link").symlink_to(key_file)
        output = {"key": key_file, "link to the key": tmp_path / "link", "role file": role_file}
        before = {path: path.read_bytes() for path in (key_file, role_file)}
        argv = _argv(fixtures_dir, role_file)
        command = ["audit", "-o", str(output[which]), "--key-file", str(key_file), "--", *argv]
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "which this command read" in err
        assert "nothing was written" in err
        assert {path: path.read_bytes() for path in before} == before
        assert SECRET not in err
        assert main([*command[:2], str(tmp_path / "new.json"), *command[3:]]) == 0


FORGED = "\x1b]0;pwned\x07\nOK forged line\r\u202e"


def _forge(path: Path, where: str) -> None:
    """Put `FORGED` in a record's `where` (a role or key name, an object's repr, a file's path,
    an enum's class), its fingerprint recomputed as a forger would."""
    from layerconf.audits import record as record_module

    data = json.loads(path.read_text())
    roles = data["roles"]
    if where == "role":
        roles["critic" + FORGED] = roles.pop("critic")
    elif where == "key":
        roles["critic"]["settings"]["lr" + FORGED] = roles["critic"]["settings"].pop("lr")
    elif where == "object":
        value = {"$type": "object", "class": "x.Y", "repr": "Y" + FORGED}
        roles["critic"]["settings"]["lr"]["value"] = value
    elif where == "file":
        data["files"]["roles" + FORGED + ".yaml"] = "0" * 64
    elif where == "layer":
        roles["critic"]["settings"]["lr"]["layer"] = "cli" + FORGED
    else:
        value = {"$type": "enum", "class": "x.Y" + FORGED, "name": "n"}
        roles["critic"]["settings"]["lr"]["value"] = value
    data["fingerprint"] = record_module._fingerprint(roles)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("where", ["role", "key", "object", "file", "enum", "layer"])
def test_a_forged_record_cannot_forge_output_lines(
    recorded: tuple[Path, list[str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    """The text of a record from anywhere reaches no output as a control character or a line
    of its own: explain, replay, diff (their headings, titles, file lines and errors too),
    as text, JSON or YAML (its comments too)."""
    record = recorded[0]
    forged = tmp_path / "forged.json"
    shutil.copy(record, forged)
    _forge(forged, where)
    capsys.readouterr()
    for command in (
        ["explain", str(forged), "lr*"],
        ["explain", str(forged), "lr", "--role", "critc"],
        ["replay", str(forged), "--changed"],
        ["replay", str(forged), "--role", "actor"],
        ["replay", str(forged), "--yaml"],
        ["replay", str(forged), "--json"],
        ["explain", str(forged), "lr*", "--json"],
        ["diff", str(record), str(forged)],
        ["diff", str(record), str(forged), "--json"],
    ):
        main(["audit", *command])
        out, err = capsys.readouterr()
        for text in (out, err):
            assert "\x1b" not in text
            assert "\r" not in text
            assert "\u202e" not in text  # (a bidi override: the text after it shown reversed)
            assert "\nOK forged line" not in text


def test_changes_and_opaque_values_print_on_one_line() -> None:
    """`str()` of a change and `repr()` of an opaque value: escaped as a str's repr is."""
    from layerconf.audits import AuditChange, OpaqueValue

    opaque = OpaqueValue("x.Y", "Y" + FORGED)
    assert repr(opaque) == "Y\\x1b]0;pwned\\x07\\nOK forged line\\r\\u202e"
    assert opaque.text == "Y" + FORGED  # what the record holds, and encodes back
    change = AuditChange("r" + FORGED, "k", "changed", 1, opaque)
    assert str(change).isprintable()
    assert str(FileChange("f" + FORGED, None, "0" * 64)).isprintable()


class TestAMissingRecord:
    """A record that is not there: where it was looked for and what writes one, on one line."""

    @pytest.mark.parametrize("command", [["explain", "{}", "lr"], ["replay", "{}"]])
    def test_a_path_that_is_not_there(
        self,
        command: list[str],
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "run").mkdir()
        for path, expected in [
            ("nope.json", "nope.json: no such audit record (check the path; a relative path"),
            ("run", "run/layerconf-audit.json: no such audit record (the directory run holds"),
            ("a\x1b[2J\nOK", "a\\x1b[2J\\nOK: no such audit record"),
        ]:
            assert main(["audit", *(part.format(path) for part in command)]) == 1
            err = capsys.readouterr().err
            assert expected in err
            assert "layerconf audit -o FILE" in err
            assert str(tmp_path) in err  # (the current directory, named)
            assert err.count("\n") == 1


def test_replay_yaml_comment_cannot_add_a_line(
    recorded: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A forged record's layer name holding a line break: ``replay --yaml`` wrote it raw in
    the origin's comment, so that the text after it became a YAML line of its own, a value
    the record does not hold (``seed: 999``). Now the comment is one line, escaped."""
    import yaml

    forged = tmp_path / "forged.json"
    forge_lr(recorded[0], forged, lambda lr: lr.update(layer="cli\n  seed: 999 #\x1b[2J"))
    capsys.readouterr()
    assert main(["audit", "replay", str(forged), "--role", "critic", "--yaml"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "seed" not in yaml.safe_load(out)["critic"]
    assert "# cli\\n  seed: 999 #\\x1b[2J" in out


@pytest.mark.parametrize(
    "value",
    [
        "a\u202eb",
        "a\x9bb",
        "a\u2028b",
        "a\x85b",
        "a\U000e0041b",
        "a\udcffb",
        "l1\nl2\u202e\U000e0041",
        {"k\u202e": ["x\u200by"]},
        "é ü 日本",
    ],
)
def test_json_and_yaml_values_are_printable_and_read_back(value: object) -> None:
    """A character a terminal acts on (a bidi override, a C1 control, a line separator) is
    escaped in --json and --yaml output, which still read back as the value; printable
    text outside ASCII stays as written."""
    import yaml

    from layerconf.cli.render import json_text, yaml_flow

    shown = yaml_flow(value)
    assert shown.isprintable()
    assert yaml.safe_load(shown) == value
    text = json_text(value)
    assert text.rstrip("\n").replace("\n", "").isprintable()
    assert json.loads(text) == value
    if value == "é ü 日本":
        assert shown == value
        assert text == f'"{value}"\n'


def test_diff_of_a_hand_made_record_redacts_inside_sets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A URL's password in a record of someone else's is not printed by audit diff, explain
    or replay: in a set or frozenset (in a tuple or a list it never was), nor in a value
    shown as the record's text (an object's repr, a tag unknown, a scrubbed value)."""
    from layerconf import Layer, LayerStack
    from layerconf.audits.fingerprint import fingerprint

    data = audit({"r": LayerStack([Layer.from_mapping("cli", {"x": 1})]).resolve()})
    url = "https://me:passw0rd-123@host/x"
    data["roles"]["r"]["settings"]["x"]["value"] = [
        {"$type": "frozenset", "items": [url, {"$type": "tuple", "items": [url]}]},
        {"$type": "set", "items": [url]},
    ]
    for name, value in {
        "obj": {"$type": "object", "class": "m.C", "repr": f"C({url})"},
        "odd": {"$type": "unknown", "url": url},  # shown as its JSON
        "bad": {"$type": "frozenset", "items": [{"$type": "set", "items": [url]}]},
        "marked": {"$type": "scrubbed", "shown": url, "digest": "0" * 64, "keyed": False},
    }.items():
        data["roles"]["r"]["settings"][name] = {"value": value}
    data["fingerprint"] = fingerprint(data["roles"])
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(data))
    other = tmp_path / "other.json"
    other.write_text(json.dumps(audit({"r": LayerStack([]).resolve()})))
    for json_flag in ([], ["--json"]):
        assert main(["audit", "diff", *json_flag, str(path), str(other)]) == 0
        out, err = capsys.readouterr()
        assert "passw0rd" not in out + err
        assert "me:<redacted>@host" in out
    for command in (["explain", str(path), "obj"], ["explain", "--json", str(path), "odd"]):
        assert main(["audit", *command]) == 0
        out, err = capsys.readouterr()
        assert "passw0rd" not in out + err
        assert "me:<redacted>@host" in out
    assert main(["audit", "replay", str(path)]) == 1  # (marked: a scrubbed value)
    out, err = capsys.readouterr()
    assert "passw0rd" not in out + err
