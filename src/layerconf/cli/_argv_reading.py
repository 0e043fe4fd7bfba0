"""How the trainer's parser reads a command line: its options, each as the actions argparse
takes it for, with their values; its positionals (`read_as`). For `layerconf.cli.stops`, which
places each of argparse's errors at the token it is about.

argparse takes a token for an option exactly, as ``--opt=value``, as the one option it begins
when the parser allows abbreviations (``--lr-dec`` for ``--lr-decay-style``), or as a cluster
of short options (``-qk3``: -q, then -k with the value 3); a token is a value when it begins
with none of the parser's prefix characters, or is a negative number or holds a space;
``--`` ends the options; the tokens after a sub-command's name are its parser's. Which of
these a token is, the parser's own ``_parse_optional`` says (`_taken_as`: its answer's shape
and its way of refusing an ambiguous abbreviation differ from one Python version to the next);
how many tokens after an option are its values, its action's nargs.
"""

from __future__ import annotations

import argparse
import copy
from typing import TYPE_CHECKING, Any, NoReturn

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ["Read", "first_drift", "options_given", "read_as", "read_at"]


@attrs.frozen
class Read:
    """One option of the command line and its values, or one token that is no option's."""

    #: The option's token and its values' (a positional: its one token).
    tokens: range
    #: The parser that reads them (after a sub-command's name, that sub-command's).
    parser: argparse.ArgumentParser
    #: Whether the first token is an option, the parser's own or not.
    option: bool = False
    #: The actions argparse takes the option for, in order (``-qk3``: -q's, then -k's); none
    #: for an option the parser does not own, or an abbreviation of several of its options.
    actions: tuple[argparse.Action, ...] = ()
    #: The value written within the option's token, the last action's (``-kq``: "q",
    #: ``--lr=1``: "1"), or None.
    attached: str | None = None


def read_as(argv: Sequence[str], parser: argparse.ArgumentParser) -> list[Read]:
    """Every token of `argv` in a `Read`, in order, as `parser` reads it.

    An option the parser does not own takes no value (argparse leaves it to the unknown
    tokens, and the tokens after it to the positionals); a token after ``--`` is a
    positional. The first token no option takes that names a sub-command begins that
    sub-command's tokens."""
    found: list[Read] = []
    reader = parser
    asking, commands = _asking(reader), _sub_commands(reader)
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":  # (every token after it is a value, whichever parser reads it)
            found += (Read(range(at, at + 1), reader) for at in range(index, len(argv)))
            break
        taken = _taken_as(asking, token)
        if taken is None:
            found.append(Read(range(index, index + 1), reader))
            index += 1
            sub = commands.get(token)
            if sub is not None:
                reader = sub
                asking, commands = _asking(reader), _sub_commands(reader)
            continue
        actions, attached = taken
        end = index + 1
        count = _values(actions[-1] if actions else None, attached, len(argv))
        while end < len(argv) and count and argv[end] != "--":
            if count > 0 and _taken_as(asking, argv[end]) is not None:
                break  # (an option: the values end)
            end += 1
            count -= count > 0
        found.append(Read(range(index, end), reader, True, actions, attached))
        index = end
    return found


def first_drift(
    argv: Sequence[str], kept: Sequence[int], parser: argparse.ArgumentParser, whole: list[Read]
) -> int | None:
    """The first of the tokens `kept` (of `argv`, in order) that `parser` reads otherwise on
    the command line of those tokens alone than on the whole `argv` (`whole`: its `read_as`):
    another option's value, or a value no longer, an option with other values, another
    parser's (taking ``--n x`` out of ``--list 1 2 --n x 3`` gives the stray ``3`` to
    ``--list``, and ``--opt --n x go`` gives ``go`` to ``--opt``); None if each is read alike."""
    alone = _by_token(read_as([argv[index] for index in kept], parser), kept)
    every = _by_token(whole, range(len(argv)))
    return next((index for index in kept if alone[index] != every[index]), None)


def _by_token(reads: list[Read], positions: Sequence[int]) -> dict[int, tuple[object, ...]]:
    """How `reads` read each token, by its position (`positions`: each token's, on the whole
    command line): the positions of its option's tokens, and what the option is; of a
    positional, how many its parser read before it (argparse gives them to its positional
    arguments in turn: the first is the sub-command's name)."""
    found: dict[int, tuple[object, ...]] = {}
    before: dict[int, int] = {}  # (how many positionals each parser read so far)
    for read in reads:
        tokens = tuple(positions[index] for index in read.tokens)
        turn = None if read.option else before.get(id(read.parser), 0)
        if turn is not None:
            before[id(read.parser)] = turn + 1
        how = (tokens, read.option, read.actions, read.parser, read.attached, turn)
        found.update(dict.fromkeys(tokens, how))
    return found


#: `_values` of an option that takes the rest of the command line, options too.
_REST = -1


def _values(action: argparse.Action | None, attached: str | None, most: int) -> int:
    """How many of the values after an option of `action` it takes, at most (`most`: every
    one up to the next option): none when its value is within its token, or the parser does
    not own it; `_REST` for one that takes the rest of the command line."""
    if action is None or attached is not None:
        return 0
    nargs = action.nargs
    if nargs in (0, argparse.SUPPRESS):
        return 0
    if nargs is None or nargs == argparse.OPTIONAL:
        return 1
    if isinstance(nargs, int):
        return nargs
    return _REST if nargs in (argparse.REMAINDER, argparse.PARSER) else most


def _sub_commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser of each sub-command of `parser`, by each of its names."""
    return {
        name: sub
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name, sub in action._name_parser_map.items()
        if isinstance(sub, argparse.ArgumentParser)
    }


class _Ambiguous(Exception):
    """An abbreviation of several options (argparse before Python 3.13 says so through
    ``error()``, which prints and exits)."""


def _asking(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """A copy of `parser` to ask ``_parse_optional`` of: its ``error()`` raises `_Ambiguous`
    instead of printing and exiting (the parser itself is left as it was)."""

    def error(message: str) -> NoReturn:
        raise _Ambiguous(message)

    asking = copy.copy(parser)
    asking.error = error  # type: ignore[method-assign]
    return asking


def _taken_as(
    parser: argparse.ArgumentParser, token: str
) -> tuple[tuple[argparse.Action, ...], str | None] | None:
    """None when argparse takes `token` for a value; else the actions it takes it for, with the
    value written in it (`Read.actions`, `Read.attached`).

    ``_parse_optional`` gives (action, option string, value) up to Python 3.12.6, (action,
    option string, separator, value) in 3.13.0, and a list of those, several for an ambiguous
    abbreviation, from 3.12.7 and 3.13.1 on; before that it refused an ambiguous one itself."""
    try:
        answer: Any = parser._parse_optional(token)
    except Exception:  # an ambiguous abbreviation (or a parser class's own way of failing)
        return (), None
    if answer is None:
        return None
    if type(answer) is list:
        if len(answer) != 1:
            return (), None
        answer = answer[0]
    action, option, *separator, value = answer
    if action is None:
        return (), None
    return _cluster(parser, action, option, value, separator[0] if separator else None)


def _cluster(
    parser: argparse.ArgumentParser,
    action: argparse.Action,
    option: str,
    value: str | None,
    separator: str | None,
) -> tuple[tuple[argparse.Action, ...], str | None]:
    """The actions of a short option `option` and of those clustered after it in its token
    (``-qk3``: -q takes no value, so "k3" is -k, with the value 3), as argparse reads them
    on; the value left in the token. (A `separator` is given from Python 3.13 on, where
    ``-q=x`` is an error rather than -q then -x, and ``-qk=3`` gives -k the value 3.)"""
    actions = [action]
    chars = parser.prefix_chars
    modern = separator is not None
    while (
        value
        and action.nargs in (0, argparse.SUPPRESS)
        and option[1] not in chars
        and not separator
        and value[0] not in chars
    ):
        option = option[0] + value[0]
        following = parser._option_string_actions.get(option)
        if following is None:
            break  # (argparse refuses the rest, or leaves it to the unknown tokens)
        action = following
        actions.append(action)
        value = value[1:] or None
        separator = ""
        if modern and value is not None and value[0] == "=":
            separator, value = "=", value[1:]
    return tuple(actions), value


def read_at(argv: list[str], index: int, reads: list[Read]) -> Read:
    """The option that `argv[index]` is or is a value of, with its values, as its parser
    reads the command line (`reads`: an abbreviation, a short cluster, `read_as`); a flag the
    parser does not own with the values after it (``--rollout-batch-sise 8``); else the
    positional it is, alone (a refused sub-command's name after ``--n 1``)."""
    at = next((at for at, read in enumerate(reads) if index in read.tokens), None)
    if at is None:
        return attrs.evolve(reads[0], tokens=range(index, index + 1), option=False, actions=())
    read = reads[at]
    if read.option and not read.actions:
        end = at + 1
        while end < len(reads) and not reads[end].option and argv[reads[end].tokens[0]] != "--":
            end += 1
        read = attrs.evolve(read, tokens=range(read.tokens[0], reads[end - 1].tokens[-1] + 1))
    return read


def options_given(reads: list[Read], options: Iterable[str]) -> list[Read]:
    """Each option of the command line `reads` that its parser takes for one of `options` (an
    action's option strings), however written: ``--opt=value``, an abbreviation, in a
    cluster of short options."""
    names = set(options)
    return [
        read
        for read in reads
        if any(not names.isdisjoint(action.option_strings) for action in read.actions)
    ]
