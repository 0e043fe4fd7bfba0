"""Where the command's output goes: standard output, written so that no traceback reaches a
terminal (docs/cli.md, exit statuses).

`scrub` wraps this in turn (secrets); neither writes through ``sys.stdout``: the command
writes through `layerconf.cli.scrub.stdout()`, so commands run in several threads at once.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

__all__ = [
    "Output",
    "OutputError",
    "discard",
    "emit",
    "escaped",
    "refuse_an_input",
    "standard_output",
    "write_file",
]


def standard_output() -> Output | None:
    """The process's standard output as an `Output`; None when it is closed (``>&-``)."""
    return None if sys.stdout is None else Output(sys.stdout)


def standard_error() -> Output:
    """The process's standard error as an `Output`: a message that cannot be written (a full
    disk, ``2>&-``) is an `OutputError`, as output that cannot be is, not a lost line."""
    return Output(sys.stderr if sys.stderr is not None else cast(TextIO, _Closed()))


class _Closed:
    """A standard stream the process was started without: every write fails."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "the stream is closed")

    def flush(self) -> None:
        pass


class OutputError(OSError):
    """Standard output cannot be written (a full disk, a closed descriptor): exit 74."""


class Output:
    """A command's output stream, written so that the terminal never sees a traceback.

    - A reader that went away (``layerconf show ... | head``) is not a failure: the rest of the
      output is discarded and the command finishes with its own status (docs/cli.md).
    - Another write error (``> /dev/full``) stops the command: `OutputError`.
    - A character the stream cannot encode (a non-UTF-8 byte of argv or of a path, which
      Python holds as a lone surrogate, on a strict UTF-8 or ASCII output) is written escaped,
      as JSON escapes it: ``\\udcff`` for the byte 0xff, ``\\u00e9`` for é on ASCII.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.reader_gone = False
        #: The first write error, kept: whoever wrote may swallow it (argparse's help does),
        #: and `flush` raises it again.
        self.failed: OutputError | None = None

    def write(self, text: str) -> int:
        try:
            try:
                self.stream.write(text)
            except UnicodeEncodeError:
                self.stream.write(escaped(text, self.stream))
        except BrokenPipeError:
            self._reader_gone()
        except OSError as error:
            self.failed = self.failed or OutputError(error.errno, error.strerror)
            raise OutputError(error.errno, error.strerror) from error
        return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._reader_gone()
        except OSError as error:
            raise OutputError(error.errno, error.strerror) from error
        if self.failed is not None:
            raise OutputError(self.failed.errno, self.failed.strerror)

    def _reader_gone(self) -> None:
        if not self.reader_gone:
            self.reader_gone = True
            discard(self.stream)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding...
        return getattr(self.stream, name)


def escaped(text: str, stream: TextIO) -> str:
    """`text` with each character `stream` cannot encode written as JSON writes it, ``\\uXXXX``
    (a pair of them past U+FFFF): a byte of argv or of a path that was not UTF-8, which Python
    holds as a lone surrogate (0xff is U+DCFF), shows as ``\\udcff``, as repr() shows it."""
    encoding = stream.encoding or "utf-8"
    shown: dict[str, str] = {}
    out = []
    for char in text:
        escape = shown.get(char)
        if escape is None:
            try:
                char.encode(encoding)
                escape = char
            except UnicodeEncodeError:
                code = ord(char)
                if code > 0xFFFF:
                    code -= 0x10000
                    escape = f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
                else:
                    escape = f"\\u{code:04x}"
            shown[char] = escape
        out.append(escape)
    return "".join(out)


def discard(stream: TextIO) -> None:
    """Point `stream`'s descriptor at /dev/null: what is still buffered goes nowhere."""
    try:
        descriptor = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, descriptor)
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a descriptor (a StringIO): nothing buffered outlives the command


def emit(
    text: str,
    output: str | None,
    *,
    what: str,
    example: str,
    prog: str,
    read: Mapping[str, str] | None = None,
) -> Path | None:
    """`text` on the command's stdout when `output` is None or ``-``, else written to that file
    (`write_file`): the path written, or None."""
    if output in (None, "-"):
        from layerconf.cli.scrub import stdout

        stdout().write(text)
        return None
    data = text.encode("utf-8")
    return write_file(output, data, what=what, example=example, prog=prog, read=read)


def write_file(
    output: str,
    data: bytes,
    *,
    what: str,
    example: str,
    prog: str,
    read: Mapping[str, str] | None = None,
) -> Path:
    """Write `data` (`what`: ``"the schema"``) to the file ``-o`` `output` names, atomically,
    as audit records are; a path that cannot be written is a usage error naming it and why, and
    nothing is written (`example` is a file name to suggest). So is a path that names one of
    the files the command `read` (`refuse_an_input`)."""
    from pathlib import Path

    from layerconf.cli.errors import UsageError

    path = Path(output)  # drops a trailing '/', which names a directory: never write a file
    if output.endswith(("/", os.sep)) and path.exists() and not path.is_dir():
        raise UsageError(
            f"cannot write {what}: {output} ends with '/', which names a directory, and {path} "
            f"is a file: name a file such as {example}",
            prog,
        )
    kind = "a directory" if output.endswith(("/", os.sep)) else _not_a_file(path)
    if kind is not None:
        raise UsageError(
            f"cannot write {what}: {output} is {kind}, not a file: {what} is written only to a "
            f"new path or over a regular file (name a file such as {example})",
            prog,
        )
    refuse_an_input(path, read, what=what, shown=output, prog=prog)
    return write_atomically(path.parent, path.name, data, what=what, shown=output, prog=prog)


def refuse_an_input(
    target: Path, read: Mapping[str, str] | None, *, what: str, shown: str, prog: str
) -> None:
    """A usage error if `target` is one of the files the command `read` (path: what it is,
    ``"a role file this command read"``), or a link to one: `what` written over it would
    destroy it."""
    if not read:
        return
    try:
        there = os.stat(target)
    except OSError:
        return  # nothing there yet (or write_atomic says why it cannot be written)
    for path, kind in read.items():
        try:
            same = os.path.samestat(there, os.stat(path))
        except OSError:
            continue
        if same:
            from layerconf.cli.errors import UsageError

            raise UsageError(
                f"cannot write {what}: {shown} is {kind} ({path}), which this command read: "
                f"{what} would replace it; name another path (nothing was written)",
                prog,
            )


def write_atomically(
    directory: Path, name: str, data: bytes, *, what: str, shown: str, prog: str
) -> Path:
    """`layerconf.audits.write_atomic(directory, name, data)`; a failure is a usage error
    naming the path (`shown`: as the user wrote it, when the error names none) and why."""
    from layerconf.audits import write_atomic
    from layerconf.cli.errors import UsageError
    from layerconf.exceptions import AuditError

    try:
        return write_atomic(directory, name, data)
    except AuditError as error:  # not a regular file (a FIFO, a device), or became one
        raise UsageError(f"cannot write {what}: {error}", prog) from None
    except OSError as error:
        where = error.filename if isinstance(error.filename, str) else shown
        if os.path.basename(where).startswith(f".{name}."):  # the temporary file: the target
            where = str(directory / name)
        # mkdir() meeting a file where a directory should be says "File exists".
        reason = "Not a directory" if isinstance(error, FileExistsError) else error.strerror
        raise UsageError(f"cannot write {what}: {where}: {reason or error}", prog) from None


def _not_a_file(path: Path) -> str | None:
    """What is at `path` if a file must not replace it (None: nothing yet, or a regular file,
    or a link to one); `write_atomic` checks again as it writes."""
    import stat

    from layerconf.sources.files import describe_mode

    try:
        found = os.stat(path)
    except FileNotFoundError:
        return "a symbolic link that leads nowhere" if os.path.islink(path) else None
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a loop of symbolic links"
        return None  # write_atomic says why it cannot be written
    return None if stat.S_ISREG(found.st_mode) else describe_mode(found.st_mode)
