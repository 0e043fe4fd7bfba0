"""The ``layerconf`` console script: Ctrl-C at any moment of start-up exits 130, quietly.

This module is outside the layerconf package on purpose: importing any module of the package
imports the package first (its core, attrs, deepmerge: most of the start-up time), and an
interrupt there, before `layerconf.cli.main` could catch it, would end in a traceback. Here
nothing is imported before the interrupt is handled.
"""


def main() -> int:
    """Import and run the ``layerconf`` command; 130 if interrupted on the way."""
    try:
        from layerconf.cli import main as run

        return run()
    except KeyboardInterrupt:
        return 130  # layerconf.cli.errors.EXIT_INTERRUPTED, not imported: it may be mid-import
