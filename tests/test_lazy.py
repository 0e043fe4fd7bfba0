"""Work deferred from import to first use, or done once instead of once per class, gives what
the eager version gave."""

from __future__ import annotations

import hashlib
import re
import threading
from typing import Any, ClassVar

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerconf.core.lazy import LazyPattern, record_eq, record_hash, record_repr, sha256_hex

# The patterns layerconf defers, so that the comparison covers what is used.
PATTERNS = [
    r"(?:^|[^\w.-])-{0,2}([A-Za-z_][\w.-]{0,200})[\"']?[ \t]{0,8}[:=]|--([A-Za-z][\w.-]{0,200})[ \t]{1,8}\S",
    r"[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s/@:]{0,256}:([^\s/@]{1,512})@",
    r'"((?:[^"\\]|\\.){1,200})"\s*:',
    "\r\n|[\r\n\x85\u2028\u2029]",
]


class TestLazyPattern:
    """A LazyPattern answers as the compiled pattern does, compiled once, on first use."""

    @given(st.sampled_from(PATTERNS), st.text(alphabet="ab:=-_ \t\r\n\"'/@x.\u2028", max_size=60))
    def test_same_answers_as_re(self, pattern: str, text: str) -> None:
        lazy, eager = LazyPattern(pattern), re.compile(pattern)
        assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in eager.finditer(text)]
        assert lazy.findall(text) == eager.findall(text)
        assert lazy.sub("<x>", text) == eager.sub("<x>", text)
        assert lazy.sub(lambda m: m.group(0).upper(), text) == eager.sub(
            lambda m: m.group(0).upper(), text
        )

    def test_not_compiled_before_first_use(self) -> None:
        lazy = LazyPattern("a+")
        assert lazy._compiled is None
        assert lazy.compiled() is lazy.compiled()
        assert lazy.compiled().pattern == "a+"

    def test_an_invalid_pattern_fails_at_first_use(self) -> None:
        lazy = LazyPattern("(")
        with pytest.raises(re.error):
            lazy.findall("x")

    def test_threads_using_it_first_agree(self) -> None:
        lazy = LazyPattern(r"\d+")
        barrier = threading.Barrier(8)
        results: list[list[str]] = []

        def use() -> None:
            barrier.wait()
            results.append(lazy.findall("a1b22c333"))

        threads = [threading.Thread(target=use) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == [["1", "22", "333"]] * 8

    def test_repr(self) -> None:
        assert repr(LazyPattern("a+")) == "LazyPattern('a+')"


class TestSha256:
    """sha256_hex is hashlib's SHA-256, without loading OpenSSL."""

    @given(st.binary(max_size=300))
    def test_same_digest_as_hashlib(self, data: bytes) -> None:
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()

    def test_large_input(self) -> None:
        data = bytes(range(256)) * 4099
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


def _twins(body: dict[str, Any], **options: Any) -> tuple[type, type]:
    """The same attrs class twice: with the repr attrs compiles, and with `record_repr`."""
    compiled = attrs.frozen(type("Record", (), dict(body)), **options)
    shared = attrs.frozen(type("Record", (), {**body, "__repr__": record_repr}), **options)
    assert shared.__repr__ is record_repr  # attrs left it alone
    return compiled, shared


class TestRecordRepr:
    """record_repr writes what attrs' compiled __repr__ writes, for any attrs class."""

    FIELDS: ClassVar[dict[str, Any]] = {
        "__annotations__": {"name": "str", "count": "int", "hidden": "str", "shown": "Any"},
        "name": attrs.field(),
        "count": attrs.field(default=3),
        "hidden": attrs.field(default="secret", repr=False),
        "shown": attrs.field(default=None, repr=lambda value: f"<{len(str(value))} chars>"),
    }

    @given(st.text(max_size=20), st.integers(), st.one_of(st.none(), st.text(max_size=5)))
    def test_same_text(self, name: str, count: int, shown: str | None) -> None:
        compiled, shared = _twins(self.FIELDS)
        assert repr(shared(name, count, "x", shown)) == repr(compiled(name, count, "x", shown))

    def test_no_fields(self) -> None:
        compiled, shared = _twins({})
        assert repr(shared()) == repr(compiled()) == "Record()"

    def test_a_field_without_init(self) -> None:
        body = {
            "__annotations__": {"a": "int", "b": "int"},
            "a": attrs.field(),
            "b": attrs.field(init=False, default=7),
        }
        compiled, shared = _twins(body)
        assert repr(shared(1)) == repr(compiled(1)) == "Record(a=1, b=7)"

    def test_a_record_inside_itself(self) -> None:
        """A cycle through a mutable value prints '...', as attrs does."""
        body = {"__annotations__": {"items": "list[Any]"}, "items": attrs.field()}
        compiled, shared = _twins(body)
        loops = [shared([]), compiled([])]
        for record in loops:
            record.items.append(record)
        assert repr(loops[0]) == repr(loops[1]) == "Record(items=[...])"

    def test_a_local_class_and_a_nested_record(self) -> None:
        """The name without '<locals>.', as attrs writes it; records inside records."""

        def make() -> type:
            @attrs.frozen
            class Inner:
                __repr__ = record_repr
                value: Any

            return Inner

        inner = make()
        assert inner.__qualname__.endswith("<locals>.Inner")
        assert repr(inner(inner(1))) == "Inner(value=Inner(value=1))"

    def test_threads(self) -> None:
        """Each thread keeps its own record of what it is printing."""
        compiled, shared = _twins(self.FIELDS)
        record, expected = shared("a" * 50, 1, "x", None), repr(compiled("a" * 50, 1, "x", None))
        barrier = threading.Barrier(6)
        texts: list[str] = []

        def use() -> None:
            barrier.wait()
            texts.extend(repr(record) for _ in range(200))

        threads = [threading.Thread(target=use) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert set(texts) == {expected}

    @pytest.mark.parametrize("name", ["Origin", "Layer", "Problem", "Preset", "TypeCoercion"])
    def test_layerconf_records_use_it(self, name: str) -> None:
        """The records a resolution builds share it instead of compiling their own (a layer's
        own calls it, its values shown with its secret keys named: `Layer.secret_keys`)."""
        import layerconf

        shown = getattr(layerconf, name).__repr__
        assert shown is record_repr or "record_repr" in shown.__code__.co_names


def _eq_twins(body: dict[str, Any], **options: Any) -> tuple[type, type]:
    """The same attrs class twice: with the __eq__/__hash__ attrs compiles, and with the
    shared ones."""
    compiled = attrs.frozen(type("Record", (), dict(body)), **options)
    shared = attrs.frozen(
        type("Record", (), {**body, "__eq__": record_eq, "__hash__": record_hash}), **options
    )
    assert shared.__eq__ is record_eq  # attrs left them alone
    assert shared.__hash__ is record_hash
    return compiled, shared


values = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, float("nan")]),
    st.text(alphabet="ab", max_size=2),
    st.tuples(st.integers(0, 2)),
)


class TestRecordEqHash:
    """record_eq and record_hash answer what attrs' compiled __eq__, __ne__ and __hash__ answer."""

    FIELDS: ClassVar[dict[str, Any]] = {
        "__annotations__": {"a": "Any", "b": "Any", "c": "Any", "d": "Any"},
        "a": attrs.field(),
        "b": attrs.field(default=None, eq=False),  # never compared
        "c": attrs.field(default=None, hash=False),  # compared, not hashed
        "d": attrs.field(default=None, eq=str.casefold),  # compared by its key
    }

    @staticmethod
    def _agree(compiled: type, shared: type, left: tuple[Any, ...], right: tuple[Any, ...]) -> None:
        c1, c2, s1, s2 = compiled(*left), compiled(*right), shared(*left), shared(*right)
        assert (s1 == s2) == (c1 == c2)
        assert (s1 != s2) == (c1 != c2)
        assert (s1 == s1) == (c1 == c1)
        if c1 == c2:
            assert hash(s1) == hash(s2)

    @given(
        st.tuples(values, values, values, st.sampled_from(["a", "A", "b"])),
        st.tuples(values, values, values, st.sampled_from(["a", "A", "b"])),
    )
    def test_same_answers(self, left: tuple[Any, ...], right: tuple[Any, ...]) -> None:
        compiled, shared = _eq_twins(self.FIELDS)
        self._agree(compiled, shared, left, left)
        self._agree(compiled, shared, left, right)

    @given(values, values)
    def test_one_field(self, left: Any, right: Any) -> None:
        body = {"__annotations__": {"a": "Any"}, "a": attrs.field()}
        compiled, shared = _eq_twins(body)
        self._agree(compiled, shared, (left,), (right,))
        self._agree(compiled, shared, (left,), (left,))

    def test_the_answer_is_the_comparisons(self) -> None:
        """The first false comparison's answer, else the last's, as attrs' ``and`` chain gives:
        a value whose == answers something else than a bool is not made one."""

        class Answer:
            def __init__(self, truth: bool) -> None:
                self.truth = truth

            def __bool__(self) -> bool:
                return self.truth

        class Odd:
            def __init__(self, truth: bool) -> None:
                self.answer = Answer(truth)

            def __eq__(self, other: object) -> Any:
                return self.answer

            __hash__ = object.__hash__

        body = {"__annotations__": {"a": "Any", "b": "Any"}, "a": attrs.field(), "b": attrs.field()}
        compiled, shared = _eq_twins(body)
        for first, second in [(True, True), (True, False), (False, True), (False, False)]:
            a, b = Odd(first), Odd(second)
            expected = compiled(a, b) == compiled(a, b)
            answer = shared(a, b) == shared(a, b)
            assert answer is expected
            assert answer is (b.answer if first else a.answer)

    def test_no_fields(self) -> None:
        compiled, shared = _eq_twins({})
        assert (shared() == shared()) is (compiled() == compiled()) is True
        assert hash(shared()) == hash(shared())

    def test_other_classes(self) -> None:
        """Another class, a subclass included, is NotImplemented: Python then answers False."""
        body = {"__annotations__": {"a": "Any"}, "a": attrs.field()}
        compiled, shared = _eq_twins(body)
        sub = attrs.frozen(type("Sub", (shared,), {}))
        for cls in (compiled, shared):
            assert cls.__eq__(cls(1), 1) is NotImplemented
            assert cls(1) != 1
        assert record_eq(shared(1), sub(1)) is NotImplemented
        assert shared(1) != sub(1)
        assert sub(1) == sub(1)
        assert hash(sub(1)) == hash(sub(1))

    def test_a_subclass_with_more_fields(self) -> None:
        """A subclass compares its own fields, not its parent's."""
        body = {"__annotations__": {"a": "Any"}, "a": attrs.field()}
        _, shared = _eq_twins(body)
        sub = attrs.frozen(
            type(
                "Sub",
                (shared,),
                {"__annotations__": {"b": "Any"}, "b": attrs.field(default=0)},
            )
        )
        assert shared(1) == shared(1)  # the parent's keys are made first
        assert sub(1, 2) != sub(1, 3)
        assert sub(1, 2) == sub(1, 2)

    def test_unhashable_field(self) -> None:
        body = {"__annotations__": {"a": "Any"}, "a": attrs.field()}
        compiled, shared = _eq_twins(body)
        for cls in (compiled, shared):
            with pytest.raises(TypeError, match="unhashable"):
                hash(cls([]))

    def test_threads_using_a_class_first(self) -> None:
        body = {"__annotations__": {"a": "Any", "b": "Any"}, "a": attrs.field(), "b": attrs.field()}
        _, shared = _eq_twins(body)
        barrier = threading.Barrier(6)
        answers: list[tuple[bool, bool, int]] = []

        def use() -> None:
            barrier.wait()
            answers.append(
                (shared(1, 2) == shared(1, 2), shared(1, 2) == shared(1, 3), hash(shared(1, 2)))
            )

        threads = [threading.Thread(target=use) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(set(answers)) == 1
        assert answers[0][:2] == (True, False)

    @pytest.mark.parametrize(
        "name", ["Origin", "Layer", "Problem", "Preset", "TypeCoercion", "Provenance", "RoleFile"]
    )
    def test_layerconf_records_use_them(self, name: str) -> None:
        """The records a resolution builds share them instead of compiling their own."""
        import layerconf

        cls = getattr(layerconf, name)
        assert (cls.__eq__, cls.__hash__) == (record_eq, record_hash)
