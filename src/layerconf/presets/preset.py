"""The preset contract: what a trainer's role resolution needs to know, as one frozen record.

A preset says which roles a trainer trains, which dest of its command line names the role file
and in which format, which rules apply, which unknown command-line tokens pass on to another
program, and what a role file may hold besides the parser's dests. `resolve_roles` works with any
preset; `layerconf.presets.slime.SLIME` is slime's, `PLAIN` is a trainer's own command line and
nothing else.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Literal, Union

import attrs

from layerconf.core.checks import typed
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.rules import Rule, RuleSet
from layerconf.exceptions import LayerconfError, RuleError
from layerconf.presets.role_file import RoleFileFormat
from layerconf.rules.coercion import TypeCoercion
from layerconf.rules.ignored_keys import IgnoredKeys
from layerconf.rules.unexpanded import UnexpandedText
from layerconf.rules.unknown_keys import UnknownKeys

__all__ = [
    "PLAIN",
    "Preset",
    "PresetError",
    "RulesFor",
    "default_rules",
    "named_otherwise",
    "run_wide_rule",
]

# The layers every role has (`layerconf.sources.argv`): the parser's defaults and the argv.
_COMMAND_LINE_LAYERS = ("default", "cli")

#: Builds a preset's rules for one parser (rules such as type coercion need the parser).
RulesFor = Callable[[argparse.ArgumentParser], Union[RuleSet, Iterable[Rule]]]


class PresetError(LayerconfError, ValueError):
    """A preset that cannot resolve with this parser or these sources: the message says what
    to change (a role file dest the parser does not have, two layers of one name)."""


def _roles(roles: Iterable[str]) -> tuple[str, ...]:
    if isinstance(roles, str):
        raise TypeError(f"roles must be a sequence of role names, not one string ({roles!r})")
    valid = tuple(roles)
    if not valid or len(set(valid)) != len(valid):
        raise ValueError(f"a preset names one role or more, each once (got {list(valid)})")
    for role in valid:
        if not isinstance(role, str) or not role:
            raise ValueError(f"every role must be a non-empty string (got {role!r})")
        if not role.isprintable():  # every output prints it as it is
            raise ValueError(f"a role's name must be printable (got {role!r})")
    return valid


def named_otherwise(layer: str) -> str | None:
    """What explain and audit records name `layer`, a name no layer of a preset may take (it
    would read as that in every output), or None."""
    if layer == "runtime":
        return "the values assigned after resolution"
    if layer.startswith("rule:"):
        return "the values rules set (rule:<name>)"
    return None


def _layer(_: object, __: attrs.Attribute[str], layer: str) -> None:
    if not isinstance(layer, str) or not layer:
        raise ValueError(f"a preset's layer must be a non-empty string (got {layer!r})")
    if layer in _COMMAND_LINE_LAYERS:
        raise ValueError(
            f"a preset's role layer cannot be named {layer!r}: the command line's layers are "
            f"{' and '.join(map(repr, _COMMAND_LINE_LAYERS))}"
        )
    taken = named_otherwise(layer)
    if taken is not None:
        raise ValueError(
            f"a preset's role layer cannot be named {layer!r}: explain and audit records name "
            f"so {taken}"
        )


def _prefixes(prefixes: Iterable[str]) -> tuple[str, ...]:
    if isinstance(prefixes, str):
        raise TypeError(f"passthrough takes a sequence of prefixes, not one ({prefixes!r})")
    valid = tuple(prefixes)
    for prefix in valid:
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(
                f"passthrough takes non-empty prefixes such as '--vllm-' (got {prefix!r}): an "
                "empty prefix would pass every token on"
            )
    return valid


def _mapping(values: Mapping[str, str]) -> Mapping[str, str]:
    # Read-only: rules are built from these once per preset and parser, so a change in place
    # would never reach them. (A copy: the caller's dict may change afterwards.)
    return MappingProxyType(dict(values))


def _rebuild(fields: dict[str, Any]) -> Preset:
    return Preset(**fields)


@attrs.frozen
class Preset:
    """How one trainer resolves its roles; every field but `name` and `roles` has a default.

    - `config_dest`: the dest whose value names the role file (None: no role file).
    - `role_file`: its format (the top-level key above the role entries).
    - `layer`: the name of the role layer each role gets from that file.
    - `rules`: builds the rule set for a parser, once per parser; None gives the preset's
      `standard_rules(preset, parser)`: `default_rules` unless the preset says otherwise
      (slime's are `slime_rules` on the preset's role layer).
    - `passthrough`: the declared pass-through: the flags another program takes, each a
      prefix ending in ``-`` (slime's ``--sglang-``) or one whole flag (``--train-backend``,
      not ``--train-backend-x``), `passthrough_to` names the program,
      `passthrough_hint` says so in a note. They are notes, never problems.
    - `unknown_tokens`: any other token the parser does not own is an ``error`` (as
      ``parse_args`` would have it), or with ``note``, for trainers that hand the rest of the
      command line on, a warning (``check --strict`` fails on it). A flag very close to one of
      the parser's is an error with a did-you-mean either way: the trainer would drop it.
    - `extra_keys`: keys a role file may set though the parser has no such dest, with what they
      mean (for the schema and the unknown-keys rule); `ignored_keys`: keys dropped from role
      files, with where to set them instead, and `ignored_because` says why. All three are
      read-only mappings (build a changed preset with ``attrs.evolve``).
    - `run_wide_keys`: keys that decide the shape of the whole run (slime's ``use_critic``, the
      role file's own dest), with where to set them instead: in a role file they are errors
      (`run_wide_rule`), `run_wide_because` says why.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    name: str = attrs.field(validator=typed(str, "a preset name (str)"))
    roles: tuple[str, ...] = attrs.field(converter=_roles)
    config_dest: str | None = attrs.field(
        default=None, validator=typed((str, type(None)), "a dest (str) or None")
    )
    role_file: RoleFileFormat = attrs.field(
        factory=RoleFileFormat, validator=typed(RoleFileFormat, "a RoleFileFormat")
    )
    layer: str = attrs.field(default="role-config", validator=_layer)
    rules: RulesFor | None = attrs.field(
        default=None,
        eq=False,
        validator=typed(
            (Callable, type(None)),  # type: ignore[arg-type]
            "a callable that builds the rules for a parser (lambda parser: [...]) or None",
        ),
    )
    standard_rules: Callable[[Preset, argparse.ArgumentParser], RuleSet] = attrs.field(
        default=attrs.Factory(lambda: default_rules), eq=False
    )
    passthrough: tuple[str, ...] = attrs.field(default=(), converter=_prefixes)
    passthrough_to: str = "another program"
    passthrough_hint: str = "another program takes such arguments"
    unknown_tokens: Literal["error", "note"] = attrs.field(
        default="error", validator=attrs.validators.in_(("error", "note"))
    )
    # Compared, not hashed (dicts are not hashable; equal presets still hash alike).
    extra_keys: Mapping[str, str] = attrs.field(factory=dict, converter=_mapping, hash=False)
    ignored_keys: Mapping[str, str] = attrs.field(factory=dict, converter=_mapping, hash=False)
    run_wide_keys: Mapping[str, str] = attrs.field(factory=dict, converter=_mapping, hash=False)
    run_wide_because: str = "it decides the whole run (every role), not one role"
    ignored_because: str = "it is set on the command line"

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled by its fields, the read-only mappings as dicts (a mappingproxy does not
        # pickle); the constructor makes them read-only again.
        fields = {
            field.name: dict(value) if isinstance(value, MappingProxyType) else value
            for field in attrs.fields(Preset)
            for value in [getattr(self, field.name)]
        }
        return _rebuild, (fields,)

    def rules_for(self, parser: argparse.ArgumentParser) -> RuleSet:
        """This preset's rules for `parser` (not cached: `resolve_roles` keeps them).

        A `RuleError` names the preset when its rules cannot be built: the callable raised, or
        returned something else than a `RuleSet` or an iterable of rules.
        """
        build: Callable[..., Any]
        if self.rules is None:
            called, build = "standard_rules(preset, parser)", self.standard_rules
            args: tuple[Any, ...] = (self, parser)
        else:
            called, build, args = "rules(parser)", self.rules, (parser,)
        try:
            built = build(*args)
        except Exception as error:  # the preset's own code
            raise RuleError(
                f"preset {self.name!r}: its {called} raised {type(error).__name__}: {error}"
            ) from error
        if isinstance(built, RuleSet):
            return built
        if isinstance(built, (str, bytes)) or not isinstance(built, Iterable):
            shown = "None" if built is None else f"the {type(built).__name__} {built!r:.60}"
            raise RuleError(
                f"preset {self.name!r}: its {called} returned {shown}, not a RuleSet or rules"
            )
        try:
            return RuleSet(built)
        except RuleError as error:
            raise RuleError(f"preset {self.name!r}: its {called} returned {error}") from None


def default_rules(preset: Preset, parser: argparse.ArgumentParser) -> RuleSet:
    """What any role file needs: its ignored keys dropped, its keys known, its values converted,
    shell syntax in its strings said (no shell reads it).

    The rules of a preset without its own; start from these to add a trainer's own:
    ``Preset(..., rules=lambda parser: default_rules(preset, parser).add(MyRule()))``.
    """
    rules: list[Rule] = []
    if preset.run_wide_keys:
        rules.append(run_wide_rule(preset))
    if preset.ignored_keys:
        rules.append(
            IgnoredKeys(preset.ignored_keys, layer=preset.layer, because=preset.ignored_because)
        )
    rules.append(UnknownKeys(parser, layer=preset.layer, also_known=preset.extra_keys.keys()))
    rules.append(TypeCoercion(parser, layers=(preset.layer,)))
    rules.append(UnexpandedText(layer=preset.layer))
    return RuleSet(rules)


def run_wide_rule(preset: Preset) -> IgnoredKeys:
    """The rule refusing `preset`'s run-wide keys in its role layer (named ``run-wide-keys``):
    each is an error at the key, saying where to set it instead."""
    return IgnoredKeys(
        preset.run_wide_keys,
        action="error",
        layer=preset.layer,
        because=preset.run_wide_because,
        name="run-wide-keys",
    )


#: A trainer's own command line and nothing else: one role, no role file, no trainer's rules.
PLAIN = Preset("plain", roles=("main",))
