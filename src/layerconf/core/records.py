"""The records of the model: where a value came from (`Origin`), a layer of values (`Layer`),
and one resolved value with everything it shadowed (`Setting`).

All are frozen attrs classes: changing one means `attrs.evolve`. Beside them: key paths
(`split_key`, `join_path`), `location`, the one way a place in an input is written, and
`setting_json`, the one JSON shape of a setting (`ORIGIN_FIELDS`, `origin_json`).
"""

from __future__ import annotations

import enum
import functools
import operator
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import attrs

from layerconf.core._scrub import shown_text
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.secrets import SECRETS, SecretPolicy, with_secret_keys
from layerconf.core.values import ATOMIC_TYPES, copy_value, is_atomic, other_keys, value_text

__all__ = [
    "ORIGIN_FIELDS",
    "Layer",
    "Origin",
    "Reason",
    "Setting",
    "join_path",
    "key_path",
    "location",
    "origin_json",
    "setting_json",
    "short_location",
    "split_key",
]

Path = tuple[str, ...]


def split_key(key: str) -> Path:
    """``"opt.beta2"`` -> ``("opt", "beta2")``."""
    return tuple(key.split("."))


def key_path(key: str | Path) -> Path:
    """A path from a dotted key, or a path tuple as it is (for keys that contain a dot)."""
    return key if isinstance(key, tuple) else split_key(key)


def join_path(path: Path) -> str:
    """``("opt", "beta2")`` -> ``"opt.beta2"``."""
    return ".".join(str(part) for part in path)


def _without_controls(text: str) -> str:
    """`text` with each control character (C0, DEL, C1) as repr() writes it (``\\x1b``): a
    path (of a record from anywhere, say) cannot drive the terminal it is printed on."""
    return "".join(
        repr(char)[1:-1] if ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0 else char for char in text
    )


def location(
    source: str | None,
    line: int | None = None,
    column: int | None = None,
    index: int | None = None,
    token: str | None = None,
) -> str:
    """The one way a place in an input is written, whatever the input is.

    ``file:line:col`` (or ``file:line``, ``file``) for a position in a file, ``argv[7] '--lr'``
    for an item of an argument list with its token, both for an ``@file`` argument, the token
    alone for a named input (an environment variable ``SLIME_LR``), or ``""``.
    """
    parts = []
    if source is not None:
        text = source if source.isprintable() else _without_controls(source)
        if line is not None:
            text += f":{line}"
            if column is not None:
                text += f":{column}"
        parts.append(text)
    if index is not None:
        text = f"argv[{index}]"
        if token is not None:
            text += f" {token!r}"
        parts.append(text)
    elif token is not None:
        parts.append(token)
    return " ".join(parts)


def short_location(
    source: str | None,
    line: int | None,
    column: int | None,
    index: int | None,
    layer: str | None,
) -> str:
    """What a problem says for where it is: the file position, else ``argv[N]``, else the
    layer's name (or ``""``)."""
    return location(source, line, column, index if source is None else None) or layer or ""


@attrs.frozen
class Origin:
    """Where one value came from: the layer, and where inside it.

    `kind` says what the layer is: ``default`` (parser defaults), ``argv`` (a command line),
    ``file`` (a file such as a role YAML), ``mapping`` (a plain mapping), ``rule`` (a value a
    rule set; `rule` names it), ``runtime`` (an assignment after resolution) or ``audit`` (a
    value replayed from an audit record whose origin was not recorded).
    Positions are 1-based; `argv_index` is the index into the argument list that was parsed.
    `label` is a free annotation, such as the ``name`` of a role-file entry.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    layer: str
    kind: str = "mapping"
    source: str | None = None
    line: int | None = None
    column: int | None = None
    argv_index: int | None = None
    token: str | None = None
    rule: str | None = None
    label: str | None = None

    @property
    def place(self) -> str:
        """Where inside the layer (`location`): ``critic.yaml:9:11``, ``argv[7] '--lr'``..."""
        return location(self.source, self.line, self.column, self.argv_index, self.token)

    @property
    def where(self) -> str:
        """The layer and the place: ``role-config critic.yaml:9:11``, ``cli argv[7] '--lr'``."""
        place = self.place
        return f"{self.layer} {place}" if place else self.layer


class Reason(str, enum.Enum):
    """Why a value in a setting's history did not become the final value."""

    OVERRIDDEN = "overridden"  # a later layer set another value
    MERGED = "merged"  # it survives inside the final value (lists appended)
    FORCED = "forced"  # a rule set another value
    IGNORED = "ignored"  # a rule dropped it from its layer
    CONVERTED = "converted"  # a rule converted it; the converted value went on

    def __str__(self) -> str:
        return self.value


def _private_values(values: Mapping[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """A private copy of a layer's values and its mutable top-level keys.

    Almost every value of a real configuration is atomic and shared as it is, so the copy is
    one dict copy, one pass picking out the values of other types, and a real copy of those
    that are not atomic (lists, mappings) only.
    """
    if not isinstance(values, Mapping):
        raise TypeError(f"a layer's values must be a mapping (got {type(values).__name__})")
    private: dict[str, Any] = {}
    try:
        # The copy is the check that every key is a string: keyword arguments are strings,
        # which CPython knows of a dict of str keys without looking at each key again (two
        # copies in C, no pass in Python; a mapping with another key is read again below).
        private.update(**values)
        valid = "" not in private
    except TypeError:
        private = dict(values)
        valid = False
    if not valid:
        for key in private:
            if not isinstance(key, str) or not key:
                raise TypeError(f"layer keys must be non-empty strings (got {value_text(key)})")
    atomic = ATOMIC_TYPES
    others = other_keys(private)
    if not others:
        return private, frozenset()  # every value atomic: nothing to copy
    mutable = []
    for key in others:
        value = private[key]
        kind = type(value)
        # A list or a dict of atomic values, almost every container there is, is copied in C
        # (as `copy_value`'s first case; the merge and compat's kept-base check do the same):
        # what `copy_value` gives, without a call per container.
        if kind is list and atomic.issuperset(map(type, value)):
            private[key] = list(value)
        elif kind is dict and atomic.issuperset(map(type, value.values())):
            private[key] = dict(value)
        elif is_atomic(value):
            continue
        else:
            private[key] = copy_value(value)
        mutable.append(key)
    return private, frozenset(mutable)


def _origins_dict(origins: Mapping[Path, Origin]) -> dict[Path, Origin]:
    return dict(origins)


@attrs.frozen(init=False)
class Layer:
    """One layer of values, with the origin of every leaf.

    `values` is the layer's own private copy (nested mappings allowed); treat it as read-only.
    A leaf without an entry in `origins` (keyed by path tuples) has the layer's `origin`.
    `key_origins` optionally says where each key itself is written (a YAML key's position),
    for problems about the key rather than its value. `secret_keys` are keys that hold secrets
    whatever their names, in every layer of a resolution that has this one (the dest of a
    parser's secret flag: ``--hf-token`` with dest ``tok``); see `layerconf.core.secrets`.
    Build one with `Layer.from_mapping`; the constructor copies what it is given too.
    """

    __eq__ = record_eq
    __hash__ = record_hash

    name: str = attrs.field(validator=attrs.validators.min_len(1))
    kind: str
    values: dict[str, Any] = attrs.field(repr=shown_text)  # (its secrets redacted)
    origin: Origin
    origins: Mapping[Path, Origin] = attrs.field(converter=_origins_dict)
    key_origins: Mapping[Path, Origin] = attrs.field(converter=_origins_dict)
    secret_keys: frozenset[str] = attrs.field(repr=False)
    # Top-level keys whose values are not atomic: the only ones a merge has to copy or recurse.
    mutable_keys: frozenset[str] = attrs.field(eq=False, repr=False)

    def __init__(
        self,
        name: str,
        kind: str,
        values: Mapping[str, Any],
        origin: Origin | None = None,
        origins: Mapping[Path, Origin] | None = None,
        key_origins: Mapping[Path, Origin] | None = None,
        mutable_keys: object = None,  # recomputed; accepted so that attrs.evolve works
        *,
        secret_keys: Iterable[str] = (),
    ) -> None:
        private, mutable = _private_values(values)
        self.__attrs_init__(
            name,
            kind,
            private,
            origin if origin is not None else Origin(name, kind),
            origins or {},
            key_origins or {},
            frozenset(secret_keys),
            mutable,
        )

    @classmethod
    def from_mapping(
        cls,
        name: str,
        mapping: Mapping[str, Any],
        *,
        source: str | None = None,
        kind: str | None = None,
        origins: Mapping[Path, Origin] | None = None,
    ) -> Layer:
        """A layer holding a copy of `mapping`; `source` names the file it came from.

        `kind` defaults to ``file`` when a source is given, else ``mapping``.
        """
        if kind is None:
            kind = "file" if source is not None else "mapping"
        return cls(
            name,
            kind,
            mapping,  # the constructor copies it into a dict
            Origin(name, kind, source=source),
            origins or {},
        )

    def __repr__(self) -> str:
        """attrs' text, its values' secrets redacted: those of its `secret_keys` too."""
        if not self.secret_keys:
            return record_repr(self)
        policy = with_secret_keys(SECRETS, self.secret_keys)
        return record_repr(self, values=functools.partial(shown_text, policy=policy))

    def _with_secret_keys(self, keys: frozenset[str]) -> Layer:
        """This layer, saying that `keys` hold secrets too (for its repr in a resolution's)."""
        return Layer(
            self.name,
            self.kind,
            self.values,
            self.origin,
            self.origins,
            self.key_origins,
            secret_keys=self.secret_keys | keys,
        )

    def _with_values(self, values: Mapping[str, Any]) -> Layer:
        """This layer holding (a copy of) `values` instead; everything else kept.

        What ``attrs.evolve(layer, values=values)`` gives, without its per-call introspection
        (rules that drop or convert a value call it on the resolve path).
        """
        return Layer(
            self.name,
            self.kind,
            values,
            self.origin,
            self.origins,
            self.key_origins,
            secret_keys=self.secret_keys,
        )

    @property
    def source(self) -> str | None:
        return self.origin.source

    def origin_at(self, path: Path) -> Origin:
        """The origin of the value at `path` in this layer."""
        return self.origins.get(path, self.origin)

    def key_origin_at(self, path: Path) -> Origin:
        """Where the key of `path` is written in this layer (else where its value is)."""
        return self.key_origins.get(path) or self.origin_at(path)

    def lookup(self, path: Path) -> tuple[bool, Any]:
        """``(True, value)`` when this layer holds `path`, else ``(False, None)``."""
        node: Any = self.values
        for part in path:
            if type(node) is not dict or part not in node:
                return False, None
            node = node[part]
        return True, node


@attrs.frozen
class Setting:
    """One resolved value: its key, value and origin, and the values it shadowed.

    `history` lists the shadowed values newest first; each is a `Setting` whose `reason`
    says why it lost and whose `by` names the rule that decided it, if a rule did.
    """

    __eq__ = record_eq
    __hash__ = record_hash

    key: str
    value: Any
    origin: Origin
    history: tuple[Setting, ...] = ()
    reason: Reason | None = None
    by: str | None = None
    role: str | None = None
    #: The texts of the other secrets of the namespace the setting was explained from: its value
    #: may equal or quote one (``--wandb-key cosine --lr-decay-style cosine``); every way it is
    #: shown scrubs them (`redacted`). Never compared; pickled only where they change that.
    scrub: tuple[str, ...] = attrs.field(default=(), eq=False, repr=False, kw_only=True)
    #: Whether its resolution holds the key's value as a secret whatever the key's name (a
    #: layer's `Layer.secret_keys`: the dest of a secret flag, ``--hf-token`` with dest
    #: ``tok``): every way it is shown redacts it as the policy's own secrets. Never compared.
    secret: bool = attrs.field(default=False, eq=False, repr=False, kw_only=True)

    @property
    def layer(self) -> str:
        return self.origin.layer

    @property
    def kind(self) -> str:
        return self.origin.kind

    @property
    def source(self) -> str | None:
        return self.origin.source

    @property
    def line(self) -> int | None:
        return self.origin.line

    @property
    def column(self) -> int | None:
        return self.origin.column

    @property
    def argv_index(self) -> int | None:
        return self.origin.argv_index

    @property
    def token(self) -> str | None:
        return self.origin.token

    @property
    def rule(self) -> str | None:
        return self.origin.rule

    def redacted(self, policy: SecretPolicy = SECRETS) -> Setting:
        """This setting as it may be shown; itself when it holds no secret.

        The value of a secret key, and of secret keys inside mappings (``{"HF_TOKEN": ...}``),
        becomes the placeholder, in the value and in every entry of the history; the text of
        those secrets (at least ``policy.min_scrub_length`` long) is scrubbed from every other
        string of the setting (values, argv tokens such as ``--wandb-key=...``, labels); and
        the raw text a secret-holding value was converted from (a JSON string) is replaced
        whole when it holds an escape (``\\u0061``), which may spell the secret in a way no
        search finds.
        """
        from layerconf.core._redaction import redacted  # (on first use: not at import)

        return redacted(self, policy)

    def to_dict(self) -> dict[str, Any]:
        """The setting in its JSON shape (`setting_json`), values as they are.

        A secret (``wandb_key``, ``*_api_key``...) shows as ``"<redacted>"`` here, in its
        values and in an argv token such as ``--wandb-key=...``.
        """
        return setting_json(self.redacted())

    def _shadowed(self) -> str:
        text = f"{value_text(self.value)} from {_where(self.origin)}"
        if self.reason in (Reason.IGNORED, Reason.CONVERTED, Reason.MERGED):
            text += f" ({self.reason.value}" + (f" by rule {self.by})" if self.by else ")")
        return text

    def __str__(self) -> str:
        """One short answer; a secret shows as ``'<redacted>'``, as in `to_dict`, and a value
        as `value_text` writes it (shortened, never raising)."""
        shown = self.redacted()
        text = f"{shown.key} = {value_text(shown.value)}  from {_where(shown.origin)}"
        if shown.role is not None:
            text += f" (role {shown.role})"
        if shown.history:
            text += "; shadows " + ", ".join(entry._shadowed() for entry in shown.history)
        return text

    def __repr__(self) -> str:
        """The fields, secrets redacted and values as `value_text` writes them."""
        shown = self.redacted()
        fields = [f"key={shown.key!r}", f"value={value_text(shown.value)}"]
        fields.append(f"origin={shown.origin!r}")
        if shown.history:
            fields.append(f"history=({', '.join(repr(entry) for entry in shown.history)},)")
        fields += [
            f"{name}={getattr(shown, name)!r}"
            for name in ("reason", "by", "role")
            if getattr(shown, name) is not None
        ]
        return f"Setting({', '.join(fields)})"


def _where(origin: Origin) -> str:
    """`Origin.where`, with the count of a runtime write: ``runtime train.py:9 (write 3 of 7)``."""
    if origin.kind == "runtime" and origin.label:
        return f"{origin.where} ({origin.label})"
    return origin.where


#: The fields of an origin, in the order every JSON shape of a setting lists them.
ORIGIN_FIELDS: tuple[str, ...] = tuple(attrs.fields_dict(Origin))


def origin_json(origin: Origin | None, *, nulls: bool = True) -> dict[str, Any]:
    """The fields of `origin` in `ORIGIN_FIELDS` order; with `nulls` False only those set."""
    if origin is None:
        return dict.fromkeys(ORIGIN_FIELDS) if nulls else {}
    values = _ORIGIN_VALUES(origin)  # in C
    if nulls:
        return dict(zip(ORIGIN_FIELDS, values, strict=True))
    fields: dict[str, Any] = {}
    # (a loop: a comprehension is a call)
    for name, value in zip(ORIGIN_FIELDS, values, strict=True):
        if value is not None:
            fields[name] = value
    return fields


#: The values of an origin's fields, in `ORIGIN_FIELDS` order.
_ORIGIN_VALUES = operator.attrgetter(*ORIGIN_FIELDS)


def setting_json(
    setting: Setting,
    encode: Callable[[Any], Any] | None = None,
    *,
    nulls: bool = True,
    omit: Collection[str] = (),
    origin: Callable[[Origin], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The one JSON shape of a setting, for records, the command's JSON and audit records.

    ``key``, ``value`` (as `encode` gives it), the origin's fields (`ORIGIN_FIELDS`), then for
    a shadowed value ``reason`` and ``by``, for a final one ``role`` and ``history``, a list of
    the shadowed values in this same shape. Without `nulls`, fields that are null (and an empty
    history) are left out; `omit` leaves out fields the container already says (an audit
    record's key and role). `origin` gives an origin's fields, if not `origin_json`.
    """
    fields = origin or functools.partial(origin_json, nulls=nulls)
    data: dict[str, Any] = {
        "key": setting.key,
        "value": setting.value if encode is None else encode(setting.value),
    }
    data.update(fields(setting.origin))
    if setting.reason is not None:
        data["reason"] = setting.reason.value
        if nulls or setting.by is not None:
            data["by"] = setting.by
    else:
        if nulls or setting.role is not None:
            data["role"] = setting.role
        if nulls or setting.history:
            data["history"] = [
                setting_json(entry, encode, nulls=nulls, omit=omit, origin=origin)
                for entry in setting.history
            ]
    for name in omit:
        data.pop(name, None)
    return data
