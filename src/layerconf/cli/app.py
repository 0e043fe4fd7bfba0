"""`main`: the top-level command line of ``layerconf``, and dispatch to its commands.

The commands are the `Command` records of the modules of `layerconf.cli.commands`, and
`_COMMAND_MODULES` says which module holds each: their names (``audit diff`` is two words) are
what the command line is dispatched on, and only the module of the command run is imported
(the top-level help, which lists every command's summary, imports them all).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Collection, Mapping, Sequence
from typing import TextIO, cast

from layerconf.cli.command import Command, CommandParser, option_suggestion
from layerconf.cli.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_USAGE,
    PROG,
    TRACEBACK_VARIABLE,
    UsageError,
    internal_error,
    print_error,
)
from layerconf.cli.scrub import scrubbing, stderr, stdout
from layerconf.cli.streams import Output, OutputError, discard, standard_error, standard_output
from layerconf.cli.trainer import (
    check_options,
    check_trainer_argv,
    learn_misplaced_secrets,
    missing_separator,
)

__all__ = ["main"]

#: Each command, in the order the top-level help lists them, and its module in
#: `layerconf.cli.commands` (a test checks this against the modules' ``COMMANDS``).
_COMMAND_MODULES = {
    "explain": "explain",
    "show": "show",
    "diff": "diff",
    "check": "check",
    "schema": "schema",
    "audit": "audit",
    "audit diff": "audit",
    "audit replay": "audit",
    "audit verify": "audit",
    "audit relaunch": "audit_answers",
    "audit explain": "audit_answers",
    "completion": "completion",
}

_TOP_USAGE = f"{PROG} [-h] [--version] COMMAND [OPTIONS] -- ARGV..."
#: The options of ``layerconf`` itself, before a command (`_main` answers them).
_TOP_OPTIONS = ("-h", "--help", "--version")


def main(argv: Sequence[str] | None = None, *, output: TextIO | None = None) -> int:
    """Run the ``layerconf`` command on `argv` (default ``sys.argv[1:]``), writing its output
    to `output` (default: standard output); return its exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    written = standard_output() if output is None else Output(output)
    if written is None:  # started with its standard output closed (`>&-`)
        print_error(f"{PROG}: error: cannot write the output: standard output is closed")
        return EXIT_OUTPUT
    try:
        with scrubbing(arguments, cast(TextIO, written)):
            try:
                status = _main(arguments)
            except UsageError as error:
                print_error(str(error))
                status = EXIT_USAGE
            except (OutputError, KeyboardInterrupt):
                raise
            except Exception as error:  # a bug: one line (secrets scrubbed), not a traceback
                if os.environ.get(TRACEBACK_VARIABLE, "") not in ("", "0"):
                    raise
                print_error(internal_error(error))
                status = EXIT_INTERNAL
            written.flush()
            stderr().flush()  # (its messages: lost ones are a failure too)
            return status
    except OutputError as error:
        discard(written.stream)  # so that the interpreter's last flush fails no more
        try:
            print_error(f"{PROG}: error: cannot write the output: {error.strerror or error}")
        except (OSError, ValueError, AttributeError):  # standard error itself cannot be written
            discard(standard_error().stream)
        return EXIT_OUTPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _commands() -> dict[str, Command]:
    """Every command by name, in the order the top-level help lists them (imports them all)."""
    return {name: _load(name) for name in _COMMAND_MODULES}


def _load(name: str) -> Command:
    """The command `name` (one of `_COMMAND_MODULES`), its module imported now."""
    module = importlib.import_module(f"layerconf.cli.commands.{_COMMAND_MODULES[name]}")
    command: Command = next(command for command in module.COMMANDS if command.name == name)
    return command


def _main(arguments: list[str]) -> int:
    """Run the command `arguments` name: its own options before ``--``, the trainer's after."""
    if "--" in arguments:
        split = arguments.index("--")
        own, trainer, separated = arguments[:split], arguments[split + 1 :], True
    else:
        own, trainer, separated = arguments, [], False
    if not own or own[0] in ("-h", "--help"):
        return _top_help(_commands(), asked=bool(own))
    if own[0] == "--version":
        from layerconf import __version__

        print(f"{PROG} {__version__}", file=stdout())
        return EXIT_OK
    name, rest = _command(own, _COMMAND_MODULES, separated=separated)
    command = _load(name)
    prog = f"{PROG} {command.name}"
    parser = command.parser()
    try:
        options = parser.parse_intermixed_args(rest)
    except SystemExit as stop:  # --help
        return int(stop.code or 0)
    except UsageError as error:
        dashed = _dashed_file(parser, rest)
        if dashed is not None:
            raise UsageError(
                f"{dashed} is a file: write ./{dashed} (a name that starts with '-' is read as "
                "an option)",
                prog,
            ) from None
        if separated and not command.takes_argv and trainer:  # `audit diff -- a.json b.json`
            import shlex

            from layerconf.core.secrets import redact_argv

            # (shell-quoted, a secret's text takes a form the scrubbing of the output cannot
            # know: ``'it'"'"'s-S'``)
            shown = redact_argv([*rest, *trainer])[0]
            raise UsageError(
                f"{command.name} takes no trainer command line: its arguments go without "
                f"'--': {prog} {shlex.join(shown)}",
                prog,
            ) from None
        if separated or not command.takes_argv:
            learn_misplaced_secrets(parser, rest)
            raise
        raise missing_separator(parser, rest, error) from None
    if command.takes_argv and not separated and not command.argv_optional:
        raise UsageError(
            "give the trainer's command line after '--', as it would be launched "
            f"(e.g. {prog} ... -- --lr 1e-6 --megatron-config-path ppo.yaml)",
            prog,
        )
    if not command.takes_argv and separated:
        raise UsageError(
            f"{command.name} takes no trainer command line: remove '--' and after", prog
        )
    options.separated = separated  # whether '--' was given, even with nothing after it
    try:
        if command.takes_parser:
            check_options(options, prog)
            check_trainer_argv(options, parser, trainer, prog)
        return command.run(options, trainer)
    except UsageError as error:
        if error.prog == PROG:  # (raised where the command's name is not known)
            error.prog = prog
        raise


def _dashed_file(parser: argparse.ArgumentParser, tokens: list[str]) -> str | None:
    """The first of `tokens` that argparse reads as an option but that names a file (a role
    file or record called ``-x.yaml``), or None."""
    known = parser._option_string_actions
    return next(
        (t for t in tokens if t[:1] == "-" and t not in known and t != "-" and os.path.lexists(t)),
        None,
    )


def _top_help(commands: Mapping[str, Command], *, asked: bool) -> int:
    """The top-level help when `asked` (-h, --help); else its usage and a usage error."""
    top = _top_parser(commands)
    if not asked:
        stderr().write(top.format_usage())
        raise UsageError("choose a command: " + ", ".join(_first_words(commands)), help_hint=True)
    top.print_help(stdout())
    return EXIT_OK


def _top_parser(commands: Mapping[str, Command]) -> argparse.ArgumentParser:
    width = max(len(name) for name in commands) + 2
    listing = "\n".join(f"  {c.name:<{width}}{c.summary}" for c in commands.values())
    return CommandParser(
        prog=PROG,
        usage=_TOP_USAGE,
        description="Resolve a training job's configuration per role, and say where every "
        "value came from.\n\ncommands:\n" + listing,
        epilog=f"Give the trainer's command line after '--', as it would be launched.\n"
        f"'{PROG} COMMAND --help' describes each command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
    )


def _first_words(commands: Collection[str]) -> list[str]:
    """The commands as the command line names them first: ``audit`` once for all its subcommands."""
    return list(dict.fromkeys(name.split()[0] for name in commands))


def _command(
    own: list[str], commands: Collection[str], *, separated: bool = False
) -> tuple[str, list[str]]:
    """The name of the command `own` names (one word, or two for ``audit diff``) among
    `commands`, and its arguments (`separated`: whether ``--`` and a trainer's command line
    follow them, for a message that shows how to write them)."""
    from layerconf.core.suggest import suggestion

    name, rest = own[0], own[1:]
    subcommands = [n.split()[1] for n in commands if n.startswith(f"{name} ")]
    if subcommands and rest and not rest[0].startswith("-"):
        # `audit diff`, `audit replay`: `audit` itself takes no positional argument.
        if rest[0] not in subcommands:
            raise UsageError(
                f"unknown {name} command {rest[0]!r}{suggestion(rest[0], subcommands)} ({name} "
                "commands: " + ", ".join(subcommands) + ")",
                f"{PROG} {name}",
            )
        name, rest = f"{name} {rest[0]}", rest[1:]
    if name not in commands:
        names = _first_words(commands)
        if name.startswith("-"):
            _refuse_option_before_command(own, commands, separated)
            what, close = "option", option_suggestion(name, _TOP_OPTIONS)
        else:
            what, close = "command", suggestion(name, names)
        raise UsageError(f"unknown {what} {name!r}{close} (commands: " + ", ".join(names) + ")")
    return name, rest


def _refuse_option_before_command(
    own: list[str], commands: Collection[str], separated: bool
) -> None:
    """`UsageError` for a command's own option written before the command's name
    (``layerconf --profile NAME show -- ...``), saying where it goes; nothing when `own` names
    no command after its first token, or the options before it are no options of that command."""
    import shlex

    firsts = _first_words(commands)
    at = next((i for i, token in enumerate(own) if i and token in firsts), None)
    if at is None:
        return
    words = own[at : at + 2] if " ".join(own[at : at + 2]) in commands else own[at : at + 1]
    name = " ".join(words)
    before = own[:at]
    known = _load(name).parser()._option_string_actions
    flags = [t.split("=", 1)[0] for t in before if t[:1] == "-"]
    flag = next((flag for flag in flags if flag in known), None)
    if flag is None:
        return
    line = shlex.join([*words, *before, *own[at + len(words) :]])
    raise UsageError(
        f"{flag!r} is an option of '{PROG} {name}', not of '{PROG}' itself: write the "
        f"command's options after its name: {PROG} {line}{' -- ...' if separated else ''}"
    )
