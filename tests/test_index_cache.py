"""A split's index kept on disk (`prior.trainers.index_cache`): a record reads back as the index
it was made from, is used again only for the same catalog and arguments, and one that does not
read back is indexed again."""

from __future__ import annotations

import dataclasses
import logging
import shutil

import numpy as np
import pytest

import prior.trainers.index_cache as index_cache
from prior.errors import DataError
from prior.featurestore import open_store
from prior.featurestore.compact import compact_store
from prior.trainers.index_cache import cached_index_split, record_path, records_dir
from prior.trainers.reader import SplitReader
from prior.trainers.split_index import Locator, SplitIndex, index_split
from tests.trainers_fixtures import many_pairs_store, tiny_tokenizer


@pytest.fixture(scope="module")
def location(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("many") / "s"
    many_pairs_store(path)
    return path


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))  # no record of another test


def same_locator(a: Locator, b: Locator) -> None:
    assert [s.id for s in a.segments] == [s.id for s in b.segments]
    np.testing.assert_array_equal(a.seg, b.seg)
    np.testing.assert_array_equal(a.item, b.item)


def same_index(a: SplitIndex, b: SplitIndex) -> None:
    assert (a.dataset, a.split, a.label_kind, a.label_names, a.fingerprint, a.skipped) == (
        b.dataset, b.split, b.label_kind, b.label_names, b.fingerprint, b.skipped)
    for x, y in ((a.sent_a, b.sent_a), (a.sent_b, b.sent_b), (a.labels, b.labels)):
        np.testing.assert_array_equal(x, y)
        assert getattr(x, "dtype", None) == getattr(y, "dtype", None)
    same_locator(a.words, b.words)
    assert list(a.pair_locs) == list(b.pair_locs) and list(a.sentence_locs) == list(b.sentence_locs)
    for k in a.pair_locs:
        same_locator(a.pair_locs[k], b.pair_locs[k])
    for k in a.sentence_locs:
        same_locator(a.sentence_locs[k], b.sentence_locs[k])
    assert (a.plan is None) == (b.plan is None)
    if a.plan is not None and b.plan is not None:
        assert (a.plan.read, a.plan.entries, a.plan.column, a.plan.fingerprint) == (
            b.plan.read, b.plan.entries, b.plan.column, b.plan.fingerprint)


def no_index(*a, **k):
    raise AssertionError("the split was indexed again")


@pytest.mark.parametrize("feature", ["dep", "sdoi", "emb", None])
def test_a_record_reads_back_as_the_index_and_the_batches_are_the_same(location, monkeypatch, feature) -> None:
    store = open_store(location, create=False)
    fresh = index_split(store, "many", "train", feature=feature)
    made = cached_index_split(store, "many", "train", feature=feature)
    assert list(records_dir().glob("*.npz")) == [record_path(store, "many", "train", feature=feature)]
    monkeypatch.setattr(index_cache, "index_split", no_index)
    read = cached_index_split(open_store(location, create=False), "many", "train", feature=feature)
    same_index(fresh, made)
    same_index(fresh, read)
    positions = np.random.default_rng(0).permutation(len(fresh))[:40]
    every = np.arange(len(positions))
    a = SplitReader(fresh, tiny_tokenizer(), 64).read(positions).batch_arrays(every)
    b = SplitReader(read, tiny_tokenizer(), 64).read(positions).batch_arrays(every)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_other_arguments_or_another_catalog_index_again(location, tmp_path, monkeypatch) -> None:
    store = open_store(location, create=False)
    cached_index_split(store, "many", "train", feature="dep")
    cached_index_split(store, "many", "train", feature="dep", limit=50)
    cached_index_split(store, "many", "test", feature="dep")
    assert len(list(records_dir().glob("*.npz"))) == 3
    copy = tmp_path / "copy"
    shutil.copytree(location, copy)
    before = index_split(open_store(copy, create=False), "many", "train", feature="dep")
    assert compact_store(open_store(copy)).merges  # new segment ids: another catalog
    calls = []

    def counted(*a, **k):
        calls.append(1)
        return index_split(*a, **k)

    monkeypatch.setattr(index_cache, "index_split", counted)
    after = cached_index_split(open_store(copy, create=False), "many", "train", feature="dep")
    assert calls == [1]
    assert after.fingerprint == before.fingerprint and after.words.segments != before.words.segments
    cached_index_split(open_store(copy, create=False), "many", "train", feature="dep")
    assert calls == [1]


def test_a_damaged_record_is_removed_and_the_split_indexed_again(location, monkeypatch) -> None:
    store = open_store(location, create=False)
    fresh = cached_index_split(store, "many", "train", feature="dep")
    (path,) = records_dir().glob("*.npz")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a truncated file
    again = cached_index_split(open_store(location, create=False), "many", "train", feature="dep")
    same_index(fresh, again)
    assert path.exists() and path.read_bytes() == data  # written again whole
    raw = bytearray(data)
    raw[len(raw) // 3] ^= 0xFF  # a flipped byte inside an array: the archive's CRC
    path.write_bytes(bytes(raw))
    same_index(fresh, cached_index_split(open_store(location, create=False), "many", "train", feature="dep"))


@pytest.mark.parametrize("keep", [0, 5])
def test_a_record_of_arrays_that_do_not_fit_the_split_is_indexed_again(location, keep) -> None:
    store = open_store(location, create=False)
    fresh = index_split(store, "many", "train", feature="dep")
    words = fresh.words
    short = dataclasses.replace(fresh, words=Locator(words.segments, words.seg[:keep], words.item[:keep]))
    path = record_path(store, "many", "train", feature="dep")
    index_cache.save(short, path, 2**30)  # a whole archive, its words' arrays shorter than the split's sentences
    same_index(fresh, cached_index_split(open_store(location, create=False), "many", "train", feature="dep"))
    same_index(fresh, index_cache.load(store, path))  # recorded again, whole


def test_the_bound_drops_the_least_recently_used_records_and_0_switches_the_cache_off(location, monkeypatch) -> None:
    store = open_store(location, create=False)
    cached_index_split(store, "many", "train", feature="dep")
    (first,) = records_dir().glob("*.npz")
    size = first.stat().st_size
    monkeypatch.setenv("PRIOR_INDEX_CACHE_MB", str(1.5 * size / 2**20))  # room for one record
    cached_index_split(store, "many", "train", feature="dep", limit=60)
    assert len(list(records_dir().glob("*.npz"))) == 1 and not first.exists()
    monkeypatch.setenv("PRIOR_INDEX_CACHE_MB", "0")
    shutil.rmtree(records_dir())
    cached_index_split(store, "many", "train", feature="dep")
    assert not records_dir().exists()
    monkeypatch.setenv("PRIOR_INDEX_CACHE_MB", "lots")
    with pytest.raises(DataError, match="PRIOR_INDEX_CACHE_MB='lots' is not a number of megabytes"):
        cached_index_split(store, "many", "train", feature="dep")


def test_a_record_says_what_the_build_left_out_as_the_index_does(location, caplog) -> None:
    store = open_store(location, create=False)
    index = dataclasses.replace(index_split(store, "many", "train", feature="dep"),
                                skipped={"over the 6-word limit": 2})
    index_cache.save(index, record_path(store, "many", "train", feature="dep"), 2**30)
    with caplog.at_level(logging.WARNING):
        read = cached_index_split(store, "many", "train", feature="dep")
    assert read.skipped == {"over the 6-word limit": 2}
    assert "2 pairs of many/train skipped at build: over the 6-word limit" in {r.getMessage() for r in caplog.records}


def test_record_path_names_only_the_arguments_of_index_split(location) -> None:
    store = open_store(location, create=False)
    assert record_path(store, "many", "train") != record_path(store, "many", "train", feature="dep")
    with pytest.raises(TypeError, match="not an argument of index_split: features"):
        record_path(store, "many", "train", features="dep")
