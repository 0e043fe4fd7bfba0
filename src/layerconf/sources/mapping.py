"""A plain mapping as a source: values a program already holds, as one layer."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import attrs

from layerconf.core.checks import check_type, typed
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.records import Layer
from layerconf.core.suggest import Suggestions
from layerconf.exceptions import Problem
from layerconf.sources.base import Reading

__all__ = ["MappingSource"]


def _values(values: Mapping[str, Any]) -> Mapping[str, Any]:
    check_type("MappingSource", "values", values, Mapping, "a mapping of key to value")
    return dict(values)


@attrs.frozen
class MappingSource:
    """`values` as the layer `name`; `source` names where they came from (a file, a service).

    The values are taken as they are: nothing is converted (add a `TypeCoercion` rule on the
    layer for that). A key that is no dest of the parser is set all the same, and said: a
    warning with a did-you-mean when it is close to a dest (a misspelt key leaves the dest it
    meant as it was), else a note.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    name: str = attrs.field(validator=typed(str, "a layer name (str)"))
    values: Mapping[str, Any] = attrs.field(converter=_values)
    source: str | None = None

    def read(self, parser: argparse.ArgumentParser) -> Reading:
        layer = Layer.from_mapping(self.name, self.values, source=self.source)
        dests = {action.dest for action in parser._actions if action.dest != argparse.SUPPRESS}
        suggest = Suggestions(dests)  # (bounded per reading: see SUGGESTED)
        problems = [self._unknown(key, suggest) for key in sorted(layer.values) if key not in dests]
        return Reading(layer, problems)

    def _unknown(self, key: str, suggest: Suggestions) -> Problem:
        close = suggest(key)
        if close is None:
            message = f"{key!r} is not an argument of this parser; it is set as it is"
            return Problem(message, key=key, layer=self.name, source=self.source, severity="info")
        return Problem(
            f"{key!r} is not an argument of this parser (did you mean {close!r}?)",
            key=key,
            layer=self.name,
            source=self.source,
            hint="it is set as it is",
            severity="warning",
        )
