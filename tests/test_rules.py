"""Rules: registration checks, the three stages, and what each decision records."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs
import pytest

from layerconf import (
    ConfigError,
    Convert,
    Decision,
    Drop,
    Layer,
    LayerconfWarning,
    LayerStack,
    Origin,
    Problem,
    Reason,
    RuleContext,
    RuleError,
    RuleSet,
    SetValue,
    explain,
    notices,
    resolve_stacks,
    rule,
)


def role_layer(values: dict[str, Any]) -> Layer:
    origins = {
        (key,): Origin("role-config", "file", source="r.yaml", line=line, column=5)
        for line, key in enumerate(values, start=3)
    }
    return Layer(
        "role-config", "file", values, Origin("role-config", "file", source="r.yaml"), origins
    )


def stack(rules: Iterable[Any], role_values: dict[str, Any] | None = None) -> LayerStack:
    return LayerStack(
        [
            Layer.from_mapping("default", {"lr": 1e-6, "num_nodes": 1, "kl_coef": 0.1}),
            Layer.from_mapping("cli", {"lr": 2e-6}),
            role_layer(role_values or {}),
        ],
        rules=rules,
    )


@rule("layers")
def drop_num_nodes(context: RuleContext) -> Iterable[Decision]:
    layer = context.layer("role-config")
    if layer is not None and "num_nodes" in layer.values:
        yield Drop("role-config", "num_nodes")
        yield Problem.at(
            layer.origin_at(("num_nodes",)),
            "'num_nodes' is ignored in a role file",
            key="num_nodes",
            hint="resources come from the command line",
            severity="warning",
        )


@rule("layers")
def floats(context: RuleContext) -> Iterable[Decision]:
    layer = context.layer("role-config")
    for key, value in (layer.values if layer else {}).items():
        if isinstance(value, str):
            try:
                yield Convert("role-config", key, float(value))
            except ValueError:
                yield Problem.at(
                    layer.origin_at((key,)), f"{key!r} must be a float (got {value!r})", key=key
                )  # type: ignore[union-attr]


@rule("resolved", name="critic-defaults")
def no_kl(context: RuleContext) -> Iterable[Decision]:
    yield SetValue("kl_coef", 0.0, note="the critic runs without KL")


class TestRegistration:
    """Rules are checked when they are registered, with a message saying what is wrong."""

    def test_function_rule(self) -> None:
        """@rule names a function rule after the function."""
        assert (drop_num_nodes.name, drop_num_nodes.stage) == ("drop-num-nodes", "layers")

    def test_missing_name(self) -> None:
        """An object without a name is refused."""

        class Nameless:
            stage = "layers"

            def __call__(self, context: RuleContext) -> None:
                return None

        with pytest.raises(RuleError, match="needs a 'name' attribute"):
            RuleSet([Nameless()])  # type: ignore[list-item]

    def test_bad_stage(self) -> None:
        """A stage outside the three is refused, listing them."""
        with pytest.raises(RuleError, match="'layers', 'resolved', 'roles'"):
            rule("merge")(lambda context: None)  # type: ignore[arg-type]

    def test_rule_without_its_stage(self) -> None:
        """@rule above a function, without the stage, made it a decorator, refused only when
        a RuleSet took it ('<function rule.<locals>.wrap ...> is not a rule')."""

        def frozen(context: RuleContext) -> None:
            return None

        with pytest.raises(RuleError) as caught:
            rule(frozen)  # type: ignore[arg-type]
        assert str(caught.value) == (
            "rule() takes the stage first: write @rule('resolved') above def frozen (or "
            "'layers', 'roles')"
        )

    def test_not_callable(self) -> None:
        """A rule must be callable."""

        @attrs.frozen
        class Inert:
            name: str = "inert"
            stage: str = "layers"

        with pytest.raises(RuleError, match="not callable"):
            LayerStack([], rules=[Inert()])  # type: ignore[list-item]

    def test_duplicate_names(self) -> None:
        """Two rules with one name are refused."""
        with pytest.raises(RuleError, match="two rules are named 'floats'"):
            RuleSet([floats, floats])


class TestRuleSet:
    """A RuleSet is ordered and immutable; add, replace and without return new sets."""

    def test_order_and_lookup(self) -> None:
        """Rules keep the order given and are found by name."""
        rules = RuleSet([floats, no_kl])
        assert rules.names == ("floats", "critic-defaults")
        assert rules["floats"] is floats
        assert "floats" in rules

    def test_add_before_and_after(self) -> None:
        """add() places a rule at the end, or before / after a named one."""
        rules = RuleSet([floats])
        assert rules.add(no_kl).names == ("floats", "critic-defaults")
        assert rules.add(no_kl, before="floats").names == ("critic-defaults", "floats")
        assert rules.add(no_kl, after="floats").names == ("floats", "critic-defaults")

    def test_replace_and_without(self) -> None:
        """replace() keeps the place; without() removes."""
        rules = RuleSet([floats, no_kl])
        other = rule("layers", name="other")(lambda context: None)
        assert rules.replace("floats", other).names == ("other", "critic-defaults")
        assert rules.without("floats").names == ("critic-defaults",)
        assert rules.names == ("floats", "critic-defaults")

    def test_unknown_name(self) -> None:
        """A missing rule name lists the rules there are."""
        with pytest.raises(KeyError, match="rules: 'floats'"):
            RuleSet([floats]).without("nope")


class TestDecisions:
    """Each decision changes the result and is recorded where explain can show it."""

    def test_drop_records_an_ignored_value(self) -> None:
        """A dropped key keeps the earlier layer's value; history says it was ignored."""
        with pytest.warns(LayerconfWarning, match="r.yaml:3:5: warning: 'num_nodes' is ignored"):
            args = stack([drop_num_nodes], {"num_nodes": 4}).resolve()
        setting = explain(args, "num_nodes")
        assert (setting.value, setting.layer) == (1, "default")
        ignored = setting.history[0]
        assert (ignored.value, ignored.reason, ignored.by, ignored.line) == (
            4,
            Reason.IGNORED,
            "drop-num-nodes",
            3,
        )
        assert "4 from role-config r.yaml:3:5 (ignored by rule drop-num-nodes)" in str(setting)

    def test_warnings_are_kept_on_the_result(self) -> None:
        """notices() returns the warnings of the resolution."""
        with pytest.warns(LayerconfWarning):
            args = stack([drop_num_nodes], {"num_nodes": 4}).resolve()
        (notice,) = notices(args)
        assert (notice.severity, notice.key, notice.rule) == (
            "warning",
            "num_nodes",
            "drop-num-nodes",
        )

    def test_warnings_can_become_errors(self) -> None:
        """A caller can turn layerconf warnings into errors."""
        with warnings.catch_warnings():
            warnings.simplefilter("error", LayerconfWarning)
            with pytest.raises(LayerconfWarning):
                stack([drop_num_nodes], {"num_nodes": 4}).resolve()

    def test_convert_keeps_the_origin(self) -> None:
        """A converted value keeps its file position; the raw value is in the history."""
        args = stack([floats], {"lr": "1e-5"}).resolve()
        setting = explain(args, "lr")
        assert (setting.value, setting.layer, setting.line) == (1e-5, "role-config", 3)
        raw = setting.history[0]
        assert (raw.value, raw.reason, raw.by) == ("1e-5", Reason.CONVERTED, "floats")
        assert [h.layer for h in setting.history] == ["role-config", "cli", "default"]

    def test_set_value_has_a_rule_origin(self) -> None:
        """A value a rule set has the layer rule:<name>, even where a layer said otherwise."""
        args = stack([no_kl], {"kl_coef": 0.5}).resolve()
        setting = explain(args, "kl_coef")
        assert (setting.value, setting.layer, setting.rule) == (
            0.0,
            "rule:critic-defaults",
            "critic-defaults",
        )
        assert setting.origin.label == "the critic runs without KL"
        assert [(h.value, h.reason, h.by) for h in setting.history] == [
            (0.5, Reason.FORCED, "critic-defaults"),
            (0.1, Reason.OVERRIDDEN, None),
        ]

    def test_set_value_of_a_new_key(self) -> None:
        """A rule may set a key no layer has."""
        made = rule("resolved", name="maker")(lambda context: [SetValue("use_opd", False)])
        args = stack([made]).resolve()
        assert explain(args, "use_opd").layer == "rule:maker"

    def test_every_problem_is_reported(self) -> None:
        """One ConfigError holds every problem of the resolution, warnings included."""
        with pytest.raises(ConfigError) as caught:
            stack(
                [drop_num_nodes, floats], {"num_nodes": 4, "lr": "fast", "seed": "slow"}
            ).resolve()
        assert [str(p) for p in caught.value.problems] == [
            "r.yaml:3:5: warning: 'num_nodes' is ignored in a role file"
            " (resources come from the command line)",
            "r.yaml:4:5: error: 'lr' must be a float (got 'fast')",
            "r.yaml:5:5: error: 'seed' must be a float (got 'slow')",
        ]
        assert len(caught.value.errors) == 2
        assert isinstance(caught.value, ValueError)

    def test_rules_see_the_result_so_far(self) -> None:
        """A resolved-stage rule sees values set by the rules before it, read-only."""
        seen: list[Any] = []

        @rule("resolved")
        def look(context: RuleContext) -> None:
            seen.append(context.values["kl_coef"])
            with pytest.raises(TypeError):
                context.values["kl_coef"] = 1  # type: ignore[index]
            seen.append(context.explain("kl_coef").layer)

        stack([no_kl, look]).resolve()
        assert seen == [0.0, "rule:critic-defaults"]


class TestBadDecisions:
    """A rule that returns something it may not is a RuleError naming it."""

    @pytest.mark.parametrize(
        ("stage", "decision", "message"),
        [
            (
                "layers",
                SetValue("lr", 1),
                "in the 'layers' stage, which takes Problem, Drop, Convert",
            ),
            (
                "resolved",
                Drop("cli", "lr"),
                "in the 'resolved' stage, which takes Problem, SetValue",
            ),
            (
                "layers",
                Drop("nope", "lr"),
                "names layer 'nope'; the layers are 'default', 'cli', 'role-config'",
            ),
            ("layers", Drop("cli", "seed"), "layer 'cli' holds no 'seed'"),
            ("layers", "text", "returned 'text'"),
        ],
    )
    def test_refused(self, stage: Any, decision: Any, message: str) -> None:
        """The message says which rule, what it returned and what is allowed."""
        bad = rule(stage, name="bad")(lambda context: [decision])
        with pytest.raises(RuleError, match=message.replace("(", r"\(").replace(")", r"\)")):
            stack([bad]).resolve()

    @pytest.mark.parametrize(
        "make",
        [
            lambda key: Drop("cli", key),
            lambda key: Convert("cli", key, 1),
            lambda key: SetValue(key, 1),
        ],
    )
    @pytest.mark.parametrize("key", [5, None, (), ("opt", 2)])
    def test_a_key_is_text(self, make: Any, key: object) -> None:
        """A key that is no text failed inside the resolution (AttributeError: 'int' object
        has no attribute 'split'), which the command called a bug in layerconf."""
        with pytest.raises(TypeError) as caught:
            make(key)
        assert "takes key as a dotted key such as 'opt.beta2', or a tuple of its parts" in str(
            caught.value
        )

    def test_a_note_is_text(self) -> None:
        """A note is shown with the value: anything but a string is refused where it is made."""
        with pytest.raises(TypeError, match="'note' must be <class 'str'>"):
            SetValue("lr", 1, note=["not", "text"])  # type: ignore[arg-type]

    @pytest.mark.parametrize("stage", ["layers", "resolved"])
    def test_a_rule_that_raises(self, stage: Any) -> None:
        """A rule's own exception is a RuleError naming the rule and where it raised, whether
        it raises when called or while its decisions are read; the exception is its cause."""

        def called(context: RuleContext) -> None:
            raise ZeroDivisionError("division by zero")

        def generator(context: RuleContext) -> Iterable[Decision]:
            yield Problem("fine", severity="warning")
            raise ZeroDivisionError("division by zero")

        for function in (called, generator):
            with pytest.raises(RuleError) as caught:
                stack([rule(stage, name="boom")(function)]).resolve()
            assert str(caught.value).startswith(
                f"rule 'boom' raised ZeroDivisionError: division by zero at {__file__}:"
            )
            assert isinstance(caught.value.__cause__, ZeroDivisionError)

    @pytest.mark.parametrize("returned", [5, "lr", b"lr"])
    def test_not_iterable(self, returned: object) -> None:
        """A rule must return decisions or None; a text is not read letter by letter (it was
        said to have returned 'l')."""
        bad = rule("layers", name="bad")(lambda context: returned)  # type: ignore[arg-type,return-value]
        with pytest.raises(RuleError) as caught:
            stack([bad]).resolve()
        assert str(caught.value) == (
            f"rule 'bad' returned {returned!r}; return an iterable of decisions or None"
        )


class TestSetValuePaths:
    """A SetValue into a nested key makes the mappings it needs, and never replaces a value
    that is not one."""

    @staticmethod
    def resolved(key: str | tuple[str, ...]) -> Any:
        setter = rule("resolved", name="setter")(lambda context: [SetValue(key, 1)])
        layers = [Layer.from_mapping("default", {"lr": 0.5, "opt": {"b": 1}, "none": None})]
        return LayerStack(layers, rules=[setter]).resolve()

    @pytest.mark.parametrize("key", ["opt.c", "new.c", "none.c"])
    def test_into_a_mapping_or_where_there_is_none(self, key: str) -> None:
        args = self.resolved(key)
        assert explain(args, key).layer == "rule:setter"

    @pytest.mark.parametrize("key", ["lr.x", ("lr", "x")])
    def test_through_a_value_that_is_no_mapping(self, key: str | tuple[str, ...]) -> None:
        """'lr' (0.5) was replaced by {'x': 1}, which explain said came from runtime."""
        with pytest.raises(RuleError) as caught:
            self.resolved(key)
        assert str(caught.value) == (
            "rule 'setter' set 'lr.x', but 'lr' holds the float type, not a mapping to set 'x' in"
        )


class TestExplainInRules:
    """context.explain answers what its stage can know, and says so otherwise."""

    def test_not_before_the_merge(self) -> None:
        """A layers-stage rule has nothing to explain yet."""
        asks = rule("layers", name="asks")(lambda context: [context.explain("lr")])
        with pytest.raises(RuleError, match="not available in the 'layers' stage"):
            stack([asks]).resolve()

    def test_only_its_own_role_when_resolved(self) -> None:
        """A resolved-stage rule knows its own role only."""
        asks = rule("resolved", name="asks")(lambda context: [context.explain("lr", "actor")])
        with pytest.raises(RuleError, match="asks about another role"):
            LayerStack([Layer.from_mapping("default", {"lr": 1})], rules=[asks]).resolve(
                role="critic"
            )

    def test_a_role_is_named_across_roles(self) -> None:
        """A roles-stage rule says which role it asks about."""
        asks = rule("roles", name="asks")(lambda context: [context.explain("lr")])
        stacks = {"a": LayerStack([Layer.from_mapping("default", {"lr": 1})], rules=[asks])}
        with pytest.raises(RuleError, match=r"needs a role: context.explain\(key, role\)"):
            resolve_stacks(stacks)


class TestRolesStage:
    """Rules of the roles stage compare the resolved roles."""

    @staticmethod
    def stacks(critic_tp: int) -> dict[str, LayerStack]:
        @rule("roles", name="same-tp")
        def same_tp(context: RuleContext) -> Iterable[Decision]:
            values = {role: args.tp for role, args in context.roles.items()}
            if len(set(values.values())) > 1:
                origin = context.explain("tp", "critic").origin
                yield Problem.at(origin, f"tp differs between roles: {values}", key="tp")

        base = [Layer.from_mapping("default", {"tp": 1}), Layer.from_mapping("cli", {"tp": 2})]
        return {
            "actor": LayerStack(base, rules=[same_tp]),
            "critic": LayerStack([*base, role_layer({"tp": critic_tp})], rules=[same_tp]),
        }

    def test_agreeing_roles(self) -> None:
        """Roles that agree resolve, each knowing its role."""
        roles = resolve_stacks(self.stacks(2))
        assert explain(roles["critic"], "tp").role == "critic"
        assert explain(roles["actor"], "tp").layer == "cli"

    def test_mismatch_is_one_error(self) -> None:
        """A cross-role rule runs once, not once per role, and points at the file."""
        with pytest.raises(ConfigError) as caught:
            resolve_stacks(self.stacks(4))
        (problem,) = caught.value.problems
        assert (problem.source, problem.line, problem.rule) == ("r.yaml", 3, "same-tp")

    def test_set_value_needs_a_role(self) -> None:
        """In the roles stage a SetValue must name its role."""
        bad = rule("roles", name="bad")(lambda context: [SetValue("tp", 1)])
        with pytest.raises(RuleError, match="name the role"):
            resolve_stacks({"a": LayerStack([], rules=[bad])})

    def test_set_value_for_another_role_when_resolved(self) -> None:
        """A resolved-stage rule sets its own role's values: one naming another role was
        applied to the role being resolved, silently."""
        other = rule("resolved", name="other")(lambda context: [SetValue("tp", 8, role="b")])
        own = rule("resolved", name="own")(lambda context: [SetValue("tp", 8, role="a")])
        base = [Layer.from_mapping("default", {"tp": 1})]
        with pytest.raises(RuleError, match=r"sets only role 'a'.s values; set role 'b'.s in a"):
            resolve_stacks({"a": LayerStack(base, rules=[other])})
        assert resolve_stacks({"a": LayerStack(base, rules=[own])})["a"].tp == 8

    def test_set_value_for_a_role(self) -> None:
        """A roles-stage rule may set one role's value."""
        setter = rule("roles", name="setter")(lambda context: [SetValue("x", 1, role="b")])
        roles = resolve_stacks(
            {"a": LayerStack([], rules=[setter]), "b": LayerStack([], rules=[setter])}
        )
        assert vars(roles["a"]) == {}
        assert explain(roles["b"], "x").layer == "rule:setter"


class TestSecretsInProblems:
    """A rule's (or a source's) problem that quotes a secret the role holds keeps it out of
    the error, the warning and the notices, as explain and the command do."""

    SECRET = "hf_SEKRIT1234567"

    def stacks(self, severity: Any) -> dict[str, LayerStack]:
        @rule("resolved", name="quotes")
        def quotes(context: RuleContext) -> Iterable[Decision]:
            token = context.values["hf_token"]
            yield Problem(
                f"token {token} looks wrong", key="lr", hint=f"not {token!r}", severity=severity
            )

        layers = [Layer.from_mapping("cli", {"hf_token": self.SECRET, "lr": 1})]
        return {"a": LayerStack(layers, rules=[quotes])}

    def test_an_error(self) -> None:
        with pytest.raises(ConfigError) as caught:
            resolve_stacks(self.stacks("error"))
        assert str(caught.value) == "error: token <redacted> looks wrong (not '<redacted>')"
        assert self.SECRET not in repr(caught.value.problems)

    def test_a_warning(self) -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            roles = resolve_stacks(self.stacks("warning"))
        assert [str(w.message) for w in caught] == [
            "warning: token <redacted> looks wrong (not '<redacted>')"
        ]
        assert self.SECRET not in repr(notices(roles["a"]))
        assert roles["a"].hf_token == self.SECRET  # redacted where shown, never in the values

    def test_a_problem_found_before(self) -> None:
        """A source's problem (read before the resolution) quoting a secret it read."""
        layers = [Layer.from_mapping("vault", {"hf_token": self.SECRET})]
        problem = Problem(f"{self.SECRET} expires soon", layer="vault", severity="warning")
        roles = resolve_stacks({"a": LayerStack(layers)}, problems=[problem], warn=False)
        assert [p.message for p in notices(roles["a"])] == ["<redacted> expires soon"]

    def test_only_the_users_problems_are_scrubbed(self) -> None:
        """layerconf's own rules and readers never quote a secret: their problems are not
        looked through (the scrub reads every layer's keys); a rule or a source of the user's
        is (a `FunctionRule` is its function's)."""
        import argparse
        import functools

        from layerconf import TypeCoercion
        from layerconf.core.rules import foreign
        from layerconf.sources.env import EnvSource

        @rule("resolved")
        def mine(context: RuleContext) -> None:
            return None

        class Mine:
            name, stage = "mine", "resolved"

        assert foreign(mine)
        assert foreign(Mine())
        assert foreign(functools.partial(mine))
        assert foreign(object())
        assert not foreign(TypeCoercion(argparse.ArgumentParser()))
        assert not foreign(EnvSource("X_"))

    def test_nested_and_dropped_secrets(self) -> None:
        """A secret under a secret key inside a mapping, and one a rule dropped, are scrubbed
        from a user rule's problem too."""

        @rule("layers", name="drops")
        def drops(context: RuleContext) -> Iterable[Decision]:
            yield Problem(f"dropping {context.layers[0].values['hf_token']}", severity="warning")
            yield Drop("cli", "hf_token")

        @rule("resolved", name="quotes-nested")
        def quotes(context: RuleContext) -> Iterable[Decision]:
            yield Problem(f"env holds {context.values['env']['HF_TOKEN']}", severity="warning")

        values = {"hf_token": "DROPPED-SECRET-9", "env": {"HF_TOKEN": "NESTED-SECRET-9"}}
        stack = LayerStack([Layer.from_mapping("cli", values)], rules=[drops, quotes])
        roles = resolve_stacks({"a": stack}, warn=False)
        shown = repr(notices(roles["a"]))
        assert "DROPPED-SECRET" not in shown
        assert "NESTED-SECRET" not in shown

    @pytest.mark.parametrize("password", ["pw1", "LONGER-PASSWORD-9"])
    def test_a_urls_password(self, password: str) -> None:
        """A URL's password a user rule quotes is hidden by its place, however short, when
        the role holds no secret by name; and so is it in a rule's exception."""
        url = f"https://me:{password}@host/ckpt"

        @rule("resolved", name="quotes-url")
        def quotes(context: RuleContext) -> Iterable[Decision]:
            yield Problem(f"cannot reach {context.values['load']}", severity="warning")

        @rule("resolved", name="raises")
        def raises(context: RuleContext) -> None:
            raise ValueError(f"no such host in {context.values['load']!r}")

        layers = [Layer.from_mapping("cli", {"load": url})]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            roles = resolve_stacks({"a": LayerStack(layers, rules=[quotes])})
        shown = [str(w.message) for w in caught] + [str(n) for n in notices(roles["a"])]
        assert shown == ["warning: cannot reach https://me:<redacted>@host/ckpt"] * 2
        with pytest.raises(RuleError) as error:
            resolve_stacks({"a": LayerStack(layers, rules=[raises])})
        assert password not in f"{error.value}{error.value!r}"
        assert "https://me:<redacted>@host/ckpt" in str(error.value)


class TestWhoseBug:
    """An exception in layerconf's own rule is its bug (the command's exit 70), not a
    RuleError blamed on the configuration; a rule of the user's is named."""

    @staticmethod
    def broken(self: Any, context: RuleContext) -> None:
        """A bug inside layerconf's code, as a built-in rule would meet it."""
        from layerconf.core.checks import check_type

        check_type("f", "x", 1, str, "str")  # (raises TypeError in layerconf's own frame)

    def test_own_rule(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from layerconf.rules.unexpanded import UnexpandedText

        monkeypatch.setattr(UnexpandedText, "__call__", self.broken)
        stack = LayerStack([Layer.from_mapping("cli", {"lr": 1})], rules=[UnexpandedText()])
        with pytest.raises(TypeError, match="f\\(\\) takes"):
            stack.resolve()

    def test_the_command(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from layerconf.cli import main
        from layerconf.rules.unexpanded import UnexpandedText

        monkeypatch.setattr(UnexpandedText, "__call__", self.broken)
        monkeypatch.delenv("LAYERCONF_TRACEBACK")
        monkeypatch.chdir(Path(__file__).parent.parent)
        argv = Path("examples/ppo_argv.txt").read_text().split()
        assert main(["show", "--", *argv]) == 70
        assert "layerconf: internal error: TypeError: f() takes" in capsys.readouterr().err


class TestSecretsInRuleErrors:
    """A `RuleError` for a rule of the user's quotes no secret of the values it saw: the
    exception's text (`int(token)` failing) or a decision's repr may hold one."""

    SECRET = "hf_RAISED-SECRET-31415"

    def test_a_rule_that_raises(self) -> None:
        @rule("resolved", name="boom")
        def boom(context: RuleContext) -> None:
            raise ValueError(f"token {context.values['hf_token']} looks wrong")

        stack = LayerStack([Layer.from_mapping("role", {"hf_token": self.SECRET})], [boom])
        with pytest.raises(RuleError) as caught:
            stack.resolve()
        assert self.SECRET not in str(caught.value)
        assert "rule 'boom' raised ValueError: token <redacted> looks wrong" in str(caught.value)
        assert isinstance(caught.value.__cause__, ValueError)  # (the user's own, as raised)

    def test_a_bad_decision_and_the_roles_stage(self) -> None:
        @rule("layers", name="bad")
        def bad(context: RuleContext) -> Iterable[Any]:
            yield {"token": context.layers[0].values["hf_token"]}

        @rule("roles", name="cross")
        def cross(context: RuleContext) -> None:
            raise ValueError(f"{vars(context.roles['a'])['hf_token']}")

        layers = [Layer.from_mapping("role", {"hf_token": self.SECRET})]
        for rules in ([bad], [cross]):
            with pytest.raises(RuleError) as caught:
                resolve_stacks({"a": LayerStack(layers, rules)})
            assert self.SECRET not in str(caught.value)
