"""layerconf: resolve a training job's configuration per role, with the origin of every value."""

from layerconf._coerce import TypeCoercion, expected_kind
from layerconf._explain import explain
from layerconf._merge import Policy
from layerconf._namespace import Namespace, Provenance, notices, provenance_of
from layerconf._profile import available_profiles, load_profile
from layerconf._records import Layer, Origin, Reason, Setting
from layerconf._rules import (
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
from layerconf._stack import LayerStack, resolve_stacks
from layerconf._yaml import (
    RoleFile,
    YamlDocument,
    check_role_file,
    check_yaml,
    load_yaml,
    parse_yaml,
    read_role_file,
)
from layerconf.exceptions import (
    ConfigError,
    LayerconfError,
    LayerconfWarning,
    NoProvenanceError,
    Problem,
    RuleError,
    UnknownKeyError,
    UnknownProfileError,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "Convert",
    "Decision",
    "Drop",
    "FunctionRule",
    "Layer",
    "LayerStack",
    "LayerconfError",
    "LayerconfWarning",
    "Namespace",
    "NoProvenanceError",
    "Origin",
    "Policy",
    "Problem",
    "Provenance",
    "Reason",
    "RoleFile",
    "Rule",
    "RuleContext",
    "RuleError",
    "RuleSet",
    "SetValue",
    "Setting",
    "Stage",
    "TypeCoercion",
    "UnknownKeyError",
    "UnknownProfileError",
    "YamlDocument",
    "available_profiles",
    "check_role_file",
    "check_yaml",
    "expected_kind",
    "explain",
    "load_profile",
    "load_yaml",
    "notices",
    "parse_yaml",
    "provenance_of",
    "read_role_file",
    "resolve_stacks",
    "rule",
]
