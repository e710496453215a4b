"""A flat array's shard read by byte ranges once this process has checked it: its index from the
end, then only the runs of pieces a read needs (`prior.featurestore.tensors.ByteRanges`,
`prior.featurestore.checked.CheckedRanges`, `prior.featurestore.segment_files.array_sources`).

The values equal those read from the whole shard's bytes, for ranges in any order, across pieces
and around pieces never written; the bytes read are the index and the pieces holding a range;
a local store's first read of a shard reads it whole (it is checked), later reads by ranges; a
shard cut short or replaced by a link after it was checked is a `StoreError` naming it; an
object store's shards are read whole; an array of another layout is still decoded whole from its
checked bytes."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from prior.featurestore import checked
from prior.featurestore.checked import CheckedRanges
from prior.featurestore.errors import StoreError
from prior.featurestore.fs import StoreFS
from prior.featurestore.segment_files import array_sources, index_columns, read_items, read_parquet
from prior.featurestore.tensors import read_flat_ranges, write_flat
from tests.trainers_fixtures import many_pairs_store


class Counted:
    """A shard's bytes read by ranges, each range recorded."""

    def __init__(self, data: bytes) -> None:
        self.data, self.reads = data, []  # type: ignore[var-annotated]

    @property
    def size(self) -> int:
        return len(self.data)

    def read(self, offset: int, length: int) -> bytes:
        self.reads.append((offset, length))
        return self.data[offset:offset + length]


def _files(tmp_path: Path, flat: np.ndarray, piece: int) -> dict[str, bytes]:
    fs = StoreFS(tmp_path)
    write_flat(fs, "g", {"x": flat}, piece=piece)
    root = tmp_path / "g"
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _shard_index(data: bytes, pieces: int) -> np.ndarray:
    size = pieces * 16 + 4
    return np.frombuffer(data[len(data) - size:len(data) - 4], dtype="<u8").reshape(pieces, 2)


@pytest.mark.parametrize("seed", range(4))
def test_ranges_read_by_ranges_equal_the_shard_read_whole(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    flat = rng.standard_normal(20_000).astype(np.float32)
    flat[6_000:9_000] = 0  # three whole pieces of the fill value: never written
    files = _files(tmp_path, flat, piece=1_000)
    starts = rng.integers(0, 19_000, size=12)
    sizes = rng.integers(0, 1_000, size=12)
    starts[:3], sizes[:3] = [5_990, 8_999, 100], [20, 2, 2_500]  # around the unwritten pieces, across three
    whole = read_flat_ranges(files, "x", starts, sizes)
    shard = Counted(files["x/c/0"])
    ranged = read_flat_ranges({**files, "x/c/0": shard}, "x", starts, sizes)
    assert whole is not None and ranged is not None
    assert ranged.tolist() == whole.tolist() == np.concatenate([flat[s:s + n] for s, n in zip(starts, sizes)]).tolist()
    # the index (and its checksum: to the shard's end), then runs of the pieces holding a
    # range: no byte read twice, none another piece's
    index = _shard_index(files["x/c/0"], 20)
    wanted = sorted({p for s, n in zip(starts, sizes) if n for p in range(s // 1_000, (s + n - 1) // 1_000 + 1)
                     if not 6 <= p < 9})
    assert shard.reads[0] == (len(shard.data) - 20 * 16 - 4, 20 * 16 + 4)
    assert sum(length for _, length in shard.reads[1:]) == int(index[wanted, 1].sum())
    assert len(shard.reads) - 1 <= len(wanted)


def test_ranges_pieces_stored_one_after_another_are_one_read(tmp_path: Path) -> None:
    flat = np.arange(10_000, dtype=np.int64) + 1
    files = _files(tmp_path, flat, piece=1_000)
    shard = Counted(files["x/c/0"])
    got = read_flat_ranges({**files, "x/c/0": shard}, "x", np.array([1_500, 7_000]), np.array([3_000, 10]))
    assert got is not None and got.tolist() == [*range(1_501, 4_501), *range(7_001, 7_011)]
    assert len(shard.reads) == 3  # the index; pieces 1-4 in one read; piece 7


@pytest.fixture
def store(tmp_path: Path):
    checked.forget()
    yield many_pairs_store(tmp_path / "s", pairs=60, partition=60, splits=("train",))
    checked.forget()


def _dep_segment(store):
    from prior.trainers.split_index import index_split

    index = index_split(store, "many", "train", feature="dep")
    loc = index.pair_locs[next(iter(index.pair_locs))]
    return loc.segments[0]


def test_ranges_a_checked_local_shard_is_read_by_ranges(store, monkeypatch: pytest.MonkeyPatch) -> None:
    segment = _dep_segment(store)
    names = ("trigram", "subgraph")
    columns = index_columns(read_parquet(store.fs, segment, "index.parquet",
                                         [f"{n}.{p}" for n in names for p in ("offset", "rows", "cols")]), names)
    shards = {f"arrays/{n}/c/0" for n in names}
    assert not any(checked.is_verified(store.fs, segment, s) for s in shards)
    assert all(isinstance(v, bytes) for v in array_sources(store.fs, segment, names).values())
    rows = np.array([40, 3, 4, 5, 59], np.int64)
    first = read_items(store.fs, segment, columns, names, rows)  # the shards read whole and checked
    assert all(checked.is_verified(store.fs, segment, s) for s in shards)
    sources = array_sources(store.fs, segment, names)
    assert {k for k, v in sources.items() if isinstance(v, CheckedRanges)} == {f"{n}/c/0" for n in names}
    ranges: list[tuple[str, int]] = []
    real = StoreFS.read_ranges

    def counted(fs: StoreFS, rel: str, spans: list[tuple[int, int]]) -> list[bytes]:
        ranges.extend((rel, length) for _, length in spans)
        return real(fs, rel, spans)

    monkeypatch.setattr(StoreFS, "read_ranges", counted)
    monkeypatch.setattr(StoreFS, "read_range", lambda *a: pytest.fail("a range read alone"))
    again = read_items(store.fs, segment, columns, names, rows)
    for n in names:
        assert again[n].values.tolist() == first[n].values.tolist()
        assert again[n].rows.tolist() == first[n].rows.tolist() and again[n].cols.tolist() == first[n].cols.tolist()
    assert {rel.rsplit("/arrays/", 1)[1] for rel, _ in ranges} == {f"{n}/c/0" for n in names}
    whole = read_items(store.fs, segment, columns, names, np.arange(60))  # every item: by ranges too
    assert [whole[n].take(rows).values.tolist() for n in names] == [first[n].values.tolist() for n in names]


def test_ranges_a_shard_cut_short_after_its_check_is_named(store) -> None:
    segment = _dep_segment(store)
    columns = index_columns(read_parquet(store.fs, segment, "index.parquet",
                                         ["trigram.offset", "trigram.rows", "trigram.cols"]), ["trigram"])
    read_items(store.fs, segment, columns, ["trigram"], np.arange(5))
    path = Path(store.fs.path(f"{segment.folder}/arrays/trigram/c/0"))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreError, match=f"segment {segment.id}.*arrays/trigram/c/0.*shorter"):
        read_items(store.fs, segment, columns, ["trigram"], np.arange(5))
    path.unlink()
    with pytest.raises(StoreError, match="arrays/trigram/c/0.*missing"):
        read_items(store.fs, segment, columns, ["trigram"], np.arange(5))
    outside = path.parent.parent.parent.parent / "outside"
    outside.write_bytes(data)
    os.symlink(outside, path)
    with pytest.raises(StoreError, match="link"):
        read_items(store.fs, segment, columns, ["trigram"], np.arange(5))


def test_ranges_an_object_store_reads_its_small_shards_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On an object store a range is a round trip: a shard under `RANGED_REMOTE_BYTES` is
    fetched whole, even once checked."""
    store = many_pairs_store(tmp_path / "s", pairs=30, partition=30, splits=("train",))
    segment = _dep_segment(store)
    columns = index_columns(read_parquet(store.fs, segment, "index.parquet",
                                         ["trigram.offset", "trigram.rows", "trigram.cols"]), ["trigram"])
    read_items(store.fs, segment, columns, ["trigram"], np.arange(5))
    monkeypatch.setattr(store.fs, "local", False)
    assert all(isinstance(v, bytes) for v in array_sources(store.fs, segment, ["trigram"]).values())
    checked.forget()


def _remote_large(store, monkeypatch: pytest.MonkeyPatch) -> None:
    """``store`` read as an object store whose every shard counts as large."""
    import prior.featurestore.segment_files as segment_files

    monkeypatch.setattr(store.fs, "local", False)
    monkeypatch.setattr(segment_files, "RANGED_REMOTE_BYTES", 0)


def test_ranges_an_object_stores_large_shard_is_checked_streamed_then_read_by_ranges(
        store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large shard on an object store is checked without being held (`check_streamed`, a
    chunk at a time: never fetched whole), then read by ranges: the same items as a local read."""
    segment = _dep_segment(store)
    names = ("trigram", "subgraph")
    columns = index_columns(read_parquet(store.fs, segment, "index.parquet",
                                         [f"{n}.{p}" for n in names for p in ("offset", "rows", "cols")]), names)
    rows = np.array([40, 3, 4, 5, 59], np.int64)
    want = read_items(store.fs, segment, columns, names, rows)
    checked.forget()
    _remote_large(store, monkeypatch)
    monkeypatch.setattr(checked, "CHECK_CHUNK", 1_000)
    whole: list[str] = []
    chunks: list[int] = []
    real_bytes, real_range = StoreFS.read_bytes, StoreFS.read_range

    def read_bytes(fs: StoreFS, rel: str) -> bytes:
        whole.append(rel)
        return real_bytes(fs, rel)

    def read_range(fs: StoreFS, rel: str, offset: int, length: int) -> bytes:
        chunks.append(length)
        return real_range(fs, rel, offset, length)

    monkeypatch.setattr(StoreFS, "read_bytes", read_bytes)
    monkeypatch.setattr(StoreFS, "read_range", read_range)
    sources = array_sources(store.fs, segment, names)
    shards = {f"{n}/c/0" for n in names}
    assert {k for k, v in sources.items() if isinstance(v, CheckedRanges)} == shards
    assert all(checked.is_verified(store.fs, segment, f"arrays/{s}") for s in shards)
    assert not any(rel.endswith("/c/0") for rel in whole) and chunks and max(chunks) <= 1_000
    got = read_items(store.fs, segment, columns, names, rows, sources)
    for n in names:
        assert got[n].values.tolist() == want[n].values.tolist()
        assert got[n].rows.tolist() == want[n].rows.tolist() and got[n].cols.tolist() == want[n].cols.tolist()
    assert not any(rel.endswith("/c/0") for rel in whole)


@pytest.mark.parametrize("damage", ["flipped", "longer", "shorter"])
def test_ranges_a_damaged_large_shard_on_an_object_store_is_named(store, monkeypatch: pytest.MonkeyPatch,
                                                                   damage: str) -> None:
    segment = _dep_segment(store)
    path = Path(store.fs.path(f"{segment.folder}/arrays/trigram/c/0"))
    data = bytearray(path.read_bytes())
    if damage == "flipped":
        data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data) + b"xx" if damage == "longer" else bytes(data[:-3]) if damage == "shorter"
                     else bytes(data))
    _remote_large(store, monkeypatch)
    monkeypatch.setattr(checked, "CHECK_CHUNK", 64)
    problem = {"flipped": "does not match its checksum", "longer": "has more bytes where the catalog records",
               "shorter": f"has {len(data) - 3} bytes where the catalog records {len(data)}"}[damage]
    with pytest.raises(StoreError, match=f"segment {segment.id} .* file arrays/trigram/c/0: {problem}"):
        array_sources(store.fs, segment, ["trigram"])
    assert not checked.is_verified(store.fs, segment, "arrays/trigram/c/0")


class CountedRanges(Counted):
    """`Counted`, whose ranges are also asked for together (`read_ranges`)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.together: list[list[tuple[int, int]]] = []

    def read_ranges(self, spans: list[tuple[int, int]]) -> list[bytes]:
        self.together.append(list(spans))
        return [self.data[o:o + n] for o, n in spans]


def test_ranges_asked_for_together_and_near_ones_joined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard that reads ranges together gets a read's runs of pieces in one call, runs at most
    `RANGE_GAP` bytes apart joined into one range; the values are those of the whole shard."""
    import prior.featurestore.tensors as tensors

    rng = np.random.default_rng(0)
    flat = rng.standard_normal(40_000).astype(np.float32)
    files = _files(tmp_path, flat, piece=1_000)
    index = _shard_index(files["x/c/0"], 40)
    starts = np.array([500, 5_200, 7_100, 30_000], np.int64)  # pieces 0, 5, 7, 30
    sizes = np.array([10, 20, 30, 40], np.int64)
    want = np.concatenate([flat[a:a + n] for a, n in zip(starts, sizes)])
    gap = int(index[7, 0] - index[5].sum())  # the bytes of piece 6, between pieces 5 and 7
    near = int(index[5, 0] - index[0].sum())  # pieces 1-4
    far = int(index[30, 0] - index[7].sum())  # pieces 8-29
    assert gap < near < far
    for limit, joined in ((0, 4), (gap, 3), (near, 2), (far, 1)):
        monkeypatch.setattr(tensors, "RANGE_GAP", limit)
        shard = CountedRanges(files["x/c/0"])
        got = read_flat_ranges({**files, "x/c/0": shard}, "x", starts, sizes)
        assert got is not None and got.tolist() == want.tolist()
        assert len(shard.reads) == 1 and len(shard.together) == 1  # the index; every run at once
        assert len(shard.together[0]) == joined
    monkeypatch.setattr(tensors, "RANGES_AT_ONCE", 1)  # a call per run: at most this many bytes at once
    shard = CountedRanges(files["x/c/0"])
    got = read_flat_ranges({**files, "x/c/0": shard}, "x", starts, sizes)
    assert got is not None and got.tolist() == want.tolist()
    assert len(shard.reads) == 1 + 4 and not shard.together


def test_ranges_outside_the_recorded_size_are_refused(store) -> None:
    segment = _dep_segment(store)
    shard = CheckedRanges(store.fs, segment, "arrays/trigram/c/0")
    with pytest.raises(StoreError, match="has no bytes"):
        shard.read(shard.size - 2, 4)


def test_ranges_of_a_file_on_any_store(tmp_path: Path) -> None:
    """`StoreFS.read_range` on a local disk and on an fsspec store: the bytes asked for, fewer
    where the file ends before them."""
    import uuid

    data = bytes(range(256)) * 40
    for fs in (StoreFS(tmp_path / "local"), StoreFS(f"memory://ranges-{uuid.uuid4().hex}")):
        fs.write_atomic("f/x.bin", data)
        assert fs.read_range("f/x.bin", 0, 10) == data[:10]
        assert fs.read_range("f/x.bin", 1_000, 3_000) == data[1_000:4_000]
        assert fs.read_range("f/x.bin", len(data) - 5, 50) == data[-5:]
        spans = [(3_000, 10), (0, 5), (len(data) - 5, 50)]
        assert fs.read_ranges("f/x.bin", spans) == [data[o:o + n] for o, n in spans]
        assert fs.read_ranges("f/x.bin", []) == []


def test_ranges_an_array_of_another_layout_is_decoded_whole(store, monkeypatch: pytest.MonkeyPatch) -> None:
    """An array `write_flat` did not lay out (a format-1 store's one chunk) is decoded whole by
    Zarr from its checked bytes, also once its file is checked and would be read by ranges."""
    import prior.featurestore.tensors as tensors

    segment = _dep_segment(store)
    columns = index_columns(read_parquet(store.fs, segment, "index.parquet",
                                         ["trigram.offset", "trigram.rows", "trigram.cols"]), ["trigram"])
    rows = np.array([7, 0, 33], np.int64)
    first = read_items(store.fs, segment, columns, ["trigram"], rows)
    assert isinstance(array_sources(store.fs, segment, ["trigram"])["trigram/c/0"], CheckedRanges)
    monkeypatch.setattr(tensors, "flat_layout", lambda meta: None)
    again = read_items(store.fs, segment, columns, ["trigram"], rows)
    assert again["trigram"].values.tolist() == first["trigram"].values.tolist()
    assert again["trigram"].rows.tolist() == first["trigram"].rows.tolist()


class Kept:
    """A `KeptPieces` without a bound."""

    def __init__(self) -> None:
        self.items: dict[object, bytes] = {}

    def peek(self, key: object) -> bytes | None:
        return self.items.get(key)

    def put(self, key: object, value: bytes, size: int | None = None) -> bytes:
        self.items[key] = value
        return value


def test_ranges_pieces_fetched_once_are_taken_from_where_they_are_kept(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard that names where its pieces are kept fetches only the pieces not held there, and
    keeps the pieces stored in a gap it fetches with them; with no gap joined, only its own."""
    import prior.featurestore.tensors as tensors

    flat = np.arange(10_000, dtype=np.float32)
    files = _files(tmp_path, flat, piece=1_000)
    index = _shard_index(files["x/c/0"], 10)

    def reader() -> tuple[CountedRanges, Kept, dict[str, object]]:
        kept, shard = Kept(), CountedRanges(files["x/c/0"])
        shard.kept, shard.tag = kept, "x"  # type: ignore[attr-defined]
        return shard, kept, {**files, "x/c/0": shard}

    def values(read: dict[str, object], starts: list[int], sizes: list[int]) -> list[float]:
        got = read_flat_ranges(read, "x", np.array(starts), np.array(sizes))  # type: ignore[arg-type]
        assert got is not None
        return got.tolist()

    def fetches(shard: CountedRanges) -> int:
        return len(shard.reads) + sum(len(t) for t in shard.together)

    shard, kept, read = reader()
    assert values(read, [1_500, 7_000], [1_000, 10]) == [*flat[1_500:2_500], *flat[7_000:7_010]]
    assert sorted(k for _, k in kept.items) == [1, 2, 3, 4, 5, 6, 7]  # type: ignore[misc]
    assert fetches(shard) == 2  # the index; pieces 1-7 as one range
    assert values(read, [1_200, 7_005, 2_900], [100, 2, 200]) == [*flat[1_200:1_300], *flat[7_005:7_007],
                                                                  *flat[2_900:3_100]]
    assert fetches(shard) == 3  # the index alone
    assert values(read, [9_000], [5]) == [*flat[9_000:9_005]]  # piece 9: fetched
    assert shard.reads[-1] == (int(index[9, 0]), int(index[9, 1])) and fetches(shard) == 5
    monkeypatch.setattr(tensors, "RANGE_GAP", 0)
    shard, kept, read = reader()
    assert values(read, [1_500, 7_000], [1_000, 10]) == [*flat[1_500:2_500], *flat[7_000:7_010]]
    assert sorted(k for _, k in kept.items) == [1, 2, 7]  # type: ignore[misc]


def test_ranges_pieces_kept_in_a_cache_too_small_for_them_show_it_going_round(tmp_path: Path) -> None:
    """Pieces kept in a reader's bounded cache (`LruCache`, which the reader's warning reads):
    read again and again, a cache that holds them all fetches them once and is not going round;
    one that holds a third of them fetches them each time, and says it is thrashing."""
    from prior.trainers.caches import LruCache

    flat = np.arange(10_000, dtype=np.float32)
    files = _files(tmp_path, flat, piece=1_000)
    piece_bytes = int(_shard_index(files["x/c/0"], 10)[:, 1].max())
    for bound, going_round in ((10 * piece_bytes, False), (3 * piece_bytes, True)):
        kept: LruCache[bytes] = LruCache(bound, len)
        shard = CountedRanges(files["x/c/0"])
        shard.kept, shard.tag = kept, "x"  # type: ignore[attr-defined]
        for _ in range(3):
            got = read_flat_ranges({**files, "x/c/0": shard}, "x", np.array([0]), np.array([10_000]))  # type: ignore[arg-type]
            assert got is not None and np.array_equal(got, flat)
        assert len(kept.seen) == 10 and kept.loads == 0
        assert kept.thrashing == going_round and (kept.reloads >= 10 if going_round else kept.reloads == 0)
