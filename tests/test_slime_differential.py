"""The drop-in against slime's own function, on everything a trainer could observe.

`layerconf.compat.slime.parse_megatron_role_args` is held to the transcription of slime's
function (`tests/slime_reference.py`) on generated role-file *texts* (every YAML 1.1 spelling
of a number, a bool or null, strings that look like numbers, anchors and aliases, merge keys,
empty entries, roles missing) over bases the real profile's parser made from varied command
lines, which the trainer then changed (attributes added, deleted, replaced with dicts, lists,
objects, one object under two names). For the actor then the critic on one base (slime's
driver order, with changes in between) or the critic alone, it compares: whether it returns or
what it raises, the keys in order, every value's type and repr (nested too), which values are
one object (slime deep-copies the base with one memo and sets each override as YAML read it),
which are the base's or the other role's, and that the base is left as it was.

Where layerconf is stricter on purpose (docs/roles.md, "A drop-in for slime"), the drop-in's
`SlimeConfigError` is accepted in place of slime's value or PyYAML's error.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import enum
import functools
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import layerconf
from layerconf import load_profile
from layerconf.compat.slime import SlimeConfigError, parse_megatron_role_args
from tests.slime_reference import slime_parse_megatron_role_args

PARSER = load_profile()

# Scalars as a role file spells them: YAML 1.1 reads many of them otherwise than they show.
_NUMBERS = [
    "0", "3", "-0", "+12", "017", "-017", "09", "0x1F", "-0x1f", "0b101", "0o17", "1_000",
    "1:30", "-1:30", "190:20:30", "1:30.5", "1e5", "1e-5", "1.0e5", "1.5e-3", "1.0E+2",
    "685.230_15e+03", "1_0.5", "0.", ".5", "+.5", "0.0", "-0.0", ".inf", "-.Inf", "+.INF",
    ".nan", ".NaN", "1.0e400", "123456789012345678901234567890",
]  # fmt: skip
_BOOLS_AND_NULLS = [
    "yes", "No", "ON", "off", "true", "False", "TRUE", "y", "n", "null", "~", "Null", "NULL", "",
]  # fmt: skip
_STRINGS = [
    "abc", "/ckpt", "fused", "'12'", '"1e-5"', "'true'", "'0x10'", "'null'", '""', "'~'",
    "2024-01-01", "'1:30'", "SIGINT", "'{\"A\": \"1\"}'", "_1",
]  # fmt: skip
_scalars = st.sampled_from([*_NUMBERS, *_BOOLS_AND_NULLS, *_STRINGS])

# Override keys: dests of the real parser (of every type), slime's special keys, keys the
# trainer adds to the base, unknown keys, and keys YAML reads as no string or slime refuses.
_KEYS = [
    "lr", "seed", "save", "train_env_vars", "eval_prompt_data", "sequence_parallel",
    "micro_batch_size", "kl_coef", "use_kl_loss", "save_interval", "lr_warmup_fraction",
    "qk_clip_threshold", "attention_backend", "moe_aux_loss_coeff", "use_opd",
    "disable_param_buffers_cpu_backup", "untie_embeddings_and_output_weights",
    "custom_advantage_function_path", "num_nodes", "num_gpus_per_node", "actor_num_nodes",
    "added", "shared", "obj", "not_an_arg",
]  # fmt: skip
_ODD_KEYS = ["5", "null", "true", "1.5", "''", "__doc__", "__class__", "~", "_layerconf_log"]
_keys = st.one_of(*[st.sampled_from(_KEYS)] * 6, st.sampled_from(_ODD_KEYS))

# A YAML node: ("scalar", text) | ("list", [node]) | ("map", [(key, node)]) | ("alias", n)
# | ("merge", n, [(key, node)]), each with an optional anchor (drawn as a flag).
_leaf_nodes = st.one_of(
    *[st.tuples(st.just("scalar"), _scalars)] * 4, st.tuples(st.just("alias"), st.integers(0, 5))
)
_nodes = st.recursive(
    _leaf_nodes,
    lambda inner: st.one_of(
        st.tuples(st.just("list"), st.lists(inner, max_size=3)),
        st.tuples(
            st.just("map"),
            st.lists(st.tuples(st.sampled_from(["A", "X", "lr", "5"]), inner), max_size=3),
        ),
    ),
    max_leaves=5,
)
_anchored = st.tuples(st.booleans(), _nodes)
_overrides = st.one_of(
    st.tuples(st.just("map"), st.lists(st.tuples(_keys, _anchored), max_size=5)),
    st.tuples(
        st.just("merge"),
        st.integers(0, 5),
        st.lists(st.tuples(_keys, _anchored), max_size=3),
    ),
    st.tuples(st.just("scalar"), st.sampled_from(["", "null", "{}", "[]", "lr", "[lr]", "0"])),
)
_entry = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(["default", "7", "~"]),
            "role": st.sampled_from(["actor", "critic", "reward", "Actor", "~", "3"]),
            "overrides": _overrides,
            "args": _overrides,
            "extra": st.just(("scalar", "1")),
        },
    ),
    st.sampled_from(["", "actor", "3", "[]"]),  # an empty entry (None), a scalar, a list
)
# Entries slime reads: one per role at most, overrides of known and unknown keys.
_good_entry = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["actor", "critic"]),
        "overrides": st.tuples(
            st.just("map"),
            st.lists(
                st.tuples(st.sampled_from(_KEYS), _anchored),
                min_size=1,
                max_size=6,
                unique_by=lambda item: item[0],
            ),
        ),
    },
    optional={"name": st.sampled_from(["default", "7"]), "args": _overrides},
)
_documents = st.fixed_dictionaries(
    {
        "defs": st.lists(_nodes, max_size=3),  # anchored a0, a1, ... before the entries
        "megatron": st.one_of(
            *[st.lists(_good_entry, min_size=1, max_size=2, unique_by=lambda e: e["role"])] * 6,
            *[st.lists(_entry, max_size=3)] * 2,
            st.sampled_from(["", "{role: actor}", "actor", "0"]),
        ),
    },
    optional={"top": st.sampled_from(["other: 1", "", "- megatron", "text", "", ""])},
)


class _Renderer:
    """A YAML text in block style from drawn nodes: aliases name an anchor already written."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.anchors: list[str] = []

    def _anchor(self) -> str:
        name = f"a{len(self.anchors)}"
        self.anchors.append(name)
        return f"&{name} "

    def _alias(self, index: int) -> str | None:
        return f"*{self.anchors[index % len(self.anchors)]}" if self.anchors else None

    def value(self, indent: int, lead: str, node: Any, anchor: bool = False) -> None:
        """Write `node` after `lead` (``key:`` or ``-``), nested lines at `indent`."""
        mark = self._anchor() if anchor and node[0] != "alias" else ""
        kind = node[0]
        if kind == "alias":
            alias = self._alias(node[1])
            self.lines.append(f"{lead} {alias if alias else '1'}")
        elif kind == "scalar":
            self.lines.append(f"{lead} {mark}{node[1]}".rstrip())
        elif kind in ("list", "map", "merge") and not self._items(node):
            self.lines.append(f"{lead} {mark}{'[]' if kind == 'list' else '{}'}")
        else:
            self.lines.append(f"{lead} {mark}".rstrip())
            self.block(indent, node)

    def _items(self, node: Any) -> list[Any]:
        if node[0] == "merge":
            return [("<<", ("alias", node[1])), *node[2]]
        return list(node[1])

    def block(self, indent: int, node: Any) -> None:
        pad = " " * indent
        if node[0] == "list":
            for item in node[1]:
                self.value(indent + 2, f"{pad}-", item)
            return
        for key, item in self._items(node):
            anchor, item = item if isinstance(item, tuple) and type(item[0]) is bool else (0, item)
            self.value(indent + 2, f"{pad}{key}:", item, bool(anchor))

    def document(self, drawn: dict[str, Any]) -> str:
        if drawn["defs"]:
            self.lines.append("defs:")
            for node in drawn["defs"]:
                self.value(4, "  -", node, anchor=True)
        entries = drawn["megatron"]
        if isinstance(entries, str):
            self.lines.append(f"megatron: {entries}".rstrip())
        else:
            self.lines.append("megatron:" if entries else "megatron: []")
            for entry in entries:
                if isinstance(entry, str):
                    self.lines.append(f"  - {entry}".rstrip())
                    continue
                if not entry:
                    self.lines.append("  - {}")
                for number, (field, node) in enumerate(entry.items()):
                    lead = ("  - " if number == 0 else "    ") + f"{field}:"
                    if field in ("overrides", "args"):
                        self.value(6, lead, node)
                    else:
                        self.lines.append(f"{lead} {node if isinstance(node, str) else node[1]}")
        top = drawn.get("top")
        if top == "- megatron":  # a document that is a list: replaces the whole text
            return "- megatron\n"
        if top:
            self.lines.append(top if ":" in top else f"{top}: 1")
        return "\n".join(self.lines) + "\n"


class Obj:
    """An object a trainer puts on args: deep-copied by slime, compared by its state."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Obj({self.value!r})"


class Mode(enum.Enum):
    A = 1


# Values a trainer sets on args after parsing. `None` as a maker: another key's object.
_makers: list[Callable[[], Any]] = [
    lambda: 7,
    lambda: 2.5,
    lambda: "text",
    lambda: None,
    lambda: True,
    lambda: [1, "a"],
    lambda: {"A": "1"},
    lambda: {"A": [1, {"B": None}]},
    lambda: Obj([1]),
    lambda: ([1], 2),
    lambda: (1, "a"),
    lambda: collections.OrderedDict(a=1),
    lambda: collections.defaultdict(list, a=[1]),
    lambda: {1, 2},
    lambda: Mode.A,
    lambda: datetime.date(2024, 1, 1),
]
_BASE_KEYS = ["lr", "seed", "train_env_vars", "eval_prompt_data", "kl_coef", "use_opd", "save"]
_change_keys = st.sampled_from([*_BASE_KEYS, "added", "shared", "obj"])
_changes = st.lists(
    st.one_of(
        st.tuples(st.just("set"), _change_keys, st.integers(0, len(_makers) - 1)),
        st.tuples(st.just("del"), _change_keys, st.just(0)),
        st.tuples(st.just("alias"), _change_keys, st.sampled_from([*_BASE_KEYS, "added"])),
        st.tuples(st.just("nest"), _change_keys, st.sampled_from([*_BASE_KEYS, "added"])),
    ),
    max_size=4,
)
_flags = st.lists(
    st.sampled_from(
        [
            ("--lr", "2e-6"),
            ("--lr", "3"),
            ("--seed", "42"),
            ("--eval-prompt-data", "a", "b"),
            ("--train-env-vars", '{"X": "1", "L": [1]}'),
            ("--micro-batch-size", "2"),
            ("--save", "/ckpt"),
            ("--sequence-parallel",),
            ("--kl-coef", "0.5"),
            ("--use-kl-loss",),
            ("--save-interval", "50"),
            ("--lr-warmup-fraction", "0.1"),
            ("--moe-aux-loss-coeff", "0.1", "0.2"),
            ("--recompute-modules", "core_attn"),
            ("--attention-backend", "flash"),
            ("--use-opd",),
        ]
    ),
    max_size=5,
    unique=True,
)


def _change(args: argparse.Namespace, changes: list[tuple[str, str, Any]]) -> None:
    for action, key, what in changes:
        if action == "set":
            setattr(args, key, _makers[what]())
        elif action == "del":
            if hasattr(args, key):
                delattr(args, key)
        elif action == "alias":  # one object under two names, as `args.a = args.b = x`
            setattr(args, key, getattr(args, what, None))
        else:  # another key's object inside a list
            setattr(args, key, [getattr(args, what, None), 1])


# What a trainer observes of a value: its structure, types, reprs, and which parts are one
# object, the base's, or the other role's. Only mutable objects have an identity that matters.
_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), enum.Enum, datetime.date)


class _Observer:
    def __init__(self, base: Any, other: Any = None, *, track: bool = True) -> None:
        self.track = track  # whether two places holding one object are told apart
        self.seen: dict[int, int] = {}
        self.keep: list[Any] = []  # the objects seen, alive while ids are compared
        self.base = _ids(base)
        self.other = _ids(other) if other is not None else set()

    def __call__(self, value: Any) -> Any:
        if isinstance(value, _IMMUTABLE):
            return (type(value).__name__, repr(value))
        if isinstance(value, (tuple, frozenset)):
            return (type(value).__name__, [self(item) for item in value])
        if id(value) in self.seen and self.track:
            return ("same-as", self.seen[id(value)])
        self.seen[id(value)] = len(self.seen)
        self.keep.append(value)
        where = (
            "base" if id(value) in self.base else "",
            "other" if id(value) in self.other else "",
        )
        if isinstance(value, dict):
            inner: Any = [(self(key), self(item)) for key, item in value.items()]
            if isinstance(value, collections.defaultdict):
                inner.append(("default", repr(value.default_factory)))
        elif isinstance(value, (list, set)):
            inner = [
                self(item)
                for item in (sorted(value, key=repr) if isinstance(value, set) else value)
            ]
        else:
            inner = self(vars(value)) if hasattr(value, "__dict__") else repr(value)
        return (type(value).__name__, where, inner)


def _ids(root: Any) -> set[int]:
    """The ids of the mutable objects inside `root` (a namespace: its values)."""
    found: set[int] = set()
    stack = list(vars(root).values()) if isinstance(root, argparse.Namespace) else [root]
    while stack:
        value = stack.pop()
        if isinstance(value, _IMMUTABLE) or id(value) in found:
            continue
        if not isinstance(value, (tuple, frozenset)):
            found.add(id(value))
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend(value)
        elif hasattr(value, "__dict__"):
            stack.append(vars(value))
    return found


def _observed(
    result: argparse.Namespace, base: Any, other: Any, apart: frozenset[str] = frozenset()
) -> Any:
    """What a trainer observes of `result`; the values of the keys `apart` are observed without
    telling which places hold one object (the role file's: docs/roles.md, the reader gives
    each alias its own copy, where PyYAML gives the anchor's one object)."""
    observe = _Observer(base, other)
    return (
        isinstance(result, argparse.Namespace),
        list(vars(result)),
        {
            key: (_Observer(base, other, track=False) if key in apart else observe)(value)
            for key, value in vars(result).items()
        },
    )


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "returned", call()
    except Exception as error:  # the outcome is what is compared
        return "raised", error


def _slime_overrides(text: str, role: str) -> Any:
    """The overrides slime's function reads for `role` from `text` (it returned on it)."""
    raw = yaml.safe_load(text) or {}
    mine = [entry for entry in raw["megatron"] if entry.get("role") == role]
    return (mine[0].get("overrides") or mine[0].get("args") or {}) if mine else {}


_OURS = layerconf.Namespace.__slots__  # layerconf's own attributes


def _stricter_on_purpose(text: str, role: str, error: Exception) -> bool:
    """Whether the drop-in's error is one docs/roles.md lists: an empty key, a Python name or
    a layerconf attribute's name (slime sets them), a merge key whose mappings both set one key, a document the reader
    refuses as unbounded (an alias inside its own anchor: PyYAML builds a list holding itself)."""
    if isinstance(error, SlimeConfigError) and any(
        "the value is infinite" in problem.message or "two merged mappings set" in problem.message
        for problem in error.problems
    ):
        return True
    try:
        keys = list(_slime_overrides(text, role))
    except Exception:  # slime failed on the file: only the reasons above count
        return False
    return any(
        key == "" or (isinstance(key, str) and (key[:2] == key[-2:] == "__" or key in _OURS))
        for key in keys
    )


def _same(
    text: str,
    role: str,
    slime: tuple[str, Any],
    ours: tuple[str, Any],
    base: Any,
    others: tuple[Any, Any],
) -> None:
    if ours[0] == "raised" and _stricter_on_purpose(text, role, ours[1]):
        assert isinstance(ours[1], SlimeConfigError), (text, ours[1])
        return
    if slime[0] == "returned":
        assert ours[0] == "returned", (text, ours[1])
        apart = frozenset(key for key in _slime_overrides(text, role) if isinstance(key, str))
        got = _observed(ours[1], base, others[0], apart)
        expected = _observed(slime[1], base, others[1], apart)
        assert got[:2] == expected[:2], text
        differ = {
            key: (got[2][key], value) for key, value in expected[2].items() if got[2][key] != value
        }
        assert not differ, (text, differ)
        return
    assert ours[0] == "raised", (text, slime[1])
    error = slime[1]
    if isinstance(error, yaml.YAMLError):  # documented: layerconf's error, located
        assert isinstance(ours[1], SlimeConfigError), (text, error, ours[1])
        return
    assert isinstance(ours[1], type(error)), (text, error, ours[1])
    assert isinstance(ours[1], SlimeConfigError), (text, ours[1])
    if isinstance(error, AssertionError):
        assert str(ours[1]).startswith(str(error) + "\n"), (text, str(error), str(ours[1]))


def _snapshot(base: argparse.Namespace) -> Any:
    return [(key, id(value), _Observer(None)(value)) for key, value in vars(base).items()]


class TestDifferential:
    @settings(
        max_examples=250,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        drawn=_documents,
        flags=_flags,
        layered=st.booleans(),
        before=_changes,
        between=_changes,
        critic_alone=st.booleans(),
    )
    def test_as_slimes_own_function(
        self,
        drawn: dict[str, Any],
        flags: list[tuple[str, ...]],
        layered: bool,
        before: Any,
        between: Any,
        critic_alone: bool,
    ) -> None:
        argv = ["--rollout-batch-size", "4", *(token for flag in flags for token in flag)]
        if layered:
            base, _ = layerconf.parse_known_args(PARSER, argv)
        else:
            base, _ = PARSER.parse_known_args(argv)
        _change(base, before)
        text = _Renderer().document(drawn)
        roles = ["critic"] if critic_alone else ["actor", "critic"]
        previous: tuple[Any, Any] = (None, None)
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "m.yaml"
            path.write_text(text)
            for role in roles:
                before_call = _snapshot(base)
                slime = _outcome(
                    functools.partial(slime_parse_megatron_role_args, base, path, role)
                )
                ours = _outcome(functools.partial(parse_megatron_role_args, base, path, role))
                assert _snapshot(base) == before_call  # the base is never touched
                _same(text, role, slime, ours, base, previous)
                if slime[0] == ours[0] == "returned":
                    previous = (ours[1], slime[1])
                _change(base, between)


def test_the_renderer_writes_yaml() -> None:
    """The generated texts are YAML that PyYAML reads (anchors before their aliases)."""
    drawn = {
        "defs": [("map", [("A", ("scalar", "1"))])],
        "megatron": [
            {
                "role": "actor",
                "overrides": ("merge", 0, [("lr", (True, ("list", [("scalar", "0x1F")])))]),
            },
            {"role": "critic", "args": ("map", [("seed", (False, ("alias", 1)))])},
            "",
        ],
    }
    text = _Renderer().document(drawn)
    read = yaml.safe_load(text)
    actor, critic, empty = read["megatron"]
    assert actor["overrides"] == {"A": 1, "lr": [31]}
    assert critic["args"]["seed"] is actor["overrides"]["lr"]
    assert empty is None
    assert json.dumps(read)
