"""Store keys held as numbers (`prior.featurestore.key_numbers`): exact both ways, in the texts'
order, refusing what is not a key; a split's index reads its rows and its entries' keys in this
form and resolves the same split as from their texts; a pairs file with a value that is not a
key is named (segment, file, column, row) and left as it was."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import polars as pl
import pytest

from prior.featurestore import keys as K
from prior.featurestore import open_store
from prior.featurestore.errors import StoreError
from prior.featurestore.key_numbers import KEY_NUMBER, KeyTextError, key_numbers, key_text_bytes, key_texts
from prior.featurestore.numbered_split import NumberedCoverage, leave_out_numbered, numbered_split
from prior.featurestore.segment_files import key_items, read_frames
from prior.featurestore.selection import Coverage
from prior.featurestore.splits import leave_out_skipped
from prior.trainers.split_index import index_split, pairs_digest
from tests.trainers_fixtures import many_pairs_store

TEXTS = pl.Series("key", [K.sentence_key(f"sentence {i}") for i in range(300)] + ["0" * 32, "f" * 32])


@pytest.fixture(scope="module")
def location(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("numbers") / "s"
    many_pairs_store(path, partition=7)
    return path


def test_numbers_are_the_keys_exactly_and_in_their_order() -> None:
    numbers = key_numbers(TEXTS)
    assert numbers.dtype == KEY_NUMBER and numbers.name == "key"
    assert key_texts(numbers).to_list() == TEXTS.to_list()
    assert [int(t, 16) for t in TEXTS.to_list()] == numbers.to_list()  # the number the text spells
    assert key_texts(numbers.sort()).to_list() == sorted(TEXTS.to_list())
    assert key_text_bytes(numbers).shape == (len(TEXTS), 32)
    assert key_numbers(numbers) is numbers


@pytest.mark.parametrize("bad", ["A" * 32, "ab" * 15, "ab" * 17, "g" * 32, "", None, " " + "a" * 31, "aF" * 16,
                                 "\u00e9" + "a" * 30])  # the last: 31 characters, 32 bytes
def test_a_value_that_is_no_key_is_refused_by_row_or_made_null(bad: str | None) -> None:
    keys = pl.Series("key", [TEXTS[0], TEXTS[1], bad, TEXTS[2]], dtype=pl.String)
    with pytest.raises(KeyTextError, match=r"row 2: .* is not a key \(32 lowercase hex digits\)") as caught:
        key_numbers(keys)
    assert caught.value.row == 2
    lenient = key_numbers(keys, strict=False)
    assert lenient.is_null().to_list() == [False, False, True, False]
    assert key_texts(lenient.drop_nulls()).to_list() == [TEXTS[0], TEXTS[1], TEXTS[2]]


def test_the_pairs_digest_is_the_same_from_texts_and_from_numbers() -> None:
    keys = pl.Series("pair_key", [K.digest(str(i).encode()) for i in range(70_000)])  # more than one chunk
    reference = hashlib.blake2b("".join(f"{k}\n" for k in keys.to_list()).encode(), digest_size=16).hexdigest()
    assert pairs_digest(keys) == pairs_digest(key_numbers(keys)) == reference
    assert pairs_digest(key_numbers(keys.reverse())) != reference


def test_key_columns_and_pair_rows_as_numbers_equal_their_texts(location: Path) -> None:
    store = open_store(location, create=False)
    segs = [s for s in store.segments("feature") if s.target["entry"] == store.entries("dep")[0].key]
    texts = pl.concat(read_frames(store.fs, segs, "index.parquet", ["key"]))
    numbers = pl.concat(read_frames(store.fs, segs, "index.parquet", ["key"], numbers=["key"]))
    assert numbers.schema == {"key": KEY_NUMBER}
    assert numbers.equals(texts.with_columns(key_numbers(texts["key"])))
    rows = store.pair_rows("many", "train")
    assert store.pair_rows("many", "train", numbers=True).equals(
        rows.with_columns(*(key_numbers(rows[c]) for c in ("pair_key", "key_a", "key_b"))))
    assert read_frames(store.fs, [], "index.parquet", ["key"], numbers=["key"]) == []


def test_skipped_sentences_leave_the_same_pairs_out_of_rows_as_numbers(location: Path) -> None:
    store = open_store(location, create=False)
    rows = store.pair_rows("many", "train")
    first, second = rows["key_a"][0], rows["key_b"][5]
    skipped = {first: "over the 6-word limit", second: "the parser failed", "not a key": "a crafted record"}
    kept, counts = leave_out_skipped(rows, skipped)
    assert sum(counts.values()) > 0
    # out of the numbered split a training index reads: the same pairs, the sentences they use
    numbered, counts_s = leave_out_numbered(numbered_split(store, "many", "train"), skipped)
    assert counts_s == counts and key_texts(numbered.pair_key).to_list() == kept["pair_key"].to_list()
    sentences = key_texts(numbered.sentences).to_list()
    assert [sentences[i] for i in numbered.sent_a] == kept["key_a"].to_list()
    assert first not in set(key_texts(numbered.sentences).to_list())


def test_the_index_from_numbers_resolves_the_split_as_its_texts_do(location: Path) -> None:
    store = open_store(location, create=False)
    index = index_split(store, "many", "train", feature="dep")
    rows = store.pair_rows("many", "train")
    assert index.fingerprint["pairs_digest"] == pairs_digest(rows["pair_key"])
    assert index.pair_keys().tolist() == rows["pair_key"].to_list()
    # each sentence number stands for one key, every distinct key has one
    numbered = dict(zip([*index.sent_a.tolist(), *index.sent_b.tolist()],
                        [*rows["key_a"].to_list(), *rows["key_b"].to_list()]))
    sentences = [numbered[i] for i in range(index.sentences)]
    assert len(set(sentences)) == index.sentences == pl.concat([rows["key_a"], rows["key_b"]]).n_unique()
    assert [sentences[i] for i in index.sent_a.tolist()] == rows["key_a"].to_list()
    assert [sentences[i] for i in index.sent_b.tolist()] == rows["key_b"].to_list()
    # each pair's dep item is the one whose key column holds that pair's key
    loc = index.pair_locs[store.entries("dep")[0].key]
    held = [key_items(store.fs, [s], "index.parquet", "key")["key"].to_list() for s in loc.segments]
    assert [held[s][i] for s, i in zip(loc.seg.tolist(), loc.item.tolist())] == rows["pair_key"].to_list()
    words = [key_items(store.fs, [s], "parses.parquet", "sent_key")["key"].to_list() for s in index.words.segments]
    assert [words[s][i] for s, i in zip(index.words.seg.tolist(), index.words.item.tolist())] == sentences
    assert index_split(store, "many", "train").fingerprint["pairs_digest"] == index.fingerprint["pairs_digest"]


@pytest.mark.parametrize(("column", "files", "bad_file"), [("pair_key", 1, 0), ("key_b", 1, 0), ("key_a", 20, 13)])
def test_a_pairs_file_with_a_value_that_is_no_key_is_named_and_kept(tmp_path: Path, column: str, files: int,
                                                                    bad_file: int) -> None:
    store = many_pairs_store(tmp_path / "s", splits=("train",))
    rows = store.pair_rows("many", "train")
    written = []
    for k in range(files):  # one split of `files` files, as a build of `files` partitions writes it
        part = rows.slice(4 * k, 4)
        if k == bad_file:
            part = part.with_columns(pl.Series(column, [*part[column].to_list()[:3], "not-a-key"]))
        written.append(store.write_pairs("many", "crafted", part.to_arrow(), source_sha256="0" * 64))
    bad = written[bad_file]
    assert bad is not None and len(store.split_segments("many", "crafted")) == files
    before = {p: p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file()}
    with pytest.raises(StoreError, match=rf"segment {bad.id} \(pairs\) file pairs.parquet: column '{column}' row 3: "
                                         r"'not-a-key' is not a key"):
        index_split(open_store(tmp_path / "s", create=False), "many", "crafted")
    assert {p: p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file()} == before
    assert len(index_split(store, "many", "train")) == 120  # the store's other splits read as before


def test_what_an_entry_lacks_is_counted_alike_from_numbers_and_from_texts(tmp_path: Path) -> None:
    """`Coverage.lacking` from keys as numbers (each key column looked up as it is, only the
    keys not found made distinct) gives the counts of the text path's anti-join: for complete
    entries, and for a pair and a sentence entry that hold part of the split, some keys twice."""
    import numpy as np

    from prior.featurestore import make_entry
    from prior.featurestore.key_index import distinct_keys
    from prior.layouts.kinds import PairMatrix, SentenceMask

    store = many_pairs_store(tmp_path / "s", partition=7)
    rows = store.pair_rows("many", "train")
    pair_keys = rows["pair_key"].unique(maintain_order=True).to_list()
    sentences = distinct_keys(rows["key_a"], rows["key_b"]).to_list()
    dep, sdoi = store.entries("dep")[0], store.entries("sdoi")[0]
    pairs = make_entry("wup", 1, {"k": 9}, dep.parse, "pair", ["wup"], options={"k": 9}, layout=PairMatrix("wup"))
    for held in (pair_keys[:10], pair_keys[5:12]):  # two segments, five keys in both
        store.write_feature(pairs, held, [{"wup": np.ones((2, 2), np.float32)}] * len(held))
    sents = make_entry("sdoi", 1, {"k": 9}, sdoi.parse, "sentence", ["sdoi"], options={"k": 9},
                       layout=SentenceMask("sdoi"))
    store.write_feature(sents, sentences[:7], [{"sdoi": np.ones((2, 2), np.uint8)}] * 7)
    counts = {}
    for entry in (dep, sdoi, pairs, sents):
        text = Coverage(store).missing(entry, "many", "train")
        assert NumberedCoverage(store).missing(entry, "many", "train") == text
        assert NumberedCoverage(store).lacking(entry, "many", "train") == text[0]
        counts[entry.key] = text
    assert counts[dep.key] == (0, len(pair_keys)) and counts[sdoi.key] == (0, len(sentences))
    assert counts[pairs.key] == (len(pair_keys) - 12, len(pair_keys))
    assert counts[sents.key] == (len(sentences) - 7, len(sentences))


@pytest.mark.parametrize("group_rows", [1, 5, 24])
def test_large_files_read_a_row_group_at_a_time_give_the_same_keys_rows_and_index(
        tmp_path: Path, group_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Segment tables are written in row groups of `KEY_GROUP_ROWS` rows; a file of more rows
    (a compacted segment) is read a row group at a time, small files grouped up to that many
    rows: the keys, the split's rows as numbers and the index are those of a read of whole
    files, the same files."""
    import pyarrow.parquet as pq

    import prior.featurestore.segment_files as segment_files

    monkeypatch.setattr(segment_files, "KEY_GROUP_ROWS", group_rows)
    store = many_pairs_store(tmp_path / "s", partition=7)
    segs = [s for s in store.segments("feature") if s.target["entry"] == store.entries("dep")[0].key]
    parses = store.segments("parses")
    groups = [pq.ParquetFile(tmp_path / "s" / s.folder / "index.parquet").metadata.num_row_groups for s in segs]
    assert groups == [-(-s.rows // group_rows) for s in segs]

    def reads() -> tuple:
        fresh = open_store(tmp_path / "s", create=False)
        return (pl.concat(read_frames(fresh.fs, segs, "index.parquet", ["key"], numbers=["key"])),
                pl.concat(read_frames(fresh.fs, parses, "parses.parquet", ["sent_key"], numbers=["sent_key"])),
                fresh.pair_rows("many", "train", numbers=True), numbered_split(fresh, "many", "train"),
                index_split(fresh, "many", "train", feature="dep"))

    parted = reads()
    grouped = [list(g) for _, g in segment_files._groups(segs)]
    assert [s.id for g in grouped for s in g] == [s.id for s in segs]
    for g, after in itertools.pairwise(grouped):  # as many small files as fit, a large one on its own
        rows = sum(s.rows for s in g)
        assert (len(g) == 1 and rows > group_rows) or rows + after[0].rows > group_rows
    assert (max(len(g) for g in grouped) > 1) == (group_rows >= 7)
    monkeypatch.setattr(segment_files, "KEY_GROUP_ROWS", 1 << 16)
    whole = reads()
    for before, after in zip(whole[:3], parted[:3]):
        assert after.equals(before)
    assert parted[3].pair_key.equals(whole[3].pair_key) and parted[3].sentences.equals(whole[3].sentences)
    assert (parted[3].sent_a == whole[3].sent_a).all() and (parted[3].sent_b == whole[3].sent_b).all()
    assert parted[4].fingerprint == whole[4].fingerprint
    for loc, ref in zip([parted[4].words, *parted[4].pair_locs.values(), *parted[4].sentence_locs.values()],
                        [whole[4].words, *whole[4].pair_locs.values(), *whole[4].sentence_locs.values()]):
        assert (loc.seg == ref.seg).all() and (loc.item == ref.item).all()


def test_a_value_that_is_no_key_in_a_file_read_in_parts_is_named_by_its_row_in_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import prior.featurestore.segment_files as segment_files

    store = many_pairs_store(tmp_path / "s", splits=("train",))
    rows = store.pair_rows("many", "train").head(20)
    crafted = rows.with_columns(pl.Series("key_b", [*rows["key_b"].to_list()[:17], "not-a-key",
                                                    *rows["key_b"].to_list()[18:]]))
    monkeypatch.setattr(segment_files, "KEY_GROUP_ROWS", 8)  # written and read in row groups of 8, 8 and 4 rows
    bad = store.write_pairs("many", "crafted", crafted.to_arrow(), source_sha256="0" * 64)
    assert bad is not None and bad.rows == 20
    fs = open_store(tmp_path / "s", create=False).fs
    assert [[t.num_rows for t in segment_files.parquet_parts(fs, bad, "pairs.parquet", ["row"], rows)]
            for rows in (8, 15, 16, 100)] == [[8, 8, 4], [8, 12], [16, 4], [20]]
    before = {p: p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file()}
    with pytest.raises(StoreError, match=rf"segment {bad.id} \(pairs\) file pairs.parquet: column 'key_b' row 17: "
                                         r"'not-a-key' is not a key"):
        index_split(open_store(tmp_path / "s", create=False), "many", "crafted")
    assert {p: p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file()} == before


def test_a_changed_file_read_in_parts_is_refused_before_any_part(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The parts of a large file are decoded from bytes checked against its record, as a whole
    file's are: a file whose content changed is named before a row of it is used."""
    import prior.featurestore.checked as checked
    import prior.featurestore.segment_files as segment_files

    store = many_pairs_store(tmp_path / "s", splits=("train",))
    segment = store.split_segments("many", "train")[0]
    monkeypatch.setattr(segment_files, "KEY_GROUP_ROWS", 8)
    monkeypatch.setattr(checked, "_VERIFIED", set())  # as in a process that has not read the store
    assert segment.rows > 8
    path = tmp_path / "s" / segment.folder / "pairs.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=rf"segment {segment.id} \(pairs\) file pairs.parquet: does not match its "
                                         "checksum"):
        list(segment_files.frame_groups(open_store(tmp_path / "s", create=False).fs, [segment], "pairs.parquet",
                                        None, ["pair_key"]))


def test_a_file_that_cannot_be_decoded_is_named_by_every_parquet_reader(tmp_path: Path) -> None:
    """A file this process checked, then broken under it: a whole read, a read in row groups and
    a read of a parse's words as dictionaries each give the one `StoreError` naming it."""
    import prior.featurestore.segment_files as segment_files

    store = many_pairs_store(tmp_path / "s", splits=("train",))
    segment = store.segments("parses")[0]
    segment_files.read_parquet(store.fs, segment, "parses.parquet")  # checked: later reads trust its record
    (tmp_path / "s" / segment.folder / "parses.parquet").write_bytes(b"not parquet" * 10)
    reads = (lambda: segment_files.read_parquet(store.fs, segment, "parses.parquet"),
             lambda: list(segment_files.parquet_parts(store.fs, segment, "parses.parquet", None, 5)),
             lambda: segment_files.read_string_lists(store.fs, segment, "parses.parquet", "words"))
    for read in reads:
        with pytest.raises(StoreError, match=rf"^segment {segment.id} \(parses\) file parses.parquet: cannot be read "
                                             r"\(ArrowInvalid: "):
            read()
