"""Resolving the trainer's command line per role: the roles, or every problem found.

`resolve` never lets the trainer's parser stop the process or raise a traceback: an
argparse error, ``--help`` or a crashing ``type=`` callable becomes a problem of the command
line at the argv token it is about, and the rest of the command line is read on
(`layerconf.cli.stops`). What does resolve teaches the running scrubber the roles' secrets.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from layerconf.cli._parser_copies import guarded, nothing_required
from layerconf.cli.errors import EXIT_PROBLEMS, UsageError
from layerconf.cli.render import Paint, dump_json, problem_line
from layerconf.cli.scrub import learn_argv_secrets, learn_secrets, stderr
from layerconf.cli.stops import (
    RAISED,
    crash_text,
    given_alone,
    raised_by_layerconf,
    raised_problem,
    read_on,
)
from layerconf.cli.trainer import preset_of, sources_of, trainer_parser
from layerconf.core.lazy import record_eq, record_hash, record_repr

if TYPE_CHECKING:
    from layerconf.core.namespace import Namespace
    from layerconf.core.rules import RuleSet
    from layerconf.exceptions import Problem
    from layerconf.presets import Preset
    from layerconf.sources import Source


class Outcome:
    """The namespaces of a resolution (None if it failed) and every problem it found; the
    rules not checked (`RUN_RULES`) and why: in file mode, each with the flags it would need;
    where the parser stopped on the command line, each that its role file was checked
    without."""

    def __init__(
        self,
        roles: dict[str, Namespace] | None,
        problems: Iterable[Problem],
        unchecked: dict[str, str] | None = None,
        unchecked_because: str = "without the command line",
    ) -> None:
        self.roles = roles
        self.problems = tuple(_in_order(problems))
        self.unchecked = unchecked or {}
        self.unchecked_because = unchecked_because

    @property
    def unchecked_text(self) -> str | None:
        """``not checked without the command line: ppo-scope (--use-critic, ...)``, or None."""
        if not self.unchecked:
            return None
        return f"not checked {self.unchecked_because}: " + ", ".join(
            f"{name} ({flags})" if flags else name for name, flags in self.unchecked.items()
        )

    @property
    def errors(self) -> int:
        return sum(problem.severity == "error" for problem in self.problems)

    @property
    def warnings(self) -> int:
        return sum(problem.severity == "warning" for problem in self.problems)

    @property
    def notes(self) -> int:
        return sum(problem.severity == "info" for problem in self.problems)


def resolved(options: argparse.Namespace, argv: list[str]) -> Outcome:
    """Resolve the trainer's command line with the chosen parser; report warnings if it worked."""
    outcome = resolve(trainer_parser(options), argv, preset_of(options), sources_of(options))
    if outcome.roles is not None:
        _report_warnings(outcome)
    return outcome


def resolve(
    parser: argparse.ArgumentParser,
    argv: list[str],
    preset: Preset,
    sources: Sequence[Source] = (),
    *,
    role_file: bool = True,
) -> Outcome:
    """The roles of `preset` that `argv` (and `sources`) resolve to with `parser`, or the
    problems found. Where the parser stops, the rest of the command line is read on, and with
    `role_file` the role file it names is checked on its own (`_stopped`)."""
    from layerconf.core.namespace import notices
    from layerconf.core.stack import reading_order
    from layerconf.exceptions import ConfigError, LayerconfError
    from layerconf.presets import resolve_roles

    learn_argv_secrets(argv, parser)  # '-kS', '--wandb-k S': as the parser reads them
    try:
        # Warnings are kept in the notices and reported from there: none is issued.
        roles = resolve_roles(guarded(parser), argv, preset=preset, sources=sources, warn=False)
    except ConfigError as error:
        return Outcome(None, error.problems)
    except LayerconfError as error:
        raise UsageError(str(error)) from None
    except RAISED as error:  # (the trainer's own sys.exit() too)
        # argparse's stop (one that an error while cleaning up hid too); or a type= callable
        # that argparse does not catch (an enum name: KeyError): the real trainer would stop
        # with a traceback, here it is a problem of the command line.
        first = raised_problem(error, parser, argv)
        if first is None:
            import traceback  # (an error's path only: the command's start does not pay for it)

            if raised_by_layerconf(traceback.extract_tb(error.__traceback__)):
                raise  # a bug of layerconf's own: the command's one line, exit 70 (cli.app)
            raise UsageError(crash_text(error, argv, parser)) from None
    else:
        learn_secrets(roles)  # a role file's secrets too, wherever their text is quoted
        found = dict.fromkeys(p for namespace in roles.values() for p in notices(namespace))
        return Outcome(roles, sorted(found, key=reading_order))
    # Read on out of the handler: what a parse raises then is not taken for this stop's
    # (`stop_behind` looks at what an error was raised while handling).
    return _stopped(first, parser, argv, preset, sources, role_file=role_file)


def _stopped(
    first: Problem,
    parser: argparse.ArgumentParser,
    argv: list[str],
    preset: Preset,
    sources: Sequence[Source],
    *,
    role_file: bool,
) -> Outcome:
    """The problems of a command line the parser stopped at (`first`, then the rest of it,
    `read_on`), and with `role_file` those of the role file it names, checked on its own as
    `check FILE` checks it (`resolve_files`): a launch's mistakes all at once, whichever
    file they are in; the rules that decide on the command line are then said unchecked."""
    problems, parsed = read_on(first, parser, argv, preset)
    path = None
    if role_file and preset.config_dest is not None:
        path = (
            getattr(parsed, preset.config_dest, None)
            if parsed is not None  # (else its option, read alone)
            else given_alone(parser, argv, preset.config_dest)
        )
    if not (isinstance(path, str) and path):
        return Outcome(None, problems)
    alone = resolve_files(parser, [path], preset, sources)
    unchecked = dict.fromkeys(alone.unchecked, "")
    return Outcome(
        None, problems + list(alone.problems), unchecked, "until the command line parses"
    )


#: The rules that decide on the run's command line, which a role file alone does not give:
#: file mode leaves them out (`resolve_files`), each with the flags it would need.
RUN_RULES = {
    "ppo-scope": "--use-critic, --advantage-estimator",
    "distinct-across-roles": "--use-critic, --advantage-estimator, --save",
}


def resolve_files(
    parser: argparse.ArgumentParser,
    paths: Sequence[str],
    preset: Preset,
    sources: Sequence[Source] = (),
) -> Outcome:
    """Every problem of each role file at `paths`, each resolved on its own against the
    parser's defaults: the command line is the role file's option and nothing else.

    The trainer's required arguments are not demanded (a copy of the parser has none), and
    the preset's rules named in `RUN_RULES` are left out: what they decide is the command
    line's. A problem of one file never hides another's.
    """
    from layerconf.presets import Preset as PresetType

    if preset.config_dest is None:
        raise UsageError(
            f"preset {preset.name!r} reads no role file: give the trainer's command line "
            "after '--' instead, or a preset with a role file (--preset)"
        )
    option = _config_option(parser, preset.config_dest)
    relaxed = nothing_required(parser)
    alone = attrs.evolve(preset, rules=_Without(preset, parser, tuple(RUN_RULES)))
    assert isinstance(alone, PresetType)
    problems: list[Problem] = []
    for path in paths:
        argv = [f"{option}={path}"]
        problems.extend(resolve(relaxed, argv, alone, sources, role_file=False).problems)
    names = preset.rules_for(parser).names
    return Outcome(None, problems, {n: flags for n, flags in RUN_RULES.items() if n in names})


@attrs.frozen
class _Without:
    """The rules of `preset` for the trainer's own `parser` but those named in `names`.

    They are built for `parser`, not the relaxed copy resolved with: to the rules a required
    option stays required, so a role file's null for it is refused as with any command line.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    preset: Preset
    parser: argparse.ArgumentParser
    names: tuple[str, ...]

    def __call__(self, relaxed: argparse.ArgumentParser) -> RuleSet:
        from layerconf.core.rules import RuleSet

        rules = self.preset.rules_for(self.parser)
        return RuleSet([rule for rule in rules if rule.name not in self.names])


def _config_option(parser: argparse.ArgumentParser, dest: str) -> str:
    """The long option that sets `dest`: how file mode hands each role file to the parser."""
    for action in parser._actions:
        if action.dest == dest and action.option_strings:
            return max(action.option_strings, key=len)
    raise UsageError(f"the trainer's parser has no option for the role file's dest {dest!r}")


# ---------------------------------------------------------------------------------------------
# What is reported


def counts(outcome: Outcome, *, notes: bool = True) -> str:
    """``1 error, 0 warnings``, then the notes if there are any and `notes` is true."""

    def plural(count: int, word: str) -> str:
        return f"{count} {word}" + ("" if count == 1 else "s")

    text = f"{plural(outcome.errors, 'error')}, {plural(outcome.warnings, 'warning')}"
    if notes and outcome.notes:
        text += ", " + plural(outcome.notes, "note")
    return text


def problems_json(problems: Iterable[Problem]) -> list[dict[str, Any]]:
    """The problems as ``check --json`` prints them: one object of fields each."""
    import attrs

    return [attrs.asdict(problem) for problem in problems]


def report_failure(outcome: Outcome, options: argparse.Namespace | None = None) -> int:
    """A resolution that failed: its errors and warnings on stderr, then the counts; with
    ``--json`` every problem on stdout as ``check --json`` prints them, the counts on stderr."""
    if options is not None and getattr(options, "json", False):
        dump_json(problems_json(outcome.problems))
        print(counts(outcome), file=stderr())
        return EXIT_PROBLEMS
    paint = Paint(stderr())
    for problem in outcome.problems:
        if problem.severity != "info":
            print(problem_line(problem, paint), file=stderr())
    print(counts(outcome, notes=False), file=stderr())
    return EXIT_PROBLEMS


def _report_warnings(outcome: Outcome) -> None:
    paint = Paint(stderr())
    for problem in outcome.problems:
        if problem.severity == "warning":
            print(problem_line(problem, paint), file=stderr())


def _in_order(problems: Iterable[Problem]) -> list[Problem]:
    """Errors and warnings in the order found (the file's order), then the notes."""
    listed = list(problems)
    return [p for p in listed if p.severity != "info"] + [p for p in listed if p.severity == "info"]
