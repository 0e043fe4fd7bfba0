"""Everything layerconf raises or warns, and the `Problem` record each of them carries.

Every problem knows where it happened (key, layer, file:line:column or argv index) as
attributes, not only in its text, so tools can annotate the exact spot.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

import attrs

from layerconf.core.checks import typed
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.records import short_location
from layerconf.core.suggest import suggestion

if TYPE_CHECKING:
    from layerconf.core.records import Origin

__all__ = [
    "AuditError",
    "ConfigError",
    "FrozenNamespaceError",
    "LayerconfError",
    "LayerconfWarning",
    "NoProvenanceError",
    "Problem",
    "RuleError",
    "Severity",
    "UnknownKeyError",
    "UnknownProfileError",
]

Severity = Literal["error", "warning", "info"]
_SEVERITIES = ("error", "warning", "info")


def _severity(_: object, __: object, severity: object) -> None:
    if severity not in _SEVERITIES:
        raise ValueError(
            f"a problem's severity is 'error', 'warning' or 'info' (got {severity!r:.40})"
        )


@attrs.frozen
class Problem:
    """One thing wrong (or worth saying) about a configuration, with where it is.

    `str(problem)` is one compiler-style line: ``critic.yaml:9:11: error: message (hint)``;
    a command-line problem reads ``argv[7]: error: ...``.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    message: str = attrs.field(validator=typed(str, "a str"))
    key: str | None = None
    layer: str | None = None
    source: str | None = None
    line: int | None = None
    column: int | None = None
    argv_index: int | None = None
    hint: str | None = attrs.field(
        default=None, validator=typed((str, type(None)), "a str or None")
    )
    severity: Severity = attrs.field(default="error", validator=_severity)
    rule: str | None = None

    @classmethod
    def at(
        cls,
        origin: Origin | None,
        message: str,
        *,
        key: str | None = None,
        hint: str | None = None,
        severity: Severity = "error",
        rule: str | None = None,
    ) -> Problem:
        """A problem located where `origin` points (a file position, an argv token, a layer)."""
        if origin is None:
            return cls(message, key=key, hint=hint, severity=severity, rule=rule)
        return cls(
            message,
            key=key,
            layer=origin.layer,
            source=origin.source,
            line=origin.line,
            column=origin.column,
            argv_index=origin.argv_index,
            hint=hint,
            severity=severity,
            rule=rule,
        )

    @property
    def location(self) -> str:
        """``file:line:col``, ``file:line``, ``file``, ``argv[N]``, the layer's name, or ``""``."""
        return short_location(self.source, self.line, self.column, self.argv_index, self.layer)

    def __str__(self) -> str:
        return self.formatted(self.severity)

    def formatted(self, severity: str) -> str:
        """`str(problem)` with `severity` written in place of the severity word, as given (the
        command paints it, and says ``note`` for ``info``); the location, message and hint
        escaped by `one_line`."""
        text = f"{severity}: {one_line(self.message)}"
        if self.hint:
            text += f" ({one_line(self.hint)})"
        where = one_line(self.location)
        return f"{where}: {text}" if where else text


def one_line(text: str) -> str:
    """`text` as one line shows it, whatever a rule quoted in it: each character that is not
    printable (a line break, ESC, a C1 control, U+2028, a bidi override) written as repr()
    writes it, so that a value can neither forge another problem's line nor reach the
    terminal as a control sequence."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


class LayerconfError(Exception):
    """The base of every exception layerconf raises on purpose."""


class ConfigError(LayerconfError, ValueError):
    """A configuration cannot be resolved; `.problems` holds every problem found, in order.

    Warnings found in the same resolution are kept in `.problems` too (with
    ``severity == "warning"``), so one report shows everything at once.
    """

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        if not self.problems:
            raise ValueError("ConfigError needs at least one problem")
        super().__init__("\n".join(str(p) for p in self.problems))

    @property
    def errors(self) -> tuple[Problem, ...]:
        """Only the problems of severity ``error``."""
        return tuple(p for p in self.problems if p.severity == "error")

    def __reduce__(self) -> tuple[type[ConfigError], tuple[tuple[Problem, ...]]]:
        return (type(self), (self.problems,))


class AuditError(LayerconfError, ValueError):
    """An audit record cannot be read or replayed; `.path` names the file when there is one,
    `.line` and `.column` the place in it when the problem has one (JSON that is not valid)."""

    def __init__(
        self,
        message: str,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.path = path
        self.line = line  # (1-based, where in the file the problem is, when known)
        self.column = column
        where = path if line is None else f"{path}:{line}:{column}"
        super().__init__(f"{where}: {message}" if path else message)
        self.message = message

    def __reduce__(self) -> tuple[type[AuditError], tuple[Any, ...]]:
        return (type(self), (self.message, self.path, self.line, self.column))


class RuleError(LayerconfError, TypeError):
    """A rule is not usable: it was rejected when registered, or it returned something invalid."""


class UnknownKeyError(LayerconfError, KeyError):
    """A key that the namespace does not hold; the message suggests the closest one."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownProfileError(LayerconfError, LookupError):
    """`load_profile` was asked for a profile that is not bundled.

    `.name` is the name asked for; `.available` lists the bundled profiles.
    """

    def __init__(self, name: str, available: tuple[str, ...]) -> None:
        self.name = name
        self.available = available
        listed = ", ".join(repr(profile) for profile in available)
        super().__init__(
            f"unknown profile {name!r} (available: {listed}){suggestion(name, available)}"
        )

    def __reduce__(self) -> tuple[type[UnknownProfileError], tuple[str, tuple[str, ...]]]:
        return (type(self), (self.name, self.available))


class NoProvenanceError(LayerconfError, TypeError):
    """`explain` was given a namespace that carries no provenance."""


class FrozenNamespaceError(LayerconfError, AttributeError):
    """A write to a frozen namespace (`layerconf.freeze`): an `AttributeError`, as Python's
    own frozen dataclasses and attrs classes raise.

    `.key` is the attribute, `.source` and `.line` the file and line of the write.
    """

    def __init__(self, message: str, *, key: str, source: str, line: int) -> None:
        super().__init__(message)
        self.key = key
        self.source = source
        self.line = line

    def __reduce__(self) -> tuple[Any, ...]:
        return (_frozen_error, (str(self), self.key, self.source, self.line))


def _frozen_error(message: str, key: str, source: str, line: int) -> FrozenNamespaceError:
    return FrozenNamespaceError(message, key=key, source=source, line=line)


class LayerconfWarning(UserWarning):
    """A configuration warning (an ignored key, an unused role, ...).

    Turn these into errors with ``warnings.simplefilter("error", LayerconfWarning)``.
    """
