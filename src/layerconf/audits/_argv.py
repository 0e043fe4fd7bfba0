"""The command line an audit record keeps: redacted under the record's secret policy.

A provenance keeps the command line as its resolution showed it: redacted under that
resolution's policy, with the parser at hand to tell an abbreviation (``--wandb-k``), an alias
(``-k``) or a short cluster (``-kS``) from other tokens. A record's policy may name more
secrets, and the parser is gone by then: `kept_argv` redacts by the flags' names
(`redact_argv` without a parser), then where the provenance says a value came from. A token
the provenance says a key that is no secret's took as its own (a positional's, after a flag
named like a secret's that takes no value: ``--use-auth-token data.txt``) stays as written
(`keep_own_tokens`): by its name alone it looked like that flag's value. A key the
record's policy names a secret's, set by the flag at ``argv[i]``, has its value hidden there,
however that flag was spelt: in the flag's own token (``--my-cr=S``, ``-kS``), in the tokens
after it that it took (whatever their text), or a positional's own token (`_hide`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from layerconf.core.namespace import Provenance
from layerconf.core.secrets import SecretPolicy, redact_argv, secret_texts

__all__ = ["keep_own_tokens", "kept_argv"]


def kept_argv(
    command_line: Any, provenance: Provenance, policy: SecretPolicy
) -> tuple[list[str], list[str]]:
    """`command_line` as a record under `policy` keeps it, and the secret texts it hid."""
    own, found = _redacted_argv(command_line, policy)
    if found:
        owners = [
            (path[0], origin.argv_index, origin.token)
            for layer in provenance.layers
            if layer.kind == "argv"
            for path, origin in layer.origins.items()
            if len(path) == 1 and origin.source is None
        ]
        keep_own_tokens(command_line, own, found, owners, policy)
    for index, value in _secret_flags(provenance, policy):
        _hide(own, index, value, policy.placeholder, found)
    return own, found


def keep_own_tokens(
    command_line: Any,
    own: list[str],
    found: list[str],
    owners: Iterable[tuple[str, Any, Any]],
    policy: SecretPolicy,
) -> None:
    """Give back in `own` (`command_line` redacted by the flags' names) each token hidden
    whole that one of `owners` (key, argv index, token: what set a value) says is the own
    token of a key `policy` names no secret's, and take its text out of `found`.

    Without the parser, a flag named like a secret's is taken to take the token after it; one
    that takes none (``--use-auth-token``, a ``store_true``) is followed by another key's
    token (a positional's), which the provenance names: not a secret, and not to be scrubbed
    from the record's values (replay would refuse them)."""
    placeholder = policy.placeholder
    for key, index, token in owners:
        if (
            type(index) is int
            and 0 <= index < len(own)
            and own[index] == placeholder
            and command_line[index] == token != placeholder
            and not policy.is_secret(key)
        ):
            own[index] = token
            if token in found:
                found.remove(token)


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


def _hide(own: list[str], index: int, value: Any, placeholder: str, found: list[str]) -> None:
    """Hide `value`, which the token at `own[index]` set, where the command line shows it:

    - a positional (the token is no flag: it does not start with punctuation): that token;
    - ``--flag=S`` (a flag's token holding ``=``): what follows the ``=``;
    - ``-kS`` (a short flag with more after it, ``+kS`` with another prefix): what follows
      ``-k``;
    - else ``--flag S [S2 ...]``: as many of the tokens after it as the value has items (one
      for a scalar), that are no flags, whatever their text (a type may have read ``0x1f`` as
      31).
    """
    if not 0 <= index < len(own):
        return
    # What is hidden goes to `found` (scrubbed from the whole record) only if it is the value's
    # text: a token hidden for safety (a value read from '0x1f', a list's count) is not.
    texts = set(secret_texts(value))
    token = own[index]
    if not texts or placeholder in token:
        return  # no text to hide (a flag's True, None), or hidden by the resolution already
    if not token or token[0].isalnum() or token[0] == "_":  # a positional's own token
        own[index] = placeholder
        found.extend(texts.intersection([token]))
        return
    prefix = token[0]
    if "=" in token:
        cut = token.index("=") + 1
    elif len(token) > 2 and token[1] != prefix:  # a short flag with its value attached
        cut = 2
    else:
        cut = 0
    if cut:
        own[index] = token[:cut] + placeholder
        found.extend(texts.intersection([token[cut:]]))
        return
    count = len(value) if type(value) in (list, tuple) else 1
    for offset in range(index + 1, min(index + 1 + count, len(own))):
        shown = own[offset]
        if len(shown) > 1 and shown[0] == prefix and not _number(shown):
            break  # the next flag: the value had fewer tokens
        found.extend(texts.intersection([shown]))
        own[offset] = placeholder


def _number(token: str) -> bool:
    """Whether `token` reads as a number (``-1``, ``-2.5``): a value, not a flag."""
    try:
        float(token)
    except ValueError:
        return False
    return True


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
