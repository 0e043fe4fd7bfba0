"""Exporting an audit record: its values as one flat mapping of JSON scalars."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from layerconf.audits.codec import TAG, compact, plain_dict
from layerconf.audits.record import RECORD as _RECORD
from layerconf.audits.record import RECORD_TAKES as _RECORD_TAKES
from layerconf.audits.record import AuditRecord, record_data
from layerconf.core.checks import check_type

__all__ = ["flatten"]


def flatten(
    record: AuditRecord | Mapping[str, Any], *, max_length: int | None = None
) -> dict[str, Any]:
    """The record's values as one flat mapping, ``{"critic/lr": 1e-05, ...}``.

    For a W&B config or MLflow params. Every value is a JSON scalar: numbers, booleans, None
    and strings stay; a nested mapping is flattened into dotted keys (``critic/opt.beta2``);
    other values become short text (an enum ``AttnBackend.flash``, a list ``["p2p"]``).
    With `max_length` (MLflow's limit is 6000), a longer text is split into parts
    ``critic/key--1-of-3``, ``critic/key--2-of-3``... that concatenate back; nothing is dropped.
    A dict that is no record `load_audit` would read raises `AuditError`.

    Every name is one MLflow and W&B keep as written (see `_tracker_name`): a legal
    ``role/key`` is unchanged, anything else is escaped as docs/audit.md says.
    """
    check_type("flatten", "record", record, _RECORD, _RECORD_TAKES)
    check_type("flatten", "max_length", max_length, (int, type(None)), "an int or None")
    if max_length is not None and max_length < 1:
        raise ValueError(f"max_length must be at least 1 (got {max_length})")
    flat: dict[str, Any] = {}
    for role, section in record_data(record)["roles"].items():
        for key, entry in section["settings"].items():
            _flatten_into(flat, (str(role), str(key)), entry["value"], max_length)
    return flat


# What MLflow 3 accepts in a param name on every platform (mlflow.utils.validation: Windows
# refuses ':' too), less '/', which flatten keeps for the one role separator.
_LEGAL = re.compile(r"[A-Za-z0-9_.\- ]+")
_MAX_NAME = 250  # MLflow's MAX_ENTITY_KEY_LENGTH


def _tracker_name(role: str, path: tuple[str, ...], suffix: str = "") -> str:
    """``role/key.sub`` (plus `suffix`) as a name MLflow and W&B both keep as written.

    A legal name is unchanged. Otherwise: a character MLflow refuses (anything but ASCII
    letters, digits, ``_ . - `` and space), a ``/`` inside a role or key, or a whole segment
    ``.`` or ``..`` (MLflow refuses a name that is not a normal path) is written ``_xHH_`` (its
    code point in hex); an empty role or key ``_x_``; a leading ``-`` or ``_`` (W&B strips a
    dash and hides a key starting with ``_``) ``XHH_``, a trailing ``-`` ``_x2d_``. A name
    longer than MLflow's 250 characters keeps its start and ends with ``_h`` and 8 hex digits
    of its sha256. Two keys that still meet make `flatten` raise rather than keep one.
    """
    key = ".".join(path)
    name = f"{_segment(role)}/{_segment(key)}"
    if name[0] in "-_":
        name = f"X{ord(name[0]):02x}_{name[1:]}"
    name += suffix
    if name.endswith("-"):
        name = f"{name[:-1]}_x2d_"
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(f"{role}/{key}{suffix}".encode("utf-8", "surrogatepass"))
        name = f"{name[: _MAX_NAME - len(suffix) - 10]}_h{digest.hexdigest()[:8]}{suffix}"
    return name


def _segment(text: str) -> str:
    if not text:
        return "_x_"
    if text.strip(".") == "" and len(text) <= 2:  # '.' or '..': not a normal path
        return "_x2e_" * len(text)
    if _LEGAL.fullmatch(text):
        return text
    return "".join(char if _LEGAL.fullmatch(char) else f"_x{ord(char):02x}_" for char in text)


def _flatten_into(
    flat: dict[str, Any], name: tuple[str, ...], value: Any, limit: int | None
) -> None:
    if plain_dict(value) and value:
        for key, item in value.items():
            _flatten_into(flat, (*name, str(key)), item, limit)
        return
    if value is None or type(value) in (bool, int, float):
        _put(flat, _tracker_name(name[0], name[1:]), value)
        return
    if type(value) is dict and value.get(TAG) in ("int", "float") and "value" in value:
        number = value["value"]  # a number of another class (numpy's), or "nan"
        _put(
            flat,
            _tracker_name(name[0], name[1:]),
            number if type(number) in (int, float) else str(number),
        )
        return
    text = value if type(value) is str else _text(value)
    if limit is None or len(text) <= limit:
        _put(flat, _tracker_name(name[0], name[1:]), text)
        return
    parts = [text[start : start + limit] for start in range(0, len(text), limit)]
    for number, part in enumerate(parts, start=1):
        _put(flat, _tracker_name(name[0], name[1:], f"--{number}-of-{len(parts)}"), part)


def _put(flat: dict[str, Any], name: str, value: Any) -> None:
    if name in flat:  # a key "opt.b" and a mapping "opt" holding "b": never drop one silently
        raise ValueError(
            f"flatten() gives two values the name {name!r} ({flat[name]!r} and {value!r}); "
            "rename one of the keys, or read the record's roles directly"
        )
    flat[name] = value


def _text(value: Any) -> str:
    """Short text for an encoded value: tags read as what they hold; a tagged value missing
    its fields (a hand-made record) as its JSON."""
    try:
        if type(value) is dict and value.get(TAG) in _SCALAR_TAGS:
            shown = _plain(value)
            return shown if isinstance(shown, str) else compact(shown)
        return json.dumps(_plain(value), ensure_ascii=False, allow_nan=False)
    except (KeyError, TypeError, ValueError, AttributeError):
        return compact(value)


_SCALAR_TAGS = ("enum", "path", "object", "float", "int", "str", "scrubbed")


def _plain(value: Any) -> Any:
    """An encoded value made JSON-plain for display (not reversible)."""
    if type(value) is list:
        return [_plain(item) for item in value]
    if type(value) is not dict:
        return value
    tag = value.get(TAG)
    if tag is None:
        return {key: _plain(item) for key, item in value.items()}
    if tag == "enum":
        short = str(value["class"]).rsplit(".", 1)[-1]
        if value.get("name") is not None:
            return f"{short}.{value['name']}"
        return f"{short}({compact(value.get('value'))})"
    if tag == "path":
        return value["path"]
    if tag == "object":
        return value["repr"]
    if tag in ("float", "int", "str"):
        return value.get("value", value.get("hex"))
    if tag in ("tuple", "list", "set", "frozenset"):
        return [_plain(item) for item in value["items"]]
    if tag == "dict":
        return {compact(_plain(key)): _plain(item) for key, item in value["items"]}
    if tag == "complex":
        return value["repr"]
    if tag == "scrubbed":  # what the record shows, never its digest: not a value to compare
        shown = _plain(value["shown"])
        return f"<scrubbed {shown if isinstance(shown, str) else compact(shown)}>"
    return value
