"""The resolved namespace behaves as argparse's own and keeps its provenance through copies."""

from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import inspect
import pathlib
import pickle
import sys
import threading
import tracemalloc
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerconf import (
    FrozenNamespaceError,
    Layer,
    LayerconfError,
    LayerStack,
    Namespace,
    OpaqueValue,
    audit,
    diff_audits,
    explain,
    explain_all,
    freeze,
    load_audit,
    notices,
    provenance_of,
    write_audit,
)
from layerconf.core import namespace as namespace_module
from layerconf.core.explain import unscrubbed
from layerconf.core.namespace import (
    RECENT_WRITES,
    Provenance,
    is_frozen,
    namespace_from,
    runtime_writes,
    write_count,
    written_keys,
)
from layerconf.core.records import join_path
from layerconf.core.values import value_text

from .strategies import layer_lists, leaf_paths


def example() -> Namespace:
    return LayerStack(
        [
            Layer.from_mapping("default", {"lr": 1e-6, "opt": {"beta1": 0.9, "beta2": 0.95}}),
            Layer.from_mapping("cli", {"lr": 2e-6}),
            Layer.from_mapping("role-config", {"opt": {"beta2": 0.98}}, source="critic.yaml"),
        ]
    ).resolve(role="critic")


def answers(args: argparse.Namespace) -> list[str]:
    return [str(explain(args, join_path(path))) for path in leaf_paths(vars(args))]


class TestLikeArgparse:
    """A resolved namespace is used exactly as an argparse.Namespace."""

    def test_is_an_argparse_namespace(self) -> None:
        """Trainers that check isinstance(args, argparse.Namespace) keep working."""
        assert isinstance(example(), argparse.Namespace)

    def test_vars_holds_configuration_keys_only(self) -> None:
        """vars() shows the configuration and nothing of the provenance."""
        assert vars(example()) == {"lr": 2e-6, "opt": {"beta1": 0.9, "beta2": 0.98}}

    def test_attribute_access_and_assignment(self) -> None:
        """args.lr reads and writes like any namespace."""
        args = example()
        args.lr = 3e-6
        assert args.lr == 3e-6
        assert "lr=3e-06" in repr(args)

    def test_equality_compares_values_only(self) -> None:
        """== compares values, with a plain Namespace too."""
        args = example()
        plain = argparse.Namespace(lr=2e-6, opt={"beta1": 0.9, "beta2": 0.98})
        assert args == plain
        assert plain == args
        other = LayerStack([Layer.from_mapping("x", vars(plain))]).resolve()
        assert other == args

    def test_a_config_key_may_be_named_like_anything(self) -> None:
        """Keys such as 'explain' or 'notices' are ordinary attributes."""
        args = LayerStack([Layer.from_mapping("a", {"explain": 1, "notices": 2})]).resolve()
        assert (args.explain, args.notices) == (1, 2)


SECRET = "SEKRIT-1234567"


def with_secrets() -> Namespace:
    """A namespace holding a W&B key from the command line, overridden by a role file's, and
    other values that quote or hold secrets."""
    return LayerStack(
        [
            Layer.from_mapping("default", {"lr": 1e-6, "wandb_key": None, "wandb_group": None}),
            Layer.from_mapping(
                "cli",
                {
                    "wandb_key": SECRET,
                    "wandb_group": f"run-{SECRET}",
                    "load": "https://me:URLPASS99@host/ckpt",
                    "env": {"HF_TOKEN": "hf_NESTED99", "OMP_NUM_THREADS": "4"},
                },
            ),
            Layer.from_mapping("role-config", {"wandb_key": "ROLEKEY-7654321"}),
        ]
    ).resolve(role="critic")


class TestShownWithoutSecrets:
    """What print(), logging and f-strings show of a namespace (its repr) holds no secret, as
    `explain` shows none: slime and Megatron print their args at start-up."""

    NEEDLES = (SECRET, "ROLEKEY-7654321", "URLPASS99", "hf_NESTED99")

    def test_repr_of_values_python_cannot_print_never_raises(self) -> None:
        """A namespace's, a layer's and a provenance's repr show an int past Python's digits
        limit, and an object whose repr raises (the error's text unquoted), as explain does."""

        class Unprintable:
            def __repr__(self) -> str:
                raise RuntimeError(f"cannot print {SECRET}")

        args = LayerStack(
            [Layer.from_mapping("cli", {"big": 10**5000, "odd": [1, Unprintable()]})]
        ).resolve()
        args.late = {"n": 10**5000}
        for text in (repr(args), str(args), repr(provenance_of(args))):
            assert "<int of 5,001 digits: 1000...0000>" in text
            assert "<unprintable " in text
            assert ".Unprintable: RuntimeError>" in text
            assert SECRET not in text
        assert "late={'n': <int of 5,001 digits: 1000...0000>}" in repr(args)

    def test_repr_redacts_secrets_and_scrubs_their_texts(self) -> None:
        """The secret key's value is the placeholder; the texts of the secrets it held, in
        any layer, are scrubbed from other values; a URL's password and a nested HF_TOKEN are
        redacted; every other value shows as argparse shows it."""
        args = with_secrets()
        assert repr(args) == (
            "Namespace(lr=1e-06, wandb_key='<redacted>', wandb_group='run-<redacted>', "
            "load='https://me:<redacted>@host/ckpt', "
            "env={'HF_TOKEN': '<redacted>', 'OMP_NUM_THREADS': '4'})"
        )

    def test_the_namespace_keeps_the_real_values(self) -> None:
        args = with_secrets()
        repr(args)
        assert args.wandb_key == "ROLEKEY-7654321"
        assert vars(args)["env"]["HF_TOKEN"] == "hf_NESTED99"

    def test_every_way_of_printing_it(self, caplog: pytest.LogCaptureFixture) -> None:
        """str(), f-strings, %-formatting and logging all show the repr."""
        import logging

        args = with_secrets()
        with caplog.at_level(logging.INFO):
            logging.getLogger("trainer").info("args: %s", args)
        for text in (str(args), f"{args}", f"{args!r}", "%s" % (args,), caplog.text):  # noqa: UP031
            assert "wandb_key='<redacted>'" in text
            assert not any(needle in text for needle in self.NEEDLES)

    def test_copies_and_pickles_show_the_same(self) -> None:
        args = with_secrets()
        for clone in (copy.copy(args), copy.deepcopy(args), pickle.loads(pickle.dumps(args))):
            assert repr(clone) == repr(args)

    def test_keys_set_later_and_namespaces_without_provenance(self) -> None:
        """A secret set at runtime, or on a namespace built by hand, is redacted too."""
        args = example()
        args.hf_token = "hf_RUNTIME99"
        args.note = "hf_RUNTIME99 in a note"
        assert "hf_RUNTIME99" not in repr(args)
        assert "hf_token='<redacted>'" in repr(args)
        plain = Namespace(api_key="sk-BYHAND99", lr=1)
        assert repr(plain) == "Namespace(api_key='<redacted>', lr=1)"

    def test_shown_while_another_thread_writes(self) -> None:
        """A repr taken while a trainer's thread writes and adds keys neither fails nor shows
        the secret."""
        args = with_secrets()
        stop = threading.Event()

        def write() -> None:
            step = 0
            while not stop.is_set():
                step += 1
                args.step = step
                setattr(args, f"key{step % 50}", step)

        writer = threading.Thread(target=write)
        writer.start()
        try:
            shown = [repr(args) for _ in range(200)]
        finally:
            stop.set()
            writer.join()
        assert not any(needle in text for text in shown for needle in self.NEEDLES)

    def test_secrets_inside_sets(self) -> None:
        """A set or frozenset value is shown without the secrets it holds, as a list is (a
        URL's password, a secret's text), in the namespace's repr and in explain."""
        args = with_secrets()
        args.mirrors = {"https://me:SETPASS99@mirror/ckpt"}
        args.tags = frozenset({"run-ROLEKEY-7654321", "ppo"})
        shown = repr(args) + str(explain(args, "mirrors")) + str(explain(args, "tags"))
        assert "SETPASS99" not in shown
        assert "ROLEKEY-7654321" not in shown
        assert "mirrors={'https://me:<redacted>@mirror/ckpt'}" in repr(args)
        assert "run-<redacted>" in repr(args)
        assert isinstance(args.tags, frozenset)
        assert "run-ROLEKEY-7654321" in args.tags

    def test_as_argparse_shows_it_when_nothing_is_secret(self) -> None:
        """Without secrets, argparse's own text: keys in order, those that are no Python
        name in a trailing ``**{...}``."""
        args = LayerStack(
            [Layer.from_mapping("a", {"lr": 1e-6, "my-flag": [1, "x"], "name": "n", "n": None})]
        ).resolve()
        shown = argparse.Namespace(**vars(args))
        assert repr(args) == repr(shown)
        assert repr(args).endswith("**{'my-flag': [1, 'x']})")


class TestCopies:
    """Provenance survives copy.copy, copy.deepcopy and pickle."""

    def test_copy_keeps_provenance(self) -> None:
        """A shallow copy explains the same way."""
        args = example()
        assert answers(copy.copy(args)) == answers(args)

    def test_deepcopy_is_independent(self) -> None:
        """A deep copy shares no mutable value and explains the same way."""
        args = example()
        clone = copy.deepcopy(args)
        assert clone == args
        assert clone.opt is not args.opt
        assert answers(clone) == answers(args)

    @pytest.mark.parametrize("protocol", [2, 3, 4, 5])
    def test_pickle_round_trip(self, protocol: int) -> None:
        """Pickled to a remote worker, the namespace keeps values, type and provenance."""
        args = example()
        clone = pickle.loads(pickle.dumps(args, protocol=protocol))
        assert type(clone) is Namespace
        assert vars(clone) == vars(args)
        assert answers(clone) == answers(args)
        assert explain(clone, "lr").role == "critic"

    def test_a_pickle_without_a_later_field_gets_its_default(self) -> None:
        """A provenance pickled before a field existed (an older layerconf's: no `inputs`)
        loads with that field's default, an empty mapping, and audits."""
        provenance = provenance_of(example())
        assert provenance is not None
        state = provenance.__getstate__()
        del state["inputs"]
        loaded = Provenance.__new__(Provenance)
        loaded.__setstate__(state)
        assert loaded.inputs == {}
        args = namespace_from({"lr": 2e-6, "opt": {"beta1": 0.9, "beta2": 0.98}}, loaded)
        assert audit({"critic": args})["argv"] is None

    @given(layer_lists())
    def test_explain_all_agrees_with_explain(self, layers: list[Layer]) -> None:
        """explain_all gives, for every key, what explain gives."""
        args = LayerStack(layers).resolve()
        args.lr = 0.5
        assert {k: str(s) for k, s in explain_all(args).items()} == {
            k: str(explain(args, k)) for k in vars(args)
        }

    @given(layer_lists())
    def test_any_stack_survives_deepcopy_and_pickle(self, layers: list[Layer]) -> None:
        """Equal values and the same explain answers after deepcopy and pickle."""
        args = LayerStack(layers).resolve()
        for clone in (copy.deepcopy(args), pickle.loads(pickle.dumps(args, protocol=5))):
            assert vars(clone) == vars(args)
            assert answers(clone) == answers(args)


class TestProvenanceAccess:
    """Provenance is reached through module functions, never through attributes."""

    def test_plain_namespace_has_none(self) -> None:
        """provenance_of and notices accept any namespace."""
        plain = argparse.Namespace(lr=1)
        assert provenance_of(plain) is None
        assert notices(plain) == ()

    def test_resolved_namespace_has_one(self) -> None:
        """The provenance names the role and the layers."""
        provenance = provenance_of(example())
        assert provenance is not None
        assert provenance.role == "critic"
        assert [layer.name for layer in provenance.layers] == ["default", "cli", "role-config"]

    def test_unresolved_values(self) -> None:
        """Namespace(**kwargs) still works; it only lacks provenance until resolved."""
        made: Any = Namespace(lr=1)
        assert made.lr == 1
        assert provenance_of(made) is None


def _deep_size(args: Namespace) -> int:
    """What the recorded writes of `args` hold, as pickle writes them (a bounded proxy)."""
    return len(pickle.dumps(args))


class TestRuntimeWritesAreBounded:
    """A trainer's loop writes a key every step: what is kept stays bounded, and says so."""

    def test_a_million_writes_keep_a_bounded_history(self) -> None:
        """1M writes keep the first, the latest few and a count; pickle stays small."""
        args = example()
        args.step = 0
        once = _deep_size(args)
        for step in range(1, 1_000_000):
            args.step = step
        assert write_count(args, "step") == 1_000_000
        kept = runtime_writes(args, "step")
        assert [w.number for w in kept] == [1, *range(1_000_001 - RECENT_WRITES, 1_000_001)]
        assert [w.value for w in kept][:2] == [0, 1_000_000 - RECENT_WRITES]
        assert kept[-1].value == 999_999
        assert _deep_size(args) < once + 2_000

    def test_a_deleted_key_set_again_starts_a_new_history(self) -> None:
        """`del` takes a key's writes with it at once, in a namespace of many keys too: set
        again, the key's history starts anew, and deleted keys keep nothing."""
        stack = LayerStack([Layer.from_mapping("default", {f"k{i}": i for i in range(100)})])
        args = stack.resolve()
        args.scratch = 1
        args.scratch = 2
        del args.scratch
        args.scratch = 3
        setting = explain(args, "scratch")
        assert (setting.value, setting.origin.label, setting.history) == (3, "write 1 of 1", ())
        for step in range(50):
            setattr(args, f"tmp{step}", step)
            delattr(args, f"tmp{step}")
        assert written_keys(args) == {"scratch"}

    def test_keys_written_then_deleted_keep_nothing(self) -> None:
        """A loop that sets a new key each step and deletes an old one (a per-step scratch
        value) keeps the writes of the keys the namespace still has, not of every key it
        ever had: memory stays that of a few keys."""
        args = example()
        args.step = 0
        for step in range(2_000):
            setattr(args, f"scratch{step}", step)
            if step >= 3:
                delattr(args, f"scratch{step - 3}")
        once = _deep_size(args)
        for step in range(2_000, 60_000):
            setattr(args, f"scratch{step}", step)
            delattr(args, f"scratch{step - 3}")
        assert _deep_size(args) < once + 2_000
        assert [w.value for w in runtime_writes(args, "scratch59999")] == [59_999]
        assert write_count(args, "step") == 1  # a key not deleted keeps its writes
        del args.step
        args.step = 5
        assert explain(args, "step").value == 5

    def test_explain_says_where_and_how_many_times(self) -> None:
        """The final value names its file:line and count; the first write stays in the history."""
        args = example()
        for step in range(100):
            args.step = step
        line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
        setting = explain(args, "step")
        assert (setting.value, setting.layer, setting.source, setting.line) == (
            99,
            "runtime",
            __file__,
            line,
        )
        assert setting.origin.label == "write 100 of 100"
        labels = [h.origin.label for h in setting.history]
        assert labels[0] == "write 99 of 100"
        assert labels[-1] == "write 1 of 100"
        assert setting.history[-1].value == 0
        assert len(setting.history) == RECENT_WRITES
        assert "(write 100 of 100)" in str(setting)

    def test_the_line_of_each_write(self) -> None:
        """Writes from two lines keep their own lines (read lazily from the code's line table)."""
        args = example()
        args.lr = 1.0
        first = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
        for _ in range(3):
            args.lr = 2.0
        second = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
        assert [(w.line, w.number) for w in runtime_writes(args, "lr")] == [
            (first, 1),
            (second, 2),
            (second, 3),
            (second, 4),
        ]

    def test_a_large_value_is_not_copied(self) -> None:
        """A 20 MB bytearray is described, not duplicated nor kept alive by the history."""
        args = example()
        tracemalloc.start()
        try:
            args.buffer = bytearray(20_000_000)
            before = tracemalloc.get_traced_memory()[0]
            args.buffer = bytearray(20_000_000)
            after = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert after - before < 20_500_000  # the new buffer only: no copy, the old one freed
        kept = runtime_writes(args, "buffer")
        assert [repr(w.value) for w in kept] == ["<bytearray of 20,000,000 items, not kept>"] * 2
        setting = explain(args, "buffer")
        assert (setting.layer, setting.source) == ("runtime", __file__)

    def test_a_cycle_never_crashes(self) -> None:
        """A list holding itself is recorded, explained, printed, copied and pickled."""
        args = example()
        loop: list[Any] = [1]
        loop.append(loop)
        args.loop = loop
        setting = explain(args, "loop")
        assert (setting.layer, setting.source) == ("runtime", __file__)
        assert "[1, [...]]" in str(setting)
        clone = pickle.loads(pickle.dumps(args))
        assert clone.loop[1] is clone.loop
        assert explain(copy.deepcopy(args), "loop").layer == "runtime"

    def test_a_mapping_holding_itself_is_audited(self, tmp_path: pathlib.Path) -> None:
        """A dict holding itself (a trainer's state handed back to it) is recorded, its
        leaves once each, and read back; never a RecursionError."""
        args = example()
        loop: dict[str, Any] = {"n": 1}
        loop["self"] = loop
        args.loop = loop
        record = load_audit(write_audit({"r": args}, tmp_path))
        assert record.namespace("r").loop == {
            "n": 1,
            "self": OpaqueValue("builtins.dict", "<cycle>"),
        }
        leaves = record.data["roles"]["r"]["leaves"]
        assert [leaf for leaf in leaves if leaf.startswith("loop")] == ["loop.n", "loop.self"]
        assert explain(record.namespace("r"), "loop.n").layer == "runtime"
        assert diff_audits(record, audit({"r": args})) == []

    def test_an_attribute_of_any_name_is_audited_and_replayed(self, tmp_path: pathlib.Path) -> None:
        """An attribute named '' (setattr takes any string) or 'a.b' is written and replayed
        with its origin, as explain answers for it: not a TypeError ('layer keys must be
        non-empty strings') from the replay."""
        args = example()
        for name in ("", "a.b", "x y"):
            setattr(args, name, 1)
        replayed = load_audit(write_audit({"r": args}, tmp_path)).namespace("r")
        for name in ("", "a.b", "x y"):
            assert getattr(replayed, name) == 1
            assert explain(replayed, name).layer == "runtime"

    def test_a_small_container_is_a_snapshot(self) -> None:
        """A small list is copied: mutating it later does not rewrite the history."""
        args = example()
        ranks = [0, 1]
        args.ranks = ranks
        args.ranks = [2]
        ranks.append(9)
        assert [w.value for w in runtime_writes(args, "ranks")] == [[0, 1], [2]]

    def test_threads_writing_are_all_counted(self) -> None:
        """Writes from several threads at once: every one counted, the history intact."""
        args = example()
        barrier = threading.Barrier(4)

        def write() -> None:
            barrier.wait()
            for step in range(20_000):
                args.step = step

        threads = [threading.Thread(target=write) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert write_count(args, "step") == 80_000
        kept = runtime_writes(args, "step")
        assert len(kept) == RECENT_WRITES + 1
        assert kept[-1].number == 80_000

    def test_explain_and_pickle_while_threads_write(self) -> None:
        """Reading the history (explain, pickle, copy) while other threads write never fails."""
        args = example()
        stop = threading.Event()
        errors: list[BaseException] = []

        def write(key: str) -> None:
            step = 0
            while not stop.is_set():
                setattr(args, f"{key}{step % 400}", step)
                args.step = step
                step += 1

        def read() -> None:
            try:
                for _ in range(5):
                    explain(args, "step")
                    pickle.loads(pickle.dumps(args))
                    explain_all(args)
            except BaseException as error:
                errors.append(error)
            finally:
                stop.set()

        threads = [threading.Thread(target=write, args=("a",)), threading.Thread(target=read)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []

    def test_a_value_read_before_another_write_keeps_its_place(self) -> None:
        """An audit reads the values once, then the writes: a write another thread makes in
        between is after the value read, which is still explained by the write that made it
        (its file, line and number), not as a runtime value of unknown place."""
        args = example()
        args.step = 1
        line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
        values = dict(vars(args))
        args.step = 2  # another thread, between the reading of the values and of the writes
        setting = unscrubbed(args, "step", values)
        assert (setting.value, setting.source, setting.line) == (1, __file__, line)
        assert (setting.origin.label, setting.history) == ("write 1 of 1", ())

    @pytest.mark.parametrize(
        ("read", "looked_up"),
        [
            (lambda args: explain(args, "step"), "_writes_at"),
            (lambda args: explain(copy.copy(args), "step"), "_fold"),
            (lambda args: explain(pickle.loads(pickle.dumps(args)), "step"), "_fold"),
        ],
        ids=["explain", "copy", "pickle"],
    )
    def test_a_write_while_explaining_or_copying(
        self, read: Callable[[Namespace], Any], looked_up: str
    ) -> None:
        """Another thread's write just before the writes are looked up (made here when they
        are): explain, a copy or a pickle explains the value it holds by the write that made
        it, not as a runtime value of unknown place."""
        args = example()
        args.step = 1
        line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]

        def another_thread(frame: Any, event: str, _: Any) -> None:
            if event == "call" and frame.f_code.co_name == looked_up and args.step == 1:
                args.step = 2

        sys.setprofile(another_thread)
        try:
            setting = read(args)
        finally:
            sys.setprofile(None)
        assert args.step == 2
        assert (setting.value, setting.source, setting.line) == (1, __file__, line)
        assert setting.origin.label == "write 1 of 1"

    def test_copies_keep_the_count(self) -> None:
        """copy, deepcopy and pickle carry the kept writes and the count; later writes add."""
        args = example()
        for step in range(50):
            args.step = step
        for clone in (copy.copy(args), copy.deepcopy(args), pickle.loads(pickle.dumps(args))):
            clone.step = 50
            assert write_count(clone, "step") == 51
            assert write_count(args, "step") == 50
            assert explain(clone, "step").origin.label == "write 51 of 51"

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=80), st.integers(1, 9))
    def test_batches_fold_into_the_same_histories(self, keys: list[str], pending: int) -> None:
        """Writes wait in a bounded batch and are folded per key: whatever the batch size and
        the order of the keys, each key keeps its first write, its latest writes and count."""
        original = namespace_module.PENDING_WRITES
        namespace_module.PENDING_WRITES = pending
        try:
            args = example()
            made: dict[str, list[tuple[int, int]]] = {}
            for step, key in enumerate(keys):
                line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
                setattr(args, key, step)
                made.setdefault(key, []).append((step, line))
                assert len(args._layerconf_log) < pending
        finally:
            namespace_module.PENDING_WRITES = original
        for key in ("a", "b", "c"):
            writes = made.get(key, [])
            assert write_count(args, key) == len(writes)
            numbered = list(enumerate(writes, 1))
            expected = numbered[:1] + [w for w in numbered[-RECENT_WRITES:] if w[0] != 1]
            assert [(w.number, w.value, w.line) for w in runtime_writes(args, key)] == [
                (number, value, line) for number, (value, line) in expected
            ]
            assert all(w.source == __file__ for w in runtime_writes(args, key))


class TestWritesKeepPythonSemantics:
    """Recording a write changes nothing of what the write does."""

    def test_a_subclass_property_setter_runs(self) -> None:
        """A data descriptor of a subclass still takes the write (object.__setattr__)."""

        class Trainer(Namespace):
            __slots__ = ()

            @property
            def scaled(self) -> float:
                return float(self.lr)

            @scaled.setter
            def scaled(self, value: float) -> None:
                self.lr = value / 2

        args = Trainer._from_values(dict(vars(example())), provenance_of(example()))
        args.scaled = 8.0
        assert (args.lr, "scaled" in vars(args)) == (4.0, False)
        assert explain(args, "lr").layer == "runtime"

    def test_every_data_descriptor_goes_through_object_setattr(self) -> None:
        """The names the write path stores in the instance dict have no data descriptor on
        Namespace: every one that has is in the set written through object.__setattr__."""
        described = {
            name
            for klass in Namespace.__mro__
            for name, attribute in vars(klass).items()
            if hasattr(type(attribute), "__set__")
        }
        assert described <= namespace_module._DESCRIBED

    def test_a_new_instance_dict_is_followed(self) -> None:
        """Assigning __dict__ replaces the instance dict: later writes land in the new one."""
        args = example()
        args.__dict__ = {"lr": 3.0}
        args.step = 1
        assert vars(args) == {"lr": 3.0, "step": 1}
        assert (args.step, write_count(args, "step")) == (1, 1)

    def test_odd_names(self) -> None:
        """An empty or underscored name is set as Python sets it, and recorded."""
        args = example()
        setattr(args, "", 1)
        args._private = 2
        assert (vars(args)[""], vars(args)["_private"]) == (1, 2)
        assert write_count(args, "") == write_count(args, "_private") == 1


class TestFreeze:
    """A frozen namespace refuses every write, naming the key and the line of the write."""

    def test_a_write_is_refused(self) -> None:
        """setattr raises FrozenNamespaceError (an AttributeError) with the key and file:line."""
        args = freeze(example())
        with pytest.raises(FrozenNamespaceError) as caught:
            args.lr = 1.0
        line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
        error = caught.value
        assert isinstance(error, AttributeError)
        assert isinstance(error, LayerconfError)
        assert (error.key, error.source, error.line) == ("lr", __file__, line)
        assert f"{__file__}:{line}: cannot set 'lr'" in str(error)
        assert args.lr == 2e-6

    def test_setattr_and_delattr(self) -> None:
        """A new key is refused as an existing one is, and del too."""
        args = freeze(example())
        with pytest.raises(FrozenNamespaceError, match="cannot set 'new'"):
            args.new = 1
        with pytest.raises(FrozenNamespaceError, match="cannot delete 'lr'"):
            del args.lr
        assert vars(args) == vars(example())

    def test_history_kept_and_explained(self) -> None:
        """Writes made before freezing still explain the value."""
        args = example()
        args.lr = 5e-6
        freeze(args)
        assert explain(args, "lr").layer == "runtime"
        assert is_frozen(args)

    def test_frozen_survives_copies(self) -> None:
        """copy, deepcopy and pickle of a frozen namespace are frozen (a copy is not a thaw)."""
        args = freeze(example())
        for clone in (copy.copy(args), copy.deepcopy(args), pickle.loads(pickle.dumps(args))):
            assert is_frozen(clone)
            with pytest.raises(FrozenNamespaceError):
                clone.lr = 1.0

    def test_the_error_pickles(self) -> None:
        """The error crosses process boundaries (Ray, multiprocessing) with its fields."""
        with pytest.raises(FrozenNamespaceError) as caught:
            freeze(example()).lr = 1.0
        clone = pickle.loads(pickle.dumps(caught.value))
        assert (clone.key, clone.line, str(clone)) == ("lr", caught.value.line, str(caught.value))

    def test_only_resolved_namespaces(self) -> None:
        """A plain namespace has nothing to freeze: a TypeError says so."""
        with pytest.raises(
            TypeError, match="freeze\\(\\) takes args as a namespace layerconf resolved"
        ):
            freeze(argparse.Namespace(lr=1))
        with pytest.raises(TypeError, match="without provenance"):
            freeze(Namespace(lr=1))

    def test_exported(self) -> None:
        """layerconf.freeze is the function, and freezing twice is harmless."""
        import layerconf

        args = example()
        assert layerconf.freeze(layerconf.freeze(args)) is args


def _nested(shape: str, depth: int) -> Any:
    """A value `depth` containers deep, the innermost holding a secret's text."""
    value: Any = "https://me:URLPASS99@host"
    for _ in range(depth):
        value = {
            "list": lambda inner: [inner],
            "dict": lambda inner: {"a": inner},
            "tuple": lambda inner: (inner,),
            "int keys": lambda inner: {1: inner},
            "set": lambda inner: frozenset({inner}),
        }[shape](value)
    return value


def test_a_command_line_value_nested_deep_is_parsed() -> None:
    """A `type=` giving a value nested 900 deep (``json.loads``): the argv source's check of
    what it can copy stopped with RecursionError; past the limit it keeps argparse's object."""
    import json

    from layerconf.sources.argv import parse_args

    parser = argparse.ArgumentParser()
    parser.add_argument("--cfg", type=json.loads)
    args = parse_args(parser, ["--cfg", "[" * 900 + "]" * 900])
    assert json.dumps(args.cfg) == "[" * 900 + "]" * 900


class TestValuesNestedDeep:
    """A value a trainer nests however deep (``args.x = value``) is explained, printed, redacted
    and audited as far as `MAX_DEPTH` containers down and shown as ``<nested more than 100
    levels>`` below, as an audit record shows it: never a RecursionError, never the secret
    below the cut, in time bounded whatever the depth."""

    @pytest.mark.parametrize("shape", ["list", "dict", "tuple", "int keys", "set"])
    @pytest.mark.parametrize("depth", [101, 1_000, 100_000])
    def test_every_output_of_a_deep_value(
        self, tmp_path: pathlib.Path, shape: str, depth: int
    ) -> None:
        from layerconf import redact
        from layerconf.cli.render import setting_json
        from layerconf.core.values import MAX_DEPTH, copy_value, jsonable, same_value

        args = example()
        args.x = value = _nested(shape, depth)
        marker = f"<nested more than {MAX_DEPTH} levels>"
        setting = explain(args, "x")
        assert "URLPASS99" not in str(setting) + repr(setting)  # (300 characters at most)
        whole = [
            repr(args),
            repr(redact("x", value)),
            str(setting_json(setting)),
            str(jsonable(value)),
        ]
        for output in whole:
            assert marker in output
            assert "URLPASS99" not in output
        assert same_value(value, copy_value(value))
        assert audit({"r": args})["roles"]["r"]
        assert load_audit(write_audit({"r": args}, tmp_path)).namespace("r").x
        assert "URLPASS99" not in (tmp_path / "layerconf-audit.json").read_text()

    def test_a_deep_secret_is_not_looked_for_past_the_cut(self) -> None:
        """A secret key's value nested deep, or holding itself, is redacted whole, and its
        texts are scrubbed elsewhere as far as `MAX_DEPTH` levels down."""
        args = example()
        loop: list[Any] = ["SEKRIT-1234567"]
        loop.append(loop)
        args.wandb_key = loop
        args.other = "run-SEKRIT-1234567"
        args.deep_token = _nested("list", 1_000)
        shown = repr(args) + str(explain(args, "other")) + str(audit({"r": args}))
        assert "SEKRIT" not in shown
        assert "URLPASS99" not in shown

    @pytest.mark.parametrize("secret", [False, True])
    def test_json_text_nested_deep(self, secret: bool) -> None:
        """A string that reads as JSON nested hundreds of levels (a command line's token: any
        text option) is shown as written, or hidden whole when it names a secret key, as JSON
        that does not parse: it was a RecursionError from explain, repr and the command."""
        inner = '{"hf_token": "SEKRIT-1234567"}' if secret else "1"
        args = example()
        args.x = text = "[" * 600 + inner + "]" * 600
        for output in (str(explain(args, "x")), repr(args), str(audit({"r": args}))):
            assert ("SEKRIT" in output) is False
            assert ("<redacted>" in output) is secret
        assert text[:250] in repr(args) or secret


class _Raising(Mapping[str, Any]):
    """A mapping whose reading raises where `broken` says."""

    def __init__(self, broken: str) -> None:
        self.broken = broken

    def __getitem__(self, key: str) -> Any:
        if self.broken == "getitem":
            raise RuntimeError("getitem")
        return "https://me:URLPASS99@host"

    def __iter__(self) -> Iterator[str]:
        if self.broken == "iter":
            raise RuntimeError("iter")
        return iter(["HF_TOKEN"])

    def __len__(self) -> int:
        if self.broken == "len":
            raise RuntimeError("len")
        return 1


class _ItemsRaise(dict[str, Any]):
    """A dict whose items() raises: its own repr (dict's, in C) would show what it holds."""

    def items(self) -> Any:
        raise RuntimeError("items")

    def values(self) -> Any:
        raise RuntimeError("values")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("iter")


class _NotABool:
    """What ``==`` gives for a numpy array: an object whose truth raises."""

    def __bool__(self) -> bool:
        raise ValueError("ambiguous")


class _Comparing:
    def __init__(self, broken: str) -> None:
        self.broken = broken

    def __eq__(self, other: object) -> Any:
        if self.broken == "eq":
            raise RuntimeError("eq")
        return _NotABool()

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        if self.broken == "repr":
            raise RuntimeError("repr")
        return "<comparing>"


class TestUnreadableValues:
    """A value whose reading raises (a mapping's __getitem__, __iter__ or items(), an __eq__
    that raises or is no truth value, a __repr__ that raises) is explained, printed,
    redacted and audited as unreadable: never the error, never its text unsearched."""

    @pytest.mark.parametrize(
        "make",
        [
            lambda: _Raising("getitem"),
            lambda: _Raising("iter"),
            lambda: [_Raising("iter")],
            lambda: {"env": _ItemsRaise(HF_TOKEN="SEKRIT-1234567")},
            lambda: _ItemsRaise(HF_TOKEN="SEKRIT-1234567"),
        ],
        ids=["getitem", "iter", "in a list", "in a dict", "items"],
    )
    def test_a_mapping_that_cannot_be_read(self, tmp_path: pathlib.Path, make: Any) -> None:
        from layerconf import redact
        from layerconf.cli.render import setting_json

        args = example()
        args.x = value = make()
        setting = explain(args, "x")
        outputs = [
            str(setting),
            repr(args),
            str(setting_json(setting)),
            repr(redact("x", value)),
            str(audit({"r": args})),
        ]
        write_audit({"r": args}, tmp_path)
        outputs.append((tmp_path / "layerconf-audit.json").read_text())
        for output in outputs:
            assert "<unreadable _" in output
            assert "SEKRIT" not in output
            assert "URLPASS99" not in output

    @pytest.mark.parametrize("broken", ["len", "eq", "bool", "repr"])
    def test_other_broken_methods(self, tmp_path: pathlib.Path, broken: str) -> None:
        from layerconf import redact
        from layerconf.cli.render import setting_json

        args = example()
        args.x = value = _Raising("len") if broken == "len" else _Comparing(broken)
        setting = explain(args, "x")
        for output in (
            str(setting),
            repr(args),
            str(setting_json(setting)),
            str(audit({"r": args})),
        ):
            assert "SEKRIT" not in output
        assert "URLPASS99" not in value_text(redact("x", value))
        assert load_audit(write_audit({"r": args}, tmp_path)).namespace("r").x


class TestSecretsInBytesAndPaths:
    """The text of bytes and of a path is searched for secrets as a str's is: another secret's
    text, a URL's password, JSON's secret keys are hidden in explain, repr(args), redact,
    --json and audit records (whose base64 of bytes hid them from the record's search)."""

    @pytest.mark.parametrize(
        "value",
        [
            f"run-{SECRET}".encode(),
            bytearray(f"run-{SECRET}".encode()),
            b"\xff\xfe https://me:URLPASS99@host/x",
            b'{"hf_token": "hf_NESTED99"}',
            pathlib.PurePosixPath(f"/ckpt/run-{SECRET}"),
            pathlib.PurePosixPath('{"hf_token": "hf_NESTED99"}'),
        ],
        ids=repr,
    )
    def test_hidden_as_in_a_str(self, tmp_path: pathlib.Path, value: Any) -> None:
        import base64

        from layerconf import redact
        from layerconf.cli.render import setting_json

        args = with_secrets()
        args.blob = value
        setting = explain(args, "blob")
        outputs = [str(setting), repr(args), str(setting_json(setting)), str(audit({"r": args}))]
        if SECRET not in str(value):  # (its form shows the secret: redact alone hides it)
            outputs.append(value_text(redact("blob", value)))
        write_audit({"r": args}, tmp_path)
        outputs.append((tmp_path / "layerconf-audit.json").read_text())
        raw = value if isinstance(value, (bytes, bytearray)) else b""
        for output in outputs:
            for secret in (SECRET, "URLPASS99", "hf_NESTED99"):
                assert secret not in output
            assert not raw or base64.b64encode(raw).decode() not in output
        assert "<redacted>" in str(setting)
        assert type(explain(args, "blob").redacted().value) is type(value)
        assert args.blob is value  # (the namespace keeps the real value)

    def test_a_secret_given_as_bytes_is_hidden_elsewhere(self) -> None:
        """A secret key's value in bytes or a path: its text is scrubbed from other values,
        as a str secret's is."""
        for secret in (b"BYTESKEY-999999", pathlib.PurePosixPath("BYTESKEY-999999")):
            args = example()
            args.wandb_key = secret
            args.run = "run-BYTESKEY-999999"
            for output in (str(explain(args, "run")), repr(args), str(audit({"r": args}))):
                assert "BYTESKEY" not in output


class _Url(str):
    """A str subclass (a trainer's own text type)."""


class _Urls(list[str]):
    """A list subclass."""


_Endpoint = collections.namedtuple("_Endpoint", "url")


@dataclasses.dataclass
class _Config:
    url: str


class TestSecretsInOtherObjects:
    """A value of another type than the plain ones (a str or list subclass, a namedtuple, a
    deque, a dataclass), shown by its repr, shows no URL password nor another secret's text:
    they were shown as written while the same text in a str was hidden."""

    @pytest.mark.parametrize(
        "make",
        [
            _Url,
            lambda text: _Urls([text]),
            _Endpoint,
            lambda text: collections.deque([text]),
            _Config,
        ],
        ids=["str subclass", "list subclass", "namedtuple", "deque", "dataclass"],
    )
    @pytest.mark.parametrize("text", ["https://me:URLPASS99@host/x", f"run-{SECRET}"])
    def test_hidden_as_in_a_str(self, tmp_path: pathlib.Path, make: Any, text: str) -> None:
        from layerconf import redact
        from layerconf.cli.render import setting_json

        args = with_secrets()
        args.thing = value = make(text)
        setting = explain(args, "thing")
        outputs = [str(setting), repr(args), str(setting_json(setting)), str(audit({"r": args}))]
        if "URLPASS99" in text:  # (its form shows the secret: redact alone hides it)
            outputs.append(value_text(redact("thing", value)))
        write_audit({"r": args}, tmp_path)
        outputs.append((tmp_path / "layerconf-audit.json").read_text())
        for output in outputs:
            assert "URLPASS99" not in output
            assert SECRET not in output
        assert "<redacted>" in str(setting)
        assert args.thing is value
