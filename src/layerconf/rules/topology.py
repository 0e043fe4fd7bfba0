"""The topology guard: keys every role must share, such as a parallel topology.

slime's contract, for one: TP, PP, CP, EP, ETP and sequence parallel "must not differ between
them. Different topologies are unsupported and may break initialisation or training"
(`layerconf.presets.slime.TOPOLOGY_KEYS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Literal

import attrs

from layerconf.core.checks import check_iterable
from layerconf.core.records import Origin
from layerconf.core.rules import Decision, RuleContext
from layerconf.exceptions import Problem

__all__ = ["TopologyGuard"]


def _short(origin: Origin) -> str:
    """``megatron_ppo.yaml:9:35``, ``cli argv[5]``, ``default``, ``rule:x``."""
    if origin.source is not None:
        return origin.place
    if origin.argv_index is not None:
        return f"{origin.layer} argv[{origin.argv_index}]"
    return origin.layer


def _keys(keys: Iterable[str]) -> tuple[str, ...]:
    check_iterable("TopologyGuard", "keys", keys, "a list of keys, such as ['seed']")
    return tuple(keys)


@attrs.frozen
class TopologyGuard:
    """After every role is resolved, `keys` must be equal across roles.

    ``error`` (default) refuses a mismatch, ``warn`` only says so, ``off`` checks nothing.
    The problem points at the first role whose value comes from a role file, at that value.
    """

    keys: tuple[str, ...] = attrs.field(converter=_keys)
    action: Literal["error", "warn", "off"] = attrs.field(
        default="error", validator=attrs.validators.in_(("error", "warn", "off"))
    )
    name: str = "topology-guard"
    stage: Literal["roles"] = "roles"

    def __call__(self, context: RuleContext) -> Iterator[Decision]:
        if self.action == "off" or len(context.roles) < 2:
            return
        for key in self.keys:
            present = {role: args for role, args in context.roles.items() if hasattr(args, key)}
            if len({repr(getattr(args, key)) for args in present.values()}) <= 1:
                continue
            settings = {role: context.explain(key, role) for role in present}
            # Point at a role file when one is to blame: that is what the user edits.
            blamed = next(
                (s for s in settings.values() if s.origin.kind == "file"),
                list(settings.values())[-1],
            )
            parts = [
                f"{role} {key}={setting.value!r} from {_short(setting.origin)}"
                if setting is blamed
                else f"{role} {setting.value!r} from {_short(setting.origin)}"
                for role, setting in sorted(
                    settings.items(), key=lambda item: item[1] is not blamed
                )
            ]
            yield Problem.at(
                blamed.origin,
                "roles must share the parallel topology: " + "; ".join(parts),
                key=key,
                hint=f"set {key} once, on the command line, and remove it from the role file",
                severity="error" if self.action == "error" else "warning",
            )
