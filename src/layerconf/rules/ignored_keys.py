"""The ignored-keys rule: keys a role file may not change, dropped where they are written.

slime's contract, for one: "num_nodes and num_gpus_per_node in the YAML are ignored; allocation
always follows --actor-num-* / --critic-num-*" (`layerconf.presets.slime` gives those keys). The
rule drops such keys from the role layer, so the value stays the command line's, and says so at
the key's file:line with where to set it instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Literal

import attrs

from layerconf.core.checks import check_type
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.rules import Decision, Drop, RuleContext
from layerconf.exceptions import Problem

__all__ = ["IgnoredKeys"]


def _keys(keys: Mapping[str, str]) -> Mapping[str, str]:
    check_type("IgnoredKeys", "keys", keys, Mapping, "a mapping of key to where it is set")
    return dict(keys)


@attrs.frozen
class IgnoredKeys:
    """Drop `keys` from the role layer: ``warn`` (default) says so, ``error`` refuses the file,
    ``allow`` lets the value through as an ordinary override.

    `keys` maps each key to where the user should set it instead (shown in the hint);
    `because` says why in the message (slime's: "resources come from the command line").
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    keys: Mapping[str, str] = attrs.field(converter=_keys)
    action: Literal["warn", "error", "allow"] = attrs.field(
        default="warn", validator=attrs.validators.in_(("warn", "error", "allow"))
    )
    layer: str = "role-config"
    because: str = "it is set on the command line"
    name: str = "ignored-keys"
    stage: Literal["layers"] = "layers"

    def __call__(self, context: RuleContext) -> Iterator[Decision]:
        layer = context.layer(self.layer)
        if layer is None or self.action == "allow":
            return
        for key in [key for key in layer.values if key in self.keys]:
            origin = layer.key_origin_at((key,))
            where = f"set {self.keys[key]} on the command line"
            yield Drop(self.layer, key)  # refused or ignored, no other rule need see it again
            if self.action == "error":
                yield Problem.at(
                    origin,
                    f"{key!r} is not allowed in a role file: {self.because}",
                    key=key,
                    hint=f"remove it and {where}",
                )
            else:
                yield Problem.at(
                    origin,
                    f"{key!r} is ignored: {self.because}",
                    key=key,
                    hint=f"remove it; {where}",
                    severity="warning",
                )
