"""The ``layerconf`` command (see docs/cli.md): one module per command, rendering, scrubbing."""

from layerconf.cli.app import main

__all__ = ["main"]
