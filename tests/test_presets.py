"""Presets: the contract, the plain preset, and a user's own trainer with three roles."""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType

import attrs
import pytest

import layerconf
import layerconf.sources
from layerconf import (
    PLAIN,
    SLIME,
    ConfigError,
    Layer,
    LayerconfWarning,
    Preset,
    RuleSet,
    explain,
    notices,
    resolve_roles,
)
from layerconf.presets import PresetError, RoleFileFormat, default_rules, role_file_schema

OWN = Path(__file__).resolve().parent.parent / "examples" / "own_trainer"


@pytest.fixture(scope="module")
def trainer() -> ModuleType:
    """examples/own_trainer/trainer.py, imported as its user would."""
    spec = importlib.util.spec_from_file_location("own_trainer", OWN / "trainer.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["own_trainer"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def in_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(OWN)


def small_parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser()
    made.add_argument("--lr", type=float, default=1e-3)
    made.add_argument("--seed", type=int, default=0)
    return made


class TestContract:
    """A Preset is checked when made, and builds its rules once per parser."""

    @pytest.mark.parametrize(
        ("roles", "error"),
        [((), ValueError), (("a", "a"), ValueError), ("actor", TypeError), (("",), ValueError)],
    )
    def test_roles_are_checked(self, roles: object, error: type[Exception]) -> None:
        with pytest.raises(error):
            Preset("x", roles=roles)  # type: ignore[arg-type]

    def test_unknown_tokens_is_checked(self) -> None:
        with pytest.raises(ValueError, match="unknown_tokens"):
            Preset("x", roles=("a",), unknown_tokens="ignore")  # type: ignore[arg-type]

    def test_default_rules_know_nothing_of_slime(self) -> None:
        """A preset of one's own gets the role file checks, never slime's."""
        names = Preset("x", roles=("a",)).rules_for(small_parser()).names
        assert names == ("unknown-keys", "type-coercion", "unexpanded-text")
        ignoring = Preset("x", roles=("a",), ignored_keys={"gpus": "--gpus"})
        assert ignoring.rules_for(small_parser()).names[0] == "ignored-keys"

    def test_run_wide_keys_are_declared(self) -> None:
        """A preset's run-wide keys become its run-wide-keys rule, before everything else."""
        own = Preset("x", roles=("a",), run_wide_keys={"lr": "--lr"})
        rules = own.rules_for(small_parser())
        assert rules.names[0] == "run-wide-keys"
        assert dict(rules["run-wide-keys"].keys) == {"lr": "--lr"}  # type: ignore[attr-defined]

    def test_slime_is_a_preset_like_any_other(self) -> None:
        assert isinstance(SLIME, Preset)
        assert SLIME.rules_for(small_parser()).names == (
            "run-wide-keys",
            "ignored-keys",
            "unknown-keys",
            "slime-parity",
            "type-coercion",
            "unexpanded-text",
            "ppo-scope",
            "critic-defaults",
            "topology-guard",
            "distinct-across-roles",
        )


class TestPlain:
    """PLAIN: the command line alone, one role, no role file, nothing of slime's."""

    def test_one_role(self) -> None:
        roles = resolve_roles(small_parser(), ["--lr", "0.5"], preset=PLAIN)
        assert list(roles) == ["main"]
        assert explain(roles["main"], "lr").origin.where == "cli argv[0] '--lr'"

    def test_an_unknown_flag_is_an_error(self) -> None:
        """As parse_args would have it, with a did-you-mean; nothing is passed on to SGLang."""
        with pytest.raises(ConfigError) as caught:
            resolve_roles(small_parser(), ["--sed", "1", "--extra"], preset=PLAIN)
        assert [str(p) for p in caught.value.problems] == [
            "argv[0]: error: '--sed 1' is not an argument of this parser (did you mean '--seed'?)",
            "argv[2]: error: '--extra' is not an argument of this parser (check the spelling in --help)",
        ]
        assert "SGLang" not in str(caught.value)

    def test_a_close_flag_gets_a_did_you_mean(self) -> None:
        made = small_parser()
        made.add_argument("--learning-rate-warmup", type=int, default=0)
        with pytest.raises(ConfigError, match="did you mean '--learning-rate-warmup'"):
            resolve_roles(made, ["--learning-rate-warmpu", "3"], preset=PLAIN)

    def test_passthrough_prefixes_are_notes(self) -> None:
        preset = attrs.evolve(PLAIN, passthrough=("--vllm-",), passthrough_hint="vLLM takes it")
        roles = resolve_roles(small_parser(), ["--vllm-x", "1"], preset=preset)
        [note] = notices(roles["main"])
        assert (note.severity, note.hint) == ("info", "vLLM takes it")

    def test_a_passthrough_flag_is_one_flag(self) -> None:
        """An entry that does not end in '-' names one flag (with its value attached too),
        not every flag it begins: what only begins like it is the parser's unknown token."""
        preset = attrs.evolve(PLAIN, passthrough=("--vllm-", "--backend"))
        roles = resolve_roles(small_parser(), ["--backend", "x", "--backend=y"], preset=preset)
        assert [note.severity for note in notices(roles["main"])] == ["info", "info"]
        with pytest.raises(ConfigError, match="'--backend-x 1' is not an argument") as caught:
            resolve_roles(small_parser(), ["--backend-x", "1"], preset=preset)
        assert "declared to take" not in str(caught.value)


class TestOwnTrainer:
    """examples/own_trainer: three roles, a `roles:` file, and one rule of the user's own."""

    def test_three_roles(self, trainer: ModuleType, in_own: None) -> None:
        with pytest.warns(LayerconfWarning, match="reward model is frozen"):
            roles = resolve_roles(
                trainer.get_parser(),
                ["--lr", "3e-6", "--roles-file", "roles.yaml"],
                preset=trainer.PRESET,
            )
        assert list(roles) == ["actor", "critic", "reward"]
        assert [roles[r].lr for r in roles] == [3e-6, 1e-5, 0.1]
        assert [roles[r].model for r in roles] == ["small", "large", "large"]
        assert [roles[r].frozen for r in roles] == [False, False, True]

    def test_its_rule_explains_itself(self, trainer: ModuleType, in_own: None) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LayerconfWarning)
            roles = resolve_roles(
                trainer.get_parser(), ["--roles-file", "roles.yaml"], preset=trainer.PRESET
            )
        assert str(explain(roles["reward"], "frozen")) == (
            "frozen = True  from rule:reward-is-frozen (role reward); shadows False from default"
        )
        [warning] = [p for p in notices(roles["reward"]) if p.severity == "warning"]
        assert str(warning) == (
            "roles.yaml:9:11: warning: the reward model is frozen: its 'lr' is never used "
            "(remove lr from the reward entry)"
        )
        assert warning.rule == "reward-is-frozen"

    def test_the_warning_points_at_the_caller(self, trainer: ModuleType, in_own: None) -> None:
        """A warning names the line that called resolve_roles, never layerconf's own."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            resolve_roles(
                trainer.get_parser(), ["--roles-file", "roles.yaml"], preset=trainer.PRESET
            )
        [warning] = caught
        assert warning.filename == __file__

    def test_its_role_file_is_checked(self, trainer: ModuleType, tmp_path: Path) -> None:
        """Its role file has its own top key; unknown keys and bad values are errors."""
        path = tmp_path / "bad.yaml"
        path.write_text("megatron:\n  - role: critic\n    overrides: {lrr: 1}\n")
        with pytest.raises(ConfigError) as caught:
            resolve_roles(trainer.get_parser(), ["--roles-file", str(path)], preset=trainer.PRESET)
        messages = [p.message for p in caught.value.problems]
        assert messages[0] == "unknown top-level key 'megatron'"
        path.write_text("roles:\n  - role: critic\n    overrides: {lrr: 1, batch_size: big}\n")
        with pytest.raises(ConfigError) as caught:
            resolve_roles(trainer.get_parser(), ["--roles-file", str(path)], preset=trainer.PRESET)
        assert [(p.key, p.rule) for p in caught.value.problems] == [
            ("lrr", "unknown-keys"),
            ("batch_size", "type-coercion"),
        ]

    def test_its_schema(self, trainer: ModuleType) -> None:
        schema = role_file_schema(trainer.get_parser(), preset=trainer.PRESET)
        assert schema["required"] == ["roles"]
        assert schema["$defs"]["entry"]["properties"]["role"]["enum"] == [
            "actor",
            "critic",
            "reward",
        ]
        assert "kl_coef" not in schema["$defs"]["overrides"]["anyOf"][0]["properties"]
        assert "--roles-file" in schema["description"]

    def test_the_schema_names_the_option_as_the_parser_spells_it(self) -> None:
        """A dest's option is not always its name with dashes: -c/--config for roles_file."""
        made = small_parser()
        made.add_argument("-c", "--config", dest="roles_file")
        preset = Preset("mine", roles=("a",), config_dest="roles_file")
        schema = role_file_schema(made, preset=preset)
        assert schema["description"].endswith("(mine's --config).")

    def test_a_preset_with_its_own_rules(self) -> None:
        """rules= replaces the standard rules; default_rules is there to start from."""
        preset = Preset(
            "x",
            roles=("a", "b"),
            config_dest="roles",
            role_file=RoleFileFormat("roles"),
            rules=lambda parser: RuleSet([]),
        )
        assert preset.rules_for(small_parser()).names == ()
        assert default_rules(preset, small_parser()).names == (
            "unknown-keys",
            "type-coercion",
            "unexpanded-text",
        )


def role_parser() -> argparse.ArgumentParser:
    made = small_parser()
    made.add_argument("--roles-file")
    return made


def _boom(parser: argparse.ArgumentParser) -> RuleSet:
    raise RuntimeError("boom in rules")


USERS_PRESETS = """\
import argparse
from layerconf import Preset, rule
from layerconf.presets import RoleFileFormat

def get_parser():
    made = argparse.ArgumentParser()
    made.add_argument("--lr", type=float, default=1e-3)
    made.add_argument("--roles-file")
    return made

def _boom(parser):
    raise RuntimeError("boom in rules")

BOOM = Preset("boom", roles=("a", "b"), rules=_boom)

@rule("resolved")
def raises(context):
    raise RuntimeError("boom in a rule")

RAISES = Preset("raises", roles=("a",), rules=lambda parser: [raises])
TYPO = Preset("typo", roles=("a", "b"), config_dest="role_file", role_file=RoleFileFormat("roles"))
ENV = Preset("env-layer", roles=("a",), config_dest="roles_file", layer="env")
"""


def layerconf_command(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "layerconf", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


class TestPresetMistakes:
    """A preset that cannot resolve with a parser says what to change, never crashes inside."""

    @pytest.mark.parametrize(
        ("rules", "message"),
        [
            (_boom, "preset 'x': its rules(parser) raised RuntimeError: boom in rules"),
            (
                lambda parser: 5,
                "preset 'x': its rules(parser) returned the int 5, not a RuleSet or rules",
            ),
            (
                lambda parser: None,
                "preset 'x': its rules(parser) returned None, not a RuleSet or rules",
            ),
        ],
    )
    def test_rules_that_raise_or_return_junk(self, rules: object, message: str) -> None:
        preset = Preset("x", roles=("a",), rules=rules)  # type: ignore[arg-type]
        with pytest.raises(layerconf.RuleError) as caught:
            resolve_roles(small_parser(), [], preset=preset)
        assert str(caught.value) == message

    @pytest.mark.parametrize("rules", [[], RuleSet()])
    def test_rules_that_are_not_a_callable(self, rules: object) -> None:
        """Rules given as they are, not as what builds them for a parser: said where the preset
        is made (a list failed at resolution with "unhashable type: 'list'", which the command
        called a bug in layerconf)."""
        with pytest.raises(TypeError) as caught:
            Preset("x", roles=("a",), rules=rules)  # type: ignore[arg-type]
        assert str(caught.value).startswith(
            "Preset() takes rules as a callable that builds the rules for a parser "
            "(lambda parser: [...]) or None (got a"
        )

    def test_a_role_file_dest_the_parser_does_not_have(self) -> None:
        """The role file would never be read: every role would silently be the command line."""
        preset = Preset("x", roles=("a", "b"), config_dest="role_file")
        with pytest.raises(PresetError) as caught:
            resolve_roles(role_parser(), ["--roles-file", "r.yaml"], preset=preset)
        assert str(caught.value) == (
            "preset 'x' reads its role file from the dest 'role_file', which this parser does "
            "not have; did you mean 'roles_file'?"
        )
        assert isinstance(caught.value, ValueError)

    def test_slimes_preset_with_a_parser_of_another_trainer(self) -> None:
        """resolve_roles defaults to slime's preset: a parser without its dest is told of PLAIN."""
        with pytest.raises(PresetError) as caught:
            resolve_roles(small_parser(), [])
        assert str(caught.value) == (
            "preset 'slime' reads its role file from the dest 'megatron_config_path', which this "
            "parser does not have; use the preset of this parser's trainer (plain, PLAIN in "
            "Python: its command line alone, one role)"
        )

    @pytest.mark.parametrize("layer", ["cli", "default", ""])
    def test_a_role_layer_named_like_the_command_lines(self, layer: str) -> None:
        with pytest.raises(ValueError, match="layer"):
            Preset("x", roles=("a",), layer=layer)

    def test_a_source_named_like_another_layer(self) -> None:
        preset = Preset("x", roles=("a",), config_dest="roles_file", layer="env")
        env = layerconf.EnvSource(prefix="T_", environ={})
        with pytest.raises(PresetError) as caught:
            resolve_roles(role_parser(), [], preset=preset, sources=[env])
        assert str(caught.value) == (
            "two layers would be named 'env': the source EnvSource and the preset's role layer; "
            "give one of them another name"
        )
        site = layerconf.sources.MappingSource("cli", {"lr": 1})
        with pytest.raises(PresetError, match="'cli': the source MappingSource and the command"):
            resolve_roles(role_parser(), [], preset=PLAIN, sources=[site])

    @pytest.mark.parametrize(
        ("name", "taken"),
        [
            ("runtime", "the values assigned after resolution"),
            ("rule:frozen", "the values rules set (rule:<name>)"),
        ],
    )
    def test_a_layer_named_like_what_explain_names_otherwise(self, name: str, taken: str) -> None:
        """A role layer or a source named 'runtime' read as a write after resolution in every
        output ('from runtime roles.yaml:7:18'), one named 'rule:...' as a rule's value."""
        with pytest.raises(ValueError, match="cannot be named") as caught:
            Preset("x", roles=("a",), layer=name)
        assert str(caught.value) == (
            f"a preset's role layer cannot be named {name!r}: explain and audit records name "
            f"so {taken}"
        )
        site = layerconf.sources.MappingSource(name, {"lr": 1})
        with pytest.raises(PresetError) as caught:
            resolve_roles(role_parser(), [], preset=PLAIN, sources=[site])
        assert str(caught.value) == (
            f"the source MappingSource cannot be named {name!r}: explain and audit records "
            f"name so {taken}"
        )

    def test_a_source_that_returns_no_reading(self) -> None:
        class Junk:
            name = "junk"

            def read(self, parser: argparse.ArgumentParser) -> object:
                return {"lr": 1}

        with pytest.raises(TypeError, match=r"source 'junk': read\(parser\) returned the dict"):
            resolve_roles(small_parser(), [], preset=PLAIN, sources=[Junk()])  # type: ignore[list-item]

    def test_a_reading_that_holds_junk(self) -> None:
        """A Reading is checked where it is made: a problem given as text failed inside the
        resolution ("'str' object has no attribute 'source'"), a mapping as the layer with
        "a LayerStack holds Layer objects", naming no source."""
        layer = Layer.from_mapping("site", {"lr": 1})
        with pytest.raises(TypeError, match=r"Reading\(\) takes problems as Problem records"):
            layerconf.Reading(layer, problems=["lr is odd"])  # type: ignore[list-item]
        with pytest.raises(TypeError, match=r"Reading\(\) takes layer as a Layer or None"):
            layerconf.Reading({"lr": 1})  # type: ignore[arg-type]

    def test_a_source_whose_layer_is_named_otherwise(self) -> None:
        """The layer takes the source's name: the names checked above are the sources'."""

        class Site:
            name = "site"

            def read(self, parser: argparse.ArgumentParser) -> layerconf.Reading:
                return layerconf.Reading(Layer.from_mapping("role-config", {"lr": 1}))

        with pytest.raises(PresetError) as caught:
            resolve_roles(small_parser(), [], preset=PLAIN, sources=[Site()])
        assert str(caught.value) == (
            "source 'site': read(parser) returned a layer named 'role-config'; a source's "
            "layer takes its name, 'site'"
        )

    @pytest.mark.parametrize(
        ("field", "value", "match"),
        [("passthrough", ("",), "empty prefix"), ("roles", ("a\x1b[2J",), "printable")],
    )
    def test_other_fields_are_checked(self, field: str, value: object, match: str) -> None:
        """An empty prefix would pass every token on; a role name is printed in every output."""
        with pytest.raises(ValueError, match=match):
            Preset("x", **{"roles": ("a",), field: value})  # type: ignore[arg-type]

    @pytest.mark.parametrize("top_key", ["", 5, None])
    def test_a_role_file_format_without_a_top_key(self, top_key: object) -> None:
        """RoleFileFormat(5) failed when the file was read, with 'int has no len()'."""
        with pytest.raises((TypeError, ValueError), match="top_key"):
            RoleFileFormat(top_key)  # type: ignore[arg-type]

    def test_the_command_says_so_in_one_line(self, tmp_path: Path) -> None:
        (tmp_path / "users.py").write_text(USERS_PRESETS)
        for spec, message in [
            ("BOOM", "preset 'boom': its rules(parser) raised RuntimeError: boom in rules"),
            ("TYPO", "preset 'typo' reads its role file from the dest 'role_file'"),
            ("ENV", "two layers would be named 'env': the source EnvSource and the preset's"),
            ("RAISES", "rule 'raises' raised RuntimeError: boom in a rule at "),
        ]:
            result = layerconf_command(
                tmp_path,
                "check",
                "--parser",
                "users:get_parser",
                "--preset",
                f"users:{spec}",
                "--env-prefix",
                "T_",
                "--",
                "--roles-file",
                "r.yaml",
            )
            assert (result.returncode, result.stdout) == (2, ""), spec
            assert result.stderr.startswith(f"layerconf check: error: {message}"), result.stderr
            assert result.stderr.count("\n") == 1
            assert "parser raised" not in result.stderr


class TestUnknownTokens:
    """An unknown flag is reported with the values that follow it, and only those."""

    def test_a_command_line_given_as_one_string(self) -> None:
        """'--lr 1' is read character by character: '- l r   1' is not an argument."""
        with pytest.raises(TypeError, match=r"a list of tokens such as \['--lr', '1'\]"):
            resolve_roles(small_parser(), "--lr 1", preset=PLAIN)

    def test_a_stray_value_is_not_glued_to_an_earlier_flag(self) -> None:
        with pytest.raises(ConfigError) as caught:
            resolve_roles(small_parser(), ["--sed", "1", "--lr", "1", "x", "y"], preset=PLAIN)
        assert [(p.argv_index, p.message) for p in caught.value.problems] == [
            (0, "'--sed 1' is not an argument of this parser"),
            (4, "'x y' is not an argument of this parser"),
        ]

    def test_a_secret_given_elsewhere_is_not_quoted(self) -> None:
        """An unknown flag is quoted as the whole command line may be shown: a secret's text
        found anywhere in it (the value of a secret flag) is replaced in the quote too."""
        parser = small_parser()
        parser.add_argument("--wandb-key")
        argv = ["--wandb-key", "s3cr3t-key-value", "--sed", "run-s3cr3t-key-value"]
        with pytest.raises(ConfigError) as caught:
            resolve_roles(parser, argv, preset=PLAIN)
        assert [(p.argv_index, p.message) for p in caught.value.problems] == [
            (2, "'--sed run-<redacted>' is not an argument of this parser"),
        ]
        assert "s3cr3t" not in str(caught.value)

    def test_a_flag_of_another_prefix_is_not_a_secret_flags_value(self) -> None:
        """'+sglang-api-key' is an option to a parser of '-+' options, not the optional value
        of the secret flag before it: its own value is the secret quoted as redacted."""
        parser = argparse.ArgumentParser(prefix_chars="-+")
        parser.add_argument("--wandb-key", nargs="?")
        argv = ["--wandb-key", "+sglang-api-key", "hunter2xx"]
        with pytest.raises(ConfigError) as caught:
            resolve_roles(parser, argv, preset=PLAIN)
        [problem] = caught.value.problems
        assert problem.message == "'+sglang-api-key <redacted>' is not an argument of this parser"
        assert "hunter2xx" not in str(caught.value)

    def test_groups_are_found_in_argv_order(self) -> None:
        """Each unknown token is looked for after the previous one; once one is not in argv
        (read from an @file), those after it are not looked for: they follow it."""
        from layerconf.presets.resolve import _groups

        argv = ("--a", "x", "--lr", "1", "--a", "y", "--b")
        assert _groups(argv, ["--a", "x", "--a", "y"]) == [(0, ["--a", "x"]), (4, ["--a", "y"])]
        assert _groups(argv, ["--a", "--zz", "--b", "z"]) == [
            (0, ["--a"]),
            (None, ["--zz"]),
            (None, ["--b", "z"]),
        ]


class TestRoleFileHints:
    """A role file's hints name the preset's own roles, never slime's."""

    @pytest.mark.parametrize(
        ("entries", "hint"),
        [
            (
                "  policy:\n    overrides: {lr: 1}\n",
                "write one list item per role: '- role: policy' with 'overrides:' under it, "
                "instead of 'policy:'",
            ),
            (
                "  role: value\n  overrides: {lr: 1}\n",
                "make it a list: write '- ' before the entry's first field, e.g. '  - role: policy'",
            ),
            (
                "  something: 1\n",
                "write each entry as a list item: '- role: policy' with 'overrides:' under it",
            ),
        ],
    )
    def test_not_a_list(self, tmp_path: Path, entries: str, hint: str) -> None:
        path = tmp_path / "roles.yaml"
        path.write_text("roles:\n" + entries)
        preset = Preset(
            "x", roles=("policy", "value"), config_dest="roles_file", role_file=RoleFileFormat()
        )
        with pytest.raises(ConfigError) as caught:
            resolve_roles(role_parser(), ["--roles-file", str(path)], preset=preset)
        [problem] = caught.value.problems
        assert problem.hint == hint
        assert "actor" not in str(problem)
