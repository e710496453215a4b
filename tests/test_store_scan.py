"""`Store.scan`: a LazyFrame equal to `Store.frame` that reads only what a query needs; and
`prior store export`: a hive-partitioned Parquet dataset that Polars and pyarrow read.

The store: SICK train and test (6 pairs each), `dep,sdoi,wup` and a `wup` variant, built in
partitions of 3 so that every entry has several segments; a hand-written store for a key
committed twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import prior.featurestore.export as export_module
import prior.featurestore.scan as scan_module
from prior.cli.main import app
from prior.errors import DataError, NotFoundError
from prior.featurestore import Request, make_entry, open_store
from prior.featurestore import keys as K
from prior.featurestore.export import export_parquet
from prior.featurestore.selection import EntrySelectionError
from prior.featurestore.store import Store
from prior.layouts.kinds import PairMatrix

FEATURES = ["dep", "sdoi", "wup", "tfidf", "dep-no-tfidf"]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    root = tmp_path_factory.mktemp("scan")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        common = {"dataset": "sick", "splits": ("train", "test"), "parser": "spacy", "limit": 6}
        run = RunOptions(store=str(root / "store"), workers=0, partition_size=3, progress=False)
        build(BuildOptions(features=("dep", "sdoi", "wup"), **common), run)
        build(BuildOptions(features=("wup",), feature_options={"wup": {"preset": "uerbert-code"}}, **common), run)
    return root / "store"


@pytest.fixture
def store(store_path: Path) -> Store:
    return open_store(store_path, create=False)


class Reads:
    """The files a scan reads at collect time: (segment kind, segment id, file, columns)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, str, str, tuple[str, ...] | None]] = []
        parquet, arrays, items = scan_module.read_parquet, scan_module.read_arrays, scan_module.read_items
        where = scan_module.read_parquet_where

        def read_parquet(fs, segment, inner, columns=None):
            self.calls.append((segment.kind, segment.id, inner, None if columns is None else tuple(columns)))
            return parquet(fs, segment, inner, columns)

        def read_arrays(fs, segment, names):
            self.calls.append((segment.kind, segment.id, "arrays", tuple(names)))
            return arrays(fs, segment, names)

        def read_parquet_where(fs, segment, inner, columns, key, keys):
            self.calls.append((segment.kind, segment.id, inner, (key, *columns)))
            return where(fs, segment, inner, columns, key, keys)

        def read_items(fs, segment, index, names, positions):
            self.calls.append((segment.kind, segment.id, "arrays", tuple(names)))
            return items(fs, segment, index, names, positions)

        monkeypatch.setattr(scan_module, "read_parquet", read_parquet)
        monkeypatch.setattr(scan_module, "read_arrays", read_arrays)
        monkeypatch.setattr(scan_module, "read_items", read_items)
        monkeypatch.setattr(scan_module, "read_parquet_where", read_parquet_where)


@pytest.mark.parametrize("feature", FEATURES)
@pytest.mark.parametrize("split", ["train", "test"])
def test_scan_collect_equals_frame(store: Store, feature: str, split: str) -> None:
    lazy = store.scan(feature, dataset="sick", split=split)
    assert isinstance(lazy, pl.LazyFrame)
    frame = store.frame(feature, dataset="sick", split=split)
    assert lazy.collect_schema() == frame.schema
    assert_frame_equal(lazy.collect(), frame)


def test_scan_of_a_variant_or_an_entry_equals_frame(store: Store) -> None:
    params = {"preset": "uerbert-code"}
    assert_frame_equal(store.scan("wup", dataset="sick", split="test", params=params).collect(),
                       store.frame("wup", dataset="sick", split="test", params=params))
    (default,) = [e for e in store.entries("wup") if e.is_default]
    assert_frame_equal(store.scan("wup", dataset="sick", split="test", entry=default.key[:10]).collect(),
                       store.frame("wup", dataset="sick", split="test"))


@pytest.mark.parametrize("feature", ["dep", "sdoi", "wup"])
def test_scan_queries_equal_the_same_queries_on_frame(store: Store, feature: str) -> None:
    frame = store.frame(feature, dataset="sick", split="test")
    lazy = store.scan(feature, dataset="sick", split="test")
    matrix = frame.columns[-1]  # wup, sdoi_b, dep
    rows = frame["row"].to_list()
    queries = [
        lambda f: f.filter(pl.col("row") == rows[2]).select("pair_key", matrix),
        lambda f: f.filter(pl.col("label") == frame["label"][0]).select("row", "words_b", matrix),
        lambda f: f.filter(pl.col("words_a").list.len() > 8).select("row", "text_a", matrix),
        lambda f: f.filter(pl.col(matrix).list.len() > 8).select("row", "rels_a"),
        lambda f: f.filter(pl.col("row") > rows[1]).filter(pl.col(matrix).list.len() >= 9)
                   .filter(pl.col("heads_b").list.len() > 0).select("row", matrix),
        lambda f: f.filter(pl.col("row").is_in(rows[3:])).head(2),
        lambda f: f.select("label", "id").head(3),
        lambda f: f.filter(pl.col("row") < 0).select("row", matrix),
        lambda f: f.with_columns(n=pl.col("words_a").list.len()).filter(pl.col("n") > 5).select("n", matrix),
    ]
    for query in queries:
        assert_frame_equal(query(lazy).collect(), query(frame))


def test_scan_reads_only_the_segments_and_columns_a_query_needs(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = store.scan("wup", dataset="sick", split="test")
    reads = Reads(monkeypatch)
    lazy.select("row", "label").collect()
    assert reads.calls == []  # the split's rows were read when the entry was selected

    lazy.select("words_a").collect()
    assert {c[0] for c in reads.calls} == {"parses"}
    assert {c[3] for c in reads.calls} == {("sent_key", "words")}  # rows of the wanted keys only
    reads.calls.clear()

    wup_segments = [s for s in store.segments("feature") if s.target["name"] == "wup" and s.target["options"] == {}]
    assert len(wup_segments) >= 2
    frame = store.frame("wup", dataset="sick", split="test")
    pair_key = frame["pair_key"][4]
    holder = next(s.id for s in wup_segments if pair_key in store.segment_keys([s]))
    one = lazy.filter(pl.col("pair_key") == pair_key).select("wup").collect()
    assert_frame_equal(one, frame.filter(pl.col("pair_key") == pair_key).select("wup"))
    assert [c[1] for c in reads.calls if c[2] == "arrays"] == [holder]
    assert {c[0] for c in reads.calls} == {"feature"}  # no parses, no sentences
    assert all(c[3] in {("key", "wup.offset", "wup.rows", "wup.cols"), ("wup",)} for c in reads.calls)


def test_scan_of_a_view_reads_its_components_only_for_the_combined_column(store: Store,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = store.scan("dep", dataset="sick", split="test")
    reads = Reads(monkeypatch)
    lazy.select("dep_subgraph").collect()
    assert {c[3] for c in reads.calls if c[2] == "arrays"} == {("subgraph",)}
    reads.calls.clear()
    lazy.select("dep").collect()
    assert {c[3] for c in reads.calls if c[2] == "arrays"} == {("trigram", "subgraph"), ("tfidf",)}


def test_scan_plan_shows_the_pushed_filter_and_columns(store: Store) -> None:
    plan = store.scan("wup", dataset="sick", split="test").filter(pl.col("row") == 3).select("wup").explain()
    assert "PYTHON[prior store] SCAN" in plan and 'SELECTION: col("row")' in plan
    assert "PROJECT 2/" in plan and "wup@" in plan


def test_scan_bad_arguments_fail_at_scan_with_clear_errors(store: Store) -> None:
    with pytest.raises(EntrySelectionError, match="no 'nope' entry .*features it holds: dep, sdoi, tfidf, wup"):
        store.scan("nope", dataset="sick", split="test")
    with pytest.raises(NotFoundError, match=r"no pairs of mrpc/test \(present: sick/test, sick/train\)"):
        store.scan("wup", dataset="mrpc", split="test")
    with pytest.raises(NotFoundError, match="no pairs of sick/dev"):
        store.scan("wup", dataset="sick", split="dev")
    with pytest.raises(EntrySelectionError, match="no 'wup' entry has a parameter zz"):
        store.scan("wup", dataset="sick", split="test", params={"zz": 1})


def test_scan_reads_the_first_committed_copy_of_a_key_like_frame(tmp_path: Path) -> None:
    store = open_store(tmp_path / "store")
    texts = ["a b", "c d e"]
    ks = [K.sentence_key(t) for t in texts]
    store.write_sentences(ks, texts)
    record = {"words": ["w"], "lemmas": ["w"], "upos": ["X"], "tags": ["X"], "heads": [0], "rels": ["root"],
              "ents": [""]}
    store.write_parses("p1", {"backend": "fake"}, ks, [record, record], spec="spacy")
    pks = [K.pair_key(ks[0], ks[1]), K.pair_key(ks[1], ks[0])]
    store.write_pairs("toy", "test", pa.table({"row": [0, 1], "pair_key": pks, "key_a": ks, "key_b": ks[::-1],
                                                "label": [1.5, 2.5], "id": [None, None]}), source_sha256="s")
    wup = make_entry("wup", 1, {}, "p1", "pair", ["wup"], layout=PairMatrix("wup"))
    store.write_feature(wup, [pks[0]], [{"wup": np.full((1, 1), 1.0, np.float32)}])
    store.write_feature(wup, pks, [{"wup": np.full((1, 1), 2.0, np.float32)},
                                   {"wup": np.full((2, 3), 3.0, np.float32)}])
    lazy = store.scan("wup", dataset="toy", split="test")
    assert_frame_equal(lazy.collect(), store.frame("wup", dataset="toy", split="test"))
    assert lazy.select("wup").collect()["wup"].to_list() == [[[1.0]], [[3.0] * 3] * 2]


# --------------------------------------------------------------------------- export
def export(store: Store, out: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["store", "export", "--store", store.location, "--feature", "dep",
                                      "--dataset", "sick", "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_export_writes_a_hive_dataset_polars_and_pyarrow_read_as_frame(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "export"
    printed = export(store, out)
    assert "sick/test: 6 pairs" in printed and "sick/train: 6 pairs" in printed and "dep@2 entry" in printed
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet")) == [
        "dataset=sick/split=test/part-0.parquet", "dataset=sick/split=train/part-0.parquet"]
    lazy = pl.scan_parquet(out, hive_partitioning=True)
    for split in ("train", "test"):
        got = lazy.filter(pl.col("split") == split).collect()
        assert set(got["dataset"]) == {"sick"}
        assert_frame_equal(got.drop("dataset", "split"), store.frame("dep", dataset="sick", split=split))
    table = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    assert table.schema.field("dep").type == pa.list_(pa.list_(pa.float32()))
    assert_frame_equal(pl.from_arrow(table).sort("split", "row"), lazy.collect().sort("split", "row"))
    meta = json.loads(pq.read_schema(out / "dataset=sick" / "split=test" / "part-0.parquet").metadata[b"prior"])
    assert meta["feature"] == "dep" and [e["spec"] for e in meta["entries"]] == ["dep@2", "tfidf@2"]


def test_export_filtered_scan_reads_only_that_splits_files(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "export"
    export(store, out)
    test_only = pl.scan_parquet(out, hive_partitioning=True).filter(pl.col("split") == "test")
    assert "split=train" not in test_only.explain() and "split=test" in test_only.explain()
    (out / "dataset=sick" / "split=train" / "part-0.parquet").write_bytes(b"not parquet")
    assert test_only.collect().height == 6  # never opened the train file
    with pytest.raises(pl.exceptions.ComputeError):
        pl.scan_parquet(out, hive_partitioning=True).collect()


def test_export_again_replaces_a_partition_whole_and_keeps_the_others(store: Store, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "export"
    done = export_parquet(store, "wup", dataset="sick", out=out, rows_per_part=4)
    assert [(d.split, d.files) for d in done] == [("test", ("part-0.parquet", "part-1.parquet")),
                                                   ("train", ("part-0.parquet", "part-1.parquet"))]
    train = out / "dataset=sick" / "split=train" / "part-1.parquet"
    before = train.stat().st_ino
    export_parquet(store, "wup", dataset="sick", out=out, splits=["test"], request=Request(params={"preset": "uerbert-code"}))
    assert sorted(p.name for p in (out / "dataset=sick" / "split=test").iterdir()) == ["part-0.parquet"]
    assert train.stat().st_ino == before
    got = pl.scan_parquet(out, hive_partitioning=True).filter(pl.col("split") == "test").drop("dataset", "split")
    assert_frame_equal(got.collect(), store.frame("wup", dataset="sick", split="test", params={"preset": "uerbert-code"}))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # no staging folder left

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(export_module.pq, "write_table", fail)
    with pytest.raises(DataError, match=r"cannot write the export .*\(disk full\)"):
        export_parquet(store, "wup", dataset="sick", out=out, splits=["test"])
    assert sorted(p.name for p in (out / "dataset=sick" / "split=test").iterdir()) == ["part-0.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]


def test_export_holds_one_part_at_a_time(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each part is read by itself (a filtered scan of its rows), never the whole split, and the
    parts together are the split's frame."""
    made: list[int] = []
    portable = export_module.portable_table

    def counting(frame: pl.DataFrame, metadata: dict[str, str]) -> Any:
        made.append(frame.height)
        return portable(frame, metadata)

    monkeypatch.setattr(export_module, "portable_table", counting)
    out = tmp_path / "export"
    done = export_parquet(store, "wup", dataset="sick", out=out, splits=["train"], rows_per_part=3)
    whole = store.frame("wup", dataset="sick", split="train")
    assert made == [3] * (whole.height // 3) + ([whole.height % 3] if whole.height % 3 else [])
    assert done[0].rows == whole.height and len(done[0].files) == len(made)
    got = pl.scan_parquet(out, hive_partitioning=True).drop("dataset", "split").collect()
    assert_frame_equal(got, whole)


def test_export_bad_arguments_are_one_line_errors_and_write_nothing(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "export"
    runner = CliRunner()
    for args, message in ((["--feature", "nope", "--dataset", "sick"], "no 'nope' entry"),
                          (["--feature", "wup", "--dataset", "mrpc"], "has no dataset 'mrpc' (present: sick)"),
                          (["--feature", "wup", "--dataset", "sick", "--split", "test,dev"], "no split trial of sick"),
                          (["--feature", "wup", "--dataset", "sick", "--split", "test,nope"], "has no split 'nope'"),
                          (["--feature", "wup", "--dataset", "sick", "-o", "wup.zz=1"], "no 'wup' entry with params zz=1")):
        result = runner.invoke(app, ["store", "export", "--store", store.location, "--out", str(out), *args])
        assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output
    assert not out.exists()
    with pytest.raises(DataError, match="local folder"):
        export_parquet(store, "wup", dataset="sick", out="s3://bucket/x")


def test_export_loads_in_hugging_face_datasets(store: Store, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "export"
    export_parquet(store, "wup", dataset="sick", out=out)
    files = {s: str(out / "dataset=sick" / f"split={s}" / "*.parquet") for s in ("train", "test")}
    loaded = datasets.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "hf"))
    assert loaded["test"].num_rows == 6
    assert loaded["test"]["wup"][0] == store.frame("wup", dataset="sick", split="test")["wup"][0].to_list()
