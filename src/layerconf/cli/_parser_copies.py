"""Copies of the trainer's parser that the command parses with, the user's left as it was:
`guarded`, whose stops raise `ParserStop` instead of printing and exiting (its sub-commands'
too), and `nothing_required`, whose arguments are all optional (`layerconf.cli.stops`).
"""

from __future__ import annotations

import argparse
from typing import NoReturn

from layerconf.cli.errors import ParserStop

__all__ = ["guarded", "nothing_required"]


def nothing_required(
    parser: argparse.ArgumentParser, groups: bool = True
) -> argparse.ArgumentParser:
    """A copy of `parser` whose arguments, and with `groups` its mutually exclusive groups,
    are all optional; `parser` and its actions are left as they were (the required ones are
    copied, the rest shared)."""
    import copy

    relaxed = copy.copy(parser)
    copies: dict[int, argparse.Action] = {}
    for action in parser._actions:
        if action.required:
            copies[id(action)] = copy.copy(action)
            copies[id(action)].required = False
    relaxed._actions = [copies.get(id(action), action) for action in parser._actions]
    relaxed._option_string_actions = {
        option: copies.get(id(action), action)
        for option, action in parser._option_string_actions.items()
    }
    if groups:
        relaxed._mutually_exclusive_groups = [
            copy.copy(group) for group in parser._mutually_exclusive_groups
        ]
        for group in relaxed._mutually_exclusive_groups:
            group.required = False
    return relaxed


#: How deep sub-commands of sub-commands are guarded (`guarded`).
_SUB_DEPTH = 8


def guarded(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """A copy of `parser` that raises `ParserStop` instead of printing and exiting, and so do
    its sub-commands' parsers (``train.py go --x y``: copies of theirs), `_SUB_DEPTH` deep.

    The copy shares the actions but a sub-command's; only its own error/exit/print methods
    are replaced, so the user's parser is left as it was. Each parser is copied once, however
    many sub-commands name it (an alias, a diamond, a parser among its own sub-commands: the
    same copy), so a graph of parsers costs a copy per parser, never one per path through it.
    """
    import collections
    import copy

    made = {id(parser): _stopping(copy.copy(parser))}  # each parser's copy
    twins: dict[int, argparse.Action] = {}  # each sub-commands action's copy
    # Breadth first: a parser is walked at the least depth it is reached at.
    waiting = collections.deque([(parser, 0)])
    while waiting:
        original, depth = waiting.popleft()
        commands = [
            action
            for action in (original._actions if depth < _SUB_DEPTH else ())
            if isinstance(action, argparse._SubParsersAction)
        ]
        for action in commands:
            if id(action) in twins:
                continue
            for sub in action._name_parser_map.values():
                if isinstance(sub, argparse.ArgumentParser) and id(sub) not in made:
                    made[id(sub)] = _stopping(copy.copy(sub))
                    waiting.append((sub, depth + 1))
            twin = copy.copy(action)
            twin._name_parser_map = twin.choices = {
                name: made.get(id(sub), sub) for name, sub in action._name_parser_map.items()
            }
            twins[id(action)] = twin
        if commands:
            made[id(original)]._actions = [twins.get(id(a), a) for a in original._actions]
    return made[id(parser)]


def _stopping(safe: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`safe` (a copy of a parser), its error/exit/print methods replaced: it raises
    `ParserStop` instead of printing and exiting."""

    def error(message: str) -> NoReturn:
        raise ParserStop(message)

    def stop(status: int = 0, message: str | None = None) -> NoReturn:
        raise ParserStop((message or "").strip() or None)

    def quiet(*args: object, **kwargs: object) -> None:
        del args, kwargs

    for name, replacement in (
        ("error", error),
        ("exit", stop),
        ("print_help", quiet),
        ("print_usage", quiet),
        ("_print_message", quiet),
    ):
        setattr(safe, name, replacement)
    return safe
