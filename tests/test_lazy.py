"""Work deferred from import to first use gives what the eager version gave."""

from __future__ import annotations

import hashlib
import re
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerconf.core.lazy import LazyPattern, sha256_hex

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
