"""Audit record files: written atomically, read back and checked.

`write_audit` writes ``layerconf-audit.json`` through a temporary file and one rename, so a
reader sees the old record or the new one, never half of one; `load_audit` reads it back as
an `AuditRecord`. The text has one line per key of a role, easy to grep and diff
(`layerconf.audits.layout`).
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import errno
import hashlib
import json
import math
import operator
import os
import pathlib
import re
import socket
import stat
import sys
from collections.abc import Iterable, Mapping
from secrets import token_hex
from typing import Any

from layerconf.audits.codec import Encoder, ValueTypes
from layerconf.audits.layout import RecordText, known_lines
from layerconf.audits.record import AuditRecord, record_of
from layerconf.audits.signing import Key, sign
from layerconf.audits.texts import Texts
from layerconf.audits.validate import AGAIN
from layerconf.core.checks import PATH, check_type
from layerconf.core.secrets import SECRETS, SecretPolicy
from layerconf.core.values import shorten
from layerconf.exceptions import AuditError
from layerconf.sources.files import UnreadableFile, describe_mode, read_bounded

__all__ = ["AUDIT_FILE", "load_audit", "record_bytes", "write_atomic", "write_audit"]

#: The name of the file `write_audit` writes.
AUDIT_FILE = "layerconf-audit.json"
#: The largest record read: a record of a 1,000-argument job with two roles is under 1 MB; this
#: keeps a wrong path (a checkpoint, /dev/zero) from being read and parsed whole.
MAX_RECORD_BYTES = 32 * 1024 * 1024
#: The most JSON values a record read may hold (each object, array, string, number, true, false
#: and null, an object's keys counted too), told before it is decoded: decoding costs memory by
#: the value (a hundred bytes and more each), not by the byte, and a file of tiny values under
#: `MAX_RECORD_BYTES` holds millions. A real record of a trainer of about 1,000 options, two
#: roles, holds about 19,000; one of a parser of 50,000 options, two roles, about 900,000.
MAX_RECORD_VALUES = 2_000_000


def write_audit(
    roles: Mapping[str, argparse.Namespace],
    directory: str | os.PathLike[str],
    *,
    secrets: SecretPolicy = SECRETS,
    key: Key | None = None,
) -> pathlib.Path:
    """Write ``layerconf-audit.json`` for `roles` into `directory`, atomically; return its path.

    With `key` (bytes or text), the record is signed (`layerconf.audits.signing`): whoever
    holds the key can check with ``load_audit(path, key=...)`` that it was written with it
    and not changed since.

    The record goes to a temporary file in the same directory (``.layerconf-audit.json.*.tmp``),
    is flushed to disk, and replaces the old file in one rename: a reader sees the old record
    or the new one, never half of one, and a writer killed mid-way leaves the old file intact
    (and at most its temporary file). The directory is created if it does not exist.
    """
    check_type("write_audit", "directory", directory, PATH, "a path (str or pathlib.Path)")
    encoder = Encoder(secrets)
    texts = Texts(lines=True, deferred=key is None)  # signing reads every entry
    record = record_of(roles, encoder, key, texts)
    if key is not None:
        record = sign(record, key)
    known = known_lines(texts)
    if not known:  # the entries are encoded from the record: made first (scrubbing, which
        texts.make_entries()  # drops the lines, made them already; kept for any other path)
    text = RecordText(known).dumps(record, 0, "\n")
    return write_atomic(pathlib.Path(directory), AUDIT_FILE, text.encode("ascii"))


def record_bytes(record: Mapping[str, Any]) -> bytes:
    """The bytes of a record's file: what `write_audit` writes and ``layerconf audit`` prints."""
    check_type("record_bytes", "record", record, Mapping, "a record, such as audit(roles)")
    return RecordText().dumps(dict(record), 0, "\n").encode("ascii")


def write_atomic(directory: pathlib.Path, name: str, data: bytes) -> pathlib.Path:
    """Write `data` to `directory`/`name` atomically, as `write_audit` does; return its path.

    Only a regular file is ever replaced, or a new one made: a directory, a FIFO, a device or
    a socket at the path is an `AuditError` that names what it is (nothing is written). A
    symbolic link is followed: the file it points to is replaced, atomically, and the link
    stays. The file's old permissions are kept; a new file gets the process umask's, which is
    read by the kernel as the file is made, never by changing the umask. What is at the path is
    checked again just before the rename (a path that became a FIFO or a link meanwhile is an
    `AuditError`, nothing replaced). The directory is made
    if it does not exist. A temporary file of a writer that was killed is removed by the next
    write into the same directory.
    """
    check_type("write_atomic", "directory", directory, pathlib.Path, "a pathlib.Path")
    check_type("write_atomic", "name", name, str, "a file name (str)")
    check_type("write_atomic", "data", data, bytes, "bytes")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # ("File exists": what is there is no directory)
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(directory)) from None
    path = directory / name
    target = _destination(path)
    mode = _existing_mode(target)
    prefix = _temporary_prefix(target.name)
    _remove_stale(target.parent, prefix)
    temporary = target.parent / f"{prefix}{os.getpid()}.{token_hex(6)}.tmp"
    # A new file is made 0o666 and the kernel applies the umask; a file written over keeps
    # its own mode (the temporary starts private until then).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(
            temporary, flags | getattr(os, "O_BINARY", 0), 0o666 if mode is None else 0o600
        )
    except OSError as error:  # said of the record's path: the temporary is an inner detail
        raise OSError(error.errno, error.strerror, str(target)) from None
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
            if mode is not None and hasattr(os, "fchmod"):
                os.fchmod(descriptor, mode)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        if mode is not None and not hasattr(os, "fchmod"):
            os.chmod(temporary, mode)
        # Writing and fsync take a while: what is at the path is checked again, just before
        # the rename, so that a path that became a FIFO, a device, a directory or a link
        # meanwhile is not replaced (the rename itself cannot check: a window of a few
        # microseconds remains).
        if _destination(path) != target:
            raise AuditError(
                "changed while the record was written (it now leads elsewhere): nothing was "
                "replaced; write the record again",
                str(path),
            )
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_directory(target.parent)
    return target


#: This host's name in temporary file names: a directory shared between hosts (NFS) never
#: has another host's live writer's temporary removed.
_HOST = (
    "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in socket.gethostname())
    or "host"
)[:64]
#: The longest file name most file systems allow, in bytes.
_NAME_MAX = 255


def _temporary_prefix(name: str) -> str:
    """``.NAME.HOST.``: how the temporary files of writers of `name` on this host begin.

    A name too long to leave room for the rest (pid, random part, ``.tmp``) is shortened,
    and a digest of it added, so that the temporary's own name is never too long.
    """
    room = _NAME_MAX - len(_HOST) - 40  # the dots, a pid, 12 hex digits and ".tmp", to spare
    if len(os.fsencode(name)) <= room:
        return f".{name}.{_HOST}."
    digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:16]
    short = name
    while len(os.fsencode(short)) > room - len(digest) - 1:
        short = short[:-1]
    return f".{short}~{digest}.{_HOST}."


def _destination(path: pathlib.Path) -> pathlib.Path:
    """The file to replace for `path`: itself, or the file its symbolic links point to.

    Anything but a regular file (or nothing yet) there is an `AuditError` naming what it is.
    """
    target = pathlib.Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        found = os.lstat(target)
    except FileNotFoundError:
        return target
    except OSError as error:
        raise AuditError(f"cannot write there: {error.strerror or error}", str(path)) from None
    if stat.S_ISREG(found.st_mode):
        return target
    kind = describe_mode(found.st_mode)
    if stat.S_ISLNK(found.st_mode):
        kind = "a loop of symbolic links" if _loops(path) else "a symbolic link that leads nowhere"
    shown = str(path) if target == path else f"{path} (-> {target})"
    raise AuditError(
        f"is {kind}, not a file: an audit record is written only to a new path or over a "
        "regular file (give the path of a record file, or a directory to write "
        f"{AUDIT_FILE} into)",
        shown,
    )


def _loops(path: pathlib.Path) -> bool:
    """Whether the symbolic links at `path` lead back to themselves."""
    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP
    return False


def _existing_mode(target: pathlib.Path) -> int | None:
    """The permissions of the file at `target`, None if there is none yet."""
    try:
        return os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        return None


def _remove_stale(directory: pathlib.Path, prefix: str) -> None:
    """Remove the temporary files of this host's writers that are no longer alive.

    Only names `write_atomic` makes are looked at (`prefix`, then ``PID.HEX.tmp``); a
    temporary whose writer still runs, or whose writer cannot be told, is left alone.
    """
    suffix = ".tmp"
    try:
        entries = os.listdir(directory)
    except OSError:
        return
    for entry in entries:
        if not (entry.startswith(prefix) and entry.endswith(suffix)):
            continue
        pid, _, _ = entry[len(prefix) : -len(suffix)].partition(".")
        # ASCII digits only: str.isdigit() accepts "²", which int() refuses.
        if not (pid.isascii() and pid.isdigit()) or len(pid) > 10:
            continue
        if int(pid) != os.getpid() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(directory / entry)


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (True when that cannot be told)."""
    if os.name == "nt":  # os.kill(pid, 0) sends CTRL_C_EVENT there: never ask
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, ValueError, OverflowError):
        return True
    return True


def _fsync_directory(directory: pathlib.Path) -> None:
    """Make the rename durable: fsync the directory, where the platform allows it."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        descriptor = os.open(directory, flags)
    except OSError:  # Windows cannot open a directory; its rename is durable enough
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def load_audit(
    path: str | os.PathLike[str],
    *,
    verify: bool = True,
    types: ValueTypes | Iterable[type[enum.Enum]] | None = None,
    key: Key | None = None,
) -> AuditRecord:
    """Read a record written by `write_audit` (a file, or the directory that holds one).

    With `key`, the record must carry the signature `write_audit(..., key=key)` made of it:
    one that is missing or does not match is an `AuditError`.

    `types` are enum classes of the program's own to rebuild from the record (its replay
    rebuilds no other: reading a record never imports a module it names); see `ValueTypes`.

    Raises `AuditError` naming the file, what is wrong and what to do, for a file that is not
    JSON (a key twice in one object and a number out of a float's range are refused too),
    nests deeper than a record does, is not an audit record, is of another format version, or
    (with `verify`) whose fingerprint does not match its values; for a path that is not a
    file (a device, a FIFO nothing writes to) or a file over `MAX_RECORD_BYTES`, without
    reading it whole. A missing file raises `FileNotFoundError`.
    """
    check_type("load_audit", "path", path, PATH, "a path (str or pathlib.Path)")
    check_type("load_audit", "verify", verify, bool, "True or False")
    file = pathlib.Path(path)
    if file.is_dir():
        file = file / AUDIT_FILE
    where = str(file)
    try:
        raw = read_bounded(where, limit=MAX_RECORD_BYTES, kind="audit record")
    except UnreadableFile as error:
        if error.missing:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", where) from None
        raise AuditError(f"{error.message} ({error.hint})", where) from None
    if not raw.strip():
        raise AuditError(f"the file is empty, not an audit record; {AGAIN}", where)
    _check_values(raw, where)
    try:
        data = json.loads(
            raw,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            object_pairs_hook=_unique_keys,
        )
    except RecursionError:
        raise AuditError(
            "not a layerconf audit record: its JSON nests too deeply (a record nests a few "
            f"levels); {AGAIN}",
            where,
        ) from None
    except json.JSONDecodeError as error:
        # (the place is the message's prefix: "Unterminated string starting at" loses "at")
        why = error.msg.removesuffix(" starting at").removesuffix(" at")
        raise _not_json(why, where, error.lineno, error.colno) from None
    except (ValueError, UnicodeDecodeError) as error:
        # A value the hooks refuse (a key twice, NaN, an int past Python's digit limit): the
        # decoder does not say where; the first such value of the text does.
        found = None if isinstance(error, UnicodeDecodeError) else _first_refused(raw)
        if found is None:
            raise _not_json(str(error), where) from None
        why, line, column = found
        raise _not_json(why, where, line, column) from None
    return AuditRecord.from_dict(data, path=where, verify=verify, types=types, key=key)


def _not_json(
    why: str, where: str, line: int | None = None, column: int | None = None
) -> AuditError:
    return AuditError(
        f"not a layerconf audit record: it is not valid JSON ({why}); the file is truncated "
        f"or was not written by write_audit(): {AGAIN}",
        where,
        line,
        column,
    )


#: A record's JSON tokens, but for commas: a string (with the colon that makes it a key), a
#: bracket, or a bare value (a number, true, false, null, or what the decoder refused).
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"(\s*:)?|[{}\[\]]|[^\s{}\[\]:,"]+', re.DOTALL)
#: The largest text `_first_refused` looks through (a trainer's record is under 1 MB): beyond,
#: the problem is told without its line and column, in bounded time.
_LOCATED_BELOW = 2 * 1024 * 1024


def _first_refused(raw: bytes) -> tuple[str, int, int] | None:
    """(what, line, column) of the first value of the JSON text `raw` that `load_audit`'s
    decoding refuses (a key written twice in one object, in any spelling: ``"a"``, ``"\\u0061"``;
    ``NaN``, a number out of range or past Python's digit limit for an int), or None. On the
    error path only: one scan of the text, a Python step per string, bracket and bare value
    (a key with an escape decoded); None for a text of `_LOCATED_BELOW` bytes or more."""
    if len(raw) >= _LOCATED_BELOW:
        return None
    text = raw.decode(json.detect_encoding(raw), "replace")  # (the decoder read it so)
    digits = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    objects: list[set[str] | None] = []  # each open container's keys (None: an array)
    for match in _TOKENS.finditer(text):
        token = match.group()
        first = token[0]
        why = None
        if first == '"':
            colon = match.group(1)
            keys = objects[-1] if objects else None
            if colon is not None and keys is not None:
                key = _key_of(token[: len(token) - len(colon)])
                if key in keys:
                    why = f"the key {shorten(key, 80)!r} appears twice in one object"
                keys.add(key)
        elif first == "{":
            objects.append(set())
        elif first == "[":
            objects.append(None)
        elif first in "}]":
            if objects:
                objects.pop()
        elif token in ("NaN", "Infinity", "-Infinity"):
            why = f"{token} is not a JSON value"
        elif digits and token.lstrip("-").isdigit() and len(token.lstrip("-")) > digits:
            why = f"an integer of {len(token.lstrip('-')):,} digits (at most {digits:,})"
        elif "." in token or "e" in token or "E" in token:
            with contextlib.suppress(ValueError):
                if not math.isfinite(float(token)):
                    why = f"the number {shorten(token, 40)} is out of range"
        if why is not None:
            start = match.start()
            line_start = text.rfind("\n", 0, start) + 1
            return why, text.count("\n", 0, start) + 1, start - line_start + 1
    return None


def _key_of(name: str) -> str:
    """The key a JSON string token `name` (quotes included) spells: ``"\\u0061"`` is ``a``, as
    the decoder reads it (the token as it is, past where the decoder stopped)."""
    if "\\" not in name:
        return name[1:-1]
    try:
        key: str = json.loads(name)
    except ValueError:
        return name
    return key


def _check_values(raw: bytes, where: str) -> None:
    """Raise `AuditError` for JSON text `raw` that holds more than `MAX_RECORD_VALUES` values,
    without decoding it: a bound counted in C, then, only when it is over, the count."""
    # (Each value and key counted takes a byte at least: a short text holds few.)
    if len(raw) <= MAX_RECORD_VALUES or 1 + sum(map(raw.count, _SEPARATORS)) <= MAX_RECORD_VALUES:
        return
    encoding = json.detect_encoding(raw)
    if encoding not in ("utf-8", "utf-8-sig"):  # json.loads reads UTF-16 and UTF-32 too
        try:
            raw = raw.decode(encoding, "surrogatepass").encode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return  # not text: json.loads says so
    found = 1 + sum(map(_values_in, map(operator.itemgetter(0), _SPANS.finditer(raw))))
    if found > MAX_RECORD_VALUES:
        raise AuditError(
            f"not read as an audit record: its JSON holds {found:,} values (an object's keys "
            f"counted), more than the {MAX_RECORD_VALUES:,} a record may hold (a record of a "
            "parser of 50,000 options, two roles, holds about 900,000): it is not a record "
            "layerconf wrote; if it is, raise layerconf.audits.io.MAX_RECORD_VALUES to read it",
            where,
        )


def _values_in(span: bytes) -> int:
    """The values and keys that follow a separator in `span`, whole strings and the text
    between them: each but the root follows one comma, colon or opening bracket of a
    container that is not empty, outside strings."""
    count = _STRING.sub(b"0", span).translate(None, b" \t\r\n").count
    return sum(map(count, _SEPARATORS)) - count(b"{}") - count(b"[]")


_SEPARATORS = (b",", b":", b"{", b"[")
_STRING_TEXT = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
#: A JSON string, its escapes included (in UTF-8).
_STRING = re.compile(_STRING_TEXT, re.DOTALL)
#: Up to 4,096 strings and runs of text between them: what `_check_values` counts at a time
#: (a copy of a span at a time, never of the whole text).
_SPANS = re.compile(rb'(?:[^"]+|' + _STRING_TEXT + rb"){1,4096}", re.DOTALL)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    """A JSON number as a float; one out of a float's range (``1e400``) is refused."""
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {shorten(text, 40)} is out of range")
    return number


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different: a key written twice is refused.

    JSON parsers disagree on which of two values of one key counts (Python keeps the last);
    a record that says two things is refused rather than read one way here and the other
    way by another tool, a signature checking only one of them.
    """
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {shorten(key, 80)!r} appears twice in one object")
            seen.add(key)
    return data
