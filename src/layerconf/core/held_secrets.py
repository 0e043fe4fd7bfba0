"""The secrets a resolution's layers hold: which keys, and the texts of their values.

What `explain` scrubs from the values it shows (another key may quote a secret), and what a
resolution scrubs from a problem a rule or a source of the user's wrote. A key's secrecy is
the default policy's answer for its name; a parser's thousand defaults are looked through once
per default layer, and a smaller layer above asks only of keys the defaults do not have.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from layerconf.core._scrub import parts
from layerconf.core._secret_text import text_of
from layerconf.core.records import Layer
from layerconf.core.secrets import (
    SECRETS,
    SecretPolicy,
    embedded_secrets,
    secret_texts,
    url_passwords,
    with_secret_keys,
)
from layerconf.core.values import MAX_DEPTH, TEXTLESS_TYPES, full_text

__all__ = [
    "declared_secret_keys",
    "held_secret_texts",
    "held_texts",
    "nested_secret_texts",
    "policy_of",
    "secret_keys_of",
    "texts_held",
]


def held_secret_texts(
    keys: Iterable[str], values: Mapping[str, Any], layers: Sequence[Layer]
) -> list[str]:
    """The texts of the secrets under `keys`: their `values` now and what each of `layers`
    held (a secret given twice, or shadowed by another layer, is still one to hide)."""
    texts: list[str] = []
    for key in keys:
        for value in (values.get(key), *(layer.values.get(key) for layer in layers)):
            if value is not None:
                texts += secret_texts(value)
    return list(dict.fromkeys(texts))


def secret_keys_of(layers: Iterable[Layer]) -> frozenset[str]:
    """The keys of `layers` that hold secrets (under the default policy, and those a layer
    says hold secrets whatever their names: `Layer.secret_keys`)."""
    found: set[str] = set()
    answered: list[Mapping[str, Any]] = []  # the large layers' keys, each asked already
    for layer in layers:
        found.update(layer.secret_keys)
        values = layer.values
        if len(values) > _LARGE or not answered:
            found.update(_secret_keys(layer))
            answered.append(values)
        else:  # (the command line's keys are the defaults': asked once, with the defaults)
            for key in values:
                for keys in answered:
                    if key in keys:
                        break
                else:
                    if SECRETS.is_secret(key):
                        found.add(key)
    return frozenset(found)


def declared_secret_keys(layers: Iterable[Layer]) -> frozenset[str]:
    """The keys `layers` say hold secrets whatever their names (`Layer.secret_keys`: a secret
    flag's dest, ``--hf-token`` with dest ``tok``), secrets in each of the layers."""
    found: frozenset[str] = frozenset()
    for layer in layers:
        if layer.secret_keys:
            found |= layer.secret_keys
    return found


def policy_of(layers: Iterable[Layer], policy: SecretPolicy = SECRETS) -> SecretPolicy:
    """`policy` as the resolution of `layers` asks it: also naming the keys its layers say
    hold secrets (`declared_secret_keys`) secrets'; `policy` itself when they say none."""
    keys = declared_secret_keys(layers)
    return with_secret_keys(policy, keys) if keys else policy


# A large layer's secret keys, by the layer's identity: the parser's defaults, one layer every
# resolution with that parser shares, are looked through once. Up to 8 are kept (never the
# layer itself), then all are forgotten.
_LARGE_LAYERS: dict[int, tuple[weakref.ref[Layer], tuple[str, ...]]] = {}
_KEPT_LAYERS = 8
_LARGE = 64


def _secret_keys(layer: Layer) -> tuple[str, ...]:
    kept = _LARGE_LAYERS.get(id(layer))
    if kept is not None and kept[0]() is layer:
        return kept[1]
    found = tuple(SECRETS.secret_keys(layer.values))
    if len(layer.values) > _LARGE:
        if len(_LARGE_LAYERS) >= _KEPT_LAYERS:
            _LARGE_LAYERS.clear()
        _LARGE_LAYERS[id(layer)] = (weakref.ref(layer), found)
    return found


def nested_secret_texts(mappings: Iterable[Mapping[str, Any]]) -> list[str]:
    """The texts of the secrets held inside the containers of `mappings`, under a secret key
    of a mapping below the top (``env: {HF_TOKEN: ...}``) or a secret field's name (a
    namedtuple's ``api_key``: `parts`), each container once, at most `_NESTED` levels down."""
    texts: list[str] = []
    stack: list[tuple[Any, int]] = [
        (value, 1) for values in mappings for value in values.values() if type(value) not in _PLAIN
    ]
    seen: set[int] = set()
    while stack:
        value, depth = stack.pop()
        if depth > _NESTED or id(value) in seen:
            continue
        seen.add(id(value))
        try:
            for name, item in parts(value) or ():
                if item is None:
                    continue
                if isinstance(name, str) and SECRETS.is_secret(name):
                    texts += secret_texts(item)
                elif type(item) not in _PLAIN:
                    stack.append((item, depth + 1))
        except Exception:  # (one that cannot be read is shown as such: `values.unreadable`)
            continue
    return texts


_NESTED = 16
#: The types of almost every value, which hold no container: skipped without an ABC check.
_PLAIN = frozenset({str, int, float, bool, type(None)})


def texts_held(
    layers: Sequence[Layer], values: Sequence[Mapping[str, Any]], keys: Iterable[str] = ()
) -> list[str]:
    """The texts of every secret `layers` and `values` hold: under a secret key of theirs (or
    one of `keys`: set by a rule, in no layer), and nested under a secret key in a mapping."""
    named = secret_keys_of(layers) | set(keys)
    texts = [text for held in values for text in held_secret_texts(named, held, layers)]
    return texts + nested_secret_texts([*values, *(layer.values for layer in layers)])


def held_texts(
    key: Any,
    value: Any,
    policy: SecretPolicy,
    found: list[str],
    reprs: bool = True,
    active: set[int] | None = None,
    depth: int = 0,
) -> None:
    """Add to `found` the text of every secret `value` holds as `key`'s value: a secret
    key's value, at any level (a mapping's key, a record-like object's field: `parts`); what a
    text's form shows (a URL's password, a secret key's value in JSON); with `reprs`, a URL's
    password in the repr of an object shown by its repr (one of another type, a subclass or a
    record whose parts hold no secret). "" stands for a secret without text, and for what
    `Scrub` must show otherwise than as it is: a container that cannot be read, or one past
    `MAX_DEPTH` levels (not looked into). Each container is followed once."""
    if isinstance(key, str) and policy.is_secret(key):
        if value is not None:
            found.extend(secret_texts(value) or [""])  # "" marks a secret with no text
        return
    kind = type(value)
    if kind in TEXTLESS_TYPES:
        return
    text = value if kind is str else text_of(value)  # (bytes, a path: as a str)
    if text is not None:
        found.extend(embedded_secrets(text, policy))
        return
    if active is None:
        active = set()
    if id(value) in active:
        return
    if depth >= MAX_DEPTH:  # not looked into: `Scrub` shows it so (`NESTED`), not its repr
        found.append("")
        return
    active.add(id(value))
    before = len(found)
    try:
        held = parts(value)
        if held is None:
            if reprs:  # any other object: shown by its repr
                found.extend(url_passwords(full_text(value)))
            return
        for name, item in held:
            if name and isinstance(name, str):  # a key's form may show one: a URL's password
                found.extend(embedded_secrets(name, policy))
            held_texts(name, item, policy, found, reprs, active, depth + 1)
    except Exception:  # one that cannot be read: `Scrub` shows it as unreadable
        found.append("")
    if reprs and len(found) == before and kind not in _SHOWN_AS_SUCH:
        # (a subclass or a record whose parts hold no secret is shown by its own repr)
        found.extend(url_passwords(full_text(value)))


#: The containers `Scrub.value` shows as such; another's repr is shown when nothing in it
#: is redacted.
_SHOWN_AS_SUCH = frozenset({dict, list, tuple, set, frozenset})
