"""Rules: small plug-ins that check, drop, convert or set values while a stack resolves.

A rule is any object with a `name`, a `stage` and a `__call__(context)` that returns decisions
(or None). It receives one frozen `RuleContext`, so adding a field to the context never breaks a
rule. Rules are checked when they are registered (in a `RuleSet`), not when they run.

Stages run in this order, and the rules of one stage in the order of their `RuleSet`:

- ``layers``: before merging; sees the layers; may return `Problem`, `Drop`, `Convert`.
- ``resolved``: after merging one role; sees its values; may return `Problem`, `SetValue`
  (of that role: a `role` naming another is refused).
- ``roles``: once every role is resolved; sees them all in `context.roles`; may return
  `Problem` and `SetValue` (naming its role).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal, Protocol, Union, runtime_checkable

import attrs

from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.records import Layer, Setting
from layerconf.core.secrets import SecretPolicy
from layerconf.exceptions import Problem, RuleError

__all__ = [
    "STAGES",
    "Convert",
    "Decision",
    "Drop",
    "FunctionRule",
    "Rule",
    "RuleContext",
    "RuleSet",
    "SetValue",
    "Stage",
    "rule",
]

Stage = Literal["layers", "resolved", "roles"]
STAGES: tuple[Stage, ...] = ("layers", "resolved", "roles")


def _key(instance: object, _: object, key: Any) -> None:
    """A decision's key: a dotted key, or a non-empty tuple of its parts (each text)."""
    if isinstance(key, str) or (
        isinstance(key, tuple) and key and all(isinstance(part, str) for part in key)
    ):
        return
    raise TypeError(
        f"{type(instance).__name__}() takes key as a dotted key such as 'opt.beta2', or a "
        f"tuple of its parts (got {key!r:.60})"
    )


@attrs.frozen
class Drop:
    """Remove `key` from the layer named `layer`; history records it as ignored.

    `key` is a dotted path, or a tuple of parts for a key that itself contains a dot.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    layer: str
    key: str | tuple[str, ...] = attrs.field(validator=_key)


@attrs.frozen
class Convert:
    """Replace the value at `key` (as in `Drop`) in the layer `layer`, keeping its origin."""

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    layer: str
    key: str | tuple[str, ...] = attrs.field(validator=_key)
    value: Any


@attrs.frozen
class SetValue:
    """Set `key` to `value`; the origin is ``rule:<name>``. `role` is required in ``roles``
    (in ``resolved``, None or the role resolved).

    `note` is a short reason shown with the value (``"slime runs the critic without KL"``).
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    key: str | tuple[str, ...] = attrs.field(validator=_key)
    value: Any
    role: str | None = None
    note: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str))
    )


Decision = Union[Problem, Drop, Convert, SetValue]

_ALLOWED: dict[Stage, tuple[type, ...]] = {
    "layers": (Problem, Drop, Convert),
    "resolved": (Problem, SetValue),
    "roles": (Problem, SetValue),
}


@attrs.frozen
class RuleContext:
    """What a rule sees: one frozen record.

    `values` is the result so far (empty in the ``layers`` stage), read-only: a view, valid
    while the rule runs (a rule that keeps its context sees, after the resolution, the
    namespace's own values, writes to it included). `roles` maps each role to its resolved
    namespace in the ``roles`` stage, and is empty before.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    stage: Stage
    role: str | None
    layers: tuple[Layer, ...]
    values: Mapping[str, Any] = attrs.field(factory=dict)
    roles: Mapping[str, argparse.Namespace] = attrs.field(factory=dict)
    explainer: Callable[[str, str | None], Setting] | None = attrs.field(
        default=None, repr=False, eq=False
    )

    def layer(self, name: str) -> Layer | None:
        """The layer named `name`, or None."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        return None

    @property
    def secrets(self) -> SecretPolicy:
        """The secret policy of this resolution, which a rule's messages ask before they quote
        a value: the default one, also naming the keys its layers (and the roles') say hold
        secrets whatever their names (`Layer.secret_keys`: ``--hf-token`` with dest ``tok``)."""
        from layerconf.core.held_secrets import policy_of
        from layerconf.core.namespace import provenance_of

        layers = list(self.layers)
        for namespace in self.roles.values():
            provenance = provenance_of(namespace)
            layers += provenance.layers if provenance is not None else ()
        return policy_of(layers)

    def explain(self, key: str, role: str | None = None) -> Setting:
        """Where `key` of `role` comes from, so far: in the ``resolved`` stage of the role being
        resolved (`role` None or that role), in the ``roles`` stage of the `role` named. Not
        available in the ``layers`` stage, before the merge (`RuleError`)."""
        if self.explainer is None:
            raise RuleError(f"explain() is not available in the {self.stage!r} stage")
        return self.explainer(key, role)


@runtime_checkable
class Rule(Protocol):
    """The shape of a rule. Any object with these three members is one."""

    @property
    def name(self) -> str: ...

    @property
    def stage(self) -> Stage: ...

    def __call__(self, context: RuleContext) -> Iterable[Decision] | None: ...


@attrs.frozen
class FunctionRule:
    """A rule made of a plain function; see `rule`."""

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    name: str
    stage: Stage
    function: Callable[[RuleContext], Iterable[Decision] | None]

    def __call__(self, context: RuleContext) -> Iterable[Decision] | None:
        return self.function(context)


def rule(
    stage: Stage, name: str | None = None
) -> Callable[[Callable[[RuleContext], Iterable[Decision] | None]], FunctionRule]:
    """Make a function a rule: ``@rule("resolved")`` above ``def my_check(context): ...``."""
    if callable(stage):  # @rule above the function, without the stage
        raise RuleError(
            f"rule() takes the stage first: write @rule('resolved') above def "
            f"{getattr(stage, '__name__', 'the function')} (or 'layers', 'roles')"
        )

    def wrap(function: Callable[[RuleContext], Iterable[Decision] | None]) -> FunctionRule:
        made = FunctionRule(name or function.__name__.replace("_", "-"), stage, function)
        check_rule(made)
        return made

    return wrap


def check_rule(candidate: object) -> None:
    """Raise `RuleError` saying exactly what makes `candidate` unusable as a rule."""
    name = getattr(candidate, "name", None)
    if not isinstance(name, str) or not name:
        raise RuleError(
            f"{candidate!r} is not a rule: it needs a 'name' attribute, a non-empty str "
            f"(got {name!r})"
        )
    stage = getattr(candidate, "stage", None)
    if stage not in STAGES:
        raise RuleError(
            f"rule {name!r} has stage {stage!r}; a rule's stage is one of "
            + ", ".join(repr(s) for s in STAGES)
        )
    if not callable(candidate):
        raise RuleError(
            f"rule {name!r} is not callable; define __call__(self, context) returning decisions"
        )


def decisions_of(candidate: Rule, context: RuleContext) -> Iterator[Decision]:
    """Run one rule and yield its decisions, checking each is allowed in this stage.

    An exception a rule of the user's raises, when called or while its decisions are read, is
    a `RuleError` naming it and where it raised (the exception is its cause). A `RuleError`'s
    message holds no secret of the values the rule saw (an exception's text or a decision may
    quote one).
    """
    try:
        yield from _decisions_of(candidate, context)
    except RuleError as error:
        message = _scrubbed(str(error), context)
        if message == str(error):
            raise
        raise RuleError(message) from error.__cause__


def _scrubbed(message: str, context: RuleContext) -> str:
    """`message` without the text of a secret `context`'s layers, values or roles hold."""
    from layerconf.core.held_secrets import texts_held
    from layerconf.core.namespace import provenance_of
    from layerconf.core.secrets import SECRETS, scrub_text

    layers = list(context.layers)
    values: list[Mapping[str, Any]] = [context.values]
    for namespace in context.roles.values():
        values.append(vars(namespace))
        provenance = provenance_of(namespace)
        layers += provenance.layers if provenance is not None else ()
    named = {key for held in values for key in held}  # (values a rule set: in no layer)
    texts = texts_held(layers, values, SECRETS.secret_keys(named))
    return scrub_text(message, texts)  # (a URL's password too, with no texts)


def _decisions_of(candidate: Rule, context: RuleContext) -> Iterator[Decision]:
    users = foreign(candidate)  # (an exception in layerconf's own rule is its bug: left as is)
    try:
        returned = candidate(context)
    except Exception as error:  # the rule's own code
        if not users:
            raise
        raise _raised(candidate, error) from error
    if returned is None:
        return
    try:
        if isinstance(returned, (str, bytes)):  # (not decisions, one letter at a time)
            raise TypeError
        items = iter(returned)
    except TypeError:
        raise RuleError(
            f"rule {candidate.name!r} returned {returned!r}; return an iterable of decisions "
            "or None"
        ) from None
    allowed = _ALLOWED[context.stage]
    for item in _guarded(candidate, items) if users else items:
        if not isinstance(item, allowed):
            names = ", ".join(kind.__name__ for kind in allowed)
            raise RuleError(
                f"rule {candidate.name!r} returned {item!r} in the {context.stage!r} stage, "
                f"which takes {names}"
            )
        if isinstance(item, SetValue) and context.stage == "roles" and item.role is None:
            raise RuleError(
                f"rule {candidate.name!r} returned {item!r} in the 'roles' stage; "
                "name the role: SetValue(key, value, role=...)"
            )
        if (
            isinstance(item, SetValue)
            and context.stage == "resolved"
            and item.role not in (None, context.role)
        ):
            raise RuleError(
                f"rule {candidate.name!r} returned {item!r} in the 'resolved' stage, which sets "
                f"only role {context.role!r}'s values; set role {item.role!r}'s in a 'roles' "
                "stage rule"
            )
        yield item


def _guarded(candidate: Rule, items: Iterator[Decision]) -> Iterator[Decision]:
    """`items`, a rule's exception while reading them made a `RuleError` (`_raised`)."""
    try:
        yield from items
    except Exception as error:  # the rule's own code (a generator runs as it is read)
        raise _raised(candidate, error) from error


def _raised(candidate: Rule, error: Exception) -> RuleError:
    """The `RuleError` for `error`, raised by the rule `candidate`: what, and where in the
    rule's code (the innermost frame outside layerconf: a `context.explain` that raised is
    the rule's line asking)."""
    import traceback

    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not os.path.abspath(frame.filename).startswith(PACKAGE_DIR)
    ]
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return RuleError(f"rule {candidate.name!r} raised {type(error).__name__}: {error}{where}")


#: The package's directory, every subpackage included: where layerconf's own frames are.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def foreign(code: object) -> bool:
    """Whether `code` (a rule, a source) is the user's, not layerconf's own: only its problems
    may quote a secret (layerconf's describe one, never quote it), so only they are scrubbed.
    A `FunctionRule` is its function's."""
    if isinstance(code, FunctionRule):
        code = code.function
    module = getattr(code, "__module__", None)
    return not (isinstance(module, str) and (module + ".").startswith("layerconf."))


def _to_tuple(rules: Iterable[Rule]) -> tuple[Rule, ...]:
    return tuple(rules)


def _check_rules(_: object, __: attrs.Attribute[Any], rules: tuple[Rule, ...]) -> None:
    seen: set[str] = set()
    for candidate in rules:
        check_rule(candidate)
        if candidate.name in seen:
            raise RuleError(
                f"two rules are named {candidate.name!r}; names must be unique "
                "(use RuleSet.replace to swap one for another)"
            )
        seen.add(candidate.name)


@attrs.frozen
class RuleSet:
    """An ordered, immutable collection of rules with unique names, checked on creation."""

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    rules: tuple[Rule, ...] = attrs.field(default=(), converter=_to_tuple, validator=_check_rules)
    _by_stage: dict[str, tuple[Rule, ...]] = attrs.field(
        init=False, repr=False, eq=False, factory=dict
    )

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def __contains__(self, name: object) -> bool:
        return any(candidate.name == name for candidate in self.rules)

    def __getitem__(self, name: str) -> Rule:
        return self.rules[self._index(name)]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(candidate.name for candidate in self.rules)

    def for_stage(self, stage: Stage) -> tuple[Rule, ...]:
        """The rules of `stage`, in order (worked out once per set and stage)."""
        found = self._by_stage.get(stage)
        if found is None:
            found = tuple(candidate for candidate in self.rules if candidate.stage == stage)
            self._by_stage[stage] = found
        return found

    def add(self, new: Rule, *, before: str | None = None, after: str | None = None) -> RuleSet:
        """A new set with `new` at the end, or just before / after the rule named so."""
        if before is not None and after is not None:
            raise ValueError("give before= or after=, not both")
        rules = list(self.rules)
        if before is not None:
            rules.insert(self._index(before), new)
        elif after is not None:
            rules.insert(self._index(after) + 1, new)
        else:
            rules.append(new)
        return RuleSet(rules)

    def replace(self, name: str, new: Rule) -> RuleSet:
        """A new set with the rule named `name` replaced by `new`, in the same place."""
        rules = list(self.rules)
        rules[self._index(name)] = new
        return RuleSet(rules)

    def without(self, name: str) -> RuleSet:
        """A new set without the rule named `name`."""
        rules = list(self.rules)
        del rules[self._index(name)]
        return RuleSet(rules)

    def _index(self, name: str) -> int:
        for index, candidate in enumerate(self.rules):
            if candidate.name == name:
                return index
        known = ", ".join(repr(n) for n in self.names) or "none"
        raise KeyError(f"no rule named {name!r} (rules: {known})")
