"""Round trips: ``show --role-file`` writes a role file that resolves, with the same command line,
to the same values for every role; ``audit relaunch`` prints a command line that parses back to
the recorded values."""

from __future__ import annotations

import argparse
import datetime
import enum
import shlex
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from layerconf import ConfigError, Layer, LayerconfWarning, LayerStack, load_profile, resolve_roles
from layerconf.cli.commands.show import role_file_of
from layerconf.core.secrets import is_secret
from layerconf.presets import Preset, RoleFileFormat
from layerconf.presets.role_file import check_role_file, role_file_text
from layerconf.presets.slime import SLIME
from layerconf.sources.yaml import dump_yaml, parse_yaml
from tests.test_roles_properties import role_files as junk_role_files

PARSER = load_profile()
BASE = ["--rollout-batch-size", "8", "--advantage-estimator", "ppo", "--lr", "2e-6"]
CONFIG = "megatron_config_path"


def _valid_value(action: argparse.Action) -> st.SearchStrategy[Any] | None:
    """Values a role file may give `action`'s dest (as YAML writes them), or None."""
    if action.choices:
        return st.sampled_from([getattr(c, "name", c) for c in action.choices])
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return st.booleans()
    if action.nargs not in (None, "?"):
        return st.lists(st.text("abc/-_.", min_size=1, max_size=4), max_size=3) | st.none()
    if action.type is float:
        finite = st.floats(allow_nan=False, allow_infinity=False)
        return finite | st.sampled_from(["1e-5", "2.5E+3", ".inf"]) | st.none()
    if action.type is int:
        return st.integers(-(10**6), 10**12) | st.none()
    if action.type in (None, str):
        return st.text(max_size=8) | st.sampled_from(["yes", "null", "1e-5", "~"]) | st.none()
    return None


_WRITABLE = [
    action
    for action in PARSER._actions
    if action.option_strings
    and action.dest not in ("help", *SLIME.run_wide_keys, *SLIME.ignored_keys)
    and _valid_value(action) is not None
]


@st.composite
def _valid_overrides(draw: st.DrawFn) -> dict[str, Any]:
    chosen = draw(st.lists(st.sampled_from(_WRITABLE), max_size=8, unique_by=lambda a: a.dest))
    return {action.dest: draw(_valid_value(action)) for action in chosen}  # type: ignore[arg-type]


role_files = junk_role_files | st.dictionaries(
    st.sampled_from(["actor", "critic"]), _valid_overrides(), max_size=2
)


def _resolve(argv: list[str]) -> dict[str, argparse.Namespace]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LayerconfWarning)
        return dict(resolve_roles(PARSER, argv))


def _values(roles: dict[str, argparse.Namespace]) -> dict[str, dict[str, str]]:
    """Every value of every role but the role file's path, with its type (1 is not 1.0)."""
    return {
        role: {key: repr(value) for key, value in vars(namespace).items() if key != CONFIG}
        for role, namespace in roles.items()
    }


def _round_trip(argv: list[str], directory: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The role file printed for `argv`, and the values before and after using it instead."""
    before = _resolve(argv)
    text = role_file_of(before, SLIME)
    written = directory / "written.yaml"
    written.write_text(text)
    again = list(argv)
    again[again.index("--megatron-config-path") + 1] = str(written)
    return text, _values(before), _values(_resolve(again))


class TestRoleFileRoundTrip:
    """A role file written from a resolution resolves back to the same values."""

    @settings(
        max_examples=100,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(role_files)
    def test_generated_role_files(
        self, tmp_path_factory: pytest.TempPathFactory, content: dict[str, dict[str, Any]]
    ) -> None:
        """For any role file that resolves, the printed one gives every role the same values."""
        directory = Path(tmp_path_factory.mktemp("roles"))
        source = directory / "roles.yaml"
        entries = [{"role": role, "overrides": values} for role, values in content.items()]
        source.write_text(dump_yaml({"megatron": entries}))
        argv = [*BASE, "--megatron-config-path", str(source)]
        try:
            _resolve(argv)
        except ConfigError:
            event("does not resolve")
            return  # a role file that does not resolve prints nothing
        event("resolves")
        refused = None
        try:
            text, before, after = _round_trip(argv, directory)
        except ValueError as error:
            refused = str(error)
        if refused is not None:  # only ever for a secret the role file set
            assert "holds a secret, which layerconf never writes" in refused
            assert any(is_secret(key) for values in content.values() for key in values)
            return
        assert after == before, text
        assert not check_role_file(
            directory / "written.yaml", SLIME.roles, form=SLIME.role_file
        ).errors

    def test_the_fixture(self, tmp_path: Path, fixtures_dir: Path, slime_argv: list[str]) -> None:
        """The real slime command line and role file round-trip; only the file's keys are written."""
        argv = list(slime_argv)
        argv[argv.index("--megatron-config-path") + 1] = str(
            fixtures_dir / "slime_ppo_megatron.yaml"
        )
        text, before, after = _round_trip(argv, tmp_path)
        assert after == before
        assert "megatron:\n- role: actor\n  overrides:\n    lr: 1.0e-06\n" in text
        assert "kl_coef" not in text  # the critic's defaults are the rule's, set again by it

    def test_values_of_every_kind(self, tmp_path: Path) -> None:
        """Floats such as 1e-5, enums, None, lists and mappings are read back as they were."""
        source = tmp_path / "roles.yaml"
        source.write_text(
            "megatron:\n- role: critic\n  overrides:\n    lr: 1e-5\n"
            "    attention_backend: local\n    save: null\n    eval_prompt_data: [a, b]\n"
            "    min_lr: .inf\n    seed: 7\n    load: 'yes'\n"
        )
        argv = [*BASE, "--megatron-config-path", str(source)]
        text, before, after = _round_trip(argv, tmp_path)
        assert after == before
        assert "attention_backend: local" in text
        assert "lr: 1.0e-05" in text
        assert "load: 'yes'" in text  # a string, not YAML 1.1's boolean

    def test_a_secret_is_never_written(self, tmp_path: Path) -> None:
        """A secret the role file set is refused by name, its value never shown."""
        source = tmp_path / "roles.yaml"
        source.write_text("megatron:\n- role: critic\n  overrides:\n    wandb_key: hunter2-xyz\n")
        roles = _resolve([*BASE, "--megatron-config-path", str(source)])
        with pytest.raises(ValueError, match="'wandb_key' holds a secret") as raised:
            role_file_of(roles, SLIME)
        assert "hunter2" not in str(raised.value)


class Colour(enum.Enum):
    red = 1


class TestRoleFileText:
    """`role_file_text` writes the format's top key and entries, values as YAML reads them."""

    def test_plain_values_read_back(self) -> None:
        """Every value is read back by the YAML reader as written (enums as their names)."""
        values = {
            "a": 1e-5,
            "b": None,
            "c": [1, 2.5, "x"],
            "d": {"e": True},
            "f": Colour.red,
            "g": Path("/tmp/x"),
            "h": (1, 2),
            "i": "1e-5",
            "j": datetime.date(2024, 1, 2),
        }
        text = role_file_text({"critic": values}, form=RoleFileFormat("roles"), comment="x\ny")
        assert text.startswith("# x\n# y\nroles:\n")
        document = parse_yaml(text)
        assert not document.problems
        [entry] = document.data["roles"]
        assert entry["role"] == "critic"
        assert entry["overrides"] == {**values, "f": "red", "g": "/tmp/x", "h": [1, 2]}

    def test_unwritable_value(self) -> None:
        """A set cannot be written: the role and key are named."""
        with pytest.raises(ValueError, match=r"role 'actor', key 'x': a set cannot be written"):
            role_file_text({"actor": {"x": {1}}})


def test_cli_role_file_is_checked_clean(tmp_path: Path, fixtures_dir: Path) -> None:
    """The real command writes a role file that the real ``check`` accepts (0 errors)."""
    argv = (fixtures_dir / "slime_ppo_argv.txt").read_text().splitlines()
    argv[argv.index("--megatron-config-path") + 1] = str(fixtures_dir / "slime_ppo_megatron.yaml")
    output = tmp_path / "roles.yaml"
    command = [sys.executable, "-m", "layerconf"]
    shown = subprocess.run(
        [*command, "show", "--role-file", "-o", str(output), "--", *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"pass it as --megatron-config-path {output}" in shown.stderr
    argv[argv.index("--megatron-config-path") + 1] = str(output)
    checked = subprocess.run(
        [*command, "check", "--", *argv], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr
    assert "0 errors, 0 warnings" in checked.stderr
    assert shlex.split(shlex.join(argv)) == argv


class TestWhatIsWritten:
    """Which keys a role file gets: those the role file layer set, even inside a mapping."""

    PRESET = Preset("mine", roles=("main",), config_dest="cfg")

    def test_a_leaf_under_a_later_layer(self) -> None:
        """A mapping whose leaf the role file set is written, though a later layer set another."""
        args = LayerStack(
            [
                Layer.from_mapping("default", {"opt": {"beta1": 0.9, "beta2": 0.95}, "lr": 1}),
                Layer.from_mapping("role-config", {"opt": {"beta2": 0.98}}, source="r.yaml"),
                Layer.from_mapping("late", {"opt": {"beta1": 0.8}}),
            ]
        ).resolve()
        text = role_file_of({"main": args}, self.PRESET)
        assert parse_yaml(text).data == {
            "roles": [{"role": "main", "overrides": {"opt": {"beta1": 0.8, "beta2": 0.98}}}]
        }

    def test_appended_lists_are_refused(self) -> None:
        """A list the layers append to cannot be written whole: the key is named."""
        args = LayerStack(
            [
                Layer.from_mapping("default", {"tags": ["a"]}),
                Layer.from_mapping("role-config", {"tags": ["b"]}, source="r.yaml"),
            ],
            policies={("tags",): "append"},
        ).resolve()
        assert args.tags == ["a", "b"]
        with pytest.raises(ValueError, match="'tags' appends"):
            role_file_of({"main": args}, self.PRESET)


class TestShowRoleFileCommand:
    """``show --role-file`` through `main`: its options and its refusals."""

    def test_secret_refused_without_its_value(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A secret in the role file: exit 1, the key named, nothing on stdout, no value shown."""
        from layerconf.cli import main

        source = tmp_path / "roles.yaml"
        source.write_text("megatron:\n- role: critic\n  overrides:\n    wandb_key: hunter2-xyz\n")
        argv = [*BASE, "--megatron-config-path", str(source)]
        assert main(["show", "--role-file", "--", *argv]) == 1
        out, err = capsys.readouterr()
        assert out == ""
        assert "layerconf show: error: role 'critic': 'wandb_key' holds a secret" in err
        assert "hunter2" not in err

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            (["--role-file", "--json"], "--role-file prints a role file: leave out --json"),
            (["-o", "x.yaml"], "-o/--output writes a role file: add --role-file"),
            (
                ["--role-file", "--preset", "plain"],
                "--role-file: the preset 'plain' reads no role file",
            ),
            (
                ["--role-file", "-o", "/dev/null"],
                "cannot write the role file: /dev/null is a character device, not a file",
            ),
        ],
    )
    def test_usage_errors(
        self, options: list[str], message: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Options that do not go together are a usage error (exit 2)."""
        from layerconf.cli import main

        assert main(["show", *options, "--", *BASE]) == 2
        assert message in capsys.readouterr().err

    def test_a_path_ending_in_a_slash_is_refused(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """'-o runs/' names a directory: refused, and no file 'runs' is written in its place."""
        from layerconf.cli import main

        monkeypatch.chdir(tmp_path)
        assert main(["show", "--role-file", "-o", "runs/", "--", *BASE]) == 2
        assert "cannot write the role file: runs/ is a directory, not a file" in (
            capsys.readouterr().err
        )
        assert list(tmp_path.iterdir()) == []

    @pytest.mark.parametrize("through", ["the path", "a link"])
    def test_the_role_file_read_is_never_replaced(
        self, through: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """'-o' naming the role file the command read (or a link to it) is refused, as
        'audit -o' refuses it: the written file would drop its comments, its entries' names
        and the keys that rules set or ignored. Nothing is written."""
        from layerconf.cli import main

        source = tmp_path / "roles.yaml"
        source.write_text(
            "# the team's notes\nmegatron:\n- name: tuned\n  role: critic\n  overrides:\n"
            "    lr: 1e-5\n    num_nodes: 2\n"
        )
        (tmp_path / "link.yaml").symlink_to(source)
        before = source.read_bytes()
        output = source if through == "the path" else tmp_path / "link.yaml"
        argv = [*BASE, "--megatron-config-path", str(source)]
        assert main(["show", "--role-file", "-o", str(output), "--", *argv]) == 2
        err = capsys.readouterr().err
        assert (
            f"cannot write the role file: {output} is a role file ({source}), which this command read"
            in err
        )
        assert "nothing was written" in err
        assert source.read_bytes() == before
        assert sorted(path.name for path in tmp_path.iterdir()) == ["link.yaml", "roles.yaml"]

    @pytest.mark.parametrize("command", [["show", "--role-file"], ["audit"]])
    def test_an_empty_path_is_named_as_one(
        self,
        command: list[str],
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """'-o ""' (a variable that was not set) says the path is empty; before, it said that
        '' or '.' is a directory, which does not tell what went wrong."""
        from layerconf.cli import main

        monkeypatch.chdir(tmp_path)
        assert main([*command, "-o", "", "--", *BASE]) == 2
        err = capsys.readouterr().err
        assert "error: argument -o/--output: the path is empty, so it names no file" in err
        assert list(tmp_path.iterdir()) == []

    def test_a_file_with_a_slash_after_it(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """'-o notes.txt/' where notes.txt is a file: not called a directory."""
        from layerconf.cli import main

        monkeypatch.chdir(tmp_path)
        Path("notes.txt").write_text("mine\n")
        assert main(["show", "--role-file", "-o", "notes.txt/", "--", *BASE]) == 2
        err = capsys.readouterr().err
        assert (
            "cannot write the role file: notes.txt/ ends with '/', which names a directory, " in err
        )
        assert "notes.txt is a file" in err
        assert Path("notes.txt").read_text() == "mine\n"

    def test_the_bundled_example(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The README's example command line round-trips through the written file."""
        from layerconf.cli import main

        root = Path(__file__).parent.parent
        monkeypatch.chdir(root)
        argv = (root / "examples" / "ppo_argv.txt").read_text().split()
        output = tmp_path / "roles.yaml"
        assert main(["show", "--role-file", "-o", str(output), "--", *argv]) == 0
        capsys.readouterr()
        before = _values(_resolve(argv))
        argv[argv.index("--megatron-config-path") + 1] = str(output)
        assert _values(_resolve(argv)) == before
