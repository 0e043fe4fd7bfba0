"""Merging layers into one mapping, and tracing which layers a merged path came from.

The merge semantics are defined once, by `_merges_into`: whether an earlier value lives on
inside a later one under the path's policy (mappings merge unless ``replace``, lists are
concatenated under ``append``, anything else is replaced). `merge_layers` asks it in its
deepmerge strategies, which then merge with deepmerge's own (``merge`` for dicts, ``append``
for lists) or keep the later value; `trace` asks it of each layer's value and the next one's.

This is the only module that knows deepmerge. deepmerge merges nested containers; the flat
top level (almost every key of a real configuration) is merged with plain dict operations,
which is what keeps a 1,000-key resolution cheap.

deepmerge mutates its base in place and assigns keys new to the base without calling any
strategy, so both sides are always private copies (`copy_value`) before they reach it.

Provenance is not recorded while merging: for any path, `trace` re-walks the layers and says
which layers held it and why each lost. The property tests check that `trace` and
`merge_layers` agree on every path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

from deepmerge import Merger
from deepmerge.strategy.dict import DictStrategies
from deepmerge.strategy.list import ListStrategies

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

# Stands for what a layer holding a path holds at each of its ancestors, in `trace`.
_A_MAPPING: dict[str, Any] = {}


def _merges_into(earlier: Any, later: Any, policy: Policy | None) -> bool:
    """Whether `earlier` lives on inside `later` when merged under `policy`: the semantics.

    Both are plain dicts and `policy` is not ``replace``, or both are plain lists under
    ``append``; otherwise `later` replaces `earlier`. No atomic value (`is_atomic`) is a plain
    dict or list, which is why `merge_layers` updates atomic values in without asking.
    """
    if type(earlier) is dict and type(later) is dict:
        return policy != "replace"
    return type(earlier) is list and type(later) is list and policy == "append"


class _PolicyMerger(Merger):
    """A deepmerge Merger that merges where `_merges_into` says so, with deepmerge's strategies."""

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
        if _merges_into(base, nxt, self._policies.get(tuple(path))):
            return DictStrategies.strategy_merge(merger, path, base, nxt)
        return nxt

    def _merge_lists(self, merger: Merger, path: list[str], base: list[Any], nxt: list[Any]) -> Any:
        if _merges_into(base, nxt, self._policies.get(tuple(path))):
            return ListStrategies.strategy_append(merger, path, base, nxt)
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


def trace(
    layers: Sequence[Layer],
    policies: Mapping[Path, Policy],
    path: Path,
) -> Trace:
    """Which layers set `path`, in order: `merge_layers`'s semantics (`_merges_into`) traced.

    A layer that replaces an ancestor of `path` (with a non-mapping, or under a ``replace``
    policy) overrides everything before it at `path`, even where it does not hold `path`.
    """
    entries: list[tuple[int, Any, bool, bool]] = []  # (layer index, value, holds path, wipes)
    indices = range(len(layers))  # `plain_settings` walks them all at once for most keys
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
                elif not _merges_into(_A_MAPPING, node, policies.get(path[: depth + 1])):
                    wiped = True  # it replaces the mappings before it on the way to `path`
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
