"""The topology guard: keys every role must share, such as a parallel topology.

slime's contract, for one: TP, PP, CP, EP, ETP and sequence parallel "must not differ between
them. Different topologies are unsupported and may break initialisation or training"
(`layerconf.presets.slime.TOPOLOGY_KEYS`).

Values are compared as values (`same_value`: ``1``, ``1.0`` and ``True`` differ). Given the
trainer's `parser`, the guard compares what the parser converts each value to, and leaves out
a value it cannot convert: that is a type mistake, which the type-coercion rule reports, and
one mistake is one problem. A value that is one object in every role (the command line's, the
default) agrees with itself and is not converted.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from typing import Any, Literal

import attrs

from layerconf.core.checks import check_iterable
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.records import Origin
from layerconf.core.rules import Decision, RuleContext
from layerconf.core.values import same_value, value_text
from layerconf.exceptions import Problem
from layerconf.rules.coercion import spec_of

__all__ = ["TopologyGuard"]


def short_origin(origin: Origin) -> str:
    """``megatron_ppo.yaml:9:35``, ``cli argv[5]``, ``default``, ``rule:x``."""
    if origin.source is not None:
        return origin.place
    if origin.argv_index is not None:
        return f"{origin.layer} argv[{origin.argv_index}]"
    return origin.layer


def _keys(keys: Iterable[str]) -> tuple[str, ...]:
    check_iterable("TopologyGuard", "keys", keys, "a list of keys, such as ['seed']")
    return tuple(keys)


_UNCONVERTIBLE = object()


@attrs.frozen
class TopologyGuard:
    """After every role is resolved, `keys` must be equal across roles.

    ``error`` (default) refuses a mismatch, ``warn`` only says so, ``off`` checks nothing.
    The problem points at the first role whose value comes from a role file, at that value.
    `subject` names what the keys are in the message ("the parallel topology"; by default
    the key itself); with `parser`, values are compared as the parser converts them.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    keys: tuple[str, ...] = attrs.field(converter=_keys)
    action: Literal["error", "warn", "off"] = attrs.field(
        default="error", validator=attrs.validators.in_(("error", "warn", "off"))
    )
    subject: str | None = None
    parser: argparse.ArgumentParser | None = attrs.field(default=None, eq=False, repr=False)
    name: str = "topology-guard"
    stage: Literal["roles"] = "roles"

    def __call__(self, context: RuleContext) -> Iterator[Decision]:
        if self.action == "off" or len(context.roles) < 2:
            return
        for key in self.keys:
            held = {
                role: getattr(args, key)
                for role, args in context.roles.items()
                if hasattr(args, key)
            }
            shared = next(iter(held.values()), None)
            if all(value is shared for value in held.values()):
                # One object for every role (the command line's, the default): it agrees with
                # itself, and is not converted (the first call compiles no spec for it).
                continue
            values = {role: self._converted(key, value) for role, value in held.items()}
            present = [role for role, value in values.items() if value is not _UNCONVERTIBLE]
            if all(same_value(values[present[0]], values[role], copied=False) for role in present):
                continue
            yield self._mismatch(context, key, present)

    def _converted(self, key: str, value: Any) -> Any:
        """`value` as the parser converts it; `_UNCONVERTIBLE` when it cannot."""
        if self.parser is None:
            return value
        spec = spec_of(self.parser, key)
        if spec is None:
            return value
        failures: list[Any] = []
        converted = spec.coerce(value, failures)
        return _UNCONVERTIBLE if failures else converted

    def _mismatch(self, context: RuleContext, key: str, roles: list[str]) -> Problem:
        settings = {role: context.explain(key, role) for role in roles}
        # Point at a role file when one is to blame: that is what the user edits.
        blamed = next(
            (s for s in settings.values() if s.origin.kind == "file"),
            list(settings.values())[-1],
        )
        # The blamed value is where the problem is located: its place is not repeated.
        redact = context.secrets.redact
        shown = {role: value_text(redact(key, s.value)) for role, s in settings.items()}
        parts = [
            f"{role} {key}={shown[role]}"
            if setting is blamed
            else f"{role} {shown[role]} from {short_origin(setting.origin)}"
            for role, setting in sorted(settings.items(), key=lambda item: item[1] is not blamed)
        ]
        return Problem.at(
            blamed.origin,
            f"roles must share {self.subject or key}: " + "; ".join(parts),
            key=key,
            hint=f"set {key} once, on the command line, and remove it from the role file",
            severity="error" if self.action == "error" else "warning",
        )
