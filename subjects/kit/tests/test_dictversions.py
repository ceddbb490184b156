"""DictVersions reports exactly the dicts that changed since an earlier read, in one pass over all of them."""

from __future__ import annotations

import pytest

pytest.importorskip("numpy")

from devsim_subject_kit.dictversions import DictVersions


def test_a_read_reports_the_changed_dicts_and_only_them():
    held = object()
    dicts: list[dict] = [{"a": held}, {}, {"b": 1}, {"c": held}]
    versions = DictVersions.of(dicts)
    assert versions is not None
    before = versions.read()
    dicts[0]["a"] = held  # the object it already holds: no change
    dicts[1]["new"] = 1
    dicts[3]["c"] = object()
    assert versions.changed(before, versions.read()) == [1, 3]


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(k=2),
        lambda d: d.pop("k"),
        lambda d: d.clear(),
        lambda d: d.setdefault("other", 1),
        lambda d: d.popitem(),
    ],
    ids=["a replaced value", "a removal", "a clear", "an insertion", "a popped item"],
)
def test_every_change_moves_the_tag(change):
    d = {"k": 1}
    versions = DictVersions.of([d])
    assert versions is not None
    before = versions.read()
    change(d)
    assert versions.changed(before, versions.read()) == [0]


def test_nothing_to_read_gives_no_reader():
    assert DictVersions.of([]) is None
