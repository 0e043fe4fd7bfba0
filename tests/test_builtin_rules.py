"""The built-in rules of the slime contract, each on hand-built layers."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from layerconf import (
    ConfigError,
    Layer,
    LayerconfWarning,
    LayerStack,
    Origin,
    Reason,
    explain,
    notices,
    resolve_stacks,
)
from layerconf.presets.slime import RESOURCE_KEYS, TOPOLOGY_KEYS, critic_defaults
from layerconf.presets.slime.constants import RESOURCES_BECAUSE
from layerconf.rules import (
    DistinctAcrossRoles,
    IgnoredKeys,
    PpoScope,
    RoleDefaults,
    TopologyGuard,
    TypeCoercion,
    UnexpandedText,
    UnknownKeys,
)
from layerconf.rules._shape import reading_dests
from layerconf.rules.coercion import _table_of


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser()
    made.add_argument("--lr", type=float, default=1e-6)
    made.add_argument("--tensor-model-parallel-size", type=int, default=1)
    made.add_argument("--disable-bias-linear", dest="add_bias_linear", action="store_false")
    made.add_argument("--actor-num-nodes", type=int, default=1)
    made.add_argument("--kl-coef", type=float, default=0.0)
    made.add_argument("--advantage-estimator", default="grpo", choices=["grpo", "ppo"])
    made.add_argument("--use-critic", action="store_true")
    return made


def role_layer(values: dict[str, Any], source: str = "ppo.yaml") -> Layer:
    origins = {
        (key,): Origin("role-config", "file", source=source, line=line, column=7)
        for line, key in enumerate(values, start=4)
    }
    origin = Origin("role-config", "file", source=source, line=2, column=5, label="default")
    return Layer("role-config", "file", values, origin, origins)


def base(**cli: Any) -> list[Layer]:
    defaults = vars(parser().parse_args([]))
    cli_origins = {(key,): Origin("cli", "argv", argv_index=3, token="--x") for key in cli}
    return [
        Layer.from_mapping("default", defaults, kind="default"),
        Layer("cli", "argv", cli, origins=cli_origins),
    ]


ROLES = ("actor", "critic")


class TestIgnoredKeys:
    """Resource keys in a role file are dropped with a warning; the command line's value stays."""

    def test_warn(self) -> None:
        """The value stays the command line's; history shows the ignored value."""
        stack = LayerStack(
            [*base(actor_num_nodes=2), role_layer({"actor_num_nodes": 4, "num_nodes": 8})],
            rules=[IgnoredKeys(RESOURCE_KEYS, because=RESOURCES_BECAUSE)],
        )
        with pytest.warns(LayerconfWarning) as caught:
            args = stack.resolve()
        assert [str(w.message) for w in caught] == [
            "ppo.yaml:4:7: warning: 'actor_num_nodes' is ignored: resources come from the command line"
            " (remove it; set --actor-num-nodes on the command line)",
            "ppo.yaml:5:7: warning: 'num_nodes' is ignored: resources come from the command line"
            " (remove it; set --actor-num-nodes / --critic-num-nodes on the command line)",
        ]
        assert args.actor_num_nodes == 2
        assert not hasattr(args, "num_nodes")
        setting = explain(args, "actor_num_nodes")
        assert setting.layer == "cli"
        assert (setting.history[0].value, setting.history[0].reason) == (4, Reason.IGNORED)

    def test_error(self) -> None:
        """Under ``error`` the file is refused."""
        stack = LayerStack(
            [*base(), role_layer({"num_gpus_per_node": 4})],
            rules=[IgnoredKeys(RESOURCE_KEYS, action="error", because=RESOURCES_BECAUSE)],
        )
        with pytest.raises(ConfigError, match="'num_gpus_per_node' is not allowed in a role file"):
            stack.resolve()

    def test_allow(self) -> None:
        """Under ``allow`` the key is an ordinary override."""
        stack = LayerStack(
            [*base(), role_layer({"actor_num_nodes": 4})],
            rules=[IgnoredKeys(RESOURCE_KEYS, action="allow")],
        )
        assert stack.resolve().actor_num_nodes == 4

    def test_bad_action(self) -> None:
        """The policy is checked when the rule is made."""
        with pytest.raises(ValueError, match="'action' must be in"):
            IgnoredKeys(RESOURCE_KEYS, action="ignore")  # type: ignore[arg-type]


class TestUnexpandedText:
    """Shell syntax in a file no shell reads: said where it is, the value kept as written."""

    def test_what_a_shell_would_expand(self) -> None:
        values = {
            "save": "${SAVE_DIR}/critic",
            "load": "~/ckpt",
            "data_path": ["plain", {"x": "$(ls /data)"}],
            "ref_load": "~alice/ckpt",
            "wandb_group": "$RUN",
            "lr": "1e-5",
            "note": "costs 5$, ~ a dollar, a/~b",
            "tag": "/ckpt/run$1",
        }
        stack = LayerStack([*base(), role_layer(values)], rules=[UnexpandedText()])
        with pytest.warns(LayerconfWarning) as caught:
            args = stack.resolve()
        said = [str(w.message) for w in caught]
        assert said == [
            "ppo.yaml:4:7: warning: 'save' holds '${SAVE_DIR}/critic': no shell reads a role "
            "file, so ${SAVE_DIR} stays as written, not the variable's value (write the value "
            "out in full; the shell expands it only on the command line)",
            "ppo.yaml:5:7: warning: 'load' holds '~/ckpt': no shell reads a role file, so '~' "
            "is a directory of that name, not a home directory (write the value out in full; "
            "the shell expands it only on the command line)",
            "ppo.yaml:6:7: warning: 'data_path' holds '$(ls /data)': no shell reads a role "
            "file, so $(...) stays as written: the command is not run (write the value out in "
            "full; the shell expands it only on the command line)",
            "ppo.yaml:7:7: warning: 'ref_load' holds '~alice/ckpt': no shell reads a role file, "
            "so '~alice' is a directory of that name, not a home directory (write the value out "
            "in full; the shell expands it only on the command line)",
            "ppo.yaml:8:7: warning: 'wandb_group' holds '$RUN': no shell reads a role file, so "
            "$RUN stays as written, not the variable's value (write the value out in full; the "
            "shell expands it only on the command line)",
            "ppo.yaml:11:7: warning: 'tag' holds '/ckpt/run$1': no shell reads a role file, so "
            "$1 stays as written, not the variable's value (write the value out in full; the "
            "shell expands it only on the command line)",
        ]
        assert args.save == "${SAVE_DIR}/critic"  # (a warning: the value is what slime sets)

    def test_a_secret_is_not_quoted(self) -> None:
        """Neither a secret key's value nor another key's text that holds the secret."""
        values = {"wandb_key": "$WANDB_S3CR3T_abcdef", "save": "$HOME/S3CR3T-pasted-abc123"}
        values["hf"] = "HF_TOKEN=S3CR3T-hf-$X"
        stack = LayerStack(
            [*base(), role_layer({**values, "api_key": "S3CR3T-pasted-abc123"})],
            rules=[UnexpandedText(action="error")],
        )
        with pytest.raises(ConfigError) as raised:
            stack.resolve()
        text = str(raised.value)
        assert "S3CR3T" not in text
        assert text.count("error:") == 3
        assert "'wandb_key' holds shell syntax" in text

    def test_another_keys_secret_named_as_a_variable(self) -> None:
        """The variable's name is scrubbed too, where it is a secret of the layer."""
        values = {"api_key": "MYSECRETVALUE123", "save": "/x/$MYSECRETVALUE123"}
        stack = LayerStack([*base(), role_layer(values)], rules=[UnexpandedText()])
        with pytest.warns(LayerconfWarning) as caught:
            stack.resolve()
        [said] = [str(w.message) for w in caught]
        assert "MYSECRETVALUE123" not in said
        assert "'/x/$<redacted>'" in said

    def test_a_secret_inside_a_mapping_is_not_quoted(self) -> None:
        """A secret key's value anywhere in a mapping (JSON text the coercion read, too)."""
        values = {
            "train_env_vars": {"A": 1, "WANDB_API_KEY": "S3CR3Tk${SUFFIX}"},
            "wandb_group": [{"x": {"password": "S3CR3Tpw$X"}}],
        }
        stack = LayerStack([*base(), role_layer(values)], rules=[UnexpandedText()])
        with pytest.warns(LayerconfWarning) as caught:
            stack.resolve()
        said = [str(w.message) for w in caught]
        assert len(said) == 2
        assert not any("S3CR3T" in text for text in said)
        assert all("holds shell syntax" in text for text in said)

    def test_off(self) -> None:
        stack = LayerStack(
            [*base(), role_layer({"save": "$X"})], rules=[UnexpandedText(action="off")]
        )
        assert stack.resolve().save == "$X"


class TestUnknownKeys:
    """Role-file keys are dest names; anything else is caught with what to write instead."""

    @pytest.mark.parametrize(
        ("key", "message"),
        [
            (
                "tensor-model-parallel-size",
                "'tensor-model-parallel-size' is a command-line flag; role files use argparse dest names (write tensor_model_parallel_size)",
            ),
            (
                "--lr",
                "'--lr' is a command-line flag; role files use argparse dest names (write lr)",
            ),
            (
                "disable-bias-linear",
                "'disable-bias-linear' is a command-line flag; role files use argparse dest names (write add_bias_linear)",
            ),
            (
                "tensor_model_paralel_size",
                "'tensor_model_paralel_size' is not an argument of this parser (did you mean 'tensor_model_parallel_size'?)",
            ),
            ("zzz", "'zzz' is not an argument of this parser (check the spelling in --help)"),
            # in other case: difflib alone found nothing alike (before: no suggestion)
            ("LR", "'LR' is not an argument of this parser (did you mean 'lr'?)"),
            (
                "TENSOR_MODEL_PARALLEL_SIZE",
                "'TENSOR_MODEL_PARALLEL_SIZE' is not an argument of this parser (did you mean 'tensor_model_parallel_size'?)",
            ),
        ],
    )
    def test_error(self, key: str, message: str) -> None:
        """Each unknown key is an error at its position, saying what to write."""
        stack = LayerStack(
            [*base(), role_layer({"lr": 1e-5, key: 1})], rules=[UnknownKeys(parser())]
        )
        with pytest.raises(ConfigError) as caught:
            stack.resolve()
        (problem,) = caught.value.problems
        assert str(problem) == f"ppo.yaml:5:7: error: {message}"
        assert problem.key == key

    def test_all_at_once(self) -> None:
        """Every unknown key of a file is reported."""
        stack = LayerStack(
            [*base(), role_layer({"a_b": 1, "c_d": 2})], rules=[UnknownKeys(parser())]
        )
        with pytest.raises(ConfigError) as caught:
            stack.resolve()
        assert [p.key for p in caught.value.problems] == ["a_b", "c_d"]

    def test_did_you_mean_is_bounded(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Thousands of unknown keys cost a bounded number of did-you-means (each compares the
        key with every dest, ~20 ms against Megatron's): the first SUGGESTED keys get theirs,
        the rest the plain hint, and a flag spelling still names its dest."""
        import layerconf.core.suggest as suggest

        calls = []
        compare = suggest.did_you_mean
        monkeypatch.setattr(
            suggest, "did_you_mean", lambda word, pool: calls.append(word) or compare(word, pool)
        )
        keys = dict.fromkeys(["lrr", *(f"lrr{n:04d}" for n in range(suggest.SUGGESTED + 200))], 1)
        stack = LayerStack(
            [*base(), role_layer({**keys, "tensor-model-parallel-size": 2})],
            rules=[UnknownKeys(parser())],
        )
        with pytest.raises(ConfigError) as caught:
            stack.resolve()
        problems = caught.value.problems
        assert len(calls) == suggest.SUGGESTED
        assert problems[0].hint == "did you mean 'lr'?"
        assert problems[-2].hint == "check the spelling in --help"
        assert problems[-1].hint == "write tensor_model_parallel_size"

    def test_warn_and_set(self) -> None:
        """Under ``warn`` the key is set anyway, as slime does."""
        stack = LayerStack(
            [*base(), role_layer({"my_flag": 1})], rules=[UnknownKeys(parser(), action="warn")]
        )
        with pytest.warns(LayerconfWarning, match="set anyway"):
            assert stack.resolve().my_flag == 1

    def test_help_and_suppressed_dests_are_not_keys(self) -> None:
        """``help`` and a SUPPRESS dest are no role-file keys; a dest shared with help is."""
        made = parser()
        made.add_argument("--quiet", dest=argparse.SUPPRESS, action="store_true")
        stack = LayerStack([*base(), role_layer({"help": 1})], rules=[UnknownKeys(made)])
        with pytest.raises(ConfigError, match="'help' is not an argument"):
            stack.resolve()
        made.add_argument("--help-text", dest="help")
        stack = LayerStack([*base(), role_layer({"help": "x"})], rules=[UnknownKeys(made)])
        assert stack.resolve().help == "x"

    def test_dests_are_those_when_the_rule_is_made(self) -> None:
        """A rule's verdicts are those of the parser it was made of, asked once or again
        (each key's verdict is kept); a rule made after the parser changed knows the change."""
        made = parser()
        rule = UnknownKeys(made)
        for _ in range(2):
            stack = LayerStack([*base(), role_layer({"lr": 1.0, "seed": 2})], rules=[rule])
            with pytest.raises(ConfigError, match="'seed' is not an argument"):
                stack.resolve()
        made.add_argument("--seed", type=int)
        stack = LayerStack([*base(), role_layer({"seed": 2})], rules=[rule])
        with pytest.raises(ConfigError, match="'seed' is not an argument"):
            stack.resolve()
        stack = LayerStack([*base(), role_layer({"seed": 2})], rules=[UnknownKeys(made)])
        assert stack.resolve().seed == 2

    def test_dests_read_once_per_rule_build(self) -> None:
        """The rules built together share one reading of the parser's dests (a thousand of
        them cost as much as the rest of a first resolution); rules built apart read afresh."""
        made = parser()
        with reading_dests(made):
            first = UnknownKeys(made)
            coercion = TypeCoercion(made)
            assert UnknownKeys(made)._dest_list is first._dest_list
        assert _table_of(coercion.parser).dests is first._dest_list
        apart = UnknownKeys(made)
        assert apart._dest_list is not first._dest_list
        assert apart._dest_list == first._dest_list

    def test_a_dest_renamed_in_place_is_seen(self) -> None:
        """A dest renamed in place changes neither the number of actions nor the last one:
        a rule built after it still sees it, and so does a coercion table made again."""
        made = argparse.ArgumentParser()
        made.add_argument("--lr", type=float, default=1.0)
        made.add_argument("--config")

        def resolved(values: dict[str, Any]) -> argparse.Namespace:
            rules = [UnknownKeys(made), TypeCoercion(made)]
            return LayerStack([*base(), role_layer(values)], rules=rules).resolve(warn=False)

        with pytest.raises(ConfigError, match="learning_rate"):
            resolved({"learning_rate": "2.5"})
        made._actions[1].dest = "learning_rate"
        made.set_defaults(seed=1)  # (the coercion table is made again when a default changed)
        assert resolved({"learning_rate": "2.5"}).learning_rate == 2.5
        with pytest.raises(
            ConfigError, match=r"'lr' is a command-line flag.*\(write learning_rate\)"
        ):
            resolved({"lr": 1.0})

    def test_also_known(self) -> None:
        """Keys meaningful without a dest can be declared known."""
        rule = UnknownKeys(parser(), also_known={"disable_param_buffers_cpu_backup"})
        stack = LayerStack(
            [*base(), role_layer({"disable_param_buffers_cpu_backup": True})], rules=[rule]
        )
        assert stack.resolve().disable_param_buffers_cpu_backup is True


class TestTopologyGuard:
    """Actor and critic must share the parallel topology."""

    @staticmethod
    def stacks(critic: dict[str, Any], guard: TopologyGuard | None = None) -> dict[str, LayerStack]:
        rules = [guard or TopologyGuard(TOPOLOGY_KEYS, subject="the parallel topology")]
        layers = base(tensor_model_parallel_size=2)
        return {
            "actor": LayerStack([*layers, role_layer({})], rules=rules),
            "critic": LayerStack([*layers, role_layer(critic, "megatron_ppo.yaml")], rules=rules),
        }

    def test_mismatch_names_both_roles_and_origins(self) -> None:
        """The error points at the role file and names each role's value and origin."""
        with pytest.raises(ConfigError) as caught:
            resolve_stacks(self.stacks({"tensor_model_parallel_size": 4}))
        (problem,) = caught.value.problems
        assert str(problem) == (
            "megatron_ppo.yaml:4:7: error: roles must share the parallel topology: "
            "critic tensor_model_parallel_size=4; actor 2 from cli argv[3] "
            "(set tensor_model_parallel_size once, on the command line, and remove it from the role file)"
        )
        assert (problem.key, problem.rule) == ("tensor_model_parallel_size", "topology-guard")

    def test_generic_wording_and_values_compared_as_values(self) -> None:
        """Without a subject the guard names the key; equal values in another order agree."""
        with pytest.raises(ConfigError) as caught:
            resolve_stacks(self.stacks({"lr": 1e-5}, TopologyGuard(keys=("lr",))))
        (problem,) = caught.value.problems
        assert problem.message.startswith("roles must share lr: critic lr=1e-05; actor 1e-06 from ")
        guard = TopologyGuard(keys=("opt",))
        layers = base()
        stacks = {
            role: LayerStack([*layers, role_layer({"opt": opt})], rules=[guard])
            for role, opt in (("actor", {"a": 1, "b": 2}), ("critic", {"b": 2, "a": 1}))
        }
        assert resolve_stacks(stacks)["critic"].opt == {"b": 2, "a": 1}

    def test_same_value_in_the_file_is_fine(self) -> None:
        """Repeating the command line's value is no mismatch."""
        roles = resolve_stacks(self.stacks({"tensor_model_parallel_size": 2}))
        assert roles["critic"].tensor_model_parallel_size == 2

    def test_warn(self) -> None:
        """Under ``warn`` the roles resolve and the warning is kept on both."""
        with pytest.warns(LayerconfWarning, match="roles must share tensor_model_parallel_size"):
            roles = resolve_stacks(
                self.stacks(
                    {"tensor_model_parallel_size": 4}, TopologyGuard(TOPOLOGY_KEYS, action="warn")
                )
            )
        assert len(notices(roles["actor"])) == len(notices(roles["critic"])) == 1

    def test_off_and_other_keys(self) -> None:
        """``off`` checks nothing; the keys are configurable."""
        roles = resolve_stacks(
            self.stacks(
                {"tensor_model_parallel_size": 4}, TopologyGuard(TOPOLOGY_KEYS, action="off")
            )
        )
        assert roles["critic"].tensor_model_parallel_size == 4
        with pytest.raises(ConfigError, match="lr"):
            resolve_stacks(self.stacks({"lr": 1e-5}, TopologyGuard(keys=("lr",))))

    def test_one_value_for_every_role_is_not_converted(self) -> None:
        """A value every role shares (one object, the command line's or the default) agrees
        without being converted: the parser's type is not called for it, and a type whose
        results compare by identity is no mismatch between a value and itself."""
        calls: list[str] = []

        class Handle:
            def __init__(self, text: str) -> None:
                calls.append(text)

        own = argparse.ArgumentParser()
        own.add_argument("--tp", type=Handle, default=2)
        own.add_argument("--pp", type=int, default=1)
        guard = TopologyGuard(keys=("tp", "pp"), parser=own)
        layers = base()
        stacks = {
            role: LayerStack([*layers, role_layer({"tp": 2, "pp": 1})], rules=[guard])
            for role in ("actor", "critic")
        }
        roles = resolve_stacks(stacks)
        assert (roles["actor"].tp, roles["critic"].pp) == (2, 1)
        assert calls == []
        # Values that are not one object are converted and compared, as before.
        stacks["critic"] = LayerStack([*layers, role_layer({"pp": 4})], rules=[guard])
        with pytest.raises(ConfigError, match="roles must share pp: actor pp=1; critic 4"):
            resolve_stacks(stacks)


class TestDistinctAcrossRoles:
    """Keys no two roles may share, as generic as any rule."""

    @staticmethod
    def stacks(rule: DistinctAcrossRoles, **critic: Any) -> dict[str, LayerStack]:
        layers = base(save="/ckpt")
        return {
            "actor": LayerStack([*layers, role_layer({})], rules=[rule]),
            "critic": LayerStack([*layers, role_layer(critic)], rules=[rule]),
        }

    def test_a_shared_value_names_both_origins(self) -> None:
        with pytest.raises(ConfigError) as caught:
            resolve_stacks(self.stacks(DistinctAcrossRoles(("save",))))
        (problem,) = caught.value.problems
        assert str(problem) == (
            "argv[3]: error: actor and critic share save='/ckpt' (set once, here, for both): "
            "each role must have its own (give each role its own: under the critic entry of the "
            "role file write 'save: /ckpt_critic')"
        )

    def test_own_values_none_and_when(self) -> None:
        """Distinct values pass; None is no conflict; `when` turns the check off for a run."""
        rule = DistinctAcrossRoles(("save",))
        assert resolve_stacks(self.stacks(rule, save="/other"))["critic"].save == "/other"
        assert resolve_stacks(self.stacks(DistinctAcrossRoles(("seed",))))
        never = DistinctAcrossRoles(("save",), when=lambda context: False)
        assert resolve_stacks(self.stacks(never))["critic"].save == "/ckpt"

    @pytest.mark.parametrize("save", ["/ckpt/", "//ckpt", "//ckpt/./", "/x/../ckpt"])
    def test_paths(self, save: str) -> None:
        """With paths, '/ckpt/' is '/ckpt', and so is '//ckpt' (Linux reads two leading slashes
        as one: '$ROOT/ckpt' with ROOT=/); the role file's value is the one blamed."""
        with pytest.raises(ConfigError) as caught:
            resolve_stacks(self.stacks(DistinctAcrossRoles(("save",), paths=True), save=save))
        (problem,) = caught.value.problems
        assert (problem.source, problem.line) == ("ppo.yaml", 4)
        assert resolve_stacks(self.stacks(DistinctAcrossRoles(("save",)), save=save))

    def test_a_relative_path_is_read_from_the_current_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """'ckpt' is '<cwd>/ckpt', where a trainer launched from here writes: one directory."""
        monkeypatch.chdir(tmp_path)
        rule = DistinctAcrossRoles(("save",), paths=True)
        layers = base(save=str(tmp_path / "ckpt"))
        stacks = {
            "actor": LayerStack([*layers, role_layer({})], rules=[rule]),
            "critic": LayerStack([*layers, role_layer({"save": "ckpt"})], rules=[rule]),
        }
        with pytest.raises(ConfigError) as caught:
            resolve_stacks(stacks)
        (problem,) = caught.value.problems
        assert (problem.source, problem.line) == ("ppo.yaml", 4)
        assert resolve_stacks(self.stacks(rule, save="other/ckpt"))

    @pytest.mark.parametrize(
        "save", ["/c\nsrc/train.py:10:1: error: forged\x1b[2J", "-x", "a b", "ckpt: 1", "caf\u00e9"]
    )
    def test_the_suggested_value_reads_back(self, save: str) -> None:
        """The hint's YAML line gives the suggested value back, on one line, whatever the
        shared value holds (quoted as JSON, which YAML reads, unless it is a plain path)."""
        problem = self.shared_save(save).problems[0]
        assert problem.hint is not None
        written = problem.hint.split("write '", 1)[1][: -len("'")]
        assert yaml.safe_load(written) == {"save": f"{save}_critic"}
        assert str(problem).isprintable()

    def test_a_password_in_the_value_is_not_quoted(self) -> None:
        """A shared URL's password stays out of the problem and of str(ConfigError)."""
        error = self.shared_save("s3://user:pw-Zq8Wv4Lm@bucket/ckpt")
        (problem,) = error.problems
        assert "save='s3://user:<redacted>@bucket/ckpt'" in str(problem)
        assert "Zq8Wv4Lm" not in f"{error}{error!r}{problem.hint}"

    @staticmethod
    def shared_save(save: str) -> ConfigError:
        """The error of two roles that both keep `save` from the command line."""
        layers = base(save=save)
        rule = DistinctAcrossRoles(("save",))
        stacks = {role: LayerStack([*layers, role_layer({})], rules=[rule]) for role in ROLES}
        with pytest.raises(ConfigError) as caught:
            resolve_stacks(stacks)
        return caught.value


class TestRoleDefaults:
    """The critic's runtime defaults are a rule with its own origin."""

    def test_forced_even_over_the_file(self) -> None:
        """kl_coef is 0 for the critic, and explain says which rule made it so."""
        stack = LayerStack([*base(), role_layer({"kl_coef": 0.5})], rules=[critic_defaults()])
        with pytest.warns(LayerconfWarning, match=r"kl_coef=0.5 is ignored for the critic"):
            args = stack.resolve(role="critic")
        setting = explain(args, "kl_coef")
        assert (setting.value, setting.layer, setting.rule) == (
            0,
            "rule:critic-defaults",
            "critic-defaults",
        )
        assert (setting.history[0].value, setting.history[0].reason) == (0.5, Reason.FORCED)
        assert args.use_opd is False
        assert args.untie_embeddings_and_output_weights is True
        assert args.custom_advantage_function_path is None

    def test_a_value_it_replaces_is_a_warning_at_the_key(self) -> None:
        """The critic's own kl_coef, use_opd or untie_embeddings_and_output_weights is ignored
        (slime forces them): a warning at the key, not silence; one that agrees (kl_coef: 0,
        read as 0.0) or one the rule yields to (disable_param_buffers_cpu_backup) is none."""
        written = {
            "kl_coef": 0.1,
            "use_opd": True,
            "untie_embeddings_and_output_weights": False,
            "custom_advantage_function_path": None,
            "disable_param_buffers_cpu_backup": True,
        }
        args = LayerStack([*base(), role_layer(written)], rules=[critic_defaults()]).resolve(
            role="critic", warn=False
        )
        assert [(p.key, p.severity, p.line) for p in notices(args)] == [
            ("kl_coef", "warning", 4),
            ("use_opd", "warning", 5),
            ("untie_embeddings_and_output_weights", "warning", 6),
        ]
        assert str(notices(args)[0]).endswith(
            "warning: kl_coef=0.1 is ignored for the critic: slime always runs the critic with "
            "this value (kl_coef=0) (remove 'kl_coef' from the critic entry)"
        )
        agreeing = {"kl_coef": 0.0, "use_opd": False, "untie_embeddings_and_output_weights": True}
        stack = LayerStack([*base(), role_layer(agreeing)], rules=[critic_defaults()])
        assert notices(stack.resolve(role="critic")) == ()

    def test_unless_overridden(self) -> None:
        """disable_param_buffers_cpu_backup follows the critic's overrides when they set it,
        call by call with one rule (its decisions are made once, which it sets is decided
        each time)."""
        defaults = critic_defaults()
        stack = LayerStack(
            [*base(), role_layer({"disable_param_buffers_cpu_backup": True})], rules=[defaults]
        )
        assert stack.resolve(role="critic").disable_param_buffers_cpu_backup is True
        plain = LayerStack([*base(), role_layer({})], rules=[defaults]).resolve(role="critic")
        assert plain.disable_param_buffers_cpu_backup is False
        assert stack.resolve(role="critic").disable_param_buffers_cpu_backup is True

    @pytest.mark.parametrize(
        ("written", "shown", "hint"),
        [
            ("false", "'false'", "write true or false, without quotes"),
            (0, "0", "write true or false"),
            (None, "null", "write true or false"),
        ],
    )
    def test_a_flag_it_yields_to_takes_a_bool(self, written: Any, shown: str, hint: str) -> None:
        """disable_param_buffers_cpu_backup, which the critic's overrides may set, takes true
        or false only, as any flag: a quoted 'false' would be true to the trainer's `if`
        (before: the string was set, silently). With flags="warn" it is set as written."""
        layers = [*base(), role_layer({"disable_param_buffers_cpu_backup": written})]
        with pytest.raises(ConfigError) as caught:
            LayerStack(layers, rules=[critic_defaults()]).resolve(role="critic")
        assert [str(problem) for problem in caught.value.problems] == [
            f"ppo.yaml:4:7: error: 'disable_param_buffers_cpu_backup' must be true or false "
            f"(got {shown}) ({hint})"
        ]
        lenient = attrs.evolve(critic_defaults(), flags="warn")
        args = LayerStack(layers, rules=[lenient]).resolve(role="critic", warn=False)
        assert args.disable_param_buffers_cpu_backup == written
        assert [(p.severity, p.key) for p in notices(args)] == [
            ("warning", "disable_param_buffers_cpu_backup")
        ]
        assert "is not true or false" in str(notices(args)[0])

    def test_values_changed_after_a_call_are_followed(self) -> None:
        """The rule's values are a dict its maker may still change: a value changed, added or
        removed after a first call is what the next call sets (same key order, same decisions
        otherwise)."""
        defaults = RoleDefaults("critic", {"kl_coef": 0, "use_opd": False})
        stack = LayerStack([*base(), role_layer({})], rules=[defaults])
        assert stack.resolve(role="critic").kl_coef == 0
        defaults.values["kl_coef"] = 0.5  # type: ignore[index]
        defaults.values["entropy_coef"] = 0.25  # type: ignore[index]
        del defaults.values["use_opd"]  # type: ignore[attr-defined]
        again = stack.resolve(role="critic")
        assert (again.kl_coef, again.entropy_coef) == (0.5, 0.25)
        assert not hasattr(again, "use_opd")
        assert explain(again, "entropy_coef").rule == "role-defaults"

    def test_only_the_role_and_only_with_a_role_file(self) -> None:
        """The actor is untouched; without a role layer nothing is set."""
        actor = LayerStack([*base(), role_layer({})], rules=[critic_defaults()]).resolve(
            role="actor"
        )
        assert not hasattr(actor, "use_opd")
        critic = LayerStack(base(), rules=[critic_defaults()]).resolve(role="critic")
        assert not hasattr(critic, "use_opd")


class TestPpoScope:
    """Critic overrides without a critic earn a warning, and still resolve."""

    def test_no_critic(self) -> None:
        """GRPO with critic overrides warns at the critic entry."""
        stack = LayerStack([*base(), role_layer({"lr": 1e-5})], rules=[PpoScope()])
        with pytest.warns(
            LayerconfWarning, match=r"ppo.yaml:2:5: warning: the critic's overrides are unused"
        ):
            args = stack.resolve(role="critic")
        assert args.lr == 1e-5

    @pytest.mark.parametrize("cli", [{"use_critic": True}, {"advantage_estimator": "ppo"}])
    def test_critic_in_use(self, cli: dict[str, Any]) -> None:
        """--use-critic or --advantage-estimator ppo means a critic runs."""
        stack = LayerStack([*base(**cli), role_layer({"lr": 1e-5})], rules=[PpoScope()])
        assert notices(stack.resolve(role="critic")) == ()

    def test_the_hint_names_the_configured_flags(self) -> None:
        """A PpoScope for other dests says what would run the critic with those."""
        rule = PpoScope(
            use_critic_dest="with_value_model",
            estimator_dest="advantage_estimator",
            critic_estimators=frozenset({"gae", "ppo"}),
        )
        stack = LayerStack([*base(), role_layer({"lr": 1e-5})], rules=[rule])
        with pytest.warns(LayerconfWarning):
            args = stack.resolve(role="critic")
        (problem,) = notices(args)
        assert problem.hint == (
            "add --with-value-model or --advantage-estimator gae or --advantage-estimator ppo, "
            "or remove the critic entry"
        )

    @pytest.mark.parametrize(
        "own", [{"use_critic": True}, {"advantage_estimator": "ppo"}, {"lr": 1e-5}]
    )
    def test_the_scope_is_the_command_lines(self, own: dict[str, Any]) -> None:
        """Whether a critic runs is the run's: a role's own values neither start nor stop it."""
        stack = LayerStack([*base(), role_layer(own)], rules=[PpoScope()])
        with pytest.warns(LayerconfWarning, match="the critic's overrides are unused"):
            stack.resolve(role="critic")
        no_critic = {"use_critic": False, "advantage_estimator": "grpo"}
        stack = LayerStack([*base(use_critic=True), role_layer(no_critic)], rules=[PpoScope()])
        assert notices(stack.resolve(role="critic")) == ()

    def test_actor_is_not_checked(self) -> None:
        """Only the critic's overrides are about the critic."""
        stack = LayerStack([*base(), role_layer({"lr": 1e-5})], rules=[PpoScope()])
        assert notices(stack.resolve(role="actor")) == ()
