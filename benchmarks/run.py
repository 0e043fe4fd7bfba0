"""One run, side by side: layerconf against slime's way, OmegaConf, dynaconf, ConfigArgParse
and jsonargparse, on the real slime PPO job, then scaled up on synthetic jobs.

Run from the repository root::

    python benchmarks/run.py                           # the table, targets, scaling (~8 min)
    python benchmarks/run.py --plots docs/performance  # the same, and the scaling plots (PNG)
    python benchmarks/run.py --quick                   # tiny sizes: only proves it all runs

Everything is measured in one process and one run, so that the ratios compare like with like
on a shared, noisy machine: each time is the median of many rounds after a warm-up call
(`_timing.measure`; calls slower than 50 ms get fewer rounds, down to 3 above 1 s: the
``repeat`` column says how many). It prints one table (approach, median, ratio to the
group's baseline: slime's way, or for whole processes ``import yaml, attrs, deepmerge``), the
targets as PASS/MISS (never asserted), what each approach can and cannot do, the memory kept,
and the growth exponents; it writes the same as JSON to ``benchmarks/results/run.json``.

The real workload: the bundled ``megatron-slime`` profile (`layerconf.load_profile()`,
1,041 actions), the real 109-token PPO command line (``tests/fixtures/slime_ppo_argv.txt``,
which names its role file relatively, so the run works in ``tests/fixtures``) and its role
file ``slime_ppo_megatron.yaml``. slime's way (`slime_parse_megatron_role_args` below) takes
slime's steps in slime's order: ``yaml.safe_load``, ``copy.deepcopy``, ``setattr`` with numeric
coercion, the critic's runtime defaults, after ``parser.parse_known_args(argv)``.

Peers are optional (``pip install omegaconf dynaconf ConfigArgParse jsonargparse matplotlib``):
a missing one is skipped with a note. Each does what comes closest to the job; where it cannot
do part of it (roles, layering a file over the command line, coercion) the benchmark does that
part by hand or says that its values differ, and `CAPABILITIES` says what it keeps.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import functools
import gc
import importlib.metadata
import importlib.util
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

import attrs
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import layerconf  # noqa: E402
from _timing import QUICK, cold, interleaved, judge, measure, save, spread  # noqa: E402
from bench_stack import (  # noqa: E402
    synthetic,
    synthetic_argv,
    synthetic_parser,
    synthetic_role_file,
)
from layerconf.audits import AUDIT_FILE, record_bytes, write_atomic  # noqa: E402
from layerconf.compat.slime import parse_megatron_role_args  # noqa: E402

sys.path.insert(0, str(HERE.parent))
from tests.slime_reference import (  # noqa: E402
    SLIME_ROLES,
    slime_critic_defaults,
    slime_parse_megatron_role_args,
    slime_resolve_roles,
)

ROOT = HERE.parent
FIXTURES = ROOT / "tests" / "fixtures"
ARGV = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
ROLE_FILE = "slime_ppo_megatron.yaml"  # as the command line names it

#: The optional peers: module -> the name pip installs it by.
PEERS = {
    "omegaconf": "omegaconf",
    "dynaconf": "dynaconf",
    "configargparse": "ConfigArgParse",
    "jsonargparse": "jsonargparse",
}
#: Versions reported with the results.
PACKAGES = ("layerconf", "PyYAML", "attrs", "deepmerge", *PEERS.values(), "matplotlib")

#: Stop scaling an approach once one resolution takes longer than this (seconds)...
CAP = 0.3 if QUICK else 2.0
#: ...or when the next size is predicted to take longer than this.
PREDICTED_CAP = 1.0 if QUICK else 8.0
#: Memory (tracemalloc, which slows a call down) is measured for calls faster than this.
MEMORY_BELOW = 0.005 if QUICK else 0.5

KEY_SIZES = [100, 200] if QUICK else [1000, 1500, 2000, 3000, 5000, 10000, 20000, 50000, 100000]
LAYER_SIZES = [2, 3] if QUICK else [2, 4, 8, 16, 32, 64]
ROLE_SIZES = [2, 3] if QUICK else [2, 4, 8, 16, 32, 64]
LAYER_KEYS = 100 if QUICK else 1000  # keys of every layer in the layers scaling
ROLE_KEYS = 100 if QUICK else 1000  # keys of the job in the roles scaling
UNITS = {
    "keys": "keys (parser actions; 2 roles, a 60-flag command line, 10 overrides a role)",
    "layers": f"layers ({LAYER_KEYS:,} keys each; every layer sets every key)",
    "roles": f"roles ({ROLE_KEYS:,} keys; 10 overrides a role)",
}


# ---------------------------------------------------------------------------------------------
# slime's way: slime's own function, as tests/slime_reference.py transcribes it (the parity
# test holds the drop-in to the same copy).


# ---------------------------------------------------------------------------------------------
# Workloads


@dataclasses.dataclass
class Workload:
    """One job: a parser, a command line naming a role file, the roles to resolve."""

    name: str
    parser: argparse.ArgumentParser
    argv: list[str]
    role_file: str  # as the command line names it
    roles: tuple[str, ...]
    scratch: Path  # where the peers' per-role files go
    preset: layerconf.Preset = layerconf.SLIME

    @functools.cached_property
    def parsed(self) -> tuple[argparse.Namespace, list[str]]:
        return self.parser.parse_known_args(self.argv)

    @property
    def base(self) -> argparse.Namespace:
        """The parsed command line, as slime has it before resolving roles."""
        return self.parsed[0]

    @functools.cached_property
    def overrides(self) -> dict[str, dict[str, Any]]:
        """Each role's overrides as ``yaml.safe_load`` reads them."""
        with open(self.role_file) as stream:
            entries = yaml.safe_load(stream)["megatron"]
        found = {
            entry["role"]: entry.get("overrides") or entry.get("args") or {} for entry in entries
        }
        return {role: found.get(role, {}) for role in self.roles}

    @functools.cached_property
    def flat_files(self) -> dict[str, str]:
        """Each role's overrides as a flat YAML file: the config-file format of ConfigArgParse
        and jsonargparse, which have no roles (written before timing, not timed)."""
        paths = {}
        for role, overrides in self.overrides.items():
            path = self.scratch / f"{self.name}-{role}.yaml"
            path.write_text(yaml.safe_dump(overrides))
            paths[role] = str(path)
        return paths

    @functools.cached_property
    def known_argv(self) -> list[str]:
        """The command line without the tokens the parser does not own (jsonargparse refuses
        them; slime hands them to SGLang's parser)."""
        known, position = list(self.argv), 0
        for token in self.parsed[1]:
            position = known.index(token, position)
            del known[position]
        return known


def real_workload(scratch: Path) -> Workload:
    return Workload("slime-ppo", layerconf.load_profile(), ARGV, ROLE_FILE, SLIME_ROLES, scratch)


def synthetic_workload(keys: int, roles: Sequence[str], scratch: Path) -> Workload:
    values = synthetic(keys)
    name = f"synthetic-{keys}-keys-{len(roles)}-roles"
    role_file = scratch / f"{name}.yaml"
    role_file.write_text(synthetic_role_file(values, roles))
    roles = tuple(roles)
    # slime's contract with more roles: the same rules, file format and pass-through.
    preset = attrs.evolve(layerconf.SLIME, name="bench", roles=roles)
    return Workload(
        name,
        synthetic_parser(values),
        synthetic_argv(values, config=str(role_file)),
        str(role_file),
        roles,
        scratch,
        preset,
    )


# ---------------------------------------------------------------------------------------------
# Rebuilding a parser for ConfigArgParse and jsonargparse, which need their own add_argument

_ACTION_NAMES: dict[type, Any] = {
    argparse._StoreAction: "store",
    argparse._StoreTrueAction: "store_true",
    argparse._StoreFalseAction: "store_false",
    argparse._AppendAction: "append",
    argparse.BooleanOptionalAction: argparse.BooleanOptionalAction,
}


def _positive_flags(option_strings: list[str]) -> list[str]:
    """A BooleanOptionalAction's own flags, without the ``--no-`` forms argparse adds."""
    flags, index = [], 0
    while index < len(option_strings):
        flag = option_strings[index]
        flags.append(flag)
        following = option_strings[index + 1] if index + 1 < len(option_strings) else None
        index += 2 if following == "--no-" + flag[2:] else 1
    return flags


def _passthrough(convert: Callable[[str], Any]) -> Callable[[Any], Any]:
    def convert_text(value: Any) -> Any:
        return convert(value) if isinstance(value, str) else value

    return convert_text


def rebuild_parser(
    cls: type[argparse.ArgumentParser],
    source: argparse.ArgumentParser,
    *,
    jsonargparse_fixes: bool = False,
    **settings: Any,
) -> tuple[argparse.ArgumentParser, list[str]]:
    """`source`'s actions added again through `cls`'s own ``add_argument``.

    With `jsonargparse_fixes`, two things jsonargparse refuses where argparse does not are
    adapted, and the dests returned: a custom ``type=`` callable is also given the default,
    which argparse already converted (it is wrapped to pass non-strings through); a list
    option's default that is not a list (Megatron's ``'aux_loss'``, ``0.0``) is put in one.
    """
    parser = cls(prog="train.py", add_help=False, allow_abbrev=False, **settings)
    adapted = []
    for action in source._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        kind = _ACTION_NAMES[type(action)]
        options = action.option_strings
        kwargs: dict[str, Any] = {
            "dest": action.dest,
            "action": kind,
            "default": action.default,
            "required": action.required,
        }
        if kind is argparse.BooleanOptionalAction:
            options = _positive_flags(options)
        if kind in ("store", "append"):
            for name in ("type", "nargs", "const", "choices", "metavar"):
                if getattr(action, name) is not None:
                    kwargs[name] = getattr(action, name)
            if jsonargparse_fixes:
                if kwargs.get("type") not in (None, int, float, str, bool):
                    kwargs["type"] = _passthrough(kwargs["type"])
                    adapted.append(action.dest)
                default = action.default
                if action.nargs in ("+", "*") and not isinstance(
                    default, (list, tuple, type(None))
                ):
                    kwargs["default"] = [default]
                    adapted.append(action.dest)
        parser.add_argument(*options, **kwargs)
    return parser, adapted


# ---------------------------------------------------------------------------------------------
# The approaches


#: The dests adapted for jsonargparse, per workload (reported in run.json).
ADAPTED: dict[str, list[str]] = {}


def _peer(module: str) -> bool:
    """Whether `module` is installed. It is not imported here: importing ConfigArgParse
    replaces argparse's ``add_argument`` for every parser of the process, so peers are imported
    only by their own approach, which runs after layerconf's and slime's."""
    return importlib.util.find_spec(module) is not None


@dataclasses.dataclass(frozen=True)
class Approach:
    """A way to resolve every role of a job; `make` sets it up (untimed) and returns the timed
    call, whose result `values` turns into ``{role: {key: value}}`` to compare."""

    key: str
    name: str
    group: str  # "argv": from the command line; "namespace": from a parsed namespace
    make: Callable[[Workload], Callable[[], Any]]
    values: Callable[[Any, Workload], dict[str, dict[str, Any]]]
    peer: str | None = None


def _vars(result: dict[str, Any], w: Workload) -> dict[str, dict[str, Any]]:
    return {role: dict(vars(namespace)) for role, namespace in result.items()}


def _make_slime_argv(w: Workload) -> Callable[[], Any]:
    return lambda: slime_resolve_roles(w.parser, w.argv, w.roles)


def _make_layerconf_argv(w: Workload) -> Callable[[], Any]:
    return cold(lambda: layerconf.resolve_roles(w.parser, w.argv, preset=w.preset))


def _make_slime_namespace(w: Workload) -> Callable[[], Any]:
    base = w.base
    return lambda: {
        role: slime_parse_megatron_role_args(base, w.role_file, role, w.roles) for role in w.roles
    }


def _make_compat_namespace(w: Workload) -> Callable[[], Any]:
    base = w.base
    return cold(
        lambda: {role: parse_megatron_role_args(base, w.role_file, role) for role in w.roles}
    )


def _make_compat_traced_namespace(w: Workload) -> Callable[[], Any]:
    base, _ = layerconf.parse_known_args(w.parser, w.argv)  # a base that has provenance
    return cold(
        lambda: {role: parse_megatron_role_args(base, w.role_file, role) for role in w.roles}
    )


def _make_omegaconf(w: Workload) -> Callable[[], Any]:
    from omegaconf import OmegaConf

    base = vars(w.base)

    def resolve() -> dict[str, Any]:
        result = {}
        for role in w.roles:
            raw = OmegaConf.load(w.role_file)  # its YAML loader reads 1e-5 as a float
            entries = [entry for entry in raw.megatron if entry.get("role") == role]
            overrides = (entries[0].get("overrides") or entries[0].get("args")) if entries else {}
            layers = [OmegaConf.create(base), overrides or {}]
            if role == "critic":
                layers.append(slime_critic_defaults(overrides or {}))
            result[role] = OmegaConf.merge(*layers)
        return result

    return resolve


def _omegaconf_values(result: dict[str, Any], w: Workload) -> dict[str, dict[str, Any]]:
    from omegaconf import OmegaConf

    return {role: OmegaConf.to_container(config) for role, config in result.items()}


def _make_dynaconf(w: Workload) -> Callable[[], Any]:
    from dynaconf import Dynaconf
    from dynaconf.loaders.base import SourceMetadata

    base = vars(w.base)
    from_argv = SourceMetadata("argparse", "command line", "default")

    def resolve() -> dict[str, Any]:
        result = {}
        for role in w.roles:
            with open(w.role_file) as stream:
                entries = yaml.safe_load(stream)["megatron"]
            found = [entry for entry in entries if entry.get("role") == role]
            overrides = (found[0].get("overrides") or found[0].get("args") or {}) if found else {}
            settings = Dynaconf(environments=False, load_dotenv=False)
            settings.update(base, loader_identifier=from_argv)
            # dynaconf has no rule for '1e-5' read as a string: slime's coercion, by hand
            coerced = {}
            for key, value in overrides.items():
                original = base.get(key)
                if isinstance(value, str) and isinstance(original, (int, float)):
                    with contextlib.suppress(TypeError, ValueError):
                        value = type(original)(value)
                coerced[key] = value
            settings.update(coerced, loader_identifier=SourceMetadata("yaml", w.role_file, role))
            if role == "critic":
                settings.update(
                    slime_critic_defaults(overrides),
                    loader_identifier=SourceMetadata("python", "critic defaults", role),
                )
            result[role] = settings
        return result

    return resolve


def _dynaconf_values(result: dict[str, Any], w: Workload) -> dict[str, dict[str, Any]]:
    known = [*vars(w.base), *slime_critic_defaults({})]
    names = {key.upper(): key for key in known}  # dynaconf upper-cases every key
    return {
        role: {names.get(key, key): value for key, value in settings.as_dict().items()}
        for role, settings in result.items()
    }


def _make_configargparse(w: Workload) -> Callable[[], Any]:
    import configargparse

    parser, _ = rebuild_parser(
        configargparse.ArgumentParser,
        w.parser,
        config_file_parser_class=configargparse.YAMLConfigFileParser,
    )
    parser.add_argument("--role-config", is_config_file=True)
    files = w.flat_files

    def resolve() -> dict[str, Any]:
        result = {}
        for role in w.roles:
            namespace, _ = parser.parse_known_args([*w.argv, "--role-config", files[role]])
            parser.format_values()  # its provenance: per source
            if role == "critic":
                for key, value in slime_critic_defaults(w.overrides[role]).items():
                    setattr(namespace, key, value)
            result[role] = namespace
        return result

    return resolve


def _make_jsonargparse(w: Workload) -> Callable[[], Any]:
    import jsonargparse

    parser, adapted = rebuild_parser(
        jsonargparse.ArgumentParser, w.parser, jsonargparse_fixes=True, exit_on_error=False
    )
    ADAPTED.setdefault(w.name, adapted)
    parser.add_argument("--role-config", action=jsonargparse.ActionConfigFile)
    files, argv = w.flat_files, w.known_argv

    def resolve() -> dict[str, Any]:
        result = {}
        for role in w.roles:
            # a config file given after the command line overrides it, as a role file should
            namespace = parser.parse_args([*argv, "--role-config", files[role]])
            if role == "critic":
                for key, value in slime_critic_defaults(w.overrides[role]).items():
                    setattr(namespace, key, value)
            result[role] = namespace
        return result

    return resolve


def _without_config(result: dict[str, Any], w: Workload) -> dict[str, dict[str, Any]]:
    return {
        role: {key: value for key, value in vars(namespace).items() if key != "role_config"}
        for role, namespace in result.items()
    }


SLIME_ARGV = Approach(
    "slime",
    "slime's way: parse_known_args + per role safe_load, deepcopy, setattr",
    "argv",
    _make_slime_argv,
    _vars,
)
LAYERCONF_ARGV = Approach(
    "layerconf",
    "layerconf.resolve_roles(parser, argv), full provenance",
    "argv",
    _make_layerconf_argv,
    _vars,
)
SLIME_NAMESPACE = Approach(
    "slime-ns",
    "slime's parse_megatron_role_args(base, path, role) per role",
    "namespace",
    _make_slime_namespace,
    _vars,
)
COMPAT_NAMESPACE = Approach(
    "compat",
    "layerconf.compat.slime.parse_megatron_role_args per role",
    "namespace",
    _make_compat_namespace,
    _vars,
)
COMPAT_TRACED = Approach(
    "compat-traced",
    "  the same, base from layerconf.parse_known_args",
    "namespace",
    _make_compat_traced_namespace,
    _vars,
)
OMEGACONF = Approach(
    "omegaconf",
    "OmegaConf: per role load + create(vars(ns)) + merge",
    "namespace",
    _make_omegaconf,
    _omegaconf_values,
    peer="omegaconf",
)
DYNACONF = Approach(
    "dynaconf",
    "dynaconf: per role Dynaconf() + update(ns) + update(role)",
    "namespace",
    _make_dynaconf,
    _dynaconf_values,
    peer="dynaconf",
)
CONFIGARGPARSE = Approach(
    "configargparse",
    "ConfigArgParse: per role parse (config file) + format_values()",
    "argv",
    _make_configargparse,
    _without_config,
    peer="configargparse",
)
JSONARGPARSE = Approach(
    "jsonargparse",
    "jsonargparse: per role parse (config file)",
    "argv",
    _make_jsonargparse,
    _without_config,
    peer="jsonargparse",
)
APPROACHES = [  # slime's way first (the values every other is compared with), peers last
    SLIME_ARGV,
    LAYERCONF_ARGV,
    SLIME_NAMESPACE,
    COMPAT_NAMESPACE,
    COMPAT_TRACED,
    CONFIGARGPARSE,
    JSONARGPARSE,
    OMEGACONF,
    DYNACONF,
]

#: What each approach keeps and can do, beyond the time it takes.
CAPABILITIES: dict[str, dict[str, str]] = {
    "layerconf": {
        "provenance": "every value: layer, and where in it (argv index and token, "
        "file:line:col, rule)",
        "file_line": "yes",
        "history": "yes: every shadowed value, newest first, and why it lost",
        "roles": "yes: one call resolves every role, rules run across roles",
    },
    "compat": {
        "provenance": "as layerconf (a plain base is one layer 'base'; a base from "
        "layerconf.parse_known_args keeps its own)",
        "file_line": "yes",
        "history": "yes",
        "roles": "one role per call, as slime",
    },
    "slime": {
        "provenance": "none",
        "file_line": "no",
        "history": "no",
        "roles": "one role per call (a deep copy each)",
    },
    "omegaconf": {
        "provenance": "none: a merged config keeps no origin",
        "file_line": "no",
        "history": "no",
        "roles": "no: one merge per role, written by hand",
    },
    "dynaconf": {
        "provenance": "per value: loader, identifier (a file name) and env, via get_history "
        "/ inspect_settings",
        "file_line": "no (file name only)",
        "history": "yes: the values each loader set",
        "roles": "no (environments are not roles): one Settings per role, by hand; no "
        "coercion of '1e-5' (done by hand here)",
    },
    "configargparse": {
        "provenance": "per source group: command line, each config file, env, defaults "
        "(format_values())",
        "file_line": "no (file name only)",
        "history": "no",
        "roles": "no: one parse per role with a flat per-role file; the command line "
        "outranks a config file, so a role cannot override a flag given on it",
    },
    "jsonargparse": {
        "provenance": "none per value (only the config file paths)",
        "file_line": "no",
        "history": "no",
        "roles": "no: one parse per role with a flat per-role file given last; refuses "
        "the SGLang tokens (removed here)",
    },
}


def _available(approach: Approach, skipped: dict[str, str]) -> bool:
    if approach.peer is None:
        return True
    if not _peer(approach.peer):
        skipped.setdefault(approach.peer, f"not installed: pip install {PEERS[approach.peer]}")
        return False
    return True


def _differences(expected: dict[str, dict[str, Any]], got: dict[str, dict[str, Any]]) -> list[str]:
    """``role.key`` of each value that differs from `expected` (in value or in type)."""
    differ = []
    for role, values in expected.items():
        other = got.get(role, {})
        for key, value in values.items():
            found = other.get(key, dataclasses.MISSING)
            same = found == value and (
                type(found) is type(value) or isinstance(found, (list, dict))
            )
            if not same:
                differ.append(f"{role}.{key}")
    return differ


# ---------------------------------------------------------------------------------------------
# Measuring


def timed(function: Callable[[], object], first: float | None = None) -> tuple[float, int]:
    """(median seconds per call, rounds): `_timing.measure`, with fewer rounds for slow calls.

    `first` is the time of a call already made (the warm-up); without it, one is made here.
    """
    if first is None:
        start = time.perf_counter()
        function()  # warm-up, and a first estimate
        first = time.perf_counter() - start
    if QUICK and first > 0.05:
        return first, 1
    if first > 1.0:
        rounds = 3
    elif first > 0.2:
        rounds = 5
    elif first > 0.05:
        rounds = 11
    else:
        rounds = 31
    if first <= 0.02:
        return measure(function, repeat=rounds), 3 if QUICK else rounds
    samples = []  # one call a round: as _timing.measure does, without a second warm-up
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(3 if QUICK else rounds):
            start = time.perf_counter()
            function()
            samples.append(time.perf_counter() - start)
    finally:
        if gc_was_enabled:
            gc.enable()
    return statistics.median(samples), len(samples)


def traced_memory(function: Callable[[], object]) -> tuple[int, int]:
    """(bytes kept, peak bytes) of one call: allocated by it and still alive while its result
    is held, and the most it held at once (tracemalloc; caches warmed by a call before)."""
    function()
    gc.collect()
    tracemalloc.start()
    try:
        result = function()
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return kept, peak


_NOT_WALKED = (type, ModuleType, FunctionType, type(len), type(print.__call__))


def reachable(roots: Iterable[object], stop: set[int] | None = None) -> dict[int, object]:
    """Every object reachable from `roots` (by gc referents), not through `stop` or a type,
    module or function (those are code, shared by everything)."""
    stop = stop or set()
    seen: dict[int, object] = {}
    todo = [root for root in roots if id(root) not in stop]
    while todo:
        item = todo.pop()
        if id(item) in seen or id(item) in stop or isinstance(item, _NOT_WALKED):
            continue
        seen[id(item)] = item
        todo.extend(gc.get_referents(item))
    return seen


def deep_size(objects: dict[int, object]) -> int:
    return sum(sys.getsizeof(item) for item in objects.values())


def provenance_memory(roles: dict[str, Any], inputs: Sequence[object]) -> dict[str, int]:
    """The memory a resolution keeps, split in the namespaces' own and the rest (provenance).

    kept: every object reachable from the resolved namespaces (their provenance included),
    counted once, without what the inputs reach (the parser with its defaults, argv).
    own: what the namespaces themselves reach: each object, its ``__dict__`` and the values
    in it (the dict keys are the parser's dest strings, so they count for neither).
    provenance = kept - own. Sizes are ``sys.getsizeof``; the per-parser default layer that
    layerconf caches is counted (the namespaces reach it), the rule tables are not.
    """
    stop = set(reachable(inputs))
    kept = reachable(roles.values(), stop)
    own: dict[int, object] = {}
    for namespace in roles.values():
        own[id(namespace)] = namespace
        own.update(reachable([vars(namespace)], stop))
    own_bytes = deep_size(own)
    kept_bytes = deep_size(kept)
    return {"kept": kept_bytes, "own": own_bytes, "provenance": kept_bytes - own_bytes}


def growth_exponent(sizes: Sequence[float], values: Sequence[float]) -> float | None:
    """The least-squares slope of log(value) against log(size): 1 is linear, 2 quadratic."""
    points = [(math.log(s), math.log(v)) for s, v in zip(sizes, values, strict=True) if v > 0]
    if len(points) < 2:
        return None
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def tail_exponent(sizes: Sequence[float], values: Sequence[float]) -> float | None:
    """The slope between the two largest sizes: the growth where the fixed costs matter least."""
    if len(sizes) < 2 or values[-1] <= 0 or values[-2] <= 0:
        return None
    return math.log(values[-1] / values[-2]) / math.log(sizes[-1] / sizes[-2])


# ---------------------------------------------------------------------------------------------
# Whole processes


def _process_commands(peers: dict[str, bool]) -> list[tuple[str, list[str]]]:
    script = Path(sys.executable).with_name("layerconf")
    explain = [str(script)] if script.exists() else [sys.executable, "-m", "layerconf"]
    commands = [
        ("python -c pass (the interpreter alone)", [sys.executable, "-c", "pass"]),
        (DEPS_PROCESS, [sys.executable, "-c", "import yaml, attrs, deepmerge"]),
        ("python -c 'import layerconf'", [sys.executable, "-c", "import layerconf"]),
        (IMPORTS_PROCESS, [sys.executable, "-c", FIRST_RESOLUTION_IMPORTS]),
        ("layerconf explain lr -- <fixture argv>", [*explain, "explain", "lr", "--", *ARGV]),
        (CHECK_PROCESS, [*explain, "check", "--", *ARGV]),
    ]
    for module, found in peers.items():
        if found and not QUICK:
            name = f"python -c 'import {module}' (for scale)"
            commands.append((name, [sys.executable, "-c", f"import {module}"]))
    return commands


DEPS_PROCESS = "python -c 'import yaml, attrs, deepmerge'"
#: What a process imports to resolve roles: layerconf and the modules its first call loads.
FIRST_RESOLUTION_IMPORTS = (
    "import layerconf, layerconf.presets, layerconf.presets.slime, layerconf.rules, "
    "layerconf.sources.argv, layerconf.sources.yaml"
)
IMPORTS_PROCESS = "python -c 'import layerconf + what the first resolution imports'"
CHECK_PROCESS = "layerconf check -- <fixture argv>"


def measure_processes(
    commands: list[tuple[str, list[str]]], rounds: int = 0
) -> dict[str, list[float]]:
    """Seconds of each command as a fresh process, `rounds` interleaved rounds (0: 21; 2 in
    quick mode), with a bytecode cache.

    The children write and read their ``.pyc`` files under a temporary PYTHONPYCACHEPREFIX
    (PYTHONDONTWRITEBYTECODE is dropped): layerconf is compiled into it first, and one run of
    every command fills it for everything else they import, as an installed package has.
    """
    rounds = rounds or (2 if QUICK else 21)
    with tempfile.TemporaryDirectory(prefix="layerconf-pycache-") as cache:
        env = {
            key: value for key, value in os.environ.items() if not key.startswith("PYTHONPYCACHE")
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
        env["NO_COLOR"] = "1"
        package = Path(layerconf.__file__).parent
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(package)], env=env, check=True
        )

        def run(arguments: list[str]) -> float:
            start = time.perf_counter()
            subprocess.run(
                arguments,
                cwd=FIXTURES,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
            )
            return time.perf_counter() - start

        for _, arguments in commands:  # warm-up: fills the cache
            run(arguments)
        samples: dict[str, list[float]] = {name: [] for name, _ in commands}
        for index in range(rounds):  # interleaved, so that drift hits every command alike
            for name, arguments in commands if index % 2 == 0 else commands[::-1]:
                samples[name].append(run(arguments))
    return samples


# ---------------------------------------------------------------------------------------------
# The real workload


@dataclasses.dataclass
class Row:
    group: str
    approach: str
    median_s: float
    repeat: int
    key: str = ""
    note: str = ""
    ratio: float = float("nan")


GROUPS = {
    "argv": ("From the command line, both roles", SLIME_ARGV.name),
    "namespace": ("From a parsed namespace, both roles", SLIME_NAMESPACE.name),
    "per-key": ("Per key, records, the profile", LAYERCONF_ARGV.name),
    "process": ("Whole processes (fresh interpreter, bytecode cached)", DEPS_PROCESS),
}


AUDIT_ROW = "layerconf.audit(roles) (every key of both roles)"
WRITE_AUDIT_ROW = "layerconf.write_audit(roles, dir) (fsync included)"
AUDIT_BYTES_ROW = "layerconf record_bytes(audit(roles)) (every entry encoded)"
FILE_WRITE_ROW = "layerconf write_atomic(dir, the record's bytes) (write, fsync, rename, fsync dir)"


def real_rows(
    w: Workload, skipped: dict[str, str]
) -> tuple[list[Row], dict[str, Any], dict[str, Any]]:
    """The table rows of the real job, the results kept for later, and the values checks."""
    rows: list[Row] = []
    results: dict[str, Any] = {}
    checks: dict[str, Any] = {}
    expected: dict[str, dict[str, Any]] | None = None
    for approach in APPROACHES:
        if not _available(approach, skipped):
            continue
        call = approach.make(w)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            result = call()  # the warm-up call
            first = time.perf_counter() - start
        values = approach.values(result, w)
        if expected is None:
            expected = values  # slime's way comes first
        differ = _differences(expected, values)
        checks[approach.key] = {
            "values_equal_slime": not differ,
            "differing": differ[:10],
            "differing_count": len(differ),
            "warnings": [str(warning.message) for warning in caught][:5],
        }
        median, repeat = timed(call, first)
        note = "" if not differ else f"values differ from slime's: {', '.join(differ[:3])}"
        rows.append(Row(approach.group, approach.name, median, repeat, approach.key, note))
        results[approach.key] = (call, result)
    return rows, results, checks


def _explaining(roles: dict[str, Any]) -> tuple[list[tuple[Any, str]], Callable[[], None]]:
    """Every (namespace, key) of `roles`, and a function explaining each of them once."""
    every = [(namespace, key) for namespace in roles.values() for key in vars(namespace)]

    def explain_every_key() -> None:
        for namespace, key in every:
            layerconf.explain(namespace, key)

    return every, explain_every_key


def per_key_rows(w: Workload, results: dict[str, Any]) -> list[Row]:
    roles = results["layerconf"][1]
    critic = roles["critic"]
    every, explain_every_key = _explaining(roles)
    rows = []
    median, repeat = timed(lambda: layerconf.explain(critic, "lr"))
    rows.append(
        Row("per-key", "explain(critic, 'lr') (4 values in its history)", median, repeat, "explain")
    )
    median, repeat = timed(explain_every_key)
    rows.append(
        Row(
            "per-key",
            f"explain() per key, mean over all {len(every)} keys of both roles",
            median / len(every),
            repeat,
            "explain-mean",
        )
    )
    if "dynaconf" in results:
        from dynaconf.utils.inspect import get_history

        settings = results["dynaconf"][1]["critic"]
        median, repeat = timed(lambda: get_history(settings, key="lr"))
        rows.append(
            Row(
                "per-key",
                "dynaconf get_history(settings, 'lr')",
                median,
                repeat,
                "dynaconf-history",
            )
        )
    data = record_bytes(layerconf.audit(roles))  # what write_audit writes, encoded beforehand
    with tempfile.TemporaryDirectory() as directory:
        for name, key, function in [
            (
                AUDIT_ROW,
                "audit",
                lambda: layerconf.audit(roles),
            ),
            (
                WRITE_AUDIT_ROW,
                "write_audit",
                lambda: layerconf.write_audit(roles, directory),
            ),
            (
                AUDIT_BYTES_ROW,
                "audit-bytes",
                lambda: record_bytes(layerconf.audit(roles)),
            ),
            (
                FILE_WRITE_ROW,  # the disk's part of write_audit, measured apart
                "file-write",
                lambda: write_atomic(Path(directory), AUDIT_FILE, data),
            ),
            ("layerconf.load_profile() (1,041 actions)", "load_profile", layerconf.load_profile),
        ]:
            median, repeat = timed(function)
            rows.append(Row("per-key", name, median, repeat, key))
    return rows


def memory_rows(
    w: Workload, results: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """tracemalloc of one call of each approach, and the provenance split of layerconf's."""
    rows = []
    for key, (call, _) in results.items():
        if QUICK and key in ("omegaconf", "dynaconf", "jsonargparse"):
            continue  # slow under tracemalloc; only proved to run
        kept, peak = traced_memory(call)
        rows.append({"key": key, "kept_bytes": kept, "peak_bytes": peak})
    split = provenance_memory(results["layerconf"][1], [w.parser, w.argv])
    return rows, split


# ---------------------------------------------------------------------------------------------
# Scaling


@dataclasses.dataclass
class Series:
    name: str
    sizes: list[int] = dataclasses.field(default_factory=list)
    time_s: list[float] = dataclasses.field(default_factory=list)
    memory_sizes: list[int] = dataclasses.field(default_factory=list)
    kept_bytes: list[int] = dataclasses.field(default_factory=list)
    peak_bytes: list[int] = dataclasses.field(default_factory=list)
    stopped: str = ""
    extra: dict[str, list[Any]] = dataclasses.field(default_factory=dict)
    exponents: list[float] = dataclasses.field(default_factory=list)  # one a round
    remeasure: Callable[[int], list[float]] | None = None

    def add(self, size: int, seconds: float) -> None:
        self.sizes.append(size)
        self.time_s.append(seconds)

    def add_memory(self, size: int, function: Callable[[], object]) -> None:
        kept, peak = traced_memory(function)
        self.memory_sizes.append(size)
        self.kept_bytes.append(kept)
        self.peak_bytes.append(peak)

    def should_stop(self, next_size: int) -> bool:
        """Stop at the cap: one call over CAP, or the next one predicted over PREDICTED_CAP."""
        if self.stopped:
            return True
        if not self.time_s:
            return False
        last, size = self.time_s[-1], self.sizes[-1]
        if last > CAP:
            self.stopped = f"stopped after {size:,}: one resolution took {last:.2f} s (cap {CAP} s)"
            return True
        exponent = max(growth_exponent(self.sizes, self.time_s) or 1.0, 1.0)
        predicted = last * (next_size / size) ** exponent
        if predicted > PREDICTED_CAP:
            self.stopped = (
                f"stopped after {size:,}: {next_size:,} would take about {predicted:.1f} s "
                f"(growth exponent {exponent:.2f} so far)"
            )
            return True
        return False

    def summary(self) -> dict[str, Any]:
        return {
            "sizes": self.sizes,
            "time_s": self.time_s,
            "time_exponent": growth_exponent(self.sizes, self.time_s),
            "time_tail_exponent": tail_exponent(self.sizes, self.time_s),
            "memory_sizes": self.memory_sizes,
            "kept_bytes": self.kept_bytes,
            "peak_bytes": self.peak_bytes,
            "memory_exponent": growth_exponent(self.memory_sizes, self.kept_bytes),
            "stopped": self.stopped,
            **self.extra,
        }


def _interleave_sizes(one: Series, calls: dict[int, Callable[[], object]]) -> None:
    """Time `calls` (one a size) again in EXPONENT_ROUNDS interleaved rounds, every size once a
    round (`_timing.interleaved`): its `exponents` are the growth exponent of each round, so
    that a drift of the machine's speed between the sizes cannot bend the fit. Its times stay
    those of its own loops, measured as every peer's are: a size timed between two others
    runs colder than in a loop of its own (2.0 ms alone, 3.8 ms interleaved at 1,000 keys in
    one run), so the interleaved times would not compare with the peers'. Also counts the
    minor page faults of one call at each size (memory the allocator took from the system
    again), where the platform says."""
    sizes = sorted(calls)
    if len(sizes) < 2:
        return

    def rounds_of(rounds: int) -> tuple[dict[str, list[float]], list[float]]:
        samples = interleaved({str(size): calls[size] for size in sizes}, rounds, slot=0.02)
        count = len(samples[str(sizes[0])])
        fits = [
            growth_exponent(sizes, [samples[str(size)][index] for size in sizes])
            for index in range(count)
        ]
        return samples, [math.nan if fit is None else fit for fit in fits]

    _, one.exponents = rounds_of(EXPONENT_ROUNDS)
    one.remeasure = lambda rounds: rounds_of(rounds)[1]
    try:
        import resource
    except ImportError:  # not on Windows
        return
    faults = []
    for size in sizes:
        calls[size]()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(3):
            calls[size]()
        faults.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 3)
    one.extra["page_faults_per_call"] = faults


def _scale_approaches(
    sizes: list[int],
    approaches: list[Approach],
    build: Callable[[int], Workload],
    skipped: dict[str, str],
    label: str,
) -> dict[str, Series]:
    series = {a.key: Series(a.name) for a in approaches if _available(a, skipped)}
    calls: dict[int, Callable[[], object]] = {}  # layerconf's, for _interleave_sizes
    for size in sizes:
        runnable = [
            a for a in approaches if a.key in series and not series[a.key].should_stop(size)
        ]
        if not runnable:
            break
        w = build(size)
        for approach in runnable:
            call = approach.make(w)
            median, _ = timed(call)
            one = series[approach.key]
            one.add(size, median)
            if median < MEMORY_BELOW or approach.key in ("layerconf", "slime"):
                one.add_memory(size, call)
            if approach.key == "layerconf":
                calls[size] = call
                split = provenance_memory(call(), [w.parser, w.argv])
                for name, value in split.items():
                    one.extra.setdefault(f"{name}_bytes", []).append(value)
        print(
            f"  {label} {size:>7,}: "
            + ", ".join(f"{a.key} {_human(series[a.key].time_s[-1])}" for a in runnable)
        )
        del w
        gc.collect()
    if "layerconf" in series:
        _interleave_sizes(series["layerconf"], calls)
    return series


def scale_keys(scratch: Path, skipped: dict[str, str]) -> dict[str, Series]:
    approaches = [
        SLIME_ARGV,
        LAYERCONF_ARGV,
        CONFIGARGPARSE,
        JSONARGPARSE,
        SLIME_NAMESPACE,
        COMPAT_NAMESPACE,
        OMEGACONF,
        DYNACONF,
    ]
    return _scale_approaches(
        KEY_SIZES,
        approaches,
        lambda keys: synthetic_workload(keys, SLIME_ROLES, scratch),
        skipped,
        "keys",
    )


def scale_roles(scratch: Path, skipped: dict[str, str]) -> dict[str, Series]:
    approaches = [
        SLIME_ARGV,
        LAYERCONF_ARGV,
        CONFIGARGPARSE,
        JSONARGPARSE,
        SLIME_NAMESPACE,
        OMEGACONF,
        DYNACONF,
    ]
    names = ["actor", "critic", *(f"role_{index}" for index in range(2, max(ROLE_SIZES)))]
    return _scale_approaches(
        ROLE_SIZES,
        approaches,
        lambda roles: synthetic_workload(ROLE_KEYS, names[:roles], scratch),
        skipped,
        "roles",
    )


def scale_layers(skipped: dict[str, str]) -> dict[str, Series]:
    """L layers of LAYER_KEYS keys each (every layer sets every key), merged into one namespace:
    the input grows as L, so a linear resolution grows as L too.

    Every approach starts from L plain dicts, as read from L files (layerconf's with the
    position of each value, as its YAML reader gives them), and builds its own objects from
    them in the timed call: layerconf its `Layer` objects, OmegaConf its configs. layerconf's
    result keeps its layers (the provenance), so its memory grows as L too.
    """
    keys = list(synthetic(LAYER_KEYS))
    all_layers = []
    for index in range(max(LAYER_SIZES)):
        values = dict(zip(keys, synthetic(LAYER_KEYS, seed=index).values(), strict=True))
        name = "default" if index == 0 else f"file-{index}"
        source = None if index == 0 else f"layer-{index}.yaml"
        origins = (
            {
                (key,): layerconf.Origin(
                    name, "file", source=source, line=line + 1, column=3 + len(key)
                )
                for line, key in enumerate(keys)
            }
            if source
            else {}
        )
        all_layers.append(
            layerconf.Layer(name, "default" if index == 0 else "file", values, origins=origins)
        )

    def make_layerconf(layers: list[layerconf.Layer]) -> Callable[[], object]:
        loaded = [(layer.name, layer.kind, layer.values, layer.origins) for layer in layers]

        def resolve() -> object:
            built = [
                layerconf.Layer(name, kind, values, origins=origins)
                for name, kind, values, origins in loaded
            ]
            return layerconf.LayerStack(built).resolve()

        return resolve

    def make_dicts(layers: list[layerconf.Layer]) -> Callable[[], object]:
        mappings = [layer.values for layer in layers]

        def merge() -> dict[str, Any]:
            result: dict[str, Any] = {}
            for mapping in mappings:
                result.update(mapping)
            return result

        return merge

    def make_namespace(layers: list[layerconf.Layer]) -> Callable[[], object]:
        base = argparse.Namespace(**layers[0].values)
        later = [layer.values for layer in layers[1:]]

        def apply() -> argparse.Namespace:
            result = copy.deepcopy(base)
            for mapping in later:
                for key, value in mapping.items():
                    setattr(result, key, value)
            return result

        return apply

    def make_omegaconf(layers: list[layerconf.Layer]) -> Callable[[], object]:
        from omegaconf import OmegaConf

        loaded = [layer.values for layer in layers]
        return lambda: OmegaConf.merge(*[OmegaConf.create(values) for values in loaded])

    def make_dynaconf(layers: list[layerconf.Layer]) -> Callable[[], object]:
        from dynaconf import Dynaconf
        from dynaconf.loaders.base import SourceMetadata

        loaded = [
            (layer.values, SourceMetadata("yaml", layer.source or layer.name, "default"))
            for layer in layers
        ]

        def load() -> object:
            settings = Dynaconf(environments=False, load_dotenv=False)
            for values, source in loaded:
                settings.update(values, loader_identifier=source)
            return settings

        return load

    rows = [
        ("layerconf", "layerconf: Layer per dict + LayerStack.resolve()", make_layerconf, None),
        ("dicts", "dict.update per layer (no provenance)", make_dicts, None),
        (
            "namespace",
            "argparse.Namespace: deepcopy + setattr per layer (slime's way, generalised)",
            make_namespace,
            None,
        ),
        ("omegaconf", "OmegaConf: create per dict + merge", make_omegaconf, "omegaconf"),
        ("dynaconf", "dynaconf: update per layer (history kept)", make_dynaconf, "dynaconf"),
    ]
    series: dict[str, Series] = {}
    for key, name, _, peer in rows:
        if peer is not None and not _peer(peer):
            skipped.setdefault(peer, f"not installed: pip install {PEERS[peer]}")
            continue
        series[key] = Series(name)
    calls: dict[int, Callable[[], object]] = {}  # layerconf's, for _interleave_sizes
    for size in LAYER_SIZES:
        layers = all_layers[:size]
        done = []
        for key, _, make, _ in rows:
            if key not in series or series[key].should_stop(size):
                continue
            call = make(layers)
            median, _ = timed(call)
            series[key].add(size, median)
            if key == "layerconf":
                calls[size] = call
            if median < MEMORY_BELOW or key == "layerconf":
                series[key].add_memory(size, call)
            done.append(f"{key} {_human(median)}")
        print(f"  layers {size:>3}: " + ", ".join(done))
    _interleave_sizes(series["layerconf"], calls)
    return series


# ---------------------------------------------------------------------------------------------
# Output


def _human(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e9:.0f} ns"


def print_table(rows: list[Row]) -> None:
    width = max(len(row.approach) for row in rows)
    print(f"\n{'approach':<{width}}  {'median':>10}  {'ratio':>9}  {'rounds':>6}")
    for group, (title, baseline) in GROUPS.items():
        members = [row for row in rows if row.group == group]
        if not members:
            continue
        print(f"-- {title} (ratio to: {baseline})")
        for row in members:
            if not math.isfinite(row.ratio):
                ratio = "-"
            elif row.ratio < 0.1:
                ratio = f"{row.ratio:.4f}x"
            else:
                ratio = f"{row.ratio:.2f}x"
            print(
                f"{row.approach:<{width}}  {_human(row.median_s):>10}  {ratio:>9}  {row.repeat:>6}"
            )
            if row.note:
                print(f"{'':<4}({row.note})")
    print("(ratio: median / median of the group's baseline; lower is faster)")


def _ratios(rows: list[Row]) -> None:
    by_name = {row.approach: row.median_s for row in rows}
    for row in rows:
        baseline = by_name.get(GROUPS[row.group][1])
        if baseline:
            row.ratio = row.median_s / baseline


# ---------------------------------------------------------------------------------------------
# Targets: every figure from paired rounds, judged over its confidence interval

#: Rounds of the paired steady figures, and of the interleaved sizes of a growth exponent.
PAIRED_ROUNDS = 21
EXPONENT_ROUNDS = 15
#: ``--confirm`` measures a borderline figure again with this many times its rounds.
CONFIRM_FACTOR = 3


@dataclasses.dataclass
class Figure:
    """One target figure: its value in each round, the goal, and how it reads.

    The figure is the median of the per-round values and is given with the 95% confidence
    interval of that median (`_timing.spread`); the verdict is PASS or MISS only when the
    whole interval is on one side of the goal, "borderline" otherwise (`_timing.judge`).
    `remeasure(rounds)` returns that many new per-round values, taken the same way.
    """

    target: str
    goal: str
    limit: float | None  # None: reported, not judged
    at_most: bool
    show: Callable[[float], str]
    samples: list[float]
    note: str = ""
    remeasure: Callable[[int], list[float]] | None = None
    unit: str = ""  # after the median: " faster"
    added: int = 0  # rounds ``--confirm`` added

    @property
    def verdict(self) -> str:
        if self.limit is None:
            return "-"
        if not self.fitted:
            return "MISS"  # no round gave a figure (a growth fit that failed): nothing to claim
        _, low, high = spread(self.fitted)
        return judge(low, high, self.limit, at_most=self.at_most)

    @property
    def fitted(self) -> list[float]:
        """The rounds that gave a figure (a growth fit can give none: NaN)."""
        return [value for value in self.samples if not math.isnan(value)]

    def how(self) -> str:
        if not self.fitted:
            return f"no figure in any of {len(self.samples)} rounds{self.note}"
        median, low, high = spread(self.fitted)
        count = len(self.fitted)
        if count == 1:
            shown = f"{self.show(median)}{self.unit} (exact: one measurement)"
        else:
            interval = f"{self.show(low)} to {self.show(high)}, {count} rounds"
            shown = f"{self.show(median)}{self.unit} [{interval}]"
        if self.added:
            shown += f" (borderline at {count - self.added} rounds; {self.added} more: --confirm)"
        if len(self.samples) > count:
            shown += f" ({len(self.samples) - count} rounds gave no figure)"
        return shown + self.note

    def record(self) -> dict[str, Any]:
        median, low, high = spread(self.fitted) if self.fitted else (None, None, None)
        return {
            "target": self.target,
            "goal": self.goal,
            "measured": median,
            "low": low,
            "high": high,
            "rounds": len(self.samples),
            "confirmed_rounds": self.added,
            "verdict": self.verdict,
            "how": self.how(),
        }


def confirm(found: Iterable[Figure]) -> list[Figure]:
    """Measure each borderline figure again, CONFIRM_FACTOR times its rounds more, and pool
    the rounds (the same method, more of them: the interval narrows as 1/sqrt(rounds))."""
    confirmed = []
    for figure in found:
        if figure.verdict != "borderline" or figure.remeasure is None:
            continue
        print(f"  confirming: {figure.target} ({figure.how()})")
        extra = figure.remeasure(CONFIRM_FACTOR * len(figure.samples))
        figure.samples = [*figure.samples, *extra]
        figure.added += len(extra)
        confirmed.append(figure)
    return confirmed


def _confirm_now(found: list[Figure]) -> None:
    print("\n--confirm: the borderline figures, measured again...")
    confirmed = confirm(found)
    print(f"  {len(confirmed)} measured again" if confirmed else "  none borderline")


def per_round(
    functions: dict[str, Callable[[], object]], figure: Callable[[dict[str, float]], float]
) -> Callable[[int], list[float]]:
    """A `remeasure`: `rounds` interleaved rounds of `functions`, `figure` of each round's
    seconds per call."""

    def measure_again(rounds: int) -> list[float]:
        samples = interleaved(functions, rounds, slot=0.02)
        count = len(next(iter(samples.values())))
        return [figure({name: samples[name][index] for name in samples}) for index in range(count)]

    return measure_again


def _times(value: float) -> str:
    return f"{value:.2f}x"


def _share(value: float) -> str:
    return f"1/{1 / value:.0f}"


def steady_targets(
    results: dict[str, Any], memory: dict[str, int], directory: Path
) -> list[Figure]:
    """The steady targets, each from rounds that time its two sides in turn (`interleaved`);
    write_audit writes into `directory`."""
    roles = results["layerconf"][1]
    critic = roles["critic"]
    every, explain_every_key = _explaining(roles)
    resolve = results["layerconf"][0]
    steady: list[tuple[str, str, float, bool, Callable[[float], str], Any, dict[str, Any]]] = [
        (
            "from argv, both roles with full provenance, vs slime's way without",
            ">= 1.5x faster",
            1.5,
            False,
            _times,
            lambda t: t["slime"] / t["layerconf"],
            {"slime": results["slime"][0], "layerconf": resolve},
        ),
        (
            "from a parsed namespace (compat parse_megatron_role_args), vs slime's way",
            ">= 5x faster",
            5.0,
            False,
            _times,
            lambda t: t["slime-ns"] / t["compat"],
            {"slime-ns": results["slime-ns"][0], "compat": results["compat"][0]},
        ),
        (
            "explain() per key, vs one resolve_roles",
            "<= 1/100",
            0.01,
            True,
            _share,  # the slower of the two, per round
            lambda t: max(t["explain"], t["every"] / len(every)) / t["layerconf"],
            {
                "explain": lambda: layerconf.explain(critic, "lr"),
                "every": explain_every_key,
                "layerconf": resolve,
            },
        ),
        (
            "audit(roles), every key of both roles, vs one resolve_roles",
            "<= 2x",
            2.0,
            True,
            _times,
            lambda t: t["audit"] / t["layerconf"],
            {"audit": lambda: layerconf.audit(roles), "layerconf": resolve},
        ),
        (
            "write_audit(roles, dir), fsync included, vs one resolve_roles",
            "<= 3x",
            3.0,
            True,
            _times,
            lambda t: t["write_audit"] / t["layerconf"],
            {"write_audit": lambda: layerconf.write_audit(roles, directory), "layerconf": resolve},
        ),
    ]
    found = []
    for name, goal, limit, at_most, show, figure, functions in steady:
        remeasure = per_round(functions, figure)
        unit = "" if at_most else " faster"
        found.append(Figure(name, goal, limit, at_most, show, remeasure(PAIRED_ROUNDS), unit=unit))
        found[-1].remeasure = remeasure
        if name.startswith("explain"):
            found[-1].note = " (per round: the slower of explain(critic, 'lr'), mean per key)"
    share = memory["provenance"] / memory["own"]
    found.insert(
        3,
        Figure(
            "memory kept for provenance, vs the namespaces' own",
            "<= 1x",
            1.0,
            True,
            _times,
            [share],
            f" ({memory['provenance'] / 1024:.0f} KiB vs {memory['own'] / 1024:.0f} KiB)",
        ),
    )
    return found


def process_targets(commands: list[tuple[str, list[str]]]) -> tuple[list[Row], list[Figure]]:
    """The whole-process rows and targets: per round, a command's time over the bare
    imports' time of the same round."""
    samples = measure_processes(commands)
    rows = [
        Row("process", name, statistics.median(times), len(times))
        for name, times in samples.items()
    ]
    arguments = dict(commands)
    found = []
    for name, command, goal in [
        (
            "import layerconf + what its first resolution imports, vs yaml, attrs, deepmerge",
            IMPORTS_PROCESS,
            1.2,
        ),
        (
            "layerconf check -- <fixture argv> (whole process) vs the bare imports",
            CHECK_PROCESS,
            1.5,
        ),
        (
            "import layerconf (whole process) vs import yaml, attrs, deepmerge",
            "python -c 'import layerconf'",
            1.2,
        ),
    ]:
        pair = [(command, arguments[command]), (DEPS_PROCESS, arguments[DEPS_PROCESS])]

        def remeasure(rounds: int, pair: list[tuple[str, list[str]]] = pair) -> list[float]:
            times = measure_processes(pair, rounds)
            return [a / b for a, b in zip(times[pair[0][0]], times[pair[1][0]], strict=True)]

        ratios = [a / b for a, b in zip(samples[command], samples[DEPS_PROCESS], strict=True)]
        note = (
            f" ({statistics.median(samples[command]) * 1e3:.0f} ms vs "
            f"{statistics.median(samples[DEPS_PROCESS]) * 1e3:.0f} ms)"
        )
        found.append(
            Figure(name, f"<= {goal:g}x", goal, True, _times, ratios, note, remeasure=remeasure)
        )
    return rows, found


def first_call_targets() -> tuple[list[Figure], str]:
    """The figures a trainer sees: one first call per fresh process (bench_first_call.py),
    each round's ratio from the two approaches' processes of that round."""
    import bench_first_call

    print("measuring first calls in fresh processes...")
    times = bench_first_call.measure_first_calls()
    found = []
    for item in bench_first_call.figures(times):
        goal = item["target"]
        numerator, denominator = item["pair"]

        def remeasure(rounds: int, pair: tuple[str, str] = (numerator, denominator)) -> list[float]:
            again = bench_first_call.measure_first_calls(rounds, pair)
            return bench_first_call.ratios(again, *pair)

        unit, _, note = item["note"].removeprefix("x ").partition(" (")
        found.append(
            Figure(
                item["figure"],
                f">= {goal:g}x faster" if goal else "(reported)",
                goal,
                False,
                _times,
                bench_first_call.ratios(times, numerator, denominator),
                f" ({note}" if note else "",
                remeasure=remeasure if goal else None,
                unit=f" {unit}",
            )
        )
    meaning = bench_first_call.what_the_target_means(
        {name: statistics.median(values) for name, values in times.items()}
    )
    print(meaning)
    return found, meaning


def write_targets() -> list[Figure]:
    """A trainer's loop (Megatron writes ``args.consumed_train_samples`` every step): a
    recorded write against a plain ``argparse.Namespace`` setattr, beside the two floors no
    recording in Python goes under (`bench_writes.py`: a ``__setattr__`` that only calls
    ``object.__setattr__``, and the least a write can do and still know its file:line), per
    round (the targets timed forwards, then backwards the next round); and what
    `bench_writes.WRITES` writes to one key (a million; 10,000 with --quick) leave in the
    namespace."""
    import bench_writes

    print("measuring runtime writes...")
    plain = argparse.Namespace(**vars(bench_writes.resolved()))
    statement = "o.consumed_train_samples = 1"
    targets: dict[str, tuple[object, str]] = {
        "plain": (plain, statement),
        "floor": (bench_writes.Floor(**vars(plain)), statement),
        "recording": (bench_writes.Recorder(**vars(plain)), statement),
        "layerconf": (bench_writes.resolved(), statement),
    }
    pairs = {  # figure: (numerator, denominator) of each round's medians
        "write": ("layerconf", "plain"),
        "recording": ("layerconf", "recording"),
        "floor": ("floor", "plain"),
    }

    backwards = dict(reversed(targets.items()))

    def rounds(count: int) -> list[dict[str, float]]:
        return [
            bench_writes.interleaved(backwards if number % 2 else targets, 1)
            for number in range(count)
        ]

    def rounds_of(figure: str) -> Callable[[int], list[float]]:
        numerator, denominator = pairs[figure]

        def remeasure(count: int) -> list[float]:
            return [m[numerator] / m[denominator] for m in rounds(count)]

        return remeasure

    medians = rounds(PAIRED_ROUNDS)
    samples = {
        figure: [m[numerator] / m[denominator] for m in medians]
        for figure, (numerator, denominator) in pairs.items()
    }
    _, pickled_once = bench_writes.kept_bytes(1)
    kept, pickled_many = bench_writes.kept_bytes(bench_writes.WRITES)
    return [
        Figure(
            "a runtime write (args.x = 1, recorded with its file:line), vs a plain setattr",
            f"<= {bench_writes.TARGET:g}x",
            bench_writes.TARGET,
            True,
            _times,
            samples["write"],
            remeasure=rounds_of("write"),
        ),
        Figure(
            "a runtime write, vs the least a write can do and still know its file:line",
            "(reported)",
            None,
            True,
            _times,
            samples["recording"],
        ),
        Figure(
            "a Python __setattr__ that only calls object.__setattr__, vs a plain setattr",
            "(reported)",
            None,
            True,
            _times,
            samples["floor"],
            " (the floor of any write a namespace sees in Python)",
        ),
        Figure(
            f"the namespace's pickle after {bench_writes.WRITES:,} writes to one key, vs after one",
            "<= 1.1x",
            1.1,
            True,
            _times,
            [pickled_many / pickled_once],
            f" ({pickled_many:,} vs {pickled_once:,} bytes; {kept / 1024:.0f} KiB kept by the"
            " writes, tracemalloc)",
        ),
    ]


def print_targets(found: list[Figure], title: str) -> None:
    print(f"\n{title} (never asserted): median [95% confidence interval of the median, rounds]")
    for item in found:
        goal = "" if item.goal == "(reported)" else f" (target {item.goal})"
        print(f"  {item.verdict:<10}  {item.target}: {item.how()}{goal}")
    if QUICK:
        print("  (a --quick run: tiny and noisy, the verdicts mean nothing)")


def print_capabilities(checks: dict[str, Any]) -> None:
    print("\nWhat each approach keeps (values: equal to slime's way for every key of both roles?)")
    for key, capability in CAPABILITIES.items():
        if key not in checks:
            continue
        check = checks[key]
        values = (
            "yes"
            if check["values_equal_slime"]
            else f"no, {check['differing_count']} differ ({', '.join(check['differing'][:3])})"
        )
        print(f"  {key}: values {values}")
        for name in ("provenance", "file_line", "history", "roles"):
            print(f"      {name.replace('_', ':')}: {capability[name]}")


def print_memory(
    memory_table: list[dict[str, Any]], split: dict[str, int], names: dict[str, str]
) -> None:
    print(
        "\nMemory of one resolution of both roles "
        "(tracemalloc: kept while the result is held, and peak)"
    )
    base = next(row["kept_bytes"] for row in memory_table if row["key"] == "slime")
    for row in memory_table:
        print(
            f"  {names[row['key']][:70]:<70} kept {row['kept_bytes'] / 1024:8.0f} KiB"
            f" ({row['kept_bytes'] / base:5.2f}x)  peak {row['peak_bytes'] / 1024:8.0f} KiB"
        )
    print(
        "layerconf's roles, by deep size (sys.getsizeof over what they reach, inputs excluded):"
        f" kept {split['kept'] / 1024:.0f} KiB = namespaces' own {split['own'] / 1024:.0f} KiB"
        f" + provenance {split['provenance'] / 1024:.0f} KiB"
    )


def print_scaling(title: str, series: dict[str, Series]) -> None:
    print(
        f"\nScaling in {title}: growth exponents (log-log slope; 1 = linear, 2 = quadratic), "
        "fitted to the median time at each size (a linearity verdict is the median of the "
        "per-round fits)"
    )
    for key, one in series.items():
        summary = one.summary()
        exponent, tail = summary["time_exponent"], summary["time_tail_exponent"]
        memory = summary["memory_exponent"]

        def show(value: float | None) -> str:
            return f"{value:.2f}" if value is not None else "-"

        sizes = f"{one.sizes[0]:,}..{one.sizes[-1]:,}" if one.sizes else "none"
        print(
            f"  {key:<15} time {show(exponent):>5} (last step {show(tail):>5})  "
            f"memory {show(memory):>5}  sizes {sizes}"
        )
        if one.stopped:
            print(f"  {'':<15} {one.stopped}")
        if "provenance_bytes" in one.extra:
            ratios = ", ".join(
                f"{provenance / own:.2f} at {size:,}"
                for size, provenance, own in zip(
                    one.sizes, one.extra["provenance_bytes"], one.extra["own_bytes"], strict=True
                )
            )
            print(f"  {'':<15} provenance / the namespaces' own (deep size): {ratios}")
        if "page_faults_per_call" in one.extra:
            print(f"  {'':<15} {_faults(one.sizes, one.extra['page_faults_per_call'])}")


def _faults(sizes: Sequence[int], faults: Sequence[float]) -> str:
    shown = ", ".join(f"{count:.0f} at {size:,}" for size, count in zip(sizes, faults, strict=True))
    return f"minor page faults per call (memory taken from the system again): {shown}"


#: The largest growth exponent read as linear (1, plus the noise of a shared machine).
LINEAR = 1.1


def linear_checks(scaling: dict[str, dict[str, Series]]) -> list[Figure]:
    """layerconf must grow linearly in keys, layers and roles, in time and in memory: the
    least-squares log-log slope over every size measured must be at most LINEAR. The time
    exponent is fitted round by round on interleaved sizes (`_interleave_sizes`); the memory
    exponent is exact (tracemalloc counts the same bytes every time)."""
    checks = []
    for dimension, series in scaling.items():
        one = series.get("layerconf")
        if one is None:
            continue
        summary = one.summary()
        for measured in ("time", "memory"):
            exponent = summary[f"{measured}_exponent"]
            samples = one.exponents if measured == "time" and one.exponents else [exponent]
            checks.append(
                Figure(
                    f"layerconf {measured} linear in {dimension}",
                    f"<= {LINEAR}",
                    LINEAR,
                    True,
                    lambda value: f"{value:.2f}",
                    [math.nan if value is None else value for value in samples],
                    remeasure=one.remeasure if measured == "time" else None,
                )
            )
    return checks


def _linearity_record(check: Figure) -> dict[str, Any]:
    record = check.record()
    return {"check": check.target, "exponent": record["measured"], **record}


def _bytes(value: float) -> str:
    """Decimal units, so that log ticks at 1, 2, 5 x 10^k bytes read as round numbers."""
    if value >= 1e6:
        return f"{value / 1e6:.3g} MB"
    return f"{value / 1e3:.3g} kB"


def plot(
    directory: Path, scaling: dict[str, dict[str, Series]], units: dict[str, str]
) -> list[str]:
    """One PNG per dimension: time (left) and memory kept (right), log-log, each series
    labelled with its fitted growth exponent; dotted guides show slopes 1 and 2."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    styles = {
        "layerconf": ("tab:blue", "o", 2.8),
        "compat": ("tab:cyan", "o", 1.8),
        "slime": ("black", "s", 1.8),
        "slime-ns": ("dimgray", "s", 1.5),
        "dicts": ("black", "s", 1.5),
        "namespace": ("dimgray", "s", 1.5),
        "omegaconf": ("tab:orange", "^", 1.5),
        "dynaconf": ("tab:red", "v", 1.5),
        "configargparse": ("tab:green", "D", 1.5),
        "jsonargparse": ("tab:purple", "X", 1.5),
    }
    count = FuncFormatter(lambda value, _: f"{value:,.0f}")
    for dimension, series in scaling.items():
        figure, (left, right) = plt.subplots(1, 2, figsize=(14, 5.6))
        for key, one in series.items():
            colour, marker, width = styles.get(key, ("gray", ".", 1.2))
            summary = one.summary()
            exponent = summary["time_exponent"]
            label = f"{key}: x^{exponent:.2f}" if exponent is not None else key
            if one.stopped:
                label += f" (stopped after {one.sizes[-1]:,})"
            left.plot(
                one.sizes, one.time_s, marker=marker, color=colour, linewidth=width, label=label
            )
            if one.memory_sizes:
                memory = summary["memory_exponent"]
                label = f"{key}: x^{memory:.2f}" if memory is not None else key
                right.plot(
                    one.memory_sizes,
                    one.kept_bytes,
                    marker=marker,
                    color=colour,
                    linewidth=width,
                    label=label,
                )
        anchor = series.get("layerconf")
        if anchor is not None and len(anchor.sizes) > 1:
            x0, y0, x1 = anchor.sizes[0], anchor.time_s[0], anchor.sizes[-1]
            for slope, name in ((1, "slope 1 (linear)"), (2, "slope 2 (quadratic)")):
                left.plot(
                    [x0, x1],
                    [y0, y0 * (x1 / x0) ** slope],
                    linestyle=":",
                    color="gray",
                    linewidth=1,
                    label=name if slope == 1 else f"{name}, from layerconf's first point",
                )
        left.set(
            xscale="log",
            yscale="log",
            xlabel=units[dimension],
            ylabel="time of one resolution (median)",
            title=f"time against {dimension}",
        )
        left.yaxis.set_major_formatter(FuncFormatter(lambda value, _: _human(value)))

        right.set(
            xscale="log",
            yscale="log",
            xlabel=units[dimension],
            ylabel="memory kept while the result is held (tracemalloc)",
            title=f"memory against {dimension}",
        )
        right.yaxis.set_major_formatter(FuncFormatter(lambda value, _: _bytes(value)))
        for axis in (left.yaxis, right.yaxis):
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            axis.set_minor_formatter(NullFormatter())
        for axis in (left, right):
            axis.xaxis.set_major_formatter(count)
            axis.xaxis.set_minor_formatter(NullFormatter())
            axis.set_xticks(sorted({size for one in series.values() for size in one.sizes}))
            axis.tick_params(axis="x", labelrotation=45)
            axis.grid(True, which="major", alpha=0.35)
            axis.legend(fontsize=8, loc="upper left")
        figure.suptitle(
            f"Scaling in {dimension}: layerconf and its peers (x^k: fitted growth exponent)"
        )
        figure.tight_layout()
        path = directory / f"scaling-{dimension}.png"
        figure.savefig(path, dpi=100)
        plt.close(figure)
        written.append(str(path))
    return written


def _cell(text: str) -> str:
    """`text` safe in a Markdown table cell (``<fixture argv>`` would read as an HTML tag)."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def to_markdown(data: dict[str, Any]) -> str:
    """The results as Markdown, for docs/performance.md."""
    info = data["machine"]
    versions = ", ".join(
        f"{name} {version}" for name, version in info["versions"].items() if version
    )
    lines = [
        f"Machine: `{info['platform']}`, {info['cpu_count']} CPUs, "
        f"{info['implementation']} {info['python']} (libyaml: {info['libyaml']}); {versions}.",
        "",
        f"Command: `{data['command']}` (from the repository root).",
        "",
        "| approach | median | ratio | rounds |",
        "|---|---:|---:|---:|",
    ]
    for group, described in data["groups"].items():
        rows = [row for row in data["rows"] if row["group"] == group]
        if not rows:
            continue
        lines.append(f"| **{described['title']}** (ratio to: {described['baseline']}) | | | |")
        for row in rows:
            ratio = row["ratio"]
            shown = (
                "-"
                if not math.isfinite(ratio)
                else f"{ratio:.4f}x"
                if ratio < 0.1
                else f"{ratio:.2f}x"
            )
            note = f" ({row['note']})" if row["note"] else ""
            approach = _cell(row["approach"].strip())
            lines.append(
                f"| {approach}{note} | {_human(row['median_s'])} | {shown} | {row['repeat']} |"
            )
    lines += ["", "| target | goal | measured | verdict |", "|---|---|---|---|"]
    for target in data["targets"]:
        lines.append(
            f"| {_cell(target['target'])} | {target['goal']} | {_cell(target['how'])} | "
            f"**{target['verdict']}** |"
        )
    lines += [
        "",
        "(measured: the median of the per-round figures [the 95% confidence interval of that "
        "median, rounds]; PASS or MISS when the whole interval is on one side of the goal)",
        "",
        data["first_call_floor"],
    ]
    memory = data["memory"]
    names = {row["key"]: row["approach"] for row in data["rows"] if row["key"]}
    base = next(row["kept_bytes"] for row in memory["rows"] if row["key"] == "slime")
    lines += ["", "| approach | kept | ratio | peak |", "|---|---:|---:|---:|"]
    for row in memory["rows"]:
        lines.append(
            f"| {names[row['key']].strip()} | {row['kept_bytes'] / 1024:.0f} KiB | "
            f"{row['kept_bytes'] / base:.2f}x | {row['peak_bytes'] / 1024:.0f} KiB |"
        )
    deep = memory["layerconf_deep"]
    lines += [
        "",
        f"layerconf's two namespaces by deep size: kept {deep['kept'] / 1024:.0f} KiB = "
        f"the namespaces' own {deep['own'] / 1024:.0f} KiB + provenance "
        f"{deep['provenance'] / 1024:.0f} KiB.",
    ]
    capabilities = data["capabilities"]
    lines += [
        "",
        "| approach | values equal slime's | provenance | file:line | history | roles |",
        "|---|---|---|---|---|---|",
    ]
    for key, item in capabilities.items():
        if "values_equal_slime" not in item:
            continue
        equal = (
            "yes"
            if item["values_equal_slime"]
            else f"no: {item['differing_count']} ({', '.join(item['differing'][:3])})"
        )
        lines.append(
            f"| {key} | {equal} | {item['provenance']} | {item['file_line']} | "
            f"{item['history']} | {item['roles']} |"
        )
    for dimension, series in data["scaling"].items():
        lines += [
            "",
            f"Scaling in {dimension}: {UNITS[dimension]}",
            "",
            "Time exponents here are fitted to the median time at each size; a linearity verdict"
            " (targets) is the median of the fits of each round, which can differ in the second"
            " digit.",
            "",
            "| approach | sizes | time exponent | last step | memory exponent | stopped |",
            "|---|---|---:|---:|---:|---|",
        ]
        for key, one in series.items():

            def show(value: float | None) -> str:
                return "-" if value is None else f"{value:.2f}"

            sizes = f"{one['sizes'][0]:,} to {one['sizes'][-1]:,}" if one["sizes"] else "-"
            lines.append(
                f"| {key} | {sizes} | {show(one['time_exponent'])} | "
                f"{show(one['time_tail_exponent'])} | {show(one['memory_exponent'])} | "
                f"{one['stopped']} |"
            )
        deep = series.get("layerconf", {})
        if "provenance_bytes" in deep:
            ratios = ", ".join(
                f"{provenance / own:.2f} at {size:,}"
                for size, provenance, own in zip(
                    deep["sizes"], deep["provenance_bytes"], deep["own_bytes"], strict=True
                )
            )
            lines += ["", f"layerconf's provenance / the namespaces' own (deep size): {ratios}."]
        if "page_faults_per_call" in deep:
            lines += ["", f"layerconf's {_faults(deep['sizes'], deep['page_faults_per_call'])}."]
    if data["linearity"]:
        lines += ["", "| linearity of layerconf | verdict |", "|---|---|"]
        for item in data["linearity"]:
            lines.append(
                f"| {item['check']}: {item['how']} (at most {LINEAR}) | **{item['verdict']}** |"
            )
    if data["skipped"]:
        lines += ["", "Skipped: " + "; ".join(f"{k}: {v}" for k, v in data["skipped"].items())]
    return "\n".join(lines) + "\n"


def machine() -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "libyaml": bool(getattr(yaml, "__with_libyaml__", False)),
        "versions": versions,
    }


def main(arguments: Sequence[str] | None = None) -> dict[str, Any]:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--quick", action="store_true", help="tiny sizes: only prove it runs")
    options.add_argument("--plots", type=Path, help="write the scaling plots (PNG) there")
    options.add_argument("--no-scaling", action="store_true", help="only the real workload")
    options.add_argument(
        "--confirm",
        action="store_true",
        help=f"measure each borderline target again, {CONFIRM_FACTOR}x its rounds more",
    )
    settings = options.parse_args(arguments)
    plots = settings.plots.resolve() if settings.plots else None
    command = "python benchmarks/run.py " + " ".join(
        sys.argv[1:] if arguments is None else arguments
    )
    info = machine()
    print(f"layerconf benchmarks: {command.strip()}")
    print(
        f"{info['platform']}, {info['cpu_count']} CPUs, Python {info['python']}; "
        + ", ".join(
            f"{name} {version or '(not installed)'}" for name, version in info["versions"].items()
        )
    )
    skipped: dict[str, str] = {}
    peers = {module: _peer(module) for module in PEERS}
    os.chdir(FIXTURES)  # the real command line names its role file relatively

    with tempfile.TemporaryDirectory(prefix="layerconf-bench-") as directory:
        scratch = Path(directory)
        w = real_workload(scratch)
        print(
            f"\nThe real job: {len(w.parser._actions)} actions, {len(w.argv)} tokens, "
            f"roles {w.roles}"
        )
        rows, results, checks = real_rows(w, skipped)
        rows += per_key_rows(w, results)
        print("measuring whole processes...")
        process_rows, process_figures = process_targets(_process_commands(peers))
        rows += process_rows
        _ratios(rows)
        memory_table, split = memory_rows(w, results)
        names = {row.key: row.approach for row in rows if row.key}
        print_table(rows)
        print_memory(memory_table, split, names)
        print("measuring the targets in paired rounds...")
        first_calls, floor = first_call_targets()
        found = steady_targets(results, split, scratch) + process_figures + first_calls
        found += write_targets()
        if settings.confirm:  # before the scaling: in the heap their first rounds ran in
            _confirm_now(found)
        for peer, reason in skipped.items():
            print(f"skipped {peer}: {reason}")

        scaling: dict[str, dict[str, Series]] = {}
        linearity: list[Figure] = []
        if not settings.no_scaling:
            print("\nScaling (synthetic jobs; bench_stack.synthetic)...")
            dimensions: dict[str, Callable[[], dict[str, Series]]] = {
                "keys": lambda: scale_keys(scratch, skipped),
                "layers": lambda: scale_layers(skipped),
                "roles": lambda: scale_roles(scratch, skipped),
            }
            for dimension, scale in dimensions.items():
                series = scaling[dimension] = scale()
                exponents = linear_checks({dimension: series})
                if settings.confirm:
                    _confirm_now(exponents)
                for one in series.values():  # its workloads go before the next dimension's
                    one.remeasure = None
                for figure in exponents:
                    figure.remeasure = None
                gc.collect()
                linearity += exponents
            for dimension, series in scaling.items():
                print_scaling(dimension, series)
        print_targets(found, "Targets")
        print(floor)
        if linearity:
            print_targets(linearity, "Linearity of layerconf (growth exponents)")
        print_capabilities(checks)
        written = []
        if plots is not None and scaling:
            if not _peer("matplotlib"):
                skipped.setdefault("matplotlib", "not installed: pip install matplotlib (no plots)")
                print("no plots: matplotlib is not installed")
            else:
                written = plot(plots, scaling, UNITS)
                print("\nplots: " + ", ".join(written))

    data = {
        "format": 1,
        "quick": QUICK,
        "command": command.strip(),
        "machine": info,
        "workload": {
            "actions": len(w.parser._actions),
            "argv_tokens": len(w.argv),
            "roles": list(w.roles),
            "role_file": ROLE_FILE,
        },
        "groups": {
            group: {"title": title, "baseline": baseline}
            for group, (title, baseline) in GROUPS.items()
        },
        "rows": [dataclasses.asdict(row) for row in rows],
        "memory": {
            "definition": {
                "kept_bytes": "tracemalloc: bytes allocated by one call and still alive while "
                "its result is held (a call before warms per-parser caches)",
                "peak_bytes": "tracemalloc: the most that call held at once",
                "deep": provenance_memory.__doc__,
            },
            "rows": memory_table,
            "layerconf_deep": split,
        },
        "targets": [figure.record() for figure in found],
        "first_call_floor": floor,
        "confirm": settings.confirm,
        "linearity": [_linearity_record(check) for check in linearity],
        "capabilities": {
            key: {**value, **checks.get(key, {})} for key, value in CAPABILITIES.items()
        },
        "scaling": {
            dimension: {key: one.summary() | {"name": one.name} for key, one in series.items()}
            for dimension, series in scaling.items()
        },
        "plots": written,
        "skipped": skipped,
        "jsonargparse_adapted": ADAPTED.get("slime-ppo", []),
    }
    path = save("run", data)
    markdown = path.with_suffix(".md")
    markdown.write_text(to_markdown(data))
    print(f"\nsaved {path} and {markdown.name} (the same as Markdown tables)")
    return data


if __name__ == "__main__":
    main()
