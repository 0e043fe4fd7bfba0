"""The package's public face: every exported name resolves, and heavy features load lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

import layerconf


class TestPublicNames:
    """__all__ is the public face, sorted, and every name in it is there."""

    @pytest.mark.parametrize("name", layerconf.__all__)
    def test_every_name_resolves(self, name: str) -> None:
        """Eager and lazy names alike."""
        assert getattr(layerconf, name) is not None

    def test_unknown_name(self) -> None:
        """A missing name is an AttributeError, as for any module."""
        with pytest.raises(AttributeError, match="no attribute 'nope'"):
            layerconf.nope

    def test_dir_lists_the_public_names(self) -> None:
        """Completion in a REPL shows the lazy names too."""
        assert set(layerconf.__all__) <= set(dir(layerconf))


class TestLazyLoading:
    """import layerconf loads the core only; features load on first use."""

    def test_import_loads_only_the_core(self) -> None:
        """Neither argparse provenance, role files, the profile nor audit load with the package."""
        code = (
            "import sys, layerconf; "
            "print(sorted(m for m in sys.modules if m.startswith('layerconf')))"
        )
        loaded = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        for package in ("sources", "audits", "profiles", "presets", "rules", "cli"):
            assert f"'layerconf.{package}" not in loaded
        assert "yaml" not in loaded

    def test_first_use_loads(self) -> None:
        """Using a lazy name loads its module, once."""
        code = (
            "import sys, layerconf; layerconf.resolve_roles; "
            "print('layerconf.presets.resolve' in sys.modules, layerconf.resolve_roles is layerconf.resolve_roles)"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        assert out.split() == ["True", "True"]
