"""slime's role-override contract (tests/fixtures/megatron-config.md), statement by statement."""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path
from typing import Any

import attrs
import pytest

from layerconf import ConfigError, LayerconfWarning, Reason, RuleSet, explain, load_profile, notices
from layerconf.presets import SLIME, resolve_roles, slime_rules
from layerconf.presets.slime import TOPOLOGY_KEYS
from layerconf.rules import TopologyGuard

# The contract's "Typical use" command line, completed with the one required argument.
TYPICAL = [
    "--advantage-estimator",
    "ppo",
    "--use-critic",
    "--tensor-model-parallel-size",
    "2",
    "--sequence-parallel",
    "--pipeline-model-parallel-size",
    "1",
    "--context-parallel-size",
    "1",
    "--expert-model-parallel-size",
    "1",
    "--expert-tensor-parallel-size",
    "1",
    "--actor-num-nodes",
    "1",
    "--actor-num-gpus-per-node",
    "8",
    "--critic-num-nodes",
    "1",
    "--critic-num-gpus-per-node",
    "8",
    "--rollout-batch-size",
    "32",
    "--lr",
    "2e-6",
]

# The contract's "Format" example.
FORMAT_EXAMPLE = """\
megatron:
  - name: default
    role: actor
    overrides:
      lr: 1e-6
      save: /path/to/actor_ckpt
  - name: default
    role: critic
    overrides:
      lr: 1e-5
      save: /path/to/critic_ckpt
"""


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return load_profile("megatron-slime")


def lr_parser(role_file_flag: str, **options: Any) -> argparse.ArgumentParser:
    """A small trainer parser: its role-file flag and --lr."""
    made = argparse.ArgumentParser(**options)
    made.add_argument(role_file_flag)
    made.add_argument("--lr", type=float, default=1e-3)
    return made


def resolve(
    parser: argparse.ArgumentParser, tmp_path: Path, yaml: str | None, *extra: str
) -> dict[str, Any]:
    argv = [*TYPICAL, *extra]
    if yaml is not None:
        path = tmp_path / "megatron_ppo.yaml"
        path.write_text(yaml)
        argv += ["--megatron-config-path", str(path)]
    return resolve_roles(parser, argv)


class TestLayers:
    """The command line is the shared baseline; role YAML overrides sit on top."""

    def test_without_the_flag_both_roles_are_the_command_line(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        """Without --megatron-config-path actor and critic both inherit the command line as it is."""
        roles = resolve(parser, tmp_path, None)
        plain, _ = parser.parse_known_args(TYPICAL)
        assert set(roles) == {"actor", "critic"}
        assert vars(roles["actor"]) == vars(plain)
        assert vars(roles["critic"]) == vars(plain)
        assert explain(roles["critic"], "lr").layer == "cli"

    def test_overrides_apply_on_top(self, parser: argparse.ArgumentParser, tmp_path: Path) -> None:
        """The format example: each role gets its lr and save; everything else is shared."""
        roles = resolve(parser, tmp_path, FORMAT_EXAMPLE)
        actor, critic = roles["actor"], roles["critic"]
        assert (actor.lr, actor.save) == (1e-6, "/path/to/actor_ckpt")
        assert (critic.lr, critic.save) == (1e-5, "/path/to/critic_ckpt")
        assert actor.tensor_model_parallel_size == critic.tensor_model_parallel_size == 2
        setting = explain(critic, "lr")
        assert (setting.layer, setting.source, setting.line, setting.column) == (
            "role-config",
            str(tmp_path / "megatron_ppo.yaml"),
            10,
            11,
        )
        assert [entry.layer for entry in setting.history] == ["role-config", "cli", "default"]
        assert setting.history[0].reason is Reason.CONVERTED

    def test_layer_names(self, parser: argparse.ArgumentParser, tmp_path: Path) -> None:
        """The layers are named default, cli and role-config."""
        roles = resolve(parser, tmp_path, FORMAT_EXAMPLE)
        assert explain(roles["actor"], "save").layer == "role-config"
        assert explain(roles["actor"], "tensor_model_parallel_size").layer == "cli"
        assert explain(roles["actor"], "seed").layer == "default"


class _Bag(dict):  # type: ignore[type-arg]
    """What a trainer's type= may make: a mapping layerconf cannot keep a private copy of."""


def _bag(text: str) -> _Bag:
    return _Bag(json.loads(text))


class TestValuesNoLayerCanHold:
    """A value no layer can keep a private copy of (a dict subclass, a list nested past
    MAX_DEPTH) is still the role's: argparse's own object, reported as 'runtime', as the
    parse's notice says, unless the role file sets the key. Before: the parser's default,
    the command line's value silently lost."""

    @pytest.fixture
    def bag_parser(self) -> argparse.ArgumentParser:
        made = argparse.ArgumentParser()
        for flag in ("--megatron-config-path", "--save", "--advantage-estimator"):
            made.add_argument(flag)
        made.add_argument("--use-critic", action="store_true")
        made.add_argument("--bag", type=_bag)
        made.add_argument("--deep", type=json.loads)
        return made

    def test_each_role_holds_argparses_object(self, bag_parser: argparse.ArgumentParser) -> None:
        deep = "[" * 150 + "]" * 150
        argv = ["--use-critic", "--advantage-estimator", "ppo", "--bag", '{"a": 1}']
        argv += ["--deep", deep]
        roles = resolve_roles(bag_parser, argv)
        plain = bag_parser.parse_args(argv)
        for namespace in roles.values():
            assert vars(namespace) == vars(plain)
            assert type(namespace.bag) is _Bag
            assert explain(namespace, "bag").layer == "runtime"
            assert explain(namespace, "deep").layer == "runtime"

    def test_the_role_file_still_wins(
        self, bag_parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        path = tmp_path / "roles.yaml"
        path.write_text("megatron:\n  - role: critic\n    overrides:\n      bag: '{\"b\": 2}'\n")
        argv = ["--use-critic", "--advantage-estimator", "ppo", "--bag", '{"a": 1}']
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LayerconfWarning)  # (slime's parity: a string)
            roles = resolve_roles(bag_parser, [*argv, "--megatron-config-path", str(path)])
        assert roles["actor"].bag == {"a": 1}
        assert roles["critic"].bag == {"b": 2}
        assert explain(roles["critic"], "bag").layer == "role-config"


class TestMissingRole:
    """A role missing from the YAML inherits the command line."""

    @pytest.mark.parametrize("present", ["actor", "critic"])
    def test_one_role_only(
        self, parser: argparse.ArgumentParser, tmp_path: Path, present: str
    ) -> None:
        """FAQ: only actor, or only critic? Yes; the missing role inherits the command line."""
        yaml = f"megatron:\n  - role: {present}\n    overrides:\n      lr: 1e-5\n"
        roles = resolve(parser, tmp_path, yaml)
        missing = "critic" if present == "actor" else "actor"
        assert roles[present].lr == 1e-5
        assert roles[missing].lr == 2e-6
        assert explain(roles[missing], "lr").layer == "cli"


class TestFormat:
    """name is optional, role required, overrides default {}, args an alias of overrides."""

    def test_args_alias(self, parser: argparse.ArgumentParser, tmp_path: Path) -> None:
        """args is the backward-compatible alias of overrides."""
        roles = resolve(
            parser, tmp_path, "megatron:\n  - role: critic\n    args:\n      lr: 1e-5\n"
        )
        assert roles["critic"].lr == 1e-5

    def test_name_is_optional_and_recorded(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        """name is a label kept in the origin; nothing depends on it."""
        roles = resolve(
            parser,
            tmp_path,
            "megatron:\n  - name: warm\n    role: critic\n    overrides: {lr: 1e-5}\n",
        )
        assert explain(roles["critic"], "lr").origin.label == "warm"

    @pytest.mark.parametrize("empty", ["{}", "null", ""])
    def test_empty_overrides_never_fall_back_to_args(
        self, parser: argparse.ArgumentParser, tmp_path: Path, empty: str
    ) -> None:
        """overrides: {} / null means no overrides."""
        roles = resolve(parser, tmp_path, f"megatron:\n  - role: critic\n    overrides: {empty}\n")
        assert roles["critic"].lr == 2e-6

    def test_role_is_required(self, parser: argparse.ArgumentParser, tmp_path: Path) -> None:
        """An entry without a role is an error at its line, listing the roles."""
        with pytest.raises(
            ConfigError, match=r"megatron_ppo.yaml:2:5: error: .*role.*'actor', 'critic'"
        ):
            resolve(parser, tmp_path, "megatron:\n  - name: x\n    overrides: {lr: 1e-5}\n")


class TestKeys:
    """Keys in overrides are argparse dest names, not flags."""

    def test_flag_is_an_error_naming_the_dest(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        """tensor-model-parallel-size is refused, saying to write tensor_model_parallel_size."""
        with pytest.raises(ConfigError) as caught:
            resolve(
                parser,
                tmp_path,
                "megatron:\n  - role: critic\n    overrides:\n      tensor-model-parallel-size: 2\n",
            )
        (problem,) = caught.value.errors
        assert problem.hint == "write tensor_model_parallel_size"
        assert (problem.line, problem.column) == (4, 7)

    def test_typo_has_a_did_you_mean_at_its_line(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        """A misspelt key is caught before launch, at its line."""
        with pytest.raises(ConfigError) as caught:
            resolve(
                parser,
                tmp_path,
                "megatron:\n  - role: critic\n    overrides:\n      lr: 1e-5\n      lr_warmup_iter: 10\n",
            )
        (problem,) = caught.value.errors
        assert problem.line == 5
        assert "did you mean 'lr_warmup_iters'?" in str(problem)

    def test_every_problem_at_once(self, parser: argparse.ArgumentParser, tmp_path: Path) -> None:
        """A file with several mistakes reports all of them."""
        yaml = "megatron:\n  - role: critic\n    overrides:\n      lr: fast\n      sav: /x\n      lr_decay_style: cosin\n"
        with pytest.raises(ConfigError) as caught:
            resolve(parser, tmp_path, yaml)
        assert [p.line for p in caught.value.errors] == [4, 5, 6]
        assert "did you mean 'cosine'" in str(caught.value)


class TestResources:
    """num_nodes / num_gpus_per_node in the YAML are ignored: resources come from the command line."""

    @pytest.mark.parametrize(
        "key", ["num_nodes", "num_gpus_per_node", "critic_num_nodes", "actor_num_gpus_per_node"]
    )
    def test_ignored_with_a_warning(
        self, parser: argparse.ArgumentParser, tmp_path: Path, key: str
    ) -> None:
        """FAQ: --actor-num-nodes or --critic-num-gpus-per-node in the YAML? No: ignored."""
        with pytest.warns(LayerconfWarning, match=f"'{key}' is ignored"):
            roles = resolve(
                parser, tmp_path, f"megatron:\n  - role: critic\n    overrides:\n      {key}: 4\n"
            )
        plain, _ = parser.parse_known_args(TYPICAL)
        assert vars(roles["critic"]).get(key) == vars(plain).get(key)
        if key in vars(plain):
            setting = explain(roles["critic"], key)
            assert setting.layer in ("cli", "default")
            assert (setting.history[0].value, setting.history[0].reason) == (4, Reason.IGNORED)


class TestTopology:
    """Actor and critic must share TP, PP, CP, EP, ETP and sequence parallel."""

    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("tensor_model_parallel_size", 4),
            ("pipeline_model_parallel_size", 2),
            ("context_parallel_size", 2),
            ("expert_model_parallel_size", 2),
            ("expert_tensor_parallel_size", 2),
            ("sequence_parallel", False),
        ],
    )
    def test_mismatch_is_an_error(
        self, parser: argparse.ArgumentParser, tmp_path: Path, key: str, value: Any
    ) -> None:
        """A different topology for one role is refused, naming both roles' values and origins."""
        yaml = f"megatron:\n  - role: critic\n    overrides:\n      {key}: {json.dumps(value)}\n"
        with pytest.raises(ConfigError) as caught:
            resolve(parser, tmp_path, yaml)
        (problem,) = caught.value.errors
        assert problem.key == key
        assert f"critic {key}={value!r}; actor " in problem.message
        assert "; actor " in problem.message
        assert " from cli argv[" in problem.message

    @pytest.mark.parametrize(
        ("key", "written"),
        [("sequence_parallel", '"true"'), ("pipeline_model_parallel_size", "1.0")],
    )
    def test_a_wrong_type_is_one_problem(
        self, parser: argparse.ArgumentParser, tmp_path: Path, key: str, written: str
    ) -> None:
        """The type error alone: the guard compares converted values, never the raw one."""
        yaml = f"megatron:\n  - role: critic\n    overrides:\n      {key}: {written}\n"
        with pytest.raises(ConfigError) as caught:
            resolve(parser, tmp_path, yaml)
        assert [p.rule for p in caught.value.problems] == ["type-coercion"]

    def test_same_topology_in_the_file_is_fine(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        """Repeating the command line's value is allowed."""
        roles = resolve(
            parser,
            tmp_path,
            "megatron:\n  - role: critic\n    overrides: {tensor_model_parallel_size: 2}\n",
        )
        assert roles["critic"].tensor_model_parallel_size == 2


class TestPpoOnly:
    """PPO only: a role file without a critic is not the intended use."""

    def test_critic_overrides_without_a_critic_warn(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        """GRPO with critic overrides: a warning; the actor's overrides still apply; the critic is returned."""
        argv = [t for t in TYPICAL if t not in ("--use-critic", "--advantage-estimator", "ppo")]
        path = tmp_path / "m.yaml"
        path.write_text(FORMAT_EXAMPLE)
        with pytest.warns(LayerconfWarning, match="the critic's overrides are unused"):
            roles = resolve_roles(parser, [*argv, "--megatron-config-path", str(path)])
        assert roles["actor"].lr == 1e-6
        assert roles["critic"].lr == 1e-5

    @pytest.mark.parametrize("flags", [["--use-critic"], ["--advantage-estimator", "ppo"]])
    def test_either_flag_means_a_critic(
        self, parser: argparse.ArgumentParser, tmp_path: Path, flags: list[str]
    ) -> None:
        """--use-critic or --advantage-estimator ppo: no warning."""
        argv = [t for t in TYPICAL if t not in ("--use-critic", "--advantage-estimator", "ppo")]
        path = tmp_path / "m.yaml"
        path.write_text(FORMAT_EXAMPLE)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            resolve_roles(parser, [*argv, *flags, "--megatron-config-path", str(path)])


class TestRunWideKeys:
    """Keys that decide the run's shape are the command line's: in a role file, an error."""

    @pytest.mark.parametrize(
        ("key", "value", "flag"),
        [
            ("use_critic", "true", "--use-critic"),
            ("advantage_estimator", "ppo", "--advantage-estimator"),
            ("megatron_config_path", "other.yaml", "--megatron-config-path"),
        ],
    )
    def test_an_error_saying_where_to_set_it(
        self, parser: argparse.ArgumentParser, tmp_path: Path, key: str, value: str, flag: str
    ) -> None:
        yaml = f"megatron:\n  - role: critic\n    overrides:\n      {key}: {value}\n"
        with pytest.raises(ConfigError) as caught:
            resolve(parser, tmp_path, yaml)
        (problem,) = caught.value.errors
        assert (problem.key, problem.line, problem.rule) == (key, 4, "run-wide-keys")
        assert "decides the whole run" in problem.message
        assert problem.hint == f"remove it and set {flag} on the command line"

    def test_declared_by_the_preset(self) -> None:
        """The preset declares them; its rules are built from the declaration."""
        assert set(SLIME.run_wide_keys) == {
            "use_critic",
            "advantage_estimator",
            "megatron_config_path",
        }
        own = attrs.evolve(SLIME, run_wide_keys={"lr": "--lr"})
        rules = own.rules_for(lr_parser("--megatron-config-path"))
        assert "lr" in rules["run-wide-keys"].keys  # type: ignore[attr-defined]

    def test_grpo_with_a_critic_entry_still_warns(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        """use_critic under the critic entry of a GRPO run does not silence the warning."""
        argv = [t for t in TYPICAL if t not in ("--use-critic", "--advantage-estimator", "ppo")]
        path = tmp_path / "m.yaml"
        path.write_text(
            "megatron:\n  - role: critic\n    overrides: {lr: 1e-5, use_critic: true}\n"
        )
        with pytest.raises(ConfigError) as caught:
            resolve_roles(parser, [*argv, "--megatron-config-path", str(path)])
        found = [(p.severity, p.rule) for p in caught.value.problems]
        assert ("error", "run-wide-keys") in found
        assert ("warning", "ppo-scope") in found


class TestCheckpointDirectories:
    """Actor and critic saving to one directory overwrite each other's checkpoints."""

    def test_a_shared_save_is_an_error(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        """slime's critic saves with args.save: without an override both write to /ckpt."""
        yaml = "megatron:\n  - role: critic\n    overrides: {lr: 1e-5}\n"
        with pytest.raises(ConfigError) as caught:
            resolve(parser, tmp_path, yaml, "--save", "/ckpt")
        (problem,) = caught.value.errors
        assert (problem.rule, problem.key, problem.argv_index) == (
            "distinct-across-roles",
            "save",
            len(TYPICAL),
        )
        assert problem.message == (
            "actor and critic share save='/ckpt' (set once, here, for both): each role writes "
            "its checkpoints there, over the other's"
        )
        assert problem.hint == (
            "give each role its own: under the critic entry of the role file write "
            "'save: /ckpt_critic'"
        )

    def test_one_directory_per_role_is_fine(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        roles = resolve(parser, tmp_path, FORMAT_EXAMPLE, "--save", "/ckpt")
        assert (roles["actor"].save, roles["critic"].save) == (
            "/path/to/actor_ckpt",
            "/path/to/critic_ckpt",
        )

    def test_the_same_directory_written_twice(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        """'/ckpt/' and '/ckpt' are one directory: the error points at the role file."""
        yaml = "megatron:\n  - role: critic\n    overrides: {save: /ckpt/}\n"
        with pytest.raises(ConfigError) as caught:
            resolve(parser, tmp_path, yaml, "--save", "/ckpt")
        (problem,) = caught.value.errors
        assert (problem.rule, problem.line) == ("distinct-across-roles", 3)

    def test_no_critic_no_conflict(self, parser: argparse.ArgumentParser, tmp_path: Path) -> None:
        """Without a critic in the run only the actor saves."""
        argv = [t for t in TYPICAL if t not in ("--use-critic", "--advantage-estimator", "ppo")]
        roles = resolve_roles(parser, [*argv, "--save", "/ckpt"])
        assert roles["critic"].save == "/ckpt"


class TestCriticDefaults:
    """slime runs the critic with its runtime defaults whenever a role file is given."""

    def test_values_and_origins(self, parser: argparse.ArgumentParser, tmp_path: Path) -> None:
        """kl_coef=0 even if the YAML said otherwise, and explain says which rule."""
        with pytest.warns(LayerconfWarning, match=r"3:17: warning: kl_coef=0.5 is ignored"):
            roles = resolve(
                parser, tmp_path, "megatron:\n  - role: critic\n    overrides: {kl_coef: 0.5}\n"
            )
        critic = roles["critic"]
        assert (critic.kl_coef, critic.use_opd, critic.custom_advantage_function_path) == (
            0,
            False,
            None,
        )
        assert critic.untie_embeddings_and_output_weights is True
        assert critic.disable_param_buffers_cpu_backup is False
        setting = explain(critic, "kl_coef")
        assert (setting.layer, setting.rule) == ("rule:critic-defaults", "critic-defaults")
        assert setting.history[0].value == 0.5
        assert not hasattr(roles["actor"], "disable_param_buffers_cpu_backup")

    def test_not_without_a_role_file(self, parser: argparse.ArgumentParser, tmp_path: Path) -> None:
        """Without --megatron-config-path both roles equal the command line."""
        roles = resolve(parser, tmp_path, None)
        assert explain(roles["critic"], "kl_coef").layer == "default"

    def test_cpu_backup_follows_the_override(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        """disable_param_buffers_cpu_backup keeps the critic's override."""
        roles = resolve(
            parser,
            tmp_path,
            "megatron:\n  - role: critic\n    overrides: {disable_param_buffers_cpu_backup: true}\n",
        )
        assert roles["critic"].disable_param_buffers_cpu_backup is True


class TestRealFixture:
    """The real slime PPO launch and its role file give the values slime computed."""

    def test_per_role_values(
        self,
        parser: argparse.ArgumentParser,
        fixtures_dir: Path,
        slime_argv: list[str],
        slime_expected: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """megatron_yaml.role_args_via_slime_parse_megatron_role_args, role by role."""
        monkeypatch.chdir(fixtures_dir)
        roles = resolve_roles(parser, slime_argv)
        expected = slime_expected["megatron_yaml"]["role_args_via_slime_parse_megatron_role_args"]
        for role, values in expected.items():
            for key, value in values.items():
                if value == "<<absent>>":
                    assert not hasattr(roles[role], key)
                else:
                    assert getattr(roles[role], key) == value, (role, key)
                    assert type(getattr(roles[role], key)) is type(value), (role, key)

    def test_unknown_tokens_are_noted(
        self,
        parser: argparse.ArgumentParser,
        fixtures_dir: Path,
        slime_argv: list[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """The four SGLang flags are allowed and reported with their argv index."""
        monkeypatch.chdir(fixtures_dir)
        roles = resolve_roles(parser, slime_argv)
        noted = [(n.argv_index, n.key) for n in notices(roles["critic"]) if n.severity == "info"]
        assert [key for _, key in noted] == [
            "--sglang-mem-fraction-static",
            "--sglang-cuda-graph-max-bs",
            "--sglang-max-running-requests",
            "--sglang-enable-metrics",
        ]
        assert all(slime_argv[index] == key for index, key in noted)


class TestPresets:
    """The roles, the role file's dest and the rules come from a preset."""

    def test_own_roles_and_rules(self, tmp_path: Path) -> None:
        """A preset with other roles, another dest and a relaxed topology guard."""
        made = argparse.ArgumentParser()
        made.add_argument("--roles-file")
        made.add_argument("--lr", type=float, default=1e-3)
        made.add_argument("--tensor-model-parallel-size", type=int, default=1)
        path = tmp_path / "r.yaml"
        path.write_text(
            "megatron:\n  - role: reward\n    overrides: {lr: 1e-4, tensor_model_parallel_size: 2}\n"
        )

        def rules(parser: argparse.ArgumentParser) -> RuleSet:
            return (
                slime_rules(parser)
                .replace("topology-guard", TopologyGuard(TOPOLOGY_KEYS, action="off"))
                .without("critic-defaults")
            )

        preset = attrs.evolve(
            SLIME, name="mine", roles=("policy", "reward"), config_dest="roles_file", rules=rules
        )
        roles = resolve_roles(made, ["--roles-file", str(path)], preset=preset)
        assert roles["reward"].lr == 1e-4
        assert roles["policy"].lr == 1e-3
        assert roles["reward"].tensor_model_parallel_size == 2

    def test_a_preset_of_another_layer_name_keeps_every_check(self, tmp_path: Path) -> None:
        """The default rules work on the preset's role layer, whatever it is named."""
        made = lr_parser("--roles-file")
        path = tmp_path / "roles.yaml"
        path.write_text("megatron:\n  - role: actor\n    overrides: {lr: '3', lrr: 1}\n")
        preset = attrs.evolve(SLIME, name="mine", config_dest="roles_file", layer="overrides")
        with pytest.raises(ConfigError) as caught:
            resolve_roles(made, ["--roles-file", str(path)], preset=preset)
        assert [(p.key, p.rule) for p in caught.value.errors] == [("lrr", "unknown-keys")]
        path.write_text("megatron:\n  - role: actor\n    overrides: {lr: '3'}\n")
        roles = resolve_roles(made, ["--roles-file", str(path)], preset=preset)
        assert roles["actor"].lr == 3.0
        assert explain(roles["actor"], "lr").layer == "overrides"

    def test_presets_equal_but_for_their_rules_get_their_own(self, tmp_path: Path) -> None:
        """Rule sets are kept per parser and preset: a preset's own rules are never another's."""
        made = lr_parser("--roles-file")
        path = tmp_path / "roles.yaml"
        path.write_text("megatron:\n  - role: actor\n    overrides: {lrr: 1}\n")
        argv = ["--roles-file", str(path)]
        lenient = attrs.evolve(
            SLIME, name="x", config_dest="roles_file", rules=lambda parser: RuleSet([])
        )
        assert resolve_roles(made, argv, preset=lenient)["actor"].lrr == 1
        with pytest.raises(ConfigError, match="'lrr' is not an argument"):
            resolve_roles(
                made, argv, preset=attrs.evolve(SLIME, name="x", config_dest="roles_file")
            )

    def test_a_replaced_argument_is_seen(self, tmp_path: Path) -> None:
        """conflict_handler="resolve" replaces an action without changing how many there are."""
        made = lr_parser("--megatron-config-path", conflict_handler="resolve")
        path = tmp_path / "roles.yaml"
        path.write_text("megatron:\n  - role: actor\n    overrides: {rate: 0.5}\n")
        argv = ["--megatron-config-path", str(path)]
        with pytest.raises(ConfigError, match="'rate' is not an argument"):
            resolve_roles(made, argv)
        made.add_argument("--lr", type=float, default=1e-3, dest="rate")  # replaces --lr
        assert resolve_roles(made, argv)["actor"].rate == 0.5

    @pytest.mark.parametrize(
        ("change", "overrides", "verdict"),
        [
            (lambda lr: setattr(lr, "type", int), "{lr: '3.5'}", "'lr' must be an int"),
            (lambda lr: setattr(lr, "choices", [0.1, 0.2]), "{lr: 0.3}", "must be one of 0.1"),
            (lambda lr: setattr(lr, "default", None), "{lr: null}", None),
            (lambda lr: setattr(lr, "nargs", 2), "{lr: [1, 2, 3]}", "write exactly 2 items"),
            (
                lambda lr: lr.container.add_argument("--learning-rate", dest="rate"),
                "{rate: x}",
                None,
            ),
            (
                lambda lr: (
                    lr.option_strings.append("--rate"),
                    lr.container._option_string_actions.update({"--rate": lr}),
                ),
                "{rate: 1}",
                "'rate' is a command-line flag; role files use argparse dest names",
            ),
        ],
    )
    def test_the_parser_changed_after_a_first_resolution(
        self, tmp_path: Path, change: Any, overrides: str, verdict: str | None
    ) -> None:
        """An action's type, choices, default, nargs or option strings changed in place, or an action
        added, after a first resolution: the next one gives the verdict a fresh parser gives
        (the rules' tables are kept per parser, never deciding)."""
        made = lr_parser("--megatron-config-path")
        path = tmp_path / "roles.yaml"
        argv = ["--megatron-config-path", str(path)]
        path.write_text("megatron:\n  - role: actor\n    overrides: {lr: '0.5', rat: 1}\n")
        with pytest.raises(ConfigError, match="'rat' is not an argument"):
            resolve_roles(made, argv)
        path.write_text("megatron:\n  - role: actor\n    overrides: {lr: '0.5'}\n")
        assert resolve_roles(made, argv)["actor"].lr == 0.5
        change(made._option_string_actions["--lr"])
        path.write_text(f"megatron:\n  - role: actor\n    overrides: {overrides}\n")
        if verdict is None:
            resolve_roles(made, argv)
        else:
            with pytest.raises(ConfigError, match=verdict):
                resolve_roles(made, argv)

    def test_slime_is_the_default(self) -> None:
        """The default preset is slime's."""
        assert (SLIME.roles, SLIME.config_dest) == (("actor", "critic"), "megatron_config_path")


class TestUnknownTokens:
    """Declared pass-through tokens are notes; a likely typo is an error, any other a warning."""

    def test_misspelt_flag_is_an_error_with_a_did_you_mean(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        """--tensor-model-paralel-size 2 would be dropped: training runs with TP 1."""
        with pytest.raises(ConfigError) as caught:
            resolve(parser, tmp_path, None, "--tensor-model-paralel-size", "2")
        (problem,) = caught.value.problems
        assert str(problem).startswith(
            "argv[26]: error: '--tensor-model-paralel-size' is not an argument of this parser "
            "(did you mean '--tensor-model-parallel-size'?)"
        )

    def test_an_undeclared_flag_is_a_warning(
        self, parser: argparse.ArgumentParser, tmp_path: Path
    ) -> None:
        """Not a pass-through the preset declares, and like no flag of the parser: a warning."""
        with pytest.warns(LayerconfWarning, match=r"argv\[26\]: warning: '--zzz-qqq 1' is not"):
            roles = resolve(parser, tmp_path, None, "--zzz-qqq", "1")
        (problem,) = notices(roles["actor"])
        assert "--sglang-*" in problem.message

    def test_foreign_flags_are_notes(self, parser: argparse.ArgumentParser, tmp_path: Path) -> None:
        """An SGLang flag is an info notice with its values and argv index."""
        roles = resolve(parser, tmp_path, None, "--sglang-mem-fraction-static", "0.8")
        (note,) = notices(roles["actor"])
        assert (note.severity, note.argv_index, note.key) == (
            "info",
            len(TYPICAL),
            "--sglang-mem-fraction-static",
        )
        assert "'--sglang-mem-fraction-static 0.8'" in note.message
