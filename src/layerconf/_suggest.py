"""Did-you-mean suggestions for misspelt keys, fields and choices."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to `word`, or None when nothing is close enough."""
    pool = list(candidates)
    matches = difflib.get_close_matches(word, pool, n=1, cutoff=0.6)
    if not matches:
        # A flag spelling (`--lr`, `tensor-model-parallel-size`) of a dest.
        normal = word.lstrip("-").replace("-", "_")
        if normal != word and normal in pool:
            return normal
        return None
    return matches[0]


def suggestion(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)``-style text for a message, or ``""``."""
    match = did_you_mean(word, candidates)
    return f"; did you mean {match!r}?" if match else ""
