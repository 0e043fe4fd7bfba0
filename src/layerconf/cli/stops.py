"""The trainer's parser stopping, as problems of the command line.

argparse prints a usage message and exits at its first error, and a ``type=`` callable may
raise what argparse does not catch: `guarded` gives a copy of the parser (its sub-commands'
too) that raises `ParserStop` instead (`layerconf.cli._parser_copies`), and the functions here
turn a stop or a crash into a `Problem` at the argv token it is about; `read_on` then reads
the rest of the command line.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import attrs

from layerconf.cli._parser_copies import guarded, nothing_required
from layerconf.cli.errors import ParserStop

if TYPE_CHECKING:
    import traceback
    from collections.abc import Callable, Iterable, Sequence

    from layerconf.cli._argv_reading import Read
    from layerconf.exceptions import Problem
    from layerconf.presets import Preset

__all__ = [
    "MAX_STOPS",
    "RAISED",
    "crash_problem",
    "crash_text",
    "given_alone",
    "raised_by_layerconf",
    "raised_problem",
    "read_on",
    "stop_behind",
    "stop_problem",
]


# ---------------------------------------------------------------------------------------------
# The parser's stops and crashes, as problems of the command line


def stop_behind(error: BaseException) -> ParserStop | None:
    """The `ParserStop` that `error` was raised while handling (a clean-up's error hid it)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ParserStop):
            return seen
        seen = seen.__context__
    return None


#: What the trainer's parser may raise that is a problem of the command line it read: an
#: exception (a type= callable's), or the trainer's own code leaving (``sys.exit()`` in an
#: action: argparse's own exits raise `ParserStop` in a `guarded` copy). Not KeyboardInterrupt.
RAISED = (Exception, SystemExit, GeneratorExit)

#: How many times `read_on` parses again after the parser stopped: 20 for a command line of up
#: to 1,000 tokens (a few ms each), fewer for a longer one, as argparse before Python 3.13
#: takes a time growing with the square of its options (`_AGAIN`: tokens squared, in all).
MAX_STOPS = 20
_AGAIN = MAX_STOPS * 1000**2


def read_on(
    first: Problem, parser: argparse.ArgumentParser, argv: list[str], preset: Preset
) -> tuple[list[Problem], argparse.Namespace | None]:
    """The `first` problem, where the parser stopped, then those of the rest of the command
    line (argparse stops at its first error: a launch fixed one error at a time is launched
    many times); with them, what it parsed to without those taken out (None: it never did).

    The command line is parsed again without the option the stop is about (its values too),
    with what is required optional once it was missing (`_relaxing`), until it parses (its
    unknown and stray tokens are then reported as a resolution reports them). Reading
    that ends before it parses says so in a note (`_unread`): after `MAX_STOPS` parses; at a
    stop at no token to take out (a sub-command's required option too) or where it stopped
    before; where the trainer's parser raises at no value (what it raised is named); once a
    token left is read otherwise than on the whole command line (`first_drift`: ``go`` a
    value of --list once ``--n x`` is out of ``--list 1 --n x go``), at a stop at it or past
    it, or at none, and when it parses (what it found, or missed, may not be so). Only
    the command line's own problems are reported: what the role file and the rules would
    say of a command line without the options taken out could be wrong. Every argv index the
    problems show (their hints' too) is one of the whole `argv`."""
    import traceback

    from layerconf.cli._argv_reading import first_drift, read_as
    from layerconf.cli._trainer_raised import trainer_raised
    from layerconf.core.namespace import provenance_of
    from layerconf.core.stack import reading_order
    from layerconf.presets.resolve import stray_characters, unknown_tokens
    from layerconf.sources.argv import parse_known_args
    from layerconf.sources.base import ARGV

    problems, stops, last = [first], [first], first  # (stops: each as argparse said it)
    parsed: argparse.Namespace | None = None
    kept = list(range(len(argv)))  # which of `argv` the next parse reads
    taken: set[str] = set()  # the option strings of the options taken out (`_taken_out`)
    reader = parser
    relaxed = 0  # 1: the required options made optional; 2: the required groups too
    reads: list[Read] = []
    raised = None  # what the trainer's parser raised that is at no token, if it did
    for _ in range(min(MAX_STOPS, _AGAIN // max(len(argv), 1) ** 2)):
        if _missing(last.message):
            if relaxed >= _relaxing(last.message):
                break  # (a sub-command's: its parser is not relaxed)
            relaxed = _relaxing(last.message)
            reader = nothing_required(parser, groups=relaxed == 2)
        elif last.argv_index is None:
            break  # (no token to take out)
        if last.argv_index is not None:  # (a required option's misspelling too)
            reads = reads or read_as(argv, parser)  # (the whole command line's, read once)
            kept = _taken_out(argv, kept, last, reads, taken)
        tokens = [argv[index] for index in kept]
        drift = None if len(kept) == len(argv) else first_drift(argv, kept, parser, reads)
        try:
            parsed, unknown = parse_known_args(guarded(reader), tokens)
        except RAISED as error:  # argparse's stop, or a type= callable's own error
            stop = raised_problem(error, reader, tokens, kept)
            if stop is None:
                if raised_by_layerconf(traceback.extract_tb(error.__traceback__)):
                    raise  # a bug of layerconf's own, as when the whole command line was read
                raised = None if drift is not None else trainer_raised(error, reader, argv)
                break
            last = stop
        else:
            if drift is not None:  # (a token read otherwise: what it found may not be so)
                parsed = None
                break
            provenance = provenance_of(parsed)
            redacted = provenance.inputs.get(ARGV) if provenance is not None else None
            problems += unknown_tokens(reader, tokens, unknown, preset, redacted, positions=kept)
            problems += stray_characters(reader, tokens, redacted, positions=kept)
            break
        if drift is not None and _after(last, drift):
            break  # (found where the tokens left are read otherwise than on the whole)
        if last in stops:
            break  # (no nearer to the end: it stopped where it stopped before)
        stops.append(last)
        shown = _without_taken(last, taken)
        if shown is not None:
            problems.append(shown)
    if parsed is None:
        problems.append(_unread(argv, problems, raised))
    return sorted(problems, key=reading_order), parsed


def _relaxing(message: str) -> int:
    """How far to make the parser's requirements optional once argparse says `message` of what
    is missing: 1, the required options (argparse reports them first); 2, the required groups
    too."""
    return 1 if message.startswith(_REQUIRED) else 2


def _after(problem: Problem, drift: int) -> bool:
    """Whether `problem` may be one of the command line with tokens taken out only: at or past
    `drift`, its first token read otherwise than on the whole (`first_drift`), or at none."""
    at = None if _missing(problem.message) else problem.argv_index
    return at is None or at >= drift


def _taken_out(
    argv: list[str], kept: list[int], problem: Problem, reads: list[Read], taken: set[str]
) -> list[int]:
    """`kept` without the tokens `problem` is about (`_alike`, each with its option's: the
    whole command line's `reads`); their options' option strings, and a refused positional's
    name, added to `taken` (given, so not missing: `_without_taken`)."""
    from layerconf.cli._argv_reading import read_at

    left: set[int] = set()
    for at in _alike(argv, kept, problem):
        read = read_at(argv, at, reads)
        left.update(read.tokens)
        taken.update(o for action in read.actions for o in action.option_strings)
        if not read.option:  # (named as argparse lists a missing one: "argument b: ...")
            taken.add(problem.message.partition("argument ")[2].partition(": ")[0])
    return [index for index in kept if index not in left]


def _alike(argv: list[str], kept: list[int], problem: Problem) -> list[int]:
    """The tokens to take out for `problem` (at one of `kept`): its own; for an abbreviation
    of several options, each one written alike, which its problem names too (argparse would
    stop at each in turn, and each parse again reads every token)."""
    index = problem.argv_index
    assert index is not None
    if not problem.message.startswith(_AMBIGUOUS):
        return [index]
    return [at for at in kept if argv[at] == argv[index]]


def _unread(argv: list[str], problems: list[Problem], raised: str | None) -> Problem:
    """The note that the command line was not read past the `problems` found (and, read on
    without them, the trainer's parser `raised` what is at no token, if it did)."""
    from layerconf.exceptions import Problem

    many = len(problems) > 1
    message = f"the command line ({len(argv):,} tokens) was not read past its first " + (
        f"{len(problems)} errors" if many else "error"
    )
    if raised is not None:
        message += f": read on without {'them' if many else 'it'}, {raised}"
    return Problem(
        message,
        layer="cli",
        hint=f"correct {'these' if many else 'it'} and check again",
        severity="info",
    )


_REQUIRED = "the following arguments are required"
_ONE_REQUIRED = "one of the arguments "  # (a required group: "... --a --b is required")


def _missing(message: str) -> bool:
    """Whether argparse's `message` says required options (or a required group) are missing."""
    return message.startswith(_REQUIRED) or (
        message.startswith(_ONE_REQUIRED) and message.endswith(" is required")
    )


def _without_taken(problem: Problem, taken: set[str]) -> Problem | None:
    """`problem`, where it says required options are missing, without those of the options
    `taken` out of the command line after an error of their value (``--n q``: given, not
    missing); None when it names only those."""
    if not problem.message.startswith(_REQUIRED):
        return problem
    listed = problem.message.partition(": ")[2].split(", ")
    missing = [names for names in listed if taken.isdisjoint(names.split("/"))]
    if len(missing) == len(listed):
        return problem
    if not missing:
        return None
    return attrs.evolve(problem, message=f"{_REQUIRED}: {', '.join(missing)}")


def given_alone(parser: argparse.ArgumentParser, argv: list[str], dest: str) -> object:
    """What `parser` reads for `dest` from the last option of it on `argv` (with its values),
    read alone; None if none is given or it does not parse alone. The role file a command
    line names, when the whole of it never parsed (`read_on`)."""
    from layerconf.cli._argv_reading import options_given, read_as
    from layerconf.sources.argv import parse_known_args

    options = [option for a in parser._actions if a.dest == dest for option in a.option_strings]
    found = options_given(read_as(argv, parser), options)
    if not found:
        return None
    tokens = [argv[index] for index in found[-1].tokens]
    try:
        parsed, _ = parse_known_args(guarded(nothing_required(parser)), tokens)
    except RAISED:  # (a stop, a type= callable's error: no value to read)
        return None
    return getattr(parsed, dest, None)


def stop_problem(
    message: str | None,
    parser: argparse.ArgumentParser,
    argv: list[str],
    positions: Sequence[int] | None = None,
) -> Problem:
    """A problem for argparse's own error message, at the argv token it is about.

    `positions`: where each token of `argv` is on the command line the problem names (`argv`
    what is left of it once tokens were taken out: `read_on`), else its own."""
    import re

    from layerconf.core.suggest import did_you_mean_hint
    from layerconf.exceptions import Problem
    from layerconf.presets.resolve import stray_of

    where: Sequence[int] = range(len(argv)) if positions is None else positions
    if message is None:  # --help, --version, or an action that exits
        return _exit_problem(parser, argv, where)
    index = None
    hint = None
    named = re.match(r"argument (\S+?): ", message)
    if named is not None:
        options = named.group(1).split("/")
        value = re.search(r"(?:value|choice): '(.*?)'", message)
        index = _option_index(argv, options, value and value.group(1), parser)
        action = next(
            (
                a
                for a in parser._actions
                if set(options) <= set(a.option_strings)
                or (not a.option_strings and argparse._get_action_name(a) == named.group(1))
            ),
            None,
        )
        if value is not None and action is not None and action.choices is not None:
            names = [str(getattr(choice, "name", choice)) for choice in action.choices]
            hint = did_you_mean_hint(value.group(1), names)
        stray = None if index is None else stray_of(argv[index])
        if stray is not None and index is not None:  # ('adam' + CR: not a misspelling)
            what, why, fix = stray
            hint = f"argv[{where[index]}] {what}: {why}; {fix}"
    elif message.startswith(_REQUIRED):
        index, hint = _meant_as_required(message, parser, argv)
    elif _missing(message):
        hint = "add one of them to the command line"
    elif message.startswith(_AMBIGUOUS):
        index, message, hint = _ambiguous(message, parser, argv, where)
    at = None if index is None else where[index]
    return Problem(message, layer="cli", argv_index=at, hint=hint)


_AMBIGUOUS = "ambiguous option: "


def _ambiguous(
    message: str, parser: argparse.ArgumentParser, argv: list[str], where: Sequence[int]
) -> tuple[int | None, str, str]:
    """Where the abbreviation argparse could not choose for is (``ambiguous option: --l could
    match --lr, --lr-decay-style``: the first token it quotes, before any ``--``), the
    message as shown, and what to write: the options in full. A value written in the token
    that a secret flag would take is not quoted, however short (``--hf=<redacted>``); the
    options it could match are `listed`, and the tokens written alike after it named
    (`read_on` takes them out with it)."""
    from layerconf.core.secrets import redacted_argv
    from layerconf.presets.resolve import listed

    written, _, matches = message[len(_AMBIGUOUS) :].partition(" could match ")
    end = argv.index("--") if "--" in argv else len(argv)
    quotes = _quoting(argv, parser, written)
    index = next((index for index in range(end) if quotes(index, 0)), None)
    if index is None:
        return None, message, f"write one of {matches} in full"
    token = argv[index]
    names = matches.split(", ")
    message = f"{_AMBIGUOUS}{redacted_argv([token], parser)[0]} could match {listed(names)}"
    others = [f"argv[{where[at]}]" for at in range(index + 1, end) if argv[at] == token]
    if others:
        message += f"; so do {listed(others)}"
    many = listed(names) != matches
    return index, message, "write the option in full" if many else f"write one of {matches} in full"


def _meant_as_required(
    message: str, parser: argparse.ArgumentParser, argv: list[str]
) -> tuple[int | None, str]:
    """Where a missing required option was written otherwise, with what to write (the flag
    quoted, never a value after its ``=``): first a token that is the option with what a
    file's encoding leaves on it (``'--rollout-batch-size\\r'``, a byte-order mark before
    it), then a close misspelling (``--rollout-batch-sise``) that is none of the parser's own
    options; else no index, and "add them to the command line"."""
    from layerconf.core.suggest import did_you_mean
    from layerconf.presets.resolve import stray_of

    listed = message.partition(": ")[2].split(", ")
    required = [name for names in listed for name in names.split("/") if name.startswith("-")]
    end = argv.index("--") if "--" in argv else len(argv)
    flags = [(index, token.partition("=")[0]) for index, token in enumerate(argv[:end])]
    for index, flag in flags:
        stray = stray_of(flag)
        if stray is not None and flag.strip("\r\ufeff") in required:
            what, why, hint = stray
            return index, f"{flag!r} {what}: {why}; {hint}"
    owned = parser._option_string_actions
    for index, flag in flags:
        if flag.startswith("-") and flag not in owned:
            meant = did_you_mean(flag, required, cutoff=0.85)
            if meant is not None:
                return index, f"{flag!r} is not {meant}: write {meant}"
    return None, "add them to the command line"


def _exit_problem(
    parser: argparse.ArgumentParser, argv: list[str], where: Sequence[int]
) -> Problem:
    """The problem of an option that makes the trainer print and exit (--help, --version),
    at its index in `where` (the whole command line's of each token of `argv`)."""
    from layerconf.exceptions import Problem

    stoppers = [
        option
        for action in parser._actions
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction))
        for option in action.option_strings
    ]
    index = _last_option_index(argv, stoppers, parser)
    token = argv[index] if index is not None else "an option"
    return Problem(
        f"{token if index is None else repr(token)} makes the trainer print and exit "
        "instead of training",
        layer="cli",
        argv_index=None if index is None else where[index],
        hint="remove it",
    )


def _last_option_index(
    argv: list[str], options: Iterable[str], parser: argparse.ArgumentParser
) -> int | None:
    """Where the last of `options` is in `argv`, however written (`options_given`)."""
    from layerconf.cli._argv_reading import options_given, read_as

    found = options_given(read_as(argv, parser), options)
    return found[-1].tokens[0] if found else None


def _option_index(
    argv: list[str],
    options: Iterable[str],
    value: str | None,
    parser: argparse.ArgumentParser,
) -> int | None:
    """Where argparse stopped on `value` (as its message quotes it: `_quoting`) of one of
    `options`: the first of them given that value (argparse stops at the first it cannot
    take; of a secret's, quoted alike, the first it refuses: `_refused_alone`), the value's
    own token; else the last of them. A positional's value (a sub-command's name) is the
    first positional that is that value."""
    from layerconf.cli._argv_reading import options_given, read_as
    from layerconf.core.secrets import REDACTED

    reads = read_as(argv, parser)
    found = options_given(reads, options)
    if value is None:
        return found[-1].tokens[0] if found else None
    quotes = _quoting(argv, parser, value)
    given: list[tuple[Read, int]] = []  # (an option of them, a token of its that quotes value)
    for read in found:
        at = read.tokens[0]
        if read.attached is not None and quotes(at, len(argv[at]) - len(read.attached)):
            given.append((read, at))
        given += ((read, index) for index in read.tokens[1:] if quotes(index, 0))
    if len(given) > 1 and REDACTED in value:
        refused: dict[int, bool] = {}  # (an option's values are parsed once, not once each)
        for read, index in given:
            if id(read) not in refused:
                refused[id(read)] = _refused_alone(argv, read)
            if refused[id(read)]:
                return index
    if given:
        return given[0][1]
    if found:
        return found[-1].tokens[0]
    positionals = (read.tokens[0] for read in reads if not read.option)
    return next((index for index in positionals if quotes(index, 0)), None)


def _refused_alone(argv: list[str], read: Read) -> bool:
    """Whether its parser refuses the option `read` on a command line of its own, nothing
    required: which of a secret's values, quoted alike, argparse stopped at."""
    from layerconf.sources.argv import parse_known_args

    try:
        parse_known_args(guarded(nothing_required(read.parser)), [argv[i] for i in read.tokens])
    except RAISED:  # (a stop, or a type= callable's own error)
        return True
    return False


def _quoting(
    argv: list[str], parser: argparse.ArgumentParser, value: str
) -> Callable[[int, int], bool]:
    """Whether argparse's message, quoting `value`, quotes ``argv[index][start:]``: its repr,
    quotes off; or, as its message is scrubbed of the command line's secrets, the same of
    the command line with each secret value `REDACTED` (`redacted_argv`: that token's form,
    never the secret, is matched)."""
    from layerconf.core.secrets import REDACTED, redacted_argv

    shown = redacted_argv(argv, parser) if REDACTED in value else argv

    def quotes(index: int, start: int) -> bool:
        return any(
            value in (text, repr(text)[1:-1])
            for text in {argv[index][start:], shown[index][start:]}
        )

    return quotes


def raised_problem(
    error: BaseException,
    parser: argparse.ArgumentParser,
    argv: list[str],
    positions: Sequence[int] | None = None,
) -> Problem | None:
    """The problem of what parsing `argv` with (a `guarded` copy of) `parser` raised: its stop
    (one that an error while cleaning up hid too), or a type= callable's error at the value
    it refused; None if it is at no value (`crash_text` says what it was). `positions` as
    for `stop_problem`."""
    hidden = stop_behind(error)
    if hidden is not None:
        return stop_problem(hidden.message, parser, argv, positions)
    return crash_problem(error, argv, parser, positions)


def crash_text(error: BaseException, argv: list[str], parser: argparse.ArgumentParser) -> str:
    """One line for an exception the trainer's parser raised while resolving `argv`: what,
    where, no secret of `argv` quoted (layerconf's own are reported as its bugs, never
    blamed on the trainer: `resolve`)."""
    from layerconf.cli._trainer_raised import trainer_raised

    return (
        f"{trainer_raised(error, parser, argv)}; run the trainer with the same command line "
        "to see the traceback"
    )


def raised_by_layerconf(frames: list[traceback.FrameSummary]) -> bool:
    """Whether the innermost frame that is not the standard library's is layerconf's own
    (argparse, which runs the trainer's actions and types, counts as the trainer's)."""
    import os
    import sysconfig

    from layerconf.core.rules import PACKAGE_DIR

    standard = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
    for frame in reversed(frames):
        path = os.path.abspath(frame.filename)
        if path.startswith(PACKAGE_DIR):
            return True
        if path == os.path.abspath(argparse.__file__) or not path.startswith(standard):
            return False
    return False


def crash_problem(
    error: BaseException,
    argv: list[str],
    parser: argparse.ArgumentParser,
    positions: Sequence[int] | None = None,
) -> Problem | None:
    """The problem of an exception argparse let through from a type callable, or None. The
    value and the exception's message are quoted as the secret policy lets them be, as
    argparse's own messages are (``invalid value '<redacted>'``); `positions` as for
    `stop_problem`."""
    import traceback

    from layerconf.cli._trainer_raised import holds_secret, secret_described
    from layerconf.core._secret_text import command_line_secrets
    from layerconf.core.secrets import SECRETS
    from layerconf.core.suggest import did_you_mean_hint
    from layerconf.exceptions import Problem

    for frame, _ in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_name != "_get_value" or frame.f_code.co_filename != argparse.__file__:
            continue
        action = frame.f_locals.get("action")
        token = frame.f_locals.get("arg_string")
        if not isinstance(action, argparse.Action) or not isinstance(token, str):
            continue
        name = argparse._get_action_name(action) or action.dest
        index = _option_index(argv, action.option_strings, token, parser)
        where: Sequence[int] = range(len(argv)) if positions is None else positions
        secrets = command_line_secrets(argv, parser)
        secret = holds_secret(token, secrets)
        if action.choices is not None:
            names = [getattr(choice, "name", str(choice)) for choice in action.choices]
            meant = None if secret else did_you_mean_hint(token, names)
            hint = meant or "choose from " + ", ".join(repr(n) for n in names)
        else:
            hint = "check the value"
        shown = SECRETS.placeholder if secret else token
        return Problem(
            f"argument {name}: invalid value {shown!r} ({secret_described(error, secrets)})",
            key=action.dest,
            layer="cli",
            argv_index=None if index is None else where[index],
            hint=hint,
        )
    return None
