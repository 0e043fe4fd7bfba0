"""No secret leaves by any path: every placement of a secret x every output that could show it.

A placement is one way a secret reaches layerconf (a flag, an abbreviation, a role file line,
a JSON value...); an output is one thing a user or a log could see (a CLI command's stdout
and stderr, a record file, ``str(explain(...))``, a warning...). Each pair is one test, which
asserts that the secret's text (its distinctive tail, which every escaped form keeps) is
nowhere in the output. A new placement or output is one line in `PLACEMENTS` or `OUTPUTS`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layerconf
from layerconf import (
    PLAIN,
    ConfigError,
    audit,
    explain,
    explain_all,
    flatten,
    load_profile,
    notices,
    redacted_argv,
    resolve_roles,
    write_audit,
)
from layerconf.cli import main
from layerconf.core.secrets import REDACTED, SECRETS, SecretPolicy, TextSearch, is_secret
from layerconf.core.values import MAX_DEPTH, value_text

FIXTURES = Path(__file__).parent / "fixtures"

ROOT = Path(__file__).parent.parent
PPO_ARGV = (ROOT / "examples" / "ppo_argv.txt").read_text().splitlines()
ROLE_FILE = (ROOT / "examples" / "megatron_ppo.yaml").read_text()
KEY = b"k" * 32


class Creds(NamedTuple):
    """A namedtuple a trainer's ``type=`` makes of ``USER:KEY``."""

    user: str
    api_key: str


@dataclasses.dataclass
class Account:
    """A dataclass a trainer's ``type=`` makes of ``USER:PASSWORD``."""

    user: str
    password: str


@attrs.define
class Remote:
    """An attrs class a trainer's ``type=`` makes of ``NAME:TOKEN``."""

    name: str
    hf_token: str


class Headers(list):  # type: ignore[type-arg]
    """A list subclass a trainer's ``type=`` makes of JSON text."""


def _pair(kind: Callable[[str, str], Any]) -> Callable[[str], Any]:
    """A ``type=`` callable: ``A:B`` -> ``kind(A, B)``."""
    return lambda text: kind(*text.split(":", 1))


def own_parser() -> argparse.ArgumentParser:
    """A trainer of one's own with an alias, a flag to cluster with, abbreviations, @files, a
    secret flag whose dest is no secret's name (``--hf-token`` into ``tok``), and flags whose
    ``type=`` makes objects with secrets inside: a namedtuple's, a dataclass's and an attrs
    instance's field, a list subclass's items."""
    parser = argparse.ArgumentParser(prog="train", fromfile_prefix_chars="@")
    parser.add_argument("-k", "--api-key")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--hf-token", dest="tok")
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--name", default="run")
    parser.add_argument("--creds", type=_pair(Creds))
    parser.add_argument("--account", type=_pair(Account))
    parser.add_argument("--remote", type=_pair(Remote))
    parser.add_argument("--extra", type=lambda text: Headers(json.loads(text)))
    return parser


def _enum_name(text: str) -> str:
    """A type= callable that fails as an enum lookup does: a KeyError, which argparse lets by."""
    raise KeyError(text)


def typed_parser() -> argparse.ArgumentParser:
    """`own_parser` whose key goes through a type= callable that raises what argparse lets by."""
    parser = argparse.ArgumentParser(prog="train")
    parser.add_argument("-k", "--api-key", type=_enum_name)
    return parser


class _LogIn(argparse.Action):
    """An action that fails as a log-in does, quoting the token it was given."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        raise RuntimeError(f"cannot log in with {values}")


def logging_in_parser() -> argparse.ArgumentParser:
    """A trainer whose action raises on a secret's value, quoting it whole."""
    parser = argparse.ArgumentParser(prog="train")
    parser.add_argument("-k", "--api-key", action=_LogIn)
    return parser


class Placement(NamedTuple):
    """A secret given one way: the trainer's argv, a role file line, and the text to look for."""

    argv: tuple[str, ...]
    #: A line added to the actor's overrides in the role file (slime), or None.
    line: str | None = None
    #: The text no output may hold: the secret's tail, kept by every escaping of it.
    needle: str = "Zq8Wv4Lm"
    #: The trainer: the slime profile, or `own_parser` (plain preset).
    own: bool = False
    #: An @file's lines (own parser): written next to the role file, named by @args.txt.
    file: str | None = None
    #: Whether the roles resolve with the secret in a value (else resolving fails).
    held: bool = True
    #: Whether the command line shows the secret as one (a secret flag's value, a form of
    #: text): else a plain flag's type= makes a value that holds it, which `redacted_argv`,
    #: reading the command line alone, cannot know (docs/embedding.md says so).
    in_argv: bool = True


S = "Zq8Wv4Lm"
PLACEMENTS: dict[str, Placement] = {
    "flag": Placement(("--wandb-key", f"sk-{S}")),
    "flag=": Placement((f"--wandb-key=sk-{S}",)),
    "did-you-mean": Placement(("--wandb-kye", f"sk-{S}"), held=False),
    "did-you-mean=": Placement((f"--wandb-ky=sk-{S}",), held=False),
    # The bundled parser takes no abbreviation: argparse leaves these to the unknown tokens.
    "refused-abbreviation": Placement(("--wandb", f"sk-{S}"), held=False),
    "refused-abbreviation=": Placement((f"--wandb=sk-{S}",), held=False),
    # A value that starts with '-': argparse refuses it ("expected one argument") and leaves
    # it to the unknown tokens, but it is the secret the user meant all the same.
    "dash-value": Placement(("--wandb-key", f"-{S}"), held=False),
    "dash-value-alias": Placement(("-k", f"-{S}"), own=True, held=False),
    "dash-value-secret-flag-dest": Placement(("--hf-token", f"--{S}"), own=True, held=False),
    "after-double-dash": Placement(("--wandb-key", "--", f"sk-{S}"), held=False),
    # '--' as a word processor or a chat app writes it: argparse takes the flag as a plain
    # argument, and its value with it.
    "em-dash": Placement(("\u2014wandb-key", f"sk-{S}"), held=False),
    "em-dash=": Placement((f"\u2014wandb-key=sk-{S}",), held=False),
    "en-dashes": Placement(("\u2013\u2013wandb-key", f"sk-{S}"), held=False),
    "en-dash-alias": Placement(("\u2013k", f"sk-{S}"), own=True, held=False),
    "quotes": Placement(("--wandb-key", f"""a'b"c\\d-{S}""")),
    "quotes-in-another-value": Placement(
        ("--wandb-key", f"""a'b"c\\d\té-{S}""", "--wandb-exp-name", f"""run a'b"c\\d\té-{S}""")
    ),
    # The secret's text in a value argparse refuses, which its message quotes with repr():
    # escaped there as inside any quoted text, not as the secret alone.
    "quotes-in-a-refused-value": Placement(
        ("--wandb-key", f"a\\b\nc\td\u202e-{S}", "--seed", f"x a\\b\nc\td\u202e-{S}"),
        held=False,
    ),
    "passed-on": Placement(("--sglang-api-key", f"sk-{S}"), held=False),
    "passed-on=": Placement((f"--sglang-api-key=sk-{S}",), held=False),
    "passed-on-abbreviation": Placement(("--sglang-api-k", f"sk-{S}"), held=False),
    "passed-on-abbreviation=": Placement((f"--sglang-api-k=sk-{S}",), held=False),
    "passed-on-prefixed-name": Placement(("--sglang-hf-token", f"hf_{S}"), held=False),
    "passed-on-prefixed-name=": Placement((f"--sglang-wandb-key=sk-{S}",), held=False),
    "passed-on-misspelt": Placement(("--sglang-api-keyy", f"sk-{S}"), held=False),
    "passed-on-misspelt=": Placement((f"--sglang-pasword=pw-{S}",), held=False),
    "env-json": Placement(("--train-env-vars", json.dumps({"HF_TOKEN": f"hf_{S}"}))),
    "env-json-escaped": Placement(("--train-env-vars", '{"HF_TOKEN": "hf_Secr\\u0065t' + S + '"}')),
    "env-json-malformed": Placement(
        ("--train-env-vars", '{"HF_TOKEN": "hf_' + S + '",'), held=False
    ),
    "env-json-backslashed": Placement(
        ("--train-env-vars", '{\\"HF_TOKEN\\": \\"hf_' + S + '\\"}'), held=False
    ),
    "env-json-other-names": Placement(
        ("--train-env-vars", json.dumps({"GITHUB_TOKEN": f"gh_{S}", "AWS_SESSION_TOKEN": S}))
    ),
    "url": Placement(("--wandb-host", f"https://user:pw{S}@wandb.example.com")),
    # A URL's password is found by its place, however short (no free-text search finds it).
    "url-short": Placement(("--wandb-host", "https://user:Zq8@wandb.example.com"), needle="Zq8"),
    "url-short-passed-on": Placement(
        ("--sglang-url", "https://user:Zq8@host"), needle="Zq8", held=False
    ),
    "url-short-passed-on=": Placement(
        ("--sglang-url=https://u:Zq8@host",), needle="Zq8", held=False
    ),
    # A URL's password in a mapping's key: found by its place too.
    "url-in-a-key": Placement(("--train-env-vars", json.dumps({f"https://u:pw{S}@h": "1"}))),
    "url-in-a-key-short": Placement(
        ("--train-env-vars", json.dumps({"https://u:Zq8@h": "1"})), needle="Zq8"
    ),
    "role-file-url-in-a-key": Placement((), "train_env_vars: {'https://u:Zq8@h': 1}", "Zq8"),
    "role-file-url-short": Placement((), "wandb_host: https://user:Zq8@wandb.example.com", "Zq8"),
    "value-equal-to-a-secret": Placement(("--wandb-key", f"cos{S}", "--wandb-exp-name", f"cos{S}")),
    "role-file": Placement((), f"wandb_key: sk-{S}"),
    "role-file-no-space": Placement((), f"wandb_key:sk-{S}", held=False),
    "role-file-list": Placement((), f"wandb_key: [sk-{S}]", held=False),
    "role-file-tag": Placement((), f"wandb_key: !!int sk-{S}", held=False),
    "role-file-env": Placement((), f"train_env_vars: {{HF_TOKEN: hf_{S}}}"),
    # A secret nested in another value of the file, pasted where a number belongs.
    "role-file-env-in-a-refused-value": Placement(
        (), f"train_env_vars: {{HF_TOKEN: hf_{S}}}\n      seed: hf_{S}", held=False
    ),
    "role-file-env-malformed": Placement(
        (), f'train_env_vars: \'{{"HF_TOKEN": "hf_{S}",\'', held=False
    ),
    "role-file-env-backslashed": Placement(
        (), 'train_env_vars: \'{\\"HF_TOKEN\\": \\"hf_' + S + "\\\"}'", held=False
    ),
    "role-file-url": Placement((), f"wandb_host: https://user:pw{S}@wandb.example.com"),
    "alias": Placement(("-k", f"sk-{S}"), own=True),
    "alias-attached": Placement((f"-ksk-{S}",), own=True),
    "cluster": Placement((f"-vksk-{S}",), own=True),
    "abbreviation": Placement(("--api-k", f"sk-{S}"), own=True),
    "abbreviation=": Placement((f"--api=sk-{S}",), own=True),
    "at-file": Placement(("@args.txt",), own=True, file=f"--api-key=sk-{S}\n--name\nx\n"),
    "at-file-lines": Placement(("@args.txt",), own=True, file=f"-k\nsk-{S}\n"),
    # A secret flag whose dest is no secret's name: its value is a secret all the same, in
    # every output, however short (hidden as a secret key's value, not searched for as text).
    "secret-flag-dest": Placement(("--hf-token", f"hf_{S}"), own=True),
    "secret-flag-dest=": Placement((f"--hf-token=hf_{S}",), own=True),
    "secret-flag-dest-short": Placement(("--hf-token", "Zq8"), needle="Zq8", own=True),
    "secret-flag-dest-in-another-value": Placement(
        ("--hf-token", f"hf_{S}", "--name", f"run-hf_{S}"), own=True
    ),
    # What a trainer's type= makes: a secret in a field, judged by the field's name as a
    # mapping's key is; in a list subclass's items, however short (a secret key's value).
    "namedtuple-field": Placement(("--creds", f"me:sk-{S}"), own=True, in_argv=False),
    "dataclass-field": Placement(("--account", f"me:pw-{S}"), own=True, in_argv=False),
    "attrs-field": Placement(("--remote", f"hub:hf_{S}"), own=True, in_argv=False),
    "list-subclass-short": Placement(
        ("--extra", json.dumps([{"hf_token": "Zq8"}])), needle="Zq8", own=True
    ),
}


class Run:
    """One placement made real in a directory: its argv, role file, records, and outputs."""

    def __init__(self, placement: Placement, directory: Path) -> None:
        self.placement = placement
        self.directory = directory
        if placement.own:
            self.parser = own_parser()
            self.options = ["--parser", "tests.test_secret_matrix:own_parser"]
            self.argv = list(placement.argv)
            self.keys = ["api_key", "name", "tok", "creds", "account", "remote", "extra"]
            if placement.file is not None:
                (directory / "args.txt").write_text(placement.file)
        else:
            self.parser = load_profile()
            self.options = []
            role_file = directory / "ppo.yaml"
            text = ROLE_FILE
            if placement.line is not None:
                text = text.replace("      lr: 1e-6\n", f"      lr: 1e-6\n      {placement.line}\n")
            role_file.write_text(text)
            self.argv = [*PPO_ARGV, "--use-wandb", *placement.argv]
            self.argv[self.argv.index("examples/megatron_ppo.yaml")] = str(role_file)
            self.keys = ["wandb_key", "train_env_vars", "wandb_host", "wandb_exp_name"]

    def cli(self, capsys: pytest.CaptureFixture[str], *args: str) -> str:
        """What ``layerconf ARGS`` writes (stdout and stderr)."""
        capsys.readouterr()
        main([*args])
        captured = capsys.readouterr()
        return captured.out + captured.err

    def command(self, capsys: pytest.CaptureFixture[str], *args: str) -> str:
        """A command on the trainer's command line."""
        return self.cli(capsys, *args, *self.options, "--", *self.argv)

    def records(self, capsys: pytest.CaptureFixture[str]) -> tuple[str, list[str]]:
        """Two signed records of the run (the second with another seed), and what writing said."""
        said = ""
        paths = []
        for index, extra in enumerate(([], ["--seed", "7"] if not self.placement.own else [])):
            path = self.directory / f"record{index}.json"
            argv = [*self.argv, *extra]
            key_file = self.directory / "key"
            key_file.write_bytes(KEY)
            capsys.readouterr()
            main(
                ["audit", "-o", str(path), "--key-file", str(key_file), *self.options, "--", *argv]
            )
            captured = capsys.readouterr()
            said += captured.out + captured.err
            if path.exists():
                said += path.read_text()
                paths.append(str(path))
        return said, paths

    def record_command(self, capsys: pytest.CaptureFixture[str], *args: str) -> str:
        said, paths = self.records(capsys)
        if not paths:
            return said
        if args[:2] == ("audit", "diff"):
            paths = [paths[0], paths[-1]]
        elif args[:2] == ("audit", "verify"):
            args = (*args, "--key-file", str(self.directory / "key"))
        elif args[:2] == ("audit", "explain"):  # (the record, then the keys)
            return said + self.cli(capsys, *args, paths[0], *self.keys)
        else:
            paths = paths[:1]
        return said + self.cli(capsys, *args, *paths)

    def api(self, capsys: pytest.CaptureFixture[str], show: Callable[[dict[str, Any]], str]) -> str:
        """`show` of the resolved roles, or what resolving raised (argparse's own exit
        included), every warning, and what was printed."""
        preset = {"preset": PLAIN} if self.placement.own else {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                roles = resolve_roles(self.parser, self.argv, **preset)
            except ConfigError as error:
                text = f"{error}\n{error!r}\n" + "\n".join(map(str, error.problems))
            except SystemExit as stop:  # argparse's error: a usage message on stderr
                text = str(stop)
            else:
                text = show(roles)
        captured = capsys.readouterr()
        printed = captured.out + captured.err
        return text + printed + "\n".join(str(warning.message) for warning in caught)

    def explained(self, roles: dict[str, Any], form: Callable[[Any], Any]) -> str:
        return "\n".join(
            str(form(explain(ns, key))) for ns in roles.values() for key in self.keys if key in ns
        )


def _all(roles: dict[str, Any], form: Callable[[Any], Any]) -> str:
    return "\n".join(
        str(form(setting)) for ns in roles.values() for setting in explain_all(ns).values()
    )


Output = Callable[[Run, pytest.CaptureFixture[str]], str]

#: Every output a secret could reach, by name: one line each.
OUTPUTS: dict[str, Output] = {
    "check": lambda run, cap: run.command(cap, "check"),
    "check --json": lambda run, cap: run.command(cap, "check", "--json"),
    "show": lambda run, cap: run.command(cap, "show"),
    "show --json": lambda run, cap: run.command(cap, "show", "--json"),
    "show --yaml": lambda run, cap: run.command(cap, "show", "--yaml"),
    "show --changed": lambda run, cap: run.command(cap, "show", "--changed"),
    "explain": lambda run, cap: run.command(cap, "explain", *run.keys),
    "explain --json": lambda run, cap: run.command(cap, "explain", "--json", *run.keys),
    "diff": lambda run, cap: run.command(cap, "diff"),
    "diff --json": lambda run, cap: run.command(cap, "diff", "--json"),
    "audit": lambda run, cap: run.command(cap, "audit"),
    "audit -o (and the file)": lambda run, cap: run.records(cap)[0],
    "audit diff": lambda run, cap: run.record_command(cap, "audit", "diff"),
    "audit diff --json": lambda run, cap: run.record_command(cap, "audit", "diff", "--json"),
    "audit replay": lambda run, cap: run.record_command(cap, "audit", "replay"),
    "audit replay --json": lambda run, cap: run.record_command(cap, "audit", "replay", "--json"),
    "audit replay --yaml": lambda run, cap: run.record_command(cap, "audit", "replay", "--yaml"),
    "audit verify": lambda run, cap: run.record_command(cap, "audit", "verify"),
    "audit relaunch": lambda run, cap: run.record_command(cap, "audit", "relaunch"),
    "audit explain": lambda run, cap: run.record_command(cap, "audit", "explain", "--json"),
    "str(explain)": lambda run, cap: run.api(cap, lambda roles: run.explained(roles, str)),
    "repr(explain)": lambda run, cap: run.api(cap, lambda roles: run.explained(roles, repr)),
    "explain.to_dict": lambda run, cap: run.api(cap, lambda roles: run.explained(roles, _to_dict)),
    "str(explain_all)": lambda run, cap: run.api(cap, lambda roles: _all(roles, str)),
    "repr(explain_all)": lambda run, cap: run.api(cap, lambda roles: _all(roles, repr)),
    "explain_all.to_dict": lambda run, cap: run.api(cap, lambda roles: _all(roles, _to_dict)),
    "notices": lambda run, cap: run.api(
        cap, lambda roles: "\n".join(f"{n}\n{n!r}" for ns in roles.values() for n in notices(ns))
    ),
    "audit()": lambda run, cap: run.api(cap, lambda roles: json.dumps(audit(roles))),
    "flatten": lambda run, cap: run.api(cap, lambda roles: json.dumps(flatten(audit(roles)))),
    "redacted_argv": lambda run, cap: " ".join(redacted_argv(run.argv, run.parser)),
    "repr(args)": lambda run, cap: run.api(cap, lambda roles: "\n".join(map(repr, roles.values()))),
}


def _to_dict(setting: Any) -> str:
    return json.dumps(setting.to_dict(), default=repr)


def _cases() -> Iterator[Any]:
    for placement, made in PLACEMENTS.items():
        for output in OUTPUTS:
            if output != "redacted_argv" or made.in_argv:
                yield pytest.param(placement, output, id=f"{placement}-{output}")


@pytest.mark.parametrize(("placement", "output"), list(_cases()))
def test_no_secret_in_any_output(
    placement: str,
    output: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The secret's text is in no output, stdout and stderr alike."""
    monkeypatch.chdir(ROOT if PLACEMENTS[placement].file is None else tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    run = Run(PLACEMENTS[placement], tmp_path)
    text = OUTPUTS[output](run, capsys)
    assert PLACEMENTS[placement].needle not in text


@pytest.mark.parametrize("placement", [name for name, p in PLACEMENTS.items() if p.held])
def test_the_secret_does_reach_a_value(
    placement: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The matrix tests something: each placement that resolves holds the secret in a value."""
    monkeypatch.chdir(ROOT if PLACEMENTS[placement].file is None else tmp_path)
    run = Run(PLACEMENTS[placement], tmp_path)
    roles = resolve_roles(run.parser, run.argv, **({"preset": PLAIN} if run.placement.own else {}))
    needle = PLACEMENTS[placement].needle
    assert any(needle in repr(vars(namespace)) for namespace in roles.values())


@dataclasses.dataclass(frozen=True, slots=True)
class Login:
    """A frozen dataclass with slots (no __dict__: its fields are read from its slots)."""

    host: Any
    passwd: Any


class Bag(dict):  # type: ignore[type-arg]
    """A dict subclass."""


class Pair(tuple):  # type: ignore[type-arg]
    """A tuple subclass that is no namedtuple."""

    __slots__ = ()


# A secret's text: letters no other text of these values holds (plain texts are of "abc", the
# classes' and keys' names hold no capital Q nor Z), however short: a secret key's value is
# redacted whatever its length. The expected side holds the placeholder where it stood.
_SECRET_TEXT = st.text(alphabet="QZ", min_size=1, max_size=4)
_SECRET = _SECRET_TEXT.map(lambda text: (text, REDACTED))
_PLAIN_LEAF = st.one_of(st.text(alphabet="abc", max_size=3), st.integers(-9, 9), st.none())


def _values_and_redacted(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """(a value holding secrets, the same value with each secret replaced by the placeholder)
    for every kind of container a trainer's type= may make, each around `children`."""

    def sequence(kind: Any) -> st.SearchStrategy[Any]:
        return st.lists(children, max_size=3).map(
            lambda items: (kind(v for v, _ in items), kind(e for _, e in items))
        )

    def mapping(kind: Any) -> st.SearchStrategy[Any]:
        plain = st.dictionaries(st.sampled_from(["name", "note", "tokens"]), children, max_size=2)
        secret = st.dictionaries(st.sampled_from(["api_key", "HF_TOKEN_2", "passwords"]), _SECRET)
        return st.tuples(plain, secret).map(
            lambda parts: (
                kind({key: v for key, (v, _) in {**parts[0], **parts[1]}.items()}),
                kind({key: e for key, (_, e) in {**parts[0], **parts[1]}.items()}),
            )
        )

    def record(kind: Any) -> st.SearchStrategy[Any]:
        return st.tuples(children, _SECRET).map(
            lambda parts: (kind(parts[0][0], parts[1][0]), kind(parts[0][1], parts[1][1]))
        )

    return st.one_of(
        sequence(list),
        sequence(tuple),
        sequence(Headers),
        sequence(Pair),
        mapping(dict),
        mapping(Bag),
        record(Creds),
        record(Account),
        record(Remote),
        record(Login),
        # a container that is a secret key's value: the placeholder whole
        children.filter(lambda pair: pair[0] is not None).map(
            lambda pair: ({"password": pair[0]}, {"password": REDACTED})
        ),
    )


_HELD = st.recursive(
    _PLAIN_LEAF.map(lambda leaf: (leaf, leaf)), _values_and_redacted, max_leaves=10
)


class TestSecretsInsideValues:
    """A value a trainer's type= makes (json.loads's dicts, a namedtuple ``Creds(user,
    api_key)``, a dataclass, an attrs instance, a list, tuple or dict subclass) may hold a
    secret in a field or an item: each is judged by its name, as a mapping's key is, and the
    value is shown as it would be with the placeholder where the secret stood; they were shown
    (and recorded) with the secret in it."""

    @settings(deadline=None, max_examples=150)
    @given(_HELD)
    def test_shown_as_with_the_placeholder(self, pair: tuple[Any, Any]) -> None:
        """`redact`, `explain`, ``repr(args)``, JSON and the audit record show the value as
        they show the same value with each secret replaced by the placeholder; a value holding
        no secret is itself."""
        from layerconf import redact
        from layerconf.core.values import jsonable

        value, expected = pair
        shown = redact("thing", value)
        assert value_text(shown, None) == value_text(expected, None)
        assert jsonable(shown) == jsonable(expected)
        if value_text(value, None) == value_text(expected, None):  # (no secret in it)
            assert shown is value
        args, same = _stack(thing=value), _stack(thing=expected)
        assert str(explain(args, "thing")) == str(explain(same, "thing"))
        assert repr(args) == repr(same)
        entry = audit({"r": args})["roles"]["r"]["settings"]["thing"]
        assert entry == audit({"r": same})["roles"]["r"]["settings"]["thing"]
        outputs = [value_text(shown, None), str(explain(args, "thing")), repr(args)]
        for output in [*outputs, json.dumps(entry)]:
            assert not {"Q", "Z"} & set(output)

    @pytest.mark.parametrize(
        "value",
        [
            Creds("me", "sk-fieldSECRET1"),
            Account("me", "sk-fieldSECRET1"),
            Remote("hub", "sk-fieldSECRET1"),
            Login("host", "sk-fieldSECRET1"),
            Headers([{"hf_token": "sk-fieldSECRET1"}]),
        ],
        ids=["namedtuple", "dataclass", "attrs", "slots", "list subclass"],
    )
    def test_its_text_is_scrubbed_from_other_values(self, value: Any, tmp_path: Path) -> None:
        """The secret's text is found in the field, and scrubbed where another key quotes it
        (``--name run-KEY``): by explain, the roles' repr, the record and its file."""
        args = _stack(creds=value, name="run-sk-fieldSECRET1")
        write_audit({"r": args}, tmp_path)
        outputs = [str(explain(args, "name")), repr(args), json.dumps(audit({"r": args}))]
        for output in [*outputs, (tmp_path / "layerconf-audit.json").read_text()]:
            assert "fieldSECRET1" not in output
        assert "run-<redacted>" in outputs[0]

    def test_no_code_of_its_class_runs(self) -> None:
        """A record whose fields hold a secret is shown as its kind's repr shows one, from
        its fields as it holds them: its own __repr__ (which may quote the secret) and its
        __getattr__ never run."""

        @dataclasses.dataclass(repr=False)
        class Loud:
            user: str
            api_key: str

            def __repr__(self) -> str:
                raise AssertionError("__repr__ ran")

            def __getattr__(self, name: str) -> Any:
                raise AssertionError("__getattr__ ran")

        value = Loud("me", "Zq")
        assert value_text(layerconf.redact("thing", value)) == (
            "TestSecretsInsideValues.test_no_code_of_its_class_runs.<locals>.Loud"
            "(user='me', api_key='<redacted>')"
        )
        entry = audit({"r": _stack(thing=value)})["roles"]["r"]["settings"]["thing"]["value"]
        assert entry["repr"].endswith("Loud(user='me', api_key='<redacted>')")

    def test_a_field_its_repr_leaves_out(self) -> None:
        """A field the dataclass's repr leaves out (``repr=False``) is left out redacted too;
        its secret's text is still scrubbed where another value quotes it."""

        @dataclasses.dataclass
        class Client:
            url: str
            token: str = dataclasses.field(repr=False)

        args = _stack(client=Client("https://host", "sk-hiddenSECRET"), name="sk-hiddenSECRET")
        assert "hiddenSECRET" not in repr(args)
        assert "Client(url='https://host')" in repr(args)

    def test_bounded(self) -> None:
        """A record that holds itself, or records nested past `MAX_DEPTH`, is shown bounded
        (its own repr could quote the secret below): no RecursionError, no secret."""
        looped = Account(user=[], password="Zq")  # type: ignore[arg-type]
        looped.user.append(looped)  # type: ignore[attr-defined]
        deep: Any = Account("me", "ZqZq")  # (below records that hold no secret of their own)
        for _ in range(MAX_DEPTH + 20):
            deep = Account(deep, None)  # type: ignore[arg-type]
        for value in (looped, deep):
            args = _stack(thing=value)
            outputs = [
                value_text(layerconf.redact("thing", value), None),
                str(explain(args, "thing")),
                repr(args),
                json.dumps(audit({"r": args})),
            ]
            for output in outputs:
                assert "Zq" not in output
        # (as the dataclass's repr shows it, the secret replaced: itself inside is "...")
        assert value_text(layerconf.redact("thing", looped)) == (
            "Account(user=[...], password='<redacted>')"
        )
        assert "<nested more than 100 levels>" in repr(_stack(thing=deep))


def _stack(**values: Any) -> Any:
    """A resolved namespace of `values`, given on the command line."""
    from layerconf import Layer, LayerStack

    return LayerStack([Layer.from_mapping("cli", values, kind="argv")]).resolve()


# Letters whose lower() is not one letter in its place: dotted I (two), the final sigma.
_UNCASED = "\u0130\u0131\u03a3\u03c2\u03c3"


class TestNames:
    """The default policy knows the usual credentials, and not what merely mentions them."""

    @pytest.mark.parametrize(
        "name",
        [
            "HUGGING_FACE_HUB_TOKEN",
            "HF_HUB_TOKEN",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "GITLAB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "DATABRICKS_TOKEN",
            "SLACK_TOKEN",
            "PYPI_TOKEN",
            "OPENAI_API_KEY",
            "WANDB_API_KEY",
            "AZURE_STORAGE_KEY",
            "--token",
            "replicate_api_token",
            "google_refresh_token",
            "sglang_hf_token",
            "--sglang-wandb-key",
            "train_env_vars.MY_HF_TOKEN",
            "MY_GITHUB_TOKEN",
            "ci_huggingface_token",
            # A plural or a numbered form of one (a list of keys, a second token).
            "api_keys",
            "--wandb-keys",
            "HF_TOKEN_2",
            "password1",
            "OPENAI_API_KEYS_2",
            "passwords",
            "env.GITHUB_TOKENS",
        ],
    )
    def test_secret(self, name: str) -> None:
        assert is_secret(name)

    @pytest.mark.parametrize(
        "name",
        [
            "max_tokens",
            "max_tokens_per_gpu",
            "max_new_tokens",
            "tokenizer_type",
            "tokenizer_model",
            "tokenizer_name_or_path",
            "input_key",
            "label_key",
            "pad_token",
            "eos_token",
            "fim_pad_token",
            "num_tokens",
            "token_budget",
            "AWS_ACCESS_KEY_ID",
            "keep_tokens",
            "tokens",  # (what a model reads, however many)
            "input_keys",
            "pad_tokens",
            "adam_beta2",
            "fp16",
        ],
    )
    def test_not_secret(self, name: str) -> None:
        assert not is_secret(name)

    @settings(max_examples=400, deadline=None)
    @given(
        key=st.one_of(
            st.text(alphabet="aKk_-.eyY0" + _UNCASED, max_size=14),
            st.tuples(
                st.sampled_from(["", "--", "-_", "a.", "x.-", "İ", "max_"]),
                st.sampled_from([*sorted(SECRETS.names), *SECRETS.suffixes]),
                st.sampled_from(["", "s", "_id", ".", "İ", "_2", "s12", "ss", "_"]),
                st.booleans(),
            ).map(lambda p: (p[0] + p[1] + p[2]).upper() if p[3] else p[0] + p[1] + p[2]),
        ),
        names=st.lists(st.text(alphabet="akey_-." + _UNCASED, max_size=5), max_size=3),
        suffixes=st.lists(st.text(alphabet="akey_-." + _UNCASED, max_size=5), max_size=3),
    )
    def test_every_policy_answers_as_its_definition(
        self, key: str, names: list[str], suffixes: list[str]
    ) -> None:
        """A key is a secret exactly when its normalized name, or that name without a number
        at its end and then a plural's "s" (``tokens`` apart), is one of the policy's names or
        ends with one of its suffixes (is_secret answers most keys from their last letters)."""
        name = key.rsplit(".", 1)[-1].lstrip("-").replace("-", "_").lower()
        single = re.sub(r"_?[0-9]+$", "", name) if name[-1:].isdigit() else name
        single = single[:-1] if single.endswith("s") and single != "tokens" else single
        for policy in (
            SECRETS,
            SecretPolicy(names=names, suffixes=suffixes),
            SECRETS.extend(names=names, suffixes=suffixes),
        ):
            expected = any(
                form in policy.names or form.endswith(policy.suffixes) for form in (name, single)
            )
            assert policy.is_secret(key) is expected


class TestSecretKeys:
    """`SecretPolicy.secret_keys` finds what `is_secret` says of each key, many at once."""

    _names = st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "wandb_key",
                    "WANDB-API-KEY",
                    "hf_token",
                    "api_key",
                    "lr",
                    "monkey",
                    "key",
                    "x.hf_token",
                    "token",
                    "my-secret",
                    "ey",
                    "passkey",
                    "Tokens",
                ]
            ),
            st.text(alphabet="abcdefgkhnotyepsw_-.KEYT\n\u00c9\u0131", max_size=12),
        ),
        unique=True,
        max_size=200,
    )

    @given(_names, st.sampled_from([SECRETS, SecretPolicy(names=("pass",), suffixes=("_pw",))]))
    def test_as_is_secret(self, names: list[str], policy: SecretPolicy) -> None:
        many = names + [f"filler_{index}" for index in range(70)]  # (past the search's threshold)
        for keys in (names, many, [*many, 5, None]):
            expected = [k for k in keys if isinstance(k, str) and policy.is_secret(k)]
            assert policy.secret_keys(keys) == expected


class TestClassification:
    """A token is classified by the action the parser matches, never by spelling alone."""

    @pytest.mark.parametrize(
        ("argv", "shown"),
        [
            (["-k", "s3cr3t", "--name", "n"], ["-k", REDACTED, "--name", "n"]),
            (["-ks3cr3t"], [f"-k{REDACTED}"]),
            (["-vks3cr3t"], [f"-vk{REDACTED}"]),
            (["-vk", "s3cr3t"], ["-vk", REDACTED]),
            (["--api-k", "s3cr3t"], ["--api-k", REDACTED]),
            (["--api=s3cr3t"], [f"--api={REDACTED}"]),
            (["--api-kye", "s3cr3t"], ["--api-kye", REDACTED]),
            # Flags the parser does not own, one edit from a secret's name (another program's
            # parser may take them for it), or not:
            (["--x-api-keyy", "s3cr3t"], ["--x-api-keyy", REDACTED]),
            (["--x-aip-key=s3cr3t"], [f"--x-aip-key={REDACTED}"]),
            (["--hf-tokn", "s3cr3t"], ["--hf-tokn", REDACTED]),
            (["--db-pasword", "s3cr3t"], ["--db-pasword", REDACTED]),
            (
                ["--tokens", "5", "--x-fim-pad-tokn", "6"],
                ["--tokens", "5", "--x-fim-pad-tokn", "6"],
            ),
            (["--wandb key", "6"], ["--wandb key", "6"]),  # (a space: no parser's flag)
            (["--name", "run", "--lr", "-1"], ["--name", "run", "--lr", "-1"]),
            (["-k", "--name", "n"], ["-k", "--name", "n"]),
            # A value argparse refuses for its '-' that names no option: the one meant.
            (["-k", "-s3cr3t", "--name", "n"], ["-k", REDACTED, "--name", "n"]),
            (["--api-key", "--s3cr3t"], ["--api-key", REDACTED]),
            (["-k", "-vk"], ["-k", "-vk"]),  # (a cluster of its options)
            (["-k", "--na=x"], ["-k", "--na=x"]),  # (an abbreviation of --name)
            (["-k", "--x-api-key", "s3cr3t"], ["-k", "--x-api-key", REDACTED]),  # (its own)
            (["-k", "--", "s3cr3t"], ["-k", "--", REDACTED]),
            (["-k", "x", "--", "s3cr3t"], ["-k", REDACTED, "--", "s3cr3t"]),
            # A flag whose dashes a word processor made typographic: the secret one it spells.
            (["\u2014api-key", "s3cr3t"], ["\u2014api-key", REDACTED]),
            (["\u2013k=s3cr3t"], [f"\u2013k={REDACTED}"]),
            (
                ["\u2014name", "n", "\u2212\u2212lr", "1"],
                ["\u2014name", "n", "\u2212\u2212lr", "1"],
            ),
            (["@args.txt", "-v"], ["@args.txt", "-v"]),
            (["--name", "n", "--", "value"], ["--name", "n", "--", "value"]),
            (["--", "-k", "s3cr3t"], ["--", "-k", REDACTED]),
            (["--name", "https://u:pw@host/x"], ["--name", f"https://u:{REDACTED}@host/x"]),
            (
                ["--name", "run-s3cr3t", "-k", "s3cr3t"],
                ["--name", f"run-{REDACTED}", "-k", REDACTED],
            ),
        ],
    )
    def test_own_parser(self, argv: list[str], shown: list[str]) -> None:
        assert redacted_argv(argv, own_parser()) == shown

    def test_a_huge_unknown_flag_in_linear_time(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A flag of 100,000 letters is not cut one letter at a time to look for a secret's
        name it is one edit from (before: 100,000 copies of it, seconds; a 10 MB token, hours)."""
        import layerconf.core._secret_flags as flags

        cut: list[str] = []
        shorter = flags._shorter
        monkeypatch.setattr(flags, "_shorter", lambda word: (cut.append(word), shorter(word))[1])
        flag = "--" + "a" * 100_000
        for parser in (own_parser(), load_profile()):
            assert redacted_argv([flag, "x"], parser) == [flag, "x"]
        assert all(len(word) < 100 for word in cut)

    @settings(max_examples=300, deadline=None)
    @given(
        ending=st.sampled_from(
            [e for e in (*SECRETS.names, *(s[1:] for s in SECRETS.suffixes)) if len(e) >= 6]
        ),
        edit=st.sampled_from(["add", "drop", "change", "swap"]),
        at=st.integers(min_value=0),
        prefix=st.sampled_from(["", "sglang_"]),
    )
    def test_a_flag_one_edit_from_a_secrets_name(
        self, ending: str, edit: str, at: int, prefix: str
    ) -> None:
        """A flag the parser does not own, one edit from a secret's name (as a whole, or at
        its end after a word for a suffix's), takes a secret: another program may read it."""
        at %= len(ending) - 1
        spelt = {
            "add": ending[:at] + "q" + ending[at:],
            "drop": ending[:at] + ending[at + 1 :],
            "change": ending[:at] + ("q" if ending[at] != "q" else "z") + ending[at + 1 :],
            "swap": ending[:at] + ending[at + 1] + ending[at] + ending[at + 2 :],
        }[edit]
        if prefix and ending not in (s[1:] for s in SECRETS.suffixes):
            prefix = ""  # (a name is a secret's as a whole flag only)
        flag = "--" + (prefix + spelt).replace("_", "-")
        assert redacted_argv([flag, "s3cr3t"], own_parser()) == [flag, REDACTED]

    @given(
        flag=st.text(alphabet="apiketoswrdcnhu_x", min_size=1, max_size=24),
        ending=st.sampled_from(
            [e for e in (*SECRETS.names, *(s[1:] for s in SECRETS.suffixes)) if len(e) >= 6]
        ),
        edit=st.integers(min_value=0),
    )
    def test_the_misspelling_precheck_rejects_no_misspelling(
        self, flag: str, ending: str, edit: int
    ) -> None:
        """`_misspelt` builds its table only for a flag whose last words may end a misspelt
        name (`_may_end_as`): that check never turns away a flag the table would take, for
        text around a secret's name and a random edit of it (on a "_" too)."""
        from layerconf.core._secret_flags import _misspelt, _normalize, _one_edit_from

        at = edit % (len(ending) + 1)
        for spelt in (
            ending[:at] + flag[:1] + ending[at:],
            ending[:at] + ending[at + 1 :],
            ending[:at] + flag[:1] + ending[at + 1 :],
            ending[:at] + ending[at + 1 : at + 2] + ending[at : at + 1] + ending[at + 2 :],
            flag,
            flag + "_" + ending,
        ):
            for text in (spelt, flag + "_" + spelt):
                normal = _normalize("--" + text)
                assert _misspelt("--" + text, SECRETS) == _one_edit_from(normal, SECRETS)

    @pytest.mark.parametrize("parser", [load_profile(), own_parser()], ids=["profile", "own"])
    def test_the_separator_is_no_abbreviation(
        self, parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``--`` abbreviates no flag (argparse takes what follows as values): the token after
        it is shown, on the command line and in argparse's error that quotes it."""
        assert redacted_argv(["--", "out.txt"], parser) == ["--", "out.txt"]
        with pytest.raises(SystemExit):
            layerconf.parse_args(parser, ["--rollout-batch-size", "1", "--", "out.txt"])
        assert capsys.readouterr().err.endswith(" out.txt\n")

    def test_every_value_of_a_many_valued_secret(self) -> None:
        """nargs='+' or 2: each value the action takes."""
        parser = argparse.ArgumentParser()
        parser.add_argument("--tokens-api-key", nargs="+")
        parser.add_argument("--hub-token", nargs=2)
        assert redacted_argv(
            ["--tokens-api-key", "a", "b", "--hub-token", "c", "d", "e"], parser
        ) == [
            "--tokens-api-key",
            REDACTED,
            REDACTED,
            "--hub-token",
            REDACTED,
            REDACTED,
            "e",
        ]

    @pytest.mark.parametrize(
        ("value", "shown"),
        [
            ('{"HF_TOKEN": "hf_x", "A": "1"}', '{"HF_TOKEN": "<redacted>", "A": "1"}'),
            ('{"HF_TOKEN": "hf_\\u0078yz"}', '{"HF_TOKEN": "<redacted>"}'),
            ('{"HF_TOK\\u0045N": "hf_xyz"}', '{"HF_TOKEN": "<redacted>"}'),
            ('{"HF_TOKEN": "hf_xyz",', REDACTED),
            ('{\\"HF_TOKEN\\": \\"hf_xyz\\"}', REDACTED),
            ('{\\\\\\"HF_TOKEN\\\\\\": 1}', REDACTED),
            ('{\\"A\\": \\"1\\"}', '{\\"A\\": \\"1\\"}'),
            ('{"A": "1",', '{"A": "1",'),
            ('{"A": "1"}', '{"A": "1"}'),
        ],
    )
    def test_json_values(self, value: str, shown: str) -> None:
        """JSON holding a secret key, escaped or malformed: never as written."""
        assert redacted_argv(["--train-env-vars", value], load_profile()) == [
            "--train-env-vars",
            shown,
        ]

    def test_a_text_showing_many_secrets_goes_whole(self) -> None:
        """Past 64 different URL passwords or JSON secrets, the whole text is hidden (searching
        every other text for each would take quadratic time)."""
        few = " ".join(f"https://u:pw{index:04d}@host" for index in range(64))
        many = " ".join(f"https://u:pw{index:04d}@host" for index in range(65))
        assert redacted_argv(["--name", few], own_parser())[1].count(REDACTED) == 64
        assert redacted_argv(["--name", many], own_parser()) == ["--name", REDACTED]
        keys = json.dumps([{"api_key": f"k{index:04d}"} for index in range(65)])
        assert redacted_argv(["--name", keys], own_parser()) == ["--name", REDACTED]

    def test_default_argv_and_a_string(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """argv defaults to sys.argv[1:]; one string is refused (it would be split wrongly)."""
        monkeypatch.setattr("sys.argv", ["train.py", "--wandb-key", "x"])
        assert redacted_argv(parser=load_profile()) == ["--wandb-key", REDACTED]
        with pytest.raises(TypeError, match="list of tokens"):
            redacted_argv("--wandb-key x")
        with pytest.raises(TypeError, match=r"argv\[0\] is bytes"):
            redacted_argv([b"--wandb-key", b"x"])
        with pytest.raises(TypeError, match=r"argv\[1\] is int"):
            redacted_argv(["--seed", 5])  # type: ignore[list-item]

    def test_the_record_and_origins_hold_the_classified_argv(self) -> None:
        """The record's argv and each origin's token come through the parser's actions."""
        roles = resolve_roles(own_parser(), ["-vks3cr3t", "--api=s3cr3t"], preset=PLAIN)
        record = audit(roles)
        assert record["argv"] == [f"-vk{REDACTED}", f"--api={REDACTED}"]
        tokens = {entry.get("token") for entry in record["roles"]["main"]["settings"].values()}
        assert f"--api={REDACTED}" in tokens
        assert "s3cr3t" not in json.dumps(record)

    def test_argparse_errors_do_not_quote_it(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A usage error of the trainer's own parser: printed, or raised with exit_on_error."""
        parser = argparse.ArgumentParser(prog="train")
        parser.add_argument("--api-key", type=int)
        with pytest.raises(SystemExit):
            resolve_roles(parser, ["--api-key", "s3cr3t"], preset=PLAIN)
        assert "s3cr3t" not in capsys.readouterr().err
        quiet = argparse.ArgumentParser(prog="train", exit_on_error=False)
        quiet.add_argument("--api-key", type=int)
        with pytest.raises(argparse.ArgumentError) as raised:
            resolve_roles(quiet, ["--api-key", "s3cr3t"], preset=PLAIN)
        assert "s3cr3t" not in str(raised.value)

    @pytest.mark.parametrize(
        "argv",
        [
            ["login", "--api-key", "s3cr3t-value"],
            ["login", "-k", "s3cr3t-value"],
            ["login", "-ks3cr3t-value"],
            ["login", "--retries", "s3cr3t-value", "-k", "s3cr3t-value"],
            ["login", "--retries", "1", "admin", "-k", "s3cr3t-value"],
        ],
    )
    @pytest.mark.parametrize("exit_on_error", [True, False])
    def test_a_sub_command_error_does_not_quote_it(
        self, argv: list[str], exit_on_error: bool, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A sub-command's parser reports its own errors (printed, or raised to the trainer's
        parser): a secret flag of the sub-command, by its alias too, is hidden there; the
        sub-parsers are left as they were."""
        parser = argparse.ArgumentParser(prog="tool", exit_on_error=exit_on_error)
        commands = parser.add_subparsers(dest="command")
        login = commands.add_parser("login", exit_on_error=exit_on_error)
        login.add_argument("-k", "--api-key", type=int)
        login.add_argument("--retries", type=int)
        admin = login.add_subparsers(dest="area").add_parser("admin", exit_on_error=exit_on_error)
        admin.add_argument("-k", "--api-key", type=int)
        with pytest.raises((SystemExit, argparse.ArgumentError)) as raised:
            layerconf.parse_args(parser, argv)
        shown = capsys.readouterr().err + str(raised.value) + repr(raised.value)
        assert "invalid int value: '<redacted>'" in shown
        assert "s3cr3t" not in shown
        assert "error" not in vars(login)
        assert "error" not in vars(admin)

    @pytest.mark.parametrize("nargs", [None, "+", 2])
    def test_a_secret_positional_in_an_error(
        self, nargs: Any, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """argparse quotes the value of a positional it cannot convert: a secret's is hidden."""
        parser = argparse.ArgumentParser(prog="train")
        parser.add_argument("api_key", nargs=nargs, type=int)
        parser.add_argument("--lr")
        argv = ["s3cr3t-value", "s3cr3t-value"] if nargs == 2 else ["s3cr3t-value"]
        with pytest.raises(SystemExit):
            layerconf.parse_args(parser, [*argv, "--lr", "1"])
        assert capsys.readouterr().err.endswith(
            "train: error: argument api_key: invalid int value: '<redacted>'\n"
        )

    @pytest.mark.parametrize("positional", [False, True], ids=["scanned", "recorded"])
    def test_a_raised_error_holds_it_nowhere(self, positional: bool) -> None:
        """With exit_on_error=False, what a trainer logs of the error (its repr, its args, its
        traceback with the exceptions it chains) holds no secret, whichever way it was parsed."""
        import traceback

        quiet = argparse.ArgumentParser(prog="train", exit_on_error=False)
        quiet.add_argument("--api-key", type=int)
        if positional:
            quiet.add_argument("files", nargs="*")
        argv = ["--api-key", "s3cr3t-value"]  # (the traceback quotes the line that parses)
        with pytest.raises(argparse.ArgumentError) as raised:
            layerconf.parse_args(quiet, argv)
        error = raised.value
        assert str(error) == "argument --api-key: invalid int value: '<redacted>'"
        shown = [repr(error), repr(error.args), *traceback.format_exception(error)]
        assert "s3cr3t" not in "".join(shown)


class TestCommandLineCrash:
    """A trainer's type= callable that crashes on a secret's value: the CLI says so without it."""

    def test_attached_alias(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.chdir(ROOT)
        options = ["--parser", "tests.test_secret_matrix:typed_parser"]
        assert main(["check", *options, "--", f"-ksk-{S}"]) == 1
        captured = capsys.readouterr()
        assert "argument -k/--api-key: invalid value" in captured.out
        assert S not in captured.out + captured.err

    @pytest.mark.parametrize("length", [20, 400])
    def test_a_long_secret_quoted_in_the_trainers_exception(
        self, length: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A token as long as a JWT, quoted by the trainer's exception past the length a
        message keeps: hidden whole before the message is cut, so that no start of it shows
        (before: 'cannot log in with eyJ...' up to the cut)."""
        monkeypatch.chdir(ROOT)
        token = "eyJ" + S + "x" * length + "tail"
        options = ["--parser", "tests.test_secret_matrix:logging_in_parser"]
        assert main(["check", *options, "--", "--api-key", token]) != 0
        captured = capsys.readouterr()
        assert "raised RuntimeError: " in captured.out + captured.err
        assert "eyJ" not in captured.out + captured.err


class TestTextSearch:
    """The search for many secrets' texts at once finds what ``in`` finds, text by text."""

    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(st.text(alphabet="ab\u00e9c", max_size=8), max_size=40),
        st.text(alphabet="ab\u00e9c ", max_size=60),
    )
    def test_same_as_each_in_turn(self, texts: list[str], value: str) -> None:
        search = TextSearch(texts)
        assert search(value) == [text for text in dict.fromkeys(texts) if text and text in value]

    def test_texts_past_the_automatons_room(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Past its room the automaton takes no more (memory stays bounded however long the
        texts): the longer texts are each looked for on their own, and found all the same."""
        from layerconf.core import _secret_text

        monkeypatch.setattr(_secret_text, "_MAX_NODES", 60)
        texts = [f"k{index:02d}" for index in range(20)] + ["x" * 50, "long-" * 20]
        search = TextSearch(texts)
        value = f"k03 {'x' * 60} {'long-' * 21}"
        assert search(value) == ["k03", "x" * 50, "long-" * 20]
        assert search("k19") == ["k19"]
        assert len(search._goto) <= 60  # (the trie's nodes)

    def test_two_secrets_spelt_alike(self) -> None:
        """One secret's text is the other's as repr() spells it: each is hidden where it shows."""
        one = "ab\\cdef"  # a backslash
        two = repr(one)[1:-1]  # the same text with the backslash doubled, as repr() writes it
        argv = ["--wandb-key", two, "--hf-token", one, "--run-name", f"run-{two}"]
        assert redacted_argv(argv) == [
            "--wandb-key", REDACTED, "--hf-token", REDACTED, "--run-name", f"run-{REDACTED}"
        ]  # fmt: skip

    def test_many_texts_one_prefix(self) -> None:
        """Thousands of texts sharing their start (what a role file of generated secrets
        holds) are each found where they are, and only there."""
        texts = [f"secret-value-{index:06d}" for index in range(5000)]
        search = TextSearch(texts)
        assert search(f"x {texts[17]} y {texts[4321]}secret-value-9") == [texts[17], texts[4321]]
        assert search("secret-value-") == []


class TestTextNamingASecret:
    """A string in the wrong place that writes a secret with its name (``wandb_key:S``,
    ``HF_TOKEN=S``, ``--wandb-key S``) or a URL's password is described, never quoted."""

    @pytest.mark.parametrize(
        "text",
        [
            f"wandb_key:sk-{S}\n",
            f"wandb_key=sk-{S}\n",
            f"megatron: 'wandb_key: sk-{S}'\n",
            f"megatron:\n  - wandb_key:sk-{S}\n",
            f"megatron:\n  - role: actor\n    overrides:\n      wandb_key:sk-{S}\n",
            f"megatron:\n  - role: actor\n    args: --wandb-key sk-{S}\n",
            f"megatron:\n  - role: actor\n    overrides: https://u:pw{S}@host\n",
            f"megatron:\n  - role: actor\n    overrides:\n      train_env_vars: HF_TOKEN=hf_{S}\n",
            f"megatron:\n  - role: actor\n    overrides:\n      lr: 'wandb_key: sk-{S}'\n",
            f"megatron:\n  - role: wandb_key:sk-{S}\n    overrides: {{}}\n",
            f"megatron:\n  - role: actor\n    overrides: --run-name wandb_key=sk-{S}\n",
            f"megatron: '--x password pw{S}'\n",
            f"export HF_TOKEN=hf_{S}\n",
            f"machine example.com login me password pw{S}\n",
            f"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn{S}\n-----END OPENSSH PRIVATE KEY-----\n",
            f"-----BEGIN RSA PRIVATE KEY-----\nMIIE{S}\n-----END RSA PRIVATE KEY-----\n",
            # A token file named by mistake (~/.cache/huggingface/token): the file is one value.
            f"hf_{S}\n",
            f"\ufeffsk-proj-{S}\n",
            f'"{S}"\n',
            "2085306021784\n",
        ],
        ids=[
            *map(str, range(10)),
            "flag-then-named",
            "flag-then-netrc",
            "export",
            "netrc",
            "openssh-key",
            "rsa-key",
            "token-file",
            "token-file-bom",
            "token-file-json",
            "pin-file",
        ],
    )
    def test_check_file(
        self, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        role_file = tmp_path / "ppo.yaml"
        role_file.write_text(text)
        for form in ("text", "json", "github", "sarif"):
            assert main(["check", "--format", form, str(role_file)]) == 1
            captured = capsys.readouterr()
            assert "error" in captured.out
            assert S not in captured.out + captured.err
            assert "2085306021784" not in captured.out + captured.err

    @pytest.mark.parametrize("key", ["tensor_model_parallel_size", "lr_decay_style"])
    def test_a_secret_of_the_file_refused_as_another_value(
        self, key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The file's wandb_key pasted as another key's value, which the parser refuses."""
        role_file = tmp_path / "ppo.yaml"
        overrides = f"      wandb_key: sk-{S}\n      {key}: sk-{S}\n"
        role_file.write_text(f"megatron:\n  - role: actor\n    overrides:\n{overrides}")
        assert main(["check", str(role_file)]) == 1
        captured = capsys.readouterr()
        assert f"error: '{key}' must be" in captured.out
        assert S not in captured.out + captured.err
        argv = [str(role_file) if a == "examples/megatron_ppo.yaml" else a for a in PPO_ARGV]
        with pytest.raises(ConfigError) as caught:
            resolve_roles(load_profile(), argv)
        assert S not in f"{caught.value}{caught.value!r}"

    @pytest.mark.parametrize(
        ("value", "shown"),
        [
            # seed's value cut at 60 characters: 48 + 2 show 'sk-Zq8W' of the secret, uncut.
            ('"' + "p" * 48 + f' sk-{S}-and-more"', "'seed' must be an int (got '" + "p" * 48),
            # a warning's quote cut at 200 characters, in the middle of the secret.
            ('"$HOME/' + "p" * 183 + f' sk-{S}-and-more"', "'seed' holds '$HOME/" + "p" * 183),
        ],
        ids=["type-coercion", "unexpanded-text"],
    )
    def test_a_secret_of_the_file_in_a_value_cut_short(
        self, value: str, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A value quoting the file's wandb_key, cut where the message quotes it: the secret
        is scrubbed from the whole value first, so that no start of it shows."""
        role_file = tmp_path / "ppo.yaml"
        overrides = f"      wandb_key: sk-{S}-and-more\n      seed: {value}\n"
        role_file.write_text(f"megatron:\n  - role: actor\n    overrides:\n{overrides}")
        main(["check", str(role_file)])
        captured = capsys.readouterr()
        assert shown in captured.out
        assert "sk-Zq8" not in captured.out + captured.err
        argv = [str(role_file) if a == "examples/megatron_ppo.yaml" else a for a in PPO_ARGV]
        with pytest.raises(ConfigError) as caught:
            resolve_roles(load_profile(), argv, warn=False)
        assert "sk-Zq8" not in f"{caught.value}{caught.value!r}"

    def test_command_line(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["check", "--", *PPO_ARGV, "--train-env-vars", f"HF_TOKEN=hf_{S}"]) == 1
        captured = capsys.readouterr()
        assert "argument --train-env-vars: invalid" in captured.out
        assert S not in captured.out + captured.err

    def test_other_strings_are_quoted(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        role_file = tmp_path / "ppo.yaml"
        role_file.write_text("megatron:\n  - role: actor\n    overrides: lr=1e-5 token\n")
        assert main(["check", str(role_file)]) == 1
        assert "(got the string 'lr=1e-5 token')" in capsys.readouterr().out


class TestThreads:
    """main() from many threads at once: each scrubs its own secrets; sys.stdout is never replaced."""

    def test_forty_threads(self, capsys: pytest.CaptureFixture[str]) -> None:
        import sys
        import threading

        stdout = sys.stdout
        codes: list[int] = []

        def one(index: int) -> None:
            secret = f"sk-{index:02d}-{S}"
            argv = [*PPO_ARGV, "--use-wandb", "--wandb-key", secret, "--wandb-exp-name", secret]
            codes.append(main(["show", "--", *argv]))

        threads = [threading.Thread(target=one, args=(index,)) for index in range(40)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        captured = capsys.readouterr()
        assert codes == [0] * 40
        assert S not in captured.out + captured.err
        assert captured.out.count("wandb_exp_name") >= 40
        assert sys.stdout is stdout

    def test_the_commands_write_through_the_scrubbed_streams(self) -> None:
        """No CLI module but those owning the streams (the scrubber, the output) names
        sys.stdout or sys.stderr."""
        import layerconf.cli

        package = Path(layerconf.cli.__file__).parent
        writers = [
            f"{path.relative_to(package)}:{number}"
            for path in sorted(package.rglob("*.py"))
            if path.name not in ("scrub.py", "streams.py")
            for number, line in enumerate(path.read_text().splitlines(), 1)
            if ("sys.stdout" in line or "sys.stderr" in line) and ".fileno()" not in line
        ]
        assert writers == []


class TestEnvSourcePolicy:
    """An EnvSource uses the policy it is given, not only the default."""

    def test_custom_policy(self) -> None:
        from layerconf import EnvSource

        parser = argparse.ArgumentParser()
        parser.add_argument("--run-cookie", type=int)
        policy = SECRETS.extend(names=["run_cookie"])
        environ = {"T_RUN_COOKIE": "c00kie-value"}
        reading = EnvSource(prefix="T_", environ=environ, secrets=policy).read(parser)
        assert reading.problems
        assert "c00kie-value" not in " ".join(problem.message for problem in reading.problems)
        plain = EnvSource(prefix="T_", environ=environ).read(parser)
        assert "c00kie-value" in " ".join(problem.message for problem in plain.problems)


class TestSecretOptionsScan:
    """The scan that lists a parser's secret flags at once finds exactly those `_takes` finds
    one action at a time (the scan is only a filter)."""

    PIECES = ("wandb", "key", "api", "Api", "KEY", "token", "hf", "secret", "hub", "aws")
    PIECES += ("session", "pass", "word", "private", "x", "-", "_", ".", "\n")

    @settings(max_examples=300)
    @given(
        st.lists(
            st.tuples(
                st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join),
                st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join),
            ),
            max_size=6,
        )
    )
    def test_same_as_one_by_one(self, names: list[tuple[str, str]]) -> None:
        from layerconf.core import secrets as module

        parser = argparse.ArgumentParser(add_help=False)
        for index, (option, dest) in enumerate(names):
            with contextlib.suppress(ValueError, argparse.ArgumentError):
                parser.add_argument(f"--{option}{index}", dest=dest)
        actions = parser._option_string_actions
        expected = sorted(o for o, a in actions.items() if module._takes(a, SECRETS))
        module._SECRET_OPTIONS.clear()
        assert sorted(module._secret_options(actions, SECRETS)) == expected

    @pytest.mark.parametrize("option", ["--\u0130-api-key", "--X\nMY-API-KEY", "--WANDB-KEY"])
    def test_names_the_text_search_cannot_split(self, option: str) -> None:
        """A name whose lower case is longer (``İ``) or that holds a line break is still
        found, and so is one in capitals."""
        from layerconf.core import secrets as module

        parser = argparse.ArgumentParser()
        parser.add_argument("--lr")
        parser.add_argument(option, dest="x")
        module._SECRET_OPTIONS.clear()
        assert module._secret_options(parser._option_string_actions, SECRETS) == [option]

    @pytest.mark.parametrize(
        "token",
        ["--lr", "--wandb-key", "--wandb-key=s3cr3t-value", "-k", "-ks3cr3t", "--wandb-k",
         "--lr=https://u:pa55word@host", "--name", "--", "-", "x", "--nope=1"],
    )  # fmt: skip
    def test_one_token_as_redact_argv_shows_it(self, token: str) -> None:
        """`redacted_token` (the recorder's, per origin) is `redact_argv` of that one token,
        also once the action of an option it classified becomes a secret's."""
        from layerconf.core.secrets import redact_argv, redacted_token

        parser = argparse.ArgumentParser()
        parser.add_argument("--wandb-key", "-k")
        parser.add_argument("--lr")
        name = parser.add_argument("--name")
        for _ in range(2):
            assert redacted_token(token, parser) == redact_argv([token], parser=parser)[0][0]
            name.dest = "hf_token"
        assert redacted_token("--name=s3cr3t-value", parser) == "--name=<redacted>"

    def test_a_changed_action_is_classified_anew(self) -> None:
        """The per-option cache of the steady path never keeps a verdict its action outlived:
        an action whose dest becomes a secret's after a first command line is read as one."""
        from layerconf.core.secrets import redact_argv

        parser = argparse.ArgumentParser()
        action = parser.add_argument("--run-cookie")
        assert redact_argv(["--run-cookie", "c00kie-value"], SECRETS, parser=parser)[1] == []
        action.dest = "wandb_key"
        found = redact_argv(["--run-cookie", "c00kie-value"], SECRETS, parser=parser)[1]
        assert found == ["c00kie-value"]


class TestFormsAskedOnce:
    """`redact_argv` asks `may_show_secret` of a token only when the command line holds a
    form that shows a secret (a URL, JSON text) or the token is shown changed: its answer is
    the one asking every token gives."""

    @pytest.mark.parametrize(
        "argv",
        [
            ["--wandb-key=s3cr3t-value", "--lr", "1"],
            ["-ks3cr3t-value", "--lr", "[1, 2]"],
            ["--lr", "https://user:pa55word@host/x"],
            ["--name", '{"api_key": "s3cr3t-value"}', "--wandb-kye", "s3cr3t-value"],
            ["--name", " [1]", "--nope=https://user:pa55word@host"],
        ],
    )
    @pytest.mark.parametrize("placeholder", ["<redacted>", "https://u:p4ss@h", '{"api_key": 1}'])
    def test_as_asking_each_token(self, argv: list[str], placeholder: str) -> None:
        from layerconf.core.secrets import SecretPolicy, redact_argv

        policy = SecretPolicy(placeholder=placeholder)
        parser = argparse.ArgumentParser()
        parser.add_argument("--wandb-key", "-k")
        parser.add_argument("--lr")
        parser.add_argument("--name")
        shown = redact_argv(argv, policy, parser=parser)
        # A first token of every form: then each token is asked.
        asked = redact_argv(["{[://", *argv], policy, parser=parser)
        assert (asked[0][1:], asked[1]) == shown


class TestRuleMessages:
    """A rule's message and hint never quote a secret key's value, nor its default."""

    def test_a_type_errors_hint(self) -> None:
        from layerconf import Layer, LayerStack, TypeCoercion

        parser = argparse.ArgumentParser()
        parser.add_argument("--wandb-key", default="s3cretDEFAULTkey")
        parser.add_argument("--hf-token", nargs="+", default=["hf_LEAKEDvalue123"])
        layer = Layer("role-config", "file", {"wandb_key": None, "hf_token": []})
        stack = LayerStack([layer], [TypeCoercion(parser)])
        with pytest.raises(ConfigError) as caught:
            stack.resolve()
        text = str(caught.value) + repr(caught.value.problems)
        assert "s3cretDEFAULTkey" not in text
        assert "hf_LEAKEDvalue123" not in text

    def test_topology_guard(self) -> None:
        from layerconf import Layer, LayerStack, resolve_stacks
        from layerconf.rules import TopologyGuard

        rules = [TopologyGuard(["wandb_key"])]
        stacks = {
            role: LayerStack([Layer("cli", "cli", {"wandb_key": f"SECRETvalue{role}"})], rules)
            for role in ("actor", "critic")
        }
        with pytest.raises(ConfigError) as caught:
            resolve_stacks(stacks)
        assert "SECRETvalue" not in str(caught.value)


class TestQuotedValues:
    """Messages about a wrong argument or a slime string conversion quote no secret."""

    def test_argv_as_bytes(self) -> None:
        parser = argparse.ArgumentParser()
        parser.add_argument("--wandb-key")
        with pytest.raises(TypeError) as caught:
            layerconf.parse_args(parser, b"--wandb-key S3cretBytesValue")
        assert "S3cretBytesValue" not in str(caught.value)

    def test_a_source_returning_no_reading(self) -> None:
        class Leaky:
            name = "leaky"

            def read(self, parser: argparse.ArgumentParser) -> Any:
                return {"WANDB_KEY": "S3cretSourceValue"}

        with pytest.raises(TypeError) as caught:
            layerconf.resolve_roles(
                argparse.ArgumentParser(), [], preset=layerconf.PLAIN, sources=[Leaky()]
            )
        assert "S3cretSourceValue" not in str(caught.value)


# Changes made by hand to a profile's parser, each of which changes its secret flags.
_CHANGES = [
    lambda p: setattr(p._option_string_actions["--lr"], "dest", "hf_token"),
    lambda p: p.add_argument("--run-api-key"),
    lambda p: p._option_string_actions.update({"--my-token": p._option_string_actions.pop("--lr")}),
    lambda p: setattr(p._option_string_actions["--wandb-key"], "nargs", 2),
    lambda p: setattr(p._option_string_actions["--wandb-key"], "dest", "wandb_group2"),
    lambda p: setattr(p._option_string_actions["--wandb-key"], "nargs", 0),
    lambda p: p._option_string_actions["--fim-pad-token"].option_strings.append("--fim-api-key"),
    lambda p: p._option_string_actions["--wandb-key"].option_strings.clear(),
]
_CHANGE_IDS = [
    "dest",
    "added",
    "renamed",
    "nargs",
    "no-longer-secret",
    "a-flag-now",
    "candidate-named-now",
    "candidate-flags-changed",
]


class TestShippedSecretOptions:
    """The bundled profile ships its scan for secret flags; a parser it builds uses that list
    only while the list is the one the scan would make."""

    @staticmethod
    def scanned(parser: argparse.ArgumentParser, policy: Any = SECRETS) -> list[str]:
        from layerconf.core import _secret_flags as module

        table = parser._option_string_actions
        return [
            o for o in module.secret_candidates(table, policy) if module._takes(table[o], policy)
        ]

    def test_shipped_list_is_the_scans(self) -> None:
        """The data's candidates are the scan's over a parser built from it, for the policy
        the data names, which is the default one."""
        from layerconf.core import _secret_flags as module
        from layerconf.profiles import loader

        data = json.loads(loader._read_data("megatron_slime"))
        parser = layerconf.load_profile()
        table = parser._option_string_actions
        candidates = module.secret_candidates(table, SECRETS)
        assert data["secrets"]["candidates"] == candidates
        named = [o for o in candidates if module._secret_named(table[o], SECRETS)]
        assert data["secrets"]["named"] == named == ["--wandb-key"]
        assert data["secrets"]["names"] == sorted(SECRETS.names)
        assert data["secrets"]["suffixes"] == list(SECRETS.suffixes)
        assert module._secret_options(table, SECRETS) == self.scanned(parser) == ["--wandb-key"]

    def test_seeded_when_built(self) -> None:
        """The profile's parsers are not scanned: the shipped candidates are kept, with the
        option strings and dests they hold for and the policy's answer for each, and no
        parser."""
        import gc
        import weakref

        from layerconf.core import _secret_flags as module

        module._SEEDS.clear()
        parser = layerconf.load_profile()
        table = parser._option_string_actions
        ((policy, candidates),) = module._SEEDS
        assert policy == SECRETS
        assert "--wandb-key" in candidates
        shape = list(table), module._dests(table)
        seeded = module._seeded(*shape, SECRETS)
        assert seeded is not None
        assert seeded[0] == candidates
        assert seeded[1]["--wandb-key"] == (("--wandb-key",), True)
        assert not any(named for option, (_, named) in seeded[1].items() if option != "--wandb-key")
        assert module._seeded(*shape, SECRETS.extend(names=["x"])) is None
        alive = weakref.ref(parser)
        del parser, table
        gc.collect()
        assert alive() is None

    @pytest.mark.parametrize("change", _CHANGES, ids=_CHANGE_IDS)
    def test_changed_parser_is_scanned(self, change: Callable[[Any], Any]) -> None:
        """A parser changed after it was built (a dest, an option added or renamed, nargs, a
        candidate's option strings) gets the list the scan makes of it as it is now."""
        from layerconf.core import _secret_flags as module

        parser = layerconf.load_profile()
        change(parser)
        table = parser._option_string_actions
        assert module._secret_options(table, SECRETS) == self.scanned(parser)
        fresh = layerconf.load_profile()
        change(fresh)
        shown = redacted_argv(["--hf-tokn", "s3cr3t-value", "--run-api-kye", "x"], fresh)
        module._SECRET_OPTIONS.clear()
        assert redacted_argv(["--hf-tokn", "s3cr3t-value", "--run-api-kye", "x"], fresh) == shown

    @pytest.mark.parametrize("change", _CHANGES, ids=_CHANGE_IDS)
    def test_changed_after_it_was_listed(self, change: Callable[[Any], Any]) -> None:
        """A parser changed after its secret flags were listed (a first resolution lists them
        for its unknown flags) gets the list the scan makes of it as it is now."""
        from layerconf.core import _secret_flags as module

        parser = layerconf.load_profile()
        table = parser._option_string_actions
        module._secret_options(table, SECRETS)
        change(parser)
        assert module._secret_options(table, SECRETS) == self.scanned(parser)

    def test_a_flag_made_secret_between_resolutions(self) -> None:
        """A misspelt flag's value is hidden when the flag it is close to was made a secret
        flag after a first resolution (the table's size unchanged): in the warning, the kept
        command line and the audit record, as in a process that resolves only once."""
        from layerconf.core.namespace import provenance_of

        argv = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
        config = argv.index("--megatron-config-path") + 1
        argv[config] = str(FIXTURES / argv[config])
        parser = layerconf.load_profile()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            layerconf.resolve_roles(parser, argv)  # (its --sglang-* flags: the list is made)
        parser._option_string_actions["--wandb-project"].dest = "wandb_api_key"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            roles = layerconf.resolve_roles(parser, [*argv, "--andb-project", "s3cr3t-value"])
        shown = [str(warning.message) for warning in caught]
        shown += [repr(provenance_of(roles["actor"]).inputs), json.dumps(layerconf.audit(roles))]
        assert any("--andb-project" in text for text in shown)
        assert not any("s3cr3t-value" in text for text in shown)

    def test_another_policy_is_scanned(self) -> None:
        """The shipped list is the default policy's: another policy's list is its own scan."""
        from layerconf.core import _secret_flags as module

        parser = layerconf.load_profile()
        policy = SECRETS.extend(names=["lr"])
        table = parser._option_string_actions
        assert "--lr" in module._secret_options(table, policy)
        assert module._secret_options(table, policy) == self.scanned(parser, policy)

    def test_data_of_another_policy_is_not_used(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Data compiled under another default policy (an older layerconf's) is not used."""
        from layerconf.core import _secret_flags as module
        from layerconf.profiles import loader

        data = json.loads(loader._read_data("megatron_slime"))
        data["secrets"]["names"].remove("wandb_key")
        data["secrets"]["candidates"] = []
        monkeypatch.setattr(loader, "_read_data", lambda module: json.dumps(data).encode())
        loader._spec.cache_clear()
        try:
            module._SEEDS.clear()
            table = layerconf.load_profile()._option_string_actions
            assert module._SEEDS == {}
            assert module._secret_options(table, SECRETS) == ["--wandb-key"]
        finally:
            monkeypatch.undo()
            loader._spec.cache_clear()
