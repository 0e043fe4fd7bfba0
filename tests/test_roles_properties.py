"""Property: any role file over the profile's dests either resolves, with every override at its
line, or fails with a ConfigError; nothing else escapes and no input is mutated."""

from __future__ import annotations

import argparse
import copy
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from layerconf import ConfigError, LayerconfWarning, explain, load_profile, resolve_roles
from layerconf.presets.slime import CRITIC_DEFAULTS as SLIME_CRITIC_DEFAULTS

PARSER = load_profile()
ACTIONS = [a for a in PARSER._actions if a.option_strings and a.dest != "help"]
BASE = ["--rollout-batch-size", "8", "--advantage-estimator", "ppo", "--lr", "2e-6"]


def junk() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 10**6),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        st.sampled_from(["1e-5", "true", "false", "flash", "cosine", "cosin", "[1, 2]"]),
        st.lists(st.integers(0, 4), max_size=3),
    )


@st.composite
def overrides(draw: st.DrawFn) -> dict[str, Any]:
    chosen = draw(st.lists(st.sampled_from(ACTIONS), max_size=6, unique_by=lambda a: a.dest))
    values: dict[str, Any] = {}
    for action in chosen:
        if action.choices and draw(st.booleans()):
            choice = draw(st.sampled_from(list(action.choices)))
            values[action.dest] = getattr(choice, "name", choice)
        elif draw(st.booleans()) and type(action.default) in (int, float, str, bool):
            values[action.dest] = action.default
        else:
            values[action.dest] = draw(junk())
    if draw(st.booleans()):
        values[
            draw(
                st.sampled_from(
                    ["lr_warmup_iter", "num_nodes", "tensor-model-parallel-size", "seedd"]
                )
            )
        ] = 1
    return values


role_files = st.dictionaries(st.sampled_from(["actor", "critic"]), overrides(), max_size=2)


def snapshot(parser: argparse.ArgumentParser) -> list[tuple[Any, ...]]:
    return [(a.dest, repr(a.default), a.type, a.nargs, a.required) for a in parser._actions]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(role_files)
def test_resolves_or_fails_cleanly(
    tmp_path_factory: pytest.TempPathFactory, content: dict[str, dict[str, Any]]
) -> None:
    """Success with every override at its line, or a ConfigError; nothing else, nothing mutated."""
    path = Path(tmp_path_factory.mktemp("roles")) / "roles.yaml"
    document = {
        "megatron": [{"role": role, "overrides": values} for role, values in content.items()]
    }
    text = yaml.safe_dump(document, default_flow_style=None, width=10**6, sort_keys=False)
    path.write_text(text)
    argv = [*BASE, "--megatron-config-path", str(path)]
    argv_before, parser_before = list(argv), snapshot(PARSER)
    lines = text.splitlines()
    failure: ConfigError | None = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LayerconfWarning)
            roles = resolve_roles(PARSER, argv)
    except ConfigError as error:
        failure = error
    if failure is not None:
        event("fails")
        assert failure.errors
        assert all(p.source in (None, str(path)) for p in failure.problems)
    else:
        event("resolves")
        for role, values in content.items():
            for key in values:
                if key not in vars(roles[role]) or (
                    role == "critic" and key in SLIME_CRITIC_DEFAULTS
                ):
                    continue  # ignored keys are dropped; the critic's defaults are a rule's
                setting = explain(roles[role], key)
                if setting.layer != "role-config":
                    continue  # dropped by a rule, so the command line's value stands
                assert setting.source == str(path)
                assert setting.line is not None
                assert (
                    lines[setting.line - 1].lstrip().startswith(f"{key}:")
                    or f" {key}:" in lines[setting.line - 1]
                    or f"{{{key}:" in lines[setting.line - 1]
                )
    assert argv == argv_before
    assert snapshot(PARSER) == parser_before
    assert path.read_text() == text


def test_inputs_are_not_mutated_on_success(tmp_path: Path) -> None:
    """A successful resolution leaves argv, the file and the parser as they were."""
    path = tmp_path / "r.yaml"
    path.write_text("megatron:\n  - role: critic\n    overrides: {lr: 1e-5}\n")
    argv = [*BASE, "--megatron-config-path", str(path)]
    before = (copy.deepcopy(argv), snapshot(PARSER), path.read_bytes())
    resolve_roles(PARSER, argv)
    assert (argv, snapshot(PARSER), path.read_bytes()) == before
