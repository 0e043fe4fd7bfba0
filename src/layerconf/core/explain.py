"""`explain(args, key)`: the answer to "why is the critic's lr 1e-05?"."""

from __future__ import annotations

import argparse
import copyreg
import functools
import itertools
import operator
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from layerconf.core._slots import new_history, new_setting
from layerconf.core.held_secrets import (
    declared_secret_keys,
    held_secret_texts,
    nested_secret_texts,
    secret_keys_of,
)
from layerconf.core.merge import atomic_contributions, trace
from layerconf.core.namespace import (
    Event,
    Provenance,
    Write,
    provenance_of,
    runtime_writes,
    write_count,
    written_keys,
)
from layerconf.core.records import Layer, Origin, Path, Reason, Setting, join_path, split_key
from layerconf.core.secrets import SECRETS
from layerconf.core.suggest import suggestion
from layerconf.core.values import (
    ATOMIC_TYPES,
    Unkept,
    copy_value,
    is_atomic,
    same_value,
    value_text,
)
from layerconf.exceptions import NoProvenanceError, UnknownKeyError

__all__ = [
    "Plain",
    "explain",
    "explain_all",
    "lone_settings",
    "plain_groups",
    "plain_settings",
    "setting_for",
    "unscrubbed",
    "values_at",
]

_RUNTIME = Origin("runtime", "runtime")


def explain(args: argparse.Namespace, key: str) -> Setting:
    """Where the value of `key` in `args` came from, and every value it shadowed.

    `key` is an attribute name, or a dotted path into a nested mapping (``"opt.beta2"``).
    Raises `UnknownKeyError` (a `KeyError`) with a did-you-mean for a key `args` does not hold.
    Assignments after resolution are layer ``runtime``, each with its file and line and, as
    its origin's `label`, its number among the writes to the key (``write 7 of 1,000``); of
    many, the first and the latest are kept (`layerconf.core.namespace.RECENT_WRITES`).
    """
    provenance = _provenance(args)
    values = vars(args)
    written = written_keys(args)
    scrub = _other_secrets(provenance, values, written)
    return _setting(args, provenance, key, values, written, scrub=scrub)


def unscrubbed(
    args: argparse.Namespace, key: str, values: Mapping[str, Any] | None = None
) -> Setting:
    """`explain(args, key)` without the secrets' texts its setting scrubs from what it shows
    (`Setting.scrub`): for a caller that redacts and scrubs values itself, an audit record.
    `values`: a copy of ``vars(args)`` taken once, to answer from while other threads may
    set, add or delete attributes (an audit's keys and leaves are those of its copy)."""
    return _setting(args, _provenance(args), key, values, written_keys(args))


def _setting(
    args: argparse.Namespace,
    provenance: Provenance,
    key: str,
    values: Mapping[str, Any] | None,
    written: frozenset[str],
    *,
    scrub: tuple[str, ...] = (),
) -> Setting:
    """The setting of `key` in `values` (``vars(args)`` when None), scrubbing `scrub`;
    `written`: the keys assigned since resolution (`written_keys`)."""
    current = vars(args) if values is None else values
    if not written:  # no write to look up
        return setting_for(current, provenance, key, scrub=scrub)
    if current is vars(args):  # read before the writes: another thread may write meanwhile
        current = dict(current)
    writes = _writes_at(args, key)
    count = _count_at(args, key) if writes else 0  # (the count labels the writes only)
    return setting_for(current, provenance, key, writes, count, scrub=scrub)


def _other_secrets(
    provenance: Provenance, values: Mapping[str, Any], written: frozenset[str]
) -> tuple[str, ...]:
    """The texts of the secrets a namespace holds (its attributes `values`, the keys
    `written` since resolution), for a setting to scrub from what it shows: a value may
    equal or quote one (`Setting.scrub`)."""
    kept = getattr(provenance, "_secrets", None)
    if kept is None:  # worked out once per provenance, and kept with it
        layers = provenance.layers
        found = nested_secret_texts(layer.values for layer in layers)
        kept = (secret_keys_of(layers), tuple(dict.fromkeys(found)))
        object.__setattr__(provenance, "_secrets", kept)
    layered, nested = kept
    texts = held_secret_texts(layered, values, provenance.layers)
    if written:  # (a value written since resolution: its own secret, or one nested in it)
        texts += held_secret_texts(filter(SECRETS.is_secret, written), values, ())
        texts += nested_secret_texts([{key: values[key] for key in written if key in values}])
    return tuple(dict.fromkeys([*texts, *nested]))


def _reduce_setting(setting: Setting) -> tuple[Any, ...]:
    """How a `Setting` is pickled and copied: with only the `Setting.scrub` texts that change
    how it is shown, so the namespace's other secrets stay home (a worker sending its answer
    for ``lr`` back sends no W&B key). Registered with `copyreg` below."""
    shown = attrs.evolve(setting, scrub=()).redacted()
    scrub = tuple(
        text for text in setting.scrub if attrs.evolve(setting, scrub=(text,)).redacted() != shown
    )
    *fields, _, _ = attrs.astuple(setting, recurse=False)  # (without scrub and secret)
    return functools.partial(Setting, scrub=scrub, secret=setting.secret), tuple(fields)


copyreg.pickle(Setting, _reduce_setting)


def _count_at(args: argparse.Namespace, key: str) -> int:
    count = write_count(args, key)
    if count or not isinstance(key, str) or "." not in key:
        return count
    return write_count(args, split_key(key)[0])


def _writes_at(args: argparse.Namespace, key: str) -> list[Write]:
    """The assignments that set `key`: writes are recorded per attribute, so for a dotted key
    inside a mapping, the writes of its attribute that hold the key, with the key's value."""
    writes = runtime_writes(args, key)
    if writes or not isinstance(key, str) or "." not in key or key in vars(args):
        return writes
    first, *rest = split_key(key)
    found: list[Write] = []
    for write in runtime_writes(args, first):
        node = write.value
        for part in rest:
            if type(node) is not dict or part not in node:
                break
            node = node[part]
        else:
            found.append(write._replace(value=node))
    return found


def _provenance(args: argparse.Namespace) -> Provenance:
    provenance = provenance_of(args)
    if provenance is None:
        raise NoProvenanceError(
            f"this {type(args).__name__} carries no provenance: it did not come from layerconf. "
            "Get one from layerconf.parse_args(parser), layerconf.resolve_roles(parser) or "
            "LayerStack([...]).resolve(), then explain its values"
        )
    return provenance


def explain_all(args: argparse.Namespace) -> dict[str, Setting]:
    """`explain` for every key of `args`, in `vars(args)` order, faster than key by key."""
    provenance = _provenance(args)
    values = dict(vars(args))  # one C call: other threads may be adding keys
    plain = plain_settings(args, values)
    role = provenance.role
    scrub = _other_secrets(provenance, values, written_keys(args))
    secret = declared_secret_keys(provenance.layers)
    explained: dict[str, Setting] = {}
    for key, current in values.items():
        found = plain.get(key)
        if found is None:
            writes = runtime_writes(args, key)
            explained[key] = setting_for(
                values, provenance, key, writes, write_count(args, key), scrub=scrub
            )
        else:
            history = new_history(
                key, [(value, origin, _OVERRIDDEN, None) for value, origin in found.shadowed]
            )
            explained[key] = new_setting(
                key, current, found.origin, history, role, scrub, key in secret
            )
    return explained


# The call form: the class form evaluates its (string) annotations at import, at twice the cost.
Plain = NamedTuple("Plain", [("origin", Origin), ("shadowed", tuple[tuple[Any, Origin], ...])])  # noqa: UP014
Plain.__doc__ = """What `explain` says of a key whose value the last layer holding it set,
untouched by rules and writes: that layer's origin, and the values it shadowed (value, origin),
newest first, each overridden."""


def plain_settings(
    args: argparse.Namespace, values: Mapping[str, Any] | None = None
) -> dict[str, Plain]:
    """The keys of `args` (or of `values`, its attributes read once) that `explain` answers
    from the layers alone, in one walk over the layers: almost every key of a configuration.

    A key qualifies when every layer holding it holds an atomic value (no list or mapping: no
    merge can apply), no rule dropped, converted or set it, no write since resolution made
    it, and its current value is still the last layer's. `explain_all` and audit records take
    these answers as they are and ask `explain` about the other keys; the tests check that
    both ways agree. The same answers, grouped: `plain_groups`.
    """
    found: dict[str, Plain] = {}
    for plain, keys, _ in plain_groups(args, values):
        found.update(dict.fromkeys(keys, plain))
    return found


def plain_groups(
    args: argparse.Namespace, values: Mapping[str, Any] | None = None
) -> list[tuple[Plain, list[str], list[Any] | None]]:
    """`plain_settings` as (answer, the keys it is the answer of, their values when at hand
    or None): keys that share an origin and shadowed nothing share one answer (every key a
    layer set without a position of its own), so that a caller can handle them together.
    The values are at hand for a group that is all the keys a layer set last, all current
    (a profile's defaults, read here once).

    The layers and the rules' events do not change: what they give (`_walk`) is worked out
    once per provenance; each call takes from it the keys written since resolution and those
    whose value is no longer the layer's."""
    provenance = _provenance(args)
    if values is None:
        values = dict(vars(args))
    layers = provenance.layers
    written = written_keys(args)
    groups: list[tuple[Plain, list[str], list[Any] | None]] = []
    for index, keys, answers in _walk(provenance):
        current, now = _current(layers[index], keys, values)
        if current is keys and not written:  # (the common case: each list copied, in C)
            groups.extend(
                (answer, list(group), now if group is keys else None) for answer, group in answers
            )
            continue
        gone = set(keys).difference(current).union(written)
        for answer, group in answers:
            kept = list(itertools.filterfalse(gone.__contains__, group))
            if kept:
                groups.append((answer, kept, None))
    return groups


#: What one layer answers in `plain_groups`: its index, the keys it set last (untouched by
#: rules, atomic in every layer), and those keys grouped by answer.
_LayerWalk = tuple[int, list[str], list[tuple[Plain, list[str]]]]


#: The walks of the provenances walked lately, by id, each with a weak reference to its
#: provenance: a trainer that audits its roles again (a record per checkpoint) walks them once,
#: and no namespace keeps a walk (~24 KB a role of the slime launch): at most `_WALKS_KEPT`
#: (then all are forgotten), each dropped with its provenance.
_WALKS: dict[int, tuple[weakref.ref[Provenance], tuple[_LayerWalk, ...]]] = {}
_WALKS_KEPT = 8


def _walk(provenance: Provenance) -> tuple[_LayerWalk, ...]:
    """What `plain_groups` answers from the layers and the rules' events alone, before the
    writes and the current values are looked at, by layer, newest first: worked out once per
    provenance (immutable, as its layers) while it is among the last walked (`_WALKS`)."""
    ident = id(provenance)
    kept = _WALKS.get(ident)
    if kept is not None and kept[0]() is provenance:
        return kept[1]
    layers = provenance.layers
    touched = {path[0] for path in provenance.events}
    for layer in layers:
        touched.update(layer.mutable_keys)  # a list or mapping: a merge may apply
    # Newest first: what each layer set last, and which earlier layers a key's value shadowed
    # (only for the few keys more than one layer holds), in set operations that run in C.
    shadowed: dict[str, list[int]] = {}
    last: list[tuple[int, list[str]]] = []
    later: set[str] = set()  # the keys a later layer holds
    for index in range(len(layers) - 1, -1, -1):
        held = layers[index].values.keys()
        for key in held & later:
            shadowed.setdefault(key, []).append(index)
        mine = held - later
        mine -= touched
        if mine:  # in the layer's order (an audit's settings keep the values' order)
            last.append((index, list(filter(mine.__contains__, held))))
        if index:
            later.update(held)
    walk = tuple(
        (index, keys, list(_grouped(layers, index, keys, shadowed))) for index, keys in last
    )
    if len(_WALKS) >= _WALKS_KEPT:
        _WALKS.clear()
    # (another thread's walk of the same provenance is the same walk)
    _WALKS[ident] = (weakref.ref(provenance, lambda _: _WALKS.pop(ident, None)), walk)
    return walk


def lone_settings(
    args: argparse.Namespace, values: Mapping[str, Any], keys: Sequence[str]
) -> dict[str, Plain]:
    """Of `keys` (keys `plain_groups` leaves to `explain`), those `explain` answers from one
    layer alone: a list or dict of atomic items that one layer alone holds (no merge applies),
    no rule touched and no write made since, still equal to that layer's value (`values`
    holds `args`'s attributes). `explain` says the same of each (the tests compare)."""
    provenance = _provenance(args)
    touched = {path[0] for path in provenance.events} | written_keys(args)
    layers = provenance.layers
    found: dict[str, Plain] = {}
    for key in keys:
        value = values[key]
        kind = type(value)
        if key in touched or (kind is not list and kind is not dict):
            continue
        inside = itertools.chain(value, value.values()) if kind is dict else value
        if not set(map(type, inside)) <= ATOMIC_TYPES:
            continue  # a nested value: its copy (`copy_value`) may not encode as it does
        holders = [layer for layer in layers if key in layer.values]
        if len(holders) == 1 and same_value(holders[0].values[key], value):
            found[key] = Plain(holders[0].origin_at((key,)), ())
    return found


def _current(
    layer: Layer, keys: list[str], values: Mapping[str, Any]
) -> tuple[list[str], list[Any]]:
    """The `keys` whose value in `values` is still `layer`'s, and atomic (`keys` itself when
    all are; a key `values` no longer holds is not), and the values of those it read (of
    `keys` when it gives `keys`). The common case (the layer's own object) is told apart in
    C-level loops (`map`): `keys` hold none of the layer's `mutable_keys`, so the layer's
    own object is atomic."""
    try:
        current = values_at(values, keys)
    except KeyError:  # an attribute deleted since: not the layer's to answer for any more
        keys = list(filter(values.__contains__, keys))
        current = values_at(values, keys)
    recorded = values_at(layer.values, keys)
    common = list(map(operator.is_, current, recorded))
    if all(common):
        return keys, current
    found = list(itertools.compress(keys, common))
    others = zip(keys, current, recorded, strict=True)
    for key, now, then in itertools.compress(others, map(operator.not_, common)):
        if (type(now) in ATOMIC_TYPES or is_atomic(now)) and same_value(then, now):
            found.append(key)
    return found, current


def values_at(mapping: Mapping[Any, Any], keys: Sequence[Any]) -> list[Any]:
    """The values of `keys` in `mapping`, in order; by one `operator.itemgetter` (cheaper a
    key than `map(mapping.__getitem__, keys)`)."""
    if len(keys) > 1:
        return list(operator.itemgetter(*keys)(mapping))
    return [mapping[key] for key in keys]  # itemgetter of one key gives the value itself


def _grouped(
    layers: Sequence[Layer], index: int, keys: list[str], shadowed: Mapping[str, list[int]]
) -> Iterator[tuple[Plain, list[str]]]:
    """The answers of `keys`, which layer `index` set last, each with its keys; `shadowed`
    gives the earlier layers that hold a key too, newest first."""
    layer = layers[index]
    if shadowed and index:  # the first layer shadows nothing
        for key in filter(shadowed.__contains__, keys):
            path = (key,)
            history = tuple(
                (layers[earlier].values[key], layers[earlier].origin_at(path))
                for earlier in shadowed[key]
            )
            yield Plain(layer.origin_at(path), history), [key]
        keys = list(itertools.filterfalse(shadowed.__contains__, keys))
    if not layer.origins:
        if keys:
            yield Plain(layer.origin, ()), keys
        return
    alike: dict[int, tuple[Plain, list[str]]] = {}  # by origin
    for key, origin in zip(
        keys, map(layer.origins.get, zip(keys), itertools.repeat(layer.origin)), strict=True
    ):
        group = alike.get(id(origin))
        if group is None:
            group = alike[id(origin)] = (Plain(origin, ()), [])
        group[1].append(key)
    yield from alike.values()


#: One value of a setting's history: (value, origin, reason it lost, rule that decided).
_Row = tuple[Any, Origin, Reason | None, str | None]


def setting_for(
    values: Mapping[str, Any],
    provenance: Provenance,
    key: str,
    writes: Sequence[Write] = (),
    count: int | None = None,
    *,
    scrub: tuple[str, ...] = (),
) -> Setting:
    """The `Setting` of `key` in `values`, resolved with `provenance`, after `writes` (the
    writes kept of `count` made, if more); it scrubs the texts `scrub` where it is shown."""
    path, current = _located(values, key)
    secret = path[0] in declared_secret_keys(provenance.layers)
    if writes and is_atomic(current) and not _matches(writes[-1].value, current):
        writes, count = _up_to(writes, count, current)
    layers = provenance.layers
    # (layer index, value, reason lost), oldest first. Almost every key is top-level and of
    # an atomic type in every layer: no merge applies, and `copy_value` would give each
    # value back as it is.
    contributions: Sequence[tuple[int, Any, Reason | None]] | None = (
        atomic_contributions(layers, key) if len(path) == 1 else None
    )
    atomic = contributions is not None
    merged = False
    if contributions is None:
        contributions = trace(layers, provenance.policies, path).contributions
        merged = _MERGED in map(_REASON, contributions)
    events = provenance.events.get(path, ())
    if not events and not writes and contributions:
        # The common case: no rule touched the key and nobody assigned it since.
        *earlier, (index, value, reason) = contributions
        if reason is None and (merged or value is current or same_value(value, current)):
            shadowed: list[_Row] = [
                (
                    value if atomic else copy_value(value),
                    layers[index].origin_at(path),
                    reason,
                    None,
                )
                for index, value, reason in reversed(earlier)
            ]
            origin = layers[index].origin_at(path)
            history = new_history(key, shadowed)
            return new_setting(
                key, copy_value(current), origin, history, provenance.role, scrub, secret
            )
    rows = _rows(layers, path, contributions, atomic, events, writes, count)
    # The history, newest first; a live value (no reason yet) lost to the next live one: to
    # a rule's (forced) or an assignment. The last live value is the final value if it still
    # is the value; if not, it was assigned after resolution (or never seen by any layer):
    # say so rather than guess. Each `Setting` is made once, when its reason is known.
    shadowed = []
    final_origin = _RUNTIME
    winner: Origin | None = None  # the origin of the next live value
    for value, origin, reason, rule in reversed(rows):
        if reason is None:
            if winner is None:
                winner = origin
                if merged or _matches(value, current):
                    final_origin = origin
                    continue
                reason = _OVERRIDDEN
            else:
                rule = winner.rule
                reason = _OVERRIDDEN if rule is None else _FORCED
                winner = origin
        shadowed.append((value, origin, reason, rule))
    history = new_history(key, shadowed)
    return new_setting(
        key, copy_value(current), final_origin, history, provenance.role, scrub, secret
    )


def _up_to(
    writes: Sequence[Write], count: int | None, current: Any
) -> tuple[Sequence[Write], int | None]:
    """The writes up to the latest that made `current`, and its number as their count: a
    value read before another thread's writes were looked up is explained as it was when
    read, by the write that made it (all the writes when none of those kept made it)."""
    for index in range(len(writes) - 1, -1, -1):
        if _matches(writes[index].value, current):
            return writes[: index + 1], writes[index].number
    return writes, count


def _rows(
    layers: Sequence[Layer],
    path: Path,
    contributions: Sequence[tuple[int, Any, Reason | None]],
    atomic: bool,
    events: Sequence[Event],
    writes: Sequence[Write],
    count: int | None,
) -> list[_Row]:
    """Every value `path` held, oldest first: its layers' (`contributions`, each value copied
    unless `atomic`), its rules' (`events`) and its assignments since resolution (`writes`).
    A live value (the last layer's, a value a rule set, an assignment) has no reason yet."""
    # (order, rank, row): rank keeps a converted raw value before its layer's value, and an
    # ignored value after it.
    entries: list[tuple[int, int, _Row]] = [
        (
            index,
            1,
            (value if atomic else copy_value(value), layers[index].origin_at(path), reason, None),
        )
        for index, value, reason in contributions
    ]
    if events:  # (without them, the layers' values are in order)
        for event in events:
            value = copy_value(event.value)
            if event.action == "set":
                entries.append((event.order, 1, (value, event.origin, None, None)))
            elif event.action == "converted":
                entries.append((event.order, 0, (value, event.origin, _CONVERTED, event.rule)))
            else:
                entries.append((event.order, 2, (value, event.origin, _IGNORED, event.rule)))
        entries.sort(key=_ORDER_RANK)
    rows = list(map(_ROW, entries))
    total = max(count or 0, len(writes))
    for write in writes:  # assignments after resolution come last
        label = f"write {write.number:,} of {total:,}"
        origin = Origin("runtime", "runtime", write.source, write.line, label=label)
        rows.append((copy_value(write.value), origin, None, None))
    return rows


_ORDER_RANK = operator.itemgetter(0, 1)
_ROW = operator.itemgetter(2)
_REASON = operator.itemgetter(2)
# The reasons as plain names (an enum member read from its class costs a lookup each time).
_OVERRIDDEN, _MERGED, _FORCED, _IGNORED, _CONVERTED = (
    Reason.OVERRIDDEN,
    Reason.MERGED,
    Reason.FORCED,
    Reason.IGNORED,
    Reason.CONVERTED,
)


def _matches(recorded: Any, current: Any) -> bool:
    """Whether `current` is still the value `recorded`; a value a write did not copy is
    recognised as the object it described."""
    if type(recorded) is Unkept:
        return recorded.describes(current)
    return recorded is current or same_value(recorded, current)


def _located(values: Mapping[str, Any], key: str) -> tuple[Path, Any]:
    """The path of `key` in `values` (an attribute, or a dotted path into mappings) and the
    value there."""
    if not isinstance(key, str):
        raise TypeError(f"explain() takes a key as a str (got {value_text(key)})")
    if key in values:
        return (key,), values[key]
    path = split_key(key)
    node: Any = values
    for part in path:
        if type(node) is not dict or part not in node:
            raise UnknownKeyError(
                f"{value_text(key)} is not a key of this namespace"
                f"{suggestion(key, _all_keys(values))}"
            )
        node = node[part]
    return path, node


def _all_keys(values: Mapping[str, Any], prefix: Path = ()) -> list[str]:
    keys: list[str] = []
    for name, value in values.items():
        path = (*prefix, str(name))
        keys.append(join_path(path))
        if type(value) is dict:
            keys.extend(_all_keys(value, path))
    return keys
