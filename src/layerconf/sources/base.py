"""The source contract: an input becomes one `Layer`, its problems, and what is kept of it.

A source knows one kind of input (a command line, a YAML file, the environment, a mapping) and
turns it into a `Reading`: one layer whose origins say where each value came from in that
input's own terms (an argv index and token, a file:line:col, a variable's name), the problems
found reading it, and `inputs`, what is kept about the input itself, never its values (the
command line, a file's sha256, the names of the variables read). Every namespace's provenance
holds them (`provenance_of(args).inputs`); an audit record keeps those under `ARGV` and
`FILES`. The core carries all of this without naming any kind of input.

Sources that need the trainer's parser (to convert values as its command line would) get it
in `read`; others ignore it.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import attrs

from layerconf.core.checks import check_type, typed
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.records import Layer
from layerconf.exceptions import Problem

__all__ = ["ARGV", "FILES", "Reading", "Source"]

#: The name under which a command line source records the argument list it parsed.
ARGV = "argv"
#: The name under which file sources record each file read, by path, with its sha256.
FILES = "files"


def _problems(problems: Any) -> tuple[Problem, ...]:
    found = tuple(problems)
    for problem in found:
        check_type("Reading", "problems", problem, Problem, "Problem records, one per problem")
    return found


def _inputs(inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    return dict(inputs)


@attrs.frozen
class Reading:
    """What a source read: its layer (None when the input holds nothing), problems, inputs."""

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    layer: Layer | None = attrs.field(validator=typed((Layer, type(None)), "a Layer or None"))
    problems: tuple[Problem, ...] = attrs.field(default=(), converter=_problems)
    inputs: Mapping[str, Any] = attrs.field(factory=dict, converter=_inputs)


@runtime_checkable
class Source(Protocol):
    """The shape of a source: a `name` (its layer's) and `read(parser)` returning a `Reading`.

    `read` never raises for a problem of the input: it returns it in `Reading.problems`, at
    the place it is about, so that one report holds every problem of every input.
    """

    @property
    def name(self) -> str: ...

    def read(self, parser: argparse.ArgumentParser) -> Reading: ...
