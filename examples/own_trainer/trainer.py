"""A trainer of our own, resolved by layerconf: three roles, a role file, one rule of ours.

Nothing here changes layerconf; it only uses its public contracts (`Preset`, `rule`). The
reward model scores the actor's samples and is never trained, so our rule freezes it, and
warns when the role file gives it a learning rate it will never use.

    layerconf explain lr frozen --parser trainer:get_parser --preset trainer:PRESET \\
        -- --lr 3e-6 --roles-file roles.yaml
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from layerconf import Decision, Preset, Problem, RuleContext, RuleSet, SetValue, rule
from layerconf.presets import RoleFileFormat, default_rules


def get_parser() -> argparse.ArgumentParser:
    """The trainer's own command line."""
    parser = argparse.ArgumentParser(prog="train")
    parser.add_argument("--roles-file", help="per-role overrides, as YAML")
    parser.add_argument("--lr", type=float, default=1e-4, help="learning rate")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--model", choices=["small", "large"], default="small")
    parser.add_argument("--frozen", action="store_true", help="do not train this model")
    parser.add_argument("--wandb-key", help="the W&B API key")
    return parser


@rule("resolved")
def reward_is_frozen(context: RuleContext) -> Iterator[Decision]:
    """The reward model never trains: freeze it, and say so if the role file gave it an lr."""
    if context.role != "reward":
        return
    yield SetValue("frozen", True, note="the reward model never trains")
    role_layer = context.layer("role-config")
    if role_layer is not None and "lr" in role_layer.values:
        yield Problem.at(
            role_layer.origin_at(("lr",)),
            "the reward model is frozen: its 'lr' is never used",
            key="lr",
            hint="remove lr from the reward entry",
            severity="warning",
        )


def _rules(parser: argparse.ArgumentParser) -> RuleSet:
    """Every role file check layerconf offers, and ours."""
    return default_rules(PRESET, parser).add(reward_is_frozen)


#: Our roles, our role file (``--roles-file``, a ``roles:`` list), our rules.
PRESET = Preset(
    "own-trainer",
    roles=("actor", "critic", "reward"),
    config_dest="roles_file",
    role_file=RoleFileFormat("roles"),
    rules=_rules,
)
