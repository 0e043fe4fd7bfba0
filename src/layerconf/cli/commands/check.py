"""``layerconf check``: every problem of role files or of a command line, in four formats.

``check FILE...`` checks role files on their own (`resolve_files`); ``check -- ARGV`` the
trainer's command line with the role file it names. The problems are printed as text
(FILE:LINE:COL lines), JSON, GitHub workflow annotations or a SARIF 2.1.0 log. Every format
quotes only what a `Problem` holds, whose messages and hints never hold a secret's value (the
rules that build them redact it), and the running scrubber guards the output besides.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from layerconf.cli.command import Command, a_path, usage
from layerconf.cli.errors import EXIT_OK, EXIT_PROBLEMS, PROG, UsageError
from layerconf.cli.render import Paint, dump_json, problem_line, utf8_text
from layerconf.cli.resolving import Outcome, counts, problems_json, resolve, resolve_files
from layerconf.cli.scrub import stderr, stdout
from layerconf.cli.trainer import preset_of, sources_of, trainer_parser

if TYPE_CHECKING:
    from layerconf.exceptions import Problem

FORMATS = ("text", "json", "github", "sarif")

#: The title of every GitHub annotation.
_TITLE = "layerconf check"
_GITHUB_COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}
_SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}
_SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        type=a_path,
        help="role files to check on their own, against the parser's defaults",
    )
    parser.add_argument("--strict", action="store_true", help="fail on warnings too")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        help="text (default): FILE:LINE:COL lines; json: a list of the problems; github: "
        "workflow annotations; sarif: a SARIF 2.1.0 log",
    )
    parser.add_argument("--json", action="store_true", help="the same as --format json")


def _run(options: argparse.Namespace, argv: list[str]) -> int:
    form = _format(options)
    parser = trainer_parser(options)
    if options.files:
        if argv:
            raise UsageError(
                "give role files or the trainer's command line after '--', not both: the "
                "files are checked against the parser's defaults, a command line with the "
                "role file it names",
                f"{PROG} check",
            )
        outcome = resolve_files(parser, options.files, preset_of(options), sources_of(options))
    elif options.separated:
        outcome = resolve(parser, argv, preset_of(options), sources_of(options))
    else:
        raise UsageError(
            "give role files to check (check FILE...) or the trainer's command line after "
            "'--' (check -- --lr 1e-6 --megatron-config-path ppo.yaml)",
            f"{PROG} check",
            help_hint=True,
        )
    _print(form, outcome)
    summary = counts(outcome)
    if outcome.unchecked_text:
        summary += "; " + outcome.unchecked_text
    print(summary, file=stderr())
    if outcome.errors or (options.strict and outcome.warnings):
        return EXIT_PROBLEMS
    return EXIT_OK


def _format(options: argparse.Namespace) -> str:
    if options.json and options.format not in (None, "json"):
        raise UsageError(
            f"--json is --format json: give one of --json and --format {options.format}",
            f"{PROG} check",
        )
    form: str = "json" if options.json else options.format or "text"
    return form


def _print(form: str, outcome: Outcome) -> None:
    if form == "json":
        dump_json(problems_json(outcome.problems))
    elif form == "sarif":
        notes = [outcome.unchecked_text] if outcome.unchecked_text else []
        dump_json(sarif_log(outcome.problems, notes))
    elif form == "github":
        for problem in outcome.problems:
            print(utf8_text(github_line(problem)), file=stdout())
    else:
        paint = Paint(stdout())
        for problem in outcome.problems:
            print(problem_line(problem, paint), file=stdout())


# ---------------------------------------------------------------------------------------------
# GitHub workflow commands


def github_line(problem: Problem) -> str:
    """``::error file=F,line=L,col=C,title=...::message (hint)``, escaped as @actions/core
    escapes: the message's ``%``, CR and LF; the properties' ``:`` and ``,`` too. A problem
    without a file (the command line's) has no file=: its message starts where it is
    (``argv[N]: ``, or the layer's name)."""
    properties = []
    if problem.source is not None:
        properties.append(("file", problem.source))
        if problem.line is not None:
            properties.append(("line", str(problem.line)))
        if problem.column is not None:
            properties.append(("col", str(problem.column)))
    properties.append(("title", _TITLE))
    text = problem.message + (f" ({problem.hint})" if problem.hint else "")
    if problem.source is None and problem.location:  # argv[N], or the layer's name
        text = f"{problem.location}: {text}"
    shown = ",".join(f"{name}={_escape_property(value)}" for name, value in properties)
    return f"::{_GITHUB_COMMANDS[problem.severity]} {shown}::{_escape_data(text)}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


# ---------------------------------------------------------------------------------------------
# SARIF 2.1.0


def sarif_log(problems: Iterable[Problem], notes: Sequence[str] = ()) -> dict[str, Any]:
    """A SARIF 2.1.0 log of one run: a result per problem, located in its file when it has
    one (relative paths against %SRCROOT%, the current directory), else by its argv index in
    the result's property bag; `notes` (what was not checked) are notifications of the run's
    invocation."""
    import os
    from pathlib import Path

    from layerconf import __version__

    results = [_sarif_result(problem) for problem in problems]
    rules = sorted({result["ruleId"] for result in results if "ruleId" in result})
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "layerconf",
                "version": __version__,
                "rules": [{"id": rule} for rule in rules],
            }
        },
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(os.getcwd()).as_uri().rstrip("/") + "/"}},
        "invocations": [
            {
                "executionSuccessful": True,
                "toolExecutionNotifications": [
                    {"level": "note", "message": {"text": note}} for note in notes
                ],
            }
        ],
        "results": results,
    }
    return {"$schema": _SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def _sarif_result(problem: Problem) -> dict[str, Any]:
    text = problem.message + (f" ({problem.hint})" if problem.hint else "")
    result: dict[str, Any] = {"level": _SARIF_LEVELS[problem.severity], "message": {"text": text}}
    if problem.rule is not None:
        result["ruleId"] = problem.rule
    properties = {
        name: value
        for name, value in (
            ("key", problem.key),
            ("layer", problem.layer),
            ("argvIndex", problem.argv_index),
        )
        if value is not None
    }
    if properties:
        result["properties"] = properties
    if problem.source is not None:
        region = {}
        if problem.line is not None:
            region["startLine"] = problem.line
            if problem.column is not None:
                region["startColumn"] = problem.column
        physical: dict[str, Any] = {"artifactLocation": _artifact(problem.source)}
        if region:
            physical["region"] = region
        result["locations"] = [{"physicalLocation": physical}]
    return result


def _artifact(source: str) -> dict[str, str]:
    """An absolute path as a file URI; a relative one as a URI reference against %SRCROOT%."""
    import os
    from pathlib import Path, PurePath
    from urllib.parse import quote

    if os.path.isabs(source):
        return {"uri": Path(source).as_uri()}
    # A byte that was not UTF-8 (held as a lone surrogate) is percent-encoded as that byte.
    uri = quote(PurePath(source).as_posix(), errors="surrogateescape")
    return {"uri": uri, "uriBaseId": "%SRCROOT%"}


COMMANDS = (
    Command(
        "check",
        usage("check", "[--strict] [--format FORMAT | --json] (FILE... | -- ARGV...)"),
        "every problem of role files or of the configuration, as FILE:LINE:COL lines",
        "Every problem found, all at once, one a line on stdout:\n"
        "  FILE:LINE:COL: error|warning: message (hint)\n"
        "  argv[N]: error|warning: message (hint)\n"
        "With FILE..., each role file is checked on its own against the parser's defaults\n"
        "(no command line needed; the rules that need one are named on stderr). With\n"
        "'-- ARGV...', the trainer's command line with the role file it names. Notes\n"
        "(arguments the parser does not own, passed on to SGLang) are 'note:' lines and\n"
        "never fail the check. A summary line ends the report on stderr.",
        "examples:\n"
        f"  {PROG} check configs/megatron_ppo.yaml\n"
        f"  {PROG} check --strict -- $(cat launch_argv.txt)\n"
        f"  {PROG} check --format github configs/*.yaml   # annotations in a GitHub workflow\n\n"
        "exit status: 0 clean; 1 errors (or warnings, with --strict); 2 a usage error.",
        _options,
        _run,
        argv_optional=True,
    ),
)
