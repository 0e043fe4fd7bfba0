"""The built-in rules, each an ordinary `layerconf.Rule` you can configure, replace or extend.

- `IgnoredKeys` (``layers``): keys a role file may not change, dropped with a warning.
- `UnknownKeys` (``layers``): a role file's keys must be the parser's dests.
- `TypeCoercion` (``layers``): values converted as the parser converts its command line.
- `PpoScope` (``resolved``): critic overrides when no critic runs.
- `RoleDefaults` (``resolved``): values a trainer always forces on one role.
- `TopologyGuard` (``roles``): keys every role must share.
- `DistinctAcrossRoles` (``roles``): keys no two roles may share (a checkpoint directory).
- `UnexpandedText` (``layers``): shell syntax (``$SAVE_DIR``, ``~/ckpt``) in a file no shell reads.

A preset puts them together (`layerconf.presets.slime.slime_rules`); the rules know nothing of
any trainer: what slime ignores, forces or shares is data in `layerconf.presets.slime`.
"""

from layerconf.rules.coercion import TypeCoercion, expected_kind
from layerconf.rules.distinct import DistinctAcrossRoles
from layerconf.rules.ignored_keys import IgnoredKeys
from layerconf.rules.ppo_scope import PpoScope
from layerconf.rules.role_defaults import RoleDefaults
from layerconf.rules.topology import TopologyGuard
from layerconf.rules.unexpanded import UnexpandedText
from layerconf.rules.unknown_keys import UnknownKeys

__all__ = [
    "DistinctAcrossRoles",
    "IgnoredKeys",
    "PpoScope",
    "RoleDefaults",
    "TopologyGuard",
    "TypeCoercion",
    "UnexpandedText",
    "UnknownKeys",
    "expected_kind",
]
