"""A secret flag whose dest is no secret's name (``--hf-token`` with dest ``tok``).

The command line hides its value by the flag; every other output must too: the parser's
defaults layer says which keys its secret flags set (`Layer.secret_keys`), and every formatter
of that resolution asks its policy with those keys named (`layerconf.core.held_secrets.
policy_of`). tests/test_secret_matrix.py runs such a flag through every output; these are the
ways in the matrix does not take (a default, a sub-command, the environment, a role file's
value a rule quotes, a replay given its secrets back, pickles) and the other direction.
"""

from __future__ import annotations

import argparse
import json
import pickle
import warnings
from pathlib import Path

import pytest

from layerconf import (
    EnvSource,
    LayerconfWarning,
    Preset,
    audit,
    explain,
    explain_all,
    load_audit,
    load_profile,
    parse_args,
    provenance_of,
    resolve_roles,
    write_audit,
)
from layerconf.core.secrets import SECRETS
from layerconf.exceptions import ConfigError
from layerconf.presets import RoleFileFormat, default_rules

S = "Zq8Wv4Lm"  # a secret's distinctive text
SHORT = "Zq8"  # shorter than `min_scrub_length`: hidden only as a secret key's value


def trainer(default: str | None = None, token_type: type = str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="train")
    parser.add_argument("--roles-file")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--hf-token", dest="tok", default=default, type=token_type)
    parser.add_argument("--name", default="run")
    return parser


PRESET = Preset(
    "two",
    roles=("actor", "critic"),
    config_dest="roles_file",
    role_file=RoleFileFormat("roles"),
    rules=lambda parser: default_rules(PRESET, parser),
)


def shown(args: argparse.Namespace, *keys: str) -> str:
    """Every way the API shows `args`: repr, its provenance's, explain (str, repr, JSON, a
    pickled copy's), explain_all, an audit record."""
    texts = [repr(args), repr(provenance_of(args)), json.dumps(audit({"main": args}))]
    for key in keys:
        setting = explain(args, key)
        texts += [str(setting), repr(setting), json.dumps(setting.to_dict(), default=repr)]
        texts.append(str(pickle.loads(pickle.dumps(setting))))
    texts += map(repr, explain_all(args).values())
    return "\n".join(texts)


@pytest.mark.parametrize("secret", [f"hf_{S}", SHORT])
def test_its_value_is_hidden_everywhere(secret: str) -> None:
    args = parse_args(trainer(), ["--hf-token", secret])
    assert args.tok == secret
    assert explain(args, "tok").value == secret  # (hidden where shown, not in the answer)
    text = shown(args, "tok", "name")
    assert secret not in text
    assert "tok='<redacted>'" in repr(args)
    assert explain(args, "tok").to_dict()["value"] == "<redacted>"


def test_its_text_is_scrubbed_from_another_value() -> None:
    args = parse_args(trainer(), ["--hf-token", f"hf_{S}", "--name", f"run-hf_{S}"])
    assert S not in shown(args, "tok", "name")
    assert str(explain(args, "name")).startswith("name = 'run-<redacted>'")


def test_a_default_it_holds() -> None:
    """A default read from the environment (``default=os.environ.get(...)``) is as secret."""
    args = parse_args(trainer(default=f"hf_{S}"), [])
    assert S not in shown(args, "tok")
    args = parse_args(trainer(default=SHORT), ["--hf-token", f"hf_{S}"])
    assert S not in shown(args, "tok")
    assert f"'{SHORT}'" not in shown(args, "tok")


def test_a_sub_commands_secret_flag() -> None:
    parser = argparse.ArgumentParser(prog="tool")
    login = parser.add_subparsers(dest="command").add_parser("login")
    login.add_argument("--hf-token", dest="tok")
    args = parse_args(parser, ["login", "--hf-token", SHORT])
    assert args.tok == SHORT
    assert f"'{SHORT}'" not in shown(args, "tok")


def test_a_secret_variable_of_the_environment_into_another_dest() -> None:
    """``HF_TOKEN`` read into ``name`` by an `EnvSource`'s names: that value is a secret too."""
    source = EnvSource(names={"HF_TOKEN": "name"}, environ={"HF_TOKEN": SHORT})
    roles = resolve_roles(trainer(), [], preset=PRESET, sources=[source])
    assert roles["actor"].name == SHORT
    for args in roles.values():
        assert f"'{SHORT}'" not in shown(args, "name")
    assert f'"{SHORT}"' not in json.dumps(audit(roles))


def _role_file(tmp_path: Path, line: str) -> str:
    path = tmp_path / "roles.yaml"
    path.write_text(f"roles:\n  - role: critic\n    overrides:\n      {line}\n")
    return str(path)


def test_a_role_files_value_and_what_rules_say_of_it(tmp_path: Path) -> None:
    """The role file sets the dest by its name: a secret there too, in the roles' outputs and
    in what a rule says of it (shell syntax it holds; a value of the wrong type)."""
    path = _role_file(tmp_path, f'tok: "$HOME-{S}"')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LayerconfWarning)
        roles = resolve_roles(trainer(), ["--roles-file", path], preset=PRESET)
    assert roles["critic"].tok == f"$HOME-{S}"
    said = [str(warning.message) for warning in caught]
    assert any("'tok' holds shell syntax" in text for text in said)
    assert S not in "\n".join(said)
    assert S not in shown(roles["critic"], "tok")
    path = _role_file(tmp_path, f"tok: {SHORT}")
    with pytest.raises(ConfigError) as raised:
        resolve_roles(trainer(token_type=int), ["--roles-file", path], preset=PRESET)
    assert "'tok' must be an int (got <redacted>)" in str(raised.value)
    assert SHORT not in str(raised.value) + repr(raised.value)


def test_a_record_keeps_it_hidden_and_a_replay_given_it_back_too(tmp_path: Path) -> None:
    roles = resolve_roles(trainer(), ["--hf-token", SHORT], preset=PRESET)
    path = write_audit(roles, tmp_path / "run")
    text = Path(path).read_text()
    assert f'"{SHORT}"' not in text
    record = load_audit(path)
    assert record.setting("actor", "tok").value == "<redacted>"
    assert record.argv == ("--hf-token", "<redacted>")
    replayed = record.namespace("actor", secrets={"tok": SHORT})
    assert replayed.tok == SHORT
    assert f"'{SHORT}'" not in shown(replayed, "tok")
    assert f'"{SHORT}"' not in json.dumps(audit({"actor": replayed}))


def test_a_secret_named_dest_behind_another_flag_stays_hidden() -> None:
    """The other direction, as before: ``--tk`` into ``hf_token`` is a secret by its dest."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--tk", dest="hf_token")
    args = parse_args(parser, ["--tk", SHORT])
    assert f"'{SHORT}'" not in shown(args, "hf_token")
    assert provenance_of(args).inputs["argv"] == ("--tk", "<redacted>")


def test_which_dests_are_declared() -> None:
    """The dests of secret flags that the policy does not name already; never a flag that
    takes no value (its True is no secret), nor any dest of the bundled profile (each of its
    secret flags' dests is a secret's name)."""
    from layerconf.core.secrets import secret_dests

    parser = trainer()
    parser.add_argument("--wandb-key")  # a secret by its name already
    parser.add_argument("--use-auth-token", dest="auth", action="store_true")
    parser.add_argument("--api-key", dest="key", nargs="*")
    assert secret_dests(parser, SECRETS) == {"tok", "key"}
    assert secret_dests(load_profile(), SECRETS) == frozenset()
    args = parse_args(parser, ["--use-auth-token", "--lr", "1"])
    assert provenance_of(args).layers[0].secret_keys == {"tok", "key"}
    assert "auth=True" in repr(args)
    assert "lr=1.0" in repr(args)
    assert SECRETS.is_secret("tok") is False  # (the default policy itself is unchanged)


def test_the_command_never_writes_it_into_a_role_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``layerconf show --role-file`` refuses a secret the role file set, by its dest too."""
    from layerconf.cli import main

    monkeypatch.syspath_prepend(str(Path(__file__).parent.parent))
    path = _role_file(tmp_path, f"tok: {SHORT}")
    own = [
        "--parser",
        "tests.test_secret_dests:trainer",
        "--preset",
        "tests.test_secret_dests:PRESET",
    ]
    status = main(["show", "--role-file", *own, "--", "--roles-file", path])
    captured = capsys.readouterr()
    assert status == 1
    assert "'tok' holds a secret, which layerconf never writes" in captured.err
    assert SHORT not in captured.out + captured.err


def test_a_parser_changed_after_a_first_parse() -> None:
    """The option strings a policy names a secret's are kept per table of options: a flag
    added since, or given to another action (a conflict resolved), is seen."""
    parser = load_profile()
    required = ["--rollout-batch-size", "8"]
    parse_args(parser, required)
    parser.add_argument("--hf-token", dest="tok")
    args = parse_args(parser, [*required, "--hf-token", SHORT])
    assert f"tok='{SHORT}'" not in repr(args)
    assert "tok='<redacted>'" in repr(args)
    parser = argparse.ArgumentParser(conflict_handler="resolve")
    parser.add_argument("--hf-token")  # a secret by its dest
    parse_args(parser, [])
    parser.add_argument("--hf-token", dest="tok")  # the same option strings, another dest
    args = parse_args(parser, ["--hf-token", SHORT])
    assert "tok='<redacted>'" in repr(args)


def test_plural_and_numbered_names() -> None:
    """``api_keys: [...]``, ``--wandb-keys A B``, ``--hf-token-2 S`` hold secrets: on the
    command line (by the parser's action), in values, in bulk (`SecretPolicy.secret_keys`);
    ``tokens`` and a model's numbered settings (``adam_beta2``) do not."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--wandb-keys", nargs="*")
    parser.add_argument("--hf-token-2")
    parser.add_argument("--tokens", type=int)
    parser.add_argument("--adam-beta2", type=float)
    argv = ["--wandb-keys", f"a{S}", SHORT, "--hf-token-2", f"hf_{S}", "--tokens", "5"]
    args = parse_args(parser, [*argv, "--adam-beta2", "0.95"])
    assert provenance_of(args).inputs["argv"][:7] == (
        "--wandb-keys", "<redacted>", "<redacted>", "--hf-token-2", "<redacted>", "--tokens", "5"
    )  # fmt: skip
    text = shown(args, "wandb_keys", "hf_token_2")
    assert S not in text
    assert f"'{SHORT}'" not in text
    assert "tokens=5" in repr(args)
    assert "adam_beta2=0.95" in repr(args)
    keys = [f"k{n}" for n in range(100)] + ["api_keys", "HF_TOKEN_2", "tokens", "fp16"]
    assert SECRETS.secret_keys(keys) == ["api_keys", "HF_TOKEN_2"]
    from layerconf import redact

    assert redact("env", {"API_KEYS": ["a", "b"], "N": 1}) == {"API_KEYS": "<redacted>", "N": 1}
