"""The two texts of a value an audit record encodes: `canonical` (sorted keys, ASCII, no
spaces: hashed into the fingerprint) and `compact` (one line, keys in their order: as files and
`flatten` write it), and the C encoders behind them, made once.

`layerconf.audits.codec` shares them with the other modules of `layerconf.audits`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["c_chunks", "canonical", "canonical_chunks", "canonical_encoder", "compact"]


def canonical(value: Any) -> str:
    """The canonical text of an encoded value: sorted keys, no spaces, ASCII, no NaN."""
    return _CANONICAL(value)


#: What ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
#: allow_nan=False)`` calls, made once (json.dumps makes an encoder per call).
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
).encode


def canonical_encoder() -> Callable[[Any], str]:
    """A function giving what `canonical` gives, cheaper a call: it makes the C encoder that
    `json.JSONEncoder.encode` makes (a new one a value: its cycle check keeps state, left
    behind by an error), without that method's Python frames."""
    return lambda value: "".join(canonical_chunks()(value, 0))


def canonical_chunks() -> Callable[[Any, int], list[str]]:
    """`canonical`'s own C encoder, made for the caller alone: ``encode(value, 0)`` gives the
    text's chunks, value after value, until one fails (its cycle check keeps the state an
    error leaves: `canonical_encoder` makes one a value)."""
    return c_chunks(_CANONICAL_OPTIONS, canonical)


def c_chunks(
    options: json.JSONEncoder, text: Callable[[Any], str]
) -> Callable[[Any, int], list[str]]:
    """The C encoder of `options` (an ASCII-only encoder, no indent), as its ``encode`` makes
    it, for the caller alone (its cycle check keeps state while it runs): ``encode(value, 0)``
    gives the text's chunks. On a Python without the json module's C part, the one chunk
    `text` (the text of the same options) gives."""
    make = getattr(json.encoder, "c_make_encoder", None)  # CPython's, not in typeshed
    if make is None:
        return lambda value, _: [text(value)]
    encode: Callable[[Any, int], list[str]] = make(
        {},
        options.default,
        _ASCII,
        None,
        options.key_separator,
        options.item_separator,
        options.sort_keys,
        options.skipkeys,
        options.allow_nan,
    )
    return encode


_CANONICAL_OPTIONS = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
)
_ASCII = json.encoder.encode_basestring_ascii

_COMPACT = json.JSONEncoder(ensure_ascii=True, allow_nan=False).encode


def compact(value: Any) -> str:
    """An encoded value on one line, keys in their order."""
    return _COMPACT(value)
