"""layerconf.compat.slime.parse_megatron_role_args: slime's signature and results, with provenance."""

from __future__ import annotations

import argparse
import copy
import errno
import functools
import gc
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from layerconf import ConfigError, Layer, explain, load_profile
from layerconf.compat.slime import SlimeConfigError, parse_megatron_role_args
from layerconf.presets.slime import _base_layer, compat
from tests.slime_reference import slime_parse_megatron_role_args


@pytest.fixture(scope="module")
def base(slime_argv: list[str]) -> argparse.Namespace:
    parsed, _ = load_profile().parse_known_args(slime_argv)
    return parsed


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    """(level, message) of what the drop-in logged, as slime logs through logging."""
    return [
        (record.levelname, record.getMessage())
        for record in caplog.records
        if record.name == "layerconf.compat.slime"
    ]


@pytest.fixture(autouse=True)
def _capture_info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="layerconf.compat.slime")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return path


class TestSameValuesAsSlime:
    """The values slime computes, on a fresh namespace, base_args untouched."""

    @pytest.mark.parametrize("role", ["actor", "critic"])
    def test_real_fixture(
        self,
        base: argparse.Namespace,
        fixtures_dir: Path,
        slime_expected: dict[str, Any],
        role: str,
    ) -> None:
        """megatron_yaml.role_args_via_slime_parse_megatron_role_args."""
        before = copy.deepcopy(vars(base))
        result = parse_megatron_role_args(base, fixtures_dir / "slime_ppo_megatron.yaml", role)
        expected = slime_expected["megatron_yaml"]["role_args_via_slime_parse_megatron_role_args"][
            role
        ]
        for key, value in expected.items():
            if value == "<<absent>>":
                assert not hasattr(result, key)
            else:
                assert getattr(result, key) == value
                assert type(getattr(result, key)) is type(value)
        assert result is not base
        assert vars(base) == before
        others = {k: v for k, v in vars(result).items() if k not in expected}
        assert others == {k: v for k, v in before.items() if k not in expected}

    def test_missing_role_inherits(self, base: argparse.Namespace, tmp_path: Path) -> None:
        """A role absent from the file gets base_args' values (the critic still its defaults)."""
        result = parse_megatron_role_args(
            base,
            write(tmp_path, "megatron:\n  - role: critic\n    overrides: {lr: 1e-5}\n"),
            "actor",
        )
        assert vars(result) == vars(base)

    def test_unknown_key_is_set_with_a_warning(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """slime sets an unknown key anyway; so do we, and say so through logging, as slime."""
        result = parse_megatron_role_args(
            base,
            write(tmp_path, "megatron:\n  - role: actor\n    overrides: {my_key: 3}\n"),
            "actor",
        )
        assert result.my_key == 3
        assert any(
            level == "WARNING" and "'my_key' is not a known argument" in message
            for level, message in logged(caplog)
        )

    def test_warnings_say_where_and_what_to_do(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Each of slime's silent conversions is a logged warning at the value, with a hint."""
        path = write(
            tmp_path,
            "megatron:\n  - role: actor\n    overrides:\n"
            "      my_key: 3\n      lr: fast\n      use_kl_loss: 'false'\n",
        )
        parse_megatron_role_args(base, path, "actor")
        assert [message for level, message in logged(caplog) if level == "WARNING"] == [
            f"{path}:4:7: warning: 'my_key' is not a known argument; it is set anyway, as slime "
            "does (check the spelling against the dest names in --help)",
            f"{path}:5:11: warning: 'lr' stays the string 'fast': it is not a float "
            "(write a float, as on the command line)",
            f"{path}:6:20: warning: 'use_kl_loss': the string 'false' became True, as slime "
            "computes (write true or false without quotes)",
        ]

    def test_an_unknown_key_is_warned_of_at_the_key(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """At the key, as any problem about a key: not at its value, which for an alias is
        the anchor's, under another key on another line."""
        path = write(
            tmp_path,
            "megatron:\n  - role: actor\n    overrides:\n"
            "      my_key: &mods [a]\n      my_other: *mods\n",
        )
        parse_megatron_role_args(base, path, "actor")
        assert [
            message.split(": warning: ")[0]
            for level, message in logged(caplog)
            if level == "WARNING"
        ] == [f"{path}:4:7", f"{path}:5:7"]

    def test_only_two_resource_keys_are_ignored(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """slime ignores num_nodes and num_gpus_per_node, and sets actor_num_nodes."""
        text = "megatron:\n  - role: actor\n    overrides: {num_nodes: 4, actor_num_nodes: 3}\n"
        result = parse_megatron_role_args(base, write(tmp_path, text), "actor")
        assert any(
            level == "INFO" and "'num_nodes' is ignored" in message
            for level, message in logged(caplog)
        )
        assert result.actor_num_nodes == 3
        assert getattr(result, "num_nodes", None) == getattr(base, "num_nodes", None)

    def test_quoted_false_for_a_flag_is_what_slime_computes(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """slime turns the string 'false' into True for a boolean; the drop-in does too, loudly."""
        result = parse_megatron_role_args(
            base,
            write(tmp_path, "megatron:\n  - role: actor\n    overrides: {use_kl_loss: 'false'}\n"),
            "actor",
        )
        assert result.use_kl_loss is True
        assert any("became True" in message for _, message in logged(caplog))

    def test_unconvertible_string_stays(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A string slime cannot convert is kept as it is, with a logged warning."""
        result = parse_megatron_role_args(
            base,
            write(tmp_path, "megatron:\n  - role: actor\n    overrides: {lr: fast}\n"),
            "actor",
        )
        assert result.lr == "fast"
        assert any("stays the string 'fast'" in message for _, message in logged(caplog))

    def test_a_quoted_false_for_the_critics_backup_flag_is_kept(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """slime sets the critic's disable_param_buffers_cpu_backup as written, 'false' too: so
        does the drop-in (resolve_roles refuses it), with a logged warning at the value."""
        text = "megatron:\n  - role: critic\n    overrides:\n      disable_param_buffers_cpu_backup: 'false'\n"
        path = write(tmp_path, text)
        assert parse_megatron_role_args(base, path, "critic").disable_param_buffers_cpu_backup == (
            slime_parse_megatron_role_args(base, path, "critic").disable_param_buffers_cpu_backup
        )
        assert (
            f"{path}:4:41: warning: 'disable_param_buffers_cpu_backup' is not true or false "
            "(got 'false'): it is set as written (write true or false, without quotes)"
            in [message for _, message in logged(caplog)]
        )

    def test_unconvertible_string_over_an_int(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Over an int, the warning reads as English: 'an int' (before: 'a int')."""
        path = write(tmp_path, "megatron:\n  - role: actor\n    overrides: {seed: '7.0'}\n")
        assert parse_megatron_role_args(base, path, "actor").seed == "7.0"
        assert (
            f"{path}:3:23: warning: 'seed' stays the string '7.0': it is not an int (write an "
            "int, as on the command line)" in [message for _, message in logged(caplog)]
        )


class TestStructuralErrors:
    """Structural mistakes are ConfigErrors and AssertionErrors, as slime's asserts are."""

    @pytest.mark.parametrize(
        "text",
        [
            "other: 1\n",
            "megatron: {role: actor}\n",
            "megatron:\n  - role: actor\n  - role: actor\n",
        ],
    )
    def test_assertion_error(self, base: argparse.Namespace, tmp_path: Path, text: str) -> None:
        """Existing `except AssertionError` clauses keep working."""
        with pytest.raises(AssertionError) as caught:
            parse_megatron_role_args(base, write(tmp_path, text), "actor")
        assert isinstance(caught.value, ConfigError)
        assert isinstance(caught.value, SlimeConfigError)
        assert all(p.source == str(tmp_path / "m.yaml") for p in caught.value.problems)

    def test_unsupported_role(self, base: argparse.Namespace, tmp_path: Path) -> None:
        """Only actor and critic, as slime asserts."""
        with pytest.raises(AssertionError, match="unsupported Megatron config role 'reward'"):
            parse_megatron_role_args(base, write(tmp_path, "megatron: []\n"), "reward")


class TestProvenance:
    """The result explains its values."""

    def test_from_a_plain_namespace(self, base: argparse.Namespace, fixtures_dir: Path) -> None:
        """Base values come from the base; overrides from the file with their position."""
        result = parse_megatron_role_args(base, fixtures_dir / "slime_ppo_megatron.yaml", "critic")
        setting = explain(result, "lr")
        assert (setting.layer, setting.line, setting.column) == ("role-config", 6, 11)
        assert setting.history[-1].layer == "base"
        assert explain(result, "kl_coef").rule == "critic-defaults"

    def test_from_a_layerconf_namespace_changed_after_parsing(
        self, slime_argv: list[str], fixtures_dir: Path
    ) -> None:
        """A layerconf base keeps its layers; what the trainer changed since is a runtime layer."""
        from layerconf import parse_known_args

        parsed, _ = parse_known_args(load_profile(), slime_argv)
        parsed.seed = 7
        del parsed.offload_train
        result = parse_megatron_role_args(parsed, fixtures_dir / "slime_ppo_megatron.yaml", "actor")
        assert explain(result, "tensor_model_parallel_size").layer == "cli"
        assert (result.seed, explain(result, "seed").layer) == (7, "runtime")
        assert not hasattr(result, "offload_train")
        assert parsed.seed == 7


def _rename(args: argparse.Namespace, key: str) -> None:
    value = getattr(args, key)
    delattr(args, key)
    setattr(args, key + "_renamed", value)


def _typed(value: Any) -> Any:
    """`value` with the type of every item, key and value beside its repr."""
    if isinstance(value, dict):
        return [(_typed(key), _typed(item)) for key, item in value.items()]
    if isinstance(value, (list, tuple)):
        return (type(value), [_typed(item) for item in value])
    return (type(value), repr(value))


class _LooksLikeOne:
    def __repr__(self) -> str:
        return "1"


class _Int(int):
    pass


class _Str(str):
    __slots__ = ()


class _List(list[Any]):
    pass


class TestBaseKeptBetweenRoles:
    """slime calls the drop-in for the actor, then the critic, with one namespace: its layer
    is built once, and anything the trainer changed in between is seen."""

    def test_the_critic_reuses_the_actors_base_layer(self, slime_argv: list[str]) -> None:
        """Two calls with an unchanged namespace share one base layer."""
        parsed, _ = load_profile().parse_known_args(slime_argv)
        first = compat._base_layers(parsed)[0]
        again = compat._base_layers(parsed)[0]
        assert again[0] is first[0]
        other = copy.copy(parsed)
        assert compat._base_layers(other)[0][0] is not first[0]

    @pytest.mark.parametrize(
        "change",
        [
            lambda args: setattr(args, "seed", 7),
            lambda args: setattr(args, "seed", 1234.0),  # equal to the int, not the same
            lambda args: args.eval_prompt_data.append("more"),
            lambda args: args.eval_prompt_data.__setitem__(0, 5),
            lambda args: args.train_env_vars.update({"A": "1"}),
            lambda args: setattr(args, "brand_new", [1]),
            lambda args: delattr(args, "offload_train"),
            lambda args: (delattr(args, "seed"), setattr(args, "seed", 1234)),  # moved last
            lambda args: _rename(args, list(vars(args))[-1]),  # the same values, in order
        ],
    )
    def test_a_namespace_changed_between_calls(
        self, slime_argv: list[str], fixtures_dir: Path, change: Any
    ) -> None:
        """Whatever changed between the actor's call and the critic's, the critic's values are
        what slime computes from the namespace as it is then."""
        parsed, _ = load_profile().parse_known_args(slime_argv)
        path = fixtures_dir / "slime_ppo_megatron.yaml"
        parse_megatron_role_args(parsed, path, "actor")
        change(parsed)
        result = parse_megatron_role_args(parsed, path, "critic")
        expected = slime_parse_megatron_role_args(parsed, path, "critic")
        assert list(vars(result)) == list(vars(expected))
        for key, value in vars(expected).items():
            got = getattr(result, key)
            assert (type(got), got) == (type(value), value), key
        assert explain(result, "lr").layer == "role-config"

    def test_equal_values_of_other_types_are_changes(
        self, slime_argv: list[str], fixtures_dir: Path
    ) -> None:
        """1 becoming True or 0.0 becoming -0.0 inside a list is a change (they compare
        equal); so is anything inside a container whose type layerconf does not know."""

        class Opaque(dict[str, Any]):
            def __repr__(self) -> str:
                return "Opaque()"

        parsed, _ = load_profile().parse_known_args(slime_argv)
        path = fixtures_dir / "slime_ppo_megatron.yaml"
        parsed.extra, parsed.opaque = [1, 0.0], Opaque(a=1)
        for change in (
            lambda: parsed.extra.__setitem__(0, True),
            lambda: parsed.extra.__setitem__(1, -0.0),
            lambda: parsed.opaque.update(a=2),
        ):
            parse_megatron_role_args(parsed, path, "actor")
            change()
            result = parse_megatron_role_args(parsed, path, "critic")
            assert repr(result.extra) == repr(parsed.extra)
            assert result.opaque == {"a": parsed.opaque["a"]}

    @pytest.mark.parametrize(
        ("start", "change"),
        [
            ({"a": [1]}, lambda value: value["a"].append(2)),
            ({"a": {"b": 1}}, lambda value: value["a"].update(b=True)),
            (([1],), lambda value: value[0].append(2)),
            ([[0.0]], lambda value: value[0].__setitem__(0, -0.0)),
            ({"x": 1}, lambda value: (value.clear(), value.update({_Str("x"): 1}))),
        ],
        ids=["list-in-dict", "dict-in-dict", "list-in-tuple", "list-in-list", "key-subclass"],
    )
    def test_a_nested_container_changed_in_place(
        self, slime_argv: list[str], fixtures_dir: Path, start: Any, change: Any
    ) -> None:
        """A container inside a container of the namespace, changed in place between the
        actor's call and the critic's, is seen: the critic gets what slime's function gives."""
        parsed, _ = load_profile().parse_known_args(slime_argv)
        path = fixtures_dir / "slime_ppo_megatron.yaml"
        parsed.nested = start
        parse_megatron_role_args(parsed, path, "actor")
        change(parsed.nested)
        result = parse_megatron_role_args(parsed, path, "critic")
        expected = slime_parse_megatron_role_args(parsed, path, "critic")
        assert _typed(result.nested) == _typed(expected.nested)
        assert result.nested is not parsed.nested

    @pytest.mark.parametrize(
        "item",
        [_LooksLikeOne(), _Int(1), _Str("x"), _List([1])],
        ids=["custom-repr", "int-subclass", "str-subclass", "list-subclass"],
    )
    def test_an_item_of_another_type_with_an_equal_repr(
        self, slime_argv: list[str], fixtures_dir: Path, item: Any
    ) -> None:
        """An item put in a list in place is seen even when its repr is the old item's: the
        critic gets it, of its own type, as slime's function gives it."""
        parsed, _ = load_profile().parse_known_args(slime_argv)
        path = fixtures_dir / "slime_ppo_megatron.yaml"
        old = {"custom-repr": 1, "int-subclass": 1, "str-subclass": "x", "list-subclass": [1]}
        parsed.extra = [next(v for k, v in old.items() if repr(v) == repr(item))]
        parse_megatron_role_args(parsed, path, "actor")
        parsed.extra[0] = item
        result = parse_megatron_role_args(parsed, path, "critic")
        assert type(result.extra[0]) is type(item)

    def test_an_item_whose_repr_raises(self, slime_argv: list[str], fixtures_dir: Path) -> None:
        """An item whose repr raises, put in a list in place between the calls, is copied as
        any other: the critic's call does not fail."""

        class Unprintable:
            def __repr__(self) -> str:
                raise RuntimeError("no repr")

        parsed, _ = load_profile().parse_known_args(slime_argv)
        path = fixtures_dir / "slime_ppo_megatron.yaml"
        parsed.extra = [1, 2]
        parse_megatron_role_args(parsed, path, "actor")
        parsed.extra.append(Unprintable())
        result = parse_megatron_role_args(parsed, path, "critic")
        assert type(result.extra[2]) is Unprintable

    def test_the_kept_layer_is_used_once(self, slime_argv: list[str], fixtures_dir: Path) -> None:
        """The layer kept for the critic's call is dropped by it: a secret the namespace
        held is not kept on after the trainer clears it."""
        parsed, _ = load_profile().parse_known_args(slime_argv)
        path = fixtures_dir / "slime_ppo_megatron.yaml"
        parsed.wandb_key = "wk-planted-secret-123"
        parse_megatron_role_args(parsed, path, "actor")
        assert _base_layer._BASE[0] is not None
        parse_megatron_role_args(parsed, path, "critic")
        assert _base_layer._BASE[0] is None
        parsed.wandb_key = None
        gc.collect()
        assert not any(
            found.values.get("wandb_key") == "wk-planted-secret-123"
            for found in gc.get_objects()
            if isinstance(found, Layer)
        )

    def test_the_kept_layer_does_not_keep_the_namespace(self, slime_argv: list[str]) -> None:
        """The namespace is held weakly: once the trainer drops it, its layer goes too."""
        parsed, _ = load_profile().parse_known_args(slime_argv)
        compat._base_layers(parsed)
        kept = _base_layer._BASE[0]
        assert kept is not None
        assert kept.ref() is parsed
        del parsed
        gc.collect()
        assert _base_layer._BASE[0] is None


class TestParityWithSlime:
    """Where slime's own function behaves a certain way, the drop-in does too."""

    def test_a_mapping_override_replaces_the_command_lines(self, tmp_path: Path) -> None:
        """slime setattr()s an override whole: a dict replaces the command line's dict."""
        base, _ = load_profile().parse_known_args(
            ["--rollout-batch-size", "4", "--train-env-vars", '{"X": "1"}']
        )
        assert base.train_env_vars == {"X": "1"}
        text = "megatron:\n  - role: actor\n    overrides: {train_env_vars: {A: '2'}}\n"
        result = parse_megatron_role_args(base, write(tmp_path, text), "actor")
        assert result.train_env_vars == {"A": "2"}
        assert base.train_env_vars == {"X": "1"}

    @pytest.mark.parametrize(
        ("text", "words"),
        [
            (
                "other: 1\n",
                "megatron config must contain a top-level 'megatron' list, e.g. megatron: "
                "[{name: default, role: actor, overrides: {...}}]",
            ),
            (
                "megatron: {role: actor}\n",
                "megatron config 'megatron' field must be a list, e.g. megatron: [{name: "
                "default, role: actor, overrides: {...}}]",
            ),
            (
                "megatron:\n  - role: actor\n  - role: actor\n",
                "megatron config must contain at most one entry with role=actor, e.g. megatron: "
                "[{name: default, role: actor, overrides: {...}}]",
            ),
        ],
    )
    def test_assertions_carry_slimes_words(
        self, base: argparse.Namespace, tmp_path: Path, text: str, words: str
    ) -> None:
        """slime's tests match its assertion messages: they come first, then where and why."""
        with pytest.raises(AssertionError) as caught:
            parse_megatron_role_args(base, write(tmp_path, text), "actor")
        message = str(caught.value)
        assert message.startswith(words + "\n")
        assert f"{tmp_path / 'm.yaml'}:" in message

    def test_an_unsupported_role(self, base: argparse.Namespace, tmp_path: Path) -> None:
        with pytest.raises(AssertionError, match=r"^Unsupported Megatron config role: reward"):
            parse_megatron_role_args(base, write(tmp_path, "megatron: []\n"), "reward")

    def test_a_missing_file_is_file_not_found(
        self, base: argparse.Namespace, tmp_path: Path
    ) -> None:
        """slime's open() raises FileNotFoundError; the drop-in's error is one, and a ConfigError."""
        missing = tmp_path / "nope.yaml"
        with pytest.raises(FileNotFoundError) as caught:
            parse_megatron_role_args(base, missing, "actor")
        error = caught.value
        assert isinstance(error, ConfigError)
        assert (error.errno, error.filename) == (errno.ENOENT, str(missing))
        assert str(error).startswith(f"[Errno 2] No such file or directory: '{missing}'")

    def test_a_directory_is_is_a_directory_error(
        self, base: argparse.Namespace, tmp_path: Path
    ) -> None:
        """slime's open() of a directory raises IsADirectoryError: the drop-in's error is one."""
        with pytest.raises(IsADirectoryError) as caught:
            parse_megatron_role_args(base, tmp_path, "actor")
        assert isinstance(caught.value, SlimeConfigError)
        assert (caught.value.errno, caught.value.filename) == (errno.EISDIR, str(tmp_path))
        assert str(caught.value).startswith(f"[Errno 21] Is a directory: '{tmp_path}'\n")

    def test_a_path_of_bytes(self, base: argparse.Namespace, tmp_path: Path) -> None:
        """slime's open() takes a path as bytes (os.fsencode'd, or a bytes PathLike): so does
        the drop-in, with the same values."""

        class BytesPath:
            def __init__(self, path: bytes) -> None:
                self.path = path

            def __fspath__(self) -> bytes:
                return self.path

        path = write(tmp_path, "megatron:\n  - role: actor\n    overrides: {seed: '7'}\n")
        for each in (os.fsencode(path), BytesPath(os.fsencode(path))):
            result = parse_megatron_role_args(base, each, "actor")
            assert result.seed == slime_parse_megatron_role_args(base, each, "actor").seed == 7
        with pytest.raises(FileNotFoundError):
            parse_megatron_role_args(base, os.fsencode(tmp_path / "nope.yaml"), "actor")

    def test_a_dangling_link_is_file_not_found(
        self, base: argparse.Namespace, tmp_path: Path
    ) -> None:
        link = tmp_path / "link.yaml"
        link.symlink_to(tmp_path / "gone.yaml")
        with pytest.raises(FileNotFoundError):
            parse_megatron_role_args(base, link, "actor")

    def test_an_unreadable_file_is_permission_error(
        self, base: argparse.Namespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """As slime's open() raises PermissionError (os.access stands in for a user who may
        not read the file: the tests may run as root)."""
        import os

        path = write(tmp_path, "megatron: []\n")
        path.chmod(0)
        if os.access(path, os.R_OK):
            pytest.skip("this user reads any file (root)")
        with pytest.raises(PermissionError) as caught:
            parse_megatron_role_args(base, path, "actor")
        assert isinstance(caught.value, SlimeConfigError)
        assert caught.value.errno == errno.EACCES

    def test_nothing_is_warned_only_logged(self, base: argparse.Namespace, tmp_path: Path) -> None:
        """A trainer under -W error (pytest's filterwarnings = error here) does not crash."""
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            text = "megatron:\n  - role: critic\n    overrides: {num_nodes: 2, my_key: 1}\n"
            result = parse_megatron_role_args(base, write(tmp_path, text), "critic")
        assert result.my_key == 1

    def test_the_reader_s_warnings_are_logged(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A number YAML 1.1 reads otherwise than it shows: slime's value, and a log line."""
        text = "megatron:\n  - role: critic\n    overrides:\n      seed: 010\n"
        with caplog.at_level("WARNING", logger="layerconf.compat.slime"):
            result = parse_megatron_role_args(base, write(tmp_path, text), "critic")
        assert result.seed == 8
        assert [r.getMessage() for r in caplog.records] == [
            f"{tmp_path / 'm.yaml'}:4:13: warning: '010' is read as the int 8: YAML 1.1, "
            "which PyYAML and slime follow, reads a number with a leading 0 as octal (write 8 "
            "for this number or 10 for the decimal one, or quote it, '010', to keep the text)"
        ]

    def test_each_role_logs_the_warnings_of_its_own_entry(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A trainer calls once per role: each call logs the warnings of its role's entry (and
        of an alias of a value warned of), not the other role's; before, each call logged
        every entry's, each warning twice in a run and under the wrong role."""
        text = (
            "megatron:\n"
            "  - role: actor\n"
            "    overrides: {seed: 010, lst: [1, 012], x: &x 013}\n"
            "  - role: critic\n"
            "    overrides: {seed: 011, x: *x}\n"
        )
        path = write(tmp_path, text)
        places = {}
        for role in ("actor", "critic"):
            caplog.clear()
            with caplog.at_level("WARNING", logger="layerconf.compat.slime"):
                parse_megatron_role_args(base, path, role)
            places[role] = [
                r.getMessage().split(": warning: ")[0].removeprefix(f"{path}:")
                for r in caplog.records
                if "YAML 1.1" in r.getMessage()
            ]
        assert places == {"actor": ["3:23", "3:37", "3:46"], "critic": ["3:46", "5:23"]}

    def test_a_warning_of_the_whole_file_is_logged_for_each_role(
        self, base: argparse.Namespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """'megatron' listing no entries concerns every role: each call says it."""
        path = write(tmp_path, "megatron: []\n")
        with caplog.at_level("WARNING", logger="layerconf.compat.slime"):
            for role in ("actor", "critic"):
                parse_megatron_role_args(base, path, role)
        assert [r.getMessage().count("lists no role entries") for r in caplog.records] == [1, 1]

    @pytest.mark.parametrize("name", ["__class__", "__dict__"])
    def test_python_names_are_refused(
        self, base: argparse.Namespace, tmp_path: Path, name: str
    ) -> None:
        """slime's setattr raises on __class__; the drop-in refuses it, at the key."""
        text = f"megatron:\n  - role: actor\n    overrides: {{{name}: x}}\n"
        with pytest.raises(TypeError, match=f"'{name}' is a Python attribute") as caught:
            parse_megatron_role_args(base, write(tmp_path, text), "actor")
        assert isinstance(caught.value, ConfigError)

    @pytest.mark.parametrize(
        "key", ["''", "__doc__", "_layerconf_provenance", "_layerconf_writes", "_layerconf_log"]
    )
    def test_what_it_still_refuses(
        self, base: argparse.Namespace, tmp_path: Path, key: str
    ) -> None:
        """An empty key, a Python name, the name of an attribute of layerconf's namespace
        (``args._layerconf_provenance`` would read the provenance, not the file's value):
        slime sets them, the drop-in refuses them, located."""
        text = f"megatron:\n  - role: actor\n    overrides: {{{key}: x}}\n"
        with pytest.raises(SlimeConfigError) as caught:
            parse_megatron_role_args(base, write(tmp_path, text), "actor")
        assert caught.value.problems[0].line == 3

    def test_a_key_deleted_at_run_time_is_set_as_written(self, tmp_path: Path) -> None:
        """slime's hasattr() is False for a deleted key: the YAML string is set, not converted."""
        import layerconf

        base, _ = layerconf.parse_known_args(
            load_profile(), ["--rollout-batch-size", "4", "--seed", "3"]
        )
        del base.seed
        text = "megatron:\n  - role: actor\n    overrides: {seed: '7'}\n"
        result = parse_megatron_role_args(base, write(tmp_path, text), "actor")
        assert result.seed == "7"


# Role files slime's own function reads: every shape its code can meet, not only valid ones.
_known = ["lr", "seed", "save", "train_env_vars", "sequence_parallel", "micro_batch_size"]
_special = ["num_nodes", "kl_coef", "disable_param_buffers_cpu_backup", "not_an_arg"]
_override_keys = st.one_of(
    st.sampled_from([*_known, *_special]),
    st.sampled_from([5, None, True, "__class__"]),
)
_texts = st.sampled_from(["3", "1e-5", "0.5", "true", "false", "abc", "", "/ckpt"])
_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, 2.0]), _texts
)
_values = st.one_of(
    _leaves,
    st.lists(_leaves, max_size=2),
    st.dictionaries(st.sampled_from(["A", "X"]), _leaves, max_size=2),
)
_overrides = st.one_of(
    st.dictionaries(_override_keys, _values, max_size=4),
    st.none(),
    st.sampled_from([[], ["lr"], "lr", 0, {}]),
)
_roles = st.sampled_from(["actor", "critic", "reward", 3, None])
_fields = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["default", 7]),
        "role": _roles,
        "overrides": _overrides,
        "args": _overrides,
        "extra": st.just(1),
    },
)
_entries = st.one_of(_fields, _fields, _fields, st.sampled_from(["actor", None, 3]))
_documents = st.one_of(
    st.fixed_dictionaries(
        {"megatron": st.lists(_entries, max_size=4)},
        optional={"other": st.just(1)},
    ),
    st.fixed_dictionaries({"megatron": st.sampled_from([{"role": "actor"}, "actor", None, 0])}),
    st.sampled_from([{}, None, [], ["megatron"], "megatron", "text", 5, {"other": 1}]),
)


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        result = call()
    except Exception as error:  # the outcome is what is compared
        return "raised", error
    return "returned", {key: (type(value), value) for key, value in vars(result).items()}


class TestParityOnGeneratedFiles:
    """On generated role files: slime's values where slime returns, its exception where it raises."""

    @settings(max_examples=300, deadline=None)
    @given(document=_documents, role=st.sampled_from(["actor", "critic"]))
    def test_as_slimes_own_function(self, document: Any, role: str) -> None:
        base = _PARITY_BASE
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "m.yaml"
            path.write_text(yaml.safe_dump(document, sort_keys=False))
            slime = _outcome(lambda: slime_parse_megatron_role_args(base, path, role))
            ours = _outcome(lambda: parse_megatron_role_args(base, path, role))
        assert ours[0] == slime[0], (slime, ours)
        if slime[0] == "returned":
            assert ours[1] == slime[1]
        else:
            assert isinstance(ours[1], type(slime[1])), (slime, ours)
            if isinstance(slime[1], AssertionError):
                assert str(ours[1]).startswith(str(slime[1]) + "\n")


_PARITY_BASE, _ = load_profile().parse_known_args(
    ["--rollout-batch-size", "4", "--train-env-vars", '{"X": "1"}', "--micro-batch-size", "2"]
)


class TestLazyLogging:
    """The drop-in imports logging only when it logs, with the same logger as before."""

    def test_importing_the_drop_in_does_not_import_logging(self) -> None:
        import subprocess
        import sys

        code = "import sys; import layerconf.compat.slime; print('logging' in sys.modules)"
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == "False"

    def test_logger_is_the_named_logger(self) -> None:
        from layerconf.presets.slime.compat import logger

        assert logger is logging.getLogger("layerconf.compat.slime")
        assert compat.logger is logger
        assert "logger" in compat.__all__
        with pytest.raises(AttributeError, match="no attribute 'loger'"):
            compat.loger

    def test_a_process_without_logging_still_shows_a_warning(self, tmp_path: Path) -> None:
        """An unknown key is logged as a warning (logging's last resort prints it)."""
        import subprocess
        import sys

        role_file = tmp_path / "roles.yaml"
        role_file.write_text("megatron:\n  - role: actor\n    overrides:\n      nope: 1\n")
        code = (
            "import argparse, sys\n"
            "from layerconf.compat.slime import parse_megatron_role_args\n"
            "base = argparse.Namespace(lr=1.0)\n"
            f"parse_megatron_role_args(base, {str(role_file)!r}, 'actor')\n"
            "parse_megatron_role_args(base, {0!r}, 'critic')\n".format(str(role_file))
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert "'nope' is not a known argument; it is set anyway" in done.stderr


# Bases as trainers hand them over: plain or layerconf namespaces, changed after parsing.
_base_keys = st.sampled_from(
    ["lr", "seed", "train_env_vars", "eval_prompt_data", "kl_coef", "use_opd", "added_by_trainer"]
)
_nested = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["A", "X"]), inner, max_size=2)
    ),
    max_leaves=5,
)
_changes = st.lists(st.tuples(st.sampled_from(["set", "del"]), _base_keys, _nested), max_size=3)
_role_entries = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["actor", "critic"])},
        optional={
            "overrides": st.dictionaries(
                st.one_of(_base_keys, _override_keys), _nested, max_size=3
            ),
            "args": st.dictionaries(_base_keys, _nested, max_size=2),
        },
    ),
    max_size=2,
    unique_by=lambda entry: entry["role"],
)
_CHANGED_ARGV = [
    "--rollout-batch-size", "4", "--train-env-vars", '{"X": "1"}', "--eval-prompt-data", "a", "b"
]  # fmt: skip


def _change(args: argparse.Namespace, changes: list[tuple[str, str, Any]]) -> None:
    for action, key, value in changes:
        if action == "set":
            setattr(args, key, copy.deepcopy(value))
        elif hasattr(args, key):
            delattr(args, key)


def _poke(value: Any) -> None:
    """Change every list and dict inside `value` in place."""
    if isinstance(value, list):
        for item in value:
            _poke(item)
        value.append("poked")
    elif isinstance(value, dict):
        for item in list(value.values()):
            _poke(item)
        value["poked"] = 1


class TestParityOnChangedBases:
    """slime's values from a base the trainer changed after parsing (values set, keys deleted,
    attributes added), for the actor then the critic; each result is independent."""

    @settings(max_examples=150, deadline=None)
    @given(
        layered=st.booleans(),
        before=_changes,
        between=_changes,
        entries=_role_entries,
    )
    def test_as_slimes_own_function(
        self, layered: bool, before: Any, between: Any, entries: Any
    ) -> None:
        import layerconf

        parser = load_profile()
        if layered:
            base, _ = layerconf.parse_known_args(parser, _CHANGED_ARGV)
        else:
            base, _ = parser.parse_known_args(_CHANGED_ARGV)
        _change(base, before)
        results = {}
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "m.yaml"
            path.write_text(yaml.safe_dump({"megatron": entries}, sort_keys=False))
            for role, changes in (("actor", between), ("critic", [])):
                slime = _outcome(
                    functools.partial(slime_parse_megatron_role_args, base, path, role)
                )
                ours = _outcome(functools.partial(parse_megatron_role_args, base, path, role))
                assert ours[0] == slime[0], (slime, ours)
                if slime[0] == "returned":
                    assert {k: _typed(v) for k, (_, v) in ours[1].items()} == {
                        k: _typed(v) for k, (_, v) in slime[1].items()
                    }
                    results[role] = parse_megatron_role_args(base, path, role)
                _change(base, changes)
        shown = {role: _typed(vars(result)) for role, result in results.items()}
        for value in vars(base).values():  # the base's containers changed in place...
            _poke(value)
        base_shown = _typed(vars(base))
        untouched = dict(results)
        for role in results:  # ... then each result's in turn: nothing else changes
            for value in vars(untouched.pop(role)).values():
                _poke(value)
            assert _typed(vars(base)) == base_shown
            assert {other: _typed(vars(each)) for other, each in untouched.items()} == {
                other: shown[other] for other in untouched
            }


class TestParityOnBasesChangedAtRunTime:
    """A layerconf base changed after parsing: what the trainer set is taken whole, as slime
    takes the namespace as it is (found by TestParityOnChangedBases)."""

    def test_a_mapping_set_at_run_time_replaces_the_parsed_one(self, tmp_path: Path) -> None:
        import layerconf

        base, _ = layerconf.parse_known_args(load_profile(), _CHANGED_ARGV)
        base.train_env_vars = {"A": "2"}
        result = parse_megatron_role_args(base, write(tmp_path, "megatron: []\n"), "actor")
        assert result.train_env_vars == {"A": "2"}

    def test_the_bases_merge_policies_are_kept(self, tmp_path: Path) -> None:
        """A base resolved with an 'append' policy keeps its values; a list the trainer or
        the file sets replaces it, as slime's setattr does."""
        from layerconf import LayerStack, Origin

        layers = [
            Layer(name, "mapping", {"xs": [index]}, Origin(name, "mapping"))
            for index, name in enumerate(["defaults", "cli"])
        ]
        base = LayerStack(layers, policies={"xs": "append"}).resolve()
        empty = write(tmp_path, "megatron: []\n")
        assert parse_megatron_role_args(base, empty, "actor").xs == [0, 1]
        base.xs = [9]
        assert parse_megatron_role_args(base, empty, "actor").xs == [9]
        text = "megatron:\n  - role: critic\n    overrides: {xs: [5]}\n"
        assert parse_megatron_role_args(base, write(tmp_path, text), "critic").xs == [5]

    def test_the_critic_gets_its_defaults_where_the_trainer_deleted_them(
        self, tmp_path: Path
    ) -> None:
        import layerconf

        base, _ = layerconf.parse_known_args(load_profile(), _CHANGED_ARGV)
        del base.kl_coef
        result = parse_megatron_role_args(base, write(tmp_path, "megatron: []\n"), "critic")
        assert (type(result.kl_coef), result.kl_coef) == (int, 0)

    @pytest.mark.parametrize(
        "change",
        [
            lambda args: (delattr(args, "seed"), setattr(args, "seed", 1234)),  # moved last
            lambda args: (delattr(args, "kl_coef"), delattr(args, "use_opd")),  # critic sets
            lambda args: (delattr(args, "save"), delattr(args, "lr")),  # the file sets
            lambda args: setattr(args, "added", 1),
        ],
        ids=["moved-last", "critic-defaults", "file", "added"],
    )
    def test_the_keys_are_in_the_order_slime_gives(self, tmp_path: Path, change: Any) -> None:
        """slime's namespace has the base's keys in their order now, then the keys it sets
        anew (the file's, then the critic's defaults): `vars(args)` and printed args show it."""
        import layerconf

        base, _ = layerconf.parse_known_args(load_profile(), _CHANGED_ARGV)
        change(base)
        text = "megatron:\n  - role: actor\n    overrides: {save: /x, lr: 2, kl_coef: 1}\n"
        path = write(tmp_path, text)
        for role in ("actor", "critic"):
            result = parse_megatron_role_args(base, path, role)
            expected = slime_parse_megatron_role_args(base, path, role)
            assert list(vars(result)) == list(vars(expected))


class TestBaseValuesOfOtherTypes:
    """slime deep-copies the base: a mapping of another type keeps its type (a defaultdict
    stays one, or the trainer's ``args.x[new].append`` fails), inside a list too."""

    def test_as_slimes_deepcopy(self, tmp_path: Path) -> None:
        import collections

        base = argparse.Namespace(
            lr=1.0,
            ordered=collections.OrderedDict(a=1),
            lists=collections.defaultdict(list, a=[1]),
            nested=[collections.Counter(a=2)],
            overridden=collections.OrderedDict(b=1),
        )
        text = "megatron:\n  - role: actor\n    overrides: {overridden: {a: 1}}\n"
        path = write(tmp_path, text)
        for role in ("actor", "critic"):
            result = parse_megatron_role_args(base, path, role)
            expected = slime_parse_megatron_role_args(base, path, role)
            assert {k: repr(v) for k, v in vars(result).items()} == {
                k: repr(v) for k, v in vars(expected).items()
            }
            assert result.lists is not base.lists
            result.lists["new"].append(1)
            assert "new" not in base.lists


class TestObjectsSharedInTheBase:
    """One object under two names of the base (``args.a = args.b = x``, or inside another
    value) stays one object in each role's namespace, as slime's deep copy (one memo) keeps
    it: a trainer changing it through one name sees the change through the other."""

    @pytest.mark.parametrize("layered", [False, True], ids=["plain", "layerconf"])
    @pytest.mark.parametrize(
        "share",
        [
            lambda args: (setattr(args, "a", [1]), setattr(args, "b", args.a)),
            lambda args: (setattr(args, "a", {"A": [1]}), setattr(args, "b", [args.a["A"]])),
            lambda args: setattr(args, "lr", args.train_env_vars),
            lambda args: (setattr(args, "a", [1]), setattr(args, "b", (args.a, 2))),
            lambda args: (setattr(args, "a", _List([1])), setattr(args, "b", {"k": args.a})),
        ],
        ids=["two-names", "nested", "replaced", "in-a-tuple", "not-plain"],
    )
    def test_as_slimes_deepcopy(self, tmp_path: Path, layered: bool, share: Any) -> None:
        import layerconf

        argv = ["--rollout-batch-size", "4", "--train-env-vars", '{"X": "1"}']
        parse = (
            functools.partial(layerconf.parse_known_args, load_profile())
            if layered
            else load_profile().parse_known_args
        )
        base, _ = parse(argv)
        share(base)
        path = write(tmp_path, "megatron:\n  - role: actor\n    overrides: {seed: 3}\n")
        for role in ("actor", "critic"):
            result = parse_megatron_role_args(base, path, role)
            expected = slime_parse_megatron_role_args(base, path, role)
            assert _sharing(result) == _sharing(expected)
            assert not _ids(vars(result)) & _ids(vars(base))


def _ids(value: Any) -> set[int]:
    """The ids of the lists and dicts inside `value`."""
    if isinstance(value, dict):
        return {id(value)}.union(*map(_ids, value.values()))
    if isinstance(value, list):
        return {id(value)}.union(*map(_ids, value))
    if isinstance(value, tuple):
        return set().union(*map(_ids, value))
    return set()


def _sharing(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The pairs of a namespace's keys whose values hold one list or dict in common."""
    found = {key: _ids(value) for key, value in vars(args).items()}
    return [(a, b) for a in found for b in found if a < b and found[a] & found[b]]


class TestWhatPyYamlReadsOtherwise:
    """A file whose YAML PyYAML fails on, or reads to other values, is refused, located:
    never values slime would not compute."""

    @pytest.mark.parametrize(
        "text",
        [
            "megatron:\n  - role: actor\n    overrides:\n      ? [a]\n      : 1\n      lr: 2\n",
            "megatron:\n  - role: actor\n    overrides:\n      ? {a: 1}\n      : 1\n",
            "megatron:\n  - role: actor\n    overrides:\n      <<: 5\n      lr: 2\n",
            "megatron:\n  - role: actor\n    overrides:\n      !foo seed: 5\n      lr: 2\n",
            "d: &d {lr: 1}\ne: &e {lr: 2}\n"
            "megatron:\n  - role: actor\n    overrides:\n      <<: [*d, *e]\n",
        ],
        ids=[
            "list-key",
            "mapping-key",
            "merge-of-a-scalar",
            "unknown-tag-on-key",
            "merge-conflict",
        ],
    )
    def test_refused(self, base: argparse.Namespace, tmp_path: Path, text: str) -> None:
        with pytest.raises(SlimeConfigError) as caught:
            parse_megatron_role_args(base, write(tmp_path, text), "actor")
        assert any(problem.line is not None for problem in caught.value.problems)

    def test_a_key_written_twice_is_read_as_pyyaml_reads_it(
        self, base: argparse.Namespace, tmp_path: Path
    ) -> None:
        text = "megatron:\n  - role: actor\n    overrides:\n      lr: 1\n      lr: 2\n"
        path = write(tmp_path, text)
        assert parse_megatron_role_args(base, path, "actor").lr == 2.0
        assert slime_parse_megatron_role_args(base, path, "actor").lr == 2.0
