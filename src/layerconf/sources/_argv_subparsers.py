"""Sub-commands in a recorded parse: their parsers' errors, without the command line's secrets.

A sub-parser (``parser.add_subparsers().add_parser("login")``) parses the tokens after its
name on its own, and its own ``error()`` prints what it could not convert (``argument
-k/--api-key: invalid int value: 'S'``) and exits: the recorder's hook on the parse's copy of
the parser never sees it. `guard` gives that copy sub-commands of its own, whose parsers are
copies with ``error()`` going through the recorder's scrubbing; the user's parsers are never
changed. Which tokens are secret there (``-k S`` under ``login``) the redaction tells by the
sub-command's actions (`layerconf.core.secrets.redact_argv`).
"""

from __future__ import annotations

import argparse
import collections
import copy
from collections.abc import Callable
from typing import Any

from layerconf.core._secret_flags import _positionals

__all__ = ["copy_sub_commands", "guard"]

#: How deep sub-commands of sub-commands are followed.
_DEPTH = 8


def guard(clone: Any, scrubbed: Callable[[str], str]) -> None:
    """Give `clone` (a parse's copy of a parser) its own sub-commands, whose parsers report an
    error through `scrubbed` (the message without the command line's secrets) to the
    ``error()`` they had, down to `_DEPTH` levels (`copy_sub_commands`)."""
    copy_sub_commands(clone, lambda sub: _guarded(sub, scrubbed))


def copy_sub_commands(
    top: Any, make: Callable[[Any], Any], original: Any = None, depth: int = _DEPTH
) -> None:
    """Give `top` (a copy of the parser `original`, if known) copies of its sub-commands'
    parsers, each `make(parser)` (the parser itself where it returns it), and theirs of
    their own, `depth` levels down. Each parser is copied once, however many sub-commands
    name it (an alias, a diamond, a parser among its own sub-commands, `original` too: the
    same copy), so a graph of parsers costs a copy per parser, never one per path through
    it; the parsers copied are left as they were."""
    made: dict[int, Any] = {} if original is None else {id(original): top}  # each one's copy
    twins: dict[int, argparse.Action] = {}  # each sub-commands action's copy
    # Breadth first: a parser is walked at the least depth it is reached at.
    waiting = collections.deque([(top, 0)])
    while waiting:
        parser, level = waiting.popleft()
        # (among the positionals, kept per list of actions: not a pass over a thousand per parse)
        commands = [
            action
            for action in (_positionals(parser) if level < depth else ())
            if isinstance(action, argparse._SubParsersAction)
        ]
        for action in commands:
            if id(action) in twins:
                continue
            for sub in action._name_parser_map.values():
                if id(sub) not in made:
                    made[id(sub)] = make(sub)
                    if made[id(sub)] is not sub:
                        waiting.append((made[id(sub)], level + 1))
            twin = copy.copy(action)
            twin._name_parser_map = twin.choices = {
                name: made[id(sub)] for name, sub in action._name_parser_map.items()
            }
            twins[id(action)] = twin
        if commands:  # (a new list: the copy's, the parser's own left as it was)
            parser._actions = [twins.get(id(action), action) for action in parser._actions]


def _guarded(sub: Any, scrubbed: Callable[[str], str]) -> Any:
    """A copy of the sub-parser `sub` whose error() scrubs its message (see `guard`)."""
    if not isinstance(sub, argparse.ArgumentParser):
        return sub  # (not a parser: argparse will say what it says)
    twin = copy.copy(sub)
    error = vars(sub).get("error") or type(sub).error.__get__(twin, type(twin))

    def scrubbed_error(message: str) -> Any:
        return error(scrubbed(message))

    twin.error = scrubbed_error  # type: ignore[method-assign]
    return twin
