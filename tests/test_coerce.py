"""Type coercion: a role file's values mean what the same tokens mean on the command line."""

from __future__ import annotations

import argparse
import datetime
import enum
import gc
import json
import math
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from layerconf import (
    ConfigError,
    Convert,
    Layer,
    LayerStack,
    Origin,
    Problem,
    Reason,
    RuleContext,
    RuleSet,
    explain,
    load_profile,
)
from layerconf.profiles.megatron_slime import AttnBackend
from layerconf.rules.coercion import _TABLES, TypeCoercion, _table_of, expected_kind

# --- the real Megatron + slime parser ------------------------------------------------------


@pytest.fixture(scope="module")
def real_parser() -> argparse.ArgumentParser:
    """The bundled profile: the real parser, with Megatron's type callables and enums."""
    return load_profile()


# --- a small hand-built parser with one dest of every kind -----------------------------------


class Backend(enum.Enum):
    flash = 1
    fused = 2
    auto = 3


def enum_type_handler(name: str) -> Backend:
    return Backend[name]


def tuple_type(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.strip("()").split(","))


def positive(text: str) -> float:
    number = float(text)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{number} is not positive")
    return number


def exploding(text: str) -> str:
    raise RuntimeError("the type callable broke")


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    add = parser.add_argument
    add("--lr", type=float, default=1e-4)
    add("--min-lr", type=float, default=None)
    add("--tensor-model-parallel-size", type=int, default=1)
    add("--seed", type=int, default=None)
    add("--save", type=str, default=None)
    add("--run-name", default="run")
    add("--lr-decay-style", choices=["constant", "linear", "cosine"], default="linear")
    add("--flash-attention-version", type=int, choices=[2, 3, 4], default=None)
    add("--attention-backend", type=enum_type_handler, choices=list(Backend), default=Backend.auto)
    add("--use-critic", action="store_true")
    add("--no-load-optim", action="store_true", default=None)
    add("--add-bias-linear", dest="bias", action="store_false")
    add("--offload-train", action=argparse.BooleanOptionalAction, default=None)
    add("--round", dest="round_to_int", action="store_true", default=None)
    add("--no-round", dest="round_to_int", action="store_false")
    add("--onnx-safe", type=bool, default=None)
    add("--profile-ranks", type=int, nargs="+", default=[])
    add("--data-path", nargs="*", default=None)
    add("--rampup-batch-size", type=int, nargs=3, default=None)
    add("--betas", type=float, nargs=2, default=[0.9, 0.95])
    add("--profile-target", nargs="+", choices=["overall", "actor"], default=["overall"])
    add("--load", nargs="?", default="ckpt", const="latest")
    add("--hook", dest="hooks", action="append", default=[])
    add("--pair", dest="pairs", type=int, action="append", nargs=2, default=None)
    add("--tag", dest="tags", action="extend", nargs="+", type=str, default=None)
    add("-v", "--verbose", action="count", default=0)
    add("--train-env-vars", type=json.loads, default="{}")
    add("--multimodal-keys", type=json.loads, default=None)
    add("--window-size", type=tuple_type, default=None)
    add("--kl-coef", type=positive, default=0.1)
    add("--broken", type=exploding, default=None)
    add("--rollout-batch-size", type=int, required=True)
    add("--mode", action="store_const", const="fast", default="slow")
    return parser


PARSER = make_parser()
AT = "x.yaml:7:11"


def role_layer(values: dict[str, Any]) -> Layer:
    """A role layer whose every top-level value sits at x.yaml:7:11."""
    where = Origin("role-config", "file", source="x.yaml", line=7, column=11)
    return Layer.from_mapping(
        "role-config", values, source="x.yaml", origins={(key,): where for key in values}
    )


def coerce(values: dict[str, Any], parser: argparse.ArgumentParser = PARSER) -> Any:
    """The namespace the role layer resolves to, type coercion applied."""
    return LayerStack([role_layer(values)], rules=[TypeCoercion(parser)]).resolve()


def problems(values: dict[str, Any], parser: argparse.ArgumentParser = PARSER) -> list[str]:
    """Every problem the role layer has, each as its one-line text."""
    with pytest.raises(ConfigError) as caught:
        coerce(values, parser)
    return [str(problem) for problem in caught.value.problems]


def problem(key: str, value: Any, parser: argparse.ArgumentParser = PARSER) -> str:
    """The one problem of ``{key: value}``."""
    (text,) = problems({key: value}, parser)
    return text


def decisions(values: dict[str, Any], parser: argparse.ArgumentParser = PARSER) -> list[Any]:
    """What the rule returns for a role layer, called directly."""
    return list(TypeCoercion(parser)(RuleContext("layers", None, (role_layer(values),))))


class TestFloats:
    """A float dest takes what `float` takes on the command line."""

    def test_yaml_string_of_an_exponent(self) -> None:
        """``lr: 1e-5`` (a string to YAML 1.1) becomes the float 1e-05."""
        args = coerce({"lr": "1e-5"})
        assert args.lr == 1e-05
        assert type(args.lr) is float

    def test_yaml_int(self) -> None:
        """``lr: 1`` becomes 1.0, as ``--lr 1`` does."""
        args = coerce({"lr": 1})
        assert args.lr == 1.0
        assert type(args.lr) is float

    def test_yaml_float_passes_unchanged(self) -> None:
        """A float is already right: no conversion is recorded."""
        assert decisions({"lr": 2e-5}) == []

    def test_special_strings(self) -> None:
        """``inf`` and ``nan`` mean what `float` makes of them."""
        args = coerce({"lr": "inf", "min_lr": "nan"})
        assert args.lr == math.inf
        assert math.isnan(args.min_lr)

    def test_word(self) -> None:
        """A word is an error, in the message style of the project."""
        assert problem("lr", "fast") == (
            f"{AT}: error: 'lr' must be a float (got 'fast') (write a number such as 1e-5)"
        )

    def test_boolean_is_not_a_number(self) -> None:
        """True is not 1."""
        assert "'lr' must be a float (got true)" in problem("lr", True)


class TestInts:
    """An int dest is as strict as argparse: ``2.0`` is not an int."""

    def test_string(self) -> None:
        """A numeric string becomes the int."""
        assert coerce({"tensor_model_parallel_size": "8"}).tensor_model_parallel_size == 8

    def test_int_unchanged(self) -> None:
        """An int is already right."""
        assert decisions({"tensor_model_parallel_size": 2}) == []

    def test_integral_float_says_what_to_write(self) -> None:
        """A YAML 2.0 is refused, and the hint says to write 2."""
        assert problem("tensor_model_parallel_size", 2.0).endswith("(write 2)")

    def test_fraction(self) -> None:
        """A YAML 2.5 is refused with a whole-number hint."""
        assert problem("tensor_model_parallel_size", 2.5).endswith(
            "(write a whole number such as 2)"
        )

    def test_boolean(self) -> None:
        """``seed: yes`` (a YAML bool) is refused, saying why YAML read a boolean."""
        assert problem("seed", True).endswith(
            "(write a whole number such as 2 (YAML reads true/false/yes/no/on/off as booleans))"
        )


class TestStrings:
    """A str dest (type str or none) takes text, and ints by their decimal spelling."""

    def test_int_becomes_its_text(self) -> None:
        """``save: 123`` is the token ``123``."""
        assert coerce({"save": 123}).save == "123"

    def test_text_unchanged(self) -> None:
        """Text is already right."""
        assert decisions({"save": "/ckpt", "run_name": "a"}) == []

    @pytest.mark.parametrize("value", [1.10, True, datetime.date(2024, 1, 1)])
    def test_other_scalars_must_be_quoted(self, value: Any) -> None:
        """A float, a bool or a date would lose its spelling: quote it."""
        assert problem("run_name", value).endswith("(quote the value so YAML reads it as text)")


class TestBooleans:
    """Flags take YAML booleans only; a string is never truthy."""

    @pytest.mark.parametrize("key", ["use_critic", "bias", "offload_train", "onnx_safe"])
    def test_booleans_pass(self, key: str) -> None:
        """true and false pass unchanged."""
        assert decisions({key: True}) == []
        assert decisions({key: False}) == []

    @pytest.mark.parametrize("key", ["use_critic", "bias", "offload_train", "onnx_safe"])
    def test_string_false_is_an_error(self, key: str) -> None:
        """``"false"`` is an error, never true."""
        assert "must be true" in problem(key, "false")

    def test_type_bool_refuses_the_string_argparse_would_call_true(self) -> None:
        """``--onnx-safe False`` is True to argparse; layerconf refuses the string."""
        assert PARSER.parse_args(["--rollout-batch-size", "1", "--onnx-safe", "False"]).onnx_safe
        assert problem("onnx_safe", "False").endswith("(write true or false, without quotes)")

    def test_three_state_takes_null(self) -> None:
        """A flag whose default is None takes null."""
        assert coerce({"no_load_optim": None, "offload_train": None}).offload_train is None

    def test_two_state_refuses_null(self) -> None:
        """A flag defaulting to False does not."""
        assert problem("use_critic", None).endswith("(delete the key to keep the default false)")

    def test_shared_dest_is_boolean(self) -> None:
        """A dest set by --x (store_true) and --no-x (store_false) is a three-state flag."""
        assert decisions({"round_to_int": False}) == []
        assert decisions({"round_to_int": None}) == []
        assert "'round_to_int' must be true, false or null" in problem("round_to_int", "no")

    def test_number(self) -> None:
        """1 is not true."""
        assert problem("use_critic", 1).endswith("(write true or false)")


class TestChoices:
    """Choices are checked after conversion, with a did-you-mean on a miss."""

    def test_close_miss(self) -> None:
        """``cosin`` suggests ``cosine``."""
        assert problem("lr_decay_style", "cosin") == (
            f"{AT}: error: 'lr_decay_style' must be one of 'constant', 'linear', 'cosine' "
            f"(got 'cosin') (did you mean 'cosine'?)"
        )

    def test_far_miss(self) -> None:
        """Nothing close: the hint points at the list."""
        assert problem("lr_decay_style", "zzz").endswith("(write one of the values listed)")

    def test_int_choices_after_conversion(self) -> None:
        """``"3"`` is converted to 3, then found among the choices."""
        assert coerce({"flash_attention_version": "3"}).flash_attention_version == 3
        assert "must be one of 2, 3, 4 (got 5)" in problem("flash_attention_version", 5)

    def test_enum_name_becomes_the_member(self) -> None:
        """A YAML string ``flash`` becomes ``Backend.flash``."""
        assert coerce({"attention_backend": "flash"}).attention_backend is Backend.flash

    def test_enum_member_unchanged(self) -> None:
        """A member given directly is already right."""
        assert decisions({"attention_backend": Backend.fused}) == []

    def test_enum_typo(self) -> None:
        """A misspelt member name is a choices error with a suggestion."""
        assert problem("attention_backend", "flsh") == (
            f"{AT}: error: 'attention_backend' must be one of 'flash', 'fused', 'auto' "
            f"(got 'flsh') (did you mean 'flash'?)"
        )


class TestNargs:
    """nargs dests take a YAML list, converted item by item."""

    def test_list_items_converted(self) -> None:
        """Each item goes through the type."""
        assert coerce({"profile_ranks": ["0", 1]}).profile_ranks == [0, 1]

    def test_right_list_unchanged(self) -> None:
        """A list of right items is not converted."""
        assert decisions({"profile_ranks": [0, 1], "betas": [0.9, 0.99]}) == []

    def test_tuple_becomes_a_list(self) -> None:
        """argparse gives lists; a tuple from a mapping layer is converted to one."""
        assert decisions({"profile_ranks": (0, 1)}) == [
            Convert("role-config", "profile_ranks", [0, 1])
        ]

    def test_scalar_where_a_list_is_required(self) -> None:
        """The hint shows the list to write."""
        assert problem("profile_ranks", 3).endswith("(write a YAML list: [3])")

    def test_plus_refuses_empty(self) -> None:
        """nargs '+' needs at least one item."""
        assert "'profile_ranks' must be a non-empty list of int (got [])" in problem(
            "profile_ranks", []
        )

    def test_star_takes_empty(self) -> None:
        """nargs '*' takes an empty list."""
        assert coerce({"data_path": []}).data_path == []

    def test_exact_count(self) -> None:
        """nargs=3 needs three items."""
        assert problem("rampup_batch_size", [1, 2]).endswith("(write exactly 3 items)")

    def test_every_bad_item_is_reported(self) -> None:
        """Each bad item is its own problem, with its index."""
        texts = problems({"betas": ["x", "y"]})
        assert [text.split(" (got")[0].split("error: ")[1] for text in texts] == [
            "'betas'[0] must be a float",
            "'betas'[1] must be a float",
        ]

    def test_choices_per_item(self) -> None:
        """Choices apply to every item."""
        assert "'profile_target'[1] must be one of 'overall', 'actor'" in problem(
            "profile_target", ["overall", "actr"]
        )

    def test_optional_is_a_scalar(self) -> None:
        """nargs '?' takes one value, or null."""
        assert decisions({"load": "/ckpt", "pairs": None}) == []
        assert coerce({"load": None}).load is None
        assert problem("load", ["a"]).endswith("(write a single value, not a list)")


class TestAppend:
    """append and extend dests take a YAML list of items."""

    def test_items_converted(self) -> None:
        """Each item goes through the type."""
        assert coerce({"hooks": ["a", 1]}).hooks == ["a", "1"]

    def test_scalar(self) -> None:
        """One hook still has to be a list."""
        assert problem("hooks", "a").endswith("(write a YAML list: ['a'])")

    def test_append_with_nargs_is_a_list_of_lists(self) -> None:
        """``--pair 1 2 --pair 3 4`` is [[1, 2], [3, 4]]."""
        assert coerce({"pairs": [["1", 2], [3, 4]]}).pairs == [[1, 2], [3, 4]]
        assert problem("pairs", [[1, 2], [3]]).endswith("(write exactly 2 items)")

    def test_extend(self) -> None:
        """extend takes a flat list."""
        assert coerce({"tags": ["a", 2]}).tags == ["a", "2"]

    def test_count(self) -> None:
        """A count action is an int."""
        assert coerce({"verbose": "2"}).verbose == 2


class TestNull:
    """null is a value only where the dest's default is None."""

    def test_default_none(self) -> None:
        """``seed: null`` keeps what argparse would leave."""
        assert decisions({"seed": None, "save": None, "min_lr": None}) == []

    def test_default_set(self) -> None:
        """``lr: null`` when lr defaults to a float is an error naming the default."""
        assert problem("lr", None) == (
            f"{AT}: error: 'lr' must be a float (got null) "
            "(delete the key to keep the default 0.0001)"
        )

    def test_required(self) -> None:
        """A required dest cannot be nulled, though its default is None."""
        assert "'rollout_batch_size' must be an int (got null" in problem(
            "rollout_batch_size", None
        )


class TestJson:
    """A `json.loads` dest takes what json.loads would give, or JSON text."""

    def test_mapping_as_is(self) -> None:
        """A YAML mapping is accepted unchanged."""
        assert decisions({"train_env_vars": {"A": "1"}, "multimodal_keys": [1]}) == []

    def test_text_is_parsed(self) -> None:
        """A string goes through json.loads."""
        assert coerce({"train_env_vars": '{"A": "1"}'}).train_env_vars == {"A": "1"}

    def test_bad_text(self) -> None:
        """Bad JSON text is an error quoting json.loads."""
        assert problem("train_env_vars", "{A}").endswith(
            "(write a YAML mapping or list, or a string holding JSON (json.loads: Expecting "
            "property name enclosed in double quotes: line 1 column 2 (char 1)))"
        )

    def test_null_needs_a_none_default(self) -> None:
        """``train_env_vars`` defaults to ``'{}'``: null is refused."""
        assert "(delete the key to keep the default '{}')" in problem("train_env_vars", None)


class TestCustomTypes:
    """Custom type callables run on the token; whatever they raise becomes a problem."""

    def test_string_through_the_callable(self) -> None:
        """``window_size: (128, 0)`` as a string goes through tuple_type."""
        assert coerce({"window_size": "(128,0)"}).window_size == (128, 0)

    def test_int_through_the_callable(self) -> None:
        """A YAML int is the token of its digits."""
        assert coerce({"kl_coef": 2}).kl_coef == 2.0

    def test_value_error(self) -> None:
        """A ValueError names the callable, the value and the flag."""
        assert problem("window_size", "x") == (
            f"{AT}: error: 'window_size' must be a tuple_type value (got 'x') "
            "(tuple_type said: invalid literal for int() with base 10: 'x'; write the value as "
            "you would after --window-size)"
        )

    def test_argument_type_error(self) -> None:
        """An ArgumentTypeError's message is the explanation."""
        assert "(positive said: -1.0 is not positive;" in problem("kl_coef", "-1")

    def test_any_exception(self) -> None:
        """Any other exception is a conversion failure too, not a crash."""
        assert "(exploding said: RuntimeError('the type callable broke');" in problem("broken", "a")

    def test_float_must_be_quoted(self) -> None:
        """A YAML float is not a token the callable can be trusted with."""
        assert problem("kl_coef", 0.5).endswith(
            "(quote the value, written as you would after --kl-coef)"
        )

    def test_registered_type_name(self) -> None:
        """A type registered by name on the parser is used as argparse would."""
        parser = argparse.ArgumentParser()
        parser.register("type", "hex", lambda text: int(text, 16))
        parser.add_argument("--mask", type="hex", default=0)
        assert coerce({"mask": "ff"}, parser).mask == 255


class TestTheRule:
    """The rule as the stack sees it: what it touches, what it reports, where."""

    def test_reports_every_problem(self) -> None:
        """Three bad keys are three problems, in order; good keys are still converted."""
        texts = problems({"lr": "fast", "seed": 1.5, "lr_decay_style": "x", "save": 1})
        assert [text.split(" must")[0].split("error: ")[1] for text in texts] == [
            "'lr'",
            "'seed'",
            "'lr_decay_style'",
        ]

    def test_problem_fields(self) -> None:
        """A problem carries its source, line, column, key, hint, layer and rule."""
        with pytest.raises(ConfigError) as caught:
            coerce({"lr": "fast"})
        (found,) = caught.value.problems
        assert (found.source, found.line, found.column) == ("x.yaml", 7, 11)
        assert (found.key, found.layer, found.rule) == ("lr", "role-config", "type-coercion")
        assert found.hint == "write a number such as 1e-5"
        assert found.severity == "error"

    def test_explain_shows_the_raw_value(self) -> None:
        """explain() gives the converted value, and the raw '1e-5' as converted."""
        default = Layer.from_mapping("default", {"lr": 1e-4}, kind="default")
        args = LayerStack(
            [default, role_layer({"lr": "1e-5"})], rules=[TypeCoercion(PARSER)]
        ).resolve()
        setting = explain(args, "lr")
        assert setting.value == 1e-05
        assert (setting.source, setting.line, setting.column) == ("x.yaml", 7, 11)
        raw = setting.history[0]
        assert (raw.value, raw.reason, raw.by) == ("1e-5", Reason.CONVERTED, "type-coercion")

    def test_unknown_keys_left_alone(self) -> None:
        """A key the parser does not know (or a flag spelling) is another rule's business."""
        args = coerce({"no_such_key": "x", "tensor-model-parallel-size": "2"})
        assert vars(args) == {"no_such_key": "x", "tensor-model-parallel-size": "2"}

    def test_other_layers_left_alone(self) -> None:
        """Only the named layers are converted."""
        cli = Layer.from_mapping("cli", {"lr": "1e-5"}, kind="argv")
        args = LayerStack([cli], rules=[TypeCoercion(PARSER)]).resolve()
        assert args.lr == "1e-5"

    def test_layers_by_name(self) -> None:
        """`layers` names the layers to convert; a single name is one layer."""
        cli = Layer.from_mapping("cli", {"lr": "1e-5"}, kind="argv")
        assert TypeCoercion(PARSER, layers="cli").layers == ("cli",)
        args = LayerStack([cli], rules=[TypeCoercion(PARSER, layers="cli")]).resolve()
        assert args.lr == 1e-05

    def test_a_layer_without_positions(self) -> None:
        """A value with no position of its own is located at its layer."""
        layer = Layer.from_mapping("role-config", {"lr": "fast"})
        with pytest.raises(ConfigError) as caught:
            LayerStack([layer], rules=[TypeCoercion(PARSER)]).resolve()
        assert str(caught.value) == (
            "role-config: error: 'lr' must be a float (got 'fast') (write a number such as 1e-5)"
        )

    def test_is_a_rule(self) -> None:
        """It registers in a RuleSet under its name, at the layers stage."""
        rules = RuleSet([TypeCoercion(PARSER)])
        assert rules.names == ("type-coercion",)
        assert rules.for_stage("layers") == (TypeCoercion(PARSER),)

    def test_inputs_not_mutated(self) -> None:
        """The layer handed in keeps its raw values."""
        layer = role_layer({"lr": "1e-5", "profile_ranks": ["1"]})
        LayerStack([layer], rules=[TypeCoercion(PARSER)]).resolve()
        assert layer.values == {"lr": "1e-5", "profile_ranks": ["1"]}

    def test_table_built_once_per_parser(self) -> None:
        """A second rule on the same parser reuses the table; adding an action rebuilds it."""
        parser = argparse.ArgumentParser()
        parser.add_argument("--lr", type=float, default=0.1)
        table = _table_of(parser)
        coerce({"lr": "1"}, parser)
        assert _table_of(parser) is table
        assert set(table.specs) == {"lr"}  # compiled for the dests seen, not for every action
        parser.add_argument("--seed", type=int, default=0)
        assert coerce({"seed": "3"}, parser).seed == 3
        parser.set_defaults(lr=None)
        assert coerce({"lr": None}, parser).lr is None
        assert parser in _TABLES

    def test_table_does_not_keep_its_parser_alive(self) -> None:
        """The cache is keyed weakly and refers to no action: a dropped parser is freed."""
        parser = argparse.ArgumentParser()
        parser.add_argument("--lr", type=float, default=0.1)
        coerce({"lr": "1"}, parser)
        gc.collect()  # (other tests' parsers, freed by this collection, would count too)
        before = len(_TABLES)
        del parser
        gc.collect()
        assert len(_TABLES) == before - 1

    def test_action_replaced_in_place(self) -> None:
        """An action replaced under the same count of actions is noticed."""
        parser = argparse.ArgumentParser(conflict_handler="resolve")
        parser.add_argument("--a", type=int, default=0)
        parser.add_argument("--b", type=int, default=0)
        coerce({"a": "1", "b": "2"}, parser)
        parser.add_argument("--a", type=float, default=0.0)  # removes the old --a
        args = coerce({"a": "1", "b": "2"}, parser)
        assert (args.a, type(args.a), args.b, type(args.b)) == (1.0, float, 2, int)

    @pytest.mark.parametrize(
        ("change", "value", "verdict"),
        [
            ({"choices": ["constant", "linear"]}, "cosine", "must be one of 'constant', 'linear'"),
            ({"type": int, "choices": None}, "1.5", "must be an int"),
            ({"choices": None}, "anything", None),
            ({"nargs": 2}, ["a", "b", "c"], "write exactly 2 items"),
            ({"default": 0, "required": True}, None, "(got null)"),
        ],
    )
    def test_attributes_changed_in_place(
        self, change: dict[str, Any], value: Any, verdict: str | None
    ) -> None:
        """Changing an action's type, choices, nargs or default after a first resolution
        changes the verdict, as it changes what argparse accepts: a cache never decides."""
        parser = argparse.ArgumentParser()
        action = parser.add_argument("--style", choices=["constant", "linear", "cosine"])
        assert coerce({"style": "linear"}, parser).style == "linear"
        for name, new in change.items():
            setattr(action, name, new)
        if verdict is None:
            assert coerce({"style": value}, parser).style == value
        else:
            [text] = problems({"style": value}, parser)
            assert verdict in text

    def test_a_registered_type_replaced(self) -> None:
        """A type named by its registry name follows the registry."""
        parser = argparse.ArgumentParser()
        parser.register("type", "number", float)
        parser.add_argument("--x", type="number")
        assert coerce({"x": "1.5"}, parser).x == 1.5
        parser.register("type", "number", int)
        assert "must be an int" in problems({"x": "1.5"}, parser)[0]

    def test_a_dest_added_after_a_first_resolution(self) -> None:
        """A key looked up before the parser had its dest is converted once it has one: the
        positions found per dest are the table's, rebuilt when an action is added."""
        parser = argparse.ArgumentParser()
        parser.add_argument("--a", type=int)
        assert coerce({"a": "1", "b": "2"}, parser).b == "2"  # not a dest: left alone
        parser.add_argument("--b", type=int)
        assert coerce({"a": "1", "b": "2"}, parser).b == 2
        assert coerce({"c": "yes"}, parser).c == "yes"  # looked up before it is a dest
        parser.add_argument("--c", action="store_true")
        parser.add_argument("--no-c", dest="c", action="store_false")  # two actions, one dest
        assert "'c' must be true or false" in problems({"c": "yes"}, parser)[0]

    def test_dotted_dest_left_alone(self) -> None:
        """A dest with a dot cannot be addressed by a dotted key: it is not converted."""
        parser = argparse.ArgumentParser()
        parser.add_argument("--a", dest="a.b", type=int)
        assert _table_of(parser).positions("a.b") == ()


class TestHugeNumbers:
    """Numbers too large for their text to be written are problems, never exceptions."""

    HUGE = int("f" * 5000, 16)  # 6,000 decimal digits: str() refuses it

    @pytest.mark.parametrize("key", ["lr", "save", "window_size", "lr_decay_style"])
    def test_an_int_too_long_to_write(self, key: str) -> None:
        """A float, str, custom or choices dest given a huge int: one located problem."""
        text = problem(key, self.HUGE)
        assert text.startswith(f"{AT}: error: '{key}' must be ")
        assert "an int of about 6,0" in text

    def test_among_the_other_problems(self) -> None:
        """The huge int is one problem among all the others of the layer."""
        found = problems({"lr": self.HUGE, "seed": "x", "save": 1.5})
        assert [text.split("'")[1] for text in found] == ["lr", "seed", "save"]

    def test_an_int_dest_keeps_it(self) -> None:
        """An int dest takes the int as it is, as argparse's int() would."""
        assert coerce({"seed": self.HUGE}).seed == self.HUGE


class TestExpectedKind:
    """expected_kind describes what an action takes, for messages and schemas."""

    @pytest.mark.parametrize(
        ("dest", "kind"),
        [
            ("lr", "float"),
            ("seed", "int"),
            ("save", "str"),
            ("run_name", "str"),
            ("use_critic", "bool"),
            ("offload_train", "bool"),
            ("onnx_safe", "bool"),
            ("lr_decay_style", "one of 'constant', 'linear', 'cosine'"),
            ("attention_backend", "one of 'flash', 'fused', 'auto'"),
            ("profile_ranks", "list of int"),
            ("rampup_batch_size", "list of 3 int"),
            ("profile_target", "list of one of 'overall', 'actor'"),
            ("hooks", "list of str"),
            ("pairs", "list of list of 2 int"),
            ("verbose", "int"),
            ("train_env_vars", "JSON"),
            ("window_size", "tuple_type"),
            ("mode", "any"),
            ("help", "any"),
        ],
    )
    def test_kinds(self, dest: str, kind: str) -> None:
        """One kind per action."""
        (action,) = [a for a in PARSER._actions if a.dest == dest]
        assert expected_kind(action) == kind

    def test_a_registered_type_name_is_its_callable(self) -> None:
        """A type given by a name registered with parser.register reads as what it converts
        to, as the coercion rule converts it (in the parser itself and in a group)."""
        parser = argparse.ArgumentParser()
        parser.register("type", "count", int)
        parser.add_argument("--x", type="count")
        parser.add_argument_group("g").add_argument("--y", type="count")
        assert [expected_kind(a) for a in parser._actions[1:]] == ["int", "int"]

    def test_long_choices_are_shortened(self, real_parser: argparse.ArgumentParser) -> None:
        """The platform's signals (33 on Linux) show ten, and the count."""
        (action,) = [a for a in real_parser._actions if a.dest == "exit_signal"]
        ten = ", ".join(repr(member.name) for member in list(signal.Signals)[:10])
        assert expected_kind(action) == f"one of {ten}, ... ({len(signal.Signals)} in all)"


def slime_role_layers(path: Path) -> dict[str, Layer]:
    """One layer per role of a slime role file, with the line and column of every override."""
    root = yaml.compose(path.read_text(), Loader=yaml.SafeLoader)
    layers = {}
    for entry in root.value[0][1].value:
        fields = {key.value: node for key, node in entry.value}
        values, origins = {}, {}
        for key, node in fields["overrides"].value:
            values[key.value] = yaml.safe_load(yaml.serialize(node))
            origins[(key.value,)] = Origin(
                "role-config",
                "file",
                source=path.name,
                line=node.start_mark.line + 1,
                column=node.start_mark.column + 1,
            )
        layers[fields["role"].value] = Layer.from_mapping(
            "role-config", values, source=path.name, origins=origins
        )
    return layers


class TestTheRealParser:
    """The 1,038-action Megatron + slime parser and its real role file."""

    def test_every_action_has_a_kind(self, real_parser: argparse.ArgumentParser) -> None:
        """No action of the real parser breaks the table."""
        kinds = {expected_kind(action) for action in real_parser._actions}
        assert {"int", "float", "str", "bool", "JSON", "list of int", "tuple_type"} <= kinds
        # 1,037 dumped dests (two actions share one), help and the profile's three additions
        table = _table_of(real_parser)
        assert len({dest for dest in table.dests if table.positions(dest)}) == 1041

    def test_the_slime_role_file(
        self, real_parser: argparse.ArgumentParser, fixtures_dir: Path
    ) -> None:
        """``lr: 1e-5`` in slime_ppo_megatron.yaml becomes 1e-05 for the critic, 1e-06 for the actor."""
        layers = slime_role_layers(fixtures_dir / "slime_ppo_megatron.yaml")
        assert layers["critic"].values == {"lr": "1e-5"}  # what PyYAML gives
        default = Layer.from_mapping("default", {"lr": 1e-4}, kind="default")
        for role, lr in [("critic", 1e-05), ("actor", 1e-06)]:
            stack = LayerStack([default, layers[role]], rules=[TypeCoercion(real_parser)])
            args = stack.resolve(role)
            assert args.lr == lr
            setting = explain(args, "lr")
            assert (setting.source, setting.line, setting.column) == (
                "slime_ppo_megatron.yaml",
                6 if role == "critic" else 10,
                11,
            )
            assert setting.history[0].reason is Reason.CONVERTED

    def test_a_realistic_role(self, real_parser: argparse.ArgumentParser) -> None:
        """A role with the kinds a real critic overrides, all converted as the CLI would."""
        args = coerce(
            {
                "lr": "1e-5",
                "min_lr": 0,
                "lr_warmup_iters": "10",
                "lr_decay_style": "cosine",
                "attention_backend": "flash",
                "yarn_correction_range_round_to_int": None,
                "offload_train": True,
                "train_env_vars": {"NCCL_DEBUG": "INFO"},
                "profile_ranks": ["0", 1],
                "save": "/ckpt/critic",
            },
            real_parser,
        )
        assert (args.lr, args.min_lr, args.lr_warmup_iters) == (1e-05, 0.0, 10)
        assert args.attention_backend is AttnBackend.flash
        assert args.profile_ranks == [0, 1]
        assert args.train_env_vars == {"NCCL_DEBUG": "INFO"}

    def test_real_mistakes(self, real_parser: argparse.ArgumentParser) -> None:
        """The mistakes a real role file makes, all reported at once."""
        texts = problems(
            {
                "lr": "fast",
                "offload_train": "true",
                "moe_aux_loss_coeff": 0.01,
                "rampup_batch_size": [1, 2],
                "rollout_batch_size": None,
                "exit_signal": "SIGTREM",
            },
            real_parser,
        )
        assert len(texts) == 6
        assert texts[2].endswith("(write a YAML list: [0.01])")
        assert texts[5].endswith("(did you mean 'SIGTERM'?)")


# Every message, exactly: (key, bad value, message, hint). Located at x.yaml:7:11.
CORPUS: list[tuple[str, Any, str, str]] = [
    ("lr", "fast", "'lr' must be a float (got 'fast')", "write a number such as 1e-5"),
    ("lr", "1e-5x", "'lr' must be a float (got '1e-5x')", "write a number such as 1e-5"),
    ("lr", "", "'lr' must be a float (got '')", "write a number such as 1e-5"),
    (
        "lr",
        False,
        "'lr' must be a float (got false)",
        "write a number such as 1e-5 (YAML reads true/false/yes/no/on/off as booleans)",
    ),
    ("lr", [1e-5], "'lr' must be a float (got [1e-05])", "write a single value, not a list"),
    ("lr", {"a": 1}, "'lr' must be a float (got {'a': 1})", "write a single value, not a mapping"),
    ("lr", None, "'lr' must be a float (got null)", "delete the key to keep the default 0.0001"),
    ("seed", "1.5", "'seed' must be an int (got '1.5')", "write a whole number such as 2"),
    ("seed", "2.0", "'seed' must be an int (got '2.0')", "write 2"),
    ("seed", 8.0, "'seed' must be an int (got 8.0)", "write 8"),
    ("seed", "1e3", "'seed' must be an int (got '1e3')", "write 1000"),
    ("seed", "eight", "'seed' must be an int (got 'eight')", "write a whole number such as 2"),
    ("save", 0.5, "'save' must be a string (got 0.5)", "quote the value so YAML reads it as text"),
    ("save", ["a"], "'save' must be a string (got ['a'])", "write a single value, not a list"),
    ("use_critic", "false", "'use_critic' must be true or false (got 'false')", "write true or false, without quotes"),
    ("use_critic", 0, "'use_critic' must be true or false (got 0)", "write true or false"),
    ("use_critic", None, "'use_critic' must be true or false (got null)", "delete the key to keep the default false"),
    ("bias", "yes", "'bias' must be true or false (got 'yes')", "write true or false, without quotes"),
    ("offload_train", "on", "'offload_train' must be true, false or null (got 'on')", "write true or false, without quotes"),
    ("lr_decay_style", "Cosine", "'lr_decay_style' must be one of 'constant', 'linear', 'cosine' (got 'Cosine')", "did you mean 'cosine'?"),
    ("lr_decay_style", "COSINE", "'lr_decay_style' must be one of 'constant', 'linear', 'cosine' (got 'COSINE')", "did you mean 'cosine'?"),
    ("lr_decay_style", 1, "'lr_decay_style' must be one of 'constant', 'linear', 'cosine' (got 1)", "write one of the values listed"),
    ("flash_attention_version", "v3", "'flash_attention_version' must be one of 2, 3, 4 (got 'v3')", "write one of the values listed"),
    ("attention_backend", "fused_attn", "'attention_backend' must be one of 'flash', 'fused', 'auto' (got 'fused_attn')", "did you mean 'fused'?"),
    ("profile_ranks", "0,1", "'profile_ranks' must be a non-empty list of int (got '0,1')", "write a YAML list: ['0,1']"),
    ("profile_ranks", [0, "one"], "'profile_ranks'[1] must be an int (got 'one')", "write a whole number such as 2"),
    ("profile_ranks", [0, None], "'profile_ranks'[1] must be an int (got null)", "write a whole number such as 2"),
    ("profile_ranks", [], "'profile_ranks' must be a non-empty list of int (got [])", "write at least one item, or delete the key to keep the default []"),
    ("rampup_batch_size", [1, 2, 3, 4], "'rampup_batch_size' must be a list of 3 int (got [1, 2, 3, 4])", "write exactly 3 items"),
    ("data_path", {"a": "b"}, "'data_path' must be a list of str (got {'a': 'b'})", "write a YAML list"),
    ("profile_target", ["xyz"], "'profile_target'[0] must be one of 'overall', 'actor' (got 'xyz')", "write one of the values listed"),
    ("hooks", None, "'hooks' must be a list of str (got null)", "delete the key to keep the default []"),
    ("pairs", [[1, 2], 3], "'pairs'[1] must be a list of 2 int (got 3)", "write a YAML list: [3]"),
    ("train_env_vars", datetime.date(2024, 1, 1), "'train_env_vars' must be JSON (a mapping, a list or JSON text) (got datetime.date(2024, 1, 1))", "write a YAML mapping or list, or a string holding JSON"),
    ("window_size", 128.5, "'window_size' must be a tuple_type value (got 128.5)", "quote the value, written as you would after --window-size"),
    ("window_size", [128, 0], "'window_size' must be a tuple_type value (got [128, 0])", "quote the value, written as you would after --window-size"),
    ("kl_coef", "0", "'kl_coef' must be a positive value (got '0')", "positive said: 0.0 is not positive; write the value as you would after --kl-coef"),
    ("rollout_batch_size", None, "'rollout_batch_size' must be an int (got null)", "write an int; the option is required"),
    ("verbose", "vv", "'verbose' must be an int (got 'vv')", "write a whole number such as 2"),
]  # fmt: skip


class TestMessageCorpus:
    """Each bad value gives exactly one problem, with exactly this message and hint."""

    @pytest.mark.parametrize(("key", "value", "message", "hint"), CORPUS)
    def test_message(self, key: str, value: Any, message: str, hint: str) -> None:
        """The message names the dest, the kind, the value and where it came from."""
        with pytest.raises(ConfigError) as caught:
            coerce({key: value})
        (found,) = caught.value.problems
        assert found == Problem(
            message.replace("*", AT),
            key=key,
            layer="role-config",
            source="x.yaml",
            line=7,
            column=11,
            hint=hint,
            rule="type-coercion",
        )

    def test_corpus_is_large(self) -> None:
        """At least 25 bad values, over at least 15 dests."""
        assert len(CORPUS) >= 25
        assert len({key for key, *_ in CORPUS}) >= 15


# --- properties ----------------------------------------------------------------------------

PROPERTY_PARSER = argparse.ArgumentParser()
PROPERTY_PARSER.add_argument("--f", type=float, default=0.0)
PROPERTY_PARSER.add_argument("--i", type=int, default=0)
PROPERTY_PARSER.add_argument("--s", default="")
PROPERTY_PARSER.add_argument("--flag", action="store_true")
PROPERTY_PARSER.add_argument("--ints", type=int, nargs="+", default=[0])
PROPERTY_PARSER.add_argument("--floats", type=float, nargs=2, default=[0.0, 0.0])
PROPERTY_PARSER.add_argument("--c", choices=["a", "b", "c"], default="a")

floats = st.floats(allow_nan=False)
right_values = st.one_of(
    st.tuples(st.just("f"), floats),
    st.tuples(st.just("i"), st.integers()),
    st.tuples(st.just("s"), st.text()),
    st.tuples(st.just("flag"), st.booleans()),
    st.tuples(st.just("ints"), st.lists(st.integers(), min_size=1, max_size=4)),
    st.tuples(st.just("floats"), st.lists(floats, min_size=2, max_size=2)),
    st.tuples(st.just("c"), st.sampled_from(["a", "b", "c"])),
)


def rule_output(key: str, value: Any) -> list[Any]:
    context = RuleContext("layers", None, (role_layer({key: value}),))
    return list(TypeCoercion(PROPERTY_PARSER)(context))


def coerced(key: str, value: Any) -> Any:
    output = rule_output(key, value)
    assert all(isinstance(decision, Convert) for decision in output), output
    return output[0].value if output else value


class TestProperties:
    """Coercion agrees with argparse, and leaves right values alone."""

    @given(right_values)
    def test_right_type_is_the_identity(self, pair: tuple[str, Any]) -> None:
        """A value of the right Python type is not converted at all."""
        key, value = pair
        assert rule_output(key, value) == []

    @given(
        st.one_of(
            st.tuples(st.just("f"), floats | st.integers()), st.tuples(st.just("i"), st.integers())
        )
    )
    def test_tokens_mean_what_argparse_says(self, pair: tuple[str, Any]) -> None:
        """``str(value)`` coerces to what ``--key=str(value)`` parses to; so does the int itself."""
        key, value = pair
        token = str(value)
        expected = getattr(PROPERTY_PARSER.parse_args([f"--{key}={token}"]), key)
        assert coerced(key, token) == expected
        assert type(coerced(key, token)) is type(expected)
        if type(value) is int:
            assert coerced(key, value) == expected

    @given(st.text().filter(lambda text: not text.startswith("-")))
    def test_text_means_what_argparse_says(self, text: str) -> None:
        """A string dest takes the token itself."""
        assert coerced("s", text) == PROPERTY_PARSER.parse_args([f"--s={text}"]).s

    @given(st.lists(st.integers(min_value=0), min_size=1, max_size=4))
    def test_lists_mean_what_argparse_says(self, items: list[int]) -> None:
        """A list of tokens coerces to what ``--ints t1 t2 ...`` parses to."""
        tokens = [str(item) for item in items]
        assert coerced("ints", tokens) == PROPERTY_PARSER.parse_args(["--ints", *tokens]).ints
