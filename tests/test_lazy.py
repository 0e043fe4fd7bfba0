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

from layerconf.core.lazy import LazyPattern, record_repr, sha256_hex

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
        """The records a resolution builds share it instead of compiling their own."""
        import layerconf

        assert getattr(layerconf, name).__repr__ is record_repr
