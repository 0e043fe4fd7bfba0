"""Hostile audit records, paths and key files: refused with a reason, never a traceback."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import pathlib
import socket
import stat
import tempfile
import threading
import types
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerconf import AuditError, Layer, LayerStack, Namespace, OpaqueValue, is_secret
from layerconf.audits import (
    AUDIT_FILE,
    AuditRecord,
    audit,
    diff_audits,
    flatten,
    load_audit,
    record_bytes,
    write_atomic,
    write_audit,
)
from layerconf.audits import io as io_module
from layerconf.audits import record as record_module
from layerconf.audits import validate as validate_module
from layerconf.cli import main
from layerconf.sources import files as files_module
from layerconf.sources.files import UnreadableFile, read_bounded

KEY = b"k" * 32


def stack(**values: Any) -> Namespace:
    return LayerStack([Layer.from_mapping("cli", values, kind="argv")]).resolve()


def refingerprinted(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with the fingerprint its (edited) values give: it passes the integrity check."""
    data["fingerprint"] = record_module._fingerprint(data["roles"])
    return data


def plain() -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(audit({"r": stack(x=1)})))
    return copied


def with_value(text: str) -> str:
    """The text of a record whose value of x is the JSON `text` (its fingerprint not checked)."""
    return json.dumps(plain()).replace('"x": {"value": 1', '"x": {"value": ' + text, 1)


def every_reader(path: pathlib.Path) -> Iterator[tuple[str, int]]:
    """Each command that reads a record, run on `path`: (command, exit status)."""
    key_file = path.parent / "key"
    key_file.write_bytes(KEY)
    for command in (
        ["audit", "replay", str(path)],
        ["audit", "replay", "--json", str(path)],
        ["audit", "diff", str(path), str(path)],
        ["audit", "verify", "--key-file", str(key_file), str(path)],
    ):
        yield " ".join(command[:2]), main(command)


class TestDeepRecords:
    """A record that JSON parses but nests deeply is refused as such, before it is read."""

    @pytest.mark.parametrize("shape", ["list", "mapping", "tagged list", "tagged dict"])
    def test_refused_by_every_command(
        self, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], shape: str
    ) -> None:
        depth = 400
        value = {
            "list": "[" * depth + "]" * depth,
            "mapping": '{"a":' * depth + "1" + "}" * depth,
            "tagged list": '{"$type":"list","items":[' * (depth // 2) + "]}" * (depth // 2),
            "tagged dict": '{"$type":"dict","items":[[1,' * (depth // 2)
            + "1"
            + "]]}" * (depth // 2),
        }[shape]
        data = json.loads(with_value(value))
        path = tmp_path / "deep.json"
        path.write_text(json.dumps(refingerprinted(data)))
        for command, status in every_reader(path):
            assert status == 1, command
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert err.count("nests too deeply") == 5  # diff reads the file twice

    @pytest.mark.parametrize("depth", [170, 5000])
    def test_a_dict_of_yours_is_refused_by_flatten_and_diff(self, depth: int) -> None:
        """A record's dict handed to flatten or diff_audits is checked as load_audit checks
        one: too deep, an AuditError naming where; never a RecursionError."""
        value: Any = 1
        for _ in range(depth):
            value = {"a": value}
        data = plain()
        data["roles"]["r"]["settings"]["x"]["value"] = value
        for call in (
            lambda: flatten(data),
            lambda: diff_audits(data, plain()),
            lambda: diff_audits(plain(), data),
        ):
            with pytest.raises(AuditError, match=r"roles\.r\.settings\.x\.value.* nests too deep"):
                call()

    @pytest.mark.parametrize("data", [{}, {"roles": {"r": {}}}, {"roles": []}])
    def test_a_dict_that_is_no_record_is_refused_by_flatten_and_diff(
        self, data: dict[str, Any]
    ) -> None:
        """What is not a record is an AuditError saying why, not a KeyError."""
        for call in (lambda: flatten(data), lambda: diff_audits(data, plain())):
            with pytest.raises(AuditError, match="not a readable layerconf audit record"):
                call()

    @pytest.mark.parametrize("shape", ["list", "dict", "tuple", "int keys"])
    @pytest.mark.parametrize("depth", [140, 300])
    def test_a_value_deeper_than_a_record_holds_is_written_readably(
        self, tmp_path: pathlib.Path, shape: str, depth: int
    ) -> None:
        """A value a trainer nests deeper than a record may (a runtime write) is recorded down
        to `MAX_VALUE_DEPTH` levels of JSON and below that as an object saying so: never a
        RecursionError, never a record that load_audit then refuses."""
        from layerconf.audits.codec import MAX_VALUE_DEPTH

        value: Any = 1
        for _ in range(depth):
            value = {"list": [value], "dict": {"a": value}, "tuple": (value,)}.get(
                shape, {1: value}
            )
        args = stack(x=1)
        args.x = value
        record = load_audit(write_audit({"r": args}, tmp_path))
        replayed = record.namespace("r").x
        levels = 0
        while type(replayed) is not OpaqueValue:
            replayed = next(iter(replayed.values() if type(replayed) is dict else replayed))
            levels += 1
        assert replayed.text == f"<nested more than {MAX_VALUE_DEPTH} levels>"
        per_level = {"list": 1, "dict": 1, "tuple": 2, "int keys": 3}[shape]  # of JSON
        assert levels == MAX_VALUE_DEPTH // per_level
        assert diff_audits(record, audit({"r": args})) == []

    def test_a_record_in_a_mapping_of_another_class_is_read(self) -> None:
        """A record's dict in a read-only view or an OrderedDict is checked as the dict."""
        data = plain()
        for record in (types.MappingProxyType(data), collections.OrderedDict(data)):
            assert flatten(record) == {"r/x": 1}
            assert diff_audits(record, data) == []
            assert AuditRecord.from_dict(record).roles == ("r",)
        with pytest.raises(AuditError, match="it is a value of type 'object', not an object"):
            AuditRecord.from_dict(object())  # type: ignore[arg-type]

    def test_a_record_as_deep_as_a_real_one_is_read(self) -> None:
        """A value nested 30 levels (tagged all the way) still reads back."""
        value: Any = 1
        for _ in range(30):
            value = {"k": (value,)}
        record = AuditRecord.from_dict(audit({"r": stack(x=value)}))
        assert record.namespace("r").x == value


def json_values(data: Any) -> int:
    """How many values `data` (decoded JSON) holds, its objects' keys counted."""
    if isinstance(data, dict):
        return 1 + sum(1 + json_values(item) for item in data.values())
    if isinstance(data, list):
        return 1 + sum(map(json_values, data))
    return 1


_texts = st.text(st.sampled_from('a,:{}[]" \\\n\u00e9\U0001f600'), max_size=6)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_texts, children, max_size=4),
    max_leaves=20,
)


def _counted_exactly(raw: bytes, found: int) -> None:
    """`raw` passes at a limit of `found` values and is refused, with the count, at one less."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(io_module, "MAX_RECORD_VALUES", found)
        io_module._check_values(raw, "f")
        patch.setattr(io_module, "MAX_RECORD_VALUES", found - 1)
        with pytest.raises(AuditError, match=f"its JSON holds {found:,} values"):
            io_module._check_values(raw, "f")


class TestLargeRecords:
    """A record past a limit (values, roles, entries) is refused, saying which limit, the count
    found and what to do; one within every limit reads as it always did. The limits are set low
    here: a record of a few values stands for one of millions."""

    def test_too_many_values_are_refused_before_decoding(
        self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = write_audit({"r": stack(x=1)}, tmp_path)
        found = json_values(json.loads(path.read_bytes()))
        monkeypatch.setattr(io_module, "MAX_RECORD_VALUES", found - 1)

        def never(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("decoded")

        monkeypatch.setattr(io_module.json, "loads", never)
        with pytest.raises(AuditError) as caught:
            load_audit(path)
        assert str(caught.value) == (
            f"{path}: not read as an audit record: its JSON holds {found:,} values (an "
            f"object's keys counted), more than the {found - 1:,} a record may hold (a record "
            "of a parser of 50,000 options, two roles, holds about 900,000): it is not a "
            "record layerconf wrote; if it is, raise layerconf.audits.io.MAX_RECORD_VALUES "
            "to read it"
        )

    @given(
        data=_json,
        indent=st.sampled_from([None, 0, 2]),
        encoding=st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32-le"]),
    )
    def test_the_values_are_counted_exactly(self, data: Any, indent: Any, encoding: str) -> None:
        """Whatever the strings hold (separators, quotes, escapes), the spacing and the
        encoding json.loads reads: the count is the values' and keys', one over is refused."""
        raw = json.dumps(data, indent=indent, ensure_ascii=False).encode(encoding)
        _counted_exactly(raw, json_values(data))

    def test_a_long_text_is_counted_span_by_span(self) -> None:
        """Thousands of strings holding separators, spread over spans: counted exactly."""
        data = [{"k,": ["x:[", {}, [], '"{\\', 1.5]}] * 3000
        raw = json.dumps(data, indent=1).encode()
        _counted_exactly(raw, json_values(data))

    @pytest.mark.parametrize(
        ("limit", "count", "message"),
        [
            (
                "MAX_ROLES",
                2,
                "'roles' holds 3 roles, more than the 2 a record may hold; it is not a record "
                "layerconf wrote; if it is, raise layerconf.audits.validate.MAX_ROLES to read it",
            ),
            (
                "MAX_ENTRIES",
                4,
                "its roles hold 5 entries (3 in roles.b\\x1b]0;t\\x07\\n.settings), more than "
                "the 4 a record may hold (a record of a parser of 50,000 options, two roles, "
                "holds 100,000); it is not a record layerconf wrote; if it is, raise "
                "layerconf.audits.validate.MAX_ENTRIES to read it",
            ),
        ],
    )
    def test_too_many_roles_or_entries_are_refused_by_every_reader(
        self,
        tmp_path: pathlib.Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
        limit: str,
        count: int,
        message: str,
    ) -> None:
        roles = {"a": stack(x=1), "b\x1b]0;t\x07\n": stack(x=1, y=2, z=3), "c": stack(x=1)}
        path = write_audit(roles, tmp_path)
        monkeypatch.setattr(validate_module, limit, count)
        with pytest.raises(AuditError) as caught:
            load_audit(path)
        assert str(caught.value) == f"{path}: not a readable layerconf audit record: {message}"
        with pytest.raises(AuditError, match=limit):
            AuditRecord.from_dict(audit(roles))
        for command, status in every_reader(path):
            assert status == 1, command
        assert capsys.readouterr().err.count(message) == 5  # diff reads the file twice

    @given(
        values=st.dictionaries(
            st.text(min_size=1, max_size=5).filter(lambda key: not is_secret(key)),
            _json,
            max_size=6,
        )
    )
    def test_a_record_within_every_limit_reads_as_before(self, values: dict[str, Any]) -> None:
        """A record at each limit exactly reads back as its JSON decodes, as it always did
        (its keys no secret's: a record holds "<redacted>" for those)."""
        roles = {"r": stack(**values), "s": stack(**values)}
        raw = record_bytes(audit(roles))
        data = json.loads(raw)
        with pytest.MonkeyPatch.context() as patch, tempfile_path(raw) as path:
            patch.setattr(io_module, "MAX_RECORD_VALUES", json_values(data))
            patch.setattr(validate_module, "MAX_ROLES", 2)
            patch.setattr(validate_module, "MAX_ENTRIES", entries(data))
            record = load_audit(path)
        assert record.data == data
        assert record.namespace("s") == roles["s"]


def entries(data: dict[str, Any]) -> int:
    """How many entries the roles of the record `data` hold, settings and leaves."""
    return sum(
        len(section["settings"]) + len(section["leaves"]) for section in data["roles"].values()
    )


@contextlib.contextmanager
def tempfile_path(data: bytes) -> Iterator[pathlib.Path]:
    """A file holding `data`, removed afterwards (hypothesis runs a test many times)."""
    with tempfile.TemporaryDirectory() as directory:
        path = pathlib.Path(directory, "record.json")
        path.write_bytes(data)
        yield path


def test_write_audit_into_a_file_says_it_is_no_directory(tmp_path: pathlib.Path) -> None:
    """The directory given is a file: 'File exists' was raised (mkdir's), which reads as if
    the record were there already. Now: not a directory, naming it; the file is untouched."""
    roles = {"r": LayerStack([Layer.from_mapping("cli", {"lr": 1})]).resolve()}
    file = tmp_path / "run-001"
    file.write_text("mine")
    with pytest.raises(NotADirectoryError) as raised:
        write_audit(roles, file)
    assert str(raised.value) == f"[Errno {raised.value.errno}] Not a directory: '{file}'"
    assert file.read_text() == "mine"


class TestNumbersJSONCannotHold:
    """A number out of range (1e400 reads as inf) is refused as not JSON, never a traceback."""

    def test_load_audit(self, tmp_path: pathlib.Path) -> None:
        path = tmp_path / "inf.json"
        path.write_text(with_value("1e400"))
        with pytest.raises(AuditError, match="1e400"):
            load_audit(path)

    @pytest.mark.parametrize("large", [False, True])
    def test_a_long_number_is_shown_cut(self, tmp_path: pathlib.Path, large: bool) -> None:
        """1 followed by 5,000 zeros and .5 was shown as 'the number 1000...000 (40 digits)
        is out of range', a number in range: now cut with '...', as the file is read (a
        small file, located) or past the size where it is located."""
        path = tmp_path / "long.json"
        text = with_value("1" + "0" * 5000 + ".5")
        path.write_text(text + " " * (3 * 1024 * 1024 if large else 0))
        with pytest.raises(AuditError) as raised:
            load_audit(path)
        assert f"the number 1{'0' * 36}... is out of range" in raised.value.message

    def test_from_dict(self) -> None:
        data = plain()
        data["roles"]["r"]["settings"]["x"]["value"] = float("inf")
        with pytest.raises(AuditError, match="not a JSON value"):
            AuditRecord.from_dict(data)

    def test_commands(self, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
        path = tmp_path / "inf.json"
        path.write_text(with_value("-1e999"))
        for command, status in every_reader(path):
            assert status == 1, command
        assert "Traceback" not in capsys.readouterr().err


class TestMalformedSections:
    """A section whose argv, notices or history is of the wrong shape is refused by validate."""

    @pytest.mark.parametrize(
        ("where", "bad", "message"),
        [
            ("argv", 5, r"roles\.r\.argv is not an array of strings or null"),
            ("argv", ["--x", 1], r"roles\.r\.argv is not an array of strings or null"),
            ("notices", [1], r"roles\.r\.notices\[0\] is not an object"),
            ("history", [1], r"roles\.r\.settings\.x\.history\[0\] has no 'value'"),
            ("history", 7, r"roles\.r\.settings\.x\.history is not an array"),
            ("top argv", [None], r"'argv' is not an array of strings or null"),
        ],
    )
    def test_refused(self, where: str, bad: Any, message: str) -> None:
        data = plain()
        section = data["roles"]["r"]
        if where == "history":
            section["settings"]["x"]["history"] = bad
        elif where == "top argv":
            data["argv"] = bad
        else:
            section[where] = bad
        with pytest.raises(AuditError, match=message):
            AuditRecord.from_dict(refingerprinted(data))

    def test_replay_never_a_traceback(
        self, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        data = plain()
        data["roles"]["r"]["notices"] = [1]
        data["roles"]["r"]["argv"] = 5
        path = tmp_path / "record.json"
        path.write_text(json.dumps(refingerprinted(data)))
        assert main(["audit", "replay", str(path)]) == 1
        assert "Traceback" not in capsys.readouterr().err


class TestNamesInProblems:
    """A role's or key's name, or a version, quoted in a problem is one line of at most a few
    hundred characters, whatever the record holds there: no control sequence reaches the
    terminal, no forged line follows, no megabyte name is printed."""

    FORGED = "\x1b]0;pwned\x07\nforged: error: \u202e"

    @pytest.mark.parametrize("where", ["role", "key", "version", "long key"])
    def test_quoted_on_one_line(
        self, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], where: str
    ) -> None:
        data = plain()
        name = "x" * 100_000 if where == "long key" else "n" + self.FORGED
        if where == "role":
            data["roles"][name] = {}
        elif where == "version":
            data["format"], data["layerconf"] = 99, name
        else:
            data["roles"]["r"]["settings"][name] = {}
        path = tmp_path / "record.json"
        path.write_text(json.dumps(data))
        assert main(["audit", "replay", str(path)]) == 1
        err = capsys.readouterr().err
        assert err.endswith("\n")
        assert err[:-1].isprintable()
        assert len(err) < 600
        shown = "x" * 77 + "..." if where == "long key" else "n\\x1b]0;pwned\\x07\\nforged"
        assert shown in err


class TestDuplicateKeys:
    """A key written twice in one object is refused: the text would say two things."""

    def test_a_signed_record_with_an_added_duplicate_is_refused(
        self, tmp_path: pathlib.Path
    ) -> None:
        """JSON keeps the last; a reader that keeps the first (or grep) would see 999."""
        path = write_audit({"r": stack(lr=1)}, tmp_path, key=KEY)
        text = path.read_text()
        forged = '"lr": {"value": 999, "layer": "cli", "kind": "argv"},\n    "lr": {'
        path.write_text(text.replace('"lr": {', forged, 1))
        with pytest.raises(AuditError, match="the key 'lr' appears twice in one object"):
            load_audit(path, key=KEY)


class TestSignatureShape:
    """A signature is exactly {"alg", "value"} with a 64-digit hex value; else refused."""

    @pytest.mark.parametrize(
        "signature",
        [
            {"alg": "hmac-sha256", "value": "\u00e9"},
            {"alg": "hmac-sha256", "value": "ab"},
            "extra field",
        ],
    )
    def test_refused(
        self,
        tmp_path: pathlib.Path,
        capsys: pytest.CaptureFixture[str],
        signature: dict[str, Any] | str,
    ) -> None:
        path = write_audit({"r": stack(lr=1)}, tmp_path, key=KEY)
        data = json.loads(path.read_text())
        if signature == "extra field":
            data["signature"]["signed_by"] = "alice"  # not covered by the HMAC: refused
        else:
            data["signature"] = signature
        path.write_text(json.dumps(data))
        with pytest.raises(AuditError, match="signature"):
            load_audit(path, key=KEY)
        key_file = tmp_path / "key"
        key_file.write_bytes(KEY)
        assert main(["audit", "verify", "--key-file", str(key_file), str(path)]) == 1
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert KEY.decode() not in err

    def test_reformatted_still_verifies(self, tmp_path: pathlib.Path) -> None:
        """Key order and whitespace are not part of the canonical form."""
        path = write_audit({"r": stack(lr=1)}, tmp_path, key=KEY)
        data = json.loads(path.read_text())
        path.write_text(json.dumps(dict(reversed(data.items())), indent=5, sort_keys=True))
        assert load_audit(path, key=KEY).signed


class TestStaleTemporaries:
    """What another process left in the directory never makes a write fail."""

    @pytest.mark.parametrize("pid", ["\u00b2", "\u0663", "1" * 40, "-1", "0"])
    def test_odd_pids_are_left_alone(self, tmp_path: pathlib.Path, pid: str) -> None:
        litter = tmp_path / f".{AUDIT_FILE}.{io_module._HOST}.{pid}.0a1b2c3d4e5f.tmp"
        litter.write_text("?")
        write_audit({"r": stack(lr=1)}, tmp_path)
        assert litter.exists()
        assert load_audit(tmp_path).namespace("r").lr == 1


class TestLongNames:
    """A name as long as the file system allows is written: the temporary's name fits too."""

    def test_255_bytes(self, tmp_path: pathlib.Path) -> None:
        name = "r" * 250 + ".json"
        path = write_atomic(tmp_path, name, record_bytes(audit({"r": stack(lr=1)})))
        assert path == tmp_path / name
        assert sorted(os.listdir(tmp_path)) == [name]


class TestTemporaryErrorsNameTheTarget:
    """A temporary that cannot be made is reported under the record's own path."""

    def test_dangling_link_into_a_missing_directory(
        self, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        link = tmp_path / "record.json"
        link.symlink_to("missing/x.json")
        argv = ["--rollout-batch-size", "4", "--lr", "1e-6"]
        assert main(["audit", "-o", str(link), "--", *argv]) == 2
        err = capsys.readouterr().err
        assert ".tmp" not in err
        assert f"{tmp_path / 'missing' / 'x.json'}: No such file or directory" in err


class TestChangedDuringTheWrite:
    """A path that becomes a FIFO or a link while the record is written is not replaced."""

    @pytest.mark.parametrize("becomes", ["fifo", "link to /dev/null", "directory"])
    def test_checked_again_before_the_rename(
        self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, becomes: str
    ) -> None:
        target = tmp_path / "record.json"
        target.write_text("old")
        fsync = os.fsync

        def swap(descriptor: int) -> None:  # after the first check, before the rename
            fsync(descriptor)
            if target.is_file() and not target.is_symlink():
                target.unlink()
                if becomes == "fifo":
                    os.mkfifo(target)
                elif becomes == "directory":
                    target.mkdir()
                else:
                    target.symlink_to("/dev/null")

        monkeypatch.setattr(os, "fsync", swap)
        with pytest.raises(AuditError, match="not a file"):
            write_atomic(tmp_path, "record.json", record_bytes(audit({"r": stack(lr=1)})))
        found = os.lstat(target).st_mode
        assert {
            "fifo": stat.S_ISFIFO,
            "directory": stat.S_ISDIR,
            "link to /dev/null": stat.S_ISLNK,
        }[becomes](found)
        assert sorted(os.listdir(tmp_path)) == ["record.json"]


class TestConcurrentWriters:
    """Threads writing one record: every write succeeds, no temporary is left."""

    def test_threads(self, tmp_path: pathlib.Path) -> None:
        data = record_bytes(audit({"r": stack(lr=1)}))
        errors: list[BaseException] = []

        def write() -> None:
            for _ in range(20):
                try:
                    write_atomic(tmp_path, "r.json", data)
                except BaseException as error:  # collected, asserted below
                    errors.append(error)

        threads = [threading.Thread(target=write) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert sorted(os.listdir(tmp_path)) == ["r.json"]


class TestNeverOpened:
    """A device or socket is refused from its type alone: it is never opened (a watchdog,
    a tape drive act on open)."""

    def test_a_device_is_not_opened(self, monkeypatch: pytest.MonkeyPatch) -> None:
        opened: list[str] = []
        real_open = os.open

        def spy(path: Any, *args: Any, **kwargs: Any) -> int:
            opened.append(os.fspath(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", spy)
        with pytest.raises(UnreadableFile, match="is a character device"):
            read_bounded("/dev/null")
        assert "/dev/null" not in opened

    def test_a_socket_is_named(self, tmp_path: pathlib.Path) -> None:
        path = tmp_path / "sock"
        server = socket.socket(socket.AF_UNIX)
        try:
            server.bind(str(path))
            with pytest.raises(UnreadableFile, match="is a socket, not a file"):
                read_bounded(str(path))
            with pytest.raises(AuditError, match="is a socket"):
                load_audit(path)
        finally:
            server.close()

    def test_a_fifo_still_reads(
        self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(files_module, "PIPE_WAIT", 5.0)
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        payload = record_bytes(audit({"r": stack(lr=1)}))

        def feed() -> None:
            with open(fifo, "wb") as pipe:
                pipe.write(payload)

        writer = threading.Thread(target=feed)
        writer.start()
        try:
            assert load_audit(fifo).namespace("r").lr == 1
        finally:
            writer.join()


class TestInertReading:
    """Keys and tags a record names never reach code: replays of them are plain data."""

    def test_dunder_keys_and_odd_tags(self) -> None:
        data = plain()
        settings = data["roles"]["r"]["settings"]
        settings["__class__"] = {"value": {"$type": "object", "class": "os.system", "repr": "x"}}
        settings["__dict__"] = {"value": {"$type": {"$type": "enum"}, "class": "builtins.eval"}}
        settings["p"] = {"value": {"$type": "path", "class": "__import__", "path": "os"}}
        settings["e"] = {"value": {"$type": "enum", "class": "os.system", "name": "x"}}
        settings["i"] = {"value": {"$type": "int", "hex": "0x" + "f" * 10_000}}
        record = AuditRecord.from_dict(refingerprinted(data))
        values = record.values("r", strict=False)
        assert type(values["__class__"]).__name__ == "OpaqueValue"
        assert values["i"].bit_length() == 40_000
        with pytest.raises(AuditError, match="cannot rebuild"):
            record.namespace("r")
        assert flatten(record)["r/e"] == "system.x"
        assert diff_audits(record, record) == []


class TestOriginFields:
    """An origin field or history reason of the wrong type is refused by validate, never a
    traceback from diff, replay or setting()."""

    @pytest.mark.parametrize(
        ("field", "bad"),
        [("source", [1]), ("line", "7"), ("column", True), ("rule", 3), ("kind", {})],
    )
    def test_refused(
        self,
        tmp_path: pathlib.Path,
        capsys: pytest.CaptureFixture[str],
        field: str,
        bad: Any,
    ) -> None:
        data = plain()
        data["roles"]["r"]["settings"]["x"][field] = bad
        with pytest.raises(AuditError, match=rf"roles\.r\.settings\.x\.{field} is not"):
            AuditRecord.from_dict(refingerprinted(data))
        path = tmp_path / "record.json"
        path.write_text(json.dumps(data))
        for command, status in every_reader(path):
            assert status == 1, command
        assert "Traceback" not in capsys.readouterr().err

    def test_every_origin_field_is_checked(self) -> None:
        from layerconf.audits.validate import _ORIGIN_TYPES
        from layerconf.core.records import ORIGIN_FIELDS

        assert set(_ORIGIN_TYPES) == set(ORIGIN_FIELDS)

    @pytest.mark.parametrize(
        ("item", "message"),
        [
            ({"value": 1, "reason": "x"}, r"history\[0\]\.reason is not one of"),
            ({"value": 1, "reason": "overridden", "by": 5}, r"history\[0\]\.by is not"),
            ({"value": 1, "layer": "cli", "line": "3"}, r"history\[0\]\.line is not"),
        ],
    )
    def test_history(self, item: dict[str, Any], message: str) -> None:
        data = plain()
        data["roles"]["r"]["settings"]["x"]["history"] = [item]
        with pytest.raises(AuditError, match=message):
            AuditRecord.from_dict(refingerprinted(data))


class TestFlattenOfOddTags:
    """flatten() shows a tagged value missing its fields as its JSON, never a KeyError."""

    @pytest.mark.parametrize(
        "value",
        [
            {"$type": "enum"},
            {"$type": "path"},
            {"$type": "object", "hex": "x"},
            {"$type": "frozenset", "items": 2.5},
            {"$type": "dict", "items": [[1]]},
            {"$type": "dict", "items": [1]},
        ],
    )
    def test_shown_as_json(self, value: dict[str, Any]) -> None:
        data = plain()
        data["roles"]["r"]["settings"]["x"]["value"] = value
        flat = flatten(AuditRecord.from_dict(refingerprinted(data)))
        assert json.loads(flat["r/x"]) == value


class TestValidationCoversTheFormat:
    """What validate checks follows the records' own fields."""

    def test_every_origin_field_is_type_checked(self) -> None:
        from layerconf.audits.validate import _ORIGIN_TYPES
        from layerconf.core.records import ORIGIN_FIELDS

        assert tuple(_ORIGIN_TYPES) == ORIGIN_FIELDS

    @pytest.mark.parametrize(
        "notice",
        [{}, {"message": 1}, {"message": "m", "severity": "bogus"}, {"message": "m", "line": "7"}],
    )
    def test_a_bad_notice_is_refused(self, notice: dict[str, Any]) -> None:
        data = audit({"r": LayerStack([Layer.from_mapping("cli", {"lr": 1})]).resolve()})
        data["roles"]["r"]["notices"] = [notice]
        with pytest.raises(AuditError, match=r"roles\.r\.notices\[0\]"):
            AuditRecord.from_dict(data)

    def test_a_history_item_without_a_reason_is_refused(self) -> None:
        stack = LayerStack(
            [Layer.from_mapping("d", {"lr": 1}), Layer.from_mapping("cli", {"lr": 2})]
        )
        data = audit({"r": stack.resolve()})
        del data["roles"]["r"]["settings"]["lr"]["history"][0]["reason"]
        with pytest.raises(AuditError, match=r"history\[0\]\.reason is not one of"):
            AuditRecord.from_dict(data, verify=False)
