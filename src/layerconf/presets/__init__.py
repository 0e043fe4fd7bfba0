"""Presets: what a trainer's roles, role file and rules are, and `resolve_roles` for any of them.

`Preset` is the contract; `PLAIN` a trainer's own command line alone; `layerconf.presets.slime`
holds slime's preset (`SLIME`) and everything else that is slime's.
"""

from layerconf.presets.preset import PLAIN, Preset, default_rules
from layerconf.presets.resolve import resolve_roles
from layerconf.presets.role_file import RoleFile, RoleFileFormat
from layerconf.presets.schema import role_file_schema
from layerconf.presets.slime import SLIME, slime_rules

__all__ = [
    "PLAIN",
    "SLIME",
    "Preset",
    "RoleFile",
    "RoleFileFormat",
    "default_rules",
    "resolve_roles",
    "role_file_schema",
    "slime_rules",
]
