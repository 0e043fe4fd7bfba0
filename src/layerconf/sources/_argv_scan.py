"""A command line parsed by a table scan, when argparse would parse it the same simple way.

`layerconf.sources._argv_recorder.record` watches argparse parse, which costs what argparse
costs (a thousand ``hasattr``/``setattr`` calls, a regular expression per option, a pattern
string of the whole command line) plus the watching. Most command lines are plain: every token
that starts with ``-`` is one of the parser's own option strings, written whole, or a long
option the parser does not have (``--sglang-mem-fraction-static``, left to another program);
every other token is a value. For those, `scan` does what argparse does, in the same order, with
argparse's own pieces where it matters: the values come from the parser's ``_get_values`` (its
type conversion, ``choices`` check and nargs handling, version for version), each action is the
action's own call, and a string default is converted by the parser's ``_get_value``. What is
redone here is only how tokens are classified and counted, for the cases where that is one
dictionary look-up.

Anything else makes `scan` return None before it converts anything, and the recorded argparse
parse runs from the start: a parser that is not a plain `argparse.ArgumentParser` (a subclass,
or an instance attribute replacing a method other than the ways it reports errors),
``fromfile_prefix_chars``, a prefix character other than ``-``, positionals, mutually exclusive
groups, a dest that is not a string or that an argparse.Namespace already has; a token that
argparse would abbreviate (or that starts an option string, even with ``allow_abbrev=False``),
split at ``=``, take as a negative number or a value with a space, ``--``, a str subclass; an
action that is not one of argparse's own one-setattr actions (help, version, custom ones), is
deprecated (Python 3.13 warns) or has a type that opens files (`argparse.FileType`); a missing
value, a required option not given, extras for ``parse_args``. A value or a string default that
does not convert is argparse's error, raised where argparse raises it (after the same values
were converted, each once); `record` then reports it as the recorded parse does. Nothing else
visible happens: the scan works on a namespace of its own and changes nothing of the parser.

Tested against argparse on every Python by differential tests (tests/test_argv_scan.py).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from layerconf.core._secret_flags import no_positionals

__all__ = ["MISSING", "ONE_SETATTR", "REPORTING", "scan"]

_SUPPRESS = argparse.SUPPRESS
#: An occurrence's value before, for a dest the namespace did not have yet.
MISSING: Any = object()

#: argparse's actions whose call sets their dest once and does nothing else.
ONE_SETATTR = frozenset(
    {
        argparse._StoreAction,
        argparse._StoreConstAction,
        argparse._StoreTrueAction,
        argparse._StoreFalseAction,
        argparse._AppendAction,
        argparse._AppendConstAction,
        argparse._CountAction,
        argparse._ExtendAction,
        argparse.BooleanOptionalAction,
    }
)

_STR = {str}
#: Whether argparse warns of a deprecated action (``deprecated=True``, Python 3.13+).
_WARNS_DEPRECATED = sys.version_info >= (3, 13)

# Names `hasattr` finds on every argparse.Namespace: argparse would not set a dest so named.
_UNRECOGNIZED = "_unrecognized_args"  # a dest argparse moves into the extras
_NAMESPACE_NAMES = frozenset({*dir(argparse.Namespace()), _UNRECOGNIZED})

# What a plain parser's class has: an instance attribute of one of these names overrides it,
# except the ways it reports (the scan, as argparse, calls them only for an error).
REPORTING = frozenset({"error", "exit", "print_help", "print_usage", "_print_message"})
_PARSER_NAMES = frozenset(dir(argparse.ArgumentParser)) - REPORTING


def _plain(parser: argparse.ArgumentParser) -> bool:
    """Whether `parser` parses as argparse's own class does, with the settings the scan knows."""
    return (
        type(parser) is argparse.ArgumentParser
        and vars(parser).keys().isdisjoint(_PARSER_NAMES)
        and parser.prefix_chars == "-"
        and parser.fromfile_prefix_chars is None
        and not parser._mutually_exclusive_groups
    )


# An occurrence, as the recorder notes it: (action, token position, its dest's value before).
Occurrence = tuple[argparse.Action, int, Any]


def scan(
    parser: argparse.ArgumentParser, strings: list[str], *, known: bool
) -> tuple[list[Occurrence], dict[str, Any], list[str]] | None:
    """``parser.parse_known_args(strings)`` (`known`) or ``parse_args``, by a table scan:
    what each option token set, argparse's namespace dict, the extras; None where argparse
    could parse differently or fail (see the module's docstring)."""
    if not _plain(parser) or (strings and set(map(type, strings)) != _STR):
        return None  # (a str subclass may index or compare as argparse does not expect)
    steps = _steps(parser, strings)
    if steps is None or ((extras := steps[1]) and not known):
        return None
    start = _defaults(parser)
    if start is None:
        return None
    initial, string_defaults, required = start
    no_positionals(parser._actions)  # (`_defaults` found none: the redaction need not look)
    seen = {id(action) for action, _, _ in steps[0]}
    if not all(id(action) in seen for action in required):
        return None  # argparse: "the following arguments are required"
    # Nothing is converted before this point: from here on, the scan's outcome is argparse's,
    # an error included (raised as argparse raised it; `record` reports it as argparse does).
    namespace = argparse.Namespace()
    vars(namespace).update(initial)
    state = vars(namespace)
    occurrences: list[Occurrence] = []
    get_values = parser._get_values
    for action, position, values in steps[0]:
        converted = get_values(action, values)
        occurrences.append((action, position, state.get(action.dest, MISSING)))
        if converted is not _SUPPRESS:  # (as argparse: a type may give SUPPRESS)
            action(parser, namespace, converted, strings[position])
    _convert_defaults(parser, state, string_defaults, seen)
    return occurrences, state, extras


def _steps(
    parser: argparse.ArgumentParser, strings: list[str]
) -> tuple[list[tuple[argparse.Action, int, list[str]]], list[str]] | None:
    """Each option token's (action, position, value strings) and the extras; None when a
    token or an action is not the plain kind (see the module's docstring)."""
    table = parser._option_string_actions
    steps: list[tuple[argparse.Action, int, list[str]]] = []
    extras: list[str] = []
    names: str | None = None
    size = len(strings)
    position = 0
    while position < size:
        token = strings[position]
        if token[:1] != "-":
            extras.append(token)  # a value no option took: no positionals here
            position += 1
            continue
        if token == "--":
            return None  # (the separator, even where the parser has an option of that name)
        action = table.get(token)
        if action is None:
            if names is None:
                names = "\n" + "\n".join(table)
            if not _unknown_long_option(token, names):
                return None
            extras.append(token)
            position += 1
            continue
        if (
            type(action) not in ONE_SETATTR
            or action.dest == _UNRECOGNIZED
            or (_WARNS_DEPRECATED and getattr(action, "deprecated", False))
            or isinstance(action.type, argparse.FileType)
        ):
            return None
        start = position + 1
        end = start
        while end < size and strings[end][:1] != "-":
            end += 1
        count = _count(action.nargs, end - start)
        if count is None or (count == 0 and action.nargs == "?" and action.const is _SUPPRESS):
            return None  # (argparse would fail, or not call the action)
        steps.append((action, position, strings[start : start + count]))
        position = start + count
    return steps, extras


def _unknown_long_option(token: str, names: str) -> bool:
    """True for ``--name`` that argparse takes as an option it does not have, whatever the
    Python: no ``=``, no space, and no option string of the parser starts with it (`names`
    is every option string, each after a newline)."""
    return (
        token[:2] == "--"
        and len(token) > 2
        and "=" not in token
        and " " not in token
        and "\n" not in token
        and "\n" + token not in names
    )


def _count(nargs: Any, available: int) -> int | None:
    """How many of the `available` values an option of `nargs` takes, as argparse's pattern
    match does, or None if argparse would fail or the nargs is not a plain one."""
    if nargs is None:
        return 1 if available else None
    if type(nargs) is int:
        return nargs if 0 <= nargs <= available else None
    if nargs == "?":
        return 1 if available else 0
    if nargs == "*":
        return available
    if nargs == "+":
        return available or None
    return None  # argparse.REMAINDER, PARSER, SUPPRESS


#: What the scan starts from: the namespace's dict before the first token, the actions whose
#: default is a string (argparse's last step converts those still in place), the required ones.
Start = tuple[dict[str, Any], list[argparse.Action], list[argparse.Action]]


def _defaults(parser: argparse.ArgumentParser) -> Start | None:
    """The namespace argparse starts from (each dest's first default, then the parser's own
    defaults), what its last step needs; None if the parser has no actions, positionals, a
    dest that an argparse.Namespace has, or a dest several actions share, one of them without
    a default (argparse would place it where its first default is)."""
    actions = parser._actions
    if not actions:
        return None
    state: dict[str, Any] = {}
    string_defaults: list[argparse.Action] = []
    required: list[argparse.Action] = []
    suppressed: list[str] = []
    # One pass, each attribute read once: read column by column in C (map(attrgetter)), a
    # thousand actions cost this function 1.5x the instructions (3.8M against 2.5M).
    for action in actions:
        dest = action.dest
        default = action.default
        if not action.option_strings or type(dest) is not str:
            return None  # a positional, or a dest argparse cannot set
        if default is _SUPPRESS:
            suppressed.append(dest)
        elif dest not in state:
            state[dest] = default  # several actions share a dest: the first one's default
        if isinstance(default, str):
            string_defaults.append(action)
        if action.required:
            required.append(action)
    if suppressed and (
        len(set(suppressed)) < len(suppressed) or not state.keys().isdisjoint(suppressed)
    ):
        return None  # a dest shared by actions, one of them without a default
    if _SUPPRESS in state:  # a dest argparse does not set (or a string equal to it)
        return None
    for dest, default in parser._defaults.items():
        if dest not in state:
            state[dest] = default
    if not state.keys().isdisjoint(_NAMESPACE_NAMES):
        return None  # (argparse finds it on the namespace; _unrecognized_args it moves)
    return state, string_defaults, required


def _convert_defaults(
    parser: argparse.ArgumentParser,
    state: dict[str, Any],
    string_defaults: list[argparse.Action],
    seen: set[int],
) -> None:
    """argparse's last step: a string default still in place is converted by the action's
    type (an error is argparse's own, raised); an identity conversion (no type, or ``str`` of
    a str) is known to change nothing."""
    types = parser._registries.get("type", {})
    none_unchanged = _is_identity(types.get(None))
    str_unchanged = types.get(str, str) is str
    get_value = parser._get_value
    for action in string_defaults:
        default = action.default
        if id(action) in seen or state.get(action.dest, MISSING) is not default:
            continue
        kind = action.type
        if type(default) is str and (
            (kind is None and none_unchanged) or (kind is str and str_unchanged)
        ):
            continue
        state[action.dest] = get_value(action, default)


def _is_identity(function: Any) -> bool:
    """True for the ``type`` argparse registers for None (a function returning its argument)."""
    return _IDENTITY is not None and getattr(function, "__code__", None) is _IDENTITY


_IDENTITY = next(
    (
        code
        for code in argparse.ArgumentParser.__init__.__code__.co_consts
        if getattr(code, "co_name", None) == "identity"
    ),
    None,
)
