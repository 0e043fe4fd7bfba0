"""Reading an input file whole, in bounded time and memory, with a problem that says what failed.

Every file layerconf reads (a YAML file, a role file, an audit record) comes through
`read_bounded`: a wrong path (a checkpoint, a device) is refused instead of read whole into
memory; the path is opened without blocking and its type checked before anything is read, so a
device (``/dev/zero``, a terminal as ``/dev/stdin``), a socket or a directory is refused at once,
and a pipe or FIFO (``<(cat roles.yaml)``) is read only while something writes to it, never
waited on for more than `PIPE_WAIT` seconds. Every way a read can fail is one `UnreadableFile`
with a message and a hint for the user.
"""

from __future__ import annotations

import os
import stat
import time

__all__ = [
    "MAX_BYTES",
    "PIPE_WAIT",
    "UnreadableFile",
    "check_size",
    "describe_mode",
    "read_bounded",
]

#: The largest file read. A configuration file is a few kilobytes; this only stops a wrong path
#: (a checkpoint, a device) from being read whole into memory.
MAX_BYTES = 16 * 1024 * 1024
#: The longest a pipe or FIFO is waited on, in seconds, before it is refused as silent.
PIPE_WAIT = 5.0

_KINDS = (
    (stat.S_ISREG, "a file"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def describe_mode(mode: int) -> str:
    """What a path of this `st_mode` is, in words: ``a character device``, ``a socket``..."""
    return next((name for test, name in _KINDS if test(mode)), "not a file")


class UnreadableFile(Exception):
    """A file that cannot be read: what is wrong (`message`) and what to do (`hint`)."""

    def __init__(self, message: str, hint: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        #: True when there is no file at the path at all.
        self.missing = missing


def read_bounded(source: str, *, limit: int = MAX_BYTES, kind: str = "file") -> bytes:
    """The bytes of the file at `source`; `UnreadableFile` if it is missing, a directory,
    unreadable, or larger than `limit` bytes. `kind` names what the file should be in hints
    (``"YAML file"``)."""
    try:
        data = _read(source, limit + 1)
    except FileNotFoundError:
        raise UnreadableFile(
            "file not found",
            f"check the path; a relative path is read from the current directory {os.getcwd()}",
            missing=True,
        ) from None
    except IsADirectoryError:
        raise UnreadableFile(
            "is a directory, not a file", f"give the path of the {kind} itself"
        ) from None
    except PermissionError:
        if os.path.isdir(source):
            raise UnreadableFile(
                "is a directory, not a file", f"give the path of the {kind} itself"
            ) from None
        raise UnreadableFile(
            "cannot be read: permission denied",
            "make it readable by this user, e.g. with chmod a+r, or copy it somewhere readable",
        ) from None
    except OSError as error:
        raise UnreadableFile(
            f"cannot be read: {error.strerror or error}", f"check that the path names the {kind}"
        ) from None
    if len(data) > limit:
        raise _too_large(limit, kind)
    return data


def check_size(source: str, *, limit: int = MAX_BYTES, kind: str = "file") -> None:
    """`UnreadableFile` as `read_bounded` says it, for a file another reader reads whole (the
    import of a module): one that is not a regular file or is larger than `limit` bytes, told
    by its status, without opening it. A path that cannot be looked at is left to the reader."""
    try:
        found = os.stat(source)
    except OSError:
        return
    if not stat.S_ISREG(found.st_mode):
        raise UnreadableFile(
            f"is {describe_mode(found.st_mode)}, not a file", f"give the path of a {kind}"
        )
    if found.st_size > limit:
        raise _too_large(limit, kind)


def _too_large(limit: int, kind: str) -> UnreadableFile:
    return UnreadableFile(
        f"is larger than {limit:,} bytes: not a configuration file",
        f"check the path: it should name a small {kind}",
    )


#: How `_read` opens a path: for reading, in binary mode (Windows), without blocking on a FIFO
#: and without making a terminal the controlling one.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
)


def _refuse_unreadable(mode: int) -> None:
    """Raise `UnreadableFile` for what is neither a file, a directory nor a pipe."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISFIFO(mode):
        return
    raise UnreadableFile(
        f"is {describe_mode(mode)}, not a file", "give the path of a file, or of a pipe or FIFO"
    )


def _read(source: str, most: int) -> bytes:
    """At most `most` bytes of the file at `source`, opened without blocking on a FIFO."""
    # The type first, from the path: a device is refused without being opened (opening one
    # acts: a watchdog starts, a tape rewinds, a modem line is raised), a socket is named as
    # one (open() says only "No such device or address"). The type is checked again on the
    # descriptor, for a path that changed in between.
    _refuse_unreadable(os.stat(source).st_mode)
    # os.read, not open(): no file object to build for a file read in one or two calls.
    descriptor = os.open(source, _OPEN_FLAGS)
    try:
        found = os.fstat(descriptor)
        if stat.S_ISDIR(found.st_mode):
            raise IsADirectoryError(source)
        if stat.S_ISFIFO(found.st_mode):
            return _read_pipe(descriptor, most)
        _refuse_unreadable(found.st_mode)
        # read(n) allocates n bytes first: ask for the file's size and one byte more (a
        # second, empty read says it ended), or for 64 KiB at a time from files that
        # report no size (/proc); never for more than `most` in all.
        size = found.st_size
        step = size + 1 if 0 < size < most else 1 << 16
        chunks: list[bytes] = []
        total = 0
        while total < most:
            chunk = os.read(descriptor, min(step, most - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _read_pipe(descriptor: int, most: int) -> bytes:
    """What a pipe or FIFO holds until its writer closes it: at most `most` bytes, waiting at
    most `PIPE_WAIT` seconds in all (a FIFO no one writes to is refused, not waited on)."""
    import select  # only for a pipe: not at import

    if not hasattr(select, "poll"):  # no poll() (Windows has no FIFOs at such paths)
        raise UnreadableFile("is a pipe, which cannot be read here", "give the path of a file")
    poller = select.poll()
    poller.register(descriptor, select.POLLIN)
    deadline = time.monotonic() + PIPE_WAIT
    chunks: list[bytes] = []
    total = 0
    while total < most:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            raise UnreadableFile(
                f"is a pipe or FIFO that nothing was written to (or finished) within "
                f"{PIPE_WAIT:g} seconds",
                "give the path of a file, or write the whole content and close the pipe",
            )
        try:
            chunk = os.read(descriptor, min(1 << 16, most - total))
        except BlockingIOError:  # woken without data: poll again
            continue
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
