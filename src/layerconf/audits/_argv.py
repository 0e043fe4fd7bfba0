"""The command line an audit record keeps: redacted under the record's secret policy.

A provenance keeps the command line as its resolution showed it: redacted under that
resolution's policy, with the parser at hand to tell an abbreviation (``--wandb-k``), an alias
(``-k``) or a short cluster (``-kS``) from other tokens. A record's policy may name more
secrets, and the parser is gone by then: `kept_argv` redacts by the flags' names
(`redact_argv` without a parser), then where the provenance says a value came from. A key the
record's policy names a secret's, set by the flag at ``argv[i]``, has its value hidden there,
however that flag was spelt: in the flag's own token (``--my-cr=S``, ``-kS``) or in the tokens
after it that show exactly the value's text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from layerconf.core.namespace import Provenance
from layerconf.core.secrets import SecretPolicy, redact_argv, secret_texts

__all__ = ["kept_argv"]


def kept_argv(
    command_line: Any, provenance: Provenance, policy: SecretPolicy
) -> tuple[list[str], list[str]]:
    """`command_line` as a record under `policy` keeps it, and the secret texts it hid."""
    own, found = _redacted_argv(command_line, policy)
    for index, value in _secret_flags(provenance, policy):
        _hide(own, index, secret_texts(value), policy.placeholder, found)
    return own, found


def _secret_flags(provenance: Provenance, policy: SecretPolicy) -> Iterator[tuple[int, Any]]:
    """(argv index of the flag, the value it set) for each key `policy` names a secret's that
    a command line set, every time it was given (``cli:1``... hold the earlier ones)."""
    for layer in provenance.layers:
        if layer.kind != "argv":
            continue
        for path, origin in layer.origins.items():
            # (a value from an @file's line is not in the command line itself)
            if len(path) == 1 and origin.source is None and origin.argv_index is not None:
                name = path[0]
                if name in layer.values and policy.is_secret(name):
                    yield origin.argv_index, layer.values[name]


def _hide(own: list[str], index: int, texts: list[str], placeholder: str, found: list[str]) -> None:
    """Replace `texts` (a flag's values) where the flag at `own[index]` shows them."""
    if not texts or not 0 <= index < len(own):
        return
    token = own[index]
    text = texts[0]
    inside = token.endswith("=" + text) or (
        token[:1] == "-" and token[1:2] != "-" and len(token) > 2 and token.endswith(text)
    )
    if len(texts) == 1 and text and inside:  # --flag=S, -kS
        own[index] = token[: len(token) - len(text)] + placeholder
        found.append(text)
        return
    for offset, text in enumerate(texts, start=index + 1):  # --flag S [S2 ...]
        if offset < len(own) and own[offset] == text:
            own[offset] = placeholder
            found.append(text)


def _redacted_argv(command_line: Any, policy: SecretPolicy) -> tuple[list[str], list[str]]:
    """`redact_argv(command_line, policy)`. The last command line in which `policy` found
    nothing to redact is kept with it, when both cannot change (a tuple of str, as a
    provenance keeps it; a `SecretPolicy` itself, frozen), and given back as it is when asked
    again, without a second look: a trainer audits one command line, record after record.
    (What is kept holds no secret the policy knows of.)"""
    clean = _CLEAN_ARGV[0]
    if clean is not None and clean[0] is command_line and clean[1] is policy:
        return list(command_line), []
    own, found = redact_argv(command_line, policy)
    if (
        not found
        and type(command_line) is tuple
        and type(policy) is SecretPolicy
        and own == list(command_line)
        and set(map(type, command_line)) <= {str}
    ):
        _CLEAN_ARGV[0] = (command_line, policy)
    return own, found


#: The last command line `_redacted_argv` found nothing to redact in, and its policy.
_CLEAN_ARGV: list[tuple[tuple[str, ...], SecretPolicy] | None] = [None]
