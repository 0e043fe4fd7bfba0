"""Plain numbers whose writer may not mean what YAML 1.1 reads: ``010`` is 8, ``1:30`` is 90.

PyYAML (and so slime) reads YAML 1.1, where a leading 0 is octal, ':' counts in base 60,
``0b`` is binary and '_' between digits is dropped; a YAML 1.2 reader (an editor's) reads each
of them otherwise. `yaml11_number` says what such a number became and how to keep the text; the
walker (`layerconf.sources._yaml_walk`) reports it as a warning, and the plain block reader
(`layerconf.sources._yaml_simple`) leaves such a document to the walker.
"""

from __future__ import annotations

from typing import Any

__all__ = ["shortened", "yaml11_number"]


def yaml11_number(text: str, value: Any, *, quote: bool = True) -> tuple[str, str] | None:
    """(message, hint) for a plain scalar `text` that YAML 1.1 reads as the number `value` in a
    form its writer may not mean, else None: base 60 (``1:30`` is 90), binary (``0b101``),
    octal (``010`` is 8), or ``_`` between digits that does not group them by three
    (``2024_01_05`` is 20240105; ``1_000_000`` reads as it shows). A YAML 1.2 reader (an
    editor's) reads each of them otherwise: as text, or ``010`` as ten. Without `quote` (a
    credential's value) neither the text nor the value is repeated."""
    sign = text[:1] if text[:1] in "+-" else ""
    body = text[len(sign) :]
    digits = body.replace("_", "")
    decimal = None
    if ":" in body:
        why = "reads a number with ':' in base 60"
    elif digits[:2] in ("0b", "0B"):
        why = "reads '0b' as a binary number"
    elif (
        type(value) is int
        and len(digits) > 1
        and digits[0] == "0"
        and digits[1].isdigit()
        and value != (decimal := int(sign + digits))  # ('07' is 7 read either way)
    ):
        why = "reads a number with a leading 0 as octal"
    elif "_" in body and not _grouped_by_three(body):
        why = "ignores '_' in a number"
        decimal = None  # (assigned above when the leading 0 changed nothing: '0_7')
    else:
        return None  # (a hex number without '_': read alike by YAML 1.2)
    kind = type(value).__name__
    a_kind = f"an {kind}" if kind == "int" else f"a {kind}"
    read = f"YAML 1.1, which PyYAML and slime follow, {why}"
    if not quote:
        return f"the value is read as {a_kind}: {read}", "quote it to keep the text"
    keep = "quote it to keep the text"
    if len(text) <= 60:
        keep = f"quote it, {_quoted(text)}, to keep the text"
    if type(value) is int and value.bit_length() > 128:  # (no one writes it by hand; its
        # decimal text may pass Python's digit limit: a hex number of 4,000 digits with a '_')
        about = int(value.bit_length() * 0.30103) + 1
        return f"{shortened(text)} is read as an int of about {about:,} digits: {read}", keep
    shown = repr(value)
    write = f"write {shown} for " + (
        "the number" if decimal is None else f"this number or {decimal!r} for the decimal one"
    )
    return f"{shortened(text)} is read as the {kind} {shown}: {read}", f"{write}, or {keep}"


def _grouped_by_three(body: str) -> bool:
    """Whether the '_' of the unsigned number `body` group its integer digits by three, as a
    reader writes a large number (``1_000_000``, ``12_345.5``)."""
    whole = body.split(".", 1)[0]
    head, *groups = whole.split("_")
    return (
        1 <= len(head) <= 3
        and head[0] != "0"
        and all(len(g) == 3 for g in groups)
        and ("_" not in body[len(whole) :])
    )


def _quoted(text: str) -> str:
    """`text` in single quotes, as YAML reads it back as the same text."""
    return "'" + text.replace("'", "''") + "'"


def shortened(text: str, limit: int = 60) -> str:
    """`text` quoted, cut to about `limit` characters (as the readers' messages quote it)."""
    return repr(text) if len(text) <= limit else repr(text[: limit - 3]) + "..."
