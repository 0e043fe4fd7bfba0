"""Role resolution: one command line, its sources, one role file, a namespace per role.

``resolve_roles(parser, argv, preset=...)`` is slime's ``--megatron-config-path`` contract made
general: the command line is the shared baseline (layers ``default`` and ``cli``), with the
layers of any other sources (the environment, say) between the two; the role file named by the
preset's dest adds a role layer per role; the preset's rules check, drop, convert and set
values; a role missing from the file inherits the baseline.
"""

from __future__ import annotations

import argparse
import functools
import sys
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from layerconf.core.namespace import Namespace, Provenance, provenance_of, with_inputs
from layerconf.core.records import Layer, Origin
from layerconf.core.rules import RuleSet, foreign
from layerconf.core.secrets import redact_argv
from layerconf.core.stack import LayerStack, resolve_with
from layerconf.core.suggest import did_you_mean, suggestion
from layerconf.exceptions import Problem
from layerconf.presets.preset import Preset, PresetError, named_otherwise
from layerconf.presets.role_file import check_role_file
from layerconf.rules._shape import (
    ParserShape,
    parser_shape,
    reading_dests,
    same_shape,
    shape_dests,
)
from layerconf.sources._argv_recorder import CLI
from layerconf.sources.argv import DEFAULT, parse_known_args
from layerconf.sources.base import ARGV, FILES, Reading, Source

__all__ = ["resolve_roles"]


def resolve_roles(
    parser: argparse.ArgumentParser,
    args: Iterable[str] | None = None,
    *,
    preset: Preset,
    sources: Sequence[Source] = (),
    warn: bool = True,
) -> dict[str, Namespace]:
    """Parse `args` with `parser` and resolve one namespace per role of `preset`.

    What `layerconf.resolve_roles` does, which documents it, with slime's preset as the
    default: ``default -> sources -> cli -> role file -> rules`` per role.
    """
    if isinstance(args, (str, bytes)):  # not quoted: a command line may hold a secret
        raise TypeError(
            "args is a list of tokens such as ['--lr', '1'], not one string: split it with "
            "shlex.split"
        )
    argv = tuple(sys.argv[1:] if args is None else args)
    parsed, unknown = parse_known_args(parser, list(argv))
    provenance = provenance_of(parsed)
    assert provenance is not None
    policies = provenance.policies  # argparse replaces a dict default; the stack must too
    found: list[Problem] = list(provenance.notices)
    redacted = provenance.inputs.get(ARGV)
    found.extend(unknown_tokens(parser, argv, unknown, preset, redacted))
    found.extend(stray_characters(parser, argv, redacted))
    inputs: dict[str, Any] = dict(provenance.inputs)
    _check_layer_names(sources, preset)
    read: list[Layer] = []
    for source in sources:
        reading = source.read(parser)
        if not isinstance(reading, Reading):
            raise TypeError(
                f"source {source.name!r}: read(parser) returned the {type(reading).__name__}, "
                "not a layerconf.Reading"
            )
        if reading.layer is not None and reading.layer.name != source.name:
            raise PresetError(
                f"source {source.name!r}: read(parser) returned a layer named "
                f"{reading.layer.name!r}; a source's layer takes its name, {source.name!r}"
            )
        found.extend(reading.problems)
        _add_inputs(inputs, reading.inputs)
        if reading.layer is not None:
            read.append(reading.layer)
    default, *rest = provenance.layers
    base = [default, *read, *rest]
    rules = _rules_for(parser, preset)

    path = _value(base, preset.config_dest) if preset.config_dest is not None else None
    if path is None:
        stacks = {role: LayerStack(base, rules, policies) for role in preset.roles}
    else:
        role_file = check_role_file(
            str(path), preset.roles, layer_name=preset.layer, form=preset.role_file
        )
        found.extend(role_file.problems)
        if role_file.sha256 is not None:
            _add_inputs(inputs, {FILES: {role_file.path: role_file.sha256}})
        empty = Layer(preset.layer, "file", {}, Origin(preset.layer, "file", source=str(path)))
        stacks = {
            role: LayerStack([*base, role_file.layers.get(role) or empty], rules, policies)
            for role in preset.roles
        }
    # The problems found so far are layerconf's own, but a source's of the user's.
    own = not any(foreign(source) for source in sources)
    roles = resolve_with(stacks, found, warn=warn, own=own)
    _carry_unkept(parsed, provenance, roles)
    inputs.setdefault(FILES, {})
    for namespace in roles.values():
        with_inputs(namespace, inputs)
    return roles


def _carry_unkept(parsed: Namespace, parse: Provenance, roles: Mapping[str, Namespace]) -> None:
    """Give each role argparse's own object of each key that no layer could keep a private
    copy of (a ``type=`` that makes a dict subclass, a value nested past `MAX_DEPTH`: the
    parse noted each, at the layer that could not hold it), where no layer above that one
    and no rule set the key: explain() reports it as 'runtime', as the notice says. Before,
    such a key took the value of the layer below, the parser's default."""
    parsed_values = vars(parsed)
    unkept = {
        notice.key: notice.layer
        for notice in parse.notices  # (`parse`: the provenance of `parsed`)
        if notice.key in parsed_values
        and notice.layer is not None
        and all(
            notice.key not in layer.values or layer.values[notice.key] is parsed_values[notice.key]
            for layer in parse.layers
            if layer.name == notice.layer
        )
    }
    for namespace in roles.values() if unkept else ():
        provenance = provenance_of(namespace)
        assert provenance is not None
        names = [layer.name for layer in provenance.layers]
        values = vars(namespace)
        for key, below in unkept.items():
            above = provenance.layers[names.index(below) + 1 :] if below in names else ()
            if (key,) in provenance.events or any(key in layer.values for layer in above):
                continue
            values[key] = parsed_values[key]  # (not a write: no runtime event is recorded)


def _check_layer_names(sources: Sequence[Source], preset: Preset) -> None:
    """Every layer of a role gets its own name: a rule, explain and audit tell them apart so."""
    owners = {DEFAULT: "the parser's defaults", CLI: "the command line's layer"}
    owners[preset.layer] = "the preset's role layer"
    for source in sources:
        here = f"the source {type(source).__name__}"
        taken = named_otherwise(source.name)
        if taken is not None:
            raise PresetError(
                f"{here} cannot be named {source.name!r}: explain and audit records name so {taken}"
            )
        other = owners.get(source.name)
        if other is not None:
            raise PresetError(
                f"two layers would be named {source.name!r}: {here} and {other}; give one of "
                "them another name"
            )
        owners[source.name] = here


def _value(layers: Sequence[Layer], key: str) -> Any:
    """The value of `key` in the highest of `layers` that holds it, else None."""
    for layer in reversed(layers):
        if key in layer.values:
            return layer.values[key]
    return None


def _add_inputs(inputs: dict[str, Any], more: Mapping[str, Any]) -> None:
    """Add a source's inputs; mappings under one name (the files read) are joined."""
    for name, value in more.items():
        earlier = inputs.get(name)
        if isinstance(earlier, Mapping) and isinstance(value, Mapping):
            inputs[name] = {**earlier, **value}
        else:
            inputs[name] = value


class _PresetKey:
    """A preset as the key of its rule set: equal presets with the same rules callables share
    one. Hashed by the name and the callables alone (equal keys have equal ones), so a first
    call hashes no whole preset record; compared by identity first, then in full."""

    __slots__ = ("_hash", "preset")

    def __init__(self, preset: Preset) -> None:
        self.preset = preset
        self._hash = hash((preset.name, preset.rules, preset.standard_rules))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _PresetKey):
            return NotImplemented
        mine, theirs = self.preset, other.preset
        return mine is theirs or (
            # Equal presets may still build their rules differently.
            mine.rules == theirs.rules
            and mine.standard_rules == theirs.standard_rules
            and mine == theirs
        )


# Rule sets built per (parser, preset), for the last `_KEPT_PARSERS` parsers used, the most
# recent last (a process taking turns among more builds rules on each call). Not a
# WeakKeyDictionary: the rules hold their parser (`TypeCoercion`, `UnknownKeys`), so no entry
# would ever be dropped and a process that builds parser after parser (a sweep, a test suite)
# would keep every one; here the oldest goes.
_PerParser = dict[_PresetKey, tuple[ParserShape, RuleSet]]
_RULES: dict[int, tuple[argparse.ArgumentParser, _PerParser]] = {}
_RULES_LOCK = threading.Lock()
_KEPT_PARSERS = 8
_KEPT_PRESETS = 8  # per parser


def _rules_for(parser: argparse.ArgumentParser, preset: Preset) -> RuleSet:
    key = _PresetKey(preset)
    with _RULES_LOCK:
        entry = _RULES.pop(id(parser), None) or (parser, {})
        _RULES[id(parser)] = entry  # (the most recent last)
        while len(_RULES) > _KEPT_PARSERS:
            del _RULES[next(iter(_RULES))]
        per_parser = entry[1]
        cached = per_parser.get(key)
    if cached is None or not same_shape(parser, cached[0]):  # rebuilt when an action changes
        with reading_dests(parser):  # one reading of the dests for all the rules built
            _check_config_dest(parser, preset)
            cached = (parser_shape(parser), preset.rules_for(parser))
        with _RULES_LOCK:
            if len(per_parser) >= _KEPT_PRESETS:  # (a parser used with preset after preset)
                per_parser.clear()
            per_parser[key] = cached
    return cached[1]


def _check_config_dest(parser: argparse.ArgumentParser, preset: Preset) -> None:
    """A role file dest the parser does not have would never be read: every role would be
    the command line, silently."""
    dest = preset.config_dest
    if dest is None:
        return
    # (looked for in C, in the dests the rules read too: the full list of dests is made only
    # for a did-you-mean)
    if dest == argparse.SUPPRESS or dest not in shape_dests(parser):
        dests = [action.dest for action in parser._actions if action.dest != argparse.SUPPRESS]
        close = suggestion(dest, dests) or (
            "; use the preset of this parser's trainer (plain, PLAIN in Python: its command line "
            "alone, one role)"
        )
        raise PresetError(
            f"preset {preset.name!r} reads its role file from the dest {dest!r}, "
            f"which this parser does not have{close}"
        )


def unknown_tokens(
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    unknown: Sequence[str],
    preset: Preset,
    redacted: Sequence[str] | None = None,
    *,
    positions: Sequence[int] | None = None,
) -> list[Problem]:
    """One problem per flag the parser does not own, with the values that follow it.

    A flag the preset declares passed through (`_passed`) is a note: another program takes
    it. A flag very close to one of the parser's is an error with a did-you-mean, in
    every mode: as written the trainer drops it and silently runs with the default. Any other
    is an error, or with ``unknown_tokens="note"`` a warning (passed on, but not declared).
    argparse returns unknown tokens in argv order, so each is found after the previous one.
    A group is quoted as `redacted` (`argv` as it may be shown, token for token) shows it,
    else redacted on its own. `positions`: where each token of `argv` is on the command line
    the problems name (`argv` what is left of it once tokens were taken out), else its own.
    """
    where: Sequence[int] = range(len(argv)) if positions is None else positions
    if redacted is not None and len(redacted) != len(argv):
        redacted = None
    problems = []
    declared = ", ".join(e + "*" if e[-1] == "-" else e for e in preset.passthrough) or "no flag"
    for index, tokens in _groups(argv, unknown):
        flag = tokens[0].split("=", 1)[0]
        if stray_of(flag) is not None:
            continue  # an error of its own (stray_characters) says what it is
        if (
            redacted is not None
            and index is not None
            and list(argv[index : index + len(tokens)]) == tokens
        ):
            shown = " ".join(redacted[index : index + len(tokens)])
        else:
            shown = " ".join(redact_argv(tokens, parser=parser)[0])  # quoted without a secret
        left = _left_over(parser, argv, index, flag, shown, where)
        if left is not None:
            problems.append(left)
            continue
        passed = _passed(flag, preset.passthrough)
        match = None
        if not passed and flag.startswith("--"):
            match = _close_option(parser, flag)
        place = None if index is None else where[index]
        at = functools.partial(Problem, key=flag, argv_index=place, layer="cli")
        if passed:
            message = f"{shown!r} is not an argument of this parser; it is passed on"
            problems.append(at(message, hint=preset.passthrough_hint, severity="info"))
        elif match is not None and preset.unknown_tokens == "note":
            problems.append(
                at(
                    f"{flag!r} is not an argument of this parser (did you mean {match!r}?)",
                    hint=f"write {match}: as written, training drops it and runs with the default",
                )
            )
        elif preset.unknown_tokens == "note":
            problems.append(
                at(
                    f"{shown!r} is not an argument of this parser; it is passed on to "
                    f"{preset.passthrough_to}, which is declared to take only {declared}",
                    hint="training ignores it: check the spelling in --help, or remove it",
                    severity="warning",
                )
            )
        else:
            hint = f"did you mean {match!r}?" if match else "check the spelling in --help"
            problems.append(at(f"{shown!r} is not an argument of this parser", hint=hint))
    return problems


def _left_over(
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    index: int | None,
    flag: str,
    shown: str,
    where: Sequence[int],
) -> Problem | None:
    """The problem of the unknown `flag` at `argv[index]` (`shown` with its values; `where`:
    each token's place on the command line) when it is an option of `parser` itself: left
    over after ``--``, which ends the options (``-- --lr 1``), or by the parser of a
    sub-command named before it (``go --lr 1`` for the trainer's --lr); else None."""
    if flag not in parser._option_string_actions or index is None:
        return None
    if "--" in argv[:index]:
        message = f"{shown!r} comes after '--', which ends the options: the trainer reads it as "
        message += f"a plain argument, not as {flag}"
        hint = f"remove the '--' at argv[{where[argv.index('--')]}], or write {flag} before it"
    elif parser._subparsers is not None:
        message = f"{shown!r} comes after a sub-command's name: the sub-command's parser does "
        message += "not take it, though the trainer's own does"
        hint = f"write {flag} before the sub-command's name"
    else:
        return None
    return Problem(message, key=flag, argv_index=where[index], layer="cli", hint=hint)


#: What a file's encoding leaves on a command line read from it with ``$(cat FILE)``.
_STRAY = {
    "\r": (
        "ends in a carriage return",
        "the command line was read from a file with Windows line endings",
        "convert the file (dos2unix FILE) and run again",
    ),
    "\ufeff": (
        "begins with a byte-order mark (U+FEFF)",
        "the command line was read from a file saved with one",
        "save the file as UTF-8 without a byte-order mark and run again",
    ),
}


def _strays(token: str) -> list[str]:
    """The characters of `_STRAY` a file's encoding left on `token`: a carriage return at its
    end, a byte-order mark at its start."""
    return [char for char, at in (("\r", token[-1:]), ("\ufeff", token[:1])) if at == char]


def stray_of(token: str) -> tuple[str, str, str] | None:
    """What a file's encoding left on `token`, as (what, why, what to do), or None."""
    found = _strays(token)
    return _STRAY[found[0]] if found else None


def stray_characters(
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    redacted: Sequence[str] | None = None,
    *,
    positions: Sequence[int] | None = None,
) -> list[Problem]:
    """An error where a token ends in a carriage return or begins with a byte-order mark:
    no one types either, a file read with ``$(cat FILE)`` leaves them, and the trainer would
    take ``--save /ckpt`` + CR as a directory of that name, or drop the option a byte-order
    mark hides, without a word. One error for each of the two, at its first token, naming the
    others. A token is quoted as `redacted` (`argv` as it may be shown) shows it: a secret's
    is not quoted. `positions`: where each token of `argv` is on the command line the
    problems name (`argv` what is left of it once tokens were taken out), else its own.
    """
    joined = "".join(argv)  # (in C: almost every command line holds neither)
    if "\r" not in joined and "\ufeff" not in joined:
        return []
    where: Sequence[int] = range(len(argv)) if positions is None else positions
    if redacted is None or len(redacted) != len(argv):
        redacted = redact_argv(argv, parser=parser)[0]
    found: dict[str, list[int]] = {}
    for index, token in enumerate(argv):
        for character in _strays(token):
            found.setdefault(character, []).append(index)
    problems = []
    for character, (what, why, hint) in _STRAY.items():
        if character not in found:
            continue
        first, *others = found[character]
        shown = redacted[first]
        quoted = repr(shown) if shown == argv[first] else "a secret's value (not shown)"
        message = f"{quoted} {what}: {why}"
        if others:
            message += f"; so do {listed([f'argv[{where[index]}]' for index in others])}"
        problems.append(Problem(message, layer="cli", argv_index=where[first], hint=hint))
    return problems


#: How many texts `listed` names before saying how many there are in all.
_LISTED = 5


def listed(texts: Sequence[str]) -> str:
    """``a, b, c``: `texts` joined, the first `_LISTED` of more with how many in all."""
    more = f", ... ({len(texts)} in all)" if len(texts) > _LISTED else ""
    return ", ".join(texts[:_LISTED]) + more


def _groups(argv: Sequence[str], unknown: Sequence[str]) -> list[tuple[int | None, list[str]]]:
    """The unknown tokens as (argv index of the flag, [flag, its values...]).

    A value belongs to the flag it directly follows in argv: a stray token further on (after
    options the parser took) is a group of its own. Tokens not found in argv (read from an
    ``@file``) follow one another.
    """
    groups: list[tuple[int | None, list[str]]] = []
    position = 0
    last: int | None = None  # where the previous unknown token is
    for token in unknown:
        index = None
        try:
            index = argv.index(token, position)  # (in C)
        except ValueError:
            position = len(argv)  # (read from an @file: the tokens after it are not looked for)
        else:
            position = index + 1
        follows = index == last if index is None else last is not None and index == last + 1
        if token.startswith("-") or not groups or not follows:
            groups.append((index, [token]))
        else:
            groups[-1][1].append(token)
        last = index
    return groups


def _passed(flag: str, passthrough: Sequence[str]) -> bool:
    """Whether `flag` (its ``=value`` cut off) is declared passed through: it begins with an
    entry ending in ``-`` (``--sglang-``), or is an entry that names one flag
    (``--train-backend``, not ``--train-backend-x``)."""
    return any(flag.startswith(e) if e[-1] == "-" else flag == e for e in passthrough)


def _close_option(parser: argparse.ArgumentParser, flag: str) -> str | None:
    """The parser's option closest to `flag`, if one is very close (a likely typo).

    Only options of about the same length and the same first letter are compared: difflib
    over every option of a 1,000-action parser would cost milliseconds per token. Failing
    that, the one option `flag` is in other case (``--LR``), or the start of when the parser
    takes no abbreviation (``--tensor-model-parallel``): the trainer drops it all the same.
    """
    index = _options_by_shape(parser)
    first, size = flag[2:3], len(flag)
    options = [o for length in range(size - 2, size + 3) for o in index.get((first, length), ())]
    match = did_you_mean(flag, options, cutoff=0.85)
    if match is not None:
        return match
    lowered = flag.lower()
    every = [option for shaped in index.values() for option in shaped]
    found = {option for option in every if option.lower() == lowered}
    if not found and not parser.allow_abbrev:
        found = {option for option in every if option.lower().startswith(lowered)}
    return found.pop() if len(found) == 1 else None


# Long options by (first letter, length), per parser; rebuilt when an action changes.
_OPTIONS: weakref.WeakKeyDictionary[
    argparse.ArgumentParser, tuple[ParserShape, dict[tuple[str, int], list[str]]]
] = weakref.WeakKeyDictionary()


def _options_by_shape(parser: argparse.ArgumentParser) -> dict[tuple[str, int], list[str]]:
    cached = _OPTIONS.get(parser)
    if cached is None or not same_shape(parser, cached[0]):
        index: dict[tuple[str, int], list[str]] = {}
        for action in parser._actions:
            for option in action.option_strings:
                if option.startswith("--"):
                    index.setdefault((option[2:3], len(option)), []).append(option)
        cached = _OPTIONS[parser] = (parser_shape(parser), index)
    return cached[1]
