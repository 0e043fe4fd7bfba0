"""A subcommand as one record: its name, usage, help texts, options, and what runs it.

Each module of `layerconf.cli.commands` defines its `Command` records in ``COMMANDS``;
`layerconf.cli.app` lists those modules once and dispatches on the records' names.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from layerconf.cli.errors import PROG, UsageError
from layerconf.cli.trainer import PARSER_USAGE, PRESET_USAGE, SOURCES_USAGE, parser_options
from layerconf.core._unmeasured import UnmeasuredFormatter
from layerconf.core.suggest import suggestion

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

_UNRECOGNIZED = "unrecognized arguments: "


class CommandParser(argparse.ArgumentParser):
    """layerconf's own parser: a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message + self._option_suggestion(message), self.prog, help_hint=True)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's check of a choice, with the one meant: ``--format jsn``, ``completion
        fishh`` (``; did you mean 'json'?``)."""
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as error:
            choices = [c for c in action.choices or () if isinstance(c, str)]
            close = suggestion(value, choices) if isinstance(value, str) else ""
            if not close:
                raise
            raise argparse.ArgumentError(action, error.message + close) from None

    def print_help(self, file: SupportsWrite[str] | None = None) -> None:
        """The help on the running command's stdout, not the process's (argparse's default),
        whose write errors argparse swallows: `Output` keeps them, so a lost help is exit 74."""
        from layerconf.cli.scrub import stdout

        super().print_help(stdout() if file is None else file)

    def _option_suggestion(self, message: str) -> str:
        """``; did you mean '--role-file'?`` for the first option of an "unrecognized
        arguments" message (``--rolefile``), or ``""``."""
        if not message.startswith(_UNRECOGNIZED):
            return ""
        for token in message[len(_UNRECOGNIZED) :].split():
            if token.startswith("-"):
                return option_suggestion(token.split("=", 1)[0], self._option_string_actions)
        return ""


def a_path(text: str) -> str:
    """The `type` of an argument that names a file: any text but the empty one, which argparse
    refuses naming the argument (``-o ''``: a shell variable that was not set)."""
    if not text:
        raise argparse.ArgumentTypeError(
            "the path is empty, so it names no file (was a shell variable not set?)"
        )
    return text


def option_suggestion(word: str, options: Iterable[str]) -> str:
    """``; did you mean '--role-file'?`` for a misspelt option `word`, or ``""``. Names are
    compared without their dashes, and only a close one is named: ``--profile`` is not
    ``--role``, nor ``--json`` ``--version``; a short option names the one long option of its
    letter (``-v``: ``--version``)."""
    from layerconf.core.suggest import did_you_mean

    names = {option.lstrip("-"): option for option in options}
    letter = word[1:] if len(word) == 2 and word[0] == "-" != word[1] else None
    if letter is not None:  # ``-v``: the one long option of that letter (``--version``), if one
        longs = [option for option in names.values() if option[:3] == "--" + letter]
        return f"; did you mean {longs[0]!r}?" if len(longs) == 1 else ""
    match = did_you_mean(word.lstrip("-"), names, cutoff=0.75)
    return f"; did you mean {names[match]!r}?" if match else ""


class Command(NamedTuple):
    """One subcommand: its name, usage, help texts, options, and what runs it."""

    name: str
    usage: str
    summary: str
    description: str
    epilog: str
    options: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, list[str]], int]
    #: The trainer's command line after ``--``: required, or refused.
    takes_argv: bool = True
    #: --profile / --parser: the command builds the trainer's parser (audit records do not).
    takes_parser: bool = True
    #: With `takes_argv`: the command also runs without ``--`` (check's role files).
    argv_optional: bool = False

    def parser(self) -> argparse.ArgumentParser:
        parser = CommandParser(
            prog=f"{PROG} {self.name}",
            usage=self.usage,
            description=self.description,
            epilog=self.epilog,
            formatter_class=UnmeasuredFormatter,  # while the options are added: no shutil
            allow_abbrev=False,
        )
        if self.takes_parser:
            parser_options(parser, sources=self.takes_argv)
        self.options(parser)
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        return parser


def usage(name: str, rest: str = "", *, takes_parser: bool = True, takes_argv: bool = True) -> str:
    """A command's usage: the trainer's options, then its own, on lines aligned as argparse
    aligns them."""
    if not takes_parser:
        return f"{PROG} {name} [-h] {rest}"
    indent = "\n" + " " * len(f"usage: {PROG} {name} ")
    text = f"{PROG} {name} [-h] {PARSER_USAGE}"
    text += indent + (SOURCES_USAGE if takes_argv else PRESET_USAGE)
    if rest:
        text += indent + rest
    return text


def no_options(parser: argparse.ArgumentParser) -> None:
    """The options of a command that has none of its own."""
    del parser
