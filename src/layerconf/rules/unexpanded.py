"""The unexpanded-text rule: what a shell would have expanded, written in a file no shell reads.

On the command line, ``--save ${SAVE_DIR}/actor`` and ``--load ~/ckpt`` reach the trainer as
the shell expanded them. In a role file they stay as written: slime reads it with
``yaml.safe_load`` and sets the text, and Megatron saves into a directory literally named
``${SAVE_DIR}`` (or ``~``) under the working directory. The rule finds, in the strings of one
layer (inside lists and mappings too), a variable (``$NAME``, ``${NAME}``, ``$1``), a command
substitution (``$(...)``) or a leading ``~``, and says so at the value's file:line.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

import attrs

from layerconf.core.checks import typed
from layerconf.core.lazy import LazyPattern, record_eq, record_hash, record_repr
from layerconf.core.rules import Decision, RuleContext
from layerconf.core.secrets import SECRETS, scrub_text, shows_secret
from layerconf.core.values import shorten
from layerconf.exceptions import Problem

__all__ = ["UnexpandedText"]

# A variable, a command substitution, or a home directory at the start (~, ~/x, ~user/x).
_SHELL = LazyPattern(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\{?[0-9]\}?|\$\(|^~[A-Za-z0-9._-]*(?=/|$)")
#: How deep into lists and mappings strings are looked for (a role file's values are shallow).
_DEPTH = 8


@attrs.frozen
class UnexpandedText:
    """A string of `layer` that holds shell syntax (``$NAME``, ``${NAME}``, ``$(...)``, a
    leading ``~``): ``warn`` (default) or ``error``; ``off`` looks for nothing."""

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    layer: str = attrs.field(default="role-config", validator=typed(str, "a layer name (str)"))
    action: Literal["warn", "error", "off"] = attrs.field(
        default="warn", validator=attrs.validators.in_(("warn", "error", "off"))
    )
    name: str = "unexpanded-text"
    stage: Literal["layers"] = "layers"

    def __call__(self, context: RuleContext) -> Iterator[Decision]:
        layer = context.layer(self.layer)
        if layer is None or self.action == "off":
            return
        hidden: list[str] | None = None
        secrets = context.secrets
        for key, value in layer.values.items():
            found = next(_shell_syntax(value, _DEPTH, secrets.is_secret(key)), None)
            if found is None:
                continue
            text, syntax, secret = found
            if hidden is None:  # the secrets of the layer, not to be quoted anywhere
                hidden = secrets.texts_among(layer.values)
            if secret or shows_secret(text):
                message = f"{key!r} holds shell syntax ($NAME, ${{NAME}}, $(...) or ~; not shown: "
                message += "a secret's value): no shell reads a role file, so it stays as written"
            else:
                # The text scrubbed whole, then shortened (a secret cut short is no longer
                # found: its start would show); its variable's name, in the message.
                shown = shorten(scrub_text(repr(text), hidden))
                message = scrub_text(
                    f"{key!r} holds {shown}: no shell reads a role file, so {_meaning(syntax)}",
                    hidden,
                )
            yield Problem.at(
                layer.origin_at((key,)),
                message,
                key=key,
                hint="write the value out in full; the shell expands it only on the command line",
                severity="warning" if self.action == "warn" else "error",
                rule=self.name,
            )


def _shell_syntax(value: Any, depth: int, secret: bool) -> Iterator[tuple[str, str, bool]]:
    """Each string in `value` that holds shell syntax, the syntax found, and whether the string
    is a secret's (`secret`: under a secret key, at the top or in a mapping on the way)."""
    if isinstance(value, str):
        if "$" in value or value[:1] == "~":  # (most strings: no pattern compiled or run)
            match = next(_SHELL.finditer(value), None)
            if match is not None:
                yield value, match.group(), secret
    elif depth and isinstance(value, (list, tuple)):
        for item in value:
            yield from _shell_syntax(item, depth - 1, secret)
    elif depth and isinstance(value, Mapping):
        for name, item in value.items():
            inner = secret or (isinstance(name, str) and SECRETS.is_secret(name))
            yield from _shell_syntax(item, depth - 1, inner)


def _meaning(syntax: str) -> str:
    if syntax.startswith("~"):
        return f"{syntax!r} is a directory of that name, not a home directory"
    if syntax == "$(":
        return "$(...) stays as written: the command is not run"
    return f"{syntax} stays as written, not the variable's value"
