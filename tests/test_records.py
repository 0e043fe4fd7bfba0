"""The records: origins, layers, problems and the errors that carry them."""

from __future__ import annotations

import enum
import pickle

import attrs
import pytest

from layerconf import ConfigError, Layer, LayerconfError, Origin, Problem, Reason, Setting


class TestOrigin:
    """An origin's short human form names the layer and the place inside it."""

    @pytest.mark.parametrize(
        ("origin", "where"),
        [
            (Origin("default", "default"), "default"),
            (
                Origin("role-config", "file", source="c.yaml", line=9, column=11),
                "role-config c.yaml:9:11",
            ),
            (Origin("role-config", "file", source="c.yaml", line=9), "role-config c.yaml:9"),
            (Origin("cli", "argv", argv_index=7, token="--lr"), "cli argv[7] '--lr'"),
            (
                Origin("cli", "argv", source="args.txt", line=3, argv_index=2, token="@args.txt"),
                "cli args.txt:3 argv[2] '@args.txt'",
            ),
            (Origin("rule:x", "rule", rule="x"), "rule:x"),
        ],
    )
    def test_where(self, origin: Origin, where: str) -> None:
        """Each kind of origin prints its place."""
        assert origin.where == where


class TestLayer:
    """A layer holds a private copy of its values and an origin for every leaf."""

    def test_from_mapping_kinds(self) -> None:
        """A source makes a file layer; otherwise a mapping layer; kind can be given."""
        assert Layer.from_mapping("a", {}).kind == "mapping"
        assert Layer.from_mapping("a", {}, source="x.yaml").kind == "file"
        assert Layer.from_mapping("a", {}, kind="default").origin == Origin("a", "default")

    def test_origin_at(self) -> None:
        """A leaf without its own origin has the layer's."""
        leaf = Origin("a", "file", source="x.yaml", line=2, column=3)
        layer = Layer.from_mapping("a", {"x": 1, "y": 2}, source="x.yaml", origins={("x",): leaf})
        assert layer.origin_at(("x",)) == leaf
        assert layer.origin_at(("y",)) == Origin("a", "file", source="x.yaml")

    def test_frozen(self) -> None:
        """Changing a layer means attrs.evolve."""
        layer = Layer.from_mapping("a", {"x": 1})
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            layer.name = "b"  # type: ignore[misc]
        assert attrs.evolve(layer, values={"x": 2}).values == {"x": 2}

    def test_nested_mappings_become_dicts(self) -> None:
        """Any nested Mapping is stored as a plain dict."""
        from types import MappingProxyType

        layer = Layer.from_mapping("a", MappingProxyType({"o": MappingProxyType({"b": 1})}))
        assert type(layer.values["o"]) is dict

    @pytest.mark.parametrize(
        "bad", [{1: 2}, {"": 1}, {("a",): 1}, {b"a": 1}, {**{f"k{i}": i for i in range(50)}, 3: 4}]
    )
    def test_top_level_keys_are_names(self, bad: dict[object, int]) -> None:
        """Top-level keys are non-empty strings (they become attributes), in a dict or any
        other mapping."""
        from types import MappingProxyType

        for mapping in (bad, MappingProxyType(bad)):
            with pytest.raises(TypeError, match="non-empty strings"):
                Layer.from_mapping("a", mapping)  # type: ignore[arg-type]

    def test_a_string_subclass_is_a_name(self) -> None:
        """A key of a str subclass (a StrEnum member) is a string like any other."""

        class Name(str):
            pass

        assert Layer.from_mapping("a", {Name("lr"): 1}).values == {"lr": 1}

    def test_with_values_keeps_every_other_field(self) -> None:
        """What a rule's drop or conversion builds is what attrs.evolve would."""
        layer = Layer(
            "role-config",
            "file",
            {"lr": "1e-5", "opt": {"b": 1}},
            Origin("role-config", "file", source="r.yaml", line=1),
            {("lr",): Origin("role-config", "file", source="r.yaml", line=3, column=5)},
            {("lr",): Origin("role-config", "file", source="r.yaml", line=3, column=1)},
        )
        changed = layer._with_values({"lr": 1e-5, "opt": {"b": 1}})
        assert changed == attrs.evolve(layer, values={"lr": 1e-5, "opt": {"b": 1}})
        assert changed.mutable_keys == frozenset({"opt"})

    @pytest.mark.parametrize(
        "where",
        [(), (0,), (9,), (0, 1), (4, 5, 6), (0, 9), tuple(range(10))],
    )
    def test_mutable_keys_are_found_wherever_they_are(self, where: tuple[int, ...]) -> None:
        """The scan for containers finds each one, first and last included, and copies it."""
        shared = [1, 2]
        values: dict[str, object] = {f"k{i}": shared if i in where else i for i in range(10)}
        values["e"] = enum.Enum("E", "A").A  # an enum member: not a container, shared
        layer = Layer("base", "mapping", values)
        assert layer.mutable_keys == frozenset(f"k{i}" for i in where)
        assert layer.values == values
        for index in where:
            assert layer.values[f"k{index}"] is not shared

    @pytest.mark.parametrize(
        "value",
        [[1, "a"], {"a": 1}, [[1]], [{"a": 1}], {"a": [1]}, {"a": {"b": 1}}, ([1],), []],
    )
    def test_containers_are_copied_all_the_way_down(self, value: object) -> None:
        """Whatever the shape of a container, the layer's copy is equal to it and shares no
        container with it at any depth."""
        layer = Layer("base", "mapping", {"k": value, "n": 1})
        assert layer.mutable_keys == frozenset({"k"})
        assert layer.values["k"] == value
        assert type(layer.values["k"]) is type(value)

        def containers(item: object) -> list[int]:
            if isinstance(item, (list, dict)):
                inner = item.values() if isinstance(item, dict) else item
                return [id(item), *(found for part in inner for found in containers(part))]
            if isinstance(item, tuple):
                return [found for part in item for found in containers(part)]
            return []

        assert not set(containers(layer.values["k"])) & set(containers(value))

    def test_values_must_be_a_mapping(self) -> None:
        """A list is not a layer."""
        with pytest.raises(TypeError, match="must be a mapping"):
            Layer.from_mapping("a", [("x", 1)])  # type: ignore[arg-type]


class TestLayerShownWithoutSecrets:
    """A layer's repr (and so a provenance's, which holds the layers) quotes no secret; the
    layer keeps the real values."""

    def test_repr(self) -> None:
        values = {
            "wandb_key": "SEKRIT-1234567",
            "lr": 1,
            "env": {"HF_TOKEN": "hf_NESTED99", "A": "4"},
            "group": "g-SEKRIT-1234567",
            "load": "https://me:URLPASS99@host/ckpt",
        }
        layer = Layer.from_mapping("cli", values)
        shown = repr(layer)
        assert (
            "values={'wandb_key': '<redacted>', 'lr': 1, 'env': {'HF_TOKEN': '<redacted>', "
            "'A': '4'}, 'group': 'g-<redacted>', 'load': 'https://me:<redacted>@host/ckpt'}"
        ) in shown
        assert layer.values == values

    def test_a_provenance(self) -> None:
        from layerconf import LayerStack, provenance_of

        args = LayerStack(
            [Layer.from_mapping("cli", {"hf_token": "hf_SEKRIT99", "lr": 1})]
        ).resolve()
        assert "hf_SEKRIT99" not in repr(provenance_of(args))

    def test_a_provenance_with_a_secret_of_another_layer(self) -> None:
        """A layer's value that quotes a secret another layer holds (a role file's run name
        holding the key given on the command line) is scrubbed in the provenance's repr, as in
        the namespace's."""
        from layerconf import LayerStack, provenance_of

        args = LayerStack(
            [
                Layer.from_mapping("default", {"wandb_key": None, "group": "g"}),
                Layer.from_mapping("role", {"group": "g-SEKRIT-1234567"}),
                Layer.from_mapping("cli", {"wandb_key": "SEKRIT-1234567"}),
            ]
        ).resolve()
        shown = repr(provenance_of(args))
        assert "SEKRIT-1234567" not in shown
        assert "values={'group': 'g-<redacted>'}" in shown


class TestProblems:
    """Problems print as compiler-style lines and travel inside ConfigError."""

    @pytest.mark.parametrize(
        ("problem", "text"),
        [
            (
                Problem("bad", source="c.yaml", line=9, column=11, hint="fix it"),
                "c.yaml:9:11: error: bad (fix it)",
            ),
            (Problem("bad", argv_index=4, severity="warning"), "argv[4]: warning: bad"),
            (Problem("bad", layer="cli"), "cli: error: bad"),
            (Problem("bad"), "error: bad"),
        ],
    )
    def test_str(self, problem: Problem, text: str) -> None:
        """FILE:LINE:COL: severity: message (hint)."""
        assert str(problem) == text

    def test_one_line_whatever_it_quotes(self) -> None:
        """A line break, an escape sequence or a C1 control from a quoted value is shown
        escaped: it cannot forge another problem's line or reach the terminal."""
        problem = Problem("a\nb.yaml:1:1: error: forged\x1b[2J", hint="c\x9b", source="f.yaml")
        assert str(problem) == ("f.yaml: error: a\\nb.yaml:1:1: error: forged\\x1b[2J (c\\x9b)")
        assert str(Problem("caf\u00e9 \u65e5\t")) == "error: caf\u00e9 \u65e5\\t"
        shown = str(Problem("a\u2028b\u202ec"))
        assert shown == "error: a\\u2028b\\u202ec"
        assert len(shown.splitlines()) == 1

    def test_formatted_writes_the_severity_as_given(self) -> None:
        """The command's painted severity goes in as it is; the rest is escaped as by str()."""
        problem = Problem("m\x1b[2J", hint="h\n", source="f\r.yaml", line=2, severity="info")
        painted = "\x1b[36mnote\x1b[0m"
        assert problem.formatted(painted) == f"f\\r.yaml:2: {painted}: m\\x1b[2J (h\\n)"
        assert problem.formatted(problem.severity) == str(problem)

    def test_at_takes_the_origin(self) -> None:
        """Problem.at copies the origin's place."""
        origin = Origin("role-config", "file", source="c.yaml", line=9, column=11)
        problem = Problem.at(origin, "bad", key="lr", hint="h")
        assert (problem.layer, problem.source, problem.line, problem.column, problem.key) == (
            "role-config",
            "c.yaml",
            9,
            11,
            "lr",
        )

    def test_bad_severity(self) -> None:
        """Severity is error, warning or info, said in one line (it was attrs' tuple of the
        message, the field's record and the options)."""
        with pytest.raises(ValueError, match="severity") as caught:
            Problem("x", severity="fatal")  # type: ignore[arg-type]
        assert str(caught.value) == (
            "a problem's severity is 'error', 'warning' or 'info' (got 'fatal')"
        )

    @pytest.mark.parametrize("field", ["message", "hint"])
    def test_texts_are_text(self, field: str) -> None:
        """A rule's Problem(5) failed when printed, inside layerconf ('int' object has no
        attribute 'isprintable'), which the command called a bug in layerconf."""
        with pytest.raises(TypeError) as caught:
            Problem(**{"message": "x", field: 5})  # type: ignore[arg-type]
        assert str(caught.value).startswith(f"Problem() takes {field} as ")

    def test_config_error(self) -> None:
        """ConfigError is a ValueError listing every problem, and pickles."""
        error = ConfigError([Problem("a", line=1, source="f"), Problem("b", severity="warning")])
        assert isinstance(error, LayerconfError)
        assert isinstance(error, ValueError)
        assert str(error) == "f:1: error: a\nwarning: b"
        assert error.errors == (error.problems[0],)
        assert pickle.loads(pickle.dumps(error)).problems == error.problems

    def test_config_error_needs_a_problem(self) -> None:
        """An empty ConfigError is a programming error."""
        with pytest.raises(ValueError, match="at least one problem"):
            ConfigError([])


class TestSettingText:
    """str and repr of a Setting redact secrets and never raise."""

    def test_repr_redacts(self) -> None:
        """repr (what print(explain_all(ns)) shows) redacts as str and to_dict do."""
        origin = Origin("cli", "argv", argv_index=3, token="--wandb-key=sk-leaked-123")
        shadowed = Setting(
            "wandb_key", "sk-older-4567", Origin("default"), reason=Reason.OVERRIDDEN
        )
        setting = Setting("wandb_key", "sk-leaked-123", origin, (shadowed,))
        for text in (repr(setting), str(setting), repr(setting.to_dict()), repr({"k": setting})):
            assert "sk-leaked-123" not in text
            assert "sk-older-4567" not in text
        assert repr(setting).startswith("Setting(key='wandb_key', value='<redacted>', origin=")
        assert setting.value == "sk-leaked-123"

    def test_secret_text_scrubbed_from_other_strings(self) -> None:
        """A secret's text inside the raw string it was converted from is scrubbed."""
        raw = Setting("env", '{"HF_TOKEN": "hf_abcdefgh"}', Origin("file"), reason=Reason.CONVERTED)
        setting = Setting("env", {"HF_TOKEN": "hf_abcdefgh"}, Origin("file"), (raw,))
        assert "hf_abcdefgh" not in repr(setting) + str(setting)
        assert '{"HF_TOKEN": "<redacted>"}' in str(setting)

    def test_a_secret_flag_token_of_any_key(self) -> None:
        """--wandb-key=VALUE in a token is redacted even when the dest is not named as a secret."""
        origin = Origin("cli", "argv", argv_index=1, token="--wandb-key=sk-aliased-99")
        setting = Setting("wb", "sk-aliased-99", origin)
        assert "sk-aliased-99" not in str(setting) + repr(setting) + repr(setting.to_dict())


class TestSettingPickleCarriesNoOtherSecret:
    """A setting pickled (a worker sending its answer back) carries the secrets of the
    namespace it was explained from only where they change how it is shown."""

    @staticmethod
    def _explained(key: str) -> Setting:
        import layerconf
        from layerconf import LayerStack

        args = LayerStack(
            [Layer.from_mapping("cli", {"wandb_key": "wk-planted-secret-1", "lr": 0.5})]
        ).resolve()
        args.wandb_key = "wk-planted-secret-2"
        args.note = "logged in with wk-planted-secret-2"
        return layerconf.explain(args, key)

    @pytest.mark.parametrize("how", ["pickle", "deepcopy"])
    def test_another_keys_setting(self, how: str) -> None:
        import copy

        setting = self._explained("lr")
        assert setting.scrub  # what it scrubs when shown: the namespace's secrets
        assert b"planted-secret" not in pickle.dumps(setting)
        clone = pickle.loads(pickle.dumps(setting)) if how == "pickle" else copy.deepcopy(setting)
        assert (clone, str(clone), clone.to_dict()) == (setting, str(setting), setting.to_dict())

    def test_a_setting_quoting_a_secret_is_shown_as_before(self) -> None:
        setting = self._explained("note")
        clone = pickle.loads(pickle.dumps(setting))
        assert b"planted-secret-1" not in pickle.dumps(setting)
        assert str(clone) == str(setting)
        assert "planted-secret" not in str(clone)
