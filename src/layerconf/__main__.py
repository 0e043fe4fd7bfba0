"""``python -m layerconf``: the layerconf command (see docs/cli.md)."""

from layerconf.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
