"""Audit record files: written atomically, read back and checked.

`write_audit` writes ``layerconf-audit.json`` through a temporary file and one rename, so a
reader sees the old record or the new one, never half of one; `load_audit` reads it back as
an `AuditRecord`. The text has one line per key of a role, easy to grep and diff.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import tempfile
from collections.abc import Mapping
from typing import Any

from layerconf.audits.codec import compact
from layerconf.audits.record import AuditRecord, audit
from layerconf.audits.validate import AGAIN
from layerconf.core.secrets import SECRETS, SecretPolicy
from layerconf.exceptions import AuditError

__all__ = ["AUDIT_FILE", "load_audit", "record_bytes", "write_atomic", "write_audit"]

#: The name of the file `write_audit` writes.
AUDIT_FILE = "layerconf-audit.json"


def write_audit(
    roles: Mapping[str, argparse.Namespace],
    directory: str | os.PathLike[str],
    *,
    secrets: SecretPolicy = SECRETS,
) -> pathlib.Path:
    """Write ``layerconf-audit.json`` for `roles` into `directory`, atomically; return its path.

    The record goes to a temporary file in the same directory (``.layerconf-audit.json.*.tmp``),
    is flushed to disk, and replaces the old file in one rename: a reader sees the old record
    or the new one, never half of one, and a writer killed mid-way leaves the old file intact
    (and at most its temporary file). The directory is created if it does not exist.
    """
    return write_atomic(
        pathlib.Path(directory), AUDIT_FILE, record_bytes(audit(roles, secrets=secrets))
    )


def record_bytes(record: Mapping[str, Any]) -> bytes:
    """The bytes of a record's file: what `write_audit` writes and ``layerconf audit`` prints."""
    return (_dumps(record) + "\n").encode("ascii")


def _dumps(value: Any, depth: int = 0) -> str:
    """The record as text: one line per key of a role (easy to grep and diff), else compact."""
    if depth < 4 and type(value) in (dict, list) and value:
        pad = " " * (depth + 1)
        if type(value) is dict:
            lines = [f"{pad}{compact(k)}: {_dumps(v, depth + 1)}" for k, v in value.items()]
            return "{\n" + ",\n".join(lines) + "\n" + " " * depth + "}"
        lines = [pad + _dumps(item, depth + 1) for item in value]
        return "[\n" + ",\n".join(lines) + "\n" + " " * depth + "]"
    return compact(value)


def write_atomic(directory: pathlib.Path, name: str, data: bytes) -> pathlib.Path:
    """Write `data` to `directory`/`name` atomically, as `write_audit` does; return its path.

    The file's old permissions are kept (a new file gets the umask's); the directory is
    created if it does not exist.
    """
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    descriptor, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, _mode_for(target))
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)
    return target


def _mode_for(target: pathlib.Path) -> int:
    """The old file's permissions, or what the umask gives a new file (mkstemp makes 0600)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        # The umask can only be read by setting it; 077 meanwhile errs on the private side.
        mask = os.umask(0o077)
        os.umask(mask)
        return 0o666 & ~mask


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


def load_audit(path: str | os.PathLike[str], *, verify: bool = True) -> AuditRecord:
    """Read a record written by `write_audit` (a file, or the directory that holds one).

    Raises `AuditError` naming the file, what is wrong and what to do, for a file that is not
    JSON, not an audit record, of another format version, or (with `verify`) whose
    fingerprint does not match its values. A missing file raises `FileNotFoundError`.
    """
    file = pathlib.Path(path)
    if file.is_dir():
        file = file / AUDIT_FILE
    raw = file.read_bytes()
    where = str(file)
    if not raw.strip():
        raise AuditError(f"the file is empty, not an audit record; {AGAIN}", where)
    try:
        data = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as error:
        raise AuditError(
            f"not a layerconf audit record: it is not valid JSON ({error}); the file is "
            f"truncated or was not written by write_audit(): {AGAIN}",
            where,
        ) from None
    return AuditRecord.from_dict(data, path=where, verify=verify)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")
