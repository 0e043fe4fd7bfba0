"""Secrets never reach the command's output: the running scrubber and the streams it guards.

The values of secret keys are redacted where they are printed as values (`Setting.redacted`);
the scrubber catches the same text anywhere else. It learns the secrets of the command line when
the command starts (`scrubbing`) and those of the roles once they resolve (`learn_secrets`).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import argparse


class Scrubber:
    """Replaces every secret value found (in argv, in the roles) in the text the command writes.

    This catches a secret's text wherever it is written: an argv notice that quotes
    ``--sglang-api-key ...``, a raw JSON string that embeds an ``HF_TOKEN``. As in audit
    records, values shorter than ``SECRETS.min_scrub_length`` are redacted as values only, so
    that a key such as ``"1"`` cannot wreck the output.
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
_RUNNING: contextvars.ContextVar[Scrubber | None] = contextvars.ContextVar(
    "layerconf_cli_scrubber", default=None
)


@contextlib.contextmanager
def scrubbing(argv: Sequence[str]) -> Iterator[None]:
    """Run a command on `argv`: its secrets, and those it learns, scrubbed from its output."""
    scrubber = Scrubber()
    scrubber.add_argv(argv)
    running = _RUNNING.set(scrubber)
    try:
        with _scrubbed_output(scrubber):
            yield
    finally:
        _RUNNING.reset(running)


def learn_secrets(roles: Mapping[str, argparse.Namespace]) -> None:
    """Teach the running command's scrubber, if there is one, the secrets the roles hold."""
    scrubber = _RUNNING.get()
    if scrubber is not None:
        scrubber.add(_secret_texts(roles))


class _ScrubbedStream:
    """A text stream that scrubs secrets from everything written to it; the rest is delegated."""

    def __init__(self, stream: TextIO, scrubber: Scrubber) -> None:
        self._stream = stream
        self._scrubber = scrubber

    def write(self, text: str) -> int:
        return self._stream.write(self._scrubber(text))

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, flush...
        return getattr(self._stream, name)


@contextlib.contextmanager
def _scrubbed_output(scrubber: Scrubber) -> Iterator[None]:
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
