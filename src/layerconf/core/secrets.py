"""Which keys hold credentials, and how their values are kept out of every record.

A key is a secret by its name alone (``wandb_key``, ``*_api_key``, ``hf_token``...), whatever
spelling it arrives in: a dest (``wandb_key``), a flag (``--wandb-key``), an environment
variable inside a mapping value (``HF_TOKEN``) or the last part of a dotted path
(``train_env_vars.HF_TOKEN``). Ordinary keys that merely mention keys or tokens
(``input_key``, ``fim_pad_token``, ``max_tokens_per_gpu``) are not secrets.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from layerconf.core.values import MAX_INT_BITS

__all__ = [
    "REDACTED",
    "SECRETS",
    "SecretPolicy",
    "is_secret",
    "redact",
    "redact_argv",
    "secret_texts",
]

#: What a secret's value is replaced with.
REDACTED = "<redacted>"


def _normalize(name: str) -> str:
    """``--Wandb-Key`` -> ``wandb_key``; ``a.b.HF_TOKEN`` -> ``hf_token``."""
    return name.rsplit(".", 1)[-1].lstrip("-").replace("-", "_").lower()


def _names(names: Iterable[str]) -> frozenset[str]:
    if isinstance(names, str):
        raise TypeError(f"names must be a collection of names, not one string ({names!r})")
    return frozenset(_normalize(name) for name in names)


def _suffixes(suffixes: Iterable[str]) -> tuple[str, ...]:
    if isinstance(suffixes, str):
        raise TypeError(f"suffixes must be a collection of suffixes, not one string ({suffixes!r})")
    return tuple(sorted({suffix.replace("-", "_").lower() for suffix in suffixes}))


_DEFAULT_NAMES = (
    "wandb_key",
    "hf_token",
    "hub_token",
    "api_key",
    "apikey",
    "password",
    "passwd",
    "secret",
    "secret_key",
    "access_token",
    "auth_token",
    "private_key",
)
_DEFAULT_SUFFIXES = (
    "_api_key",
    "_apikey",
    "_secret",
    "_secret_key",
    "_password",
    "_passwd",
    "_access_token",
    "_auth_token",
    "_private_key",
    "_access_key",
)


@attrs.frozen(cache_hash=True)
class SecretPolicy:
    """Which keys hold credentials: exact `names` and name `suffixes`, compared normalized.

    A name is normalized before it is compared: the last part of a dotted path, leading dashes
    dropped, ``-`` read as ``_``, lower case. Extend the default with
    ``SECRETS.extend(names=["my_token"])`` and pass the result where a policy is taken.
    `min_scrub_length`: a secret value at least this long is also searched for in free text
    (argv tokens, notices, other values) and replaced there; a shorter one is redacted only
    where it is a secret key's value, so that a secret such as ``"1"`` cannot wreck the text.
    """

    names: frozenset[str] = attrs.field(default=_DEFAULT_NAMES, converter=_names)
    suffixes: tuple[str, ...] = attrs.field(default=_DEFAULT_SUFFIXES, converter=_suffixes)
    placeholder: str = REDACTED
    min_scrub_length: int = attrs.field(default=6, validator=attrs.validators.ge(1))

    def is_secret(self, key: str) -> bool:
        """Whether `key` (a dest, a flag, a dotted path, an environment variable) is a secret."""
        if not isinstance(key, str):
            return False
        return _is_secret(self, key)

    def redact(self, key: str, value: Any) -> Any:
        """`value` with every secret replaced by the placeholder.

        The value of a secret key becomes the placeholder (None stays None: an unset secret
        reveals nothing); inside mappings and lists, the values of secret keys are replaced
        (``{"HF_TOKEN": "hf_x"}`` -> ``{"HF_TOKEN": "<redacted>"}``).
        """
        if self.is_secret(key):
            return None if value is None else self.placeholder
        return self._redact_inside(value)

    def _redact_inside(self, value: Any) -> Any:
        """`value` with the secrets inside it replaced; `value` itself when it holds none."""
        if isinstance(value, Mapping):
            mapping = {name: self.redact(name, item) for name, item in value.items()}
            if all(mapping[name] is item for name, item in value.items()):
                return value
            return mapping
        if type(value) is list or type(value) is tuple:
            items = [self._redact_inside(item) for item in value]
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            return type(value)(items)
        return value

    def extend(self, *, names: Iterable[str] = (), suffixes: Iterable[str] = ()) -> SecretPolicy:
        """A policy that also treats `names` and `suffixes` as secrets."""
        return attrs.evolve(
            self,
            names=self.names | _names(names),
            suffixes=(*self.suffixes, *_suffixes(suffixes)),
        )


@functools.lru_cache(maxsize=16384)
def _is_secret(policy: SecretPolicy, key: str) -> bool:
    # Cached: an audit asks about every key of every role, and keys repeat across calls.
    name = _normalize(key)
    return name in policy.names or name.endswith(policy.suffixes)


#: The default policy.
SECRETS = SecretPolicy()


def is_secret(key: str, policy: SecretPolicy = SECRETS) -> bool:
    """Whether `key` holds a credential under `policy` (``wandb_key``, ``--hf-token``...)."""
    return policy.is_secret(key)


def redact(key: str, value: Any, policy: SecretPolicy = SECRETS) -> Any:
    """`value` as it may be shown for `key`: a secret becomes ``"<redacted>"``.

    Secrets nested in a mapping value are replaced too; a value that holds none is returned
    as it is.
    """
    return policy.redact(key, value)


def secret_texts(value: Any) -> list[str]:
    """The text of a secret's value, to search for and scrub elsewhere (argv, notices).

    Strings and ints, also inside mappings, lists, tuples and sets; an int too long to print
    (Python refuses more than 4,300 digits) is left out.
    """
    found: list[str] = []
    kind = type(value)
    if kind is str:
        found.append(value)
    elif kind is int and value.bit_length() <= MAX_INT_BITS:
        found.append(str(value))
    elif isinstance(value, Mapping):
        for item in value.values():
            found.extend(secret_texts(item))
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            found.extend(secret_texts(item))
    return found


def redact_argv(argv: Sequence[str], policy: SecretPolicy = SECRETS) -> tuple[list[str], list[str]]:
    """`argv` with the value of every secret flag replaced, and the values it replaced.

    Both spellings are handled: ``--wandb-key xyz`` and ``--wandb-key=xyz``. The token after a
    secret flag is taken as its value unless it is itself an option (argparse would not have
    taken it as the value either).
    """
    redacted: list[str] = []
    found: list[str] = []
    pending = False
    for token in argv:
        if pending and not _is_option(token):
            found.append(token)
            redacted.append(policy.placeholder)
            pending = False
            continue
        pending = False
        if token.startswith("-") and len(token) > 1:
            name, equals, value = token.partition("=")
            if policy.is_secret(name):
                if equals:
                    found.append(value)
                    token = f"{name}={policy.placeholder}"
                else:
                    pending = True
        redacted.append(token)
    return redacted, found


def _is_option(token: str) -> bool:
    """What argparse would not take as a flag's value: ``--x``, ``-x`` (not ``-1``)."""
    if not token.startswith("-") or token == "-":
        return False
    try:
        float(token)
    except ValueError:
        return True
    return False
