"""A setting as it may be shown (`Setting.redacted`): the secrets it holds, found in its
value, its history and its origins' tokens, redacted by `Scrub` (values by key, their texts
wherever they occur).

Loaded by the first `Setting.redacted` call, not with the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from layerconf.core._scrub import Scrub, token_may_hold
from layerconf.core._secret_text import text_of
from layerconf.core.records import Setting
from layerconf.core.secrets import (
    SecretPolicy,
    embedded_secrets,
    redact_argv,
    secret_texts,
    url_passwords,
    with_secret_keys,
)
from layerconf.core.values import MAX_DEPTH, TEXTLESS_TYPES, full_text

#: The containers `Scrub.value` shows as such (a subclass is shown by its repr), and the
#: types of values that show no text.
_CONTAINERS = frozenset({list, tuple, set, frozenset})
_TEXTLESS = TEXTLESS_TYPES

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


def _visit(
    key: Any, value: Any, policy: SecretPolicy, found: list[str], active: set[int], depth: int = 0
) -> None:
    """Add to `found` the text of every secret `value` holds as `key`'s value ("" for one
    without text); containers are followed once each, `MAX_DEPTH` levels down at most (what
    is further down is not shown: `Scrub.value`)."""
    if isinstance(key, str) and policy.is_secret(key):
        if value is not None:
            found.extend(secret_texts(value) or [""])  # "" marks a secret with no text
        return
    text = value if isinstance(value, str) else text_of(value)  # (bytes, a path: as a str)
    if text is not None:
        # A secret the text's form shows: a URL's password, a secret key's value in JSON.
        found.extend(embedded_secrets(text, policy))
        return
    if id(value) in active or depth >= MAX_DEPTH:
        return
    depth += 1
    if isinstance(value, Mapping):
        active.add(id(value))
        try:
            for name, item in value.items():
                if isinstance(name, str):  # a key's form may show a secret: a URL's password
                    found.extend(embedded_secrets(name, policy))
                _visit(name, item, policy, found, active, depth)
        except Exception:  # one that cannot be read: `Scrub` shows it as unreadable
            found.append("")
    elif isinstance(value, (list, tuple, set, frozenset)):
        active.add(id(value))
        try:
            for item in value:
                _visit("", item, policy, found, active, depth)
        except Exception:  # (a subclass whose iteration raises: shown by its repr)
            pass
        if type(value) not in _CONTAINERS:  # a subclass (a namedtuple): shown by its repr
            found.extend(url_passwords(full_text(value)))
    elif type(value) not in _TEXTLESS:  # any other object: shown by its repr
        found.extend(url_passwords(full_text(value)))
