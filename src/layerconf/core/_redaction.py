"""A setting as it may be shown (`Setting.redacted`): secret values by key, secret texts
wherever they occur, in its value, its history and its origins' tokens and labels.

Loaded by the first `Setting.redacted` call, not with the package.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import attrs

from layerconf.core.records import Origin, Reason, Setting
from layerconf.core.secrets import (
    SecretPolicy,
    TextSearch,
    embedded_secrets,
    redact_argv,
    secret_texts,
)

__all__ = ["redacted"]


def redacted(setting: Setting, policy: SecretPolicy) -> Setting:
    """`setting` as it may be shown under `policy`; itself when it holds no secret (what
    `Setting.redacted` says)."""
    found: list[str] = list(setting.scrub)
    for entry in _entries(setting):
        _visit(entry.key, entry.value, policy, found, set())
        token = entry.origin.token
        if token is not None and "=" in token:
            # A secret flag's token (--wandb-key=...), whatever the key: its value too.
            found.extend(redact_argv([token], policy)[1])
    if not found:
        return setting
    import json  # only when a setting shows a secret: not at import

    texts: set[str] = set()
    for text in found:
        if len(text) >= policy.min_scrub_length:
            # As written, and as JSON and repr() escape it.
            escaped = json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]
            texts.update((text, *escaped, repr(text)[1:-1]))
    scrub = _Scrub(policy, sorted(texts, key=len, reverse=True))
    return scrub.setting(setting)


def _entries(setting: Setting) -> list[Setting]:
    return [setting, *(entry for item in setting.history for entry in _entries(item))]


def _visit(key: Any, value: Any, policy: SecretPolicy, found: list[str], active: set[int]) -> None:
    """Add to `found` the text of every secret `value` holds as `key`'s value ("" for one
    without text); containers are followed once each."""
    if isinstance(key, str) and policy.is_secret(key):
        if value is not None:
            found.extend(secret_texts(value) or [""])  # "" marks a secret with no text
        return
    if isinstance(value, str):
        # A secret the text's form shows: a URL's password, a secret key's value in JSON.
        found.extend(embedded_secrets(value, policy))
        return
    if id(value) in active:
        return
    if isinstance(value, Mapping):
        active.add(id(value))
        for name, item in value.items():
            _visit(name, item, policy, found, active)
    elif type(value) in (list, tuple, set, frozenset):
        active.add(id(value))
        for item in value:
            _visit("", item, policy, found, active)


@functools.lru_cache(maxsize=1)
def _search(texts: tuple[str, ...]) -> TextSearch:
    """The search for `texts`, kept for the next setting of the same namespace."""
    return TextSearch(texts)


class _Scrub:
    """One redaction of a setting: secret values by key, secret texts wherever they occur."""

    def __init__(self, policy: SecretPolicy, texts: list[str]) -> None:
        self.policy = policy
        self.found = _search(tuple(texts))  # (one a namespace's settings share, made on use)

    def setting(self, setting: Setting) -> Setting:
        value = self.value(setting.key, setting.value, {})
        if setting.reason is Reason.CONVERTED and isinstance(value, str) and "\\" in value:
            # Raw text (JSON) a secret-holding value was converted from: its escapes may spell
            # the secret in a way no search finds (hf_\u0061bc), so none of it is shown.
            value = self.policy.placeholder
        history = tuple(self.setting(entry) for entry in setting.history)
        return attrs.evolve(
            setting, value=value, origin=self.origin(setting.origin), history=history
        )

    def origin(self, origin: Origin) -> Origin:
        token, label = origin.token, origin.label
        if token is not None and "=" in token:
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

    def value(self, key: Any, value: Any, memo: dict[int, Any]) -> Any:
        """`value` redacted for `key`, its containers copied only where something changed
        (cycles followed once: `memo` maps a container to its redacted copy)."""
        if isinstance(key, str) and self.policy.is_secret(key):
            return self.policy.redact(key, value)
        kind = type(value)
        if kind is str:
            return self.text(self.policy.redact(key, value))
        if id(value) in memo:
            return memo[id(value)]
        if isinstance(value, Mapping):
            mapping: dict[Any, Any] = {}
            memo[id(value)] = mapping
            for name, item in value.items():
                mapping[name] = self.value(name, item, memo)
            same = all(mapping[name] is item for name, item in value.items())
            return value if same else mapping
        if kind is list or kind is tuple:
            items: list[Any] = []
            memo[id(value)] = items
            items.extend(self.value("", item, memo) for item in value)
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            return items if kind is list else tuple(items)
        return value
