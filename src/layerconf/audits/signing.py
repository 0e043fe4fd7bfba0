"""Signed records: an HMAC-SHA256 over the whole record, made and checked with a shared key.

The fingerprint says a record's values are intact (it detects accidents); anyone can recompute
it after changing a value. A signature says the record was written by someone who holds the key
and not changed since: `sign` adds ``"signature": {"alg": "hmac-sha256", "value": hex}``, the
HMAC of the canonical text of every other field, and `check_signature` refuses a record whose
signature is missing or does not match. Keep the key where only the runs that write records
(and whoever checks them) can read it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from typing import Any, Union

from layerconf.audits.codec import canonical
from layerconf.core.checks import check_type
from layerconf.exceptions import AuditError

__all__ = ["ALGORITHM", "Key", "check_signature", "key_bytes", "sign"]

#: The one signature algorithm records use.
ALGORITHM = "hmac-sha256"
#: A signing key: bytes, or text (its UTF-8 bytes).
Key = Union[bytes, str]
#: The fields of a signature, exactly: any other would not be covered by the HMAC.
_FIELDS = frozenset({"alg", "value"})
#: The value of a signature: the HMAC-SHA256 as 64 lowercase hex digits.
_DIGEST = re.compile(r"[0-9a-f]{64}")


def key_bytes(key: Key) -> bytes:
    """`key` as bytes; an empty key (or one of another type) is refused, never used."""
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, (bytes, bytearray)):
        raise TypeError(f"a signing key is bytes or text (got {type(key).__name__})")
    if not key:
        raise ValueError("a signing key must not be empty")
    return bytes(key)


def _unsigned(record: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in record.items() if name != "signature"}


def _digest(unsigned: Mapping[str, Any], key: Key) -> str:
    """The HMAC of a record without its signature."""
    text = canonical(unsigned).encode("ascii")
    return hmac.new(key_bytes(key), text, hashlib.sha256).hexdigest()


def sign(record: Mapping[str, Any], key: Key) -> dict[str, Any]:
    """`record` with its signature under `key` (a new dict; any earlier signature replaced)."""
    check_type("sign", "record", record, Mapping, "a record, such as audit(roles)")
    signed = _unsigned(record)
    signed["signature"] = {"alg": ALGORITHM, "value": _digest(signed, key)}
    return signed


def check_signature(record: Mapping[str, Any], key: Key, where: str | None = None) -> None:
    """Raise `AuditError` unless `record` carries a signature that `key` made of it."""
    signature = record.get("signature")
    if signature is None:
        raise AuditError(
            "the record is not signed, and a key was given to check its signature: it was "
            "written without a key, or its signature was removed",
            where,
        )
    if (
        not isinstance(signature, Mapping)
        or signature.get("alg") != ALGORITHM
        or not isinstance(signature.get("value"), str)
    ):
        raise AuditError(
            f"the record's signature is not an {ALGORITHM} signature this layerconf checks",
            where,
        )
    if set(signature) != _FIELDS or not _DIGEST.fullmatch(signature["value"]):
        # Fields beside alg and value are not covered by the HMAC: refused, never shown as
        # signed; a value of another shape (non-ASCII text) is no digest at all.
        raise AuditError(
            f"the record's signature is not an {ALGORITHM} signature this layerconf checks: "
            'it must be exactly {"alg", "value"}, the value 64 lowercase hex digits',
            where,
        )
    expected = _digest(_unsigned(record), key).encode("ascii")
    if not hmac.compare_digest(signature["value"].encode("ascii"), expected):
        raise AuditError(
            "the record's signature does not match: it was changed after it was signed, or "
            "signed with another key",
            where,
        )
