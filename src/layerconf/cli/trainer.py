"""The trainer a command resolves for: its parser (--profile, --parser MODULE:ATTR) and preset.

The parser is the bundled profile's, or the user's own, imported as ``python -m`` would
import it (the current directory first) or from a ``.py`` path. What cannot be imported, or
is not a parser, is a `UsageError` naming what is wrong. `preset_of` is the one place that
says which preset (roles, role file, rules) a command line resolves with.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from layerconf.cli.errors import UsageError, describe

if TYPE_CHECKING:
    from layerconf.core.namespace import Namespace
    from layerconf.presets import Preset

DEFAULT_PROFILE = "megatron-slime"

#: How `parser_options` reads in a command's usage.
PARSER_USAGE = "[--profile NAME | --parser MODULE:ATTR]"


def preset_of(options: argparse.Namespace | None) -> Preset:
    """The preset a command resolves with: SLIME, whatever the command line says (for now).

    `options` is None before the command line is parsed (``--role``'s choices).
    """
    from layerconf.presets import SLIME

    del options
    return SLIME


def parser_options(parser: argparse.ArgumentParser) -> None:
    """--profile NAME or --parser MODULE:ATTR: the options `trainer_parser` reads."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--profile",
        metavar="NAME",
        default=DEFAULT_PROFILE,
        help=f"a bundled parser profile (default: {DEFAULT_PROFILE})",
    )
    source.add_argument(
        "--parser",
        metavar="MODULE:ATTR",
        help="your trainer's parser: an argparse.ArgumentParser, or a function returning "
        "one (MODULE is imported from the current directory too, or given as a .py path)",
    )


def role_option(parser: argparse.ArgumentParser) -> None:
    """--role ROLE, one of the preset's roles: read by `selected`."""
    roles = preset_of(None).roles
    parser.add_argument(
        "--role",
        metavar="ROLE",
        choices=roles,
        help="only this role: " + " or ".join(roles),
    )


def selected(roles: dict[str, Namespace], role: str | None) -> dict[str, Namespace]:
    """The roles --role asks for: all of them without it."""
    return roles if role is None else {role: roles[role]}


def trainer_parser(options: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser --parser names, or the --profile's."""
    if options.parser is not None:
        return _import_parser(options.parser)
    from layerconf.exceptions import UnknownProfileError
    from layerconf.profiles.loader import load_profile

    try:
        return load_profile(options.profile)
    except UnknownProfileError as error:
        raise UsageError(str(error)) from None


def _import_parser(spec: str) -> argparse.ArgumentParser:
    """The parser named by ``MODULE:ATTR`` (ATTR a parser, or a function returning one)."""
    module_name, colon, attribute = spec.rpartition(":")
    if not colon or not module_name or not attribute:
        raise UsageError(f"--parser takes MODULE:ATTR, such as train:get_parser (got {spec!r})")
    target: Any = _import_module(module_name)
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            from layerconf.core.suggest import suggestion

            names = [name for name in dir(target) if not name.startswith("_")]
            raise UsageError(
                f"--parser: {module_name!r} has no attribute {attribute!r}{suggestion(part, names)}"
            ) from None
    return _parser_from(target, spec)


def _import_module(module_name: str) -> Any:
    """The module of ``--parser MODULE:ATTR``: a ``.py`` path, or a name looked up as -m does."""
    import importlib

    try:
        if module_name.endswith(".py") or "/" in module_name or os.sep in module_name:
            return _import_file(module_name)
        # As `python -m` would: the current directory first.
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(module_name)
    except UsageError:
        raise
    except ModuleNotFoundError as error:
        if error.name is not None and module_name.startswith(error.name):
            raise UsageError(
                f"--parser: no module named {module_name!r} "
                "(looked in the current directory and on sys.path)"
            ) from None
        raise UsageError(f"--parser: importing {module_name!r} failed: {error}") from None
    except (Exception, SystemExit) as error:
        raise UsageError(f"--parser: importing {module_name!r} raised {describe(error)}") from None


def _parser_from(target: Any, spec: str) -> argparse.ArgumentParser:
    """`target` if it is a parser, else what calling it returns, if that is one."""
    if isinstance(target, argparse.ArgumentParser):
        return target
    if not callable(target):
        raise UsageError(
            f"--parser: {spec} is neither an argparse.ArgumentParser nor a function returning "
            f"one (it is the {type(target).__name__} {target!r:.60})"
        )
    try:
        made = target()
    except (Exception, SystemExit) as error:
        raise UsageError(f"--parser: {spec}() raised {describe(error)}") from None
    if not isinstance(made, argparse.ArgumentParser):
        raise UsageError(
            f"--parser: {spec}() returned the {type(made).__name__} {made!r:.60}, not an "
            "argparse.ArgumentParser"
        )
    return made


def _import_file(path: str) -> Any:
    """The module of a ``.py`` file, under its own name, its directory on sys.path."""
    import importlib.util

    if not os.path.isfile(path):
        raise UsageError(f"--parser: no such file: {path}")
    name = os.path.splitext(os.path.basename(path))[0]
    if _other_module(name, os.path.abspath(path)):
        raise UsageError(
            f"--parser: {path} would replace the module {name!r} imported from elsewhere; "
            "rename the file, or name its module as MODULE:ATTR"
        )
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)  # as running the script would: its siblings import
    found = importlib.util.spec_from_file_location(name, path)
    if found is None or found.loader is None:
        raise UsageError(f"--parser: cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module  # under its own name: records name its enums by that module
    try:
        found.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _other_module(name: str, path: str) -> bool:
    """Whether `name` is another module than the file at `path`, imported or importable."""
    import importlib.util

    module = sys.modules.get(name)
    if module is not None:
        return getattr(module, "__file__", None) != path
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin != path
