"""``python -m layerconf``: the layerconf command (see docs/cli.md), as the console script runs it.

Python has imported the package before this module runs; an interrupt while the command's own
modules load still exits 130, quietly. (The ``layerconf`` console script is quiet from its
first line on: see ``_layerconf_cli``.)
"""

if __name__ == "__main__":
    try:
        from _layerconf_cli import main
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    raise SystemExit(main())
