"""``audit relaunch`` of a forged record: no control character reaches the terminal, and the
line printed still gives back the recorded tokens in a shell."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from layerconf import AuditRecord, audit, load_profile, resolve_roles
from layerconf.cli import main
from layerconf.presets import PLAIN

PARSER = load_profile()
#: An OSC title change, a bell, a clear screen, a right-to-left override, a line break, and a
#: byte that was not UTF-8 (held as a lone surrogate, as Python holds argv's).
HOSTILE = "/ckpt\x1b]0;pwned\x07\x1b[2J\u202e\nnext\udcff'q"


def _forged(tmp_path: Path, tokens: list[str]) -> Path:
    """A record whose command line was rewritten after the fact to hold `tokens`."""
    record = audit(resolve_roles(PARSER, ["--rollout-batch-size", "8", "--save", "/ckpt"]))
    record["argv"] = tokens
    path = tmp_path / "r.json"
    path.write_text(json.dumps(record))
    return path


def _shown(text: str) -> list[str]:
    """The characters of `text` a terminal would act on rather than show."""
    return [c for c in text.rstrip("\n") if not c.isprintable()]


class TestRelaunchOfAForgedRecord:
    """Tokens with control characters are written with ANSI-C quoting (``$'...\\x1b...'``)."""

    def test_nothing_unprintable_reaches_the_terminal(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        tokens = ["--rollout-batch-size", "8", "--save", HOSTILE]
        assert main(["audit", "relaunch", str(_forged(tmp_path, tokens))]) == 0
        out, err = capsys.readouterr()
        assert _shown(out) == []
        assert _shown(err) == []
        assert out == (
            "--rollout-batch-size 8 --save "
            "$'/ckpt\\x1b]0;pwned\\x07\\x1b[2J\\u202e\\nnext\\xff\\'q'\n"
        )

    @pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
    def test_the_shell_gives_back_the_tokens(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        tokens = ["--save", HOSTILE, "plain", "it's", "\x7f", "\x9b", ""]
        assert main(["audit", "relaunch", str(_forged(tmp_path, tokens))]) == 0
        line = capsys.readouterr().out
        script = f"for token in {line.strip()}; do printf '%s\\0' \"$token\"; done"
        ran = subprocess.run(
            ["bash", "-c", script],
            capture_output=True,
            check=True,
            env={**os.environ, "LC_ALL": "C.UTF-8"},
        )
        assert ran.stdout.split(b"\0")[:-1] == [os.fsencode(token) for token in tokens]

    def test_the_secret_notes_escape_their_flag(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A forged flag before a placeholder is named escaped too, on stderr."""
        tokens = ["--key\x1b[2J", "<redacted>"]
        assert main(["audit", "relaunch", str(_forged(tmp_path, tokens))]) == 0
        err = capsys.readouterr().err
        assert _shown(err) == []
        assert "argv[1]: supply the secret of $'--key\\x1b[2J'" in err


class TestAFlagNamedLikeASecretThatTakesNoValue:
    """``--use-auth-token data.txt`` (a ``store_true`` flag named like a secret's, then a
    positional): the positional's token is no secret. It was hidden in the record's command
    line, its value scrubbed (replay refused it) and relaunch asked for a secret."""

    @staticmethod
    def _roles() -> dict[str, argparse.Namespace]:
        parser = argparse.ArgumentParser()
        parser.add_argument("--use-auth-token", action="store_true")
        parser.add_argument("--lr", type=float, default=0.1)
        parser.add_argument("data")
        return resolve_roles(parser, ["--use-auth-token", "data.txt", "--lr", "0.5"], preset=PLAIN)

    def test_the_record_keeps_the_positional(self) -> None:
        record = audit(self._roles())
        assert record["argv"] == ["--use-auth-token", "data.txt", "--lr", "0.5"]
        assert record["roles"]["main"]["settings"]["use_auth_token"]["value"] == "<redacted>"
        assert AuditRecord.from_dict(record).namespace("main").data == "data.txt"

    def test_relaunch_prints_it(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        path = tmp_path / "r.json"
        path.write_text(json.dumps(audit(self._roles())))
        assert main(["audit", "relaunch", str(path)]) == 0
        out, err = capsys.readouterr()
        assert out == "--use-auth-token data.txt --lr 0.5\n"
        assert "supply the secret" not in err

    def test_a_secret_after_it_is_still_hidden(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A forged record whose secret flag is followed by a token no entry owns."""
        record = audit(self._roles())
        record["argv"] = ["--use-auth-token", "SEKRIT-1234567", "--lr", "0.5"]
        path = tmp_path / "r.json"
        path.write_text(json.dumps(record))
        assert main(["audit", "relaunch", str(path)]) == 0
        out, err = capsys.readouterr()
        assert "SEKRIT" not in out + err
        assert "argv[1]: supply the secret of --use-auth-token" in err
