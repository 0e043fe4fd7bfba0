"""The forms of a text that show a secret: a URL's password, the values of secret keys in JSON
text; the texts of a secret's value, to search for elsewhere; and `TextSearch`, which looks for
many of them at once.

Private to `layerconf.core.secrets`, which exports the public ones (and `TextSearch`, for the
audit records, `explain` and the command's output); nothing here holds a policy of its own
(each function is given one).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from layerconf.core.lazy import LazyPattern
from layerconf.core.values import MAX_DEPTH, MAX_INT_BITS

if TYPE_CHECKING:
    import argparse

    from layerconf.core.secrets import SecretPolicy

__all__ = [
    "TextSearch",
    "command_line_secrets",
    "hide_url_passwords",
    "may_show_secret",
    "remade",
    "secret_texts",
    "text_of",
    "url_passwords",
]


def text_of(value: Any) -> str | None:
    """The text of a value that shows one other than a str: a str subclass's, bytes' (UTF-8,
    any other byte kept as an escape) and a path's. Such a text is searched for secrets as a
    str is, and `remade` into the value shown; None for any other value."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "surrogateescape")
    if isinstance(value, os.PathLike):
        try:
            path = os.fspath(value)
        except Exception:
            return None
        return path if isinstance(path, str) else path.decode("utf-8", "surrogateescape")
    return None


def remade(value: Any, text: str) -> Any:
    """`value` (a str subclass, bytes, a path: see `text_of`) made again from `text`, its text
    redacted."""
    if isinstance(value, (bytes, bytearray)):
        data = text.encode("utf-8", "surrogateescape")
        return bytearray(data) if isinstance(value, bytearray) else data
    try:
        return type(value)(text)
    except Exception:  # a path type that is not made from its text: shown as the text
        return text


def secret_texts(value: Any) -> list[str]:
    """The text of a secret's value, to search for and scrub elsewhere (argv, notices).

    Strings, ints, bytes and paths (`text_of`), also inside mappings, lists, tuples, sets and
    record-like objects' fields (`parts`: each container once, at most `MAX_DEPTH` levels
    down); an int too long to print (Python refuses more than 4,300 digits) is left out.
    """
    found: list[str] = []
    _texts(value, found, set(), 0)
    return found


def _texts(value: Any, found: list[str], seen: set[int], depth: int) -> None:
    kind = type(value)
    if kind is str:
        found.append(value)
    elif kind is int and value.bit_length() <= MAX_INT_BITS:
        found.append(str(value))
    elif (text := text_of(value)) is not None:
        found.append(text)
    elif id(value) in seen or depth >= MAX_DEPTH:
        return
    else:
        from layerconf.core._scrub import parts  # (which imports this module)

        seen.add(id(value))
        try:
            held = parts(value)
            for _, item in held or ():
                _texts(item, found, seen, depth + 1)
        except Exception:  # (one that cannot be read: shown as such, its texts not known)
            pass


def _escaped(secret: str) -> tuple[str, str]:
    """`secret` as repr() writes it inside a text it quotes (``value: 'x a\\b'``), in single
    quotes and in double quotes."""
    return repr(secret)[1:-1], repr(secret + "'\"")[1:-4]


def may_show_secret(text: str) -> bool:
    """Whether the form of `text` can show a secret: a URL (its password), JSON text (the
    values of secret keys), whitespace before it allowed as ``json.loads`` allows it. A text
    for which this is false shows none: it is written as it is, never searched."""
    return "://" in text or text.lstrip()[:1] in ("{", "[")


def _may_hold_a_form(texts: str) -> bool:
    """Whether a text joined in `texts` may pass `may_show_secret` (its marks, found in C)."""
    return "://" in texts or "{" in texts or "[" in texts


# ``scheme://user:password@host``: the password is a credential. Every part is bounded, so
# that a long text (a megabyte of letters before a ``://``) is searched in linear time.
_URL_PASSWORD = LazyPattern(r"[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s/@:]{0,256}:([^\s/@]{1,512})@")
# A secret-named key in JSON text, however it is written (``"HF_TOKEN":``).
# (Only where an object's key can start, after '{' or ',': a text of a million escaped quotes
# is not scanned again from each of them.)
_JSON_KEY = LazyPattern(r'[{,]\s*"((?:[^"\\]|\\.){1,200})"\s*:')


def url_passwords(text: str) -> list[str]:
    """The passwords the URLs in `text` carry (``https://user:pw@host`` -> ``["pw"]``)."""
    return _URL_PASSWORD.findall(text) if "://" in text else []


def hide_url_passwords(text: str, placeholder: str) -> tuple[str, list[str]]:
    """`text` with the password of each URL in it replaced by `placeholder`, however short
    (found by its place, not searched for), and the passwords replaced."""
    passwords: list[str] = []

    def hide(match: re.Match[str]) -> str:
        passwords.append(match.group(1))
        return match.group(0)[: match.start(1) - match.start(0)] + placeholder + "@"

    if "://" not in text:
        return text, passwords
    return _URL_PASSWORD.sub(hide, text), passwords  # one pass, however many there are


def _redact_text(text: str, policy: SecretPolicy, found: list[str]) -> str:
    """`text` (an argv token, a value) without the secrets its form shows: URL passwords,
    values of secret keys in JSON text (a malformed one naming a secret key goes whole, as
    does one nested more than `MAX_DEPTH` levels).

    A text that shows more than `_MAX_FOUND` different secrets goes whole: searching every
    other text for each of thousands would take time quadratic in the input.
    """
    whole = text
    if "://" in text:
        text, passwords = hide_url_passwords(text, policy.placeholder)
        if len(set(passwords)) > _MAX_FOUND:
            found.append(whole)
            return policy.placeholder
        found.extend(dict.fromkeys(passwords))
    if text.lstrip()[:1] not in ("{", "[") or len(text) > _JSON_LIMIT:
        return text
    import json

    try:
        data = json.loads(text)
        shown = policy.redact("", data)
        if shown is data:
            return text
        # (TypeError: JSON nested past `MAX_DEPTH`, whose redaction holds `NESTED`: read as
        # JSON that does not parse)
        redacted = json.dumps(shown, ensure_ascii=False)
    except (ValueError, RecursionError, TypeError):
        if _names_a_secret(text, policy):
            found.append(whole)
            return policy.placeholder
        return text
    values = _secret_values(data, policy)
    if len(set(values)) > _MAX_FOUND:
        found.append(whole)
        return policy.placeholder
    found.extend(dict.fromkeys(values))
    return redacted


def _names_a_secret(text: str, policy: SecretPolicy) -> bool:
    """Whether JSON text that does not parse names a secret key: as written, or with its
    quotes escaped by backslashes (``{\\"HF_TOKEN\\": ...}``, JSON written inside a string of
    a shell script or launch file), each level of escaping taken off in turn."""
    for _ in range(_ESCAPE_LEVELS):
        names = (_unescape(match.group(1)) for match in _JSON_KEY.finditer(text))
        if any(policy.is_secret(name) for name in names):
            return True
        if '\\"' not in text:
            return False
        text = _ESCAPED.sub(r"\1", text)  # one level: \" -> ", \\ -> \
    return False


# One level of backslash escaping (``\"``, ``\\``), and how many levels are taken off.
_ESCAPED = LazyPattern(r"(?s)\\(.)")
_ESCAPE_LEVELS = 4

#: The most different secrets one text may show before it is hidden whole.
_MAX_FOUND = 64
# Longer JSON text is not parsed to look for secrets (a role file's limits are far lower).
_JSON_LIMIT = 1 << 20


def _unescape(name: str) -> str:
    import json

    try:
        decoded = json.loads(f'"{name}"')
    except ValueError:
        return name
    return decoded if isinstance(decoded, str) else name


def _secret_values(value: Any, policy: SecretPolicy, depth: int = 0) -> list[str]:
    """The text of the values of every secret key inside `value` (JSON's: no cycle), at most
    `MAX_DEPTH` levels down."""
    found: list[str] = []
    if depth >= MAX_DEPTH:
        return found
    if isinstance(value, Mapping):
        for key, item in value.items():
            if policy.is_secret(key):
                found.extend(secret_texts(item))
            else:
                found.extend(_secret_values(item, policy, depth + 1))
    elif type(value) is list or type(value) is tuple:
        for item in value:
            found.extend(_secret_values(item, policy, depth + 1))
    return found


class TextSearch:
    """Which of many texts (the secrets' texts of a record, a command line, an output) a string
    holds, in time linear in the string however many texts there are, and whatever they are.

    A few texts are each looked for in C (``in``). More are found by one pass over the string
    through an automaton of them (Aho-Corasick: a trie of the texts whose every node knows the
    longest tail of its path that is another path of the trie), built once in time linear in
    their length: asking each of thousands of texts of each of thousands of strings took time
    quadratic in the input. The automaton takes the shortest texts first, up to `_MAX_NODES`
    nodes (~60 MB); longer texts past that, few by then, are each looked for in C, so that
    memory stays bounded however long the texts are.
    """

    __slots__ = ("_ends", "_fail", "_goto", "_order", "_output", "_rest", "texts")

    def __init__(self, texts: Iterable[str]) -> None:
        #: The texts, in the order given (the empty one dropped: it holds nothing to hide).
        self.texts = list(dict.fromkeys(text for text in texts if text))
        self._goto: list[dict[str, int]] = []
        self._fail: list[int] = []
        self._output: list[int] = []  # each node's nearest node that ends a text (-1: none)
        self._ends: list[str | None] = []  # the text each node ends, if one
        self._rest: list[str] = []  # the texts the automaton has no room for: each asked
        self._order: dict[str, int] = {}

    def _build(self) -> None:
        """The automaton, made on the first search (a search that never runs costs nothing).
        Threads may make it at once: each publishes a whole one, `_goto` last."""
        goto: list[dict[str, int]] = [{}]
        ends: list[str | None] = [None]
        rest: list[str] = []
        for text in sorted(self.texts, key=len):
            if len(goto) + len(text) > _MAX_NODES:
                rest.append(text)
                continue
            node = 0
            for char in text:
                child = goto[node].get(char)
                if child is None:
                    child = goto[node][char] = len(goto)
                    goto.append({})
                    ends.append(None)
                node = child
            ends[node] = text
        fail = [0] * len(goto)
        output = [-1] * len(goto)
        queue = list(goto[0].values())
        for node in queue:  # breadth first: a node's fail link is known before its children's
            for char, child in goto[node].items():
                link = fail[node]
                while link and char not in goto[link]:
                    link = fail[link]
                target = goto[link].get(char, 0)
                fail[child] = target if target != child else 0
                output[child] = (
                    fail[child] if ends[fail[child]] is not None else output[fail[child]]
                )
                queue.append(child)
        self._fail, self._output, self._ends, self._rest = fail, output, ends, rest
        self._order = {text: number for number, text in enumerate(self.texts)}
        self._goto = goto

    def __call__(self, value: str) -> list[str]:
        """The texts `value` holds, in the order given."""
        if len(self.texts) <= _FEW:
            return [text for text in self.texts if text in value]
        if not self._goto:
            self._build()
        goto, fail, output, ends = self._goto, self._fail, self._output, self._ends
        found: set[int] = set()  # the nodes whose texts were found (their outputs too)
        node = 0
        for char in value:
            while node and char not in goto[node]:
                node = fail[node]
            node = goto[node].get(char, 0)
            hit = node if ends[node] is not None else output[node]
            while hit > 0 and hit not in found:  # (a node found before: its chain was too)
                found.add(hit)
                hit = output[hit]
        texts = [ends[hit] for hit in found] + [text for text in self._rest if text in value]
        return sorted(texts, key=self._order.__getitem__)  # type: ignore[arg-type]


#: How many texts are looked for one by one, each in C.
_FEW = 16
#: The most nodes `TextSearch`'s automaton takes (each a few hundred bytes).
_MAX_NODES = 250_000


def command_line_secrets(argv: Sequence[str], parser: argparse.ArgumentParser) -> list[str]:
    """The text of every secret of `argv` as `parser` reads it, however short: each secret
    flag's value, and each token that shows a secret of its own (``HF_TOKEN=S``). What a
    message quoting the command line (argparse's, a type callable's) must not hold."""
    from layerconf.core.secrets import redact_argv, shows_secret  # (which imports this module)

    found = redact_argv(argv, parser=parser)[1]
    return [text for text in [*found, *(t for t in argv if shows_secret(t))] if text]
