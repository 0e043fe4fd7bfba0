"""Role files: a YAML list of role entries, each with the overrides of one role.

The format, whatever its top-level key (slime's is ``megatron``)::

    megatron:
      - name: critic-lr          # a label, optional
        role: critic
        overrides:               # 'args' is the old name of 'overrides'
          lr: 1e-5

`check_role_file` reads one into a `Layer` per role, with the line and column of every key and
value, and every structural problem at once (a missing 'role', an unknown field, two entries of
one role...); `role_file_text` writes one (``layerconf show --role-file``). Whether override
keys are real argument names, and their values of the right types, is decided by rules. A
trainer reads its role file once per role (slime does): the last few role files read are kept
by the sha256 of their bytes, so reading the same bytes again costs a read and a hash, not a
parse. The document's structure is checked, and the layers built, by `_role_reader`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from layerconf.core.checks import PATH, check_type
from layerconf.core.lazy import record_eq, record_hash, record_repr, sha256_hex
from layerconf.core.records import Layer
from layerconf.exceptions import ConfigError, Problem
from layerconf.presets._role_reader import RoleReader
from layerconf.sources.yaml import (
    YamlDocument,
    dump_yaml,
    parse_yaml_bytes,
    read_yaml_bytes,
    reader_settings,
)

__all__ = [
    "RoleFile",
    "RoleFileFormat",
    "check_role_file",
    "problems_of_role",
    "read_role_file",
    "role_file_text",
]


def _top_key(_: object, __: attrs.Attribute[str], key: str) -> None:
    if not isinstance(key, str) or not key:
        raise ValueError(f"top_key must be a non-empty string such as 'roles' (got {key!r})")


@attrs.frozen
class RoleFileFormat:
    """A role file's shape: its top-level key, and what to do about a file with no document."""

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    top_key: str = attrs.field(default="roles", validator=_top_key)
    empty_hint: str | None = None

    @property
    def hint_when_empty(self) -> str:
        return self.empty_hint or (
            f"list role entries under '{self.top_key}:', or leave the role file out so that "
            "every role inherits the command line"
        )


@attrs.frozen
class RoleFile:
    """A role file read: one `Layer` per role it lists, and every problem found in it.

    `layers` maps each role present to its layer (kind ``file``): the entry's overrides, the
    entry's position as the layer's origin and, in `Layer.origins`, the position of every
    override value (leaves and the nested mappings that hold them), labelled with the entry's
    ``name``. `roles_missing` lists the roles without an entry, which inherit the command line.
    `sha256` is the hex digest of the file's bytes, for audit records (None if unreadable).
    From `check_role_file`, `layers` holds what could be read even when `problems` has errors.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    path: str
    sha256: str | None
    layers: Mapping[str, Layer]
    roles_missing: tuple[str, ...]
    problems: tuple[Problem, ...] = ()

    @property
    def errors(self) -> tuple[Problem, ...]:
        """Only the problems of severity ``error``."""
        return tuple(p for p in self.problems if p.severity == "error")


_ROLES = RoleFileFormat()


def read_role_file(
    path: str | os.PathLike[str],
    roles: Sequence[str],
    *,
    layer_name: str = "role-config",
    form: RoleFileFormat = _ROLES,
) -> RoleFile:
    """Read a role file of format `form` into one layer per role.

    Raises `ConfigError` listing every problem of the file at once (warnings included) when
    any of them is an error; warnings alone are kept in `RoleFile.problems`.
    """
    check_type("read_role_file", "path", path, PATH, _PATH_TAKES)
    role_file = check_role_file(path, roles, layer_name=layer_name, form=form)
    if role_file.errors:
        raise ConfigError(role_file.problems)
    return role_file


def check_role_file(
    path: str | os.PathLike[str],
    roles: Sequence[str],
    *,
    layer_name: str = "role-config",
    form: RoleFileFormat = _ROLES,
) -> RoleFile:
    """Read a role file like `read_role_file`, returning its problems instead of raising.

    Every problem is located at ``file:line:column`` and says what to write instead; they are
    sorted by position. This is what a ``check`` command reports. The file is read on every
    call; when its bytes are those of a recent call, that call's result is given again.
    """
    check_type("check_role_file", "path", path, PATH, _PATH_TAKES)
    check_type("check_role_file", "layer_name", layer_name, str, "a layer name (str)")
    valid = _valid_roles(roles)
    if not layer_name:
        raise ValueError(f"layer_name must be a non-empty string (got {layer_name!r})")
    source = os.fspath(path)
    top = form.top_key
    data = read_yaml_bytes(source, layer=layer_name)
    if isinstance(data, YamlDocument):
        return _read(data, valid, layer_name, top)
    # The same bytes read the same way: a trainer reads its role file once per role. The
    # format is in the key by what the reading takes from it (no record hashed).
    sha256 = sha256_hex(data)
    hint = form.hint_when_empty
    key = (source, valid, layer_name, top, hint, sha256, *reader_settings())
    with _ROLE_FILES_LOCK:
        role_file = _ROLE_FILES.get(key)
    if role_file is None:
        document = parse_yaml_bytes(
            data, source=source, layer=layer_name, empty_hint=hint, sha256=sha256
        )
        role_file = _read(document, valid, layer_name, top)
        with _ROLE_FILES_LOCK:
            _ROLE_FILES[key] = role_file
            while len(_ROLE_FILES) > _ROLE_FILES_KEPT:  # forget the oldest
                del _ROLE_FILES[next(iter(_ROLE_FILES))]
    return RoleFile(
        role_file.path,
        role_file.sha256,
        dict(role_file.layers),
        role_file.roles_missing,
        role_file.problems,
    )


def problems_of_role(role_file: RoleFile, role: str) -> list[Problem]:
    """The problems of `role_file` that concern `role`'s reading alone: those of its own entry
    and of the file as a whole, not those inside another role's entry, unless `role`'s values
    hold the value of one (an alias of it). For a caller that reads one role at a time and
    reports as it goes (slime's drop-in): each problem of an entry is reported once."""
    entries = sorted(
        ((layer.origin.line or 0, layer.origin.column or 0), name)
        for name, layer in role_file.layers.items()
    )
    own = role_file.layers.get(role)
    held = {(origin.line, origin.column) for origin in own.origins.values()} if own else set()
    found = []
    for problem in role_file.problems:
        place = (problem.line or 0, problem.column or 0)
        inside = [name for start, name in entries if start <= place]
        if not inside or inside[-1] == role or place in held:
            found.append(problem)
    return found


def role_file_text(
    overrides: Mapping[str, Mapping[str, Any]],
    *,
    form: RoleFileFormat = _ROLES,
    comment: str | None = None,
) -> str:
    """A role file of format `form` with one entry per role of `overrides` (role -> key ->
    value), as `check_role_file` reads it back.

    Values are written as a role file writes them: an enum member by its name (which type
    coercion turns back into the member), a path as its text, a tuple as a list; floats, None,
    lists and mappings as YAML has them. `comment` (one line or more) heads the file. Raises
    `ValueError` naming the role and key of a value YAML cannot hold (a set, an object).
    """
    check_type("role_file_text", "overrides", overrides, Mapping, "a mapping of role to keys")
    entries = []
    for role, values in overrides.items():
        written = {
            str(key): _plain(value, f"role {role!r}, key {key!r}") for key, value in values.items()
        }
        entries.append({"role": role, "overrides": written})
    head = "".join(f"# {line}\n" for line in (comment or "").splitlines())
    return head + dump_yaml({form.top_key: entries})


def _plain(value: Any, where: str) -> Any:
    """`value` as plain YAML data that reads back as it (through type coercion)."""
    import datetime
    import enum

    if isinstance(value, enum.Enum):
        return value.name
    if value is None or isinstance(value, datetime.date):
        return value
    for kind in (bool, int, float, str):  # a subclass as the plain value it is
        if isinstance(value, kind):
            return kind(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {_plain(key, where): _plain(item, where) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item, where) for item in value]
    raise ValueError(
        f"{where}: a {type(value).__name__} cannot be written to a role file: set it on the "
        "command line instead"
    )


#: Role files read lately, by path, roles, layer name, sha256 of the bytes and the reader's
#: settings. What is kept is immutable (a `RoleFile`'s layers dict is copied on the way out),
#: and a file whose bytes changed has another key, so a hit is exactly what reading the file
#: again would give.
_ROLE_FILES: dict[tuple[Any, ...], RoleFile] = {}
_ROLE_FILES_KEPT = 8
_ROLE_FILES_LOCK = threading.Lock()


_PATH_TAKES = "a path (str or pathlib.Path)"


def _valid_roles(roles: Sequence[str]) -> tuple[str, ...]:
    if isinstance(roles, str):
        raise TypeError(f"roles must be a sequence of role names, not one string ({roles!r})")
    if type(roles) is not tuple:  # (a tuple is one: the ABC's check is skipped)
        check_type("check_role_file", "roles", roles, Iterable, "a list of role names")
    valid = tuple(roles)
    if not valid:
        raise ValueError("roles must name at least one role")
    for role in valid:
        if not isinstance(role, str) or not role:
            raise ValueError(f"every role must be a non-empty string (got {role!r})")
    if len(set(valid)) != len(valid):
        raise ValueError(f"roles must be distinct (got {list(valid)})")
    return valid


def _read(document: YamlDocument, roles: tuple[str, ...], layer_name: str, top: str) -> RoleFile:
    layers, missing, problems = RoleReader(document, roles, layer_name, top).read()
    return RoleFile(document.source, document.sha256, layers, missing, problems)
