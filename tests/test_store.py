import os

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from prior.errors import NotFoundError
from prior.featurestore import StoreError, make_entry, open_store
from prior.featurestore import keys as K
from prior.featurestore.catalog import new_segment_id
from prior.featurestore.maintenance import gc_store, store_info, verify_store
from prior.featurestore.selection import IncompleteEntryError
from prior.layouts.kinds import PairMatrix, SentenceMask


def _record(n: int) -> dict:
    return {"words": [f"w{i}" for i in range(n)], "lemmas": [f"w{i}" for i in range(n)], "upos": ["NOUN"] * n,
            "tags": ["NN"] * n, "heads": [0] + [1] * (n - 1), "rels": ["root"] + ["dep"] * (n - 1), "ents": [""] * n}


@pytest.fixture
def toy(tmp_path):
    """A store with one split of two pairs, their parses, a pair and a sentence feature."""
    store = open_store(tmp_path / "store")
    texts = ["a b", "c d e", "f"]
    ks = [K.sentence_key(t) for t in texts]
    store.write_sentences(ks, texts)
    store.write_parses("p1", {"backend": "fake"}, ks, [_record(2), _record(3), _record(1)], spec="spacy")
    pairs = [(ks[0], ks[1]), (ks[2], ks[0])]
    pks = [K.pair_key(a, b) for a, b in pairs]
    store.write_pairs("toy", "test", pa.table({
        "row": [2, 3], "pair_key": pks, "key_a": [a for a, _ in pairs], "key_b": [b for _, b in pairs],
        "label": ["yes", "no"], "id": ["x", None]}), source_sha256="s1")
    wup = make_entry("wup", 1, {"k": 1}, "p1", "pair", ["wup"], layout=PairMatrix("wup"))
    mats = [np.arange(6, dtype=np.float32).reshape(2, 3), np.full((1, 2), 0.5, np.float32)]
    store.write_feature(wup, pks, [{"wup": m} for m in mats])
    sdoi = make_entry("sdoi", 1, {}, "p1", "sentence", ["sdoi"], layout=SentenceMask("sdoi"))
    store.write_feature(sdoi, ks, [{"sdoi": np.eye(n, dtype=np.uint8)} for n in (2, 3, 1)])
    return store, ks, pks, mats


def test_store_feature_roundtrip_survives_reopen(toy):
    store, ks, pks, mats = toy
    again = open_store(store.location, create=False)
    data = again.load_feature(again.find_entry("wup"))
    for pk, m in zip(pks, mats):
        np.testing.assert_array_equal(data.get(pk)["wup"], m)
    assert data.get(pks[0])["wup"].dtype == np.float32
    with pytest.raises(NotFoundError):
        data.get("missing")


def test_store_frame_joins_pairs_parses_and_matrices(toy):
    store, ks, pks, mats = toy
    df = store.frame("wup", dataset="toy", split="test")
    assert df["pair_key"].to_list() == pks
    assert df["text_a"].to_list() == ["a b", "f"]
    assert df["words_b"][0].to_list() == ["w0", "w1", "w2"]
    assert df["heads_b"][0].to_list() == [0, 1, 1]
    assert np.array(df["wup"][0].to_list()).tolist() == mats[0].tolist()
    sd = store.frame("sdoi", dataset="toy", split="test")
    assert np.array(sd["sdoi_b"][0].to_list()).tolist() == np.eye(3).tolist()
    assert np.array(sd["sdoi_a"][1].to_list()).tolist() == [[1]]


def test_store_frame_of_an_entry_lacking_pairs_is_an_error_not_nulls(toy):
    store, ks, pks, _ = toy
    extra = make_entry("wup", 1, {"k": 2}, "p1", "pair", ["wup"], options={"k": 2}, layout=PairMatrix("wup"))
    store.write_feature(extra, [pks[1]], [{"wup": np.ones((1, 2), np.float32)}])
    with pytest.raises(IncompleteEntryError, match="lacks 1 of the 2 pairs of toy/test") as err:
        store.frame("wup", dataset="toy", split="test", params={"k": 2})
    assert err.value.missing == 1 and err.value.entry.key == extra.key


def test_store_parquet_tables_readable_by_polars_directly(toy):
    store, *_ = toy
    pairs = pl.scan_parquet(os.path.join(store.location, "segments", "*", "pairs.parquet")).collect()
    assert pairs.height == 2 and set(pairs.columns) >= {"pair_key", "key_a", "key_b", "label"}


def test_store_uncommitted_segment_is_invisible_and_gc_removes_it(toy):
    store, ks, pks, _ = toy
    entry = make_entry("wup", 1, {"k": 1}, "p1", "pair", ["wup"], layout=PairMatrix("wup"))
    before = len(open_store(store.location).load_feature(entry))
    # a writer that died after writing its files but before its catalog record
    sid = new_segment_id()
    leftover = os.path.join(store.location, "segments", sid)
    os.makedirs(leftover)
    with open(os.path.join(leftover, "index.parquet"), "wb") as fh:
        fh.write(b"half")
    fresh = open_store(store.location)
    assert len(fresh.load_feature(entry)) == before
    report = verify_store(fresh)
    assert report.ok and report.leftovers == [sid]
    dry = gc_store(fresh, dry_run=True)
    assert dry.removed == [f"segments/{sid}"] and os.path.exists(leftover)
    gc_store(fresh)
    assert not os.path.exists(leftover)


def test_store_verify_detects_changed_and_missing_files(toy):
    store, *_ = toy
    assert verify_store(store).ok
    seg = store.segments("feature")[0]
    path = os.path.join(store.location, seg.folder, "index.parquet")
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(path, "wb").write(bytes(data))
    report = verify_store(open_store(store.location))
    assert not report.ok and seg.id in report.damaged[0] and "checksum" in report.damaged[0]
    os.remove(os.path.join(store.location, store.segments("parses")[0].folder, "parses.parquet"))
    report = verify_store(open_store(store.location))
    assert len(report.damaged) == 2 and any("missing file" in line for line in report.damaged)
    gc_store(open_store(store.location), drop_damaged=True)
    # the pairs whose parses were dropped remain, reported until a rebuild parses them again
    report = verify_store(open_store(store.location))
    assert report.damaged == report.incomplete and "have no parse p1" in report.incomplete[0]


def test_store_damaged_catalog_record_is_reported(toy):
    store, *_ = toy
    name = sorted(os.listdir(os.path.join(store.location, "catalog")))[0]
    open(os.path.join(store.location, "catalog", name), "w").write("{not json")
    with pytest.raises(StoreError, match="prior store verify"):
        open_store(store.location).segments()
    report = verify_store(open_store(store.location))
    assert not report.ok and name in report.damaged[0]
    gc_store(open_store(store.location), drop_damaged=True)
    # that record was the sentences': the pairs that reference them are reported until a rebuild
    report = verify_store(open_store(store.location))
    assert report.damaged == report.incomplete and "sentences are not in the store" in report.incomplete[0]


def test_store_resources_are_content_keyed_and_idempotent(toy):
    store, *_ = toy
    table = pa.table({"word": ["a", "b"], "idf": [1.0, 2.0]})
    vecs = np.arange(6, dtype=np.float32).reshape(2, 3)
    k1 = store.write_resource("vocab", table, arrays={"vectors": vecs}, meta={"source": "x"})
    k2 = store.write_resource("vocab", table, arrays={"vectors": vecs}, meta={"source": "x"})
    assert k1 == k2 and len(store.segments("resource")) == 1
    res = open_store(store.location).read_resource(k1)
    np.testing.assert_array_equal(res.arrays["vectors"], vecs)
    assert res.table.equals(table) and res.meta == {"source": "x"}
    k3 = store.write_resource("vocab", table, arrays={"vectors": vecs + 1}, meta={"source": "x"})
    assert k3 != k1 and store.find_resources("vocab", source="x") == [k1, k3]


def test_store_rejects_bad_writes_without_touching_content(toy):
    store, ks, pks, _ = toy
    entry = make_entry("wup", 1, {"k": 1}, "p1", "pair", ["wup"], layout=PairMatrix("wup"))
    n_segments = len(store.segments())
    with pytest.raises(StoreError, match="3 dimensions"):
        store.write_feature(entry, [pks[0]], [{"wup": np.zeros((1, 1, 1))}])
    with pytest.raises(StoreError, match="lacks component"):
        store.write_feature(entry, [pks[0]], [{"other": np.zeros((1, 1))}])
    assert len(open_store(store.location).segments()) == n_segments
    with pytest.raises(NotFoundError, match="no pairs of toy/dev"):
        store.pairs("toy", "dev")
    with pytest.raises(NotFoundError, match="prior build --features dep"):
        store.find_entry("dep")
    with pytest.raises(NotFoundError, match="prior build --features dep "):  # dep builds tfidf
        store.find_entry("tfidf")


def test_store_new_source_supersedes_old_rows(toy):
    store, ks, pks, _ = toy
    store.write_pairs("toy", "test", pa.table({"row": [2], "pair_key": [pks[1]], "key_a": [ks[2]], "key_b": [ks[0]],
                                               "label": ["no"], "id": [None]}), source_sha256="s2")
    assert store.pair_rows("toy", "test")["pair_key"].to_list() == [pks[1]]


def test_store_open_by_file_url_and_info(toy, tmp_path):
    store, *_ = toy
    via_url = open_store("file://" + store.location, create=False)
    assert len(via_url.load_feature(via_url.find_entry("sdoi"))) == 3
    info = store_info(via_url)
    assert info.datasets == [{"dataset": "toy", "split": "test", "rows": 2}]
    assert {e["feature"] for e in info.entries} == {"wup@1", "sdoi@1"}
    with pytest.raises(NotFoundError):
        open_store(tmp_path / "nothing", create=False)


def test_store_parses_reads_only_the_columns_asked_for(toy):
    store = toy[0]
    full = store.parses()
    words = store.parses(columns=("words",))
    assert words.columns == ["sent_key", "words"]
    assert words["words"].to_list() == full["words"].to_list()
    with pytest.raises(StoreError, match="unknown parse column"):
        store.parses(columns=("wordz",))


def test_store_parses_cache_reads_each_segment_once_and_sees_new_segments(toy, monkeypatch):
    from prior.featurestore.segment_cache import PARSE_SEGMENTS

    store, ks, _, _ = toy
    monkeypatch.setenv("PRIOR_SEGMENT_CACHE_MB", "64")
    PARSE_SEGMENTS.clear()
    reads = PARSE_SEGMENTS.reads
    first = store.parses([ks[0], ks[2]], parse="p1", cache=True)
    assert PARSE_SEGMENTS.reads == reads + 1
    again = open_store(store.location).parses([ks[2], ks[1]], parse="p1", cache=True)  # another Store, as in a new task
    assert PARSE_SEGMENTS.reads == reads + 1  # served from the cache
    assert again.to_dicts() == store.parses([ks[2], ks[1]], parse="p1").to_dicts()
    assert first.to_dicts() == store.parses([ks[0], ks[2]], parse="p1").to_dicts()

    new = K.sentence_key("g h")
    store.write_parses("p1", {"backend": "fake"}, [new], [_record(2)], spec="spacy")  # a later segment is read too
    assert store.parses([new, ks[0]], parse="p1", cache=True)["sent_key"].to_list() == [ks[0], new]
    assert PARSE_SEGMENTS.reads == reads + 2
    PARSE_SEGMENTS.clear()


def test_segment_cache_stays_within_its_bound(monkeypatch):
    from prior.featurestore.segment_cache import SegmentCache

    cache = SegmentCache()
    table = pl.DataFrame({"x": list(range(1000))})  # 8 kB
    monkeypatch.setenv("PRIOR_SEGMENT_CACHE_MB", str(20_000 / 2**20))
    for key in range(5):
        assert cache.get(key, lambda: table) is table
    assert len(cache) == 2 and cache.nbytes <= 20_000  # the oldest went first
    cache.get(3, lambda: pytest.fail("3 was cached"))
    monkeypatch.setenv("PRIOR_SEGMENT_CACHE_MB", "0")
    cache.clear()
    cache.get("off", lambda: table)
    assert len(cache) == 0 and cache.reads == 6
    monkeypatch.setenv("PRIOR_SEGMENT_CACHE_MB", "lots")
    with pytest.raises(ValueError, match="PRIOR_SEGMENT_CACHE_MB='lots' is not a number"):
        cache.get("x", lambda: table)
