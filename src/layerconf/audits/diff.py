"""Comparing audit records: what changed from one run to another, key by key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from layerconf.audits.codec import Decoder, decode_origin, plain_dict, value_types
from layerconf.audits.record import RECORD as _RECORD
from layerconf.audits.record import RECORD_TAKES as _RECORD_TAKES
from layerconf.audits.record import AuditRecord, lookup_entry, record_data
from layerconf.core.checks import check_type
from layerconf.core.lazy import record_repr
from layerconf.core.records import Origin
from layerconf.core.secrets import redact
from layerconf.core.values import same_value
from layerconf.exceptions import one_line

__all__ = ["AuditChange", "FileChange", "diff_audits", "diff_files"]


@attrs.frozen
class AuditChange:
    """One difference between two records: a value that changed, appeared or disappeared.

    `key` is None when a whole role was added or removed. The values are decoded; the
    origins say which layer set each side. Its str() and repr() show the values redacted
    (`redact`): a record of someone else's may hold a secret.
    """

    role: str
    key: str | None
    kind: Literal["changed", "added", "removed"]
    before: Any = None
    after: Any = None
    before_origin: Origin | None = None
    after_origin: Origin | None = None

    def __str__(self) -> str:
        """One line, whatever the names of a record from anywhere hold (`one_line`)."""
        return one_line(self._text())

    def __repr__(self) -> str:
        return record_repr(self._redacted())

    def _redacted(self) -> AuditChange:
        key = self.key or ""
        return attrs.evolve(self, before=redact(key, self.before), after=redact(key, self.after))

    def _text(self) -> str:
        if self.key is None:
            return f"role {self.role}: {self.kind}"
        name = f"{self.role} {self.key}"
        shown = self._redacted()
        before = _side(shown.before, self.before_origin)
        after = _side(shown.after, self.after_origin)
        if self.kind == "added":
            return f"{name}: added {after}"
        if self.kind == "removed":
            return f"{name}: removed {before}"
        return f"{name}: {before} -> {after}"


def _side(value: Any, origin: Origin | None) -> str:
    return f"{value!r} from {origin.where}" if origin is not None else repr(value)


def diff_audits(
    before: AuditRecord | Mapping[str, Any], after: AuditRecord | Mapping[str, Any]
) -> list[AuditChange]:
    """What changed from one run's record to another's, key by key, with the layer of each.

    Values are compared exactly as they are encoded: ``1``, ``1.0`` and ``True`` differ.
    Mappings are compared leaf by leaf (``opt.beta2``). Redacted secrets always compare equal.
    A dict that is no record `load_audit` would read raises `AuditError`.
    """
    check_type("diff_audits", "before", before, _RECORD, _RECORD_TAKES)
    check_type("diff_audits", "after", after, _RECORD, _RECORD_TAKES)
    old, new = record_data(before)["roles"], record_data(after)["roles"]
    # The enum classes either record's reader trusts (the standard ones when neither is read).
    trusted = [
        cls
        for r in (before, after)
        if isinstance(r, AuditRecord)
        for cls in r.types.classes.values()
    ]
    decoder = Decoder(False, "diff", value_types(trusted))
    changes: list[AuditChange] = []
    for role in [*old, *(role for role in new if role not in old)]:
        if role not in new or role not in old:
            changes.append(AuditChange(role, None, "removed" if role not in new else "added"))
            continue
        a, b = old[role], new[role]
        keys = [*a["settings"], *(key for key in b["settings"] if key not in a["settings"])]
        for key in keys:
            changes.extend(_diff_entry(role, key, a, b, decoder))
    return changes


_MISSING = object()


def _diff_entry(
    role: str,
    key: str,
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    decoder: Decoder,
    values: tuple[Any, Any] | None = None,
    origins: tuple[Origin | None, Origin | None] = (None, None),
) -> list[AuditChange]:
    missing: Any = _MISSING
    if values is None:
        entry_a, entry_b = a["settings"].get(key), b["settings"].get(key)
        value_a = entry_a["value"] if entry_a is not None else missing
        value_b = entry_b["value"] if entry_b is not None else missing
    else:
        entry_a, entry_b = lookup_entry(a, key), lookup_entry(b, key)
        value_a, value_b = values
    if value_a is not missing and value_b is not missing and same_value(value_a, value_b):
        return []
    # A leaf without an entry of its own has the origin of the mapping that holds it.
    origin_a = decode_origin(entry_a) if entry_a is not None else origins[0]
    origin_b = decode_origin(entry_b) if entry_b is not None else origins[1]
    if value_a is missing:
        return [
            AuditChange(role, key, "added", after=decoder.value(value_b), after_origin=origin_b)
        ]
    if value_b is missing:
        return [
            AuditChange(role, key, "removed", before=decoder.value(value_a), before_origin=origin_a)
        ]
    if plain_dict(value_a) and plain_dict(value_b) and value_a and value_b:
        changes: list[AuditChange] = []
        for name in [*value_a, *(name for name in value_b if name not in value_a)]:
            changes.extend(
                _diff_entry(
                    role,
                    f"{key}.{name}",
                    a,
                    b,
                    decoder,
                    (value_a.get(name, missing), value_b.get(name, missing)),
                    (origin_a, origin_b),
                )
            )
        if changes:
            return changes
    return [
        AuditChange(
            role,
            key,
            "changed",
            decoder.value(value_a),
            decoder.value(value_b),
            origin_a,
            origin_b,
        )
    ]


@attrs.frozen
class FileChange:
    """A file read by one run and not the other, or read by both with other bytes: its path
    and the sha256 each record holds (None on the side that did not read it)."""

    path: str
    before: str | None
    after: str | None

    def __str__(self) -> str:
        """One line, whatever the path of a record from anywhere holds (`one_line`)."""
        if self.before is None:
            text = f"{self.path}: added (sha256 {self.after})"
        elif self.after is None:
            text = f"{self.path}: removed (sha256 {self.before})"
        else:
            text = f"{self.path}: sha256 {self.before} -> {self.after}"
        return one_line(text)


def diff_files(
    before: AuditRecord | Mapping[str, Any], after: AuditRecord | Mapping[str, Any]
) -> list[FileChange]:
    """The files (role files) whose sha256 differs between two records, by path: a file
    edited between two runs shows here even when no value it set changed."""
    check_type("diff_files", "before", before, _RECORD, _RECORD_TAKES)
    check_type("diff_files", "after", after, _RECORD, _RECORD_TAKES)
    old, new = record_data(before)["files"], record_data(after)["files"]
    return [
        FileChange(path, old.get(path), new.get(path))
        for path in [*old, *(path for path in new if path not in old)]
        if old.get(path) != new.get(path)
    ]
