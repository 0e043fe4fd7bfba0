"""JSON Schema for role files: what an editor needs to complete and check them as they are typed.

`role_file_schema(parser, preset=...)` describes the role files a preset reads (slime's
``--megatron-config-path`` by default) for `parser`'s command line: every dest layerconf
accepts in ``overrides``, with the JSON types the type-coercion rule accepts for it
(docs/cli.md, "What the schema accepts"). ``layerconf schema`` prints it.
"""

from __future__ import annotations

import argparse
import enum
import math
from collections.abc import Mapping, Sequence
from typing import Any

from layerconf.core.values import jsonable
from layerconf.presets.preset import Preset
from layerconf.rules.coercion import dest_spec, expected_kind
from layerconf.rules.unknown_keys import parser_dests

__all__ = ["FLOAT_PATTERN", "INT_PATTERN", "role_file_schema"]

_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# What Python's float() and int() accept from a string (YAML 1.1 reads 1e-5 as one): the
# schema lets such strings through for float and int dests, since layerconf converts them.
_DIGITS = "[0-9](?:_?[0-9])*"
FLOAT_PATTERN = (
    rf"^\s*[+-]?(?:(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?"
    r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])\s*$"
)
INT_PATTERN = rf"^\s*[+-]?{_DIGITS}\s*$"


def role_file_schema(
    parser: argparse.ArgumentParser,
    *,
    roles: Sequence[str] | None = None,
    title: str = "layerconf role file",
    preset: Preset,
) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of the role files `parser`'s command line takes.

    Every key layerconf accepts in ``overrides`` (and ``args``) is a property with the JSON
    types the type-coercion rule accepts for it, its choices as an ``enum``, its default and
    help; other keys are refused (``additionalProperties: false``). Float and int dests also
    take strings that Python's ``float()`` / ``int()`` read (YAML 1.1 reads ``1e-5`` as a
    string), with a ``pattern``. The keys the preset ignores are allowed and marked
    ``deprecated``; its extra keys are allowed. `roles` (default: the preset's) are the values
    ``role`` may take.
    """
    roles = preset.roles if roles is None else tuple(roles)
    ignored, extra = preset.ignored_keys, preset.extra_keys
    top = preset.role_file.top_key
    properties = _properties(parser, ignored, extra)
    entry = {
        "type": "object",
        "description": "One role's overrides.",
        "properties": {
            "name": {"type": "string", "description": "A label; nothing depends on it."},
            "role": {"enum": list(roles), "description": "The role these overrides are for."},
            "overrides": {"$ref": "#/$defs/overrides"},
            "args": {
                "$ref": "#/$defs/overrides",
                "deprecated": True,
                "description": "The old name of 'overrides'; new files use 'overrides'.",
            },
        },
        "required": ["role"],
        "additionalProperties": False,
        "not": {"required": ["overrides", "args"]},
    }
    return {
        "$schema": _SCHEMA_DIALECT,
        "title": title,
        "description": "Per-role overrides on top of the shared command line"
        + _named_by(parser, preset)
        + ".",
        "type": "object",
        "properties": {
            top: {
                "type": "array",
                "description": "One entry per role: " + ", ".join(roles) + ".",
                "items": {"$ref": "#/$defs/entry"},
            }
        },
        "required": [top],
        "additionalProperties": False,
        "$defs": {
            "entry": entry,
            "overrides": {
                "type": ["object", "null"],
                "description": "Argument attribute names (lr, tensor_model_parallel_size) to "
                "values.",
                "properties": properties,
                "additionalProperties": False,
            },
        },
    }


def _properties(
    parser: argparse.ArgumentParser, ignored: Mapping[str, str], extra: Mapping[str, str]
) -> dict[str, Any]:
    """The schema of every key a role file may set: the parser's dests, and the preset's
    ignored keys (deprecated) and extra keys."""
    dests, _ = parser_dests(parser)
    grouped: dict[str, list[argparse.Action]] = {}
    for action in parser._actions:
        if action.dest in dests:
            grouped.setdefault(action.dest, []).append(action)

    properties: dict[str, Any] = {}
    for dest in sorted(set(dests) | set(extra) | set(ignored)):
        actions = grouped.get(dest)
        schema = _dest_schema(parser, dest, actions) if actions else {}
        if dest in ignored:
            note = f"Ignored in a role file: set {ignored[dest]} on the command line."
            schema["description"] = (schema.get("description", "") + "\n\n" + note).strip()
            schema["deprecated"] = True
        elif not actions:
            schema["description"] = extra[dest]
        properties[dest] = schema

    return properties


def _named_by(parser: argparse.ArgumentParser, preset: Preset) -> str:
    """`` (slime's --megatron-config-path)``: the option that names the role file, if any, as
    the parser spells it (its first long option; the dest with dashes if it has none)."""
    if preset.config_dest is None:
        return ""
    options = [
        option
        for action in parser._actions
        if action.dest == preset.config_dest
        for option in action.option_strings
    ]
    longs = [option for option in options if option.startswith("--")]
    option = (longs or options or ["--" + preset.config_dest.replace("_", "-")])[0]
    return f" ({preset.name}'s {option})"


def _dest_schema(
    parser: argparse.ArgumentParser, dest: str, actions: list[argparse.Action]
) -> dict[str, Any]:
    """The schema of one dest: the JSON the type-coercion rule accepts for it, help, default."""
    schema: dict[str, Any] = {}
    spec = dest_spec(parser, actions)
    if spec is not None:
        schema = _item_schema(spec.each.item if spec.each is not None else spec.item)
        if spec.each is not None:
            schema = _array(schema, spec.each.count, spec.each.non_empty)
        if spec.many:
            schema = _array(schema, spec.count, spec.non_empty)
        if spec.nullable:
            _allow_null(schema)
    action = next((a for a in actions if a.help is not argparse.SUPPRESS), actions[0])
    flags = ", ".join(option for a in actions for option in a.option_strings) or dest
    default = next((a.default for a in actions if a.default is not argparse.SUPPRESS), None)
    described = _help_text(parser, action)
    kind = expected_kind(actions[0]) if spec is None else spec.kind
    facts = f"{flags}; {kind}; default: {_default_text(default)}"
    schema["description"] = f"{described}\n\n{facts}" if described else facts
    encoded = _schema_default(default)
    if encoded is not _NO_DEFAULT:
        schema["default"] = encoded
    return schema


_NO_DEFAULT: Any = object()


def _item_schema(item: Any) -> dict[str, Any]:
    family: str = item.family
    if item.choices is not None and family != "bool":
        values = []
        for choice in item.choices:
            encoded = jsonable(choice)
            if not isinstance(encoded, (str, int, float)) or (
                isinstance(choice, float) and encoded != choice
            ):
                return _family_schema(family)  # a choice JSON cannot name: the type only
            values.append(encoded)
        return {"enum": values}
    return _family_schema(family)


def _family_schema(family: str) -> dict[str, Any]:
    if family == "bool":
        return {"type": "boolean"}
    if family == "int":
        return {"type": ["integer", "string"], "pattern": INT_PATTERN}
    if family == "float":
        return {"type": ["number", "string"], "pattern": FLOAT_PATTERN}
    if family == "JSON":
        return {"type": ["object", "array", "number", "boolean", "string"]}
    # str, and custom callables: a YAML string, or an int read as its decimal text.
    return {"type": ["string", "integer"]}


def _array(items: dict[str, Any], count: int | None, non_empty: bool) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": items}
    if count is not None:
        schema["minItems"] = schema["maxItems"] = count
    elif non_empty:
        schema["minItems"] = 1
    return schema


def _allow_null(schema: dict[str, Any]) -> None:
    if "enum" in schema:
        if None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return
    kinds = schema["type"]
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    if "null" not in kinds:
        kinds.append("null")
    schema["type"] = kinds


def _help_text(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's help with argparse's ``%(default)s``-style fields filled in, as ``--help``
    fills them (argparse's own formatter does it); the text as written if that fails."""
    text = action.help
    if not text or text is argparse.SUPPRESS:
        return ""
    if "%" not in text:
        return text
    try:
        return str(parser._get_formatter()._expand_help(action))
    except (KeyError, TypeError, ValueError):
        return text


def _default_text(default: Any) -> str:
    if isinstance(default, enum.Enum):
        return default.name
    return repr(default)


def _schema_default(default: Any) -> Any:
    """The default as JSON, or `_NO_DEFAULT` for a float JSON cannot hold (nan, inf)."""
    if isinstance(default, float) and not math.isfinite(default):
        return _NO_DEFAULT
    return jsonable(default)
