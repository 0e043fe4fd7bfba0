"""The rule sets resolve_roles keeps per parser and preset: a kept one never decides for another."""

from __future__ import annotations

import argparse
import gc
import tracemalloc
import weakref
from pathlib import Path
from typing import Any

import attrs
import pytest

from layerconf import ConfigError, LayerconfWarning, RuleSet
from layerconf.presets import SLIME, Preset, resolve_roles
from layerconf.presets import resolve as resolve_module
from layerconf.presets.role_file import RoleFileFormat, check_role_file
from tests.conftest import FIXTURES


def _parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser()
    made.add_argument("--roles-file")
    made.add_argument("--lr", type=float, default=1e-3)
    return made


def _mine() -> Preset:
    return attrs.evolve(SLIME, name="mine", config_dest="roles_file")


def _refused_after_a_first_call(
    tmp_path: Path,
) -> tuple[argparse.ArgumentParser, list[str], Preset]:
    """A parser, a command line naming a role file that sets an unknown key, and the preset
    whose first resolution of them refused that key."""
    made = _parser()
    path = tmp_path / "roles.yaml"
    path.write_text("megatron:\n  - role: actor\n    overrides: {rate: 1}\n")
    argv = ["--roles-file", str(path)]
    mine = _mine()
    with pytest.raises(ConfigError, match="'rate' is not an argument"):
        resolve_roles(made, argv, preset=mine)
    return made, argv, mine


class TestKept:
    def test_equal_presets_share_one_rule_set(self) -> None:
        """Two equal presets, built apart, get the one rule set built for the first."""
        made = _parser()
        first = resolve_module._rules_for(made, _mine())
        assert resolve_module._rules_for(made, _mine()) is first

    def test_an_evolved_preset_gets_its_own(self, tmp_path: Path) -> None:
        """A preset changed with attrs.evolve (same name, a field hashing does not read) after a
        first resolution: its rules are its own, not the first preset's."""
        made, argv, mine = _refused_after_a_first_call(tmp_path)
        ignoring = attrs.evolve(mine, ignored_keys={"rate": "the command line"})
        assert ignoring.name == mine.name
        with pytest.warns(LayerconfWarning, match="rate"):
            roles = resolve_roles(made, argv, preset=ignoring)
        assert "rate" not in vars(roles["actor"])
        with pytest.raises(ConfigError, match="'rate' is not an argument"):
            resolve_roles(made, argv, preset=mine)

    def test_an_evolved_layer_name_gets_its_own(self, tmp_path: Path) -> None:
        """Same name, another role layer: the rules work on the new layer."""
        made, argv, mine = _refused_after_a_first_call(tmp_path)
        other = attrs.evolve(mine, layer="overrides")
        with pytest.raises(ConfigError, match="'rate' is not an argument"):
            resolve_roles(made, argv, preset=other)

    def test_same_preset_other_rules_callable(self) -> None:
        """Equal but for their rules callables: each its own rule set."""
        made = _parser()
        mine = _mine()
        lenient = attrs.evolve(mine, rules=lambda parser: RuleSet([]))
        assert resolve_module._rules_for(made, lenient).names == ()
        assert resolve_module._rules_for(made, mine).names != ()
        assert resolve_module._rules_for(made, lenient).names == ()


class _Hinting(RoleFileFormat):
    """A format whose hint is its own (a subclass equal in fields to the base)."""

    @property
    def hint_when_empty(self) -> str:
        return "write the roles of this trainer"


class TestRoleFilesKept:
    """The role files read are kept by their bytes and the format they are read with."""

    def test_another_form_after_a_first_read(self, tmp_path: Path) -> None:
        """The same empty file read with a changed format: each format's own hint."""
        path = tmp_path / "roles.yaml"
        path.write_text("")
        plain = RoleFileFormat("roles")
        hints = [
            check_role_file(path, ("actor",), form=form).problems[0].hint
            for form in (plain, attrs.evolve(plain, empty_hint="say so"), _Hinting("roles"))
        ]
        assert hints == [plain.hint_when_empty, "say so", "write the roles of this trainer"]
        assert check_role_file(path, ("actor",), form=plain).problems[0].hint == hints[0]

    def test_another_top_key_and_a_changed_file(self, tmp_path: Path) -> None:
        """The top key changed, then the file changed, between calls."""
        path = tmp_path / "roles.yaml"
        path.write_text("roles:\n  - role: actor\n    overrides: {lr: 1}\n")
        assert check_role_file(path, ("actor",)).layers["actor"].values == {"lr": 1}
        other = check_role_file(path, ("actor",), form=RoleFileFormat("megatron"))
        assert other.layers == {}
        assert other.errors
        path.write_text("roles:\n  - role: actor\n    overrides: {lr: 2}\n")
        assert check_role_file(path, ("actor",)).layers["actor"].values == {"lr": 2}


class TestRetention:
    """A process that builds parser after parser (a sweep, a test suite) keeps only the last
    few: the caches hold their parsers' rules and tables, never every one."""

    @staticmethod
    def _resolve_with_fresh_parsers(count: int, argv: list[str]) -> list[weakref.ref[Any]]:
        from layerconf import load_profile
        from layerconf import resolve_roles as resolve_with_slime

        made = []
        for _ in range(count):
            parser = load_profile()
            resolve_with_slime(parser, argv)
            made.append(weakref.ref(parser))
        return made

    def test_dropped_parsers_are_freed(
        self, slime_argv: list[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(FIXTURES)
        made = self._resolve_with_fresh_parsers(12, slime_argv)
        gc.collect()
        alive = sum(ref() is not None for ref in made)
        assert alive <= resolve_module._KEPT_PARSERS

    def test_memory_stays_flat(
        self, slime_argv: list[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Past the first few parsers, each new one costs nothing that stays (0.39 MB each
        stayed, for ever, before: the rules held the parser a weak cache was keyed by)."""
        monkeypatch.chdir(FIXTURES)
        tracemalloc.start()
        try:
            # (the kept parsers replaced once by parsers made while tracing)
            self._resolve_with_fresh_parsers(resolve_module._KEPT_PARSERS + 2, slime_argv)
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            self._resolve_with_fresh_parsers(16, slime_argv)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert grown < 200_000, f"{grown:,} bytes kept by 16 parsers used and dropped"

    def test_the_kept_parsers_are_the_most_recent(self) -> None:
        parsers = [_parser() for _ in range(resolve_module._KEPT_PARSERS + 2)]
        for parser in parsers:
            resolve_module._rules_for(parser, _mine())
        first = resolve_module._rules_for(parsers[-1], _mine())
        kept = {id(entry[0]) for entry in resolve_module._RULES.values()}
        assert kept == {id(parser) for parser in parsers[-resolve_module._KEPT_PARSERS :]}
        assert resolve_module._rules_for(parsers[-1], _mine()) is first  # (still kept)

    def test_a_parser_used_with_preset_after_preset_keeps_a_few(self) -> None:
        """A parser resolved with many presets in turn keeps the rule sets of a few only."""
        made = _parser()
        for number in range(3 * resolve_module._KEPT_PRESETS):
            resolve_module._rules_for(made, attrs.evolve(_mine(), name=f"mine-{number}"))
            ((_, per_parser),) = (
                entry for entry in resolve_module._RULES.values() if entry[0] is made
            )
            assert 1 <= len(per_parser) <= resolve_module._KEPT_PRESETS
        latest = attrs.evolve(_mine(), name="latest")
        assert resolve_module._rules_for(made, latest) is resolve_module._rules_for(made, latest)
