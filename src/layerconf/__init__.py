"""layerconf: resolve a training job's configuration per role, with the origin of every value.

The core (`layerconf.core`: layers, the stack, rules, the namespace, `explain`) and the
exceptions load with the package. The features built on it (the sources, command-line parsing
among them; the presets and their role files; the built-in rules; the bundled profile; audit
records) load on first use, so that ``import layerconf`` in a trainer costs little more than
its dependencies.
"""

from typing import TYPE_CHECKING, Any

from layerconf.core.explain import explain, explain_all
from layerconf.core.merge import Policy
from layerconf.core.namespace import Namespace, Provenance, notices, provenance_of
from layerconf.core.records import Layer, Origin, Reason, Setting
from layerconf.core.rules import (
    Convert,
    Decision,
    Drop,
    FunctionRule,
    Rule,
    RuleContext,
    RuleSet,
    SetValue,
    Stage,
    rule,
)
from layerconf.core.secrets import SECRETS, SecretPolicy, is_secret, redact
from layerconf.core.stack import LayerStack, resolve_stacks
from layerconf.exceptions import (
    AuditError,
    ConfigError,
    FrozenNamespaceError,
    LayerconfError,
    LayerconfWarning,
    NoProvenanceError,
    Problem,
    RuleError,
    UnknownKeyError,
    UnknownProfileError,
)

if TYPE_CHECKING:
    from layerconf.audits import (
        AuditChange,
        AuditRecord,
        OpaqueValue,
        ValueTypes,
        audit,
        diff_audits,
        flatten,
        load_audit,
        write_audit,
    )
    from layerconf.core.namespace import freeze
    from layerconf.presets import PLAIN, Preset, resolve_roles
    from layerconf.presets.role_file import RoleFile
    from layerconf.presets.slime import SLIME, check_role_file, read_role_file, slime_rules
    from layerconf.profiles.loader import available_profiles, load_profile
    from layerconf.rules.coercion import TypeCoercion, expected_kind
    from layerconf.sources import EnvSource, Reading, Source
    from layerconf.sources.argv import parse_args, parse_known_args
    from layerconf.sources.yaml import YamlDocument, check_yaml, load_yaml, parse_yaml

# Loaded on first use: public name -> the module that defines it.
_LAZY = {
    **dict.fromkeys(["parse_args", "parse_known_args"], "layerconf.sources.argv"),
    **dict.fromkeys(["freeze"], "layerconf.core.namespace"),
    **dict.fromkeys(
        [
            "AuditChange",
            "AuditRecord",
            "OpaqueValue",
            "ValueTypes",
            "audit",
            "diff_audits",
            "flatten",
            "load_audit",
            "write_audit",
        ],
        "layerconf.audits",
    ),
    **dict.fromkeys(["TypeCoercion", "expected_kind"], "layerconf.rules.coercion"),
    "redacted_argv": "layerconf.core.secrets",
    **dict.fromkeys(["available_profiles", "load_profile"], "layerconf.profiles.loader"),
    **dict.fromkeys(["PLAIN", "Preset", "RoleFile", "resolve_roles"], "layerconf.presets"),
    **dict.fromkeys(
        ["SLIME", "check_role_file", "read_role_file", "slime_rules"], "layerconf.presets.slime"
    ),
    **dict.fromkeys(["EnvSource", "Reading", "Source"], "layerconf.sources"),
    **dict.fromkeys(
        ["YamlDocument", "check_yaml", "load_yaml", "parse_yaml"], "layerconf.sources.yaml"
    ),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'layerconf' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"

__all__ = [
    "PLAIN",
    "SECRETS",
    "SLIME",
    "AuditChange",
    "AuditError",
    "AuditRecord",
    "ConfigError",
    "Convert",
    "Decision",
    "Drop",
    "EnvSource",
    "FrozenNamespaceError",
    "FunctionRule",
    "Layer",
    "LayerStack",
    "LayerconfError",
    "LayerconfWarning",
    "Namespace",
    "NoProvenanceError",
    "OpaqueValue",
    "Origin",
    "Policy",
    "Preset",
    "Problem",
    "Provenance",
    "Reading",
    "Reason",
    "RoleFile",
    "Rule",
    "RuleContext",
    "RuleError",
    "RuleSet",
    "SecretPolicy",
    "SetValue",
    "Setting",
    "Source",
    "Stage",
    "TypeCoercion",
    "UnknownKeyError",
    "UnknownProfileError",
    "ValueTypes",
    "YamlDocument",
    "audit",
    "available_profiles",
    "check_role_file",
    "check_yaml",
    "diff_audits",
    "expected_kind",
    "explain",
    "explain_all",
    "flatten",
    "freeze",
    "is_secret",
    "load_audit",
    "load_profile",
    "load_yaml",
    "notices",
    "parse_args",
    "parse_known_args",
    "parse_yaml",
    "provenance_of",
    "read_role_file",
    "redact",
    "redacted_argv",
    "resolve_roles",
    "resolve_stacks",
    "rule",
    "slime_rules",
    "write_audit",
]
