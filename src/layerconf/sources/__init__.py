"""Sources: each kind of input turned into a layer whose origins say where every value came from.

- `layerconf.sources.argv`: a command line, through any argparse parser (argv index and token);
- `layerconf.sources.yaml`: YAML files with the line and column of every key and value;
- `EnvSource`: environment variables (``env SLIME_LR``);
- `MappingSource`: a mapping a program already holds.

A source of your own is any object with a `name` and `read(parser) -> Reading` (`Source`);
give it to `resolve_roles(..., sources=[...])`.
"""

from typing import TYPE_CHECKING, Any

from layerconf.sources.base import ARGV, FILES, Reading, Source

if TYPE_CHECKING:
    from layerconf.sources.env import EnvSource
    from layerconf.sources.mapping import MappingSource

# Loaded on first use: parsing a command line (sources.argv) needs neither.
_LAZY = {"EnvSource": "layerconf.sources.env", "MappingSource": "layerconf.sources.mapping"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'layerconf.sources' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["ARGV", "FILES", "EnvSource", "MappingSource", "Reading", "Source"]
