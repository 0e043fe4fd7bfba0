"""Checking that data read back is an audit record this layerconf can read, problem by problem.

`validate` says every structural problem of a record at once (a missing field, a field of the
wrong JSON type, a role section without settings...), and what to do about them, so that a
record from anywhere is refused with a reason before anything reads its values.
"""

from __future__ import annotations

import math
import operator
import re
from typing import Any, get_args

from layerconf.audits.codec import FORMAT, READABLE
from layerconf.core.records import Reason
from layerconf.core.values import shorten
from layerconf.exceptions import Severity, one_line

__all__ = ["AGAIN", "MAX_DEPTH", "MAX_ENTRIES", "MAX_ROLES", "validate"]

#: The deepest a record nests (objects and arrays within each other). A real record nests
#: about 7 levels plus its deepest value (a tagged value takes 3 levels per level of its own);
#: this keeps a record that JSON parses from being read by code that recurses into it (the
#: decoder, diff, show) far enough to exhaust Python's stack.
MAX_DEPTH = 160

#: The most roles a record holds, and the most entries (keys of a role's settings and leaves)
#: in all its roles together. A real record holds a few roles of about 1,040 keys; one of a
#: parser of 50,000 options, two roles, 100,000 entries. Reading, explaining, replaying and
#: comparing a record cost time and memory by the role and by the entry: these are told
#: before anything walks them.
MAX_ROLES = 1_000
MAX_ENTRIES = 200_000

#: What to do about a record that is not readable.
AGAIN = (
    "write it again with layerconf.write_audit(roles, directory) or "
    "'layerconf audit -o FILE -- ARGV...'"
)

#: The fields of a record besides its format, each with the JSON type it must have.
_FIELDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "layerconf": (str, "a string"),
    "fingerprint": (str, "a string"),
    "argv": ((list, type(None)), "an array or null"),
    "files": (dict, "an object"),
    "roles": (dict, "an object"),
}
#: The groups of entries a role's section holds (``leaves`` may be missing).
_ENTRY_GROUPS = ("settings", "leaves")
#: The arrays a role's section may hold.
_ARRAYS = ("layers", "policies", "events", "notices")

_Problems = tuple[list[str], str]

#: The JSON type of each field of an origin (`layerconf.core.records.Origin`) an entry holds;
#: null is allowed where the origin has no such field, except for its layer.
_ORIGIN_TYPES: dict[str, tuple[type, str]] = {
    "layer": (str, "a string"),
    "kind": (str, "a string"),
    "source": (str, "a string"),
    "line": (int, "an integer"),
    "column": (int, "an integer"),
    "argv_index": (int, "an integer"),
    "token": (str, "a string"),
    "rule": (str, "a string"),
    "label": (str, "a string"),
}
_REASONS = tuple(reason.value for reason in Reason)
_SEVERITIES: tuple[str, ...] = get_args(Severity)


def validate(data: Any) -> _Problems:
    """Every structural problem of a record (empty when fine), and what to do about them.

    The checks run in turn, each on what the ones before it accepted; the first that finds
    problems says them. The last says every problem of the fields and of the role sections.
    """
    checks = (_check_object, _check_size, _check_json, _check_format, _check_fields)
    for check in checks:
        problems, advice = check(data)
        if problems:
            return problems, advice
    return [], AGAIN


def _check_object(data: Any) -> _Problems:
    if not isinstance(data, dict):
        return [f"it is {_json_type(data)}, not an object"], AGAIN
    return [], AGAIN


def _check_size(data: dict[str, Any]) -> _Problems:
    """At most `MAX_ROLES` roles and `MAX_ENTRIES` entries, counted without a walk."""
    roles = data.get("roles")
    if not isinstance(roles, dict):
        return [], AGAIN  # (`_check_fields` says what it is)
    if len(roles) > MAX_ROLES:
        return [
            f"'roles' holds {len(roles):,} roles, more than the {MAX_ROLES:,} a record may hold"
        ], _raise("MAX_ROLES")
    groups = [
        (len(entries), role, group)
        for role, section in roles.items()
        if isinstance(section, dict)
        for group in _ENTRY_GROUPS
        if isinstance(entries := section.get(group), dict)
    ]
    total = sum(count for count, _, _ in groups)
    if total <= MAX_ENTRIES:
        return [], AGAIN
    most, role, group = max(groups, key=operator.itemgetter(0))
    return [
        f"its roles hold {total:,} entries ({most:,} in roles.{_name(role)}.{group}), more "
        f"than the {MAX_ENTRIES:,} a record may hold (a record of a parser of 50,000 options, "
        "two roles, holds 100,000)"
    ], _raise("MAX_ENTRIES")


def _raise(limit: str) -> str:
    """What to do about a record past `limit`."""
    return f"it is not a record layerconf wrote; if it is, raise {__name__}.{limit} to read it"


def _name(name: Any) -> str:
    """A name from the record (a role's, a key's, a version) as a problem quotes it: on one
    line, at most 80 characters (a record from elsewhere may hold control characters, and
    megabytes, where a name should be)."""
    return one_line(shorten(str(name), 80))


def _check_json(data: dict[str, Any]) -> _Problems:
    """Only what JSON holds (no NaN or infinity), at most `MAX_DEPTH` levels deep."""
    # Iterative: a record nested deeper than Python's stack is told, not a RecursionError.
    pending: list[tuple[Any, int]] = [(data, 1)]
    while pending:
        value, depth = pending.pop()
        kind = type(value)
        if kind is dict or kind is list:
            if depth > MAX_DEPTH:
                return [
                    f"{_deep_place(data)} nests too deeply (more than {MAX_DEPTH} levels; a "
                    "record nests a few)"
                ], AGAIN
            if kind is dict:
                if any(type(key) is not str for key in value):
                    return ["an object has a key that is not a string"], AGAIN
                pending.extend((item, depth + 1) for item in value.values())
            else:
                pending.extend((item, depth + 1) for item in value)
        elif kind is float:
            if not math.isfinite(value):
                return [f"it holds {value!r}, which is not a JSON value"], AGAIN
        elif not (kind is str or kind is int or kind is bool or value is None):
            return [f"it holds a {kind.__name__}, which is not a JSON value"], AGAIN
    return [], AGAIN


def _deep_place(data: dict[str, Any]) -> str:
    """Where `data` first nests past `MAX_DEPTH`: the path of the record's field or role entry
    that does (``roles.critic.settings.lr.value``), or "it"."""
    pending: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while pending:  # (`_check_json`'s walk again, told where it is: only for a record refused)
        value, path = pending.pop()
        if type(value) is dict or type(value) is list:
            if len(path) >= MAX_DEPTH:
                names = path[: 5 if path[0] == "roles" else 1]
                return "".join(
                    f"[{name}]" if type(name) is int else f".{_name(name)}" for name in names
                ).removeprefix(".")
            items = value.items() if type(value) is dict else enumerate(value)
            pending.extend((item, (*path, key)) for key, item in items)
    return "it"


def _check_format(data: dict[str, Any]) -> _Problems:
    if "format" not in data:
        return ["it has no 'format' field"], "is it a layerconf audit record?"
    version = data["format"]
    if version not in READABLE or type(version) is not int:
        from layerconf import __version__

        if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT:
            writer = _name(data.get("layerconf"))
            newer = f"format {version} was written by a newer layerconf ({writer})"
            reads = f"this layerconf ({__version__}) reads formats 1 to {FORMAT}"
            return [newer], f"{reads}: upgrade it"
        other = f"its format is {version!r}"
        return [other], f"this layerconf ({__version__}) reads formats 1 to {FORMAT}"
    return [], AGAIN


def _check_fields(data: dict[str, Any]) -> _Problems:
    """The top-level fields' problems, and the role sections' when `roles` is an object."""
    problems: list[str] = []
    for name, (kind, wanted) in _FIELDS.items():
        if name not in data:
            problems.append(f"it has no {name!r} field")
        elif not isinstance(data[name], kind):
            problems.append(f"{name!r} is {_json_type(data[name])}, not {wanted}")
        elif name == "argv" and not _argv(data[name]):
            problems.append(f"{name!r} is not an array of strings or null")
    if "signature" in data and not isinstance(data["signature"], dict):
        problems.append(f"'signature' is {_json_type(data['signature'])}, not an object")
    if isinstance(data.get("roles"), dict):
        for role, section in data["roles"].items():
            problems.extend(_section_problems(f"roles.{_name(role)}", section))
    return problems, AGAIN


def _section_problems(where: str, section: Any) -> list[str]:
    """The problems of one role's section: its settings, leaves, their entries, its arrays."""
    if not isinstance(section, dict) or not isinstance(section.get("settings"), dict):
        return [f"{where} has no 'settings' object"]
    problems: list[str] = []
    if not isinstance(section.get("leaves", {}), dict):
        problems.append(f"{where}.leaves is not an object")
    for group in _ENTRY_GROUPS:
        entries = section.get(group, {})
        for key, entry in entries.items() if isinstance(entries, dict) else ():
            found = _entry_problems("", entry)  # what follows the entry's name, if anything
            if found:
                named = f"{where}.{group}.{_name(key)}"
                problems.extend(named + problem for problem in found)
    for part in _ARRAYS:
        if not isinstance(section.get(part, []), list):
            problems.append(f"{where}.{part} is not an array")
    for index, notice in enumerate(_list(section.get("notices"))):
        problems.extend(_notice_problems(f"{where}.notices[{index}]", notice))
    if "argv" in section and not _argv(section["argv"]):
        problems.append(f"{where}.argv is not an array of strings or null")
    return problems


#: A notice's fields (those of `Problem`) and their JSON types; ``message`` is required.
_NOTICE_TYPES: dict[str, tuple[type, str]] = {
    "message": (str, "a string"),
    "key": (str, "a string"),
    "layer": (str, "a string"),
    "source": (str, "a string"),
    "line": (int, "an integer"),
    "column": (int, "an integer"),
    "argv_index": (int, "an integer"),
    "hint": (str, "a string"),
    "severity": (str, "a string"),
    "rule": (str, "a string"),
}


def _notice_problems(where: str, notice: Any) -> list[str]:
    """What keeps `notice` from being a `Problem`: its shape, its fields' types, its severity."""
    if not isinstance(notice, dict) or type(notice.get("message")) is not str:
        return [f"{where} is not an object with a 'message'"]
    problems = [
        f"{where}.{name} is not {wanted}"
        for name, (kind, wanted) in _NOTICE_TYPES.items()
        if notice.get(name) is not None and type(notice[name]) is not kind
    ]
    if notice.get("severity", "error") not in _SEVERITIES:
        problems.append(f"{where}.severity is not one of {', '.join(_SEVERITIES)}")
    return problems


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _argv(value: Any) -> bool:
    """Whether `value` is a command line as a record holds one: strings, or null."""
    return value is None or (isinstance(value, list) and all(type(v) is str for v in value))


def _entry_problems(where: str, entry: Any) -> list[str]:
    if not isinstance(entry, dict) or "value" not in entry:
        return [f"{where} has no 'value'"]
    problems = _origin_problems(where, entry) + _marker_problems(where, entry["value"])
    history = entry.get("history", [])
    if not isinstance(history, list):
        return [*problems, f"{where}.history is not an array"]
    for index, item in enumerate(history):
        here = f"{where}.history[{index}]"
        if not isinstance(item, dict) or "value" not in item:
            problems.append(f"{here} has no 'value'")
            continue
        problems.extend(_origin_problems(here, item))
        problems.extend(_marker_problems(here, item["value"]))
        if item.get("reason") not in _REASONS:  # every shadowed value says why it lost
            problems.append(f"{here}.reason is not one of {', '.join(_REASONS)}")
        if item.get("by") is not None and type(item["by"]) is not str:
            problems.append(f"{here}.by is not a string or null")
    return problems


#: A scrubbed value's marker (`layerconf.audits.scrubbed`): exactly these fields.
_MARKER_FIELDS = frozenset({"$type", "shown", "digest", "keyed"})


def _marker_problems(where: str, value: Any) -> list[str]:
    """What is wrong with each scrubbed marker in `value`: its fields, its digest, its key."""
    problems: list[str] = []
    pending = [value]
    while pending:
        item = pending.pop()
        if type(item) is list:
            pending.extend(item)
        elif type(item) is dict:
            if item.get("$type") != "scrubbed":
                pending.extend(item.values())
            elif (
                set(item) != _MARKER_FIELDS
                or type(item["digest"]) is not str
                or not _HEX64.fullmatch(item["digest"])
                or type(item["keyed"]) is not bool
            ):
                problems.append(
                    f"{where}.value holds a scrubbed marker that is not "
                    '{"$type": "scrubbed", "shown", "digest": 64 hex digits, "keyed": a boolean}'
                )
    return problems


_HEX64 = re.compile(r"[0-9a-f]{64}")


def _origin_problems(where: str, entry: dict[str, Any]) -> list[str]:
    """The fields of the origin `entry` holds that are not of their JSON type."""
    problems = []
    for name, (kind, wanted) in _ORIGIN_TYPES.items():
        if name not in entry or (entry[name] is None and name != "layer"):
            continue
        if type(entry[name]) is not kind:  # type(), not isinstance(): true is no line number
            problems.append(f"{where}.{name} is not {wanted}")
    return problems


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else f"a value of type {type(value).__name__!r}"
