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
import copy
from collections.abc import Callable
from typing import Any

from layerconf.core._secret_flags import _positionals

__all__ = ["guard"]

#: How deep sub-commands of sub-commands are followed.
_DEPTH = 8


def guard(clone: Any, scrubbed: Callable[[str], str], depth: int = 0) -> None:
    """Give `clone` (a parse's copy of a parser) its own sub-commands, whose parsers report an
    error through `scrubbed` (the message without the command line's secrets) to the
    ``error()`` they had, down to `_DEPTH` levels."""
    if depth >= _DEPTH:
        return
    # (among the positionals, kept per list of actions: not a pass over a thousand per parse)
    commands = [a for a in _positionals(clone) if isinstance(a, argparse._SubParsersAction)]
    if not commands:
        return
    twins: dict[int, argparse.Action] = {}
    guarded: dict[int, Any] = {}  # (an alias names the same parser: one copy of it)
    for action in commands:
        parsers = {}
        for name, sub in action._name_parser_map.items():
            if id(sub) not in guarded:
                guarded[id(sub)] = _guarded(sub, scrubbed, depth)
            parsers[name] = guarded[id(sub)]
        twin = copy.copy(action)
        twin._name_parser_map = twin.choices = parsers
        twins[id(action)] = twin
    clone._actions = [twins.get(id(action), action) for action in clone._actions]


def _guarded(sub: Any, scrubbed: Callable[[str], str], depth: int) -> Any:
    """A copy of the sub-parser `sub` whose error() scrubs its message (see `guard`)."""
    if not isinstance(sub, argparse.ArgumentParser):
        return sub  # (not a parser: argparse will say what it says)
    twin = copy.copy(sub)
    error = vars(sub).get("error") or type(sub).error.__get__(twin, type(twin))

    def scrubbed_error(message: str) -> Any:
        return error(scrubbed(message))

    twin.error = scrubbed_error  # type: ignore[method-assign]
    guard(twin, scrubbed, depth + 1)
    return twin
