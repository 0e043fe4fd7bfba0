"""The command's name, its exit codes, and the errors of the tool itself.

A tool error is one line on stderr, never a traceback: `UsageError` is a mistake in the
layerconf command line or in what it names (exit 2); `ParserStop` is the trainer's parser
wanting to stop the process, which the resolution turns into a problem of the command line.
"""

from __future__ import annotations

from layerconf.cli.scrub import scrubbed, stderr
from layerconf.exceptions import one_line

PROG = "layerconf"

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70  # sysexits.h EX_SOFTWARE: a bug of layerconf's own
EXIT_OUTPUT = 74  # sysexits.h EX_IOERR: standard output cannot be written
EXIT_INTERRUPTED = 130
#: Set (to anything but "" or "0"), a bug of layerconf's own ends in its traceback.
TRACEBACK_VARIABLE = "LAYERCONF_TRACEBACK"


class UsageError(Exception):
    """A mistake in the layerconf command line or in what it names: one line, exit 2."""

    def __init__(self, message: str, prog: str = PROG, *, help_hint: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.prog = prog
        self.help_hint = help_hint

    def __str__(self) -> str:  # one line, whatever a path or token it quotes holds
        text = f"{self.prog}: error: {one_line(self.message)}"
        if self.help_hint:
            text += f" (see '{self.prog} --help')"
        return text


class ParserStop(Exception):
    """The trainer's parser wanted to stop the process: a usage error, or --help / --version.

    `message` is argparse's error message; None when the parser exited on its own (help).
    """

    def __init__(self, message: str | None) -> None:
        super().__init__(message)
        self.message = message


def internal_error(error: Exception) -> str:
    """The line that says a command met a bug of layerconf's own (exit `EXIT_INTERNAL`)."""
    what = one_line(describe(error))
    if len(what) > 300:
        what = what[:297] + "..."
    return (
        f"{PROG}: internal error: {what} (a bug in layerconf: please report it with the command "
        f"that met it; {TRACEBACK_VARIABLE}=1 shows where it happened)"
    )


def describe(error: BaseException, limit: int | None = 200) -> str:
    """An exception in a few words: its type, then its message if it has one (at most `limit`
    characters; one whose ``__str__`` fails, the trainer's, is said to be unreadable). The
    running command's secrets are scrubbed from the whole message before it is cut: cut, a
    secret is no longer found, and its start would show."""
    from layerconf.core.values import shorten

    try:
        text = scrubbed(str(error))
    except Exception:
        text = "<its message cannot be read>"
    if limit is not None:
        text = shorten(text, limit)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def print_error(text: str) -> None:
    print(text, file=stderr())
