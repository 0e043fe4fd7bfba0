"""The layer stack: merge semantics and the laws every resolution obeys."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from layerconf import Layer, LayerStack, Reason, RuleContext, SetValue, explain, rule
from layerconf.core._policy_merger import PolicyMerger
from layerconf.core.merge import _chain, atomic_contributions, merge_layers, trace
from layerconf.core.records import Layer as LayerRecord
from layerconf.core.records import join_path
from layerconf.core.stack import resolve_stacks
from layerconf.core.values import ATOMIC_TYPES, copy_value, same_value

from .strategies import (
    containers,
    layer_lists,
    leaf_paths,
    mappings,
    nested_keys,
    odd_leaves,
    odd_mappings,
    policies,
)


def resolve(layers: list[Layer], policy: dict[str, Any] | None = None) -> Any:
    return LayerStack(layers, policies=policy or {}).resolve()


def lookup(tree: dict[str, Any], path: tuple[str, ...]) -> Any:
    for part in path:
        tree = tree[part]
    return tree


def kind_conflicts(trees: list[dict[str, Any]]) -> bool:
    """True when some path holds a mapping (or a list) in one tree and something else in another."""
    kinds: dict[tuple[str, ...], type] = {}

    def walk(tree: dict[str, Any], prefix: tuple[str, ...]) -> bool:
        for key, value in tree.items():
            path = (*prefix, key)
            kind = type(value) if type(value) in (dict, list) else object
            if kinds.setdefault(path, kind) is not kind:
                return True
            if kind is dict and walk(value, path):
                return True
        return False

    return any(walk(tree, ()) for tree in trees)


class TestMergeSemantics:
    """Plain values and lists replace, mappings merge key by key, policies change that per key."""

    def test_later_layer_wins(self) -> None:
        """A later layer's plain value replaces an earlier one."""
        args = resolve([Layer.from_mapping("a", {"lr": 1}), Layer.from_mapping("b", {"lr": 2})])
        assert args.lr == 2

    def test_mappings_merge_key_by_key(self) -> None:
        """A nested mapping resolves to a plain dict merged leaf by leaf."""
        args = resolve(
            [
                Layer.from_mapping("default", {"opt": {"beta1": 0.9, "beta2": 0.95}}),
                Layer.from_mapping("role", {"opt": {"beta2": 0.98}}),
            ]
        )
        assert args.opt == {"beta1": 0.9, "beta2": 0.98}
        assert type(args.opt) is dict

    def test_lists_replace_by_default(self) -> None:
        """A list is a plain value: the later one replaces the earlier one."""
        args = resolve(
            [Layer.from_mapping("a", {"x": [1, 2]}), Layer.from_mapping("b", {"x": [3]})]
        )
        assert args.x == [3]

    def test_append_policy_concatenates(self) -> None:
        """Under ``append`` lists are concatenated, earlier first."""
        layers = [Layer.from_mapping("a", {"x": [1, 2]}), Layer.from_mapping("b", {"x": [3]})]
        assert resolve(layers, {"x": "append"}).x == [1, 2, 3]

    def test_replace_policy_replaces_mappings(self) -> None:
        """Under ``replace`` a later mapping replaces the earlier one whole."""
        layers = [
            Layer.from_mapping("a", {"opt": {"b1": 1, "b2": 2}}),
            Layer.from_mapping("b", {"opt": {"b2": 3}}),
        ]
        assert resolve(layers, {"opt": "replace"}).opt == {"b2": 3}

    def test_nested_policy(self) -> None:
        """A policy can address a nested path."""
        layers = [
            Layer.from_mapping("a", {"opt": {"hooks": ["x"], "b": 1}}),
            Layer.from_mapping("b", {"opt": {"hooks": ["y"]}}),
        ]
        assert resolve(layers, {"opt.hooks": "append"}).opt == {"hooks": ["x", "y"], "b": 1}

    def test_type_conflict_replaces(self) -> None:
        """A mapping meeting a plain value is replaced, in either direction."""
        first = resolve(
            [Layer.from_mapping("a", {"o": {"x": 1}}), Layer.from_mapping("b", {"o": 5})]
        )
        second = resolve(
            [Layer.from_mapping("a", {"o": 5}), Layer.from_mapping("b", {"o": {"x": 1}})]
        )
        assert (first.o, second.o) == (5, {"x": 1})

    def test_bad_policy_is_refused(self) -> None:
        """An unknown policy name is a ValueError that lists the valid ones."""
        with pytest.raises(ValueError, match="'merge', 'replace', 'append'"):
            LayerStack([], policies={"x": "concat"})  # type: ignore[dict-item]

    def test_duplicate_layer_names_are_refused(self) -> None:
        """Layer names identify layers, so they must be unique."""
        with pytest.raises(ValueError, match="two layers are named 'a'"):
            LayerStack([Layer.from_mapping("a", {}), Layer.from_mapping("a", {})])

    def test_non_layer_is_refused(self) -> None:
        """A stack holds Layer objects only."""
        with pytest.raises(TypeError, match="holds Layer objects"):
            LayerStack([{"lr": 1}])  # type: ignore[list-item]

    def test_empty_stack(self) -> None:
        """No layers resolve to an empty namespace."""
        assert vars(LayerStack([]).resolve()) == {}

    def test_namespaces_a_roles_rule_saw_are_not_the_results(self) -> None:
        """A 'roles' rule sees namespaces of the values so far; what it sets afterwards, and a
        write to a result, change only the results (each result owns its values)."""
        seen: dict[str, Any] = {}

        @rule("roles")
        def raise_critic_lr(context: RuleContext) -> Any:
            seen.update(context.roles)
            yield SetValue("lr", 2.0, role="critic")

        stacks = {
            role: LayerStack([Layer.from_mapping("cli", {"lr": 1.0})], [raise_critic_lr])
            for role in ("actor", "critic")
        }
        roles = resolve_stacks(stacks)
        assert (roles["critic"].lr, seen["critic"].lr) == (2.0, 1.0)
        roles["actor"].lr = 3.0
        assert (seen["actor"].lr, vars(roles["critic"])) == (1.0, {"lr": 2.0})


def eager_merge(layers: list[LayerRecord], policies: dict[tuple[str, ...], Any]) -> dict[str, Any]:
    """The merge as it was written before it was made lazy: every layer's containers copied
    and merged into the result in turn (the reference `merge_layers` must equal)."""
    result: dict[str, Any] = {}
    merger = PolicyMerger(policies)
    for layer in layers:
        earlier = {key: result[key] for key in layer.mutable_keys if key in result}
        result.update(layer.values)
        for key in layer.mutable_keys:
            value = copy_value(layer.values[key])
            if key in earlier:
                value = merger.value_strategy([key], earlier[key], value)
            result[key] = value
    return result


def update_merge(layers: list[LayerRecord], policies: dict[tuple[str, ...], Any]) -> dict[str, Any]:
    """The merge as it was before it skipped the layers the last one overrides whole: one
    ``dict.update`` per layer, then the containers merged (the reference `merge_layers` must
    equal, key order and the very objects of plain values included)."""
    result: dict[str, Any] = {}
    candidates: set[str] = set()
    for layer in layers:
        result.update(layer.values)
        candidates.update(layer.mutable_keys)
    merger = PolicyMerger(policies)
    for key in candidates:
        if type(result[key]) in ATOMIC_TYPES:
            continue
        chain = _chain(layers, key, policies.get((key,)))
        if chain is None:
            continue
        value = copy_value(chain[0])
        for later in chain[1:]:
            value = merger.value_strategy([key], value, copy_value(later))
        result[key] = value
    return result


odd_values = st.recursive(
    odd_leaves, lambda inner: st.dictionaries(nested_keys, inner, max_size=3), max_leaves=6
)


@st.composite
def overridden_stacks(draw: st.DrawFn) -> list[Layer]:
    """Layers whose last one sets every key of the others (often in another order), and
    sometimes more: the stacks whose earlier layers give no final value."""
    contents = draw(st.lists(odd_mappings, min_size=1, max_size=5))
    keys = list(dict.fromkeys(key for mapping in contents for key in mapping))
    keys += draw(st.lists(st.sampled_from(["extra", "more"]), max_size=2, unique=True))
    order = draw(st.permutations(keys))
    last = {key: draw(odd_values) for key in order}
    return [Layer.from_mapping(f"l{i}", mapping) for i, mapping in enumerate([*contents, last])]


def assert_same_merge(layers: list[Layer], policy: dict[str, Any]) -> None:
    stack = LayerStack(layers, policies=policy)
    merged = merge_layers(stack.layers, stack.policies)
    before = update_merge(list(stack.layers), dict(stack.policies))
    assert list(merged) == list(before)
    assert same_value(before, merged, copied=False)
    for key, value in merged.items():
        if type(value) in ATOMIC_TYPES:
            assert value is before[key]


class TestMergeLaws:
    """Property tests of the laws every resolution obeys."""

    @given(overridden_stacks(), policies)
    def test_merge_of_overridden_layers_equals_the_update_merge(
        self, layers: list[Layer], policy: dict[str, Any]
    ) -> None:
        """Skipping the layers the last one overrides gives what updating every one in gave:
        the same keys in the same order, the very same plain values, equal containers."""
        assert_same_merge(layers, policy)

    @given(layer_lists(max_size=6, odd=True), policies)
    def test_merge_equals_the_update_merge(
        self, layers: list[Layer], policy: dict[str, Any]
    ) -> None:
        """Any stack merges as updating every layer in did (the same keys, order, objects)."""
        assert_same_merge(layers, policy)

    def test_overridden_layer_still_places_its_new_keys(self) -> None:
        """A layer whose keys the last one all sets still places the keys first seen in it."""
        layers = [
            Layer.from_mapping("a", {"x": 1}),
            Layer.from_mapping("b", {"y": 2, "x": 3}),
            Layer.from_mapping("c", {"y": 4, "x": 5}),
        ]
        assert list(vars(resolve(layers)).items()) == [("x", 5), ("y", 4)]

    def test_overridden_layers_keep_their_history(self) -> None:
        """The layers the last one overrides whole still show in every setting's history."""
        layers = [Layer.from_mapping(f"l{i}", {"x": i, "y": [i]}) for i in range(4)]
        setting = explain(resolve(layers), "y")
        assert (setting.value, [entry.layer for entry in setting.history]) == (
            [3],
            ["l2", "l1", "l0"],
        )

    @given(layer_lists(max_size=6, odd=True), policies)
    def test_merge_equals_the_eager_merge(
        self, layers: list[Layer], policy: dict[str, Any]
    ) -> None:
        """Merging only what the last layers keep gives what merging every layer in turn gave:
        the same keys in the same order, the same types and values all the way down."""
        stack = LayerStack(layers, policies=policy)
        lazy = merge_layers(stack.layers, stack.policies)
        eager = eager_merge(list(stack.layers), dict(stack.policies))
        assert list(lazy) == list(eager)
        assert same_value(eager, lazy, copied=False)
        inputs = {id(c) for layer in layers for c in containers(layer.values)}
        assert not {id(c) for c in containers(lazy)} & inputs

    @given(layer_lists(), policies)
    def test_never_mutates_an_input(self, layers: list[Layer], policy: dict[str, Any]) -> None:
        """Resolving leaves every layer exactly as it was."""
        before = [copy.deepcopy(layer.values) for layer in layers]
        resolve(layers, policy)
        assert [layer.values for layer in layers] == before

    @given(mappings)
    def test_layer_copies_its_mapping(self, mapping: dict[str, Any]) -> None:
        """A layer shares no container with the mapping it was built from."""
        layer = Layer.from_mapping("a", mapping)
        assert layer.values == mapping
        assert not {id(c) for c in containers(layer.values)} & {id(c) for c in containers(mapping)}

    @given(layer_lists(), policies)
    def test_result_shares_nothing_mutable(
        self, layers: list[Layer], policy: dict[str, Any]
    ) -> None:
        """No dict or list of a result is also in a layer or in another result."""
        first, second = resolve(layers, policy), resolve(layers, policy)
        inputs = {id(c) for layer in layers for c in containers(layer.values)}
        mine = {id(c) for c in containers(vars(first))} - {id(vars(first))}
        theirs = {id(c) for c in containers(vars(second))}
        assert not mine & inputs
        assert not mine & theirs

    @given(layer_lists())
    def test_last_layer_wins_for_plain_values(self, layers: list[Layer]) -> None:
        """A key's value is the last layer's whenever that value is not a mapping."""
        args = vars(resolve(layers))
        for key in args:
            holders = [layer for layer in layers if key in layer.values]
            last = holders[-1].values[key]
            if type(last) is not dict:
                assert args[key] == last

    @given(layer_lists(), st.integers(0, 5), policies)
    def test_empty_layer_changes_nothing(
        self, layers: list[Layer], where: int, policy: dict[str, Any]
    ) -> None:
        """Inserting an empty layer anywhere changes no value and no explanation."""
        plain = resolve(layers, policy)
        padded_layers = list(layers)
        padded_layers.insert(min(where, len(layers)), Layer.from_mapping("empty", {}))
        padded = resolve(padded_layers, policy)
        assert padded == plain
        for path in leaf_paths(vars(plain)):
            key = join_path(path)
            assert str(explain(padded, key)) == str(explain(plain, key))

    @given(layer_lists(), policies)
    def test_every_leaf_has_one_origin_in_a_layer_holding_it(
        self, layers: list[Layer], policy: dict[str, Any]
    ) -> None:
        """Each resolved leaf's origin names a layer that holds that leaf."""
        args = resolve(layers, policy)
        by_name = {layer.name: layer for layer in layers}
        for path in leaf_paths(vars(args)):
            setting = explain(args, join_path(path))
            held, _ = by_name[setting.layer].lookup(path)
            assert held

    @given(layer_lists(), policies)
    def test_history_is_ordered_and_complete(
        self, layers: list[Layer], policy: dict[str, Any]
    ) -> None:
        """Final value plus history name every layer that holds the path, newest first."""
        args = resolve(layers, policy)
        position = {layer.name: index for index, layer in enumerate(layers)}
        for path in leaf_paths(vars(args)):
            setting = explain(args, join_path(path))
            named = [setting.layer] + [entry.layer for entry in setting.history]
            indices = [position[name] for name in named]
            assert indices == sorted(indices, reverse=True)
            holders = [layer.name for layer in layers if layer.lookup(path)[0]]
            assert named == holders[::-1]
            assert all(
                entry.reason in (Reason.OVERRIDDEN, Reason.MERGED) for entry in setting.history
            )

    @given(layer_lists(), policies)
    def test_trace_agrees_with_merge(self, layers: list[Layer], policy: dict[str, Any]) -> None:
        """For every path, the traced winner holds the merged value (unless merged from several)."""
        stack = LayerStack(layers, policies=policy)
        merged = merge_layers(stack.layers, stack.policies)
        for path in leaf_paths(merged):
            traced = trace(stack.layers, stack.policies, path)
            assert traced.present
            final = traced.contributions[-1]
            assert final.reason is None
            if not any(c.reason is Reason.MERGED for c in traced.contributions):
                assert final.value == lookup(merged, path)

    @given(layer_lists(max_size=6, odd=True), policies)
    def test_atomic_contributions_are_the_traced_ones(
        self, layers: list[Layer], policy: dict[str, Any]
    ) -> None:
        """For a top-level key, `atomic_contributions` gives what `trace` does whenever every
        layer holding it holds a value of an atomic type, whatever the policies, and None
        exactly when one does not."""
        stack = LayerStack(layers, policies=policy)
        for key in {key for layer in stack.layers for key in layer.values} | {"absent"}:
            held = [layer.values[key] for layer in stack.layers if key in layer.values]
            found = atomic_contributions(stack.layers, key)
            if not all(type(value) in ATOMIC_TYPES for value in held):
                assert found is None
                continue
            assert found is not None
            traced = trace(stack.layers, stack.policies, (key,)).contributions
            assert [tuple(contribution) for contribution in traced] == found
            for (_, value, _), contribution in zip(found, traced, strict=True):
                assert value is contribution.value

    @given(
        st.lists(mappings, min_size=3, max_size=3), st.sampled_from(["merge", "append", "replace"])
    )
    def test_merge_is_associative(self, contents: list[dict[str, Any]], mode: str) -> None:
        """(a + b) + c == a + (b + c) when no path holds a mapping in one layer and not another.

        A mapping meeting a plain value is replaced, which is not associative (``{x}``, then
        ``None``, then ``{}``; lists likewise under ``append``): the law holds for well-typed
        stacks, and always under ``replace``.
        """
        if mode != "replace":
            assume(not kind_conflicts(contents))
        a, b, c = (Layer.from_mapping(name, m) for name, m in zip("abc", contents, strict=True))
        policy = dict.fromkeys(("lr", "opt", "save", "seed", "betas", "tp"), mode)

        def fold(*layers: Layer) -> Layer:
            return Layer.from_mapping(
                "+".join(layer.name for layer in layers), vars(resolve(list(layers), policy))
            )

        left = resolve([fold(a, b), c], policy)
        right = resolve([a, fold(b, c)], policy)
        assert left == right == resolve([a, b, c], policy)
