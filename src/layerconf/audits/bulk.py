"""The entries of an audit record made in bulk.

Most keys of a configuration share their walk's answer (`layerconf.core.explain.plain_groups`:
one origin, nothing shadowed): `alike_entries` makes their entries as copies of one template,
in loops that run in C (`map`), and hands the texts of their values (and, when the record is
written, the ends of their lines) to `Texts`, for the fingerprint and the file; the tests
compare both ways. When the file is written unsigned, the entries themselves wait
(`Texts.make_entries`): the file needs only their lines.

The keys set over other values (a command line's over the defaults: a few dozen) have an
answer each: `history_entries` makes their entries in one loop when their values are plain
scalars, and when writing takes the line an audit made before (`texts.known_history`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from layerconf.audits.codec import Encoder
from layerconf.audits.texts import (
    WAITING,
    Section,
    Texts,
    fill,
    filled,
    group_tails,
    group_texts,
    known_history,
    scalar_texts,
)
from layerconf.core.explain import Plain, values_at
from layerconf.core.records import Reason

__all__ = ["alike_entries", "history_entries", "plain_entry"]


def alike_entries(
    encoder: Encoder,
    texts: Texts,
    settings: dict[str, Any],
    found: Plain,
    keys: list[str],
    current: list[Any] | None,
    values: Mapping[str, Any],
    secret_keys: frozenset[Any],
    others: dict[str, Plain],
) -> Iterator[tuple[str, Any]]:
    """(key, entry) of `keys`, which share the walk's answer `found` (one origin, nothing
    shadowed): each entry a copy of one template, its value put in, in C-level loops (`map`).
    `current`: the values of `keys` in `values`, when the walk read them (else None).
    A key whose value is a secret's, or does not encode as itself, goes to `others`. The
    texts of the values (and, when writing, the ends of the entries' lines) go to `texts`,
    for `settings`; with `texts.deferred`, the entries wait (each key holding `WAITING`
    until then).
    """
    # A secret's value is redacted; an unset one (None) is null either way, as here (the
    # keys are looked through only for a secret that is set).
    held = frozenset(key for key in secret_keys if values[key] is not None)
    if held and not held.isdisjoint(keys):
        held = held.intersection(keys)
        others.update(dict.fromkeys(held, found))
        keys = list(itertools.filterfalse(held.__contains__, keys))
        current = None
    if current is None:
        current = values_at(values, keys)
    group = group_texts(keys, current)  # (read-only: kept, maybe shared)
    # a value that does not encode as itself: no text
    others.update(dict.fromkeys(group.blank, found))
    keys, current = group.keys, group.current
    template = {"value": None, **encoder.origin(found.origin)}
    section = texts.section(settings)
    section.values.update(group.texts)
    if texts.lines:  # each line: the key, the template's text with the value's text in its
        tail = texts.compact(template)[len('{"value": null') :]  # place
        section.tails.update(group_tails(group, tail))
    if texts.deferred is not None:  # the entries wait (`Texts.make_entries`), each key
        texts.deferred.append(functools.partial(fill, settings, keys, template, current))
        return zip(keys, itertools.repeat(WAITING, len(keys)), strict=True)  # holding WAITING
    return zip(keys, filled(template, current), strict=True)


def history_entries(
    encoder: Encoder,
    texts: Texts,
    settings: dict[str, Any],
    known: Section,
    histories: Mapping[str, Plain],
    values: Mapping[str, Any],
    secret_keys: frozenset[Any],
) -> None:
    """Put in `settings` the entry of each key of `histories` (the walk's answers of the
    keys set over other values: a command line's over the defaults). When writing, each
    with its line (`_history_lines`). Else an entry of plain scalars, not a secret's (its
    value and the one value it shadowed both have a text, `scalar_texts`: nothing to encode
    or look at; the common case) is made in this loop, the values as they are, and its
    value's text goes to `known`; any other by `plain_entry`."""
    keys = list(histories)
    answers = list(histories.values())
    current = values_at(values, keys)
    if texts.lines:
        _history_lines(encoder, texts, settings, known, keys, answers, current, secret_keys)
        return
    now = scalar_texts(current)
    shadowed = scalar_texts([_one_shadowed(answer) for answer in answers])
    origin = encoder.origin
    shown = known.values
    for key, value, found, text, before in zip(keys, current, answers, now, shadowed, strict=True):
        if text and before and key not in secret_keys:
            then, where = found.shadowed[0]
            entry = settings[key] = {"value": value, **origin(found.origin)}
            entry["history"] = [{"value": then, **origin(where), "reason": _OVERRIDDEN}]
            shown[key] = text
        else:
            settings[key] = plain_entry(encoder, key in secret_keys, value, found)


def _one_shadowed(plain: Plain) -> Any:
    """The value `plain` shadowed, when it shadowed one (else a value without a text)."""
    return plain.shadowed[0][0] if len(plain.shadowed) == 1 else _NO_TEXT


#: A value `scalar_texts` gives no text.
_NO_TEXT = object()


def _history_lines(
    encoder: Encoder,
    texts: Texts,
    settings: dict[str, Any],
    known: Section,
    keys: list[str],
    answers: list[Plain],
    current: list[Any],
    secret_keys: frozenset[Any],
) -> None:
    """`history_entries` when writing: each entry with its line in `known`, made by
    `plain_entry` and `Texts.history_line`; an entry whose line an audit made before
    (`known_history`) waits, with `texts.deferred`, as WAITING (its value's text to `known`)."""
    lines = known.lines
    for key, value, found in zip(keys, current, answers, strict=True):
        secret = key in secret_keys
        history = known_history(key, secret, value, found)
        if history is not None and texts.deferred is not None:  # the entry waits too
            settings[key] = WAITING
            texts.deferred.append(
                functools.partial(_make_plain, settings, key, encoder, value, found)
            )
            lines[key], known.values[key] = history
            continue
        entry = settings[key] = plain_entry(encoder, secret, value, found)
        lines[key] = history[0] if history else texts.history_line(key, secret, value, found, entry)


def plain_entry(encoder: Encoder, secret: bool, value: Any, plain: Plain) -> dict[str, Any]:
    """The entry `layerconf.audits.record` makes of the `Setting` that `plain` stands for,
    without making it: the same fields in the same order (the tests compare both ways over
    whole records)."""
    encode = encoder.redacted if secret else encoder.value
    entry = {"value": encode(value), **encoder.origin(plain.origin)}
    if plain.shadowed:
        history = entry["history"] = []
        for shadowed, origin in plain.shadowed:  # (a loop: a comprehension is a call)
            history.append(
                {"value": encode(shadowed), **encoder.origin(origin), "reason": _OVERRIDDEN}
            )
    return entry


def _make_plain(
    settings: dict[str, Any], key: str, encoder: Encoder, value: Any, plain: Plain
) -> None:
    """Put the entry of `key` (not a secret's) in `settings`: `plain_entry`, made late."""
    settings[key] = plain_entry(encoder, False, value, plain)


_OVERRIDDEN = Reason.OVERRIDDEN.value
