"""Which keys hold secrets in one resolution whatever their names: the dests of a parser's
secret flags (``--hf-token`` with dest ``tok``), which its defaults layer says hold secrets
(`Layer.secret_keys`), and the policy a formatter of that resolution asks (`with_secret_keys`).

Private to `layerconf.core.secrets`, which gives both.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from layerconf.core._secret_flags import _SEEDS, _TABLES_KEPT, _positionals, _takes

if TYPE_CHECKING:
    from layerconf.core.secrets import SecretPolicy

__all__ = ["secret_dests", "with_secret_keys"]


def secret_dests(parser: argparse.ArgumentParser, policy: SecretPolicy) -> frozenset[str]:
    """The dests of `parser`'s secret flags (a sub-command's too: its parser writes into the
    same namespace) that `policy` does not name a secret's (``--hf-token`` with dest ``tok``):
    such a flag has an option string the policy names a secret's (`_named_options`)."""
    dests: set[Any] = set()
    parsers, seen = [parser], set[int]()
    while parsers:
        one = parsers.pop()
        if id(one) not in seen:
            seen.add(id(one))
            actions = one._option_string_actions
            named = _named_options(actions, policy)
            dests.update(actions[o].dest for o in named if _takes(actions[o], policy, True))
            if one._subparsers is not None:  # (set by add_subparsers: a sub-command's action)
                parsers += [
                    sub
                    for action in _positionals(one)
                    if isinstance(action, argparse._SubParsersAction)
                    for sub in action._name_parser_map.values()
                ]
    return frozenset(dest for dest in dests if isinstance(dest, str) and not policy.is_secret(dest))


# The option strings a policy names a secret's, per table of options, used while it is the same
# table holding as many: argparse only adds option strings to a table (a conflict resolved
# moves some to the new action, which is looked up anew). At most `_TABLES_KEPT` (then all are
# forgotten); each keeps its table alive, so that its id is not reused.
_NAMED: dict[int, tuple[Mapping[str, Any], SecretPolicy, int, list[str]]] = {}


def _named_options(actions: Mapping[str, argparse.Action], policy: SecretPolicy) -> list[str]:
    """The option strings of `actions` that `policy` names a secret's: kept (`_NAMED`), else
    of a profile's shipped candidates while the table has their option strings (a profile's
    parser is not scanned), else those `policy.secret_keys` picks out."""
    kept = _NAMED.get(id(actions))
    if kept is not None and kept[0] is actions and kept[1] == policy and kept[2] == len(actions):
        return kept[3]
    options = list(actions)
    for (seed_policy, candidates), (seed_options, _, _) in list(_SEEDS.items()):
        if seed_policy == policy and seed_options == options:
            named = [option for option in candidates if policy.is_secret(option)]
            break
    else:
        named = policy.secret_keys(options)
    if len(_NAMED) >= _TABLES_KEPT:
        _NAMED.clear()
    _NAMED[id(actions)] = (actions, policy, len(actions), named)
    return named


@functools.lru_cache(maxsize=64)
def with_secret_keys(policy: SecretPolicy, keys: frozenset[str]) -> SecretPolicy:
    """`policy`, also naming `keys` secrets' (a resolution's `Layer.secret_keys`): what a
    formatter of that resolution asks. `policy` itself when `keys` adds nothing."""
    added = [key for key in keys if not policy.is_secret(key)]
    return policy.extend(names=added) if added else policy
