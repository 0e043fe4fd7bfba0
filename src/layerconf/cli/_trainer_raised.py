"""What the trainer's parser raised, in one line that quotes no secret of the command line
(`trainer_raised`): for `layerconf.cli.stops`, which reports it as a problem or a note."""

from __future__ import annotations

from typing import TYPE_CHECKING

from layerconf.cli.errors import describe

if TYPE_CHECKING:
    import argparse

__all__ = ["holds_secret", "secret_described", "trainer_raised"]


def trainer_raised(error: BaseException, parser: argparse.ArgumentParser, argv: list[str]) -> str:
    """``the trainer's parser raised KeyError: 'x' at train.py:12``, with no secret of `argv`
    quoted (`secret_described`)."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    from layerconf.core._secret_text import command_line_secrets

    described = secret_described(error, command_line_secrets(argv, parser))
    return f"the trainer's parser raised {described}{where}"


def holds_secret(text: str, secrets: list[str]) -> bool:
    """Whether `text` holds one of `secrets` (however short) or shows a secret of its own."""
    from layerconf.core.secrets import shows_secret

    return any(secret in text for secret in secrets) or shows_secret(text)


def secret_described(error: BaseException, secrets: list[str]) -> str:
    """`describe(error)`, its message replaced by the secret policy's placeholder when it
    holds a secret's text (a type= callable's ``KeyError('S')`` of a secret flag's value)."""
    from layerconf.core.secrets import SECRETS
    from layerconf.core.values import shorten

    text = describe(error, None)  # (whole: a secret cut short is no longer found)
    name, _, message = text.partition(": ")
    if message and holds_secret(message, secrets):
        return f"{name}: {SECRETS.placeholder}"
    return f"{name}: {shorten(message)}" if message else text
