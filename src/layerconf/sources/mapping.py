"""A plain mapping as a source: values a program already holds, as one layer."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import attrs

from layerconf.core.records import Layer
from layerconf.sources.base import Reading

__all__ = ["MappingSource"]


def _values(values: Mapping[str, Any]) -> Mapping[str, Any]:
    return dict(values)


@attrs.frozen
class MappingSource:
    """`values` as the layer `name`; `source` names where they came from (a file, a service).

    The values are taken as they are: nothing is converted (add a `TypeCoercion` rule on the
    layer for that).
    """

    name: str
    values: Mapping[str, Any] = attrs.field(converter=_values)
    source: str | None = None

    def read(self, parser: argparse.ArgumentParser) -> Reading:
        del parser  # the values are already what they are
        return Reading(Layer.from_mapping(self.name, self.values, source=self.source))
