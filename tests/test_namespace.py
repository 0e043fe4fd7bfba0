"""The resolved namespace behaves as argparse's own and keeps its provenance through copies."""

from __future__ import annotations

import argparse
import copy
import pickle
from typing import Any

import pytest
from hypothesis import given

from layerconf import Layer, LayerStack, Namespace, explain, explain_all, notices, provenance_of
from layerconf.core.records import join_path

from .strategies import layer_lists, leaf_paths


def example() -> Namespace:
    return LayerStack(
        [
            Layer.from_mapping("default", {"lr": 1e-6, "opt": {"beta1": 0.9, "beta2": 0.95}}),
            Layer.from_mapping("cli", {"lr": 2e-6}),
            Layer.from_mapping("role-config", {"opt": {"beta2": 0.98}}, source="critic.yaml"),
        ]
    ).resolve(role="critic")


def answers(args: argparse.Namespace) -> list[str]:
    return [str(explain(args, join_path(path))) for path in leaf_paths(vars(args))]


class TestLikeArgparse:
    """A resolved namespace is used exactly as an argparse.Namespace."""

    def test_is_an_argparse_namespace(self) -> None:
        """Trainers that check isinstance(args, argparse.Namespace) keep working."""
        assert isinstance(example(), argparse.Namespace)

    def test_vars_holds_configuration_keys_only(self) -> None:
        """vars() shows the configuration and nothing of the provenance."""
        assert vars(example()) == {"lr": 2e-6, "opt": {"beta1": 0.9, "beta2": 0.98}}

    def test_attribute_access_and_assignment(self) -> None:
        """args.lr reads and writes like any namespace."""
        args = example()
        args.lr = 3e-6
        assert args.lr == 3e-6
        assert "lr=3e-06" in repr(args)

    def test_equality_compares_values_only(self) -> None:
        """== compares values, with a plain Namespace too."""
        args = example()
        plain = argparse.Namespace(lr=2e-6, opt={"beta1": 0.9, "beta2": 0.98})
        assert args == plain
        assert plain == args
        other = LayerStack([Layer.from_mapping("x", vars(plain))]).resolve()
        assert other == args

    def test_a_config_key_may_be_named_like_anything(self) -> None:
        """Keys such as 'explain' or 'notices' are ordinary attributes."""
        args = LayerStack([Layer.from_mapping("a", {"explain": 1, "notices": 2})]).resolve()
        assert (args.explain, args.notices) == (1, 2)


class TestCopies:
    """Provenance survives copy.copy, copy.deepcopy and pickle."""

    def test_copy_keeps_provenance(self) -> None:
        """A shallow copy explains the same way."""
        args = example()
        assert answers(copy.copy(args)) == answers(args)

    def test_deepcopy_is_independent(self) -> None:
        """A deep copy shares no mutable value and explains the same way."""
        args = example()
        clone = copy.deepcopy(args)
        assert clone == args
        assert clone.opt is not args.opt
        assert answers(clone) == answers(args)

    @pytest.mark.parametrize("protocol", [2, 3, 4, 5])
    def test_pickle_round_trip(self, protocol: int) -> None:
        """Pickled to a remote worker, the namespace keeps values, type and provenance."""
        args = example()
        clone = pickle.loads(pickle.dumps(args, protocol=protocol))
        assert type(clone) is Namespace
        assert vars(clone) == vars(args)
        assert answers(clone) == answers(args)
        assert explain(clone, "lr").role == "critic"

    @given(layer_lists())
    def test_explain_all_agrees_with_explain(self, layers: list[Layer]) -> None:
        """explain_all gives, for every key, what explain gives."""
        args = LayerStack(layers).resolve()
        args.lr = 0.5
        assert {k: str(s) for k, s in explain_all(args).items()} == {
            k: str(explain(args, k)) for k in vars(args)
        }

    @given(layer_lists())
    def test_any_stack_survives_deepcopy_and_pickle(self, layers: list[Layer]) -> None:
        """Equal values and the same explain answers after deepcopy and pickle."""
        args = LayerStack(layers).resolve()
        for clone in (copy.deepcopy(args), pickle.loads(pickle.dumps(args, protocol=5))):
            assert vars(clone) == vars(args)
            assert answers(clone) == answers(args)


class TestProvenanceAccess:
    """Provenance is reached through module functions, never through attributes."""

    def test_plain_namespace_has_none(self) -> None:
        """provenance_of and notices accept any namespace."""
        plain = argparse.Namespace(lr=1)
        assert provenance_of(plain) is None
        assert notices(plain) == ()

    def test_resolved_namespace_has_one(self) -> None:
        """The provenance names the role and the layers."""
        provenance = provenance_of(example())
        assert provenance is not None
        assert provenance.role == "critic"
        assert [layer.name for layer in provenance.layers] == ["default", "cli", "role-config"]

    def test_unresolved_values(self) -> None:
        """Namespace(**kwargs) still works; it only lacks provenance until resolved."""
        made: Any = Namespace(lr=1)
        assert made.lr == 1
        assert provenance_of(made) is None
