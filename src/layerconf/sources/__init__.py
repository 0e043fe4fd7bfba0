"""Sources: each kind of input turned into a layer whose origins say where every value came from.

- `layerconf.sources.argv`: a command line, through any argparse parser (argv index and token);
- `layerconf.sources.yaml`: YAML files with the line and column of every key and value;
- `EnvSource`: environment variables (``env SLIME_LR``);
- `MappingSource`: a mapping a program already holds.

A source of your own is any object with a `name` and `read(parser) -> Reading` (`Source`);
give it to `resolve_roles(..., sources=[...])`.
"""

from layerconf.sources.base import ARGV, FILES, Reading, Source
from layerconf.sources.env import EnvSource
from layerconf.sources.mapping import MappingSource

__all__ = ["ARGV", "FILES", "EnvSource", "MappingSource", "Reading", "Source"]
