"""A help formatter for building a parser without asking the terminal for its width.

``ArgumentParser.add_argument`` (the parser's own ``-h`` included) makes a help formatter only
to check a metavar against nargs, and drops it; a formatter made the ordinary way asks the
terminal for its width, which imports `shutil` (and with it zlib, bz2 and lzma), a good part
of a short command's start. A parser made with `UnmeasuredFormatter` as its formatter class,
and given its own class back once its arguments are added, formats its help, usage and errors
as one built the ordinary way: no formatter outlives the call that made it.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["UnmeasuredFormatter"]


class UnmeasuredFormatter(argparse.HelpFormatter):
    """argparse's formatter at 80 columns (unless given a width), whatever the terminal's: the
    class of the formatters a parser makes while its arguments are added."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
        **more: Any,
    ) -> None:
        # (`more`: what a later argparse may pass, passed on)
        super().__init__(
            prog, indent_increment, max_help_position, 80 if width is None else width, **more
        )
