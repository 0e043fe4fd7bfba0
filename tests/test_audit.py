"""Audit records: every value with its origin as JSON, replayable, fingerprinted, never a secret."""

from __future__ import annotations

import argparse
import collections
import copy
import enum
import gc
import hashlib
import inspect
import json
import math
import os
import pathlib
import pickle
import re
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import types
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerconf import (
    PLAIN,
    AuditError,
    Layer,
    LayerStack,
    Namespace,
    Reason,
    UnknownKeyError,
    explain,
    load_profile,
    notices,
    parse_args,
    redacted_argv,
    resolve_roles,
)
from layerconf.audits import (
    AUDIT_FILE,
    FORMAT,
    AuditRecord,
    OpaqueValue,
    audit,
    diff_audits,
    flatten,
    load_audit,
    record_bytes,
    write_atomic,
    write_audit,
)
from layerconf.audits import _argv as argv_module
from layerconf.audits import io as io_module
from layerconf.audits import record as audit_record_module
from layerconf.audits import record as record_module
from layerconf.audits.codec import (
    Encoder,
    canonical,
    canonical_chunks,
    canonical_encoder,
    compact,
)
from layerconf.audits.layout import dumps
from layerconf.audits.record import record_of
from layerconf.audits.signing import sign
from layerconf.audits.texts import WAITING, Texts, known_history
from layerconf.core.explain import lone_settings, plain_settings
from layerconf.core.namespace import provenance_of
from layerconf.core.secrets import REDACTED, SECRETS, SecretPolicy, is_secret, redact, redact_argv
from layerconf.profiles.megatron_slime import AttnBackend, CudaGraphModule

from .strategies import layer_lists, policies

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
ARGV = (FIXTURES / "slime_ppo_argv.txt").read_text().splitlines()
SECRET = "wandb-0123456789abcdef-secret"
LITTER = re.compile(r"^\.layerconf-audit\.json\..+\.tmp$")


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return load_profile()


@pytest.fixture
def in_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real argv names its role file relatively: resolve it from the fixtures directory."""
    monkeypatch.chdir(FIXTURES)


def ppo(parser: argparse.ArgumentParser, *extra: str) -> dict[str, Namespace]:
    """The real slime PPO launch (cwd must be the fixtures directory), plus `extra` tokens."""
    return resolve_roles(parser, [*ARGV, *extra])


def stack(**values: Any) -> Namespace:
    return LayerStack([Layer.from_mapping("cli", values, kind="argv")]).resolve()


def identical(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (1, 1.0 and True differ; NaN is NaN)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or a == b
    if type(a) is dict:
        return a.keys() == b.keys() and all(identical(a[k], b[k]) for k in a)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def texts(tmp_path: pathlib.Path, roles: dict[str, Namespace]) -> Iterator[str]:
    """Every text an audit of `roles` produces: the record, the file, flatten, diff, argv."""
    record = audit(roles)
    yield json.dumps(record)
    path = write_audit(roles, tmp_path)
    yield path.read_text()
    loaded = load_audit(path)
    yield json.dumps(flatten(record))
    yield json.dumps(flatten(loaded, max_length=10))
    yield "\n".join(str(change) for change in diff_audits(record, audit({"x": stack()})))
    for role in loaded.roles:
        yield repr(loaded.values(role, strict=False))
        try:
            replayed = loaded.namespace(role)
        except AuditError as error:  # a value scrubbed of a secret's text is not replayed
            yield str(error)
            continue
        yield repr(vars(replayed))
        yield repr(provenance_of(replayed))
        yield str(loaded.setting(role, "wandb_key"))


class TestRecord:
    """audit() writes down every key of every role with its value and origin."""

    def test_top_level_fields(self, parser: argparse.ArgumentParser, in_fixtures: None) -> None:
        """Format, version, argv, role files with their sha256, roles, fingerprint."""
        import layerconf

        roles = ppo(parser)
        record = audit(roles)
        assert list(record) == ["format", "layerconf", "fingerprint", "argv", "files", "roles"]
        assert record["format"] == FORMAT == 2
        assert record["layerconf"] == layerconf.__version__
        assert record["argv"] == ARGV
        digest = hashlib.sha256((FIXTURES / "slime_ppo_megatron.yaml").read_bytes()).hexdigest()
        assert record["files"] == {"slime_ppo_megatron.yaml": digest}
        assert list(record["roles"]) == ["actor", "critic"]
        assert re.fullmatch(r"[0-9a-f]{64}", record["fingerprint"])
        json.dumps(record, allow_nan=False)  # JSON as it is

    def test_every_key_with_its_origin(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        """Each key has its value, layer and location; the history says what it shadowed."""
        roles = ppo(parser)
        record = audit(roles)
        for role, namespace in roles.items():
            assert list(record["roles"][role]["settings"]) == list(vars(namespace))
        critic = record["roles"]["critic"]["settings"]
        assert critic["lr"] == {
            "value": 1e-05,
            "layer": "role-config",
            "kind": "file",
            "source": "slime_ppo_megatron.yaml",
            "line": 6,
            "column": 11,
            "label": "default",
            "history": [
                {
                    "value": "1e-5",
                    "reason": "converted",
                    "by": "type-coercion",
                    "layer": "role-config",
                    "kind": "file",
                    "source": "slime_ppo_megatron.yaml",
                    "line": 6,
                    "column": 11,
                    "label": "default",
                },
                {
                    "value": 1e-06,
                    "reason": "overridden",
                    "layer": "cli",
                    "kind": "argv",
                    "argv_index": 31,
                    "token": "--lr",
                },
                {"value": 1e-06, "reason": "overridden", "layer": "default", "kind": "default"},
            ],
        }
        assert critic["seed"] == {"value": 1234, "layer": "default", "kind": "default"}
        assert critic["kl_coef"]["layer"] == "rule:critic-defaults"
        assert critic["kl_coef"]["rule"] == "critic-defaults"

    def test_layers_events_and_notices(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        """The role's layers, what the rules did, and every notice (unknown tokens here)."""
        roles = ppo(parser)
        critic = audit(roles)["roles"]["critic"]
        assert [layer["name"] for layer in critic["layers"]] == ["default", "cli", "role-config"]
        actions = {(event["key"], event["action"], event["rule"]) for event in critic["events"]}
        assert ("lr", "converted", "type-coercion") in actions
        assert ("kl_coef", "set", "critic-defaults") in actions
        assert [notice["argv_index"] for notice in critic["notices"]] == [
            problem.argv_index for problem in notices(roles["critic"])
        ]
        assert critic["notices"][0]["severity"] == "info"

    def test_an_ignored_key_is_an_event_and_a_notice(
        self, parser: argparse.ArgumentParser, tmp_path: pathlib.Path
    ) -> None:
        """A resource key the rules dropped is recorded as dropped, with its warning."""
        role_file = tmp_path / "m.yaml"
        role_file.write_text("megatron:\n  - role: critic\n    overrides:\n      num_nodes: 4\n")
        argv = [a if a != "slime_ppo_megatron.yaml" else str(role_file) for a in ARGV]
        with pytest.warns(Warning, match="'num_nodes' is ignored"):
            roles = resolve_roles(parser, argv)
        critic = audit(roles)["roles"]["critic"]
        dropped = [event for event in critic["events"] if event["action"] == "ignored"]
        assert dropped == [
            {
                "key": "num_nodes",
                "action": "ignored",
                "rule": "ignored-keys",
                "value": 4,
                "layer": "role-config",
                "kind": "file",
                "source": str(role_file),
                "line": 4,
                "column": 18,
            }
        ]
        assert any(
            "num_nodes" in notice["message"] and notice["severity"] == "warning"
            for notice in critic["notices"]
        )

    def test_a_namespace_without_provenance(self) -> None:
        """A plain argparse namespace is recorded with its values and no origins."""
        record = audit({"main": argparse.Namespace(lr=1e-5, tags=("a",))})
        assert record["argv"] is None
        assert record["roles"]["main"]["settings"] == {
            "lr": {"value": 1e-05},
            "tags": {"value": {"$type": "tuple", "items": ["a"]}},
        }

    def test_wrong_input_is_refused_clearly(self) -> None:
        """One namespace instead of a mapping of roles says how to call it."""
        with pytest.raises(TypeError, match=r"audit\(\{'actor': args\}\)"):
            audit(stack(lr=1))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="role 'actor'"):
            audit({"actor": {"lr": 1}})  # type: ignore[dict-item]


def _explained(namespace: Namespace, key: str) -> tuple[Any, ...]:
    setting = explain(namespace, key)
    return (
        setting.origin,
        [(h.value, h.origin, h.reason, h.by) for h in setting.history],
    )


def _bulk(namespace: Namespace) -> dict[str, tuple[Any, ...]]:
    """What an audit record takes for each key: the walk's answer, else explain's."""
    found = {}
    walked = plain_settings(namespace)
    for key in vars(namespace):
        plain = walked.get(key)
        if plain is not None:  # the walk's answer, without a Setting
            shadowed = [(v, o, Reason.OVERRIDDEN, None) for v, o in plain.shadowed]
            found[key] = (plain.origin, shadowed)
        else:
            setting = explain(namespace, key)
            history = [(h.value, h.origin, h.reason, h.by) for h in setting.history]
            found[key] = (setting.origin, history)
    return found


class TestBulkOrigins:
    """The bulk walk over the layers says exactly what explain says, key by key."""

    def test_real_fixture(self, parser: argparse.ArgumentParser, in_fixtures: None) -> None:
        """Every key of both roles of the real PPO launch."""
        for namespace in ppo(parser).values():
            bulk = _bulk(namespace)
            assert bulk == {key: _explained(namespace, key) for key in vars(namespace)}

    @settings(deadline=None)  # the first example pays for lazy imports on a cold machine
    @given(layer_lists(), policies)
    def test_generated_stacks(self, layers: list[Layer], merge: dict[str, Any]) -> None:
        """Any stack of layers, with any merge policies."""
        namespace = LayerStack(layers, policies=merge).resolve()
        assert _bulk(namespace) == {key: _explained(namespace, key) for key in vars(namespace)}

    def test_after_resolution(self, parser: argparse.ArgumentParser, in_fixtures: None) -> None:
        """An assignment (with its line) and a change behind the namespace's back."""
        namespace = copy.deepcopy(ppo(parser)["critic"])
        namespace.lr = 3e-6
        line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
        vars(namespace)["seed"] = 99
        assert _bulk(namespace) == {key: _explained(namespace, key) for key in vars(namespace)}
        entry = audit({"critic": namespace})["roles"]["critic"]["settings"]
        assert (entry["lr"]["layer"], entry["lr"]["source"], entry["lr"]["line"]) == (
            "runtime",
            __file__,
            line,
        )
        assert entry["seed"]["layer"] == "runtime"
        assert entry["seed"]["history"][0]["value"] == 1234

    def test_a_small_layer_over_a_large_one(self) -> None:
        """A later layer of a few keys (the walk takes them from the layer, not from every
        key), one of them deleted after resolution and one set again: explain's answers."""
        base = Layer.from_mapping("defaults", {f"k{i}": i for i in range(40)})
        cli = Layer.from_mapping("cli", {"k3": 30, "k7": 70, "extra": "x", "gone": 1}, kind="argv")
        namespace = LayerStack([base, cli]).resolve()
        del namespace.gone
        namespace.k7 = 71
        bulk = _bulk(namespace)
        assert bulk == {key: _explained(namespace, key) for key in vars(namespace)}
        assert set(plain_settings(namespace)) == set(vars(namespace)) - {"k7"}

    def test_changes_after_a_first_walk(self) -> None:
        """The walk of the layers is kept with the provenance after a first audit: a key
        deleted, written, changed behind the namespace's back (to an equal value, the same
        type or another, to another value) afterwards gets explain's answer all the same."""
        base = Layer.from_mapping("defaults", {"big": 10**30, **{f"k{i}": i for i in range(40)}})
        cli = Layer.from_mapping("cli", {"k3": 30, "k7": 70, "k9": 90}, kind="argv")
        namespace = LayerStack([base, cli]).resolve()
        assert set(plain_settings(namespace)) == set(vars(namespace))  # the walk, kept
        first = audit({"main": namespace})
        del namespace.k1, namespace.k3
        namespace.k7 = 71
        vars(namespace)["big"] = int(str(10**30))  # another object, the same value
        vars(namespace)["k2"] = 2.0  # equal, another type: no longer the layer's value
        vars(namespace)["k4"] = 44
        vars(namespace)["k9"] = 90.0
        bulk = _bulk(namespace)
        assert bulk == {key: _explained(namespace, key) for key in vars(namespace)}
        assert set(plain_settings(namespace)) == set(vars(namespace)) - {"k2", "k4", "k7", "k9"}
        again = audit({"main": namespace})["roles"]["main"]["settings"]
        assert set(again) == set(first["roles"]["main"]["settings"]) - {"k1", "k3"}
        assert again["k4"]["layer"] == "runtime"
        assert again["k7"]["layer"] == "runtime"

    def test_the_walk_is_kept_apart_from_the_namespace(self) -> None:
        """A namespace keeps no walk: pickled after an audit it is the bytes it was before,
        its deep size is the same; the walk is kept apart, dropped with its provenance."""
        from layerconf.core import explain as explain_module

        base = Layer.from_mapping("defaults", {f"k{i}": i for i in range(40)})
        cli = Layer.from_mapping("cli", {"k3": 30}, kind="argv")
        namespace = LayerStack([base, cli]).resolve()
        before = pickle.dumps(namespace)
        audit({"main": namespace})
        key = id(provenance_of(namespace))
        assert explain_module._WALKS[key][0]() is provenance_of(namespace)
        assert pickle.dumps(namespace) == before
        loaded = pickle.loads(before)
        assert _bulk(loaded) == _bulk(namespace)
        del namespace
        gc.collect()
        assert key not in explain_module._WALKS

    def test_at_most_a_few_walks_are_kept(self) -> None:
        from layerconf.core import explain as explain_module

        base = Layer.from_mapping("defaults", {f"k{i}": i for i in range(10)})
        kept = [LayerStack([base]).resolve() for _ in range(3 * explain_module._WALKS_KEPT)]
        for namespace in kept:
            audit({"main": namespace})
            assert len(explain_module._WALKS) <= explain_module._WALKS_KEPT

    @settings(deadline=None)
    @given(layer_lists(), policies, st.data())
    def test_generated_changes_after_a_first_walk(
        self, layers: list[Layer], merge: dict[str, Any], data: st.DataObject
    ) -> None:
        """Any stack of layers, walked once, then keys deleted and set (as writes, and
        behind the namespace's back): the walk's answers are still explain's."""
        namespace = LayerStack(layers, policies=merge).resolve()
        plain_settings(namespace)
        keys = sorted(vars(namespace))
        if keys:
            changes = st.tuples(st.sampled_from(keys), st.sampled_from(["del", "set", "raw"]))
            for key, change in data.draw(st.lists(changes, max_size=6)):
                if change == "del":
                    vars(namespace).pop(key, None)
                elif change == "set":
                    setattr(namespace, key, data.draw(st.integers(0, 3)))
                else:
                    vars(namespace)[key] = data.draw(st.sampled_from([0, 1, 1.0, True, "x"]))
        assert _bulk(namespace) == {key: _explained(namespace, key) for key in vars(namespace)}

    def test_records_are_those_of_explain(
        self, parser: argparse.ArgumentParser, in_fixtures: None, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The walk's entries are byte for byte those explain's settings give."""
        roles = ppo(parser)
        roles["critic"].lr = 3e-6  # one key the walk leaves to explain
        walked = record_bytes(audit(roles, key=b"k"))
        monkeypatch.setattr(record_module, "plain_groups", lambda namespace, values: [])
        assert record_bytes(audit(roles, key=b"k")) == walked

    @settings(deadline=None)
    @given(layer_lists(), policies)
    def test_generated_records_are_those_of_explain(
        self, layers: list[Layer], merge: dict[str, Any]
    ) -> None:
        """Any stack of layers, with any merge policies: the same record both ways."""
        roles = {"main": LayerStack(layers, policies=merge).resolve()}
        walked = record_bytes(audit(roles, key=b"k"))
        saved = record_module.plain_groups
        record_module.plain_groups = lambda namespace, values: []  # type: ignore[assignment]
        try:
            assert record_bytes(audit(roles, key=b"k")) == walked
        finally:
            record_module.plain_groups = saved


def _lone(namespace: Namespace) -> dict[str, tuple[Any, ...]]:
    """The keys `lone_settings` answers, with its answer, and explain's for each."""
    values = dict(vars(namespace))
    walked = plain_settings(namespace, values)
    found = lone_settings(namespace, values, [key for key in values if key not in walked])
    return {key: ((plain.origin, []), _explained(namespace, key)) for key, plain in found.items()}


class TestLoneSettings:
    """The lists and dicts one layer alone set are answered from that layer, as explain would."""

    def test_real_fixture(self, parser: argparse.ArgumentParser, in_fixtures: None) -> None:
        """The empty lists and dicts of the real launch, not the list the command line set."""
        for namespace in ppo(parser).values():
            found = _lone(namespace)
            assert {"offload_modules", "train_env_vars", "cp_comm_type"} <= set(found)
            assert "eval_prompt_data" not in found  # the command line and a default: merged
            for key, (lone, explained) in found.items():
                assert lone == explained, key

    @settings(deadline=None)
    @given(layer_lists(), policies)
    def test_generated_stacks(self, layers: list[Layer], merge: dict[str, Any]) -> None:
        """Any stack of layers, with any merge policies: explain says the same."""
        namespace = LayerStack(layers, policies=merge).resolve()
        for key, (lone, explained) in _lone(namespace).items():
            assert lone == explained, key

    def test_changed_written_or_touched_keys_are_left_to_explain(self) -> None:
        """A list changed in place, a list assigned, a value a rule set: explain's to answer."""
        namespace = LayerStack(
            [Layer.from_mapping("defaults", {"a": [1], "b": [2], "c": {"k": 1}, "d": [[1]]})]
        ).resolve()
        assert set(_lone(namespace)) == {"a", "b", "c"}  # "d" holds a list: its copy differs
        namespace.a.append(5)
        namespace.b = [2]
        assert set(_lone(namespace)) == {"c"}

    def test_records_are_those_of_explain(
        self, parser: argparse.ArgumentParser, in_fixtures: None, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without the walk and without lone_settings: the same record, byte for byte."""
        roles = ppo(parser)
        roles["critic"].lr = 3e-6
        walked = record_bytes(audit(roles, key=b"k"))
        monkeypatch.setattr(record_module, "plain_groups", lambda namespace, values: [])
        monkeypatch.setattr(record_module, "lone_settings", lambda namespace, values, keys: {})
        assert record_bytes(audit(roles, key=b"k")) == walked

    @settings(deadline=None)
    @given(layer_lists(), policies)
    def test_generated_records_are_those_of_explain(
        self, layers: list[Layer], merge: dict[str, Any]
    ) -> None:
        """Any stack of layers, with any merge policies: the same record both ways."""
        roles = {"main": LayerStack(layers, policies=merge).resolve()}
        walked = record_bytes(audit(roles, key=b"k"))
        saved = record_module.plain_groups, record_module.lone_settings
        record_module.plain_groups = lambda namespace, values: []  # type: ignore[assignment]
        record_module.lone_settings = lambda namespace, values, keys: {}  # type: ignore[assignment]
        try:
            assert record_bytes(audit(roles, key=b"k")) == walked
        finally:
            record_module.plain_groups, record_module.lone_settings = saved


class TestSecretsInTheWalk:
    """A secret key in the walk's bulk: unset (None) it stays there, set it is redacted; the
    record and the file are byte for byte those of explain's way."""

    @pytest.mark.parametrize("token", [None, "sekrit-abcdef-123", "", 0])
    def test_records_and_files(
        self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, token: Any
    ) -> None:
        values = {"lr": 1e-5, "hf_token": token, "wandb_key": None, "seed": 1, "name": "x"}
        roles = {
            "actor": LayerStack([Layer.from_mapping("defaults", values)]).resolve(),
            "critic": LayerStack(
                [Layer.from_mapping("defaults", values), Layer.from_mapping("mine", {"seed": 2})]
            ).resolve(),
        }
        record = audit(roles)
        assert record["roles"]["actor"]["settings"]["wandb_key"]["value"] is None
        shown = record["roles"]["actor"]["settings"]["hf_token"]["value"]
        assert shown == (None if token is None else REDACTED)
        written = write_audit(roles, tmp_path / "fast").read_bytes()
        assert written == record_bytes(record)
        monkeypatch.setattr(record_module, "plain_groups", lambda namespace, values: [])
        monkeypatch.setattr(record_module, "lone_settings", lambda namespace, values, keys: {})
        assert record_bytes(audit(roles)) == written
        assert write_audit(roles, tmp_path / "slow").read_bytes() == written


class TestEntriesWithAHistory:
    """The entries of keys set over other values (`bulk.history_entries`): those of plain
    scalars made in one loop, the others (a secret's, a URL's with a password, an enum, a key
    set three times) one by one: the record and the file are byte for byte explain's way's."""

    @pytest.mark.parametrize(
        ("token", "url"),
        [("sekrit-token-123", "https://u:sekrit-password-123@h/x"), ("abc", "https://h/x")],
        ids=["secrets found", "nothing scrubbed"],
    )
    def test_records_and_files(
        self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, token: str, url: str
    ) -> None:
        defaults = {
            "lr": 1e-5,
            "seed": 1,
            "name": "x",
            "on": False,
            "none": None,
            "hf_token": "",
            "url": "",
            "level": AttnBackend.auto,
            "n": 0,
            "big": 0,
        }
        given = {
            "lr": 2e-5,
            "seed": 2,
            "name": "y",
            "on": True,
            "none": 1,
            "hf_token": token,
            "url": url,
            "level": AttnBackend.flash,
            "n": 1,
            "big": 2**70000,  # no text: longer than an int JSON holds
        }
        roles = {
            "r": LayerStack(
                [
                    Layer.from_mapping("defaults", defaults),
                    Layer.from_mapping("cli", given, kind="argv"),
                    Layer.from_mapping("file", {"n": 2}),
                ]
            ).resolve()
        }
        record = audit(roles, key=b"k")  # (a key: the scrubbed values' digests compare)
        settings = record["roles"]["r"]["settings"]
        assert settings["lr"]["history"] == [
            {"value": 1e-05, "layer": "defaults", "kind": "mapping", "reason": "overridden"}
        ]
        assert settings["hf_token"]["value"] == REDACTED
        assert [item["value"] for item in settings["n"]["history"]] == [1, 0]
        expected = record_bytes(sign(record, b"k"))
        for directory in ("first", "again"):  # (the lines kept by the first, for the second)
            assert write_audit(roles, tmp_path / directory, key=b"k").read_bytes() == expected
        assert b"sekrit" not in expected
        if token == "abc":  # nothing scrubbed: unsigned, the entries with a line known wait
            unsigned = record_bytes(audit(roles))
            for directory in ("unsigned", "unsigned-again"):
                assert write_audit(roles, tmp_path / directory).read_bytes() == unsigned
        monkeypatch.setattr(record_module, "plain_groups", lambda namespace, values: [])
        assert audit(roles, key=b"k") == record


class TestCommandLineKept:
    """The last command line the secret policy found nothing to redact in is kept with its
    policy (`audits._argv._redacted_argv`) and given back as `redact_argv` gives it; one that holds
    a secret, and one another policy reads, are redacted again."""

    def test_kept_and_given_back(
        self, parser: argparse.ArgumentParser, in_fixtures: None, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        roles = ppo(parser)
        command_line = provenance_of(roles["actor"]).inputs["argv"]
        first = audit(roles)
        kept = argv_module._CLEAN_ARGV[0]
        assert kept is not None
        assert kept[0] is command_line
        assert kept[1] is SECRETS
        monkeypatch.setattr(argv_module, "redact_argv", None)  # not asked again
        assert audit(roles)["argv"] == first["argv"] == redact_argv(command_line)[0]

    def test_a_secret_is_redacted_every_time(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        roles = ppo(parser, "--wandb-key", SECRET)
        command_line = provenance_of(roles["actor"]).inputs["argv"]
        for _ in range(2):
            record = audit(roles)
            assert SECRET not in json.dumps(record)
            assert record["argv"] == redact_argv(command_line)[0]
            kept = argv_module._CLEAN_ARGV[0]
            assert kept is None or kept[0] is not command_line

    def test_another_policy_looks_again(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        roles = ppo(parser)
        shown = audit(roles)["argv"]
        policy = SECRETS.extend(names=["hf_checkpoint"])
        argv = audit(roles, secrets=policy)["argv"]
        assert argv[argv.index("--hf-checkpoint") + 1] == REDACTED
        assert audit(roles)["argv"] == shown
        assert shown[shown.index("--hf-checkpoint") + 1] != REDACTED


class TestCommandLineUnderAnotherPolicy:
    """A record's policy that names more secrets than its resolution's hides their values in
    the kept command line however the flag was spelt: the provenance says which token set
    each key (the parser that could tell an abbreviation is gone by then)."""

    POLICY = SECRETS.extend(names=["my_cred"])

    def roles(self, *argv: str) -> dict[str, argparse.Namespace]:
        parser = argparse.ArgumentParser()
        parser.add_argument("-m", "--my-cred")
        parser.add_argument("--list-creds", nargs="+", dest="my_cred_list")
        parser.add_argument("--other")
        return resolve_roles(parser, list(argv), preset=PLAIN)

    @pytest.mark.parametrize(
        ("argv", "kept"),
        [
            (["--my-cr", "abc"], ["--my-cr", REDACTED]),
            (["--my-cred", "abc"], ["--my-cred", REDACTED]),
            (["--my-cr=abc"], [f"--my-cr={REDACTED}"]),
            (["-mabc"], [f"-m{REDACTED}"]),
            (["-m", "abc", "--other", "abc"], ["-m", REDACTED, "--other", "abc"]),
            (["--my-cr", "a", "--my-cr", "b"], ["--my-cr", REDACTED, "--my-cr", REDACTED]),
        ],
        ids=["abbreviation", "exact", "equals", "short-cluster", "same-text-elsewhere", "twice"],
    )
    def test_value_hidden_where_its_flag_is(self, argv: list[str], kept: list[str]) -> None:
        record = audit(self.roles(*argv), secrets=self.POLICY)
        assert record["argv"] == kept
        assert record["roles"]["main"]["settings"]["my_cred"]["value"] == REDACTED

    @pytest.mark.parametrize(
        ("add", "argv", "kept"),
        [
            (lambda p: p.add_argument("+m", "++my-cred"), ["+mabc"], [f"+m{REDACTED}"]),
            (
                lambda p: p.add_argument("-m", "--my-cred", type=int),
                ["-m", "0012"],
                ["-m", REDACTED],
            ),
            (
                lambda p: p.add_argument("--my-cred", type=lambda s: int(s, 0)),
                ["--my-cr", "0x1f"],
                ["--my-cr", REDACTED],
            ),
            (lambda p: p.add_argument("my_cred"), ["abc"], [REDACTED]),
        ],
        ids=["another-prefix", "read-as-int", "read-as-hex", "positional"],
    )
    def test_however_the_value_was_written(
        self, add: Any, argv: list[str], kept: list[str]
    ) -> None:
        """Another prefix character, a value its type read differently (0012, 0x1f), a
        positional: hidden where the provenance says it is."""
        prefix = "+" if argv[0].startswith("+") else "-"
        parser = argparse.ArgumentParser(prefix_chars=prefix)
        add(parser)
        roles = resolve_roles(parser, argv, preset=PLAIN)
        assert audit(roles, secrets=self.POLICY)["argv"] == kept

    def test_every_value_of_a_list(self) -> None:
        """A flag taking several values (a dest the policy names: ``my_cred_list`` ends with
        no secret name, so the policy is extended by it) has each hidden."""
        policy = SECRETS.extend(names=["my_cred_list"])
        record = audit(self.roles("--list-c", "x1", "x2", "--other", "x3"), secrets=policy)
        assert record["argv"] == ["--list-c", REDACTED, REDACTED, "--other", "x3"]

    def test_the_default_policy_keeps_them(self) -> None:
        """Under the resolution's own policy nothing of that flag is a secret's."""
        assert audit(self.roles("--my-cr", "abc"))["argv"] == ["--my-cr", "abc"]


class TestFileText:
    """write_audit writes most entries from their template's text: the file is byte for byte
    record_bytes of the record, signed or not, scrubbed or not."""

    @pytest.mark.parametrize("key", [None, b"k"])
    @pytest.mark.parametrize("extra", [[], ["--wandb-key", "sekrit-abcdef-123"]])
    def test_the_file_is_record_bytes(
        self,
        parser: argparse.ArgumentParser,
        in_fixtures: None,
        tmp_path: pathlib.Path,
        key: bytes | None,
        extra: list[str],
    ) -> None:
        roles = ppo(parser, *extra)
        record = audit(roles, key=key)
        expected = record_bytes(record if key is None else sign(record, key))
        assert write_audit(roles, tmp_path, key=key).read_bytes() == expected

    def test_a_scrubbed_record(
        self, parser: argparse.ArgumentParser, in_fixtures: None, tmp_path: pathlib.Path
    ) -> None:
        """Scrubbing makes new entries: they are encoded, as record_bytes encodes them."""
        secret = "sekrit-abcdef-123"
        roles = ppo(parser, "--wandb-key", secret, "--wandb-group", f"x-{secret}")
        expected = record_bytes(sign(audit(roles, key=b"k"), b"k"))
        assert b'"scrubbed"' in expected
        assert write_audit(roles, tmp_path, key=b"k").read_bytes() == expected

    def test_every_entry_encoded_gives_the_same_file(
        self,
        parser: argparse.ArgumentParser,
        in_fixtures: None,
        tmp_path: pathlib.Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        roles = ppo(parser)
        roles["critic"].lr = 3e-6
        fast = write_audit(roles, tmp_path / "fast").read_bytes()
        monkeypatch.setattr(io_module, "known_lines", lambda texts: {})  # every entry encoded
        assert write_audit(roles, tmp_path / "slow").read_bytes() == fast

    @pytest.mark.parametrize("extra", [[], ["--wandb-key", "sekrit-abcdef-123"]])
    def test_roles_of_other_resolutions_share_no_wrong_line(
        self,
        parser: argparse.ArgumentParser,
        in_fixtures: None,
        tmp_path: pathlib.Path,
        monkeypatch: pytest.MonkeyPatch,
        extra: list[str],
    ) -> None:
        """A line worked out for one role's entry with a history (a key the command line set
        over a default) serves another role only for the same value and origins."""
        first, other = ppo(parser, *extra), ppo(parser, "--seed", "7", "--lr", "2e-06", *extra)
        roles = {
            "actor": first["actor"],
            "critic": first["critic"],
            "seeded": other["critic"],  # other command line: other origins, other values
            "again": ppo(parser, *extra)["actor"],  # same values, other origin objects
            "changed": ppo(parser, *extra)["critic"],
        }
        roles["changed"].seed = 1234  # written after resolution, in one role only
        fast = write_audit(roles, tmp_path / "fast").read_bytes()
        assert fast == record_bytes(audit(roles))
        monkeypatch.setattr(io_module, "known_lines", lambda texts: {})  # every entry encoded
        assert write_audit(roles, tmp_path / "slow").read_bytes() == fast

    def test_values_of_every_plain_type(self, tmp_path: pathlib.Path) -> None:
        """Each kind of value the template path writes (1 and True, 0.0 and -0.0, text that
        JSON escapes) as the encoder writes it."""
        values = {
            "one": 1,
            "true": True,
            "false": False,
            "zero": 0,
            "none": None,
            "negative_zero": -0.0,
            "small": 1e-05,
            "large": 1e300,
            "big": 2**62,
            "text": 'ünï "q" \\ \u2028 \x00 😀',
            "empty": "",
            "url": "https://host/x",  # found secrets are looked for: not the template path
        }
        roles = {"r": LayerStack([Layer.from_mapping("defaults", values)]).resolve()}
        expected = record_bytes(audit(roles))
        assert write_audit(roles, tmp_path).read_bytes() == expected
        assert b'"true": {"value": true,' in expected
        assert b'"one": {"value": 1,' in expected

    @settings(deadline=None)
    @given(layer_lists(), policies, st.sampled_from([None, b"k"]))
    def test_generated_stacks(
        self, layers: list[Layer], merge: dict[str, Any], key: bytes | None
    ) -> None:
        roles = {
            "main": LayerStack(layers, policies=merge).resolve(),
            "other": argparse.Namespace(),
        }
        record = audit(roles, key=key)
        expected = record_bytes(record if key is None else sign(record, key))
        with tempfile.TemporaryDirectory() as directory:
            assert write_audit(roles, directory, key=key).read_bytes() == expected

    @settings(deadline=None)
    @given(layer_lists(), policies)
    def test_generated_roles_sharing_layers(
        self, layers: list[Layer], merge: dict[str, Any]
    ) -> None:
        """Roles of one stack, of its first layer alone and of the stack again: lines of
        entries made from one template, and with a history, in several roles."""
        roles = {
            "main": LayerStack(layers, policies=merge).resolve(),
            "first": LayerStack(layers[:1]).resolve(),
            "again": LayerStack(layers, policies=merge).resolve(),
        }
        with tempfile.TemporaryDirectory() as directory:
            written = write_audit(roles, directory).read_bytes()
        assert written == record_bytes(audit(roles))


class TestEntriesMadeLater:
    """When the file is written unsigned, the entries made from a template wait (the file
    writes their lines); made later (`Texts.make_entries`), they are those of audit()."""

    @staticmethod
    def _later(roles: dict[str, Any], key: bytes | None = None) -> tuple[dict[str, Any], Texts]:
        texts = Texts(lines=True, deferred=True)
        record = record_of(roles, Encoder(SECRETS), key, texts)
        return record, texts

    @pytest.mark.parametrize("extra", [[], ["--wandb-key", "sekrit-abcdef-123"]])
    def test_real_fixture(
        self, parser: argparse.ArgumentParser, in_fixtures: None, extra: list[str]
    ) -> None:
        roles = ppo(parser, *extra)
        record, texts = self._later(roles)
        # They wait (each such key holds its template), unless a secret's text was found:
        # scrubbing reads every entry, and made them first.
        assert bool(texts.deferred) == (not extra)
        texts.make_entries()
        assert texts.deferred is None
        assert record == audit(roles)
        assert record_bytes(record) == record_bytes(audit(roles))
        entries = [
            entry for section in record["roles"].values() for entry in section["settings"].values()
        ]
        assert len(set(map(id, entries))) == len(entries)  # each entry a dict of its own

    def test_a_scrubbed_record_makes_them_first(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        """Scrubbing reads every entry: they are made before it, not left as templates (a
        key, so that the scrubbed values' digests compare)."""
        secret = "sekrit-abcdef-123"
        roles = ppo(parser, "--wandb-key", secret, "--wandb-group", f"x-{secret}")
        record, texts = self._later(roles, b"k")
        assert texts.deferred is None
        assert not texts.lines
        assert record == audit(roles, key=b"k")

    @settings(deadline=None)
    @given(layer_lists(), policies)
    def test_generated_stacks(self, layers: list[Layer], merge: dict[str, Any]) -> None:
        roles = {
            "main": LayerStack(layers, policies=merge).resolve(),
            "first": LayerStack(layers[:1]).resolve(),
        }
        record, texts = self._later(roles)
        texts.make_entries()
        assert record == audit(roles)

    def test_history_lines_kept_from_an_earlier_write(self, tmp_path: pathlib.Path) -> None:
        """The line of a key set over a default, made by one write, is taken by the next:
        its entry waits too, and the file and the record (its entries made) are the same."""
        defaults = Layer.from_mapping("defaults", {"lr": 1, "seed": 0, "name": "a"})
        cli = Layer.from_mapping("cli", {"lr": 2.5, "seed": 3, "name": "b"}, kind="argv")
        roles = {"main": LayerStack([defaults, cli]).resolve()}
        first = write_audit(roles, tmp_path / "first").read_bytes()
        record, texts = self._later(roles)
        assert all(entry is WAITING for entry in record["roles"]["main"]["settings"].values())
        assert write_audit(roles, tmp_path / "again").read_bytes() == first
        assert first == record_bytes(audit(roles))
        texts.make_entries()
        assert record == audit(roles)

    def test_no_kept_line_holds_a_secret(self, tmp_path: pathlib.Path) -> None:
        """A secret key's line, and one whose value has a secret's text to look for (a URL's
        password), are never kept: each write asks the secret policy again, and scrubs."""
        password = "sekrit-password-123"
        defaults = Layer.from_mapping("defaults", {"api_key": "", "url": "", "lr": 1})
        cli = Layer.from_mapping(
            "cli",
            {"api_key": "sekrit-key-123", "url": f"https://u:{password}@h/x", "lr": 2},
            kind="argv",
        )
        roles = {"main": LayerStack([defaults, cli]).resolve()}
        first = write_audit(roles, tmp_path / "first").read_bytes()
        for key in ("api_key", "url"):
            plain = plain_settings(roles["main"])[key]
            value = getattr(roles["main"], key)
            assert known_history(key, key == "api_key", value, plain) is None
            assert known_history(key, False, value, plain) is None
        again = write_audit(roles, tmp_path / "again")
        for written in (first, again.read_bytes()):  # (a scrubbed value's digest: per record)
            assert b"sekrit" not in written
            assert b'"$type": "scrubbed"' in written
        assert load_audit(again).setting("main", "api_key").value == REDACTED

    def test_read_too_early_fails_loudly(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        """A waiting entry is WAITING, shared by no entry of audit(): a copy or an encoding
        of the record taken before the entries are made fails, rather than giving nulls."""
        record, texts = self._later(ppo(parser))
        waiting = [
            key
            for section in record["roles"].values()
            for key, entry in section["settings"].items()
            if entry is WAITING
        ]
        assert len(waiting) > 1_000  # most keys of both roles
        early = copy.deepcopy(record)
        with pytest.raises(TypeError, match="not JSON serializable"):
            record_bytes(early)
        texts.make_entries()
        assert record_bytes(record) == record_bytes(audit(ppo(parser)))


class TestRoundTrip:
    """load_audit(write_audit(roles, d)).namespace(role) equals what was audited."""

    def test_real_fixture(
        self, parser: argparse.ArgumentParser, in_fixtures: None, tmp_path: pathlib.Path
    ) -> None:
        """Both roles of the real PPO launch, enums included, with explain on the replay."""
        roles = ppo(parser)
        record = load_audit(write_audit(roles, tmp_path))
        for role, namespace in roles.items():
            replayed = record.namespace(role)
            assert isinstance(replayed, Namespace)
            assert replayed == namespace
            assert identical(vars(replayed), vars(namespace))
            assert replayed.attention_backend is AttnBackend.flash
            assert replayed.exit_signal is signal.SIGTERM
            for key in vars(namespace):
                assert explain(replayed, key).origin == explain(namespace, key).origin
                assert str(record.setting(role, key)) == str(explain(namespace, key))
            provenance = provenance_of(replayed)
            assert provenance is not None
            assert provenance.inputs["argv"] == tuple(ARGV)
            assert provenance.inputs["files"] == provenance_of(namespace).inputs["files"]  # type: ignore[union-attr]
            assert provenance.notices == notices(namespace)
        assert audit(record.namespaces())["fingerprint"] == record.fingerprint

    @settings(deadline=None)  # each example writes and fsyncs a file
    @given(layer_lists(), policies)
    def test_generated_stacks(self, layers: list[Layer], merge: dict[str, Any]) -> None:
        """Any stack: equal values of the same types, the same origin for every key and leaf."""
        namespace = LayerStack(layers, policies=merge).resolve(role="main")
        with tempfile.TemporaryDirectory() as directory:
            record = load_audit(write_audit({"main": namespace}, directory))
        replayed = record.namespace("main")
        assert replayed == namespace
        assert identical(vars(replayed), vars(namespace))
        for key in [*vars(namespace), *record.data["roles"]["main"]["leaves"]]:
            assert explain(replayed, key).origin == explain(namespace, key).origin
            assert str(record.setting("main", key)) == str(explain(namespace, key))

    def test_replay_a_plain_namespace(self) -> None:
        """Without provenance, values come back and explain names the audit file."""
        record = AuditRecord.from_dict(audit({"main": argparse.Namespace(lr=1)}), path="a.json")
        replayed = record.namespace("main")
        assert vars(replayed) == {"lr": 1}
        assert explain(replayed, "lr").origin.where == "audit a.json"

    def test_unknown_role(self) -> None:
        """A role that is not in the record: a KeyError naming the roles there are."""
        record = AuditRecord.from_dict(audit({"critic": stack(lr=1)}))
        with pytest.raises(UnknownKeyError, match=r"no role 'critc'.*did you mean 'critic'"):
            record.namespace("critc")


class Color(enum.Enum):
    red = 1
    blue = 2


class Perm(enum.Flag):
    r = 4
    w = 2


class Level(enum.IntEnum):
    low = 1


Point = collections.namedtuple("Point", "x y")


class Opaque:
    """An object with no JSON form; its repr is recorded."""

    def __repr__(self) -> str:
        return "Opaque(7)"


class BrokenRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no")


def _round_trip(value: Any) -> Any:
    data = json.loads(json.dumps(audit({"r": stack(x=value)})))
    record = AuditRecord.from_dict(data, types=[Color, Level, Perm])
    return record.namespace("r").x


class TestEncoding:
    """Values JSON cannot hold are tagged, and come back as they were."""

    @pytest.mark.parametrize(
        "value",
        [
            AttnBackend.flash,
            CudaGraphModule.moe_router,
            signal.SIGTERM,
            Color.blue,
            Level.low,
            Perm.r | Perm.w,
            (1, "a", (2.5, None)),
            [(1, 2), {3}],
            {"b", "a", "c"},
            frozenset({3, 1, 2}),
            pathlib.Path("/ckpt/actor"),
            pathlib.PurePosixPath("relative/x"),
            b"\x00\xffbytes",
            bytearray(b"ab"),
            2 + 3j,
            float("inf"),
            -float("inf"),
            {1: "int key", (2, 3): "tuple key"},
            {"$type": "not a tag"},
            {"nested": {"tuple": (1,), "enum": AttnBackend.auto}},
            10**5000,
            -0.0,
            "",
        ],
        ids=lambda value: type(value).__name__,
    )
    def test_round_trip(self, value: Any) -> None:
        """Replayed, the value is equal and of the same type."""
        back = _round_trip(value)
        assert back == value
        assert type(back) is type(value)

    def test_nan(self) -> None:
        """NaN is tagged (JSON has no NaN) and comes back as NaN."""
        assert math.isnan(_round_trip(float("nan")))
        assert audit({"r": stack(x=float("nan"))})["roles"]["r"]["settings"]["x"]["value"] == {
            "$type": "float",
            "value": "nan",
        }

    def test_tags(self) -> None:
        """The tags the format documents."""

        def encoded(value: Any) -> Any:
            return audit({"r": stack(x=value)})["roles"]["r"]["settings"]["x"]["value"]

        assert encoded(AttnBackend.flash) == {
            "$type": "enum",
            "class": "layerconf.profiles.megatron_slime.AttnBackend",
            "name": "flash",
        }
        assert encoded((1, 2)) == {"$type": "tuple", "items": [1, 2]}
        assert encoded({"b", "a"}) == {"$type": "set", "items": ["a", "b"]}
        assert encoded(pathlib.PurePosixPath("/x")) == {
            "$type": "path",
            "class": "PurePosixPath",
            "path": "/x",
        }
        assert encoded(b"hi") == {"$type": "bytes", "base64": "aGk="}
        assert encoded(Point(1, 2)) == {
            "$type": "tuple",
            "items": [1, 2],
            "class": f"{__name__}.Point",
        }

    def test_arbitrary_objects_are_tagged_with_their_repr(self) -> None:
        """An object stands in as an OpaqueValue with its class and repr; nothing crashes."""
        back = _round_trip(Opaque())
        assert back == OpaqueValue(f"{__name__}.Opaque", "Opaque(7)")
        assert repr(back) == "Opaque(7)"
        broken = _round_trip(BrokenRepr())
        assert isinstance(broken, OpaqueValue)
        assert "repr() raised RuntimeError" in broken.text
        cycle: list[Any] = [1]
        cycle.append(cycle)  # a layer cannot hold one; a plain namespace can
        record = AuditRecord.from_dict(audit({"r": argparse.Namespace(x=cycle)}))
        assert record.namespace("r").x == [1, OpaqueValue("builtins.list", "<cycle>")]
        one, two = (audit({"r": stack(x=[object()])}) for _ in range(2))
        assert one["fingerprint"] == two["fingerprint"]
        assert one["roles"]["r"]["settings"]["x"]["value"] == [
            {"$type": "object", "class": "builtins.object", "repr": "<object object at 0x...>"}
        ]

    def test_subclasses_of_plain_types(self) -> None:
        """A namedtuple or an int subclass comes back as the plain type, still equal."""

        class Count(int):
            pass

        assert _round_trip(Point(1, 2)) == (1, 2)
        assert _round_trip(Count(5)) == 5
        assert type(_round_trip(Count(5))) is int

    def test_a_value_that_cannot_be_rebuilt(self) -> None:
        """An enum whose class cannot be imported: replay says so; setting() stands in."""
        data = audit({"r": stack(x=Color.red)})
        text = json.dumps(data).replace(f"{__name__}.Color", "nowhere.Color")
        record = AuditRecord.from_dict(json.loads(text), path="run/a.json", verify=False)
        with pytest.raises(AuditError, match=r"run/a.json: role r: cannot rebuild .*nowhere"):
            record.namespace("r")
        assert isinstance(record.setting("r", "x").value, OpaqueValue)


EVIL_MODULE = """\
import pathlib
pathlib.Path(__file__).with_name("ran").write_text("code from a record ran")
import enum
class Color(enum.Enum):
    red = 1
"""


class TestNoCodeFromARecord:
    """Decoding is closed: a record names classes, it never makes layerconf import one."""

    def evil(self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
        """A record naming an importable module that would run code when imported."""
        (tmp_path / "evilmod.py").write_text(EVIL_MODULE)
        monkeypatch.syspath_prepend(str(tmp_path))
        data = audit({"r": stack(x=Color.red)})
        return json.loads(json.dumps(data).replace(f"{__name__}.Color", "evilmod.Color"))

    def test_replay_refuses_and_imports_nothing(
        self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        record = AuditRecord.from_dict(self.evil(tmp_path, monkeypatch), verify=False)
        with pytest.raises(
            AuditError, match=r"'evilmod.Color' is not a registered value type .*types=\[Color\]"
        ):
            record.namespace("r")
        assert isinstance(record.setting("r", "x").value, OpaqueValue)
        diff_audits(record, record)
        assert "evilmod" not in sys.modules
        assert not (tmp_path / "ran").exists()

    def test_the_command_imports_nothing(
        self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """python -m layerconf audit replay/diff next to the module: it does not run."""
        path = tmp_path / "record.json"
        path.write_text(json.dumps(self.evil(tmp_path, monkeypatch)))
        for command in (["replay", "record.json"], ["diff", "record.json", "record.json"]):
            result = subprocess.run(
                [sys.executable, "-m", "layerconf", "audit", *command],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                check=False,
            )
            assert "Traceback" not in result.stderr
            assert not (tmp_path / "ran").exists(), command

    def test_registered_types_are_rebuilt(self) -> None:
        """types= names the program's own enum classes; the bundled profile's are standard."""
        data = audit({"r": stack(x=Color.red, backend=AttnBackend.flash)})
        record = AuditRecord.from_dict(data, types=[Color])
        assert record.namespace("r").x is Color.red
        assert AuditRecord.from_dict(data).values("r", strict=False)["backend"] is AttnBackend.flash
        with pytest.raises(TypeError, match="value types are enum classes"):
            AuditRecord.from_dict(data, types=[int])  # type: ignore[list-item]


HASH_SEED_SCRIPT = textwrap.dedent(
    """
    import pathlib, sys
    from layerconf import Layer, LayerStack, load_profile, resolve_roles
    from layerconf.audits import audit

    roles = resolve_roles(load_profile(), pathlib.Path("slime_ppo_argv.txt").read_text().splitlines())
    words = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
    extra = {"tags": words, "frozen": frozenset(words), "by": {w: i for i, w in enumerate(sorted(words))}}
    roles["sets"] = LayerStack([Layer.from_mapping("cli", extra)]).resolve()
    print(audit(roles)["fingerprint"])
    """
)


class TestFingerprint:
    """The fingerprint names a configuration: stable everywhere, different for any difference."""

    def test_the_key_order_kept_never_changes_a_fingerprint(self) -> None:
        """The sorted order of a role's keys is kept: the same keys with other values, and
        other keys, give the fingerprints a fresh computation gives."""
        for values in (
            {"b": 1, "a": 2},
            {"b": 3, "a": 2},
            {"b": 1, "c": 2},
            {"b": 1, "a": 2, "c": 0},
        ):
            record = audit({"r": stack(**values)})
            text = json.dumps(
                {"r": {key: record["roles"]["r"]["settings"][key]["value"] for key in values}},
                sort_keys=True,
                separators=(",", ":"),
            )
            digest = hashlib.sha256(b"layerconf-fingerprint-2\n" + text.encode()).hexdigest()
            assert record["fingerprint"] == digest

    def test_a_large_records_keys_are_not_kept(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The key order kept for the next record is kept only for a trainer's sizes: a reader
        of large records from elsewhere keeps none of theirs (bounded memory)."""
        from layerconf.audits import fingerprint

        monkeypatch.setattr(fingerprint, "_CACHED_KEYS", 2)
        for cached in (fingerprint._ordered, fingerprint._sorted_keys):
            cached.kept.cache_clear()
        audit({"r": stack(b=1, a=2, c=3)})
        small = audit({"r": stack(b=1, a=2)})
        assert fingerprint._ordered.kept.cache_info().currsize == 1
        assert fingerprint._sorted_keys.kept.cache_info().currsize == 1
        digest = fingerprint.fingerprint(small["roles"], small["format"])
        assert digest == small["fingerprint"]

    def test_same_in_processes_with_other_hash_seeds(self) -> None:
        """Two processes with different PYTHONHASHSEED (sets of strings iterate differently)."""
        seen = set()
        for seed in ("0", "1", "4242"):
            env = {**os.environ, "PYTHONHASHSEED": seed}
            result = subprocess.run(
                [sys.executable, "-c", HASH_SEED_SCRIPT],
                cwd=FIXTURES,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            seen.add(result.stdout.strip())
        assert len(seen) == 1
        assert re.fullmatch(r"[0-9a-f]{64}", seen.pop())

    def test_changes_with_any_value(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        """One value of one role changed, in the real launch."""
        base = audit(ppo(parser))["fingerprint"]
        assert audit(ppo(parser))["fingerprint"] == base
        assert audit(ppo(parser, "--seed", "1235"))["fingerprint"] != base
        changed = ppo(parser)
        vars(changed["actor"])["lr"] = 1.0000000000000002e-06
        assert audit(changed)["fingerprint"] != base

    @pytest.mark.parametrize(
        ("before", "after"),
        [
            (1, 1.0),
            (1, True),
            (0, False),
            (0.0, -0.0),
            ("1", 1),
            (None, "None"),
            ((1, 2), [1, 2]),
            ({1, 2}, frozenset({1, 2})),
            (AttnBackend.flash, "flash"),
            (AttnBackend.flash, AttnBackend.fused),
            (pathlib.Path("a"), "a"),
            ({"a": 1}, {"a": 1.0}),
            ({1: "x"}, {"1": "x"}),
        ],
        ids=repr,
    )
    def test_type_matters(self, before: Any, after: Any) -> None:
        """Equal in Python is not enough: 1, 1.0 and True are three configurations."""
        assert (
            audit({"r": stack(x=before)})["fingerprint"]
            != audit({"r": stack(x=after)})["fingerprint"]
        )

    def test_order_does_not_matter(self) -> None:
        """Key order and set order do not change it; role names do."""
        one = audit({"r": stack(a=1, b={"x": 1, "y": 2}, c={3, 1, 2})})["fingerprint"]
        two = audit({"r": stack(c={2, 3, 1}, b={"y": 2, "x": 1}, a=1)})["fingerprint"]
        assert one == two
        assert audit({"q": stack(a=1, b={"x": 1, "y": 2}, c={3, 1, 2})})["fingerprint"] != one

    def test_canonical_encoding(self) -> None:
        """sha256 of a fixed prefix and the sorted, compact, ASCII JSON of role -> key -> value."""
        record = audit({"r": stack(lr=1e-05, name="é", on=True)})
        text = '{"r":{"lr":1e-05,"name":"\\u00e9","on":true}}'
        expected = hashlib.sha256(b"layerconf-fingerprint-2\n" + text.encode()).hexdigest()
        assert record["fingerprint"] == expected

    def test_loading_checks_it(self, tmp_path: pathlib.Path) -> None:
        """A record whose values were edited is refused, unless verification is turned off."""
        path = write_audit({"r": stack(lr=1e-05)}, tmp_path)
        path.write_text(path.read_text().replace("1e-05", "2e-05"))
        with pytest.raises(AuditError, match="does not match the recorded values"):
            load_audit(path)
        assert load_audit(path, verify=False).namespace("r").lr == 2e-05

    def test_the_cli_names_the_python_call(
        self, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`audit verify` of an edited record told a command-line user to 'read it with
        verify=False', which no command takes: the Python call is named as one."""
        from layerconf.cli import main

        path = write_audit({"r": stack(lr=1e-05)}, tmp_path, key=b"k")
        path.write_text(path.read_text().replace("1e-05", "2e-05"))
        (tmp_path / "key").write_bytes(b"k")
        assert main(["audit", "verify", "--key-file", str(tmp_path / "key"), str(path)]) == 1
        err = capsys.readouterr().err
        assert "the record was edited or damaged" in err
        assert "or read it as it is in Python: load_audit(path, verify=False)" in err


class TestSecrets:
    """Credentials never reach a record: not as values, not in argv, not in any text."""

    def test_the_secret_keys_kept_never_change_a_verdict(self) -> None:
        """The secret keys found for a set of keys are kept: another policy, or the same
        keys and one more, is asked again."""
        namespace = stack(lr=1e-5, run_name="a", seed=1)
        first = audit({"r": namespace})["roles"]["r"]["settings"]
        wider = SECRETS.extend(names=["run_name"])
        second = audit({"r": namespace}, secrets=wider)["roles"]["r"]["settings"]
        namespace.hf_token = "hf_0123456789"
        third = audit({"r": namespace})["roles"]["r"]["settings"]
        assert first["run_name"]["value"] == "a"
        assert second["run_name"]["value"] == REDACTED
        assert (third["run_name"]["value"], third["hf_token"]["value"]) == ("a", REDACTED)

    def test_which_profile_keys_are_secrets(self, parser: argparse.ArgumentParser) -> None:
        """Of the real profile's 1,000+ dests and flags, only wandb_key / --wandb-key."""
        dests = {action.dest for action in parser._actions}
        flags = {flag for action in parser._actions for flag in action.option_strings}
        assert {dest for dest in dests if is_secret(dest)} == {"wandb_key"}
        assert {flag for flag in flags if is_secret(flag)} == {"--wandb-key"}

    @pytest.mark.parametrize(
        "key",
        [
            "input_key",
            "label_key",
            "fim_pad_token",
            "max_tokens_per_gpu",
            "tokenizer_model",
            "special_tokens",
            "rl_skip_bos_token",
            "metadata_key",
            "wandb_host",
            "log_passrate",
        ],
    )
    def test_ordinary_keys_are_not(self, key: str) -> None:
        """Keys that mention keys or tokens without holding credentials."""
        assert not is_secret(key)

    @pytest.mark.parametrize(
        "key",
        [
            "wandb_key",
            "--wandb-key",
            "hf_token",
            "HF_TOKEN",
            "WANDB_API_KEY",
            "openai_api_key",
            "db_password",
            "client_secret",
            "gh_access_token",
            "x_auth_token",
            "env.HF_TOKEN",
            "--api-token",
            "SESSION_TOKEN",
            "refresh_token",
            "oauth_token",
        ],
    )
    def test_credentials_are(self, key: str) -> None:
        """Dests, flags, environment variables and dotted paths alike; a suffix's bare name
        too (`api_token`, as `x_api_token`)."""
        assert is_secret(key)

    def test_policy_extends(self) -> None:
        """A policy of one's own: more names and suffixes, another placeholder."""
        policy = SECRETS.extend(names=["--run-token"], suffixes=["_cookie"])
        assert policy.is_secret("run_token")
        assert policy.is_secret("session_cookie")
        assert not SECRETS.is_secret("run_token")
        record = audit(
            {"r": stack(run_token="tok-123456", lr=1)},
            secrets=SecretPolicy(names=["run_token"], placeholder="***"),
        )
        assert record["roles"]["r"]["settings"]["run_token"]["value"] == "***"
        with pytest.raises(TypeError, match="not one string"):
            SecretPolicy(names="wandb_key")

    def test_redact_helpers(self) -> None:
        """redact() for one value, nested secrets included; None stays None."""
        assert redact("wandb_key", "abc") == REDACTED
        assert redact("wandb_key", None) is None
        assert redact("lr", 1e-5) == 1e-5
        assert redact("env", {"HF_TOKEN": "x", "A": [{"api_key": "y"}]}) == {
            "HF_TOKEN": REDACTED,
            "A": [{"api_key": REDACTED}],
        }

    def test_redact_a_value_holding_itself_or_a_set(self) -> None:
        """A mapping or list that holds itself is redacted without a RecursionError, its copy
        holding the copy; the members of sets and frozensets are redacted too."""
        looped: dict[str, Any] = {"api_key": "y"}
        looped["self"] = looped
        shown = redact("env", looped)
        assert shown["api_key"] == REDACTED
        assert shown["self"] is shown
        assert "'y'" not in repr(shown)
        url = "https://me:passw0rd-123@host/x"
        assert redact("urls", frozenset({url, (url,)})) == frozenset(
            {"https://me:<redacted>@host/x", ("https://me:<redacted>@host/x",)}
        )

    @pytest.mark.parametrize(
        ("argv", "expected", "found"),
        [
            (["--wandb-key", "k1", "--lr", "1"], ["--wandb-key", REDACTED, "--lr", "1"], ["k1"]),
            (["--wandb-key=k1"], [f"--wandb-key={REDACTED}"], ["k1"]),
            (["--wandb-key", "--lr", "1"], ["--wandb-key", "--lr", "1"], []),
            (["--hf-token", "-1"], ["--hf-token", REDACTED], ["-1"]),
            (["--input-key", "prompt"], ["--input-key", "prompt"], []),
        ],
    )
    def test_redact_argv(self, argv: list[str], expected: list[str], found: list[str]) -> None:
        """Both spellings of a secret flag; a following option is not taken as its value."""
        assert redact_argv(argv) == (expected, found)

    @pytest.mark.parametrize(
        ("argv", "expected"),
        [
            (["n", "--lr", "1", "hf_12345678", "a", "b"], ["n", "--lr", "1", REDACTED, "a", "b"]),
            (["-v", "n", "hf_12345678", "a", "b"], ["-v", "n", REDACTED, "a", "b"]),
            (
                ["n", "--lr=1", "--", "hf_12345678", "a", "b"],
                ["n", "--lr=1", "--", REDACTED, "a", "b"],
            ),
            # the secret's text elsewhere goes too
            (["n", "hf_12345678", "a", "run-hf_12345678"], ["n", REDACTED, "a", f"run-{REDACTED}"]),
            # a cluster whose values cannot be counted: every token no option takes goes
            (
                ["-vx", "n", "hf_12345678", "a", "b"],
                ["-vx", REDACTED, REDACTED, REDACTED, REDACTED],
            ),
        ],
    )
    def test_a_secret_positional(self, argv: list[str], expected: list[str]) -> None:
        """A positional whose dest is a secret's hides its tokens in redacted_argv, as an audit
        record of the same command line does; the others stay as written."""
        parser = argparse.ArgumentParser(prog="train")
        parser.add_argument("--lr", type=float)
        parser.add_argument("-v", action="store_true")
        parser.add_argument("-x", nargs="*")
        parser.add_argument("name")
        parser.add_argument("hf_token")
        parser.add_argument("rest", nargs=2)
        assert redacted_argv(argv, parser) == expected
        if "-vx" not in argv:
            args = parse_args(parser, argv)
            assert audit({"r": args})["argv"] == expected

    @pytest.mark.parametrize(
        ("argv", "expected"),
        [
            (["login", "-k", "sk-123456"], ["login", "-k", REDACTED]),
            (["login", "-ksk-123456"], ["login", f"-k{REDACTED}"]),
            (["login", "--ap", "sk-123456"], ["login", "--ap", REDACTED]),
            (
                ["--lr", "1", "login", "-v", "-k", "sk-1"],
                ["--lr", "1", "login", "-v", "-k", REDACTED],
            ),
            (["login", "admin", "hf_12345678"], ["login", "admin", REDACTED]),
            (["login", "-v", "admin", "-k", "sk-123456"], ["login", "-v", "admin", "-k", REDACTED]),
            (
                ["--name", "run-sk-123456", "login", "-k", "sk-123456"],
                ["--name", f"run-{REDACTED}", "login", "-k", REDACTED],
            ),
            # before the sub-command, by the top parser's actions: its -k is no secret's
            (["-k", "3", "login", "-k", "sk-123456"], ["-k", "3", "login", "-k", REDACTED]),
            (["li", "-k", "sk-123456"], ["li", "-k", REDACTED]),  # (an alias)
        ],
    )
    def test_a_sub_command_secret(self, argv: list[str], expected: list[str]) -> None:
        """The tokens after a sub-command's name are its parser's: its secret flags, by an
        alias or a cluster too, and its secret positionals hide their values in
        redacted_argv, as its errors and an audit record of the same command line do."""
        parser = argparse.ArgumentParser(prog="tool")
        parser.add_argument("--lr", type=float)
        parser.add_argument("--name")
        parser.add_argument("-k", "--keep", type=int)
        login = parser.add_subparsers(dest="command").add_parser("login", aliases=["li"])
        login.add_argument("-k", "--api-key")
        login.add_argument("-v", action="store_true")
        admin = login.add_subparsers(dest="area").add_parser("admin")
        admin.add_argument("-k", "--api-key")
        admin.add_argument("hf_token", nargs="?")
        assert redacted_argv(argv, parser) == expected
        args = parse_args(parser, argv)
        assert audit({"r": args})["argv"] == expected
        assert provenance_of(args).inputs["argv"] == tuple(expected)  # (its repr shows them)

    @pytest.mark.parametrize(
        ("argv", "expected"),
        [
            # slime hands --sglang-* on to SGLang, whose --api-key this parser does not know
            (["--sglang-api-k", "sk-123456"], ["--sglang-api-k", REDACTED]),
            (["--sglang-api-k=sk-123456"], [f"--sglang-api-k={REDACTED}"]),
            (["--sglang-api", "sk-123456"], ["--sglang-api", REDACTED]),
            (["--sglang-admin-api-k=sk-123456"], [f"--sglang-admin-api-k={REDACTED}"]),
            (["--sglang-api-", "sk-123456"], ["--sglang-api-", REDACTED]),  # (no letter of 'key')
            (["--sglang-access-=sk-123456"], [f"--sglang-access-={REDACTED}"]),
            # what shows too little of a secret's name, or another word, is no secret's
            (["--sglang-x-s", "5"], ["--sglang-x-s", "5"]),
            (["--sglang-x-", "5"], ["--sglang-x-", "5"]),
            (["--sglang-max-tok", "5"], ["--sglang-max-tok", "5"]),
            (["--sglang-api-url", "http://h"], ["--sglang-api-url", "http://h"]),
            (["--sglang-tp-size", "2"], ["--sglang-tp-size", "2"]),
        ],
    )
    def test_an_unknown_flag_cut_short_of_a_secret_name(
        self, parser: argparse.ArgumentParser, argv: list[str], expected: list[str]
    ) -> None:
        """An option the parser does not own, abbreviated for the parser that does, hides its
        value when it is a secret's name cut short in its last word."""
        assert redacted_argv(argv, parser) == expected

    @settings(max_examples=300, deadline=None)
    @given(
        flag=st.text(alphabet="aceiknoprstwyx_-", min_size=1, max_size=14),
        names=st.lists(st.text(alphabet="aekt_", min_size=1, max_size=8), max_size=4),
        suffixes=st.lists(st.text(alphabet="aekt_", min_size=1, max_size=8), max_size=4),
    )
    def test_cut_short_is_its_definition(
        self, flag: str, names: list[str], suffixes: list[str]
    ) -> None:
        """The flag is a cut form of a name (the name's last word cut to 0..len-1 letters, 3
        shown at least), or ends with a cut form of a suffix: `_cut_short` asks each flag
        directly what this table of every cut form says."""
        from layerconf.core.secrets import _cut_short, _normalize

        policy = SECRETS.extend(names=names, suffixes=suffixes)

        def cut(ending: str) -> list[str]:
            before, separator, last = ending.rpartition("_")
            forms = [before + separator + last[:size] for size in range(len(last))]
            return [form for form in forms if len(form.lstrip("_")) >= 3]

        normal = _normalize("--" + flag)
        expected = any(normal == form for name in policy.names for form in cut(name)) or any(
            normal.endswith(form) for suffix in policy.suffixes for form in cut(suffix)
        )
        assert _cut_short("--" + flag, policy) is expected

    @pytest.mark.parametrize(
        "extra",
        [("--wandb-key", SECRET), (f"--wandb-key={SECRET}",)],
        ids=["separate", "equals"],
    )
    def test_secret_appears_in_no_output(
        self,
        parser: argparse.ArgumentParser,
        in_fixtures: None,
        tmp_path: pathlib.Path,
        extra: tuple[str, ...],
    ) -> None:
        """The --wandb-key value is in no record, file, flatten, diff, replay or notice."""
        roles = ppo(parser, "--use-wandb", *extra, "--wandb-exp-name", f"run-{SECRET}")
        assert roles["critic"].wandb_key == SECRET
        for text in texts(tmp_path, roles):
            assert SECRET not in text
        record = audit(roles)
        assert record["roles"]["critic"]["settings"]["wandb_key"]["value"] == REDACTED
        marked = record["roles"]["critic"]["settings"]["wandb_exp_name"]["value"]
        assert (marked["$type"], marked["shown"]) == ("scrubbed", "run-<redacted>")
        assert REDACTED in " ".join(record["argv"])

    def test_secrets_nested_in_values_and_unknown_flags(
        self, parser: argparse.ArgumentParser, in_fixtures: None, tmp_path: pathlib.Path
    ) -> None:
        """An environment dict's HF_TOKEN and an SGLang flag's key are redacted too."""
        hidden = ["hf_0123456789abcdef", "sgl-0123456789abcdef"]
        roles = ppo(
            parser,
            "--train-env-vars",
            json.dumps({"HF_TOKEN": hidden[0], "OMP_NUM_THREADS": "4"}),
            f"--sglang-api-key={hidden[1]}",
        )
        assert roles["actor"].train_env_vars["HF_TOKEN"] == hidden[0]
        # The notice names the flag, never its value (it quoted the value before this review).
        noted = [problem.message for problem in notices(roles["actor"])]
        assert any("--sglang-api-key=<redacted>" in message for message in noted)
        assert not any(hidden[1] in message for message in noted)
        for text in texts(tmp_path, roles):
            assert hidden[0] not in text
            assert hidden[1] not in text
        settings = audit(roles)["roles"]["actor"]["settings"]
        assert settings["train_env_vars"]["value"] == {
            "HF_TOKEN": REDACTED,
            "OMP_NUM_THREADS": "4",
        }

    def test_fingerprint_ignores_the_secret_but_not_its_presence(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        """Another key gives the same fingerprint; no key at all gives another one."""
        one = audit(ppo(parser, "--wandb-key", "aaaaaaaaaaaa"))["fingerprint"]
        two = audit(ppo(parser, "--wandb-key", "bbbbbbbbbbbb"))["fingerprint"]
        unset = audit(ppo(parser))["fingerprint"]
        assert one == two != unset

    def test_replay_with_the_secret_given_back(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        """The replayed namespace holds the placeholder, or the value passed in."""
        roles = ppo(parser, "--wandb-key", SECRET)
        record = AuditRecord.from_dict(audit(roles))
        assert record.namespace("actor").wandb_key == REDACTED
        assert record.namespace("actor", secrets={"wandb_key": SECRET}) == roles["actor"]
        with pytest.raises(UnknownKeyError, match="did you mean 'wandb_key'"):
            record.namespace("actor", secrets={"wandb_kye": SECRET})


def _listing(directory: pathlib.Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


WRITER_SCRIPT = textwrap.dedent(
    """
    import os, pathlib, sys
    from layerconf import load_profile, resolve_roles
    from layerconf.audits import write_audit

    mode, directory = sys.argv[1], sys.argv[2]
    argv = pathlib.Path("slime_ppo_argv.txt").read_text().splitlines()
    roles = [resolve_roles(load_profile(), [*argv, "--seed", str(seed)]) for seed in (1, 2)]
    if mode == "exit-before-rename":
        os.replace = lambda *args: os._exit(17)
        write_audit(roles[0], directory)
    else:  # write forever, until killed
        count = 0
        while True:
            write_audit(roles[count % 2], directory)
            count += 1
            if count == 3:
                print("ready", flush=True)
    """
)


class TestWriteAudit:
    """write_audit replaces the file atomically: old or new, never half of one."""

    def test_writes_and_returns_the_path(self, tmp_path: pathlib.Path) -> None:
        """layerconf-audit.json in the directory (created if missing), one line per key."""
        roles = {"r": stack(lr=1e-5, seed=1)}
        path = write_audit(roles, tmp_path / "run" / "1")
        assert path == tmp_path / "run" / "1" / AUDIT_FILE
        text = path.read_text()
        assert json.loads(text) == audit(roles)
        assert '\n    "lr": {"value": 1e-05, "layer": "cli", "kind": "argv"},\n' in text
        assert _listing(path.parent) == [AUDIT_FILE]
        assert load_audit(path.parent).fingerprint == audit(roles)["fingerprint"]

    def test_keeps_the_permissions_of_the_file_it_replaces(self, tmp_path: pathlib.Path) -> None:
        """A new file gets the umask's permissions (not mkstemp's 0600); a rewrite keeps its own."""
        path = write_audit({"r": stack(lr=1)}, tmp_path)
        mask = os.umask(0o022)
        os.umask(mask)
        assert path.stat().st_mode & 0o777 == 0o666 & ~mask
        path.chmod(0o640)
        write_audit({"r": stack(lr=2)}, tmp_path)
        assert path.stat().st_mode & 0o777 == 0o640

    def test_a_failed_write_leaves_the_old_file(
        self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The rename fails: the old record is intact and the temporary file is removed."""
        old = write_audit({"r": stack(lr=1)}, tmp_path)
        before = old.read_bytes()

        def broken(*args: Any) -> None:
            raise OSError("disk on fire")

        monkeypatch.setattr(os, "replace", broken)
        with pytest.raises(OSError, match="disk on fire"):
            write_audit({"r": stack(lr=2)}, tmp_path)
        assert old.read_bytes() == before
        assert _listing(tmp_path) == [AUDIT_FILE]

    def test_a_writer_dying_before_the_rename(self, tmp_path: pathlib.Path) -> None:
        """A process that dies between write and rename leaves the old record valid."""
        old = write_audit({"r": stack(lr=1)}, tmp_path)
        result = subprocess.run(
            [sys.executable, "-c", WRITER_SCRIPT, "exit-before-rename", str(tmp_path)],
            cwd=FIXTURES,
            capture_output=True,
            check=False,
        )
        assert result.returncode == 17, result.stderr
        assert load_audit(old).namespace("r").lr == 1
        litter = [name for name in _listing(tmp_path) if name != AUDIT_FILE]
        assert len(litter) == 1
        assert LITTER.match(litter[0])

    def test_a_writer_killed_mid_way(self, tmp_path: pathlib.Path) -> None:
        """SIGKILL at a random moment of a writing loop: the file is always a whole record."""
        old = write_audit({"r": stack(lr=1)}, tmp_path)
        process = subprocess.Popen(
            [sys.executable, "-c", WRITER_SCRIPT, "loop", str(tmp_path)],
            cwd=FIXTURES,
            stdout=subprocess.PIPE,
        )
        try:
            assert process.stdout is not None
            assert process.stdout.readline() == b"ready\n"
            time.sleep(0.05)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
            if process.stdout is not None:
                process.stdout.close()
        record = load_audit(old)
        assert record.roles == ("actor", "critic")
        assert record.namespace("critic").seed in (1, 2)
        litter = [name for name in _listing(tmp_path) if name != AUDIT_FILE]
        assert len(litter) <= 1
        assert all(LITTER.match(name) for name in litter)


class TestWriteNeverDestroys:
    """Writing replaces only a regular file, never changes the umask, and cleans up after kills."""

    def data(self) -> bytes:
        return record_bytes(audit({"r": stack(lr=1)}))

    def test_a_fifo_is_refused_and_kept(self, tmp_path: pathlib.Path) -> None:
        fifo = tmp_path / "record.json"
        os.mkfifo(fifo)
        with pytest.raises(AuditError, match=r"record\.json: is a FIFO \(named pipe\), not a file"):
            write_atomic(tmp_path, "record.json", self.data())
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
        assert _listing(tmp_path) == ["record.json"]

    def test_a_device_is_refused(self) -> None:
        """/dev/null is never replaced by a regular file, even by root."""
        with pytest.raises(AuditError, match="/dev/null: is a character device, not a file"):
            write_atomic(pathlib.Path("/dev"), "null", self.data())
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)

    def test_a_directory_is_refused(self, tmp_path: pathlib.Path) -> None:
        (tmp_path / "sub").mkdir()
        with pytest.raises(AuditError, match="is a directory, not a file"):
            write_atomic(tmp_path, "sub", self.data())

    def test_a_symlink_is_followed_and_kept(self, tmp_path: pathlib.Path) -> None:
        """The file a link points to is replaced atomically; the link stays a link."""
        (tmp_path / "real").mkdir()
        target = tmp_path / "real" / "record.json"
        target.write_text("old")
        link = tmp_path / "record.json"
        link.symlink_to(target)
        assert write_atomic(tmp_path, "record.json", self.data()) == target
        assert link.is_symlink()
        assert target.read_bytes() == self.data()
        assert _listing(tmp_path / "real") == ["record.json"]

    def test_a_link_to_a_device_is_refused(self, tmp_path: pathlib.Path) -> None:
        (tmp_path / "record.json").symlink_to("/dev/null")
        with pytest.raises(AuditError, match=r"-> /dev/null\): is a character device"):
            write_atomic(tmp_path, "record.json", self.data())

    def test_the_umask_is_never_changed(
        self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Not even for a moment: os.umask is never called (the kernel applies it)."""

        def refuse(mask: int) -> int:
            raise AssertionError("os.umask was called")

        mask = os.umask(0o027)
        try:
            monkeypatch.setattr(os, "umask", refuse)
            path = write_atomic(tmp_path, "record.json", self.data())
        finally:
            monkeypatch.undo()
            os.umask(mask)
        assert path.stat().st_mode & 0o777 == 0o640

    def test_a_dead_writers_temporary_is_removed(self, tmp_path: pathlib.Path) -> None:
        """The next write removes what a killed writer of this host left; a live one's stays."""
        dead = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            capture_output=True,
            text=True,
            check=True,
        )
        pid = int(dead.stdout)
        host = io_module._HOST
        stale = tmp_path / f".{AUDIT_FILE}.{host}.{pid}.0a1b2c3d4e5f.tmp"
        live = tmp_path / f".{AUDIT_FILE}.{host}.{os.getppid()}.0a1b2c3d4e5f.tmp"
        other_host = tmp_path / f".{AUDIT_FILE}.elsewhere.{pid}.0a1b2c3d4e5f.tmp"
        for path in (stale, live, other_host):
            path.write_text("half a record")
        write_audit({"r": stack(lr=1)}, tmp_path)
        assert _listing(tmp_path) == sorted([AUDIT_FILE, live.name, other_host.name])

    def test_the_command_refuses_a_device(self, capsys: pytest.CaptureFixture[str]) -> None:
        """layerconf audit -o /dev/null: a usage error naming it; -o - prints the record."""
        from layerconf.cli import main

        argv = ["--rollout-batch-size", "4", "--lr", "1e-6"]
        assert main(["audit", "-o", "/dev/null", "--", *argv]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.startswith(
            "layerconf audit: error: cannot write the audit record: /dev/null: is a character "
            "device, not a file"
        )
        assert main(["audit", "-o", "-", "--", *argv]) == 0
        assert json.loads(capsys.readouterr().out)["format"] == 2


class TestScrubbedValues:
    """A secret's text inside another value: shown scrubbed, never replayed, fingerprinted."""

    KEY = b"s" * 32

    def decay(self, parser: argparse.ArgumentParser, word: str) -> dict[str, Namespace]:
        return ppo(parser, "--wandb-key", word, "--lr-decay-style", word)

    def test_a_value_equal_to_a_secret_is_marked_not_rewritten(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        """--wandb-key cosine --lr-decay-style cosine: the style is a marker, shown redacted."""
        record = audit(self.decay(parser, "cosine"))
        settings = record["roles"]["actor"]["settings"]
        assert settings["wandb_key"]["value"] == REDACTED
        marked = settings["lr_decay_style"]["value"]
        assert set(marked) == {"$type", "shown", "digest", "keyed"}
        assert (marked["$type"], marked["shown"], marked["keyed"]) == ("scrubbed", REDACTED, False)
        assert "cosine" not in json.dumps(record)

    def test_replay_refuses_it_naming_the_key(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        """namespace() and values() say which key; values(strict=False) shows it scrubbed."""
        record = AuditRecord.from_dict(audit(self.decay(parser, "cosine")))
        with pytest.raises(AuditError, match="'lr_decay_style' held a secret's text"):
            record.namespace("actor")
        with pytest.raises(AuditError, match="'lr_decay_style'"):
            record.values("actor")
        shown = record.values("actor", strict=False)["lr_decay_style"]
        assert isinstance(shown, OpaqueValue)
        assert repr(shown) == '<scrubbed "<redacted>">'

    def test_the_command_refuses_it_too(
        self,
        parser: argparse.ArgumentParser,
        in_fixtures: None,
        tmp_path: pathlib.Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """layerconf audit replay: exit 1 and one line naming the key, never the value."""
        from layerconf.cli import main

        path = write_audit(self.decay(parser, "cosine"), tmp_path)
        assert main(["audit", "replay", str(path)]) == 1
        captured = capsys.readouterr()
        assert "'lr_decay_style' held a secret's text" in captured.err
        assert "cosine" not in captured.out + captured.err

    def test_configurations_that_differ_never_share_a_fingerprint(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        """cosine/cosine and linear/linear differ in lr_decay_style: so do their fingerprints."""
        for key in (None, self.KEY):
            one = audit(self.decay(parser, "cosine"), key=key)["fingerprint"]
            two = audit(self.decay(parser, "linear"), key=key)["fingerprint"]
            assert one != two

    def test_signed_records_compare_unsigned_ones_do_not(
        self, parser: argparse.ArgumentParser, in_fixtures: None
    ) -> None:
        """Keyed digests repeat under one key; a digest without a key is salted once."""
        roles = self.decay(parser, "cosine")
        assert audit(roles, key=self.KEY) == audit(roles, key=self.KEY)
        assert audit(roles, key=self.KEY) != audit(roles, key=b"t" * 32)
        assert audit(roles)["fingerprint"] != audit(roles)["fingerprint"]

    def test_a_value_given_back_is_checked_with_the_key(
        self, parser: argparse.ArgumentParser, in_fixtures: None, tmp_path: pathlib.Path
    ) -> None:
        """Read with its key, the real value replays; another value is refused."""
        roles = self.decay(parser, "cosine")
        path = write_audit(roles, tmp_path, key=self.KEY)
        record = load_audit(path, key=self.KEY)
        real = {"wandb_key": "cosine", "lr_decay_style": "cosine"}
        assert record.namespace("actor", secrets=real) == roles["actor"]
        with pytest.raises(AuditError, match="'lr_decay_style' is not the one recorded"):
            record.namespace("actor", secrets={**real, "lr_decay_style": "linear"})

    def test_only_the_part_holding_the_secret_is_marked(self) -> None:
        """In a list or mapping, the other items stay values; a tagged value is marked whole."""
        secret = "hf_0123456789"
        values = {"HF_TOKEN": secret, "tags": ["a", f"run-{secret}"], "p": (f"x{secret}",)}
        record = audit({"r": stack(hf_token=secret, env=values)})
        env = record["roles"]["r"]["settings"]["env"]["value"]
        assert env["HF_TOKEN"] == REDACTED
        assert env["tags"][0] == "a"
        assert env["tags"][1]["$type"] == "scrubbed"
        assert env["p"]["$type"] == "scrubbed"
        assert secret not in json.dumps(record)

    def test_signed_after_the_fact_replays_what_is_given(self) -> None:
        """sign(audit(roles), key): its digests are not keyed; a value given back is taken."""
        from layerconf.audits import sign

        secret = "hf_0123456789"
        data = sign(audit({"r": stack(hf_token=secret, name=f"run-{secret}")}), self.KEY)
        record = AuditRecord.from_dict(data, key=self.KEY)
        given = {"hf_token": secret, "name": f"run-{secret}"}
        assert record.namespace("r", secrets=given).name == f"run-{secret}"

    def test_diff_compares_by_digest(self) -> None:
        """Same key, same values: no change; unsigned: a change, shown as the record shows it."""
        secret = "hf_0123456789"

        def run(key: bytes | None) -> dict[str, Any]:
            return audit({"r": stack(hf_token=secret, name=f"run-{secret}")}, key=key)

        assert diff_audits(run(self.KEY), run(self.KEY)) == []
        [change] = diff_audits(run(None), run(None))
        assert change.key == "name"
        assert (
            str(change)
            == 'r name: <scrubbed "run-<redacted>"> from cli -> <scrubbed "run-<redacted>"> from cli'
        )

    def test_flatten_shows_what_the_record_shows(self) -> None:
        """A tracker gets the scrubbed text, never the digest."""
        secret = "hf_0123456789"
        record = audit({"r": stack(hf_token=secret, name=f"run-{secret}", tags=["a", secret])})
        flat = flatten(record)
        assert flat["r/name"] == "<scrubbed run-<redacted>>"
        assert flat["r/tags"] == '["a", "<scrubbed <redacted>>"]'

    @pytest.mark.parametrize(
        "marker",
        [
            {"$type": "scrubbed", "shown": "x"},
            {"$type": "scrubbed", "shown": "x", "digest": "ab", "keyed": False},
            {"$type": "scrubbed", "shown": "x", "digest": "a" * 64, "keyed": 1},
            {"$type": "scrubbed", "shown": "x", "digest": "a" * 64, "keyed": False, "y": 1},
        ],
    )
    def test_a_malformed_marker_is_refused(self, marker: dict[str, Any]) -> None:
        """validate() checks the marker's fields, in values and in history."""
        data = audit({"r": stack(x=1)})
        data["roles"]["r"]["settings"]["x"]["value"] = [marker]
        with pytest.raises(AuditError, match="scrubbed marker"):
            AuditRecord.from_dict(data, verify=False)


class TestFormatOne:
    """Records of format 1 (layerconf 0.1) still load, verify and replay."""

    def test_loads_and_verifies(self, tmp_path: pathlib.Path) -> None:
        """Its fingerprint is the format-1 one: sha256 of its prefix and the values."""
        values = '{"r":{"lr":1e-05,"name":"run"}}'
        fingerprint = hashlib.sha256(b"layerconf-fingerprint-1\n" + values.encode()).hexdigest()
        data = {
            "format": 1,
            "layerconf": "0.1.0",
            "fingerprint": fingerprint,
            "argv": ["--lr", "1e-05"],
            "files": {},
            "roles": {
                "r": {
                    "settings": {
                        "lr": {"value": 1e-05, "layer": "cli", "kind": "argv"},
                        "name": {"value": "run", "layer": "default", "kind": "default"},
                    }
                }
            },
        }
        path = tmp_path / "old.json"
        path.write_text(json.dumps(data))
        record = load_audit(path)
        assert (record.format, record.fingerprint) == (1, fingerprint)
        assert record.namespace("r").lr == 1e-05
        data["roles"]["r"]["settings"]["lr"]["value"] = 2e-05
        with pytest.raises(AuditError, match="does not match"):
            AuditRecord.from_dict(data)


class TestSignedRecords:
    """A key signs a record; checking with it refuses one unsigned, re-signed or changed."""

    KEY = b"k" * 32

    def test_signed_and_checked(self, tmp_path: pathlib.Path) -> None:
        path = write_audit({"r": stack(lr=1)}, tmp_path, key=self.KEY)
        record = load_audit(path, key=self.KEY)
        assert record.signed
        assert record.data["signature"]["alg"] == "hmac-sha256"
        assert load_audit(path).signed  # read without a key: not checked
        assert load_audit(path, key=self.KEY.decode()).fingerprint == record.fingerprint

    def test_a_forged_value_with_a_recomputed_fingerprint_is_refused(
        self, tmp_path: pathlib.Path
    ) -> None:
        """The fingerprint passes (anyone can recompute it); the signature does not."""
        path = write_audit({"r": stack(lr=1)}, tmp_path, key=self.KEY)
        data = json.loads(path.read_text())
        data["roles"]["r"]["settings"]["lr"]["value"] = 2
        data["fingerprint"] = audit_record_module._fingerprint(data["roles"])
        path.write_text(json.dumps(data))
        assert load_audit(path).namespace("r").lr == 2  # integrity alone: accepted
        with pytest.raises(AuditError, match="signature does not match"):
            load_audit(path, key=self.KEY)

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ("unsigned", "the record is not signed"),
            ("other key", "signature does not match"),
            ("other alg", "not an hmac-sha256 signature"),
        ],
    )
    def test_refused(self, tmp_path: pathlib.Path, change: str, message: str) -> None:
        key = b"another key" if change == "other key" else self.KEY
        path = write_audit({"r": stack(lr=1)}, tmp_path, key=None if change == "unsigned" else key)
        if change == "other alg":
            data = json.loads(path.read_text())
            data["signature"]["alg"] = "md5"
            path.write_text(json.dumps(data))
        with pytest.raises(AuditError, match=message):
            load_audit(path, key=self.KEY)

    def test_an_empty_key_is_refused(self, tmp_path: pathlib.Path) -> None:
        with pytest.raises(ValueError, match="must not be empty"):
            write_audit({"r": stack(lr=1)}, tmp_path, key=b"")

    def test_the_commands(self, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
        """audit --key-file signs; audit verify checks; the key is never printed."""
        from layerconf.cli import main

        key_file = tmp_path / "key"
        key_file.write_text("s3cr3t-signing-key\n")
        argv = ["--rollout-batch-size", "4", "--lr", "1e-6"]
        assert (
            main(["audit", "-o", f"{tmp_path / 'run'}/", "--key-file", str(key_file), "--", *argv])
            == 0
        )
        assert main(["audit", "verify", "--key-file", str(key_file), str(tmp_path / "run")]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"{tmp_path / 'run' / AUDIT_FILE}: signed with this key")
        assert load_audit(tmp_path / "run", key=b"s3cr3t-signing-key").signed
        other = tmp_path / "other"
        other.write_text("0th3r-k3y-bytes")
        assert main(["audit", "verify", "--key-file", str(other), str(tmp_path / "run")]) == 1
        assert main(["audit", "replay", "--key-file", str(other), str(tmp_path / "run")]) == 1
        empty = tmp_path / "empty"
        empty.write_text("\n")
        assert main(["audit", "verify", "--key-file", str(empty), str(tmp_path / "run")]) == 2
        captured = capsys.readouterr()
        assert "signature does not match" in captured.err
        assert "the file is empty: it holds no key" in captured.err
        assert "s3cr3t" not in captured.out + captured.err
        assert "0th3r-k3y" not in captured.out + captured.err
        # Several records, one of them not signed with the key: the others are still said good
        # (in order), the bad one is an error line, and the exit status is 1.
        assert main(["audit", "-o", f"{tmp_path / 'plain'}/", "--", *argv]) == 0
        capsys.readouterr()
        runs = [str(tmp_path / name) for name in ("run", "plain", "run")]
        assert main(["audit", "verify", "--key-file", str(key_file), *runs]) == 1
        captured = capsys.readouterr()
        assert captured.out.count(": signed with this key and unchanged since") == 2
        assert captured.err.count("error:") == 1
        assert str(tmp_path / "plain") in captured.err


class TestLoadAudit:
    """A wrong or damaged file is refused with its path, what is wrong and what to do."""

    def test_a_device_is_refused_at_once(self) -> None:
        """/dev/zero is never read (it never ends): an AuditError naming what it is."""
        with pytest.raises(AuditError, match="/dev/zero: is a character device, not a file"):
            load_audit("/dev/zero")

    def test_a_large_file_is_refused_unread(
        self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = write_audit({"r": stack(lr=1)}, tmp_path)
        monkeypatch.setattr(io_module, "MAX_RECORD_BYTES", 100)
        with pytest.raises(AuditError, match="is larger than 100 bytes"):
            load_audit(path)

    def test_deeply_nested_json_is_refused(self, tmp_path: pathlib.Path) -> None:
        """Nesting that would exhaust the JSON decoder's recursion is an AuditError."""
        path = tmp_path / "deep.json"
        path.write_text("[" * 200_000 + "]" * 200_000)
        with pytest.raises(AuditError, match="nests too deeply"):
            load_audit(path)

    def test_a_missing_file_is_still_file_not_found(self, tmp_path: pathlib.Path) -> None:
        with pytest.raises(FileNotFoundError):
            load_audit(tmp_path / "nothing.json")

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ("", "the file is empty, not an audit record; write it again with layerconf"),
            ('{"format": 1, "roles": {', "not valid JSON .*truncated.*write it again"),
            ("[1, 2]", "it is an array, not an object; write it again"),
            ('{"a": 1}', "it has no 'format' field; is it a layerconf audit record"),
            ('{"format": 3}', "format 3 was written by a newer layerconf.*: upgrade it"),
            ('{"format": "1"}', r"its format is '1'; this layerconf \(.*\) reads formats 1 to 2"),
            ('{"format": true}', "its format is True"),
            (
                '{"format": 1, "layerconf": "0", "fingerprint": "", "argv": 3, "files": {}}',
                "'argv' is a number, not an array or null; it has no 'roles' field; write it",
            ),
            (
                '{"format": 1, "layerconf": "0", "fingerprint": "", "argv": null, "files": {},'
                ' "roles": {"r": {"settings": {"lr": {"layer": 1}}, "events": {}}}}',
                r"roles.r.settings.lr has no 'value'; roles.r.events is not an array",
            ),
            (  # a wrong field and a wrong role section: both told at once
                '{"format": 1, "layerconf": "0", "fingerprint": "", "argv": 3, "files": {},'
                ' "roles": {"r": {"settings": {"lr": {"layer": "cli"}}}}}',
                "'argv' is a number, not an array or null; roles.r.settings.lr has no 'value'",
            ),
            ('{"format": 1, "x": NaN}', "not valid JSON"),
        ],
    )
    def test_bad_files(self, tmp_path: pathlib.Path, content: str, message: str) -> None:
        """Each kind of damage has its own message, prefixed with the file."""
        path = tmp_path / AUDIT_FILE
        path.write_text(content)
        with pytest.raises(AuditError, match=message) as caught:
            load_audit(path)
        where = f"{path}:{caught.value.line}:{caught.value.column}" if caught.value.line else path
        assert str(caught.value).startswith(f"{where}: ")
        assert caught.value.path == str(path)

    @pytest.mark.parametrize(
        ("content", "line", "column", "why"),
        [
            ('{"format": 1,\n "format": 2}', 2, 2, "the key 'format' appears twice in one object"),
            (
                '{"roles": {"a": {"lr": 1}, "b": {"lr": 1,\n  "x": [1, {"lr": 2}], "lr": 3}}}',
                2,
                24,
                "the key 'lr' appears twice in one object",
            ),
            ('{"format": 1, "x": [1,\n   NaN]}', 2, 4, "NaN is not a JSON value"),
            ('{"x": -Infinity}', 1, 7, "-Infinity is not a JSON value"),
            ('{"s": "NaN 1e999", "x": 1e999}', 1, 25, "the number 1e999 is out of range"),
            ('{"x":\n' + "7" * 5000 + "}", 2, 1, "an integer of 5,000 digits (at most 4,300)"),
            ('{"format": 1,,}', 1, 14, "Expecting property name enclosed in double quotes"),
            ('{"a": 1,\n "\\u0061": 2}', 2, 2, "the key 'a' appears twice in one object"),
            ('{"\\u00e9": 1, "\\u00E9": 2}', 1, 15, "the key '\u00e9' appears twice in one object"),
        ],
    )
    def test_not_json_where(
        self, tmp_path: pathlib.Path, content: str, line: int, column: int, why: str
    ) -> None:
        """JSON the reader refuses is told at its line and column, whatever refused it."""
        path = tmp_path / AUDIT_FILE
        path.write_text(content)
        with pytest.raises(AuditError) as caught:
            load_audit(path)
        assert (caught.value.line, caught.value.column) == (line, column)
        assert str(caught.value).startswith(
            f"{path}:{line}:{column}: not a layerconf audit record: it is not valid JSON ({why}); "
        )
        assert "set_int_max_str_digits" not in str(caught.value)  # (Python's advice, not ours)
        again = pickle.loads(pickle.dumps(caught.value))
        assert (str(again), again.line, again.column) == (str(caught.value), line, column)

    def test_not_json_where_unknown(self, tmp_path: pathlib.Path) -> None:
        """A large file: told, without a place."""
        path = tmp_path / AUDIT_FILE
        path.write_text('{"x": "' + "a" * (2 * 1024 * 1024) + '", "y": NaN}')
        with pytest.raises(AuditError, match="not valid JSON") as caught:
            load_audit(path)
        assert caught.value.line is None
        assert str(caught.value).startswith(f"{path}: ")

    def test_not_json_where_the_scan_meets_worse(self, tmp_path: pathlib.Path) -> None:
        """The place-finding scan reads past where the decoder stopped (a key written twice
        in two spellings): an invalid escape there is no exception of its own."""
        path = tmp_path / AUDIT_FILE
        path.write_text('[{"a": 1, "\\u0061": 2}, {"\\x": 1, "\\x": 2}]')
        with pytest.raises(AuditError, match="not valid JSON"):
            load_audit(path)

    def test_a_missing_file(self, tmp_path: pathlib.Path) -> None:
        """No file at all is an ordinary FileNotFoundError."""
        with pytest.raises(FileNotFoundError):
            load_audit(tmp_path / "nothing.json")

    def test_properties(self, parser: argparse.ArgumentParser, in_fixtures: None) -> None:
        """The record's fields, read back."""
        roles = ppo(parser)
        record = AuditRecord.from_dict(audit(roles))
        assert (record.format, record.roles) == (2, ("actor", "critic"))
        assert record.argv == tuple(ARGV)
        assert list(record.files) == ["slime_ppo_megatron.yaml"]
        assert record.to_dict() == audit(roles)
        assert record.values("critic")["attention_backend"] is AttnBackend.flash


class TestFlatten:
    """flatten() gives flat role/key params for W&B or MLflow, dropping nothing."""

    def test_real_fixture(self, parser: argparse.ArgumentParser, in_fixtures: None) -> None:
        """One entry per key and role; every value a JSON scalar."""
        roles = ppo(parser)
        flat = flatten(audit(roles))
        assert flat["critic/lr"] == 1e-05
        assert flat["actor/lr"] == 1e-06
        assert flat["critic/attention_backend"] == "AttnBackend.flash"
        assert flat["critic/exit_signal"] == "Signals.SIGTERM"
        assert (
            flat["critic/eval_prompt_data"]
            == '["aime24", "/root/datasets/aime-2024/aime-2024.jsonl"]'
        )
        assert flat["critic/train_env_vars"] == "{}"
        assert len(flat) == sum(len(vars(ns)) for ns in roles.values())
        assert all(
            value is None or type(value) in (bool, int, float, str) for value in flat.values()
        )

    def test_nested_and_tagged_values(self) -> None:
        """Mappings become dotted keys; tags read as what they hold."""
        flat = flatten(
            audit(
                {
                    "r": stack(
                        opt={"beta": 0.9, "eps": {"v": 1}},
                        path=pathlib.PurePosixPath("/x"),
                        nan=float("nan"),
                        tags=(1, "a"),
                        obj=Opaque(),
                    )
                }
            )
        )
        assert flat == {
            "r/opt.beta": 0.9,
            "r/opt.eps.v": 1,
            "r/path": "/x",
            "r/nan": "nan",
            "r/tags": '[1, "a"]',
            "r/obj": "Opaque(7)",
        }

    def test_long_values_are_split_not_dropped(self) -> None:
        """Past max_length a value is split into numbered parts that concatenate back."""
        long = "x" * 6000 + "y" * 10
        flat = flatten(audit({"r": stack(long=long, short="s")}), max_length=6000)
        assert flat == {"r/long--1-of-2": "x" * 6000, "r/long--2-of-2": "y" * 10, "r/short": "s"}
        assert "".join(flat[f"r/long--{n}-of-2"] for n in (1, 2)) == long
        with pytest.raises(ValueError, match="max_length must be at least 1"):
            flatten(audit({"r": stack()}), max_length=0)

    def test_names_that_collide_are_refused(self) -> None:
        """A key spelt like a nested path would hide a value: flatten raises instead."""
        record = audit({"r": stack(**{"opt.b": 1, "opt": {"b": 2}})})
        with pytest.raises(ValueError, match=r"two values the name 'r/opt\.b'"):
            flatten(record)


class TestDiff:
    """diff_audits() says which values changed between two runs, and from which layer."""

    def test_real_fixture(self, parser: argparse.ArgumentParser, in_fixtures: None) -> None:
        """A changed command-line value, in both roles, with where each side came from."""
        before = audit(ppo(parser))
        after = AuditRecord.from_dict(audit(ppo(parser, "--seed", "7", "--kl-coef", "0.1")))
        assert diff_audits(before, before) == []
        changes = diff_audits(before, after)
        assert [(c.role, c.key, c.before, c.after) for c in changes] == [
            ("actor", "seed", 1234, 7),
            ("actor", "kl_coef", 0.0, 0.1),
            ("critic", "seed", 1234, 7),
        ]
        assert changes[0].before_origin is not None
        assert changes[0].after_origin is not None
        assert (changes[0].before_origin.layer, changes[0].after_origin.layer) == ("default", "cli")
        assert str(changes[0]) == "actor seed: 1234 from default -> 7 from cli argv[109] '--seed'"

    def test_types_leaves_keys_and_roles(self) -> None:
        """1 -> 1.0 is a change; mappings differ leaf by leaf; keys and roles come and go."""
        before = audit({"a": stack(x=1, opt={"b": 1, "c": 2}, gone=0), "old": stack()})
        after = audit({"a": stack(x=1.0, opt={"b": 1, "c": 3}, new=1), "new": stack()})
        assert [(c.role, c.key, c.kind, c.before, c.after) for c in diff_audits(before, after)] == [
            ("a", "x", "changed", 1, 1.0),
            ("a", "opt.c", "changed", 2, 3),
            ("a", "gone", "removed", 0, None),
            ("a", "new", "added", None, 1),
            ("old", None, "removed", None, None),
            ("new", None, "added", None, None),
        ]
        assert [str(c) for c in diff_audits(before, after)][-3:] == [
            "a new: added 1 from cli",
            "role old: removed",
            "role new: added",
        ]

    def test_a_secret_of_a_hand_made_record_is_not_shown(self) -> None:
        """A change's str() and repr() redact what a record of someone else's holds under a
        secret key, or in a URL's password; its values stay the record's."""
        before = audit({"a": stack(wandb_key=None, opt={"hf_token": "hf_one1234"}, url="u")})
        after = copy.deepcopy(before)
        after["roles"]["a"]["settings"]["wandb_key"]["value"] = "SEKRIT-1234567"
        after["roles"]["a"]["settings"]["opt"]["value"]["hf_token"] = "hf_two1234"
        after["roles"]["a"]["settings"]["url"]["value"] = "https://me:passw0rd-1@host/"
        changes = diff_audits(before, after)
        assert [c.after for c in changes] == [
            "SEKRIT-1234567",
            "hf_two1234",
            "https://me:passw0rd-1@host/",
        ]
        for change in changes:
            for text in (str(change), repr(change)):
                for secret in ("SEKRIT", "hf_one", "hf_two", "passw0rd"):
                    assert secret not in text


class TestLeaves:
    """Nested mappings get one entry per leaf, so explain works on replayed dotted keys."""

    def test_leaf_entries(self) -> None:
        """Each leaf has the origin of the layer that set it."""
        namespace = LayerStack(
            [
                Layer.from_mapping("default", {"opt": {"b1": 0.9, "b2": 0.95}}),
                Layer.from_mapping("role", {"opt": {"b2": 0.98}}, source="critic.yaml"),
            ]
        ).resolve()
        leaves = audit({"r": namespace})["roles"]["r"]["leaves"]
        assert leaves["opt.b1"]["layer"] == "default"
        assert leaves["opt.b2"]["source"] == "critic.yaml"
        assert leaves["opt.b2"]["history"][0]["reason"] == Reason.OVERRIDDEN.value
        replayed = AuditRecord.from_dict(audit({"r": namespace})).namespace("r")
        assert explain(replayed, "opt.b2").source == "critic.yaml"


def _layout(value: Any, depth: int = 0) -> str:
    """The file's layout, as docs/audit.md describes it, one `compact` call at a time."""
    if depth < 4 and type(value) in (dict, list) and value:
        pad = " " * (depth + 1)
        if type(value) is dict:
            lines = [  # a key as JSON writes an object's keys, then its value, in turn
                f"{pad}{compact({k: 0})[1:-4]}: {_layout(v, depth + 1)}" for k, v in value.items()
            ]
            return "{\n" + ",\n".join(lines) + "\n" + " " * depth + "}"
        lines = [pad + _layout(item, depth + 1) for item in value]
        return "[\n" + ",\n".join(lines) + "\n" + " " * depth + "]"
    return compact(value)


def _outcome(dumps: Any, tree: Any) -> Any:
    try:
        return dumps(tree)
    except (TypeError, ValueError) as error:
        return type(error), str(error)


_json_keys = st.one_of(st.text(max_size=4), st.integers(-3, 3), st.floats(), st.none())
_json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6), st.binary(max_size=2)
)


def _json_containers(children: Any) -> Any:
    return st.one_of(
        st.lists(children, max_size=4), st.dictionaries(_json_keys, children, max_size=4)
    )


class TestText:
    """The file is one key per line: easy to grep and diff."""

    def test_layout(self) -> None:
        """Nesting down to the settings, then one compact line per entry."""
        text = dumps(audit({"r": stack(lr=1e-5)}))
        assert text.splitlines()[:3] == ["{", ' "format": 2,', ' "layerconf": "0.1.0",']
        assert '    "lr": {"value": 1e-05, "layer": "cli", "kind": "argv"}' in text.splitlines()

    @settings(deadline=None, max_examples=300)
    @given(st.recursive(_json_leaves, _json_containers, max_leaves=40))
    def test_any_tree(self, tree: Any) -> None:
        """Any JSON-shaped data: indented one level a step down to depth 4, then compact, keys
        in their order; the same error (a cycle, a NaN, a type JSON cannot hold) as compact."""
        outcome = _outcome(dumps, tree)
        assert outcome == _outcome(_layout, tree)
        if isinstance(outcome, str):  # JSON, whatever the keys (a number's in quotes)
            assert json.loads(outcome) == json.loads(json.dumps(tree, default=repr))

    def test_keys_that_are_not_str(self) -> None:
        """A record's mapping with a number or None as a key is written as JSON writes it, in
        quotes; a record given as another Mapping is written as its dict."""
        record = {"roles": {"r": {"settings": {1: {"value": 1}, None: 2, 2.5: 3}}}, 7: True}
        assert json.loads(record_bytes(record)) == json.loads(json.dumps(record))
        assert record_bytes(types.MappingProxyType(record)) == record_bytes(record)
        with pytest.raises(TypeError, match="keys must be str"):
            record_bytes({(1, 2): 0, "a": 1})

    @settings(deadline=None, max_examples=300)
    @given(st.lists(st.recursive(_json_leaves, _json_containers, max_leaves=20), max_size=6))
    def test_one_canonical_encoder_for_many_values(self, trees: list[Any]) -> None:
        """The fingerprint's encoder made once (`canonical_encoder`) gives each value the text
        `canonical` gives it, and its error, value after value."""
        encode = canonical_encoder()
        for tree in trees:
            assert _outcome(encode, tree) == _outcome(canonical, tree)

    @settings(deadline=None, max_examples=300)
    @given(st.lists(st.recursive(_json_leaves, _json_containers, max_leaves=20), max_size=6))
    def test_one_canonical_chunks_until_an_error(self, trees: list[Any]) -> None:
        """One C encoder (`canonical_chunks`, as `entry_texts` takes it) gives each value the
        text `canonical` gives it, value after value, up to the first that fails, which fails
        as `canonical` fails."""
        encode = canonical_chunks()
        for tree in trees:
            outcome = _outcome(lambda value: "".join(encode(value, 0)), tree)
            assert outcome == _outcome(canonical, tree)
            if not isinstance(outcome, str):
                break

    def test_a_cycle(self) -> None:
        """A list that holds itself, deep in an entry, is refused as compact refuses it."""
        loop: list[Any] = [1]
        loop.append(loop)
        tree = {"roles": {"r": {"settings": {"k": {"value": loop}}}}}
        assert _outcome(dumps, tree) == (ValueError, "Circular reference detected")


# Secret-like text: at least one character that is not hex, so it cannot be a digest by chance.
secret_texts = st.text(alphabet='0123456789XYZ!#"\\é', min_size=6).filter(
    lambda text: any(c in text for c in 'XYZ!#"\\é')
)


@settings(deadline=None)
@given(st.dictionaries(st.sampled_from(["wandb_key", "hf_token", "lr"]), secret_texts))
def test_a_secret_value_never_leaks(values: dict[str, str]) -> None:
    """Whatever the secrets hold, no secret value survives in the record's text."""
    record = json.dumps(audit({"r": stack(**values)}))
    for key, value in values.items():
        if is_secret(key):
            assert json.dumps(value)[1:-1] not in record.replace(REDACTED, "")


class _Text(str):
    """A str subclass, as a library's string type or a str enum's member is."""


@pytest.mark.parametrize(
    "value",
    [
        ' {"api_key": "SECRETVAL1"}',  # JSON after whitespace: json.loads reads it all the same
        '\n\t[{"hf_token": "SECRETVAL1"}]',
        _Text('{"api_key": "SECRETVAL1"}'),
        _Text("https://user:SECRETVAL1@host/"),
        "https://user:SECRETVAL1@host/",
    ],
    ids=["space-json", "newline-json", "subclass-json", "subclass-url", "url"],
)
def test_a_secret_inside_a_plain_keys_text_never_leaks(value: str, tmp_path: pathlib.Path) -> None:
    """A value under a key that is not a secret's still hides what its form shows."""
    roles = {"r": stack(note=value), "s": stack(note=value, lr=1e-5)}
    assert "SECRETVAL1" not in json.dumps(audit(roles))
    assert b"SECRETVAL1" not in write_audit(roles, tmp_path).read_bytes()


class TestFingerprintFromTexts:
    """audit puts the fingerprint's canonical text together from the value texts it worked out
    on the way: the same fingerprint as the canonical text of the record's values, encoded."""

    def test_real_fixture(self, parser: argparse.ArgumentParser, in_fixtures: None) -> None:
        roles = ppo(parser)  # (no secret in the fixture: the text path, not a scrubbed record)
        roles["critic"].lr = 3e-6
        record = audit(roles)
        assert record["fingerprint"] == audit_record_module._fingerprint(record["roles"])

    @settings(deadline=None)
    @given(layer_lists(), policies)
    def test_generated_stacks(self, layers: list[Layer], merge: dict[str, Any]) -> None:
        roles = {
            "main": LayerStack(layers, policies=merge).resolve(),
            "a b": LayerStack(layers[:1]).resolve(),
            "other": argparse.Namespace(),
        }
        record = audit(roles)
        assert record["fingerprint"] == audit_record_module._fingerprint(record["roles"])

    def test_values_of_every_plain_type(self) -> None:
        """Each value the text path writes, and those it leaves to the encoder."""
        values = {
            "one": 1,
            "true": True,
            "none": None,
            "negative_zero": -0.0,
            "small": 1e-05,
            "big": 2**62,
            "huge": 2**13_001,
            "inf": float("inf"),
            "text": 'ünï "q" \\ \u2028 \x00 😀',
            "url": "https://host/x",
            "json": '{"a": 1}',
            "level": Level.low,
            "ü-key": 2,
        }
        roles = {"r": LayerStack([Layer.from_mapping("defaults", values)]).resolve()}
        record = audit(roles)
        assert record["fingerprint"] == audit_record_module._fingerprint(record["roles"])
