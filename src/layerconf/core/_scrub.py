"""Showing values without secrets: the one redaction every formatter of values goes through.

`Scrub` replaces the value of a secret key by the placeholder, the secrets inside other values
(a mapping's ``HF_TOKEN``, a URL's password), and the texts of the secrets found wherever else
they occur: `Setting.redacted` shows a setting with it, a namespace's and a layer's repr their
values.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
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

__all__ = ["Scrub", "shown_text", "token_may_hold"]


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
        more than `MAX_DEPTH` levels down is `NESTED`, as every formatter shows it, a mapping
        whose reading raises `unreadable`."""
        if isinstance(key, str) and self.policy.is_secret(key):
            return self.policy.redact(key, value)
        kind = type(value)
        if kind is str:
            return self.text(self.policy.redact(key, value))
        if kind in _TEXTLESS:
            return value
        if id(value) in memo:
            return memo[id(value)]
        if depth >= MAX_DEPTH and (
            kind in (list, tuple, set, frozenset) or isinstance(value, Mapping)
        ):
            return NESTED
        depth += 1
        if isinstance(value, Mapping):
            mapping: dict[Any, Any] = {}
            memo[id(value)] = mapping
            same = True
            try:
                for name, item in value.items():
                    # (a key shown as a text is: it may hold a secret's, or a URL's password)
                    shown = self.value("", name, memo) if type(name) is str else name
                    mapping[shown] = self.value(name, item, memo, depth)
                    same = same and shown is name and mapping[shown] is item
            except Exception as error:  # not read, so not shown: its repr may hold a secret
                memo[id(value)] = unreadable(value, error)
                return memo[id(value)]
            return value if same else mapping
        if kind is list or kind is tuple:
            items: list[Any] = []
            memo[id(value)] = items
            items.extend(self.value("", item, memo, depth) for item in value)
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            return items if kind is list else tuple(items)
        if kind is set or kind is frozenset:  # (no cycle: a set holds no set)
            members = [self.value("", item, memo, depth) for item in value]
            if all(new is old for new, old in zip(members, value, strict=True)):
                return value
            return kind(members)
        text = text_of(value)  # bytes, a path: their text, as a str's
        if text is not None:
            shown = self.text(self.policy.redact(key, text))
            return value if shown == text else remade(value, shown)
        return self.shown(value)

    def shown(self, value: Any) -> Any:
        """An object of any other type (a list subclass, a namedtuple, a dataclass) as it is
        shown: itself, or when its repr holds a secret's text or a URL's password, that repr
        with them hidden (`Shown`)."""
        text = full_text(value)
        hidden = self.text(hide_url_passwords(text, self.policy.placeholder)[0])
        return value if hidden == text else Shown(hidden)


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
