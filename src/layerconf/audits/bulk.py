"""The entries of an audit record made in bulk.

Most keys of a configuration share their walk's answer (`layerconf.core.explain.plain_groups`:
one origin, nothing shadowed): `alike_entries` makes their entries as copies of one template,
in loops that run in C (`map`), and hands the texts of their values (and, when the record is
written, the ends of their lines) to `Texts`, for the fingerprint and the file; the tests
compare both ways. When the file is written unsigned, the entries themselves wait
(`Texts.make_entries`): the file needs only their lines.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from layerconf.audits.codec import Encoder
from layerconf.audits.texts import WAITING, Texts, fill, filled, group_tails, group_texts
from layerconf.core.explain import Plain, values_at

__all__ = ["alike_entries"]


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
