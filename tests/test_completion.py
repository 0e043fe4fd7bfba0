"""layerconf completion: the scripts, run by the real shells, and what they offer."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from layerconf import load_profile
from layerconf.cli.commands.completion import MAX_INPUT_BYTES, candidates, line_words

ROOT = Path(__file__).parent.parent
# A user's trainer, named with --parser on the line being completed.
TRAINER = """\
import argparse
import enum


class Color(enum.Enum):
    red = 1
    blue = 2


def get_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--color", type=lambda name: Color[name], choices=list(Color))
    parser.add_argument("--count", type=int, default=1)
    return parser
"""
# How long a shell may take to answer before the test fails (a bound, not a measurement).
ANSWER_SECONDS = 60.0


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with a ``layerconf`` that runs this interpreter's layerconf, for PATH."""
    directory = tmp_path_factory.mktemp("bin")
    script = directory / "layerconf"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m layerconf "$@"\n')
    script.chmod(0o755)
    return directory


@pytest.fixture(scope="module")
def trainer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("trainer")
    (directory / "mytrainer.py").write_text(TRAINER)
    return directory


def _environment(shim: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ.get('PATH', '')}"}


def _bash() -> str:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    return bash


def bash_offers(shim: Path, line: str, cwd: Path | None = None, first: str = "") -> list[str]:
    """What a real bash offers at the end of `line`: the script is sourced, and its function
    called with COMP_LINE, COMP_POINT, COMP_WORDS and COMP_CWORD as bash's readline sets them
    (the words split at COMP_WORDBREAKS, as readline splits them). `first`: run before."""
    program = f"""
{first}
eval "$(layerconf completion bash)"
spec=$(complete -p layerconf)
[[ $spec == "complete -o default -F _layerconf_completion layerconf" ]] || {{ echo "$spec"; exit 3; }}
COMP_LINE={shlex.quote(line)}
COMP_POINT=${{#COMP_LINE}}
read -r -a COMP_WORDS <<< "$(printf '%s' "$COMP_LINE" | sed -E 's/([=:])/ \\1 /g')"
[[ $COMP_LINE == *' ' ]] && COMP_WORDS+=('')
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
_layerconf_completion layerconf "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    result = subprocess.run(
        [_bash(), "--norc", "--noprofile", "-i", "-c", program],
        capture_output=True,
        text=True,
        env=_environment(shim),
        cwd=cwd,
        check=False,
        timeout=ANSWER_SECONDS,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return [line for line in result.stdout.splitlines() if line]


class TestBash:
    """The bash script in a real bash: what TAB offers."""

    def test_trainer_flag(self, shim: Path) -> None:
        """`layerconf -- --tensor-mo<TAB>` offers the trainer's flag."""
        assert bash_offers(shim, "layerconf -- --tensor-mo") == ["--tensor-model-parallel-size"]

    def test_explain_keys(self, shim: Path) -> None:
        """`layerconf explain l<TAB>` offers every dest that starts with l."""
        dests = sorted({a.dest for a in load_profile()._actions if a.dest.startswith("l")})
        offered = bash_offers(shim, "layerconf explain l")
        assert offered == dests
        assert {"lr", "lr_decay_style", "load"} <= set(offered)

    def test_choice_values(self, shim: Path) -> None:
        """After a flag with choices, its choices; after `=`, the same (bash splits at =)."""
        choices = ["constant", "linear", "cosine", "inverse-square-root", "WSD"]
        assert bash_offers(shim, "layerconf show -- --lr-decay-style ") == choices
        assert bash_offers(shim, "layerconf show -- --lr 1e-5 --lr-decay-style=co") == [
            "constant",
            "cosine",
        ]

    def test_commands_and_options(self, shim: Path) -> None:
        """Commands, subcommands, a command's options and their values."""
        assert bash_offers(shim, "layerconf ") == [
            "explain",
            "show",
            "diff",
            "check",
            "schema",
            "audit",
            "completion",
        ]
        assert bash_offers(shim, "layerconf audit ") == [
            "diff",
            "replay",
            "verify",
            "relaunch",
            "explain",
        ]
        assert bash_offers(shim, "layerconf explain --r") == ["--role"]
        assert bash_offers(shim, "layerconf explain --role ") == ["actor", "critic"]
        assert bash_offers(shim, "layerconf explain --profile ") == ["megatron-slime"]
        assert bash_offers(shim, "layerconf completion ") == ["bash", "zsh", "fish"]
        assert bash_offers(shim, "layerconf check --") == [
            "--help",
            "--profile",
            "--parser",
            "--preset",
            "--env-prefix",
            "--strict",
            "--format",
            "--json",
            "--",
        ]
        assert bash_offers(shim, "layerconf check --format ") == ["text", "json", "github", "sarif"]

    def test_users_parser(self, shim: Path, trainer: Path) -> None:
        """--parser on the line: its flags and its enum choices, by name."""
        line = "layerconf show --parser mytrainer:get_parser -- --co"
        assert bash_offers(shim, line, cwd=trainer) == ["--color", "--count"]
        assert bash_offers(shim, line + "lor ", cwd=trainer) == ["red", "blue"]
        assert bash_offers(shim, "layerconf explain --parser mytrainer:get_parser c", trainer) == [
            "color",
            "count",
        ]

    def test_choices_are_quoted(self, shim: Path, tmp_path: Path) -> None:
        """A choice bash would read as two words, an open quote or code is offered quoted, as
        bash reads it back (bash inserts the text as given); one holding a newline or an
        escape is not offered at all."""
        (tmp_path / "hostile.py").write_text(
            "import argparse\n"
            "def get_parser():\n"
            "    parser = argparse.ArgumentParser()\n"
            "    choices = ['blue green', '$(touch pwned)', \"a'b\", 'x\\ny', 'e\\x1b[2J']\n"
            "    parser.add_argument('--mode', choices=choices)\n"
            "    return parser\n"
        )
        line = "layerconf show --parser hostile:get_parser -- --mode "
        assert bash_offers(shim, line, tmp_path) == [
            "blue\\ green",
            "\\$\\(touch\\ pwned\\)",
            "a\\'b",
        ]
        assert bash_offers(shim, line + "'a", tmp_path) == ["a'\\''b"]
        assert bash_offers(shim, line + '"', tmp_path) == ["blue green", "\\$(touch pwned)", "a'b"]
        assert bash_offers(shim, line.replace("mode ", "mode=bl"), tmp_path) == ["blue\\ green"]
        assert not (tmp_path / "pwned").exists()

    def test_without_mapfile(self, shim: Path) -> None:
        """bash 3.2 (macOS's) has no mapfile builtin: the script does without it."""
        line = "layerconf show -- --lr-decay-style co"
        assert bash_offers(shim, line, first="enable -n mapfile") == ["constant", "cosine"]

    def test_nothing_known(self, shim: Path) -> None:
        """A path, an unknown command or a parser that does not import: nothing (bash then
        completes file names), and no error on the terminal."""
        assert bash_offers(shim, "layerconf audit -o ") == []
        assert bash_offers(shim, "layerconf nope --") == []
        assert bash_offers(shim, "layerconf show --parser nope:x -- --") == []
        assert bash_offers(shim, "layerconf show --profile nope lr") == []


def _tmux() -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")


def _typed_in_a_terminal(
    shell: list[str], environment: dict[str, str], keys: list[str], wanted: str, socket: Path
) -> None:
    """Start `shell` in a tmux terminal, wait for its prompt (``ready$`` or ``ready%``), type
    `keys`, and wait until a line of the screen reads `wanted`."""
    session = "layerconf-completion"
    tmux = ["tmux", "-S", str(socket)]  # a server of its own, whatever else runs
    start = ["new-session", "-d", "-s", session, "-x", "200", "-y", "20"]
    subprocess.run([*tmux, *start, *shell], env=environment, check=True)
    try:
        _screen_with(tmux, session, wanted[: len("ready$")])
        subprocess.run([*tmux, "send-keys", "-t", session, *keys], check=True)
        _screen_with(tmux, session, wanted)
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)


class TestInATerminal:
    """In an interactive shell in a terminal (tmux), TAB completes as the docs say."""

    def test_bash(self, shim: Path, tmp_path: Path) -> None:
        """bash: `layerconf -- --tensor-mo<TAB>` becomes the trainer's flag."""
        _tmux()
        rc = tmp_path / "bashrc"
        rc.write_text('PS1="ready$ "\neval "$(layerconf completion bash)"\n')
        _typed_in_a_terminal(
            [_bash(), "--noprofile", "--rcfile", str(rc), "-i"],
            _environment(shim),
            ["layerconf -- --tensor-mo", "Tab"],
            "ready$ layerconf -- --tensor-model-parallel-size",
            tmp_path / "tmux",
        )

    @pytest.mark.parametrize(
        ("typed", "wanted"),
        [
            ("layerconf -- --tensor-mo", "ready% layerconf -- --tensor-model-parallel-size"),
            (
                "layerconf show -- --lr-decay-style=cos",
                "ready% layerconf show -- --lr-decay-style=cosine",
            ),
            ("layerconf explain lr_decay_st", "ready% layerconf explain lr_decay_style"),
            (  # zsh's words keep their quotes: the script removes them, as the shell will
                "layerconf explain --profile 'megatron-slime' lr_decay_st",
                "ready% layerconf explain --profile 'megatron-slime' lr_decay_style",
            ),
        ],
        ids=["trainer-flag", "choice-after-equals", "explain-key", "quoted-word"],
    )
    def test_zsh(self, shim: Path, tmp_path: Path, typed: str, wanted: str) -> None:
        """zsh, with compinit and the script sourced as the docs say."""
        _tmux()
        zsh = shutil.which("zsh")
        if zsh is None:
            pytest.skip("zsh is not installed")
        (tmp_path / ".zshrc").write_text(
            'PS1="ready%% "\nautoload -Uz compinit && compinit -u\n'
            "source <(layerconf completion zsh)\n"
        )
        environment = {**_environment(shim), "ZDOTDIR": str(tmp_path)}
        _typed_in_a_terminal([zsh, "-i"], environment, [typed, "Tab"], wanted, tmp_path / "tmux")

    @pytest.mark.parametrize(
        ("typed", "wanted"),
        [
            ("layerconf explain lr_decay_st", "ready> layerconf explain lr_decay_style"),
            (  # the word being typed reaches layerconf without its quote
                "layerconf explain 'lr_decay_st",
                "ready> layerconf explain 'lr_decay_style'",
            ),
        ],
        ids=["explain-key", "quoted-word"],
    )
    def test_fish(self, shim: Path, tmp_path: Path, typed: str, wanted: str) -> None:
        """fish, with the script sourced as the docs say."""
        _tmux()
        fish = shutil.which("fish")
        if fish is None:
            pytest.skip("fish is not installed")
        setup = "layerconf completion fish | source; function fish_prompt; echo -n 'ready> '; end"
        shell = [fish, "--no-config", "--init-command", setup]
        _typed_in_a_terminal(shell, _environment(shim), [typed, "Tab"], wanted, tmp_path / "tmux")


def _screen_with(tmux: list[str], session: str, wanted: str) -> None:
    """Wait until a line of the terminal reads `wanted`; fail after ANSWER_SECONDS."""
    deadline = time.monotonic() + ANSWER_SECONDS
    screen = ""
    while time.monotonic() < deadline:
        screen = subprocess.run(
            [*tmux, "capture-pane", "-p", "-t", session],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if wanted in [line.rstrip() for line in screen.splitlines()]:
            return
        time.sleep(0.1)
    pytest.fail(f"the terminal never showed {wanted!r}; it shows:\n{screen}")


class TestOtherShells:
    """The zsh and fish scripts are read by the real shells, where they are installed."""

    @pytest.mark.parametrize("shell", ["zsh", "fish"])
    def test_syntax(self, shell: str, shim: Path) -> None:
        """`zsh -n` / `fish -n` accept the script."""
        program = shutil.which(shell)
        if program is None:
            pytest.skip(f"{shell} is not installed: its script is not syntax-checked here")
        script = subprocess.run(
            [sys.executable, "-m", "layerconf", "completion", shell],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        result = subprocess.run(
            [program, "-n"], input=script, capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, result.stderr

    @pytest.mark.parametrize(
        ("shell", "words"), [("zsh", "explain\0l"), ("fish", "--\0--tensor-mo")]
    )
    def test_their_protocol(self, shell: str, words: str) -> None:
        """zsh and fish send the words, NUL after each: the answers are bash's."""
        result = subprocess.run(
            [sys.executable, "-m", "layerconf", "completion", shell, "--complete"],
            input=words + "\0",
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        expected = candidates(words.split("\0"))
        assert expected
        assert result.stdout.splitlines() == expected


class TestCandidates:
    """The words the scripts offer, from the parsers."""

    def test_line_words(self) -> None:
        """A bash line splits as bash reads it; an open quote or a trailing space is a word."""
        assert line_words("layerconf explain l") == ["layerconf", "explain", "l"]
        assert line_words("layerconf explain ") == ["layerconf", "explain", ""]
        assert line_words('layerconf "explain" --role "ac') == [
            "layerconf",
            "explain",
            "--role",
            "ac",
        ]
        assert line_words("layerconf 'a b' c\\ d") == ["layerconf", "a b", "c d"]
        assert line_words("") == [""]

    def test_only_what_starts_with_the_word(self) -> None:
        """Every candidate starts with the word being completed; none is offered twice."""
        offered = candidates(["--", "--n"])
        assert offered
        assert all(word.startswith("--n") for word in offered)
        assert len(offered) == len(set(offered))

    def test_every_trainer_flag(self) -> None:
        """After -- and a dash: every option string of the profile's parser."""
        options = [o for a in load_profile()._actions for o in a.option_strings]
        assert candidates(["show", "--", "-"]) == list(dict.fromkeys(options))

    @pytest.mark.parametrize("typed", [[""], ["runs/001", ""], ["runs/001", "l"]])
    def test_audit_explain(self, typed: list[str]) -> None:
        """audit explain's RECORD and KEY are no parser's: nothing offered (the shell completes
        file names); before, a traceback (the command takes no --profile)."""
        assert candidates(["audit", "explain", *typed]) == []

    def test_preset_roles(self, trainer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """--role takes the roles of the preset on the line: plain has one."""
        monkeypatch.chdir(trainer)
        assert candidates(["explain", "--preset", "plain", "--role", ""]) == ["main"]

    @pytest.mark.parametrize(
        ("shell", "sent", "words"),
        [
            ("bash", " \0layerconf", None),
            ("bash", "", None),
            ("zsh", "", [""]),
            ("fish", "explain\0l", ["explain", "l"]),
        ],
        ids=["bash-command-name", "bash-nothing", "zsh-empty-word", "fish-no-last-nul"],
    )
    def test_little_input(self, shell: str, sent: str, words: list[str] | None) -> None:
        """The command's own name being typed: nothing; a last NUL may be left out."""
        result = subprocess.run(
            [sys.executable, "-m", "layerconf", "completion", shell, "--complete"],
            input=sent,
            capture_output=True,
            text=True,
            check=False,
        )
        assert (result.returncode, result.stderr) == (0, "")
        assert result.stdout.splitlines() == (candidates(words) if words else [])

    def test_too_much_input(self) -> None:
        """More than MAX_INPUT_BYTES on stdin: a usage error, not a read without end."""
        result = subprocess.run(
            [sys.executable, "-m", "layerconf", "completion", "zsh", "--complete"],
            input=b"x" * (MAX_INPUT_BYTES + 1),
            capture_output=True,
            check=False,
        )
        assert result.returncode == 2
        assert result.stderr.decode() == (
            "layerconf completion: error: --complete reads at most 1048576 bytes of command "
            "line; got more\n"
        )
