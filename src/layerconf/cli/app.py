"""The ``layerconf`` command: explain, show, diff, check, schema and audit of a configuration.

Every command but ``schema``, ``audit diff`` and ``audit replay`` takes the trainer's own
command line after ``--``, exactly as it would be launched, and resolves it per role with
`resolve_roles` and a parser: the bundled profile (``--profile``) or the user's own
(``--parser MODULE:ATTR``). ``audit diff`` and ``audit replay`` read audit records instead.

Exit codes: 0 success; 1 the configuration has problems (``check``), does not resolve, a key
is unknown (``explain``), or an audit record cannot be read; 2 a mistake in the layerconf
command line or in what it names (no ``--``, an unknown profile, a ``--parser`` that cannot be
imported). Tool errors are one line on stderr, never a traceback.

Secrets never reach the output: values of secret keys are redacted, and every secret value
found on the command line or in the resolved roles is replaced in whatever text is written.

Importing this module costs nothing beyond argparse: each command imports what it needs.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TextIO

if TYPE_CHECKING:
    from types import TracebackType

    from layerconf.audits.record import AuditRecord
    from layerconf.core.namespace import Namespace
    from layerconf.core.records import Origin, Setting
    from layerconf.exceptions import Problem

    # A table cell: its text, and a colour applied after padding (alignment ignores ANSI).
    _Cell = tuple[str, Callable[[str], str] | None]

from layerconf.core.values import json_key, jsonable

__all__ = ["jsonable", "main"]

PROG = "layerconf"
_DEFAULT_PROFILE = "megatron-slime"

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2


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
    #: --profile / --parser: the command builds the trainer's parser (audit records do not).
    takes_parser: bool = True

    def parser(self) -> argparse.ArgumentParser:
        parser = _CommandParser(
            prog=f"{PROG} {self.name}",
            usage=self.usage,
            description=self.description,
            epilog=self.epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            allow_abbrev=False,
        )
        if self.takes_parser:
            _parser_options(parser)
        self.options(parser)
        return parser


def _parser_options(parser: argparse.ArgumentParser) -> None:
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


def _role_option(parser: argparse.ArgumentParser) -> None:
    from layerconf.presets.resolve import SLIME

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
    _shown_options(parser)


def _shown_options(parser: argparse.ArgumentParser) -> None:
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


def _audit_options(parser: argparse.ArgumentParser) -> None:
    from layerconf.audits.record import AUDIT_FILE

    parser.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="write the record to this file, atomically; a directory (existing, or written "
        f"with a trailing '/') gets {AUDIT_FILE} in it. Default: print it",
    )


def _audit_diff_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("before", metavar="BEFORE", help="an audit record, or its directory")
    parser.add_argument("after", metavar="AFTER", help="the record to compare it with")
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def _audit_replay_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("record", metavar="RECORD", help="an audit record, or its directory")
    parser.add_argument(
        "--role", metavar="ROLE", help="only this role (default: every role of the record)"
    )
    _shown_options(parser)


def _usage(name: str, rest: str = "", *, parser_options: bool = True) -> str:
    """A command's usage, its own options on a second line aligned as argparse aligns them."""
    if not parser_options:
        return f"{PROG} {name} [-h] {rest}"
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
                takes_argv=False,
            ),
            _Command(
                "audit",
                _usage("audit", "[-o PATH] -- ARGV..."),
                "the audit record of the configuration, as JSON run metadata",
                "Resolve the roles and write their audit record (what layerconf.write_audit "
                "writes): every\nvalue of every role with its origin and what it shadowed, the "
                "command line, the role\nfiles' sha256 and a fingerprint of the values, secrets "
                "redacted. Printed on stdout,\nor written atomically with -o.",
                "examples:\n"
                f"  {PROG} audit -o runs/001/ -- $(cat launch_argv.txt)\n"
                f"  {PROG} audit -- $(cat launch_argv.txt) > before.json\n\n"
                "then:\n"
                f"  {PROG} audit diff BEFORE AFTER     the values that changed between two "
                "records\n"
                f"  {PROG} audit replay RECORD         a record's roles, shown as 'show' shows "
                "them\n\n"
                "exit status: 0 written; 1 a configuration that does not resolve; 2 a usage "
                "error\n(or a PATH that cannot be written).",
                _audit_options,
                _run_audit,
            ),
            _Command(
                "audit diff",
                _usage("audit diff", "[--json] BEFORE AFTER", parser_options=False),
                "the values that changed between two audit records",
                "The values that changed between two runs' audit records, per role and key, "
                "with the layer\nthat set each side. Values compare as recorded (1 and 1.0 "
                "differ); mappings are compared\nleaf by leaf; redacted secrets compare "
                "equal. BEFORE and AFTER are record files, or the\ndirectories "
                "write_audit() wrote them into.",
                "example:\n"
                f"  {PROG} audit diff runs/001 runs/002\n\n"
                "exit status: 0 whatever the differences; 1 a record that cannot be read; 2 a "
                "usage error.",
                _audit_diff_options,
                _run_audit_diff,
                takes_argv=False,
                takes_parser=False,
            ),
            _Command(
                "audit replay",
                _usage(
                    "audit replay",
                    "[--role ROLE] [--changed] [--json | --yaml] RECORD",
                    parser_options=False,
                ),
                "a role's configuration rebuilt from an audit record",
                "Rebuild each role's namespace from an audit record (AuditRecord.namespace) and "
                "show it as\n'show' does: every key, its value and its recorded origin. "
                "Secrets stay redacted.",
                "example:\n"
                f"  {PROG} audit replay runs/001 --role critic --changed\n\n"
                "exit status: 0 shown; 1 a record that cannot be read or replayed; 2 a usage "
                "error\n(an unknown ROLE).",
                _audit_replay_options,
                _run_audit_replay,
                takes_argv=False,
                takes_parser=False,
            ),
        )
    }


def _top_parser(commands: Mapping[str, _Command]) -> argparse.ArgumentParser:
    width = max(len(name) for name in commands) + 2
    listing = "\n".join(f"  {c.name:<{width}}{c.summary}" for c in commands.values())
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
    scrubber = _Scrubber()
    scrubber.add_argv(arguments)
    running = _SCRUBBER.set(scrubber)
    try:
        with _scrubbed_output(scrubber):
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
    finally:
        _SCRUBBER.reset(running)


def _main(arguments: list[str]) -> int:
    if "--" in arguments:
        split = arguments.index("--")
        own, trainer, separated = arguments[:split], arguments[split + 1 :], True
    else:
        own, trainer, separated = arguments, [], False
    commands = _commands()
    names = list(dict.fromkeys(name.split()[0] for name in commands))
    if not own or own[0] in ("-h", "--help"):
        top = _top_parser(commands)
        if not own:
            sys.stderr.write(top.format_usage())
            raise _UsageError("choose a command: " + ", ".join(names), help_hint=True)
        top.print_help()
        return EXIT_OK
    if own[0] == "--version":
        from layerconf import __version__

        print(f"{PROG} {__version__}")
        return EXIT_OK
    name, rest = own[0], own[1:]
    if name == "audit" and rest and not rest[0].startswith("-"):
        # `audit diff`, `audit replay`: `audit` itself takes no positional argument.
        subcommands = [command.split()[1] for command in commands if command.startswith("audit ")]
        if rest[0] not in subcommands:
            from layerconf.core.suggest import suggestion

            raise _UsageError(
                f"unknown audit command {rest[0]!r}{suggestion(rest[0], subcommands)} (audit "
                "commands: " + ", ".join(subcommands) + ")",
                f"{PROG} audit",
            )
        name, rest = f"{name} {rest[0]}", rest[1:]
    command = commands.get(name)
    if command is None:
        from layerconf.core.suggest import suggestion

        what = "option" if name.startswith("-") else "command"
        raise _UsageError(
            f"unknown {what} {name!r}{suggestion(name, names)} (commands: " + ", ".join(names) + ")"
        )
    parser = command.parser()
    try:
        options = parser.parse_intermixed_args(rest)
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
    from layerconf.exceptions import UnknownProfileError
    from layerconf.profiles.loader import load_profile

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
            from layerconf.core.suggest import suggestion

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
    name = os.path.splitext(os.path.basename(path))[0]
    if _other_module(name, os.path.abspath(path)):
        raise _UsageError(
            f"--parser: {path} would replace the module {name!r} imported from elsewhere; "
            "rename the file, or name its module as MODULE:ATTR"
        )
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)  # as running the script would: its siblings import
    found = importlib.util.spec_from_file_location(name, path)
    if found is None or found.loader is None:
        raise _UsageError(f"--parser: cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module  # under its own name: records name its enums by that module
    try:
        found.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _other_module(name: str, path: str) -> bool:
    """Whether `name` is another module than the file at `path`, imported or importable."""
    import importlib.util

    module = sys.modules.get(name)
    if module is not None:
        return getattr(module, "__file__", None) != path
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin != path


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


def _resolved(options: argparse.Namespace, argv: list[str]) -> _Outcome:
    """Resolve the trainer's command line with the chosen parser; report warnings if it worked."""
    outcome = _resolve(_trainer_parser(options), argv)
    if outcome.roles is not None:
        _report_warnings(outcome)
    return outcome


def _resolve(parser: argparse.ArgumentParser, argv: list[str]) -> _Outcome:
    import warnings

    from layerconf.core.namespace import notices
    from layerconf.exceptions import ConfigError, LayerconfError, LayerconfWarning
    from layerconf.presets.resolve import resolve_roles

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
            raise _UsageError(_crash_text(error)) from None
        return _Outcome(None, [problem])
    scrubber = _SCRUBBER.get()
    if scrubber is not None:  # a role file's secrets too, wherever their text is quoted
        scrubber.add(_secret_texts(roles))
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

    from layerconf.core.suggest import did_you_mean_hint
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
            hint = did_you_mean_hint(value.group(1), names)
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


def _crash_text(error: Exception) -> str:
    """One line for an exception the trainer's own code raised while parsing: what and where."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return (
        f"the trainer's parser raised {type(error).__name__}: {error}{where}; run the trainer "
        "with the same command line to see the traceback"
    )


def _crash_problem(error: Exception, argv: list[str]) -> Problem | None:
    """The problem of an exception argparse let through from a type callable, or None."""
    import traceback

    from layerconf.core.suggest import did_you_mean_hint
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
            hint = did_you_mean_hint(token, names) or "choose from " + ", ".join(
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
# Secrets


class _Scrubber:
    """Replaces every secret value found (in argv, in the roles) in the text the command writes.

    The values of secret keys are redacted where they are printed as values (`_shown`); this
    catches the same text anywhere else: an argv notice that quotes ``--sglang-api-key ...``,
    a raw JSON string that embeds an ``HF_TOKEN``. As in audit records, values shorter than
    ``SECRETS.min_scrub_length`` are redacted as values only, so that a key such as ``"1"``
    cannot wreck the output.
    """

    def __init__(self) -> None:
        from layerconf.core.secrets import SECRETS

        self.policy = SECRETS
        self.secrets: list[str] = []

    def add(self, values: Iterable[str]) -> None:
        import json

        known = set(self.secrets)
        for value in values:
            if len(value) >= self.policy.min_scrub_length:
                # As written, and as JSON and repr() escape it.
                escaped = json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]
                known.update((value, *escaped, repr(value)[1:-1]))
        self.secrets = sorted(known, key=len, reverse=True)  # a secret holding another goes whole

    def add_argv(self, argv: Sequence[str]) -> None:
        from layerconf.core.secrets import redact_argv

        self.add(redact_argv(argv, self.policy)[1])

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, self.policy.placeholder)
        return text


# The scrubber of the running command, which learns the roles' secrets once they resolve.
_SCRUBBER: contextvars.ContextVar[_Scrubber | None] = contextvars.ContextVar(
    "layerconf_cli_scrubber", default=None
)


class _ScrubbedStream:
    """A text stream that scrubs secrets from everything written to it; the rest is delegated."""

    def __init__(self, stream: TextIO, scrubber: _Scrubber) -> None:
        self._stream = stream
        self._scrubber = scrubber

    def write(self, text: str) -> int:
        return self._stream.write(self._scrubber(text))

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, flush...
        return getattr(self._stream, name)


@contextlib.contextmanager
def _scrubbed_output(scrubber: _Scrubber) -> Iterator[None]:
    from typing import cast

    out, err = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, _ScrubbedStream(out, scrubber))
    sys.stderr = cast(TextIO, _ScrubbedStream(err, scrubber))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def _secret_texts(roles: Mapping[str, argparse.Namespace]) -> list[str]:
    """The text of every secret the roles hold: secret keys' values, also inside mappings."""
    from layerconf.core.secrets import SECRETS, secret_texts

    found: list[str] = []

    def visit(key: str, value: Any) -> None:
        if SECRETS.is_secret(key):
            if value is not None:
                found.extend(secret_texts(value))
        elif isinstance(value, Mapping):
            for name, item in value.items():
                visit(name, item)
        elif type(value) is list or type(value) is tuple:
            for item in value:
                visit("", item)

    for namespace in roles.values():
        for key, value in vars(namespace).items():
            visit(key, value)
    return found


def _shown(setting: Setting) -> Setting:
    """`setting` as it may be printed: secret values and ``--wandb-key=...`` tokens redacted."""
    return setting.redacted()


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


def _dump_json(data: Any) -> None:
    import json

    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def _origin_fields(origin: Origin | None) -> dict[str, Any]:
    """Every field of `origin` in its order (all null without one): the CLI's origin fields."""
    import attrs

    from layerconf.core.records import Origin

    if origin is None:
        return dict.fromkeys(attrs.fields_dict(Origin))
    return attrs.asdict(origin, recurse=False)


def _value_json(value: Any, origin: Origin | None) -> dict[str, Any]:
    """A value as every JSON output shows it: value, repr, and its origin's fields."""
    return {"value": jsonable(value), "repr": repr(value)} | _origin_fields(origin)


def _setting_json(setting: Setting) -> dict[str, Any]:
    """One explained value: role, key, value, repr, its origin's fields, and its history."""
    data: dict[str, Any] = {"role": setting.role, "key": setting.key}
    data.update(_value_json(setting.value, setting.origin))
    data["history"] = [
        {
            "key": entry.key,
            **_value_json(entry.value, entry.origin),
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
    from layerconf.core.explain import explain
    from layerconf.core.suggest import suggestion

    outcome = _resolved(options, argv)
    if outcome.roles is None:
        return _report_failure(outcome)
    roles = _selected(outcome.roles, options.role)
    keys: list[str] = list(dict.fromkeys(options.keys))

    settings: list[Setting] = []
    unknown: list[str] = []
    for key in keys:
        found = False
        for namespace in roles.values():
            try:
                settings.append(_shown(explain(namespace, key)))
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
    outcome = _resolved(options, argv)
    if outcome.roles is None:
        return _report_failure(outcome)
    _show_roles(_selected(outcome.roles, options.role), options)
    return EXIT_OK


def _show_roles(roles: Mapping[str, argparse.Namespace], options: argparse.Namespace) -> None:
    """Every key of each role, sorted, with its value and origin: a table, JSON or YAML.

    `options` are those of `_shown_options`: ``changed``, ``json``, ``yaml``.
    """
    from layerconf.core.explain import explain_all

    shown: dict[str, list[Setting]] = {}
    totals: dict[str, int] = {}
    for role, namespace in roles.items():
        explained = explain_all(namespace)
        settings = [_shown(explained[key]) for key in sorted(explained)]
        totals[role] = len(settings)
        if options.changed:
            settings = [s for s in settings if s.origin.kind != "default"]
        shown[role] = settings

    if options.json:
        _dump_json(
            {
                role: {s.key: _value_json(s.value, s.origin) for s in settings}
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
        return {json_key(key): _yamlable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_yamlable(item) for item in value]
    return jsonable(value)


# ---------------------------------------------------------------------------------------------
# diff


def _run_diff(options: argparse.Namespace, argv: list[str]) -> int:
    from layerconf.core.explain import explain
    from layerconf.core.values import same_value

    outcome = _resolved(options, argv)
    if outcome.roles is None:
        return _report_failure(outcome)
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
                    role: _shown(explain(namespace, key)) if key in vars(namespace) else None
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
                        else _value_json(setting.value, setting.origin)
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
    from layerconf.presets.schema import role_file_schema

    _dump_json(role_file_schema(parser, title=title))
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# audit, audit diff, audit replay


def _run_audit(options: argparse.Namespace, argv: list[str]) -> int:
    # _record_bytes and _write_atomic are what write_audit() does, given the record once: the
    # same bytes go to stdout or to any file name, and the fingerprint is reported.
    from pathlib import Path

    from layerconf.audits.record import AUDIT_FILE, _record_bytes, _write_atomic, audit

    outcome = _resolved(options, argv)
    if outcome.roles is None:
        return _report_failure(outcome)
    record = audit(outcome.roles)
    data = _record_bytes(record)
    if options.output is None:
        sys.stdout.write(data.decode("ascii"))
        return EXIT_OK
    output: str = options.output
    if output.endswith(("/", os.sep)) or os.path.isdir(output):
        directory, name = Path(output), AUDIT_FILE
    else:
        directory, name = Path(output).parent, Path(output).name
    try:
        written = _write_atomic(directory, name, data)
    except OSError as error:
        where = error.filename if isinstance(error.filename, str) else output
        if os.path.basename(where).startswith(f".{name}."):  # the temporary file: name the target
            where = str(directory / name)
        # mkdir() meeting a file where a directory should be says "File exists".
        reason = "Not a directory" if isinstance(error, FileExistsError) else error.strerror
        raise _UsageError(
            f"cannot write the audit record: {where}: {reason or error}", f"{PROG} audit"
        ) from None
    print(f"wrote {written} (fingerprint {record['fingerprint']})", file=sys.stderr)
    return EXIT_OK


def _read_records(paths: Sequence[str], prog: str) -> list[AuditRecord] | None:
    """The records at `paths` (files, or directories holding one); None if any is unreadable.

    Each unreadable record is one error line on stderr, naming the file and what is wrong.
    """
    from layerconf.audits.record import load_audit
    from layerconf.exceptions import AuditError

    records = []
    for path in paths:
        try:
            records.append(load_audit(path))
        except AuditError as error:
            _print_error(f"{prog}: error: {error}")
        except OSError as error:
            where = error.filename if isinstance(error.filename, str) else path
            _print_error(f"{prog}: error: {where}: {error.strerror or error}")
    return records if len(records) == len(paths) else None


def _run_audit_diff(options: argparse.Namespace, argv: list[str]) -> int:
    from layerconf.audits.record import diff_audits
    from layerconf.core.secrets import redact

    del argv
    records = _read_records([options.before, options.after], f"{PROG} audit diff")
    if records is None:
        return EXIT_PROBLEMS
    before, after = records
    changes = diff_audits(before, after)

    def side(key: str | None, value: Any, origin: Origin | None) -> dict[str, Any]:
        value = redact(key or "", value)  # a record holds no secret; a hand-made one might
        return _value_json(value, origin)

    if options.json:
        _dump_json(
            [
                {
                    "role": change.role,
                    "key": change.key,
                    "kind": change.kind,
                    "before": None
                    if change.kind == "added" or change.key is None
                    else side(change.key, change.before, change.before_origin),
                    "after": None
                    if change.kind == "removed" or change.key is None
                    else side(change.key, change.after, change.after_origin),
                }
                for change in changes
            ]
        )
    elif changes:
        paint = _Paint(sys.stdout)
        head = ("role", "key", "before", "", "after", "")
        rows: list[list[_Cell]] = [[(text, lambda t: paint(t, "1")) for text in head]]
        for change in changes:
            row: list[_Cell] = [(change.role, None)]
            if change.key is None:  # a whole role
                held = (before if change.kind == "removed" else after).data["roles"][change.role]
                present: list[_Cell] = [(f"({len(held['settings'])} keys)", None), ("", None)]
                unset: list[_Cell] = [("(unset)", None), ("", None)]
                row.append(("(role)", None))
                row += present + unset if change.kind == "removed" else unset + present
                rows.append(row)
                continue
            row.append((change.key, None))
            for kind, value, origin in (
                ("added", change.before, change.before_origin),
                ("removed", change.after, change.after_origin),
            ):
                if change.kind == kind:
                    row += [("(unset)", None), ("", None)]
                    continue
                shown = redact(change.key, value)
                row.append((repr(shown), None))
                if origin is None:
                    row.append(("", None))
                else:
                    row.append((origin.where, paint.layer(origin.kind)))
            rows.append(row)
        print("\n".join(_table(rows)))
    count = len(changes)
    between = f"between {options.before} and {options.after}"
    if count:
        print(f"{count} change{'' if count == 1 else 's'} {between}", file=sys.stderr)
    else:
        print(f"no change {between}", file=sys.stderr)
    return EXIT_OK


def _run_audit_replay(options: argparse.Namespace, argv: list[str]) -> int:
    from layerconf.exceptions import AuditError

    del argv
    prog = f"{PROG} audit replay"
    records = _read_records([options.record], prog)
    if records is None:
        return EXIT_PROBLEMS
    [record] = records
    roles = record.roles
    if options.role is not None and options.role not in roles:
        from layerconf.core.suggest import suggestion

        raise _UsageError(
            f"unknown role {options.role!r}{suggestion(options.role, roles)} (roles of "
            f"{record.path}: {', '.join(roles)})",
            prog,
        )
    try:
        replayed = {
            role: record.namespace(role)
            for role in (roles if options.role is None else (options.role,))
        }
    except AuditError as error:  # an enum whose module cannot be imported
        _print_error(f"{prog}: error: {error}")
        return EXIT_PROBLEMS
    _show_roles(replayed, options)
    return EXIT_OK
