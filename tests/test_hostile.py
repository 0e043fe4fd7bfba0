"""Hostile inputs: every one is a clean error or a clean result, at the exact location.

The corpus is the role files of ``tests/bad_role_files`` (their expected problems in
``expected.json``) and the hostile classes of issue 13, written into a temporary directory at
test time (the large ones are generated, never committed). Each role file goes through the
library (`read_role_file`, `resolve_roles` with the bundled parser) and through every command
that reads a role file (check, show, explain, diff, audit), which must report it at its
location, never print a traceback, and change nothing: neither the file, nor the parser, nor
the command line handed in. Every public function refuses a wrong argument type with a
`TypeError` naming the argument.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import io
import json
import os
import stat
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import layerconf
import layerconf.audits
import layerconf.rules
import layerconf.sources
import layerconf.sources.argv as argv_module
import layerconf.sources.files as files_module
from layerconf import ConfigError, load_profile, read_role_file, resolve_roles
from layerconf.cli import main
from layerconf.cli.stops import crash_text, raised_by_layerconf
from layerconf.core.checks import check_type
from layerconf.sources.files import MAX_BYTES
from layerconf.sources.yaml import MAX_DEPTH, MAX_NODES

ROOT = Path(__file__).resolve().parent.parent
BAD = ROOT / "tests" / "bad_role_files"
# The example's launch without its one --save: a hostile file with no critic entry would
# otherwise fail on the run's shared checkpoint directory (rule distinct-across-roles), not on
# anything of its own.
_EXAMPLE = (ROOT / "examples" / "ppo_argv.txt").read_text().split()
_SAVE = _EXAMPLE.index("--save")
ARGV = _EXAMPLE[:_SAVE] + _EXAMPLE[_SAVE + 2 :]
EXPECTED: dict[str, list[str]] = {
    name: value
    for name, value in json.loads((BAD / "expected.json").read_text()).items()
    if not name.startswith("_")
}
COMMANDS = (["check"], ["show"], ["explain", "lr"], ["diff"], ["audit"])
ENTRY = "megatron:\n  - role: critic\n    overrides:\n"
HUGE_HEX = "0x" + "f" * 4000  # 4,002 characters: read, but 4,817 digits: str() refuses it


def _text(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(text, encoding="utf-8")


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _too_large(path: Path) -> None:
    with open(path, "wb") as stream:
        stream.truncate(MAX_BYTES + 1)


#: name -> (how to write it, where its first error is, a fragment of that error's message).
HOSTILE: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "alias_free_list.yaml": (
        _text(ENTRY + "      lr: [" + ",".join(["0"] * 1_000_000) + "]\n"),
        f"4:{len('      lr: [') + 2 * (MAX_NODES - 10) + 1}",  # 10 nodes before the first item
        f"more than {MAX_NODES:,} YAML nodes",
    ),
    "deep_and_long.yaml": (
        _text("#" + "x" * MAX_NODES + "\n" + ENTRY + "      lr: " + "[" * 150 + "]" * 150 + "\n"),
        f"5:{len('      lr: ') + MAX_DEPTH - 3}",  # the list starts 4 levels deep
        f"more than {MAX_DEPTH} levels deep",
    ),
    "sexagesimal_float.yaml": (
        _text(ENTRY + "      lr: " + "59:" * 300 + "59.5\n      seed: x\n"),
        "4:11",
        "cannot be read as !!float: it is too large",
    ),
    "long_decimal.yaml": (
        _text(ENTRY + "      seed: " + "9" * 5000 + "\n"),
        "4:13",
        "a number of 5,000 characters",
    ),
    "huge_hex_for_float_and_str.yaml": (
        _text(ENTRY + f"      lr: {HUGE_HEX}\n      save: {HUGE_HEX}\n      seed: x\n"),
        "4:11",
        "'lr' must be a float (got an int of about 4,817 digits",
    ),
    "line_separators.yaml": (
        _text(
            "# NEL\x85\n# LS\u2028\n# PS\u2029\n" + ENTRY + "      n: 'a\u2028b'\n      lr: [1\n"
        ),
        "9:1",
        "invalid YAML",
    ),
    "fifo.yaml": (_fifo, "-:-", "is a pipe or FIFO that nothing was written to"),
    "too_large.yaml": (_too_large, "-:-", f"is larger than {MAX_BYTES:,} bytes"),
}


#: Hostile files that read as YAML, whose values fail when resolved (type coercion).
RESOLVING = {"huge_hex_for_float_and_str.yaml"}


def _first_error(name: str) -> tuple[str, str] | None:
    """Where the first error of a bad role file is, and its message, from expected.json."""
    for line in EXPECTED[name]:
        where, _, rest = line.partition(": ")
        severity, _, message = rest.partition(": ")
        if severity == "error":
            return where, message
    return None


def _corpus() -> list[Any]:
    cases = [pytest.param(name, id=name) for name in sorted(EXPECTED)]
    return cases + [pytest.param(name, id=name) for name in sorted(HOSTILE)]


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return load_profile()


@pytest.fixture
def role_file(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str | None, str]:
    """The role file of the case, its first error's location (None: no error) and message."""
    name: str = request.param
    if name in HOSTILE:
        write, where, message = HOSTILE[name]
        path = tmp_path / name
        write(path)
        return path, where, message
    expected = _first_error(name)
    path = tmp_path / name
    path.write_bytes((BAD / name).read_bytes())
    return (path, *expected) if expected is not None else (path, None, "")


def _fingerprint(path: Path) -> str:
    if stat.S_ISREG(path.stat().st_mode):
        return hashlib.sha256(path.read_bytes()).hexdigest()
    return str(path.stat().st_mode)


def _parser_state(parser: argparse.ArgumentParser) -> list[Any]:
    return [dict(parser._defaults)] + [
        (a.dest, a.type, a.choices, a.nargs, a.required, repr(a.default)) for a in parser._actions
    ]


def _location(where: str, path: Path) -> str:
    """How a problem at `where` ('line:col', or '-:-') starts its line."""
    return f"{path}: error: " if where == "-:-" else f"{path}:{where}: error: "


@pytest.fixture(autouse=True)
def _short_pipe_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files_module, "PIPE_WAIT", 0.05)


class TestCorpus:
    """Every hostile role file, through the library and every command that reads one."""

    @pytest.mark.parametrize("role_file", _corpus(), indirect=True)
    def test_library(
        self, role_file: tuple[Path, str | None, str], parser: argparse.ArgumentParser
    ) -> None:
        """read_role_file and resolve_roles raise ConfigError at the location, or succeed."""
        path, where, message = role_file
        before, state = _fingerprint(path), _parser_state(parser)
        argv = [str(path) if token.endswith("megatron_ppo.yaml") else token for token in ARGV]
        handed = list(argv)
        for reads_values, call in (
            (False, lambda: read_role_file(path)),
            (True, lambda: resolve_roles(parser, argv, warn=False)),
        ):
            if where is None or (path.name in RESOLVING and not reads_values):
                call()  # a clean result (a file whose values fail only when resolved)
                continue
            with pytest.raises(ConfigError) as caught:
                call()
            errors = [str(p) for p in caught.value.problems if p.severity == "error"]
            assert any(e.startswith(_location(where, path)) and message in e for e in errors)
        assert (_fingerprint(path), _parser_state(parser), argv) == (before, state, handed)

    @pytest.mark.parametrize("role_file", _corpus(), indirect=True)
    def test_commands(self, role_file: tuple[Path, str | None, str]) -> None:
        """check, show, explain, diff and audit: the location, no traceback, exit 0 or 1."""
        path, where, message = role_file
        before = _fingerprint(path)
        argv = [str(path) if token.endswith("megatron_ppo.yaml") else token for token in ARGV]
        for command in COMMANDS:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = main([*command, "--", *argv])
            text = out.getvalue() + err.getvalue()
            assert "Traceback" not in text
            if where is None:
                assert status == 0, (command, text)
            else:
                assert status == 1, (command, text)
                assert any(
                    line.startswith(_location(where, path)) and message in line
                    for line in text.splitlines()
                ), (command, text)
        assert _fingerprint(path) == before

    def test_every_problem_of_a_file_with_huge_numbers(self, tmp_path: Path) -> None:
        """A huge int for a float and a str dest is one problem each, among the others."""
        path = tmp_path / "roles.yaml"
        HOSTILE["huge_hex_for_float_and_str.yaml"][0](path)
        argv = [str(path) if token.endswith("megatron_ppo.yaml") else token for token in ARGV]
        with pytest.raises(ConfigError) as caught:
            resolve_roles(load_profile(), argv, warn=False)
        found = caught.value.problems
        assert [(p.key, p.line, p.column) for p in found if p.key in ("lr", "save", "seed")] == [
            ("lr", 4, 11),
            ("save", 5, 13),
            ("seed", 6, 13),
        ]


class TestRepeatedOptions:
    """argparse's time grows with the square of the options: a command line past
    MAX_OPTIONS options is one problem before parsing, at the first option past it."""

    @pytest.fixture
    def parser(self, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
        monkeypatch.setattr(argv_module, "MAX_OPTIONS", 40)
        made = argparse.ArgumentParser()
        made.add_argument("--lr", type=float)
        made.add_argument("--data", nargs="*")
        made.add_argument("rest", nargs="*")
        return made

    def test_at_the_limit(self, parser: argparse.ArgumentParser) -> None:
        """40 options, and any number of values that are not options, are parsed."""
        argv = ["--lr", "1e-5"] * 39 + ["--data", *(f"/d/{i}" for i in range(500))]
        assert resolve_roles(parser, argv, preset=layerconf.PLAIN)["main"].lr == 1e-5

    def test_past_the_limit(self, parser: argparse.ArgumentParser) -> None:
        argv = ["--lr", "1e-5"] * 41
        with pytest.raises(ConfigError) as caught:
            resolve_roles(parser, argv, preset=layerconf.PLAIN)
        [problem] = caught.value.problems
        assert (problem.layer, problem.argv_index) == ("cli", 80)
        assert "more than 40 options" in problem.message
        assert "MAX_OPTIONS" in problem.message
        with pytest.raises(ConfigError):
            layerconf.parse_args(parser, argv)

    def test_the_message_says_whose_time_it_bounds(self, parser: argparse.ArgumentParser) -> None:
        """The limit is argparse's (quadratic before Python 3.13), kept on every Python."""
        with pytest.raises(ConfigError) as caught:
            layerconf.parse_known_args(parser, ["--lr", "1e-5"] * 41)
        [problem] = caught.value.problems
        assert "the same on every Python" in problem.message
        assert "argparse before Python 3.13 takes a time growing with their square" in (
            problem.message
        )

    def test_after_a_double_dash_nothing_counts(self, parser: argparse.ArgumentParser) -> None:
        """Tokens after '--' are values, whatever they look like."""
        argv = ["--lr", "1", "--", *["-x"] * 100]
        assert layerconf.parse_args(parser, argv).rest == ["-x"] * 100

    def test_the_command(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The command reports it like any problem of the command line: exit 1, one line."""
        monkeypatch.setattr(argv_module, "MAX_OPTIONS", 40)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            status = main(["check", "--", *ARGV, *["--lr", "1e-5"] * 40])
        text = out.getvalue() + err.getvalue()
        assert status == 1
        assert "Traceback" not in text
        options = sum(token.startswith("-") for token in ARGV)  # fewer than 40
        assert f"argv[{len(ARGV) + 2 * (40 - options)}]: error: the command line holds" in text


class TestWhoseFailure:
    """layerconf's own failures are never reported as the trainer's, nor the reverse."""

    def test_a_failure_inside_layerconf(self) -> None:
        with pytest.raises(TypeError) as caught:
            check_type("f", "x", 1, str, "str")
        # (the command reports it as its own bug, exit 70: tests/test_rules.py::TestWhoseBug)
        assert raised_by_layerconf(traceback.extract_tb(caught.value.__traceback__))

    def test_a_failure_in_the_trainers_code(self, tmp_path: Path) -> None:
        source = tmp_path / "trainer_types.py"
        source.write_text("def parse(text):\n    raise ValueError('no')\n")
        namespace: dict[str, Any] = {}
        exec(compile(source.read_text(), str(source), "exec"), namespace)  # a trainer's file
        with pytest.raises(ValueError, match="no") as caught:
            namespace["parse"]("x")
        assert crash_text(caught.value, [], argparse.ArgumentParser()).startswith(
            "the trainer's parser raised ValueError: no"
        )


# ---------------------------------------------------------------------------------------------
# Wrong argument types

P = argparse.ArgumentParser()
S = layerconf.sources
R = layerconf.rules
A = layerconf.audits

#: name -> (the function, positional arguments, keyword arguments, the argument named).
WRONG: dict[str, tuple[Any, tuple[Any, ...], dict[str, Any], str]] = {
    "parse_args": (layerconf.parse_args, (P, "--lr 1e-5"), {}, "args"),
    "parse_known_args": (layerconf.parse_known_args, ("P", []), {}, "ArgumentParser"),
    "resolve_roles": (resolve_roles, (P, "--lr 1e-5"), {}, "args"),
    "resolve_roles/parser": (resolve_roles, (None, []), {}, "parser"),
    "resolve_roles/preset": (resolve_roles, (P, []), {"preset": "slime"}, "preset"),
    "resolve_roles/sources": (resolve_roles, (P, []), {"sources": "env"}, "sources"),
    "resolve_roles/sources item": (resolve_roles, (P, []), {"sources": ["env"]}, "sources"),
    "audit": (layerconf.audit, ([],), {}, "roles"),
    "audit/secrets": (layerconf.audit, ({},), {"secrets": ["token"]}, "secrets"),
    "write_audit": (layerconf.write_audit, ({}, 5), {}, "directory"),
    "diff_audits": (layerconf.diff_audits, ({}, None), {}, "after"),
    "flatten": (layerconf.flatten, (None,), {}, "record"),
    "load_audit": (layerconf.load_audit, (None,), {}, "path"),
    "expected_kind": (layerconf.expected_kind, ("--lr",), {}, "action"),
    "load_profile": (layerconf.load_profile, (5,), {}, "name"),
    "check_role_file": (layerconf.check_role_file, (None,), {}, "path"),
    "read_role_file": (read_role_file, (b"roles.yaml",), {}, "path"),
    "slime_rules": (layerconf.slime_rules, ("parser",), {}, "parser"),
    "check_yaml": (layerconf.check_yaml, (None,), {}, "path"),
    "load_yaml": (layerconf.load_yaml, (3,), {}, "path"),
    "parse_yaml": (layerconf.parse_yaml, (None,), {}, "text"),
    "parse_yaml/bytes": (layerconf.parse_yaml, (b"a: 1",), {}, "text"),
    "TypeCoercion": (layerconf.TypeCoercion, ("parser",), {}, "parser"),
    "EnvSource": (layerconf.EnvSource, (5,), {}, "prefix"),
    "EnvSource/environ": (layerconf.EnvSource, ("X_",), {"environ": ["X_A=1"]}, "environ"),
    "MappingSource": (S.MappingSource, ("m", [("lr", 1)]), {}, "values"),
    "IgnoredKeys": (R.IgnoredKeys, (["num_nodes"],), {}, "keys"),
    "PpoScope": (R.PpoScope, (5,), {}, "role"),
    "RoleDefaults": (R.RoleDefaults, ("critic", [("kl_coef", 0)]), {}, "values"),
    "TopologyGuard": (R.TopologyGuard, ("seed",), {}, "keys"),
    "UnknownKeys": (R.UnknownKeys, ("parser",), {}, "parser"),
    "UnexpandedText": (R.UnexpandedText, (5,), {}, "layer"),
    "Preset": (layerconf.Preset, (5, ("main",)), {}, "name"),
    "ValueTypes": (layerconf.ValueTypes, (5,), {}, "classes"),
    "record_bytes": (A.record_bytes, (None,), {}, "record"),
    "sign": (A.sign, ([], b"key"), {}, "record"),
    "write_atomic": (A.write_atomic, ("/tmp", "x", b""), {}, "directory"),
    "DistinctAcrossRoles": (R.DistinctAcrossRoles, ("save",), {}, "keys"),
    "freeze": (layerconf.freeze, (argparse.Namespace(),), {}, "args"),
    "redacted_argv": (layerconf.redacted_argv, ("--wandb-key k",), {}, "argv"),
}
#: Public names that take no argument, or are records layerconf builds and hands out (results,
#: not inputs), or constants.
NOT_CHECKED = {
    "available_profiles": "takes no argument",
    "standard_types": "takes no argument",
    "AuditChange": "a result of diff_audits",
    "AuditRecord": "a result of load_audit",
    "OpaqueValue": "a value load_audit builds",
    "RoleFile": "a result of read_role_file",
    "YamlDocument": "a result of parse_yaml",
    "Reading": "a result of Source.read",
    "Source": "a Protocol",
}


def _public_callables() -> set[str]:
    names = set(layerconf._LAZY) | set(S.__all__) | set(R.__all__) | set(A.__all__)
    modules = (layerconf, S, R, A)
    return {
        name
        for name in names
        if any(callable(getattr(module, name, None)) for module in modules) and not name.isupper()
    }


class TestWrongTypes:
    """Every public function refuses a wrong argument type with a TypeError naming it."""

    def test_every_public_function_is_covered(self) -> None:
        covered = {name.partition("/")[0] for name in WRONG} | set(NOT_CHECKED)
        assert _public_callables() - covered == set()

    @pytest.mark.parametrize("name", sorted(WRONG))
    def test_wrong_type(self, name: str, tmp_path: Path) -> None:
        function, args, kwargs, argument = WRONG[name]
        with pytest.raises(TypeError) as caught:
            function(*copy.deepcopy(args), **kwargs)
        assert argument in str(caught.value)


# ---------------------------------------------------------------------------------------------
# Values too large to print


@pytest.fixture(scope="module")
def huge_parser_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A trainer whose --seed defaults to 1 << 20000; one file for the module, as the command
    imports a --parser file once per process."""
    path = tmp_path_factory.mktemp("huge") / "huge_trainer.py"
    path.write_text(
        "import argparse\n\n\ndef get_parser():\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--seed', type=int, default=1 << 20000)\n"
        "    parser.add_argument('--lr', type=float, default=1.0)\n"
        "    return parser\n"
    )
    return f"{path}:get_parser"


class TestHugeValuesInTheCommands:
    """A parser default of 1 << 20000 (6,021 digits, past Python's 4,300-digit str limit) is
    shown shortened by every command, in every format, never as a traceback."""

    @pytest.mark.parametrize(
        "command",
        [
            ["show", "--all"],
            ["show", "--all", "--json"],
            ["show", "--all", "--yaml"],
            ["explain", "seed"],
            ["explain", "seed", "--json"],
            ["diff"],
            ["check"],
        ],
        ids=" ".join,
    )
    def test_every_command(self, huge_parser_file: str, command: list[str]) -> None:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            status = main([*command, "--parser", huge_parser_file, "--", "--lr", "2"])
        text = out.getvalue() + err.getvalue()
        assert status == 0, text
        assert "Traceback" not in text
        if command[0] in ("show", "explain") and len(command) == 2 and command[1] != "--all":
            assert "<int of 6,021 digits: 3980...9376>" in text
