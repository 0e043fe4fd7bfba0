"""Environment variables as a layer: ``SLIME_LR=1e-5`` sets ``lr`` as ``--lr 1e-5`` would.

`EnvSource(prefix="SLIME_")` maps every variable that starts with the prefix onto the dest its
rest names (``SLIME_LR`` -> ``lr``, ``SLIME_TENSOR_MODEL_PARALLEL_SIZE`` ->
``tensor_model_parallel_size``; a dest with capitals as written, ``SLIME_N`` -> ``N``); `names`
maps variables explicitly (``{"MY_LR": "lr"}``). Each value is converted by the parser's own
conversion of that dest, exactly as its command line converts a token (``type``, ``choices``,
``nargs``: a list is written as the command line would write it, ``"1 2"``), then taken by its
action as the command line's are (an append keeps the default, a trainer's own action runs). A
flag's variable holds the dest's value: ``true``/``false``, also ``1``/``0``, ``yes``/``no``,
``on``/``off``. Every value's origin is ``env SLIME_LR``.

Problems are never raised: a value the parser refuses is an error naming the variable; a
variable with the prefix that names no dest is a note (a warning with a did-you-mean when it is
close to one; past `SUGGESTED` such variables, a note), since other programs' variables may
share a prefix. The environment is read when
the source is read, never changed.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import shlex
from collections.abc import Mapping
from typing import Any, NoReturn

import attrs

from layerconf.core.checks import check_type, typed
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.records import Layer, Origin
from layerconf.core.secrets import (
    SECRETS,
    SecretPolicy,
    embedded_secrets,
    scrub_text,
    shows_secret,
)
from layerconf.core.suggest import Suggestions
from layerconf.exceptions import Problem
from layerconf.sources.base import Reading

__all__ = ["EnvSource"]

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_FLAGS = (
    argparse._StoreTrueAction,
    argparse._StoreFalseAction,
    argparse.BooleanOptionalAction,
)
# What argparse itself reports as a bad value, and what a type callable may raise besides.
_REFUSED = (argparse.ArgumentError, argparse.ArgumentTypeError, TypeError, ValueError)


def _names(names: Mapping[str, str]) -> Mapping[str, str]:
    check_type(
        "EnvSource", "names", names, Mapping, "a mapping of variable to dest: {'MY_LR': 'lr'}"
    )
    for variable, dest in names.items():
        if not isinstance(variable, str) or not isinstance(dest, str):
            raise TypeError(
                f"names maps variable names to dests, both text (got {variable!r}: {dest!r})"
            )
    return dict(names)


_ENVIRON = "a mapping of variable to text, such as os.environ, or None"


class _Refused(Exception):
    """A value the parser's conversion refused; the message says why."""


@attrs.frozen
class EnvSource:
    """The environment variables that start with `prefix` (and those in `names`) as one layer.

    `environ` is the mapping read (default: ``os.environ`` when the source is read); `name`
    is the layer's name. `secrets` says which variables and dests hold credentials: a value
    the parser refuses is never quoted for them.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    prefix: str = attrs.field(default="", validator=typed(str, "a variable prefix (str)"))
    names: Mapping[str, str] = attrs.field(factory=dict, converter=_names)
    environ: Mapping[str, str] | None = attrs.field(
        default=None, eq=False, repr=False, validator=typed((Mapping, type(None)), _ENVIRON)
    )
    name: str = "env"
    secrets: SecretPolicy = attrs.field(
        default=SECRETS, validator=attrs.validators.instance_of(SecretPolicy)
    )

    def __attrs_post_init__(self) -> None:
        if not self.prefix and not self.names:
            raise ValueError(
                "EnvSource needs a prefix (such as 'SLIME_') or names (such as "
                "{'MY_LR': 'lr'}): every variable of the environment is not configuration"
            )

    def read(self, parser: argparse.ArgumentParser) -> Reading:
        """The layer of the variables that name a dest of `parser`, with every problem."""
        environ = _snapshot(os.environ if self.environ is None else self.environ)
        actions = _actions_by_dest(parser)
        lowered = _lower_dests(actions)
        values: dict[str, Any] = {}
        origins: dict[tuple[str, ...], Origin] = {}
        problems: list[Problem] = []
        used: list[str] = []
        variables = sorted(name for name in environ if isinstance(name, str))
        named = [(variable, self._dest(variable, actions, lowered)) for variable in variables]
        setters: dict[str, list[str]] = {}
        for variable, dest in named:
            if dest is not None and dest in actions:
                setters.setdefault(dest, []).append(variable)
        quiet = _quiet(parser)  # one copy for every variable's conversion
        # The secret variables' values: a refused value of another variable may hold one.
        hidden = [
            environ[variable]
            for variable, dest in named
            if dest is not None
            and (self.secrets.is_secret(dest) or self.secrets.is_secret(variable))
            and isinstance(environ[variable], str)
        ]
        suggest = Suggestions(actions)  # (bounded per reading: see SUGGESTED)
        for variable, dest in named:
            if dest is None:
                continue
            origin = Origin(self.name, "env", token=variable)
            action = actions.get(dest)
            if action is None:
                problems.append(self._unknown(variable, dest, suggest))
                continue
            used.append(variable)
            if len(setters[dest]) > 1:
                if setters[dest][0] == variable:  # one problem, at the first of them
                    problems.append(self._many(dest, action, setters[dest]))
                continue
            try:
                values[dest] = _convert(quiet, action, _text(environ[variable]))
            except _Refused as refused:
                reason = str(refused)
                reason = self._unquoted(reason, variable, dest, environ[variable], hidden)
                problems.append(
                    Problem(
                        f"environment variable {_shown(variable)}: {reason}",
                        key=dest,
                        layer=self.name,
                        hint=f"write the value as you would after {_flag(action)}",
                    )
                )
                continue
            origins[(dest,)] = origin
        # A dest a secret-named variable set holds a secret whatever its name ('tok' from
        # HF_TOKEN): so say the layer's secret keys, which every formatter of its values asks.
        secret = [o[0] for o, by in origins.items() if self.secrets.is_secret(by.token or "")]
        layer = Layer(
            self.name, "env", values, Origin(self.name, "env"), origins, secret_keys=secret
        )
        return Reading(layer if values else None, problems, {"env": tuple(used)})

    def _dest(
        self, variable: str, actions: Mapping[str, argparse.Action], lowered: Mapping[str, str]
    ) -> str | None:
        """The dest `variable` names (None: not ours): its rest as written if that is a dest
        (``T_N`` for ``-N``), else in lower case (``T_LR``, and any other spelling, for lr)."""
        if variable in self.names:
            return self.names[variable]
        if self.prefix and variable.startswith(self.prefix) and len(variable) > len(self.prefix):
            rest = variable[len(self.prefix) :]
            if rest in actions:
                return rest
            return lowered.get(rest.lower(), rest.lower())
        return None

    def _many(self, dest: str, action: argparse.Action, variables: list[str]) -> Problem:
        """Two variables or more set `dest`: which one won would hang on how names sort."""
        shown = [_shown(variable) for variable in variables]
        listed = ", ".join(shown[:-1]) + " and " + shown[-1]
        return Problem(
            f"environment variables {listed} {'both' if len(shown) == 2 else 'all'} set "
            f"{dest} ({_flag(action)})",
            key=dest,
            layer=self.name,
            hint="unset one of them" if len(shown) == 2 else "unset all of them but one",
        )

    def _unquoted(
        self, reason: str, variable: str, dest: str, value: Any, hidden: list[str]
    ) -> str:
        """`reason` without the secret `value` holds: all of it for a secret variable or dest,
        or a value that shows a secret (``wandb_key=S``), else what its form shows (a URL's
        password, a secret key's value in JSON text); nor any of the `hidden` values (the
        secret variables'), which a refused value may quote."""
        if not isinstance(value, str):
            return reason
        if (
            self.secrets.is_secret(dest)
            or self.secrets.is_secret(variable)
            or shows_secret(value, self.secrets)
        ):
            return _without(reason, value, self.secrets)
        for text in embedded_secrets(value, self.secrets):
            reason = _without(reason, text, self.secrets)
        for text in hidden:
            if text in reason:
                reason = _without(reason, text, self.secrets)
        return reason

    def _unknown(self, variable: str, dest: str, suggest: Suggestions) -> Problem:
        close = suggest(dest)
        if variable in self.names:  # the program's own mapping names no dest
            return Problem(
                f"environment variable {_shown(variable)} is mapped to {dest!r} in names, which "
                "is no argument of this parser" + (f" (did you mean {close!r}?)" if close else ""),
                key=dest,
                layer=self.name,
                hint="as written it is ignored" if close else "remove it from names",
                severity="warning" if close else "info",
            )
        if close is not None:
            return Problem(
                f"environment variable {_shown(variable)} names no argument of this parser "
                f"(did you mean {self.prefix}{close.upper()}?)",
                key=dest,
                layer=self.name,
                hint="as written it is ignored",
                severity="warning",
            )
        return Problem(
            f"environment variable {_shown(variable)} names no argument of this parser; it is "
            "ignored",
            key=dest,
            layer=self.name,
            hint=f"unset it, or use another prefix than {self.prefix!r}",
            severity="info",
        )


_GONE: Any = object()


def _snapshot(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables as they are now, each read once: another thread may set or unset one
    meanwhile (os.environ lists its names atomically; a name listed may be gone when read)."""
    found = {}
    for name in list(environ):
        value = environ.get(name, _GONE)
        if value is not _GONE:
            found[name] = value
    return found


def _text(value: Any) -> str:
    """A variable's value, which must be text as in an environment (never quoted: a secret)."""
    if not isinstance(value, str):
        kind = type(value).__name__
        article = "an" if kind[:1] in "aeiou" else "a"
        raise _Refused(f"the value is {article} {kind}, not text as in an environment")
    return value


def _shown(variable: str) -> str:
    """A variable's name as a message gives it: as Python writes it if it is not printable."""
    return variable if variable.isprintable() else repr(variable)


def _without(message: str, text: str, policy: SecretPolicy) -> str:
    """`message` without the secret `text`, nor any of its words, quoted or long enough to find.

    argparse quotes a refused token as ``'token'``: each word's quoted form is replaced, however
    short; the bare text only when it is long enough not to wreck the message (as the command's
    scrubber does).
    """
    words = {text, *text.split()}
    with contextlib.suppress(ValueError):  # an unclosed quote: split on spaces is there
        words.update(shlex.split(text))
    return scrub_text(message, list(words), policy)


def _actions_by_dest(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The first action of each dest that takes a value (help, version and suppressed left out)."""
    found: dict[str, argparse.Action] = {}
    for action in parser._actions:
        if action.dest == argparse.SUPPRESS or isinstance(
            action, (argparse._HelpAction, argparse._VersionAction)
        ):
            continue
        found.setdefault(action.dest, action)
    return found


def _lower_dests(actions: Mapping[str, argparse.Action]) -> dict[str, str]:
    """Each dest by its lower-case spelling; a dest that is lower case wins a tie."""
    found: dict[str, str] = {}
    for dest in actions:
        if found.get(dest.lower()) != dest.lower():
            found[dest.lower()] = dest
    return found


def _flag(action: argparse.Action) -> str:
    return action.option_strings[0] if action.option_strings else action.dest


def _convert(quiet: argparse.ArgumentParser, action: argparse.Action, text: str) -> Any:
    """`text` converted as the parser converts the command line for `action`; `quiet` is the
    parser's copy whose error() refuses the value (`_quiet`)."""
    if isinstance(action, _FLAGS) or (
        isinstance(action, argparse._StoreConstAction) and type(action.const) is bool
    ):
        word = text.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise _Refused(f"{text!r} is not true or false")
    if isinstance(action, argparse._CountAction):
        try:
            return int(text)
        except ValueError:
            raise _Refused(f"{text!r} is not a count (an int)") from None
    if isinstance(action, argparse._SubParsersAction):
        raise _Refused("a subcommand cannot be set from the environment")
    if action.nargs == 0:
        raise _Refused(f"{_flag(action)} takes no value; it cannot be set from the environment")
    many = action.nargs not in (None, argparse.OPTIONAL)
    each = isinstance(action, argparse._AppendAction) and not many  # one --tag per word
    try:
        tokens = shlex.split(text) if many or each else [text]
    except ValueError as error:  # an unclosed quote
        raise _Refused(f"{text!r} cannot be split into values as a shell would: {error}") from None
    if many:
        _check_count(action, len(tokens))
    # As parse_args does: the dest starts as its default, then the action takes the values
    # (append keeps the default and nests nargs; a trainer's own action runs).
    namespace = argparse.Namespace()
    default = quiet.get_default(action.dest)
    if default is not argparse.SUPPRESS:
        setattr(namespace, action.dest, _copied(default))
    option = action.option_strings[0] if action.option_strings else None
    start = getattr(namespace, action.dest, None)
    try:
        if (
            each
            and type(action) is argparse._AppendAction
            and isinstance(start, (list, type(None)))
        ):
            # What argparse's append does per word, in one pass: it copies its list each time.
            items = list(start or ())
            items.extend(quiet._get_values(action, [token]) for token in tokens)
            setattr(namespace, action.dest, items)
        else:
            for strings in [[token] for token in tokens] if each else [tokens]:
                action(quiet, namespace, quiet._get_values(action, strings), option)
    except _Refused:
        raise
    except _REFUSED as error:
        raise _Refused(str(error)) from None
    except Exception as error:  # a user's type callable or action may raise anything
        raise _Refused(f"{type(error).__name__}: {error}") from None
    except SystemExit as error:  # parser.error() in an action, sys.exit() in a type
        raise _Refused(f"the parser stopped the program reading it (SystemExit: {error})") from None
    return getattr(namespace, action.dest, None)


def _quiet(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """A copy of `parser` (same actions) whose error() refuses the value instead of printing
    the usage and exiting: an action of the trainer's may call it."""
    quiet = copy.copy(parser)

    def error(message: str) -> NoReturn:
        raise _Refused(message)

    quiet.error = error  # type: ignore[method-assign]
    return quiet


def _check_count(action: argparse.Action, count: int) -> None:
    """Refuse as many values as the command line would refuse after the flag."""
    name = argparse._get_action_name(action)
    if isinstance(action.nargs, int) and count != action.nargs:
        plural = "" if action.nargs == 1 else "s"
        raise _Refused(f"argument {name}: expected {action.nargs} argument{plural} (got {count})")
    if action.nargs in (argparse.ONE_OR_MORE, argparse.PARSER) and count == 0:
        raise _Refused(f"argument {name}: expected at least one argument")


def _copied(value: Any) -> Any:
    """A deep copy of a default, so that an action that changes it in place changes a copy."""
    try:
        return copy.deepcopy(value)
    except Exception:  # a value that cannot be copied: argparse would use it as it is
        return value
