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
parse.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from layerconf.core.checks import PATH, check_type
from layerconf.core.lazy import record_eq, record_hash, record_repr, sha256_hex
from layerconf.core.records import Layer, Origin, join_path
from layerconf.core.secrets import shows_secret
from layerconf.core.suggest import did_you_mean, suggestion
from layerconf.exceptions import ConfigError, Problem, Severity
from layerconf.sources.yaml import (
    Position,
    YamlDocument,
    YamlPath,
    dump_yaml,
    parse_yaml_bytes,
    read_yaml_bytes,
    reader_settings,
)

__all__ = ["RoleFile", "RoleFileFormat", "check_role_file", "read_role_file", "role_file_text"]

_FIELDS = ("name", "role", "overrides", "args")


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
        return _RoleReader(data, valid, layer_name, top).read()
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
        role_file = _RoleReader(document, valid, layer_name, top).read()
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


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, str):
        return "a string that shows a secret" if shows_secret(value) else f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"the {type(value).__name__} {value}"


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in names)


class _RoleReader:
    """Checks a document against the role-file contract and builds the layers."""

    def __init__(
        self, document: YamlDocument, roles: tuple[str, ...], layer_name: str, top: str
    ) -> None:
        self.document = document
        self.top = top
        self.roles = roles
        self.layer_name = layer_name
        self.source = document.source
        self.problems: list[Problem] = list(document.problems)
        self.layers: dict[str, Layer] = {}
        self.first_entry: dict[str, int] = {}  # role -> index of its (first) entry

    def read(self) -> RoleFile:
        if () not in self.document.unreadable:
            self._top(self.document.data)
        layers = {role: self.layers[role] for role in self.roles if role in self.layers}
        missing = tuple(role for role in self.roles if role not in self.first_entry)
        problems = sorted(self.problems, key=lambda p: (p.line or 0, p.column or 0))
        return RoleFile(self.source, self.document.sha256, layers, missing, tuple(problems))

    # Positions and problems --------------------------------------------------------------

    def _at(self, path: YamlPath, *, key: bool = False) -> Position | None:
        positions = self.document.key_positions if key else self.document.positions
        return positions.get(path)

    def _error(
        self,
        path: YamlPath,
        message: str,
        hint: str,
        *,
        key: bool = False,
        severity: Severity = "error",
        config_key: str | None = None,
    ) -> None:
        at = self._at(path, key=key)
        self.problems.append(
            Problem(
                message,
                key=config_key,
                layer=self.layer_name,
                source=self.source,
                line=at.line if at else None,
                column=at.column if at else None,
                hint=hint,
                severity=severity,
            )
        )

    def _origin(self, path: YamlPath, label: str | None, *, key: bool = False) -> Origin:
        at = self._at(path, key=key)
        return Origin(
            self.layer_name,
            "file",
            source=self.source,
            line=at.line if at else None,
            column=at.column if at else None,
            label=label,
        )

    # The structure -------------------------------------------------------------------------

    def _top(self, data: Any) -> None:
        if not isinstance(data, dict):
            if isinstance(data, list) and any(isinstance(item, dict) for item in data):
                hint = f"write '{self.top}:' on the first line and indent the entries under it"
            else:
                hint = (
                    f"start the file with '{self.top}:' and list one '- role: ...' entry per role"
                )
            self._error(
                (),
                f"the top level must be a mapping with a {self.top!r} list (got {_describe(data)})",
                hint,
            )
            return
        suggested = False
        for key in data:
            if key == self.top:
                continue
            match = did_you_mean(key, [self.top]) if isinstance(key, str) else None
            suggested = suggested or match is not None
            self._error(
                (key,),
                f"unknown top-level key {key!r}" + (f"; did you mean {match!r}?" if match else ""),
                f"write {match!r}"
                if match
                else f"the only top-level key is {self.top!r}: put role entries under it",
                key=True,
            )
        if self.top not in data:
            if not suggested:
                self._error(
                    (),
                    f"no {self.top!r} list at the top level",
                    f"add '{self.top}:' with one '- role: ...' entry per role; "
                    f"roles: {_quoted(self.roles)}",
                )
            return
        path: YamlPath = (self.top,)
        if path in self.document.unreadable:
            return
        entries = data[self.top]
        if not isinstance(entries, list):
            self._not_a_list(entries)
            return
        if not entries:
            self._error(
                path,
                f"{self.top!r} lists no role entries: every role inherits the command line",
                "add a '- role: ...' entry, or leave the file out",
                severity="warning",
            )
        for index, entry in enumerate(entries):
            self._entry(index, entry)

    def _not_a_list(self, entries: Any) -> None:
        roles_as_keys = isinstance(entries, dict) and any(key in self.roles for key in entries)
        one_entry = isinstance(entries, dict) and any(key in _FIELDS for key in entries)
        if one_entry:
            role = self.roles[0]
            hint = (
                "make it a list: write '- ' before the entry's first field, e.g. "
                f"'  - role: {role}'"
            )
        elif roles_as_keys:
            role = next(key for key in entries if key in self.roles)
            hint = (
                f"write one list item per role: '- role: {role}' with 'overrides:' under it, "
                f"instead of '{role}:'"
            )
        else:
            role = self.roles[0]
            hint = f"write each entry as a list item: '- role: {role}' with 'overrides:' under it"
        self._error(
            (self.top,),
            f"{self.top!r} must be a list of role entries (got {_describe(entries)})",
            hint,
        )

    def _entry(self, index: int, entry: Any) -> None:
        path: YamlPath = (self.top, index)
        number = index + 1
        if path in self.document.unreadable:
            return
        if not isinstance(entry, dict):
            if isinstance(entry, str) and entry in self.roles:
                hint = f"write '- role: {entry}' with 'overrides:' under it"
            else:
                hint = "write 'role: ...' and 'overrides:' under the '- '"
            self._error(
                path,
                f"{self.top} entry {number} must be a mapping with 'role' and 'overrides' "
                f"(got {_describe(entry)})",
                hint,
            )
            return
        for key in entry:
            if key not in _FIELDS:
                self._unknown_field(path, number, key)
        label = self._name(path, number, entry)
        role = self._role(path, number, entry)
        values, origins = self._overrides(path, number, entry, label)
        if role is None:
            return
        first = self.first_entry.get(role)
        if first is not None:
            earlier = self._at((self.top, first, "role"))
            self._error(
                (*path, "role"),
                f"role {role!r} has two entries: this one ({self.top} entry {number}) and entry "
                f"{first + 1}" + (f" at line {earlier.line}" if earlier else ""),
                "keep one entry per role: move these overrides into the first one",
            )
            return
        self.first_entry[role] = index
        field = "overrides" if "overrides" in entry else "args"
        key_origins = {
            leaf: self._origin((*path, field, *leaf), label, key=True) for leaf in origins
        }
        self.layers[role] = Layer(
            self.layer_name, "file", values, self._origin(path, label), origins, key_origins
        )

    def _unknown_field(self, path: YamlPath, number: int, key: Hashable) -> None:
        match = did_you_mean(key, _FIELDS) if isinstance(key, str) else None
        if match:
            hint = f"write {match!r}"
        else:
            hint = (
                f"the fields are {_quoted(_FIELDS[:3])}, and 'args' as the old name of "
                "'overrides'; argument overrides go under 'overrides:'"
            )
        self._error(
            (*path, key),
            f"unknown field {key!r} in {self.top} entry {number}"
            + (f"; did you mean {match!r}?" if match else ""),
            hint,
            key=True,
        )

    def _name(self, path: YamlPath, number: int, entry: dict[Any, Any]) -> str | None:
        if "name" not in entry or (*path, "name") in self.document.unreadable:
            return None
        name = entry["name"]
        if isinstance(name, str):
            return name
        if isinstance(name, (dict, list)) or name is None:
            hint = "write a label such as 'name: default', or remove the line"
        else:
            hint = f'quote it: name: "{name}"'
        self._error(
            (*path, "name"),
            f"'name' of {self.top} entry {number} must be a string (got {_describe(name)})",
            hint,
        )
        return None

    def _role(self, path: YamlPath, number: int, entry: dict[Any, Any]) -> str | None:
        valid = f"valid roles: {_quoted(self.roles)}"
        if "role" not in entry:
            self._error(
                path,
                f"{self.top} entry {number} has no 'role'",
                f"add 'role: {self.roles[0]}'; {valid}",
            )
            return None
        if (*path, "role") in self.document.unreadable:
            return None
        role = entry["role"]
        if not isinstance(role, str):
            self._error(
                (*path, "role"),
                f"'role' of {self.top} entry {number} must name a role (got {_describe(role)})",
                valid,
            )
            return None
        if role not in self.roles:
            shown = "(a string that shows a secret)" if shows_secret(role) else repr(role)
            self._error(
                (*path, "role"),
                f"unknown role {shown} in {self.top} entry {number}" + suggestion(role, self.roles),
                valid,
            )
            return None
        return role

    def _overrides(
        self, path: YamlPath, number: int, entry: dict[Any, Any], label: str | None
    ) -> tuple[dict[str, Any], dict[tuple[str, ...], Origin]]:
        values: dict[str, Any] = {}
        origins: dict[tuple[str, ...], Origin] = {}
        has_overrides, has_args = "overrides" in entry, "args" in entry
        if has_overrides and has_args:
            first = self._at((*path, "overrides"), key=True)
            self._error(
                (*path, "args"),
                f"{self.top} entry {number} has both 'args' and 'overrides'"
                + (f" at line {first.line}" if first else ""),
                "'args' is the old name of 'overrides': move its keys into 'overrides' "
                "and delete 'args'",
                key=True,
            )
        if not (has_overrides or has_args):
            return values, origins
        field = "overrides" if has_overrides else "args"
        field_path = (*path, field)
        raw = entry[field]
        if raw is None or field_path in self.document.unreadable:
            return values, origins  # 'overrides:' with nothing, or 'null': no overrides
        if not isinstance(raw, dict):
            self._error(
                field_path,
                f"{field!r} of {self.top} entry {number} must be a mapping of argument names "
                f"to values (got {_describe(raw)})",
                f"write one 'name: value' per line, indented under '{field}:', such as 'lr: 1e-5'",
            )
            return values, origins
        self._copy(raw, field_path, (), values, origins, label)
        return values, origins

    def _copy(
        self,
        raw: dict[Any, Any],
        file_path: YamlPath,
        layer_path: tuple[str, ...],
        out: dict[str, Any],
        origins: dict[tuple[str, ...], Origin],
        label: str | None,
    ) -> None:
        """Copy an overrides mapping, checking its keys and recording every value's origin."""
        for key, value in raw.items():
            child = (*file_path, key)
            if not isinstance(key, str) or not key:
                self._bad_key(child, key, layer_path)
                continue
            if child in self.document.unreadable:
                continue
            path = (*layer_path, key)
            origins[path] = self._origin(child, label)
            if isinstance(value, dict):
                nested: dict[str, Any] = {}
                self._copy(value, child, path, nested, origins, label)
                out[key] = nested
            else:
                out[key] = value

    def _bad_key(self, path: YamlPath, key: Any, layer_path: tuple[str, ...]) -> None:
        if key == "":
            message = "an override key is empty"
            hint = "write the argument's attribute name, e.g. 'lr'"
        else:
            message = f"override key {key!r} is {_describe(key)}, not a string"
            if isinstance(key, bool):
                hint = (
                    "YAML reads unquoted yes/no/on/off/true/false as booleans: quote the key, "
                    "e.g. 'on':"
                )
            elif key is None:
                hint = "YAML reads an unquoted ~ or null as null: write the argument's name"
            else:
                hint = (
                    "keys are argument attribute names such as 'lr'; quote the key if it is "
                    f"meant as text: '{key}':"
                )
        self._error(path, message, hint, key=True, config_key=join_path((*layer_path, str(key))))
