"""Resolve the bundled PPO example per role and explain its lr, save and kl_coef.

Run it from the repository root: ``python examples/explain_ppo.py``. The command line in
``ppo_argv.txt`` (one token a line) names its role file ``examples/megatron_ppo.yaml``
relative to the current directory, as the trainer launched from there would read it.
The same answers from the command line: ``layerconf explain lr save kl_coef -- $(cat
examples/ppo_argv.txt)``.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import layerconf
except ModuleNotFoundError:  # a checkout that was not installed: use its src/ directly
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    import layerconf

ARGV = Path(__file__).with_name("ppo_argv.txt").read_text().splitlines()


def main() -> None:
    roles = layerconf.resolve_roles(layerconf.load_profile(), ARGV)
    for args in roles.values():
        for key in ("lr", "save", "kl_coef"):
            print(layerconf.explain(args, key))


if __name__ == "__main__":
    main()
