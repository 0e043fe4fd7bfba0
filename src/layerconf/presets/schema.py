"""JSON Schema for role files: what an editor needs to complete and check them as they are typed.

`role_file_schema(parser, preset=...)` describes the role files a preset reads (slime's
``--megatron-config-path`` by default) for `parser`'s command line: every dest layerconf
accepts in ``overrides``, with the JSON types the type-coercion rule accepts for it
(docs/cli.md, "What the schema accepts"). ``layerconf schema`` prints it.
"""

from __future__ import annotations

import argparse
import copy
import enum
import math
import operator
import re
from collections.abc import Sequence
from typing import Any

from layerconf.core.secrets import REDACTED, SECRETS, scrub_text, secret_dests, secret_texts
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
_DECIMAL = re.compile("0|-?[1-9][0-9]{0,99}")  # the text str() writes of an int, and not too long


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
    ``deprecated``; its extra keys are allowed; its run-wide keys are refused (``not``), as
    its rules refuse them. `roles` (default: the preset's) are the values
    ``role`` may take.

    For editors (yaml-language-server): each type says in ``errorMessage`` what layerconf
    says of a value it refuses (``'lr' must be a float; write a number such as 1e-5``), and
    ignored keys say where to set them in ``deprecationMessage``. Several types are an
    ``anyOf`` of one ``type`` each, never a list of types, so ajv's strict mode takes the
    schema (with those two keywords declared).
    """
    roles = preset.roles if roles is None else tuple(roles)
    top = preset.role_file.top_key
    properties = _properties(parser, preset)
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
                "deprecationMessage": _ARGS_NOTE,
                "description": _ARGS_NOTE,
            },
        },
        "required": ["role"],
        "additionalProperties": False,
        # Never both (the reader refuses it): with args, overrides is not allowed.
        "dependentSchemas": {"args": {"properties": {"overrides": False}}},
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
                "description": "Argument attribute names (lr, tensor_model_parallel_size) to "
                "values.",
                "anyOf": [
                    {"type": "object", "properties": properties, "additionalProperties": False},
                    {"type": "null"},
                ],
            },
        },
    }


def _properties(parser: argparse.ArgumentParser, preset: Preset) -> dict[str, Any]:
    """The schema of every key a role file may set: the parser's dests, and the preset's
    ignored keys (deprecated) and extra keys; its run-wide keys are refused, saying why."""
    ignored, extra, run_wide = preset.ignored_keys, preset.extra_keys, preset.run_wide_keys
    dests, _ = parser_dests(parser)
    grouped: dict[str, list[argparse.Action]] = {}
    for action in parser._actions:
        if action.dest in dests:
            grouped.setdefault(action.dest, []).append(action)

    properties: dict[str, Any] = {}
    secret = secret_dests(parser, SECRETS)  # (the dests of secret flags the policy misses)
    for dest in sorted(set(dests) | set(extra) | set(ignored) | set(run_wide)):
        if dest in run_wide:
            # Refused in the run-wide-keys rule's words, and left out of completion
            # (yaml-language-server offers no key that has a deprecationMessage).
            note = (
                f"{dest!r} is not allowed in a role file: {preset.run_wide_because} "
                f"(remove it and set {run_wide[dest]} on the command line)"
            )
            properties[dest] = {"description": note, "not": {}, "deprecationMessage": note}
            continue
        actions = grouped.get(dest)
        hidden = dest in secret or SECRETS.is_secret(dest)
        schema = _dest_schema(parser, dest, actions, hidden) if actions else {}
        if dest in ignored:
            note = f"Ignored in a role file: set {ignored[dest]} on the command line."
            schema["description"] = (schema.get("description", "") + "\n\n" + note).strip()
            schema["deprecated"] = True
            schema["deprecationMessage"] = note
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
    parser: argparse.ArgumentParser, dest: str, actions: list[argparse.Action], secret: bool
) -> dict[str, Any]:
    """The schema of one dest: the JSON the type-coercion rule accepts for it, help, default
    (none of a `secret` dest's: a resolution's formatters redact its value)."""
    shown = [_shown(action, secret) for action in actions]
    hidden = any(map(operator.is_not, shown, actions))  # a secret default: none to complete
    # (a help text that spells the secret default out, not through %(default)s, hides it too)
    texts = [t for a in actions if secret for t in secret_texts(a.default)]
    actions = shown
    schema: dict[str, Any] = {}
    spec = dest_spec(parser, actions)
    if spec is not None:
        item = spec.each.item if spec.each is not None else spec.item
        schema = _item_schema(item, _message(dest, item))
        if spec.each is not None:
            inner = spec.each
            schema = _array(schema, inner.count, inner.non_empty, f"'{dest}' items", item.phrase)
        if spec.many:
            each = "a list" if spec.each is not None else item.phrase
            schema = _array(schema, spec.count, spec.non_empty, f"'{dest}'", each)
        if spec.nullable:
            schema = _allow_null(schema)
    action = next((a for a in actions if a.help is not argparse.SUPPRESS), actions[0])
    flags = ", ".join(option for a in actions for option in a.option_strings) or dest
    default = next((a.default for a in actions if a.default is not argparse.SUPPRESS), None)
    described = _help_text(parser, action)
    if secret and texts:
        described = scrub_text(described, texts)
    kind = expected_kind(actions[0]) if spec is None else spec.kind
    facts = f"{flags}; {kind}; default: {_default_text(default)}"
    schema["description"] = f"{described}\n\n{facts}" if described else facts
    encoded = _schema_default(default)
    if encoded is not _NO_DEFAULT and not hidden:
        schema["default"] = encoded
    return schema


def _shown(action: argparse.Action, secret: bool) -> argparse.Action:
    """`action` as the schema may quote it (its default, choices and help, in a file editors
    and repositories share): a copy whose default shows no secret (a `secret` dest's own, a
    URL's password, a secret key's value in a mapping or JSON text), without choices when the
    dest is a secret's; `action` itself when it shows none."""
    default = action.default
    if secret and default is not None and default is not argparse.SUPPRESS:
        default = REDACTED
    elif default is not argparse.SUPPRESS:
        default = SECRETS.redact(action.dest, default)
    if default is action.default and not (secret and action.choices is not None):
        return action
    shown = copy.copy(action)
    shown.default = default
    if secret:
        shown.choices = None
    return shown


_NO_DEFAULT: Any = object()
_ARGS_NOTE = "The old name of 'overrides'; new files use 'overrides'."
# What to write, said after "'lr' must be a float": the type-coercion rule's own hints.
_HINTS = {
    "bool": "; write true or false, unquoted (yes/no/on/off too when the editor reads YAML 1.1, "
    'as layerconf does: set yaml.yamlVersion to "1.1")',
    "int": "; write a whole number such as 8",
    "float": "; write a number such as 1e-5",
    "JSON": "; write a YAML mapping or list, or a string holding JSON",
}


def _message(dest: str, item: Any) -> str:
    """What an editor says of a value `item` refuses for `dest` (``errorMessage``, which
    yaml-language-server shows in place of its own text, such as a raw regular expression)."""
    hint = _HINTS.get(item.family, "") if item.choices is None else ""  # not 8 for 0, 1, 2
    return f"'{dest}' must be {item.phrase}" + hint


def _item_schema(item: Any, message: str) -> dict[str, Any]:
    family: str = item.family
    if item.choices is not None and family != "bool":
        values = []
        for choice in item.choices:
            encoded = jsonable(choice)
            if not isinstance(encoded, (str, int, float)) or (
                isinstance(choice, float) and encoded != choice
            ):
                return _family_schema(family, message)  # a choice JSON cannot name: the type
            values.append(encoded)
        return _choices_schema(family, values, message)
    return _family_schema(family, message)


def _choices_schema(family: str, values: list[Any], message: str) -> dict[str, Any]:
    """The choices as an ``enum``, with the other YAML values the type-coercion rule converts
    to one: an int whose decimal text is a str choice (``zero_stage: 2`` for ``'2'``), a string
    that int() reads as an int choice exactly (``'1'``, `` 01 ``), a string float() reads for a
    float choice (any such string: which float it reads to is for ``check`` to say)."""
    if family == "str":
        numbers = [int(v) for v in values if type(v) is str and _DECIMAL.fullmatch(v)]
        return {"enum": values + [n for n in numbers if n not in values]}
    if family == "int" and values and all(type(v) is int for v in values):
        pattern = _int_choices_pattern(values)
    elif family == "float":
        pattern = FLOAT_PATTERN
    else:
        return {"enum": values}
    texts_too = {"type": "string", "pattern": pattern, "errorMessage": message}
    return {"anyOf": [{"enum": values, "errorMessage": message}, texts_too]}


def _int_choices_pattern(values: list[int]) -> str:
    """The strings int() reads as one of `values`: its digits after a sign and leading zeros,
    an underscore allowed between two digits, whitespace around (as `INT_PATTERN`)."""
    alternatives = []
    for value in values:
        sign = "-" if value < 0 else r"[+-]?" if value == 0 else r"\+?"
        alternatives.append(sign + "(?:0_?)*" + "_?".join(str(abs(value))))
    return r"^\s*(?:" + "|".join(alternatives) + r")\s*$"


def _family_schema(family: str, message: str) -> dict[str, Any]:
    """The JSON one item of `family` may be: one type, or ``anyOf`` several (never a list of
    types, which ajv's strict mode refuses), each saying `message` when a value fails it."""
    if family == "bool":
        return {"type": "boolean", "errorMessage": message}
    if family == "int":
        alternatives: list[dict[str, Any]] = [
            {"type": "integer"},
            {"type": "string", "pattern": INT_PATTERN},
        ]
    elif family == "float":
        alternatives = [{"type": "number"}, {"type": "string", "pattern": FLOAT_PATTERN}]
    elif family == "JSON":
        kinds = ("object", "array", "number", "boolean", "string")
        alternatives = [{"type": kind} for kind in kinds]
    else:
        # str, and custom callables: a YAML string, or an int read as its decimal text.
        alternatives = [{"type": "string"}, {"type": "integer"}]
    return {"anyOf": [alternative | {"errorMessage": message} for alternative in alternatives]}


def _array(
    items: dict[str, Any], count: int | None, non_empty: bool, subject: str, each: str
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": items}
    if count is not None:
        schema["minItems"] = schema["maxItems"] = count
        size = f"{count} items"
    elif non_empty:
        schema["minItems"] = 1
        size = "at least one item"
    else:
        size = "any number of items"
    schema["errorMessage"] = f"{subject} must be a YAML list of {size}, each {each}"
    return schema


def _allow_null(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema`, or null (``~``, or nothing after the colon)."""
    if "enum" in schema:
        if None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    alternatives = schema.get("anyOf", [schema])
    null = {"type": "null", "errorMessage": alternatives[0]["errorMessage"]}
    return {"anyOf": [*alternatives, null]}


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
