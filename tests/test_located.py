"""`prior.featurestore.located`: a split's keys located in segments as their key columns are
read, group by group; against a plain dictionary of first copies, and on a real store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import prior.featurestore.located as located
from prior.featurestore import keys as K
from prior.featurestore import make_entry, open_store
from prior.featurestore.key_numbers import key_numbers
from prior.featurestore.located import locate_keys
from prior.featurestore.numbered_split import NumberedCoverage
from prior.featurestore.selection import Coverage
from prior.layouts.kinds import PairMatrix
from tests.trainers_fixtures import many_pairs_store


def _keys(values: list[int]) -> pl.Series:
    return key_numbers(pl.Series("key", [K.digest(str(v).encode()) for v in values]))


@pytest.mark.parametrize("seed", range(6))
def test_each_key_is_located_at_its_first_copy_in_segment_order(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups of several segments and a large segment read in parts over several groups; keys
    held twice in a group, in two segments, and by none; split keys given twice."""
    rng = np.random.default_rng(seed)
    heights = rng.integers(1, 9, size=7).tolist()
    held = [rng.integers(0, 40, size=h).tolist() for h in heights]  # segment s holds these, in row order
    # segment 3 is "large": read in three parts, each a group of its own
    cuts = sorted(rng.choice(np.arange(1, max(heights[3], 3)), size=2, replace=len(range(1, max(heights[3], 3))) < 2))
    groups: list[list[tuple[int, list[int]]]] = [[(0, held[0]), (1, held[1]), (2, held[2])]]
    parts = np.split(np.array(held[3]), [c for c in cuts if c < heights[3]])
    groups += [[(3, p.tolist())] for p in parts if len(p)]
    groups += [[(4, held[4]), (5, held[5])], [(6, held[6])]]

    def frame_groups(fs: object, segments: object, inner: str, columns: list[str], numbers: list[str]
                     ) -> Iterator[tuple[list[tuple[int, int]], pl.DataFrame]]:
        for group in groups:
            yield [(k, len(v)) for k, v in group], pl.DataFrame({"key": _keys([x for _, v in group for x in v])})

    monkeypatch.setattr(located, "frame_groups", frame_groups)
    wanted = rng.integers(0, 50, size=30).tolist()  # some given twice, some held by no segment
    found = locate_keys(None, [object()] * 7, "index.parquet", "key", _keys(wanted))  # type: ignore[arg-type, list-item]
    first: dict[int, tuple[int, int]] = {}
    for s, values in enumerate(held):
        for item, v in enumerate(values):
            first.setdefault(v, (s, item))
    seg, item = found.of(_keys(wanted))
    assert [(int(a), int(b)) for a, b in zip(seg, item)] == [first.get(v, (-1, -1)) for v in wanted]
    assert found.lacking == len({v for v in wanted if v not in first})
    # some of the keys, in another order: looked up
    some = wanted[::-3]
    seg, item = found.of(_keys(some))
    assert [(int(a), int(b)) for a, b in zip(seg, item)] == [first.get(v, (-1, -1)) for v in some]
    with pytest.raises(ValueError, match="not located"):
        found.of(_keys([1000]))


def test_distinct_keys_located_are_answered_without_a_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(located, "frame_groups", lambda *a: iter([([(0, 2)], pl.DataFrame({"key": _keys([2, 1])}))]))
    keys = _keys([1, 2, 3])
    found = locate_keys(None, [object()], "index.parquet", "key", keys)  # type: ignore[arg-type, list-item]
    monkeypatch.setattr(located, "KeyIndex", None)  # a lookup would fail
    seg, item = found.of(keys)
    assert seg.tolist() == [0, 0, -1] and item.tolist() == [1, 0, -1] and found.lacking == 1


def test_coverage_located_on_a_store_counts_and_places_as_the_frames_do(tmp_path: Path) -> None:
    """An entry written in two segments that share five keys and lack the rest of the split:
    its keys' first copies, the count of what it lacks, and the located kept only for an entry
    that holds the whole split."""
    store = many_pairs_store(tmp_path / "s")
    pair_keys = store.pair_rows("many", "train")["pair_key"].unique(maintain_order=True).to_list()
    dep = store.entries("dep")[0]
    partial = make_entry("wup", 1, {"k": 9}, dep.parse, "pair", ["wup"], options={"k": 9}, layout=PairMatrix("wup"))
    for held in (pair_keys[:10], pair_keys[5:12]):
        store.write_feature(partial, held, [{"wup": np.ones((2, 2), np.float32)}] * len(held))
    store = open_store(tmp_path / "s", create=False)
    coverage = NumberedCoverage(store)
    for entry in (dep, partial):
        assert coverage.missing(entry, "many", "train") == Coverage(store).missing(entry, "many", "train")
    found = coverage.entry_located(partial, "many", "train")
    seg, item = found.of(found.keys)
    assert seg[:12].tolist() == [0] * 10 + [1, 1] and item[:12].tolist() == [*range(10), 5, 6]
    assert (seg[12:] == -1).all() and found.lacking == len(pair_keys) - 12
    kept = coverage.entry_located(dep, "many", "train")
    assert kept.lacking == 0 and coverage.take_located(dep, "many", "train") is kept
    assert coverage.entry_located(dep, "many", "train") is not kept  # taken: read again when asked again
    assert coverage.entry_located(partial, "many", "train") is not found  # an incomplete entry is not kept


@pytest.mark.parametrize("limit", [None, 17])
def test_a_split_that_holds_a_pair_three_times_locates_every_row(tmp_path: Path, limit: int | None) -> None:
    """20 distinct pairs over 60 rows: the split's sorted keys hold each once, and each of its
    rows (all of them, or the first 17) is located at the item that holds its key."""
    from prior.featurestore.segment_files import key_items
    from prior.trainers.split_index import index_split

    store = many_pairs_store(tmp_path / "s", pairs=60, sentences=5)
    rows = store.pair_rows("many", "train")
    assert rows["pair_key"].n_unique() == 20
    index = index_split(store, "many", "train", feature="dep", limit=limit)
    loc = index.pair_locs[store.entries("dep")[0].key]
    held = [key_items(store.fs, [s], "index.parquet", "key")["key"].to_list() for s in loc.segments]
    assert len(index) == (limit or 60)
    assert [held[s][i] for s, i in zip(loc.seg.tolist(), loc.item.tolist())] == rows["pair_key"].to_list()[:len(index)]
