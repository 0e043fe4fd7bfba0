"""slime's contract as data: the names, keys and values its rules and role files use.

From ``../spec/megatron-config.md`` and slime's own code (``slime/utils/arguments.py``,
``slime/backends/megatron_utils``): what a role file may not set, what the critic always runs
with, and what actor and critic must share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "CONFIG_DEST",
    "CRITIC_DEFAULTS",
    "CRITIC_DEFAULTS_UNLESS_OVERRIDDEN",
    "DISTINCT_BECAUSE",
    "DISTINCT_KEYS",
    "PASSTHROUGH",
    "RESOURCES_BECAUSE",
    "RESOURCE_KEYS",
    "ROLES",
    "RUN_WIDE_BECAUSE",
    "RUN_WIDE_KEYS",
    "TOPOLOGY",
    "TOPOLOGY_KEYS",
    "TOP_KEY",
]

#: PPO's two trained models.
ROLES = ("actor", "critic")
#: The dest of ``--megatron-config-path``, which names the role file.
CONFIG_DEST = "megatron_config_path"
#: The role file's top-level key.
TOP_KEY = "megatron"
#: The flags slime's other parsers take: SGLang's (the prefix ``--sglang-``) and the four of the
#: small pre-parser of its training entry (``_pre_parse_mode``), each that flag only, which the
#: training parser does not own either (``megatron_slime_args.json``'s ``pre_parse_actions``).
PASSTHROUGH = (
    "--sglang-",
    "--train-backend",
    "--debug-rollout-only",
    "--debug-train-only",
    "--load-debug-rollout-data",
)

#: The resource keys of slime's contract, each with where to set it instead.
RESOURCE_KEYS: Mapping[str, str] = {
    "num_nodes": "--actor-num-nodes / --critic-num-nodes",
    "num_gpus_per_node": "--actor-num-gpus-per-node / --critic-num-gpus-per-node",
    "actor_num_nodes": "--actor-num-nodes",
    "actor_num_gpus_per_node": "--actor-num-gpus-per-node",
    "critic_num_nodes": "--critic-num-nodes",
    "critic_num_gpus_per_node": "--critic-num-gpus-per-node",
}

#: Why a role file's resource keys are ignored.
RESOURCES_BECAUSE = "resources come from the command line"

#: Keys that decide the run's shape (whether a critic runs, which role file), each with where
#: to set it instead: in a role file they are errors, since one role cannot change the run.
RUN_WIDE_KEYS: Mapping[str, str] = {
    "advantage_estimator": "--advantage-estimator",
    "use_critic": "--use-critic",
    CONFIG_DEST: "--megatron-config-path",
}

#: Why a role file's run-wide keys are refused.
RUN_WIDE_BECAUSE = "it decides the whole run (every role), not one role"

#: What slime always runs the critic with, whenever a role file is given.
CRITIC_DEFAULTS: Mapping[str, Any] = {
    "kl_coef": 0,
    "use_opd": False,
    "custom_advantage_function_path": None,
    "untie_embeddings_and_output_weights": True,
    "disable_param_buffers_cpu_backup": False,
}
#: ... except these, when the critic's own overrides set them.
CRITIC_DEFAULTS_UNLESS_OVERRIDDEN = frozenset({"disable_param_buffers_cpu_backup"})

#: Megatron's parallel topology: actor and critic must share it.
TOPOLOGY_KEYS: tuple[str, ...] = (
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "context_parallel_size",
    "expert_model_parallel_size",
    "expert_tensor_parallel_size",
    "sequence_parallel",
)
#: What the topology keys are, in the guard's message.
TOPOLOGY = "the parallel topology"

#: Directories no two roles may share: each role writes its checkpoints to its ``save``.
DISTINCT_KEYS: tuple[str, ...] = ("save",)
#: Why, in the message.
DISTINCT_BECAUSE = "each role writes its checkpoints there, over the other's"
