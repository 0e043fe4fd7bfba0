"""The layer stack and its resolution: layers -> rules -> merge -> rules -> namespace.

One role resolves in three steps: the ``layers`` rules (drop, convert, check), the merge,
the ``resolved`` rules (set, check). `resolve_stacks` does that for every role and then runs
the ``roles`` rules across them. Every problem of every step is collected; a resolution that
found any error raises one `ConfigError` holding them all.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from layerconf.core.explain import setting_for
from layerconf.core.held_secrets import texts_held
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.merge import POLICIES, Policy, merge_layers
from layerconf.core.namespace import Event, Namespace, Provenance, namespace_from
from layerconf.core.records import Layer, Origin, Path, Setting, join_path, key_path, split_key
from layerconf.core.rules import (
    PACKAGE_DIR,
    Convert,
    Drop,
    Rule,
    RuleContext,
    RuleSet,
    SetValue,
    Stage,
    decisions_of,
    foreign,
)
from layerconf.core.secrets import SECRETS, scrub_text
from layerconf.core.values import copy_value
from layerconf.exceptions import ConfigError, LayerconfWarning, Problem, RuleError

__all__ = ["LayerStack", "resolve_stacks"]


def _to_layers(layers: Iterable[Layer]) -> tuple[Layer, ...]:
    layers = tuple(layers)
    names: set[str] = set()
    for layer in layers:
        if not isinstance(layer, Layer):
            raise TypeError(f"a LayerStack holds Layer objects (got {layer!r})")
        if layer.name in names:
            raise ValueError(f"two layers are named {layer.name!r}; layer names must be unique")
        names.add(layer.name)
    return layers


def _to_rules(rules: RuleSet | Iterable[Rule]) -> RuleSet:
    return rules if isinstance(rules, RuleSet) else RuleSet(rules)


def _to_policies(policies: Mapping[str, Policy] | Mapping[Path, Policy]) -> Mapping[Path, Policy]:
    converted: dict[Path, Policy] = {}
    for key, policy in policies.items():
        if policy not in POLICIES:
            raise ValueError(
                f"policy for {key!r} is {policy!r}; use one of "
                + ", ".join(repr(p) for p in POLICIES)
            )
        converted[split_key(key) if isinstance(key, str) else tuple(key)] = policy
    return converted


@attrs.frozen
class LayerStack:
    """Layers in precedence order (later wins), the rules to apply, and per-key merge policies.

    `policies` maps a dotted key to ``merge`` (the default: mappings merge key by key, other
    values are replaced), ``replace`` or ``append`` (lists are concatenated).
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    layers: tuple[Layer, ...] = attrs.field(converter=_to_layers)
    rules: RuleSet = attrs.field(default=RuleSet(), converter=_to_rules)
    policies: Mapping[Path, Policy] = attrs.field(factory=dict, converter=_to_policies)

    def resolve(self, role: str | None = None, *, warn: bool = True) -> Namespace:
        """Resolve into a namespace with provenance; raise `ConfigError` listing every error.

        Warnings are issued as `LayerconfWarning` unless `warn` is False; either way they are
        kept in `notices(namespace)`. Rules of the ``roles`` stage need several roles and run
        only in `resolve_stacks`.
        """
        return _finish({role: _Resolution(self, role).run()}, [], warn=warn)[role]


def resolve_stacks(
    stacks: Mapping[str, LayerStack], *, problems: Iterable[Problem] = (), warn: bool = True
) -> dict[str, Namespace]:
    """Resolve one stack per role, then run the ``roles`` rules across the results.

    The ``roles`` rules are those of every stack, each run once, in the order the stacks list
    them. `problems` found before (reading the inputs) are reported with the resolution's
    own. Raises one `ConfigError` with the problems of every role.
    """
    return resolve_with(stacks, problems, warn=warn)


def resolve_with(
    stacks: Mapping[str, LayerStack],
    problems: Iterable[Problem],
    *,
    warn: bool = True,
    own: bool = False,
) -> dict[str, Namespace]:
    """`resolve_stacks`; with `own`, `problems` are layerconf's own (its readers'): they quote
    no secret, and are not scrubbed of the roles' (`_without_secrets`)."""
    resolutions = {role: _Resolution(stack, role).run() for role, stack in stacks.items()}
    shared: list[Problem] = list(problems)
    scrub = bool(shared) and not own
    cross_rules: dict[str, Rule] = {}
    for stack in stacks.values():
        for candidate in stack.rules.for_stage("roles"):
            cross_rules.setdefault(candidate.name, candidate)
    for candidate in cross_rules.values():
        roles = {role: resolution.namespace() for role, resolution in resolutions.items()}
        context = RuleContext(
            "roles",
            None,
            (),
            roles=MappingProxyType(roles),
            explainer=lambda key, role: _explain_role(resolutions, key, role),
        )
        for decision in decisions_of(candidate, context):
            if isinstance(decision, Problem):
                shared.append(_tagged(decision, candidate))
                scrub = scrub or foreign(candidate)
            else:
                assert isinstance(decision, SetValue)
                assert decision.role is not None
                if decision.role not in resolutions:
                    raise RuleError(
                        f"rule {candidate.name!r} set {decision.key!r} for role "
                        f"{decision.role!r}, which is not one of {sorted(resolutions)}"
                    )
                resolutions[decision.role].set_value(candidate, decision)
    return _finish(resolutions, shared, warn=warn, scrub=scrub)


def _explain_role(resolutions: Mapping[str, _Resolution], key: str, role: str | None) -> Setting:
    if role is None:
        raise RuleError(
            f"explain({key!r}) in the 'roles' stage needs a role: context.explain(key, role), "
            f"role one of {sorted(resolutions)}"
        )
    if role not in resolutions:
        raise KeyError(f"no role {role!r}; roles: {sorted(resolutions)}")
    return resolutions[role].explain(key)


def _tagged(problem: Problem, candidate: Rule) -> Problem:
    return problem if problem.rule else attrs.evolve(problem, rule=candidate.name)


class _Resolution:
    """The working state of one role while it resolves (private and mutable until finished)."""

    def __init__(self, stack: LayerStack, role: str | None) -> None:
        self.stack = stack
        self.role = role
        self.layers: list[Layer] = list(stack.layers)
        self.values: dict[str, Any] = {}
        self.events: dict[Path, list[Event]] = {}
        self.problems: list[Problem] = []
        self.foreign = False  # whether a rule of the user's found a problem (`_without_secrets`)
        self._sets = 0

    def run(self) -> _Resolution:
        """The ``layers`` rules, the merge, the ``resolved`` rules."""
        self.run_layer_rules()
        self.merge()
        self.run_resolved_rules()
        return self

    def _context(self, stage: Stage) -> RuleContext:
        # Before the merge there is nothing to explain: RuleContext.explain says so.
        return RuleContext(
            stage,
            self.role,
            tuple(self.layers),
            MappingProxyType(self.values),
            explainer=self._explain_own if stage == "resolved" else None,
        )

    def _explain_own(self, key: str, role: str | None) -> Setting:
        if role is not None and role != self.role:
            raise RuleError(
                f"explain({key!r}, {role!r}) asks about another role in the 'resolved' stage, "
                f"where only role {self.role!r} is known; compare roles in a 'roles' stage rule"
            )
        return self.explain(key)

    def run_layer_rules(self) -> None:
        for candidate in self.stack.rules.for_stage("layers"):
            changes: dict[int, list[Drop | Convert]] = {}
            for decision in decisions_of(candidate, self._context("layers")):
                if isinstance(decision, Problem):
                    self._found(decision, candidate)
                else:
                    assert isinstance(decision, (Drop, Convert))
                    index = self._layer_index(candidate, decision.layer)
                    changes.setdefault(index, []).append(decision)
            # One rebuild per changed layer, however many values the rule changed in it.
            for index, decisions in changes.items():
                self.layers[index] = self._changed_layer(candidate, index, decisions)

    def _changed_layer(self, candidate: Rule, index: int, decisions: list[Drop | Convert]) -> Layer:
        layer = self.layers[index]
        values = dict(layer.values)
        for decision in decisions:
            path = key_path(decision.key)
            held, value = layer.lookup(path)
            if not held:
                raise RuleError(
                    f"rule {candidate.name!r} returned {decision!r}, but layer {layer.name!r} "
                    f"holds no {join_path(path)!r}"
                )
            action = "ignored" if isinstance(decision, Drop) else "converted"
            self._record(path, Event(action, index, value, layer.origin_at(path), candidate.name))
            parent = values
            for part in path[:-1]:
                parent[part] = dict(parent[part])
                parent = parent[part]
            if isinstance(decision, Drop):
                del parent[path[-1]]
            else:
                parent[path[-1]] = decision.value
        return layer._with_values(values)

    def _layer_index(self, candidate: Rule, name: str) -> int:
        for index, layer in enumerate(self.layers):
            if layer.name == name:
                return index
        names = ", ".join(repr(layer.name) for layer in self.layers)
        raise RuleError(f"rule {candidate.name!r} names layer {name!r}; the layers are {names}")

    def merge(self) -> None:
        self.values = merge_layers(self.layers, self.stack.policies)

    def run_resolved_rules(self) -> None:
        for candidate in self.stack.rules.for_stage("resolved"):
            for decision in decisions_of(candidate, self._context("resolved")):
                if isinstance(decision, Problem):
                    self._found(decision, candidate)
                else:
                    assert isinstance(decision, SetValue)
                    self.set_value(candidate, decision)

    def _found(self, problem: Problem, candidate: Rule) -> None:
        self.problems.append(_tagged(problem, candidate))
        self.foreign = self.foreign or foreign(candidate)

    def set_value(self, candidate: Rule, decision: SetValue) -> None:
        path = key_path(decision.key)
        parent = self.values
        for depth, part in enumerate(path[:-1]):
            child = parent.get(part)
            if child is not None and type(child) is not dict:
                raise RuleError(  # (types, not values: one may be a secret)
                    f"rule {candidate.name!r} set {join_path(path)!r}, but "
                    f"{join_path(path[: depth + 1])!r} holds the {type(child).__name__} type, "
                    f"not a mapping to set {join_path(path[depth + 1 :])!r} in"
                )
            if child is None:
                child = parent[part] = {}
            parent = child
        parent[path[-1]] = copy_value(decision.value)
        origin = _rule_origin(candidate.name, decision.note)
        self._sets += 1
        self._record(
            path,
            Event("set", len(self.layers) + self._sets, decision.value, origin, candidate.name),
        )

    def set_secret_keys(self) -> frozenset[str]:
        """The secret keys the rules set (`SetValue`), beyond the layers'."""
        return frozenset(path[0] for path in self.events if SECRETS.is_secret(path[0]))

    def _record(self, path: Path, event: Event) -> None:
        self.events.setdefault(path, []).append(event)

    def provenance(self, notices: Sequence[Problem] = ()) -> Provenance:
        return Provenance(
            self.role,
            tuple(self.layers),
            self.stack.policies,
            {path: tuple(events) for path, events in self.events.items()},
            tuple(notices),
        )

    def explain(self, key: str) -> Setting:
        return setting_for(self.values, self.provenance(), key)

    def namespace(self, notices: Sequence[Problem] = (), *, last: bool = False) -> Namespace:
        """The namespace of the values so far; the `last` one takes the values dict itself."""
        return namespace_from(self.values, self.provenance(notices), own=last)


@functools.lru_cache(maxsize=256)
def _rule_origin(rule: str, note: str | None) -> Origin:
    """The origin of a value a rule set (immutable, so one per rule and note)."""
    return Origin(f"rule:{rule}", "rule", rule=rule, label=note)


def _finish(
    resolutions: Mapping[Any, _Resolution],
    shared: Sequence[Problem],
    *,
    warn: bool = True,
    scrub: bool = False,
) -> dict[Any, Namespace]:
    """Raise every error at once, or warn the warnings and return the namespaces; the
    problems scrubbed of the roles' secrets first when one came from the user's code (`scrub`
    for `shared`, a resolution's own `foreign`)."""
    if scrub or any(resolution.foreign for resolution in resolutions.values()):
        shared = _without_secrets(resolutions, shared)
    everything = sorted(
        dict.fromkeys([p for r in resolutions.values() for p in r.problems] + list(shared)),
        key=reading_order,
    )
    if any(problem.severity == "error" for problem in everything):
        raise ConfigError(everything)
    for problem in everything if warn else ():
        if problem.severity == "warning":
            warnings.warn(LayerconfWarning(str(problem)), stacklevel=_caller_level())
    return {
        role: resolution.namespace(
            sorted([*resolution.problems, *shared], key=reading_order), last=True
        )
        for role, resolution in resolutions.items()
    }


def _without_secrets(
    resolutions: Mapping[Any, _Resolution], shared: Sequence[Problem]
) -> Sequence[Problem]:
    """`shared` and each resolution's problems without the text of a secret the roles hold: a
    rule or a source may quote one (layerconf's own never do), and the error, the warnings and
    the notices show them as `explain` shows values. The roles' own problems are replaced."""
    if not shared and not any(resolution.problems for resolution in resolutions.values()):
        return shared
    texts = []
    for resolution in resolutions.values():
        # (the layers as given too: a value a rule dropped or converted is still a secret)
        layers = [*resolution.stack.layers, *resolution.layers]
        texts += texts_held(layers, [resolution.values], resolution.set_secret_keys())
    # (with no texts too: a URL's password a message quotes is hidden by its place)
    for resolution in resolutions.values():
        resolution.problems = [_scrubbed(problem, texts) for problem in resolution.problems]
    return [_scrubbed(problem, texts) for problem in shared]


def _scrubbed(problem: Problem, texts: list[str]) -> Problem:
    message = scrub_text(problem.message, texts)
    hint = scrub_text(problem.hint, texts) if problem.hint else problem.hint
    if message == problem.message and hint == problem.hint:
        return problem
    return attrs.evolve(problem, message=message, hint=hint)


def reading_order(problem: Problem) -> tuple[bool, str, int, int, int]:
    """Problems without a file first (the command line's, those of rules across roles), then
    file by file, line by line (a stable sort keeps the order of discovery among equals)."""
    return (
        problem.source is not None,
        problem.source or "",
        problem.line or 0,
        problem.column or 0,
        problem.argv_index or 0,
    )


def _caller_level() -> int:
    """The `stacklevel` that points a warning at the first frame outside layerconf (past
    presets/, sources/... too: `PACKAGE_DIR` is the whole package)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level
