"""Hostile audit records, paths and key files: refused with a reason, never a traceback."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

from layerconf import AuditError, Layer, LayerStack, Namespace
from layerconf.audits import (
    audit,
    load_audit,
    write_audit,
)
from layerconf.audits import record as record_module
from layerconf.cli import main

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
