"""The resolved namespace: an `argparse.Namespace` that carries its provenance.

`vars(args)` holds the configuration keys only and `==` compares values only, as argparse's
own namespace does; the provenance lives in a slot, so it survives `copy.copy`,
`copy.deepcopy` and pickle without ever showing up as a key.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

import attrs

from layerconf.core.merge import Policy
from layerconf.core.records import Layer, Origin, Path
from layerconf.core.values import copy_value
from layerconf.exceptions import Problem

__all__ = [
    "Event",
    "Namespace",
    "Provenance",
    "Write",
    "namespace_from",
    "notices",
    "provenance_of",
    "runtime_writes",
    "with_inputs",
]


@attrs.frozen
class Event:
    """What a rule did at one path: ``ignored`` or ``converted`` a layer's value, or ``set`` one.

    `order` places it among the layers: a layer's index for ``ignored`` / ``converted``; for
    ``set``, a position after every layer, in the order the values were set.
    """

    action: str
    order: int
    value: Any
    origin: Origin
    rule: str


@attrs.frozen
class Provenance:
    """Everything needed to explain a resolved namespace; immutable, shared by copies."""

    role: str | None
    layers: tuple[Layer, ...]
    policies: Mapping[Path, Policy]
    events: Mapping[Path, tuple[Event, ...]]
    notices: tuple[Problem, ...] = ()
    #: What the sources recorded about their inputs, by name, for audit records (the core
    #: never looks inside): the command line parsed, each file read with its sha256...
    inputs: Mapping[str, Any] = attrs.field(factory=dict)

    # Immutable all the way down: a copy is the same object.
    def __copy__(self) -> Provenance:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Provenance:
        return self


_SLOT = "_layerconf_provenance"
_WRITES = "_layerconf_writes"

#: One assignment after resolution: (value, file, line).
Write = tuple[Any, str, int]


def _rebuild(
    cls: type[Namespace],
    values: dict[str, Any],
    provenance: Provenance | None,
    writes: dict[str, list[Write]] | None = None,
) -> Namespace:
    namespace = cls._from_values(values, provenance)
    if writes:
        object.__setattr__(namespace, _WRITES, {key: list(made) for key, made in writes.items()})
    return namespace


class Namespace(argparse.Namespace):
    """An `argparse.Namespace` with provenance: use it exactly as argparse's own.

    Ask where a value came from with `layerconf.explain(args, key)`. An assignment after
    resolution (``args.lr = 3e-6``) is recorded with the file and line that made it, so
    `explain` reports it as layer ``runtime`` and keeps the earlier history.
    """

    __slots__ = (_SLOT, _WRITES)
    _layerconf_provenance: Provenance | None
    _layerconf_writes: dict[str, list[Write]]

    @classmethod
    def _from_values(cls, values: dict[str, Any], provenance: Provenance | None) -> Namespace:
        namespace = cls.__new__(cls)
        namespace.__dict__.update(values)
        object.__setattr__(namespace, _SLOT, provenance)
        if provenance is not None:
            object.__setattr__(namespace, _WRITES, {})
        return namespace

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        writes = getattr(self, _WRITES, None)
        if writes is not None:
            caller = sys._getframe(1)
            made = (copy_value(value), caller.f_code.co_filename, caller.f_lineno)
            writes.setdefault(name, []).append(made)

    def __reduce__(self) -> tuple[Any, ...]:
        writes = getattr(self, _WRITES, None)
        return (_rebuild, (type(self), dict(vars(self)), provenance_of(self), writes))


def namespace_from(values: dict[str, Any], provenance: Provenance | None) -> Namespace:
    """A `Namespace` whose attributes are the entries of `values` (the values themselves, not
    copies), carrying `provenance`.

    How the stack, the command-line source and audit replays make theirs: setting the
    attributes is not recorded as a runtime assignment.
    """
    return Namespace._from_values(values, provenance)


def runtime_writes(args: argparse.Namespace, key: str) -> list[Write]:
    """The assignments to `key` after resolution, oldest first (empty when none)."""
    writes = getattr(args, _WRITES, None) if isinstance(args, Namespace) else None
    return list(writes.get(key, ())) if writes else []


def provenance_of(args: argparse.Namespace) -> Provenance | None:
    """The provenance of `args`, or None for a namespace layerconf did not resolve."""
    if isinstance(args, Namespace):
        return getattr(args, _SLOT, None)
    return None


def with_inputs(args: Namespace, inputs: Mapping[str, Any]) -> None:
    """Record on `args`'s provenance what its sources said about their inputs (`inputs`)."""
    provenance = provenance_of(args)
    if provenance is not None:
        merged = {**provenance.inputs, **inputs}
        object.__setattr__(args, _SLOT, attrs.evolve(provenance, inputs=merged))


def notices(args: argparse.Namespace) -> tuple[Problem, ...]:
    """The warnings and notes of the resolution that made `args` (ignored keys, coercions...)."""
    provenance = provenance_of(args)
    return provenance.notices if provenance is not None else ()
