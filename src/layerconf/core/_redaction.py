"""A setting as it may be shown (`Setting.redacted`): the secrets it holds, found in its
value, its history and its origins' tokens, redacted by `Scrub` (values by key, their texts
wherever they occur).

Loaded by the first `Setting.redacted` call, not with the package.
"""

from __future__ import annotations

from layerconf.core._scrub import Scrub, token_may_hold
from layerconf.core.held_secrets import held_texts
from layerconf.core.records import Setting
from layerconf.core.secrets import SecretPolicy, redact_argv, with_secret_keys

__all__ = ["redacted"]


def redacted(setting: Setting, policy: SecretPolicy) -> Setting:
    """`setting` as it may be shown under `policy`; itself when it holds no secret (what
    `Setting.redacted` says)."""
    found: list[str] = list(setting.scrub)
    if setting.secret:  # (a secret flag's dest: a secret in its resolution, whatever its name)
        policy = with_secret_keys(policy, frozenset([setting.key]))
    for entry in _entries(setting):
        held_texts(entry.key, entry.value, policy, found)
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
