"""Reading an input file whole, within a size limit, with a problem that says what went wrong.

Every file layerconf reads (a YAML file, a role file) comes through `read_bounded`: a wrong path
(a checkpoint, a device) is refused instead of read whole into memory, and every way a read
can fail is one `UnreadableFile` with a message and a hint for the user.
"""

from __future__ import annotations

import os

__all__ = ["MAX_BYTES", "UnreadableFile", "read_bounded"]

#: The largest file read. A configuration file is a few kilobytes; this only stops a wrong path
#: (a checkpoint, a device) from being read whole into memory.
MAX_BYTES = 16 * 1024 * 1024


class UnreadableFile(Exception):
    """A file that cannot be read: what is wrong (`message`) and what to do (`hint`)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


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
            f"cannot be read: {error.strerror or error}", f"check that the path names a {kind}"
        ) from None
    if len(data) > limit:
        raise UnreadableFile(
            f"is larger than {limit:,} bytes: not a configuration file",
            f"check the path: it should name a small {kind}",
        )
    return data


def _read(source: str, most: int) -> bytes:
    """At most `most` bytes of the file at `source`."""
    # os.read, not open(): no file object to build for a file read in one or two calls.
    descriptor = os.open(source, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        # read(n) allocates n bytes first: ask for the file's size and one byte more (a
        # second, empty read says it ended), or for 64 KiB at a time from files that
        # report no size (pipes, /proc); never for more than `most` in all.
        size = os.fstat(descriptor).st_size
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
