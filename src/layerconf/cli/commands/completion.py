"""``layerconf completion``: shell completion for bash, zsh and fish, answered by layerconf itself.

The script a shell sources is a few lines that hand the command line typed so far to
``layerconf completion SHELL --complete`` and offer what it prints, one candidate a line. The
candidates come from the parsers themselves, read when TAB is pressed: layerconf's commands
and options, the trainer's flags after ``--`` and their choices (from the parser that
``--profile`` / ``--parser`` name, as the command would build it), and dest names for
``explain``. A script generated once from a parser (shtab's kind) could not follow ``--`` to
another parser, nor know the parser a ``--parser`` on the line names; so the scripts stay
small and the answers stay in Python, where they are tested.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence

from layerconf.cli.command import Command
from layerconf.cli.errors import EXIT_OK, PROG, UsageError
from layerconf.cli.scrub import stdout

__all__ = ["COMMANDS", "MAX_INPUT_BYTES", "SCRIPTS", "SHELLS", "candidates", "line_words"]

SHELLS = ("bash", "zsh", "fish")
#: The most a command line sent to --complete may hold: far beyond any real one.
MAX_INPUT_BYTES = 1024 * 1024

_BASH = r"""# layerconf completion for bash: eval "$(layerconf completion bash)" (in ~/.bashrc, say)
_layerconf_completion() {
    local word
    COMPREPLY=()  # (no mapfile: bash 3.2, macOS's, has none)
    while IFS= read -r word; do COMPREPLY+=("$word"); done < <(
        printf '%s\0%s' "$COMP_WORDBREAKS" "${COMP_LINE:0:COMP_POINT}" \
            | command layerconf completion bash --complete 2>/dev/null)
}
complete -o default -F _layerconf_completion layerconf
"""

_ZSH = r"""#compdef layerconf
# layerconf completion for zsh: source <(layerconf completion zsh) after compinit, or save it
# as _layerconf in a directory of $fpath.
_layerconf() {
    local -a candidates
    candidates=("${(@f)$(printf '%s\0' "${(@Q)words[2,CURRENT-1]}" "$PREFIX" \
        | command layerconf completion zsh --complete 2>/dev/null)}")
    candidates=(${candidates:#})
    if [[ $PREFIX == --*=* ]]; then
        compset -P '*='
        candidates=("${candidates[@]#*=}")
    fi
    if (( ${#candidates} )); then
        compadd -- "${candidates[@]}"
    else
        _files
    fi
}
if [[ "${funcstack[1]}" == _layerconf ]]; then
    _layerconf "$@"
else
    compdef _layerconf layerconf
fi
"""

_FISH = r"""# layerconf completion for fish: layerconf completion fish | source
# (or save it as ~/.config/fish/completions/layerconf.fish)
function __layerconf_complete
    set -l current (commandline -ct | string unescape)  # 'lr_dec -> lr_dec, as -o does
    set -q current[1]; or set current (commandline -ct)
    set -l tokens (commandline -opc) $current
    set -l found (printf '%s\0' $tokens[2..-1] \
        | command layerconf completion fish --complete 2>/dev/null)
    if set -q found[1]
        printf '%s\n' $found
    else
        __fish_complete_path (commandline -ct)
    end
end
complete -c layerconf -f -a '(__layerconf_complete)'
"""

SCRIPTS = {"bash": _BASH, "zsh": _ZSH, "fish": _FISH}


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    parser.add_argument(
        "--complete",
        action="store_true",
        help="what the script runs: read the command line typed so far on stdin and print "
        "its completions, one a line (bash: COMP_WORDBREAKS, NUL, the line up to the cursor; "
        "zsh and fish: the words after 'layerconf', each followed by NUL, the last the one "
        "being completed)",
    )


def _run(options: argparse.Namespace, argv: list[str]) -> int:
    del argv
    shell: str = options.shell
    if not options.complete:
        stdout().write(SCRIPTS[shell])
        return EXIT_OK
    data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(
            f"--complete reads at most {MAX_INPUT_BYTES} bytes of command line; got more",
            f"{PROG} completion",
        )
    text = data.decode("utf-8", "surrogateescape")
    quote: str | None = None  # zsh and fish quote what they insert themselves
    if shell == "bash":
        breaks, _, line = text.partition("\0")
        words, quote = _split(line)
        words = words[1:]  # the first is layerconf itself
    else:
        words, breaks = text.removesuffix("\0").split("\0"), ""
    if not words:  # the command's own name is being typed: the shell's job
        return EXIT_OK
    found = candidates(words)
    cut = max((words[-1].rfind(char) for char in breaks), default=-1) + 1
    for candidate in found:
        if not candidate.isprintable():  # a parser's choice holding a newline or an escape
            continue
        # bash replaces only what follows the last word break (= or :) of the current word,
        # with the text as given: quoted here, as zsh and fish quote it.
        tail = candidate[cut:]
        print(tail if quote is None else _bash_quoted(tail, quote), file=stdout())
    return EXIT_OK


def _bash_quoted(text: str, quote: str) -> str:
    """`text` as bash reads it back inside `quote` (``'``, ``"``, or none open): a choice
    ``blue green`` or ``$(x)`` is inserted as one word, never as code."""
    if quote == "'":
        return text.replace("'", "'\\''")
    if quote == '"':
        return "".join("\\" + char if char in '"$`\\' else char for char in text)
    return "".join(char if char.isalnum() or char in _SAFE else "\\" + char for char in text)


_SAFE = frozenset("_-+=:,./@%^")


def line_words(line: str) -> list[str]:
    """The words of a bash command line typed up to the cursor, as the shell will read them;
    the last is the word being completed ('' after a space)."""
    return _split(line)[0]


def _split(line: str) -> tuple[list[str], str]:
    """`line_words`, and the quote open at the end of the line ('' when none is)."""
    for closing in ("", '"', "'"):
        try:
            words = shlex.split(line + closing)
        except ValueError:  # an open quote: the word being typed is inside it
            continue
        if not closing and (not line or line[-1] in " \t\n") and not line.endswith("\\ "):
            words.append("")
        return words or [""], closing
    return [""], ""


def candidates(words: Sequence[str]) -> list[str]:
    """What may complete the last of `words` (the words after ``layerconf``), sorted as
    the parsers list them, duplicates dropped."""
    *before, current = words
    try:
        if "--" in before:
            split = before.index("--")
            found = _trainer_words(before[:split], before[split + 1 :], current)
        else:
            found = _own_words(before, current)
    except UsageError:  # an unknown profile, a --parser that does not import: nothing to offer
        return []
    return [word for word in dict.fromkeys(found) if word.startswith(current)]


def _commands() -> dict[str, Command]:
    from layerconf.cli import app  # app lists this module among its commands

    return app._commands()


def _own_words(before: list[str], current: str) -> list[str]:
    """Candidates before ``--``: commands, then the command's options and their values."""
    commands = _commands()
    if not before:
        if current.startswith("-"):
            return ["--help", "--version", "-h"]
        return list(dict.fromkeys(name.split()[0] for name in commands))
    name, rest = before[0], before[1:]
    subcommands = [n.split()[1] for n in commands if n.startswith(f"{name} ")]
    if subcommands and rest and rest[0] in subcommands:
        name, rest = f"{name} {rest[0]}", rest[1:]
    elif subcommands and not rest and not current.startswith("-"):
        return subcommands
    command = commands.get(name)
    if command is None:
        return []
    parser = command.parser()
    options = _option_values(parser, rest)
    value_of = _value_words(parser, rest, current, options)
    if value_of is not None:
        return value_of
    if current.startswith("-"):
        own = [option for action in parser._actions for option in action.option_strings]
        return own + (["--"] if command.takes_argv else [])
    return _positional_words(parser, options)


def _trainer_words(own: list[str], trainer: list[str], current: str) -> list[str]:
    """Candidates after ``--``: the trainer's flags, and the choices of the flag before (with
    no command yet, the default profile's: the command is written in later)."""
    from layerconf.cli.trainer import DEFAULT_PROFILE, trainer_parser

    options = argparse.Namespace(profile=DEFAULT_PROFILE, parser=None)
    if own:
        commands = _commands()
        command = commands.get(" ".join(own[:2])) or commands.get(own[0])
        if command is None or not command.takes_argv:
            return []
        options = _option_values(command.parser(), own[1:])
    parser = trainer_parser(options)
    value_of = _value_words(parser, trainer, current, None)
    if value_of is not None:
        return value_of
    if current.startswith("-"):
        return [option for action in parser._actions for option in action.option_strings]
    return []


def _option_values(parser: argparse.ArgumentParser, tokens: list[str]) -> argparse.Namespace:
    """The values `tokens` give the options of `parser` (the last one wins), defaults else;
    positionals and unknown tokens are skipped, so a line being typed never fails."""
    options = argparse.Namespace(
        **{a.dest: a.default for a in parser._actions if a.dest != argparse.SUPPRESS}
    )
    for index, token in enumerate(tokens):
        option, equals, value = token.partition("=")
        action = parser._option_string_actions.get(option)
        if action is None or action.nargs == 0:
            continue
        if not equals:
            if index + 1 >= len(tokens):
                continue
            value = tokens[index + 1]
        setattr(options, action.dest, value)
    return options


def _value_words(
    parser: argparse.ArgumentParser,
    tokens: list[str],
    current: str,
    options: argparse.Namespace | None,
) -> list[str] | None:
    """The values of the option `current` (``--x=...``) or the last token names, None when
    neither is an option that takes a value. `options`: layerconf's own, before ``--``."""
    prefix = ""
    if current.startswith("--") and "=" in current:
        option, _, _ = current.partition("=")
        prefix = option + "="
    elif tokens:
        option = tokens[-1]
    else:
        return None
    action = parser._option_string_actions.get(option)
    if action is None or action.nargs == 0:
        return None
    return [prefix + value for value in _action_values(action, options)]


def _action_values(action: argparse.Action, options: argparse.Namespace | None) -> list[str]:
    """What one option takes, as it is typed: its choices; for layerconf's own --profile,
    --preset and --role, the bundled profiles, the named presets and the preset's roles."""
    if action.choices is not None:
        return [_typed(choice) for choice in action.choices]
    if options is None:
        return []
    if action.dest == "profile":
        from layerconf.profiles.loader import available_profiles

        return list(available_profiles())
    if action.dest == "preset":
        return ["slime", "plain"]
    if action.dest == "role" and hasattr(options, "preset"):
        return list(_roles(options))
    return []


def _roles(options: argparse.Namespace) -> Sequence[str]:
    """The roles of the preset --preset names (slime's by default with a profile)."""
    from layerconf.cli.trainer import check_options, preset_of

    chosen = argparse.Namespace(preset=options.preset, parser=options.parser, role=None)
    check_options(chosen, PROG)
    return preset_of(chosen).roles


def _positional_words(parser: argparse.ArgumentParser, options: argparse.Namespace) -> list[str]:
    """The words a command's positional argument takes: a dest name for a KEY, or a choice."""
    for action in parser._actions:
        if action.option_strings:
            continue
        if action.metavar == "KEY":
            # audit explain's keys are a record's, not a parser's: the shell completes files
            return _trainer_dests(options) if hasattr(options, "profile") else []
        if action.choices is not None:
            return [_typed(choice) for choice in action.choices]
    return []


def _trainer_dests(options: argparse.Namespace) -> list[str]:
    """The dest names of the trainer's parser that --profile / --parser name."""
    from layerconf.cli.trainer import trainer_parser

    parser = trainer_parser(options)
    return sorted({a.dest for a in parser._actions if a.dest != argparse.SUPPRESS})


def _typed(choice: object) -> str:
    """A choice as it is typed: an enum member by name, anything else as its text."""
    from layerconf.core.values import jsonable

    encoded = jsonable(choice)
    return encoded if isinstance(encoded, str) else str(encoded)


COMMANDS = (
    Command(
        "completion",
        f"{PROG} completion [-h] [--complete] SHELL",
        "shell completion for bash, zsh or fish",
        "A script that makes SHELL complete layerconf's command lines: its commands and "
        "options,\nthe trainer's flags after '--' and their choices (from the parser "
        "--profile or --parser\nname on the line), and key names for explain.",
        "examples:\n"
        f'  eval "$({PROG} completion bash)"              # in ~/.bashrc\n'
        f"  source <({PROG} completion zsh)               # in ~/.zshrc, after compinit\n"
        f"  {PROG} completion fish > ~/.config/fish/completions/{PROG}.fish",
        _options,
        _run,
        takes_argv=False,
        takes_parser=False,
    ),
)
