"""Merging layers into one mapping, and tracing which layers a merged path came from.

The merge semantics are defined once, by `merges_into`: whether an earlier value lives on
inside a later one under the path's policy (mappings merge unless ``replace``, lists are
concatenated under ``append``, anything else is replaced). `merge_layers` asks it in its
deepmerge strategies, which then merge with deepmerge's own (``merge`` for dicts, ``append``
for lists) or keep the later value; `trace` asks it of each layer's value and the next one's.

deepmerge merges nested containers, in `layerconf.core._policy_merger` (the only module that
knows it, imported on the first such merge); the flat top level (almost every key of a real
configuration) is merged with plain dict operations, which is what keeps a 1,000-key
resolution cheap.

deepmerge mutates its base in place and assigns keys new to the base without calling any
strategy, so both sides are always private copies (`copy_value`) before they reach it.

Provenance is not recorded while merging: for any path, `trace` re-walks the layers and says
which layers held it and why each lost. The property tests check that `trace` and
`merge_layers` agree on every path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from layerconf.core.records import Layer, Path, Reason
from layerconf.core.values import ATOMIC_TYPES, copy_value

if TYPE_CHECKING:
    from layerconf.core._policy_merger import PolicyMerger

__all__ = [
    "POLICIES",
    "Contribution",
    "Policy",
    "Trace",
    "atomic_contributions",
    "merge_layers",
    "merges_into",
    "trace",
]

Policy = Literal["merge", "replace", "append"]
#: ``merge``: mappings merge key by key, anything else is replaced (the default);
#: ``replace``: the later value replaces the earlier one whole, mappings included;
#: ``append``: lists are concatenated (earlier first), mappings merge, anything else is replaced.
POLICIES: tuple[Policy, ...] = ("merge", "replace", "append")

# Stands for what a layer holding a path holds at each of its ancestors, in `trace`.
_A_MAPPING: dict[str, Any] = {}


def merges_into(earlier: Any, later: Any, policy: Policy | None) -> bool:
    """Whether `earlier` lives on inside `later` when merged under `policy`: the semantics.

    Both are plain dicts and `policy` is not ``replace``, or both are plain lists under
    ``append``; otherwise `later` replaces `earlier`. No atomic value (`is_atomic`) is a plain
    dict or list, which is why `merge_layers` updates atomic values in without asking.
    """
    if type(earlier) is dict and type(later) is dict:
        return policy != "replace"
    return type(earlier) is list and type(later) is list and policy == "append"


def merge_layers(layers: Sequence[Layer], policies: Mapping[Path, Policy]) -> dict[str, Any]:
    """Merge `layers` in order (later wins) into a new dict sharing nothing mutable with them.

    The top level is one ``dict.update`` per layer: a key's last layer wins, at the place a
    layer first set it. A layer whose keys are all placed already and all set again by the
    last layer gives the result nothing, so it is skipped and its values are not read: in a
    stack of many layers that each set every key, only the first and the last are updated
    in, instead of pulling every layer's values through the caches once more. Only a key
    whose final value is a container (`Layer.mutable_keys`) needs more: its own copy, merged
    with the earlier layers' values where `merges_into` says so (`_chain` walks every layer,
    skipped ones included). Nothing is copied or merged for a value a later layer replaces,
    so the work per layer is C-level dict work, whatever the containers of the layers a
    later one overrides.
    """
    result: dict[str, Any] = {}
    if not layers:
        return result
    last = layers[-1]
    final, placed = last.values.keys(), result.keys()
    # The mutable keys of the layers that may give a final value: a skipped layer's keys all
    # take the last layer's value, so the last layer's own mutable keys name those.
    candidates: set[str] = set(last.mutable_keys)
    # Once the keys placed are the last layer's keys (a first layer setting every key, and
    # only those), one test says a layer is skipped: its keys are all the last layer's.
    everything: bool | None = None  # not asked yet
    for index in range(len(layers) - 1):
        keys = layers[index].values.keys()
        if placed and keys <= final:
            if everything is None:
                everything = placed == final
            if everything or keys <= placed:
                continue
        result.update(layers[index].values)
        everything = None
        if layers[index].mutable_keys:
            candidates.update(layers[index].mutable_keys)
    result.update(last.values)
    if not candidates:
        return result
    merger: PolicyMerger | None = None
    atomic = ATOMIC_TYPES
    for key in candidates:
        value = result[key]
        kind = type(value)
        if kind in atomic:
            continue  # a later layer set a plain value: it wins whole
        policy = policies.get((key,)) if policies else None
        if kind is list and policy != "append" and atomic.issuperset(map(type, value)):
            # A list replaces whatever came before it: its chain is itself alone, and a list
            # of atomic values is copied in C (what `_chain` and `copy_value` would give; a
            # layer's private copy does the same).
            result[key] = list(value)
            continue
        chain = _chain(layers, key, policy)
        if chain is None:
            continue  # a later layer set an immutable value (a tuple of numbers...)
        value = copy_value(chain[0])
        for later in chain[1:]:
            if merger is None:
                from layerconf.core._policy_merger import PolicyMerger

                merger = PolicyMerger(policies)
            value = merger.value_strategy([key], value, copy_value(later))
        result[key] = value
    return result


def _chain(layers: Sequence[Layer], key: str, policy: Policy | None) -> list[Any] | None:
    """The values of `key` that make its merged value, oldest first: the last layer's, and
    before it each earlier value that lives on in the next one (`merges_into`); None when
    the last layer's value is immutable and so is shared as it is.

    A merged value has the type of the later value, so whether the merge so far lives on in
    the next value depends on the types of the two layers' own values alone: the chain can be
    found walking back from the last layer, and stops at the first value that is replaced.
    """
    chain: list[Any] = []
    for layer in reversed(layers):
        values = layer.values
        if key not in values:
            continue
        value = values[key]
        if not chain:
            if key not in layer.mutable_keys:
                return None
        elif not merges_into(value, chain[-1], policy):
            break
        chain.append(value)
    chain.reverse()
    return chain


# NamedTuples in the call form, with real types: the class form evaluates each (string)
# annotation at import, which costs about twice as much.
Contribution = NamedTuple(  # noqa: UP014
    "Contribution", [("layer", int), ("value", Any), ("reason", Reason | None)]
)
Contribution.__doc__ = """One layer's value at a traced path, and why it is not the final value
(None if it is). `layer` is the layer's index in the stack."""

Trace = NamedTuple("Trace", [("contributions", tuple[Contribution, ...]), ("present", bool)])  # noqa: UP014
Trace.__doc__ = """The layers that held one path, oldest first; `present` is False if the merge
removed it."""


def trace(
    layers: Sequence[Layer],
    policies: Mapping[Path, Policy],
    path: Path,
) -> Trace:
    """Which layers set `path`, in order: `merge_layers`'s semantics (`merges_into`) traced.

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
                elif not merges_into(_A_MAPPING, node, policies.get(path[: depth + 1])):
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
        merged = later_held and not later_wipes and merges_into(value, later, policy)
        contributions.append(
            Contribution(index, value, Reason.MERGED if merged else Reason.OVERRIDDEN)
        )
    return Trace(tuple(contributions), bool(entries) and entries[-1][2])


_OVERRIDDEN = Reason.OVERRIDDEN  # (an enum member read from its class costs a lookup)


def atomic_contributions(
    layers: Sequence[Layer], key: str
) -> list[tuple[int, Any, Reason | None]] | None:
    """``trace(layers, policies, (key,)).contributions`` as plain tuples, whatever the
    policies, for a top-level `key` at which every layer holding it holds a value of an
    atomic type (`ATOMIC_TYPES`: almost every key there is); None for any other key.

    No such value is a plain dict or list, so none merges into the next (`merges_into`):
    each but the last is overridden. `explain` asks this first, and `trace` only for None.
    """
    found: list[tuple[int, Any, Reason | None]] = []
    for index, layer in enumerate(layers):
        values = layer.values
        if key in values:
            value = values[key]
            if type(value) not in ATOMIC_TYPES:
                return None
            found.append((index, value, _OVERRIDDEN))
    if found:
        index, value, _ = found[-1]
        found[-1] = (index, value, None)
    return found
