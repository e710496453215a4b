"""A filtered scan keeps only the matched items' values of a feature segment: the flat array is
decompressed as a stream and only the asked-for ranges are copied out (never decoded whole into
memory), so what a scan of a few rows materializes does not grow with the split or its segments.

Pinned by counting (no timing): the values `read_flat_ranges` returns for a scan of two rows are
exactly those two rows' items, in a store of 3 pairs and in one of 12 (four times the segments),
and the whole-array decoder is never called; the range reader itself equals a whole decode for
ranges in any order and across pieces, decompresses only the pieces holding a range, and
declines a layout it does not know (one chunk for the whole array among them), which Zarr then
decodes whole."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import prior.featurestore.segment_files as segment_files_module
import prior.featurestore.tensors as tensors_module
from prior.featurestore import open_store
from prior.featurestore.fs import StoreFS
from prior.featurestore.tensors import read_flat_files, read_flat_ranges, write_flat


def _files(tmp_path: Path, flats: dict[str, np.ndarray], *, piece: int = 1_000,
           **chunks: int) -> dict[str, bytes]:
    """A Zarr group's files by path in the group, as the store's checked reads hand them over:
    written by `write_flat` in pieces of ``piece`` values, or by Zarr in ``chunks`` (a layout
    `write_flat` never writes)."""
    fs = StoreFS(tmp_path)
    if chunks:  # another layout than `write_flat`'s: several chunk files
        import zarr

        group = zarr.open_group(tensors_module.zarr_store(fs, "g", read_only=False), mode="w")
        for name, flat in flats.items():
            arr = group.create_array(name=name, shape=flat.shape, dtype=flat.dtype, chunks=(chunks[name],))
            arr[:] = flat
    else:
        write_flat(fs, "g", flats, piece=piece)
    root = tmp_path / "g"
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("piece", [1_000, 333], ids=["pieces", "odd-pieces"])
def test_ranges_equal_a_whole_decode_in_any_order_and_across_pieces(tmp_path: Path, piece: int) -> None:
    flat = np.random.default_rng(0).standard_normal(10_000).astype(np.float32)
    files = _files(tmp_path, {"x": flat}, piece=piece)
    assert set(files) == {"zarr.json", "x/zarr.json", "x/c/0"}  # one file per array
    starts = np.array([9_000, 0, 500, 4_000, 9_990, 7, 950], np.int64)
    sizes = np.array([100, 3, 2_000, 0, 10, 1, 100], np.int64)  # overlapping, across pieces
    got = read_flat_ranges(files, "x", starts, sizes)
    assert got is not None
    assert got.tolist() == np.concatenate([flat[s:s + n] for s, n in zip(starts, sizes)]).tolist()
    whole = tensors_module.read_flat(files, "x")
    assert whole is not None and whole.tolist() == flat.tolist() == read_flat_files(files, ["x"])["x"].tolist()
    assert read_flat_ranges(files, "x", np.zeros(0, np.int64), np.zeros(0, np.int64)) is not None
    with pytest.raises(Exception, match="outside"):
        read_flat_ranges(files, "x", np.array([9_995]), np.array([10]))


def test_ranges_that_follow_one_another_are_copied_as_one(tmp_path: Path) -> None:
    """A piece of the split reads a segment's consecutive items: their ranges follow one another
    and are joined into one copy; empty ranges, gaps, repeats and ranges out of order keep their
    places in the output."""
    flat = np.random.default_rng(1).standard_normal(5_000).astype(np.float32)
    files = _files(tmp_path, {"x": flat}, piece=333)
    starts = np.array([10, 13, 13, 20, 0, 3, 3, 4_000, 4_100, 4_100, 600], np.int64)
    sizes = np.array([3, 0, 7, 5, 3, 0, 2, 100, 0, 50, 700], np.int64)
    joined = tensors_module._runs(starts, sizes)
    assert joined[0].tolist() == [10, 0, 4_000, 600] and joined[1].tolist() == [15, 5, 150, 700]
    got = read_flat_ranges(files, "x", starts, sizes)
    assert got is not None
    assert got.tolist() == np.concatenate([flat[s:s + n] for s, n in zip(starts, sizes)]).tolist()


def test_only_the_pieces_holding_a_range_are_decompressed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two items in an array of 50 pieces: two pieces decompressed. Pieces of fill values only
    (never written) read as the fill value, and so does an array Zarr wrote no file for."""
    flat = np.arange(50_000, dtype=np.int64)
    flat[10_000:20_000] = 0  # ten whole pieces of fill values: Zarr writes none of them
    files = _files(tmp_path, {"x": flat, "empty": np.zeros(5_000, np.uint8)})
    decompressed: list[int] = []
    original = tensors_module.pa.decompress

    def counted(buf: Any, decompressed_size: int, codec: str, asbytes: bool) -> Any:
        decompressed.append(decompressed_size)
        return original(buf, decompressed_size=decompressed_size, codec=codec, asbytes=asbytes)

    monkeypatch.setattr(tensors_module.pa, "decompress", counted)
    got = read_flat_ranges(files, "x", np.array([41_990, 3], np.int64), np.array([5, 4], np.int64))
    assert got is not None and got.tolist() == [*range(41_990, 41_995), 3, 4, 5, 6]
    assert decompressed == [8_000, 8_000]  # pieces 0 and 41 of 1,000 int64 values
    decompressed.clear()
    assert read_flat_ranges(files, "x", np.array([15_000]), np.array([3])).tolist() == [0, 0, 0]  # type: ignore[union-attr]
    assert decompressed == []
    assert "empty/c/0" not in files
    assert read_flat_ranges(files, "empty", np.array([7]), np.array([2])).tolist() == [0, 0]  # type: ignore[union-attr]
    assert tensors_module.read_flat(files, "x").tolist() == flat.tolist()  # type: ignore[union-attr]


@pytest.mark.parametrize("chunk", [10, 100], ids=["chunks", "one-chunk"])
def test_ranges_decline_another_layout(tmp_path: Path, chunk: int) -> None:
    flat = np.arange(100, dtype=np.int32)
    files = _files(tmp_path, {"x": flat}, x=chunk)
    assert read_flat_ranges(files, "x", np.array([5]), np.array([3])) is None
    assert read_flat_files(files, ["x"])["x"].tolist() == flat.tolist()


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """Stores of SICK train's first 3 and first 12 pairs, built in partitions of 3."""
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    out = {}
    root = tmp_path_factory.mktemp("scanitems")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        for limit in (3, 12):
            build(BuildOptions(features=("wup",), dataset="sick", splits=("train",), parser="spacy", limit=limit),
                  RunOptions(store=str(root / f"s{limit}"), workers=0, partition_size=3, progress=False))
            out[limit] = root / f"s{limit}"
    return out


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    counter: Counter[str] = Counter()
    ranges, whole = segment_files_module.read_flat_ranges, segment_files_module.read_flat_files

    def counted_ranges(files: Any, name: str, starts: Any, sizes: Any) -> Any:
        got = ranges(files, name, starts, sizes)
        counter["values"] += 0 if got is None else got.size
        return got

    def counted_whole(files: Any, names: Any) -> Any:
        counter["whole"] += 1
        return whole(files, names)

    monkeypatch.setattr(segment_files_module, "read_flat_ranges", counted_ranges)
    monkeypatch.setattr(segment_files_module, "read_flat_files", counted_whole)
    return counter


def test_a_filtered_scan_keeps_only_its_rows_values(stores: dict[int, Path], counts: Counter[str]) -> None:
    assert len(open_store(stores[12]).segments("feature")) > len(open_store(stores[3]).segments("feature"))
    for location in stores.values():
        store = open_store(location, create=False)
        frame = store.frame("wup", dataset="sick", split="train")
        wanted = frame["row"].gather([0, 2])
        counts.clear()
        got = store.scan("wup", dataset="sick", split="train").filter(pl.col("row").is_in(wanted.implode())).collect()
        assert_frame_equal(got, frame.filter(pl.col("row").is_in(wanted.implode())))
        expected = got.select(pl.col("wup").list.eval(pl.element().list.len()).list.sum()).to_series().sum()
        assert counts["values"] == expected > 0  # the two rows' values, whatever the split's size
        assert counts["whole"] == 0
