"""``layerconf schema``: a JSON Schema for the role files of a parser, for editors."""

from __future__ import annotations

import argparse

from layerconf.cli.command import Command, no_options, usage
from layerconf.cli.errors import EXIT_OK, PROG
from layerconf.cli.render import dump_json
from layerconf.cli.trainer import preset_of, trainer_parser


def _run(options: argparse.Namespace, argv: list[str]) -> int:
    del argv
    parser = trainer_parser(options)
    if options.parser is not None:
        title = f"role file of {PROG} --parser {options.parser}"
    else:
        title = f"role file of {PROG} profile {options.profile!r}"
    from layerconf.presets import role_file_schema

    dump_json(role_file_schema(parser, title=title, preset=preset_of(options)))
    return EXIT_OK


COMMANDS = (
    Command(
        "schema",
        usage("schema", takes_argv=False),
        "a JSON Schema for role files, for editors",
        "A JSON Schema (draft 2020-12) for the role files of a parser: every dest with "
        "its type,\nchoices, default and help, unknown keys rejected, so that an editor "
        "with\nyaml-language-server completes and validates role files as they are "
        "typed.",
        "example:\n"
        f"  {PROG} schema > megatron-config.schema.json\n"
        "  then, on the first line of a role file:\n"
        "  # yaml-language-server: $schema=megatron-config.schema.json",
        no_options,
        _run,
        takes_argv=False,
    ),
)
