"""Audit records: one resolution written down as JSON run metadata, replayable and fingerprinted.

`audit(roles)` turns the namespaces of one resolution into a JSON-shaped dict: every key of
every role with its value and origin (and the values it shadowed), the command line, the role
files and their sha256, the notices and what the rules did, and a fingerprint of the values.
`write_audit` writes it atomically; `load_audit` reads it back as an `AuditRecord`, whose
`namespace(role)` replays the configuration as a `Namespace` that `explain` understands.
The format is versioned and documented in docs/audit.md.

Secrets (see `_secrets`) never reach a record: their values are replaced where they are
values, and searched for and replaced in every other text of the record.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import enum
import hashlib
import importlib
import json
import math
import os
import pathlib
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import attrs

from layerconf.core.explain import explain, explain_all
from layerconf.core.namespace import Namespace, Provenance, provenance_of
from layerconf.core.records import Layer, Origin, Path, Reason, Setting, join_path, split_key
from layerconf.core.secrets import SECRETS, SecretPolicy, redact_argv, secret_texts
from layerconf.core.suggest import suggestion
from layerconf.core.values import MAX_INT_BITS, same_value
from layerconf.exceptions import AuditError, Problem, UnknownKeyError
from layerconf.sources.base import ARGV, FILES

__all__ = [
    "AUDIT_FILE",
    "FORMAT",
    "AuditChange",
    "AuditError",
    "AuditRecord",
    "OpaqueValue",
    "audit",
    "diff_audits",
    "flatten",
    "load_audit",
    "write_audit",
]

#: The version of the record format this module writes and reads.
FORMAT = 1
#: The name of the file `write_audit` writes.
AUDIT_FILE = "layerconf-audit.json"

_TAG = "$type"
_AGAIN = "write it again with layerconf.write_audit(roles, directory)"
_FINGERPRINT_PREFIX = b"layerconf-fingerprint-1\n"
_ORIGIN_FIELDS = (
    "layer",
    "kind",
    "source",
    "line",
    "column",
    "argv_index",
    "token",
    "rule",
    "label",
)
_PATH_CLASSES = {
    cls.__name__: cls
    for cls in (
        pathlib.PurePath,
        pathlib.PurePosixPath,
        pathlib.PureWindowsPath,
        pathlib.Path,
        pathlib.PosixPath,
        pathlib.WindowsPath,
    )
}
_PURE_FALLBACK = {
    "Path": "PurePath",
    "PosixPath": "PurePosixPath",
    "WindowsPath": "PureWindowsPath",
}


@attrs.frozen(repr=False)
class OpaqueValue:
    """A value an audit could record only as text (an arbitrary object): its class and repr.

    Replaying a record gives this stand-in where the original object stood; it encodes back to
    the same record entry, so the fingerprint of a replayed configuration is unchanged.
    """

    class_name: str
    text: str

    def __repr__(self) -> str:
        return self.text


# --- Encoding values ----------------------------------------------------------------------


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _canonical(value: Any) -> str:
    """The canonical text of an encoded value: sorted keys, no spaces, ASCII, no NaN."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def _nonfinite(value: float) -> str:
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


# The address in a default repr (``<Foo object at 0x7f3a...>``) differs in every process.
_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+")


def _safe_repr(value: Any) -> str:
    """repr(value) without its memory addresses, or a placeholder when repr() fails."""
    try:
        text = repr(value)
    except Exception as error:  # a broken __repr__ must not break the record
        return f"<{_qualified(type(value))} object; repr() raised {type(error).__name__}>"
    if not isinstance(text, str):
        return f"<{_qualified(type(value))} object>"
    return _ADDRESS.sub(" at 0x...", text)


class _Encoder:
    """Encodes values into JSON-shaped data, redacting secrets and remembering their values."""

    def __init__(self, policy: SecretPolicy) -> None:
        self.policy = policy
        self.found: list[str] = []  # secret values met, to search for in the record's text
        self._active: set[int] = set()  # containers being encoded (a cycle is not followed)
        # Per origin object (kept alive here, so that its id is not reused by another one).
        self._origins: dict[int, tuple[Origin, dict[str, Any]]] = {}

    def field(self, secret: bool, value: Any) -> Any:
        """The encoded value, or the placeholder when it is a secret's (None stays null)."""
        if not secret:
            return self.value(value)
        if value is None:
            return None
        self.found.extend(secret_texts(value))
        return self.policy.placeholder

    def value(self, value: Any) -> Any:
        kind = type(value)
        if kind is str or kind is bool or value is None:
            return value
        if kind is int:
            if value.bit_length() > MAX_INT_BITS:  # written as hex: it must never fail
                return {_TAG: "int", "hex": hex(value)}
            return value
        if kind is float:
            return value if math.isfinite(value) else {_TAG: "float", "value": _nonfinite(value)}
        if kind is list:
            return self._container(value, lambda: [self.value(item) for item in value])
        if kind is dict:
            return self._container(value, lambda: self._dict(value))
        return self._tagged(value)

    def _container(self, value: Any, encode: Any) -> Any:
        marker = id(value)
        if marker in self._active:
            return {_TAG: "object", "class": _qualified(type(value)), "repr": "<cycle>"}
        self._active.add(marker)
        try:
            return encode()
        finally:
            self._active.discard(marker)

    def _dict(self, value: Mapping[Any, Any]) -> Any:
        if type(value) is dict and _TAG not in value and all(type(k) is str for k in value):
            is_secret = self.policy.is_secret
            return {key: self.field(is_secret(key), item) for key, item in value.items()}
        # Keys JSON cannot hold (or a key that would read as a tag): a sorted list of pairs.
        items = [
            [self.value(key), self.field(self.policy.is_secret(key), item)]
            for key, item in value.items()
        ]
        items.sort(key=lambda pair: _canonical(pair[0]))
        tagged: dict[str, Any] = {_TAG: "dict", "items": items}
        if type(value) is not dict:
            tagged["class"] = _qualified(type(value))
        return tagged

    def _sequence(self, tag: str, value: Any, *, ordered: bool) -> dict[str, Any]:
        items = [self.value(item) for item in value]
        if not ordered:
            items.sort(key=_canonical)
        tagged: dict[str, Any] = {_TAG: tag, "items": items}
        if type(value).__name__ != tag:  # a subclass: say which, it decodes as the base type
            tagged["class"] = _qualified(type(value))
        return tagged

    def _tagged(self, value: Any) -> Any:
        try:
            return self._tagged_or_raise(value)
        except Exception:  # a value whose int(), str(), iteration... raises is still recorded
            return {_TAG: "object", "class": _qualified(type(value)), "repr": _safe_repr(value)}

    def _tagged_or_raise(self, value: Any) -> Any:
        cls = type(value)
        if isinstance(value, enum.Enum):
            return self._enum(value)
        if isinstance(value, OpaqueValue):
            return {_TAG: "object", "class": value.class_name, "repr": value.text}
        if isinstance(value, float):
            number = float(value)
            shown = number if math.isfinite(number) else _nonfinite(number)
            return {_TAG: "float", "class": _qualified(cls), "value": shown}
        if isinstance(value, int) or _is_integral(value):
            number = int(value)
            if number.bit_length() > MAX_INT_BITS:
                return {_TAG: "int", "class": _qualified(cls), "hex": hex(number)}
            return {_TAG: "int", "class": _qualified(cls), "value": number}
        if isinstance(value, str):
            return {_TAG: "str", "class": _qualified(cls), "value": str(value)}
        if isinstance(value, (bytes, bytearray)):
            tag = "bytearray" if isinstance(value, bytearray) else "bytes"
            return {_TAG: tag, "base64": base64.b64encode(bytes(value)).decode("ascii")}
        if isinstance(value, complex):
            return {_TAG: "complex", "repr": repr(complex(value))}
        if isinstance(value, pathlib.PurePath):
            name = cls.__name__ if cls.__name__ in _PATH_CLASSES else "PurePath"
            return {_TAG: "path", "class": name, "path": str(value)}
        if isinstance(value, (tuple, list, set, frozenset, Mapping)):
            return self._container(value, lambda: self._container_tagged(value))
        return {_TAG: "object", "class": _qualified(cls), "repr": _safe_repr(value)}

    def _container_tagged(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            return self._dict(value)
        if isinstance(value, tuple):
            return self._sequence("tuple", value, ordered=True)
        if isinstance(value, list):
            return self._sequence("list", value, ordered=True)
        tag = "frozenset" if isinstance(value, frozenset) else "set"
        return self._sequence(tag, value, ordered=False)

    def _enum(self, member: enum.Enum) -> dict[str, Any]:
        cls = type(member)
        tagged: dict[str, Any] = {_TAG: "enum", "class": _qualified(cls), "name": member.name}
        if member.name is None or cls.__members__.get(member.name) is not member:
            # A composite flag (or an alias-less pseudo-member): rebuilt from its value.
            tagged["name"] = None
            tagged["value"] = self.value(member.value)
        return tagged

    def origin(self, origin: Origin | None) -> dict[str, Any]:
        """The non-null fields of `origin`, in a fixed order (cached per origin object)."""
        if origin is None:
            return {}
        cached = self._origins.get(id(origin))
        if cached is not None:
            return cached[1]
        fields = {}
        for name in _ORIGIN_FIELDS:
            value = getattr(origin, name)
            if value is not None:
                fields[name] = value
        self._origins[id(origin)] = (origin, fields)
        return fields


def _is_integral(value: Any) -> bool:
    """A number that is an integer without being an int (numpy's int64, for one)."""
    index = getattr(type(value), "__index__", None)
    return index is not None and not isinstance(value, (bool, enum.Enum))


# --- Decoding values ----------------------------------------------------------------------


def _import_object(qualified: str) -> Any:
    """The object named ``module.qualname``, importing the longest importable module prefix."""
    parts = qualified.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            target: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                target = getattr(target, name)
        except AttributeError:
            continue
        return target
    raise ImportError(f"no importable module defines {qualified!r}")


class _Decoder:
    """Decodes encoded values; `strict` raises on a value it cannot rebuild, else stands in."""

    def __init__(self, strict: bool, where: str) -> None:
        self.strict = strict
        self.where = where

    def value(self, value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            tag = value.get(_TAG)
            if tag is None:
                return {key: self.value(item) for key, item in value.items()}
            return self._tagged(tag, value)
        if kind is list:
            return [self.value(item) for item in value]
        return value

    def _fail(self, data: Mapping[str, Any], reason: str) -> Any:
        if self.strict:
            raise AuditError(f"{self.where}: cannot rebuild {_canonical(data)}: {reason}")
        return OpaqueValue(str(data.get("class", data.get(_TAG))), _canonical(data))

    def _tagged(self, tag: Any, data: Mapping[str, Any]) -> Any:
        try:
            if tag == "enum":
                return self._enum(data)
            if tag == "float":
                return float(data["value"])
            if tag == "int":
                return int(data["hex"], 16) if "hex" in data else int(data["value"])
            if tag == "str":
                return str(data["value"])
            if tag == "tuple":
                return tuple(self.value(item) for item in data["items"])
            if tag == "list":
                return [self.value(item) for item in data["items"]]
            if tag == "set":
                return {self.value(item) for item in data["items"]}
            if tag == "frozenset":
                return frozenset(self.value(item) for item in data["items"])
            if tag == "dict":
                return {self.value(key): self.value(item) for key, item in data["items"]}
            if tag == "bytes":
                return base64.b64decode(data["base64"], validate=True)
            if tag == "bytearray":
                return bytearray(base64.b64decode(data["base64"], validate=True))
            if tag == "complex":
                return complex(data["repr"])
            if tag == "path":
                return self._path(data)
            if tag == "object":
                return OpaqueValue(str(data["class"]), str(data["repr"]))
        except AuditError:
            raise
        except Exception as error:
            return self._fail(data, f"{type(error).__name__}: {error}")
        return self._fail(data, f"unknown tag {tag!r} (this layerconf reads format {FORMAT})")

    def _enum(self, data: Mapping[str, Any]) -> Any:
        qualified = data["class"]
        try:
            cls = _import_object(qualified)
        except ImportError as error:
            return self._fail(data, f"{error}; import the module that defines it first")
        if not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
            return self._fail(data, f"{qualified!r} is not an enum class")
        if data.get("name") is not None:
            return cls[data["name"]]
        return cls(self.value(data["value"]))

    def _path(self, data: Mapping[str, Any]) -> Any:
        name = data["class"]
        cls = _PATH_CLASSES[name]
        try:
            return cls(data["path"])
        except (NotImplementedError, OSError, TypeError):  # a WindowsPath read on POSIX...
            return _PATH_CLASSES[_PURE_FALLBACK.get(name, "PurePath")](data["path"])


# --- Building a record --------------------------------------------------------------------

_History = list[tuple[Any, Origin, Reason, str | None]]


def audit(
    roles: Mapping[str, argparse.Namespace], *, secrets: SecretPolicy = SECRETS
) -> dict[str, Any]:
    """A JSON-serialisable record of one resolution (format 1, see docs/audit.md).

    `roles` maps a role name to its namespace (what `resolve_roles` returns; a namespace
    without provenance is recorded without origins). The values of the keys `secrets` names
    are replaced by ``"<redacted>"`` everywhere, the command line included.
    """
    from layerconf import __version__

    if isinstance(roles, argparse.Namespace) or not isinstance(roles, Mapping):
        raise TypeError(
            f"audit() takes a mapping of role name to namespace (got {type(roles).__name__}); "
            "write audit({'actor': args}) for one namespace"
        )
    encoder = _Encoder(secrets)
    argv: list[str] | None = None
    files: dict[str, str] = {}
    sections: dict[str, dict[str, Any]] = {}
    role_argv: dict[str, list[str] | None] = {}
    for role, namespace in roles.items():
        if not isinstance(namespace, argparse.Namespace):
            raise TypeError(
                f"audit() records argparse namespaces (got {type(namespace).__name__} for "
                f"role {role!r})"
            )
        provenance = provenance_of(namespace)
        sections[str(role)] = _role_section(namespace, provenance, encoder)
        if provenance is not None:
            files.update(provenance.inputs.get(FILES, {}))
            own: list[str] | None = None
            command_line = provenance.inputs.get(ARGV)
            if command_line is not None:
                own, found = redact_argv(command_line, secrets)
                encoder.found.extend(found)
                if argv is None:
                    argv = own
            role_argv[str(role)] = own
    for role, command_line in role_argv.items():
        if command_line != argv:  # resolved from another command line than the first role's
            sections[role]["argv"] = command_line

    record: dict[str, Any] = {
        "format": FORMAT,
        "layerconf": __version__,
        "fingerprint": "",
        "argv": argv,
        "files": dict(sorted(files.items())),
        "roles": sections,
    }
    scrub = sorted(
        {text for text in encoder.found if len(text) >= secrets.min_scrub_length},
        key=len,
        reverse=True,  # the longest first, so a secret that contains another goes whole
    )
    if scrub:
        record = _scrub(record, scrub, secrets.placeholder)
    record["fingerprint"] = _fingerprint(record["roles"])
    return record


def _role_section(
    namespace: argparse.Namespace, provenance: Provenance | None, encoder: _Encoder
) -> dict[str, Any]:
    values = vars(namespace)
    is_secret = encoder.policy.is_secret
    settings: dict[str, Any] = {}
    leaves: dict[str, Any] = {}
    for key, value, origin, history in _settings(namespace, provenance):
        secret = is_secret(key)
        settings[str(key)] = _entry(encoder, secret, value, origin, history)
        if (
            provenance is not None
            and not secret
            and type(value) is dict
            and value
            and "." not in key
        ):
            for path in _leaf_paths(value, (key,), is_secret):
                dotted = join_path(path)
                if dotted in values:
                    continue  # a top-level key spelt like this path: explain means that one
                setting = explain(namespace, dotted)
                leaf_secret = is_secret(path[-1])
                leaves[dotted] = _entry(
                    encoder, leaf_secret, setting.value, *_from_setting(setting)
                )
    section: dict[str, Any] = {
        "layers": [],
        "policies": [],
        "settings": settings,
        "leaves": leaves,
        "events": [],
        "notices": [],
    }
    if provenance is None:
        return section
    section["layers"] = [
        {"name": layer.name, "kind": layer.kind, **_optional(source=layer.source)}
        for layer in provenance.layers
    ]
    section["policies"] = [
        {"path": list(path), "policy": policy} for path, policy in provenance.policies.items()
    ]
    section["events"] = [
        {
            "key": join_path(path),
            "action": event.action,
            "rule": event.rule,
            "value": encoder.field(any(is_secret(part) for part in path), event.value),
            **encoder.origin(event.origin),
        }
        for path, events in provenance.events.items()
        for event in events
    ]
    section["notices"] = [_problem(problem) for problem in provenance.notices]
    return section


def _settings(
    namespace: argparse.Namespace, provenance: Provenance | None
) -> Iterator[tuple[str, Any, Origin | None, _History]]:
    """(key, value, origin, history newest first) for every key, as `explain` says."""
    values = vars(namespace)
    if provenance is None:
        for key, value in values.items():
            yield key, value, None, []
        return
    for key, setting in explain_all(namespace).items():
        yield key, values[key], *_from_setting(setting)


def _from_setting(setting: Setting) -> tuple[Origin, _History]:
    history: _History = [
        (entry.value, entry.origin, entry.reason or Reason.OVERRIDDEN, entry.by)
        for entry in setting.history
    ]
    return setting.origin, history


def _entry(
    encoder: _Encoder, secret: bool, value: Any, origin: Origin | None, history: _History
) -> dict[str, Any]:
    entry: dict[str, Any] = {"value": encoder.field(secret, value)}
    entry.update(encoder.origin(origin))
    if history:
        shadowed = []
        for old, old_origin, reason, by in history:
            item: dict[str, Any] = {"value": encoder.field(secret, old), "reason": reason.value}
            if by is not None:
                item["by"] = by
            item.update(encoder.origin(old_origin))
            shadowed.append(item)
        entry["history"] = shadowed
    return entry


def _leaf_paths(tree: dict[str, Any], prefix: Path, is_secret: Any) -> Iterator[Path]:
    """The paths of the leaves `explain` can name in `tree` (string keys without dots)."""
    for name, value in tree.items():
        if type(name) is not str or not name or "." in name:
            continue
        path = (*prefix, name)
        yield path
        if type(value) is dict and value and not is_secret(name):
            yield from _leaf_paths(value, path, is_secret)


def _optional(**fields: Any) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


def _problem(problem: Problem) -> dict[str, Any]:
    return _optional(**attrs.asdict(problem))


def _scrub(value: Any, secrets: Sequence[str], placeholder: str) -> Any:
    """`value` with every occurrence of a secret in any string replaced (keys are names)."""
    kind = type(value)
    if kind is str:
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, placeholder)
        return value
    if kind is dict:
        return {key: _scrub(item, secrets, placeholder) for key, item in value.items()}
    if kind is list:
        return [_scrub(item, secrets, placeholder) for item in value]
    return value


def _fingerprint(roles: Mapping[str, Mapping[str, Any]]) -> str:
    """sha256 of the canonical text of every role's values (see docs/audit.md)."""
    values = {
        role: {key: entry["value"] for key, entry in section["settings"].items()}
        for role, section in roles.items()
    }
    return hashlib.sha256(_FINGERPRINT_PREFIX + _canonical(values).encode("ascii")).hexdigest()


# --- Writing and reading ------------------------------------------------------------------


_COMPACT = json.JSONEncoder(ensure_ascii=True, allow_nan=False).encode


def _compact(value: Any) -> str:
    return _COMPACT(value)


def _dumps(value: Any, depth: int = 0) -> str:
    """The record as text: one line per key of a role (easy to grep and diff), else compact."""
    if depth < 4 and type(value) in (dict, list) and value:
        pad = " " * (depth + 1)
        if type(value) is dict:
            lines = [f"{pad}{_compact(k)}: {_dumps(v, depth + 1)}" for k, v in value.items()]
            return "{\n" + ",\n".join(lines) + "\n" + " " * depth + "}"
        lines = [pad + _dumps(item, depth + 1) for item in value]
        return "[\n" + ",\n".join(lines) + "\n" + " " * depth + "]"
    return _compact(value)


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
    return _write_atomic(
        pathlib.Path(directory), AUDIT_FILE, _record_bytes(audit(roles, secrets=secrets))
    )


def _record_bytes(record: Mapping[str, Any]) -> bytes:
    """The bytes of a record's file: what `write_audit` writes and ``layerconf audit`` prints."""
    return (_dumps(record) + "\n").encode("ascii")


def _write_atomic(directory: pathlib.Path, name: str, data: bytes) -> pathlib.Path:
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
        raise AuditError(f"the file is empty, not an audit record; {_AGAIN}", where)
    try:
        data = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as error:
        raise AuditError(
            f"not a layerconf audit record: it is not valid JSON ({error}); the file is "
            f"truncated or was not written by write_audit(): {_AGAIN}",
            where,
        ) from None
    return AuditRecord.from_dict(data, path=where, verify=verify)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _validate(data: Any) -> tuple[list[str], str]:
    """Every structural problem of a record (empty when fine), and what to do about them."""
    if not isinstance(data, dict):
        return [f"it is {_json_type(data)}, not an object"], _AGAIN
    if "format" not in data:
        return ["it has no 'format' field"], "is it a layerconf audit record?"
    version = data["format"]
    if version != FORMAT or isinstance(version, bool):
        from layerconf import __version__

        if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT:
            newer = f"format {version} was written by a newer layerconf ({data.get('layerconf')})"
            return [newer], f"this layerconf ({__version__}) reads format {FORMAT}: upgrade it"
        return [
            f"its format is {version!r}"
        ], f"this layerconf ({__version__}) reads format {FORMAT}"
    expect: dict[str, tuple[Any, str]] = {
        "layerconf": (str, "a string"),
        "fingerprint": (str, "a string"),
        "argv": ((list, type(None)), "an array or null"),
        "files": (dict, "an object"),
        "roles": (dict, "an object"),
    }
    problems: list[str] = []
    for name, (kind, wanted) in expect.items():
        if name not in data:
            problems.append(f"it has no {name!r} field")
        elif not isinstance(data[name], kind):
            problems.append(f"{name!r} is {_json_type(data[name])}, not {wanted}")
    if problems:
        return problems, _AGAIN
    for role, section in data["roles"].items():
        if not isinstance(section, dict) or not isinstance(section.get("settings"), dict):
            problems.append(f"roles.{role} has no 'settings' object")
            continue
        if not isinstance(section.get("leaves", {}), dict):
            problems.append(f"roles.{role}.leaves is not an object")
        for group in ("settings", "leaves"):
            entries = section.get(group, {})
            for key, entry in entries.items() if isinstance(entries, dict) else ():
                if not isinstance(entry, dict) or "value" not in entry:
                    problems.append(f"roles.{role}.{group}.{key} has no 'value'")
                elif "layer" in entry and not isinstance(entry["layer"], str):
                    problems.append(f"roles.{role}.{group}.{key}.layer is not a string")
        for part in ("layers", "policies", "events", "notices"):
            if not isinstance(section.get(part, []), list):
                problems.append(f"roles.{role}.{part} is not an array")
    return problems, _AGAIN


@attrs.frozen(eq=False)
class AuditRecord:
    """An audit record read back: its fields, the recorded settings, and replay.

    `data` is the record as `audit()` returned it (treat it as read-only); `path` is the
    file it was read from, if any. Compare two records with `diff_audits`.
    """

    data: Mapping[str, Any]
    path: str | None = None

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, path: str | None = None, verify: bool = True
    ) -> AuditRecord:
        """Check `data` (what `audit()` returns, or its JSON read back) and wrap it."""
        problems, advice = _validate(data)
        if problems:
            more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
            raise AuditError(
                f"not a readable layerconf audit record: {'; '.join(problems[:10])}{more}; "
                + advice,
                path,
            )
        if verify:
            computed = _fingerprint(data["roles"])
            if computed != data["fingerprint"]:
                raise AuditError(
                    f"the fingerprint {data['fingerprint']!r} does not match the recorded values "
                    f"(they give {computed!r}): the record was edited or damaged; write it again, "
                    "or read it with verify=False",
                    path,
                )
        return cls(data, path)

    @property
    def format(self) -> int:
        """The record's format version (1)."""
        return int(self.data["format"])

    @property
    def version(self) -> str:
        """The version of layerconf that wrote the record."""
        return str(self.data["layerconf"])

    @property
    def fingerprint(self) -> str:
        """The sha256 of the canonical text of every role's values (docs/audit.md)."""
        return str(self.data["fingerprint"])

    @property
    def argv(self) -> tuple[str, ...] | None:
        """The command line that was parsed, secrets redacted (None when none was)."""
        argv = self.data["argv"]
        return None if argv is None else tuple(argv)

    @property
    def files(self) -> dict[str, str]:
        """Each file read (a role file), by path, with the sha256 of its bytes."""
        return dict(self.data["files"])

    @property
    def roles(self) -> tuple[str, ...]:
        """The role names, in the order they were audited."""
        return tuple(self.data["roles"])

    def _section(self, role: str) -> Mapping[str, Any]:
        sections = self.data["roles"]
        if role not in sections:
            raise UnknownKeyError(
                f"no role {role!r} in this audit record (roles: {', '.join(sections)})"
                + suggestion(role, sections)
            )
        section: Mapping[str, Any] = sections[role]
        return section

    def values(self, role: str, *, strict: bool = True) -> dict[str, Any]:
        """The values of `role`, decoded (enums, tuples, sets, paths rebuilt)."""
        decoder = _Decoder(strict, self._where(role))
        return {
            key: decoder.value(entry["value"])
            for key, entry in self._section(role)["settings"].items()
        }

    def namespace(self, role: str, *, secrets: Mapping[str, Any] | None = None) -> Namespace:
        """Replay `role`: a `Namespace` equal to the one audited, which `explain` understands.

        `explain` gives each value's recorded origin (layer, file:line:col, argv index,
        rule); the values it shadowed are in `setting(role, key)`. Redacted secrets hold
        ``"<redacted>"`` unless `secrets` gives their values (``{"wandb_key": ...}``).
        Raises `AuditError` for a value that cannot be rebuilt (an enum whose module cannot
        be imported).
        """
        section = self._section(role)
        values = self.values(role)
        for key, value in (secrets or {}).items():
            if key not in values:
                raise UnknownKeyError(
                    f"{key!r} is not a key of role {role!r}{suggestion(key, values)}"
                )
            values[key] = value
        origins: dict[Path, Origin] = {}
        for key, entry in section["settings"].items():
            origin = _origin(entry)
            if origin is not None:
                origins[(key,)] = origin
        for dotted, entry in section.get("leaves", {}).items():
            origin = _origin(entry)
            if origin is not None:
                origins[split_key(dotted)] = origin
        layer = Layer(
            "audit",
            "audit",
            values,
            origin=Origin("audit", "audit", source=self.path),
            origins=origins,
        )
        argv = section.get("argv", self.data["argv"])
        provenance = Provenance(
            role,
            (layer,),
            {},
            {},
            tuple(_notice(notice) for notice in section.get("notices", ())),
            {ARGV: None if argv is None else tuple(argv), FILES: dict(self.data["files"])},
        )
        return Namespace._from_values(values, provenance)

    def namespaces(self, *, secrets: Mapping[str, Any] | None = None) -> dict[str, Namespace]:
        """`namespace(role)` of every role."""
        return {role: self.namespace(role, secrets=secrets) for role in self.roles}

    def setting(self, role: str, key: str) -> Setting:
        """The recorded `Setting` of `key` (a top-level key or a dotted path), with history."""
        section = self._section(role)
        entry = _lookup_entry(section, key)
        if entry is None:
            known = [*section["settings"], *section.get("leaves", {})]
            raise UnknownKeyError(
                f"{key!r} is not a key of role {role!r} in this record{suggestion(key, known)}"
            )
        decoder = _Decoder(False, self._where(role))
        history = tuple(
            Setting(
                key,
                decoder.value(item["value"]),
                _origin(item) or Origin("audit", "audit"),
                reason=Reason(item["reason"]),
                by=item.get("by"),
            )
            for item in entry.get("history", ())
        )
        origin = _origin(entry) or Origin("audit", "audit", source=self.path)
        return Setting(key, decoder.value(entry["value"]), origin, history, role=role)

    def to_dict(self) -> dict[str, Any]:
        """A copy of the record, as `audit()` returned it."""
        copied: dict[str, Any] = json.loads(json.dumps(self.data))
        return copied

    def _where(self, role: str) -> str:
        return f"{self.path or 'audit record'}: role {role}"


_PROBLEM_FIELDS = frozenset(attrs.fields_dict(Problem))


def _notice(data: Mapping[str, Any]) -> Problem:
    return Problem(**{name: value for name, value in data.items() if name in _PROBLEM_FIELDS})


def _origin(entry: Mapping[str, Any]) -> Origin | None:
    if "layer" not in entry:
        return None
    return Origin(**{name: entry[name] for name in _ORIGIN_FIELDS if name in entry})


# --- Comparing and flattening -------------------------------------------------------------


@attrs.frozen
class AuditChange:
    """One difference between two records: a value that changed, appeared or disappeared.

    `key` is None when a whole role was added or removed. The values are decoded; the
    origins say which layer set each side.
    """

    role: str
    key: str | None
    kind: Literal["changed", "added", "removed"]
    before: Any = None
    after: Any = None
    before_origin: Origin | None = None
    after_origin: Origin | None = None

    def __str__(self) -> str:
        if self.key is None:
            return f"role {self.role}: {self.kind}"
        name = f"{self.role} {self.key}"
        before = _side(self.before, self.before_origin)
        after = _side(self.after, self.after_origin)
        if self.kind == "added":
            return f"{name}: added {after}"
        if self.kind == "removed":
            return f"{name}: removed {before}"
        return f"{name}: {before} -> {after}"


def _side(value: Any, origin: Origin | None) -> str:
    return f"{value!r} from {origin.where}" if origin is not None else repr(value)


def _data(record: AuditRecord | Mapping[str, Any]) -> Mapping[str, Any]:
    return record.data if isinstance(record, AuditRecord) else record


def diff_audits(
    before: AuditRecord | Mapping[str, Any], after: AuditRecord | Mapping[str, Any]
) -> list[AuditChange]:
    """What changed from one run's record to another's, key by key, with the layer of each.

    Values are compared exactly as they are encoded: ``1``, ``1.0`` and ``True`` differ.
    Mappings are compared leaf by leaf (``opt.beta2``). Redacted secrets always compare equal.
    """
    old, new = _data(before)["roles"], _data(after)["roles"]
    decoder = _Decoder(False, "diff")
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


def _lookup_entry(section: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    entry: Mapping[str, Any] | None = section["settings"].get(key)
    if entry is None:
        entry = section.get("leaves", {}).get(key)
    return entry


def _diff_entry(
    role: str,
    key: str,
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    decoder: _Decoder,
    values: tuple[Any, Any] | None = None,
    origins: tuple[Origin | None, Origin | None] = (None, None),
) -> list[AuditChange]:
    missing: Any = _MISSING
    if values is None:
        entry_a, entry_b = a["settings"].get(key), b["settings"].get(key)
        value_a = entry_a["value"] if entry_a is not None else missing
        value_b = entry_b["value"] if entry_b is not None else missing
    else:
        entry_a, entry_b = _lookup_entry(a, key), _lookup_entry(b, key)
        value_a, value_b = values
    if value_a is not missing and value_b is not missing and same_value(value_a, value_b):
        return []
    # A leaf without an entry of its own has the origin of the mapping that holds it.
    origin_a = _origin(entry_a) if entry_a is not None else origins[0]
    origin_b = _origin(entry_b) if entry_b is not None else origins[1]
    if value_a is missing:
        return [
            AuditChange(role, key, "added", after=decoder.value(value_b), after_origin=origin_b)
        ]
    if value_b is missing:
        return [
            AuditChange(role, key, "removed", before=decoder.value(value_a), before_origin=origin_a)
        ]
    if _plain_dict(value_a) and _plain_dict(value_b) and value_a and value_b:
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


_MISSING = object()


def _plain_dict(value: Any) -> bool:
    return type(value) is dict and _TAG not in value


def flatten(
    record: AuditRecord | Mapping[str, Any], *, max_length: int | None = None
) -> dict[str, Any]:
    """The record's values as one flat mapping, ``{"critic/lr": 1e-05, ...}``.

    For a W&B config or MLflow params. Every value is a JSON scalar: numbers, booleans, None
    and strings stay; a nested mapping is flattened into dotted keys (``critic/opt.beta2``);
    other values become short text (an enum ``AttnBackend.flash``, a list ``["p2p"]``).
    With `max_length` (MLflow's limit is 6000), a longer text is split into parts
    ``critic/key[1/3]``, ``critic/key[2/3]``... that concatenate back; nothing is dropped.
    """
    if max_length is not None and max_length < 1:
        raise ValueError(f"max_length must be at least 1 (got {max_length})")
    flat: dict[str, Any] = {}
    for role, section in _data(record)["roles"].items():
        for key, entry in section["settings"].items():
            _flatten_into(flat, f"{role}/{key}", entry["value"], max_length)
    return flat


def _flatten_into(flat: dict[str, Any], name: str, value: Any, limit: int | None) -> None:
    if _plain_dict(value) and value:
        for key, item in value.items():
            _flatten_into(flat, f"{name}.{key}", item, limit)
        return
    if value is None or type(value) in (bool, int, float):
        _put(flat, name, value)
        return
    if type(value) is dict and value.get(_TAG) in ("int", "float") and "value" in value:
        number = value["value"]  # a number of another class (numpy's), or "nan"
        _put(flat, name, number if type(number) in (int, float) else str(number))
        return
    text = value if type(value) is str else _text(value)
    if limit is None or len(text) <= limit:
        _put(flat, name, text)
        return
    parts = [text[start : start + limit] for start in range(0, len(text), limit)]
    for number, part in enumerate(parts, start=1):
        _put(flat, f"{name}[{number}/{len(parts)}]", part)


def _put(flat: dict[str, Any], name: str, value: Any) -> None:
    if name in flat:  # a key "opt.b" and a mapping "opt" holding "b": never drop one silently
        raise ValueError(
            f"flatten() gives two values the name {name!r} ({flat[name]!r} and {value!r}); "
            "rename one of the keys, or read the record's roles directly"
        )
    flat[name] = value


def _text(value: Any) -> str:
    """Short text for an encoded value: tags read as what they hold."""
    if type(value) is dict and value.get(_TAG) in ("enum", "path", "object", "float", "int", "str"):
        shown = _plain(value)
        return shown if isinstance(shown, str) else _compact(shown)
    return json.dumps(_plain(value), ensure_ascii=False, allow_nan=False)


def _plain(value: Any) -> Any:
    """An encoded value made JSON-plain for display (not reversible)."""
    if type(value) is list:
        return [_plain(item) for item in value]
    if type(value) is not dict:
        return value
    tag = value.get(_TAG)
    if tag is None:
        return {key: _plain(item) for key, item in value.items()}
    if tag == "enum":
        short = str(value["class"]).rsplit(".", 1)[-1]
        if value.get("name") is not None:
            return f"{short}.{value['name']}"
        return f"{short}({_compact(value.get('value'))})"
    if tag == "path":
        return value["path"]
    if tag == "object":
        return value["repr"]
    if tag in ("float", "int", "str"):
        return value.get("value", value.get("hex"))
    if tag in ("tuple", "list", "set", "frozenset"):
        return [_plain(item) for item in value["items"]]
    if tag == "dict":
        return {_compact(_plain(key)): _plain(item) for key, item in value["items"]}
    if tag == "complex":
        return value["repr"]
    return value
