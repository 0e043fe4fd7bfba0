"""slime's ``--megatron-config-path`` contract as a preset: PPO's actor and critic.

`SLIME` is the preset `layerconf.resolve_roles` uses by default; `slime_rules` its rules, to
start your own from; `check_role_file` / `read_role_file` read slime's ``megatron:`` role files;
`layerconf.compat.slime.parse_megatron_role_args` is the drop-in for slime's own function.
Everything slime-specific lives in this package: the rules it is made of are generic
(`layerconf.rules`), configured here with slime's data (`constants`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from layerconf.core.checks import check_type
from layerconf.core.rules import RuleContext, RuleSet
from layerconf.presets.preset import Preset, run_wide_rule
from layerconf.presets.role_file import RoleFile, RoleFileFormat
from layerconf.presets.role_file import check_role_file as _check
from layerconf.presets.role_file import read_role_file as _read
from layerconf.presets.slime.constants import (
    CONFIG_DEST,
    CRITIC_DEFAULTS,
    CRITIC_DEFAULTS_UNLESS_OVERRIDDEN,
    DISTINCT_BECAUSE,
    DISTINCT_KEYS,
    PASSTHROUGH,
    RESOURCE_KEYS,
    RESOURCES_BECAUSE,
    ROLES,
    RUN_WIDE_BECAUSE,
    RUN_WIDE_KEYS,
    TOP_KEY,
    TOPOLOGY,
    TOPOLOGY_KEYS,
)
from layerconf.presets.slime.parity import SlimeParity
from layerconf.rules import (
    DistinctAcrossRoles,
    IgnoredKeys,
    PpoScope,
    RoleDefaults,
    TopologyGuard,
    TypeCoercion,
    UnexpandedText,
    UnknownKeys,
)

__all__ = [
    "CRITIC_DEFAULTS",
    "MEGATRON",
    "RESOURCE_KEYS",
    "SLIME",
    "TOPOLOGY_KEYS",
    "check_role_file",
    "critic_defaults",
    "critic_runs",
    "read_role_file",
    "slime_rules",
]

#: slime's role file format: the ``megatron:`` list.
MEGATRON = RoleFileFormat(
    TOP_KEY,
    empty_hint=f"list role entries under '{TOP_KEY}:', or leave out --megatron-config-path so "
    "that every role inherits the command line",
)


def critic_defaults(layer: str = "role-config") -> RoleDefaults:
    """The rule that runs the critic with slime's runtime defaults (`CRITIC_DEFAULTS`)."""
    return RoleDefaults(
        "critic",
        CRITIC_DEFAULTS,
        unless_overridden=CRITIC_DEFAULTS_UNLESS_OVERRIDDEN,
        layer=layer,
        note="slime always runs the critic with this value",
        name="critic-defaults",
    )


def critic_runs(context: RuleContext) -> bool:
    """Whether the run trains a critic: ``--use-critic`` or ``--advantage-estimator ppo``.

    Both are run-wide keys (a role file may not set them), so every role holds the command
    line's values; the first role's are read.
    """
    args = next(iter(context.roles.values()), None)
    return bool(getattr(args, "use_critic", False)) or (
        getattr(args, "advantage_estimator", None) == "ppo"
    )


def slime_rules(
    parser: argparse.ArgumentParser,
    *,
    layer: str = "role-config",
    ignored_keys: Literal["warn", "error", "allow"] = "warn",
    unknown_keys: Literal["error", "warn"] = "error",
    topology: Literal["error", "warn", "off"] = "error",
    run_wide_keys: Mapping[str, str] = RUN_WIDE_KEYS,
) -> RuleSet:
    """The rules of slime's contract for `parser`, in the order they run, on the role layer
    named `layer`.

    Start from these to build your own: ``slime_rules(parser).replace("topology-guard",
    TopologyGuard(TOPOLOGY_KEYS, action="warn", parser=parser))``, ``.without("ppo-scope")``,
    ``.add(my_rule)``.
    """
    check_type(
        "slime_rules", "parser", parser, argparse.ArgumentParser, "an argparse.ArgumentParser"
    )
    return _rules(
        parser,
        layer=layer,
        run_wide=IgnoredKeys(
            run_wide_keys,
            action="error",
            layer=layer,
            because=RUN_WIDE_BECAUSE,
            name="run-wide-keys",
        ),
        ignored=IgnoredKeys(
            RESOURCE_KEYS, action=ignored_keys, layer=layer, because=RESOURCES_BECAUSE
        ),
        also_known=CRITIC_DEFAULTS.keys(),
        unknown_keys=unknown_keys,
        topology=topology,
    )


def _rules(
    parser: argparse.ArgumentParser,
    *,
    layer: str,
    run_wide: IgnoredKeys,
    ignored: IgnoredKeys,
    also_known: Iterable[str],
    unknown_keys: Literal["error", "warn"] = "error",
    topology: Literal["error", "warn", "off"] = "error",
) -> RuleSet:
    return RuleSet(
        [
            run_wide,
            ignored,
            UnknownKeys(parser, action=unknown_keys, also_known=also_known, layer=layer),
            SlimeParity(parser, layer),
            TypeCoercion(parser, layers=(layer,)),
            UnexpandedText(layer=layer),
            PpoScope(layer=layer),
            critic_defaults(layer),
            TopologyGuard(TOPOLOGY_KEYS, action=topology, subject=TOPOLOGY, parser=parser),
            DistinctAcrossRoles(
                DISTINCT_KEYS, because=DISTINCT_BECAUSE, paths=True, when=critic_runs
            ),
        ]
    )


def _standard_rules(preset: Preset, parser: argparse.ArgumentParser) -> RuleSet:
    """slime's rules as `preset` (SLIME, or an ``attrs.evolve`` of it) says: its run-wide,
    ignored and extra keys, with why, on its role layer."""
    layer = preset.layer
    return _rules(
        parser,
        layer=layer,
        run_wide=run_wide_rule(preset),
        ignored=IgnoredKeys(preset.ignored_keys, layer=layer, because=preset.ignored_because),
        also_known=preset.extra_keys.keys(),
    )


#: slime's ``--megatron-config-path`` contract: PPO's actor and critic.
SLIME = Preset(
    "slime",
    roles=ROLES,
    config_dest=CONFIG_DEST,
    role_file=MEGATRON,
    passthrough=PASSTHROUGH,
    passthrough_to="slime's pre-parser or SGLang's parser",
    passthrough_hint="slime hands such arguments to its pre-parser or to SGLang's parser",
    unknown_tokens="note",
    extra_keys=dict.fromkeys(
        CRITIC_DEFAULTS, "Set on the critic by slime (not a command-line argument)."
    ),
    ignored_keys=RESOURCE_KEYS,
    run_wide_keys=RUN_WIDE_KEYS,
    run_wide_because=RUN_WIDE_BECAUSE,
    ignored_because=RESOURCES_BECAUSE,
    standard_rules=_standard_rules,
)


def check_role_file(
    path: str | os.PathLike[str],
    roles: Sequence[str] = ROLES,
    *,
    layer_name: str = "role-config",
) -> RoleFile:
    """Read a slime role file (``--megatron-config-path``), returning its problems; see
    `layerconf.presets.role_file.check_role_file`."""
    return _check(path, roles, layer_name=layer_name, form=MEGATRON)


def read_role_file(
    path: str | os.PathLike[str],
    roles: Sequence[str] = ROLES,
    *,
    layer_name: str = "role-config",
) -> RoleFile:
    """Read a slime role file into one layer per role; `ConfigError` listing every problem."""
    return _read(path, roles, layer_name=layer_name, form=MEGATRON)
