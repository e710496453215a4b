"""Counts that must not grow faster than the work: catalog records and segment files read by
a no-op rebuild, `store info` and a filtered scan, for stores of few and of many segments.

Counted through the store's file-system wrapper (no timing): a process reads each catalog
record once (its content tag unchanged, `catalog.read_catalog`), `store info` opens no
segment file, and a scan opens at most the segments of the split and entry it reads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import prior.featurestore.catalog as catalog_module
import prior.featurestore.fs as fs_module
import prior.featurestore.segment_files as segment_files_module
import prior.featurestore.segments as segments_module
from prior.featurestore import open_store
from prior.featurestore.maintenance import store_info, verify_store
from prior.pipeline.build import build
from tests.test_kill_commits import _opts

FEATURES = ("sdoi",)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """Stores of the same rows made by one build and by four (more segments)."""
    out = {}
    for limits in [(6,), (2, 3, 4, 6)]:
        location = tmp_path_factory.mktemp("counts") / "store"
        for limit in limits:
            build(*_opts(location, limit=limit, features=FEATURES, partition_size=3))
        out[len(open_store(location).segments())] = location
    return out


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Catalog records and segment files read; every record counts as old enough for a tag."""
    counter: Counter[str] = Counter()
    monkeypatch.setattr(fs_module, "LOCAL_TAG_AGE_NS", 0)
    read_bytes = fs_module.StoreFS.read_bytes

    def counted_read(self: Any, rel: str) -> bytes:
        counter["records" if rel.startswith("catalog/") else "other"] += 1
        return read_bytes(self, rel)

    read_parquet = segments_module.read_parquet

    def counted_parquet(fs: Any, segment: Any, inner: str, columns: Any = None) -> Any:
        counter[f"files:{segment.kind}"] += 1
        return read_parquet(fs, segment, inner, columns)

    monkeypatch.setattr(fs_module.StoreFS, "read_bytes", counted_read)
    monkeypatch.setattr(segments_module, "read_parquet", counted_parquet)
    read_frame = segment_files_module.read_frame

    def counted_frame(fs: Any, segment: Any, inner: str, columns: Any = None) -> Any:  # a split's many files
        counter[f"files:{segment.kind}"] += 1
        return read_frame(fs, segment, inner, columns)

    monkeypatch.setattr(segment_files_module, "read_frame", counted_frame)
    catalog_module._RECORDS.clear()
    yield counter
    catalog_module._RECORDS.clear()


def test_noop_rebuild_reads_each_record_once(stores: dict[int, Path], counts: Counter[str]) -> None:
    for segments, location in stores.items():
        catalog_module._RECORDS.clear()
        counts.clear()
        report = build(*_opts(location, limit=6, features=FEATURES, partition_size=3))
        assert all(s.computed == 0 for s in report.stages)
        assert counts["records"] == segments  # once each, whatever the number of catalog reads
        counts.clear()
        build(*_opts(location, limit=6, features=FEATURES, partition_size=3))
        assert counts["records"] == 0  # known records are not read again in this process


def test_store_info_opens_no_segment_file(stores: dict[int, Path], counts: Counter[str]) -> None:
    for segments, location in stores.items():
        counts.clear()
        store_info(open_store(location, create=False))
        assert counts["records"] == segments
        assert not [k for k in counts if k.startswith("files:")]
        counts.clear()
        store_info(open_store(location, create=False))
        assert counts["records"] == 0


def test_scan_filter_reads_only_its_segments(stores: dict[int, Path], counts: Counter[str]) -> None:
    for location in stores.values():
        store = open_store(location, create=False)
        entry = store.find_entry("sdoi")
        pairs = len(store.split_segments("rte", "train"))
        features = len([s for s in store.segments("feature") if s.target["entry"] == entry.key])
        wanted = store.pair_rows("rte", "train")["row"].to_list()[:2]
        counts.clear()
        got = store.scan("sdoi", dataset="rte", split="train").filter(pl.col("row").is_in(wanted)).collect()
        assert got.height == 2
        assert counts["records"] == 0  # the catalog was read when the store was asked above
        assert counts["files:pairs"] <= pairs
        # per segment its key column, then the other columns where it holds a wanted key; one
        # more for the component's type (`prior.featurestore.scan`)
        assert counts["files:feature"] <= 2 * features + 1
        assert counts["files:sentences"] + counts["files:parses"] <= 2 * (len(store.segments("sentences"))
                                                                           + len(store.segments("parses")))


def test_verify_reads_every_record_again(stores: dict[int, Path], counts: Counter[str]) -> None:
    """verify must find a record damaged in place, so it never trusts a local tag."""
    segments, location = next(iter(stores.items()))
    store = open_store(location, create=False)
    store.segments()
    counts.clear()
    assert verify_store(store).ok
    assert counts["records"] == segments
