"""Did-you-mean suggestions for misspelt keys, fields and choices."""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(word: str, candidates: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The closest candidate to `word`, or None when nothing is close enough (`cutoff` is
    difflib's similarity ratio). The one candidate that is `word` in other case comes first
    (``LR``: ``lr``, ``COSINE``: ``cosine``), which difflib, comparing characters as they
    are, finds nothing alike."""
    import difflib  # only when a message needs it: not at `import layerconf`

    pool = list(candidates)
    folded = word.casefold()
    same = [c for c in pool if isinstance(c, str) and c.casefold() == folded]
    if len(same) == 1 and same[0] != word:
        return same[0]
    matches = difflib.get_close_matches(word, pool, n=1, cutoff=cutoff)
    if not matches:
        return dest_of_flag(word, pool)
    return matches[0]


#: How many words one reading (a role's layer, the environment, a mapping) gets a did-you-mean
#: for. Each compares its word with every candidate, some 20 to 70 ms against the thousand
#: dests of a Megatron parser, so thousands of unknown keys in one file would take minutes;
#: past this many, the rest are not the typos a suggestion is for.
SUGGESTED = 50


class Suggestions:
    """`did_you_mean` against one pool of `candidates`, for the first `limit` words asked;
    after that, only the dest a flag spelling names (a lookup, no comparison)."""

    def __init__(self, candidates: Iterable[str], limit: int = SUGGESTED) -> None:
        self._pool = list(candidates)
        self._left = limit

    def __call__(self, word: str) -> str | None:
        if self._left <= 0:
            return dest_of_flag(word, self._pool)
        self._left -= 1
        return did_you_mean(word, self._pool)


def dest_of_flag(word: str, dests: Iterable[str]) -> str | None:
    """The dest a flag spelling names (``--lr``, ``tensor-model-parallel-size``), or None."""
    normal = word.lstrip("-").replace("-", "_")
    return normal if normal != word and normal in dests else None


def did_you_mean_hint(word: str, candidates: Iterable[str]) -> str | None:
    """``did you mean 'x'?`` for a problem's hint, or None when nothing is close enough."""
    match = did_you_mean(word, candidates)
    return f"did you mean {match!r}?" if match else None


def suggestion(word: str, candidates: Iterable[str]) -> str:
    """``; did you mean 'x'?`` to end a message with, or ``""``."""
    hint = did_you_mean_hint(word, candidates)
    return f"; {hint}" if hint else ""
