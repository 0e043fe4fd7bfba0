"""Which keys hold credentials, and how their values are kept out of every record.

A key is a secret by its name alone (``wandb_key``, ``*_api_key``, ``hf_token``...), whatever
spelling it arrives in: a dest (``wandb_key``), a flag (``--wandb-key``), an environment
variable inside a mapping value (``HF_TOKEN``) or the last part of a dotted path
(``train_env_vars.HF_TOKEN``). Ordinary keys that merely mention keys or tokens
(``input_key``, ``fim_pad_token``, ``max_tokens_per_gpu``) are not secrets.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from layerconf.core._secret_dests import secret_dests as secret_dests
from layerconf.core._secret_dests import with_secret_keys as with_secret_keys
from layerconf.core._secret_flags import _SECRET_OPTIONS as _SECRET_OPTIONS
from layerconf.core._secret_flags import (
    _TABLES_KEPT,
    _cut_short,
    _may_be_secret,
    _misspelt,
    _near_secret,
    _normalize,
    _positional_secrets,
    _singular,
    _subcommand,
    _takes,
    is_option,
    line_tails,
    listing,
)
from layerconf.core._secret_flags import _secret_options as _secret_options
from layerconf.core._secret_names import DEFAULT_NAMES, DEFAULT_SUFFIXES
from layerconf.core._secret_text import TextSearch as TextSearch
from layerconf.core._secret_text import (
    _escaped,
    _may_hold_a_form,
    hide_url_passwords,
    may_show_secret,
    secret_texts,
    url_passwords,
)
from layerconf.core._secret_text import _redact_text as _redact_text
from layerconf.core.lazy import LazyPattern, record_repr

if TYPE_CHECKING:
    import argparse

__all__ = [
    "REDACTED",
    "SECRETS",
    "SecretPolicy",
    "embedded_secrets",
    "hide_url_passwords",
    "is_secret",
    "may_show_secret",
    "redact",
    "redact_argv",
    "redacted_argv",
    "redacted_token",
    "scrub_text",
    "secret_dests",
    "secret_texts",
    "shows_secret",
    "url_passwords",
    "with_secret_keys",
]

#: What a secret's value is replaced with.
REDACTED = "<redacted>"


def _names(names: Iterable[str]) -> frozenset[str]:
    if isinstance(names, str):
        raise TypeError(f"names must be a collection of names, not one string ({names!r})")
    return frozenset(_normalize(name) for name in names)


def _suffixes(suffixes: Iterable[str]) -> tuple[str, ...]:
    if isinstance(suffixes, str):
        raise TypeError(f"suffixes must be a collection of suffixes, not one string ({suffixes!r})")
    return tuple(sorted({suffix.replace("-", "_").lower() for suffix in suffixes}))


@attrs.frozen(cache_hash=True)
class SecretPolicy:
    """Which keys hold credentials: exact `names` and name `suffixes`, compared normalized.

    A name is normalized before it is compared: the last part of a dotted path, leading dashes
    dropped, ``-`` read as ``_``, lower case. Extend the default with
    ``SECRETS.extend(names=["my_token"])`` and pass the result where a policy is taken.
    `min_scrub_length`: a secret value at least this long is also searched for in free text
    (argv tokens, notices, other values) and replaced there; a shorter one is redacted only
    where it is a secret key's value, or where the form of a text shows it (a URL's password),
    so that a secret such as ``"1"`` cannot wreck the text.
    """

    __repr__ = record_repr

    names: frozenset[str] = attrs.field(default=DEFAULT_NAMES, converter=_names)
    suffixes: tuple[str, ...] = attrs.field(default=DEFAULT_SUFFIXES, converter=_suffixes)
    placeholder: str = REDACTED
    min_scrub_length: int = attrs.field(default=6, validator=attrs.validators.ge(1))

    def is_secret(self, key: str) -> bool:
        """Whether `key` (a dest, a flag, a dotted path, an environment variable) is a secret."""
        if not isinstance(key, str):
            return False
        size, tails = _DEFAULT_TAILS if self is SECRETS else _tails(self)
        if (
            size
            and key.isascii()
            and key[-size:].replace("-", "_").lower() not in tails
            and not key[-1:].isdigit()
        ):
            # A secret's normalized name (ASCII: lower() keeps each character in its place)
            # ends with one of `tails` or a number (`_singular`): most keys are answered here.
            return False
        return _is_secret(self, key)

    def secret_keys(self, keys: Iterable[Any]) -> list[str]:
        """The keys among `keys` that hold secrets (`is_secret`), in their order. Among many
        (a layer of a parser's thousand defaults) the few that may are picked out in C, by
        the end of each normalized key, instead of asking each."""
        names = list(keys)
        size, tails = _DEFAULT_TAILS if self is SECRETS else _tails(self)
        try:
            text = "\n".join(names)
        except TypeError:  # (a key that is not a string: none is a secret)
            names = [key for key in names if isinstance(key, str)]
            text = "\n".join(names)
        if len(names) < _SEARCHED_FROM or not size or not text.isascii():
            return [key for key in names if self.is_secret(key)]
        lowered = text.replace("-", "_").lower().split("\n")  # (ASCII: lengths kept)
        if len(lowered) != len(names):  # (a key holding a line break)
            return [key for key in names if self.is_secret(key)]
        ends = list(map(operator.itemgetter(slice(-size, None)), lowered))
        numbered = map(str.isdigit, map(_LAST_CHARACTER, ends))  # (`_singular`: HF_TOKEN_2)
        kept = map(operator.or_, map(tails.__contains__, ends), numbered)
        return [key for key in itertools.compress(names, kept) if self.is_secret(key)]

    def redact(self, key: str, value: Any) -> Any:
        """`value` with every secret replaced by the placeholder.

        The value of a secret key becomes the placeholder (None stays None: an unset secret
        reveals nothing); inside mappings, lists, tuples and sets (a subclass: copied as its
        base), the values of secret keys (``{"HF_TOKEN": "<redacted>"}``), and a namedtuple's,
        a dataclass's or an attrs instance's secret fields (``Creds(user='me',
        api_key='<redacted>')``); a URL's password or JSON's secrets in a text, a str's or the
        text of bytes or a path, a URL's password in the repr of another object (a container
        that holds itself: its copy holds the copy)."""
        if self.is_secret(key):
            return None if value is None else self.placeholder
        if type(value) is str:
            return _redact_text(value, self, [])
        if type(value) in (int, float, bool, type(None)):
            return value
        from layerconf.core._scrub import Scrub  # (which asks this for each key and text)

        return Scrub(self, ()).value(key, value, {})

    def texts_among(self, values: Mapping[str, Any]) -> list[str]:
        """The text of each secret among `values` (a layer's), to scrub from a message that
        quotes another of its values: what its secret keys hold, and the secrets inside its
        other values (``train_env_vars: {HF_TOKEN: S}``, a URL's password: `held_texts`)."""
        from layerconf.core.held_secrets import held_texts  # (which imports this module)

        found: list[str] = []
        for name, value in values.items():
            held_texts(name, value, self, found, reprs=False)
        return [text for text in found if text]  # ("" marks a secret without text)

    def extend(self, *, names: Iterable[str] = (), suffixes: Iterable[str] = ()) -> SecretPolicy:
        """A policy that also treats `names` and `suffixes` as secrets."""
        return attrs.evolve(
            self,
            names=self.names | _names(names),
            suffixes=(*self.suffixes, *_suffixes(suffixes)),
        )


@functools.lru_cache(maxsize=16384)
def _is_secret(policy: SecretPolicy, key: str) -> bool:
    # Cached: an audit asks about every key of every role, and keys repeat across calls.
    name = _normalize(key)
    if name in policy.names or name.endswith(policy.suffixes):
        return True
    single = _singular(name)
    return single is not name and (single in policy.names or single.endswith(policy.suffixes))


_LAST_CHARACTER = operator.itemgetter(slice(-1, None))


#: From how many keys `SecretPolicy.secret_keys` searches their joined text.
_SEARCHED_FROM = 64


@functools.lru_cache(maxsize=64)
def _tails(policy: SecretPolicy) -> tuple[int, frozenset[str]]:
    """(n, the last n characters of each of `policy`'s names and suffixes and of their
    plurals), n at most 3 and no longer than the shortest of them; n is 0 when one is empty
    (it ends every key)."""
    endings = (*policy.names, *policy.suffixes)
    size = min(3, *map(len, endings)) if endings else 0
    if not size:
        return 0, frozenset()
    return size, frozenset(form[-size:] for ending in endings for form in (ending, ending + "s"))


#: The default policy.
SECRETS = SecretPolicy()
_DEFAULT_TAILS = _tails(SECRETS)
line_tails(SECRETS)  # (what a first look at a command line searches for, made now)


def is_secret(key: str, policy: SecretPolicy = SECRETS) -> bool:
    """Whether `key` holds a credential under `policy` (``wandb_key``, ``--hf-token``...)."""
    return policy.is_secret(key)


def redact(key: str, value: Any, policy: SecretPolicy = SECRETS) -> Any:
    """`value` as it may be shown for `key`: a secret becomes ``"<redacted>"``.

    Secrets nested in a value are replaced too (a mapping's, a namedtuple's or a dataclass's
    secret keys and fields: `SecretPolicy.redact`); a value that holds none is returned as is.
    """
    return policy.redact(key, value)


def redact_argv(
    argv: Sequence[str],
    policy: SecretPolicy = SECRETS,
    *,
    parser: argparse.ArgumentParser | None = None,
) -> tuple[list[str], list[str]]:
    """`argv` with the value of every secret flag replaced, and the values it replaced.

    With `parser`, a token is classified by the action the parser matches (or would match):
    an abbreviation (``--wandb-k S``), an alias (``-k S``), a short cluster (``-vkS``),
    ``--flag=S``; the tokens after a sub-command's name by its parser (``login -k S``), a
    secret positional's by the positionals' order. Without one, and for flags the parser does
    not own, by the flag's name, or the secret flag it is a did-you-mean of. A JSON object or
    array holding a secret-named key has those values replaced (a malformed one that names a
    secret key is replaced whole); a URL's password is replaced. A flag's values are the
    tokens after it that are not options, as many as its action takes, and those argparse
    refuses for their '-' that name no option of `parser` (``--wandb-key -S``), or that follow
    ``--`` (``--wandb-key -- S``): the value the user meant.
    """
    redacted: list[str] = []
    found: list[str] = []
    pending = 0
    prefixes = _prefixes(parser)
    actions = None if parser is None else parser._option_string_actions
    # A first look at a table of options: its secret flags among the command line's found
    # together; later ones take each option's kept answer (`_exact_takes`).
    if not isinstance(argv, (list, tuple)):
        argv = list(argv)  # (read twice below)
    maybe_secret = None
    if actions is not None and _taken(actions, policy) is None:
        maybe_secret = _may_be_secret(actions, argv, policy)
        _new_taken(actions, policy)
    forms = _may_hold_a_form("\n".join(argv))  # else only a token shown changed is asked
    secret_flags = None if actions is None else listing(actions, policy)  # (for unknown flags)
    waiting = False  # for the first value of a secret flag that needs one
    for given in argv:
        token = given
        if pending and (
            not is_option(token, prefixes)
            or (waiting and _refused_value(token, policy, parser, secret_flags))
        ):
            found.append(token)
            redacted.append(policy.placeholder)
            pending -= 1
            waiting = False
            continue
        if waiting and token == "--":  # ``--wandb-key -- S``: S is the value the user meant
            redacted.append(token)
            continue
        pending = 0
        if len(token) > 1 and (token[0] in prefixes or token[0] in _DASHES):
            if actions is not None and token in actions:  # (what `_classify` says of it)
                if maybe_secret is None or token in maybe_secret:
                    pending = _exact_takes(actions, token, policy)
            else:
                token, pending = _option_token(token, policy, parser, found, secret_flags)
        waiting = pending > 0 and _needs_value(given, actions)
        if not pending and (forms or token is not given) and may_show_secret(token):
            token = _redact_text(token, policy, found)  # (which keeps any other token)
        redacted.append(token)
    if parser is not None:  # a secret positional's own tokens (``train.py TOKEN``)
        for index in _positional_secrets(argv, parser, policy):
            if redacted[index] is argv[index]:
                found.append(argv[index])
                redacted[index] = policy.placeholder
        named = _subcommand(argv, parser)
        if named is not None:  # (``tool login -k S``: the tokens after it are login's)
            at, sub = named
            theirs, hidden = redact_argv(argv[at + 1 :], policy, parser=sub)
            found += hidden
            for index, token in enumerate(theirs, at + 1):
                if redacted[index] is argv[index]:
                    redacted[index] = token
    return _scrub_tokens(redacted, found, policy), found


def _scrub_tokens(tokens: list[str], found: list[str], policy: SecretPolicy) -> list[str]:
    """`tokens` without a secret's text in any of them (``--name run-$KEY``), as the command
    line shows it: each token searched once for all of `found`, as written or as repr() escapes
    it."""
    texts = sorted(
        {text for text in found if len(text) >= policy.min_scrub_length}, key=len, reverse=True
    )
    if not texts:
        return tokens
    spelt: dict[str, list[str]] = {}  # (one spelling may be two secrets': 'a\\b', 'a\b')
    for text in texts:  # (the forms `scrub_text` replaces)
        for form in dict.fromkeys((text, *_escaped(text))):
            spelt.setdefault(form, []).append(text)
    search = TextSearch(spelt)
    held = [[text for form in search(token) for text in spelt[form]] for token in tokens]
    return [scrub_text(token, some, policy) for token, some in zip(tokens, held, strict=True)]


def redacted_token(
    token: str, parser: argparse.ArgumentParser, policy: SecretPolicy = SECRETS
) -> str:
    """``redact_argv([token], policy, parser=parser)[0][0]``: one token as it may be shown
    alone, the common case (an option of the parser's) in one table lookup."""
    if (
        token in parser._option_string_actions
        and len(token) > 1
        and token[0] in parser.prefix_chars
        and not may_show_secret(token)
    ):
        # An exact option string shows as written, a secret flag's too (its values are the
        # tokens after it): nothing in it to hide.
        return token
    return redact_argv([token], policy, parser=parser)[0][0]


def scrub_text(text: str, secrets: Sequence[str], policy: SecretPolicy = SECRETS) -> str:
    """`text` without `secrets`: each quoted as repr() quotes it, however short, and each at
    least `policy.min_scrub_length` long wherever it is, as written or as repr() escapes it
    (a shorter one would wreck the text); and without the password of any URL in it, however
    short (found by its place)."""
    if "://" in text:
        text = hide_url_passwords(text, policy.placeholder)[0]
    for secret in sorted(secrets, key=len, reverse=True):  # a secret holding another goes whole
        if not secret:
            continue
        quoted = repr(secret)
        text = text.replace(quoted, repr(policy.placeholder))
        if len(secret) >= policy.min_scrub_length and secret != policy.placeholder:
            text = text.replace(secret, policy.placeholder)
            forms = set(_escaped(secret)) - {secret}
            for form in sorted(forms, key=len, reverse=True):
                text = text.replace(form, policy.placeholder)
    return text


def embedded_secrets(text: str, policy: SecretPolicy = SECRETS) -> list[str]:
    """The secrets the form of `text` shows: a URL's password, the values of secret keys in
    JSON text (all of a malformed one that names a secret key)."""
    found: list[str] = []
    if may_show_secret(text):
        _redact_text(text, policy, found)
    return found


# A secret's name with its value in free text: ``wandb_key: x``, ``HF_TOKEN=x``,
# ``"api_key": x``, ``--wandb-key x``, ``password x`` (a .netrc line). Every part is bounded:
# linear in the text.
# Each alternative consumes only the name (what is around it is looked at, not taken), so that
# one match never hides the start of the next name (``--run-name wandb_key=S``).
_NAMED_VALUE = LazyPattern(
    r"(?<![\w.-])-{0,2}([A-Za-z_][\w.-]{0,200})(?=[\"']?[ \t]{0,8}[:=])"
    r"|--([A-Za-z][\w.-]{0,200})(?=[ \t]{1,8}\S)"
    r"|(?<![\w.-])([A-Za-z_][\w.-]{0,200})(?=[ \t]{1,8}[^\s:=])"
)
# A private key in PEM (``-----BEGIN OPENSSH PRIVATE KEY-----``, RSA, EC, PGP's block...).
_PRIVATE_KEY = LazyPattern(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY")


def shows_secret(text: str, policy: SecretPolicy = SECRETS) -> bool:
    """Whether `text` shows a secret: a secret's name with its value (``wandb_key:x``,
    ``HF_TOKEN=x``, ``--wandb-key x``, a .netrc's ``password x``), a private key, a URL's
    password, or a secret key's value in JSON.

    For messages that would quote a string found where it does not belong: such a string is
    described, not quoted.
    """
    for match in _NAMED_VALUE.finditer(text):
        if policy.is_secret(match.group(1) or match.group(2) or match.group(3)):
            return True
    if "PRIVATE KEY" in text and any(_PRIVATE_KEY.finditer(text)):
        return True
    return bool(embedded_secrets(text, policy))


def redacted_argv(
    argv: Sequence[str] | None = None,
    parser: argparse.ArgumentParser | None = None,
    *,
    secrets: SecretPolicy = SECRETS,
) -> list[str]:
    """`argv` (default ``sys.argv[1:]``) as it may be logged: every secret value replaced.

    Give the `parser` that reads `argv`: each token is then classified by the action the
    parser matches, abbreviations, aliases and short clusters included (see `redact_argv`).
    For a tracker that records the command line itself (W&B does), log this instead; see
    docs/embedding.md.
    """
    import sys

    tokens = sys.argv[1:] if argv is None else argv
    if isinstance(tokens, (str, bytes)):
        raise TypeError("argv is a list of tokens such as ['--lr', '1'], not one string")
    tokens = list(tokens)
    for index, token in enumerate(tokens):
        if not isinstance(token, str):  # not quoted: it may be a secret
            raise TypeError(
                f"redacted_argv() takes argv as a list of str; argv[{index}] is "
                f"{type(token).__name__}"
            )
    return redact_argv(tokens, secrets, parser=parser)[0]


def _prefixes(parser: argparse.ArgumentParser | None) -> str:
    return "-" if parser is None else parser.prefix_chars


#: What a word processor writes for '-' or '--': dashes, the minus sign, their other forms.
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"


def _needs_value(option: str, actions: Mapping[str, argparse.Action] | None) -> bool:
    """Whether the secret flag `option` fails without a value, as argparse reads it (not one
    of ``nargs='?'`` or ``'*'``; an abbreviation or another program's flag: taken to)."""
    action = None if actions is None else actions.get(option)
    return action is None or action.nargs not in ("?", "*")


def _refused_value(
    token: str,
    policy: SecretPolicy,
    parser: argparse.ArgumentParser | None,
    secret_flags: Callable[[], list[str]] | None,
) -> bool:
    """Whether `token`, after a secret flag that needs a value (``--wandb-key -Zq8...``:
    "expected one argument"), is that value as the user meant it although argparse refuses it
    for its leading '-': it names no option of `parser` (exactly, as ``--flag=...``, as an
    abbreviation or as a short cluster), nor a secret flag of another program, whose own
    value follows. Without a parser nothing tells it from a flag."""
    if parser is None or token == "--":
        return False
    actions = parser._option_string_actions
    name = token.partition("=")[0]
    if name in actions or token[:2] in actions:  # (a short option's cluster or value)
        return False
    if parser.allow_abbrev and any(option.startswith(name) for option in actions):
        return False
    return not _classify(token, policy, parser, secret_flags)[0]


def _option_token(
    token: str,
    policy: SecretPolicy,
    parser: argparse.ArgumentParser | None,
    found: list[str],
    secret_flags: Callable[[], list[str]] | None = None,
) -> tuple[str, int]:
    """The option `token` as shown, and how many of the tokens after it are secret values
    (`secret_flags`: the parser's secret flags, as `_secret_flags.listing` gives them). A
    token that begins with a typographic dash (``—wandb-key``: '--' as a word processor or a
    chat app writes it) is read as the option it spells with '--' (with '-', one letter)."""
    spelt = token
    if token[0] in _DASHES:  # (argparse takes it as a plain argument: its value shows)
        rest = token.lstrip(_DASHES + "-")
        spelt = ("-" if len(rest.partition("=")[0]) == 1 else "--") + rest  # (-k, --api-key)
    action, _option, explicit = _classify(spelt, policy, parser, secret_flags)
    if not action:
        return token, 0
    if explicit is None:
        return token, action
    found.append(explicit)
    return token[: len(token) - len(explicit)] + policy.placeholder, 0


def _classify(
    token: str,
    policy: SecretPolicy,
    parser: argparse.ArgumentParser | None,
    secret_flags: Callable[[], list[str]] | None = None,
) -> tuple[int, str, str | None]:
    """(how many values the secret flag `token` names takes, 0 when it is no secret's; the
    option; its value within the token, or None)."""
    name, equals, value = token.partition("=")
    explicit = value if equals else None
    if parser is None:
        return (1 if policy.is_secret(name) else 0), name, explicit
    actions = parser._option_string_actions
    chars = parser.prefix_chars
    if token in actions:
        return _exact_takes(actions, token, policy), token, None
    if token == "--":  # argparse's separator, which abbreviates no option
        return 0, token, None
    if name in actions:
        return _exact_takes(actions, name, policy), name, explicit
    long = len(token) > 1 and token[1] in chars
    if long:
        if parser.allow_abbrev:
            matches = [o for o in actions if o.startswith(name)]
        else:  # argparse leaves '--wandb=S' to the unknown tokens, shown as written: a
            # secret flag's abbreviation still holds its value
            flags = (secret_flags or listing(actions, policy))()
            matches = [o for o in flags if o.startswith(name)]
    else:
        matches = []
        while True:  # a short cluster: '-vkS' is -v, then -k with the value 'S'
            short = token[:2]
            action = actions.get(short)
            if action is None:
                matches = [o for o in actions if o.startswith(name)]
                break
            rest = token[2:]
            if action.nargs != 0 or not rest:
                takes = _takes(action, policy)
                return (takes, short, rest or None) if takes else (0, short, None)
            token = token[0] + rest
    secret = [takes for option in matches if (takes := _exact_takes(actions, option, policy))]
    if secret:  # one match, or an ambiguous abbreviation that could be a secret flag
        return max(secret), name, explicit
    if matches or policy.is_secret(name):
        return (1 if policy.is_secret(name) else 0), name, explicit
    near = (
        _cut_short(name, policy)
        or _misspelt(name, policy)
        or _near_secret(name, secret_flags or listing(actions, policy))
    )
    return (1 if near else 0), name, explicit


# `_takes` of each option string a command line named, per table of options (shared by a
# parser's copies) and policy: the steady path classifies a token with one lookup. An entry is
# used only while its action and the action's dest, nargs and flags are those it was taken of.
# Each entry keeps its table, and so a parser's actions, alive: at most `_TABLES_KEPT` are kept
# (then all are forgotten), so that a process building parser after parser does not grow.
_TAKEN: dict[int, tuple[Mapping[str, Any], SecretPolicy, dict[str, tuple[Any, ...]]]] = {}


def _taken(
    actions: Mapping[str, argparse.Action], policy: SecretPolicy
) -> dict[str, tuple[Any, ...]] | None:
    """The `_TAKEN` entries of `actions` under `policy`, None if it has none."""
    table = _TAKEN.get(id(actions))
    if table is not None and table[0] is actions and table[1] is policy:
        return table[2]
    return None


def _new_taken(
    actions: Mapping[str, argparse.Action], policy: SecretPolicy
) -> dict[str, tuple[Any, ...]]:
    """A new, empty table of `_TAKEN` entries for `actions` under `policy`."""
    if len(_TAKEN) >= _TABLES_KEPT:
        _TAKEN.clear()
    # (the table itself is kept, so that its id is not reused by another one)
    entries: dict[str, tuple[Any, ...]] = {}
    _TAKEN[id(actions)] = (actions, policy, entries)
    return entries


def _exact_takes(actions: Mapping[str, argparse.Action], option: str, policy: SecretPolicy) -> int:
    """`_takes` of the action of `option`, an exact option string of `actions`."""
    entries = _taken(actions, policy)
    if entries is None:
        entries = _new_taken(actions, policy)
    action = actions[option]
    entry = entries.get(option)
    flags = action.option_strings
    if (
        entry is not None
        and entry[0] is action
        and entry[1] is action.dest
        and entry[2] is action.nargs
        and entry[3] is flags
        and entry[4] == len(flags)
    ):
        return entry[5]  # type: ignore[no-any-return]
    takes = _takes(action, policy)
    entries[option] = (action, action.dest, action.nargs, flags, len(flags), takes)
    return takes
