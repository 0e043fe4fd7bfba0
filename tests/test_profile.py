"""The bundled `megatron-slime` profile: the real Megatron-LM + slime parser, rebuilt from data."""

from __future__ import annotations

import argparse
import enum
import json
import pickle
import signal
from pathlib import Path
from typing import Any

import pytest

from layerconf import UnknownProfileError, available_profiles, load_profile
from layerconf.exceptions import LayerconfError
from layerconf.profiles import _compile, loader, megatron_slime
from layerconf.profiles.megatron_slime import AttnBackend, CudaGraphModule

SHIPPED = Path(loader.__file__).parent / "megatron_slime.json"
ADDED = ("use_critic", "critic_num_nodes", "critic_num_gpus_per_node")


@pytest.fixture(autouse=True)
def _no_launcher_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two defaults are read from these when a parser is built, as Megatron does.
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)


@pytest.fixture
def parser() -> argparse.ArgumentParser:
    return load_profile()


def action_of(parser: argparse.ArgumentParser, dest: str) -> argparse.Action:
    matches = [action for action in parser._actions if action.dest == dest]
    assert len(matches) == 1, matches
    return matches[0]


def parse(parser: argparse.ArgumentParser, *argv: str) -> argparse.Namespace:
    """`argv` parsed with the one required flag (--rollout-batch-size) given; unknowns refused."""
    args, unknown = parser.parse_known_args(["--rollout-batch-size", "4", *argv])
    assert unknown == []
    return args


def decoded_equal(value: Any, dumped: Any) -> bool:
    """True when `value` is the dump's `dumped` (enum members are dumped as their repr)."""
    if isinstance(dumped, dict):
        return bool(repr(value) == dumped["repr"] and type(value).__name__ == dumped["type"])
    if isinstance(dumped, list):
        return (
            type(value) is list
            and len(value) == len(dumped)
            and all(decoded_equal(v, d) for v, d in zip(value, dumped, strict=True))
        )
    return type(value) is type(dumped) and value == dumped


def here(dumped: Any) -> Any:
    """Dumped choices less the signals this Python lacks (the dump's Python may have more)."""
    if not isinstance(dumped, list):
        return dumped
    return [
        choice
        for choice in dumped
        if not (isinstance(choice, dict) and choice["type"] == "Signals")
        or choice["repr"].split(".")[1].split(":")[0] in signal.Signals.__members__
    ]


def bool_optional_help(text: str, default: Any) -> str:
    """`text` as this Python's BooleanOptionalAction stores it (some versions append a suffix)."""
    probe = argparse.BooleanOptionalAction(["--probe"], "probe", default=default, help=text)
    return probe.help  # type: ignore[return-value]


class TestProfiles:
    """Profiles are looked up by name; an unknown name fails with the list and a suggestion."""

    def test_available(self) -> None:
        """The bundled profile is listed."""
        assert available_profiles() == ("megatron-slime",)

    def test_default_name(self) -> None:
        """The default profile is megatron-slime."""
        assert len(load_profile()._actions) == len(load_profile("megatron-slime")._actions)

    def test_unknown_name(self) -> None:
        """An unknown name names itself, the available profiles and the closest one."""
        with pytest.raises(UnknownProfileError) as caught:
            load_profile("megatron_slim")
        assert str(caught.value) == (
            "unknown profile 'megatron_slim' (available: 'megatron-slime');"
            " did you mean 'megatron-slime'?"
        )
        assert caught.value.name == "megatron_slim"
        assert caught.value.available == ("megatron-slime",)

    def test_unknown_name_without_suggestion(self) -> None:
        """A name close to nothing gets no suggestion."""
        with pytest.raises(UnknownProfileError, match=r"available: 'megatron-slime'\)$"):
            load_profile("deepspeed")

    def test_error_classes(self) -> None:
        """The error is a layerconf error and a LookupError, and it pickles."""
        error = UnknownProfileError("x", ("megatron-slime",))
        assert isinstance(error, LayerconfError)
        assert isinstance(error, LookupError)
        again = pickle.loads(pickle.dumps(error))
        assert (again.name, again.available, str(again)) == ("x", ("megatron-slime",), str(error))

    def test_name_must_be_a_string(self) -> None:
        """A non-string name is a TypeError, not an unknown profile."""
        with pytest.raises(TypeError, match="must be a string"):
            load_profile(3)  # type: ignore[arg-type]


class TestRoundTrip:
    """Every action of the dumped real parser comes back, in order, with every attribute."""

    def test_parser_settings(
        self, parser: argparse.ArgumentParser, megatron_args_spec: Any
    ) -> None:
        """The parser's own settings are the real parser's."""
        settings = megatron_args_spec["parser"]
        assert parser.allow_abbrev is False
        assert parser.description == settings["description"] == "Megatron-LM Arguments"
        assert parser.add_help is settings["add_help"] is True
        assert parser.prefix_chars == settings["prefix_chars"]
        assert parser.conflict_handler == settings["conflict_handler"]
        assert parser.fromfile_prefix_chars is None
        assert parser.argument_default is None
        assert parser._defaults == {}

    def test_every_action(self, parser: argparse.ArgumentParser, megatron_args_spec: Any) -> None:
        """Each dumped action: strings, dest, class, default, nargs, choices, const, type, help."""
        dumped = megatron_args_spec["actions"]
        actions = parser._actions
        assert isinstance(actions[0], argparse._HelpAction)
        assert len(actions) == 1 + len(dumped) + len(ADDED)
        for action, expected in zip(actions[1 : 1 + len(dumped)], dumped, strict=True):
            where = expected["option_strings"]
            assert action.option_strings == expected["option_strings"], where
            assert action.dest == expected["dest"], where
            assert type(action).__name__ == expected["action"], where
            assert decoded_equal(action.default, expected["default"]), where
            assert type(action.default).__name__ == expected["default_type"], where
            assert action.nargs == expected["nargs"], where
            if expected["choices"] is None:
                assert action.choices is None, where
            else:
                assert decoded_equal(action.choices, here(expected["choices"])), where
            assert action.const == expected["const"], where
            assert action.required is expected["required"], where
            assert action.metavar == expected["metavar"], where
            assert getattr(action.type, "__name__", None) == expected["type"], where
            assert action.container.title == expected["group"], where  # type: ignore[attr-defined]
            help_ = expected["help"]
            if isinstance(action, argparse.BooleanOptionalAction):
                help_ = bool_optional_help(help_, action.default)
            assert action.help == help_, where

    def test_groups(self, parser: argparse.ArgumentParser, megatron_args_spec: Any) -> None:
        """The argument groups are the real ones, in creation order, each holding its actions."""
        titles = [group.title for group in parser._action_groups]
        dumped: list[str] = []
        for action in megatron_args_spec["actions"]:
            if action["group"] not in dumped:
                dumped.append(action["group"])
        assert titles[:2] == ["positional arguments", "options"]
        assert titles[2:] == [title for title in dumped if title != "options"]
        assert len(titles) == megatron_args_spec["counts"]["argument_groups"]
        for group in parser._action_groups:
            assert all(action.container is group for action in group._group_actions)  # type: ignore[attr-defined]

    def test_shared_dest(self, parser: argparse.ArgumentParser) -> None:
        """Both actions of yarn_correction_range_round_to_int stay, in order; the first default wins."""
        shared = [a for a in parser._actions if a.dest == "yarn_correction_range_round_to_int"]
        assert [a.option_strings for a in shared] == [
            ["--yarn-correction-range-round-to-int"],
            ["--no-yarn-correction-range-round-to-int"],
        ]
        assert [type(a) for a in shared] == [argparse._StoreTrueAction, argparse._StoreFalseAction]
        assert parse(parser).yarn_correction_range_round_to_int is None
        args = parse(parser, "--no-yarn-correction-range-round-to-int")
        assert args.yarn_correction_range_round_to_int is False

    def test_rollout_batch_size_is_required(
        self, parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--rollout-batch-size is required, as in slime."""
        assert action_of(parser, "rollout_batch_size").required is True
        with pytest.raises(SystemExit) as caught:
            parser.parse_args([])
        assert caught.value.code == 2
        assert (
            "the following arguments are required: --rollout-batch-size" in capsys.readouterr().err
        )

    def test_string_defaults_convert_at_parse_time(self, parser: argparse.ArgumentParser) -> None:
        """The "{}" defaults stay strings in the parser; parsing turns them into dicts."""
        for dest in ("train_env_vars", "apply_chat_template_kwargs"):
            assert action_of(parser, dest).default == "{}"
        args = parse(parser)
        assert args.train_env_vars == {}
        assert args.apply_chat_template_kwargs == {}

    def test_enum_defaults_are_members(self, parser: argparse.ArgumentParser) -> None:
        """Enum defaults and choices are members of the module-level enums."""
        backend = action_of(parser, "attention_backend")
        assert backend.default is AttnBackend.auto
        assert backend.choices == list(AttnBackend)
        exit_signal = action_of(parser, "exit_signal")
        assert exit_signal.default is signal.Signals.SIGTERM
        assert exit_signal.choices == list(signal.Signals)

    def test_suppressed_help(self, parser: argparse.ArgumentParser) -> None:
        """--cuda-graph-scope is hidden from help, as argparse.SUPPRESS hides it."""
        assert action_of(parser, "cuda_graph_scope_deprecated").help is argparse.SUPPRESS
        assert "CUDA_GRAPH_SCOPE_DEPRECATED" not in parser.format_help()

    def test_environment_defaults(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Two defaults come from the launcher's environment when the parser is built."""
        assert action_of(load_profile(), "inprocess_active_world_size").default == 1
        assert action_of(load_profile(), "local_rank").default == 0
        monkeypatch.setenv("WORLD_SIZE", "16")
        monkeypatch.setenv("LOCAL_RANK", "3")
        assert action_of(load_profile(), "inprocess_active_world_size").default == 16
        assert action_of(load_profile(), "local_rank").default == 3


class TestAdditions:
    """The three flags of the role-override contract that this slime commit lacks."""

    def test_added_flags(self, parser: argparse.ArgumentParser) -> None:
        """--use-critic, --critic-num-nodes and --critic-num-gpus-per-node close the slime group."""
        added = parser._actions[-3:]
        assert [a.dest for a in added] == list(ADDED)
        assert [a.option_strings for a in added] == [
            ["--use-critic"],
            ["--critic-num-nodes"],
            ["--critic-num-gpus-per-node"],
        ]
        assert [type(a) for a in added] == [
            argparse._StoreTrueAction,
            argparse._StoreAction,
            argparse._StoreAction,
        ]
        assert [a.default for a in added] == [False, 1, 8]
        assert [a.type for a in added] == [None, int, int]
        assert all(a.container is parser._optionals for a in added)  # type: ignore[attr-defined]
        assert all("Added by layerconf" in (a.help or "") for a in added)

    def test_parse(self, parser: argparse.ArgumentParser) -> None:
        """The added flags parse like slime's actor flags."""
        args = parse(
            parser, "--use-critic", "--critic-num-nodes", "2", "--critic-num-gpus-per-node", "4"
        )
        assert (args.use_critic, args.critic_num_nodes, args.critic_num_gpus_per_node) == (
            True,
            2,
            4,
        )


class TestSameAsAddArgument:
    """The fast build gives exactly the parser that add_argument per action gives."""

    def test_every_attribute(
        self, parser: argparse.ArgumentParser, megatron_args_spec: Any
    ) -> None:
        """Every action's class and attributes, and the parser's indexes, are the same."""
        reference = _compile.reference_parser(megatron_args_spec)
        assert len(parser._actions) == len(reference._actions)
        position = {id(action): i for i, action in enumerate(parser._actions)}
        reference_position = {id(action): i for i, action in enumerate(reference._actions)}
        for action, expected in zip(parser._actions, reference._actions, strict=True):
            assert type(action) is type(expected)
            mine = {k: v for k, v in vars(action).items() if k != "container"}
            theirs = {k: v for k, v in vars(expected).items() if k != "container"}
            assert mine == theirs
            assert action.container.title == expected.container.title  # type: ignore[attr-defined]
        assert [g.title for g in parser._action_groups] == [
            g.title for g in reference._action_groups
        ]
        for group, expected_group in zip(
            parser._action_groups, reference._action_groups, strict=True
        ):
            assert [position[id(a)] for a in group._group_actions] == [
                reference_position[id(a)] for a in expected_group._group_actions
            ]
        assert {k: position[id(a)] for k, a in parser._option_string_actions.items()} == {
            k: reference_position[id(a)] for k, a in reference._option_string_actions.items()
        }
        assert parser._has_negative_number_optionals == reference._has_negative_number_optionals
        assert parser._mutually_exclusive_groups == reference._mutually_exclusive_groups == []

    def test_parser_attributes(
        self, parser: argparse.ArgumentParser, megatron_args_spec: Any
    ) -> None:
        """The parser's own attributes are the add_argument parser's, in order: its formatter
        class argparse's, though it was built with one that does not measure the terminal."""
        reference = _compile.reference_parser(megatron_args_spec)
        plain = (str, bool, type(None), type)
        mine = [(k, v) for k, v in vars(parser).items() if isinstance(v, plain)]
        theirs = [(k, v) for k, v in vars(reference).items() if isinstance(v, plain)]
        assert list(vars(parser)) == list(vars(reference))
        assert mine == theirs
        assert parser.formatter_class is argparse.HelpFormatter

    def test_help_text(
        self,
        parser: argparse.ArgumentParser,
        megatron_args_spec: Any,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """--help prints the same text."""
        monkeypatch.setenv("COLUMNS", "100")
        reference = _compile.reference_parser(megatron_args_spec)
        parser.prog = reference.prog = "train.py"
        assert parser.format_help() == reference.format_help()

    def test_shipped_data_is_current(self, fixtures_dir: Path, tmp_path: Path) -> None:
        """Compiling the fixture dump again gives the shipped data file, byte for byte."""
        out = tmp_path / "megatron_slime.json"
        assert _compile.main([str(fixtures_dir / "megatron_slime_args.json"), str(out)]) == 0
        assert out.read_bytes() == SHIPPED.read_bytes()


class TestCompilerChecks:
    """The compiler refuses a dump that breaks an assumption of the loader."""

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"type": "mystery_type"}, "no rebuilt type callable for 'mystery_type'"),
            ({"action": "_CountAction"}, "unsupported action class _CountAction"),
            ({"mutually_exclusive_group": 0}, "mutually exclusive groups are not supported"),
            ({"const": 7}, "unexpected const 7"),
        ],
    )
    def test_rejected(self, megatron_args_spec: Any, change: dict[str, Any], message: str) -> None:
        """A changed action is refused with the reason."""
        spec = json.loads(json.dumps(megatron_args_spec))
        spec["actions"][0].update(change)
        with pytest.raises(ValueError, match=message):
            _compile.compile_profile(spec)

    def test_group_not_contiguous(self, megatron_args_spec: Any) -> None:
        """A group whose actions are not together is refused."""
        spec = json.loads(json.dumps(megatron_args_spec))
        spec["actions"][-1]["group"] = spec["actions"][0]["group"]
        with pytest.raises(ValueError, match="is not contiguous"):
            _compile.compile_profile(spec)

    def test_group_count(self, megatron_args_spec: Any) -> None:
        """A dump with more groups than its actions use (an empty group) is refused."""
        spec = json.loads(json.dumps(megatron_args_spec))
        spec["counts"]["argument_groups"] += 1
        with pytest.raises(ValueError, match="the dump has 39 argument groups; the actions use 37"):
            _compile.compile_profile(spec)

    def test_unknown_member_of_a_fixed_enum(self, megatron_args_spec: Any) -> None:
        """A member the profile's own enum lacks is refused: only signals vary by platform."""
        spec = json.loads(json.dumps(megatron_args_spec))
        action = next(a for a in spec["actions"] if a["dest"] == "attention_backend")
        action["choices"] = [
            *action["choices"],
            {"type": "AttnBackend", "repr": "<AttnBackend.x: 6>"},
        ]
        with pytest.raises(KeyError, match="'x'"):
            _compile.compile_profile(spec)

    def test_addition_already_dumped(self, megatron_args_spec: Any) -> None:
        """A flag this profile adds must not be in the dump already."""
        spec = json.loads(json.dumps(megatron_args_spec))
        spec["actions"][-1]["dest"] = "use_critic"
        with pytest.raises(ValueError, match="use_critic is in the dump already"):
            _compile.compile_profile(spec)

    def test_wrong_format(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Data of another format is refused with what to do."""
        data = json.loads(SHIPPED.read_bytes())
        data["format"] = 99
        monkeypatch.setattr(loader, "_read_data", lambda module: json.dumps(data).encode())
        loader._spec.cache_clear()
        try:
            with pytest.raises(LayerconfError, match=r"has format 99; .* reinstall layerconf"):
                load_profile()
        finally:
            monkeypatch.undo()
            loader._spec.cache_clear()

    def test_read_through_the_import_system(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """When the file is not on disk (a zipped install), the import system provides it."""
        monkeypatch.setattr(loader, "__file__", "/nonexistent/layerconf/profiles/loader.py")
        assert loader._read_data("megatron_slime") == SHIPPED.read_bytes()


def fewer_signals(monkeypatch: pytest.MonkeyPatch) -> type[enum.Enum]:
    """This Python's `signal.Signals` less its last member, for the profile's data: a Python
    that lacks a signal the dump's Python had (3.10 lacks SIGSTKFLT, which 3.11 added)."""
    kept = list(signal.Signals)[:-1]
    fewer = enum.IntEnum("Signals", [(member.name, member.value) for member in kept])  # type: ignore[misc]
    monkeypatch.setattr(megatron_slime, "ENUMS", {**megatron_slime.ENUMS, "Signals": fewer})
    return fewer


class TestPlatformSignals:
    """Signal names differ by platform and Python; the profile lists the running Python's."""

    def test_dump_with_more_signals_compiles_the_same(
        self, megatron_args_spec: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A dump naming a signal this Python lacks compiles to the shipped data."""
        fewer_signals(monkeypatch)
        spec = json.loads(json.dumps(megatron_args_spec))
        assert _compile.dumps(_compile.compile_profile(spec)) == SHIPPED.read_text()

    def test_reference_parser_lists_this_pythons_signals(
        self, megatron_args_spec: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The add_argument parser offers the signals this Python has, as Megatron's would."""
        fewer = fewer_signals(monkeypatch)
        reference = _compile.reference_parser(megatron_args_spec)
        assert action_of(reference, "exit_signal").choices == list(fewer)

    def test_missing_default_is_refused(
        self, megatron_args_spec: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A default signal this Python lacks is refused: the parser could not be built."""
        fewer = fewer_signals(monkeypatch)
        missing = list(signal.Signals)[-1]
        spec = json.loads(json.dumps(megatron_args_spec))
        action = next(a for a in spec["actions"] if a["dest"] == "exit_signal")
        action["default"] = {"type": "Signals", "repr": repr(missing)}
        assert missing.name not in fewer.__members__
        with pytest.raises(KeyError, match=missing.name):
            _compile.compile_profile(spec)


class TestSlimeCommandLine:
    """The real slime PPO command line parses to exactly what the real parser produced."""

    def test_values(
        self, parser: argparse.ArgumentParser, slime_argv: list[str], slime_expected: Any
    ) -> None:
        """Every dest the real parser recorded has the same value (the enum by member name)."""
        args, unknown = parser.parse_known_args(slime_argv)
        for dest, expected in slime_expected["values"].items():
            value = getattr(args, dest)
            if isinstance(expected, dict) and "enum_name" in expected:
                assert type(value).__name__ == expected["type"], dest
                assert value.name == expected["enum_name"], dest
                assert repr(value) == expected["repr"], dest
            else:
                assert type(value) is type(expected), dest
                assert value == expected, dest
        assert unknown == slime_expected["unknown_tokens"]

    def test_namespace_size(
        self, parser: argparse.ArgumentParser, slime_argv: list[str], slime_expected: Any
    ) -> None:
        """The namespace holds the real parser's dests plus the three added ones."""
        args, _ = parser.parse_known_args(slime_argv)
        assert len(vars(args)) == slime_expected["namespace_size"] + len(ADDED)


class TestTypes:
    """The rebuilt type callables accept and reject what Megatron's do, with the same errors."""

    def error(self, parser: argparse.ArgumentParser, argv: list[str], capsys: Any) -> str:
        with pytest.raises(SystemExit) as caught:
            parser.parse_args(argv)
        assert caught.value.code == 2
        return str(capsys.readouterr().err)

    def test_tuple_type(self, parser: argparse.ArgumentParser, capsys: Any) -> None:
        """--window-size takes "a,b" or "(a,b)"; anything else is an argparse error."""
        args = parse(parser, "--window-size", "(128,0)")
        assert args.window_size == (128, 0)
        assert parse(parser, "--window-size", "4,5,6").window_size == (4, 5, 6)
        err = self.error(parser, ["--window-size", "x"], capsys)
        assert "argument --window-size: invalid tuple_type value: 'x'" in err

    @pytest.mark.parametrize(
        ("flag", "dest", "name"),
        [
            ("--moe-layer-freq", "moe_layer_freq", "moe_freq_type"),
            ("--window-attn-skip-freq", "window_attn_skip_freq", "moe_freq_type"),
            ("--no-rope-freq", "no_rope_freq", "no_rope_freq_type"),
            ("--linear-attention-freq", "linear_attention_freq", "la_freq_type"),
        ],
    )
    def test_frequency_types(
        self, parser: argparse.ArgumentParser, capsys: Any, flag: str, dest: str, name: str
    ) -> None:
        """An int, or a list pattern of digits, commas, brackets, + and *."""
        assert getattr(parse(parser, flag, "4"), dest) == 4
        pattern = parse(parser, flag, "([1]*3+[0]*1)*2")
        assert getattr(pattern, dest) == [1, 1, 1, 0, 1, 1, 1, 0]
        assert f"invalid {name} value: '2.5'" in self.error(parser, [flag, "2.5"], capsys)
        assert f"invalid {name} value: '[x]'" in self.error(parser, [flag, "[x]"], capsys)
        # A pattern of allowed characters that is not Python escapes argparse, as in Megatron.
        with pytest.raises(SyntaxError):
            parser.parse_known_args([flag, "[1,"])

    def test_moe_layer_freq_default_stays_int(self, parser: argparse.ArgumentParser) -> None:
        """The int default 1 is not a string, so argparse leaves it alone."""
        assert parse(parser).moe_layer_freq == 1

    def test_enum_names(self, parser: argparse.ArgumentParser) -> None:
        """--attention-backend and --exit-signal take a member's name."""
        args = parse(parser, "--attention-backend", "local", "--exit-signal", "SIGINT")
        assert args.attention_backend is AttnBackend.local
        assert args.exit_signal is signal.Signals.SIGINT

    def test_enum_unknown_name(self, parser: argparse.ArgumentParser) -> None:
        """An unknown member name raises KeyError through argparse, as the real closure does."""
        with pytest.raises(KeyError, match="nothing"):
            parser.parse_known_args(["--attention-backend", "nothing"])
        with pytest.raises(KeyError, match="SIGNOPE"):
            parser.parse_known_args(["--exit-signal", "SIGNOPE"])

    def test_cuda_graph_modules(self, parser: argparse.ArgumentParser) -> None:
        """Module names become members; deprecated names stay strings; others raise KeyError."""
        args = parse(parser, "--cuda-graph-modules", "attn", "moe_router")
        assert args.cuda_graph_modules == [CudaGraphModule.attn, CudaGraphModule.moe_router]
        args = parse(parser, "--cuda-graph-scope", "full_iteration_inference")
        assert args.cuda_graph_scope_deprecated == ["full_iteration_inference"]
        assert parse(parser).cuda_graph_modules == []
        with pytest.raises(KeyError, match="everything"):
            parser.parse_known_args(["--cuda-graph-modules", "everything"])

    def test_json_loads(self, parser: argparse.ArgumentParser, capsys: Any) -> None:
        """--train-env-vars takes JSON; bad JSON is an argparse error naming loads."""
        args = parse(parser, "--train-env-vars", '{"A": "1"}')
        assert args.train_env_vars == {"A": "1"}
        err = self.error(parser, ["--train-env-vars", "{A"], capsys)
        assert "argument --train-env-vars: invalid loads value: '{A'" in err


class TestIndependence:
    """Each call returns a new parser that shares nothing mutable with any other."""

    def test_distinct_objects(self) -> None:
        """Parsers, actions, groups and every list in them are new objects."""
        first, second = load_profile(), load_profile()
        assert first is not second
        for a, b in zip(first._actions, second._actions, strict=True):
            assert a is not b
            assert a.option_strings is not b.option_strings
            if isinstance(a.default, list):
                assert a.default is not b.default
            if isinstance(a.choices, list):
                assert a.choices is not b.choices
        assert all(
            g is not h for g, h in zip(first._action_groups, second._action_groups, strict=True)
        )

    def test_no_attribute_shared(self) -> None:
        """No list, dict or other mutable value of one parser's actions is another's (built
        through argparse.Action.__init__ or a constructor, each from copies of the data)."""
        first, second = load_profile(), load_profile()
        atomic = (str, int, float, bool, type(None), enum.Enum, type)
        for a, b in zip(first._actions, second._actions, strict=True):
            for (key, value), (_, other) in zip(vars(a).items(), vars(b).items(), strict=True):
                if not isinstance(value, atomic) and not callable(value):
                    assert value is not other, (a.dest, key)

    def test_changes_stay_local(self) -> None:
        """Changing one parser changes neither another nor the next one loaded."""
        first, second = load_profile(), load_profile()
        first.set_defaults(lr=5.0)
        first.add_argument("--my-flag", action="store_true")
        action_of(first, "profile_target").default.append("train_actor")
        action_of(first, "moe_router_load_balancing_type").choices.append("mine")  # type: ignore[union-attr]
        action_of(first, "tensor_model_parallel_size").default = 8
        third = load_profile()
        assert parse(first, "--my-flag").profile_target == ["train_overall", "train_actor"]
        for other in (second, third):
            args, unknown = other.parse_known_args(["--rollout-batch-size", "1", "--my-flag"])
            assert unknown == ["--my-flag"]
            assert args.lr == 1e-6  # slime's default; first has 5.0
            assert args.profile_target == ["train_overall"]
            assert args.tensor_model_parallel_size == 1
            assert "mine" not in action_of(other, "moe_router_load_balancing_type").choices  # type: ignore[operator]


class TestPickle:
    """Parsed namespaces pickle, enum members included, for remote workers."""

    @pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
    def test_namespace_round_trip(
        self, parser: argparse.ArgumentParser, slime_argv: list[str], protocol: int
    ) -> None:
        """A parsed namespace comes back equal, its enum values the very same members."""
        args, _ = parser.parse_known_args(
            [*slime_argv, "--cuda-graph-modules", "mlp", "--exit-signal", "SIGUSR2"]
        )
        again = pickle.loads(pickle.dumps(args, protocol=protocol))
        assert again == args
        assert again.attention_backend is AttnBackend.flash
        assert again.cuda_graph_modules == [CudaGraphModule.mlp]
        assert again.exit_signal is signal.Signals.SIGUSR2

    def test_enums_pickle_by_reference(self) -> None:
        """The enums are module-level classes of layerconf.profiles.megatron_slime."""
        assert AttnBackend.__module__ == CudaGraphModule.__module__
        assert AttnBackend.__module__ == "layerconf.profiles.megatron_slime"
        assert b"layerconf.profiles.megatron_slime" in pickle.dumps(AttnBackend.auto)


def _structure(parser: argparse.ArgumentParser) -> list[Any]:
    """Everything a parser holds, in order, with its actions and groups as their positions:
    the parser's attributes, each group's, each action's (its container a group position)."""
    actions = {id(action): i for i, action in enumerate(parser._actions)}
    groups = {id(group): i for i, group in enumerate(parser._action_groups)}

    def plain(value: Any) -> Any:
        if id(value) in actions:
            return ("action", actions[id(value)])
        if id(value) in groups:
            return ("group", groups[id(value)])
        if value is parser:
            return ("parser",)
        if callable(value) and "<locals>" in getattr(value, "__qualname__", ""):
            return ("local function", value.__qualname__)  # argparse's identity, per parser
        if isinstance(value, dict):
            return [(key, plain(item)) for key, item in value.items()]
        if isinstance(value, list | tuple):
            return (type(value).__name__, [plain(item) for item in value])
        return value

    def attributes(owner: Any) -> list[Any]:
        return [(type(owner).__name__, list(vars(owner))), *plain(vars(owner))]

    return [
        attributes(parser),
        *(attributes(group) for group in parser._action_groups),
        *(attributes(action) for action in parser._actions),
    ]


def _slow_build(spec: Any) -> argparse.ArgumentParser:
    """`spec` built the plain way: each action by its constructor, each added by _add_action."""
    return loader._build(spec, bulk=False)


def _spec_with(rows: list[tuple[Any, ...]]) -> Any:
    """The bundled profile's spec with `rows` for actions (rows as `loader._spec` decodes them)."""
    spec = loader._spec("megatron_slime")
    return loader._Spec(spec.parser, spec.groups, rows, spec.types, spec.secrets)


def _row(kind: int, *strings: str, dest: str = "x") -> tuple[Any, ...]:
    """A row of `kind` as the data holds it, its nargs and const its constructor's."""
    flag = kind in (1, 2)
    nargs, const, default = (0, kind == 1, kind == 2) if flag else (None, None, None)
    return (kind, 0, strings, dest, nargs, const, default, None, None, False, "help", None)


class TestFastBuild:
    """Actions given their attributes directly and registered in bulk give the parser that their
    constructors and _add_action give, attribute for attribute, in order; a conflict is still
    argparse's error."""

    def test_same_parser_as_the_plain_build(self, monkeypatch: pytest.MonkeyPatch) -> None:
        spec = loader._spec("megatron_slime")
        fast, slow = loader._build(spec), _slow_build(spec)
        assert _structure(fast) == _structure(slow)
        assert fast.format_help() == slow.format_help()

    def test_every_kind_uses_the_fast_path(self) -> None:
        """The probes find argparse's constructors plain here (boolean_optional excepted)."""
        shapes = loader._shapes()
        assert [shape is None for shape in shapes] == [False, False, False, True, False]

    @pytest.mark.parametrize(
        "rows",
        [
            [_row(0, "--lr", dest="lr"), _row(1, "--lr", dest="lr2")],  # two actions, one string
            [_row(1, "-h", dest="hint")],  # the parser's own -h
            [_row(3, "--flag"), _row(1, "--no-flag", dest="other")],  # a derived --no- string
        ],
    )
    def test_a_conflict_is_argparses_error(
        self, rows: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        spec = _spec_with(rows)
        with pytest.raises(argparse.ArgumentError) as slow:
            _slow_build(spec)
        with pytest.raises(argparse.ArgumentError) as fast:
            loader._build(spec)
        assert str(fast.value) == str(slow.value)
        assert "conflicting option string" in str(fast.value)

    def test_an_option_like_a_negative_number(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """argparse remembers that one option string looks like a negative number."""
        spec = _spec_with([_row(1, "-1", dest="one"), _row(0, "--lr", dest="lr")])
        fast, slow = loader._build(spec), _slow_build(spec)
        assert fast._has_negative_number_optionals == [True]
        assert _structure(fast) == _structure(slow)
        plain = loader._build(_spec_with([_row(0, "--lr", dest="lr")]))
        assert plain._has_negative_number_optionals == []

    def test_a_row_unlike_its_constructor_is_constructed(self) -> None:
        """Rows whose nargs or const is not what their kind's constructor gives (data dumped
        by another argparse) are made by the constructor, as add_argument makes them here."""
        rows = [_row(1, "--on", dest="on"), _row(0, "--lr", dest="lr")]
        rows[0] = (*rows[0][:5], "yes", *rows[0][6:])  # a store_true's const
        spec = _spec_with(rows)
        assert spec.plain == (True, False, True, False, True)
        built = loader._build(spec)
        assert built._actions[-2].const is True
        assert _structure(built) == _structure(_slow_build(spec))

    def test_special_rows_are_listed(self) -> None:
        """Every row that holds an enum, an environment default or SUPPRESS is listed as
        special in the data, and no other: the loader decodes only those."""
        data = json.loads(SHIPPED.read_bytes())
        holding = [
            index
            for index, row in enumerate(data["actions"])
            if isinstance(row[6], dict)
            or isinstance(row[8], dict)
            or argparse.SUPPRESS in (row[6], row[10])
        ]
        assert holding == data["special"]
        assert len(holding) == 5
        assert SHIPPED.read_bytes().isascii()

    def test_a_constructor_that_derives_an_attribute_is_called(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A kind whose constructor sets more than argparse.Action's, or derives one from what
        it is given, is built by its constructor (an argparse of another version, say)."""

        class Derived(argparse._StoreAction):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.shout = self.dest.upper()

        class Fixed(argparse._StoreTrueAction):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.extra = 1

        kinds = (Derived, Fixed, *loader.KIND_CLASSES[2:])
        monkeypatch.setattr(loader, "KIND_CLASSES", kinds)
        shapes = loader._shapes.__wrapped__()
        assert shapes[0] is None
        assert shapes[1] is None  # `extra` is no argument of Action.__init__
        assert shapes[2] is not None
        monkeypatch.setattr(loader, "_shapes", lambda: shapes)
        parser = loader._build(_spec_with([_row(0, "--lr", dest="lr"), _row(1, "--on", dest="on")]))
        assert parser._actions[-2].shout == "LR"  # type: ignore[attr-defined]
        assert parser._actions[-1].extra == 1  # type: ignore[attr-defined]
