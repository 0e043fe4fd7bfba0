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
import threading
from typing import TYPE_CHECKING, Any

from layerconf.cli.errors import UsageError, describe

if TYPE_CHECKING:
    from layerconf.core.namespace import Namespace
    from layerconf.presets import Preset
    from layerconf.sources import Source
    from layerconf.sources.files import UnreadableFile

DEFAULT_PROFILE = "megatron-slime"

#: How `parser_options` reads in a command's usage.
PARSER_USAGE = "[--profile NAME | --parser MODULE:ATTR]"
#: How the options that follow them read: --preset, and the sources of argv commands.
PRESET_USAGE = "[--preset PRESET]"
SOURCES_USAGE = "[--preset PRESET] [--env-prefix PREFIX]"


def preset_of(options: argparse.Namespace) -> Preset:
    """The preset a command resolves with, as `check_options` chose it."""
    preset: Preset = options.trainer_preset
    return preset


def check_options(options: argparse.Namespace, prog: str) -> None:
    """Choose the preset (--preset, else slime's for a profile and plain for --parser), and
    check --role against its roles, before anything is resolved."""
    options.trainer_preset = _chosen_preset(options)
    role = getattr(options, "role", None)
    roles = options.trainer_preset.roles
    if role is not None and role not in roles:
        from layerconf.core.suggest import suggestion

        listed = ", ".join(repr(name) for name in roles)
        raise UsageError(
            f"argument --role: invalid choice: {role!r} (choose from {listed})"
            + suggestion(role, roles),
            prog,
        )


def _chosen_preset(options: argparse.Namespace) -> Preset:
    from layerconf.presets import PLAIN, SLIME

    named = {"slime": SLIME, "plain": PLAIN}
    spec: str | None = options.preset
    if spec is None:
        return SLIME if options.parser is None else PLAIN
    if spec in named:
        return named[spec]
    if ":" not in spec:
        from layerconf.core.suggest import suggestion

        raise UsageError(
            f"--preset takes slime, plain or MODULE:ATTR, such as train:PRESET (got {spec!r})"
            + suggestion(spec, named)
        )
    return _preset_from(_imported(spec, "--preset"), spec)


def parser_options(parser: argparse.ArgumentParser, *, sources: bool = True) -> None:
    """--profile NAME or --parser MODULE:ATTR, --preset, and with `sources` --env-prefix."""
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
    parser.add_argument(
        "--preset",
        metavar="PRESET",
        help="the trainer's roles, role file and rules: slime (the default with --profile), "
        "plain (the default with --parser: one role, no role file, no trainer's rules), or "
        "MODULE:ATTR naming a layerconf.Preset of your own",
    )
    if sources:
        parser.add_argument(
            "--env-prefix",
            metavar="PREFIX",
            help="also read the environment variables that start with PREFIX, as the "
            "trainer would: with SLIME_, SLIME_LR sets lr (above the defaults, below the "
            "command line)",
        )


def sources_of(options: argparse.Namespace) -> list[Source]:
    """The sources besides the command line that --env-prefix asks for."""
    prefix: str | None = getattr(options, "env_prefix", None)
    if prefix is None:
        return []
    if not prefix:  # `--env-prefix "$PREFIX"` with PREFIX unset: not "read nothing"
        raise UsageError(
            "--env-prefix '' names no prefix (is the shell variable that gives it unset?): "
            "with it, every variable of the environment (PATH, HOME...) would be read as "
            "configuration; give the trainer's prefix, such as SLIME_"
        )
    from layerconf.sources import EnvSource

    return [EnvSource(prefix=prefix)]


def role_option(parser: argparse.ArgumentParser) -> None:
    """--role ROLE, one of the preset's roles (checked by `check_options`)."""
    parser.add_argument("--role", metavar="ROLE", help="only this role (default: every role)")


def selected(roles: dict[str, Namespace], role: str | None) -> dict[str, Namespace]:
    """The roles --role asks for: all of them without it."""
    return roles if role is None else {role: roles[role]}


def trainer_parser(options: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser --parser names, or the --profile's (made once per command line)."""
    built: argparse.ArgumentParser | None = getattr(options, "built_parser", None)
    if built is not None:
        return built
    if options.parser is not None:
        built = _import_parser(options.parser)
    else:
        from layerconf.exceptions import UnknownProfileError
        from layerconf.profiles.loader import load_profile

        try:
            built = load_profile(options.profile)
        except UnknownProfileError as error:
            raise UsageError(str(error)) from None
    options.built_parser = built
    return built


def check_trainer_argv(
    options: argparse.Namespace, own: argparse.ArgumentParser, argv: list[str], prog: str
) -> None:
    """Refuse layerconf's own options written after ``--`` (``--role critic``, ``--json``):
    they would be handed to the trainer, whose parser does not take them."""
    own_flags = own._option_string_actions
    trainer_flags = None
    for index, token in enumerate(argv):
        flag = token.split("=", 1)[0]
        if token == "--":
            return
        if flag not in own_flags or flag in ("-h", "--help"):
            continue
        if trainer_flags is None:
            trainer_flags = trainer_parser(options)._option_string_actions
        if flag in trainer_flags:
            continue
        takes_value = own_flags[flag].nargs != 0 and "=" not in token
        written = " ".join(argv[index : index + 2] if takes_value else [token])
        raise UsageError(
            f"{flag!r} is an option of {prog}, written after '--' (argv[{index}]): it would be "
            f"handed to the trainer, whose parser does not take it; write it before '--': "
            f"{prog} {written} ... -- ...",
            prog,
        )


def missing_separator(
    own: argparse.ArgumentParser, rest: list[str], error: UsageError
) -> UsageError:
    """`error` (arguments layerconf does not know, and no ``--``) saying that the trainer's
    command line goes after ``--``, and the command line to write."""
    from layerconf.cli.command import option_suggestion
    from layerconf.core.secrets import redact_argv

    try:
        options, extras = own.parse_known_intermixed_args(rest)
    except UsageError:
        return error
    if not extras:
        return error
    # What is left is layerconf's own, in the order written; but a value right after a flag
    # the command does not know is that flag's, even if a positional (check's FILE) took it.
    mine: list[str] = []
    theirs: list[str] = []
    waiting = list(extras)
    follows_flag = False
    for token in rest:
        if waiting and token == waiting[0]:
            theirs.append(waiting.pop(0))
            follows_flag = token.startswith("-") or follows_flag
        elif follows_flag and not token.startswith("-"):
            theirs.append(token)
        else:
            follows_flag = False
            mine.append(token)
    # Redacted as the trainer's parser reads them: an abbreviation (--wandb-k) is its secret too.
    shown = redact_argv(theirs, parser=_parser_if_any(options))[0]
    written = " ".join([error.prog, *mine, "--", *shown])
    message = error.message
    if message.startswith("unrecognized arguments: "):
        message = "unrecognized arguments: " + " ".join(shown)
    # A misspelling of the command's own option (--jsn) may be meant as well as a trainer's.
    for token, as_shown in zip(theirs, shown, strict=True):
        meant = option_suggestion(token, own._option_string_actions) if token[:1] == "-" else ""
        if meant:
            return UsageError(
                f"{message}{meant} If {as_shown} is the trainer's, its command "
                f"line goes after '--': {written}",
                error.prog,
            )
    return UsageError(
        f"{message}: the trainer's command line goes after '--': {written}", error.prog
    )


def learn_misplaced_secrets(own: argparse.ArgumentParser, rest: list[str]) -> None:
    """Teach the running command's scrubber the secrets of `rest`, the tokens before ``--``,
    as the trainer's parser reads them: the usage error about them quotes them, and an
    abbreviation (``--wandb-k S``) is a secret's flag only to that parser."""
    from layerconf.cli.scrub import learn_argv_secrets

    try:
        options, _ = own.parse_known_intermixed_args(rest)
    except UsageError:
        return
    parser = _parser_if_any(options)
    if parser is not None:
        learn_argv_secrets(rest, parser)


def _parser_if_any(options: argparse.Namespace) -> argparse.ArgumentParser | None:
    """The trainer's parser the command's options name, or None (none named, or it cannot be
    had: that is the command's own error to give, not a message's about where tokens go)."""
    if getattr(options, "profile", None) is None and getattr(options, "parser", None) is None:
        return None
    try:
        return trainer_parser(options)
    except UsageError:
        return None


def imported_files(options: argparse.Namespace) -> dict[str, str]:
    """The files --parser and --preset were imported from, each with what it is: a file
    ``-o`` must never replace (``schema --parser train.py:get_parser -o train.py``)."""
    found: dict[str, str] = {}
    for option in ("parser", "preset"):
        spec = getattr(options, option, None)
        module_name = spec.rpartition(":")[0] if isinstance(spec, str) else ""
        if module_name.endswith(".py") or "/" in module_name or os.sep in module_name:
            module_name = os.path.splitext(os.path.basename(module_name))[0]
        path = getattr(sys.modules.get(module_name), "__file__", None)
        if isinstance(path, str):
            found[path] = f"the module of --{option} {spec}"
    return found


def _import_parser(spec: str) -> argparse.ArgumentParser:
    """The parser named by ``MODULE:ATTR`` (ATTR a parser, or a function returning one)."""
    return _parser_from(_imported(spec, "--parser"), spec)


def _imported(spec: str, option: str) -> Any:
    """The object ``MODULE:ATTR`` names, for `option` (whose name the errors give)."""
    module_name, colon, attribute = spec.rpartition(":")
    if not colon or not module_name or not attribute:
        example = "train:get_parser" if option == "--parser" else "train:PRESET"
        raise UsageError(f"{option} takes MODULE:ATTR, such as {example} (got {spec!r})")
    target: Any = _import_module(module_name, option)
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            from layerconf.core.suggest import suggestion

            names = [name for name in dir(target) if not name.startswith("_")]
            raise UsageError(
                f"{option}: {module_name!r} has no attribute {attribute!r}{suggestion(part, names)}"
            ) from None
    return target


def _import_module(module_name: str, option: str) -> Any:
    """The module of ``MODULE:ATTR``: a ``.py`` path, or a name looked up as -m does."""
    import importlib
    import importlib.util

    try:
        if module_name.endswith(".py") or "/" in module_name or os.sep in module_name:
            return _import_file(module_name, option)
        # As `python -m` would: the current directory first.
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        if module_name not in sys.modules:
            found = importlib.util.find_spec(module_name)  # (imports its parent packages)
            if found is not None and isinstance(found.origin, str) and found.origin.endswith(".py"):
                # A huge file refused by its size, not read: the import reads it, once.
                _check_size(found.origin, option)
        return importlib.import_module(module_name)
    except UsageError:
        raise
    except ModuleNotFoundError as error:
        if error.name is not None and module_name.startswith(error.name):
            raise UsageError(
                f"{option}: no module named {module_name!r} "
                "(looked in the current directory and on sys.path)"
            ) from None
        raise UsageError(f"{option}: importing {module_name!r} failed: {error}") from None
    except (Exception, SystemExit) as error:
        raise UsageError(f"{option}: importing {module_name!r} raised {describe(error)}") from None


def _parser_from(target: Any, spec: str) -> argparse.ArgumentParser:
    """`target` if it is a parser, else what calling it returns, if that is one."""
    made: argparse.ArgumentParser = _made(
        target, spec, "--parser", argparse.ArgumentParser, "an argparse.ArgumentParser"
    )
    unnamed = next((action for action in made._actions if action.dest == ""), None)
    if unnamed is not None:  # argparse takes dest="", but no value can be said by its name
        which = "/".join(unnamed.option_strings) or "a positional argument"
        raise UsageError(
            f"--parser: {spec} has an argument with an empty dest ({which}): layerconf names "
            "every value by its dest; give it one (dest='name')"
        )
    return made


def _preset_from(target: Any, spec: str) -> Preset:
    """`target` if it is a preset, else what calling it returns, if that is one."""
    from layerconf.presets import Preset

    made: Preset = _made(target, spec, "--preset", Preset, "a layerconf.Preset")
    return made


def _made(target: Any, spec: str, option: str, kind: type, named: str) -> Any:
    """`target` if it is a `kind`, else what calling it (without arguments) returns, if that
    is one; anything else is a `UsageError` naming `option`, `spec` and what it got."""
    if isinstance(target, kind):
        return target
    if not callable(target):
        raise UsageError(
            f"{option}: {spec} is neither {named} nor a function returning one "
            f"(it is the {type(target).__name__} {target!r:.60})"
        )
    try:
        made = target()
    except (Exception, SystemExit) as error:
        raise UsageError(f"{option}: {spec}() raised {describe(error)}") from None
    if not isinstance(made, kind):
        raise UsageError(
            f"{option}: {spec}() returned the {type(made).__name__} {made!r:.60}, not {named}"
        )
    return made


# Held while a file is imported: another thread must not take the module half made from
# sys.modules (a reentrant lock: the file may itself run the command).
_IMPORTING = threading.RLock()


def _import_file(path: str, option: str) -> Any:
    """The module of a ``.py`` file, under its own name, its directory on sys.path."""
    with _IMPORTING:
        return _import_file_locked(path, option)


def _import_file_locked(path: str, option: str) -> Any:
    import importlib.util

    source = _source(path, option)
    name = os.path.splitext(os.path.basename(path))[0]
    imported = sys.modules.get(name)
    if imported is not None and getattr(imported, "__file__", None) == os.path.abspath(path):
        return imported  # --parser and --preset from one file: imported once
    if _other_module(name, os.path.abspath(path)):
        raise UsageError(
            f"{option}: {path} would replace the module {name!r} imported from elsewhere; "
            "rename the file, or name its module as MODULE:ATTR"
        )
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)  # as running the script would: its siblings import
    found = importlib.util.spec_from_file_location(name, path)
    if found is None or found.loader is None:
        raise UsageError(f"{option}: cannot import {path} as a Python module")
    code = compile(source, path, "exec", dont_inherit=True)  # the bytes read, not read again
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module  # under its own name: records name its enums by that module
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _source(path: str, option: str) -> bytes:
    """The bytes of the Python file at `path`, read as every input is: a directory, a device,
    a silent FIFO or a file over 16 MiB is a `UsageError` saying what is there."""
    from layerconf.sources.files import UnreadableFile, read_bounded

    try:
        return read_bounded(path, kind="Python file")
    except UnreadableFile as error:
        raise _unreadable(error, path, option) from None


def _check_size(path: str, option: str) -> None:
    """A `UsageError` for the file of a module found on sys.path that is over 16 MiB (or no
    longer a regular file), told by its status: the import reads the file, once."""
    from layerconf.sources.files import UnreadableFile, check_size

    try:
        check_size(path, kind="Python file")
    except UnreadableFile as error:
        raise _unreadable(error, path, option) from None


def _unreadable(error: UnreadableFile, path: str, option: str) -> UsageError:
    """The usage error of an `UnreadableFile` for the Python file at `path`."""
    if error.missing:
        return UsageError(f"{option}: no such file: {path}")
    return UsageError(f"{option}: {path}: {error.message} ({error.hint})")


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
