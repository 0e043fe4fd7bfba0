"""`Setting` records made by setting their slots: what `explain` makes its answers with.

attrs' ``__init__`` of a frozen, slotted record calls ``object.__setattr__`` for each field,
which looks the slot up by name each time; calling the slot's own setter does the rest of that
call alone: ~6.5K instructions a record instead of ~10K (`explain` makes one per value of a
history, and one for the answer). `Setting` has no validator, converter or ``on_setattr``
hook, so a record made here is the one ``Setting(...)`` makes; tests/test_explain.py checks
that `SETTING_FIELDS` are its fields, and that the records are equal, field by field.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from layerconf.core.records import Origin, Reason, Setting

__all__ = ["SETTING_FIELDS", "new_history", "new_setting"]

SETTING_FIELDS = ("key", "value", "origin", "history", "reason", "by", "role", "scrub", "secret")
(
    _set_key,
    _set_value,
    _set_origin,
    _set_history,
    _set_reason,
    _set_by,
    _set_role,
    _set_scrub,
    _set_secret,
) = (Setting.__dict__[name].__set__ for name in SETTING_FIELDS)


def new_setting(
    key: str,
    value: Any,
    origin: Origin,
    history: tuple[Setting, ...],
    role: str | None,
    scrub: tuple[str, ...],
    secret: bool = False,
) -> Setting:
    """``Setting(key, value, origin, history, role=role, scrub=scrub, secret=secret)``."""
    setting: Setting = object.__new__(Setting)
    _set_key(setting, key)
    _set_value(setting, value)
    _set_origin(setting, origin)
    _set_history(setting, history)
    _set_reason(setting, None)
    _set_by(setting, None)
    _set_role(setting, role)
    _set_scrub(setting, scrub)
    _set_secret(setting, secret)
    return setting


def new_history(
    key: str, rows: Iterable[tuple[Any, Origin, Reason | None, str | None]]
) -> tuple[Setting, ...]:
    """``tuple(Setting(key, value, origin, reason=reason, by=by) for value, origin, reason, by
    in rows)``: the entries of a setting's history."""
    history: list[Setting] = []
    for value, origin, reason, by in rows:
        setting: Setting = object.__new__(Setting)
        _set_key(setting, key)
        _set_value(setting, value)
        _set_origin(setting, origin)
        _set_history(setting, ())
        _set_reason(setting, reason)
        _set_by(setting, by)
        _set_role(setting, None)
        _set_scrub(setting, ())
        _set_secret(setting, False)
        history.append(setting)
    return tuple(history)
