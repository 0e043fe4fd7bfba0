"""Presets: what a trainer's roles, role file and rules are, and `resolve_roles` for any of them.

`Preset` is the contract; `PLAIN` a trainer's own command line alone; `layerconf.presets.slime`
holds slime's preset (`SLIME`) and everything else that is slime's. This package's face is
where slime's preset becomes the default, the contract layerconf was made for: the modules
behind it take a preset and name none.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import Any

from layerconf.core.checks import check_iterable, check_type
from layerconf.core.namespace import Namespace
from layerconf.presets import resolve as _resolve
from layerconf.presets.preset import PLAIN, Preset, PresetError, default_rules
from layerconf.presets.role_file import RoleFile, RoleFileFormat
from layerconf.presets.slime import SLIME, slime_rules
from layerconf.sources.base import Source

__all__ = [
    "PLAIN",
    "SLIME",
    "Preset",
    "PresetError",
    "RoleFile",
    "RoleFileFormat",
    "default_rules",
    "resolve_roles",
    "role_file_schema",
    "slime_rules",
]


def resolve_roles(
    parser: argparse.ArgumentParser,
    args: Iterable[str] | None = None,
    *,
    preset: Preset = SLIME,
    sources: Sequence[Source] = (),
    warn: bool = True,
) -> dict[str, Namespace]:
    """Parse `args` with `parser` and resolve one namespace per role of `preset` (slime's by
    default).

    Each role resolves as ``default -> sources -> cli -> role file -> rules``: the layer of
    each of `sources` (an `EnvSource`, say) goes between the parser's defaults and the command
    line, in the order given. Without a role file every role equals that baseline. Raises one
    `ConfigError` with every problem found (the sources, the role file's structure, its keys
    and values, the command line, across roles); warnings are kept in `notices(namespace)`
    and issued as `LayerconfWarning` unless `warn` is False. argparse's own errors
    (``--lr abc``) stay argparse's: it exits with status 2 before anything else is read, as
    with `parse_known_args`.
    """
    check_type("resolve_roles", "parser", parser, argparse.ArgumentParser, _PARSER)
    check_type("resolve_roles", "preset", preset, Preset, "a Preset, such as layerconf.SLIME")
    check_iterable("resolve_roles", "sources", sources, _SOURCES)
    for source in sources:
        check_type("resolve_roles", "sources", source, Source, _SOURCES)
    check_type("resolve_roles", "warn", warn, bool, "True or False")
    return _resolve.resolve_roles(parser, args, preset=preset, sources=sources, warn=warn)


_PARSER = "an argparse.ArgumentParser"
_SOURCES = "a list of sources, such as [layerconf.EnvSource('SLIME_')]"


def role_file_schema(
    parser: argparse.ArgumentParser,
    *,
    roles: Sequence[str] | None = None,
    title: str = "layerconf role file",
    preset: Preset = SLIME,
) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of the role files `preset` (slime's by default) reads for
    `parser`'s command line; see `layerconf.presets.schema.role_file_schema`."""
    from layerconf.presets import schema  # only for a schema: not at import

    return schema.role_file_schema(parser, roles=roles, title=title, preset=preset)
