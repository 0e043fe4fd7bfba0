"""explain(): where a value came from, what it shadowed, and clear errors otherwise."""

from __future__ import annotations

import argparse
import copy
import inspect
import pickle
from collections.abc import Callable
from typing import Any
from unittest import mock

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerconf import (
    Layer,
    LayerStack,
    NoProvenanceError,
    Origin,
    Reason,
    SetValue,
    UnknownKeyError,
    explain,
    explain_all,
    rule,
)
from layerconf.cli import render
from layerconf.core import _slots
from layerconf.core import explain as explain_module
from layerconf.core.merge import merge_layers
from layerconf.core.namespace import Event, Namespace, Provenance
from layerconf.core.records import Setting, join_path

from .strategies import layer_lists, leaf_paths, policies


def issue_example() -> argparse.Namespace:
    return LayerStack(
        [
            Layer.from_mapping("default", {"lr": 1e-6, "opt": {"beta1": 0.9, "beta2": 0.95}}),
            Layer.from_mapping("cli", {"lr": 2e-6}),
            Layer.from_mapping("role-config", {"opt": {"beta2": 0.98}}, source="critic.yaml"),
        ]
    ).resolve()


def located_stack() -> argparse.Namespace:
    """The shape of a real resolution: defaults, a command line, a role file."""
    return LayerStack(
        [
            Layer.from_mapping("default", {"lr": 1e-6, "seed": 1234}, kind="default"),
            Layer(
                "cli",
                "argv",
                {"lr": 2e-6},
                origins={("lr",): Origin("cli", "argv", argv_index=7, token="--lr")},
            ),
            Layer(
                "role-config",
                "file",
                {"lr": 1e-5},
                Origin("role-config", "file", source="critic.yaml"),
                {("lr",): Origin("role-config", "file", source="critic.yaml", line=9, column=11)},
            ),
        ]
    ).resolve(role="critic")


class TestTheIssueExample:
    """The minimal public use works as written."""

    def test_lr_from_cli(self) -> None:
        """lr comes from cli and shadows the default."""
        setting = explain(issue_example(), "lr")
        assert (setting.value, setting.layer) == (2e-6, "cli")
        assert [(h.value, h.layer) for h in setting.history] == [(1e-6, "default")]

    def test_nested_path(self) -> None:
        """A dotted path addresses a nested leaf."""
        setting = explain(issue_example(), "opt.beta2")
        assert (setting.value, setting.layer, setting.source) == (
            0.98,
            "role-config",
            "critic.yaml",
        )
        assert [(h.value, h.layer) for h in setting.history] == [(0.95, "default")]

    def test_untouched_nested_leaf(self) -> None:
        """A leaf only one layer set has no history."""
        setting = explain(issue_example(), "opt.beta1")
        assert (setting.value, setting.layer, setting.history) == (0.9, "default", ())

    def test_whole_mapping(self) -> None:
        """Explaining a mapping names its newest contributor; earlier ones are merged into it."""
        setting = explain(issue_example(), "opt")
        assert setting.value == {"beta1": 0.9, "beta2": 0.98}
        assert setting.layer == "role-config"
        assert [h.reason for h in setting.history] == [Reason.MERGED]


class TestTheRecord:
    """The record carries every field, and one short human answer."""

    def test_fields(self) -> None:
        """key, value, layer, source, line, column, argv_index, rule, history."""
        setting = explain(located_stack(), "lr")
        assert (setting.key, setting.value, setting.layer) == ("lr", 1e-5, "role-config")
        assert (setting.source, setting.line, setting.column) == ("critic.yaml", 9, 11)
        assert (setting.argv_index, setting.rule, setting.role) == (None, None, "critic")
        cli = setting.history[0]
        assert (cli.value, cli.layer, cli.argv_index, cli.token) == (2e-6, "cli", 7, "--lr")
        assert cli.reason is Reason.OVERRIDDEN

    def test_str_is_one_short_answer(self) -> None:
        """The str() form the README shows."""
        assert str(explain(located_stack(), "lr")) == (
            "lr = 1e-05  from role-config critic.yaml:9:11 (role critic); "
            "shadows 2e-06 from cli argv[7] '--lr', 1e-06 from default"
        )

    def test_to_dict(self) -> None:
        """to_dict gives JSON-shaped data with the history in the same shape."""
        data = explain(located_stack(), "lr").to_dict()
        assert data["line"] == 9
        assert data["history"][0]["argv_index"] == 7
        assert data["history"][0]["reason"] == "overridden"

    def test_record_is_frozen(self) -> None:
        """A Setting cannot be changed in place."""
        setting = explain(located_stack(), "lr")
        with pytest.raises(AttributeError):
            setting.value = 0  # type: ignore[misc]

    def test_explained_values_are_copies(self) -> None:
        """Mutating an explained value changes neither the namespace nor a later answer."""
        args = issue_example()
        explain(args, "opt").value["beta1"] = 0
        explain(args, "opt").history[0].value["beta1"] = 0
        assert args.opt["beta1"] == 0.9
        assert explain(args, "opt").history[0].value == {"beta1": 0.9, "beta2": 0.95}


class TestAssignedAfterResolution:
    """An assignment after resolution is recorded as layer runtime, at the line that made it."""

    def test_reassigned_value(self) -> None:
        """explain names this file and line; the layer values stay in the history."""
        args = issue_example()
        args.lr = 5e-6
        line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
        setting = explain(args, "lr")
        assert (setting.value, setting.layer, setting.kind) == (5e-6, "runtime", "runtime")
        assert (setting.source, setting.line) == (__file__, line)
        assert [(h.layer, h.reason) for h in setting.history] == [
            ("cli", Reason.OVERRIDDEN),
            ("default", Reason.OVERRIDDEN),
        ]
        assert str(setting).startswith(
            f"lr = 5e-06  from runtime {__file__}:{line} (write 1 of 1);"
        )

    def test_a_mapping_assigned_names_its_line_for_each_leaf(self) -> None:
        """Writes are recorded per attribute; a dotted key finds the write that set it."""
        args = issue_example()
        args.opt = {"beta1": 0.8, "beta2": 0.99}
        line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
        setting = explain(args, "opt.beta2")
        assert (setting.value, setting.layer, setting.source, setting.line) == (
            0.99,
            "runtime",
            __file__,
            line,
        )
        assert [(h.value, h.layer) for h in setting.history] == [
            (0.98, "role-config"),
            (0.95, "default"),
        ]

    def test_every_assignment_is_kept(self) -> None:
        """Two assignments: the last wins, the first is in the history."""
        args = issue_example()
        args.lr = 5e-6
        args.lr = 6e-6
        setting = explain(args, "lr")
        assert [h.value for h in setting.history] == [5e-6, 2e-6, 1e-6]
        assert setting.history[0].layer == "runtime"

    def test_over_a_rule(self) -> None:
        """A value a rule set, then assigned: the rule's value lost to the assignment."""
        made = rule("resolved", name="setter")(lambda context: [SetValue("lr", 3e-6)])
        args = LayerStack([Layer.from_mapping("cli", {"lr": 2e-6})], rules=[made]).resolve()
        args.lr = 4e-6
        setting = explain(args, "lr")
        assert [(h.layer, h.reason) for h in setting.history] == [
            ("rule:setter", Reason.OVERRIDDEN),
            ("cli", Reason.FORCED),
        ]

    def test_new_key(self) -> None:
        """A key no layer held is explained as set at runtime."""
        args = issue_example()
        args.extra = 1
        setting = explain(args, "extra")
        assert (setting.layer, setting.history) == ("runtime", ())

    def test_writes_survive_copies_and_stay_apart(self) -> None:
        """Copies and pickles keep the assignments; a later write to a copy is its own."""
        args = issue_example()
        args.lr = 5e-6
        for clone in (copy.copy(args), copy.deepcopy(args), pickle.loads(pickle.dumps(args))):
            assert explain(clone, "lr").layer == "runtime"
            clone.lr = 7e-6
            assert explain(args, "lr").value == 5e-6
            assert len(explain(clone, "lr").history) == 3

    def test_write_bypassing_setattr(self) -> None:
        """A value changed behind the namespace's back is still not passed off as a layer's."""
        args = issue_example()
        vars(args)["lr"] = 9e-6
        setting = explain(args, "lr")
        assert (setting.layer, setting.source) == ("runtime", None)

    def test_a_plain_namespace_is_not_tracked(self) -> None:
        """Namespace(**kwargs) records nothing: it has no provenance to add to."""
        from layerconf import Namespace

        made = Namespace(lr=1)
        made.lr = 2
        assert vars(made) == {"lr": 2}


class TestErrors:
    """Unknown keys and namespaces without provenance get errors that say what to do."""

    def test_unknown_key_suggests(self) -> None:
        """A KeyError with a did-you-mean."""
        with pytest.raises(KeyError, match=r"did you mean 'opt\.beta2'") as caught:
            explain(issue_example(), "opt.beta3")
        assert isinstance(caught.value, UnknownKeyError)

    def test_unknown_key_without_a_close_one(self) -> None:
        """No suggestion when nothing is close."""
        with pytest.raises(UnknownKeyError) as caught:
            explain(issue_example(), "zzzzzz")
        assert str(caught.value) == "'zzzzzz' is not a key of this namespace"

    def test_path_through_a_plain_value(self) -> None:
        """A dotted path below a non-mapping is unknown."""
        with pytest.raises(UnknownKeyError):
            explain(issue_example(), "lr.x")

    def test_plain_namespace(self) -> None:
        """A namespace from argparse itself says how to get provenance."""
        with pytest.raises(NoProvenanceError, match=r"layerconf\.parse_args\(parser\)"):
            explain(argparse.Namespace(lr=1), "lr")

    def test_key_must_be_str(self) -> None:
        """A non-str key is a TypeError."""
        with pytest.raises(TypeError, match="as a str"):
            explain(issue_example(), 1)  # type: ignore[arg-type]


class TestUnusualValues:
    """Objects that compare by identity or cannot be copied are explained, not mistaken."""

    def test_identity_compared_object(self) -> None:
        """A plain object's copy is not taken for a runtime assignment."""

        class Plain:
            pass

        args = LayerStack([Layer.from_mapping("cli", {"obj": Plain()})]).resolve()
        assert explain(args, "obj").layer == "cli"

    def test_uncopyable_object(self) -> None:
        """A value deepcopy refuses is shared rather than crashing the resolution or explain."""
        import threading

        lock = threading.Lock()
        args = LayerStack([Layer.from_mapping("cli", {"lock": lock})]).resolve()
        assert args.lock is lock
        assert explain(args, "lock").layer == "cli"

    def test_enum_changed_behind_the_back(self) -> None:
        """Enum members compare by identity: another member is another value."""
        import enum

        class Color(enum.Enum):
            red = 1
            blue = 2

        args = LayerStack([Layer.from_mapping("cli", {"color": Color.red})]).resolve()
        assert explain(args, "color").layer == "cli"
        vars(args)["color"] = Color.blue
        assert explain(args, "color").layer == "runtime"


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("broken")


class TestValuesThatCrashedPrinting:
    """Values whose repr fails or is huge are explained and printed, never raising."""

    def test_a_huge_int(self) -> None:
        """An int of 6,021 digits (Python refuses to print it) shows shortened everywhere."""
        huge = 1 << 20000
        args = LayerStack(
            [Layer.from_mapping("default", {"seed": 1}), Layer.from_mapping("cli", {"seed": huge})]
        ).resolve()
        setting = explain(args, "seed")
        assert setting.value == huge
        assert str(setting) == (
            "seed = <int of 6,021 digits: 3980...9376>  from cli; shadows 1 from default"
        )
        assert "value=<int of 6,021 digits: 3980...9376>" in repr(setting)
        assert "<int of 6,021 digits" in str(explain_all(args))

    def test_a_cycle_in_a_layer(self) -> None:
        """A list that holds itself, from a layer, is explained and printed."""
        loop: list[object] = [1]
        loop.append(loop)
        args = LayerStack([Layer.from_mapping("cli", {"loop": loop})]).resolve()
        assert str(explain(args, "loop")) == "loop = [1, [...]]  from cli"

    def test_a_raising_repr(self) -> None:
        """A value whose __repr__ raises shows as <unprintable ...>, in the history too."""
        args = LayerStack([Layer.from_mapping("cli", {"obj": Unprintable()})]).resolve()
        args.obj = 1
        text = str(explain(args, "obj"))
        assert text.endswith("shadows <unprintable Unprintable: RuntimeError> from cli")
        assert "<unprintable Unprintable: RuntimeError>" in repr(explain(args, "obj"))

    def test_a_long_value_is_shortened(self) -> None:
        """A long list is cut to TEXT_LIMIT characters in str(), not in .value."""
        from layerconf.core.values import TEXT_LIMIT

        args = LayerStack([Layer.from_mapping("cli", {"ranks": list(range(100_000))})]).resolve()
        setting = explain(args, "ranks")
        assert len(str(setting)) < TEXT_LIMIT + 40
        assert len(setting.value) == 100_000


class TestSecrets:
    """A credential never shows in explain's text or dict, in values or in argv tokens."""

    def test_value_and_token(self) -> None:
        """Both spellings of a secret flag, and the values, are redacted; .value stays real."""
        from layerconf import load_profile, parse_args

        argv = ["--rollout-batch-size", "1", "--wandb-key=sk-SECRET99", "--wandb-key", "sk-OTHER77"]
        setting = explain(parse_args(load_profile(), argv), "wandb_key")
        shown = str(setting) + repr(setting.to_dict())
        assert "SECRET99" not in shown
        assert "OTHER77" not in shown
        assert "'--wandb-key=<redacted>'" in shown
        assert setting.value == "sk-OTHER77"

    def test_a_secret_given_twice_is_hidden_everywhere(self) -> None:
        """The first of two values of a secret flag, shadowed by the second, is still a
        secret: quoted in another key's value, it is hidden there too, and in a rule's
        problem."""
        from layerconf import ConfigError, Problem, load_profile, parse_args

        argv = [
            *("--rollout-batch-size", "1", "--wandb-key", "sk-FIRST-31415"),
            *("--wandb-key", "sk-SECOND-2718", "--wandb-group", "g-sk-FIRST-31415"),
        ]
        args = parse_args(load_profile(), argv)
        shown = str(explain(args, "wandb_group")) + repr(explain_all(args))
        assert "FIRST" not in shown
        assert "'g-<redacted>'" in shown

        @rule("resolved")
        def quoting(context: Any) -> Any:
            yield Problem(f"the group is {context.values['wandb_group']}")

        stack = LayerStack(
            [
                Layer("cli", "argv", {"wandb_key": "sk-FIRST-31415"}),
                Layer(
                    "env", "env", {"wandb_key": "sk-SECOND-2718", "wandb_group": "g-sk-FIRST-31415"}
                ),
            ],
            [quoting],
        )
        with pytest.raises(ConfigError) as caught:
            stack.resolve()
        assert "FIRST" not in str(caught.value)


HF_TOKEN = "hf_PlantedTokenValue42"
ESCAPED_TOKEN = "hf_EscapedTokenValue7"  # written in the role file as hf_Escap\u0065d...
WANDB_KEY = "wk-planted-on-argv-31"
ROLE_KEY = "wk-planted-in-role-file"
RUNTIME_KEY = "wk-written-at-runtime"
PLANTED = (HF_TOKEN, ESCAPED_TOKEN, WANDB_KEY, ROLE_KEY, RUNTIME_KEY)

#: Every way explain's answers are shown: one line a output.
OUTPUTS: list[tuple[str, Callable[[argparse.Namespace, str], str]]] = [
    ("str(explain)", lambda args, key: str(explain(args, key))),
    ("repr(explain)", lambda args, key: repr(explain(args, key))),
    ("explain.to_dict", lambda args, key: repr(explain(args, key).to_dict())),
    ("print(explain_all)", lambda args, key: str(explain_all(args))),
    ("str(explain_all[key])", lambda args, key: str(explain_all(args)[key])),
    (
        "explain_all to_dict",
        lambda args, key: repr([s.to_dict() for s in explain_all(args).values()]),
    ),
    ("CLI JSON of explain", lambda args, key: repr(render.setting_json(explain(args, key)))),
]
#: Where a secret is planted: the keys whose answers must not show one.
KEYS = ["wandb_key", "train_env_vars", "lr"]


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> argparse.Namespace:
    """The critic of a job with secrets on the command line, in its role file (also inside the
    raw JSON a value is converted from, escaped or not) and written at run time."""
    from layerconf import load_profile, resolve_roles

    directory = tmp_path_factory.mktemp("planted")
    escaped = ESCAPED_TOKEN.replace("e", "\\\\u0065", 1)
    (directory / "roles.yaml").write_text(
        "megatron:\n"
        "  - role: critic\n"
        "    overrides:\n"
        f"""      train_env_vars: '{{"HF_TOKEN": "{HF_TOKEN}", "OMP_NUM_THREADS": "4"}}'\n"""
        f"      wandb_key: {ROLE_KEY}\n"
        "  - role: actor\n"
        "    overrides:\n"
        f"""      train_env_vars: "{{\\"HF_TOKEN\\": \\"{escaped}\\"}}"\n"""
    )
    argv = [
        "--rollout-batch-size", "8", "--use-critic", "--wandb-key", WANDB_KEY,
        "--megatron-config-path", str(directory / "roles.yaml"),
    ]  # fmt: skip
    roles = resolve_roles(load_profile(), argv, warn=False)
    assert roles["actor"].train_env_vars == {"HF_TOKEN": ESCAPED_TOKEN}
    args = roles["critic"]
    args.wandb_key = RUNTIME_KEY
    args.wandb_key = ROLE_KEY
    args.train_env_vars = {"HF_TOKEN": RUNTIME_KEY}
    args.train_env_vars = roles["actor"].train_env_vars
    args.lr = {"nested": {"api_key": RUNTIME_KEY}}
    assert explain(args, "train_env_vars").history  # the converted text is in the history
    return args


class TestNoSecretLeaves:
    """No planted secret shows in any output of explain or explain_all (issue 12, part 4)."""

    @pytest.mark.parametrize("key", KEYS)
    @pytest.mark.parametrize(("output", "show"), OUTPUTS, ids=[name for name, _ in OUTPUTS])
    def test_nowhere(
        self,
        planted: argparse.Namespace,
        key: str,
        output: str,
        show: Callable[[argparse.Namespace, str], str],
    ) -> None:
        """Values, history, converted raw text and runtime writes: all redacted."""
        text = show(planted, key)
        assert [secret for secret in PLANTED if secret in text] == [], output
        assert "u0065" not in text or "EscapedToken" not in text

    def test_a_secret_nested_in_another_value_is_scrubbed_from_every_key(self) -> None:
        """A secret under a secret key inside a mapping (``--kw '{"api_key": S}'``) is
        scrubbed from another key's value that equals or quotes it, as a top-level secret is
        (a positional's S), at resolution and when written at run time."""
        import json

        from layerconf import parse_known_args

        parser = argparse.ArgumentParser()
        parser.add_argument("--kw", type=json.loads, default="{}")
        parser.add_argument("files", nargs="*")
        secret = "SEKRIT-1234567"
        args, _ = parse_known_args(parser, ["--kw", json.dumps({"api_key": secret}), secret])
        assert secret not in str(explain(args, "files"))
        args.later = {"hf_token": "HFSECRET-99"}
        args.note = "see HFSECRET-99"
        assert "HFSECRET" not in str(explain(args, "note"))
        assert explain(args, "files").value == [secret]

    def test_values_stay_real(self, planted: argparse.Namespace) -> None:
        """Only what is shown is redacted: .value is the real value."""
        assert explain(planted, "wandb_key").value == ROLE_KEY
        assert "<redacted>" in str(explain(planted, "wandb_key"))

    def test_other_text_is_kept(self, planted: argparse.Namespace) -> None:
        """A converted text whose secret is found is scrubbed, the rest of it shown."""
        history = explain(planted, "train_env_vars").redacted().history
        shown = [h.value for h in history if h.reason is Reason.CONVERTED]
        assert """{"HF_TOKEN": "<redacted>", "OMP_NUM_THREADS": "4"}""" in shown


class TestKeysThatCrashedMessages:
    """A key that cannot be printed, or a very long one, still gets its error."""

    def test_a_huge_int_key(self) -> None:
        """A TypeError naming the key shortened, not a ValueError from repr()."""
        with pytest.raises(TypeError, match=r"got <int of 6,021 digits"):
            explain(issue_example(), 1 << 20000)  # type: ignore[arg-type]

    def test_a_long_key(self) -> None:
        """A megabyte key is quoted shortened."""
        with pytest.raises(UnknownKeyError) as caught:
            explain(issue_example(), "x" * 1_000_000)
        assert len(str(caught.value)) < 400


def test_explain_keeps_no_resolution_alive() -> None:
    """What explain works out once per resolution (the secret keys) stays with the
    resolution: a trainer that resolves and explains again and again keeps none of the
    earlier ones in memory."""
    import gc
    import weakref

    from layerconf import parse_args
    from layerconf.core.namespace import provenance_of

    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--wandb-key", default="abcdefgh")
    args = parse_args(parser, ["--lr", "0.5"])
    assert explain(args, "lr").value == 0.5
    assert "abcdefgh" not in str(explain(args, "wandb_key"))
    gone = weakref.ref(provenance_of(args))
    del args
    gc.collect()
    assert gone() is None


def test_values_at_gives_the_values_of_keys_in_order_for_none_one_and_many_keys() -> None:
    from layerconf.core.explain import values_at

    mapping = {"a": 1, "b": (2,), "c": None}
    assert values_at(mapping, []) == []
    assert values_at(mapping, ["b"]) == [(2,)]  # one key: a list of its value, not the value
    assert values_at(mapping, ["c", "a", "b"]) == [None, 1, (2,)]
    with pytest.raises(KeyError):
        values_at(mapping, ["a", "missing"])


def anatomy(found: Any) -> Any:
    """Everything a setting says, each value down to its type (``1``, ``1.0`` and ``True``
    differ; floats by their text, so that a NaN equals a NaN)."""
    if type(found) is Setting:
        history = [anatomy(entry) for entry in found.history]
        fields = (found.key, found.origin, found.reason, found.by, found.role, found.scrub)
        return (*fields, anatomy(found.value), history)
    if type(found) in (list, tuple):
        return type(found), [anatomy(item) for item in found]
    if type(found) is dict:
        return dict, [(key, anatomy(item)) for key, item in found.items()]
    return type(found), repr(found)


def containers_of(found: Any) -> list[Any]:
    """The dicts and lists in `found` (a setting: its values and its history's)."""
    if type(found) is Setting:
        inside = [found.value, *(entry for entry in found.history)]
        return [container for item in inside for container in containers_of(item)]
    if type(found) is dict:
        return [found, *(c for item in found.values() for c in containers_of(item))]
    if type(found) is list:
        return [found, *(c for item in found for c in containers_of(item))]
    return []


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(width=32),
    st.text("ab", max_size=12),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["a", "api_key"]), st.integers(0, 3), max_size=2),
)
_RULE_ORIGINS = st.builds(
    Origin,
    st.just("rule:r"),
    st.just("rule"),
    rule=st.sampled_from([None, "r", "coerce"]),
)
_KEYS = st.sampled_from(["lr", "opt", "seed", "wandb_key", "extra"])


@st.composite
def namespaces(draw: st.DrawFn) -> Namespace:
    """A resolved namespace of random layers (values of odd types too) and policies, with
    rule events at random paths and places among the layers, then attributes assigned
    (some to a secret key, some to the value they held), deleted, or set behind its back."""
    layers = draw(layer_lists(min_size=0, odd=True))
    if draw(st.booleans()):  # a layer of values of every atomic type, secrets among them
        layers.append(Layer.from_mapping("more", draw(st.dictionaries(_KEYS, _VALUES))))
    policy = draw(policies)
    stack = LayerStack(layers, policies=policy)
    values = merge_layers(stack.layers, stack.policies)
    paths = sorted({*leaf_paths(values), *((key,) for key in values), (draw(_KEYS),)})
    events: dict[tuple[str, ...], list[Event]] = {}
    for _ in range(draw(st.integers(0, 4))):
        event = Event(
            draw(st.sampled_from(["set", "converted", "ignored"])),
            draw(st.integers(0, len(layers) + 2)),
            draw(_VALUES),
            draw(_RULE_ORIGINS),
            draw(st.sampled_from(["r", "coerce"])),
        )
        events.setdefault(draw(st.sampled_from(paths)), []).append(event)
    kept = {path: tuple(found) for path, found in events.items()}
    provenance = Provenance("critic", tuple(stack.layers), stack.policies, kept)
    args = Namespace._from_values(values, provenance)
    for _ in range(draw(st.integers(0, 4))):
        key = draw(_KEYS)
        how = draw(st.sampled_from(["set", "again", "delete", "behind"]))
        if how == "set" or key not in vars(args):
            setattr(args, key, draw(_VALUES))
        elif how == "again":
            setattr(args, key, getattr(args, key))
        elif how == "delete":
            delattr(args, key)
        else:
            vars(args)[key] = draw(_VALUES)
    return args


class TestTheFasterWays:
    """What explain makes faster is what it made before: records set slot by slot are the
    records attrs makes, and a key answered without `trace` gets the answer `trace` gives."""

    def test_a_setting_made_slot_by_slot_is_the_one_attrs_makes(self) -> None:
        fields = attrs.fields(Setting)
        assert tuple(field.name for field in fields) == _slots.SETTING_FIELDS
        assert all(
            field.validator is None and field.converter is None and field.on_setattr is None
            for field in fields
        )
        assert not hasattr(Setting, "__attrs_pre_init__")
        assert not hasattr(Setting, "__attrs_post_init__")
        origin = Origin("cli", "argv", argv_index=3, token="--lr")
        value, history, scrub = (1e-6,), (Setting("lr", 1, origin),), ("s3cret-value",)
        made = _slots.new_setting("lr", value, origin, history, "critic", scrub)
        expected = Setting("lr", value, origin, history, role="critic", scrub=scrub)
        entries = _slots.new_history("lr", [(value, origin, Reason.FORCED, "rule-a")])
        expected_entry = Setting("lr", value, origin, reason=Reason.FORCED, by="rule-a")
        for fast, slow in ((made, expected), (entries[0], expected_entry)):
            assert type(fast) is Setting
            assert all(getattr(fast, field.name) is getattr(slow, field.name) for field in fields)
            assert (fast, hash(fast), repr(fast)) == (slow, hash(slow), repr(slow))
            with pytest.raises(attrs.exceptions.FrozenInstanceError):
                fast.value = 2  # type: ignore[misc]
        assert type(entries) is tuple
        assert len(entries) == 1

    @given(namespaces())
    def test_explain_without_trace_says_what_trace_says(self, args: Namespace) -> None:
        """On random stacks, rule events (in any order) and writes since resolution, every
        key and leaf is explained alike with and without `atomic_contributions`, down to
        the type of each value, and shares no container with the layers."""
        keys = sorted(set(vars(args)) | {join_path(path) for path in leaf_paths(vars(args))})
        fast = [anatomy(explain(args, key)) for key in keys]
        every = {key: anatomy(found) for key, found in explain_all(args).items()}
        with mock.patch.object(explain_module, "atomic_contributions", return_value=None):
            assert [anatomy(explain(args, key)) for key in keys] == fast
            assert {key: anatomy(found) for key, found in explain_all(args).items()} == every
        provenance = explain_module._provenance(args)
        inputs = {
            id(container)
            for layer in provenance.layers
            for container in containers_of(layer.values)
        }
        for key in keys:
            assert not {id(container) for container in containers_of(explain(args, key))} & inputs
