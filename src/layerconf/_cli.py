"""The ``layerconf`` command: explain, show, diff, check and schema for a trainer's command line.

Every command but ``schema`` takes the trainer's own command line after ``--``, exactly as it
would be launched, and resolves it per role with `resolve_roles` and a parser: the bundled
profile (``--profile``) or the user's own (``--parser MODULE:ATTR``).

Exit codes: 0 success; 1 the configuration has problems (``check``), does not resolve, or a
key is unknown (``explain``); 2 a mistake in the layerconf command line or in what it names
(no ``--``, an unknown profile, a ``--parser`` that cannot be imported). Tool errors are one
line on stderr, never a traceback.

Importing this module costs nothing beyond argparse: each command imports what it needs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TextIO

if TYPE_CHECKING:
    from types import TracebackType

    from layerconf._namespace import Namespace
    from layerconf._records import Origin, Setting
    from layerconf.exceptions import Problem

    # A table cell: its text, and a colour applied after padding (alignment ignores ANSI).
    _Cell = tuple[str, Callable[[str], str] | None]

__all__ = ["jsonable", "main", "role_file_schema"]

PROG = "layerconf"
_DEFAULT_PROFILE = "megatron-slime"

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2

_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# What Python's float() and int() accept from a string (YAML 1.1 reads 1e-5 as one): the
# schema lets such strings through for float and int dests, since layerconf converts them.
_DIGITS = "[0-9](?:_?[0-9])*"
FLOAT_PATTERN = (
    rf"^\s*[+-]?(?:(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?"
    r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])\s*$"
)
INT_PATTERN = rf"^\s*[+-]?{_DIGITS}\s*$"


# ---------------------------------------------------------------------------------------------
# Errors of the tool itself


class _UsageError(Exception):
    """A mistake in the layerconf command line or in what it names: one line, exit 2."""

    def __init__(self, message: str, prog: str = PROG, *, help_hint: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.prog = prog
        self.help_hint = help_hint

    def __str__(self) -> str:
        text = f"{self.prog}: error: {self.message}"
        if self.help_hint:
            text += f" (see '{self.prog} --help')"
        return text


class _CommandParser(argparse.ArgumentParser):
    """layerconf's own parser: a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(message, self.prog, help_hint=True)


class _ParserStop(Exception):
    """The trainer's parser wanted to stop the process: a usage error, or --help / --version.

    `message` is argparse's error message; None when the parser exited on its own (help).
    """

    def __init__(self, message: str | None) -> None:
        super().__init__(message)
        self.message = message


# ---------------------------------------------------------------------------------------------
# The commands' own command lines

_PARSER_OPTIONS = "[--profile NAME | --parser MODULE:ATTR]"
_TOP_USAGE = f"{PROG} [-h] [--version] COMMAND [OPTIONS] -- ARGV..."


class _Command(NamedTuple):
    """One subcommand: its name, usage, help texts, options, and what runs it."""

    name: str
    usage: str
    summary: str
    description: str
    epilog: str
    options: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, list[str]], int]
    takes_argv: bool = True

    def parser(self) -> argparse.ArgumentParser:
        parser = _CommandParser(
            prog=f"{PROG} {self.name}",
            usage=self.usage,
            description=self.description,
            epilog=self.epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            allow_abbrev=False,
        )
        source = parser.add_mutually_exclusive_group()
        source.add_argument(
            "--profile",
            metavar="NAME",
            default=_DEFAULT_PROFILE,
            help=f"a bundled parser profile (default: {_DEFAULT_PROFILE})",
        )
        source.add_argument(
            "--parser",
            metavar="MODULE:ATTR",
            help="your trainer's parser: an argparse.ArgumentParser, or a function returning "
            "one (MODULE is imported from the current directory too, or given as a .py path)",
        )
        self.options(parser)
        return parser


def _role_option(parser: argparse.ArgumentParser) -> None:
    from layerconf._roles import SLIME

    parser.add_argument(
        "--role",
        metavar="ROLE",
        choices=SLIME.roles,
        help="only this role: " + " or ".join(SLIME.roles),
    )


def _explain_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "keys",
        nargs="+",
        metavar="KEY",
        help="a dest name such as lr, or a dotted path into a mapping value",
    )
    _role_option(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def _show_options(parser: argparse.ArgumentParser) -> None:
    _role_option(parser)
    parser.add_argument(
        "--changed", action="store_true", help="only the values that do not come from defaults"
    )
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print a JSON object")
    form.add_argument(
        "--yaml", action="store_true", help="print YAML, each value's origin as a comment"
    )


def _diff_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def _check_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strict", action="store_true", help="fail on warnings too")
    parser.add_argument("--json", action="store_true", help="print a JSON list of the problems")


def _no_options(parser: argparse.ArgumentParser) -> None:
    del parser


def _usage(name: str, rest: str = "") -> str:
    """A command's usage, its own options on a second line aligned as argparse aligns them."""
    text = f"{PROG} {name} [-h] {_PARSER_OPTIONS}"
    if rest:
        text += "\n" + " " * len(f"usage: {PROG} {name} ") + rest
    return text


def _commands() -> dict[str, _Command]:
    return {
        command.name: command
        for command in (
            _Command(
                "explain",
                _usage("explain", "[--role ROLE] [--json] KEY [KEY ...] -- ARGV..."),
                "where a value came from, and what it shadowed",
                "For each role and KEY: the final value, where it came from (file:line:col, "
                "argv index\nand token, rule, default) and every value it shadowed, newest "
                "first.",
                "examples:\n"
                f"  {PROG} explain lr save -- --rollout-batch-size 32 --lr 2e-6 "
                "--megatron-config-path ppo.yaml\n"
                f"  {PROG} explain kl_coef --role critic --json -- $(cat launch_argv.txt)\n\n"
                "exit status: 0 explained; 1 an unknown KEY or a configuration that does not "
                "resolve;\n2 a usage error.",
                _explain_options,
                _run_explain,
            ),
            _Command(
                "show",
                _usage("show", "[--role ROLE] [--changed] [--json | --yaml] -- ARGV..."),
                "the resolved configuration of each role, with origins",
                "The resolved configuration of each role: every key, its value and where it "
                "came from.",
                "examples:\n"
                f"  {PROG} show --changed -- $(cat launch_argv.txt)\n"
                f"  {PROG} show --role critic --yaml -- $(cat launch_argv.txt) > critic.yaml\n\n"
                "exit status: 0 shown; 1 a configuration that does not resolve; 2 a usage "
                "error.",
                _show_options,
                _run_show,
            ),
            _Command(
                "diff",
                _usage("diff", "[--json] -- ARGV..."),
                "the keys whose values differ between actor and critic",
                "The keys whose values differ between the roles, each side with its origin. "
                "A value of\nanother type counts as different (the critic's kl_coef 0 against "
                "the actor's 0.0).",
                "example:\n"
                f"  {PROG} diff -- $(cat launch_argv.txt)\n\n"
                "exit status: 0 whether or not the roles differ; 1 a configuration that does "
                "not resolve;\n2 a usage error.",
                _diff_options,
                _run_diff,
            ),
            _Command(
                "check",
                _usage("check", "[--strict] [--json] -- ARGV..."),
                "every problem of the configuration, as FILE:LINE:COL lines",
                "Every problem the resolution finds, all at once, one a line on stdout:\n"
                "  FILE:LINE:COL: error|warning: message (hint)\n"
                "  argv[N]: error|warning: message (hint)\n"
                "Notes (arguments the parser does not own, passed on to SGLang) are 'note:' "
                "lines\nand never fail the check. A summary line ends the report on stderr.",
                "example:\n"
                f"  {PROG} check --strict -- $(cat launch_argv.txt)\n\n"
                "exit status: 0 clean; 1 errors (or warnings, with --strict); 2 a usage error.",
                _check_options,
                _run_check,
            ),
            _Command(
                "schema",
                _usage("schema"),
                "a JSON Schema for role files, for editors",
                "A JSON Schema (draft 2020-12) for the role files of a parser: every dest with "
                "its type,\nchoices, default and help, unknown keys rejected, so that an editor "
                "with\nyaml-language-server completes and validates role files as they are "
                "typed.",
                "example:\n"
                f"  {PROG} schema > megatron-config.schema.json\n"
                "  then, on the first line of a role file:\n"
                "  # yaml-language-server: $schema=megatron-config.schema.json",
                _no_options,
                _run_schema,
                False,
            ),
        )
    }


def _top_parser(commands: Mapping[str, _Command]) -> argparse.ArgumentParser:
    listing = "\n".join(f"  {c.name:<9}{c.summary}" for c in commands.values())
    return _CommandParser(
        prog=PROG,
        usage=_TOP_USAGE,
        description="Resolve a training job's configuration per role, and say where every "
        "value came from.\n\ncommands:\n" + listing,
        epilog=f"Give the trainer's command line after '--', as it would be launched.\n"
        f"'{PROG} COMMAND --help' describes each command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
    )


# ---------------------------------------------------------------------------------------------
# main


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``layerconf`` command on `argv` (default ``sys.argv[1:]``); return its exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(arguments)
    except _UsageError as error:
        _print_error(str(error))
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (`layerconf show ... | head`): stop quietly, as cat does.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_PROBLEMS
    except KeyboardInterrupt:
        return 130


def _main(arguments: list[str]) -> int:
    if "--" in arguments:
        split = arguments.index("--")
        own, trainer, separated = arguments[:split], arguments[split + 1 :], True
    else:
        own, trainer, separated = arguments, [], False
    commands = _commands()
    if not own or own[0] in ("-h", "--help"):
        top = _top_parser(commands)
        if not own:
            sys.stderr.write(top.format_usage())
            raise _UsageError("choose a command: " + ", ".join(commands), help_hint=True)
        top.print_help()
        return EXIT_OK
    if own[0] == "--version":
        from layerconf import __version__

        print(f"{PROG} {__version__}")
        return EXIT_OK
    name = own[0]
    command = commands.get(name)
    if command is None:
        from layerconf._suggest import suggestion

        what = "option" if name.startswith("-") else "command"
        raise _UsageError(
            f"unknown {what} {name!r}{suggestion(name, commands)} (commands: "
            + ", ".join(commands)
            + ")"
        )
    parser = command.parser()
    try:
        options = parser.parse_intermixed_args(own[1:])
    except SystemExit as stop:  # --help
        return int(stop.code or 0)
    prog = f"{PROG} {name}"
    if command.takes_argv and not separated:
        raise _UsageError(
            "give the trainer's command line after '--', as it would be launched "
            f"(e.g. {prog} ... -- --lr 1e-6 --megatron-config-path ppo.yaml)",
            prog,
        )
    if not command.takes_argv and separated:
        raise _UsageError(f"{name} takes no trainer command line: remove '--' and after", prog)
    return command.run(options, trainer)


# ---------------------------------------------------------------------------------------------
# The trainer's parser


def _trainer_parser(options: argparse.Namespace) -> argparse.ArgumentParser:
    if options.parser is not None:
        return _import_parser(options.parser)
    from layerconf._profile import load_profile
    from layerconf.exceptions import UnknownProfileError

    try:
        return load_profile(options.profile)
    except UnknownProfileError as error:
        raise _UsageError(str(error)) from None


def _import_parser(spec: str) -> argparse.ArgumentParser:
    """The parser named by ``MODULE:ATTR`` (ATTR a parser, or a function returning one)."""
    import importlib

    module_name, colon, attribute = spec.rpartition(":")
    if not colon or not module_name or not attribute:
        raise _UsageError(f"--parser takes MODULE:ATTR, such as train:get_parser (got {spec!r})")
    try:
        if module_name.endswith(".py") or "/" in module_name or os.sep in module_name:
            module = _import_file(module_name)
        else:
            # As `python -m` would: the current directory first.
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
    except _UsageError:
        raise
    except ModuleNotFoundError as error:
        if error.name is not None and module_name.startswith(error.name):
            raise _UsageError(
                f"--parser: no module named {module_name!r} "
                "(looked in the current directory and on sys.path)"
            ) from None
        raise _UsageError(f"--parser: importing {module_name!r} failed: {error}") from None
    except (Exception, SystemExit) as error:
        raise _UsageError(
            f"--parser: importing {module_name!r} raised {_describe(error)}"
        ) from None

    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            from layerconf._suggest import suggestion

            names = [name for name in dir(target) if not name.startswith("_")]
            raise _UsageError(
                f"--parser: {module_name!r} has no attribute {attribute!r}{suggestion(part, names)}"
            ) from None
    if isinstance(target, argparse.ArgumentParser):
        return target
    if not callable(target):
        raise _UsageError(
            f"--parser: {spec} is neither an argparse.ArgumentParser nor a function returning "
            f"one (it is the {type(target).__name__} {target!r:.60})"
        )
    try:
        made = target()
    except (Exception, SystemExit) as error:
        raise _UsageError(f"--parser: {spec}() raised {_describe(error)}") from None
    if not isinstance(made, argparse.ArgumentParser):
        raise _UsageError(
            f"--parser: {spec}() returned the {type(made).__name__} {made!r:.60}, not an "
            "argparse.ArgumentParser"
        )
    return made


def _import_file(path: str) -> Any:
    import importlib.util

    if not os.path.isfile(path):
        raise _UsageError(f"--parser: no such file: {path}")
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)  # as running the script would: its siblings import
    name = os.path.splitext(os.path.basename(path))[0]
    found = importlib.util.spec_from_file_location(name, path)
    if found is None or found.loader is None:
        raise _UsageError(f"--parser: cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module
    found.loader.exec_module(module)
    return module


def _describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _guarded(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """A copy of `parser` that raises `_ParserStop` instead of printing and exiting.

    The copy shares the actions; only its own error/exit/print methods are replaced, so the
    user's parser is left as it was.
    """
    import copy

    guarded = copy.copy(parser)

    def error(message: str) -> NoReturn:
        raise _ParserStop(message)

    def stop(status: int = 0, message: str | None = None) -> NoReturn:
        raise _ParserStop((message or "").strip() or None)

    def quiet(*args: object, **kwargs: object) -> None:
        del args, kwargs

    for name, replacement in (
        ("error", error),
        ("exit", stop),
        ("print_help", quiet),
        ("print_usage", quiet),
        ("_print_message", quiet),
    ):
        setattr(guarded, name, replacement)
    return guarded


# ---------------------------------------------------------------------------------------------
# Resolving


class _Outcome:
    """The namespaces of a resolution (None if it failed) and every problem it found."""

    def __init__(self, roles: dict[str, Namespace] | None, problems: Iterable[Problem]) -> None:
        self.roles = roles
        self.problems = tuple(_in_order(problems))

    @property
    def errors(self) -> int:
        return sum(problem.severity == "error" for problem in self.problems)

    @property
    def warnings(self) -> int:
        return sum(problem.severity == "warning" for problem in self.problems)

    @property
    def notes(self) -> int:
        return sum(problem.severity == "info" for problem in self.problems)


def _resolve(parser: argparse.ArgumentParser, argv: list[str]) -> _Outcome:
    import warnings

    from layerconf._namespace import notices
    from layerconf._roles import resolve_roles
    from layerconf.exceptions import ConfigError, LayerconfError, LayerconfWarning

    try:
        with warnings.catch_warnings():
            # Kept in the notices and reported from there.
            warnings.simplefilter("ignore", LayerconfWarning)
            roles = resolve_roles(_guarded(parser), argv)
    except ConfigError as error:
        return _Outcome(None, error.problems)
    except _ParserStop as stop:
        return _Outcome(None, [_stop_problem(stop.message, parser, argv)])
    except LayerconfError as error:
        raise _UsageError(str(error)) from None
    except Exception as error:
        # A stop that an error while cleaning up hid; or a type= callable that argparse does
        # not catch (an enum name: KeyError): the real trainer would stop with a traceback,
        # here it is a problem of the command line.
        hidden = _stop_behind(error)
        if hidden is not None:
            return _Outcome(None, [_stop_problem(hidden.message, parser, argv)])
        problem = _crash_problem(error, argv)
        if problem is None:
            raise
        return _Outcome(None, [problem])
    found = dict.fromkeys(problem for namespace in roles.values() for problem in notices(namespace))
    return _Outcome(roles, list(found))


def _in_order(problems: Iterable[Problem]) -> list[Problem]:
    """Errors and warnings in the order found (the file's order), then the notes."""
    listed = list(problems)
    return [p for p in listed if p.severity != "info"] + [p for p in listed if p.severity == "info"]


def _stop_behind(error: BaseException) -> _ParserStop | None:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, _ParserStop):
            return seen
        seen = seen.__context__
    return None


def _stop_problem(message: str | None, parser: argparse.ArgumentParser, argv: list[str]) -> Problem:
    """A problem for argparse's own error message, at the argv token it is about."""
    import re

    from layerconf._suggest import suggestion
    from layerconf.exceptions import Problem

    if message is None:  # --help, --version, or an action that exits
        stoppers = [
            option
            for action in parser._actions
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction))
            for option in action.option_strings
        ]
        index = _last_option_index(argv, stoppers)
        token = argv[index] if index is not None else "an option"
        return Problem(
            f"{token if index is None else repr(token)} makes the trainer print and exit "
            "instead of training",
            layer="cli",
            argv_index=index,
            hint="remove it",
        )
    index = None
    hint = None
    named = re.match(r"argument (\S+?): ", message)
    if named is not None:
        options = named.group(1).split("/")
        index = _last_option_index(argv, options)
        value = re.search(r"(?:value|choice): '(.*?)'", message)
        if index is not None and value is not None:
            index = _value_index(argv, index, value.group(1))
        action = next((a for a in parser._actions if set(options) <= set(a.option_strings)), None)
        if value is not None and action is not None and action.choices is not None:
            names = [str(getattr(choice, "name", choice)) for choice in action.choices]
            hint = suggestion(value.group(1), names).removeprefix("; ") or None
    elif message.startswith("the following arguments are required"):
        hint = "add them to the command line"
    return Problem(message, layer="cli", argv_index=index, hint=hint)


def _last_option_index(argv: list[str], options: Iterable[str]) -> int | None:
    """Where the last of `options` (or ``--option=value``) is in `argv`, before any ``--``."""
    names = [option for option in options if option.startswith("-")]
    end = argv.index("--") if "--" in argv else len(argv)
    for index in range(end - 1, -1, -1):
        token = argv[index]
        if token in names or any(token.startswith(name + "=") for name in names):
            return index
    return None


def _value_index(argv: list[str], option: int, value: str) -> int:
    """Where `value` follows the option at `option` (the option itself for ``--x=value``)."""
    for index in range(option, len(argv)):
        if argv[index] == value or (index == option and argv[index].endswith("=" + value)):
            return index
    return option


def _crash_problem(error: Exception, argv: list[str]) -> Problem | None:
    """The problem of an exception argparse let through from a type callable, or None."""
    import traceback

    from layerconf._suggest import suggestion
    from layerconf.exceptions import Problem

    tb: TracebackType | None = error.__traceback__
    for frame, _ in traceback.walk_tb(tb):
        if frame.f_code.co_name != "_get_value" or frame.f_code.co_filename != argparse.__file__:
            continue
        action = frame.f_locals.get("action")
        token = frame.f_locals.get("arg_string")
        if not isinstance(action, argparse.Action) or not isinstance(token, str):
            continue
        name = argparse._get_action_name(action) or action.dest
        index = _last_option_index(argv, action.option_strings)
        if index is not None:
            index = _value_index(argv, index, token)
        if action.choices is not None:
            names = [getattr(choice, "name", str(choice)) for choice in action.choices]
            hint = suggestion(token, names).removeprefix("; ") or "choose from " + ", ".join(
                repr(n) for n in names
            )
        else:
            hint = "check the value"
        return Problem(
            f"argument {name}: invalid value {token!r} ({_describe(error)})",
            key=action.dest,
            layer="cli",
            argv_index=index,
            hint=hint,
        )
    return None


# ---------------------------------------------------------------------------------------------
# Output


_LAYER_COLOURS: Mapping[str, str] = {
    "default": "2",
    "argv": "36",
    "file": "32",
    "rule": "35",
    "runtime": "33",
}
_SEVERITY_COLOURS: Mapping[str, str] = {"error": "1;31", "warning": "1;33", "note": "1;36"}


class _Paint:
    """ANSI colour for one stream: only on a terminal, never with NO_COLOR set (any value)."""

    def __init__(self, stream: TextIO) -> None:
        self.on = _colour_wanted(stream)

    def __call__(self, text: str, code: str | None) -> str:
        if not self.on or not code or not text:
            return text
        return f"\033[{code}m{text}\033[0m"

    def layer(self, kind: str) -> Callable[[str], str]:
        """A painter for the name of a layer of `kind` (default, argv, file, rule)."""
        code = _LAYER_COLOURS.get(kind)
        return lambda text: self(text, code)

    def severity(self, text: str) -> str:
        return self(text, _SEVERITY_COLOURS.get(text))


def _colour_wanted(stream: TextIO) -> bool:
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


def _table(rows: Sequence[Sequence[_Cell]], *, indent: str = "", cap: int = 72) -> list[str]:
    """Aligned rows; a cell longer than `cap` does not widen its column (it overflows)."""
    if not rows:
        return []
    columns = max(len(row) for row in rows)
    widths = [0] * columns
    for row in rows:
        for index, (text, _) in enumerate(row):
            if len(text) <= cap:
                widths[index] = max(widths[index], len(text))
    lines = []
    for row in rows:
        parts = []
        last = max((i for i, (text, _) in enumerate(row) if text), default=-1)
        for index, (text, paint) in enumerate(row[: last + 1]):
            padded = text if index == last else text.ljust(widths[index])
            if paint is not None and text:
                padded = paint(text) + padded[len(text) :]
            parts.append(padded)
        lines.append((indent + "  ".join(parts)).rstrip())
    return lines


def _problem_line(problem: Problem, paint: _Paint) -> str:
    """``where: error: message (hint)``; an info notice reads ``note:``, as gcc's do."""
    severity = "note" if problem.severity == "info" else problem.severity
    text = f"{paint.severity(severity)}: {problem.message}"
    if problem.hint:
        text += f" ({problem.hint})"
    where = problem.location
    return f"{where}: {text}" if where else text


def _counts(outcome: _Outcome, *, notes: bool = True) -> str:
    def plural(count: int, word: str) -> str:
        return f"{count} {word}" + ("" if count == 1 else "s")

    text = f"{plural(outcome.errors, 'error')}, {plural(outcome.warnings, 'warning')}"
    if notes and outcome.notes:
        text += ", " + plural(outcome.notes, "note")
    return text


def _print_error(text: str) -> None:
    print(text, file=sys.stderr)


def _report_failure(outcome: _Outcome) -> int:
    """A resolution that failed: its errors and warnings on stderr, then the counts."""
    paint = _Paint(sys.stderr)
    for problem in outcome.problems:
        if problem.severity != "info":
            print(_problem_line(problem, paint), file=sys.stderr)
    print(_counts(outcome, notes=False), file=sys.stderr)
    return EXIT_PROBLEMS


def _report_warnings(outcome: _Outcome) -> None:
    paint = _Paint(sys.stderr)
    for problem in outcome.problems:
        if problem.severity == "warning":
            print(_problem_line(problem, paint), file=sys.stderr)


def jsonable(value: Any) -> Any:
    """`value` as JSON can hold it; see docs/cli.md for the encoding.

    Enum members are their name (``"flash"``: what the command line and YAML take), tuples
    and lists arrays, sets sorted arrays, paths and other objects strings, mapping keys strings,
    and floats JSON cannot hold (nan, inf) the strings ``"nan"``, ``"inf"``, ``"-inf"``.
    """
    import enum
    import math

    if value is None or value is True or value is False:
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(float(value))
    if isinstance(value, Mapping):
        return {_json_key(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, (set, frozenset)):
        import json

        items = [jsonable(item) for item in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        return path if isinstance(path, str) else path.decode("utf-8", "backslashreplace")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "backslashreplace")
    return repr(value)


def _json_key(key: Any) -> str:
    """A mapping key as JSON names it: text as it is, ``true``, ``null``, ``1``, an enum's name."""
    import json

    encoded = jsonable(key)
    return encoded if isinstance(encoded, str) else json.dumps(encoded)


def _dump_json(data: Any) -> None:
    import json

    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def _origin_fields(origin: Origin) -> dict[str, Any]:
    return {
        "layer": origin.layer,
        "kind": origin.kind,
        "source": origin.source,
        "line": origin.line,
        "column": origin.column,
        "argv_index": origin.argv_index,
        "token": origin.token,
        "rule": origin.rule,
        "label": origin.label,
    }


def _value_fields(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": jsonable(value), "repr": repr(value)}


def _setting_json(setting: Setting) -> dict[str, Any]:
    """One explained value: role, key, value, repr, its origin's fields, and its history."""
    data: dict[str, Any] = {"role": setting.role}
    data.update(_value_fields(setting.key, setting.value))
    data.update(_origin_fields(setting.origin))
    data["history"] = [
        {
            **_value_fields(entry.key, entry.value),
            **_origin_fields(entry.origin),
            "reason": None if entry.reason is None else entry.reason.value,
            "by": entry.by,
        }
        for entry in setting.history
    ]
    return data


def _selected(roles: dict[str, Namespace], role: str | None) -> dict[str, Namespace]:
    return roles if role is None else {role: roles[role]}


# ---------------------------------------------------------------------------------------------
# explain


def _run_explain(options: argparse.Namespace, argv: list[str]) -> int:
    from layerconf._explain import explain
    from layerconf._secrets import redact_setting
    from layerconf._suggest import suggestion

    parser = _trainer_parser(options)
    outcome = _resolve(parser, argv)
    if outcome.roles is None:
        return _report_failure(outcome)
    _report_warnings(outcome)
    roles = _selected(outcome.roles, options.role)
    keys: list[str] = list(dict.fromkeys(options.keys))

    settings: list[Setting] = []
    unknown: list[str] = []
    for key in keys:
        found = False
        for namespace in roles.values():
            try:
                settings.append(redact_setting(explain(namespace, key)))
            except KeyError:
                continue
            found = True
        if not found:
            known = {name for namespace in roles.values() for name in vars(namespace)}
            unknown.append(f"unknown key {key!r}{suggestion(key, known)}")
    if unknown:
        for message in unknown:
            _print_error(f"{PROG} explain: error: {message}")
        return EXIT_PROBLEMS

    if options.json:
        _dump_json([_setting_json(setting) for setting in settings])
        return EXIT_OK
    paint = _Paint(sys.stdout)
    blocks = ["\n".join(_explained(setting, paint)) for setting in settings]
    print("\n\n".join(blocks))
    return EXIT_OK


def _explained(setting: Setting, paint: _Paint) -> list[str]:
    """A heading, then one aligned row for the final value and one per shadowed value."""

    head = f"{paint(setting.key, '1')} ({setting.role}) = {setting.value!r}"
    note = setting.origin.label if setting.origin.kind == "rule" else None
    rows: list[list[_Cell]] = [
        [
            ("from", None),
            (repr(setting.value), None),
            (setting.origin.layer, paint.layer(setting.origin.kind)),
            (setting.origin.place, None),
            (note or "", None),
        ]
    ]
    for number, entry in enumerate(setting.history):
        reason = "" if entry.reason is None else entry.reason.value
        if entry.by:
            reason += f" by {entry.by}"
        rows.append(
            [
                ("shadows" if number == 0 else "", None),
                (repr(entry.value), None),
                (entry.origin.layer, paint.layer(entry.origin.kind)),
                (entry.origin.place, None),
                (reason, lambda text: paint(text, "2")),
            ]
        )
    return [head, *_table(rows, indent="  ")]


# ---------------------------------------------------------------------------------------------
# show


def _run_show(options: argparse.Namespace, argv: list[str]) -> int:
    from layerconf._explain import explain
    from layerconf._secrets import redact_setting

    parser = _trainer_parser(options)
    outcome = _resolve(parser, argv)
    if outcome.roles is None:
        return _report_failure(outcome)
    _report_warnings(outcome)
    shown: dict[str, list[Setting]] = {}
    totals: dict[str, int] = {}
    for role, namespace in _selected(outcome.roles, options.role).items():
        settings = [redact_setting(explain(namespace, key)) for key in sorted(vars(namespace))]
        totals[role] = len(settings)
        if options.changed:
            settings = [s for s in settings if s.origin.kind != "default"]
        shown[role] = settings

    if options.json:
        _dump_json(
            {
                role: {
                    s.key: {"value": jsonable(s.value), "repr": repr(s.value)}
                    | _origin_fields(s.origin)
                    for s in settings
                }
                for role, settings in shown.items()
            }
        )
    elif options.yaml:
        sys.stdout.write(_show_yaml(shown))
    else:
        paint = _Paint(sys.stdout)
        blocks = []
        for role, settings in shown.items():
            changed = sum(s.origin.kind != "default" for s in settings)
            title = f"{role}: {totals[role]} values, {changed} not from defaults"
            if options.changed:
                title = f"{role}: {len(settings)} of {totals[role]} values not from defaults"
            rows: list[list[_Cell]] = [
                [
                    (s.key, None),
                    (repr(s.value), None),
                    (s.origin.layer, paint.layer(s.origin.kind)),
                    (s.origin.place, None),
                ]
                for s in settings
            ]
            blocks.append("\n".join([paint(title, "1"), *_table(rows, indent="  ")]))
        print("\n\n".join(blocks))
    return EXIT_OK


def _show_yaml(shown: Mapping[str, Sequence[Setting]]) -> str:
    """One YAML mapping per role, a value a line in flow style, its origin as a comment."""
    lines = [f"# resolved by {PROG}: each value's origin follows it as a comment"]
    for role, settings in shown.items():
        lines.append(f"{_yaml_flow(role)}:" + ("" if settings else " {}"))
        rows = [(f"{_yaml_flow(s.key)}: {_yaml_flow(s.value)}", s.origin) for s in settings]
        width = max((len(text) for text, _ in rows if len(text) <= 60), default=0)
        for text, origin in rows:
            comment = origin.where
            lines.append(f"  {text.ljust(width)}  # {comment}")
    return "\n".join(lines) + "\n"


def _yaml_flow(value: Any) -> str:
    """`value` as one line of YAML that `yaml.safe_load` reads back (enums as their name)."""
    import yaml

    plain = _yamlable(value)
    text: str = yaml.safe_dump(
        plain, default_flow_style=True, width=1 << 30, allow_unicode=True, sort_keys=False
    )
    if text.endswith("\n...\n"):
        text = text[: -len("\n...\n")]
    text = text.rstrip("\n")
    if "\n" in text:  # a multi-line string: JSON's escapes are YAML double-quoted strings
        import json

        return json.dumps(jsonable(value), ensure_ascii=False)
    return text


def _yamlable(value: Any) -> Any:
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return float(value)  # YAML has .inf and .nan
    if isinstance(value, Mapping):
        return {_json_key(key): _yamlable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_yamlable(item) for item in value]
    return jsonable(value)


# ---------------------------------------------------------------------------------------------
# diff


def _run_diff(options: argparse.Namespace, argv: list[str]) -> int:
    from layerconf._explain import explain, same_value
    from layerconf._secrets import redact_setting

    parser = _trainer_parser(options)
    outcome = _resolve(parser, argv)
    if outcome.roles is None:
        return _report_failure(outcome)
    _report_warnings(outcome)
    roles = outcome.roles
    names = list(roles)
    keys = sorted({key for namespace in roles.values() for key in vars(namespace)})
    _absent: Any = object()
    differing: list[tuple[str, dict[str, Setting | None]]] = []
    for key in keys:
        values = [vars(namespace).get(key, _absent) for namespace in roles.values()]
        if all(same_value(values[0], other) for other in values[1:]):
            continue
        differing.append(
            (
                key,
                {
                    role: redact_setting(explain(namespace, key))
                    if key in vars(namespace)
                    else None
                    for role, namespace in roles.items()
                },
            )
        )

    if options.json:
        _dump_json(
            [
                {
                    "key": key,
                    "roles": {
                        role: None
                        if setting is None
                        else {"value": jsonable(setting.value), "repr": repr(setting.value)}
                        | _origin_fields(setting.origin)
                        for role, setting in sides.items()
                    },
                }
                for key, sides in differing
            ]
        )
    elif differing:
        paint = _Paint(sys.stdout)
        head: list[_Cell] = [("key", None)]
        for role in names:
            head += [(role, None), ("", None)]
        rows: list[list[_Cell]] = [[(text, lambda t: paint(t, "1")) for text, _ in head]]
        for key, sides in differing:
            row: list[_Cell] = [(key, None)]
            for role in names:
                setting = sides[role]
                if setting is None:
                    row += [("(unset)", None), ("", None)]
                    continue
                origin = setting.origin
                where = origin.where
                row += [
                    (repr(setting.value), None),
                    (where, paint.layer(origin.kind)),
                ]
            rows.append(row)
        print("\n".join(_table(rows)))
    count = len(differing)
    between = " and ".join(names)
    if count:
        summary = f"{count} key{'' if count == 1 else 's'} differ between {between}"
    else:
        summary = f"no key differs between {between}"
    print(summary, file=sys.stderr)
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# check


def _run_check(options: argparse.Namespace, argv: list[str]) -> int:
    parser = _trainer_parser(options)
    outcome = _resolve(parser, argv)
    if options.json:
        import attrs

        _dump_json([attrs.asdict(problem) for problem in outcome.problems])
    else:
        paint = _Paint(sys.stdout)
        for problem in outcome.problems:
            print(_problem_line(problem, paint))
    print(_counts(outcome), file=sys.stderr)
    if outcome.errors or (options.strict and outcome.warnings):
        return EXIT_PROBLEMS
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# schema


def _run_schema(options: argparse.Namespace, argv: list[str]) -> int:
    del argv
    parser = _trainer_parser(options)
    if options.parser is not None:
        title = f"role file of {PROG} --parser {options.parser}"
    else:
        title = f"role file of {PROG} profile {options.profile!r}"
    _dump_json(role_file_schema(parser, title=title))
    return EXIT_OK


def role_file_schema(
    parser: argparse.ArgumentParser,
    *,
    roles: Sequence[str] | None = None,
    title: str = "layerconf role file",
) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of the role files `parser`'s command line takes.

    Every key layerconf accepts in ``overrides`` (and ``args``) is a property with the JSON
    types the type-coercion rule accepts for it, its choices as an ``enum``, its default and
    help; other keys are refused (``additionalProperties: false``). Float and int dests also
    take strings that Python's ``float()`` / ``int()`` read (YAML 1.1 reads ``1e-5`` as a
    string), with a ``pattern``. The resource keys the ignored-keys rule drops are allowed and
    marked ``deprecated``. `roles` (default: those of the `SLIME` preset) are the values
    ``role`` may take.
    """
    from layerconf._ignored_keys import RESOURCE_KEYS
    from layerconf._role_defaults import SLIME_CRITIC_DEFAULTS
    from layerconf._roles import SLIME
    from layerconf._unknown_keys import parser_dests

    roles = SLIME.roles if roles is None else tuple(roles)
    dests, _ = parser_dests(parser)
    grouped: dict[str, list[argparse.Action]] = {}
    for action in parser._actions:
        if action.dest in dests:
            grouped.setdefault(action.dest, []).append(action)

    properties: dict[str, Any] = {}
    for dest in sorted(set(dests) | set(SLIME_CRITIC_DEFAULTS) | set(RESOURCE_KEYS)):
        actions = grouped.get(dest)
        schema = _dest_schema(parser, dest, actions) if actions else {}
        if dest in RESOURCE_KEYS:
            note = (
                f"Ignored in a role file: resources come from the command line "
                f"({RESOURCE_KEYS[dest]})."
            )
            schema["description"] = (schema.get("description", "") + "\n\n" + note).strip()
            schema["deprecated"] = True
        elif not actions:
            schema["description"] = "Set on the critic by slime (not a command-line argument)."
        properties[dest] = schema

    entry = {
        "type": "object",
        "description": "One role's overrides.",
        "properties": {
            "name": {"type": "string", "description": "A label; nothing depends on it."},
            "role": {"enum": list(roles), "description": "The role these overrides are for."},
            "overrides": {"$ref": "#/$defs/overrides"},
            "args": {
                "$ref": "#/$defs/overrides",
                "deprecated": True,
                "description": "The old name of 'overrides'; new files use 'overrides'.",
            },
        },
        "required": ["role"],
        "additionalProperties": False,
        "not": {"required": ["overrides", "args"]},
    }
    return {
        "$schema": _SCHEMA_DIALECT,
        "title": title,
        "description": "Per-role overrides on top of the shared command line "
        "(slime's --megatron-config-path).",
        "type": "object",
        "properties": {
            "megatron": {
                "type": "array",
                "description": "One entry per role: " + ", ".join(roles) + ".",
                "items": {"$ref": "#/$defs/entry"},
            }
        },
        "required": ["megatron"],
        "additionalProperties": False,
        "$defs": {
            "entry": entry,
            "overrides": {
                "type": ["object", "null"],
                "description": "Argument attribute names (lr, tensor_model_parallel_size) to "
                "values.",
                "properties": properties,
                "additionalProperties": False,
            },
        },
    }


def _dest_schema(
    parser: argparse.ArgumentParser, dest: str, actions: list[argparse.Action]
) -> dict[str, Any]:
    """The schema of one dest: the JSON the type-coercion rule accepts for it, help, default."""
    from layerconf._coerce import _dest_spec, expected_kind

    schema: dict[str, Any] = {}
    spec = _dest_spec(parser, actions)
    if spec is not None:
        schema = _item_schema(spec.each.item if spec.each is not None else spec.item)
        if spec.each is not None:
            schema = _array(schema, spec.each.count, spec.each.non_empty)
        if spec.many:
            schema = _array(schema, spec.count, spec.non_empty)
        if spec.nullable:
            _allow_null(schema)
    action = next((a for a in actions if a.help is not argparse.SUPPRESS), actions[0])
    flags = ", ".join(option for a in actions for option in a.option_strings) or dest
    default = next((a.default for a in actions if a.default is not argparse.SUPPRESS), None)
    described = _help_text(parser, action)
    kind = expected_kind(actions[0]) if spec is None else spec.kind
    facts = f"{flags}; {kind}; default: {_default_text(default)}"
    schema["description"] = f"{described}\n\n{facts}" if described else facts
    encoded = _schema_default(default)
    if encoded is not _NO_DEFAULT:
        schema["default"] = encoded
    return schema


_NO_DEFAULT: Any = object()


def _item_schema(item: Any) -> dict[str, Any]:
    family: str = item.family
    if item.choices is not None and family != "bool":
        values = []
        for choice in item.choices:
            encoded = jsonable(choice)
            if not isinstance(encoded, (str, int, float)) or (
                isinstance(choice, float) and encoded != choice
            ):
                return _family_schema(family)  # a choice JSON cannot name: the type only
            values.append(encoded)
        return {"enum": values}
    return _family_schema(family)


def _family_schema(family: str) -> dict[str, Any]:
    if family == "bool":
        return {"type": "boolean"}
    if family == "int":
        return {"type": ["integer", "string"], "pattern": INT_PATTERN}
    if family == "float":
        return {"type": ["number", "string"], "pattern": FLOAT_PATTERN}
    if family == "JSON":
        return {"type": ["object", "array", "number", "boolean", "string"]}
    # str, and custom callables: a YAML string, or an int read as its decimal text.
    return {"type": ["string", "integer"]}


def _array(items: dict[str, Any], count: int | None, non_empty: bool) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": items}
    if count is not None:
        schema["minItems"] = schema["maxItems"] = count
    elif non_empty:
        schema["minItems"] = 1
    return schema


def _allow_null(schema: dict[str, Any]) -> None:
    if "enum" in schema:
        if None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return
    kinds = schema["type"]
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    if "null" not in kinds:
        kinds.append("null")
    schema["type"] = kinds


def _help_text(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's help with argparse's ``%(default)s``-style fields filled in."""
    text = action.help
    if not text or text is argparse.SUPPRESS:
        return ""
    if "%" not in text:
        return text
    params: dict[str, Any] = dict(vars(action), prog=parser.prog)
    for name in list(params):
        if params[name] is argparse.SUPPRESS:
            del params[name]
    if params.get("choices") is not None:
        params["choices"] = ", ".join(str(choice) for choice in params["choices"])
    try:
        return text % params
    except (KeyError, TypeError, ValueError):
        return text


def _default_text(default: Any) -> str:
    import enum

    if isinstance(default, enum.Enum):
        return default.name
    return repr(default)


def _schema_default(default: Any) -> Any:
    import math

    if default is argparse.SUPPRESS:
        return _NO_DEFAULT
    encoded = jsonable(default)
    if isinstance(default, float) and not math.isfinite(default):
        return _NO_DEFAULT
    return encoded
