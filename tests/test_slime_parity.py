"""The slime-parity rule: a warning wherever slime's own function would set another value.

slime's ``parse_megatron_role_args`` converts a role file's string only to the type of the
command line's value, when that is an int or a float: ``lr_warmup_fraction: 1e-2`` (a string
to YAML 1.1) over a dest the command line leaves at None stays the string ``'1e-2'`` in slime's
trainer, while layerconf resolves the float. `layerconf check` says so, at the value.
"""

from __future__ import annotations

import json
import math
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from layerconf import ConfigError, LayerconfWarning, load_profile, resolve_roles
from layerconf.cli import main
from layerconf.core.namespace import notices
from layerconf.core.values import same_value
from layerconf.presets.slime.parity import _agree, _float_text, _yaml_text
from tests.slime_reference import slime_resolve_roles

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_ARGV = (ROOT / "tests" / "fixtures" / "slime_ppo_argv.txt").read_text().split()
PARSER = load_profile()


def _argv(role_file: Path) -> list[str]:
    at = FIXTURE_ARGV.index("--megatron-config-path") + 1
    return [*FIXTURE_ARGV[:at], str(role_file), *FIXTURE_ARGV[at + 1 :]]


def _write(path: Path, overrides: str, role: str = "actor") -> Path:
    body = "".join(f"      {line}\n" for line in overrides.strip().splitlines())
    path.write_text(f"megatron:\n  - role: {role}\n    overrides:\n{body}")
    return path


def _parity(argv: list[str]) -> tuple[dict[str, Any], list[Any]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        roles = resolve_roles(PARSER, argv)
    found = [p for p in notices(roles["actor"]) if p.rule == "slime-parity"]
    assert len([w for w in caught if "slime's own" in str(w.message)]) == len(found)
    assert all(issubclass(w.category, LayerconfWarning) for w in caught)
    return roles, found


class TestOnTheRealParser:
    def test_a_string_over_none_is_a_warning_at_the_value(self, tmp_path: Path) -> None:
        role_file = _write(
            tmp_path / "m.yaml",
            "lr: 1e-5\nlr_warmup_fraction: 1e-2\ndecoupled_lr: 5e-6\nsave_interval: '50'\n",
        )
        roles, found = _parity(_argv(role_file))
        assert [(p.key, p.line, p.column, p.severity) for p in found] == [
            ("lr_warmup_fraction", 5, 27, "warning"),
            ("decoupled_lr", 6, 21, "warning"),
            ("save_interval", 7, 22, "warning"),
        ]
        assert str(found[0]) == (
            f"{role_file}:5:27: warning: 'lr_warmup_fraction': slime's own "
            "parse_megatron_role_args sets the string '1e-2', layerconf resolves the float "
            "0.01: slime converts a string only when the command line's value is an int or a "
            "float (here None) (write 0.01, which YAML reads as the float, so that both agree)"
        )
        assert found[1].hint == "write 5.0e-06, which YAML reads as the float, so that both agree"
        assert found[2].message.startswith(
            "'save_interval': slime's own parse_megatron_role_args sets the string '50', "
            "layerconf resolves the int 50"
        )
        assert found[2].hint == "write 50, which YAML reads as the int, so that both agree"
        # layerconf's own namespaces are right; slime's are what the warnings say.
        slime = slime_resolve_roles(PARSER, _argv(role_file))["actor"]
        assert (slime.lr_warmup_fraction, slime.decoupled_lr, slime.save_interval) == (
            "1e-2",
            "5e-6",
            "50",
        )
        assert (roles["actor"].lr_warmup_fraction, roles["actor"].save_interval) == (0.01, 50)

    def test_the_fixture_converts_alike(self) -> None:
        """``lr: 1e-5`` over the command line's ``--lr``: slime converts it too (a float)."""
        argv = [
            str(ROOT / "tests" / "fixtures" / t) if t.endswith(".yaml") else t for t in FIXTURE_ARGV
        ]
        assert _parity(argv)[1] == []

    def test_the_hint_written_agrees(self, tmp_path: Path) -> None:
        """Writing what the hint says leaves slime and layerconf agreeing: no warning."""
        role_file = _write(
            tmp_path / "m.yaml",
            "lr_warmup_fraction: 1.0e-2\ndecoupled_lr: 5.0e-06\nsave_interval: 50\n",
        )
        roles, found = _parity(_argv(role_file))
        assert found == []
        slime = slime_resolve_roles(PARSER, _argv(role_file))["actor"]
        for key in ("lr_warmup_fraction", "decoupled_lr", "save_interval"):
            assert same_value(getattr(slime, key), getattr(roles["actor"], key))

    def test_other_divergences(self, tmp_path: Path) -> None:
        role_file = _write(
            tmp_path / "m.yaml",
            "qk_clip_threshold: 1e-2\n"  # float type, int default: int('1e-2') fails
            "attention_backend: fused\n"  # an enum: slime keeps the string
            'train_env_vars: \'{"A": "1"}\'\n'  # JSON text over a dict
            "wandb_group: 2024\n"  # an int where the dest is a string
            "lr: 1\n"  # an int for the equal float: no difference
            "moe_aux_loss_coeff: [1, 0]\n",
        )
        _, found = _parity(_argv(role_file))
        by_key = {p.key: p for p in found}
        assert list(by_key) == [
            "qk_clip_threshold",
            "attention_backend",
            "train_env_vars",
            "wandb_group",
        ]
        assert "int('1e-2') fails, int being the type of the command line's value" in str(
            by_key["qk_clip_threshold"]
        )
        assert by_key["attention_backend"].hint == (
            "no role-file value makes slime's function set it: set --attention-backend on the "
            "command line, where argparse converts it (for both roles)"
        )
        assert by_key["train_env_vars"].hint.startswith("write {'A': '1'}, which YAML reads")
        assert by_key["wandb_group"].hint.startswith("write '2024', which YAML reads")

    def test_a_secret_is_never_quoted(self, tmp_path: Path) -> None:
        role_file = _write(tmp_path / "m.yaml", "wandb_key: 987654321\n")
        _, [problem] = _parity(_argv(role_file))
        assert "987654321" not in str(problem)
        assert "<redacted>" in problem.message
        assert problem.hint == "quote the value so that YAML reads it as the string, and both agree"

    def test_another_keys_secret_is_not_quoted(self, tmp_path: Path) -> None:
        """A secret pasted into another key's value is hidden too, as type-coercion hides it."""
        role_file = _write(tmp_path / "m.yaml", "wandb_key: '20241205'\nwandb_group: 20241205\n")
        _, [problem] = _parity(_argv(role_file))
        assert (problem.key, problem.rule) == ("wandb_group", "slime-parity")
        assert "20241205" not in str(problem)

    def test_check_reports_it_and_strict_fails(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        role_file = _write(tmp_path / "m.yaml", "lr_warmup_fraction: 1e-2\n")
        assert main(["check", "--", *_argv(role_file)]) == 0
        out = capsys.readouterr().out
        assert f"{role_file}:4:27: warning: 'lr_warmup_fraction': slime's own" in out
        assert main(["check", "--strict", "--", *_argv(role_file)]) == 1


_SCALARS = st.one_of(
    st.sampled_from(["1e-2", "50", "fused", "true"]),
    st.integers(-3, 300),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.none(),
)
#: Values per dest, of the forms a role file holds: most are accepted, many differ in slime.
_VALUES: dict[str, list[Any]] = {
    "lr": ["1e-5", 1e-5, 1, "2"],
    "lr_warmup_fraction": ["1e-2", 0.01, 0, "0.5", None],
    "save_interval": ["50", 50, None],
    "qk_clip_threshold": ["1e-2", 50, 0.5, "7"],
    "attention_backend": ["fused", "flash", "auto"],
    "wandb_group": [2024, "g", None],
    "train_env_vars": ['{"A": 1}', {"A": "1"}, {}],
    "exit_signal": ["SIGINT", "SIGTERM"],
    "use_kl_loss": [True, False],
    "eval_interval": ["10", 10],
    "moe_aux_loss_coeff": [[1, 0], ["0.1"], [0.1]],
    "recompute_modules": [[1, "core_attn"], ["core_attn"]],
}
_OVERRIDES = st.dictionaries(
    st.sampled_from(sorted(_VALUES)),
    st.none(),
    max_size=5,
).flatmap(
    lambda keys: st.fixed_dictionaries(
        {key: st.one_of(*[st.sampled_from(_VALUES[key])] * 12, _SCALARS) for key in keys}
    )
)


class TestLaw:
    """On generated overrides: a key is warned about exactly when slime's own function (the
    transcription in tests/slime_reference.py) sets a value layerconf does not resolve."""

    @settings(max_examples=100, deadline=None)
    @given(overrides=_OVERRIDES)
    def test_warned_iff_slime_differs(self, overrides: dict[str, Any]) -> None:
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "m.yaml"
            path.write_text(
                yaml.safe_dump({"megatron": [{"role": "actor", "overrides": overrides}]})
            )
            argv = _argv(path)
            try:
                roles, found = _parity(argv)
            except ConfigError:  # a value layerconf refuses: TypeCoercion's error, not ours
                return
            slime = slime_resolve_roles(PARSER, argv)["actor"]
        warned = {p.key for p in found}
        differ = {k for k in overrides if not _agree(getattr(slime, k), getattr(roles["actor"], k))}
        assert warned == differ


class TestYamlTexts:
    @given(st.floats())
    def test_a_float_text_reads_back_as_that_float(self, value: float) -> None:
        read = yaml.safe_load(_float_text(value))
        assert type(read) is float
        assert same_value(read, value) or (math.isnan(value) and math.isnan(read))

    @given(
        st.recursive(
            st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=4), inner, max_size=3)
            ),
            max_leaves=6,
        )
    )
    def test_a_yaml_text_reads_back_as_the_value(self, value: Any) -> None:
        text = _yaml_text(value)
        if text is not None:
            read = yaml.safe_load(text)
            assert json.dumps(read, sort_keys=True, default=repr) == json.dumps(
                value, sort_keys=True, default=repr
            ) or same_value(read, value)
