"""Secrets never reach the command's output: the running scrubber and the streams it guards.

The values of secret keys are redacted where they are printed as values (`Setting.redacted`);
the scrubber catches the same text anywhere else. It learns the secrets of the command line when
the command starts (`scrubbing`) and those of the roles once they resolve (`learn_secrets`).
The commands write through `stdout()` and `stderr()`, the running command's own scrubbed
streams (a context variable): they never write through ``sys.stdout`` (the console script
points it at stderr while a command runs), so commands run in many threads at once each
scrub their own secrets.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO, cast

from layerconf.cli.streams import standard_error
from layerconf.core.secrets import TextSearch, hide_url_passwords
from layerconf.core.values import TEXTLESS_TYPES

if TYPE_CHECKING:
    import argparse


class Scrubber:
    """Replaces every secret value found (in argv, in the roles) in the text the command writes.

    This catches a secret's text wherever it is written: an argv notice that quotes
    ``--sglang-api-key ...``, a raw JSON string that embeds an ``HF_TOKEN``. As in audit
    records, values shorter than ``SECRETS.min_scrub_length`` are redacted as values only, so
    that a key such as ``"1"`` cannot wreck the output; a URL's password, found by its place,
    is hidden however short.
    """

    def __init__(self) -> None:
        from layerconf.core.secrets import SECRETS

        self.policy = SECRETS
        self.secrets: list[str] = []
        self.found = TextSearch(())

    def add(self, values: Iterable[str]) -> None:
        import json

        known = set(self.secrets)
        for value in values:
            if len(value) >= self.policy.min_scrub_length:
                # As written, as repr() escapes it (alone, or inside a text whose quotes make
                # repr() escape its single quotes), and each of those as JSON escapes it (a
                # --json output's "repr" field).
                reprs = {value, repr(value)[1:-1], repr(value + "'\"")[1:-4]}
                for form in reprs:
                    known.update(
                        (form, json.dumps(form)[1:-1], json.dumps(form, ensure_ascii=False)[1:-1])
                    )
        self.secrets = sorted(known, key=len, reverse=True)  # a secret holding another goes whole
        self.found = TextSearch(self.secrets)  # (in time linear in a text, however many)

    def add_argv(self, argv: Sequence[str]) -> None:
        from layerconf.core.secrets import redact_argv

        self.add(redact_argv(argv, self.policy)[1])

    def __call__(self, text: str) -> str:
        if "://" in text:  # a URL's password, however short (a record's written by hand)
            text = hide_url_passwords(text, self.policy.placeholder)[0]
        for secret in self.found(text):
            text = text.replace(secret, self.policy.placeholder)
        return text


class _Running:
    """The running command's scrubber and the streams it writes through."""

    def __init__(self, scrubber: Scrubber, output: TextIO | None = None) -> None:
        self.scrubber = scrubber
        # The streams as they are when the command starts, wrapped: never swapped in sys.
        self.stdout = cast(TextIO, _ScrubbedStream(output or sys.stdout, scrubber))
        self.stderr = cast(TextIO, _ScrubbedStream(cast(TextIO, standard_error()), scrubber))


# The running command, per thread (and task): main() may run in many threads at once.
_RUNNING: contextvars.ContextVar[_Running | None] = contextvars.ContextVar(
    "layerconf_cli_command", default=None
)


@contextlib.contextmanager
def scrubbing(argv: Sequence[str], output: TextIO | None = None) -> Iterator[None]:
    """Run a command on `argv`: what it writes through `stdout()` (`output`, else
    ``sys.stdout``) and `stderr()` has its secrets, and those it learns, scrubbed. Nothing
    process-wide is changed."""
    scrubber = Scrubber()
    scrubber.add_argv(argv)
    running = _RUNNING.set(_Running(scrubber, output))
    try:
        yield
    finally:
        _RUNNING.reset(running)


def stdout() -> TextIO:
    """Where the running command writes its output (`scrubbing`'s `output`, else
    ``sys.stdout``), scrubbed of secrets."""
    running = _RUNNING.get()
    return sys.stdout if running is None else running.stdout


def stderr() -> TextIO:
    """Where the running command writes its messages: ``sys.stderr``, scrubbed of secrets."""
    running = _RUNNING.get()
    return sys.stderr if running is None else running.stderr


def scrubbed(text: str) -> str:
    """`text` as the running command's streams write it, if one is running: for a text cut
    before it is written (a secret cut short is no longer found)."""
    running = _RUNNING.get()
    return text if running is None else running.scrubber(text)


def learn_argv_secrets(argv: Sequence[str], parser: argparse.ArgumentParser) -> None:
    """Teach the running command's scrubber the secret values of the trainer's `argv`, each
    token classified by the action `parser` matches (abbreviations, aliases, clusters)."""
    running = _RUNNING.get()
    if running is not None:
        from layerconf.core.secrets import redact_argv

        running.scrubber.add(redact_argv(argv, running.scrubber.policy, parser=parser)[1])


def learn_secrets(roles: Mapping[str, argparse.Namespace]) -> None:
    """Teach the running command's scrubber, if there is one, the secrets the roles hold."""
    running = _RUNNING.get()
    if running is not None:
        running.scrubber.add(_secret_texts(roles))


class _ScrubbedStream:
    """A text stream that scrubs secrets from everything written to it; the rest is delegated."""

    def __init__(self, stream: TextIO, scrubber: Scrubber) -> None:
        self._stream = stream
        self._scrubber = scrubber

    def write(self, text: str) -> int:
        return self._stream.write(self._scrubber(text))

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, flush...
        return getattr(self._stream, name)


def _secret_texts(roles: Mapping[str, argparse.Namespace]) -> list[str]:
    """The text of every secret the roles hold: secret keys' values, also inside containers
    and records' fields (`held_texts`), and what a text's form shows (a URL's password)."""
    from layerconf.core.held_secrets import held_texts, policy_of
    from layerconf.core.namespace import provenance_of
    from layerconf.core.secrets import SECRETS

    found: list[str] = []
    visited: dict[str, Any] = {}  # each key's value last visited: roles share most values
    for namespace in roles.values():
        provenance = provenance_of(namespace)  # (its secret flags' dests: `Layer.secret_keys`)
        policy = SECRETS if provenance is None else policy_of(provenance.layers)
        is_secret = policy.is_secret
        for key, value in vars(namespace).items():
            if key in visited and visited[key] is value:
                continue  # the very object another role holds: its secrets are found already
            visited[key] = value
            if type(value) in _HOLDS_NO_TEXT and not is_secret(key):
                continue  # most values: answered without a call
            # (not the reprs of other objects: the output's URL passwords are hidden anyway)
            held_texts(key, value, policy, found, reprs=False)
    return found


# Values that hold no text when their key is not a secret's.
_HOLDS_NO_TEXT = TEXTLESS_TYPES
