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
    many sub-commands name it (`copy_sub_commands`: a parser among its own sub-commands is
    this copy)."""
    import copy

    from layerconf.sources._argv_subparsers import copy_sub_commands

    def make(sub: object) -> object:
        return _stopping(copy.copy(sub)) if isinstance(sub, argparse.ArgumentParser) else sub

    safe = _stopping(copy.copy(parser))
    copy_sub_commands(safe, make, parser, _SUB_DEPTH)
    return safe


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
