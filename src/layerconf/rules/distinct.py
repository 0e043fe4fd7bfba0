"""Keys no two roles may share, such as the directory each role writes its checkpoints to.

slime's critic saves with ``args.save`` unless its role entry overrides ``save``: with one
``--save`` for the run and no such override, actor and critic write their checkpoints to one
directory and overwrite each other's (`layerconf.presets.slime.DISTINCT_KEYS`).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

import attrs

from layerconf.core.checks import check_iterable
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.rules import Decision, RuleContext
from layerconf.core.values import same_value, value_text
from layerconf.exceptions import Problem
from layerconf.rules.topology import short_origin

__all__ = ["DistinctAcrossRoles"]


def _keys(keys: Iterable[str]) -> tuple[str, ...]:
    check_iterable("DistinctAcrossRoles", "keys", keys, "a sequence of keys such as ('save',)")
    return tuple(keys)


def _path(text: str) -> str:
    """`text` as the directory it names: a relative path is read from the current directory,
    as a trainer launched from it reads it (a role file's own path is read from there too);
    ``//ckpt`` is ``/ckpt``, as Linux reads it (`posixpath.normpath` keeps the two slashes)."""
    if not posixpath.isabs(text):
        with contextlib.suppress(OSError):  # the current directory was removed
            text = posixpath.join(os.getcwd(), text)
    text = posixpath.normpath(text)
    return text[1:] if text.startswith("//") else text


@attrs.frozen
class DistinctAcrossRoles:
    """After every role is resolved, no two roles may have the same value at any of `keys`.

    None (the key not set) is never a conflict. With `paths`, strings are compared as paths
    (``/ckpt/`` is ``/ckpt``; a relative one is read from the current directory). `when`
    (given the context) says whether the check applies to this run at all (slime's: only when
    a critic runs). `because` says why in the message.
    ``error`` (default) refuses a shared value, ``warn`` only says so, ``off`` checks nothing.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    keys: tuple[str, ...] = attrs.field(converter=_keys)
    because: str = "each role must have its own"
    paths: bool = False
    when: Callable[[RuleContext], bool] | None = attrs.field(default=None, eq=False)
    action: Literal["error", "warn", "off"] = attrs.field(
        default="error", validator=attrs.validators.in_(("error", "warn", "off"))
    )
    name: str = "distinct-across-roles"
    stage: Literal["roles"] = "roles"

    def __call__(self, context: RuleContext) -> Iterator[Decision]:
        if self.action == "off" or len(context.roles) < 2:
            return
        if self.when is not None and not self.when(context):
            return
        for key in self.keys:
            seen: list[tuple[str, Any]] = []
            for role, args in context.roles.items():
                value = getattr(args, key, None)
                if value is None:
                    continue
                earlier = next((first for first, v in seen if self._same(v, value)), None)
                if earlier is None:
                    seen.append((role, value))
                else:
                    yield self._shared(context, key, earlier, role)

    def _same(self, first: Any, second: Any) -> bool:
        if self.paths and isinstance(first, str) and isinstance(second, str):
            return _path(first) == _path(second)
        return same_value(first, second, copied=False)

    def _shared(self, context: RuleContext, key: str, first: str, second: str) -> Problem:
        one, other = context.explain(key, first), context.explain(key, second)
        # Point at a role file when one is to blame: that is what the user edits.
        blamed, role = (one, first) if one.origin.kind == "file" else (other, second)
        secrets = context.secrets
        value = secrets.redact(key, blamed.value)  # a URL's password is never quoted
        suggested = f"{value.rstrip('/')}_{role}" if isinstance(value, str) else "another value"
        if not _plain(suggested):  # quoted as YAML reads it back (JSON is YAML)
            import json

            suggested = json.dumps(suggested, ensure_ascii=False)  # (the line escapes the rest)
        # The problem is located at the blamed value: only the other one's place is named.
        unblamed, elsewhere = (second, other) if blamed is one else (first, one)
        if elsewhere.origin == blamed.origin:
            where = "set once, here, for both"
        else:
            where = f"{role} here, {unblamed} from {short_origin(elsewhere.origin)}"
        return Problem.at(
            blamed.origin,
            f"{first} and {second} share {key}={value_text(secrets.redact(key, other.value))} "
            f"({where}): {self.because}",
            key=key,
            hint=f"give each role its own: under the {role} entry of the role file write "
            f"'{key}: {suggested}'",
            severity="error" if self.action == "error" else "warning",
        )


#: What a path may hold and still be written bare in YAML (``/ckpt/critic``, ``run-1_actor``).
_PLAIN_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+-")


def _plain(text: str) -> bool:
    """Whether `text` reads back from YAML as itself, written bare after ``key: ``."""
    return text[:1] not in ("", "-", "+", ".") and _PLAIN_CHARACTERS.issuperset(text)
