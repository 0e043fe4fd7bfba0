"""Audit records: one resolution written down as JSON run metadata, replayable and fingerprinted.

`audit(roles)` turns the namespaces of one resolution into a JSON-shaped dict: every key of
every role with its value and origin (and the values it shadowed), the command line, the role
files and their sha256, the notices and what the rules did, and a fingerprint of the values.
`AuditRecord` checks such a dict (or its JSON read back) and replays it: `namespace(role)`
gives a `Namespace` that `explain` understands. The values are encoded by
`layerconf.audits.codec`; the format is versioned and documented in docs/audit.md.

Secrets (see `layerconf.core.secrets`) never reach a record: a secret key's value is redacted
by its key; a value another secret's text was found in becomes a scrubbed marker with a keyed
digest (`layerconf.audits.scrubbed`), which replay refuses and the fingerprint covers; in
every other text of the record the secret's text is replaced.
"""

from __future__ import annotations

import argparse
import enum
import functools
import itertools
import json
import operator
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs

from layerconf.audits._argv import kept_argv
from layerconf.audits.bulk import alike_entries, history_entries, plain_entry
from layerconf.audits.codec import (
    FORMAT,
    Decoder,
    Encoder,
    ValueTypes,
    compact,
    decode_origin,
    value_types,
)
from layerconf.audits.fingerprint import entry_texts
from layerconf.audits.fingerprint import fingerprint as _fingerprint
from layerconf.audits.scrubbed import first_marker, given_matches, scrub_record
from layerconf.audits.signing import Key, check_signature, key_bytes
from layerconf.audits.texts import Texts
from layerconf.audits.validate import validate
from layerconf.core.checks import check_type
from layerconf.core.explain import Plain, lone_settings, plain_groups, unscrubbed
from layerconf.core.held_secrets import policy_of
from layerconf.core.namespace import Namespace, Provenance, namespace_from, provenance_of
from layerconf.core.records import (
    Layer,
    Origin,
    Path,
    Reason,
    Setting,
    join_path,
    setting_json,
    split_key,
)
from layerconf.core.secrets import SECRETS, SecretPolicy
from layerconf.core.suggest import suggestion
from layerconf.core.values import MAX_DEPTH, shorten
from layerconf.exceptions import AuditError, Problem, UnknownKeyError
from layerconf.sources.base import ARGV, FILES

__all__ = ["AuditRecord", "audit", "lookup_entry", "record_data"]

# --- Building a record --------------------------------------------------------------------


def audit(
    roles: Mapping[str, argparse.Namespace],
    *,
    secrets: SecretPolicy = SECRETS,
    key: Key | None = None,
) -> dict[str, Any]:
    """A JSON-serialisable record of one resolution (format 2, see docs/audit.md).

    `roles` maps a role name to its namespace (what `resolve_roles` returns; a namespace
    without provenance is recorded without origins). The values of the keys `secrets` names
    are replaced by ``"<redacted>"``, in values and on the command line. A value another
    secret's text was found in is recorded as a ``scrubbed`` marker (`layerconf.audits.
    scrubbed`) that replay refuses; give the `key` the record will be signed with, so that
    its digests are keyed by it (records signed with one key then compare).
    """
    return record_of(roles, Encoder(secrets), key, Texts())


def record_of(
    roles: Mapping[str, argparse.Namespace], encoder: Encoder, key: Key | None, texts: Texts
) -> dict[str, Any]:
    """`audit(roles)` with `encoder`'s policy; the texts of its values go to `texts`
    (scrubbing makes new entries: it turns `texts.lines` off). With `texts.deferred`, the
    entries whose line is known without them wait until `texts.make_entries()`."""
    from layerconf import __version__

    if isinstance(roles, argparse.Namespace) or not isinstance(roles, Mapping):
        raise TypeError(
            f"audit() takes roles as a mapping of role name to namespace (got "
            f"{type(roles).__name__}); write audit({{'actor': args}}) for one namespace"
        )
    secrets = encoder.policy
    check_type("audit", "secrets", secrets, SecretPolicy, "a SecretPolicy, such as SECRETS")
    argv: list[str] | None = None
    files: dict[str, str] = {}
    sections: dict[str, dict[str, Any]] = {}
    role_argv: dict[str, list[str] | None] = {}
    redacted: tuple[Any, list[str]] = (None, [])  # the last command line, redacted
    for role, namespace in roles.items():
        if not isinstance(namespace, argparse.Namespace):
            raise TypeError(
                f"audit() records argparse namespaces (got {type(namespace).__name__} for "
                f"role {role!r})"
            )
        provenance = provenance_of(namespace)
        # The role's secrets: the policy's, and the keys its layers say hold secrets whatever
        # their names (a secret flag's dest, `Layer.secret_keys`).
        encoder.policy = secrets if provenance is None else policy_of(provenance.layers, secrets)
        sections[str(role)] = _role_section(namespace, provenance, encoder, texts)
        if provenance is not None:
            files.update(provenance.inputs.get(FILES, {}))
            own: list[str] | None = None
            command_line = provenance.inputs.get(ARGV)
            if command_line is not None and command_line == redacted[0]:
                own = list(redacted[1])  # the roles of one resolution share a command line
            elif command_line is not None:
                own, found = kept_argv(command_line, provenance, encoder.policy)
                encoder.found.extend(found)
                redacted = (command_line, own)
                if argv is None:
                    argv = own
            role_argv[str(role)] = own
    encoder.policy = secrets
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
        {
            text
            for text in encoder.found
            if len(text) >= secrets.min_scrub_length and secrets.placeholder not in text
        },
        key=len,
        reverse=True,  # the longest first, so a secret that contains another goes whole
    )
    if scrub or encoder.embedded:
        texts.make_entries()
        texts.lines = False
        signing = None if key is None else key_bytes(key)
        record = scrub_record(record, scrub, secrets, signing, forms=encoder.embedded)
        record["fingerprint"] = _fingerprint(record["roles"])
    else:  # the value texts worked out on the way, the others encoded
        record["fingerprint"] = _fingerprint(record["roles"], texts=texts)
    return record


def _role_section(
    namespace: argparse.Namespace, provenance: Provenance | None, encoder: Encoder, texts: Texts
) -> dict[str, Any]:
    values = dict(vars(namespace))  # one C call: other threads may be adding keys
    names = tuple(values)
    secret_keys, named = _keys_read(encoder.policy, names)
    plain: dict[str, Plain] = {}  # the walk's answers of keys that do not share one
    histories: dict[str, Plain] = {}  # those of the keys set over other values
    walked = provenance is not None and named
    if walked:  # each key holds its value (one C copy) until its entry is made
        settings: dict[str, Any] = dict(values)
        for answer, keys, current in plain_groups(namespace, values):
            if answer.shadowed:
                histories[keys[0]] = answer
            else:
                made = alike_entries(
                    encoder, texts, settings, answer, keys, current, values, secret_keys, plain
                )
                settings.update(made)
        # The keys not made in bulk (still their value: an entry is a new dict, or WAITING;
        # the same order as `values`).
        others = list(
            itertools.compress(values, map(operator.is_, settings.values(), values.values()))
        )
    else:
        settings = dict.fromkeys(values if named else map(str, values))
        others = list(values)
    known = texts.section(settings) if walked else None
    shown: dict[str, str] = {}  # (the texts known of its values)
    rest = others
    if known is not None:
        known.keys, shown = names, known.values
        history_entries(encoder, texts, settings, known, histories, values, secret_keys)
        rest = list(itertools.filterfalse(histories.__contains__, others))
        # the lists and dicts one layer alone set: explain's answer, from that layer
        plain.update(
            lone_settings(namespace, values, [*itertools.filterfalse(plain.__contains__, rest)])
        )
    leaves: dict[str, Any] = {}
    for key in rest:
        value = values[key]
        found = plain.get(key)
        secret = key in secret_keys
        if found is not None:
            settings[key] = plain_entry(encoder, secret, value, found)
        else:
            explained = None if provenance is None else unscrubbed(namespace, key, values)
            settings[str(key)] = _entry(encoder, secret, value, explained)
        if type(value) is dict and value and provenance is not None and not secret:
            leaves.update(_leaves(namespace, encoder, key, value, values))
    if known is not None:  # the texts of the values of the entries made one by one, for the
        # fingerprint; when writing, their lines are their own (known, or encoded)
        shown.update(entry_texts(settings, [*itertools.filterfalse(shown.__contains__, others)]))
        if texts.lines:
            known.own = others
            known.tails.update(dict.fromkeys(others, ""))
    section: dict[str, Any] = {
        "layers": [],
        "policies": [],
        "settings": settings,
        "leaves": leaves,
        "events": [],
        "notices": [],
    }
    if provenance is not None:
        section.update(_recorded(provenance, encoder))
    return section


def _recorded(provenance: Provenance, encoder: Encoder) -> dict[str, list[dict[str, Any]]]:
    """A role's layers, merge policies, rules' events and notices, as its section holds them."""
    is_secret = encoder.policy.is_secret
    return {
        "layers": [
            {"name": layer.name, "kind": layer.kind, **_optional(source=layer.source)}
            for layer in provenance.layers
        ],
        "policies": [
            {"path": list(path), "policy": policy} for path, policy in provenance.policies.items()
        ],
        "events": [
            {
                "key": join_path(path),
                "action": event.action,
                "rule": event.rule,
                "value": encoder.field(any(is_secret(part) for part in path), event.value),
                **encoder.origin(event.origin),
            }
            for path, events in provenance.events.items()
            for event in events
        ],
        "notices": [_problem(problem) for problem in provenance.notices],
    }


@functools.lru_cache(maxsize=16)
def _keys_read(policy: SecretPolicy, keys: tuple[Any, ...]) -> tuple[frozenset[Any], bool]:
    """The keys of `keys` that `policy` calls secret, and whether every key is a str (str()
    gives each back) (cached: a trainer's keys repeat)."""
    return frozenset(key for key in keys if policy.is_secret(key)), set(map(type, keys)) <= {str}


def _leaves(
    namespace: argparse.Namespace,
    encoder: Encoder,
    key: str,
    value: dict[str, Any],
    values: Mapping[str, Any],
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(dotted path, entry) of each leaf `explain` can name in the mapping `value` of `key`."""
    if "." in key:
        return
    is_secret = encoder.policy.is_secret
    for path in _leaf_paths(value, (key,), is_secret):
        dotted = join_path(path)
        if dotted in values:
            continue  # a top-level key spelt like this path: explain means that one
        setting = unscrubbed(namespace, dotted, values)
        yield dotted, _entry(encoder, is_secret(path[-1]), setting.value, setting)


#: What a record's structure already says of an entry: its key, and the role of its section.
_CONTAINED = ("key", "role")


def _entry(encoder: Encoder, secret: bool, value: Any, setting: Setting | None) -> dict[str, Any]:
    """One value's entry: the JSON shape of its setting without nulls, values encoded (a
    secret's replaced), without what the record's structure says (key, role)."""
    if setting is None:
        return {"value": encoder.field(secret, value)}
    return setting_json(
        setting,
        functools.partial(encoder.field, secret),
        nulls=False,
        omit=_CONTAINED,
        origin=encoder.origin,
    )


def _leaf_paths(
    tree: dict[str, Any], prefix: Path, is_secret: Any, active: frozenset[int] = frozenset()
) -> Iterator[Path]:
    """The paths of the leaves `explain` can name in `tree` (string keys without dots); a
    mapping inside itself is a leaf, not followed (the encoder records it as a ``<cycle>``),
    as is one the record's value shows as nested too deep (`MAX_DEPTH`)."""
    active |= {id(tree)}
    for name, value in tree.items():
        if type(name) is not str or not name or "." in name:
            continue
        path = (*prefix, name)
        yield path
        if (
            type(value) is dict
            and value
            and len(path) <= MAX_DEPTH
            and id(value) not in active
            and not is_secret(name)
        ):
            yield from _leaf_paths(value, path, is_secret, active)


def _optional(**fields: Any) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


def _problem(problem: Problem) -> dict[str, Any]:
    """`problem`'s fields that are set, in their order (what ``attrs.asdict`` gives of its
    plain values, without its generic walk)."""
    return _optional(**dict(zip(_PROBLEM_NAMES, _PROBLEM_VALUES(problem), strict=True)))


_PROBLEM_NAMES = tuple(attrs.fields_dict(Problem))
_PROBLEM_VALUES = operator.attrgetter(*_PROBLEM_NAMES)


@attrs.frozen(eq=False)
class AuditRecord:
    """An audit record read back: its fields, the recorded settings, and replay.

    `data` is the record as `audit()` returned it (treat it as read-only); `path` is the
    file it was read from, if any. Compare two records with `diff_audits`.
    """

    data: Mapping[str, Any]
    path: str | None = None
    #: The enum classes the record's values are rebuilt as (`ValueTypes`): the standard ones
    #: and those the reader registered; a record never names one into being.
    types: ValueTypes = attrs.field(default=None, converter=value_types)
    #: The key the record's signature was checked with: it also checks values given back for
    #: scrubbed ones at replay.
    key: bytes | None = attrs.field(default=None, repr=False)

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        path: str | None = None,
        verify: bool = True,
        types: ValueTypes | Iterable[type[enum.Enum]] | None = None,
        key: Key | None = None,
    ) -> AuditRecord:
        """Check `data` (what `audit()` returns, or its JSON read back) and wrap it.

        `types` adds enum classes of the program's own to those rebuilt from the record
        (`ValueTypes`); a member of any other enum class stays an `OpaqueValue`. With `key`,
        the record's signature must be one `key` made of it (`layerconf.audits.signing`).
        """
        _check(data, path)
        if verify:
            computed = _fingerprint(data["roles"], data["format"])
            if computed != data["fingerprint"]:
                raise AuditError(
                    f"the fingerprint {data['fingerprint']!r} does not match the recorded values "
                    f"(they give {computed!r}): the record was edited or damaged; write it again, "
                    "or read it as it is in Python: load_audit(path, verify=False)",
                    path,
                )
        if key is None:
            return cls(data, path, types)  # the field's converter adds the standard types
        check_signature(data, key, path)
        return cls(data, path, types, key_bytes(key))

    @property
    def signed(self) -> bool:
        """Whether the record carries a signature (checked only when read with a key)."""
        return "signature" in self.data

    @property
    def format(self) -> int:
        """The record's format version (2; 1 for records of layerconf 0.1)."""
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
        """The values of `role`, decoded (enums, tuples, sets, paths rebuilt).

        `strict` raises `AuditError` for a value that cannot be rebuilt, a scrubbed one
        (a secret's text was found in it) included; else such a value stands as an
        `OpaqueValue` that shows what the record shows.
        """
        return self._values(role, {}, strict=strict)

    def _values(self, role: str, given: Mapping[str, Any], *, strict: bool) -> dict[str, Any]:
        section = self._section(role)
        if strict:
            self._refuse_scrubbed(role, section, given)
        decoder = Decoder(strict, self._where(role), self.types)
        return {
            key: given[key] if key in given else decoder.value(entry["value"])
            for key, entry in section["settings"].items()
        }

    def _refuse_scrubbed(
        self, role: str, section: Mapping[str, Any], given: Mapping[str, Any]
    ) -> None:
        """Raise for a scrubbed value not given back, or given back but not the one recorded."""
        for key, entry in section["settings"].items():
            marker = first_marker(entry["value"])
            if marker is None:
                continue
            if key not in given:
                shown = shorten(SECRETS.redact("", compact(marker.get("shown"))), 120)
                raise AuditError(
                    f"{self._where(role)}: {key!r} held a secret's text, and the record shows "
                    f"it scrubbed ({shown}): replay will not hand it back as if it were real; "
                    f"pass its real value: namespace({role!r}, secrets={{{key!r}: ...}})"
                )
            if self.key is not None and not given_matches(entry["value"], given[key], self.key):
                raise AuditError(
                    f"{self._where(role)}: the value given for {key!r} is not the one recorded "
                    "(its digest under the record's key differs)"
                )

    def namespace(self, role: str, *, secrets: Mapping[str, Any] | None = None) -> Namespace:
        """Replay `role`: a `Namespace` equal to the one audited, which `explain` understands.

        `explain` gives each value's recorded origin (layer, file:line:col, argv index,
        rule); the values it shadowed are in `setting(role, key)`. Redacted secrets hold
        ``"<redacted>"`` unless `secrets` gives their values (``{"wandb_key": ...}``).
        Raises `AuditError` for a value that cannot be rebuilt (an enum whose class this
        record's reader does not trust: see `types` and `ValueTypes`).
        """
        section = self._section(role)
        given = dict(secrets or {})
        for key in given:
            if key not in section["settings"]:
                known = section["settings"]
                raise UnknownKeyError(
                    f"{key!r} is not a key of role {role!r}{suggestion(key, known)}"
                )
        values = self._values(role, given, strict=True)
        origins: dict[Path, Origin] = {}
        for key, entry in section["settings"].items():
            origin = decode_origin(entry)
            if origin is not None:
                origins[(key,)] = origin
        for dotted, entry in section.get("leaves", {}).items():
            origin = decode_origin(entry)
            if origin is not None:
                origins[split_key(dotted)] = origin
        layer = Layer(
            "audit",
            "audit",
            # (an attribute named '', which setattr takes at run time and no layer holds, is
            # the namespace's without the layer's: explain says it was set at run time)
            {key: value for key, value in values.items() if key},
            origin=Origin("audit", "audit", source=self.path),
            origins=origins,
            # (a secret given back is one in the replay too, whatever its key's name)
            secret_keys=given,
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
        return namespace_from(values, provenance)

    def namespaces(self, *, secrets: Mapping[str, Any] | None = None) -> dict[str, Namespace]:
        """`namespace(role)` of every role."""
        return {role: self.namespace(role, secrets=secrets) for role in self.roles}

    def setting(self, role: str, key: str) -> Setting:
        """The recorded `Setting` of `key` (a top-level key or a dotted path), with history."""
        section = self._section(role)
        entry = lookup_entry(section, key)
        if entry is None:
            known = [*section["settings"], *section.get("leaves", {})]
            raise UnknownKeyError(
                f"{key!r} is not a key of role {role!r} in this record{suggestion(key, known)}"
            )
        decoder = Decoder(False, self._where(role), self.types)
        history = tuple(
            Setting(
                key,
                decoder.value(item["value"]),
                decode_origin(item) or Origin("audit", "audit"),
                reason=Reason(item["reason"]),
                by=item.get("by"),
            )
            for item in entry.get("history", ())
        )
        origin = decode_origin(entry) or Origin("audit", "audit", source=self.path)
        return Setting(key, decoder.value(entry["value"]), origin, history, role=role)

    def to_dict(self) -> dict[str, Any]:
        """A copy of the record, as `audit()` returned it."""
        copied: dict[str, Any] = json.loads(json.dumps(self.data))
        return copied

    def _where(self, role: str) -> str:
        return f"{self.path or 'audit record'}: role {role}"


_PROBLEM_FIELDS = frozenset(_PROBLEM_NAMES)


def _notice(data: Mapping[str, Any]) -> Problem:
    return Problem(**{name: value for name, value in data.items() if name in _PROBLEM_FIELDS})


def lookup_entry(section: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    """The entry of `key` in a role's section: a top-level key's, else a leaf's, else None."""
    entry: Mapping[str, Any] | None = section["settings"].get(key)
    if entry is None:
        entry = section.get("leaves", {}).get(key)
    return entry


#: What a function taking a record takes (`check_type`).
RECORD = (AuditRecord, Mapping)
RECORD_TAKES = "an AuditRecord or a record's dict, such as load_audit(path)"


def record_data(record: AuditRecord | Mapping[str, Any]) -> Mapping[str, Any]:
    """The record as a dict: an `AuditRecord`'s (checked when it was read), or the dict
    itself, checked as `AuditRecord.from_dict` checks one (its fingerprint apart): a dict from
    anywhere is read by code that recurses into it."""
    if isinstance(record, AuditRecord):
        return record.data
    _check(record, None)
    return record


def _check(data: Any, path: str | None) -> None:
    """Raise `AuditError` with every problem `validate` finds in `data` (from `path`); a
    mapping of another class (a read-only view) is checked as the dict it holds."""
    problems, advice = validate(dict(data) if isinstance(data, Mapping) else data)
    if problems:
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise AuditError(
            f"not a readable layerconf audit record: {'; '.join(problems[:10])}{more}; " + advice,
            path,
        )
