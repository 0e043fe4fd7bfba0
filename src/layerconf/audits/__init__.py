"""Audit records: a resolution written down as JSON run metadata, read back, compared, flattened."""

from layerconf.audits.codec import FORMAT, OpaqueValue, ValueTypes, standard_types
from layerconf.audits.diff import AuditChange, diff_audits
from layerconf.audits.export import flatten
from layerconf.audits.io import AUDIT_FILE, load_audit, record_bytes, write_atomic, write_audit
from layerconf.audits.record import AuditRecord, audit
from layerconf.audits.signing import sign

__all__ = [
    "AUDIT_FILE",
    "FORMAT",
    "AuditChange",
    "AuditRecord",
    "OpaqueValue",
    "ValueTypes",
    "audit",
    "diff_audits",
    "flatten",
    "load_audit",
    "record_bytes",
    "sign",
    "standard_types",
    "write_atomic",
    "write_audit",
]
