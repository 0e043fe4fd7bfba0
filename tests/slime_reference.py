"""slime's own ``parse_megatron_role_args``, transcribed: the reference the drop-in is held to.

What slime's ``parse_megatron_role_args`` (``slime/utils/arguments.py``) does, step by step and
in the same order: read the role file with ``yaml.safe_load``, check its shape with asserts
(slime's messages), pick the role's entry, deep-copy the parsed namespace, set each override
(a string over an int or float becomes that type when it can), force the critic's runtime
defaults, and log what it did. The parity test (``tests/test_compat_slime.py``) runs the drop-in
against it on generated role files; ``benchmarks/run.py`` times it as slime's way. One copy:
both import it from here.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import logging
import os
from collections.abc import Sequence
from typing import Any

import yaml

__all__ = [
    "SLIME_ROLES",
    "slime_apply_overrides",
    "slime_critic_defaults",
    "slime_parse_megatron_role_args",
]

SLIME_ROLES = ("actor", "critic")
_EXAMPLE = "megatron: [{name: default, role: actor, overrides: {...}}]"
_IGNORED = frozenset({"num_nodes", "num_gpus_per_node"})
_logger = logging.getLogger("slime.utils.arguments")


def slime_critic_defaults(overrides: Any) -> dict[str, Any]:
    """The values slime forces on the critic, given the critic's overrides."""
    values: dict[str, Any] = {
        "kl_coef": 0,
        "use_opd": False,
        "custom_advantage_function_path": None,
        "untie_embeddings_and_output_weights": True,
    }
    if "disable_param_buffers_cpu_backup" not in overrides:
        values["disable_param_buffers_cpu_backup"] = False
    return values


def slime_apply_overrides(base_args: argparse.Namespace, overrides: Any, role: str) -> Any:
    """A deep copy of `base_args` with `role`'s overrides set, as slime sets them."""
    result = copy.deepcopy(base_args)
    for key, value in overrides.items():
        if key in _IGNORED:
            _logger.info(f"Ignoring {role} config key '{key}'; GPU allocation follows CLI args.")
            continue
        if not hasattr(result, key):
            _logger.warning(
                f"{role} config key '{key}' is not a known argument, setting it anyway."
            )
        else:
            current = getattr(result, key)
            numeric = isinstance(current, (int, float))
            if current is not None and isinstance(value, str) and numeric:
                with contextlib.suppress(TypeError, ValueError):
                    value = type(current)(value)  # YAML 1.1 reads 1e-5 as a string
        setattr(result, key, value)
    if role == "critic":  # slime always runs the critic with these
        for key, value in slime_critic_defaults(overrides).items():
            setattr(result, key, value)
    return result


def slime_parse_megatron_role_args(
    base_args: argparse.Namespace,
    megatron_config_path: str | os.PathLike[str],
    role: str,
    roles: Sequence[str] = SLIME_ROLES,
) -> Any:
    """slime's ``parse_megatron_role_args(base_args, megatron_config_path, role)``.

    `roles` only widens the role check for the benchmark's roles scaling (slime takes actor
    and critic).
    """
    assert role in roles, f"Unsupported Megatron config role: {role}"
    with open(megatron_config_path) as stream:
        raw_config = yaml.safe_load(stream) or {}
    assert "megatron" in raw_config, (
        f"megatron config must contain a top-level 'megatron' list, e.g. {_EXAMPLE}"
    )
    overrides: Any = {}
    entries = raw_config["megatron"]
    assert isinstance(entries, list), (
        f"megatron config 'megatron' field must be a list, e.g. {_EXAMPLE}"
    )
    mine = [entry for entry in entries if entry.get("role") == role]
    assert len(mine) <= 1, (
        f"megatron config must contain at most one entry with role={role}, e.g. "
        f"megatron: [{{name: default, role: {role}, overrides: {{...}}}}]"
    )
    if mine:
        overrides = mine[0].get("overrides") or mine[0].get("args") or {}
    else:
        _logger.info(f"No megatron config entry with role={role} found in {megatron_config_path}")
    result = slime_apply_overrides(base_args, overrides, role)
    _logger.info(f"Parsed megatron config for role={role}: overrides = {list(overrides)}")
    return result


def slime_resolve_roles(
    parser: argparse.ArgumentParser, argv: Sequence[str], roles: Sequence[str] = SLIME_ROLES
) -> dict[str, argparse.Namespace]:
    """The whole job as slime does it: parse the command line, then each role (no provenance)."""
    args, _unknown = parser.parse_known_args(list(argv))
    return {
        role: slime_parse_megatron_role_args(args, args.megatron_config_path, role, roles)
        for role in roles
    }
