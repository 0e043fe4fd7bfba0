"""Which flags of a parser are secret flags: one action at a time, or all of a parser at once.

Private to `layerconf.core.secrets`. The list of a parser's secret flags is kept per table of
options (shared by a parser's copies) and policy; a bundled profile ships the candidates of its
scan and which of them the policy names a secret's (`seed_secret_options`), so that the parsers
it builds are not scanned in each process, nor the policy asked about each candidate. Which
tokens of a command line a secret positional takes (`_positional_secrets`), and whether a flag
the parser does not own is a secret's name cut short (`_cut_short`) or misspelt (`_misspelt`),
are told here too; so is the normal form of a name (`_normalize`), which the policy compares.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from layerconf.core.secrets import SecretPolicy

__all__ = [
    "has_seed",
    "is_option",
    "line_tails",
    "no_positionals",
    "secret_candidates",
    "seed_secret_options",
]


def _takes(action: argparse.Action, policy: SecretPolicy, named: bool | None = None) -> int:
    """How many tokens after a flag of `action` are secret values (0: it is no secret).

    `named`: whether `policy` names the action's dest or one of its option strings a secret's
    (`_secret_named`), when that is known already.
    """
    if not (_secret_named(action, policy) if named is None else named):
        return 0
    nargs = action.nargs
    if nargs == 0:
        return 0
    if isinstance(nargs, int):
        return nargs
    return 1 if nargs in (None, "?") else 1 << 30  # '*', '+', remainder: all that follow


def _secret_named(action: argparse.Action, policy: SecretPolicy) -> bool:
    """Whether `policy` names the dest of `action`, or one of its option strings, a secret's."""
    return policy.is_secret(action.dest) or any(map(policy.is_secret, action.option_strings))


def _may_be_secret(
    actions: Mapping[str, argparse.Action], argv: Sequence[str], policy: SecretPolicy
) -> frozenset[str] | None:
    """The exact option strings of `argv` whose action may be a secret flag's under `policy`
    (a superset: `_exact_takes` decides), each other one surely not; None when an option
    string of theirs is another action's too, or one has none (a table changed by hand: then
    each is asked on its own).

    A command line names dozens of options, almost none secret: their names and dests are
    searched together, in C (`secret_candidates`), instead of asking for each one.
    """
    given = {id(action): action for action in map(actions.get, argv) if action is not None}
    named = {option: action for action in given.values() for option in action.option_strings}
    sizes = list(map(len, map(_OPTION_STRINGS, given.values())))
    if len(named) != sum(sizes) or not all(sizes):
        return None
    secret = {id(named[option]) for option in secret_candidates(named, policy)}
    if not secret:
        return frozenset()
    return frozenset(token for token in argv if id(actions.get(token)) in secret)


def _normalize(name: str) -> str:
    """``--Wandb-Key`` -> ``wandb_key``; ``a.b.HF_TOKEN`` -> ``hf_token``."""
    return name.rsplit(".", 1)[-1].lstrip("-").replace("-", "_").lower()


def _singular(normal: str) -> str:
    """The normal form `normal` without a number at its end and then a plural's "s", which the
    policy also compares (``hf_token_2``, ``api_key2`` -> ``api_key``; ``api_keys``); `normal`
    itself when it has neither, or is ``tokens`` (what a model reads, no credential)."""
    single = normal.rstrip("0123456789")
    if single is not normal and single[-1:] == "_":
        single = single[:-1]
    if single[-1:] == "s" and single != "tokens":
        single = single[:-1]
    return normal if single == normal else single


#: How many characters of a secret's name a flag cut short of it shows, at least.
_CUT_SHORT = 3


def _cut_short(name: str, policy: SecretPolicy) -> bool:
    """Whether the unknown flag `name` is a secret's name cut short, as an abbreviation for
    another program's parser is (``--sglang-api-k``: slime hands ``--sglang-*`` on to SGLang,
    whose ``--api-key`` this parser does not know): its last word begins, and does not end,
    the last word of one of `policy`'s names or suffixes (or is empty: ``--sglang-api-``), the
    words before are that one's, and it shows at least `_CUT_SHORT` characters of it
    (``--x-tok``, not ``--x-s``).

    Asked of each unknown flag directly, after one test in C that almost every flag fails
    (its last word starts no secret's last word): a table of every name's and suffix's cut
    forms cost a first call ~0.5M instructions to build."""
    normal = _normalize(name)
    cut = normal.rfind("_") + 1
    stem, last = normal[:cut], normal[cut:]  # (the words before, with their "_"; the last word)
    words, bare = _last_words(policy)
    if not bare and "\0" + last not in words:  # (an empty last word, '--api-', starts any)
        return False
    for ending in policy.names:
        at = ending.rfind("_") + 1
        if ending[:at] == stem and _shortens(last, stem, ending[at:]):
            return True
    for ending in policy.suffixes:
        at = ending.rfind("_") + 1
        their_stem, word = ending[:at], ending[at:]
        if not their_stem:  # a suffix of one word: the flag may end in any part of it
            if any(normal.endswith(word[:size]) for size in range(_CUT_SHORT, len(word))):
                return True
        elif stem.endswith(their_stem) and _shortens(last, their_stem, word):
            return True
    return False


def _shortens(last: str, stem: str, word: str) -> bool:
    """Whether `last` cuts the last word `word` (after `stem`) short, showing enough of both."""
    return (
        len(last) < len(word)
        and word.startswith(last)
        and len(stem.lstrip("_")) + len(last) >= _CUT_SHORT
    )


@functools.lru_cache(maxsize=64)
def _last_words(policy: SecretPolicy) -> tuple[str, bool]:
    """The last words of `policy`'s names and suffixes, each after a NUL (``"\0key\0token"``):
    whether a word starts one of them is one search (made in C); and whether a suffix is one
    word (``token``: a flag may end in any part of it, not only in a last word of its own)."""
    endings = itertools.chain(policy.names, policy.suffixes)
    words = "\0" + "\0".join(map(_LAST, map(_SPLIT, endings)))
    return words, not all(map(_UNDERSCORED, policy.suffixes))


#: How many letters a secret's name (or a suffix's, after its "_") has, at least, for a flag
#: one edit away from it to be taken for it: ``--x-tokn`` is no secret's, ``--x-api-keyy`` is.
_MISSPELT_FROM = 6


def _misspelt(name: str, policy: SecretPolicy) -> bool:
    """Whether the unknown flag `name` is one edit (a letter added, dropped, changed, or two
    swapped) away from a secret's name, as another program's parser would still be handed it
    (``--sglang-api-keyy``: slime passes ``--sglang-*`` on; SGLang's parser may take it for
    ``--api-key``, or the user meant that): the whole flag from one of `policy`'s names, or its
    last words from one of its suffixes (``--x-pasword``). Only names and suffixes of at least
    `_MISSPELT_FROM` letters are matched so (``--tokens`` is no secret's).

    Two texts one edit apart have one of them, or a text one letter shorter than both, in
    common: each of the flag's endings that starts a word is looked up, with each of its
    one-letter-shorter forms, among those of the names and suffixes (`_misspellings`), once
    its last words may be (`_may_end_as`: almost every flag is not, and the table, ~2M
    instructions to build, is not built for it)."""
    if name[:2] == "--":  # (a long flag's name, its value cut off: no secret's text to keep)
        return _misspelt_kept(name, policy)
    return _misspelt_now(name, policy)


def _misspelt_now(name: str, policy: SecretPolicy) -> bool:
    normal = _normalize(name)
    if not normal.replace("_", "").isalnum():  # ('--wandb key': no parser takes it for a flag)
        return False
    head, _, last = normal.rpartition("_")
    if not _may_end_as(last, head.rpartition("_")[2] + last, policy):
        return False
    return _one_edit_from(normal, policy)


# A trainer's few unknown long flags are asked again on every resolution.
_misspelt_kept = functools.lru_cache(maxsize=256)(_misspelt_now)


def _one_edit_from(normal: str, policy: SecretPolicy) -> bool:
    """`_misspelt`'s answer for the normal form `normal`, from the table alone."""
    table, shortest, longest = _misspellings(policy)
    size = len(normal)
    for start in range(max(0, size - longest - 1), size - shortest + 2):
        if start and normal[start - 1] != "_":
            continue
        tail = normal[start:]
        for form in (tail, *_shorter(tail)):
            kinds = table.get(form)
            if kinds is not None and (start == 0 or kinds & _ENDING):
                return True
    return False


def _may_end_as(last: str, joined: str, policy: SecretPolicy) -> bool:
    """Whether a flag whose last word is `last` (`joined`: with the word before it) may be one
    edit from one of `policy`'s names or suffixes, by their last words (``key``): `last` is
    one edit from one of them, or ends in one (the edit on the "_" before it: ``accesskey``),
    or `joined` is one or one letter short of one (the edit a "_" in it: ``ke_y``)."""
    lasts, near, longest = _last_words_near(policy)
    if last in near or joined in near or last.endswith(lasts):
        return True
    # (a word two letters longer than every one of them is none of them one letter shorter:
    # a flag of a megabyte is not cut a million times)
    return len(last) <= longest + 1 and any(form in near for form in _shorter(last))


@functools.lru_cache(maxsize=64)
def _last_words_near(policy: SecretPolicy) -> tuple[tuple[str, ...], frozenset[str], int]:
    """The last words of `policy`'s names and suffixes (`_last_words`'), and the same with each
    form one letter shorter: a handful of words, not every name's forms; and the length of the
    longest of them."""
    lasts = tuple(set(_last_words(policy)[0].split("\0")) - {""})
    near = {form for last in lasts for form in (last, *_shorter(last))}
    return lasts, frozenset(near), max(map(len, near), default=0)


def _shorter(word: str) -> Iterator[str]:
    """`word` with each of its letters dropped in turn."""
    return (word[:at] + word[at + 1 :] for at in range(len(word)))


_WHOLE, _ENDING = 1, 2  # a form of a name (of a whole flag only), of a suffix (of its end too)


@functools.lru_cache(maxsize=64)
def _misspellings(policy: SecretPolicy) -> tuple[dict[str, int], int, int]:
    """Each name and suffix of `policy` at least `_MISSPELT_FROM` letters long (a suffix
    without its leading "_"), and each of them with one letter dropped, mapped to whether it
    is a name's form (`_WHOLE`), a suffix's (`_ENDING`) or both; the shortest and the longest
    length of those names and suffixes."""
    table: dict[str, int] = {}
    sizes = []
    for kind, endings in ((_WHOLE, policy.names), (_ENDING, policy.suffixes)):
        for ending in endings:
            word = ending[1:] if kind == _ENDING and ending.startswith("_") else ending
            if len(word) < _MISSPELT_FROM:
                continue
            sizes.append(len(word))
            for form in (word, *_shorter(word)):
                table[form] = table.get(form, 0) | kind
    return table, min(sizes, default=1), max(sizes, default=0)


_SPLIT = operator.methodcaller("rpartition", "_")
_LAST = operator.itemgetter(2)
_UNDERSCORED = operator.methodcaller("__contains__", "_")


def _near_secret(name: str, secret_flags: Callable[[], list[str]]) -> bool:
    """Whether the unknown flag `name` is a did-you-mean of a secret flag (``--wandb-kye``), one
    of `secret_flags()` (`listing`)."""
    from layerconf.core.suggest import did_you_mean

    # difflib's ratio 2M/(a+b) reaches the cutoff 0.8 only for lengths within a factor 1.5
    # of each other: the other options cannot be meant (and difflib need not be imported).
    size = len(name)
    secret = [o for o in secret_flags() if 2 * size <= 3 * len(o) <= 9 * size // 2]
    return bool(secret) and did_you_mean(name, secret, cutoff=0.8) is not None


def listing(
    actions: Mapping[str, argparse.Action], policy: SecretPolicy
) -> Callable[[], list[str]]:
    """The secret flags of `actions` under `policy` (`_secret_options`), listed on the first
    call and given again by the next ones: one command line's unknown flags are compared with
    one list, checked once against the table."""
    listed: list[list[str]] = []

    def secret_flags() -> list[str]:
        if not listed:
            listed.append(_secret_options(actions, policy))
        return listed[0]

    return secret_flags


# What a list of secret flags was made from: the table's option strings, their actions, the
# dests of those, and (action, nargs, option strings) of each candidate.
_Listed = tuple[list[str], list[Any], list[Any], list[tuple[Any, Any, tuple[str, ...]]]]

# The secret flags of a parser's table of options, and what they were listed from: a parser of
# 1,000 options is not scanned for each token. The list is used while the table has the same
# option strings, each one's action with the same dest (`_Listed`), and each candidate's action
# the same nargs and option strings (a dest or nargs changed by hand makes a flag secret, or
# not). At most `_TABLES_KEPT` tables (each keeps a parser's actions alive; then all are
# forgotten).
_SECRET_OPTIONS: dict[int, tuple[Mapping[str, Any], SecretPolicy, _Listed, list[str]]] = {}
#: How many tables of options a cache keeps alive (here, in `secrets._TAKEN` and in the
#: command line's origins, `sources._argv_recorder`).
_TABLES_KEPT = 8
# Candidates shipped with a profile, per (policy, candidates): the option strings and dests of
# the table they were taken of, and for each candidate whether the policy names it a secret's
# (`_secret_named`), with the option strings that answer holds for. Any table with exactly those
# option strings and dests (each parser the profile builds, unless changed since) has those
# candidates: its scan is skipped, and so is the policy's answer for each candidate whose
# option strings are still those. Only strings are kept, never a parser.
_Answers = dict[str, tuple[tuple[str, ...], bool]]
_SEEDS: dict[tuple[SecretPolicy, tuple[str, ...]], tuple[list[str], list[str], _Answers]] = {}

_DEST = operator.attrgetter("dest")
_OPTION_STRINGS = operator.attrgetter("option_strings")


def _dests(actions: Mapping[str, argparse.Action]) -> list[str]:
    """The dest of each entry of `actions`, in table order."""
    # (a comprehension: its attribute reads are specialized, cheaper than map(attrgetter))
    return [action.dest for action in actions.values()]


def _secret_options(actions: Mapping[str, argparse.Action], policy: SecretPolicy) -> list[str]:
    options = list(actions)
    every = list(actions.values())
    dests = _dests(actions)
    cached = _SECRET_OPTIONS.get(id(actions))
    if cached is not None and cached[0] is actions and (cached[1] is policy or cached[1] == policy):
        listed = cached[2]
        if (
            listed[0] == options
            and listed[1] == every  # (each the same object: compared by identity first)
            and listed[2] == dests
            and all(_candidate(action) == kept for action, *kept in listed[3])
        ):
            return cached[3]
    seeded = _seeded(options, dests, policy)
    if seeded is None:
        candidates: Sequence[str] = secret_candidates(actions, policy)
        secret = [o for o in candidates if _takes(actions[o], policy)]
    else:
        candidates, answers = seeded
        secret = [
            o for o in candidates if _takes(actions[o], policy, _named(actions[o], answers[o]))
        ]
    if len(_SECRET_OPTIONS) >= _TABLES_KEPT:
        _SECRET_OPTIONS.clear()
    checks = [(action, *_candidate(action)) for action in map(actions.__getitem__, candidates)]
    # (the table itself is kept, so that its id is not reused by another one)
    _SECRET_OPTIONS[id(actions)] = (actions, policy, (options, every, dests, checks), secret)
    return secret


def _candidate(action: argparse.Action) -> list[Any]:
    """What of a candidate's action decides whether it is a secret flag, besides its dest."""
    return [action.nargs, tuple(action.option_strings)]


def _seeded(
    options: list[str], dests: list[str], policy: SecretPolicy
) -> tuple[tuple[str, ...], _Answers] | None:
    """The shipped candidates of a table with these option strings and dests (`_dests`, in
    table order), and the policy's answer for each (see `_SEEDS`)."""
    for (seed_policy, candidates), (seed_options, seed_dests, answers) in list(_SEEDS.items()):
        if seed_policy == policy and seed_options == options and seed_dests == dests:
            return candidates, answers
    return None


def _named(action: argparse.Action, answer: tuple[tuple[str, ...], bool]) -> bool | None:
    """The shipped `_secret_named` of `action` (a candidate of a seeded table, whose dest is
    the one it was shipped for) while its option strings are those it holds for, else None."""
    strings, named = answer
    return named if tuple(action.option_strings) == strings else None


def has_seed(policy: SecretPolicy, candidates: tuple[str, ...]) -> bool:
    """Whether `seed_secret_options` has these candidates for `policy` already."""
    return (policy, candidates) in _SEEDS


def seed_secret_options(
    actions: Mapping[str, argparse.Action],
    policy: SecretPolicy,
    candidates: tuple[str, ...],
    named: frozenset[str],
) -> None:
    """Use `candidates` (`secret_candidates` of `actions` under `policy`, shipped with a
    profile) for every table with the option strings and dests `actions` has now, and `named`
    (those of them that `_secret_named` answers true for) while a candidate's option strings
    are the ones its action has now."""
    if len(_SEEDS) >= 16:
        _SEEDS.clear()
    if all(option in actions for option in candidates):
        answers = {o: (tuple(actions[o].option_strings), o in named) for o in candidates}
        _SEEDS[(policy, candidates)] = (list(actions), _dests(actions), answers)


def secret_candidates(actions: Mapping[str, argparse.Action], policy: SecretPolicy) -> list[str]:
    """The option strings of `actions` whose text or dest may name a secret under `policy`, in
    table order: a superset of the secret flags (`_takes` decides)."""
    # A few searches in C over every option and dest find the few that may be secret-named,
    # instead of a Python pass over a thousand names: a name the policy accepts ends,
    # lower-cased with '-' as '_', with one of its names or suffixes.
    options = list(actions)
    every = list(actions.values())
    count = len(options)
    try:
        text = "\n".join([*options, *map(_DEST, every)])
    except TypeError:  # a dest that is not a string (a table changed by hand): ask each
        return options
    if not text.isascii():
        # lower() of a name depends on its context (a final 'Σ' is 'ς'), and `is_secret`
        # lower-cases only a dotted name's last part: ask each.
        return options
    lowered = text.lower().replace("-", "_") + "\n"
    endings = (*policy.names, *policy.suffixes)
    size = min(3, *map(len, endings)) if endings else 0  # the default's 43 endings: 5 tails
    # (line i is option i, line count + i its dest, unless a name holds a line break, which
    # argparse allows, or lower() changes a length)
    if not (size and len(lowered) == len(text) + 1 and text.count("\n") == 2 * count - 1):
        return options
    ends: dict[int, int] = {}  # each line end a tail ends: _EXACT, _SINGULAR (`_singular`) or both
    for tail, kind in line_tails(policy):
        at = lowered.find(tail)
        while at >= 0:
            ends[at + size] = ends.get(at + size, 0) | kind
            at = lowered.find(tail, at + 1)
    zeros = lowered.encode().translate(_ZEROS)  # (ASCII; a number's last digit as 0: hf_token_2)
    at = zeros.find(b"0\n")
    while at >= 0:
        ends[at + 1] = ends.get(at + 1, 0) | _SINGULAR
        at = zeros.find(b"0\n", at + 1)
    found: set[int] = set()
    line = last = 0
    for end in sorted(ends):
        start = lowered.rfind("\n", 0, end) + 1
        kind = ends[end]
        if (kind & _EXACT and lowered.endswith(endings, start, end)) or (
            kind & _SINGULAR and _singular(lowered[start:end]).endswith(endings)
        ):
            line += lowered.count("\n", last, start)  # (linear: the ends are in order)
            last = start
            found.add(line % count)
    return [options[index] for index in sorted(found)]


_EXACT, _SINGULAR = 1, 2  # (how `secret_candidates` asks of a line: as it is, in its singular)


@functools.lru_cache(maxsize=64)
def line_tails(policy: SecretPolicy) -> tuple[tuple[str, int], ...]:
    """The last characters `secret_candidates` searches for (as many as it does), of each of
    `policy`'s names and suffixes and of their plurals (``api_keys``), each with the line
    break after it, and how it asks of a line one ends (as it is, in its singular)."""
    endings = (*policy.names, *policy.suffixes)
    size = min(3, *map(len, endings)) if endings else 0
    tails: dict[str, int] = {}
    for ending in endings if size else ():
        for tail, kind in ((ending[-size:], _EXACT), ((ending + "s")[-size:], _SINGULAR)):
            tails[tail + "\n"] = tails.get(tail + "\n", 0) | kind
    return tuple(tails.items())


_ZEROS = bytes.maketrans(b"123456789", b"000000000")


def _positional_secrets(
    argv: Sequence[str], parser: argparse.ArgumentParser, policy: SecretPolicy
) -> list[int]:
    """The indices of the tokens of `argv` that a secret positional of `parser` takes, by the
    positionals' order and nargs; every token no option takes when that cannot tell (a
    positional of variable nargs, sub-commands, an option whose values cannot be counted)."""
    positionals = _positionals(parser)
    if not any(_takes(action, policy) for action in positionals):
        return []
    free, counted = _free_tokens(argv, parser)
    counts = [1 if action.nargs is None else action.nargs for action in positionals]
    if not counted or not all(isinstance(count, int) for count in counts):
        return free
    hidden: list[int] = []
    start = 0
    for action, count in zip(positionals, map(int, counts), strict=True):
        if _takes(action, policy):
            hidden += free[start : start + count]
        start += count
    return hidden


def _subcommand(
    argv: Sequence[str], parser: argparse.ArgumentParser
) -> tuple[int, argparse.ArgumentParser] | None:
    """Where `argv` names a sub-command of `parser`, and that sub-command's parser, which
    reads the tokens after the name: the first token no option takes that names one."""
    commands = [a for a in _positionals(parser) if isinstance(a, argparse._SubParsersAction)]
    if not commands:
        return None
    for index in _free_tokens(argv, parser)[0]:
        for action in commands:
            sub = action._name_parser_map.get(argv[index])
            if isinstance(sub, argparse.ArgumentParser):
                return index, sub
    return None


def _free_tokens(argv: Sequence[str], parser: argparse.ArgumentParser) -> tuple[list[int], bool]:
    """The indices of the tokens of `argv` that no option takes (what argparse gives its
    positionals), and whether each option's values could be counted."""
    actions = parser._option_string_actions
    prefixes = parser.prefix_chars
    free: list[int] = []
    counted = True
    taking = 0  # how many of the next tokens the last option takes (-1: all that follow)
    for index, token in enumerate(argv):
        if token == "--":
            free.extend(range(index + 1, len(argv)))
            break
        if is_option(token, prefixes):
            values = _values_of(token, parser, actions)
            counted = counted and values is not None
            taking = values or 0
        elif taking:
            taking -= taking > 0
        else:
            free.append(index)
    return free, counted


def _values_of(
    token: str, parser: argparse.ArgumentParser, actions: Mapping[str, argparse.Action]
) -> int | None:
    """How many of the tokens after the option `token` it takes (-1: all that follow), or None
    when that cannot be told (an ambiguous abbreviation, a short cluster)."""
    name, equals, _ = token.partition("=")
    action = actions.get(token) or (actions.get(name) if equals else None)
    if action is None and len(token) > 2 and token[1] not in parser.prefix_chars:
        short = actions.get(token[:2])  # '-kS': the value attached, unless a cluster
        if short is not None:
            return 0 if short.nargs != 0 else None
    if action is None:
        matches = {actions[o] for o in actions if o.startswith(name)} if parser.allow_abbrev else ()
        if len(matches) > 1:
            return None
        if not matches:
            return 0  # an option the parser does not own: argparse leaves it alone
        (action,) = matches
    nargs = action.nargs
    if equals:
        return 0
    if nargs is None or nargs == "?":
        return 1
    if isinstance(nargs, int):
        return nargs
    return -1  # '*', '+', the remainder, a sub-command's


# The positional actions of a parser's list of actions, by the list's identity: a parser of
# 1,000 actions is not scanned for each command line. Used while the list has the same length
# and each of them still no option string; at most `_TABLES_KEPT` lists (then all forgotten).
_POSITIONALS: dict[int, tuple[list[argparse.Action], int, list[argparse.Action]]] = {}


def no_positionals(actions: list[argparse.Action]) -> None:
    """Note that a parser's list of `actions` holds no positional: a caller that has read each
    action's option strings already (the command-line scan, `_argv_scan`) spares a first
    redaction `_positionals`' pass over a thousand actions (~0.5M instructions)."""
    if len(_POSITIONALS) >= _TABLES_KEPT:
        _POSITIONALS.clear()
    _POSITIONALS[id(actions)] = (actions, len(actions), [])


def _positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    every = parser._actions
    kept = _POSITIONALS.get(id(every))
    if (
        kept is not None
        and kept[0] is every
        and kept[1] == len(every)
        and not any(action.option_strings for action in kept[2])
    ):
        return kept[2]
    found = [action for action in every if not action.option_strings]
    if len(_POSITIONALS) >= _TABLES_KEPT:
        _POSITIONALS.clear()
    _POSITIONALS[id(every)] = (every, len(every), found)
    return found


def is_option(token: str, prefixes: str = "-") -> bool:
    """What argparse would not take as a flag's value: ``--x``, ``-x`` (a token starting with
    one of the parser's `prefixes`), but not a prefix alone, a negative number (``-1``) nor a
    text with a space (``-my pass phrase``), which argparse takes as values."""
    if len(token) < 2 or token[0] not in prefixes or " " in token:
        return False
    try:
        float(token)
    except ValueError:
        return True
    return False
