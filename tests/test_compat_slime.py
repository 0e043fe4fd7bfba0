"""layerconf.compat.slime.parse_megatron_role_args: slime's signature and results, with provenance."""

from __future__ import annotations

import argparse
import copy
import errno
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest

from layerconf import ConfigError, explain, load_profile
from layerconf.compat.slime import SlimeConfigError, parse_megatron_role_args


@pytest.fixture(scope="module")
def base(slime_argv: list[str]) -> argparse.Namespace:
    parsed, _ = load_profile().parse_known_args(slime_argv)
    return parsed


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    """(level, message) of what the drop-in logged, as slime logs through logging."""
    return [
        (record.levelname, record.getMessage())
        for record in caplog.records
        if record.name == "layerconf.compat.slime"
    ]


@pytest.fixture(autouse=True)
def _capture_info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="layerconf.compat.slime")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return path


class TestSameValuesAsSlime:
    """The values slime computes, on a fresh namespace, base_args untouched."""

    @pytest.mark.parametrize("role", ["actor", "critic"])
    def test_real_fixture(
        self,
        base: argparse.Namespace,
        fixtures_dir: Path,
        slime_expected: dict[str, Any],
        role: str,
    ) -> None:
        """megatron_yaml.role_args_via_slime_parse_megatron_role_args."""
        before = copy.deepcopy(vars(base))
        result = parse_megatron_role_args(base, fixtures_dir / "slime_ppo_megatron.yaml", role)
        expected = slime_expected["megatron_yaml"]["role_args_via_slime_parse_megatron_role_args"][
            role
        ]
        for key, value in expected.items():
            if value == "<<absent>>":
                assert not hasattr(result, key)
            else:
                assert getattr(result, key) == value
                assert type(getattr(result, key)) is type(value)
        assert result is not base
        assert vars(base) == before
        others = {k: v for k, v in vars(result).items() if k not in expected}
        assert others == {k: v for k, v in before.items() if k not in expected}

    def test_missing_role_inherits(self, base: argparse.Namespace, tmp_path: Path) -> None:
        """A role absent from the file gets base_args' values (the critic still its defaults)."""
        result = parse_megatron_role_args(
            base,
            write(tmp_path, "megatron:\n  - role: critic\n    overrides: {lr: 1e-5}\n"),
            "actor",
        )
        assert vars(result) == vars(base)

    def test_unknown_key_is_set_with_a_warning(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """slime sets an unknown key anyway; so do we, and say so through logging, as slime."""
        result = parse_megatron_role_args(
            base,
            write(tmp_path, "megatron:\n  - role: actor\n    overrides: {my_key: 3}\n"),
            "actor",
        )
        assert result.my_key == 3
        assert any(
            level == "WARNING" and "'my_key' is not a known argument" in message
            for level, message in logged(caplog)
        )

    def test_warnings_say_where_and_what_to_do(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Each of slime's silent conversions is a logged warning at the value, with a hint."""
        path = write(
            tmp_path,
            "megatron:\n  - role: actor\n    overrides:\n"
            "      my_key: 3\n      lr: fast\n      use_kl_loss: 'false'\n",
        )
        parse_megatron_role_args(base, path, "actor")
        assert [message for level, message in logged(caplog) if level == "WARNING"] == [
            f"{path}:4:15: warning: 'my_key' is not a known argument; it is set anyway, as slime "
            "does (check the spelling against the dest names in --help)",
            f"{path}:5:11: warning: 'lr' stays the string 'fast': it is not a float "
            "(write a float, as on the command line)",
            f"{path}:6:20: warning: 'use_kl_loss': the string 'false' became True, as slime "
            "computes (write true or false without quotes)",
        ]

    def test_only_two_resource_keys_are_ignored(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """slime ignores num_nodes and num_gpus_per_node, and sets actor_num_nodes."""
        text = "megatron:\n  - role: actor\n    overrides: {num_nodes: 4, actor_num_nodes: 3}\n"
        result = parse_megatron_role_args(base, write(tmp_path, text), "actor")
        assert any(
            level == "INFO" and "'num_nodes' is ignored" in message
            for level, message in logged(caplog)
        )
        assert result.actor_num_nodes == 3
        assert getattr(result, "num_nodes", None) == getattr(base, "num_nodes", None)

    def test_quoted_false_for_a_flag_is_what_slime_computes(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """slime turns the string 'false' into True for a boolean; the drop-in does too, loudly."""
        result = parse_megatron_role_args(
            base,
            write(tmp_path, "megatron:\n  - role: actor\n    overrides: {use_kl_loss: 'false'}\n"),
            "actor",
        )
        assert result.use_kl_loss is True
        assert any("became True" in message for _, message in logged(caplog))

    def test_unconvertible_string_stays(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A string slime cannot convert is kept as it is, with a logged warning."""
        result = parse_megatron_role_args(
            base,
            write(tmp_path, "megatron:\n  - role: actor\n    overrides: {lr: fast}\n"),
            "actor",
        )
        assert result.lr == "fast"
        assert any("stays the string 'fast'" in message for _, message in logged(caplog))


class TestStructuralErrors:
    """Structural mistakes are ConfigErrors and AssertionErrors, as slime's asserts are."""

    @pytest.mark.parametrize(
        "text",
        [
            "other: 1\n",
            "megatron: {role: actor}\n",
            "megatron:\n  - role: actor\n  - role: actor\n",
        ],
    )
    def test_assertion_error(self, base: argparse.Namespace, tmp_path: Path, text: str) -> None:
        """Existing `except AssertionError` clauses keep working."""
        with pytest.raises(AssertionError) as caught:
            parse_megatron_role_args(base, write(tmp_path, text), "actor")
        assert isinstance(caught.value, ConfigError)
        assert isinstance(caught.value, SlimeConfigError)
        assert all(p.source == str(tmp_path / "m.yaml") for p in caught.value.problems)

    def test_unsupported_role(self, base: argparse.Namespace, tmp_path: Path) -> None:
        """Only actor and critic, as slime asserts."""
        with pytest.raises(AssertionError, match="unsupported Megatron config role 'reward'"):
            parse_megatron_role_args(base, write(tmp_path, "megatron: []\n"), "reward")


class TestProvenance:
    """The result explains its values."""

    def test_from_a_plain_namespace(self, base: argparse.Namespace, fixtures_dir: Path) -> None:
        """Base values come from the base; overrides from the file with their position."""
        result = parse_megatron_role_args(base, fixtures_dir / "slime_ppo_megatron.yaml", "critic")
        setting = explain(result, "lr")
        assert (setting.layer, setting.line, setting.column) == ("role-config", 6, 11)
        assert setting.history[-1].layer == "base"
        assert explain(result, "kl_coef").rule == "critic-defaults"

    def test_from_a_layerconf_namespace_changed_after_parsing(
        self, slime_argv: list[str], fixtures_dir: Path
    ) -> None:
        """A layerconf base keeps its layers; what the trainer changed since is a runtime layer."""
        from layerconf import parse_known_args

        parsed, _ = parse_known_args(load_profile(), slime_argv)
        parsed.seed = 7
        del parsed.offload_train
        result = parse_megatron_role_args(parsed, fixtures_dir / "slime_ppo_megatron.yaml", "actor")
        assert explain(result, "tensor_model_parallel_size").layer == "cli"
        assert (result.seed, explain(result, "seed").layer) == (7, "runtime")
        assert not hasattr(result, "offload_train")
        assert parsed.seed == 7


class TestParityWithSlime:
    """Where slime's own function behaves a certain way, the drop-in does too."""

    def test_a_mapping_override_replaces_the_command_lines(self, tmp_path: Path) -> None:
        """slime setattr()s an override whole: a dict replaces the command line's dict."""
        base, _ = load_profile().parse_known_args(
            ["--rollout-batch-size", "4", "--train-env-vars", '{"X": "1"}']
        )
        assert base.train_env_vars == {"X": "1"}
        text = "megatron:\n  - role: actor\n    overrides: {train_env_vars: {A: '2'}}\n"
        result = parse_megatron_role_args(base, write(tmp_path, text), "actor")
        assert result.train_env_vars == {"A": "2"}
        assert base.train_env_vars == {"X": "1"}

    @pytest.mark.parametrize(
        ("text", "words"),
        [
            (
                "other: 1\n",
                "megatron config must contain a top-level 'megatron' list, e.g. megatron: "
                "[{name: default, role: actor, overrides: {...}}]",
            ),
            (
                "megatron: {role: actor}\n",
                "megatron config 'megatron' field must be a list, e.g. megatron: [{name: "
                "default, role: actor, overrides: {...}}]",
            ),
            (
                "megatron:\n  - role: actor\n  - role: actor\n",
                "megatron config must contain at most one entry with role=actor, e.g. megatron: "
                "[{name: default, role: actor, overrides: {...}}]",
            ),
        ],
    )
    def test_assertions_carry_slimes_words(
        self, base: argparse.Namespace, tmp_path: Path, text: str, words: str
    ) -> None:
        """slime's tests match its assertion messages: they come first, then where and why."""
        with pytest.raises(AssertionError) as caught:
            parse_megatron_role_args(base, write(tmp_path, text), "actor")
        message = str(caught.value)
        assert message.startswith(words + "\n")
        assert f"{tmp_path / 'm.yaml'}:" in message

    def test_an_unsupported_role(self, base: argparse.Namespace, tmp_path: Path) -> None:
        with pytest.raises(AssertionError, match=r"^Unsupported Megatron config role: reward"):
            parse_megatron_role_args(base, write(tmp_path, "megatron: []\n"), "reward")

    def test_a_missing_file_is_file_not_found(
        self, base: argparse.Namespace, tmp_path: Path
    ) -> None:
        """slime's open() raises FileNotFoundError; the drop-in's error is one, and a ConfigError."""
        missing = tmp_path / "nope.yaml"
        with pytest.raises(FileNotFoundError) as caught:
            parse_megatron_role_args(base, missing, "actor")
        error = caught.value
        assert isinstance(error, ConfigError)
        assert (error.errno, error.filename) == (errno.ENOENT, str(missing))
        assert str(error).startswith(f"[Errno 2] No such file or directory: '{missing}'")

    def test_nothing_is_warned_only_logged(self, base: argparse.Namespace, tmp_path: Path) -> None:
        """A trainer under -W error (pytest's filterwarnings = error here) does not crash."""
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            text = "megatron:\n  - role: critic\n    overrides: {num_nodes: 2, my_key: 1}\n"
            result = parse_megatron_role_args(base, write(tmp_path, text), "critic")
        assert result.my_key == 1

    @pytest.mark.parametrize("name", ["__class__", "__dict__"])
    def test_python_names_are_refused(
        self, base: argparse.Namespace, tmp_path: Path, name: str
    ) -> None:
        """slime's setattr raises on __class__; the drop-in refuses it, at the key."""
        text = f"megatron:\n  - role: actor\n    overrides: {{{name}: x}}\n"
        with pytest.raises(ConfigError, match=f"'{name}' is a Python attribute"):
            parse_megatron_role_args(base, write(tmp_path, text), "actor")

    def test_a_key_deleted_at_run_time_is_set_as_written(self, tmp_path: Path) -> None:
        """slime's hasattr() is False for a deleted key: the YAML string is set, not converted."""
        import layerconf

        base, _ = layerconf.parse_known_args(
            load_profile(), ["--rollout-batch-size", "4", "--seed", "3"]
        )
        del base.seed
        text = "megatron:\n  - role: actor\n    overrides: {seed: '7'}\n"
        result = parse_megatron_role_args(base, write(tmp_path, text), "actor")
        assert result.seed == "7"
