"""Hypothesis strategies for layerconf's tests: layers, stacks and merge policies."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from layerconf import Layer

# A small key alphabet, so that layers collide often.
keys = st.sampled_from(["lr", "opt", "save", "seed", "betas", "tp"])
nested_keys = st.sampled_from(["a", "b", "c"])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=4),
)
leaves = st.one_of(scalars, st.lists(st.integers(0, 9), max_size=3))


def _children(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.dictionaries(nested_keys, inner, max_size=3)


values = st.recursive(leaves, _children, max_leaves=6)
mappings = st.dictionaries(keys, values, max_size=5)
policies = st.dictionaries(
    st.sampled_from(["opt", "betas", "opt.a", "opt.b", "save"]),
    st.sampled_from(["merge", "replace", "append"]),
    max_size=3,
)


# Beside plain values, lists and mappings: tuples (immutable, or holding a list), sets.
odd_leaves = st.one_of(
    leaves,
    st.tuples(st.integers(0, 9)),
    st.tuples(st.lists(st.integers(0, 9), max_size=2)),
    st.frozensets(st.integers(0, 9), max_size=2),
    st.sets(st.integers(0, 9), max_size=2),
)
odd_mappings = st.dictionaries(keys, st.recursive(odd_leaves, _children, max_leaves=6), max_size=5)


@st.composite
def layer_lists(
    draw: st.DrawFn, min_size: int = 1, max_size: int = 5, odd: bool = False
) -> list[Layer]:
    """Layers named l0, l1, ... in precedence order (with tuples and sets too when `odd`)."""
    contents = draw(
        st.lists(odd_mappings if odd else mappings, min_size=min_size, max_size=max_size)
    )
    return [Layer.from_mapping(f"l{i}", mapping) for i, mapping in enumerate(contents)]


def leaf_paths(tree: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every path to a non-mapping value (or an empty mapping) in `tree`."""
    paths: list[tuple[str, ...]] = []
    for key, value in tree.items():
        path = (*prefix, key)
        if type(value) is dict and value:
            paths.extend(leaf_paths(value, path))
        else:
            paths.append(path)
    return paths


def containers(tree: Any) -> list[Any]:
    """Every dict and list inside `tree` (itself included), to check that nothing is shared."""
    found: list[Any] = []
    if type(tree) is dict:
        found.append(tree)
        for value in tree.values():
            found.extend(containers(value))
    elif type(tree) is list:
        found.append(tree)
        for value in tree:
            found.extend(containers(value))
    return found
