"""The value texts an audit keeps for a large group of keys (`audits.texts.group_texts`, a
profile's defaults audit after audit): never the text of another value, whatever changed since,
whichever thread asks."""

from __future__ import annotations

import enum
import pathlib
import threading
from typing import Any

from layerconf import Layer, LayerStack, Namespace
from layerconf.audits import audit, record_bytes, write_audit
from layerconf.audits import texts as texts_module
from layerconf.audits.codec import Encoder
from layerconf.audits.fingerprint import fingerprint
from layerconf.audits.texts import group_tails, group_texts, scalar_texts
from layerconf.core.secrets import SECRETS


class Level(enum.IntEnum):
    low = 1
    high = 2


SIZE = 2 * texts_module._GROUP  # a group large enough for its texts to be kept


def _roles(values: dict[str, Any]) -> dict[str, Namespace]:
    """One role whose keys are one group of the walk (one layer set them all)."""
    return {"r": LayerStack([Layer.from_mapping("defaults", values)]).resolve()}


def _check(roles: dict[str, Namespace], directory: pathlib.Path) -> bytes:
    """The record of `roles` says their values; its fingerprint and file, made from the value
    texts, are those of its entries encoded again. Gives the file's bytes."""
    record = audit(roles)
    for role, namespace in roles.items():
        settings = record["roles"][role]["settings"]
        encoded = {key: Encoder(SECRETS).value(value) for key, value in vars(namespace).items()}
        assert {key: entry["value"] for key, entry in settings.items()} == encoded
    assert record["fingerprint"] == fingerprint(record["roles"])
    written = write_audit(roles, directory).read_bytes()
    assert written == record_bytes(record)
    return written


def test_groups_of_one_size_with_other_values(tmp_path: pathlib.Path) -> None:
    """Groups of the same size, one after the other: each its own values' texts."""
    numbers = {f"k{i}": i + 0.5 for i in range(SIZE)}
    words = {f"k{i}": f"w{i}" for i in range(SIZE)}
    mixed = {f"k{i}": [None, True, 7, 2.5, "x", Level.low][i % 6] for i in range(SIZE)}
    files = [_check(_roles(values), tmp_path) for values in (numbers, words, mixed, numbers)]
    assert files[0] == files[3]
    assert len(set(files)) == 3


def test_a_key_given_a_new_object(tmp_path: pathlib.Path) -> None:
    """The layer and the namespace both given a new object for a key after an audit: the
    next audit writes the new value (the group is as large as before)."""
    layer = Layer.from_mapping("defaults", {f"k{i}": i + 0.5 for i in range(SIZE)})
    namespace = LayerStack([layer]).resolve()
    before = _check({"r": namespace}, tmp_path)
    new = 12345.25
    layer.values["k3"] = new  # behind the stack's back: the walk still takes the group whole
    vars(namespace)["k3"] = new
    after = _check({"r": namespace}, tmp_path)
    assert b'"k3": {"value": 12345.25,' in after
    assert b'"k3": {"value": 3.5,' in before


def test_a_group_with_a_value_of_no_text(tmp_path: pathlib.Path) -> None:
    """A group whose values include an enum member (its entry is encoded: no text) is kept
    too; another group of its size, with other values, gets its own texts."""
    level = {f"k{i}": Level.low if i == 3 else i + 0.5 for i in range(SIZE)}
    other = {f"k{i}": Level.high if i == 3 else i + 1.5 for i in range(SIZE)}
    files = [_check(_roles(values), tmp_path) for values in (level, other, level)]
    assert files[0] == files[2] != files[1]
    assert group_texts(list(level), list(level.values())).shown == scalar_texts(
        list(level.values())
    )


def test_texts_kept_are_of_their_values() -> None:
    """`group_texts` gives `scalar_texts` of what it is given, with the keys and values
    that have a text and their texts by key, and the keys of those that have none: a value
    the same object or not, the same keys or not, of a type with a text or not."""
    keys = [f"k{i}" for i in range(SIZE)]

    def expected(keys: list[str], values: list[Any]) -> tuple[Any, ...]:
        shown = scalar_texts(values)
        plain = [
            (key, value, text) for key, value, text in zip(keys, values, shown, strict=True) if text
        ]
        return (
            shown,
            [key for key, _, _ in plain],
            [value for _, value, _ in plain],
            {key: text for key, _, text in plain},
            [key for key, text in zip(keys, shown, strict=True) if not text],
        )

    def given(keys: list[str], values: list[Any]) -> tuple[Any, ...]:
        group = group_texts(keys, values)
        return group.shown, group.keys, group.current, group.texts, group.blank

    first = [float(i) for i in range(SIZE)]
    again = [float(i) for i in range(SIZE)]  # equal values, other objects
    other = [*first[:-1], "https://u:p@host/x"]  # a URL's text is searched, never kept
    mixed = [Level.low if i % 3 else float(i) for i in range(SIZE)]
    renamed = [f"r{i}" for i in range(SIZE)]
    cases = [(keys, first), (keys, again), (keys, other), (keys, mixed), (renamed, first)]
    for names, values in cases:
        assert given(names, values) == expected(names, values)
        assert given(names, values) == expected(names, values)  # (kept, or not)
    tails = group_tails(group_texts(keys, first), ", x}")
    assert tails == dict.fromkeys(keys, ", x}")
    assert group_tails(group_texts(keys, first), ", y}") == dict.fromkeys(keys, ", y}")


def test_threads(tmp_path: pathlib.Path) -> None:
    """Threads auditing groups of one size with other values, at once: each its own texts."""
    stacks = [_roles({f"k{i}": i * scale + 0.25 for i in range(SIZE)}) for scale in (1, 2, 3, 4)]
    start = threading.Barrier(len(stacks))
    failures: list[BaseException] = []

    def work(index: int) -> None:
        start.wait()
        try:
            for _ in range(40):
                record = audit(stacks[index])  # the fingerprint from the texts, and encoded
                assert record["fingerprint"] == fingerprint(record["roles"])
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(len(stacks))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def test_equal_values_of_other_texts(tmp_path: pathlib.Path) -> None:
    """0.0 and -0.0, 1 and True and 1.0 are equal, not the same text: each audit writes its own
    values, the group as large as before."""
    for series in ([0.0, -0.0, 0.0], [1, True, 1.0, 1]):
        for other in ({}, {"level": Level.low}):  # (a value with no text in the group, or not)
            written = [
                _check(_roles({**{f"k{i}": value for i in range(SIZE)}, **other}), tmp_path)
                for value in series
            ]
            assert len(set(written)) == len(set(map(repr, series)))


def test_a_value_of_no_text_replaced_by_one_with_a_text(tmp_path: pathlib.Path) -> None:
    values: dict[str, Any] = {f"k{i}": i for i in range(SIZE)}
    before = _check(_roles({**values, "level": Level.low}), tmp_path)
    after = _check(_roles({**values, "level": 7}), tmp_path)
    assert b'"level": {"value": 7,' in after
    assert b'"level": {"value": 7,' not in before


def test_nothing_without_a_text_outlives_its_namespace(tmp_path: pathlib.Path) -> None:
    """A large group's texts are kept, but no value that has none (a tuple holding a URL with a
    password, bytes, any object): those go with their namespace."""
    import gc
    import weakref

    held = frozenset({"a", "b"})  # (no text, and it can be watched)
    watched = weakref.ref(held)
    values: dict[str, Any] = {f"k{i}": i for i in range(SIZE)}
    values["mirror"] = ("https://user:hunter2@mirror/x",)
    values["held"] = held
    roles = _roles(values)
    record = audit(roles)
    assert b"hunter2" not in write_audit(roles, tmp_path).read_bytes()
    del roles, values, held, record
    gc.collect()
    assert watched() is None
    kept = [value for _, group in texts_module._KEPT.values() for value in group.current]
    assert not any(isinstance(value, tuple) for value in kept)


def test_at_most_so_many_groups_kept(tmp_path: pathlib.Path) -> None:
    for size in range(SIZE, SIZE + 2 * texts_module._KEPT_MAX):
        _check(_roles({f"k{i}": i for i in range(size)}), tmp_path)
        assert len(texts_module._KEPT) <= 8


def test_a_list_changed_in_place(tmp_path: pathlib.Path) -> None:
    """A list in the group (no text: encoded whole) appended to between two audits."""
    items = [1, 2]
    values: dict[str, Any] = {**{f"k{i}": i for i in range(SIZE)}, "items": items}
    roles = _roles(values)
    before = _check(roles, tmp_path)
    vars(roles["r"])["items"].append(3)
    after = _check(roles, tmp_path)
    assert b"[1, 2, 3]" in after
    assert b"[1, 2, 3]" not in before
