"""flatten() for experiment trackers: names MLflow and W&B accept, and real round trips.

The round trips need the `trackers` extra (``pip install -e ".[test,trackers]"``, which CI
installs on its default Python); without it they skip, saying so.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from layerconf import LayerStack, audit, flatten, load_profile, resolve_roles
from layerconf.core.records import Layer

ROOT = Path(__file__).parent.parent
PPO_ARGV = (ROOT / "examples" / "ppo_argv.txt").read_text().splitlines()
SECRET = "wandb-0123456789abcdef-planted"
ARGV = [*PPO_ARGV, "--use-wandb", "--wandb-key", SECRET]

# MLflow 3's rules for a param name (mlflow/utils/validation.py), the portable ones (Windows
# refuses ':'): these characters, a path that normalizes to itself, at most 250 characters.
MLFLOW_NAME = re.compile(r"[/\w.\- ]*", re.ASCII)


def legal(name: str) -> bool:
    """A name MLflow stores and W&B keeps as written (W&B strips '-' at either end of a config
    key, and hides keys that start with '_')."""
    normal = posixpath.normpath(name)
    return (
        MLFLOW_NAME.fullmatch(name) is not None
        and normal == name
        and normal != "."
        and not normal.startswith(("..", "/"))
        and len(name) <= 250
        and name.strip("-") == name
        and not name.startswith("_")
    )


def record_of(**values: Any) -> Any:
    return audit({"r": LayerStack([Layer.from_mapping("cli", values, kind="argv")]).resolve()})


@pytest.fixture(scope="module")
def real_record() -> Any:
    """The bundled example's PPO launch, with a W&B key planted on its command line."""
    cwd = os.getcwd()
    os.chdir(ROOT)  # the launch names its role file from the repository's root
    try:
        return audit(resolve_roles(load_profile(), ARGV))
    finally:
        os.chdir(cwd)


HOSTILE_KEYS = [
    "a[1/2]",
    "x/y",
    "../up",
    "..",
    ".",
    "",
    "-dash-",
    "_hidden",
    "colon:key",
    "ünïcode",
    "tab\there",
    "k" * 300,
    "sp ace",
]


class TestNames:
    """Every name flatten gives is legal for MLflow and W&B, and distinct keys stay distinct."""

    def test_real_record(self, real_record: Any) -> None:
        """The real launch's 2,000-odd names are all legal, even split ones."""
        for max_length in (None, 10):
            flat = flatten(real_record, max_length=max_length)
            assert [name for name in flat if not legal(name)] == []

    def test_legal_names_unchanged(self) -> None:
        """A name that is legal already is kept as written."""
        flat = flatten(record_of(lr=1, opt={"beta-2": 0.9, "a b": 1}))
        assert flat == {"r/lr": 1, "r/opt.beta-2": 0.9, "r/opt.a b": 1}

    @pytest.mark.parametrize("key", HOSTILE_KEYS)
    def test_hostile_key(self, key: str) -> None:
        """A key with characters, paths or a length MLflow or W&B refuse gets a legal name."""
        top = {key: "v"} if key else {}  # a layer's own keys are never empty
        flat = flatten(record_of(**top, nested={key: 1}))
        assert sorted(flat.values(), key=str) == sorted([1, *top.values()], key=str)
        assert [name for name in flat if not legal(name)] == []

    def test_hostile_role(self) -> None:
        """A role name is escaped as a key is."""
        namespace = LayerStack([Layer.from_mapping("cli", {"lr": 1}, kind="argv")]).resolve()
        flat = flatten(audit({"_r/..": namespace, "-": namespace}))
        assert len(flat) == 2
        assert all(legal(name) for name in flat)

    def test_distinct_keys_distinct_names(self) -> None:
        """Escaping never merges two keys: each of many look-alikes keeps its own name."""
        keys = [
            *HOSTILE_KEYS[:5],
            *HOSTILE_KEYS[6:],
            "a_1_2_",
            "a-1-2-",
            "x_y",
            "colon_key",
            "k" * 299,
        ]
        flat = flatten(record_of(**{key: index for index, key in enumerate(keys)}))
        assert sorted(flat.values()) == list(range(len(keys)))

    def test_split_parts(self) -> None:
        """A long value is split into legal parts, in order, that concatenate back."""
        long = "x" * 6000 + "y" * 10
        flat = flatten(record_of(long=long, short="s"), max_length=6000)
        assert flat == {"r/long--1-of-2": "x" * 6000, "r/long--2-of-2": "y" * 10, "r/short": "s"}
        long_key = {"k" * 300: "z" * 25}
        parts = flatten(record_of(**long_key), max_length=10)
        assert len(parts) == 3
        assert all(legal(name) for name in parts)
        assert "".join(parts.values()) == "z" * 25


# ---------------------------------------------------------------------------------------------
# Real trackers (the `trackers` extra)


def stored_text(directory: Path) -> Iterator[tuple[Path, bytes]]:
    """Every file a tracker wrote under `directory`, as bytes."""
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            yield path, path.read_bytes()


def assert_no_secret(directory: Path) -> None:
    files = list(stored_text(directory))
    assert files, f"the tracker stored nothing under {directory}"
    leaks = [str(path) for path, data in files if SECRET.encode() in data]
    assert leaks == []


class TestMLflow:
    """MLflow with a local file store: every param logged, read back, no secret stored."""

    def test_round_trip(
        self, real_record: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        mlflow = pytest.importorskip("mlflow", reason="the trackers extra is not installed")
        # MLflow 3 refuses a file store unless told (it prefers a database).
        monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        monkeypatch.setattr("sys.argv", ["train.py", *ARGV])  # as in the trainer
        monkeypatch.chdir(tmp_path)
        store = tmp_path / "mlruns"
        params = flatten(real_record, max_length=6000)
        mlflow.set_tracking_uri(store.as_uri())
        try:
            with mlflow.start_run() as run:
                mlflow.log_params(params)
            read = mlflow.get_run(run.info.run_id).data.params
        finally:
            mlflow.set_tracking_uri(None)
        assert read == {name: str(value) for name, value in params.items()}
        assert read["critic/lr"] == "1e-05"
        assert read["critic/wandb_key"] == "<redacted>"
        assert_no_secret(store)


def wandb_config(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The config an offline W&B run file holds: its records (LevelDB log framing: 32 KiB
    blocks, each record a 7-byte header and a payload, maybe in pieces), read as W&B's own
    protobuf `Record` messages. Also the kinds of the records, in order."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records: list[bytes] = []
    position, pending = 7, b""
    while position + 7 <= len(data):
        left = 32768 - position % 32768
        if left < 7:  # a block's tail too short for a header is padding
            position += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[position : position + 7])
        if kind == 0 and length == 0:
            break
        pending += data[position + 7 : position + 7 + length]
        position += 7 + length
        if kind in (1, 4):  # a whole record, or the last piece of one
            records.append(pending)
            pending = b""
    config: dict[str, Any] = {}
    kinds: list[str] = []
    for raw in records:
        record = wandb_internal_pb2.Record()
        record.ParseFromString(raw)
        kind_name = record.WhichOneof("record_type")
        kinds.append(str(kind_name))
        items = record.run.config.update if kind_name == "run" else record.config.update
        if kind_name in ("run", "config"):
            for item in items:
                config[item.key] = json.loads(item.value_json)
    return config, kinds


class TestWandb:
    """W&B offline, with the settings docs/audit.md recommends: config read back, no secret."""

    def test_round_trip(
        self, real_record: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        wandb = pytest.importorskip("wandb", reason="the trackers extra is not installed")
        for variable in list(os.environ):
            if variable.startswith("WANDB_"):
                monkeypatch.delenv(variable)
        monkeypatch.setenv("WANDB_MODE", "offline")
        monkeypatch.setenv("WANDB_SILENT", "true")
        monkeypatch.setattr("sys.argv", ["train.py", *ARGV])  # as in the trainer
        monkeypatch.chdir(tmp_path)
        config = {**flatten(real_record), "layerconf_fingerprint": real_record["fingerprint"]}
        # docs/audit.md's settings: W&B would otherwise keep the command line (the W&B key on it
        # included) in the run's metadata.
        run = wandb.init(
            dir=tmp_path,
            project="layerconf-test",
            config=config,
            settings=wandb.Settings(x_disable_meta=True),
        )
        try:
            assert dict(run.config) == config
        finally:
            run.finish()
            wandb.teardown()  # W&B's service process writes the run file: wait until it has
        [run_file] = (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")
        stored, kinds = wandb_config(run_file)
        read = {name: value for name, value in stored.items() if name != "_wandb"}
        assert read == json.loads(json.dumps(config)), (run_file.stat().st_size, kinds)
        assert read["critic/wandb_key"] == "<redacted>"
        assert_no_secret(tmp_path)
