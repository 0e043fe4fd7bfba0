"""The resolved namespace: an `argparse.Namespace` that carries its provenance.

`vars(args)` holds the configuration keys only and `==` compares values only, as argparse's
own namespace does; the provenance lives in a slot, so it survives `copy.copy`,
`copy.deepcopy` and pickle without ever showing up as a key.
"""

from __future__ import annotations

import argparse
import collections
import operator
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, NoReturn

import attrs

from layerconf.core._scrub import Scrub
from layerconf.core.checks import check_type
from layerconf.core.held_secrets import declared_secret_keys, policy_of, texts_held
from layerconf.core.lazy import record_eq, record_hash, record_repr
from layerconf.core.merge import Policy
from layerconf.core.records import Layer, Origin, Path
from layerconf.core.values import ATOMIC_TYPES, TEXTLESS_TYPES, full_text, snapshot, value_text
from layerconf.exceptions import FrozenNamespaceError, Problem

__all__ = [
    "Event",
    "Namespace",
    "Provenance",
    "Write",
    "freeze",
    "is_frozen",
    "namespace_from",
    "notices",
    "provenance_of",
    "runtime_writes",
    "with_inputs",
    "write_count",
]


@attrs.frozen
class Event:
    """What a rule did at one path: ``ignored`` or ``converted`` a layer's value, or ``set`` one.

    `order` places it among the layers: a layer's index for ``ignored`` / ``converted``; for
    ``set``, a position after every layer, in the order the values were set.
    """

    __repr__ = record_repr
    __eq__ = record_eq
    __hash__ = record_hash

    action: str
    order: int
    value: Any
    origin: Origin
    rule: str


@attrs.frozen
class Provenance:
    """Everything needed to explain a resolved namespace; immutable, shared by copies."""

    __eq__ = record_eq
    __hash__ = record_hash

    role: str | None
    layers: tuple[Layer, ...]  # (each shown with its values redacted: `Layer`)
    policies: Mapping[Path, Policy]
    events: Mapping[Path, tuple[Event, ...]]
    notices: tuple[Problem, ...] = ()
    #: What the sources recorded about their inputs, by name, for audit records (the core
    #: never looks inside): the command line parsed, each file read with its sha256...
    inputs: Mapping[str, Any] = attrs.field(factory=dict)
    # The layers' keys that hold secrets under the default policy, and the texts of the secrets
    # nested in their containers (``kw: {api_key: ...}``), worked out on first use by
    # `layerconf.core.explain` and kept here, with the provenance (not compared, not shown).
    _secrets: tuple[frozenset[str], tuple[str, ...]] | None = attrs.field(
        default=None, init=False, eq=False, repr=False
    )

    def __repr__(self) -> str:
        """attrs' text, with the texts of every layer's secrets scrubbed from all of it: a
        layer knows only its own (a role file's ``group: run-KEY`` beside ``--wandb-key KEY``)."""
        declared = declared_secret_keys(self.layers)
        shown = self
        if declared:  # (each layer shown with the keys every layer of the resolution declares)
            layers = tuple(layer._with_secret_keys(declared) for layer in self.layers)
            shown = attrs.evolve(self, layers=layers)
        return Scrub(policy_of(self.layers), texts_held(self.layers, [{}])).text(record_repr(shown))

    # Pickled without what is worked out on first use (a worker works it out again).
    def __getstate__(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in _PROVENANCE_FIELDS if field.init}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        # (a field the pickle lacks, an older layerconf's, gets its default: a new mapping
        # for `inputs`, not its attrs.Factory)
        for field in _PROVENANCE_FIELDS:
            default = field.default
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = default.factory()  # type: ignore[union-attr]
            object.__setattr__(self, field.name, state.get(field.name, default))

    # Immutable all the way down: a copy is the same object.
    def __copy__(self) -> Provenance:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Provenance:
        return self


_PROVENANCE_FIELDS = attrs.fields(Provenance)

_SLOT = "_layerconf_provenance"
_WRITES = "_layerconf_writes"
_LOG = "_layerconf_log"

#: How many of the latest writes to a key are kept, beside the first.
RECENT_WRITES = 8
#: How many writes wait, as they were made, before they are folded into the kept histories.
PENDING_WRITES = 512


# The call form: the class form evaluates its (string) annotations at import, at twice the cost.
Write = NamedTuple("Write", [("value", Any), ("source", str), ("line", int), ("number", int)])  # noqa: UP014
Write.__doc__ = """One assignment after resolution: the value kept
(`layerconf.core.values.snapshot`), where it was made, and its `number` among the writes to its
key (1 for the first)."""


class _History:
    """The writes to one key: the first, the latest `RECENT_WRITES`, and how many there were.

    A write is ``(number, value, where, position)``: `where` is the code object that made it
    and `position` the offset of its instruction, turned into a file and line only when read
    (`_place`); a history read back from a pickle holds the file name and the line instead.
    Changed only by `_fold`, under `_FOLDING`.
    """

    __slots__ = ("count", "first", "recent")

    def __init__(self, first: tuple[Any, ...], recent: Iterable[tuple[Any, ...]] = ()) -> None:
        self.first = first
        self.recent: collections.deque[tuple[Any, ...]] = collections.deque(
            recent, maxlen=RECENT_WRITES
        )
        # The latest write is always among the recent ones (or is the first).
        self.count: int = max((write[0] for write in self.recent), default=first[0])

    def kept(self) -> list[Write]:
        """The writes kept, oldest first: the first one, then the latest."""
        writes = [self.first, *(write for write in self.recent if write[0] != self.first[0])]
        writes.sort(key=lambda write: write[0])
        return [
            Write(value, *_place(where, position), number)
            for number, value, where, position in writes
        ]

    def portable(self) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
        """The history with its places as file and line (what pickle and copies carry)."""
        first, *recent = [(w.number, w.value, w.source, w.line) for w in self.kept()]
        return first, recent


def _place(where: Any, position: int) -> tuple[str, int]:
    """``(file, line)`` of a write's code object and instruction offset (or of a pickled one)."""
    if isinstance(where, str):
        return where, position
    line = None
    for start, end, found in where.co_lines():
        if start <= position < end:
            line = found
            break
    return where.co_filename, line if line is not None else where.co_firstlineno


#: Held while pending writes are folded into histories and while histories are read: the
#: write path itself takes no lock (it appends to a list, which is atomic).
_FOLDING = threading.Lock()


def _fold(args: Namespace) -> dict[str, _History]:
    """Fold the pending writes of `args` into its histories and return them (`_FOLDING` held).

    The pending log holds ``(key, value, code, offset)`` in the order the writes were made.
    Per key of the batch: the count, the first write if the key is new, and the latest
    `RECENT_WRITES`, found walking the batch back from its end (it stops once every key has
    its latest writes), so a batch costs little more than the C loops that count it.
    """
    histories: dict[str, _History] = getattr(args, _WRITES)
    log = getattr(args, _LOG)
    if type(log) is _FrozenLog:
        log = log.late
    batch = log[:]  # one C call each: writes other threads append meanwhile stay pending
    del log[: len(batch)]
    if not batch:
        return histories
    names = list(map(_NAME, batch))
    keys = set(names)
    # A loop writes one key or a few: a C count per key beats a Counter's dict updates.
    counts = (
        {name: names.count(name) for name in keys}
        if len(keys) <= _FEW_KEYS
        else collections.Counter(names)
    )
    # Each key's first write of the batch (the earliest one wins the last assignment).
    firsts = (
        dict(zip(reversed(names), reversed(batch), strict=True))
        if not keys <= histories.keys()
        else {}
    )
    wanted = {name: min(count, RECENT_WRITES) for name, count in counts.items()}
    latest: dict[str, list[tuple[Any, ...]]] = {name: [] for name in counts}
    missing = len(wanted)
    for write in reversed(batch):
        found = latest[write[0]]
        if len(found) < wanted[write[0]]:
            found.append(write)
            if len(found) == wanted[write[0]]:
                missing -= 1
                if not missing:
                    break
    for name, count in counts.items():
        history = histories.get(name)
        if history is None:
            _, value, where, position = firsts[name]
            history = histories[name] = _History((1, value, where, position))
            history.count = 0
        total = history.count + count
        found = latest[name]
        history.recent.extend(
            (total - back, value, where, position)
            for back, (_, value, where, position) in reversed(list(enumerate(found)))
        )
        history.count = total
    values = vars(args)
    if len(histories) > len(values):  # keys deleted since: their writes go with them, so
        for key in histories.keys() - values.keys():  # what is kept is that of live keys
            del histories[key]
    return histories


#: Up to this many keys in a batch, `_fold` counts each with `list.count`.
_FEW_KEYS = 4
_NAME = operator.itemgetter(0)


def _rebuild(
    cls: type[Namespace],
    values: dict[str, Any],
    provenance: Provenance | None,
    writes: dict[str, Any] | None = None,
    frozen: bool = False,
) -> Namespace:
    namespace = cls._from_values(values, provenance)
    if writes or frozen:
        made = {key: _History(*portable) for key, portable in (writes or {}).items()}
        object.__setattr__(namespace, _WRITES, made)
        if not hasattr(namespace, _LOG):
            object.__setattr__(namespace, _LOG, [])
        if frozen:
            _freeze(namespace)
    return namespace


class _FrozenLog:
    """The pending log of a frozen namespace (`freeze`): appending to it refuses the write.

    So the write path needs no test of its own for freezing: the append it makes anyway,
    before it stores the value, is what raises. `late` is the log it replaced, where a write
    that began before the freeze may still land; `_fold` reads it.
    """

    __slots__ = ("late",)

    def __init__(self, late: list[tuple[Any, ...]]) -> None:
        self.late = late

    def append(self, write: tuple[Any, ...]) -> NoReturn:
        name, _, where, position = write
        _refuse(name, "set", *_place(where, position))

    def __len__(self) -> int:
        return len(self.late)


def _freeze(args: Namespace) -> None:
    """Swap the pending log of `args` for a `_FrozenLog` (`_FOLDING` held, or a new `args`)."""
    log = getattr(args, _LOG)
    if type(log) is not _FrozenLog:
        object.__setattr__(args, _LOG, _FrozenLog(log))


_setattr = object.__setattr__
#: The types of values that hold no text: a namespace's repr shows them as they are.
_TEXTLESS = TEXTLESS_TYPES
_frame = sys._getframe
_ATOMIC = ATOMIC_TYPES
# The names an exact Namespace has a data descriptor for: a write to one goes through
# object.__setattr__; any other name is a key of the instance dict (a test checks the set).
_DESCRIBED = frozenset({"__class__", "__dict__", "__weakref__", _SLOT, _WRITES, _LOG})


class Namespace(argparse.Namespace):
    """An `argparse.Namespace` with provenance: use it exactly as argparse's own.

    Ask where a value came from with `layerconf.explain(args, key)`. An assignment after
    resolution (``args.lr = 3e-6``) is recorded with the file and line that made it, so
    `explain` reports it as layer ``runtime`` and keeps the earlier history. What is kept is
    bounded whatever the number of writes: per key the first and the latest `RECENT_WRITES`
    writes and their count, and at most `PENDING_WRITES` writes not yet folded into those; a
    value is kept as `layerconf.core.values.snapshot` keeps it (immutable values as they are,
    small plain containers copied, anything else described).
    `layerconf.freeze(args)` makes every later write an error.
    """

    __slots__ = (_SLOT, _WRITES, _LOG)
    _layerconf_provenance: Provenance | None
    _layerconf_writes: dict[str, _History]
    _layerconf_log: list[tuple[Any, ...]] | _FrozenLog

    @classmethod
    def _from_values(
        cls, values: dict[str, Any], provenance: Provenance | None, *, own: bool = False
    ) -> Namespace:
        namespace = cls.__new__(cls)
        if own:  # the dict itself becomes the namespace's (its maker is done with it)
            namespace.__dict__ = values
        else:
            namespace.__dict__.update(values)
        object.__setattr__(namespace, _SLOT, provenance)
        if provenance is not None:
            object.__setattr__(namespace, _WRITES, {})
            object.__setattr__(namespace, _LOG, [])
        return namespace

    def __setattr__(self, name: str, value: Any) -> None:
        # The hot path of a trainer's loop (a step counter written every step): no lock, no
        # copy of an immutable value, no line lookup, no test for freezing (a frozen
        # namespace's log refuses the append, made before the value is stored); the write
        # is appended as it was made and folded into the kept histories in batches (`_fold`).
        try:
            log = self._layerconf_log
        except AttributeError:  # Namespace(**kwargs): nothing to record
            _setattr(self, name, value)
            return
        caller = _frame(1)
        if name in _DESCRIBED or type(self) is not Namespace:
            # A data descriptor may take the write (or refuse it): refuse first if frozen,
            # then let object.__setattr__ do it, and record it once it is done.
            if type(log) is _FrozenLog:
                _refuse(name, "set", caller.f_code.co_filename, caller.f_lineno)
            _setattr(self, name, value)
            log.append((name, snapshot(value), caller.f_code, caller.f_lasti))
        else:
            log.append(
                (
                    name,
                    value if type(value) in _ATOMIC else snapshot(value),
                    caller.f_code,
                    caller.f_lasti,
                )
            )
            # No data descriptor is in the way: the instance dict takes the value, as
            # object.__setattr__ would, for a fraction of its cost.
            self.__dict__[name] = value
        if len(log) >= PENDING_WRITES:
            with _FOLDING:
                _fold(self)

    def __repr__(self) -> str:
        """argparse's ``Namespace(lr=1e-05, ...)``, which print(), logging and f-strings show,
        with every secret redacted as `explain` shows it (a startup log that prints its args
        holds no W&B key); the namespace itself keeps the real values (`vars`, attributes)."""
        values = dict(vars(self))  # one C call: other threads may be writing
        provenance = getattr(self, _SLOT, None)
        layers = provenance.layers if provenance is not None else ()
        policy = policy_of(layers)  # (its secret flags' dests too: `Layer.secret_keys`)
        secret = policy.secret_keys(values)
        scrub = Scrub(policy, texts_held(layers, [values], secret))
        secret_keys = set(secret)
        memo: dict[int, Any] = {}
        fields = []
        others = {}  # (keys that are no Python names, which argparse writes as **{...})
        for key, value in values.items():
            if type(value) not in _TEXTLESS or key in secret_keys:
                value = scrub.value(key, value, memo)
            if type(key) is str and key.isidentifier():
                fields.append(f"{key}={full_text(value)}")
            else:
                others[key] = value
        if others:
            fields.append(f"**{full_text(others)}")
        return f"{type(self).__name__}({', '.join(fields)})"

    def __delattr__(self, name: str) -> None:
        if is_frozen(self):
            caller = _frame(1)
            _refuse(name, "delete", caller.f_code.co_filename, caller.f_lineno)
        object.__delattr__(self, name)
        if not _never_written(self):  # its writes go with it (set again, it starts anew)
            with _FOLDING:
                _fold(self).pop(name, None)

    def __reduce__(self) -> tuple[Any, ...]:
        # The values before the writes: a write another thread makes meanwhile is then in
        # the copy's history at most (explain answers as of the value), never a value
        # without its write.
        values = dict(vars(self))
        portable: dict[str, Any] = {}
        if getattr(self, _WRITES, None) is not None:
            with _FOLDING:
                writes = _fold(self)
                portable = {key: history.portable() for key, history in writes.items()}
        frozen = is_frozen(self)
        return (_rebuild, (type(self), values, provenance_of(self), portable, frozen))


def _refuse(name: str, verb: str, source: str, line: int) -> NoReturn:
    raise FrozenNamespaceError(
        f"{source}:{line}: cannot {verb} {value_text(name)}: this namespace is frozen "
        "(layerconf.freeze; its copies and pickles are too): make the change before freezing it",
        key=name,
        source=source,
        line=line,
    )


def freeze(args: argparse.Namespace) -> argparse.Namespace:
    """Make every later assignment or deletion of an attribute of `args` an error.

    For trainers that want no runtime writes at all (as OmegaConf's read-only mode): a write
    raises `FrozenNamespaceError` (an `AttributeError`) naming the key and the file:line that
    tried. `explain` still answers, with the writes made before. Copies and pickles of a
    frozen namespace are frozen too. Returns `args`; freezing twice is harmless. Takes a
    namespace layerconf resolved (one with provenance), else raises `TypeError`.
    """
    check_type("freeze", "args", args, Namespace, "a namespace layerconf resolved")
    writes = getattr(args, _WRITES, None)
    if writes is None:
        raise TypeError(
            "freeze() takes args as a namespace layerconf resolved (got one without provenance)"
        )
    assert isinstance(args, Namespace)
    with _FOLDING:
        _freeze(args)
        _fold(args)
    return args


def is_frozen(args: argparse.Namespace) -> bool:
    """Whether `freeze` was called on `args` (or on what it is a copy of)."""
    return type(getattr(args, _LOG, None)) is _FrozenLog


def namespace_from(
    values: dict[str, Any], provenance: Provenance | None, *, own: bool = False
) -> Namespace:
    """A `Namespace` whose attributes are the entries of `values` (the values themselves, not
    copies), carrying `provenance`; with `own`, `values` itself becomes the namespace's
    attribute dict, which its caller must not change after (no copy of it is made).

    How the stack, the command-line source and audit replays make theirs: setting the
    attributes is not recorded as a runtime assignment.
    """
    return Namespace._from_values(values, provenance, own=own)


def runtime_writes(args: argparse.Namespace, key: str) -> list[Write]:
    """The assignments to `key` after resolution that are kept, oldest first (empty when
    none): the first and the latest `RECENT_WRITES`; `write_count` says how many there were."""
    if _never_written(args):
        return []
    with _FOLDING:
        history = _history(args, key)
        return history.kept() if history is not None else []


def write_count(args: argparse.Namespace, key: str) -> int:
    """How many assignments to `key` were made after resolution."""
    if _never_written(args):
        return 0
    with _FOLDING:
        history = _history(args, key)
        return history.count if history is not None else 0


def written_keys(args: argparse.Namespace) -> frozenset[str]:
    """The keys assigned after resolution."""
    if _never_written(args) or not isinstance(args, Namespace):
        return frozenset()
    with _FOLDING:
        return frozenset(_fold(args))


def _never_written(args: argparse.Namespace) -> bool:
    """True when `args` records no write, none pending either: what every reader of a
    namespace no one wrote to finds, answered without the lock (a write racing with this
    read is simply after it)."""
    if not isinstance(args, Namespace):
        return True
    return not getattr(args, _WRITES, None) and not getattr(args, _LOG, None)


def _history(args: argparse.Namespace, key: str) -> _History | None:
    """The history of `key` (`_FOLDING` held by the caller)."""
    if not isinstance(args, Namespace) or getattr(args, _WRITES, None) is None:
        return None
    return _fold(args).get(key)


def provenance_of(args: argparse.Namespace) -> Provenance | None:
    """The provenance of `args`, or None for a namespace layerconf did not resolve."""
    if isinstance(args, Namespace):
        return getattr(args, _SLOT, None)
    return None


def with_inputs(args: Namespace, inputs: Mapping[str, Any]) -> None:
    """Record on `args`'s provenance what its sources said about their inputs (`inputs`)."""
    provenance = provenance_of(args)
    if provenance is not None:
        merged = {**provenance.inputs, **inputs}
        object.__setattr__(args, _SLOT, attrs.evolve(provenance, inputs=merged))


def notices(args: argparse.Namespace) -> tuple[Problem, ...]:
    """The warnings and notes of the resolution that made `args` (ignored keys, coercions...)."""
    provenance = provenance_of(args)
    return provenance.notices if provenance is not None else ()
