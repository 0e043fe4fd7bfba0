"""Reading a role file's document: its structure checked, one `Layer` per role built.

`RoleReader` walks a parsed YAML document against the role-file contract (see
`layerconf.presets.role_file`), collecting every structural problem at its line and column,
and builds each role's layer with the position of every override key and value.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from layerconf.core.records import Layer, Origin, join_path
from layerconf.core.secrets import shows_secret
from layerconf.core.suggest import did_you_mean, suggestion
from layerconf.exceptions import Problem, Severity
from layerconf.sources.yaml import Position, YamlDocument, YamlPath

__all__ = ["RoleReader"]

_FIELDS = ("name", "role", "overrides", "args")


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


class RoleReader:
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

    def read(self) -> tuple[dict[str, Layer], tuple[str, ...], tuple[Problem, ...]]:
        """The layer of each role present, the roles missing, and the problems by position."""
        if () not in self.document.unreadable:
            self._top(self.document.data)
        layers = {role: self.layers[role] for role in self.roles if role in self.layers}
        missing = tuple(role for role in self.roles if role not in self.first_entry)
        problems = sorted(self.problems, key=lambda p: (p.line or 0, p.column or 0))
        return layers, missing, tuple(problems)

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
            got = _describe(data)
            if isinstance(data, list) and any(isinstance(item, dict) for item in data):
                hint = f"write '{self.top}:' on the first line and indent the entries under it"
            else:
                hint = (
                    f"start the file with '{self.top}:' and list one '- role: ...' entry per role"
                )
            if isinstance(data, (str, int, float)) and not isinstance(data, bool):
                # A file that is one value is what a token or a password file is
                # (~/.cache/huggingface/token, named by mistake): its value is not quoted.
                got = f"{'a string' if isinstance(data, str) else 'a number'} that is the whole "
                got += "file, not shown: a file of one value may be a token or a password"
                hint = f"check that the path names the role file; {hint}"
            self._error(
                (), f"the top level must be a mapping with a {self.top!r} list (got {got})", hint
            )
            return
        suggested = False
        for key in data:
            if key == self.top:
                continue
            match = did_you_mean(key, [self.top]) if isinstance(key, str) else None
            suggested = suggested or match is not None
            if match:
                hint = f"write {match!r}"
            elif key in _FIELDS and key != self.top:  # an entry's field, not indented under it
                hint = f"{key!r} is a field of a {self.top} entry: indent it as far as its 'role'"
            else:
                hint = f"the only top-level key is {self.top!r}: put role entries under it"
            self._error(
                (key,),
                f"unknown top-level key {key!r}" + (f"; did you mean {match!r}?" if match else ""),
                hint,
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
            self._entry(index, entry, entries[index - 1] if index else None)

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

    def _entry(self, index: int, entry: Any, previous: Any = None) -> None:
        """Check the entry at `index` (`previous`: the one before it, or None)."""
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
        role = self._role(path, number, entry, previous)
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

    def _role(
        self, path: YamlPath, number: int, entry: dict[Any, Any], previous: Any = None
    ) -> str | None:
        valid = f"valid roles: {_quoted(self.roles)}"
        if "role" not in entry:
            hint = f"add 'role: {self.roles[0]}'; {valid}"
            if isinstance(previous, dict) and entry and not any(key in previous for key in entry):
                # (`- role: critic` then `- overrides:`: one entry written as two)
                hint = (
                    f"a '- ' starts a new entry: if these fields belong to entry {number - 1}, "
                    f"remove the '- ' before them; else {hint}"
                )
            self._error(path, f"{self.top} entry {number} has no 'role'", hint)
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
