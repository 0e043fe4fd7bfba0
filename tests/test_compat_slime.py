"""layerconf.compat.slime.parse_megatron_role_args: slime's signature and results, with provenance."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import pytest

from layerconf import ConfigError, LayerconfWarning, explain, load_profile
from layerconf.compat.slime import SlimeConfigError, parse_megatron_role_args


@pytest.fixture(scope="module")
def base(slime_argv: list[str]) -> argparse.Namespace:
    parsed, _ = load_profile().parse_known_args(slime_argv)
    return parsed


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
        self, base: argparse.Namespace, tmp_path: Path
    ) -> None:
        """slime sets an unknown key anyway; so do we, and say so."""
        with pytest.warns(LayerconfWarning, match="'my_key' is not a known argument"):
            result = parse_megatron_role_args(
                base,
                write(tmp_path, "megatron:\n  - role: actor\n    overrides: {my_key: 3}\n"),
                "actor",
            )
        assert result.my_key == 3

    def test_warnings_say_where_and_what_to_do(
        self, base: argparse.Namespace, tmp_path: Path
    ) -> None:
        """Each of slime's silent conversions is a warning at the value, with a hint."""
        path = write(
            tmp_path,
            "megatron:\n  - role: actor\n    overrides:\n"
            "      my_key: 3\n      lr: fast\n      use_kl_loss: 'false'\n",
        )
        with pytest.warns(LayerconfWarning) as caught:
            parse_megatron_role_args(base, path, "actor")
        assert [str(warning.message) for warning in caught] == [
            f"{path}:4:15: warning: 'my_key' is not a known argument; it is set anyway, as slime "
            "does (check the spelling against the dest names in --help)",
            f"{path}:5:11: warning: 'lr' stays the string 'fast': it is not a float "
            "(write a float, as on the command line)",
            f"{path}:6:20: warning: 'use_kl_loss': the string 'false' became True, as slime "
            "computes (write true or false without quotes)",
        ]

    def test_only_two_resource_keys_are_ignored(
        self, base: argparse.Namespace, tmp_path: Path
    ) -> None:
        """slime ignores num_nodes and num_gpus_per_node, and sets actor_num_nodes."""
        text = "megatron:\n  - role: actor\n    overrides: {num_nodes: 4, actor_num_nodes: 3}\n"
        with pytest.warns(LayerconfWarning, match="'num_nodes' is ignored"):
            result = parse_megatron_role_args(base, write(tmp_path, text), "actor")
        assert result.actor_num_nodes == 3
        assert getattr(result, "num_nodes", None) == getattr(base, "num_nodes", None)

    def test_quoted_false_for_a_flag_is_what_slime_computes(
        self, base: argparse.Namespace, tmp_path: Path
    ) -> None:
        """slime turns the string 'false' into True for a boolean; the drop-in does too, loudly."""
        with pytest.warns(LayerconfWarning, match="became True"):
            result = parse_megatron_role_args(
                base,
                write(
                    tmp_path, "megatron:\n  - role: actor\n    overrides: {use_kl_loss: 'false'}\n"
                ),
                "actor",
            )
        assert result.use_kl_loss is True

    def test_unconvertible_string_stays(self, base: argparse.Namespace, tmp_path: Path) -> None:
        """A string slime cannot convert is kept as it is, with a warning."""
        with pytest.warns(LayerconfWarning, match="stays the string 'fast'"):
            result = parse_megatron_role_args(
                base,
                write(tmp_path, "megatron:\n  - role: actor\n    overrides: {lr: fast}\n"),
                "actor",
            )
        assert result.lr == "fast"


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
