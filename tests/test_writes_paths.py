"""Every way into the write path of a namespace records (or refuses) a write the same way.

The write path has a fast branch (an exact `Namespace`, a name no data descriptor takes) and a
slow one (a subclass, a described name); freezing swaps the pending log for one that refuses
the append. These tests pin each branch, and a freeze racing writes in other threads.
"""

from __future__ import annotations

import argparse
import copy
import inspect
import pickle
import threading

import pytest

from layerconf import FrozenNamespaceError, Layer, LayerStack, Namespace, explain, freeze
from layerconf.core.namespace import (
    is_frozen,
    provenance_of,
    runtime_writes,
    write_count,
    written_keys,
)


def resolved() -> Namespace:
    return LayerStack([Layer.from_mapping("default", {"lr": 1.0, "step": 0})]).resolve()


class Trainer(Namespace):
    """A subclass with a property whose setter writes another key."""

    __slots__ = ()

    @property
    def half(self) -> float:
        return float(self.lr) / 2

    @half.setter
    def half(self, value: float) -> None:
        self.lr = value * 2


def trainer() -> Trainer:
    made = resolved()
    namespace = Trainer._from_values(dict(vars(made)), provenance_of(made))
    assert isinstance(namespace, Trainer)
    return namespace


def line_before() -> int:
    return inspect.currentframe().f_back.f_lineno - 1  # type: ignore[union-attr]


class TestKeywordNamespaces:
    """A Namespace built from keywords (as argparse builds its own) records nothing."""

    def test_writes_are_set_not_recorded(self) -> None:
        """Writes land in vars() and no history is made; freeze still refuses it."""
        args = Namespace(lr=1.0)
        args.lr = 2.0
        args.step = 3
        assert vars(args) == {"lr": 2.0, "step": 3}
        assert (write_count(args, "lr"), runtime_writes(args, "step")) == (0, [])
        assert written_keys(args) == frozenset()
        assert not is_frozen(args)
        with pytest.raises(TypeError, match="without provenance"):
            freeze(args)

    def test_copies_stay_unrecorded(self) -> None:
        """copy and pickle of a keyword namespace give one that records nothing either."""
        args = Namespace(lr=1.0)
        for clone in (copy.copy(args), copy.deepcopy(args), pickle.loads(pickle.dumps(args))):
            clone.lr = 5.0
            assert (clone.lr, write_count(clone, "lr")) == (5.0, 0)


class TestSubclassWrites:
    """A subclass goes through object.__setattr__: its descriptors run and writes are kept."""

    def test_property_and_plain_key(self) -> None:
        """The setter runs and its own write is recorded; a plain key is recorded too."""
        args = trainer()
        args.half = 4.0
        args.step = 7
        line = line_before()
        assert (args.lr, "half" in vars(args)) == (8.0, False)
        assert [w.value for w in runtime_writes(args, "lr")] == [8.0]
        assert [(w.value, w.line) for w in runtime_writes(args, "step")] == [(7, line)]
        assert explain(args, "step").source == __file__

    def test_frozen_subclass_refuses_before_the_setter_runs(self) -> None:
        """Freezing refuses a property write before the setter could change anything."""
        args = freeze(trainer())
        with pytest.raises(FrozenNamespaceError) as caught:
            args.half = 1.0
        line = line_before()
        assert (caught.value.key, caught.value.source, caught.value.line) == (
            "half",
            __file__,
            line,
        )
        assert args.lr == 1.0
        with pytest.raises(FrozenNamespaceError, match="cannot set 'step'"):
            args.step = 1
        assert args.step == 0


class TestFrozenLog:
    """A frozen namespace refuses in the append, before the value is stored."""

    def test_a_list_value_is_refused_and_not_stored(self) -> None:
        """A value that would be copied is refused as an int is, with the line of the write."""
        args = freeze(resolved())
        with pytest.raises(FrozenNamespaceError) as caught:
            args.ranks = [0, 1]
        line = line_before()
        assert (caught.value.key, caught.value.line) == ("ranks", line)
        assert "ranks" not in vars(args)

    def test_a_described_name_is_refused(self) -> None:
        """Assigning __dict__ or __class__ of a frozen namespace is refused too."""
        args = freeze(resolved())
        with pytest.raises(FrozenNamespaceError, match="cannot set '__dict__'"):
            args.__dict__ = {}
        assert vars(args) == {"lr": 1.0, "step": 0}

    def test_writes_before_freezing_are_folded(self) -> None:
        """Writes still pending when freeze is called are kept, and survive a pickle."""
        args = resolved()
        for step in range(10):
            args.step = step
        freeze(args)
        clone = pickle.loads(pickle.dumps(args))
        assert write_count(args, "step") == write_count(clone, "step") == 10
        assert is_frozen(clone)
        with pytest.raises(FrozenNamespaceError):
            clone.step = 11


class TestFreezeRacingWrites:
    """Threads writing while another freezes: every write is refused or recorded, none lost."""

    def test_every_write_refused_or_counted(self) -> None:
        """The count equals the writes that did not raise; the latest is numbered so."""
        for _ in range(20):
            args = resolved()
            done = [0] * 4
            barrier = threading.Barrier(5)

            def write(
                slot: int,
                args: Namespace = args,
                done: list[int] = done,
                barrier: threading.Barrier = barrier,
            ) -> None:
                barrier.wait()
                try:
                    for step in range(1, 5000):
                        args.step = step
                        done[slot] += 1
                except FrozenNamespaceError:
                    pass

            threads = [threading.Thread(target=write, args=(slot,)) for slot in range(4)]
            for thread in threads:
                thread.start()
            barrier.wait()
            freeze(args)
            for thread in threads:
                thread.join()
            assert write_count(args, "step") == sum(done)
            assert [w.number for w in runtime_writes(args, "step")][-1:] == (
                [sum(done)] if sum(done) else []
            )
            assert args.step == 0 or sum(done)
            with pytest.raises(FrozenNamespaceError):
                args.step = -1


def test_plain_argparse_namespace_untouched() -> None:
    """argparse's own namespace is not ours: nothing is recorded for it."""
    args = argparse.Namespace(lr=1.0)
    args.lr = 2.0
    assert (write_count(args, "lr"), written_keys(args)) == (0, frozenset())
