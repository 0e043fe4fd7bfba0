"""Recording an argparse parse: which token set each value (see `layerconf.sources.argv`).

(`record` first offers the parse to `layerconf.sources._argv_scan`, which takes plain command
lines on plain parsers; what follows is the general way, for everything else.)

The parser is never modified, not even for a moment: `record` parses with a shallow copy of it
(same actions, same settings, same class) whose instance attributes shadow a few of argparse's
private methods with recorders that call the real method and note what argparse decided. None
of argparse's logic is redone here: values, unknown tokens and errors are argparse's own.

- ``_match_argument`` is called for each action an option token yields, before that action
  runs. It gets the argv pattern from the token after the option on, so the pattern's length
  gives the option's position and where its values end. An explicit argument (``--lr=1e-5``,
  ``-x5``) is matched against the literal ``'A'`` instead: the token is then found by asking
  ``_parse_optional`` about the tokens from where argparse stands. The occurrence is noted there
  as (action, position, its dest's value before): what a built-in action set is what the next
  setter of that dest found, or the final value.
- Short-option clusters (``-vx`` yields -v then -x, both matched before either runs) and
  positionals (``_match_arguments_partial`` says where each one's values start) are noted by
  ``_get_values``, hooked only while they are taken.
- A custom action (any class but argparse's built-in ones, which set their dest exactly once)
  may set several dests: while it runs, the namespace's class is switched to one whose
  ``__setattr__`` records each assignment; ``_get_value`` is then hooked too, to see argparse
  convert unused string defaults, which ends the recording.
- With ``fromfile_prefix_chars``, ``_read_args_from_files`` and ``convert_arg_line_to_args``
  are wrapped: each expanded token knows its file and line and the argv index of its
  ``@file`` token. argparse still reads the files itself (same encoding, same errors).

Relied on, and the same in CPython 3.10 to 3.14: which of these methods argparse calls when;
``_match_argument`` and ``_match_arguments_partial`` getting ``arg_strings_pattern[start:]``
(or the literal ``'A'``); ``_parse_optional`` returning a tuple (up to 3.12.6 and 3.13.0) or a
list of tuples (3.12.7+, 3.13.1+). A parser class that replaces them still parses exactly as it
would; only argv positions may be missing.
"""

from __future__ import annotations

import argparse
import copy
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from layerconf.core._secret_flags import _TABLES_KEPT
from layerconf.core._secret_text import command_line_secrets
from layerconf.core.records import Origin, Path
from layerconf.core.secrets import is_secret, redacted_token, scrub_text
from layerconf.sources._argv_scan import MISSING, ONE_SETATTR, REPORTING, scan
from layerconf.sources._argv_subparsers import guard

__all__ = ["CLI", "CLI_ORIGIN", "Changes", "Recorder", "record"]

#: The layer that what the command line set goes into; the origins recorded name it.
CLI = "cli"
CLI_ORIGIN = Origin(CLI, "argv")


def record(
    parser: argparse.ArgumentParser, strings: list[str], given: dict[str, Any], *, known: bool
) -> tuple[Recorder, dict[str, Any], list[str]]:
    """Parse `strings` as `parser` does, recorded: the recorder, argparse's dict, the extras.

    The namespace parsed into starts with `given`; its dict is the one argparse filled. With
    `known`, ``parse_known_args`` (the tokens it does not own are the extras), else
    ``parse_args`` (no extras). Errors are argparse's own.

    A plain command line on a plain parser is not watched but scanned (`_argv_scan.scan`
    does what argparse does); the recorder then holds what the scan found.
    """
    if not given:
        try:
            scanned = scan(parser, strings, known=known)
        except argparse.ArgumentError as error:  # a value or a string default did not convert
            reported = _reported(parser, strings, error)
            if reported is not None:
                raise reported from None
            scanned = None  # (the parser reports its own way: argparse's parse will say it)
        if scanned is not None:
            occurrences, final, extras = scanned
            return Recorder.of_scan(parser, strings, occurrences), final, extras
    clone = copy.copy(parser)
    working = argparse.Namespace(**given)
    recorder = Recorder(parser, clone, strings, working)
    _RECORDERS[id(working)] = recorder
    try:
        if known:
            _, extras = clone.parse_known_args(strings, working)
        else:
            clone.parse_args(strings, working)
            extras = []
    except argparse.ArgumentError as error:  # exit_on_error=False: raised, never printed
        # (not chained to what a type= raised: that quotes the value, a secret maybe)
        raise _scrubbed(error, recorder) from None
    finally:
        del _RECORDERS[id(working)]
        object.__setattr__(working, "__class__", argparse.Namespace)
    return recorder, vars(working), extras


def _reported(
    parser: argparse.ArgumentParser, strings: list[str], error: argparse.ArgumentError
) -> argparse.ArgumentError | None:
    """What argparse does with the `error` the scan met, as the recorded parse would (the
    message without the command line's secrets): exit through ``parser.error``, or the error
    to raise (``exit_on_error=False``); None if the parser's instance replaces a way argparse
    reports (its error() may return: only argparse's own parse knows what follows)."""
    if not vars(parser).keys().isdisjoint(REPORTING):
        return None
    reporter = Recorder.of_scan(parser, strings, [])
    if parser.exit_on_error:
        parser.error(reporter.scrubbed(str(error)))  # (usage and message on stderr, exit 2)
    return _scrubbed(error, reporter)


def _scrubbed(error: argparse.ArgumentError, recorder: Recorder) -> argparse.ArgumentError:
    """`error` without the command line's secrets, in its message and in its args (repr)."""
    message = error.message
    error.message = recorder.scrubbed(message)
    error.args = tuple(error.message if arg is message else arg for arg in error.args)
    return error


class _Recording(argparse.Namespace):
    """The parse's namespace while a custom action runs: every setattr goes into its occurrence.

    The namespace is a plain `argparse.Namespace` the rest of the time (its class is switched),
    so argparse's thousand default setattrs run at full speed.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        recorder = _RECORDERS.get(id(self))
        occurrence = recorder.current if recorder is not None else None
        if occurrence is not None:
            occurrence[2].append((name, self.__dict__.get(name, MISSING), value))
        object.__setattr__(self, name, value)


# The recorder of each parse in progress, by id() of its namespace.
_RECORDERS: dict[int, Recorder] = {}

# An occurrence: (action, position in the expanded argument list or None, its dest's value
# before) for a built-in action that sets its dest once, else [action, position, events].
_Occurrence = Any
# Where an expanded token came from: (argv index, file, line in that file).
_Where = tuple[int, "str | None", "int | None"]


def _original(parser: argparse.ArgumentParser, clone: Any, name: str) -> Callable[..., Any]:
    """The method argparse would call: an override on the instance, else the class's, on `clone`."""
    own = vars(parser).get(name)
    if own is not None:
        return own  # type: ignore[no-any-return]
    function = getattr(type(parser), name)
    return function.__get__(clone, type(clone))  # type: ignore[no-any-return]


class Recorder:
    """One parse's state: where argparse is in the argument list, what each action set."""

    __slots__ = (
        "argv",
        "batch",
        "clone",
        "current",
        "depth",
        "file_argv_index",
        "file_source",
        "floor",
        "hidden",
        "in_values",
        "last_wheres",
        "line",
        "namespace",
        "new_keys_from",
        "occurrences",
        "orig_convert",
        "orig_error",
        "orig_get_value",
        "orig_get_values",
        "orig_match_argument",
        "orig_match_partial",
        "orig_parse_optional",
        "orig_read_files",
        "pending",
        "pending_lines",
        "positional_queue",
        "prefix_chars",
        "separator",
        "size",
        "state",
        "strings",
        "watching",
        "wheres",
    )

    def __init__(
        self,
        parser: argparse.ArgumentParser,
        clone: Any,
        strings: list[str],
        namespace: argparse.Namespace,
    ) -> None:
        self.clone = clone
        self.namespace = namespace
        self.state = namespace.__dict__
        self.argv = strings
        self.strings = strings  # the expanded argument list (after @file expansion)
        self.size = len(strings)
        self.wheres: list[_Where] | None = None  # with @files: where each expanded token is from
        self.separator = -2  # position of the first '--' (or the size); -2 until looked up
        self.floor = 0  # argparse's next unconsumed position, as far as we know
        self.batch: int | None = None  # the option token being consumed
        self.pending = 0  # actions matched but not taken yet, while get_values is hooked
        self.positional_queue: deque[tuple[int, int]] = deque()
        self.in_values = False
        self.watching = False
        self.current: _Occurrence | None = None  # a custom action's, recording its setattrs
        self.occurrences: list[_Occurrence] = []
        self.new_keys_from = -1
        self.hidden: list[str] = []  # the value strings of secret positionals
        self.depth = 0
        self.line = 0
        self.file_source: str | None = None
        self.file_argv_index = 0
        self.pending_lines: list[_Where] = []
        self.last_wheres: list[_Where] = []
        self.prefix_chars = ""

        self.orig_parse_optional = _original(parser, clone, "_parse_optional")
        self.orig_match_argument = _original(parser, clone, "_match_argument")
        self.orig_match_partial = _original(parser, clone, "_match_arguments_partial")
        self.orig_get_values = _original(parser, clone, "_get_values")
        self.orig_get_value: Callable[..., Any] = _original(parser, clone, "_get_value")
        self.orig_error = _original(parser, clone, "error")
        hooks: dict[str, Callable[..., Any]] = {
            "_match_argument": self.match_argument,
            "_match_arguments_partial": self.match_partial,
            "error": self.error,
        }
        if parser.fromfile_prefix_chars is not None:
            self.prefix_chars = parser.fromfile_prefix_chars
            self.orig_read_files = _original(parser, clone, "_read_args_from_files")
            self.orig_convert = _original(parser, clone, "convert_arg_line_to_args")
            hooks["_read_args_from_files"] = self.read_files
            hooks["convert_arg_line_to_args"] = self.convert_line
        vars(clone).update(hooks)
        guard(clone, self.scrubbed)  # (a sub-parser's own errors too)

    @classmethod
    def of_scan(
        cls, parser: argparse.ArgumentParser, strings: list[str], occurrences: list[Any]
    ) -> Recorder:
        """The recorder of a parse `_argv_scan.scan` made, or of its error: only what
        `changes`, `argv` and `scrubbed` read is filled in (there was no parse to watch)."""
        recorder = cls.__new__(cls)
        recorder.clone = parser
        recorder.argv = recorder.strings = strings
        recorder.size = len(strings)
        recorder.wheres = None
        recorder.current = None
        recorder.occurrences = occurrences
        recorder.new_keys_from = -1
        recorder.hidden = []
        return recorder

    # -- errors --------------------------------------------------------------------------------

    def error(self, message: str) -> Any:
        """argparse's error, without the secrets of the command line (its own, or the parser's
        override of it, still decides what happens: print and exit, raise...)."""
        return self.orig_error(self.scrubbed(message))

    def scrubbed(self, message: str) -> str:
        """`message` without the secret values of the command line, as the parser reads it,
        nor a token that shows a secret where it does not belong (``--train-env-vars
        HF_TOKEN=S``: argparse quotes the value it cannot convert)."""
        texts = command_line_secrets(self.strings, self.clone) + self.hidden  # (login -k S too)
        return scrub_text(message, texts) if texts else message

    # -- options -------------------------------------------------------------------------------

    def match_argument(self, action: argparse.Action, pattern: str) -> int:
        count: int = self.orig_match_argument(action, pattern)
        size = len(pattern)
        if self.pending:
            # The next action of a short-option cluster ('-vx'): get_values takes it from here.
            self.pending += 1
            if size > 1:
                end = self.size - size + count
                if end > self.floor:
                    self.floor = end
            return count
        if self.current is not None:
            self._close()
        batch: int | None
        if size != 1:
            # argparse passes the pattern from the token after the option on: the option is
            # just before it, and its values end `count` tokens later.
            batch = self.batch = self.size - size - 1
            self.floor = batch + 1 + count
        else:
            # An explicit argument ('--lr=1e-5', '-x5') is matched against the literal 'A',
            # which a one-token suffix looks like too: find the token instead.
            batch = self.batch = self._next_option(action)
            if count == 0:
                # Maybe the first of a cluster ('-vx' -> -v, then -x): all its actions are
                # matched before any is taken, so note them as get_values takes them.
                self.pending = 1
                self._hook_get_values()
                return count
        if action.nargs != argparse.SUPPRESS:  # else argparse does not call it
            if type(action) in ONE_SETATTR:  # (`_note`'s common case, inline)
                self.occurrences.append((action, batch, self.state.get(action.dest, MISSING)))
            else:
                self._note(action, batch)
        return count

    def _next_option(self, action: argparse.Action) -> int | None:
        """The next option token argparse consumes: the first one from `floor` that it owns."""
        strings = self.strings
        parse = self.orig_parse_optional
        position = self.floor
        stop = self._separator()
        while position < stop:
            result = parse(strings[position])
            if result is not None:
                # (action, option_string, [sep,] explicit_arg), or a list of them (3.12.7+)
                first = result[0] if type(result) is list else result
                if first[0] is not None:  # an option the parser does not own goes to extras
                    if first[0] is not action:
                        return None  # not what argparse did: no position rather than a wrong one
                    self.floor = position + 1
                    return position
            position += 1
        return None

    def _separator(self) -> int:
        if self.separator == -2:
            try:
                self.separator = self.strings.index("--")
            except ValueError:
                self.separator = self.size
        return self.separator

    # -- positionals ---------------------------------------------------------------------------

    def match_partial(self, actions: list[argparse.Action], pattern: str) -> list[int]:
        counts: list[int] = self.orig_match_partial(actions, pattern)
        start = self.size - len(pattern)
        queue = self.positional_queue
        queue.clear()
        for count in counts:
            queue.append((start, count))
            start += count
        if start > self.floor:
            self.floor = start
        if counts:
            # argparse takes these positionals right away, one get_values each.
            self._hook_get_values()
        return counts

    def _positional_position(self) -> int | None:
        if not self.positional_queue:
            return None
        start, count = self.positional_queue.popleft()
        if start == self._separator():  # the '--' separator is never a value
            start += 1
            count -= 1
        return start if count > 0 else None

    # -- what each action set ------------------------------------------------------------------

    def _note(self, action: argparse.Action, position: int | None) -> None:
        """Note an action about to run at `position`; called just before argparse runs it."""
        if type(action) in ONE_SETATTR:
            # It sets its dest once: what it set is the value before the next setter, or final.
            self.occurrences.append((action, position, self.state.get(action.dest, MISSING)))
            return
        if self.new_keys_from < 0:
            self.new_keys_from = len(self.state)
        self.current = [action, position, []]
        self.occurrences.append(self.current)
        object.__setattr__(self.namespace, "__class__", _Recording)
        if not self.watching:
            # Until the next action, or until argparse converts unused string defaults.
            self.watching = True
            vars(self.clone)["_get_value"] = self.get_value

    def _close(self) -> None:
        self.current = None
        # (through object: `_Recording.__setattr__` would take the class for a dest)
        object.__setattr__(self.namespace, "__class__", argparse.Namespace)

    def _hook_get_values(self) -> None:
        vars(self.clone)["_get_values"] = self.get_values

    def get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        """Hooked only while a cluster or positionals are taken: note each before it runs."""
        if self.current is not None:
            self._close()
        if action.option_strings:
            position = self.batch
            self.pending -= 1
        else:
            position = self._positional_position()
            if is_secret(action.dest):  # (argparse's error quotes a value it cannot convert)
                self.hidden.extend(arg_strings)
        if not self.pending and not self.positional_queue:
            del vars(self.clone)["_get_values"]
        if self.watching:
            self.in_values = True
            try:
                values = self.orig_get_values(action, arg_strings)
            finally:
                self.in_values = False
        else:
            values = self.orig_get_values(action, arg_strings)
        if values is not argparse.SUPPRESS and (position is not None or action.option_strings):
            # (A positional that matched no token holds its default: not the command line's.)
            self._note(action, position)
        return values

    def get_value(self, action: argparse.Action, arg_string: str) -> Any:
        """Hooked once a custom action ran: to see argparse convert unused string defaults."""
        current = self.current
        if (
            current is not None
            and not self.in_values
            and arg_string is action.default
            and action is not current[0]
        ):
            self._close()
        return self.orig_get_value(action, arg_string)

    # -- fromfile_prefix_chars -----------------------------------------------------------------

    def read_files(self, arg_strings: list[str]) -> list[str]:
        if self.depth == 0:
            wheres: list[_Where] = [(index, None, None) for index in range(len(arg_strings))]
        else:
            wheres = self.pending_lines
            if len(wheres) != len(arg_strings):  # a convert_arg_line_to_args we cannot follow
                wheres = [(self.file_argv_index, self.file_source, None)] * len(arg_strings)
        strings: list[str] = []
        out: list[_Where] = []
        prefix = self.prefix_chars
        for string, where in zip(arg_strings, wheres, strict=True):
            if not string or string[0] not in prefix:
                strings.append(string)
                out.append(where)
                continue
            saved = (self.file_source, self.file_argv_index, self.line, self.pending_lines)
            self.file_source, self.file_argv_index = string[1:], where[0]
            self.line, self.pending_lines = 0, []
            self.last_wheres = []
            self.depth += 1
            try:
                expanded = self.orig_read_files([string])
            finally:
                self.depth -= 1
                self.file_source, self.file_argv_index, self.line, self.pending_lines = saved
            found = self.last_wheres
            if len(found) != len(expanded):
                found = [(where[0], string[1:], None)] * len(expanded)
            strings.extend(expanded)
            out.extend(found)
        self.last_wheres = out
        if self.depth == 0:
            self.strings, self.size, self.wheres = strings, len(strings), out
        return strings

    def convert_line(self, arg_line: str) -> list[str]:
        args = list(self.orig_convert(arg_line))
        self.line += 1
        self.pending_lines.extend([(self.file_argv_index, self.file_source, self.line)] * len(args))
        return args

    # -- results -------------------------------------------------------------------------------

    def changes(self, final: dict[str, Any]) -> Changes:
        """What the command line set, from the occurrences noted (see `Changes`).

        A built-in action's occurrence holds its dest's value before it ran: what it set is
        the value the next setter of that dest found, or the final one.
        """
        if self.current is not None:
            self._close()
        first: dict[str, Any] = {}
        last: dict[str, Origin] = {}
        setters: dict[str, list[tuple[Any, Origin]]] = {}

        def note(name: str, old: Any, origin: Origin) -> None:
            if name in last:
                entries = setters.get(name)
                if entries is None:
                    setters[name] = [(first[name], last[name]), (old, origin)]
                else:
                    entries.append((old, origin))
            else:
                first[name] = old
            last[name] = origin

        table, made = self._origins(), dict[int, Origin]()  # (made: the others', each once)
        strings = self.strings
        options = self.clone._option_string_actions
        for occurrence in self.occurrences:
            action, position, events = occurrence
            if position is None:
                origin = CLI_ORIGIN
            else:
                origin = table[position]  # (`_origin`'s common case, inline)
                if origin is None or strings[position] not in options:
                    origin = self._origin(table, position, made)
            if type(occurrence) is tuple:  # a built-in action: `events` is its dest's old value
                name = action.dest
                if name in last:
                    note(name, events, origin)
                else:  # (`note`'s common case, inline)
                    first[name] = events
                    last[name] = origin
                continue
            dest = action.dest
            for name, old, _ in events:
                if name != dest and isinstance(action, argparse._SubParsersAction):
                    # The sub-parser parses on its own: its values are the command line's, but
                    # where in argv each came from is not known.
                    note(name, old, Origin(CLI, "argv", label=f"subcommand {origin.token!r}"))
                else:
                    note(name, old, origin)
        if 0 <= self.new_keys_from < len(final):
            # Keys that appeared while actions ran, through no setattr (vars(ns)[key] = value).
            for name in list(final)[self.new_keys_from :]:
                if name not in last:
                    note(name, MISSING, CLI_ORIGIN)

        cli: dict[str, Any] = {}
        origins: dict[Path, Origin] = {}
        raw: dict[str, Any] = {}
        for name, origin in last.items():
            if name in final:  # (not deleted by an action)
                cli[name] = final[name]
                origins[(name,)] = origin
                old = first[name]
                if old is not MISSING:
                    raw[name] = old
        return cli, origins, raw, setters

    def _origins(self) -> list[Origin | None]:
        """The origins of this command line's tokens, shared by parses of the same one with
        the same table of options (a parser and its copies)."""
        if not self.occurrences:
            return []
        key = tuple(self.strings) if self.wheres is None else (*self.strings, *self.wheres)
        options = self.clone._option_string_actions
        entry = _ORIGIN_TABLES.get(key)
        if entry is None or entry[0] is not options:
            if len(_ORIGIN_TABLES) >= _TABLES_KEPT:
                _ORIGIN_TABLES.clear()
            entry = _ORIGIN_TABLES[key] = (options, [None] * self.size)
        return entry[1]

    def _origin(self, table: list[Origin | None], position: int, made: dict[int, Origin]) -> Origin:
        """The origin of the token at `position`: kept in `table` (all parses') for one of the
        parser's option strings, shown as written; any other ('-kS', an abbreviation) as the
        parser classifies it at this parse, without its secret (kept in `made`, this one's)."""
        string = self.strings[position]
        exact = string in self.clone._option_string_actions
        kept = table[position] if exact else made.get(position)
        if kept is not None:
            return kept
        token = redacted_token(string, self.clone)
        if self.wheres is None:
            origin = Origin(CLI, "argv", None, None, None, position, token)
        else:
            argv_index, source, line = self.wheres[position]
            origin = Origin(CLI, "argv", source, line, None, argv_index, token)
        if exact and token == string:
            table[position] = origin
        else:
            made[position] = origin
        return origin


# (key -> final value, key path -> origin of its last setter, key -> value before the command
#  line, key -> every (value before, origin) of a key set more than once)
Changes = tuple[
    dict[str, Any], dict[Path, Origin], dict[str, Any], dict[str, list[tuple[Any, Origin]]]
]
# Origins are values: parses of the same command line (one per role, say) by a parser and its
# copies share them. Each entry keeps its table of options, and so a parser's actions, alive: at
# most `_TABLES_KEPT` (then all are forgotten), so that a process building parser after parser
# does not grow.
_ORIGIN_TABLES: dict[tuple[Any, ...], tuple[Mapping[str, Any], list[Origin | None]]] = {}
