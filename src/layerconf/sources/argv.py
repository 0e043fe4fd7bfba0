"""Command-line provenance for any argparse parser: which token set each value.

`parse_known_args(parser, args)` and `parse_args(parser, args)` return what the parser's own
methods return (the same values, the same unknown tokens, the same errors) as a
`layerconf.Namespace` whose provenance holds two layers: ``default``, every dest's value as
argparse set it before parsing (string defaults converted where argparse converted them), and
``cli``, only what the command line set, each value with its argv index and its token as
written. A flag given more than once adds a layer per earlier occurrence (``cli:1``,
``cli:2``, ...; their origins still name layer ``cli``), so `explain(args, key).history`
shows every earlier value with its argv index.

How the parse is recorded, without modifying the parser, is `layerconf.sources._argv_recorder`'s
part: in general by watching argparse parse (none of its logic redone); a plain command line on
a plain parser, the common case, by `layerconf.sources._argv_scan`, which redoes only how
tokens are classified and counted and gives the same record. This module checks the call and
builds the layers from what was recorded.

Cost: building the 1,000-key default layer costs more than the parse itself, so it is built
once per parser and reused while argparse produces the very same default objects (containers:
equal to the layer's copy). The namespace adopts argparse's own dict, containers copied, which
is exactly what merging the layers gives.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import operator
import sys
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from layerconf.core.merge import Policy
from layerconf.core.namespace import Namespace, Provenance, namespace_from
from layerconf.core.records import Layer, Origin, Path
from layerconf.core.secrets import SECRETS, redacted_argv, secret_dests
from layerconf.core.values import ATOMIC_TYPES, MAX_DEPTH, copy_value, is_atomic, same_value
from layerconf.exceptions import ConfigError, Problem
from layerconf.sources._argv_recorder import CLI, CLI_ORIGIN, Recorder, record
from layerconf.sources.base import ARGV

__all__ = ["MAX_OPTIONS", "parse_args", "parse_known_args"]

#: The most options (tokens starting with '-', before a '--') a command line may hold.
#: argparse before Python 3.13 finds each next option with a ``min()`` over the positions of
#: all of them, so its time grows with their square: 4,096 repeats of ``--lr 1e-5`` take about
#: 0.5 s and 20,000 about 11 s on 3.11; 3.13's argparse scans forward instead (20,000 in about
#: 0.1 s). layerconf's own work grows linearly with them (``benchmarks/bench_limits.py``
#: measures both), so the bound is argparse's, kept the same on every Python so that a command
#: line is accepted or refused alike everywhere. Every argument of Megatron and slime, each
#: given once, is about 1,100 options.
MAX_OPTIONS = 4096

DEFAULT = "default"

_DEFAULT_ORIGIN = Origin(DEFAULT, "default")


def parse_known_args(
    parser: argparse.ArgumentParser,
    args: Iterable[str] | None = None,
    namespace: object | None = None,
) -> tuple[Namespace, list[str]]:
    """``parser.parse_known_args(args)`` with the origin of every value.

    Returns what argparse returns (the same values, the tokens the parser does not own, in
    the same order), the namespace being a `layerconf.Namespace`: ask
    ``layerconf.explain(args, "lr")`` where a value came from. Errors are argparse's own
    (a usage message and ``SystemExit(2)``, or `argparse.ArgumentError` when the parser has
    ``exit_on_error=False``); a command line of more than `MAX_OPTIONS` options is a
    `ConfigError` before parsing.

    `namespace`, if given, is not modified: its attributes become a layer named
    ``namespace`` between the defaults and the command line, as argparse lets them shadow
    the defaults.
    """
    namespace_out, extras = _parse(parser, args, namespace, known=True)
    return namespace_out, extras


def parse_args(
    parser: argparse.ArgumentParser,
    args: Iterable[str] | None = None,
    namespace: object | None = None,
) -> Namespace:
    """``parser.parse_args(args)`` with the origin of every value; see `parse_known_args`.

    Fails exactly as argparse does, tokens the parser does not own included.
    """
    namespace_out, _ = _parse(parser, args, namespace, known=False)
    return namespace_out


def _parse(
    parser: argparse.ArgumentParser,
    args: Iterable[str] | None,
    namespace: object | None,
    *,
    known: bool,
) -> tuple[Namespace, list[str]]:
    function = "parse_known_args" if known else "parse_args"
    strings, given = _check_call(function, parser, args, namespace)
    recorder, final, extras = record(parser, strings, given, known=known)
    return _namespace(parser, recorder, final, given), extras


# ---------------------------------------------------------------------------------------------
# Checking the call


def _refuse_too_many_options(strings: list[str]) -> None:
    """`ConfigError` at the first option past `MAX_OPTIONS`, if there is one."""
    seen = 0
    for index, token in enumerate(strings):
        if token == "--":
            return
        if type(token) is str and token[:1] == "-":
            seen += 1
            if seen > MAX_OPTIONS:
                problem = Problem(
                    f"the command line holds more than {MAX_OPTIONS:,} options (the limit "
                    "layerconf.sources.argv.MAX_OPTIONS, the same on every Python: argparse "
                    "before Python 3.13 takes a time growing with their square), so it is not "
                    "parsed",
                    layer=CLI,
                    argv_index=index,
                    hint="give each option once; a training command line holds hundreds",
                )
                raise ConfigError([problem])


def _check_call(
    function: str, parser: object, args: Iterable[str] | None, namespace: object | None
) -> tuple[list[str], dict[str, Any]]:
    if not isinstance(parser, argparse.ArgumentParser):
        raise TypeError(
            f"{function}() takes an argparse.ArgumentParser as its first argument "
            f"(got {type(parser).__name__} {parser!r:.80})"
        )
    if args is None:
        strings = sys.argv[1:]
    elif isinstance(args, (str, bytes)):
        text = args if isinstance(args, str) else args.decode("utf-8", "replace")
        shown = " ".join(redacted_argv(text.split(), parser))  # no secret quoted
        raise TypeError(
            f"{function}() takes args as a list of str (got the {type(args).__name__} "
            f"{shown!r:.80}); split a command line first, e.g. with shlex.split()"
        )
    else:
        try:
            strings = list(args)
        except TypeError:
            raise TypeError(
                f"{function}() takes args as a list of str (got {type(args).__name__})"
            ) from None
    if len(strings) > MAX_OPTIONS:  # (a shorter command line cannot hold too many options)
        _refuse_too_many_options(strings)
    if set(map(type, strings)) - {str}:  # a str subclass is fine too
        texts = [item if isinstance(item, str) else repr(item) for item in strings]
        redacted = redacted_argv(texts, parser)  # a secret flag's value is not quoted
        for index, item in enumerate(strings):
            if not isinstance(item, str):
                quoted = f"{item!r:.80}" if redacted[index] == texts[index] else redacted[index]
                raise TypeError(
                    f"{function}() takes args as a list of str; args[{index}] is "
                    f"{type(item).__name__} {quoted}"
                )
    given: dict[str, Any] = {}
    if namespace is not None:
        try:
            given = dict(vars(namespace))
        except TypeError:
            raise TypeError(
                f"{function}() takes a namespace with attributes, such as an "
                f"argparse.Namespace (got {type(namespace).__name__})"
            ) from None
    return strings, given


# ---------------------------------------------------------------------------------------------
# Building the layers


def _namespace(
    parser: argparse.ArgumentParser,
    recorder: Recorder,
    final: dict[str, Any],
    given: Mapping[str, Any],
) -> Namespace:
    """The namespace of `final` (argparse's own, which becomes its dict) with its provenance."""
    # raw: the default of each key the command line set, unconverted
    cli, cli_origins, raw, setters = recorder.changes(final)
    shared: dict[str, Any] = {}
    notices: list[Problem] = []
    if not given and len(raw) == len(cli):
        # The defaults are `final` with the command line's keys as they were before it: patch
        # them in place for the look-up rather than copy a thousand keys.
        final.update(raw)
        try:
            layers = [_default_layer(parser, final, shared, notices)]
        finally:
            final.update(cli)
    else:
        defaults = dict(final)
        before: dict[str, Any] = {}  # what the given namespace held
        for name in cli:
            if name in given:
                if name in raw:
                    before[name] = raw[name]
                del defaults[name]
            elif name in raw:
                defaults[name] = raw[name]  # argparse converts a string default only if unused
            else:
                del defaults[name]
        for name in given:
            if name in defaults:
                before[name] = defaults.pop(name)
        layers = [_default_layer(parser, defaults, shared, notices)]
        if given:
            values = _faithful(before, shared, notices, "namespace")
            layers.append(Layer("namespace", "mapping", values, Origin("namespace", "mapping")))

    for number in range(1, max(map(len, setters.values()), default=0)):
        # Flags given more than once: the n-th value of each, oldest first, under the cli layer.
        values = {}
        origins: dict[Path, Origin] = {}
        for name, entries in setters.items():
            if len(entries) > number and name in cli:
                values[name] = entries[number][0]  # what the n-th setter set, the next one found
                origins[(name,)] = entries[number - 1][1]
        values = _faithful(values, {}, [], CLI)
        layers.append(Layer(f"{CLI}:{number}", "argv", values, CLI_ORIGIN, origins))
    layers.append(Layer(CLI, "argv", _faithful(cli, shared, notices, CLI), CLI_ORIGIN, cli_origins))

    # `final` is what merging the layers gives (the last layer holding a key wins; tests check
    # it against LayerStack.resolve()), but with argparse's objects: give the namespace its own
    # containers, except those no layer could copy.
    for layer in layers:
        for name in layer.mutable_keys:
            if name in final and name not in shared:
                final[name] = copy_value(final[name])
    # argparse replaces a value whole: a mapping on the command line does not merge into the
    # default's, as the stack's "merge" policy would.
    policies: dict[Path, Policy] = {
        (name,): "replace"
        for layer in layers[1:]
        for name in layer.mutable_keys
        if isinstance(layer.values[name], dict)
    }
    # Kept as it may be shown: each secret value replaced, as the parser's actions classify it.
    argv = tuple(redacted_argv(recorder.argv, parser))
    provenance = Provenance(None, tuple(layers), policies, {}, tuple(notices), {ARGV: argv})
    namespace = namespace_from({}, provenance)
    # Adopt the dict rather than copy a thousand keys (and it is no runtime assignment).
    object.__setattr__(namespace, "__dict__", final)
    return namespace


def _faithful(
    values: dict[str, Any], shared: dict[str, Any], notices: list[Problem], layer: str
) -> dict[str, Any]:
    """`values` without those a layer cannot hold a faithful private copy of (noted in `shared`)."""
    plain = ATOMIC_TYPES
    unfaithful = [
        name
        for name, value in values.items()
        if type(value) not in plain and not _copies_faithfully(value)
    ]
    if not unfaithful:
        return values
    values = dict(values)
    for name in unfaithful:
        value = values.pop(name)
        shared[name] = value
        notices.append(
            Problem(
                f"{name!r} holds a {type(value).__name__} that layerconf cannot keep a private "
                "copy of; the namespace holds argparse's own object and explain() reports it "
                "as 'runtime'",
                key=name,
                layer=layer,
                severity="info",
            )
        )
    return values


def _copies_faithfully(value: Any, depth: int = 0) -> bool:
    """True when `copy_value(value)` is equal to `value` and of the same type (False past
    `MAX_DEPTH` containers, where a copy shares what is below)."""
    kind = type(value)
    if kind is list or kind is dict:
        if depth >= MAX_DEPTH:
            return False
        items = value if kind is list else value.values()
        return all(_copies_faithfully(item, depth + 1) for item in items)
    if is_atomic(value):
        return True
    if isinstance(value, Mapping):
        return False  # copy_value turns every mapping into a plain dict
    try:
        copied = copy.deepcopy(value)
    except Exception:  # open files, locks, sockets...
        return False
    try:
        return type(copied) is kind and bool(copied == value)
    except Exception:  # an == that is not a truth value (an array): explain() accepts it too
        return True


# ---------------------------------------------------------------------------------------------
# The default layer, built once per parser


class _Cached:
    """A default layer and exactly what it was built from."""

    __slots__ = ("keys", "layer", "notices", "originals", "shared", "values")

    def __init__(
        self,
        defaults: dict[str, Any],
        layer: Layer,
        shared: dict[str, Any],
        notices: tuple[Problem, ...],
    ) -> None:
        self.keys = list(defaults)
        self.values = list(defaults.values())  # the very objects (kept alive: ids stay theirs)
        self.layer = layer
        self.shared = shared
        self.notices = notices
        # Containers may change in place, or be made anew by a type on every parse: they are
        # compared by value with the layer's copy instead (by name: no pass over the keys).
        self.originals = {name: defaults[name] for name in layer.mutable_keys | shared.keys()}

    def matches(self, defaults: dict[str, Any]) -> bool:
        """True when the layer holds exactly `defaults` (same keys, values and types)."""
        if len(defaults) != len(self.keys) or list(defaults) != self.keys:
            return False
        held = self.layer.values
        values = dict(defaults)  # (keys in the same order, containers swapped for the originals)
        for name, original in self.originals.items():
            value = values[name]
            if name in self.shared:
                if value is not self.shared[name]:
                    return False
            elif not same_value(held[name], value, copied=False):
                return False
            values[name] = original
        if all(map(operator.is_, values.values(), self.values)):
            return True
        # Made anew but equal (a string default that the type converts on every parse).
        pairs = zip(values.values(), self.values, strict=True)
        return all(same_value(a, b, copied=False) for a, b in pairs)


# A few default layers per parser, most recently used first: the defaults differ between
# parses where the command line sets a dest whose string default argparse would convert.
_CACHE: weakref.WeakKeyDictionary[argparse.ArgumentParser, list[_Cached]] = (
    weakref.WeakKeyDictionary()
)
_CACHE_LOCK = threading.Lock()
_PER_PARSER = 4


def _default_layer(
    parser: argparse.ArgumentParser,
    defaults: dict[str, Any],
    shared: dict[str, Any],
    notices: list[Problem],
) -> Layer:
    with _CACHE_LOCK:
        try:
            entries = list(_CACHE.get(parser, ()))
        except TypeError:  # a parser class that is not hashable: no cache
            entries = []
    found = next((entry for entry in entries if entry.matches(defaults)), None)
    if found is None:
        own_shared: dict[str, Any] = {}
        own_notices: list[Problem] = []
        # The parser's defaults say which keys its secret flags set, whatever their names.
        secret = secret_dests(parser, SECRETS)
        layer = Layer(DEFAULT, "default", defaults, _DEFAULT_ORIGIN, secret_keys=secret)
        # Only containers and unknown objects can lose something when copied: check those.
        mutable = {name: defaults[name] for name in layer.mutable_keys}
        if _faithful(mutable, own_shared, own_notices, DEFAULT) is not mutable:
            kept = {k: v for k, v in defaults.items() if k not in own_shared}
            layer = Layer(DEFAULT, "default", kept, _DEFAULT_ORIGIN, secret_keys=secret)
        found = _Cached(defaults, layer, own_shared, tuple(own_notices))
    if not entries or entries[0] is not found:
        entries = [found, *(entry for entry in entries if entry is not found)][:_PER_PARSER]
        with _CACHE_LOCK, contextlib.suppress(TypeError):
            _CACHE[parser] = entries
    shared.update(found.shared)
    notices.extend(found.notices)
    return found.layer
