"""What resolving a training split reads (`prior.trainers.split_index`): each segment file once
(the split's rows and every entry's keys are read by the entry selection and kept for the index),
many files by a few threads in order and decoded by Polars into the frames Arrow's decoding
gives, and a damaged file among them named."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import prior.featurestore.segment_files as segment_files
import prior.featurestore.segments as segments_module
from prior.featurestore import checked, open_store
from prior.featurestore.errors import StoreError
from prior.featurestore.segment_files import key_items, polars_frame, read_frame, read_frames, read_parquet
from prior.trainers.split_index import index_split
from tests.trainers_fixtures import many_pairs_store


@pytest.fixture(scope="module")
def location(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reads") / "s"
    many_pairs_store(path, partition=5)  # 24 segments of each kind per split: the threaded reads
    return path


def test_index_reads_each_segment_file_once(location: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: Counter[tuple[str, str]] = Counter()
    original = segment_files.read_parquet

    def counted(fs: Any, segment: Any, inner: str, columns: Any = None) -> Any:
        reads[segment.id, inner] += 1
        return original(fs, segment, inner, columns)

    frame = segment_files.read_frame

    def counted_frame(fs: Any, segment: Any, inner: str, columns: Any = None) -> Any:
        reads[segment.id, inner] += 1
        return frame(fs, segment, inner, columns)

    monkeypatch.setattr(segment_files, "read_parquet", counted)
    monkeypatch.setattr(segments_module, "read_parquet", counted)
    monkeypatch.setattr(segment_files, "read_frame", counted_frame)
    store = open_store(location, create=False)
    index = index_split(store, "many", "train", feature="dep")
    pair_files = [k for k in reads if k[1] == "pairs.parquet"]
    assert len(pair_files) == len(store.split_segments("many", "train")) == 24
    assert max(reads.values()) == 1, [k for k, n in reads.items() if n > 1]  # rows and keys: once each
    assert len(index) == 120 and set(index.pair_locs) and set(index.sentence_locs)


def test_index_leaves_the_pairs_ids_unread(location: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[tuple[str, ...] | None] = []
    frame = segment_files.read_frame

    def recorded(fs: Any, segment: Any, inner: str, columns: Any = None) -> Any:
        if inner == "pairs.parquet":
            read.append(None if columns is None else tuple(columns))
        return frame(fs, segment, inner, columns)

    monkeypatch.setattr(segment_files, "read_frame", recorded)
    index_split(open_store(location, create=False), "many", "train", feature="dep")
    assert len(read) == 24 and set(read) == {("row", "pair_key", "key_a", "key_b", "label")}


def test_pair_rows_of_some_columns_are_the_whole_rows_columns(location: Path) -> None:
    store = open_store(location, create=False)
    whole = store.pair_rows("many", "train", numbers=True)
    assert "id" in whole.columns
    some = store.pair_rows("many", "train", numbers=True, columns=("row", "key_b", "label"))
    assert some.equals(whole.select("row", "key_b", "label"))
    with pytest.raises(ValueError, match="'row'"):
        store.pair_rows("many", "train", columns=("key_a",))


def test_many_files_read_by_threads_in_order(location: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(location, create=False)
    segs = store.split_segments("many", "train")
    threaded = read_frames(store.fs, segs, "pairs.parquet")
    monkeypatch.setattr(segment_files, "_READ_THREADS", 10**6)  # one by one
    one_by_one = read_frames(store.fs, segs, "pairs.parquet")
    assert len(threaded) == len(segs) and all(a.equals(b) for a, b in zip(threaded, one_by_one))
    rows = store.pair_rows("many", "train")  # threaded too
    assert rows.equals(pl.concat(one_by_one, how="vertical_relaxed")) and rows.height == 120


def test_key_items_say_where_each_key_lies(location: Path) -> None:
    store = open_store(location, create=False)
    segs = [s for s in store.segments("feature") if s.target["entry"] == store.entries("dep")[0].key]
    held = key_items(store.fs, segs, "index.parquet", "key")
    tables = [polars_frame(read_parquet(store.fs, s, "index.parquet", ["key"]))["key"].to_list() for s in segs]
    assert held.height == sum(len(t) for t in tables) and held.schema == {"key": pl.String, "seg": pl.Int32,
                                                                          "item": pl.Int32}
    for key, seg, item in held.sample(30, seed=1).iter_rows():
        assert tables[seg][item] == key
    assert np.array_equal(held["seg"].to_numpy(), np.repeat(np.arange(len(segs)), [len(t) for t in tables]))


def test_a_damaged_file_among_many_is_named(tmp_path: Path) -> None:
    many_pairs_store(tmp_path / "s", partition=5, splits=("train",))
    store = open_store(tmp_path / "s", create=False)
    bad = store.split_segments("many", "train")[13]
    target = tmp_path / "s" / bad.folder / "pairs.parquet"
    target.write_bytes(b"not parquet" + target.read_bytes()[11:])  # same size, other bytes
    checked.forget()
    before = target.read_bytes()
    with pytest.raises(StoreError, match=bad.id):
        open_store(tmp_path / "s", create=False).pair_rows("many", "train")
    assert target.read_bytes() == before  # a read changes nothing


def test_polars_decoding_gives_the_frames_arrow_gives(location: Path) -> None:
    """Every Parquet file of a store (pairs, sentences, parses, feature indexes), checked on its
    first read and read from its path after, equals Arrow's decoding converted."""
    checked.forget()
    store = open_store(location, create=False)
    files = [(s, inner) for s in store.segments() for inner in s.files if inner.endswith(".parquet")]
    assert {s.kind for s, _ in files} >= {"pairs", "sentences", "parses", "feature"}
    for _ in range(2):  # checked bytes, then the verified file's path
        for segment, inner in files:
            got = read_frame(store.fs, segment, inner)  # first: it checks the bytes
            want = polars_frame(read_parquet(store.fs, segment, inner))
            assert got.schema == want.schema and got.equals(want), (segment.kind, inner)
