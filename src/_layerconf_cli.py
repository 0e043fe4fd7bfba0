"""The ``layerconf`` console script: Ctrl-C at any moment of start-up exits 130, quietly.

This module is outside the layerconf package on purpose: importing any module of the package
imports the package first (its core, attrs, deepmerge: most of the start-up time), and an
interrupt there, before `layerconf.cli.main` could catch it, would end in a traceback. Here
nothing is imported before the interrupt is handled.
"""

#: The collector's young-generation threshold while the command runs (Python's is 700).
GC_THRESHOLD = 50_000


def main() -> int:
    """Import and run the ``layerconf`` command; 130 if interrupted on the way."""
    try:
        import gc

        # The process is the command's: it makes some 100,000 objects (its modules, the
        # parser's thousand actions, the profile's data), almost none of them in reference
        # cycles, and a young-generation pass every 700 new objects finds nothing to free (~6 ms
        # of a `layerconf check`). Objects are still freed as soon as they are unused, cycles at
        # the next pass. (Not set back on return: the next new object would pay a pass over
        # them all.)
        gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
        import sys

        from layerconf.cli import main as run

        # stdout is the command's output alone (JSON, a record, a schema): what the trainer's
        # modules print when --parser or --preset imports them goes to stderr.
        output = sys.stdout
        if output is not None and sys.stderr is not None:
            sys.stdout = sys.stderr
        try:
            status = run(output=output)
        finally:
            sys.stdout = output
        _done()
        return status
    except KeyboardInterrupt:
        _done()
        return 130  # layerconf.cli.errors.EXIT_INTERRUPTED, not imported: it may be mid-import


def _done() -> None:
    """The command is over: a Ctrl-C from now on is ignored, so that it cannot interrupt the
    interpreter's own shutdown (which prints a traceback of its threading module)."""
    import contextlib
    import signal

    # (ValueError: not the main thread, main() called by a program: nothing to do)
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
