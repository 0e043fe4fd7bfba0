"""A drop-in for slime's ``parse_megatron_role_args`` (see `layerconf.presets.slime.compat`)."""

from layerconf.presets.slime.compat import SlimeConfigError, parse_megatron_role_args

__all__ = ["SlimeConfigError", "parse_megatron_role_args"]
