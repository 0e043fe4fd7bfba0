"""A drop-in for slime's ``parse_megatron_role_args``, with provenance on the result.

``from layerconf.compat.slime import parse_megatron_role_args`` in place of slime's own gives
the same values slime computes, on a fresh namespace (``base_args`` is never touched), with
`explain` working on the result. Structural mistakes in the role file raise
`SlimeConfigError`, which is both a `ConfigError` (every problem, at file:line:col) and an
`AssertionError`, so existing ``except AssertionError`` clauses keep working.

Where slime's own function returns, the drop-in returns the same values, also for files
layerconf's reader refuses but slime reads on (an unknown entry field, two entries of the other
role: those problems are logged); where slime raises, the drop-in raises the same exception type
(`SlimeTypeError`, `SlimeAttributeError`, `SlimeFileNotFoundError`, `SlimeIsADirectoryError`,
`SlimePermissionError`), slime's assertion words first. Differences, on purpose: an empty key, a
Python name such as ``__doc__`` and a layerconf attribute's name are refused (slime sets them on
the namespace); a file PyYAML cannot read raises `SlimeConfigError`, not PyYAML's own error; so
does a merge key whose mappings both set one key (YAML readers disagree on which wins), and a
file the reader refuses as unbounded (an alias inside its own anchor, an alias bomb); an alias
gives an equal, independent value, not the anchor's one object; the result is a layerconf
`Namespace` whatever the class of ``base_args`` (slime's deep copy keeps a subclass, with its
methods).

slime's own semantics are kept on purpose, where `resolve_roles` is stricter: only
``num_nodes`` and ``num_gpus_per_node`` are ignored; an unknown key is set anyway (with a
warning); a string value is converted to the type of the base value when that is an int or
a float, and kept as it is when that fails (a warning says so, as it does when a quoted
``"false"`` becomes ``True`` for a boolean, which is what slime computes).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import errno
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import attrs

from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.merge import Policy, merge_layers
from layerconf.core.namespace import Namespace, notices, provenance_of
from layerconf.core.records import Layer, Origin
from layerconf.core.rules import Convert, Decision, RuleContext, RuleSet
from layerconf.core.stack import LayerStack
from layerconf.core.values import is_atomic, same_value
from layerconf.exceptions import ConfigError, Problem
from layerconf.presets.role_file import problems_of_role
from layerconf.presets.slime import MEGATRON, check_role_file, critic_defaults
from layerconf.presets.slime._base_layer import _all_plain, _plain_base
from layerconf.presets.slime.constants import (
    CRITIC_DEFAULTS,
    RESOURCE_KEYS,
    RESOURCES_BECAUSE,
    ROLES,
    TOP_KEY,
)
from layerconf.presets.slime.parity import base_values, quoted, slime_value
from layerconf.rules import IgnoredKeys
from layerconf.sources.yaml import check_yaml

if TYPE_CHECKING:
    import logging

__all__ = [
    "SlimeAttributeError",
    "SlimeConfigError",
    "SlimeFileNotFoundError",
    "SlimeIsADirectoryError",
    "SlimePermissionError",
    "SlimeTypeError",
    "logger",  # noqa: F822  (made on first use: __getattr__)
    "parse_megatron_role_args",
]

LAYER = "role-config"


class SlimeConfigError(ConfigError, AssertionError):
    """A role file slime would refuse with an AssertionError: a `ConfigError` that is one too.

    Where slime asserts, the message starts with slime's own words (its tests match them),
    then says what layerconf found, at file:line:col.
    """

    def __init__(self, problems: Iterable[Problem], slime_says: str | None = None) -> None:
        super().__init__(problems)
        self.slime_says = slime_says
        if slime_says is not None:
            self.args = (f"{slime_says}\n{self.args[0]}",)

    def __reduce__(self) -> Any:
        return (type(self), (self.problems, self.slime_says))


class SlimeTypeError(SlimeConfigError, TypeError):
    """A role file on which slime's own function fails with a `TypeError` (``hasattr(args, 5)``,
    ``setattr(args, '__class__', ...)``): a located `SlimeConfigError` that is one too."""


class SlimeAttributeError(SlimeConfigError, AttributeError):
    """A role file on which slime's own function fails with an `AttributeError` (a list item
    that is not a mapping, overrides that are a list): a located `SlimeConfigError` too."""


class _SlimeOpenError(SlimeConfigError, OSError):
    """A role file slime's ``open()`` fails on: the `OSError` subclass it raises, located."""

    def __str__(self) -> str:
        return str(self.args[0])  # the whole message, not OSError's short form


class SlimeFileNotFoundError(_SlimeOpenError, FileNotFoundError):
    """A role file that does not exist: slime's `FileNotFoundError`, and a located problem."""


class SlimeIsADirectoryError(_SlimeOpenError, IsADirectoryError):
    """A role file path that names a directory: slime's `IsADirectoryError`, located."""


class SlimePermissionError(_SlimeOpenError, PermissionError):
    """A role file this user may not read: slime's `PermissionError`, located."""


_LOGGER_NAME = "layerconf.compat.slime"


def _logger() -> logging.Logger:
    """How slime reports what it ignores or sets anyway: through logging, never warnings.

    The module's ``logger`` (``logging.getLogger('layerconf.compat.slime')``), made on first
    use: logging is imported only by a call that logs, or by a reader of ``logger``.
    """
    found = globals().get("logger")
    if found is None:
        import logging

        found = globals()["logger"] = logging.getLogger(_LOGGER_NAME)
    return found


def __getattr__(name: str) -> Any:
    if name == "logger":
        return _logger()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if "logging" in sys.modules:  # logging imported already: the logger made now, not in a call
    _logger()


_EXAMPLE = "megatron: [{name: default, role: actor, overrides: {...}}]"


@attrs.frozen
class _SlimeCoercion:
    """slime's coercion: a string becomes ``type(base value)`` when that is an int or a float."""

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    #: Keys the trainer deleted from the base since parsing: unknown to slime's hasattr.
    deleted: frozenset[str] = frozenset()
    name: str = "slime-coercion"
    stage: Literal["layers"] = "layers"

    def __call__(self, context: RuleContext) -> Iterator[Decision]:
        layer = context.layer(LAYER)
        if layer is None:
            return
        base = base_values(context.layers, LAYER)
        deleted = self.deleted

        def warning(key: str, message: str, hint: str, at_key: bool = False) -> Problem:
            origin = (layer.key_origin_at if at_key else layer.origin_at)((key,))
            return Problem.at(origin, message, key=key, hint=hint, severity="warning")

        for key, value in layer.values.items():
            if key not in base or key in deleted:
                yield warning(
                    key,
                    f"{key!r} is not a known argument; it is set anyway, as slime does",
                    "check the spelling against the dest names in --help",
                    at_key=True,
                )
                continue
            converted, kind = slime_value(base[key], value)
            if kind is None:
                continue
            if converted is value:  # the type refused the string: slime keeps it
                a_kind = ("an " if kind.__name__[:1] in "aeiou" else "a ") + kind.__name__
                yield warning(
                    key,
                    f"{key!r} stays the string {quoted(key, value)}: it is not {a_kind}",
                    f"write {a_kind}, as on the command line",
                )
                continue
            if kind is bool:
                yield warning(
                    key,
                    f"{key!r}: the string {quoted(key, value)} became {converted!r}, as slime "
                    "computes",
                    "write true or false without quotes",
                )
            yield Convert(LAYER, key, converted)


_IGNORED_KEYS = ("num_nodes", "num_gpus_per_node")
# slime sets a quoted 'false' for the critic's disable_param_buffers_cpu_backup as written.
_CRITIC_DEFAULTS = attrs.evolve(critic_defaults(), flags="warn")
_IGNORED = IgnoredKeys({k: RESOURCE_KEYS[k] for k in _IGNORED_KEYS}, because=RESOURCES_BECAUSE)


def _rules_without(deleted: frozenset[str]) -> RuleSet:
    """slime's rules, for a base from which the trainer deleted `deleted` since parsing."""
    return RuleSet([_IGNORED, _SlimeCoercion(deleted), _CRITIC_DEFAULTS])


_RULES = _rules_without(frozenset())
_Policies = Mapping[tuple[str, ...], Policy]
_NO_POLICIES: _Policies = {}


def parse_megatron_role_args(
    base_args: argparse.Namespace,
    megatron_config_path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    role: str,
) -> Namespace:
    """slime's ``parse_megatron_role_args``: `base_args` with `role`'s overrides applied.

    A role missing from the file inherits `base_args`. The critic gets slime's runtime
    defaults. Returns a new namespace with provenance; `base_args` is never modified.
    """
    if role not in ROLES:
        raise SlimeConfigError(
            [Problem(f"unsupported Megatron config role {role!r}", hint="use 'actor' or 'critic'")],
            f"Unsupported Megatron config role: {role}",
        )
    path = os.fsdecode(megatron_config_path)  # bytes too, as slime's open() takes them
    role_file = check_role_file(path, ROLES, layer_name=LAYER)
    if role_file.errors:  # a missing file too: FileNotFoundError, as slime's open() raises
        layer = _as_slime_reads(path, role, role_file.problems)
    else:
        layer = role_file.layers.get(role) or Layer(
            LAYER, "file", {}, Origin(LAYER, "file", source=path)
        )
    base, deleted, policies, plain = _base_layers(base_args)
    _refuse_python_names(layer)
    rules = _RULES if not deleted else _rules_without(frozenset(deleted))
    result = _resolved(base, layer, rules, role, policies)
    # (a file with errors slime reads on had its problems logged by `_as_slime_reads`)
    _log(result, role, path, layer, () if role_file.errors else problems_of_role(role_file, role))
    if not plain:
        _as_slime_leaves(result, vars(base_args), base, deleted, layer, role)
    return result


def _as_slime_leaves(
    result: Namespace,
    current: Mapping[str, Any],
    base: list[Layer],
    deleted: list[str],
    layer: Layer,
    role: str,
) -> None:
    """As slime's deep copy of the base, for keys neither the file nor the critic's defaults set:
    deleted keys stay deleted, a defaultdict stays one (the layers' dict if deepcopy fails), an
    object under two names stays one object (one memo, as slime's one deepcopy of the base)."""
    values = vars(result)  # set as the resolution set them: not a runtime write
    set_in_order = [key for key in layer.values if key not in _IGNORED_KEYS]
    if role == "critic":
        set_in_order.extend(CRITIC_DEFAULTS)
    _in_slimes_order(values, current, set_in_order)
    mutable = [key for below in base for key in below.mutable_keys if key in current]
    if not deleted and _all_plain(map(current.__getitem__, mutable)):
        return
    set_here = frozenset(set_in_order)
    for key in deleted:
        if key not in set_here:
            delattr(result, key)
    memo: dict[int, Any] = {}
    for key in mutable:
        if key not in set_here and not is_atomic(current[key]):
            with contextlib.suppress(Exception):
                values[key] = copy.deepcopy(current[key], memo)


def _in_slimes_order(
    values: dict[str, Any], current: Mapping[str, Any], set_in_order: list[str]
) -> None:
    """Put `values` in the order of slime's namespace: the keys of the base as they are now
    (`current`: a key the trainer deleted and set again is last), then the keys slime sets
    anew, in the order it sets them (`set_in_order`); the resolution has the layers' order."""
    order = [*current, *(key for key in dict.fromkeys(set_in_order) if key not in current)]
    if len(order) == len(values) and list(values) == order:
        return
    ordered = {key: values[key] for key in order if key in values}
    ordered.update(values)  # (nothing else is expected: kept, last)
    values.clear()
    values.update(ordered)


def _resolved(
    base: list[Layer], layer: Layer, rules: RuleSet, role: str, policies: _Policies = _NO_POLICIES
) -> Namespace:
    """`role` resolved from the `base` layers (merged by their `policies`) and its role file's
    `layer`, as slime sets values: each override, and each value the trainer set since parsing
    (the ``runtime`` layer), whole; the warnings logged by the caller, not issued."""
    with_policy = {path[0] for path in policies}
    whole = {  # (without a policy, only a mapping would merge: any other value replaces)
        key
        for each in (*base, layer)
        if each.name in (LAYER, "runtime")
        for key, value in each.values.items()
        if isinstance(value, dict) or key in with_policy
    }
    replaced: dict[tuple[str, ...], Policy] = {
        path: policy for path, policy in policies.items() if path[0] not in whole
    }
    replaced.update({(key,): "replace" for key in whole})
    return LayerStack([*base, layer], rules, replaced).resolve(role=role, warn=False)


def _raise_as_slime(path: str, problems: Iterable[Problem]) -> NoReturn:
    """Raise what slime raises for a file it cannot read: for a file its ``open()`` fails
    on (missing, a directory, not readable), that `OSError`'s type, errno and words first."""
    problems = tuple(problems)
    if not os.path.exists(path):  # a dangling symbolic link too
        kind: type[_SlimeOpenError] = SlimeFileNotFoundError
        number = errno.ENOENT
    elif os.path.isdir(path):
        kind, number = SlimeIsADirectoryError, errno.EISDIR
    elif not os.access(path, os.R_OK):
        kind, number = SlimePermissionError, errno.EACCES
    else:
        raise SlimeConfigError(problems, None)
    words = os.strerror(number)
    error = kind(problems, f"[Errno {number}] {words}: {path!r}")
    error.errno, error.strerror, error.filename = number, words, path
    raise error


def _as_slime_reads(path: str, role: str, problems: tuple[Problem, ...]) -> Layer:
    """The layer slime's own function takes from a file layerconf's reader refuses, or raise
    what slime raises on it (its type, its words first, then every problem found).

    slime reads on where layerconf's reader stops: an unknown entry field, a second entry of
    the other role, a 'name' that is not a string... Those problems are logged, the values are
    slime's. A file PyYAML cannot read, or with a tag layerconf refuses, is refused.
    """
    positions: Mapping[Any, Any] = {}
    if any(problem.hint == MEGATRON.hint_when_empty for problem in problems):
        raw: Any = {}  # slime: yaml.safe_load(f) or {}
    else:
        document = check_yaml(path, layer=LAYER)
        if document.unreadable or not all(map(_pyyaml_reads_past, document.errors)):
            _raise_as_slime(path, problems)
        raw, positions = document.data or {}, document.positions

    def fail(kind: type[SlimeConfigError], words: str | None = None) -> NoReturn:
        raise kind(problems, words)

    if not isinstance(raw, (dict, list, str)):
        fail(SlimeTypeError)  # 'megatron' in 5
    if TOP_KEY not in raw:
        fail(
            SlimeConfigError,
            f"megatron config must contain a top-level 'megatron' list, e.g. {_EXAMPLE}",
        )
    if not isinstance(raw, dict):
        fail(SlimeTypeError)  # a list or a string indexed by 'megatron'
    entries = raw[TOP_KEY]
    if not isinstance(entries, list):
        fail(SlimeConfigError, f"megatron config 'megatron' field must be a list, e.g. {_EXAMPLE}")
    if not all(isinstance(entry, dict) for entry in entries):
        fail(SlimeAttributeError)  # entry.get('role') on an item that is not a mapping
    mine = [index for index, entry in enumerate(entries) if entry.get("role") == role]
    if len(mine) > 1:
        fail(
            SlimeConfigError,
            f"megatron config must contain at most one entry with role={role}, e.g. "
            f"megatron: [{{name: default, role: {role}, overrides: {{...}}}}]",
        )
    if not mine:
        return _slime_layer(path, positions, (), {}, None, {})
    entry = entries[mine[0]]
    field = "overrides" if entry.get("overrides") else "args" if entry.get("args") else None
    overrides = entry[field] if field else {}
    if not isinstance(overrides, dict):
        fail(SlimeAttributeError)  # overrides.items()
    if not all(isinstance(key, str) for key in overrides):
        fail(SlimeTypeError)  # hasattr(args, 5)
    if "" in overrides:  # slime sets getattr(args, ''); a layerconf namespace has no such key
        fail(SlimeConfigError)
    for problem in problems:
        _logger().warning("%s (slime reads on)", problem)
    return _slime_layer(path, positions, (TOP_KEY, mine[0]), entry, field, overrides)


def _pyyaml_reads_past(problem: Problem) -> bool:
    """Whether ``yaml.safe_load`` reads past `problem` to the reader's data: a key written
    twice (both keep the last). On the others PyYAML fails (a key that is a list, a merge key
    on a scalar) or gives other values (two merged mappings that set one key)."""
    return problem.message.startswith(("duplicate key ", "duplicate merge key "))


def _slime_layer(
    path: str,
    positions: Mapping[Any, Any],
    at: tuple[Any, ...],
    entry: Mapping[Any, Any],
    field: str | None,
    overrides: Mapping[str, Any],
) -> Layer:
    """The role layer of `overrides`, the `field` of the entry at `at`, with their positions."""
    label = entry.get("name") if isinstance(entry.get("name"), str) else None

    def origin(where: tuple[Any, ...]) -> Origin:
        position = positions.get(where) if where else None
        line, column = (position.line, position.column) if position else (None, None)
        return Origin(LAYER, "file", source=path, line=line, column=column, label=label)

    origins: dict[tuple[str, ...], Origin] = {
        (key,): origin((*at, field, key)) for key in overrides
    }
    return Layer(LAYER, "file", dict(overrides), origin(at), origins)


def _refuse_python_names(layer: Layer) -> None:
    """slime's setattr refuses ``__class__`` and friends; a namespace must never hold them, nor
    the names of layerconf's own attributes (``args._layerconf_provenance`` would read those)."""
    names = [
        key
        for key in layer.values
        if (key.startswith("__") and key.endswith("__")) or key in Namespace.__slots__
    ]
    if names:  # slime's setattr raises TypeError on __class__ and __dict__
        raise SlimeTypeError(
            [
                Problem.at(
                    layer.key_origin_at((name,)),
                    f"{name!r} is a Python attribute of every namespace, not an argument"
                    if name.startswith("__")
                    else f"{name!r} is an attribute of layerconf's namespace, not an argument",
                    key=name,
                    hint="remove it: role files set argument dests",
                )
                for name in names
            ]
        )


def _log(
    result: Namespace, role: str, path: str, layer: Layer, read: Iterable[Problem] = ()
) -> None:
    """What slime logs: the keys it ignores or sets anyway, the role's overrides; and what the
    role file's reader warned of (`read`: a number YAML 1.1 reads otherwise than it shows)."""
    for problem in (*read, *notices(result)):
        if problem.severity == "warning" and problem.rule == "ignored-keys":
            _logger().info("%s", problem)
        elif problem.severity in ("warning", "error"):
            _logger().warning("%s", problem)
    if "logging" not in sys.modules:  # never imported: never configured, INFO is not shown
        return
    logger = _logger()
    if not logger.isEnabledFor(sys.modules["logging"].INFO):  # nothing more to build
        return
    if not layer.values and layer.origin.line is None:
        logger.info(
            "No megatron config entry with role=%s found in %s; using inherited args.", role, path
        )
    logger.info(
        "Parsed megatron config for role=%s from %s: overrides = %s", role, path, list(layer.values)
    )


def _base_layers(
    base_args: argparse.Namespace,
) -> tuple[list[Layer], list[str], _Policies, bool]:
    """The layers and merge policies resolving to `base_args` as it is now (its provenance's),
    the keys deleted since, and whether its values are all plain data, none deleted (then the
    resolution's values are what slime's deep copy gives: `_as_slime_leaves` has nothing to do).

    Trainers change args after parsing (slime's validation does): what differs from the
    provenance becomes a ``runtime`` layer, and keys deleted since are returned to delete.
    """
    current = vars(base_args)
    provenance = provenance_of(base_args)
    if provenance is None or any(layer.name in (LAYER, "runtime") for layer in provenance.layers):
        layer, plain = _plain_base(base_args, current)
        return [layer], [], _NO_POLICIES, plain
    recorded = merge_layers(provenance.layers, provenance.policies)
    missing = object()
    changed = {  # the identity test first: almost every value is the one resolved
        key: value
        for key, value in current.items()
        if recorded.get(key, missing) is not value
        and (key not in recorded or not same_value(recorded[key], value))
    }
    deleted = [key for key in recorded if key not in current]
    layers = list(provenance.layers)
    if changed:
        layers.append(Layer("runtime", "runtime", changed, Origin("runtime", "runtime")))
    return layers, deleted, provenance.policies, False
