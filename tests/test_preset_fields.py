"""A preset's key fields are what its rules follow, and they cannot change under them.

slime's standard rules are built from the preset's `ignored_keys`, `run_wide_keys` and
`extra_keys` (an ``attrs.evolve(SLIME, ...)`` changes the rules, not only the schema); the
fields are read-only mappings, since rules are built once per preset and parser; a preset still
pickles, copies and evolves.
"""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import attrs
import pytest

import layerconf
from layerconf import SLIME, ConfigError, Preset, resolve_roles
from layerconf.presets import role_file_schema

FIXTURES = Path(__file__).parent / "fixtures"
ARGV = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
MAPPINGS = ("extra_keys", "ignored_keys", "run_wide_keys")


def _argv(role_file: Path) -> list[str]:
    at = ARGV.index("--megatron-config-path") + 1
    return [*ARGV[:at], str(role_file), *ARGV[at + 1 :]]


def _problems(preset: Preset, overrides: dict[str, Any], tmp_path: Path) -> list[str]:
    """The problems (errors, else warnings; not the notes) of a role file giving the actor
    `overrides`."""
    role_file = tmp_path / "roles.yaml"
    lines = "".join(f"      {key}: {value}\n" for key, value in overrides.items())
    role_file.write_text(f"megatron:\n  - role: actor\n    overrides:\n{lines}")
    parser = layerconf.load_profile()
    try:
        roles = resolve_roles(parser, _argv(role_file), preset=preset, warn=False)
    except ConfigError as error:
        problems = error.problems
    else:
        problems = layerconf.notices(roles["actor"])
    return [f"{p.severity}: {p.message} ({p.hint})" for p in problems if p.severity != "info"]


EVOLVED = attrs.evolve(
    SLIME,
    ignored_keys={"seed": "--seed"},
    ignored_because="the launcher sets the seed",
    run_wide_keys={"lr": "--lr"},
    run_wide_because="one learning rate for the run",
    extra_keys={"my_note": "A note for the trainer's own code."},
)


class TestSlimesRulesFollowThePreset:
    """`attrs.evolve(SLIME, ...)` changes what the role layer's rules refuse, drop and know."""

    def test_its_run_wide_keys(self, tmp_path: Path) -> None:
        problems = _problems(EVOLVED, {"lr": "1e-5"}, tmp_path)
        assert problems == [
            "error: 'lr' is not allowed in a role file: one learning rate for the run "
            "(remove it and set --lr on the command line)"
        ]
        assert _problems(EVOLVED, {"use_critic": "true"}, tmp_path) == []  # no longer run-wide

    def test_its_ignored_keys(self, tmp_path: Path) -> None:
        assert _problems(EVOLVED, {"seed": "3"}, tmp_path) == [
            "warning: 'seed' is ignored: the launcher sets the seed "
            "(remove it; set --seed on the command line)"
        ]

    def test_its_extra_keys(self, tmp_path: Path) -> None:
        assert _problems(EVOLVED, {"my_note": "hello"}, tmp_path) == []
        schema = json.dumps(role_file_schema(layerconf.load_profile(), preset=EVOLVED))
        assert "A note for the trainer's own code." in schema

    def test_slime_itself_is_unchanged(self, tmp_path: Path) -> None:
        assert _problems(SLIME, {"num_nodes": "2"}, tmp_path) == [
            "warning: 'num_nodes' is ignored: resources come from the command line "
            "(remove it; set --actor-num-nodes / --critic-num-nodes on the command line)"
        ]
        assert _problems(SLIME, {"use_critic": "true"}, tmp_path) == [
            "error: 'use_critic' is not allowed in a role file: it decides the whole run "
            "(every role), not one role (remove it and set --use-critic on the command line)"
        ]


class TestReadOnlyKeys:
    """A preset's key mappings cannot be changed in place; it pickles, copies and evolves."""

    @pytest.mark.parametrize("field", MAPPINGS)
    def test_in_place_changes_are_refused(self, field: str) -> None:
        with pytest.raises(TypeError):
            getattr(SLIME, field)["seed"] = "--seed"
        assert "seed" not in getattr(SLIME, field)

    def test_the_callers_dict_is_copied(self) -> None:
        keys = {"seed": "--seed"}
        preset = Preset("p", roles=("main",), ignored_keys=keys)
        keys["lr"] = "--lr"
        assert dict(preset.ignored_keys) == {"seed": "--seed"}

    @pytest.mark.parametrize(
        "clone", [lambda p: pickle.loads(pickle.dumps(p)), copy.deepcopy, copy.copy]
    )
    def test_pickle_and_copies(self, clone: Any) -> None:
        for preset in (SLIME, EVOLVED):
            again = clone(preset)
            assert again == preset
            assert hash(again) == hash(preset)
            for field in MAPPINGS:
                assert dict(getattr(again, field)) == dict(getattr(preset, field))
                with pytest.raises(TypeError):
                    getattr(again, field)["seed"] = "--seed"

    def test_evolve(self) -> None:
        evolved = attrs.evolve(SLIME, name="slime-2")
        assert dict(evolved.ignored_keys) == dict(SLIME.ignored_keys)
        with pytest.raises(TypeError):
            evolved.run_wide_keys["seed"] = "--seed"  # type: ignore[index]

    def test_equal_to_a_dict(self) -> None:
        """Compared by content, as before: a preset built from equal dicts is equal."""
        one = Preset("p", roles=("main",), extra_keys={"a": "A"})
        assert one == Preset("p", roles=("main",), extra_keys={"a": "A"})
        assert one.extra_keys == {"a": "A"}
