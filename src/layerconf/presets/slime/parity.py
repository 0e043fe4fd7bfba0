"""What slime's own ``parse_megatron_role_args`` sets from a role file, and where layerconf differs.

slime sets each override as YAML read it, with one conversion: a string over a command-line
value that is an int or a float becomes ``type(value)(string)``, and stays the string when that
fails. `slime_value` is that conversion, the one copy of it: the drop-in
(`layerconf.compat.slime`) computes slime's values with it, and `SlimeParity` warns where a
value slime's unmodified trainer would get is not the one layerconf resolves (``1e-2`` over a
dest the command line leaves at None: slime sets the string ``'1e-2'``, layerconf the float).
"""

from __future__ import annotations

import argparse
import functools
import math
from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

import attrs

from layerconf.core.checks import typed
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.records import Layer
from layerconf.core.rules import Decision, RuleContext
from layerconf.core.secrets import SECRETS, scrub_text, shows_secret
from layerconf.core.values import TEXTLESS_TYPES, same_value, value_text
from layerconf.exceptions import Problem
from layerconf.rules.coercion import spec_of

__all__ = ["SlimeParity", "base_values", "quoted", "slime_value"]


def slime_value(original: Any, value: Any) -> tuple[Any, type[Any] | None]:
    """The value slime sets for a role file's `value` over the command line's `original`, and
    the type it converts to: ``type(original)`` for a string over an int or a float (a bool
    too: ``bool('false')`` is True), None when slime sets `value` as written. A string that
    type refuses (``int('1e3')``) is returned itself: slime keeps it."""
    if not isinstance(value, str) or not isinstance(original, (int, float)):
        return value, None
    kind = type(original)
    try:
        return kind(value), kind
    except (ValueError, TypeError):
        return value, kind


def base_values(layers: tuple[Layer, ...], role_layer: str) -> Mapping[str, Any]:
    """The values below the role file: what slime's namespace holds before its overrides."""
    below = [layer.values for layer in layers if layer.name != role_layer]
    if len(below) == 1:  # a plain namespace: one base layer
        return below[0]
    return ChainMap(*reversed(below))


def quoted(key: str, value: Any) -> str:
    """`value` of `key` as a message may quote it: never a secret's, nor text that shows one."""
    text = value_text(value)
    if SECRETS.is_secret(key) or shows_secret(value if isinstance(value, str) else text):
        return SECRETS.placeholder
    return text


@attrs.frozen
class SlimeParity:
    """A ``layers`` rule: a warning for each value of the role layer that slime's own
    ``parse_megatron_role_args`` would set otherwise than layerconf resolves it (`slime_value`
    against `parser`'s conversion), saying what to write so that both agree.

    Runs before the conversion, on the values as YAML read them. A value layerconf refuses is
    left to `TypeCoercion`'s error; an int where layerconf resolves the equal float is no
    difference (Python computes the same with either).
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    parser: argparse.ArgumentParser = attrs.field(
        validator=typed(argparse.ArgumentParser, "an argparse.ArgumentParser")
    )
    layer: str = "role-config"
    name: str = "slime-parity"
    stage: Literal["layers"] = "layers"

    def __call__(self, context: RuleContext) -> Iterator[Decision]:
        layer = context.layer(self.layer)
        if layer is None:
            return
        base = base_values(context.layers, self.layer)
        hidden: list[str] | None = None  # the layer's secrets, found at the first warning
        for key, value in layer.values.items():
            if key not in base:  # unknown: UnknownKeys says so (slime sets it as written)
                continue
            ours = self._resolved(key, value)
            if ours is _REFUSED:
                continue
            original = base[key]
            slime, kind = slime_value(original, value)
            if not _agree(slime, ours):
                if hidden is None:
                    hidden = SECRETS.texts_among(layer.values)
                yield self._warning(layer, key, (value, original, slime, kind, ours), hidden)

    def _resolved(self, key: str, value: Any) -> Any:
        """`value` as layerconf converts it, or `_REFUSED`."""
        spec = spec_of(self.parser, key)
        if spec is None:  # a dest layerconf leaves alone
            return value
        failures: list[Any] = []
        result = spec.coerce(value, failures)
        return _REFUSED if failures else result

    def _warning(
        self,
        layer: Layer,
        key: str,
        values: tuple[Any, Any, Any, type[Any] | None, Any],
        hidden: list[str],
    ) -> Problem:
        """The warning for `key`, from its `values`: the role file's, the command line's,
        slime's (with the type slime converts to, or None) and layerconf's; without the text of
        `hidden`, the layer's secrets (another key's, pasted into this one)."""
        value, original, slime, kind, ours = values
        shown: Callable[[Any], str] = functools.partial(quoted, key)
        if type(ours) not in _TEXTLESS and SECRETS.redact(key, ours) is not ours:
            # layerconf's value holds a secret (a field the parser's type made of the text):
            # the text it was made of shows it in a form only that type knows
            shown = _placeholder
        if not isinstance(value, str):
            why = "slime sets the value as YAML read it"
        elif kind is None:
            why = (
                "slime converts a string only when the command line's value is an int or a "
                f"float (here {_kind(original)})"
            )
        elif slime is value:
            why = (
                f"{kind.__name__}({shown(value)}) fails, {kind.__name__} being the type "
                "of the command line's value"
            )
        else:
            why = f"slime converts it to {kind.__name__}, the command line's type"
        message = (
            f"{key!r}: slime's own parse_megatron_role_args sets the {_kind(slime)} "
            f"{shown(slime)}, layerconf resolves the {_kind(ours)} {shown(ours)}: "
            f"{why}"
        )
        hint = self._hint(key, original, ours)
        if hidden:
            message, hint = scrub_text(message, hidden), scrub_text(hint, hidden)
        return Problem.at(
            layer.origin_at((key,)), message, key=key, hint=hint, severity="warning", rule=self.name
        )

    def _hint(self, key: str, original: Any, ours: Any) -> str:
        """What to write so that both set `ours`: its YAML text, when slime keeps that; else
        the command line, where argparse converts the value."""
        text = _yaml_text(ours)
        if text is not None and _agree(slime_value(original, ours)[0], self._resolved(key, ours)):
            if SECRETS.is_secret(key) or shows_secret(text):
                how = "quote the value" if type(ours) is str else f"write the {_kind(ours)}"
                return f"{how} so that YAML reads it as the {_kind(ours)}, and both agree"
            return f"write {text}, which YAML reads as the {_kind(ours)}, so that both agree"
        spec = spec_of(self.parser, key)
        flag = spec.item.flag if spec is not None else key
        return (
            f"no role-file value makes slime's function set it: set {flag} on the command "
            "line, where argparse converts it (for both roles)"
        )


_REFUSED = object()
_TEXTLESS = TEXTLESS_TYPES


def _placeholder(value: Any) -> str:
    """What a message quotes of a value made into a secret's: the placeholder."""
    return SECRETS.placeholder


def _kind(value: Any) -> str:
    """What `value` is, in a sentence: None, a "string", "float", an enum's class name..."""
    if value is None:
        return "None"
    return "string" if type(value) is str else type(value).__name__


def _agree(slime: Any, ours: Any) -> bool:
    """Whether slime's value is layerconf's: the same (type and value), or an int where
    layerconf has the equal float, item by item in a list."""
    if type(ours) is float and type(slime) is int:
        return slime == ours
    if type(ours) is list and type(slime) is list and len(ours) == len(slime):
        return all(map(_agree, slime, ours))
    return same_value(slime, ours, copied=False)


def _yaml_text(value: Any) -> str | None:
    """`value` as YAML 1.1 (PyYAML's safe_load) reads it back, or None: no such short text."""
    if value is None:
        return "null"
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value) if abs(value) < 10**30 else None
    if type(value) is float:
        return _float_text(value)
    if type(value) is str:
        if len(value) > 60 or not value.isprintable():
            return None
        return "'" + value.replace("'", "''") + "'"
    if type(value) is list:
        if len(value) > 10:
            return None
        items = [_yaml_text(item) for item in value]
        if None in items:
            return None
        return "[" + ", ".join(items) + "]"  # type: ignore[arg-type]
    if type(value) is dict:
        if len(value) > 10:
            return None
        pairs = [(_yaml_text(name), _yaml_text(item)) for name, item in value.items()]
        if any(None in pair for pair in pairs):
            return None
        return "{" + ", ".join(f"{name}: {item}" for name, item in pairs) + "}"
    return None


def _float_text(value: float) -> str:
    """A float's text that YAML 1.1 reads as a float: a dot in the mantissa (``1e-05`` is a
    string to it, ``1.0e-05`` the float), ``.inf`` and ``.nan``."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent
