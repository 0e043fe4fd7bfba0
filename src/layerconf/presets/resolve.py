"""Role resolution: one command line, one role file, a namespace per role.

``resolve_roles(parser, argv)`` is slime's ``--megatron-config-path`` contract as a general
engine: the command line is the shared baseline (layers ``default`` and ``cli``); the role
file named by the preset's dest adds a ``role-config`` layer per role; the preset's rules
check, drop, convert and set values; a role missing from the file inherits the command line.
"""

from __future__ import annotations

import argparse
import functools
import sys
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Literal

import attrs

from layerconf.core.namespace import Namespace, provenance_of, with_inputs
from layerconf.core.records import Layer, Origin
from layerconf.core.rules import RuleSet
from layerconf.core.stack import LayerStack, _to_rules, resolve_stacks
from layerconf.core.suggest import did_you_mean
from layerconf.exceptions import Problem
from layerconf.rules.coercion import ParserShape, TypeCoercion, parser_shape, same_shape
from layerconf.rules.ignored_keys import IgnoredKeys
from layerconf.rules.ppo_scope import PpoScope
from layerconf.rules.role_defaults import SLIME_CRITIC_DEFAULTS, RoleDefaults
from layerconf.rules.topology import TopologyGuard
from layerconf.rules.unknown_keys import UnknownKeys
from layerconf.sources.argv import parse_known_args
from layerconf.sources.base import ARGV, FILES
from layerconf.sources.yaml import check_role_file

__all__ = ["SLIME", "Preset", "resolve_roles", "slime_rules"]


def slime_rules(
    parser: argparse.ArgumentParser,
    *,
    layer: str = "role-config",
    ignored_keys: Literal["warn", "error", "allow"] = "warn",
    unknown_keys: Literal["error", "warn"] = "error",
    topology: Literal["error", "warn", "off"] = "error",
) -> RuleSet:
    """The rules of slime's contract for `parser`, in the order they run, on the role layer
    named `layer`.

    Start from these to build your own: ``slime_rules(parser).replace("topology-guard",
    TopologyGuard(action="warn"))``, ``.without("ppo-scope")``, ``.add(my_rule)``.
    """
    return RuleSet(
        [
            IgnoredKeys(action=ignored_keys, layer=layer),
            UnknownKeys(
                parser,
                action=unknown_keys,
                also_known=SLIME_CRITIC_DEFAULTS.keys(),
                layer=layer,
            ),
            TypeCoercion(parser, layers=(layer,)),
            PpoScope(layer=layer),
            RoleDefaults(layer=layer),
            TopologyGuard(action=topology),
        ]
    )


@attrs.frozen
class Preset:
    """What a role resolution needs to know: the roles, the role file's dest, the rules.

    `rules` builds the rule set for a parser (rules such as type coercion need the parser);
    it is called once per parser and the result reused. `layer` names the role layer; without
    `rules`, the rules are `slime_rules` on that layer.
    """

    name: str
    roles: tuple[str, ...] = attrs.field(default=("actor", "critic"), converter=tuple)
    config_dest: str = "megatron_config_path"
    layer: str = "role-config"
    rules: Callable[[argparse.ArgumentParser], RuleSet] | None = attrs.field(default=None, eq=False)


#: slime's ``--megatron-config-path`` contract: PPO's actor and critic.
SLIME = Preset("slime")

# Rule sets built per (parser, preset); held weakly so a parser can still be freed.
_RULES: weakref.WeakKeyDictionary[
    argparse.ArgumentParser, dict[Any, tuple[ParserShape, RuleSet]]
] = weakref.WeakKeyDictionary()


def _rules_for(parser: argparse.ArgumentParser, preset: Preset) -> RuleSet:
    per_parser = _RULES.setdefault(parser, {})
    key = (preset, preset.rules)  # equal presets may still build their rules differently
    cached = per_parser.get(key)
    if cached is None or not same_shape(parser, cached[0]):  # rebuilt when an action changes
        build = preset.rules or functools.partial(slime_rules, layer=preset.layer)
        cached = per_parser[key] = (parser_shape(parser), _to_rules(build(parser)))
    return cached[1]


def resolve_roles(
    parser: argparse.ArgumentParser,
    args: Iterable[str] | None = None,
    *,
    preset: Preset = SLIME,
) -> dict[str, Namespace]:
    """Parse `args` with `parser` and resolve one namespace per role of `preset`.

    Each role resolves as ``default -> cli -> role-config -> rules``; without the role file
    every role equals the command line. Raises one `ConfigError` with every problem found
    (the role file's structure, its keys and values, the command line, across roles);
    warnings are issued as `LayerconfWarning` and kept in `notices(namespace)`.
    Tokens the parser does not own are allowed and reported as notices. argparse's own
    errors (``--lr abc``) stay argparse's: it exits with status 2 before the role file is read,
    as with `parse_known_args`.
    """
    argv = tuple(sys.argv[1:] if args is None else args)
    parsed, unknown = parse_known_args(parser, list(argv))
    provenance = provenance_of(parsed)
    assert provenance is not None
    base = provenance.layers
    policies = provenance.policies  # argparse replaces a dict default; the stack must too
    found: list[Problem] = list(provenance.notices)
    found.extend(_unknown_tokens(parser, argv, unknown))
    rules = _rules_for(parser, preset)

    files: dict[str, str] = {}
    path = vars(parsed).get(preset.config_dest)
    if path is None:
        stacks = {role: LayerStack(base, rules, policies) for role in preset.roles}
    else:
        role_file = check_role_file(str(path), preset.roles, layer_name=preset.layer)
        found.extend(role_file.problems)
        if role_file.sha256 is not None:
            files[role_file.path] = role_file.sha256
        empty = Origin(preset.layer, "file", source=str(path))
        stacks = {
            role: LayerStack(
                [*base, role_file.layers.get(role) or Layer(preset.layer, "file", {}, empty)],
                rules,
                policies,
            )
            for role in preset.roles
        }
    roles = resolve_stacks(stacks, problems=found)
    for namespace in roles.values():
        with_inputs(namespace, {ARGV: argv, FILES: files})
    return roles


def _unknown_tokens(
    parser: argparse.ArgumentParser, argv: tuple[str, ...], unknown: list[str]
) -> list[Problem]:
    """One notice per flag the training parser does not own.

    slime hands such flags to SGLang's parser, so they are allowed (``info``); but a flag
    that looks like a misspelt option of this parser is a warning with a did-you-mean, since
    training would silently ignore it. argparse returns unknown tokens in argv order, so each
    is found after the previous one; an unknown flag's note names the values that follow it.
    """
    groups: list[tuple[int | None, list[str]]] = []
    position = 0
    for token in unknown:
        index = None
        while position < len(argv) and argv[position] != token:
            position += 1
        if position < len(argv):
            index, position = position, position + 1
        if token.startswith("-") or not groups:
            groups.append((index, [token]))
        else:
            groups[-1][1].append(token)
    notices = []
    for index, tokens in groups:
        flag = tokens[0].split("=", 1)[0]
        match = _close_option(parser, flag) if flag.startswith("--") else None
        shown = " ".join(tokens)
        if match is not None:
            notices.append(
                Problem(
                    f"{flag!r} is not an argument of this parser (did you mean {match!r}?)",
                    key=flag,
                    argv_index=index,
                    layer="cli",
                    hint="as written it is passed on to SGLang's parser and training ignores it",
                    severity="warning",
                )
            )
        else:
            notices.append(
                Problem(
                    f"{shown!r} is not an argument of this parser; it is passed on",
                    key=flag,
                    argv_index=index,
                    layer="cli",
                    hint="slime hands such arguments to SGLang's parser",
                    severity="info",
                )
            )
    return notices


def _close_option(parser: argparse.ArgumentParser, flag: str) -> str | None:
    """The parser's option closest to `flag`, if one is very close (a likely typo).

    Only options of about the same length and the same first letter are compared: difflib
    over every option of a 1,000-action parser would cost milliseconds per token.
    """
    index = _options_by_shape(parser)
    first, size = flag[2:3], len(flag)
    options = [o for length in range(size - 2, size + 3) for o in index.get((first, length), ())]
    return did_you_mean(flag, options, cutoff=0.85)


# Long options by (first letter, length), per parser; rebuilt when an action changes.
_OPTIONS: weakref.WeakKeyDictionary[
    argparse.ArgumentParser, tuple[ParserShape, dict[tuple[str, int], list[str]]]
] = weakref.WeakKeyDictionary()


def _options_by_shape(parser: argparse.ArgumentParser) -> dict[tuple[str, int], list[str]]:
    cached = _OPTIONS.get(parser)
    if cached is None or not same_shape(parser, cached[0]):
        index: dict[tuple[str, int], list[str]] = {}
        for action in parser._actions:
            for option in action.option_strings:
                if option.startswith("--"):
                    index.setdefault((option[2:3], len(option)), []).append(option)
        cached = _OPTIONS[parser] = (parser_shape(parser), index)
    return cached[1]
