"""The ignored-keys rule: resource keys in a role file never change a role's resources.

slime's contract: "num_nodes and num_gpus_per_node in the YAML are ignored; allocation always
follows --actor-num-* / --critic-num-*". The rule drops such keys from the role layer, so the
value stays the command line's, and says so at the key's file:line.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Literal

import attrs

from layerconf.core.rules import Decision, Drop, RuleContext
from layerconf.exceptions import Problem

__all__ = ["RESOURCE_KEYS", "IgnoredKeys"]

#: The resource keys of slime's contract, each with where to set it instead.
RESOURCE_KEYS: Mapping[str, str] = {
    "num_nodes": "--actor-num-nodes / --critic-num-nodes",
    "num_gpus_per_node": "--actor-num-gpus-per-node / --critic-num-gpus-per-node",
    "actor_num_nodes": "--actor-num-nodes",
    "actor_num_gpus_per_node": "--actor-num-gpus-per-node",
    "critic_num_nodes": "--critic-num-nodes",
    "critic_num_gpus_per_node": "--critic-num-gpus-per-node",
}


@attrs.frozen
class IgnoredKeys:
    """Drop `keys` from the role layer: ``warn`` (default) says so, ``error`` refuses the file,
    ``allow`` lets the value through as an ordinary override.

    `keys` maps each key to where the user should set it instead (shown in the hint).
    """

    keys: Mapping[str, str] = attrs.field(factory=lambda: dict(RESOURCE_KEYS))
    action: Literal["warn", "error", "allow"] = attrs.field(
        default="warn", validator=attrs.validators.in_(("warn", "error", "allow"))
    )
    layer: str = "role-config"
    name: str = "ignored-keys"
    stage: Literal["layers"] = "layers"

    def __call__(self, context: RuleContext) -> Iterator[Decision]:
        layer = context.layer(self.layer)
        if layer is None or self.action == "allow":
            return
        for key in [key for key in layer.values if key in self.keys]:
            origin = layer.key_origin_at((key,))
            where = f"set {self.keys[key]} on the command line"
            if self.action == "error":
                yield Problem.at(
                    origin,
                    f"{key!r} is not allowed in a role file: resources come from the command line",
                    key=key,
                    hint=f"remove it and {where}",
                )
            else:
                yield Drop(self.layer, key)
                yield Problem.at(
                    origin,
                    f"{key!r} is ignored: resources come from the command line",
                    key=key,
                    hint=f"remove it; {where}",
                    severity="warning",
                )
