"""PPO scope: role overrides for a critic that will not run are a mistake worth a warning.

slime's contract: "PPO only. Flows without a critic (GRPO, REINFORCE++ ...) are not the
intended use." A critic is in use when ``--use-critic`` is given or ``--advantage-estimator``
is ``ppo`` (slime derives one from the other). Whether a critic runs is the run's, not a
role's: it is read from the layers below the role layer (the command line), never from a
role's own overrides. The actor's overrides still apply, and the critic is still resolved and
returned.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import attrs

from layerconf.core.checks import typed
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.rules import Decision, RuleContext
from layerconf.exceptions import Problem

__all__ = ["PpoScope"]


@attrs.frozen
class PpoScope:
    """Warn when `role` has overrides in the role layer but no critic runs."""

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    role: str = attrs.field(default="critic", validator=typed(str, "a role name (str)"))
    layer: str = attrs.field(default="role-config", validator=typed(str, "a layer name (str)"))
    use_critic_dest: str = "use_critic"
    estimator_dest: str = "advantage_estimator"
    critic_estimators: frozenset[str] = frozenset({"ppo"})
    name: str = "ppo-scope"
    stage: Literal["resolved"] = "resolved"

    def __call__(self, context: RuleContext) -> Iterator[Decision]:
        if context.role != self.role:
            return
        layer = context.layer(self.layer)
        if layer is None or not layer.values:
            return
        estimator = self._run_value(context, self.estimator_dest)
        if self._run_value(context, self.use_critic_dest) or estimator in self.critic_estimators:
            return
        use_critic = "--" + self.use_critic_dest.replace("_", "-")
        estimator_flag = "--" + self.estimator_dest.replace("_", "-")
        runs_critic = " or ".join(
            f"{estimator_flag} {name}" for name in sorted(self.critic_estimators)
        )
        yield Problem.at(
            layer.origin,
            f"the {self.role}'s overrides are unused: no critic runs "
            f"({estimator_flag} is {estimator!r} and {use_critic} is not given)",
            hint=f"add {use_critic} or {runs_critic}, or remove the {self.role} entry",
            severity="warning",
        )

    def _run_value(self, context: RuleContext, key: str) -> Any:
        """`key` as the run sets it: the last layer below the role layer that has it."""
        value = None
        for layer in context.layers:
            if layer.name != self.layer and key in layer.values:
                value = layer.values[key]
        return value
