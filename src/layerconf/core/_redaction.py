"""A setting as it may be shown (`Setting.redacted`): the secrets it holds, found in its
value, its history and its origins' tokens, redacted by `Scrub` (values by key, their texts
wherever they occur).

Loaded by the first `Setting.redacted` call, not with the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from layerconf.core._scrub import Scrub, token_may_hold
from layerconf.core.records import Setting
from layerconf.core.secrets import (
    SecretPolicy,
    embedded_secrets,
    redact_argv,
    secret_texts,
    with_secret_keys,
)

__all__ = ["redacted"]


def redacted(setting: Setting, policy: SecretPolicy) -> Setting:
    """`setting` as it may be shown under `policy`; itself when it holds no secret (what
    `Setting.redacted` says)."""
    found: list[str] = list(setting.scrub)
    if setting.secret:  # (a secret flag's dest: a secret in its resolution, whatever its name)
        policy = with_secret_keys(policy, frozenset([setting.key]))
    for entry in _entries(setting):
        _visit(entry.key, entry.value, policy, found, set())
        token = entry.origin.token
        if token is not None and token_may_hold(token):
            # A secret flag's token (--wandb-key=...), whatever the key: its value too; a
            # URL's password in the token (a record's, written by hand).
            found.extend(redact_argv([token], policy)[1])
    if not found:
        return setting
    return Scrub(policy, found).setting(setting)  # type: ignore[no-any-return]


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
            if isinstance(name, str):  # a key's form may show a secret: a URL's password
                found.extend(embedded_secrets(name, policy))
            _visit(name, item, policy, found, active)
    elif type(value) in (list, tuple, set, frozenset):
        active.add(id(value))
        for item in value:
            _visit("", item, policy, found, active)
