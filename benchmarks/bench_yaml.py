"""The cost of reading a role file with positions and checks, against how slime reads it.

Run: ``python benchmarks/bench_yaml.py`` (``--quick`` to only prove it runs).
Every approach reads the file from disk on each call. slime reads the role file with
``yaml.safe_load`` (pure Python); ``read_role_file`` composes it with libyaml when PyYAML has it,
walks the nodes for positions, checks the contract and builds one `Layer` per role.
The last table is the time to refuse a "billion laughs" file (9 levels of 9 aliases).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).parent))

from _timing import cold, measure, report, save
from layerconf.presets.slime import check_role_file, read_role_file
from layerconf.sources.yaml import parse_yaml

ROOT = Path(__file__).parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "slime_ppo_megatron.yaml"
BOMB = ROOT / "tests" / "bad_role_files" / "billion_laughs.yaml"


def role_file_text(overrides: int) -> str:
    """Two roles with `overrides` overrides each, of the kinds a real role file holds."""
    lines = ["megatron:"]
    for role in ("actor", "critic"):
        lines += ["  - name: default", f"    role: {role}", "    overrides:"]
        for i in range(overrides):
            value = ["1e-5", "100", "/ckpt/" + role, "true", "0.01"][i % 5]
            lines.append(f"      key_{i}: {value}")
    return "\n".join(lines) + "\n"


def approaches(path: Path) -> list[tuple[str, float]]:
    def safe_load() -> Any:
        with open(path) as stream:
            return yaml.safe_load(stream)

    def c_safe_load() -> Any:
        with open(path) as stream:
            return yaml.load(stream, Loader=yaml.CSafeLoader)

    def c_compose() -> Any:
        with open(path) as stream:
            return yaml.compose(stream, Loader=yaml.CSafeLoader)

    def generic_reader() -> Any:
        return parse_yaml(path.read_text())

    read_cold = cold(lambda: read_role_file(path))

    return [
        ("yaml.safe_load (slime's way, pure Python)", measure(safe_load)),
        ("yaml.load(Loader=CSafeLoader)", measure(c_safe_load)),
        ("yaml.compose(Loader=CSafeLoader) (nodes only)", measure(c_compose)),
        ("layerconf parse_yaml (data + positions)", measure(generic_reader)),
        ("layerconf read_role_file (+ checks, layers)", measure(read_cold)),
    ]


def main() -> None:
    assert yaml.__with_libyaml__, "this benchmark compares against libyaml"
    version = sys.version.split()[0]
    baseline = "yaml.safe_load (slime's way, pure Python)"
    results: dict[str, Any] = {}
    results["fixture"] = report(
        f"Reading slime's PPO role file (2 roles, 1 override each; python {version})",
        approaches(FIXTURE),
        baseline=baseline,
    )
    with tempfile.TemporaryDirectory() as directory:
        for overrides in (10, 100):
            path = Path(directory) / f"roles_{overrides}.yaml"
            path.write_text(role_file_text(overrides))
            assert not check_role_file(path).problems
            results[f"two_roles_{overrides}_overrides"] = report(
                f"Reading a role file of 2 roles x {overrides} overrides",
                approaches(path),
                baseline=baseline,
            )

    def refuse_bomb() -> None:
        assert check_role_file(BOMB).errors

    def safe_load_bomb() -> Any:
        with open(BOMB) as stream:
            return yaml.safe_load(stream)  # builds shared lists: the blow-up comes later

    results["billion_laughs"] = report(
        "Refusing a billion-laughs file (9 levels x 9 aliases = 387,420,489 strings)",
        [
            ("yaml.safe_load (accepts it, shares the lists)", measure(safe_load_bomb)),
            ("layerconf check_role_file (refuses it)", measure(cold(refuse_bomb), repeat=7)),
        ],
        baseline="yaml.safe_load (accepts it, shares the lists)",
    )
    save("yaml", results)


if __name__ == "__main__":
    main()
