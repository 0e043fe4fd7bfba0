"""The table scan of plain command lines parses exactly as argparse does, or declines.

`layerconf.sources._argv_scan.scan` stands in for the recorded argparse parse when a parser
and its command line are plain. Each law here compares it with argparse itself and with the
recorder (the scan switched off): the same namespace (values, types, key order), the same
extras, the same record of which token set what; and wherever argparse fails or could parse
differently, the scan declines and the recorder runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any, ClassVar
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layerconf import load_profile, parse_args, parse_known_args
from layerconf.sources import _argv_recorder
from layerconf.sources._argv_recorder import record
from layerconf.sources._argv_scan import scan
from tests.test_argparse import outcome as argparse_outcome
from tests.test_argparse import snapshot

# ---------------------------------------------------------------------------------------------
# Parsers and helpers


def plain_parser(**settings: Any) -> argparse.ArgumentParser:
    """A parser the scan takes: options only, every built-in one-setattr action kind."""
    parser = argparse.ArgumentParser(prog="train", **settings)
    parser.add_argument("--lr", type=float, default=1e-6)
    parser.add_argument("--name", default="run")
    parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    parser.add_argument("--kwargs", type=json.loads, default="{}")
    parser.add_argument("--steps", type=int, default="10")  # a string default the type converts
    parser.add_argument("-v", "--verbose", action="count", default=0)
    parser.add_argument("-x", "--fast", action="store_true")
    parser.add_argument("--disable-bias", dest="bias", action="store_false")
    parser.add_argument("--offload", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--hook", action="append", default=["base"])
    parser.add_argument("--mark", action="append_const", const="m")
    parser.add_argument("--tag", action="extend", nargs="+")
    parser.add_argument("--const", action="store_const", const=42)
    parser.add_argument("--sizes", nargs="+", type=int)
    parser.add_argument("--stop", nargs="*", default=["eos"])
    parser.add_argument("--maybe", nargs="?", const="yes", default="no")
    parser.add_argument("--range", nargs=2, type=int)
    parser.add_argument("--round", dest="rounding", action="store_true")
    parser.add_argument("--no-round", dest="rounding", action="store_false")
    parser.add_argument("--hidden", default=argparse.SUPPRESS)
    parser.add_argument("--path", type=str, default="out")
    return parser


PLAIN = plain_parser()


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """What a parse did (`tests.test_argparse.outcome`), its namespace's items in order and with
    their types, and its extras (None for ``parse_args``)."""
    done = argparse_outcome(call)
    if done[0] != "ok":
        return done
    state = done[1]
    extras = done[2] if len(done) > 2 else None
    return ("ok", list(state.items()), [type(value) for value in state.values()], extras)


@contextlib.contextmanager
def scan_off() -> Iterator[None]:
    """The recorder alone, as before the scan existed."""
    with mock.patch.object(_argv_recorder, "scan", return_value=None):
        yield


def recorded(parser: argparse.ArgumentParser, argv: list[str], known: bool) -> tuple[Any, ...]:
    """What the recorder found: its changes, argparse's dict in order, the extras."""
    with scan_off():
        recorder, final, extras = record(parser, list(argv), {}, known=known)
    return recorder.changes(dict(final)), list(final.items()), extras


def check_against_argparse(parser: argparse.ArgumentParser, argv: list[str], known: bool) -> bool:
    """The laws for one command line; True when the scan took it."""
    before = snapshot(parser)
    parse: Callable[..., Any] = parse_known_args if known else parse_args
    plain = outcome(lambda: (parser.parse_known_args if known else parser.parse_args)(argv))
    assert outcome(lambda: parse(parser, argv)) == plain  # layerconf's whole outcome
    failed: argparse.ArgumentError | None = None
    try:
        scanned = scan(parser, list(argv), known=known)
    except argparse.ArgumentError as error:  # a value that does not convert: argparse's error
        failed, scanned = error, None
    assert snapshot(parser) == before  # nothing of the parser changed
    if failed is not None:
        assert plain[0] == "exit", (argv, plain)
        assert plain[2].endswith(f"error: {failed}\n"), (argv, plain)
        return True
    if scanned is None:
        return False
    assert plain[0] == "ok", (argv, plain)  # the scan never accepts what argparse refuses
    occurrences, final, extras = scanned
    assert list(final.items()) == plain[1]
    assert [type(value) for value in final.values()] == plain[2]
    assert extras == (plain[3] if known else [])
    changes = _argv_recorder.Recorder.of_scan(parser, list(argv), occurrences).changes(final)
    assert (changes, list(final.items()), extras) == recorded(parser, argv, known)
    return True


# ---------------------------------------------------------------------------------------------
# Laws on random command lines

TOKENS = [
    # the parser's own option strings, written whole
    *("--lr", "--name", "--optimizer", "--kwargs", "--steps", "-v", "--verbose", "-x"),
    *("--fast", "--disable-bias", "--offload", "--no-offload", "--hook", "--mark", "--tag"),
    *("--const", "--sizes", "--stop", "--maybe", "--range", "--round", "--no-round"),
    *("--hidden", "--path"),
    # values, good and bad
    *("1", "2", "0.5", "adam", "sgd", "bad", '{"a": 1}', "{", "", "a b", "-1", "-0.5"),
    # what argparse reads in other ways: the scan declines those
    *("--lr=2", "--opt", "--optim=sgd", "-vx", "-xv", "--", "-", "-z", "--unknown"),
    *("--unknown=1", "--sglang-mem", "--wandb key", "-h"),
]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=12), st.booleans())
def test_random_command_lines(argv: list[str], known: bool) -> None:
    check_against_argparse(PLAIN, argv, known)


OPTIONS = [token for token in TOKENS[:24] if token != "--optimizer"]
GROUPS = st.lists(
    st.tuples(
        st.sampled_from([*OPTIONS, "--unknown", "--sglang-mem"]),
        st.lists(st.sampled_from(["1", "2", "3", "", "left"]), max_size=3),
    ),
    max_size=8,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GROUPS)
def test_plain_command_lines_are_taken_when_argparse_takes_them(
    groups: list[tuple[str, list[str]]],
) -> None:
    """Whole option strings, unknown long options and values whatever their count: the scan
    takes every one argparse takes (but help), and parses it the same."""
    argv = [token for option, values in groups for token in (option, *values)]
    taken = check_against_argparse(PLAIN, argv, known=True)
    if outcome(lambda: PLAIN.parse_known_args(argv))[0] == "ok":
        assert taken, argv


# ---------------------------------------------------------------------------------------------
# Cases


TAKEN = [
    [],
    ["--lr", "1e-5", "--name", "x"],
    ["--lr", "1", "--lr", "2", "--lr", "3"],  # set three times: every setter recorded
    ["--hook", "a", "--hook", "b", "--tag", "c", "d", "--tag", "e"],
    ["--steps", "3"],  # the string default not converted: the command line's value instead
    ["-v", "--verbose", "-v", "-x", "--no-offload", "--offload"],
    ["--maybe", "--stop", "--const", "--mark", "--mark"],
    ["--maybe", "v", "--stop", "a", "b", "--range", "1", "2"],
    ["--maybe", "a", "b", "--stop", "--tag", "c", "d", "e"],  # '?' takes one; '*', '+' all
    ["left", "--lr", "1", "over", "--unknown", "x", "--sglang-mem-fraction", "0.8"],
    ["--kwargs", '{"a": [1, 2]}', "--round", "--no-round"],
    ["", "--name", ""],
]


@pytest.mark.parametrize("argv", TAKEN)
def test_taken_like_argparse(argv: list[str]) -> None:
    assert check_against_argparse(PLAIN, argv, known=True)


def test_parse_args_takes_a_command_line_without_extras() -> None:
    assert check_against_argparse(PLAIN, ["--lr", "2"], known=False)
    assert not check_against_argparse(PLAIN, ["--lr", "2", "extra"], known=False)


def _counting() -> tuple[list[str], Callable[[str], int]]:
    calls: list[str] = []

    def counted(text: str) -> int:
        calls.append(text)
        return int(text)

    return calls, counted


def _counted_parser(counted: Callable[[str], int], **settings: Any) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(**settings)
    parser.add_argument("--a", type=counted, default="7")
    parser.add_argument("--b", type=counted, nargs="+")
    parser.add_argument("--c", type=counted, default="8")
    return parser


CONVERTED = [
    ({}, None, ["--a", "1", "--b", "2", "3"]),
    ({}, None, ["--a", "1", "--b", "2", "x", "--c", "4"]),  # a value that does not convert
    ({"exit_on_error": False}, None, ["--a", "1", "--b", "x"]),
    ({}, ("--q", {"nargs": "?", "const": argparse.SUPPRESS}), ["--a", "1", "--q"]),
    ({}, ("--r", {"required": True}), ["--a", "1"]),  # a required option missing
    ({}, ("--d", {"type": int, "default": "zz"}), ["--a", "1"]),  # a default that does not
    ({}, ("--e", {"dest": "_unrecognized_args", "default": ["z"]}), ["--a", "1"]),
]


@pytest.mark.parametrize(("settings", "extra", "argv"), CONVERTED)
def test_each_value_converted_as_often_as_argparse_does(
    settings: dict[str, Any], extra: tuple[str, dict[str, Any]] | None, argv: list[str]
) -> None:
    """Each value converted once, as argparse does, errors included: the scan converts nothing
    before it knows it will not hand over to the recorder."""
    counts = []
    outcomes = []
    for parse in (argparse.ArgumentParser.parse_known_args, parse_known_args):
        calls, counted = _counting()
        parser = _counted_parser(counted, **settings)
        if extra is not None:
            parser.add_argument(extra[0], **extra[1])
        outcomes.append(outcome(lambda: parse(parser, argv)))  # noqa: B023
        counts.append(calls)
    assert counts[0] == counts[1]
    assert outcomes[0] == outcomes[1]


def _positional() -> argparse.ArgumentParser:
    parser = plain_parser()
    parser.add_argument("file", nargs="?")
    return parser


def _separator_option() -> argparse.ArgumentParser:
    parser = plain_parser()
    parser.add_argument("--", dest="separator", action="store_true")
    return parser


def _remainder() -> argparse.ArgumentParser:
    parser = plain_parser()
    parser.add_argument("--rest", nargs=argparse.REMAINDER)
    return parser


def _suppressed_dest() -> argparse.ArgumentParser:
    parser = plain_parser()
    parser.add_argument("--gone", dest=argparse.SUPPRESS, default=1)
    return parser


def _exclusive() -> argparse.ArgumentParser:
    parser = plain_parser()
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--left", action="store_true")
    group.add_argument("--right", action="store_true")
    return parser


def _required() -> argparse.ArgumentParser:
    parser = plain_parser()
    parser.add_argument("--seed", type=int, required=True)
    return parser


class _FileSpy(argparse.FileType):
    """A FileType that opens nothing and says when it is called."""

    calls: ClassVar[list[str]] = []

    def __call__(self, string: str) -> Any:
        self.calls.append(string)
        return string


def _file_type() -> argparse.ArgumentParser:
    parser = plain_parser()
    parser.add_argument("--out", type=_FileSpy("r"))
    return parser


def _own_conversion() -> argparse.ArgumentParser:
    parser = plain_parser()
    convert = parser._get_value
    parser._get_value = lambda action, text: convert(action, text.strip())  # type: ignore[method-assign]
    return parser


class _Subclass(argparse.ArgumentParser):
    pass


class _Custom(argparse.Action):
    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.other = 1


def _custom_action() -> argparse.ArgumentParser:
    parser = plain_parser()
    parser.add_argument("--custom", action=_Custom)
    return parser


def _namespace_dest() -> argparse.ArgumentParser:
    parser = plain_parser()
    parser.add_argument("--get-kwargs", dest="_get_kwargs", default=1)
    return parser


def _shared_dest_without_default() -> argparse.ArgumentParser:
    parser = plain_parser()
    parser.add_argument("--first", dest="shared", default=argparse.SUPPRESS)
    parser.add_argument("--second", dest="shared", default=2)
    return parser


def _shared_dest_without_default_last() -> argparse.ArgumentParser:
    parser = plain_parser()
    parser.add_argument("--first", dest="shared", default=1)
    parser.add_argument("--second", dest="shared", default=argparse.SUPPRESS)
    return parser


def _shared_dest_never_defaulted() -> argparse.ArgumentParser:
    parser = plain_parser()
    parser.add_argument("--first", dest="shared", default=argparse.SUPPRESS)
    parser.add_argument("--second", dest="shared", default=argparse.SUPPRESS)
    return parser


class _Text(str):
    """A str subclass: argparse indexes it, the scan does not take it."""


def _suppressed_const() -> argparse.ArgumentParser:
    parser = plain_parser()
    parser.add_argument("--quiet-value", nargs="?", const=argparse.SUPPRESS)
    return parser


DECLINED: list[tuple[str, Callable[[], argparse.ArgumentParser], list[str]]] = [
    ("abbreviation", plain_parser, ["--optim", "sgd"]),
    ("explicit value", plain_parser, ["--lr=2"]),
    ("unknown with a value", plain_parser, ["--unknown=2"]),
    ("prefix of an option", plain_parser, ["--l"]),
    ("short cluster", plain_parser, ["-vx"]),
    ("separator", plain_parser, ["--name", "a", "--", "b"]),
    ("dash", plain_parser, ["-"]),
    ("negative number", plain_parser, ["--lr", "-1"]),
    ("unknown short", plain_parser, ["-z"]),
    ("space", plain_parser, ["--wandb key"]),
    ("help", plain_parser, ["-h"]),
    ("missing value", plain_parser, ["--lr"]),
    ("too few", plain_parser, ["--range", "1"]),
    ("positionals", _positional, ["--lr", "1"]),
    ("mutually exclusive", _exclusive, ["--left"]),
    ("required, not given", _required, ["--lr", "1"]),
    ("file type", _file_type, ["--out", "x"]),
    ("an option named --", _separator_option, ["--lr", "1", "--"]),
    ("remainder", _remainder, ["--rest", "1", "--lr", "2"]),
    ("a dest argparse does not set", _suppressed_dest, ["--lr", "1"]),
    ("a parsing method replaced", _own_conversion, ["--lr", " 1"]),
    ("a parser subclass", lambda: _Subclass(), []),
    ("custom action", _custom_action, ["--custom", "1"]),
    ("a dest a Namespace has", _namespace_dest, []),
    ("a shared dest without a default first", _shared_dest_without_default, []),
    ("a shared dest without a default last", _shared_dest_without_default_last, []),
    ("a shared dest without any default", _shared_dest_never_defaulted, ["--first", "1"]),
    ("fromfile", lambda: plain_parser(fromfile_prefix_chars="@"), ["--lr", "1"]),
    ("other prefix", lambda: argparse.ArgumentParser(prefix_chars="+"), []),
    ("a value argparse does not set", _suppressed_const, ["--quiet-value"]),
    ("a str subclass", plain_parser, [_Text("--lr"), "1"]),
    ("no actions", lambda: argparse.ArgumentParser(add_help=False), ["x"]),
]


@pytest.mark.parametrize(("why", "make", "argv"), DECLINED, ids=[case[0] for case in DECLINED])
def test_declined_and_recorded_instead(
    why: str, make: Callable[[], argparse.ArgumentParser], argv: list[str]
) -> None:
    parser = make()
    _FileSpy.calls.clear()
    assert scan(parser, list(argv), known=True) is None, why
    assert not _FileSpy.calls  # (declined before anything was converted)
    mine = outcome(lambda: parse_known_args(parser, argv))
    assert mine == outcome(lambda: make().parse_known_args(argv))


def test_registered_types_are_argparse_s() -> None:
    """A type registered for None or str is called for string defaults as argparse calls it."""
    parser = plain_parser()
    parser.register("type", None, str.upper)
    parser.register("type", str, str.title)
    assert check_against_argparse(parser, ["--lr", "1"], known=True)
    assert check_against_argparse(parser, ["--name", "low"], known=True)


def test_a_given_namespace_is_argparse_s() -> None:
    """With `namespace=`, the recorded parse runs (the namespace's keys shadow defaults)."""
    given = argparse.Namespace(lr=5, extra="e")
    mine, _ = parse_known_args(PLAIN, ["--name", "x"], namespace=given)
    plain, _ = PLAIN.parse_known_args(
        ["--name", "x"], namespace=argparse.Namespace(lr=5, extra="e")
    )
    assert list(vars(mine).items()) == list(vars(plain).items())


def test_a_dest_that_is_not_a_string_fails_as_argparse() -> None:
    def make() -> argparse.ArgumentParser:
        parser = plain_parser()
        parser.add_argument("--odd", default=1).dest = 5  # type: ignore[assignment]
        return parser

    assert scan(make(), [], known=True) is None
    with pytest.raises(TypeError) as plain:
        make().parse_known_args([])
    with pytest.raises(TypeError) as mine:
        parse_known_args(make(), [])
    assert str(mine.value) == str(plain.value)


def test_the_cli_s_guarded_parser_is_scanned() -> None:
    """The ways a parser reports may be replaced (the CLI does): still a plain parser."""
    from layerconf.cli._parser_copies import guarded
    from layerconf.cli.errors import ParserStop

    parser = guarded(plain_parser())
    assert check_against_argparse(parser, ["--lr", "1"], known=True)
    with pytest.raises(ParserStop, match="invalid float value"):
        parse_known_args(parser, ["--lr", "x"])


@pytest.mark.parametrize(
    "argv",
    [["--lr", "fast"], ["--name", "a", "--optimizer", "adagrad"], ["--sizes", "1", "x"]],
)
def test_a_value_that_does_not_convert_is_argparse_s_error(argv: list[str]) -> None:
    with pytest.raises(argparse.ArgumentError):
        scan(PLAIN, argv, known=True)
    assert check_against_argparse(PLAIN, argv, known=True)
    quiet = plain_parser(exit_on_error=False)
    with pytest.raises(argparse.ArgumentError) as plain:
        quiet.parse_known_args(argv)
    with pytest.raises(argparse.ArgumentError) as mine:
        parse_known_args(plain_parser(exit_on_error=False), argv)
    assert str(mine.value) == str(plain.value)


def test_required_given_is_taken() -> None:
    assert check_against_argparse(_required(), ["--seed", "1"], known=True)


def test_set_defaults_is_taken() -> None:
    parser = plain_parser()
    parser.set_defaults(lr=0.5, extra="e")
    assert check_against_argparse(parser, ["--name", "n"], known=True)


def test_a_shared_dest_keeps_its_first_default_in_its_first_place() -> None:
    parser = plain_parser()
    parser.add_argument("--again", dest="name", default="second")
    assert check_against_argparse(parser, [], known=True)
    assert check_against_argparse(parser, ["--again", "x"], known=True)


@pytest.mark.skipif(sys.version_info < (3, 13), reason="deprecated options: Python 3.13")
def test_a_deprecated_option_is_left_to_argparse() -> None:
    parser = plain_parser()
    parser.add_argument("--old", deprecated=True)  # type: ignore[call-arg]
    assert scan(parser, ["--old", "1"], known=True) is None


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="argparse warns: Python 3.13+")
def test_a_deprecated_attribute_is_argparse_s_own_before_3_13() -> None:
    """Before Python 3.13 argparse ignores an action's ``deprecated`` (set by hand): the
    scan takes such an option, as argparse parses it."""
    parser = plain_parser()
    parser._option_string_actions["--name"].deprecated = True  # type: ignore[attr-defined]
    assert scan(parser, ["--name", "n"], known=True) is not None
    assert check_against_argparse(parser, ["--name", "n"], known=True)


def test_parse_args_fails_as_argparse_on_extras() -> None:
    assert outcome(lambda: parse_args(PLAIN, ["--lr", "1", "x"])) == outcome(
        lambda: PLAIN.parse_args(["--lr", "1", "x"])
    )


# ---------------------------------------------------------------------------------------------
# The real command line


def test_the_real_command_line_is_scanned(slime_argv: list[str]) -> None:
    parser = load_profile()
    assert check_against_argparse(parser, slime_argv, known=True)
    with_values = ["--lr", "2e-6", *slime_argv, "--lr", "1e-6"]
    assert check_against_argparse(parser, with_values, known=True)


def test_the_real_launch_records_the_same_with_or_without_the_scan(
    slime_argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: both roles' audit record, byte for byte, and every explain()."""
    from layerconf import audit, explain, resolve_roles
    from layerconf.audits.io import record_bytes
    from tests.conftest import FIXTURES

    monkeypatch.chdir(FIXTURES)  # (the command line names its role file relative to it)
    argv = ["--lr", "3e-6", *slime_argv, "--lr", "2e-6", "--sglang-extra", "1"]

    def launch() -> tuple[bytes, dict[str, list[str]]]:
        roles = resolve_roles(load_profile(), argv)
        explained = {
            role: [repr(explain(args, key)) for key in vars(args)] for role, args in roles.items()
        }
        return record_bytes(audit(roles)), explained

    scanned = launch()
    with scan_off():
        assert launch() == scanned
