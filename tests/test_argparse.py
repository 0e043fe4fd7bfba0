"""parse_args / parse_known_args: argparse's own results, with the token behind every value."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layerconf import (
    LayerStack,
    Namespace,
    Reason,
    explain,
    load_profile,
    notices,
    parse_args,
    parse_known_args,
    provenance_of,
)
from layerconf.profiles.megatron_slime import AttnBackend
from tests.test_profile import ADDED

# ---------------------------------------------------------------------------------------------
# Parsers and helpers


def rich_parser(
    cls: type[argparse.ArgumentParser] = argparse.ArgumentParser, **settings: Any
) -> argparse.ArgumentParser:
    """One parser with every action kind the command line can hold."""
    parser = cls(prog="train", **settings)
    parser.add_argument("--lr", type=float, default=1e-6)
    parser.add_argument("--name", default="run")
    parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    parser.add_argument("--kwargs", type=json.loads, default="{}")
    parser.add_argument("-v", "--verbose", action="count", default=0)
    parser.add_argument("-x", "--fast", action="store_true")
    parser.add_argument("--disable-bias", dest="bias", action="store_false")
    parser.add_argument("--offload", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--hook", action="append", default=[])
    parser.add_argument("--tag", action="extend", nargs="+")
    parser.add_argument("--const", action="store_const", const=42)
    parser.add_argument("--sizes", nargs="+", type=int)
    parser.add_argument("--stop", nargs="*", default=["eos"])
    parser.add_argument("--maybe", nargs="?", const="yes", default="no")
    parser.add_argument("--range", nargs=3, type=int)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("-g", "--gpus", type=int, default=8)
    parser.add_argument("--round", dest="rounding", action="store_true")
    parser.add_argument("--no-round", dest="rounding", action="store_false")
    parser.add_argument("--hidden", default=argparse.SUPPRESS)
    parser.add_argument("files", nargs="*")
    return parser


class Both(argparse.Action):
    """A custom action that sets its own dest and another one."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        namespace.mode = f"from {option_string}"


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """What a parse did: its result, or how it failed (exit code and stderr, or the error)."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            result = call()
    except SystemExit as exit_:
        return ("exit", exit_.code, stderr.getvalue())
    except argparse.ArgumentError as error:
        return ("error", str(error))
    if isinstance(result, tuple):
        return ("ok", vars(result[0]), result[1])
    return ("ok", vars(result))


def same_as_argparse(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[Namespace, list[str]]:
    """Parse both ways, check the results are equal, and return layerconf's."""
    plain, plain_unknown = parser.parse_known_args(argv)
    traced, unknown = parse_known_args(parser, argv)
    assert vars(traced) == vars(plain)
    assert {key: type(value) for key, value in vars(traced).items()} == {
        key: type(value) for key, value in vars(plain).items()
    }
    assert unknown == plain_unknown
    return traced, unknown


def snapshot(parser: argparse.ArgumentParser) -> list[Any]:
    """Everything about a parser that a parse could change, object identities included."""
    return [
        type(parser),
        {name: id(value) for name, value in vars(parser).items()},
        dict(parser._defaults),
        dict(parser._option_string_actions),
        [(type(action), dict(vars(action))) for action in parser._actions],
        [id(action.default) for action in parser._actions],
    ]


def setting_index(args: argparse.Namespace, key: str) -> tuple[Any, str, int | None, str | None]:
    setting = explain(args, key)
    return setting.value, setting.layer, setting.argv_index, setting.token


# ---------------------------------------------------------------------------------------------
# Every action kind


ACTION_CASES = [
    # argv (after --seed 1), key, value, argv index, token as written
    (["--lr", "1e-5"], "lr", 1e-5, 2, "--lr"),
    (["--lr=1e-5"], "lr", 1e-5, 2, "--lr=1e-5"),
    (["--lr", "1e-6"], "lr", 1e-6, 2, "--lr"),  # equal to its default: still the command line's
    (["--optim", "sgd"], "optimizer", "sgd", 2, "--optim"),  # an abbreviation
    (["--optim=sgd"], "optimizer", "sgd", 2, "--optim=sgd"),
    (["-x"], "fast", True, 2, "-x"),
    (["--fast"], "fast", True, 2, "--fast"),
    (["--disable-bias"], "bias", False, 2, "--disable-bias"),
    (["--offload"], "offload", True, 2, "--offload"),
    (["--no-offload"], "offload", False, 2, "--no-offload"),
    (["--hook", "a", "--hook=b"], "hook", ["a", "b"], 4, "--hook=b"),
    (["--tag", "a", "b", "--tag", "c"], "tag", ["a", "b", "c"], 5, "--tag"),
    (["--const"], "const", 42, 2, "--const"),
    (["-vvv"], "verbose", 3, 2, "-vvv"),
    (["-vx"], "verbose", 1, 2, "-vx"),
    (["-vx"], "fast", True, 2, "-vx"),
    (["-xg4"], "gpus", 4, 2, "-xg4"),
    (["-g4"], "gpus", 4, 2, "-g4"),
    (["-g", "4"], "gpus", 4, 2, "-g"),
    (["--gpus=4"], "gpus", 4, 2, "--gpus=4"),
    (["--sizes", "1", "2", "3"], "sizes", [1, 2, 3], 2, "--sizes"),
    (["--stop"], "stop", [], 2, "--stop"),
    (["--maybe"], "maybe", "yes", 2, "--maybe"),
    (["--maybe", "v"], "maybe", "v", 2, "--maybe"),
    (["--range", "1", "2", "3"], "range", [1, 2, 3], 2, "--range"),
    (["--kwargs", '{"a": 1}'], "kwargs", {"a": 1}, 2, "--kwargs"),
    (["a.txt", "b.txt"], "files", ["a.txt", "b.txt"], 2, "a.txt"),
    (["--", "--lr"], "files", ["--lr"], 3, "--lr"),
    (["--no-round"], "rounding", False, 2, "--no-round"),
    (["--round"], "rounding", True, 2, "--round"),
    (["--hidden", "h"], "hidden", "h", 2, "--hidden"),
    (["--lr", "-0.5"], "lr", -0.5, 2, "--lr"),  # a negative number is a value
]


class TestActionKinds:
    """Every action kind is recorded with the argv index and the token that set it."""

    @pytest.mark.parametrize(
        ("argv", "key", "value", "index", "token"),
        ACTION_CASES,
        ids=[f"{' '.join(case[0])}:{case[1]}" for case in ACTION_CASES],
    )
    def test_origin(self, argv: list[str], key: str, value: Any, index: int, token: str) -> None:
        args, _ = same_as_argparse(rich_parser(), ["--seed", "1", *argv])
        assert setting_index(args, key) == (value, "cli", index, token)
        assert explain(args, key).kind == "argv"

    def test_required_argument(self) -> None:
        args, _ = same_as_argparse(rich_parser(), ["--lr", "1", "--seed", "7"])
        assert setting_index(args, "seed") == (7, "cli", 2, "--seed")

    def test_positional_and_options_interleaved(self) -> None:
        args, _ = same_as_argparse(rich_parser(), ["a", "--seed", "1", "b"])
        # argparse takes the positional at its first chance: 'a' only; 'b' is left over
        assert setting_index(args, "files") == (["a"], "cli", 0, "a")

    def test_no_abbreviations_when_the_parser_forbids_them(self) -> None:
        args, unknown = same_as_argparse(
            rich_parser(allow_abbrev=False), ["--seed", "1", "--optim", "sgd"]
        )
        assert unknown == ["--optim"]
        assert explain(args, "optimizer").layer == "default"
        assert setting_index(args, "files") == (["sgd"], "cli", 3, "sgd")

    def test_custom_action_setting_two_dests(self) -> None:
        parser = argparse.ArgumentParser()
        parser.add_argument("--both", action=Both)
        parser.add_argument("--mode", default="plain")
        parser.add_argument("--tail", type=int, default="3")  # converted after the custom one
        args, _ = same_as_argparse(parser, ["--mode", "m", "--both", "b"])
        assert setting_index(args, "both") == ("b", "cli", 2, "--both")
        assert setting_index(args, "mode") == ("from --both", "cli", 2, "--both")
        assert [entry.token for entry in explain(args, "mode").history] == ["--mode", None]
        assert setting_index(args, "tail") == (3, "default", None, None)

    def test_custom_action_in_a_cluster(self) -> None:
        parser = argparse.ArgumentParser()
        parser.add_argument("-b", action=Both, nargs=0)
        parser.add_argument("-q", action="store_true")
        args, _ = same_as_argparse(parser, ["-qb"])
        assert setting_index(args, "mode") == ("from -b", "cli", 0, "-qb")
        assert setting_index(args, "q") == (True, "cli", 0, "-qb")

    def test_option_strings_with_other_prefix_chars(self) -> None:
        parser = argparse.ArgumentParser(prefix_chars="+-")
        parser.add_argument("+w", "++width", type=int, default=1)
        parser.add_argument("-d", action="store_true")
        args, _ = same_as_argparse(parser, ["-d", "++width", "3"])
        assert setting_index(args, "width") == (3, "cli", 1, "++width")

    def test_several_positionals(self) -> None:
        parser = argparse.ArgumentParser()
        parser.add_argument("src")
        parser.add_argument("dst", nargs="?", default="out")
        parser.add_argument("rest", nargs="*")
        parser.add_argument("--flag", action="store_true")
        args, _ = same_as_argparse(parser, ["a", "b", "c", "d", "--flag"])
        assert setting_index(args, "src") == ("a", "cli", 0, "a")
        assert setting_index(args, "dst") == ("b", "cli", 1, "b")
        assert setting_index(args, "rest") == (["c", "d"], "cli", 2, "c")
        # A positional that matched no token holds its default (argparse versions differ on
        # when it is taken; either way it is not the command line's).
        for argv in (["a"], ["a", "--flag", "b", "c"]):
            args, _ = same_as_argparse(parser, argv)
            assert setting_index(args, "src") == ("a", "cli", 0, "a")
            for key in ("dst", "rest"):
                setting = explain(args, key)
                if setting.layer == "cli":  # the token of its first value
                    first = setting.value[0] if isinstance(setting.value, list) else setting.value
                    assert argv[setting.argv_index or 0] == setting.token == first
                else:
                    assert (setting.layer, setting.argv_index) == ("default", None)

    def test_remainder(self) -> None:
        parser = argparse.ArgumentParser()
        parser.add_argument("--flag", action="store_true")
        parser.add_argument("command", nargs=argparse.REMAINDER)
        args, _ = same_as_argparse(parser, ["run", "--flag", "x"])
        assert setting_index(args, "command") == (["run", "--flag", "x"], "cli", 0, "run")
        assert explain(args, "flag").layer == "default"


class ListOptionals(argparse.ArgumentParser):
    """``_parse_optional`` as Python 3.12.7+ and 3.13.1+ have it: a list of (action,
    option_string, sep, explicit_arg) tuples, or None.

    This Python's own parse loop still gets the one tuple it expects (the newer loop takes the
    list's only item, and refuses several as ambiguous), so only a caller outside the loop, as
    layerconf's recorder, meets the list.
    """

    def _parse_optional(self, arg_string: str) -> Any:
        found = super()._parse_optional(arg_string)
        if found is None or type(found) is list:  # None, or this Python has the list already
            return found
        if len(found) == 4:  # 3.12.0 to 3.12.6, 3.13.0
            return [found]
        action, option_string, explicit_arg = found  # 3.10, 3.11
        sep = None
        if explicit_arg is not None:  # '--lr=1e-5' or '-g4'
            sep = "=" if arg_string[len(option_string) :].startswith("=") else ""
        return [(action, option_string, sep, explicit_arg)]

    def _parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        vars(self)["_parse_optional"] = super()._parse_optional
        try:
            return super()._parse_known_args(*args, **kwargs)
        finally:
            del vars(self)["_parse_optional"]


class TestListReturningParseOptional:
    """The recorder finds each token when ``_parse_optional`` returns a list (3.12.7+, 3.13.1+)."""

    def test_the_class_returns_lists(self) -> None:
        """The stand-in parser answers as those versions do, and parses as this one does."""
        parser = rich_parser(ListOptionals)
        lr = next(action for action in parser._actions if action.dest == "lr")
        assert parser._parse_optional("--lr=1e-5") == [(lr, "--lr", "=", "1e-5")]
        assert parser._parse_optional("--lr") == [(lr, "--lr", None, None)]
        assert parser._parse_optional("a.txt") is None
        assert vars(parser.parse_args(["--seed", "1", "--lr=2"])) == vars(
            rich_parser().parse_args(["--seed", "1", "--lr=2"])
        )

    @pytest.mark.parametrize(
        ("argv", "key", "value", "index", "token"),
        ACTION_CASES,
        ids=[f"{' '.join(case[0])}:{case[1]}" for case in ACTION_CASES],
    )
    def test_same_provenance(
        self, argv: list[str], key: str, value: Any, index: int, token: str
    ) -> None:
        """Every action kind: the same values, argv index and token as with a tuple."""
        args, _ = same_as_argparse(rich_parser(ListOptionals), ["--seed", "1", *argv])
        assert setting_index(args, key) == (value, "cli", index, token)
        plain, _ = parse_known_args(rich_parser(), ["--seed", "1", *argv])
        for dest in vars(plain):
            assert explain(args, dest) == explain(plain, dest), dest


class TestDefaultsAndCli:
    """Layer default holds what argparse set before parsing; layer cli only what argv set."""

    def test_two_layers(self) -> None:
        args, _ = same_as_argparse(rich_parser(), ["--seed", "1", "--lr", "2"])
        provenance = provenance_of(args)
        assert provenance is not None
        assert [(layer.name, layer.kind) for layer in provenance.layers] == [
            ("default", "default"),
            ("cli", "argv"),
        ]
        assert provenance.layers[1].values == {"seed": 1, "lr": 2.0}
        assert provenance.inputs["argv"] == ("--seed", "1", "--lr", "2")

    def test_untouched_dests_come_from_default(self) -> None:
        args, _ = same_as_argparse(rich_parser(), ["--seed", "1"])
        for key in ("lr", "name", "optimizer", "verbose", "offload", "stop", "rounding"):
            setting = explain(args, key)
            assert (setting.layer, setting.kind, setting.history) == ("default", "default", ())

    def test_string_default_converted_like_argparse(self) -> None:
        args, _ = same_as_argparse(rich_parser(), ["--seed", "1"])
        assert setting_index(args, "kwargs") == ({}, "default", None, None)

    def test_given_dest_shadows_its_unconverted_default(self) -> None:
        # argparse converts a string default only when the dest was not given
        args, _ = same_as_argparse(rich_parser(), ["--seed", "1", "--kwargs", '{"a": 1}'])
        history = explain(args, "kwargs").history
        assert [(entry.value, entry.layer) for entry in history] == [("{}", "default")]

    def test_suppressed_default_is_absent(self) -> None:
        args, _ = same_as_argparse(rich_parser(), ["--seed", "1"])
        assert "hidden" not in vars(args)
        provenance = provenance_of(args)
        assert provenance is not None
        assert "hidden" not in provenance.layers[0].values

    def test_set_defaults(self) -> None:
        parser = rich_parser()
        parser.set_defaults(lr=0.5, extra="e")
        args, _ = same_as_argparse(parser, ["--seed", "1"])
        assert setting_index(args, "lr") == (0.5, "default", None, None)
        assert setting_index(args, "extra") == ("e", "default", None, None)

    def test_first_action_default_wins_for_a_shared_dest(self) -> None:
        args, _ = same_as_argparse(rich_parser(), ["--seed", "1"])
        assert setting_index(args, "rounding") == (False, "default", None, None)

    def test_value_before_the_command_line_is_the_history(self) -> None:
        args, _ = same_as_argparse(rich_parser(), ["--seed", "1", "--fast"])
        [default] = explain(args, "fast").history
        assert (default.value, default.layer, default.reason) == (
            False,
            "default",
            Reason.OVERRIDDEN,
        )

    def test_dict_on_the_command_line_replaces_a_dict_default(self) -> None:
        parser = argparse.ArgumentParser()
        parser.add_argument("--cfg", type=json.loads, default={"a": 1})
        args, _ = same_as_argparse(parser, ["--cfg", '{"b": 2}'])
        assert args.cfg == {"b": 2}
        provenance = provenance_of(args)
        assert provenance is not None
        again = LayerStack(provenance.layers, policies=provenance.policies).resolve()
        assert again.cfg == {"b": 2}
        assert [entry.value for entry in explain(args, "cfg").history] == [{"a": 1}]


class TestRepeatedFlags:
    """A flag given twice: the last wins and the earlier is in the history with its index."""

    def test_history(self) -> None:
        args, _ = same_as_argparse(
            rich_parser(), ["--seed", "1", "--lr", "1", "--lr", "2", "--lr=3"]
        )
        setting = explain(args, "lr")
        assert (setting.value, setting.argv_index, setting.token) == (3.0, 6, "--lr=3")
        assert [(e.value, e.layer, e.argv_index, e.token, e.reason) for e in setting.history] == [
            (2.0, "cli", 4, "--lr", Reason.OVERRIDDEN),
            (1.0, "cli", 2, "--lr", Reason.OVERRIDDEN),
            (1e-6, "default", None, None, Reason.OVERRIDDEN),
        ]

    def test_earlier_occurrences_are_layers_under_cli(self) -> None:
        args, _ = same_as_argparse(
            rich_parser(), ["--seed", "1", "--lr", "1", "--lr", "2", "--lr", "3", "-v", "-v"]
        )
        provenance = provenance_of(args)
        assert provenance is not None
        assert [layer.name for layer in provenance.layers] == ["default", "cli:1", "cli:2", "cli"]
        assert provenance.layers[1].values == {"lr": 1.0, "verbose": 1}
        assert provenance.layers[2].values == {"lr": 2.0}

    def test_append_history_shows_the_list_growing(self) -> None:
        args, _ = same_as_argparse(rich_parser(), ["--seed", "1", "--hook", "a", "--hook", "b"])
        setting = explain(args, "hook")
        assert (setting.value, setting.argv_index) == (["a", "b"], 4)
        assert [(entry.value, entry.argv_index) for entry in setting.history] == [
            (["a"], 2),
            ([], None),
        ]

    def test_count_in_one_cluster(self) -> None:
        args, _ = same_as_argparse(rich_parser(), ["--seed", "1", "-vv", "-v"])
        setting = explain(args, "verbose")
        assert (setting.value, setting.argv_index, setting.token) == (3, 3, "-v")
        assert [(entry.value, entry.token) for entry in setting.history] == [
            (2, "-vv"),
            (1, "-vv"),
            (0, None),
        ]

    def test_boolean_optional_both_ways(self) -> None:
        args, _ = same_as_argparse(rich_parser(), ["--seed", "1", "--offload", "--no-offload"])
        setting = explain(args, "offload")
        assert (setting.value, setting.token) == (False, "--no-offload")
        assert [(entry.value, entry.token) for entry in setting.history] == [
            (True, "--offload"),
            (None, None),
        ]

    def test_two_flags_one_dest(self) -> None:
        args, _ = same_as_argparse(rich_parser(), ["--seed", "1", "--round", "--no-round"])
        setting = explain(args, "rounding")
        assert (setting.value, setting.token) == (False, "--no-round")
        assert [entry.token for entry in setting.history] == ["--round", None]


class TestUnknownTokens:
    """Tokens the parser does not own come back exactly as argparse returns them (or fail)."""

    @pytest.mark.parametrize(
        "argv",
        [
            ["--seed", "1", "--sglang-x", "0.8", "--unknown=3", "-z", "--lr", "2"],
            ["--seed", "1", "--", "a", "--lr"],
            ["--seed", "1", "-xz"],
            ["--seed", "1", "--l", "1"],  # an abbreviation of --lr
            ["--seed", "1", "--s", "1"],  # ambiguous: --seed, --sizes, --stop
            ["stray", "--seed", "1", "more", "--fast", "extra"],
        ],
    )
    def test_same_unknown_tokens(self, argv: list[str]) -> None:
        assert outcome(lambda: parse_known_args(rich_parser(), argv)) == outcome(
            lambda: rich_parser().parse_known_args(argv)
        )

    def test_unknown_tokens_are_the_very_objects(self) -> None:
        token = "".join(["--un", "known"])
        _, unknown = parse_known_args(rich_parser(), ["--seed", "1", token])
        assert unknown[0] is token


class TestFromFile:
    """Arguments read from an @file point at the file, its line and the @file's argv index."""

    @pytest.fixture
    def files(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "args.txt").write_text("--lr\n1e-5\n\n@inner.txt\n--name\nfile\n")
        (tmp_path / "inner.txt").write_text("--seed\n9\n")
        return tmp_path

    def test_origin_is_the_file_and_line(self, files: Path) -> None:
        parser = rich_parser(fromfile_prefix_chars="@")
        args, _ = same_as_argparse(parser, ["--fast", "@args.txt", "--optimizer", "sgd"])
        lr = explain(args, "lr").origin
        assert (lr.source, lr.line, lr.argv_index, lr.token) == ("args.txt", 1, 1, "--lr")
        seed = explain(args, "seed").origin
        assert (seed.source, seed.line, seed.argv_index) == ("inner.txt", 1, 1)
        name = explain(args, "name").origin
        assert (name.source, name.line) == ("args.txt", 5)
        optimizer = explain(args, "optimizer").origin
        assert (optimizer.source, optimizer.argv_index, optimizer.token) == (
            None,
            2,
            "--optimizer",
        )

    def test_custom_line_splitting(self, files: Path) -> None:
        class Split(argparse.ArgumentParser):
            def convert_arg_line_to_args(self, arg_line: str) -> list[str]:
                return arg_line.split()

        (files / "spaced.txt").write_text("--seed 3\n--lr 2e-5 --fast\n")
        parser = Split(fromfile_prefix_chars="@")
        parser.add_argument("--seed", type=int)
        parser.add_argument("--lr", type=float)
        parser.add_argument("--fast", action="store_true")
        args, _ = same_as_argparse(parser, ["@spaced.txt"])
        assert [(explain(args, key).line, explain(args, key).token) for key in vars(args)] == [
            (1, "--seed"),
            (2, "--lr"),
            (2, "--fast"),
        ]

    def test_missing_file_fails_as_argparse(self, files: Path) -> None:
        parser = rich_parser(fromfile_prefix_chars="@")
        argv = ["--seed", "1", "@missing.txt"]
        assert outcome(lambda: parse_args(parser, argv)) == outcome(lambda: parser.parse_args(argv))


class TestErrors:
    """Bad input fails exactly as argparse fails; a bad call is a clear TypeError."""

    @pytest.mark.parametrize(
        "argv",
        [
            ["--seed", "1", "--lr", "fast"],
            ["--seed", "1", "--optimizer", "adamw"],
            [],
            ["--seed"],
            ["--seed", "1", "--bogus"],
            ["--seed", "1", "-x=1"],
            ["--seed", "1", "--range", "1", "2"],
            ["--seed", "1", "--kwargs", "{"],
            ["-h"],
        ],
    )
    def test_parse_args_fails_like_argparse(self, argv: list[str]) -> None:
        mine = outcome(lambda: parse_args(rich_parser(), argv))
        assert mine == outcome(lambda: rich_parser().parse_args(argv))
        assert mine[0] == "exit"

    def test_exit_on_error_false(self) -> None:
        argv = ["--seed", "x"]
        mine = outcome(lambda: parse_known_args(rich_parser(exit_on_error=False), argv))
        assert mine == outcome(lambda: rich_parser(exit_on_error=False).parse_known_args(argv))
        assert mine[0] == "error"

    def test_not_a_parser(self) -> None:
        with pytest.raises(TypeError, match=r"parse_args\(\) takes an argparse.ArgumentParser"):
            parse_args(object(), [])  # type: ignore[arg-type]

    def test_args_as_one_string(self) -> None:
        with pytest.raises(TypeError, match=r"list of str \(got the str '--lr 1'\).*shlex"):
            parse_args(rich_parser(), "--lr 1")

    def test_args_with_a_number(self) -> None:
        with pytest.raises(TypeError, match=r"args\[1\] is int 1"):
            parse_known_args(rich_parser(), ["--lr", 1])  # type: ignore[list-item]

    def test_a_secret_is_not_quoted(self) -> None:
        """What the wrong argument held is quoted, but not a secret flag's value."""
        parser = argparse.ArgumentParser()
        parser.add_argument("--api-key")
        with pytest.raises(TypeError, match="list of str") as one:
            parse_args(parser, "--api-key sk-Zq8Wv4Lm")
        with pytest.raises(TypeError, match=r"args\[1\] is int") as number:
            parse_args(parser, ["--api-key", 80112233])  # type: ignore[list-item]
        assert "Zq8Wv4Lm" not in str(one.value)
        assert "80112233" not in str(number.value)

    def test_args_not_iterable(self) -> None:
        with pytest.raises(TypeError, match="list of str"):
            parse_args(rich_parser(), 5)  # type: ignore[arg-type]

    def test_namespace_without_attributes(self) -> None:
        with pytest.raises(TypeError, match="namespace with attributes"):
            parse_args(rich_parser(), ["--seed", "1"], namespace=5)

    def test_args_default_to_sys_argv(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(sys, "argv", ["train", "--seed", "4"])
        args = parse_args(rich_parser())
        assert setting_index(args, "seed") == (4, "cli", 0, "--seed")


class TestParserUnchanged:
    """The parser passed in is never modified, by a parse that works or one that fails."""

    @pytest.mark.parametrize(
        "argv",
        [
            ["--seed", "1", "-vx", "--hook", "a", "f1"],
            ["--seed", "1", "--both", "b"],
            ["--seed", "nope"],
            ["--seed", "1", "--unknown"],
        ],
    )
    def test_snapshot(self, argv: list[str]) -> None:
        parser = rich_parser()
        parser.add_argument("--both", action=Both)
        before = snapshot(parser)
        outcome(lambda: parse_args(parser, argv))
        outcome(lambda: parse_known_args(parser, argv))
        assert snapshot(parser) == before

    def test_concurrent_parses(self) -> None:
        parser = rich_parser()
        parser.add_argument("--both", action=Both)
        results: dict[int, Any] = {}

        def work(number: int) -> None:
            for _ in range(20):
                args, _ = parse_known_args(parser, ["--seed", str(number), "--both", "b"])
                results[number] = (args.seed, explain(args, "mode").token, args.mode)

        threads = [threading.Thread(target=work, args=(number,)) for number in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == {number: (number, "--both", "from --both") for number in range(8)}


class TestGivenNamespace:
    """A namespace passed in is a layer of its own and is not modified."""

    def test_layer_and_values(self) -> None:
        given = argparse.Namespace(lr=0.5, extra=1, fast=True)
        argv = ["--seed", "1", "--fast"]
        args, _ = parse_known_args(rich_parser(), argv, namespace=given)
        assert vars(given) == {"lr": 0.5, "extra": 1, "fast": True}
        plain, _ = rich_parser().parse_known_args(argv, argparse.Namespace(**vars(given)))
        assert vars(args) == vars(plain)
        assert setting_index(args, "lr") == (0.5, "namespace", None, None)
        assert setting_index(args, "extra") == (1, "namespace", None, None)
        setting = explain(args, "fast")
        assert (setting.layer, setting.history[0].layer) == ("cli", "namespace")
        assert explain(args, "name").layer == "default"


class TestSubparsers:
    """Sub-commands are out of scope but work: values exact, sub-values without positions."""

    def test_values_and_fallback_origins(self) -> None:
        parser = argparse.ArgumentParser()
        parser.add_argument("--verbose", action="store_true")
        commands = parser.add_subparsers(dest="command")
        train = commands.add_parser("train")
        train.add_argument("--lr", type=float, default=0.1)
        args, _ = same_as_argparse(parser, ["--verbose", "train", "--lr", "2"])
        assert setting_index(args, "command") == ("train", "cli", 1, "train")
        setting = explain(args, "lr")
        assert (setting.value, setting.layer, setting.argv_index) == (2.0, "cli", None)
        assert setting.origin.label == "subcommand 'train'"
        assert setting_index(args, "verbose") == (True, "cli", 0, "--verbose")


class TestSameProvenanceAsTheStack:
    """The namespace is what LayerStack(layers).resolve() gives for the same layers."""

    @pytest.mark.parametrize(
        "argv",
        [
            ["--seed", "1"],
            ["--seed", "1", "--lr", "1", "--lr", "2", "-vvx", "--hook", "a", "--hook", "b"],
            ["--seed", "1", "--kwargs", '{"a": [1]}', "--stop", "a", "f1", "f2"],
        ],
    )
    def test_values_and_explain(self, argv: list[str]) -> None:
        args, _ = same_as_argparse(rich_parser(), argv)
        provenance = provenance_of(args)
        assert provenance is not None
        again = LayerStack(provenance.layers, policies=provenance.policies).resolve()
        assert vars(again) == vars(args)
        for key in vars(args):
            assert explain(again, key) == explain(args, key)

    def test_namespace_owns_its_containers(self) -> None:
        parser = rich_parser()
        args, _ = parse_known_args(parser, ["--seed", "1"])
        args.stop.append("more")
        assert parser.get_default("stop") == ["eos"]
        assert explain(args, "stop").history[0].value == ["eos"]


class TestDefaultLayerReuse:
    """The default layer is built once per parser, and rebuilt when the defaults change."""

    def default_layer(self, args: argparse.Namespace) -> Any:
        provenance = provenance_of(args)
        assert provenance is not None
        return provenance.layers[0]

    def test_reused(self) -> None:
        parser = rich_parser()
        first, _ = parse_known_args(parser, ["--seed", "1"])
        second, _ = parse_known_args(parser, ["--seed", "2", "--lr", "3"])
        assert self.default_layer(second) is self.default_layer(first)

    def test_rebuilt_when_a_default_changes(self) -> None:
        parser = rich_parser()
        parse_known_args(parser, ["--seed", "1"])
        parser.set_defaults(lr=0.5)
        args, _ = same_as_argparse(parser, ["--seed", "1"])
        assert setting_index(args, "lr") == (0.5, "default", None, None)

    def test_rebuilt_when_a_default_changes_type_only(self) -> None:
        parser = rich_parser()
        parse_known_args(parser, ["--seed", "1"])
        [action] = [action for action in parser._actions if action.dest == "gpus"]
        action.default = 8.0  # equal to 8, another type
        args, _ = same_as_argparse(parser, ["--seed", "1"])
        assert type(self.default_layer(args).values["gpus"]) is float
        assert explain(args, "gpus").layer == "default"

    def test_rebuilt_when_a_list_default_changes_in_place(self) -> None:
        parser = rich_parser()
        parse_known_args(parser, ["--seed", "1"])
        parser.get_default("stop").append("eot")
        args, _ = same_as_argparse(parser, ["--seed", "1"])
        assert setting_index(args, "stop") == (["eos", "eot"], "default", None, None)

    def test_reused_when_a_list_default_is_replaced_by_an_equal_one(self) -> None:
        parser = rich_parser()
        first, _ = parse_known_args(parser, ["--seed", "1"])
        parser.set_defaults(stop=["eos"])  # another list, equal to the one copied
        second, _ = same_as_argparse(parser, ["--seed", "1"])
        assert self.default_layer(second) is self.default_layer(first)

    def test_rebuilt_when_a_list_is_replaced_and_a_default_changes_type(self) -> None:
        parser = rich_parser()
        parse_known_args(parser, ["--seed", "1"])
        parser.set_defaults(stop=["eos"], gpus=8.0)  # an equal list; 8.0 equal to 8
        args, _ = same_as_argparse(parser, ["--seed", "1"])
        assert type(self.default_layer(args).values["gpus"]) is float
        assert setting_index(args, "stop") == (["eos"], "default", None, None)

    def test_rebuilt_when_a_default_changes_in_a_parser_of_a_thousand_actions(self) -> None:
        parser = load_profile()
        argv = ["--rollout-batch-size", "8"]
        parse_known_args(parser, argv)
        parser.set_defaults(seq_length=4096.0, cp_comm_type=["a2a"])
        [action] = [a for a in parser._actions if a.dest == "lr"]
        action.default = "2e-5"  # a string the type converts, now another value
        args, _ = same_as_argparse(parser, argv)
        assert type(args.seq_length) is float
        assert explain(args, "seq_length").layer == "default"
        assert setting_index(args, "cp_comm_type") == (["a2a"], "default", None, None)
        assert setting_index(args, "lr") == (2e-5, "default", None, None)

    def test_alternating_command_lines_keep_their_layers(self) -> None:
        parser = rich_parser()
        # With --kwargs, its default stays the string '{}'; without, argparse converts it.
        given, _ = parse_known_args(parser, ["--seed", "1", "--kwargs", "[]"])
        plain, _ = parse_known_args(parser, ["--seed", "1"])
        assert self.default_layer(given) is not self.default_layer(plain)
        again, _ = parse_known_args(parser, ["--seed", "2", "--kwargs", "[1]"])
        assert self.default_layer(again) is self.default_layer(given)
        assert explain(again, "kwargs").history[0].value == "{}"

    def test_unhashable_parser_class(self) -> None:
        class Unhashable(argparse.ArgumentParser):
            __hash__ = None  # type: ignore[assignment]

        parser = Unhashable()
        parser.add_argument("--lr", type=float, default=0.1)
        args, _ = same_as_argparse(parser, ["--lr", "2"])
        assert setting_index(args, "lr") == (2.0, "cli", 0, "--lr")


class TestValuesLayerconfCannotCopy:
    """A value no layer can hold a copy of stays argparse's object, with a notice."""

    def test_lock(self) -> None:
        lock = threading.Lock()
        parser = argparse.ArgumentParser()
        parser.add_argument("--lock", type=lambda text: threading.Lock(), default=lock)
        parser.add_argument("--lr", type=float, default=0.1)
        args, _ = parse_known_args(parser, ["--lr", "2"])
        assert args.lock is lock
        [notice] = notices(args)
        assert (notice.key, notice.severity) == ("lock", "info")
        provenance = provenance_of(args)
        assert provenance is not None
        assert all("lock" not in layer.values for layer in provenance.layers)
        assert explain(args, "lr").layer == "cli"
        given, _ = parse_known_args(parser, ["--lock", "x"])
        assert type(given.lock) is type(lock)
        assert given.lock is not lock


# ---------------------------------------------------------------------------------------------
# Random command lines


def small_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="small")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--name", choices=["a", "b"], default="a")
    parser.add_argument("-v", action="count", default=0)
    parser.add_argument("-q", "--quiet", action="store_true")
    parser.add_argument("--no-bias", dest="bias", action="store_false")
    parser.add_argument("--opt", action=argparse.BooleanOptionalAction)
    parser.add_argument("--item", action="append")
    parser.add_argument("--pair", nargs=2, type=int)
    parser.add_argument("--maybe", nargs="?", const="C", default="D")
    parser.add_argument("-n", type=int, default=1)
    parser.add_argument("files", nargs="*")
    return parser


SMALL = small_parser()
TOKENS = [
    *("--lr", "--lr=2", "--l", "--name", "--name=b", "--na", "-v", "-vv", "-vq", "-qv"),
    *("-q", "--quiet", "--no-bias", "--opt", "--no-opt", "--item", "--item=x", "--pair"),
    *("--maybe", "-n", "-n3", "-vn2", "--", "--unknown", "-z", "1", "2", "-1", "a", "b"),
]


def names_dest(parser: argparse.ArgumentParser, token: str, dest: str) -> bool:
    """Whether `token`, as written, can name an option of `dest` (or be a positional's value)."""
    actions = [action for action in parser._actions if action.dest == dest]
    if any(not action.option_strings for action in actions):
        return True
    for action in actions:
        for option in action.option_strings:
            head = token.split("=", 1)[0]
            if token == option or head == option or (option.startswith(head) and len(head) > 2):
                return True
            if len(option) == 2 and token[:1] == option[0] and option[1] in token[1:]:
                return True  # a short option, alone, clustered or with its value attached
    return False


class TestRandomCommandLines:
    """For any command line: argparse's outcome, and every origin pointing at the right token."""

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(st.sampled_from(TOKENS), max_size=10))
    def test_like_argparse(self, argv: list[str]) -> None:
        mine = outcome(lambda: parse_known_args(SMALL, argv))
        assert mine == outcome(lambda: SMALL.parse_known_args(argv))
        if mine[0] != "ok":
            return
        args, _ = parse_known_args(SMALL, argv)
        for key in vars(args):
            setting = explain(args, key)
            assert setting.layer in ("cli", "default")
            for entry in (setting, *setting.history):
                if entry.layer == "cli":
                    assert entry.argv_index is not None
                    assert argv[entry.argv_index] == entry.token
                    assert names_dest(SMALL, entry.token, key), (entry.token, key)


# ---------------------------------------------------------------------------------------------
# The real command line


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    """The real Megatron + slime parser (the bundled profile), built once."""
    return load_profile()


class TestRealCommandLine:
    """The slime PPO command line on the Megatron + slime parser."""

    def test_the_real_parser(
        self, parser: argparse.ArgumentParser, megatron_args_spec: dict[str, Any]
    ) -> None:
        dumped = [action["dest"] for action in megatron_args_spec["actions"]]
        assert [action.dest for action in parser._actions] == ["help", *dumped, *ADDED]

    def test_values_and_unknown_tokens(
        self,
        parser: argparse.ArgumentParser,
        slime_argv: list[str],
        slime_expected: dict[str, Any],
    ) -> None:
        args, unknown = same_as_argparse(parser, slime_argv)
        assert unknown == slime_expected["unknown_tokens"]
        assert len(vars(args)) == slime_expected["namespace_size"] + len(ADDED)
        for key, value in slime_expected["values"].items():
            if isinstance(value, dict) and "enum_name" in value:  # a member, dumped as its repr
                assert repr(getattr(args, key)) == value["repr"], key
            else:
                assert getattr(args, key) == value, key
                assert type(getattr(args, key)) is type(value), key

    def test_explain_lr(self, parser: argparse.ArgumentParser, slime_argv: list[str]) -> None:
        args, _ = parse_known_args(parser, slime_argv)
        setting = explain(args, "lr")
        assert (setting.value, setting.layer) == (1e-6, "cli")
        assert (setting.argv_index, setting.token) == (slime_argv.index("--lr"), "--lr")

    def test_every_command_line_value(
        self, parser: argparse.ArgumentParser, slime_argv: list[str]
    ) -> None:
        args, _ = parse_known_args(parser, slime_argv)
        provenance = provenance_of(args)
        assert provenance is not None
        cli = provenance.layers[-1]
        assert len(cli.values) == 56
        for key in cli.values:
            setting = explain(args, key)
            assert setting.layer == "cli"
            assert setting.argv_index is not None
            assert slime_argv[setting.argv_index] == setting.token
            assert names_dest(parser, setting.token, key)
        assert explain(args, "eval_prompt_data").value == [
            "aime24",
            "/root/datasets/aime-2024/aime-2024.jsonl",
        ]
        assert explain(args, "seed").layer == "default"

    def test_explain_an_enum_value(
        self, parser: argparse.ArgumentParser, slime_argv: list[str]
    ) -> None:
        args, _ = parse_known_args(parser, slime_argv)
        setting = explain(args, "attention_backend")
        assert (setting.value, setting.layer) == (AttnBackend.flash, "cli")
        assert (setting.argv_index, setting.token) == (
            slime_argv.index("--attention-backend"),
            "--attention-backend",
        )
        assert [(entry.value, entry.layer) for entry in setting.history] == [
            (AttnBackend.auto, "default")
        ]
