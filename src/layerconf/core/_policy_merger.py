"""deepmerge, asked where `merge_layers` merges nested containers.

A separate module so that deepmerge is imported on the first merge of two containers, not with
the core: most resolutions merge none (a role file's overrides are plain values), and importing
deepmerge costs a process about 2 ms of its start.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deepmerge import Merger
from deepmerge.strategy.dict import DictStrategies
from deepmerge.strategy.list import ListStrategies

from layerconf.core.merge import Policy, merges_into
from layerconf.core.records import Path

__all__ = ["PolicyMerger"]


class PolicyMerger(Merger):
    """A deepmerge Merger that merges where `merges_into` says so, with deepmerge's strategies."""

    def __init__(self, policies: Mapping[Path, Policy]) -> None:
        self._policies = policies
        super().__init__(
            [(dict, [self._merge_dicts]), (list, [self._merge_lists])],
            ["override"],
            ["override"],
        )

    def _merge_dicts(
        self, merger: Merger, path: list[str], base: dict[Any, Any], nxt: dict[Any, Any]
    ) -> Any:
        if merges_into(base, nxt, self._policies.get(tuple(path))):
            return DictStrategies.strategy_merge(merger, path, base, nxt)
        return nxt

    def _merge_lists(self, merger: Merger, path: list[str], base: list[Any], nxt: list[Any]) -> Any:
        if merges_into(base, nxt, self._policies.get(tuple(path))):
            return ListStrategies.strategy_append(merger, path, base, nxt)
        return nxt
