"""Audit records: a resolution written down as JSON run metadata, read back, compared, flattened."""

from layerconf.audits.record import AUDIT_FILE, FORMAT, AuditChange, AuditRecord, OpaqueValue
from layerconf.audits.record import _record_bytes as record_bytes
from layerconf.audits.record import _write_atomic as write_atomic
from layerconf.audits.record import audit, diff_audits, flatten, load_audit, write_audit

__all__ = [
    "AUDIT_FILE",
    "FORMAT",
    "AuditChange",
    "AuditRecord",
    "OpaqueValue",
    "audit",
    "diff_audits",
    "flatten",
    "load_audit",
    "record_bytes",
    "write_atomic",
    "write_audit",
]
