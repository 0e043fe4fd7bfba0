"""``layerconf check``: every problem of the configuration, as FILE:LINE:COL lines."""

from __future__ import annotations

import argparse

from layerconf.cli.command import Command, usage
from layerconf.cli.errors import EXIT_OK, EXIT_PROBLEMS, PROG
from layerconf.cli.render import Paint, dump_json, problem_line
from layerconf.cli.resolving import counts, problems_json, resolve
from layerconf.cli.scrub import stderr, stdout
from layerconf.cli.trainer import preset_of, sources_of, trainer_parser


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strict", action="store_true", help="fail on warnings too")
    parser.add_argument("--json", action="store_true", help="print a JSON list of the problems")


def _run(options: argparse.Namespace, argv: list[str]) -> int:
    outcome = resolve(trainer_parser(options), argv, preset_of(options), sources_of(options))
    if options.json:
        dump_json(problems_json(outcome.problems))
    else:
        paint = Paint(stdout())
        for problem in outcome.problems:
            print(problem_line(problem, paint), file=stdout())
    print(counts(outcome), file=stderr())
    if outcome.errors or (options.strict and outcome.warnings):
        return EXIT_PROBLEMS
    return EXIT_OK


COMMANDS = (
    Command(
        "check",
        usage("check", "[--strict] [--json] -- ARGV..."),
        "every problem of the configuration, as FILE:LINE:COL lines",
        "Every problem the resolution finds, all at once, one a line on stdout:\n"
        "  FILE:LINE:COL: error|warning: message (hint)\n"
        "  argv[N]: error|warning: message (hint)\n"
        "Notes (arguments the parser does not own, passed on to SGLang) are 'note:' "
        "lines\nand never fail the check. A summary line ends the report on stderr.",
        "example:\n"
        f"  {PROG} check --strict -- $(cat launch_argv.txt)\n\n"
        "exit status: 0 clean; 1 errors (or warnings, with --strict); 2 a usage error.",
        _options,
        _run,
    ),
)
