"""Every public function, called by 8 threads at once on shared inputs, gives what one gets.

The public functions are every function and class of `layerconf.__all__` and of the public
subpackages' `__all__` (sources, rules, audits, presets, presets.slime, compat.slime,
profiles.loader): the names the wrong-type test of `test_hostile` checks and more. Each has a
case here, or a reason in `NOT_THREADED`; `test_every_public_callable_has_a_case` fails when a
new one has neither.

A case prepares its shared inputs in one thread (from a fresh parser, whose per-parser caches
are then cold) and returns the call the threads make. The call runs once alone on inputs of
its own; then the module-level caches are emptied and 8 threads start it together on new
inputs (so they race to fill every cache), and each thread's result must equal the one alone.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

import attrs
import pytest

import layerconf
import layerconf.audits
import layerconf.compat.slime
import layerconf.presets
import layerconf.presets.slime
import layerconf.profiles.loader
import layerconf.rules
import layerconf.sources
from layerconf import SLIME, LayerStack, RuleSet
from layerconf.core.records import Layer
from tests import test_hostile
from tests.test_threads import THREADS
from tests.test_threads import _together as together

FIXTURES = Path(__file__).parent / "fixtures"
ARGV = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
#: The tokens of the trainer's own parser (the rest are SGLang's).
OWN_ARGV = ARGV[: next(i for i, token in enumerate(ARGV) if token.startswith("--sglang-"))]
ROLE_FILE = "slime_ppo_megatron.yaml"
KEY = b"thread-key"

MODULES: tuple[ModuleType, ...] = (
    layerconf,
    layerconf.sources,
    layerconf.rules,
    layerconf.audits,
    layerconf.presets,
    layerconf.presets.slime,
    layerconf.compat.slime,
    layerconf.profiles.loader,
)


def public_callables() -> dict[str, Any]:
    """Every public function and class (not exceptions, constants or type aliases), by name."""
    found: dict[str, Any] = {}
    for module in MODULES:
        for name in module.__all__:
            value = getattr(module, name)
            if name.isupper() or not (
                inspect.isfunction(inspect.unwrap(value)) or inspect.isclass(value)
            ):
                continue  # constants; Decision, Policy and Stage are type aliases
            if inspect.isclass(value) and issubclass(value, BaseException):
                continue  # raised, not called
            assert found.setdefault(name, value) is value, f"two public {name!r}"
    return found


class Inputs:
    """One set of shared inputs, made on demand in the preparing thread."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir()
        self.directory = directory

    @functools.cached_property
    def parser(self) -> argparse.ArgumentParser:
        return layerconf.load_profile()

    @functools.cached_property
    def roles(self) -> dict[str, Any]:
        return layerconf.resolve_roles(self.parser, ARGV, warn=False)

    @functools.cached_property
    def record(self) -> dict[str, Any]:
        return layerconf.audit(self.roles, key=KEY)

    @property
    def role_file(self) -> Path:
        return FIXTURES / ROLE_FILE

    def stacks(self, rules: RuleSet) -> dict[str, LayerStack]:
        base = Layer.from_mapping("default", {"lr": 0.5, "seed": 1, "save": "/ckpt"})
        return {
            role: LayerStack(
                [base, Layer.from_mapping("role-config", {"lr": lr, "seed": "7"})], rules=rules
            )
            for role, lr in (("actor", "1e-5"), ("critic", "2e-5"))
        }


def _values(roles: dict[str, Any]) -> dict[str, str]:
    return {role: json.dumps(vars(ns), sort_keys=True, default=repr) for role, ns in roles.items()}


def _resolve_with(inputs: Inputs, rule_name: str) -> Callable[[], Any]:
    """The threads resolve with the shared instance of one of slime's rules, fresh (cold)."""
    shared = layerconf.slime_rules(inputs.parser)[rule_name]
    preset = attrs.evolve(
        SLIME, rules=lambda parser: layerconf.slime_rules(parser).replace(rule_name, shared)
    )
    parser = inputs.parser
    return lambda: _values(layerconf.resolve_roles(parser, ARGV, preset=preset, warn=False))


def _frozen_write(inputs: Inputs) -> Callable[[], Any]:
    args = inputs.roles["actor"]

    def freeze_then_write() -> str:
        layerconf.freeze(args)
        try:
            args.lr = 1.0
        except layerconf.FrozenNamespaceError as error:
            return str(error)
        return "written"

    return freeze_then_write


def _function_rule(inputs: Inputs) -> Callable[[], Any]:
    def double_seed(context: layerconf.RuleContext) -> list[layerconf.SetValue]:
        return [layerconf.SetValue("seed", 2 * int(context.values["seed"]))]

    parser = inputs.parser

    def resolve() -> Any:
        made = layerconf.rule("resolved", name="double-seed")(double_seed)
        rules = RuleSet([layerconf.TypeCoercion(parser, layers=("role-config",)), made])
        return _values(layerconf.resolve_stacks(inputs.stacks(rules), warn=False))

    return resolve


def _write_atomic(inputs: Inputs) -> Callable[[], Any]:
    data = layerconf.audits.record_bytes(inputs.record)

    def write() -> Any:
        path = layerconf.audits.write_atomic(inputs.directory, "record.json", data)
        return path.name, path.read_bytes() == data

    return write


def _load_audit(inputs: Inputs) -> Callable[[], Any]:
    layerconf.write_audit(inputs.roles, inputs.directory, key=KEY)

    def load() -> Any:
        loaded = layerconf.load_audit(inputs.directory, key=KEY)
        return repr((loaded.data, Path(loaded.path).name, loaded.types))

    return load


def _diff(inputs: Inputs) -> Callable[[], Any]:
    after = layerconf.audit(
        layerconf.resolve_roles(inputs.parser, [*ARGV, "--seed", "99"], warn=False), key=KEY
    )
    return lambda: repr(layerconf.diff_audits(inputs.record, after))


def _critic_runs(inputs: Inputs) -> Callable[[], Any]:
    context = layerconf.RuleContext("roles", None, (), roles=MappingProxyType(inputs.roles))
    return lambda: layerconf.presets.slime.critic_runs(context)


def _compat(inputs: Inputs) -> Callable[[], Any]:
    base, _ = layerconf.parse_known_args(inputs.parser, ARGV)
    compat = layerconf.compat.slime.parse_megatron_role_args
    return lambda: _values({role: compat(base, inputs.role_file, role) for role in SLIME.roles})


def _secret_policy(inputs: Inputs) -> Callable[[], Any]:
    policy = layerconf.SecretPolicy().extend(names=["lr"], suffixes=["_size"])
    dests = [action.dest for action in inputs.parser._actions]
    return lambda: [policy.is_secret(dest) for dest in dests]


def _preset(inputs: Inputs) -> Callable[[], Any]:
    preset = layerconf.Preset(
        "threads",
        roles=("main",),
        ignored_keys={"seed": "--seed"},
        run_wide_keys={"lr": "--lr"},
        passthrough=("--sglang-",),
        unknown_tokens="note",
    )
    parser = inputs.parser
    return lambda: _values(layerconf.resolve_roles(parser, ARGV, preset=preset, warn=False))


def _rule_set(inputs: Inputs) -> Callable[[], Any]:
    rules = layerconf.slime_rules(inputs.parser)
    stages = ("layers", "resolved", "roles")
    return lambda: [[rule.name for rule in rules.for_stage(stage)] for stage in stages]


def _sources(make: Callable[[], layerconf.Source]) -> Callable[[Inputs], Callable[[], Any]]:
    def case(inputs: Inputs) -> Callable[[], Any]:
        sources = [make()]
        parser = inputs.parser
        return lambda: _values(layerconf.resolve_roles(parser, ARGV, sources=sources, warn=False))

    return case


_SECRET_ARGV = [*ARGV, "--wandb-key", "sk-threads-0123456789", "--use-wandb"]

#: Public name -> the case: prepares shared inputs, returns the call every thread makes.
CASES: dict[str, Callable[[Inputs], Callable[[], Any]]] = {
    "resolve_roles": lambda i: lambda: _values(layerconf.resolve_roles(i.parser, ARGV, warn=False)),
    "parse_args": lambda i: (
        lambda: json.dumps(
            vars(layerconf.parse_args(i.parser, OWN_ARGV)), sort_keys=True, default=repr
        )
    ),
    "parse_known_args": lambda i: lambda: repr(layerconf.parse_known_args(i.parser, ARGV)),
    "explain": lambda i: (lambda roles: lambda: str(layerconf.explain(roles["critic"], "lr")))(
        i.roles
    ),
    "explain_all": lambda i: (
        lambda roles: lambda: {k: str(s) for k, s in layerconf.explain_all(roles["actor"]).items()}
    )(i.roles),
    "notices": lambda i: (lambda roles: lambda: repr(layerconf.notices(roles["actor"])))(i.roles),
    "provenance_of": lambda i: (
        lambda roles: lambda: repr(layerconf.provenance_of(roles["critic"]))
    )(i.roles),
    "freeze": _frozen_write,
    "audit": lambda i: (
        lambda roles: lambda: layerconf.audits.record_bytes(layerconf.audit(roles, key=KEY))
    )(i.roles),
    "record_bytes": lambda i: (lambda r: lambda: layerconf.audits.record_bytes(r))(i.record),
    "sign": lambda i: (lambda r: lambda: repr(layerconf.audits.sign(r, KEY)))(i.record),
    "flatten": lambda i: (lambda r: lambda: repr(layerconf.flatten(r)))(i.record),
    "diff_audits": _diff,
    "write_audit": lambda i: (
        lambda roles: lambda: layerconf.write_audit(roles, i.directory, key=KEY).name
    )(i.roles),
    "write_atomic": _write_atomic,
    "load_audit": _load_audit,
    "standard_types": lambda i: lambda: repr(layerconf.audits.standard_types()),
    "ValueTypes": lambda i: (
        lambda: repr(layerconf.ValueTypes().with_classes(layerconf.profiles.loader.bundled_enums()))
    ),
    "load_profile": lambda i: lambda: repr(layerconf.load_profile()._actions),
    "available_profiles": lambda i: layerconf.available_profiles,
    "bundled_enums": lambda i: lambda: repr(layerconf.profiles.loader.bundled_enums()),
    "expected_kind": lambda i: (
        lambda parser: lambda: [layerconf.expected_kind(a) for a in parser._actions]
    )(i.parser),
    "check_role_file": lambda i: lambda: repr(layerconf.check_role_file(i.role_file)),
    "read_role_file": lambda i: lambda: repr(layerconf.read_role_file(i.role_file)),
    "check_yaml": lambda i: lambda: repr(layerconf.check_yaml(i.role_file)),
    "load_yaml": lambda i: lambda: repr(layerconf.load_yaml(i.role_file)),
    "parse_yaml": lambda i: (
        lambda text: lambda: repr(layerconf.parse_yaml(text, source=ROLE_FILE))
    )(i.role_file.read_text()),
    "is_secret": lambda i: (lambda dests: lambda: [layerconf.is_secret(dest) for dest in dests])(
        [action.dest for action in i.parser._actions]
    ),
    "redact": lambda i: (
        lambda args: lambda: {key: repr(layerconf.redact(key, v)) for key, v in args.items()}
    )(vars(layerconf.parse_known_args(i.parser, _SECRET_ARGV)[0])),
    "redacted_argv": lambda i: (
        lambda parser: lambda: layerconf.redacted_argv(_SECRET_ARGV, parser)
    )(i.parser),
    "SecretPolicy": _secret_policy,
    "slime_rules": lambda i: (lambda parser: lambda: layerconf.slime_rules(parser).names)(i.parser),
    "default_rules": lambda i: (
        lambda parser: lambda: layerconf.presets.default_rules(SLIME, parser).names
    )(i.parser),
    "role_file_schema": lambda i: (
        lambda parser: lambda: json.dumps(layerconf.presets.role_file_schema(parser))
    )(i.parser),
    "critic_defaults": lambda i: lambda: repr(layerconf.presets.slime.critic_defaults()),
    "critic_runs": _critic_runs,
    "parse_megatron_role_args": _compat,
    "Preset": _preset,
    "RuleSet": _rule_set,
    "resolve_stacks": lambda i: (
        lambda stacks: lambda: _values(layerconf.resolve_stacks(stacks, warn=False))
    )(i.stacks(RuleSet([layerconf.TypeCoercion(i.parser, layers=("role-config",))]))),
    "LayerStack": lambda i: (lambda stack: lambda: _values({"main": stack.resolve(warn=False)}))(
        i.stacks(RuleSet([layerconf.TypeCoercion(i.parser, layers=("role-config",))]))["actor"]
    ),
    "rule": _function_rule,
    "FunctionRule": _function_rule,
    "IgnoredKeys": lambda i: _resolve_with(i, "ignored-keys"),
    "UnknownKeys": lambda i: _resolve_with(i, "unknown-keys"),
    "UnexpandedText": lambda i: _resolve_with(i, "unexpanded-text"),
    "TypeCoercion": lambda i: _resolve_with(i, "type-coercion"),
    "PpoScope": lambda i: _resolve_with(i, "ppo-scope"),
    "RoleDefaults": lambda i: _resolve_with(i, "critic-defaults"),
    "TopologyGuard": lambda i: _resolve_with(i, "topology-guard"),
    "DistinctAcrossRoles": lambda i: _resolve_with(i, "distinct-across-roles"),
    "EnvSource": _sources(
        lambda: layerconf.EnvSource("SLIME_", environ={"SLIME_LR": "3e-5", "SLIME_SEED": "5"})
    ),
    "MappingSource": _sources(
        lambda: layerconf.sources.MappingSource("mapped", {"lr": 4e-5, "seed": 6})
    ),
}

#: Public callables without a case here, and why.
NOT_THREADED = {
    "Namespace": "its runtime writes from threads: test_namespace (TestRuntimeWrites)",
    "Rule": "a Protocol",
    "Source": "a Protocol",
    **dict.fromkeys(
        [
            "AuditChange",
            "AuditRecord",
            "Convert",
            "Drop",
            "Layer",
            "OpaqueValue",
            "Origin",
            "Problem",
            "Provenance",
            "Reading",
            "Reason",
            "RoleFile",
            "RoleFileFormat",
            "RuleContext",
            "SetValue",
            "Setting",
            "YamlDocument",
        ],
        "a frozen record: making one shares nothing (the cases above make and read them)",
    ),
}


def _together(call: Callable[[], Any]) -> list[Any]:
    """`call()` in THREADS threads started together; their results, or the first error."""
    return together(lambda _index: call())


def _module_caches() -> Iterator[Any]:
    """Every module-level cache of layerconf: the threads start with all of them empty."""
    from layerconf.audits import codec
    from layerconf.core import _secret_flags, secrets, stack
    from layerconf.presets import resolve, role_file
    from layerconf.profiles import loader
    from layerconf.rules import coercion
    from layerconf.sources import _argv_recorder, argv

    yield from (secrets._TAKEN, secrets._SECRET_OPTIONS)
    yield _secret_flags._SEEDS
    yield from (_argv_recorder._ORIGIN_TABLES, argv._CACHE, coercion._TABLES)
    yield from (resolve._RULES, resolve._OPTIONS)
    yield from (secrets._is_secret, stack._rule_origin, loader._spec, codec.standard_types)
    with role_file._ROLE_FILES_LOCK:
        role_file._ROLE_FILES.clear()


def _cold() -> None:
    for cache in _module_caches():
        if hasattr(cache, "cache_clear"):
            cache.cache_clear()
        else:
            cache.clear()


@pytest.fixture
def in_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES)  # the command line names its role file relatively


class TestEveryPublicCallable:
    """Each public function from 8 threads at once equals one call alone."""

    def test_every_public_callable_has_a_case(self) -> None:
        public = public_callables()
        assert set(public) - set(CASES) - set(NOT_THREADED) == set()
        assert set(CASES) | set(NOT_THREADED) <= set(public)  # no case for a name gone
        assert test_hostile._public_callables() <= set(public)  # the wrong-type test's list

    @pytest.mark.parametrize("name", sorted(CASES))
    def test_threads_equal_one(self, name: str, in_fixtures: None, tmp_path: Path) -> None:
        alone = CASES[name](Inputs(tmp_path / "alone"))()
        call = CASES[name](Inputs(tmp_path / "threads"))
        _cold()
        assert _together(call) == [alone] * THREADS
