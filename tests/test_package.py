"""The package's public face and its layout: every exported name resolves (those of 0.1 too),
heavy features load lazily, and modules and functions stay small."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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

    def test_a_resolution_loads_only_what_it_uses(self, tmp_path: Path) -> None:
        """A first resolution with a role file loads no module only other features need: the
        schema, audits, the CLI, the bundled profile, json, OpenSSL's hashlib, difflib (the
        did-you-mean of a message), or what reads pipes and locates a line."""
        role_file = tmp_path / "ppo.yaml"
        role_file.write_text("megatron:\n  - role: critic\n    overrides: {lr: 1e-5}\n")
        code = (
            # What the dependencies load themselves is theirs (attrs on 3.10 loads select).
            "import argparse, sys, attrs, deepmerge, yaml\n"
            "before = set(sys.modules)\n"
            "import layerconf\n"
            "parser = argparse.ArgumentParser()\n"
            "parser.add_argument('--megatron-config-path')\n"
            "parser.add_argument('--lr', type=float, default=1e-3)\n"
            "parser.add_argument('--wandb-key')\n"
            "roles = layerconf.resolve_roles(parser, sys.argv[1:])\n"
            "assert (roles['actor'].lr, roles['critic'].lr) == (1e-6, 1e-5), roles\n"
            "print(*sorted(set(sys.modules) - before))\n"
        )
        argv = ["--megatron-config-path", str(role_file), "--lr", "1e-6", "--wandb-key", "k" * 9]
        loaded = subprocess.run(
            [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True
        ).stdout.split()
        assert "layerconf.presets.resolve" in loaded  # the resolution did run
        unused = {
            "layerconf.presets.schema",
            "layerconf.audits",
            "layerconf.cli",
            "layerconf.profiles",
            "json",
            "hashlib",
            "_hashlib",
            "difflib",
            "select",
            "bisect",
        }
        assert sorted(unused.intersection(loaded)) == []

    def test_deepmerge_loads_for_nested_merges_only(self, tmp_path: Path) -> None:
        """deepmerge is imported by the first merge of two containers, not before: a role
        file of plain values never needs it; two mappings merged load it and merge as they
        always did."""
        role_file = tmp_path / "ppo.yaml"
        role_file.write_text("megatron:\n  - role: critic\n    overrides: {lr: 1e-5}\n")
        code = (
            "import argparse, sys, layerconf\n"
            "parser = argparse.ArgumentParser()\n"
            "parser.add_argument('--megatron-config-path')\n"
            "parser.add_argument('--lr', type=float, default=1e-3)\n"
            "roles = layerconf.resolve_roles(parser, sys.argv[1:])\n"
            "print(roles['critic'].lr, 'deepmerge' in sys.modules)\n"
            "layers = [layerconf.Layer.from_mapping(name, {'data': {name: 1}}) for name in 'ab']\n"
            "print(layerconf.LayerStack(layers).resolve().data, 'deepmerge' in sys.modules)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, "--megatron-config-path", str(role_file)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out == "1e-05 False\n{'a': 1, 'b': 1} True\n"

    def test_the_benchmark_imports_what_a_first_resolution_imports(self) -> None:
        """benchmarks/run.py times ``FIRST_RESOLUTION_IMPORTS`` as what a process that resolves
        roles imports: the layerconf modules it loads are exactly those that ``import
        layerconf`` and a first `resolve_roles` (the fixture's argv and role file, the bundled
        parser already built) load, no fewer and no more."""
        run_py = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
        statement = next(
            ast.literal_eval(node.value)
            for node in ast.parse(run_py.read_text()).body
            if isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets]
            == ["FIRST_RESOLUTION_IMPORTS"]
        )
        listed = "import sys\n" + statement + "\n"
        resolved = (
            "import sys, layerconf\n"
            "argv = open('slime_ppo_argv.txt').read().splitlines()\n"
            "layerconf.resolve_roles(layerconf.load_profile(), argv)\n"
        )
        # The bundled parser's own modules (the profiles, the formatter class it is built
        # with) are the benchmark's parser, not the resolution's.
        report = (
            "print(*sorted(m for m in sys.modules if m.startswith('layerconf')"
            " and not m.startswith(('layerconf.profiles', 'layerconf.core._unmeasured'))))\n"
        )
        fixtures = Path(__file__).resolve().parent / "fixtures"

        def loaded(code: str) -> list[str]:
            return subprocess.run(
                [sys.executable, "-c", code + report],
                capture_output=True,
                text=True,
                check=True,
                cwd=fixtures,
            ).stdout.split()

        assert "layerconf.presets.resolve" in loaded(resolved)
        assert loaded(listed) == loaded(resolved)

    def test_a_command_loads_only_its_own_module(self) -> None:
        """``layerconf check`` imports the check command, not the other commands (audit, schema,
        completion...) nor pathlib (only -o writes a file), nor shutil: neither its own parser
        nor the bundled one asks the terminal for its width while it is built."""
        code = (
            "import sys\n"
            "from layerconf.cli import main\n"
            "status = main(['check', '--', '--rollout-batch-size', '4', '--lr', '1e-6'])\n"
            "loaded = [m for m in sys.modules if m.startswith('layerconf.cli.commands.')]\n"
            "print('MODULES', status, *sorted(loaded), 'pathlib' in sys.modules,"
            " 'shutil' in sys.modules)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        modules = out.splitlines()[-1].split()
        assert modules == ["MODULES", "0", "layerconf.cli.commands.check", "False", "False"]

    def test_the_console_script_runs_no_young_collection(self) -> None:
        """The console script's process is the command's: its objects (the modules, a thousand
        actions) are not walked by the collector every 700 of them. A `check` of the real
        launch runs no collection at all, and its answer is the same."""
        fixtures = Path(__file__).parent / "fixtures"
        argv = (fixtures / "slime_ppo_argv.txt").read_text().split()
        code = (
            "import gc, sys\n"
            "import _layerconf_cli\n"
            f"sys.argv = ['layerconf', 'check', '--', *{argv!r}]\n"
            "runs = []\n"
            "gc.callbacks.append(lambda phase, info: runs.append(info['generation']))\n"
            "status = _layerconf_cli.main()\n"
            "print('RUNS', status, len(runs) // 2)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=fixtures
        ).stdout
        assert out.splitlines()[-1].split() == ["RUNS", "0", "0"], out

    def test_every_command_is_listed_where_it_is(self) -> None:
        """The dispatch table names each command's module: a command added to a module and not
        to the table, or moved, fails here."""
        import importlib
        import pkgutil

        from layerconf.cli import app, commands

        defined = {}
        for module in pkgutil.iter_modules(commands.__path__):
            imported = importlib.import_module(f"{commands.__name__}.{module.name}")
            for command in getattr(imported, "COMMANDS", ()):
                defined[command.name] = module.name
        assert defined == app._COMMAND_MODULES
        assert list(app._commands()) == list(app._COMMAND_MODULES)

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


class TestLayout:
    """The rooms stay small: a module under ~600 lines, a function under ~80 unless it says why."""

    PACKAGE = Path(layerconf.__file__).parent

    def modules(self) -> list[Path]:
        return sorted(self.PACKAGE.rglob("*.py"))

    def test_modules_are_small(self) -> None:
        long = {
            str(path.relative_to(self.PACKAGE)): count
            for path in self.modules()
            if (count := len(path.read_text().splitlines())) > 600
        }
        assert long == {}

    def test_functions_are_short_or_say_why(self) -> None:
        long = []
        for path in self.modules():
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                reason = "Long because" in (ast.get_docstring(node) or "")
                if length > 80 and not reason:
                    long.append(f"{path.relative_to(self.PACKAGE)}:{node.lineno} {node.name}")
        assert long == []


#: Every name layerconf 0.1 exported, which every later version keeps (renamed ones as aliases).
PUBLIC_0_1 = [
    "SECRETS",
    "SLIME",
    "AuditChange",
    "AuditError",
    "AuditRecord",
    "ConfigError",
    "Convert",
    "Decision",
    "Drop",
    "FunctionRule",
    "Layer",
    "LayerStack",
    "LayerconfError",
    "LayerconfWarning",
    "Namespace",
    "NoProvenanceError",
    "OpaqueValue",
    "Origin",
    "Policy",
    "Preset",
    "Problem",
    "Provenance",
    "Reason",
    "RoleFile",
    "Rule",
    "RuleContext",
    "RuleError",
    "RuleSet",
    "SecretPolicy",
    "SetValue",
    "Setting",
    "Stage",
    "TypeCoercion",
    "UnknownKeyError",
    "UnknownProfileError",
    "YamlDocument",
    "audit",
    "available_profiles",
    "check_role_file",
    "check_yaml",
    "diff_audits",
    "expected_kind",
    "explain",
    "explain_all",
    "flatten",
    "is_secret",
    "load_audit",
    "load_profile",
    "load_yaml",
    "notices",
    "parse_args",
    "parse_known_args",
    "parse_yaml",
    "provenance_of",
    "read_role_file",
    "redact",
    "redacted_argv",
    "resolve_roles",
    "resolve_stacks",
    "rule",
    "slime_rules",
    "write_audit",
]


#: Names added since 0.1.
ADDED = ["FrozenNamespaceError", "freeze"]


@pytest.mark.parametrize("name", ADDED)
def test_added_names(name: str) -> None:
    """Exported, and listed in __all__."""
    assert name in layerconf.__all__
    assert getattr(layerconf, name) is not None


class TestPublicApiKept:
    """What 0.1 exported still imports, from where it was."""

    @pytest.mark.parametrize("name", PUBLIC_0_1)
    def test_top_level(self, name: str) -> None:
        assert name in layerconf.__all__
        assert getattr(layerconf, name) is not None

    def test_compat_slime(self) -> None:
        from layerconf.compat.slime import SlimeConfigError, parse_megatron_role_args

        assert issubclass(SlimeConfigError, AssertionError)
        assert callable(parse_megatron_role_args)

    def test_the_public_modules(self) -> None:
        """layerconf.exceptions, layerconf.profiles.megatron_slime: imported by users as such."""
        from layerconf.exceptions import ConfigError
        from layerconf.profiles.megatron_slime import AttnBackend

        assert ConfigError is layerconf.ConfigError
        assert AttnBackend.flash.name == "flash"


class TestSupportedPythons:
    """The classifiers name exactly the Pythons CI tests."""

    def test_classifiers_are_what_ci_tests(self) -> None:
        import re

        root = Path(__file__).parent.parent
        found = re.search(r"^SUPPORTED=\(([\d. ]+)\)", (root / ".ci/run").read_text(), re.M)
        assert found is not None
        tested = found.group(1).split()
        pyproject = (root / "pyproject.toml").read_text()
        classified = re.findall(r'"Programming Language :: Python :: (3\.\d+)"', pyproject)
        assert classified == tested
        requires = re.search(r'^requires-python = ">=(3\.\d+)"', pyproject, re.M)
        assert requires is not None
        assert requires.group(1) == tested[0]
