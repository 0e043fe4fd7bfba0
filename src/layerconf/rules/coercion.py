"""Type coercion: a value in a role file means what the same value means on the command line.

`TypeCoercion(parser)` is a ``layers`` rule. For every key of its layers that is a dest of
`parser`, it converts the value with what the parser knows about that dest (its `type`,
`choices`, `nargs` and action), returning a `Convert` for each value that changes and a
`Problem` for each that cannot be converted, all of them. Keys the parser does not know are
left to another rule.

One item (a scalar, or one element of a list) is converted like this; a value already of the
right type passes unchanged, and `choices` are checked after conversion::

    dest's type       a str s          an int i         a float          bool, list, mapping
    float             float(s)         float(str(i))    unchanged        error
    int               int(s)           unchanged        error: write 2   error
    str (or none)     unchanged        str(i)           error: quote it  error
    bool (flags)      error            error            error            a bool passes; error
    json.loads        json.loads(s)    unchanged        unchanged        unchanged
    other callable    type(s)          type(str(i))     error: quote it  error: quote it

A YAML int is converted through its decimal text because that is the token the user wrote;
a float is not, because ``str(1.10)`` is ``'1.1'``. "bool" dests are store_true, store_false,
BooleanOptionalAction, store_const of a bool, and ``type=bool`` (whose command line turns the
string ``"false"`` into True: layerconf refuses strings instead). `null` is accepted where the
dest's default is None (and it is not required) or nargs is ``'?'``; elsewhere it is an error.
nargs ``+``, ``*`` and N, append and extend take a YAML list, converted item by item.

The per-dest table is kept per parser while the parser lives (a dest's entry is compiled the
first time a layer holds it); it is rebuilt when actions are added or `set_defaults` is called,
and a dest's entry is compiled again when what it was compiled from changed in place (an
action's type, choices, nargs, default, required or const, a registered type): a cache never
changes a verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import math
import operator
import sys
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import attrs

from layerconf.core.checks import check_type, typed
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.records import Origin
from layerconf.core.rules import Convert, Decision, RuleContext, Stage
from layerconf.core.secrets import SECRETS, SecretPolicy, scrub_text, shows_secret
from layerconf.core.suggest import did_you_mean_hint
from layerconf.core.values import shorten
from layerconf.exceptions import Problem
from layerconf.rules._shape import parser_shape, same_shape, shape_dests

__all__ = [
    "DestSpec",
    "ItemSpec",
    "TypeCoercion",
    "dest_spec",
    "expected_kind",
    "spec_of",
]

_Family = Literal["bool", "int", "float", "str", "JSON", "custom"]
_PHRASES = {
    "bool": "true or false",
    "int": "an int",
    "float": "a float",
    "str": "a string",
    "JSON": "JSON (a mapping, a list or JSON text)",
}
_BOOLEANS = " (YAML reads true/false/yes/no/on/off as booleans)"
_SHOWN_CHOICES = 10
# What argparse itself reports as a bad value; their message is the explanation.
_TYPE_ERRORS = (ValueError, TypeError, argparse.ArgumentTypeError)
_LONG_INT_HINT = "write a shorter number: Python writes ints of at most 4,300 digits as text"


@attrs.frozen
class _Failure:
    """One value that could not be converted: who, what was expected, what came, what to do."""

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    subject: str  # "'lr'", or "'lr'[1]" for an item of a list
    expected: str
    value: Any
    hint: str


@attrs.frozen
class ItemSpec:
    """How one item is converted: the parser's `type` and `choices` for one dest."""

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    family: _Family
    kind: str  # "int", "float", "str", "bool", "JSON", a callable's name, or "one of ..."
    phrase: str  # the kind in a sentence: "an int", "true or false", "one of 'a', 'b'"
    exact: frozenset[type]  # types that are already right
    tokens: bool  # strings and ints go through `parse` (not for bool items)
    parse: Callable[[str], Any] | None  # None: the token itself is the value
    choices: Iterable[Any] | None
    names: tuple[str, ...]  # the choices a user writes, for did-you-mean
    flag: str  # the option string, for hints

    def coerce(self, value: Any, subject: str, failures: list[_Failure]) -> Any:
        kind = type(value)
        if kind in self.exact:
            result = value
        elif self.tokens and (kind is str or kind is int):
            try:
                token = value if kind is str else str(value)
            except ValueError:  # an int too long to write (sys.get_int_max_str_digits)
                failures.append(_Failure(subject, self.phrase, value, _LONG_INT_HINT))
                return value
            try:
                result = token if self.parse is None else self.parse(token)
            except Exception as error:  # a user's type callable may raise anything
                failures.append(_Failure(subject, self.phrase, value, self._hint(value, error)))
                return value
        else:
            failures.append(_Failure(subject, self.phrase, value, self._hint(value, None)))
            return value
        if self.choices is not None and not _contains(self.choices, result):
            failures.append(_Failure(subject, self.phrase, value, self._hint(value, None)))
        return result

    def _hint(self, value: Any, error: Exception | None) -> str:
        family = self.family
        if self.choices is not None:
            close = did_you_mean_hint(value, self.names) if type(value) is str else None
            return close or "write one of the values listed"
        if family == "bool":
            return "write true or false" + (", without quotes" if type(value) is str else "")
        if family == "JSON":
            text = "write a YAML mapping or list, or a string holding JSON"
            return f"{text} (json.loads: {error})" if error is not None else text
        if family == "custom":
            if error is None:
                return f"quote the value, written as you would after {self.flag}"
            said = str(error) if isinstance(error, _TYPE_ERRORS) else f"{error!r}"
            return f"{self.kind} said: {said}; write the value as you would after {self.flag}"
        if type(value) in (list, tuple, dict):
            return "write a single value, not a " + ("mapping" if type(value) is dict else "list")
        if family == "int":
            return _int_hint(value)
        if family == "float":
            return "write a number such as 1e-5" + (_BOOLEANS if type(value) is bool else "")
        return "quote the value so YAML reads it as text"


@attrs.frozen
class DestSpec:
    """What one dest accepts: one item, or a list of them; and whether null is allowed."""

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    subject: str  # the dest, quoted
    item: ItemSpec
    nullable: bool
    default: Any
    many: bool = False  # a YAML list of items: nargs '+', '*' or N, append, extend
    count: int | None = None  # nargs=N
    non_empty: bool = False  # nargs='+'
    each: DestSpec | None = None  # append with nargs: every item is itself a list
    kind: str = attrs.field(init=False)
    phrase: str = attrs.field(init=False)

    @kind.default
    def _kind(self) -> str:
        if not self.many:
            return self.item.kind
        inner = self.each.kind if self.each is not None else self.item.kind
        return f"list of {self.count} {inner}" if self.count is not None else f"list of {inner}"

    @phrase.default
    def _phrase(self) -> str:
        if not self.many:
            return self.item.phrase
        return ("a non-empty " if self.non_empty else "a ") + self.kind

    def coerce(self, value: Any, failures: list[_Failure]) -> Any:
        """The converted `value` (the same object if nothing changed); failures go to `failures`."""
        if value is None:
            if not self.nullable:
                failures.append(_Failure(self.subject, self.phrase, value, self._null_hint()))
            return value
        if self.many:
            return self._coerce_list(value, self.subject, failures)
        return self.item.coerce(value, self.subject, failures)

    def _null_hint(self) -> str:
        if self.default is argparse.SUPPRESS:
            return "delete the key"
        if self.default is None:  # and null is refused: the option is required
            return f"write {self.phrase}; the option is required"
        return f"delete the key to keep the default {_show(self.default)}"

    def _coerce_list(self, value: Any, subject: str, failures: list[_Failure]) -> Any:
        if type(value) is not list and type(value) is not tuple:
            hint = "write a YAML list"
            if value is not None and type(value) is not dict:
                hint += f": [{_show(value)}]"
            failures.append(_Failure(subject, self.phrase, value, hint))
            return value
        if self.count is not None and len(value) != self.count:
            hint = f"write exactly {self.count} items"
            failures.append(_Failure(subject, self.phrase, value, hint))
            return value
        if self.non_empty and not value:
            hint = "write at least one item"
            if self.default is not argparse.SUPPRESS:
                hint += f", or delete the key to keep the default {_show(self.default)}"
            failures.append(_Failure(subject, self.phrase, value, hint))
            return value
        converted = []
        changed = type(value) is not list  # argparse gives lists
        for index, element in enumerate(value):
            where = f"{subject}[{index}]"
            if self.each is not None:
                new = self.each._coerce_list(element, where, failures)
            else:
                new = self.item.coerce(element, where, failures)
            changed = changed or new is not element
            converted.append(new)
        return converted if changed else value


def _layer_names(names: str | Sequence[str]) -> tuple[str, ...]:
    return (names,) if isinstance(names, str) else tuple(names)


@attrs.frozen
class TypeCoercion:
    """A ``layers`` rule converting the values of `layers` the way `parser` converts tokens.

    ``lr: 1e-5`` (which YAML reads as a string) becomes the float ``1e-05``, a YAML string
    ``flash`` for an enum dest becomes the member, ``use_critic: "false"`` is an error rather
    than true. Every value that cannot be converted is one `Problem` (``key`` is the dest,
    located at the value's origin); keys the parser does not know are left alone.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    parser: argparse.ArgumentParser = attrs.field(
        validator=typed(argparse.ArgumentParser, "an argparse.ArgumentParser")
    )
    layers: tuple[str, ...] = attrs.field(default=("role-config",), converter=_layer_names)
    name: str = "type-coercion"
    stage: Stage = attrs.field(default="layers", init=False)

    def __attrs_post_init__(self) -> None:
        # The parser's table, made now: built with a preset's other rules, it shares their
        # reading of the dests (`reading_dests`); made again when the parser changed since.
        _table_of(self.parser)

    def __call__(self, context: RuleContext) -> list[Decision]:
        table = _table_of(self.parser)
        checked, actions = table.checked, self.parser._actions
        decisions: list[Decision] = []
        for layer_name in self.layers:
            layer = context.layer(layer_name)
            if layer is None:
                continue
            hidden: list[str] | None = None  # the layer's secrets, found at its first failure
            secrets = SECRETS  # (the resolution's, `context.secrets`, from its first failure)
            for key, value in layer.values.items():
                # The common case inline (a dest of one action): the very attributes it was
                # compiled from (`_ATTRIBUTES`), compared by identity, which costs no tuple.
                entry = checked.get(key)
                if entry is None:
                    spec = table.spec(self.parser, key)
                elif entry[1] < 0:
                    spec = entry[0]
                else:
                    act, was = actions[entry[1]], entry[2]
                    fresh = (
                        act.type is was[0]
                        and act.choices is was[1]
                        and act.nargs is was[2]
                        and act.default is was[3]
                        and act.required is was[4]
                        and act.const is was[5]
                    )
                    spec = entry[0] if fresh else table.spec(self.parser, key)
                if spec is None:
                    continue
                failures: list[_Failure] = []
                result = spec.coerce(value, failures)
                if failures:
                    origin = layer.origin_at((key,))
                    if hidden is None:
                        secrets = context.secrets
                        hidden = secrets.texts_among(layer.values)
                    decisions.extend(
                        self._problem(origin, key, failure, hidden, secrets) for failure in failures
                    )
                elif result is not value:
                    decisions.append(Convert(layer_name, key, result))
        return decisions

    def _problem(
        self,
        origin: Origin,
        key: str,
        failure: _Failure,
        hidden: Sequence[str] = (),
        secrets: SecretPolicy = SECRETS,
    ) -> Problem:
        # A credential's value is never quoted, not even when it is the wrong type.
        # Nor a secret inside it (``{"HF_TOKEN": ...`` in malformed JSON, a URL's password).
        value = failure.value
        hint = failure.hint
        if secrets.is_secret(key) or (isinstance(value, str) and shows_secret(value)):
            # The hint may quote the value or the default ("write a YAML list: ['hf_...']").
            got, hint = secrets.placeholder, f"write {failure.expected}"
        else:
            # A secret of the layer the value quotes (wandb_key's, pasted here) is scrubbed
            # before the text is cut (cut, it is no longer found); so is the hint's quote of it.
            got = _yamlish(secrets.redact(key, value))
            if hidden and scrub_text(got, hidden) != got:
                got, hint = scrub_text(got, hidden), f"write {failure.expected}"
            got = shorten(got, 60)  # (as `_show` cuts it)
        if hidden:  # (a default the hint quotes)
            hint = scrub_text(hint, hidden)
        message = f"{failure.subject} must be {failure.expected} (got {got})"
        return Problem.at(origin, message, key=key, hint=hint, rule=self.name)


def expected_kind(action: argparse.Action) -> str:
    """What one argparse action takes, in words: ``"float"``, ``"list of int"``, ``"bool"``...

    Choices read ``"one of 'a', 'b'"``, a custom type callable gives its name, ``"JSON"`` is
    `json.loads`; an action layerconf does not convert (help, version, store_const of a
    non-bool, append_const, custom action classes) is ``"any"``.
    """
    check_type("expected_kind", "action", action, argparse.Action, "an argparse.Action")
    container = getattr(action, "container", None)  # its parser or group (same registry)
    type_ = _registered(container, action.type) if container is not None else action.type
    spec = _spec_for(action, type_, action.default, action.required)
    return spec.kind if spec is not None else "any"


def _registered(container: Any, type_: Any) -> Any:
    """`type_`, or the callable registered under that name (``parser.register("type", ...)``)."""
    if isinstance(type_, str):
        return container._registry_get("type", type_, type_)
    return type_


class _Table:
    """One parser's dests, and the spec of each dest a layer has held so far.

    A dest's positions are found when a layer first holds it: a process pays for the ten keys
    of a role file, not for a thousand actions. The table keeps positions in ``_actions``,
    never the actions (they refer to the parser, which would outlive its user in `_TABLES`).
    """

    __slots__ = ("checked", "defaults", "dests", "found", "shape", "specs")

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        # What the parser looked like: argparse only ever appends actions (a conflict_handler
        # "resolve" replacement too), and set_defaults rewrites action defaults.
        self.shape = parser_shape(parser)
        self.defaults = dict(parser._defaults)
        self.dests = shape_dests(parser)  # each action's dest, as listed (read-only)
        self.found: dict[str, tuple[int, ...]] = {}  # the positions of each dest looked up
        # Each spec with what it was compiled from (`_mark`), published as one pair: a thread
        # never sees a new spec beside old marks, or the reverse.
        self.specs: dict[str, tuple[list[tuple[Any, ...]], DestSpec | None]] = {}
        # The specs of dests of one action with a type that is not a registry name, with the
        # action's position (-1: no action) and attributes, for `TypeCoercion`'s fast check.
        self.checked: dict[str, tuple[DestSpec | None, int, tuple[Any, ...]]] = {}

    def current(self, parser: argparse.ArgumentParser) -> bool:
        return same_shape(parser, self.shape) and self.defaults == parser._defaults

    def positions(self, dest: str) -> tuple[int, ...]:
        """Where the actions of `dest` are in ``parser._actions`` (none for SUPPRESS, or a
        dotted dest, which Convert's dotted key cannot name: layerconf leaves it alone)."""
        found = self.found.get(dest)
        if found is None:
            at: list[int] = []
            start = 0
            with contextlib.suppress(ValueError):
                while "." not in dest:  # list.index compares in C: no Python pass per dest
                    start = self.dests.index(dest, start) + 1
                    if self.dests[start - 1] is not argparse.SUPPRESS:
                        at.append(start - 1)
            found = self.found[dest] = tuple(at)
        return found

    def spec(self, parser: argparse.ArgumentParser, dest: str) -> DestSpec | None:
        """The spec of `dest`, compiled again if an action it was compiled from changed."""
        compiled = self.specs.get(dest)
        if compiled is not None:
            was, spec = compiled
            actions = parser._actions
            now = [_mark(parser, actions[index]) for index in self.positions(dest)]
            if len(now) == len(was) and all(
                len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))
                for a, b in zip(now, was, strict=True)
            ):
                return spec
        return self.compile(parser, dest)

    def compile(self, parser: argparse.ArgumentParser, dest: str) -> DestSpec | None:
        """The spec of `dest` (None: not a dest, or one layerconf leaves alone), kept."""
        positions = self.positions(dest)
        actions = [parser._actions[index] for index in positions]
        marks = [_mark(parser, action) for action in actions]
        spec = dest_spec(parser, actions) if actions else None
        self.specs[dest] = (marks, spec)
        if not positions:
            self.checked[dest] = (spec, -1, ())
        elif len(positions) == 1 and len(marks[0]) == len(_ATTRIBUTES_NAMES):
            self.checked[dest] = (spec, positions[0], marks[0])
        else:
            self.checked.pop(dest, None)
        return spec


#: What a dest's spec is compiled from, besides the action's class.
_ATTRIBUTES_NAMES = ("type", "choices", "nargs", "default", "required", "const")
_ATTRIBUTES = operator.attrgetter(*_ATTRIBUTES_NAMES)


def _mark(parser: argparse.ArgumentParser, action: argparse.Action) -> tuple[Any, ...]:
    mark: tuple[Any, ...] = _ATTRIBUTES(action)
    if isinstance(mark[0], str):  # a registered type: the callable registered now
        return (*mark, _registered(parser, mark[0]))
    return mark


_TABLES: weakref.WeakKeyDictionary[argparse.ArgumentParser, _Table] = weakref.WeakKeyDictionary()


def _table_of(parser: argparse.ArgumentParser) -> _Table:
    table = _TABLES.get(parser)
    if table is None or not table.current(parser):
        table = _TABLES[parser] = _Table(parser)
    return table


def spec_of(parser: argparse.ArgumentParser, dest: str) -> DestSpec | None:
    """The spec of `dest` in `parser` (None: not a dest, or one layerconf leaves alone), from
    the parser's table: compiled once, again only when an action it depends on changed."""
    return _table_of(parser).spec(parser, dest)


def dest_spec(parser: argparse.ArgumentParser, actions: list[argparse.Action]) -> DestSpec | None:
    """What the dest of `actions` (all of `parser`'s actions for it) accepts, or None for a
    dest the rule leaves alone; the role-file schema is written from the same `DestSpec`."""
    # Several actions for one dest (--x / --no-x): boolean if all are flags, else the first
    # that takes a value. The first action's default is the one argparse uses.
    chosen = next((a for a in actions if not _is_flag(a)), actions[0])
    default = next((a.default for a in actions if a.default is not argparse.SUPPRESS), None)
    required = any(a.required for a in actions)
    return _spec_for(chosen, _registered(parser, chosen.type), default, required)


def _is_flag(action: argparse.Action) -> bool:
    if isinstance(action, argparse.BooleanOptionalAction):
        return True
    return isinstance(action, argparse._StoreConstAction) and type(action.const) is bool


def _spec_for(action: argparse.Action, type_: Any, default: Any, required: bool) -> DestSpec | None:
    subject = repr(action.dest)
    nargs = action.nargs
    nullable = (default is None and not required) or nargs == "?"
    if _is_flag(action):
        return _scalar(subject, _item(action, bool), nullable, default)
    if isinstance(action, argparse._CountAction):
        return _scalar(subject, _item(action, int), nullable, default)
    if isinstance(action, argparse._AppendAction):  # append and extend
        item = _item(action, type_)
        each = None
        if not isinstance(action, argparse._ExtendAction) and nargs not in (None, "?"):
            each = _list_spec(subject, item, nargs, argparse.SUPPRESS)
            if each is None:
                return None
        return DestSpec(subject, item, nullable, default, many=True, each=each)
    if not isinstance(action, argparse._StoreAction):
        return None
    if nargs is None or nargs == "?":
        return _scalar(subject, _item(action, type_), nullable, default)
    return _list_spec(subject, _item(action, type_), nargs, default, nullable)


def _scalar(subject: str, item: ItemSpec, nullable: bool, default: Any) -> DestSpec:
    if item.family == "bool" and nullable:
        item = attrs.evolve(item, phrase="true, false or null")  # a three-state flag
    return DestSpec(subject, item, nullable, default)


def _list_spec(
    subject: str, item: ItemSpec, nargs: Any, default: Any, nullable: bool = False
) -> DestSpec | None:
    if isinstance(nargs, int):
        return DestSpec(subject, item, nullable, default, many=True, count=nargs)
    if nargs in ("+", "*"):
        return DestSpec(subject, item, nullable, default, many=True, non_empty=nargs == "+")
    return None  # argparse.REMAINDER and the like: left alone


def _item(action: argparse.Action, type_: Any) -> ItemSpec:
    family: _Family
    exact: frozenset[type]
    parse: Callable[[str], Any] | None = type_
    if type_ is bool:
        family, exact, parse = "bool", frozenset({bool}), None
    elif type_ is None or type_ is str:
        family, exact, parse = "str", frozenset({str}), None
    elif type_ is int:
        family, exact = "int", frozenset({int})
    elif type_ is float:
        family, exact = "float", frozenset({float})
    elif type_ is getattr(sys.modules.get("json"), "loads", None):  # no json: not json.loads
        family, exact = "JSON", frozenset({dict, list, int, float, bool})
    else:
        family, exact = "custom", frozenset()
    kind = family if family != "custom" else getattr(type_, "__name__", type(type_).__name__)
    phrase = _PHRASES.get(family, f"a {kind} value")
    choices = action.choices if family != "bool" else None
    names: tuple[str, ...] = ()
    if choices is not None:
        options = list(choices)
        classes = {type(c) for c in options}
        if len(classes) == 1 and issubclass(next(iter(classes)), enum.Enum):
            exact = exact | classes  # a member given directly is already right
        names = tuple(c.name if isinstance(c, enum.Enum) else c for c in options if _named(c))
        shown = [repr(c.name) if isinstance(c, enum.Enum) else _show(c) for c in options]
        kind = "one of " + ", ".join(shown[:_SHOWN_CHOICES])
        if len(shown) > _SHOWN_CHOICES:
            kind += f", ... ({len(shown)} in all)"
        phrase = kind
    flag = next((s for s in action.option_strings if s.startswith("--")), None)
    flag = flag or (action.option_strings[0] if action.option_strings else action.dest)
    return ItemSpec(family, kind, phrase, exact, family != "bool", parse, choices, names, flag)


def _named(choice: Any) -> bool:
    return type(choice) is str or isinstance(choice, enum.Enum)


def _contains(choices: Iterable[Any], value: Any) -> bool:
    try:
        return value in choices
    except TypeError:  # an unhashable value against a set of choices
        return False


def _int_hint(value: Any) -> str:
    if type(value) is float or type(value) is str:
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if math.isfinite(number) and number.is_integer():
            return f"write {int(number)}"
    return "write a whole number such as 2" + (_BOOLEANS if type(value) is bool else "")


def _show(value: Any, limit: int = 60) -> str:
    """`value` as a YAML reader would write it back: null, true, 'text', [1, 2]; shortened."""
    return shorten(_yamlish(value), limit)


def _yamlish(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is list or type(value) is tuple:
        return "[" + ", ".join(_yamlish(item) for item in value) + "]"
    if type(value) is dict:
        return "{" + ", ".join(f"{_yamlish(k)}: {_yamlish(v)}" for k, v in value.items()) + "}"
    if isinstance(value, enum.Enum):
        return repr(value.name)
    if type(value) is int and value.bit_length() > 14_000:  # more than 4,200 digits
        try:
            return repr(value)
        except ValueError:  # too long for Python to write (sys.get_int_max_str_digits)
            return f"an int of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
    return repr(value)
