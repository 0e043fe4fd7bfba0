"""Values in an audit record: how each is encoded as JSON, and decoded back.

A value JSON holds as it is (str, bool, None, int, float, list, dict with str keys) is
written as it is; any other is a tagged object, ``{"$type": tag, ...}``. Encoding goes down
`_ENCODERS`, the first entry whose test accepts the value writing it; decoding looks the tag
up in `_DECODERS`. A value type is one entry in each. A value nothing else accepts is an
``object`` (its class and repr), read back as an `OpaqueValue`. docs/audit.md documents the
tags.

Decoding never runs code a record names: an enum member is rebuilt only when its class is one
of the `ValueTypes` the reader trusts (the standard ones, those of the bundled profiles, and
whatever the caller registers); any other stays an inert `OpaqueValue`, and a replay that
needs it says which class to register.

What the other modules of `layerconf.audits` share from here: `Encoder` and `Decoder`,
`decode_origin` (an entry's origin), `TAG`, `plain_dict`, and the two texts of an encoded
value (`canonical`, hashed into the fingerprint; `compact`, one line, as files and `flatten`
write it).
"""

from __future__ import annotations

import base64
import enum
import functools
import math
import pathlib
import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from layerconf.audits._json_texts import c_chunks as c_chunks
from layerconf.audits._json_texts import canonical as canonical
from layerconf.audits._json_texts import canonical_chunks as canonical_chunks
from layerconf.audits._json_texts import canonical_encoder as canonical_encoder
from layerconf.audits._json_texts import compact as compact
from layerconf.core._scrub import Scrub, record_fields
from layerconf.core.checks import check_type
from layerconf.core.held_secrets import held_texts
from layerconf.core.records import ORIGIN_FIELDS, Origin, origin_json
from layerconf.core.secrets import (
    SECRETS,
    SecretPolicy,
    embedded_secrets,
    may_show_secret,
    secret_texts,
)
from layerconf.core.values import MAX_DEPTH, MAX_INT_BITS, Shown, shorten, unreadable
from layerconf.exceptions import AuditError, one_line

__all__ = [
    "FORMAT",
    "READABLE",
    "TAG",
    "Decoder",
    "Encoder",
    "OpaqueValue",
    "canonical",
    "compact",
    "decode_origin",
    "plain_dict",
]

#: The version of the record format: its fields (`record`, `validate`) and these tags.
#: 2 added the ``scrubbed`` tag (and a fingerprint that covers its digest); 1 is still read.
FORMAT = 2
#: The formats this layerconf reads.
READABLE = (1, 2)

TAG = "$type"
#: The deepest a value's JSON nests in a record this writes (containers, and the arrays of
#: their tags); a container further down is recorded as an object saying so. A record holds a
#: value at most 9 levels down: it stays within `validate.MAX_DEPTH`, which it is read with.
#: (A role file's values nest at most 100 levels, the YAML reader's limit; a live value is
#: shown, copied and compared as deep, `layerconf.core.values.MAX_DEPTH`.)
MAX_VALUE_DEPTH = MAX_DEPTH
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
        # One line, as a str's repr is: the text of a record from anywhere cannot drive the
        # terminal it is printed on, nor forge a line of the output around it; and without a
        # URL's password or JSON's secrets, which a record of someone else's may hold.
        return one_line(SECRETS.redact("", self.text))


# --- JSON text: `layerconf.audits._json_texts` (re-exported) ------------------------------


def plain_dict(value: Any) -> bool:
    """Whether an encoded value is a mapping written as a JSON object (not a tagged one)."""
    return type(value) is dict and TAG not in value


# --- Encoding -----------------------------------------------------------------------------


def _nonfinite(value: float) -> str:
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


# The address in a default repr (``<Foo object at 0x7f3a...>``) differs in every process.
_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+")


def _safe_repr(value: Any) -> str:
    """repr(value) without its memory addresses, or a placeholder when repr() fails."""
    try:
        text = repr(value)
    except Exception as error:  # a broken __repr__ must not break the record
        return f"<{qualified_name(type(value))} object; repr() raised {type(error).__name__}>"
    if not isinstance(text, str):
        return f"<{qualified_name(type(value))} object>"
    return _ADDRESS.sub(" at 0x...", text)


def _object(value: Any) -> dict[str, Any]:
    """The entry of a value recorded only as its class and repr."""
    return {TAG: "object", "class": qualified_name(type(value)), "repr": _safe_repr(value)}


class Encoder:
    """Encodes values into JSON-shaped data, redacting secrets and remembering their values."""

    def __init__(self, policy: SecretPolicy) -> None:
        self.policy = policy
        self.found: list[str] = []  # secret values met, to search for in the record's text
        #: Whether a value's form showed a secret (a URL's password, a secret key's in JSON
        #: text): such a secret is hidden by its place, however short (`scrub_record`).
        self.embedded = False
        self._active: set[int] = set()  # containers being encoded (a cycle is not followed)
        self._depth = 0  # the levels of JSON they nest (at most `MAX_VALUE_DEPTH`)
        # Per origin object (kept alive here, so that its id is not reused by another one).
        self._origins: dict[int, tuple[Origin, dict[str, Any]]] = {}

    def field(self, secret: bool, value: Any) -> Any:
        """The encoded value, or the placeholder when it is a secret's (`redacted`)."""
        return self.redacted(value) if secret else self.value(value)

    def redacted(self, value: Any) -> Any:
        """A secret's value as a record shows it: the placeholder (None stays null); its
        texts are kept in `found`, to search the record for."""
        if value is None:
            return None
        self.found.extend(secret_texts(value))
        return self.policy.placeholder

    def value(self, value: Any) -> Any:
        """The encoded value: JSON's own types as they are, any other by `_ENCODERS`."""
        kind = type(value)
        if kind is str:
            if may_show_secret(value):  # a URL's password, JSON's secrets
                self.embedded_in(value)
            return value
        if kind is bool or value is None:
            return value
        if kind is int and value.bit_length() <= MAX_INT_BITS:
            return value
        if kind is float and math.isfinite(value):
            return value
        if kind is list:
            return self.container(value, lambda: [self.value(item) for item in value])
        if kind is dict:
            return _encode_mapping(self, value)
        try:
            for accepts, encode in _ENCODERS:
                if accepts(value):
                    return encode(self, value)
        except Exception as error:  # its int(), iteration... raised: recorded as unreadable,
            # not by its repr (a dict subclass's shows the items no search has read)
            shown = repr(unreadable(value, error))
            return {TAG: "object", "class": qualified_name(type(value)), "repr": shown}
        entry = _object(value)
        if "://" in entry["repr"]:  # (a URL's password in its repr: a deque's, a dataclass's)
            self.embedded_in(entry["repr"])
        return entry

    def embedded_in(self, text: str) -> None:
        """Note the secrets the form of `text` shows (`embedded_secrets`)."""
        found = embedded_secrets(text, self.policy)
        if found:
            self.found.extend(found)
            self.embedded = True

    def container(self, value: Any, encode: Callable[[], Any], levels: int = 1) -> Any:
        """encode(), the JSON of a container that nests `levels` deep before its items; or an
        object standing in for `value`: ``<cycle>`` when it is already being encoded, ``<nested
        more than 100 levels>`` when its items would be past `MAX_VALUE_DEPTH`."""
        marker = id(value)
        cycle = marker in self._active
        if cycle or self._depth + levels > MAX_VALUE_DEPTH:
            text = "<cycle>" if cycle else f"<nested more than {MAX_VALUE_DEPTH} levels>"
            return {TAG: "object", "class": qualified_name(type(value)), "repr": text}
        self._active.add(marker)
        self._depth += levels
        try:
            return encode()
        finally:
            self._active.discard(marker)
            self._depth -= levels

    def origin(self, origin: Origin | None) -> dict[str, Any]:
        """The non-null fields of `origin`, in a fixed order (cached per origin object)."""
        if origin is None:
            return {}
        cached = self._origins.get(id(origin))
        if cached is not None:
            return cached[1]
        fields = origin_json(origin, nulls=False)
        self._origins[id(origin)] = (origin, fields)
        return fields


def _subclass(value: Any, base: type) -> dict[str, str]:
    """``{"class": ...}`` naming the class of `value` when it is not exactly `base`."""
    return {} if type(value) is base else {"class": qualified_name(type(value))}


def _encode_enum(encoder: Encoder, member: enum.Enum) -> dict[str, Any]:
    cls = type(member)
    tagged: dict[str, Any] = {TAG: "enum", "class": qualified_name(cls), "name": member.name}
    if member.name is None or cls.__members__.get(member.name) is not member:
        # A composite flag (or an alias-less pseudo-member): rebuilt from its value.
        tagged["name"] = None
        tagged["value"] = encoder.value(member.value)
    return tagged


def _encode_opaque(encoder: Encoder, value: OpaqueValue) -> dict[str, Any]:
    return {TAG: "object", "class": value.class_name, "repr": value.text}


def _encode_float(encoder: Encoder, value: Any) -> dict[str, Any]:
    number = float(value)
    shown = number if math.isfinite(number) else _nonfinite(number)
    return {TAG: "float", **_subclass(value, float), "value": shown}


def _encode_int(encoder: Encoder, value: Any) -> dict[str, Any]:
    number = int(value)
    if number.bit_length() > MAX_INT_BITS:  # written as hex: it must never fail
        return {TAG: "int", **_subclass(value, int), "hex": hex(number)}
    return {TAG: "int", **_subclass(value, int), "value": number}


def _encode_str(encoder: Encoder, value: str) -> dict[str, Any]:
    text = str(value)
    if may_show_secret(text):  # a str subclass's text shows what a str's would
        encoder.embedded_in(text)
    return {TAG: "str", "class": qualified_name(type(value)), "value": text}


def _encode_bytes(encoder: Encoder, value: bytes | bytearray) -> dict[str, Any]:
    tag = "bytearray" if isinstance(value, bytearray) else "bytes"
    data = bytes(value)
    text = data.decode("utf-8", "surrogateescape")  # (its text, as `scrub_record` reads it)
    if may_show_secret(text):
        encoder.embedded_in(text)
    return {TAG: tag, "base64": base64.b64encode(data).decode("ascii")}


def _encode_complex(encoder: Encoder, value: complex) -> dict[str, Any]:
    return {TAG: "complex", "repr": repr(complex(value))}


def _encode_path(encoder: Encoder, value: pathlib.PurePath) -> dict[str, Any]:
    name, text = type(value).__name__, str(value)
    if may_show_secret(text):  # (JSON text: a path's text shows what a str's would)
        encoder.embedded_in(text)
    return {TAG: "path", "class": name if name in _PATH_CLASSES else "PurePath", "path": text}


def _encode_mapping(encoder: Encoder, value: Mapping[Any, Any]) -> Any:
    is_secret = encoder.policy.is_secret
    if type(value) is dict and TAG not in value and all(type(k) is str for k in value):
        for key in value:
            if may_show_secret(key):  # a URL's password in a key ({"https://u:pw@h": 1})
                encoder.embedded_in(key)
        return encoder.container(
            value, lambda: {key: encoder.field(is_secret(key), item) for key, item in value.items()}
        )
    # ({"$type": "dict", "items": [[key, value], ...]}: its items 3 levels down)
    return encoder.container(value, lambda: _encode_pairs(encoder, value), 3)


def _encode_pairs(encoder: Encoder, value: Mapping[Any, Any]) -> dict[str, Any]:
    """Keys JSON cannot hold (or a key that would read as a tag): a sorted list of pairs."""
    is_secret = encoder.policy.is_secret
    items = [
        [encoder.value(key), encoder.field(is_secret(key), item)] for key, item in value.items()
    ]
    items.sort(key=lambda pair: canonical(pair[0]))
    tagged: dict[str, Any] = {TAG: "dict", "items": items}
    if type(value) is not dict:
        tagged["class"] = qualified_name(type(value))
    return tagged


def _record(value: Any) -> bool:
    """Whether `value` is a record-like object: a namedtuple, a dataclass, an attrs instance."""
    return record_fields(type(value)) is not None


def _encode_record(encoder: Encoder, value: Any) -> Any:
    """A namedtuple as a tuple whose items are redacted by their fields' names; a dataclass or
    attrs instance as an object whose repr, when its fields hold a secret, is the redacted one
    of `Scrub` (its own repr would quote the secret)."""
    fields = record_fields(type(value))
    assert fields is not None  # (`_record` accepted it)
    if fields.items:
        is_secret = encoder.policy.is_secret
        read = fields.read(value)  # ({"$type": "tuple", "items": [...]}: 2 levels down)
        return encoder.container(
            value,
            lambda: {
                TAG: "tuple",
                "items": [encoder.field(is_secret(name), item) for name, item in read],
                "class": qualified_name(type(value)),
            },
            2,
        )
    found: list[str] = []
    held_texts("", value, encoder.policy, found)
    if not found:
        return _object(value)
    encoder.found.extend(text for text in found if text)
    shown = Scrub(encoder.policy, found).value("", value, {})
    if not isinstance(shown, Shown):  # (what it holds shows as it is: the placeholder's text)
        return _object(value)
    text = _ADDRESS.sub(" at 0x...", shown.text)
    return {TAG: "object", "class": qualified_name(type(value)), "repr": text}


def _sequence(tag: str, *, ordered: bool) -> Callable[[Encoder, Any], Any]:
    """The encoder of a sequence (or of a set, not `ordered`: items sorted) tagged `tag`."""

    def tagged(encoder: Encoder, value: Any) -> dict[str, Any]:
        items = [encoder.value(item) for item in value]
        if not ordered:
            items.sort(key=canonical)
        tagged: dict[str, Any] = {TAG: tag, "items": items}
        if type(value).__name__ != tag:  # a subclass: say which, it decodes as the base type
            tagged["class"] = qualified_name(type(value))
        return tagged

    # ({"$type": tag, "items": [...]}: its items 2 levels down)
    return lambda encoder, value: encoder.container(value, lambda: tagged(encoder, value), 2)


def _instance_of(*types: type) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, types)


def _integral(value: Any) -> bool:
    """An int, or a number that is an integer without being one (numpy's int64, for one)."""
    if isinstance(value, int):
        return True
    index = getattr(type(value), "__index__", None)
    return index is not None and not isinstance(value, (bool, enum.Enum))


#: How a value JSON cannot hold as it is gets encoded: by the first entry whose test accepts
#: it (the order matters: an IntEnum is an enum before it is an int). An encoder may raise;
#: the value is then recorded as an object whose repr is ``<unreadable Foo: RuntimeError>``
#: (`layerconf.core.values.unreadable`); a value no entry accepts is an object with its repr.
_ENCODERS: tuple[tuple[Callable[[Any], bool], Callable[[Encoder, Any], Any]], ...] = (
    (_instance_of(enum.Enum), _encode_enum),
    (_instance_of(OpaqueValue), _encode_opaque),
    (_instance_of(float), _encode_float),
    (_integral, _encode_int),
    (_instance_of(str), _encode_str),
    (_instance_of(bytes, bytearray), _encode_bytes),
    (_instance_of(complex), _encode_complex),
    (_instance_of(pathlib.PurePath), _encode_path),
    (_record, _encode_record),
    (_instance_of(Mapping), _encode_mapping),
    (_instance_of(tuple), _sequence("tuple", ordered=True)),
    (_instance_of(list), _sequence("list", ordered=True)),
    (_instance_of(frozenset), _sequence("frozenset", ordered=False)),
    (_instance_of(set), _sequence("set", ordered=False)),
)


# --- Decoding -----------------------------------------------------------------------------


def qualified_name(cls: type) -> str:
    """``module.qualname``: how a record names a class."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _classes(classes: Mapping[str, type[enum.Enum]]) -> Mapping[str, type[enum.Enum]]:
    check_type("ValueTypes", "classes", classes, Mapping, "a mapping of name to enum class")
    for name, cls in classes.items():
        if not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
            raise TypeError(
                f"value types are enum classes: records rebuild enum members and nothing else "
                f"(got {cls!r} for {name!r})"
            )
    return MappingProxyType(dict(classes))  # trusted sets are shared: never changed


@attrs.frozen(eq=False)  # compared as objects: two sets of classes are equal only if one
class ValueTypes:
    """The enum classes a reader rebuilds members of, by the name a record gives them.

    Closed: a record naming any other class never makes layerconf import or construct
    anything; the value stays an inert `OpaqueValue`. `standard_types()` holds the standard
    library's enums layerconf meets (``signal.Signals``) and the bundled profiles' enums;
    `with_classes` adds a program's own.
    """

    classes: Mapping[str, type[enum.Enum]] = attrs.field(factory=dict, converter=_classes)

    def with_classes(self, classes: Iterable[type[enum.Enum]]) -> ValueTypes:
        """These types and `classes` (enum classes)."""
        if isinstance(classes, type):
            raise TypeError(f"with_classes takes a list of classes, such as [{classes.__name__}]")
        added = {qualified_name(cls): cls for cls in classes}
        return ValueTypes({**self.classes, **_classes(added)})


@functools.cache
def standard_types() -> ValueTypes:
    """The enums a record of layerconf's own profiles may hold, trusted without asking."""
    from layerconf.profiles.loader import bundled_enums

    return ValueTypes().with_classes(bundled_enums())  # signal.Signals among them


def value_types(types: ValueTypes | Iterable[type[enum.Enum]] | None) -> ValueTypes:
    """`types` as the reader trusts them: the standard ones, and these."""
    if types is None:
        return standard_types()
    classes = types.classes.values() if isinstance(types, ValueTypes) else types
    return standard_types().with_classes(classes)


class Decoder:
    """Decodes encoded values; `strict` raises on a value it cannot rebuild, else stands in.

    `types` are the enum classes it rebuilds members of, by qualified name.
    """

    def __init__(self, strict: bool, where: str, types: ValueTypes | None = None) -> None:
        self.strict = strict
        self.where = where
        self.types: Mapping[str, type[enum.Enum]] = (types or standard_types()).classes

    def value(self, value: Any) -> Any:
        """The decoded value: a tagged object by its entry in `_DECODERS`."""
        kind = type(value)
        if kind is dict:
            tag = value.get(TAG)
            if tag is None:
                return {key: self.value(item) for key, item in value.items()}
            return self._tagged(tag, value)
        if kind is list:
            return [self.value(item) for item in value]
        return value

    def fail(self, data: Mapping[str, Any], reason: str) -> Any:
        """Raise for `data` (`strict`), or stand an `OpaqueValue` in for it."""
        if self.strict:  # (one line: the reason may quote the record's text)
            text = f"{self.where}: cannot rebuild {shorten(canonical(data))}: {reason}"
            raise AuditError(one_line(text))
        if data.get(TAG) == "scrubbed":  # shown as the record shows it, without its digest
            return OpaqueValue("scrubbed", f"<scrubbed {compact(data.get('shown'))}>")
        return OpaqueValue(str(data.get("class", data.get(TAG))), canonical(data))

    def _tagged(self, tag: Any, data: Mapping[str, Any]) -> Any:
        decode = _DECODERS.get(tag) if isinstance(tag, str) else None
        if decode is None:
            return self.fail(data, f"unknown tag {tag!r} (this layerconf reads format {FORMAT})")
        try:
            return decode(self, data)
        except AuditError:
            raise
        except Exception as error:
            return self.fail(data, f"{type(error).__name__}: {error}")

    def items(self, data: Mapping[str, Any]) -> list[Any]:
        """The decoded items of a tagged sequence or set."""
        return [self.value(item) for item in data["items"]]


def _decode_enum(decoder: Decoder, data: Mapping[str, Any]) -> Any:
    """The enum member, when its class is one the reader trusts; never imported by name."""
    qualified = data["class"]
    cls = decoder.types.get(qualified) if isinstance(qualified, str) else None
    if cls is None:
        named = shorten(str(qualified), 120)
        short = named.rsplit(".", 1)[-1]
        return decoder.fail(
            data,
            f"{named!r} is not a registered value type (a record never makes layerconf "
            f"import a module): pass types=[{short}] to load_audit, or on the command line "
            "--parser MODULE:ATTR of the trainer that uses it",
        )
    if data.get("name") is not None:
        return cls[data["name"]]
    return cls(decoder.value(data["value"]))


def _decode_path(decoder: Decoder, data: Mapping[str, Any]) -> Any:
    name = data["class"]
    cls = _PATH_CLASSES[name]
    try:
        return cls(data["path"])
    except (NotImplementedError, OSError, TypeError):  # a WindowsPath read on POSIX...
        return _PATH_CLASSES[_PURE_FALLBACK.get(name, "PurePath")](data["path"])


def _decode_int(decoder: Decoder, data: Mapping[str, Any]) -> int:
    return int(data["hex"], 16) if "hex" in data else int(data["value"])


#: How each tag is decoded. An entry may raise: the value then cannot be rebuilt.
_DECODERS: dict[str, Callable[[Decoder, Mapping[str, Any]], Any]] = {
    "enum": _decode_enum,
    "float": lambda decoder, data: float(data["value"]),
    "int": _decode_int,
    "str": lambda decoder, data: str(data["value"]),
    "tuple": lambda decoder, data: tuple(decoder.items(data)),
    "list": lambda decoder, data: decoder.items(data),
    "set": lambda decoder, data: set(decoder.items(data)),
    "frozenset": lambda decoder, data: frozenset(decoder.items(data)),
    "dict": lambda decoder, data: {
        decoder.value(key): decoder.value(item) for key, item in data["items"]
    },
    "bytes": lambda decoder, data: base64.b64decode(data["base64"], validate=True),
    "bytearray": lambda decoder, data: bytearray(base64.b64decode(data["base64"], validate=True)),
    "complex": lambda decoder, data: complex(data["repr"]),
    "path": _decode_path,
    "object": lambda decoder, data: OpaqueValue(str(data["class"]), str(data["repr"])),
    "scrubbed": lambda decoder, data: decoder.fail(
        data, "a secret's text was found in it, and it is recorded scrubbed"
    ),
}


def decode_origin(entry: Mapping[str, Any]) -> Origin | None:
    """The `Origin` a record entry holds, or None when it has none."""
    if "layer" not in entry:
        return None
    return Origin(**{name: entry[name] for name in ORIGIN_FIELDS if name in entry})
