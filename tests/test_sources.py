"""Sources: the contract, environment variables and mappings as layers with their own origins."""

from __future__ import annotations

import argparse
import enum
import os
from typing import Any

import pytest

import layerconf
from layerconf import (
    PLAIN,
    ConfigError,
    EnvSource,
    Layer,
    Reading,
    Source,
    audit,
    explain,
    notices,
    provenance_of,
    resolve_roles,
)
from layerconf.sources import MappingSource


class Color(enum.Enum):
    red = 1
    blue = 2


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser()
    made.add_argument("--lr", type=float, default=1e-4)
    made.add_argument("--layers", type=int, nargs="+", default=[1])
    made.add_argument("--tag", action="append", default=[])
    made.add_argument("--color", type=lambda name: Color[name], default=Color.red)
    made.add_argument("--mode", choices=["a", "b"], default="a")
    made.add_argument("--use-critic", action="store_true")
    made.add_argument("--no-bias", dest="bias", action="store_false")
    made.add_argument("--verbose", "-v", action="count", default=0)
    made.add_argument("--wandb-key")
    made.add_argument("--version", action="version", version="1")
    return made


def env_roles(environ: dict[str, str], *argv: str, prefix: str = "T_") -> dict[str, Any]:
    source = EnvSource(prefix=prefix, environ=environ)
    return resolve_roles(parser(), list(argv), preset=PLAIN, sources=[source])


class TestEnvSource:
    """Variables with the prefix set the dest they name, converted as the command line would."""

    def test_values_are_converted_by_the_parser(self) -> None:
        """type, nargs, append, a custom type, choices and flags: each as on the command line."""
        environ = {
            "T_LR": "1e-5",
            "T_LAYERS": "2 4 8",
            "T_TAG": "x 'y z'",
            "T_COLOR": "blue",
            "T_MODE": "b",
            "T_USE_CRITIC": "yes",
            "T_BIAS": "false",
            "T_VERBOSE": "2",
        }
        args = env_roles(environ)["main"]
        assert (args.lr, args.layers, args.tag) == (1e-5, [2, 4, 8], ["x", "y z"])
        assert (args.color, args.mode, args.use_critic, args.bias, args.verbose) == (
            Color.blue,
            "b",
            True,
            False,
            2,
        )

    def test_origin_names_the_variable_and_the_command_line_wins(self) -> None:
        """explain says 'env T_LR'; a flag on the command line shadows the variable."""
        args = env_roles({"T_LR": "1e-5", "T_MODE": "b"}, "--lr", "3e-6")["main"]
        assert (
            str(explain(args, "mode"))
            == "mode = 'b'  from env T_MODE (role main); shadows 'a' from default"
        )
        lr = explain(args, "lr")
        assert (lr.value, lr.layer, lr.history[0].origin.where) == (3e-6, "cli", "env T_LR")

    def test_explicit_names(self) -> None:
        """names maps a variable that has no prefix onto a dest."""
        source = EnvSource(names={"LEARNING_RATE": "lr"}, environ={"LEARNING_RATE": "2e-5"})
        args = resolve_roles(parser(), [], preset=PLAIN, sources=[source])["main"]
        assert explain(args, "lr").origin.where == "env LEARNING_RATE"

    def test_every_problem_at_once(self) -> None:
        """A refused value is an error naming the variable; an unknown one a note or warning."""
        environ = {
            "T_LR": "fast",
            "T_MODE": "c",
            "T_USE_CRITIC": "maybe",
            "T_LRR": "1",
            "T_HOME": "/x",
        }
        with pytest.raises(ConfigError) as caught:
            env_roles(environ)
        lines = [str(problem) for problem in caught.value.problems]
        # In the environment's order (by name); argparse words its choices per Python version.
        assert lines[0] == (
            "env: info: environment variable T_HOME names no argument of this parser; it is "
            "ignored (unset it, or use another prefix than 'T_')"
        )
        assert lines[1] == (
            "env: error: environment variable T_LR: argument --lr: invalid float value: 'fast' "
            "(write the value as you would after --lr)"
        )
        assert lines[2] == (
            "env: warning: environment variable T_LRR names no argument of this parser (did you "
            "mean T_LR?) (as written it is ignored)"
        )
        assert lines[3].startswith(
            "env: error: environment variable T_MODE: argument --mode: invalid choice: 'c'"
        )
        assert lines[4] == (
            "env: error: environment variable T_USE_CRITIC: 'maybe' is not true or false (write "
            "the value as you would after --use-critic)"
        )
        assert [p.key for p in caught.value.problems] == ["home", "lr", "lrr", "mode", "use_critic"]

    def test_a_list_with_an_unclosed_quote(self) -> None:
        """A list is split as a shell would split it; an unclosed quote is an error, no crash."""
        with pytest.raises(ConfigError, match=r"T_TAG: .* cannot be split into values"):
            env_roles({"T_TAG": "a 'b"})

    def test_unknown_variables_are_notes(self) -> None:
        """Other programs' variables may share a prefix: a note, never a failure."""
        args = env_roles({"T_HOME": "/x"})["main"]
        assert [p.severity for p in notices(args)] == ["info"]

    def test_a_value_that_cannot_come_from_the_environment(self) -> None:
        """--version takes no value: never read; a count must be an int."""
        with pytest.raises(ConfigError, match="T_VERBOSE: 'lots' is not a count"):
            env_roles({"T_VERBOSE": "lots", "T_VERSION": "2"})

    def test_the_environment_is_read_when_the_source_is_read(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without environ, os.environ at read time; it is never changed."""
        monkeypatch.setenv("LCTEST_LR", "0.5")
        before = dict(os.environ)
        source = EnvSource(prefix="LCTEST_")
        args = resolve_roles(parser(), [], preset=PLAIN, sources=[source])["main"]
        assert args.lr == 0.5
        assert dict(os.environ) == before

    def test_a_secret_from_the_environment_stays_secret(self) -> None:
        """The value of T_WANDB_KEY is redacted in explain and audit like any secret's."""
        secret = "wandb-0123456789abcdef"
        args = env_roles({"T_WANDB_KEY": secret})
        assert secret not in str(explain(args["main"], "wandb_key"))
        assert secret not in repr(audit(args))

    def test_inputs_record_variable_names_only(self) -> None:
        """What provenance keeps of the environment: which variables were read, never values."""
        args = env_roles({"T_LR": "1e-5", "T_WANDB_KEY": "s3cr3t-value"})["main"]
        provenance = provenance_of(args)
        assert provenance is not None
        assert provenance.inputs["env"] == ("T_LR", "T_WANDB_KEY")

    def test_needs_a_prefix_or_names(self) -> None:
        with pytest.raises(ValueError, match="needs a prefix"):
            EnvSource()

    def test_nothing_set_is_no_layer(self) -> None:
        reading = EnvSource(prefix="T_", environ={}).read(parser())
        assert reading == Reading(None, (), {"env": ()})


class TestContract:
    """A source is any object with a name and read(parser) -> Reading."""

    def test_builtin_sources_are_sources(self) -> None:
        assert isinstance(EnvSource(prefix="X_"), Source)
        assert isinstance(MappingSource("site", {"lr": 0.1}), Source)

    def test_a_users_source(self, tmp_path: Any) -> None:
        """A source of one's own: its layer sits between defaults and command line."""

        class Fixed:
            name = "site"

            def read(self, parser: argparse.ArgumentParser) -> Reading:
                layer = Layer.from_mapping("site", {"lr": 0.25, "mode": "b"}, source="site.cfg")
                return Reading(layer, inputs={"files": {"site.cfg": "0" * 64}})

        roles = resolve_roles(parser(), ["--mode", "a"], preset=PLAIN, sources=[Fixed()])
        args = roles["main"]
        assert explain(args, "lr").origin.where == "site site.cfg"
        assert explain(args, "mode").history[0].layer == "site"
        assert audit(roles)["files"] == {"site.cfg": "0" * 64}

    def test_mapping_source(self) -> None:
        args = resolve_roles(
            parser(), [], preset=PLAIN, sources=[MappingSource("site", {"lr": 0.5})]
        )["main"]
        assert explain(args, "lr").layer == "site"

    def test_public_names(self) -> None:
        for name in ("EnvSource", "Reading", "Source", "PLAIN"):
            assert name in layerconf.__all__


class TestEnvSecrets:
    """A value the parser refuses is never quoted when its variable or dest is a secret."""

    def secret_parser(self) -> argparse.ArgumentParser:
        made = argparse.ArgumentParser()
        made.add_argument("--openai-api-key", type=int)
        made.add_argument("--hf-token", choices=["a", "b"])
        made.add_argument("--tokens", nargs="+")
        return made

    @pytest.mark.parametrize(
        ("variable", "value"),
        [
            ("T_OPENAI_API_KEY", "sk-0123456789abcdef"),  # refused by type=int
            ("T_HF_TOKEN", "hf_0123456789abcdef"),  # refused by choices
            ("MY_PASSWORD", "hunter2-'unclosed"),  # a list with an unclosed quote
        ],
    )
    def test_a_refused_secret_is_not_quoted(self, variable: str, value: str) -> None:
        source = EnvSource(prefix="T_", names={"MY_PASSWORD": "tokens"}, environ={variable: value})
        reading = source.read(self.secret_parser())
        [problem] = reading.problems
        assert problem.severity == "error"
        assert variable in problem.message
        for text in (value, repr(value), value.split("'")[0]):
            assert text not in str(problem)
        assert "<redacted>" in problem.message

    def test_another_variables_secret_is_not_quoted(self) -> None:
        """A refused value that is (or shows) a secret of another variable, as the command
        line's refused tokens are scrubbed of every secret of the line."""
        made = argparse.ArgumentParser()
        made.add_argument("--wandb-key")
        made.add_argument("--seed", type=int)
        made.add_argument("--lr", type=float)
        environ = {
            "T_WANDB_KEY": "sk-Zq8Wv4Lm",
            "T_SEED": "sk-Zq8Wv4Lm",
            "T_LR": "wandb_key=pw-Zq8Wv4Lm",
        }
        reading = EnvSource(prefix="T_", environ=environ).read(made)
        assert len(reading.problems) == 2
        assert "Zq8Wv4Lm" not in " ".join(map(str, reading.problems))


class TestEnvNames:
    """Which variable sets which dest, and how a variable is named in a problem."""

    def test_control_characters_in_a_name_are_escaped(self) -> None:
        """A name is printed as Python writes it when it holds a control character."""
        reading = EnvSource(prefix="T_", environ={"T_L\x1b[2JR": "1"}).read(parser())
        [problem] = reading.problems
        assert "\x1b" not in str(problem)
        assert "'T_L\\x1b[2JR'" in problem.message

    def test_a_dest_with_capitals(self) -> None:
        """T_N sets the dest N (-N): a dest is found whatever the case of its variable."""
        made = argparse.ArgumentParser()
        made.add_argument("-N", type=int, default=1)
        made.add_argument("--Mode", default="a")
        made.add_argument("--mode", default="b")
        environ = {"T_N": "3", "T_MODE": "c", "T_Mode": "d"}
        args = resolve_roles(made, [], preset=PLAIN, sources=[EnvSource("T_", environ=environ)])
        assert (args["main"].N, args["main"].mode, args["main"].Mode) == (3, "c", "d")
        assert notices(args["main"]) == ()

    @pytest.mark.parametrize(
        "environ",
        [
            {"T_LR": "1", "T_lr": "2"},
            {"T_LR": "1", "LEARNING_RATE": "2"},
        ],
    )
    def test_two_variables_for_one_dest_are_an_error(self, environ: dict[str, str]) -> None:
        """Which one wins would depend on how names sort: both are named, neither is used."""
        source = EnvSource(prefix="T_", names={"LEARNING_RATE": "lr"}, environ=environ)
        reading = source.read(parser())
        [problem] = reading.problems
        first, second = sorted(environ)
        assert (problem.severity, problem.key) == ("error", "lr")
        assert problem.message == (f"environment variables {first} and {second} both set lr (--lr)")
        assert problem.hint == "unset one of them"

    def test_a_names_entry_that_names_no_dest(self) -> None:
        """The problem names the entry and suggests the dest, not a variable to rename."""
        source = EnvSource(names={"MY_LR": "lrr"}, environ={"MY_LR": "1"})
        [problem] = source.read(parser()).problems
        assert problem.severity == "warning"
        assert problem.message == (
            "environment variable MY_LR is mapped to 'lrr' in names, which is no argument of "
            "this parser (did you mean 'lr'?)"
        )
        assert problem.hint == "as written it is ignored"


class _Split(argparse.Action):
    """A trainer's own action: ``--items a,b`` stores ``['a', 'b']``."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, str(values).split(","))


def _exits(text: str) -> str:
    raise SystemExit(3)


class _Picky(argparse.Action):
    """A trainer's own action that refuses a value through parser.error, as argparse's do."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if values != "ok":
            parser.error(f"{option_string} must be ok")
        setattr(namespace, self.dest, values)


class TestEnvAsTheCommandLine:
    """A variable's value is what its flag with that value gives on the command line."""

    def actions_parser(self) -> argparse.ArgumentParser:
        made = argparse.ArgumentParser()
        made.add_argument("--tag", action="append", default=["base"])
        made.add_argument("--pair", type=int, nargs=2, action="append", default=[[0, 0]])
        made.add_argument("--items", action=_Split, default=[])
        made.add_argument("--size", type=int, nargs=2, default=[1, 1])
        made.add_argument("--some", type=int, nargs="+", default=[1])
        return made

    @pytest.mark.parametrize(
        ("variable", "text", "flag"),
        [
            ("T_TAG", "x 'y z'", ["--tag", "x", "--tag", "y z"]),
            ("T_PAIR", "1 2", ["--pair", "1", "2"]),
            ("T_ITEMS", "a,b", ["--items", "a,b"]),
            ("T_SIZE", "3 4", ["--size", "3", "4"]),
        ],
    )
    def test_as_the_flag_would(self, variable: str, text: str, flag: list[str]) -> None:
        """append keeps the default and nests nargs; a custom action runs, as on argv."""
        made = self.actions_parser()
        dest = variable[2:].lower()
        expected = getattr(made.parse_args(flag), dest)
        args = resolve_roles(
            made, [], preset=PLAIN, sources=[EnvSource("T_", environ={variable: text})]
        )
        assert getattr(args["main"], dest) == expected
        assert made.get_default("tag") == ["base"]  # the parser's default is never changed

    def test_a_long_append_is_read_in_one_pass(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """argparse's append copies its list per value: called per word, 60,000 words of one
        variable took seconds (quadratic). The words go in with one copy of the default."""
        copies = []
        real = argparse._copy_items  # type: ignore[attr-defined]

        def counted(items: Any) -> Any:
            copies.append(1)
            return real(items)

        monkeypatch.setattr(argparse, "_copy_items", counted)
        text = " ".join(str(number) for number in range(5000))
        reading = EnvSource("T_", environ={"T_TAG": text}).read(self.actions_parser())
        assert reading.layer is not None
        assert reading.layer.values["tag"] == ["base", *text.split()]
        assert len(copies) <= 1

    @pytest.mark.parametrize(
        ("variable", "text", "message"),
        [
            ("T_SIZE", "1 2 3", "argument --size: expected 2 arguments (got 3)"),
            ("T_SIZE", "1", "argument --size: expected 2 arguments (got 1)"),
            ("T_SOME", "", "argument --some: expected at least one argument"),
            ("T_PAIR", "1", "argument --pair: expected 2 arguments (got 1)"),
        ],
    )
    def test_the_number_of_values_is_checked(self, variable: str, text: str, message: str) -> None:
        reading = EnvSource("T_", environ={variable: text}).read(self.actions_parser())
        [problem] = reading.problems
        assert problem.message == f"environment variable {variable}: {message}"

    def test_what_cannot_come_from_the_environment(self) -> None:
        """A subcommand is chosen on the command line; a type that exits is a refused value."""
        made = argparse.ArgumentParser()
        made.add_argument("--z", type=_exits)
        made.add_subparsers(dest="command").add_parser("go")
        reading = EnvSource("T_", environ={"T_Z": "1", "T_COMMAND": "go"}).read(made)
        assert [p.message for p in reading.problems] == [
            "environment variable T_COMMAND: a subcommand cannot be set from the environment",
            "environment variable T_Z: the parser stopped the program reading it (SystemExit: 3)",
        ]

    def test_an_action_that_calls_parser_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Its message is the problem's; nothing is printed and the program goes on."""
        made = argparse.ArgumentParser()
        made.add_argument("--p", action=_Picky)
        [problem] = EnvSource("T_", environ={"T_P": "no"}).read(made).problems
        assert problem.message == "environment variable T_P: --p must be ok"
        assert capsys.readouterr() == ("", "")


class TestEnvSourceArguments:
    """What a program hands EnvSource is checked: text names and values, as an environment has."""

    def test_a_mapping_that_is_not_all_text(self) -> None:
        """A name that is not text is no variable; a value that is not text is an error."""
        environ: dict[Any, Any] = {1: "x", "T_USE_CRITIC": 1, "T_LR": "2"}
        reading = EnvSource("T_", environ=environ).read(parser())
        assert reading.layer is not None
        assert dict(reading.layer.values) == {"lr": 2.0}
        [problem] = reading.problems
        assert problem.message == (
            "environment variable T_USE_CRITIC: the value is an int, not text as in an environment"
        )

    def test_a_variable_unset_while_it_is_read(self) -> None:
        """Another thread may unset a variable between listing the environment and reading it."""

        class Unsetting(dict[str, str]):
            def __getitem__(self, name: str) -> str:
                if name == "T_MODE":
                    raise KeyError(name)
                return super().__getitem__(name)

            def get(self, name: str, default: Any = None) -> Any:
                return default if name == "T_MODE" else super().get(name, default)

        environ = Unsetting({"T_LR": "2", "T_MODE": "b"})
        reading = EnvSource("T_", environ=environ).read(parser())
        assert reading.layer is not None
        assert (dict(reading.layer.values), reading.problems) == ({"lr": 2.0}, ())
        assert reading.inputs["env"] == ("T_LR",)

    @pytest.mark.parametrize(
        ("arguments", "match"),
        [({"prefix": 5}, "prefix"), ({"names": {"MY_LR": 5}}, "names")],
    )
    def test_its_arguments_are_checked(self, arguments: dict[str, Any], match: str) -> None:
        with pytest.raises(TypeError, match=match):
            EnvSource(**arguments)


class TestMappingSource:
    """A mapping's keys are the parser's dests: another key is said, with a did-you-mean."""

    def test_did_you_mean_is_bounded(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Thousands of unknown names, in a mapping or the environment, cost a bounded number
        of did-you-means: 5,000 variables took 100 s against the Megatron parser."""
        import layerconf.core.suggest as suggest

        calls = []
        compare = suggest.did_you_mean
        monkeypatch.setattr(
            suggest, "did_you_mean", lambda word, pool: calls.append(word) or compare(word, pool)
        )
        names = ["lrr", *(f"lrr{n:04d}" for n in range(suggest.SUGGESTED + 200))]
        mapping = MappingSource("site", dict.fromkeys(names, 1)).read(parser())
        assert len(calls) == suggest.SUGGESTED
        calls.clear()
        environ = {f"T_{name.upper()}": "1" for name in names}
        env = EnvSource(prefix="T_", environ=environ).read(parser())
        assert len(calls) == suggest.SUGGESTED
        for problems in (mapping.problems, env.problems):
            assert len(problems) == len(names)
            assert "did you mean" in str(problems[0])
            assert problems[-1].severity == "info"

    def test_a_misspelt_key(self) -> None:
        reading = MappingSource("site", {"lrr": 0.5, "hostname": "x", "lr": 0.1}).read(parser())
        assert [(p.severity, p.key, str(p)) for p in reading.problems] == [
            (
                "info",
                "hostname",
                "site: info: 'hostname' is not an argument of this parser; it is set as it is",
            ),
            (
                "warning",
                "lrr",
                "site: warning: 'lrr' is not an argument of this parser (did you mean 'lr'?) "
                "(it is set as it is)",
            ),
        ]
