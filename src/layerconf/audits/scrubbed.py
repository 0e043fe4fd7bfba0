"""Values a secret's text was found in: shown scrubbed, kept as a digest, never replayed as real.

A secret key's value is redacted by its key (`Encoder.field`). A secret's text can also turn up
inside another value (``--wandb-exp-name run-$WANDB_KEY``, or a short key that happens to equal
a choice such as ``cosine``). Such a value is not rewritten in place, which would record a value
the run never had: it becomes a marker,
``{"$type": "scrubbed", "shown": <the value, secrets replaced>, "digest": <hex>, "keyed": bool}``.
`shown` is for people; `digest` is an HMAC-SHA256 of the real value's canonical text, which the
fingerprint covers, so that configurations that differ in any non-secret value never share a
fingerprint; replay refuses the marker (`AuditRecord.namespace` names the key).

The digest's key, and why: a plain hash of a value that is mostly known (``run-`` plus a short
secret) could be searched for the secret offline. With the record's signing key (``keyed``),
the digest is unguessable to whoever lacks the key, two records written with the same key
compare, and a value given back at replay is checked against it. Without one, the key is a
random salt used once and never stored: nobody can guess from the digest, and nobody can
reproduce it, so such a record's fingerprint matches no other record's.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from layerconf.audits.codec import TAG, Encoder, canonical
from layerconf.core.secrets import (
    SECRETS,
    SecretPolicy,
    TextSearch,
    embedded_secrets,
    may_show_secret,
)

__all__ = ["SCRUBBED", "digest_key", "first_marker", "given_matches", "matches", "scrub_record"]

#: The tag of a value a secret's text was found in.
SCRUBBED = "scrubbed"
_CONTEXT = b"layerconf-scrubbed-value-1"


def _bytes_text(encoded: Mapping[str, Any]) -> str | None:
    """The text of encoded bytes (``{"$type": "bytes", "base64": ...}``, a bytearray's too):
    searched for secrets as a string is (else their base64 would hide them); None for any
    other value."""
    data = encoded.get("base64")
    if encoded.get(TAG) not in ("bytes", "bytearray") or type(data) is not str:
        return None
    try:
        return base64.b64decode(data, validate=True).decode("utf-8", "surrogateescape")
    except (binascii.Error, ValueError):
        return None


def digest_key(signing_key: bytes | None) -> tuple[bytes, bool]:
    """The key of a record's digests, and whether it derives from `signing_key` (else random)."""
    if signing_key is None:
        return secrets.token_bytes(32), False
    return hmac.new(signing_key, _CONTEXT, hashlib.sha256).digest(), True


def _digest(key: bytes, encoded: Any) -> str:
    return hmac.new(key, canonical(encoded).encode("ascii"), hashlib.sha256).hexdigest()


def matches(marker: Mapping[str, Any], encoded: Any, signing_key: bytes) -> bool:
    """Whether the encoded value `encoded` is the one `marker` (keyed by `signing_key`) hides."""
    if marker.get("keyed") is not True or type(marker.get("digest")) is not str:
        return False
    expected = _digest(digest_key(signing_key)[0], encoded).encode("ascii")
    return hmac.compare_digest(marker["digest"].encode("ascii"), expected)


class _Scrubber:
    """Replaces the secrets' texts: in shown text, and as markers in recorded values. A secret
    a string's form shows (a URL's password, a secret key's value in JSON text) is found by
    its place, however short: no search for its text in free text is needed."""

    def __init__(
        self, texts: Sequence[str], policy: SecretPolicy, forms: bool, key: bytes, keyed: bool
    ) -> None:
        self.found = TextSearch(texts)  # (in time linear in a string, however many texts)
        self.policy = policy
        self.forms = forms  # whether a string's form may show a secret (else none is asked)
        self.placeholder = policy.placeholder
        self.key = key
        self.keyed = keyed

    def shows(self, text: str) -> bool:
        """Whether the form of `text` shows a secret other than the placeholder."""
        return (
            self.forms
            and may_show_secret(text)
            and any(secret != self.placeholder for secret in embedded_secrets(text, self.policy))
        )

    def text(self, value: Any, keys: bool = False) -> Any:
        """`value` (any JSON) with each secret's text replaced in its strings (its objects'
        keys too with `keys`: in a value shown, not in the record's own names)."""
        kind = type(value)
        if kind is str:
            if self.forms and may_show_secret(value):
                value = self.policy.redact("", value)  # (a text: its form's secrets hidden)
            for secret in self.found(value):  # the longest first, as `texts` are given
                value = value.replace(secret, self.placeholder)
            return value
        if kind is dict and (text := _bytes_text(value)) is not None:
            shown = self.text(text).encode("utf-8", "surrogateescape")
            return {**value, "base64": base64.b64encode(shown).decode("ascii")}
        if kind is dict:
            return {
                self.text(key) if keys else key: self.text(item, keys)
                for key, item in value.items()
            }
        if kind is list:
            return [self.text(item, keys) for item in value]
        return value

    def holds(self, value: Any) -> bool:
        """Whether a string in `value` (a key too) holds a secret's text."""
        pending = [value]
        while pending:
            item = pending.pop()
            kind = type(item)
            if kind is str:
                if self.found(item) or self.shows(item):
                    return True
            elif kind is dict:
                pending.extend(item)
                pending.extend(item.values())
                text = _bytes_text(item)  # (bytes: their text, not its base64)
                if text is not None:
                    pending.append(text)
            elif kind is list:
                pending.extend(item)
        return False

    def value(self, encoded: Any) -> Any:
        """An encoded value, each part that holds a secret's text (bytes: their text) replaced
        by a marker.

        A plain string, or a tagged value (whose fields must stay whole), becomes a marker;
        plain lists and objects are looked into, so that the other items stay replayable.
        A mapping whose key holds the text becomes a marker whole.
        """
        kind = type(encoded)
        if kind is list:
            return [self.value(item) for item in encoded]
        if kind is dict and TAG not in encoded and not self.holds(list(encoded)):
            return {key: self.value(item) for key, item in encoded.items()}
        if (kind is str or kind is dict) and self.holds(encoded):
            return {
                TAG: SCRUBBED,
                "shown": self.text(encoded, keys=True),
                "digest": _digest(self.key, encoded),
                "keyed": self.keyed,
            }
        return encoded

    def entry(self, entry: Any) -> Any:
        """An entry (or history item, or event): its value marked, its history too."""
        if type(entry) is not dict:
            return self.text(entry)
        shown: dict[str, Any] = {}
        for name, item in entry.items():
            if name == "value":
                shown[name] = self.value(item)
            elif name == "history" and type(item) is list:
                shown[name] = [self.entry(old) for old in item]
            else:
                shown[name] = self.text(item)
        return shown

    def section(self, section: Any) -> Any:
        """A role's section: its entries' and events' values marked, the rest scrubbed."""
        if type(section) is not dict:
            return self.text(section)
        shown: dict[str, Any] = {}
        for name, item in section.items():
            if name == "settings" and type(item) is dict:
                shown[name] = {key: self.entry(entry) for key, entry in item.items()}
            elif name == "leaves" and type(item) is dict:
                # (a leaf's path holds its mapping's keys: {"https://u:pw@h": 1}'s, say)
                shown[name] = {self.text(key): self.entry(entry) for key, entry in item.items()}
            elif name == "events" and type(item) is list:
                shown[name] = [self.entry(event) for event in item]
            else:
                shown[name] = self.text(item)
        return shown


def scrub_record(
    record: dict[str, Any],
    texts: Sequence[str],
    policy: SecretPolicy,
    signing_key: bytes | None,
    forms: bool = True,
) -> dict[str, Any]:
    """`record` with the secrets' `texts`, and those the forms of its strings show under
    `policy` (a URL's password; with `forms`, whether a string of the record may show one),
    scrubbed: values marked (see above), texts replaced.

    The ``value`` of every entry, history item and event becomes a marker where it holds a
    secret's text (the value of a secret key is already the placeholder); the command line,
    notices, origins' tokens and every other text just have the secret's text replaced.
    """
    key, keyed = digest_key(signing_key)
    scrubber = _Scrubber(texts, policy, forms, key, keyed)
    shown = {name: scrubber.text(item) for name, item in record.items() if name != "roles"}
    shown["roles"] = {role: scrubber.section(item) for role, item in record["roles"].items()}
    return {name: shown[name] for name in record}


def first_marker(value: Any) -> Mapping[str, Any] | None:
    """The first scrubbed marker in an encoded value, or None."""
    pending = [value]
    while pending:
        item = pending.pop()
        if type(item) is dict:
            if item.get(TAG) == SCRUBBED:
                return item
            pending.extend(item.values())
        elif type(item) is list:
            pending.extend(item)
    return None


def given_matches(recorded: Any, given: Any, key: bytes) -> bool:
    """Whether `given` is the value recorded: equal where the record shows it, and each
    scrubbed part's digest that of the given part."""

    def same(recorded: Any, encoded: Any) -> bool:
        if type(recorded) is dict and recorded.get(TAG) == SCRUBBED:
            # A digest salted once (written without the key, signed later) checks nothing.
            return recorded.get("keyed") is not True or matches(recorded, encoded, key)
        if type(recorded) is list and type(encoded) is list and len(recorded) == len(encoded):
            return all(same(a, b) for a, b in zip(recorded, encoded, strict=True))
        if type(recorded) is dict and type(encoded) is dict and recorded.keys() == encoded.keys():
            return all(same(recorded[name], encoded[name]) for name in recorded)
        return canonical(recorded) == canonical(encoded)

    return same(recorded, Encoder(SECRETS).value(given))
