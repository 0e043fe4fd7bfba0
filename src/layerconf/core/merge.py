"""Merging layers into one mapping, and tracing which layers a merged path came from.

This is the only module that knows deepmerge. deepmerge merges nested containers; the flat
top level (almost every key of a real configuration) is merged with plain dict operations,
which is what keeps a 1,000-key resolution cheap.

deepmerge mutates its base in place and assigns keys new to the base without calling any
strategy, so both sides are always private copies (`copy_value`) before they reach it.

Provenance is not recorded while merging: for any path, `trace` re-walks the layers with the
same policies and says which layers held it and why each lost. The property tests check that
`trace` and `merge_layers` agree on every path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from deepmerge import Merger

from layerconf.core.records import Layer, Path, Reason
from layerconf.core.values import copy_value

__all__ = [
    "POLICIES",
    "Contribution",
    "Policy",
    "Trace",
    "merge_layers",
    "trace",
]

Policy = Literal["merge", "replace", "append"]
#: ``merge``: mappings merge key by key, anything else is replaced (the default);
#: ``replace``: the later value replaces the earlier one whole, mappings included;
#: ``append``: lists are concatenated (earlier first), mappings merge, anything else is replaced.
POLICIES: tuple[Policy, ...] = ("merge", "replace", "append")


class _PolicyMerger(Merger):
    """A deepmerge Merger whose dict and list strategies follow per-path policies."""

    def __init__(self, policies: Mapping[Path, Policy]) -> None:
        self._policies = policies
        super().__init__(
            [(dict, [self._merge_dicts]), (list, [self._merge_lists])],
            ["override"],
            ["override"],
        )

    def _merge_dicts(
        self, merger: Merger, path: list[str], base: dict[Any, Any], nxt: dict[Any, Any]
    ) -> Any:
        if self._policies.get(tuple(path)) == "replace":
            return nxt
        for key, value in nxt.items():
            base[key] = (
                merger.value_strategy([*path, key], base[key], value) if key in base else value
            )
        return base

    def _merge_lists(self, merger: Merger, path: list[str], base: list[Any], nxt: list[Any]) -> Any:
        if self._policies.get(tuple(path)) == "append":
            return base + nxt
        return nxt


def merge_layers(layers: Sequence[Layer], policies: Mapping[Path, Policy]) -> dict[str, Any]:
    """Merge `layers` in order (later wins) into a new dict sharing nothing mutable with them."""
    result: dict[str, Any] = {}
    merger: _PolicyMerger | None = None
    for layer in layers:
        values = layer.values
        mutable = layer.mutable_keys
        if not mutable:
            result.update(values)
            continue
        earlier = {key: result[key] for key in mutable if key in result}
        result.update(values)
        for key in mutable:
            value = copy_value(values[key])
            if key in earlier:
                merger = merger or _PolicyMerger(policies)
                value = merger.value_strategy([key], earlier[key], value)
            result[key] = value
    return result


class Contribution(NamedTuple):
    """One layer's value at a traced path, and why it is not the final value (None if it is).

    `layer` is the layer's index in the stack.
    """

    layer: int
    value: Any
    reason: Reason | None


class Trace(NamedTuple):
    """The layers that held one path, oldest first; `present` is False if the merge removed it."""

    contributions: tuple[Contribution, ...]
    present: bool


def _merges_into(earlier: Any, later: Any, policy: Policy | None) -> bool:
    """Whether `earlier` lives on inside `later` when merged under `policy`."""
    if type(earlier) is dict and type(later) is dict:
        return policy != "replace"
    return type(earlier) is list and type(later) is list and policy == "append"


def trace(
    layers: Sequence[Layer],
    policies: Mapping[Path, Policy],
    path: Path,
    candidates: Iterable[int] | None = None,
) -> Trace:
    """Which layers set `path`, in order, with the same semantics as `merge_layers`.

    A layer that replaces an ancestor of `path` (with a non-mapping, or under a ``replace``
    policy) overrides everything before it at `path`, even where it does not hold `path`.
    `candidates`, the indices of the layers holding ``path[0]`` in order, saves looking at
    the others (no other layer can hold or replace `path`).
    """
    entries: list[tuple[int, Any, bool, bool]] = []  # (layer index, value, holds path, wipes)
    indices = range(len(layers)) if candidates is None else candidates
    if len(path) == 1:  # a top-level key, almost every key there is: nothing to wipe
        key = path[0]
        for index in indices:
            values = layers[index].values
            if key in values:
                entries.append((index, values[key], True, False))
    else:
        for index in indices:
            node: Any = layers[index].values
            held = wiped = False
            for depth, part in enumerate(path):
                if type(node) is not dict or part not in node:
                    break
                node = node[part]
                if depth == len(path) - 1:
                    held = True
                elif type(node) is not dict or policies.get(path[: depth + 1]) == "replace":
                    wiped = True
            if held or wiped:
                entries.append((index, node if held else None, held, wiped))
    policy = policies.get(path)
    contributions: list[Contribution] = []
    for position, (index, value, held, _) in enumerate(entries):
        if not held:
            continue
        if position + 1 == len(entries):
            contributions.append(Contribution(index, value, None))
            continue
        _, later, later_held, later_wipes = entries[position + 1]
        merged = later_held and not later_wipes and _merges_into(value, later, policy)
        contributions.append(
            Contribution(index, value, Reason.MERGED if merged else Reason.OVERRIDDEN)
        )
    return Trace(tuple(contributions), bool(entries) and entries[-1][2])
