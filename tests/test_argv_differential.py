"""Differential laws: layerconf's parse against argparse's on parsers of every setting.

`tests/test_argparse.py` and `tests/test_argv_scan.py` hold one rich parser against argparse;
here the same command lines go to parsers that differ in what argparse reads differently:
prefix characters other than ``-``, ``allow_abbrev=False``, ``exit_on_error=False``,
positionals, a mutually exclusive group, an option that looks like a negative number,
``fromfile_prefix_chars``, a namespace given, ``parse_args`` and ``parse_known_args``. For each:
the same namespace (values, types, key order), the same extras, the same error (message and
exit status, or the raised error); and every value the command line set points at the token
that set it. A secret on the command line, however it is spelt, shows in no output.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layerconf import audit, explain, parse_args, parse_known_args, redact, redacted_argv


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """What a parse did: the namespace's items in order (repr: NaN is a value too) and their
    types, the extras; or its exit status and stderr; or the error it raised."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            result = call()
    except SystemExit as exit_:
        return ("exit", exit_.code, stderr.getvalue())
    except argparse.ArgumentError as error:
        return ("error", str(error), error.argument_name)
    namespace, extras = result if isinstance(result, tuple) else (result, None)
    items = vars(namespace).items()
    return ("ok", repr(list(items)), [type(value) for _, value in items], extras)


def trainer(prefix: str = "-", **settings: Any) -> argparse.ArgumentParser:
    """Every built-in action kind, its options written with the `prefix` character."""
    one, two = prefix, prefix * 2
    parser = argparse.ArgumentParser(prog="train", prefix_chars=prefix, **settings)
    parser.add_argument(f"{two}lr", type=float, default=1e-6)
    parser.add_argument(f"{two}lr-warmup", type=float, default=0.0)
    parser.add_argument(f"{two}name", default="run")
    parser.add_argument(f"{two}optimizer", choices=["adam", "sgd"], default="adam")
    parser.add_argument(f"{one}v", f"{two}verbose", action="count", default=0)
    parser.add_argument(f"{one}x", f"{two}fast", action="store_true")
    parser.add_argument(f"{one}g", f"{two}gpus", type=int, default=8)
    parser.add_argument(f"{two}offload", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument(f"{two}hook", action="append", default=["base"])
    parser.add_argument(f"{two}mark", action="append_const", const="m")
    parser.add_argument(f"{two}tag", action="extend", nargs="+")
    parser.add_argument(f"{two}sizes", nargs="+", type=int)
    parser.add_argument(f"{two}stop", nargs="*", default=["eos"])
    parser.add_argument(f"{two}maybe", nargs="?", const="yes", default="no")
    parser.add_argument(f"{two}range", nargs=2, type=float)
    parser.add_argument(f"{two}steps", type=int, default="10")
    parser.add_argument(f"{two}\u00fcn\u00ef", default="u")
    return parser


def _with(parser: argparse.ArgumentParser, build: Callable[[Any], Any]) -> argparse.ArgumentParser:
    build(parser)
    return parser


PARSERS = {
    "plain": trainer(),
    "no-abbrev": trainer(allow_abbrev=False),
    "no-exit": trainer(exit_on_error=False),
    "plus": trainer("+"),
    "dash-plus": trainer("-+"),
    "positionals": _with(trainer(), lambda p: p.add_argument("files", nargs="*")),
    "two-positionals": _with(
        trainer(), lambda p: (p.add_argument("first"), p.add_argument("rest", nargs="?"))
    ),
    "negative-option": _with(
        trainer(), lambda p: p.add_argument("-1", dest="one", action="store_true")
    ),
    "exclusive": _with(
        trainer(),
        lambda p: (
            group := p.add_mutually_exclusive_group(),
            group.add_argument("--aa", action="store_true"),
            group.add_argument("--bb", action="store_true"),
        ),
    ),
}


def _tokens(prefix: str) -> list[str]:
    one, two = prefix, prefix * 2
    options = [
        *(f"{two}{name}" for name in ("lr", "lr-warmup", "name", "optimizer", "verbose", "fast")),
        *(f"{two}{name}" for name in ("gpus", "offload", "no-offload", "hook", "mark", "tag")),
        *(f"{two}{name}" for name in ("sizes", "stop", "maybe", "range", "steps", "\u00fcn\u00ef")),
        # abbreviations, explicit values, clusters, unknown options
        *(f"{two}l", f"{two}lr-w", f"{two}lr=2", f"{two}lr-warmup=3", f"{two}na", f"{two}opt"),
        *(f"{two}optim=sgd", f"{two}name=a=b", f"{two}no-off", f"{two}hook=z", f"{two}\u00fcn"),
        *(f"{two}\u00fcn\u00ef=\u00e9", f"{two}unknown", f"{two}unknown=1", two, one),
        *(f"{one}v", f"{one}vv", f"{one}vx", f"{one}xv", f"{one}xg4", f"{one}g4", f"{one}g"),
        *(f"{one}g=4", f"{one}vg", f"{one}x", f"{one}z", f"{one}zz"),
    ]
    values = [
        *("1", "2", "-1", "-1e-5", "-.5", "1e-5", "-inf", "nan", "adam", "sgd", "bad", ""),
        *(" ", "a b", "x\ny", "k=v", "--lr x", "-x y", "-", "--", "-5x", "-1j", "--aa", "--bb"),
    ]
    return options + values


TOKENS = {name: _tokens("-") for name in PARSERS}
TOKENS["plus"] = _tokens("+")
TOKENS["dash-plus"] += _tokens("+")
#: Namespaces given to the parse: argparse lets their attributes shadow the defaults.
GIVEN = [
    None,
    {"lr": 5.0, "extra": "e"},
    {"hook": ["given"], "verbose": 3},
    {"steps": "7", "name": None},
    {"tag": ["t"], "maybe": "m", "sizes": [1]},
]


def parsed(
    parser: argparse.ArgumentParser, argv: list[str], known: bool, namespace: Any = None
) -> Any:
    """layerconf's namespace of `argv`, by ``parse_known_args`` (`known`) or ``parse_args``."""
    if known:
        return parse_known_args(parser, list(argv), namespace)[0]
    return parse_args(parser, list(argv), namespace)


def names_dest(parser: argparse.ArgumentParser, token: str, dest: str) -> bool:
    """Whether `token`, as written, can name an option of `dest` (or be a positional's value)."""
    actions = [action for action in parser._actions if action.dest == dest]
    if any(not action.option_strings for action in actions):
        return True
    head = token.split("=", 1)[0]
    for action in actions:
        for option in action.option_strings:
            if head == option or (option.startswith(head) and len(head) > 2):
                return True
            if len(option) == 2 and token[:1] == option[0] and option[1] in token[1:]:
                return True  # a short option, alone, clustered or with its value attached
    return False


def check_origins(parser: argparse.ArgumentParser, argv: list[str], args: Any) -> None:
    """Every command-line value points at the token that set it; earlier ones before it."""
    for key in vars(args):
        setting = explain(args, key)
        entries = [e for e in (setting, *setting.history) if e.layer.startswith("cli")]
        indexes = [-1 if entry.argv_index is None else entry.argv_index for entry in entries]
        assert -1 not in indexes, (argv, key, setting)
        assert indexes == sorted(indexes, reverse=True), (argv, key, indexes)
        for index, entry in zip(indexes, entries, strict=True):
            assert argv[index] == entry.token, (argv, key, entry)
            assert names_dest(parser, str(entry.token), key), (argv, key, entry)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(PARSERS)), st.data(), st.booleans(), st.sampled_from(GIVEN))
def test_like_argparse(name: str, data: st.DataObject, known: bool, given_ns: Any) -> None:
    parser = PARSERS[name]
    argv = data.draw(st.lists(st.sampled_from(TOKENS[name]), max_size=10))

    def namespace() -> argparse.Namespace | None:
        return None if given_ns is None else argparse.Namespace(**copy.deepcopy(given_ns))

    plain = parser.parse_known_args if known else parser.parse_args
    mine = parse_known_args if known else parse_args
    expected = outcome(lambda: plain(list(argv), namespace()))
    assert outcome(lambda: mine(parser, list(argv), namespace())) == expected
    if expected[0] == "ok":
        check_origins(parser, argv, parsed(parser, argv, known, namespace()))


# ---------------------------------------------------------------------------------------------
# Arguments read from files


class SplitLines(argparse.ArgumentParser):
    def convert_arg_line_to_args(self, arg_line: str) -> list[str]:
        return arg_line.split()


FILES = {
    "a.txt": "--lr\n3\n",
    "b.txt": "-vv\n--name=x y\n@a.txt\n",
    "c.txt": "--hook\n\n--\n",
    "d.txt": "--lr=5\r\n-x\r\n",
    "e.txt": "",
}
FILE_TOKENS = [*(f"@{name}" for name in FILES), "@missing.txt", "--lr", "1", "-v", "--hook"]
FILE_TOKENS += ["z", "--", "-x", "--name", "n", "--na"]


def _file_parsers() -> dict[str, argparse.ArgumentParser]:
    split = trainer(fromfile_prefix_chars="@")
    split.__class__ = SplitLines
    positionals = trainer(fromfile_prefix_chars="@")
    positionals.add_argument("files", nargs="*")
    return {"lines": trainer(fromfile_prefix_chars="@"), "split": split, "files": positionals}


FILE_PARSERS = _file_parsers()


@pytest.fixture(scope="module")
def files_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("argfiles")
    for name, text in FILES.items():
        (directory / name).write_bytes(text.encode())
    return directory


@settings(max_examples=200, suppress_health_check=list(HealthCheck))
@given(
    st.sampled_from(sorted(FILE_PARSERS)),
    st.lists(st.sampled_from(FILE_TOKENS), max_size=8),
    st.booleans(),
)
def test_arguments_from_files(
    files_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str, argv: list[str], known: bool
) -> None:
    """A value read from an @file points at its file and line, and at the @file token."""
    monkeypatch.chdir(files_dir)
    parser = FILE_PARSERS[name]
    plain = parser.parse_known_args if known else parser.parse_args
    mine = parse_known_args if known else parse_args
    expected = outcome(lambda: plain(list(argv)))
    assert outcome(lambda: mine(parser, list(argv))) == expected
    if expected[0] != "ok":
        return
    args = parsed(parser, argv, known)
    for key in vars(args):
        setting = explain(args, key)
        for entry in (setting, *setting.history):
            if not entry.layer.startswith("cli"):
                continue
            origin = entry.origin
            assert origin.argv_index is not None, (argv, key, origin)
            if origin.source is None:
                assert argv[origin.argv_index] == origin.token, (argv, key, origin)
                continue
            assert argv[origin.argv_index].startswith("@"), (argv, key, origin)
            if name != "split":  # (a line split in several tokens)
                assert origin.line is not None
                lines = FILES[origin.source].splitlines()
                assert lines[origin.line - 1] == origin.token, (argv, key, origin)


# ---------------------------------------------------------------------------------------------
# Secrets, however they are spelt

SECRET = "SEKRIT-1234567"


def secret_parser(**settings: Any) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="train", **settings)
    parser.add_argument("--lr", type=float, default=1e-6)
    parser.add_argument("-v", "--verbose", action="count", default=0)
    parser.add_argument("-x", "--fast", action="store_true")
    parser.add_argument("-k", "--wandb-key")
    parser.add_argument("--hf-token", nargs="+")
    parser.add_argument("--api-key", choices=["aaaaaaa", "bbbbbbb"])
    parser.add_argument("--db-password", type=int)
    parser.add_argument("--my-secret", action="append")
    parser.add_argument("--run-name", default="r")
    parser.add_argument("--kw", type=json.loads, default="{}")
    parser.add_argument("--url")
    return parser


SECRET_PARSERS = {
    "plain": secret_parser(),
    "no-exit": secret_parser(exit_on_error=False),
    "no-abbrev": secret_parser(allow_abbrev=False),
    "positionals": _with(secret_parser(), lambda p: p.add_argument("files", nargs="*")),
}
#: Each spelling of a secret flag, and how many of the tokens after it are its values.
SECRET_FLAGS = {"--wandb-key": 1, "--wandb": 1, "--wan": 1, "-k": 1, "--hf-token": 99}
SECRET_FLAGS |= {"--hf": 99, "--api-key": 1, "--api": 1, "--db-password": 1, "--db": 1}
SECRET_FLAGS |= {"--my-secret": 1, "--my": 1, "--my-se": 1}
S = SECRET
SECRET_TOKENS = [
    *SECRET_FLAGS,
    *(f"--wandb-key={S}", f"--wandb={S}", f"-k{S}", f"-vk{S}", f"-xvk{S}", f"-k={S}"),
    *(f"--hf-token={S}", f"--api-key={S}", f"--api={S}", f"--db-password={S}", f"--db={S}"),
    *(f"--my-secret={S}", f"--my-s={S}", "--kw", json.dumps({"api_key": S})),
    *(json.dumps({"wandb_key": S, "a": 1}), "--url", f"https://u:{S}@host/x"),
    *(S, S, S, f"-{S}", "--run-name", "--lr", "1", "-v", "-x", "--", "--unknown", "aaaaaaa"),
]


def holds_a_secret(argv: list[str]) -> bool:
    """Whether `argv` gives `SECRET` as a secret: a secret flag's value (as the flag's
    spellings above take it), in a flag's own token, or inside a JSON value or a URL."""
    taking = 0
    for token in argv:
        if taking and not token.startswith("-"):
            if token == SECRET:
                return True
            taking -= 1
            continue
        if token == "--":
            return False
        if SECRET in token and token not in (SECRET, f"-{SECRET}"):
            return True
        taking = SECRET_FLAGS.get(token, 0)
    return False


def held(args: argparse.Namespace) -> list[tuple[str, Any]]:
    """The keys and values of `args` that hold the secret's text."""
    return [(key, value) for key, value in vars(args).items() if SECRET in repr(value)]


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(SECRET_PARSERS)),
    st.lists(st.sampled_from(SECRET_TOKENS), max_size=8),
    st.booleans(),
)
def test_no_secret_shown(name: str, argv: list[str], known: bool) -> None:
    """In redacted_argv, argparse's errors, explain, and the audit record (its argv always; all
    of it when a secret key holds the secret: another value equal to it is scrubbed)."""
    parser = SECRET_PARSERS[name]
    if not holds_a_secret(argv):
        return
    assert SECRET not in "\n".join(redacted_argv(argv, parser))
    done = outcome(lambda: (parse_known_args if known else parse_args)(parser, list(argv)))
    if done[0] != "ok":
        assert SECRET not in repr(done)
        return
    args = parsed(parser, argv, known)
    record = audit({"main": args})
    assert SECRET not in json.dumps(record["argv"])
    if not any(SECRET not in repr(redact(key, value)) for key, value in held(args)):
        return  # (given only where argparse left it unknown: no value holds it as a secret)
    assert SECRET not in json.dumps(record)
    for key in vars(args):
        setting = explain(args, key)
        assert SECRET not in f"{setting}{setting!r}{json.dumps(setting.to_dict(), default=repr)}"


# ---------------------------------------------------------------------------------------------
# The bundled parser


@pytest.fixture(scope="module")
def megatron() -> argparse.ArgumentParser:
    from layerconf import load_profile

    return load_profile()


MEGATRON_TOKENS = [
    *("--lr", "--seed", "--rollout-batch-size", "--attention-backend", "--disable-bias-linear"),
    *("--eval-prompt-data", "--train-env-vars", "--use-wandb", "--offload-train"),
    *("--no-offload-train", "--recompute-modules", "--profile-target", "--micro-batch-size"),
    *("--hidden-size", "--spec", "--only-train-params-name-list", "--rampup-batch-size"),
    *("--normalization", "--se", "--lr=1", "--sglang-x", "--unknown-thing", "--", "-h"),
    *("1", "0", "-1", "1e-5", "-1e-5", "flash", "RMSNorm", "train_actor", "x", "", "{}"),
]


@settings(max_examples=60, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(MEGATRON_TOKENS), max_size=10), st.booleans(), st.booleans())
def test_the_bundled_parser(
    megatron: argparse.ArgumentParser,
    slime_argv: list[str],
    extra: list[str],
    known: bool,
    real: bool,
) -> None:
    """The Megatron + slime parser, after the real command line or alone: argparse's outcome
    (an enum type's KeyError included), the scan's record the recorder's."""
    from tests.test_argv_scan import check_against_argparse

    argv = [*(slime_argv if real else ["--rollout-batch-size", "4"]), *extra]
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            megatron.parse_known_args(list(argv))
    except KeyError:  # (Megatron's enum type looks a name up: argparse lets its error by)
        with pytest.raises(KeyError):
            parse_known_args(megatron, list(argv))
        return
    except SystemExit:
        pass
    check_against_argparse(megatron, argv, known)
