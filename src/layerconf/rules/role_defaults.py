"""Role defaults: values a trainer always forces on one role, as a rule with its own origin.

slime, for one, always runs the critic with ``kl_coef=0`` and four more values whenever a role
file is given (`layerconf.presets.slime.CRITIC_DEFAULTS`). Modelled as a rule,
`explain(critic, "kl_coef")` says why it is 0 even when the role file said otherwise, and
such a role-file value (``kl_coef: 0.1`` under the critic) is a warning at its key: the trainer
ignores it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

import attrs

from layerconf.core.checks import check_type, typed
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.rules import Decision, RuleContext, SetValue
from layerconf.core.secrets import SECRETS
from layerconf.core.values import same_value, value_text
from layerconf.exceptions import Problem

__all__ = ["RoleDefaults"]


def _values(values: Mapping[str, Any]) -> Mapping[str, Any]:
    check_type("RoleDefaults", "values", values, Mapping, "a mapping of key to value")
    return dict(values)


def _same_items(old: tuple[tuple[str, Any], ...], new: tuple[tuple[str, Any], ...]) -> bool:
    """Whether `new` holds the keys of `old`, in order, each with the very same value object
    (compared by identity: a value's own ``==`` is neither asked nor trusted)."""
    return len(old) == len(new) and all(
        a[0] == b[0] and a[1] is b[1] for a, b in zip(old, new, strict=True)
    )


def _agrees(forced: Any, given: Any) -> bool:
    """Whether a role's own `given` value is the `forced` one (``0`` and ``0.0`` agree, as the
    trainer's comparisons see them; ``True`` and ``1`` do not)."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (forced, given))
    return forced == given if numbers else same_value(forced, given, copied=False)


def _to_frozenset(keys: Any) -> frozenset[str]:
    return frozenset(keys)


@attrs.frozen
class RoleDefaults:
    """Set `values` on `role`, except keys in `unless_overridden` that its role layer sets.

    With `only_with_layer` (the default) it applies only when the stack has that role layer
    (a role file was given), as slime does. Keys are set even where the parser has no such dest.
    A value the role layer sets otherwise at such a key is a warning at the key: it is ignored.
    A key of `unless_overridden` whose forced value is a bool takes a bool only: another value
    (``'false'``, which the trainer's ``if`` reads as true) is an error at the value, or with
    ``flags="warn"`` a warning, the value kept as written (slime's own function keeps it).
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    role: str = attrs.field(validator=typed(str, "a role name (str)"))
    values: Mapping[str, Any] = attrs.field(converter=_values)
    unless_overridden: frozenset[str] = attrs.field(default=frozenset(), converter=_to_frozenset)
    layer: str = "role-config"
    only_with_layer: bool = True
    note: str = "the preset always runs this role with this value"
    flags: Literal["error", "warn"] = attrs.field(
        default="error", validator=attrs.validators.in_(("error", "warn")), kw_only=True
    )
    name: str = "role-defaults"
    stage: Literal["resolved"] = "resolved"
    #: The rule's decisions, one per value (immutable records), and the values they were made
    #: of: made again when `values` (a dict the caller may change) holds other items.
    _decisions: tuple[tuple[tuple[str, Any], ...], tuple[SetValue, ...]] | None = attrs.field(
        default=None, init=False, eq=False, repr=False
    )

    def __call__(self, context: RuleContext) -> Iterator[Decision]:
        if context.role != self.role:
            return
        layer = context.layer(self.layer)
        if layer is None and self.only_with_layer:
            return
        overridden = layer.values if layer is not None else {}
        items = tuple(self.values.items())
        kept = self._decisions
        if kept is not None and _same_items(kept[0], items):
            decisions = kept[1]
        else:  # (threads racing here make equal tuples)
            decisions = tuple(SetValue(key, value, note=self.note) for key, value in items)
            object.__setattr__(self, "_decisions", (items, decisions))
        for decision in decisions:
            key = decision.key
            if key in overridden:
                if key in self.unless_overridden:
                    if type(decision.value) is bool and type(overridden[key]) is not bool:
                        yield self._not_a_flag(layer, key, overridden[key])
                    continue
                if not _agrees(decision.value, overridden[key]):
                    yield self._ignored(context.role, layer, key, overridden[key], decision.value)
            yield decision

    def _not_a_flag(self, layer: Any, key: str, given: Any) -> Problem:
        """The error at a role's own value for a flag the rule would force otherwise: a
        quoted ``'false'`` is true to the trainer's ``if args.key:``, as for any flag."""
        from layerconf.rules.coercion import _show

        got = _show(SECRETS.redact(key, given))
        warn = self.flags == "warn"
        return Problem.at(
            layer.origin_at((key,)),
            f"{key!r} is not true or false (got {got}): it is set as written"
            if warn
            else f"{key!r} must be true or false (got {got})",
            key=key,
            hint="write true or false" + (", without quotes" if type(given) is str else ""),
            severity="warning" if warn else "error",
            rule=self.name,
        )

    def _ignored(self, role: str, layer: Any, key: str, given: Any, forced: Any) -> Problem:
        """The warning at a role-file key whose value the forced one replaces."""
        shown, kept = (value_text(SECRETS.redact(key, v)) for v in (given, forced))
        return Problem.at(
            layer.key_origin_at((key,)),
            f"{key}={shown} is ignored for the {role}: {self.note} ({key}={kept})",
            key=key,
            hint=f"remove {key!r} from the {role} entry",
            severity="warning",
        )
