"""Showing values without secrets: the one redaction every formatter of values goes through,
and what a value holds as the secret policy looks into it.

`Scrub` replaces the value of a secret key by the placeholder, the secrets inside other values
(a mapping's ``HF_TOKEN``, a URL's password), and the texts of the secrets found wherever else
they occur: `Setting.redacted` shows a setting with it, a namespace's and a layer's repr their
values.

`parts` is what a value holds: a mapping's items by key; a namedtuple's, a dataclass's and an
attrs instance's fields by name (`record_fields`); the items of a list, tuple, set or frozenset,
a subclass's too, unnamed. Every walk that looks for secrets asks it: finding them
(`held_secrets.held_texts`, `secret_texts`, `nested_secret_texts`), redacting them (`Scrub`)
and encoding a record (`layerconf.audits.codec`). A field is judged by its name as a mapping's
key is (a ``Creds(user, api_key)``'s ``api_key``), and read as the instance holds it: no code
of its class runs (no ``__getattr__``, ``__repr__`` or ``__init__``); one whose fields held a
secret is shown as its kind's own repr shows one (`fields_text`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from itertools import chain, repeat
from typing import Any

import attrs

from layerconf.core._secret_text import remade, text_of
from layerconf.core.secrets import (
    SECRETS,
    SecretPolicy,
    TextSearch,
    hide_url_passwords,
    may_show_secret,
    redact_argv,
)
from layerconf.core.values import MAX_DEPTH, NESTED, TEXTLESS_TYPES, Shown, full_text, unreadable

__all__ = [
    "Fields",
    "Scrub",
    "fields_text",
    "parts",
    "record_fields",
    "shown_text",
    "token_may_hold",
]


@functools.lru_cache(maxsize=1)
def _search(texts: tuple[str, ...]) -> TextSearch:
    """The search for `texts`, kept for the next setting of the same namespace."""
    return TextSearch(texts)


class Scrub:
    """One redaction: secret values by key, the texts of secrets `found` wherever they occur
    (those at least ``policy.min_scrub_length`` long, as written and as JSON and repr() escape
    them)."""

    def __init__(self, policy: SecretPolicy, found: Iterable[str]) -> None:
        self.policy = policy
        texts: set[str] = set()
        for text in found:
            if len(text) >= policy.min_scrub_length:
                import json  # only when there is a secret to scrub: not at import

                escaped = json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]
                texts.update((text, *escaped, repr(text)[1:-1]))
        # (one search a namespace's settings share, made on use)
        self.found = _search(tuple(sorted(texts, key=len, reverse=True)))

    def setting(self, setting: Any) -> Any:
        value = self.value(setting.key, setting.value, {})
        if setting.reason == "converted" and isinstance(value, str) and "\\" in value:
            # Raw text (JSON) a secret-holding value was converted from: its escapes may spell
            # the secret in a way no search finds (hf_\u0061bc), so none of it is shown.
            value = self.policy.placeholder
        history = tuple(self.setting(entry) for entry in setting.history)
        return attrs.evolve(
            setting, value=value, origin=self.origin(setting.origin), history=history
        )

    def origin(self, origin: Any) -> Any:
        token, label = origin.token, origin.label
        if token is not None and token_may_hold(token):
            token = redact_argv([token], self.policy)[0][0]
        token = self.text(token) if token is not None else None
        label = self.text(label) if label is not None else None
        if token == origin.token and label == origin.label:
            return origin
        return attrs.evolve(origin, token=token, label=label)

    def text(self, text: str) -> str:
        for secret in self.found(text):
            text = text.replace(secret, self.policy.placeholder)
        return text

    def value(self, key: Any, value: Any, memo: dict[int, Any], depth: int = 0) -> Any:
        """`value` redacted for `key`, its containers copied only where something changed
        (cycles followed once: `memo` maps a container to its redacted copy); a container
        more than `MAX_DEPTH` levels down is `NESTED`, as every formatter shows it, one whose
        reading raises `unreadable`. A subclass of a container is copied as its base; a
        record-like object (a namedtuple, a dataclass, an attrs instance) has its fields
        redacted by their names (`record`)."""
        if isinstance(key, str) and self.policy.is_secret(key):
            return self.policy.redact(key, value)
        kind = type(value)
        if kind is str:
            return self.text(self.policy.redact(key, value))
        if kind in _TEXTLESS:
            return value
        if id(value) in memo:
            return memo[id(value)]
        text = text_of(value)  # bytes, a path: their text, as a str's
        if text is not None:
            shown = self.text(self.policy.redact(key, text))
            return value if shown == text else remade(value, shown)
        if kind in _CONTAINERS or isinstance(value, Mapping):
            fields = None
        else:
            fields = record_fields(kind)
            if fields is None and not isinstance(value, _SEQUENCES):
                return self.shown(value)
        if depth >= MAX_DEPTH:
            return NESTED
        try:
            if fields is not None:
                changed = self.record(value, fields, memo, depth + 1)
            elif isinstance(value, Mapping):
                changed = self.mapping(value, memo, depth + 1)
            else:
                changed = self.items(value, memo, depth + 1)
        except Exception as error:  # not read, so not shown: its repr may hold a secret
            changed = unreadable(value, error)
        if changed is value and kind not in _CONTAINERS:  # (a subclass, a record, unchanged:
            changed = self.shown(value)  # shown by its own repr)
        memo[id(value)] = changed
        return changed

    def mapping(self, value: Mapping[Any, Any], memo: dict[int, Any], depth: int) -> Any:
        """A mapping redacted: a dict of its items, or itself when none changed."""
        mapping: dict[Any, Any] = {}
        memo[id(value)] = mapping
        same = True
        for name, item in value.items():
            # (a key shown as a text is: it may hold a secret's, or a URL's password)
            shown = self.value("", name, memo) if type(name) is str else name
            mapping[shown] = self.value(name, item, memo, depth)
            same = same and shown is name and mapping[shown] is item
        return value if same else mapping

    def items(self, value: Any, memo: dict[int, Any], depth: int) -> Any:
        """A list, tuple, set or frozenset (a subclass's: as its base) redacted, or itself
        when none of its items changed."""
        base = next(base for base in _SEQUENCES if isinstance(value, base))
        if base is set or base is frozenset:  # (no cycle: a set holds no set)
            members = [self.value("", item, memo, depth) for item in value]
            same = all(new is old for new, old in zip(members, value, strict=True))
            return value if same else base(members)
        items: list[Any] = []
        memo[id(value)] = items  # (a list that holds itself: its copy holds the copy)
        items.extend(self.value("", item, memo, depth) for item in value)
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if base is list else tuple(items)

    def record(self, value: Any, fields: Fields, memo: dict[int, Any], depth: int) -> Any:
        """A record-like object with its fields redacted by their names: a namedtuple made
        again of them (no code of its class runs), another shown as its kind's repr shows
        one (`fields_text`); itself when none changed."""
        memo[id(value)] = _INSIDE  # (met again inside itself: shown as its repr shows it)
        read = fields.read(value)
        shown = [(name, self.value(name, item, memo, depth)) for name, item in read]
        if all(
            new is old or new is _INSIDE for (_, new), (_, old) in zip(shown, read, strict=True)
        ):
            return value
        if fields.items:
            return tuple.__new__(type(value), [item for _, item in shown])
        return Shown(fields_text(fields, shown))

    def shown(self, value: Any) -> Any:
        """An object of any other type (a list subclass, a namedtuple, a dataclass) as it is
        shown: itself, or when its repr holds a secret's text or a URL's password, that repr
        with them hidden (`Shown`)."""
        text = full_text(value)
        hidden = self.text(hide_url_passwords(text, self.policy.placeholder)[0])
        return value if hidden == text else Shown(hidden)


#: The containers shown as such (their items redacted); and the sequences and sets walked so,
#: a subclass's items too.
_CONTAINERS = frozenset({dict, list, tuple, set, frozenset})
_SEQUENCES = (list, tuple, set, frozenset)
#: What a record met again inside itself shows (as Python's reprs show a recursion).
_INSIDE = Shown("...")


#: The types of values that show no text (neither a secret's nor a URL's): shown as they are.
_TEXTLESS = TEXTLESS_TYPES


def token_may_hold(token: str) -> bool:
    """Whether an origin's argv `token` may hold a secret of its own: a flag's value after
    ``=`` (``--wandb-key=S``, whatever the key), a URL's password (however short), JSON
    text's secret keys. `redact_argv` of the token finds it, and shows it without."""
    return "=" in token or may_show_secret(token)


def shown_text(values: Mapping[str, Any], policy: SecretPolicy = SECRETS) -> str:
    """The repr of `values` (a layer's) with their secrets redacted and the texts of those
    scrubbed from the other values."""
    return full_text(Scrub(policy, policy.texts_among(values)).value("", values, {}))


# ---------------------------------------------------------------------------------------------
# What a value holds


class Fields:
    """The fields of a record-like class: `names` in order, those its repr shows (`shown`),
    the class's `name` as its repr writes it, and whether its instances are tuples whose items
    are the fields (a namedtuple: `items`)."""

    __slots__ = ("items", "name", "names", "shown")

    def __init__(self, name: str, names: tuple[str, ...], shown: tuple[str, ...], items: bool):
        self.name = name
        self.names = names
        self.shown = shown
        self.items = items

    def read(self, value: Any) -> list[tuple[str, Any]]:
        """(name, value) of each field `value` holds; a field it does not hold (a dataclass's
        ``init=False`` field never set) is left out."""
        if self.items:  # (tuple's own iteration: a subclass's __iter__ is not asked; an
            # item past the fields, of a tuple made otherwise than by the class, is unnamed)
            return list(zip(chain(self.names, repeat("")), tuple.__iter__(value), strict=False))
        read = []
        for name in self.names:
            try:
                read.append((name, object.__getattribute__(value, name)))
            except AttributeError:
                continue
        return read


def record_fields(kind: type) -> Fields | None:
    """The `Fields` of `kind` when it is a namedtuple, a dataclass or an attrs class (kept per
    class); None for any other."""
    try:
        return _record_fields(kind)
    except TypeError:  # (a class whose metaclass makes it unhashable: read as any other)
        return None


@functools.lru_cache(maxsize=256)
def _record_fields(kind: type) -> Fields | None:
    if issubclass(kind, tuple):
        names = getattr(kind, "_fields", None)
        if isinstance(names, tuple) and all(type(name) is str for name in names):
            return Fields(kind.__name__, names, names, True)  # (a namedtuple's repr: __name__)
        return None
    if getattr(kind, "__dataclass_fields__", None) is not None:
        import dataclasses  # (loaded already: the class was made with it)

        try:
            found = dataclasses.fields(kind)  # type: ignore[arg-type]
        except TypeError:
            return None
        return Fields(
            kind.__qualname__,
            tuple(field.name for field in found),
            tuple(field.name for field in found if field.repr),
            False,
        )
    if getattr(kind, "__attrs_attrs__", None) is not None:
        import attrs

        try:
            attributes = attrs.fields(kind)  # type: ignore[arg-type]
        except (TypeError, attrs.exceptions.NotAnAttrsClassError):
            return None
        return Fields(
            kind.__qualname__.rsplit(">.", 1)[-1],  # (as attrs' repr names it)
            tuple(attribute.name for attribute in attributes),
            tuple(attribute.name for attribute in attributes if attribute.repr),
            False,
        )
    return None


def parts(value: Any) -> Iterable[tuple[Any, Any]] | None:
    """(name, item) for each part `value` holds: a mapping's items, a record-like object's
    fields (`record_fields`), a list's, tuple's, set's or frozenset's items named ``""``, a
    subclass's as its base's; None for a value of any other type. Reading a mapping's items or
    a container's may raise (a subclass's own ``items()`` or ``__iter__``)."""
    if isinstance(value, Mapping):
        return value.items()
    fields = record_fields(type(value))
    if fields is not None:
        return fields.read(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return zip(repeat(""), value)
    return None


def fields_text(fields: Fields, shown: Iterable[tuple[str, Any]]) -> str:
    """A record-like object as its kind's repr shows one, with its fields' values as `shown`
    (redacted): ``Creds(user='me', api_key='<redacted>')``; a field its repr leaves out is
    left out."""
    names = fields.shown
    items = ", ".join(f"{name}={full_text(item)}" for name, item in shown if name in names)
    return f"{fields.name}({items})"
