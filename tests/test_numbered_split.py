"""A split's rows as numbers (`prior.featurestore.numbered_split`), read a group of files at a
time: the same pairs, sentences and labels as its frame (`SegmentStore.pair_rows`), sentences
numbered by first appearance group by group, pairs left out as the frame's read leaves them out;
rows out of order read whole as the frame is; labels coded so that the index's errors stay
those of the frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from prior.errors import DataError
from prior.featurestore import keys as K
from prior.featurestore import open_store
from prior.featurestore.key_numbers import KEY_NUMBER, key_numbers
from prior.featurestore.numbered_split import (
    MISSING_LABEL,
    KeyNumbering,
    LabelCodes,
    NumberedCoverage,
    numbered_split,
)
from prior.featurestore.rebuild import ShortSplitError
from prior.featurestore.segment_files import frame_groups
from prior.featurestore.selection import Coverage
from prior.trainers.split_index import index_split
from tests.trainers_fixtures import many_pairs_store


@pytest.fixture(scope="module")
def location(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """500 pairs in files of 9: 56 files, four groups of `frame_groups`; and a split "mixed" of
    the same files whose second sentences are the first ones in reverse (a group's second
    sentences are then new where the whole split's first sentences are not)."""
    path = tmp_path_factory.mktemp("numbered") / "s"
    store = many_pairs_store(path, pairs=500, sentences=300, partition=9)
    rows = store.pair_rows("many", "train")
    mixed = rows.with_columns(rows["key_a"].reverse().alias("key_b"))
    for start in range(0, mixed.height, 9):
        store.write_pairs("many", "mixed", mixed.slice(start, 9).to_arrow(), source_sha256="m" * 64,
                          meta={"label_kind": "class", "labels": ["0", "1"]})
    return path


def group_order(store, dataset: str, split: str) -> list[int]:
    """The split's sentences as the module docstring numbers them: each group's new key_a
    values, then its new key_b values."""
    seen: dict[int, int] = {}
    segs = store.split_segments(dataset, split)
    for _, frame in frame_groups(store.fs, segs, "pairs.parquet", ["row", "key_a", "key_b"], ["key_a", "key_b"]):
        for column in ("key_a", "key_b"):
            for key in frame[column].to_list():
                seen.setdefault(key, len(seen))
    return list(seen)


@pytest.mark.parametrize("split", ["train", "mixed"])
def test_the_numbered_split_is_the_frame_group_by_group(location: Path, split: str) -> None:
    store = open_store(location, create=False)
    assert len(store.split_segments("many", split)) > 3 * 16  # several groups
    rows = store.pair_rows("many", split, numbers=True)
    got = numbered_split(store, "many", split)
    assert got.height == rows.height == 500
    assert got.pair_key.dtype == KEY_NUMBER and got.pair_key.to_list() == rows["pair_key"].to_list()
    sentences = got.sentences.to_list()
    assert sentences == group_order(store, "many", split)
    assert [sentences[i] for i in got.sent_a.tolist()] == rows["key_a"].to_list()
    assert [sentences[i] for i in got.sent_b.tolist()] == rows["key_b"].to_list()
    assert got.label_names == ("0", "1") and got.labels is not None
    assert got.labels.tolist() == [int(x) for x in rows["label"].to_list()]
    # "mixed": the order differs from the whole columns' first appearance, so the test means something
    whole = pl.concat([rows["key_a"], rows["key_b"]]).unique(maintain_order=True).to_list()
    assert (sentences != whole) == (split == "mixed")


def test_a_split_of_one_group_numbers_its_sentences_as_distinct_keys_does(tmp_path: Path) -> None:
    store = many_pairs_store(tmp_path / "s", splits=("train",))
    rows = store.pair_rows("many", "train", numbers=True)
    got = numbered_split(store, "many", "train")
    assert got.sentences.to_list() == pl.concat([rows["key_a"], rows["key_b"]]).unique(maintain_order=True).to_list()


def test_the_index_reads_the_numbered_split(location: Path) -> None:
    store = open_store(location, create=False)
    index = index_split(store, "many", "train", feature="dep")
    rows = store.pair_rows("many", "train")
    sentences = group_order(store, "many", "train")
    assert len(index) == 500 and index.sentences == len(sentences)
    texts = [f"{k:032x}" for k in sentences]
    assert [texts[i] for i in index.sent_b.tolist()] == rows["key_b"].to_list()
    assert index.labels is not None and index.labels.dtype == np.int64
    assert index.pair_keys().tolist() == rows["pair_key"].to_list()


def test_take_renumbers_the_sentences_the_kept_pairs_use_in_their_order(location: Path) -> None:
    got = numbered_split(open_store(location, create=False), "many", "train")
    keep = np.zeros(got.height, dtype=bool)
    keep[[3, 10, 11, 400]] = True
    part = got.take(keep)
    sentences = got.sentences.to_list()
    want_a = [sentences[i] for i in got.sent_a[keep]]
    want_b = [sentences[i] for i in got.sent_b[keep]]
    kept = part.sentences.to_list()
    assert [kept[i] for i in part.sent_a] == want_a and [kept[i] for i in part.sent_b] == want_b
    assert sorted(set(want_a + want_b), key=sentences.index) == kept
    assert part.pair_key.to_list() == got.pair_key.filter(pl.Series(keep)).to_list()
    assert part.labels is not None and got.labels is not None and part.labels.tolist() == got.labels[keep].tolist()
    assert got.head(2).pair_key.to_list() == got.pair_key.head(2).to_list()
    assert got.take(np.ones(got.height, dtype=bool)) is got


def test_the_coverage_of_numbered_splits_counts_what_the_frame_counts(location: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(location, create=False)
    entries = [store.entries(name)[0] for name in ("dep", "sdoi")]
    for entry in entries:
        assert NumberedCoverage(store).missing(entry, "many", "train") == Coverage(store).missing(entry, "many", "train")
    # a build that skipped a sentence: its pairs are needed of no entry
    skipped = {store.pair_rows("many", "train")["key_a"][0]: "over the limit"}
    monkeypatch.setattr(store, "skipped_sentences", lambda parse: skipped)
    for entry in entries:
        want = Coverage(store).needed("many", "train", entry.scope, entry.parse).len()
        assert NumberedCoverage(store).needed("many", "train", entry.scope, entry.parse).len() == want
        assert want < NumberedCoverage(store).numbered("many", "train").height * (1 if entry.scope == "pair" else 2)
        assert NumberedCoverage(store).missing(entry, "many", "train") == Coverage(store).missing(entry, "many", "train")


def test_rows_out_of_order_are_read_whole_and_sorted_as_the_frame(tmp_path: Path) -> None:
    store = many_pairs_store(tmp_path / "s", splits=("train",))
    rows = store.pair_rows("many", "train")
    for start in (60, 0):  # the second half's rows first, then the first half: files out of row order
        part = rows.slice(start, 60)
        store.write_pairs("many", "shuffled", part.to_arrow(), source_sha256="0" * 64,
                          meta={"label_kind": "class", "labels": ["0", "1"]})
    store.write_pairs("many", "shuffled", rows.slice(10, 5).to_arrow(), source_sha256="0" * 64,  # five rows again
                      meta={"label_kind": "class", "labels": ["0", "1"]})
    got = numbered_split(open_store(tmp_path / "s", create=False), "many", "shuffled")
    assert got.height == 120
    assert got.pair_key.to_list() == key_numbers(rows["pair_key"]).to_list()
    sentences = got.sentences.to_list()
    assert [sentences[i] for i in got.sent_a] == key_numbers(rows["key_a"]).to_list()


def test_a_short_split_is_refused_as_the_frame_is(location: Path, tmp_path: Path) -> None:
    import shutil

    shutil.copytree(location, tmp_path / "s")
    store = open_store(tmp_path / "s", create=False)
    gone = store.split_segments("many", "train")[3]
    next((tmp_path / "s" / "catalog").glob(f"*{gone.id}*.json")).unlink()
    with pytest.raises(ShortSplitError, match=rf"{gone.id}"):
        numbered_split(open_store(tmp_path / "s", create=False), "many", "train")


def test_label_codes_keep_unknown_and_missing_labels_apart() -> None:
    codes = LabelCodes("class", ["neutral", "entailment"])
    first = codes(pl.Series("label", ["entailment", "maybe", None, "neutral"]))
    second = codes(pl.Series("label", ["other", "maybe"]))
    assert first is not None and second is not None
    assert first.tolist() == [1, 2, MISSING_LABEL, 0] and second.tolist() == [3, 2]
    assert codes.unknown == ["maybe", "other"]
    scores = LabelCodes("score", [])(pl.Series("label", [0.5, 4.0]))
    assert scores is not None and scores.dtype == np.float32 and scores.tolist() == [0.5, 4.0]
    assert LabelCodes("none", [])(pl.Series("label", ["x"])) is None


def test_an_unknown_label_is_named_and_a_missing_one_leaves_the_split_unlabelled(tmp_path: Path) -> None:
    store = many_pairs_store(tmp_path / "s", splits=("train",))
    rows = store.pair_rows("many", "train")
    meta = {"label_kind": "class", "labels": ["0", "1"]}
    bad = rows.with_columns(pl.Series("label", ["1"] * 50 + ["2"] + ["0"] * 69))
    store.write_pairs("many", "odd", bad.to_arrow(), source_sha256="1" * 64, meta=meta)
    with pytest.raises(DataError, match=r"many/odd: label '2' is not one of \('0', '1'\)"):
        index_split(open_store(tmp_path / "s", create=False), "many", "odd")
    none = bad.with_columns(pl.Series("label", ["2"] + [None] * 119, dtype=pl.String))
    store.write_pairs("many", "unlabelled", none.to_arrow(), source_sha256="2" * 64, meta=meta)
    assert index_split(open_store(tmp_path / "s", create=False), "many", "unlabelled").labels is None


def test_key_numbering_keeps_each_keys_number_across_calls() -> None:
    keys = key_numbers(pl.Series("k", [K.sentence_key(f"s{i}") for i in range(400)]))
    numbering, want = KeyNumbering(), {}
    rng = np.random.default_rng(0)
    for call in range(20):  # each call's new keys merged into the keys numbered
        a = keys.gather(rng.integers(0, 20 * (call + 1), 30))
        b = keys.gather(rng.integers(0, 400, 30))
        for key in [*dict.fromkeys(a.to_list()), *dict.fromkeys(b.to_list())]:
            want.setdefault(key, len(want))
        got_a, got_b = numbering.number(a, b)
        assert got_a.tolist() == [want[k] for k in a.to_list()]
        assert got_b.tolist() == [want[k] for k in b.to_list()]
    assert numbering.keys().to_list() == list(want) and numbering.count == len(want)


def test_key_numbering_of_keys_that_share_their_high_half() -> None:
    """Keys of a crafted store, with one high half among several: each call's new keys cannot
    be merged by high half, the numbered keys are indexed anew, and the numbers stay."""
    keys = [(1 << 64) | 9, (1 << 64) | 3, (2 << 64) | 3, 7, (1 << 64) | 5, (2 << 64) | 1]
    numbering, want = KeyNumbering(), {}
    for a, b in ((keys[:2], keys[2:3]), (keys[1:4], keys[:1]), (keys[4:], keys[::-1])):
        for key in [*dict.fromkeys(a), *dict.fromkeys(b)]:
            want.setdefault(key, len(want))
        got = numbering.number(pl.Series(a, dtype=KEY_NUMBER), pl.Series(b, dtype=KEY_NUMBER))
        assert [g.tolist() for g in got] == [[want[k] for k in a], [want[k] for k in b]]
    assert numbering.keys().to_list() == list(want)
