"""Presets: what a trainer's roles, role file and rules are, and `resolve_roles` for any of them."""

from layerconf.presets.resolve import SLIME, Preset, resolve_roles, slime_rules
from layerconf.presets.schema import role_file_schema

__all__ = ["SLIME", "Preset", "resolve_roles", "role_file_schema", "slime_rules"]
