"""The resolved namespace: an `argparse.Namespace` that carries its provenance.

`vars(args)` holds the configuration keys only and `==` compares values only, as argparse's
own namespace does; the provenance lives in a slot, so it survives `copy.copy`,
`copy.deepcopy` and pickle without ever showing up as a key.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import attrs

from layerconf._merge import Policy
from layerconf._records import Layer, Origin, Path
from layerconf.exceptions import Problem

__all__ = ["Event", "Namespace", "Provenance", "notices", "provenance_of", "with_inputs"]


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
    #: The command line that was parsed, when one was.
    argv: tuple[str, ...] | None = None
    #: Each file read (a role file), by path, with the sha256 of its bytes.
    files: Mapping[str, str] = attrs.field(factory=dict)

    # Immutable all the way down: a copy is the same object.
    def __copy__(self) -> Provenance:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Provenance:
        return self


_SLOT = "_layerconf_provenance"


def _rebuild(
    cls: type[Namespace], values: dict[str, Any], provenance: Provenance | None
) -> Namespace:
    return cls._from_values(values, provenance)


class Namespace(argparse.Namespace):
    """An `argparse.Namespace` with provenance: use it exactly as argparse's own.

    Ask where a value came from with `layerconf.explain(args, key)`.
    """

    __slots__ = (_SLOT,)
    _layerconf_provenance: Provenance | None

    @classmethod
    def _from_values(cls, values: dict[str, Any], provenance: Provenance | None) -> Namespace:
        namespace = cls.__new__(cls)
        namespace.__dict__.update(values)
        object.__setattr__(namespace, _SLOT, provenance)
        return namespace

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), dict(vars(self)), provenance_of(self)))


def provenance_of(args: argparse.Namespace) -> Provenance | None:
    """The provenance of `args`, or None for a namespace layerconf did not resolve."""
    if isinstance(args, Namespace):
        return getattr(args, _SLOT, None)
    return None


def with_inputs(args: Namespace, *, argv: tuple[str, ...] | None, files: Mapping[str, str]) -> None:
    """Record on `args`'s provenance what it was resolved from (for audit records)."""
    provenance = provenance_of(args)
    if provenance is not None:
        object.__setattr__(args, _SLOT, attrs.evolve(provenance, argv=argv, files=dict(files)))


def notices(args: argparse.Namespace) -> tuple[Problem, ...]:
    """The warnings and notes of the resolution that made `args` (ignored keys, coercions...)."""
    provenance = provenance_of(args)
    return provenance.notices if provenance is not None else ()
