"""`KeyIndex`: keys held as numbers found by binary search, the first position of equal keys,
-1 for a key it does not hold, and the same answers where two keys share their high half."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from prior.featurestore.key_index import KeyIndex, distinct_keys
from prior.featurestore.key_numbers import KEY_NUMBER, key_halves


def _keys(values: list[int]) -> pl.Series:
    return pl.Series("key", values, dtype=KEY_NUMBER)


def _first_positions(held: list[int], wanted: list[int]) -> list[int]:
    """The reference: a Polars join on the first copy of each held key."""
    frame = pl.DataFrame({"key": _keys(held), "at": np.arange(len(held))}).filter(pl.col("key").is_first_distinct())
    found = _keys(wanted).to_frame().join(frame, on="key", how="left", maintain_order="left")
    return found["at"].fill_null(-1).to_list()


def test_key_halves_are_the_high_and_low_64_bits() -> None:
    value = (0xFEDCBA9876543210 << 64) | 0x0123456789ABCDEF
    hi, lo = key_halves(_keys([value, 5]))
    assert hi.dtype == np.uint64 and hi.tolist() == [0xFEDCBA9876543210, 0] and lo.tolist() == [0x0123456789ABCDEF, 5]
    with pytest.raises(TypeError, match="held as numbers"):
        key_halves(pl.Series(["ab"]))


def test_the_first_position_of_each_key_and_minus_one_for_the_others() -> None:
    rng = np.random.default_rng(7)
    distinct = [int(h) << 64 | int(lo) for h, lo in rng.integers(0, 2**63, size=(500, 2), dtype=np.uint64)]
    held = [distinct[i] for i in rng.integers(0, 400, size=1200)]  # duplicates, in no order
    wanted = [distinct[i] for i in rng.integers(0, 500, size=900)]  # some never held
    found = KeyIndex(_keys(held)).find(_keys(wanted))
    assert found.dtype == np.int64
    assert found.tolist() == _first_positions(held, wanted)
    assert (found == -1).any() and (found >= 0).any()


@pytest.mark.parametrize("chunk", [1, 7, 1 << 16])
def test_keys_found_chunk_by_chunk_and_distinct_keys_kept_as_sorted(chunk: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The same answers whatever the chunk ``find`` looks keys up by (one that divides the
    wanted keys, one that leaves a remainder, one larger than them), for an index of distinct
    keys (its sorted arrays kept as they are) and one with duplicates."""
    import prior.featurestore.key_index as key_index

    monkeypatch.setattr(key_index, "FIND_CHUNK", chunk)
    rng = np.random.default_rng(11)
    distinct = [int(h) << 64 | int(lo) for h, lo in rng.integers(0, 2**63, size=(300, 2), dtype=np.uint64)]
    wanted = [distinct[i] for i in rng.integers(0, 300, size=301)]
    for held in (distinct[:250], [distinct[i] for i in rng.integers(0, 250, size=600)]):
        assert KeyIndex(_keys(held)).find(_keys(wanted)).tolist() == _first_positions(held, wanted)


def test_keys_that_share_their_high_half_are_told_apart_by_the_low_one() -> None:
    # a crafted store: distinct keys with one high half, and duplicates among them
    held = [(1 << 64) | 9, (1 << 64) | 3, (2 << 64) | 3, (1 << 64) | 9, (1 << 64) | 5, 7]
    wanted = [(1 << 64) | 5, (1 << 64) | 9, (1 << 64) | 4, (2 << 64) | 3, 7, (1 << 64) | 3, (3 << 64)]
    index = KeyIndex(_keys(held))
    assert len(index) == 5
    assert index.find(_keys(wanted)).tolist() == [4, 0, -1, 2, 5, 1, -1] == _first_positions(held, wanted)


def test_new_keys_joined_into_an_index_are_found_at_their_positions_and_sorted_ones_alike() -> None:
    """`KeyIndex.joined` merges distinct new keys into the sorted ones (key i of them at ``first
    + i``): the index found in the same way as one made of all the keys; `find_sorted` gives
    `find`'s answers; a new key sharing its high half with a held one is refused (None)."""
    rng = np.random.default_rng(5)
    distinct = [int(h) << 64 | int(lo) for h, lo in rng.integers(0, 2**63, size=(900, 2), dtype=np.uint64)]
    index = KeyIndex(_keys(distinct[:100]))
    for start in range(100, 800, 175):  # runs of new keys, merged one after another
        joined = index.joined(_keys(distinct[start:start + 175]), start)
        assert joined is not None
        index = joined
    wanted = [distinct[i] for i in rng.integers(0, 900, size=1000)]  # some never held
    assert index.find(_keys(wanted)).tolist() == _first_positions(distinct[:800], wanted)
    assert np.array_equal(index.hi, np.sort(index.hi)) and index.position.dtype == np.int32
    distinct_wanted = list(dict.fromkeys(wanted))
    assert (index.find_sorted(KeyIndex(_keys(distinct_wanted))).tolist()
            == index.find(_keys(distinct_wanted)).tolist())
    assert index.joined(_keys([(distinct[3] >> 64 << 64) | 1]), 800) is None  # the high half of a held key
    assert KeyIndex(_keys([])).joined(_keys([4, 2]), 0).find(_keys([2, 4, 3])).tolist() == [1, 0, -1]  # type: ignore[union-attr]


def test_an_empty_index_holds_nothing() -> None:
    index = KeyIndex(_keys([]))
    assert len(index) == 0 and index.find(_keys([1, 2])).tolist() == [-1, -1]
    assert KeyIndex(_keys([3])).find(_keys([])).tolist() == []


def test_distinct_keys_in_the_order_they_first_appear_in_the_columns_joined() -> None:
    rng = np.random.default_rng(3)
    values = [int(h) << 64 | int(lo) for h, lo in rng.integers(0, 2**63, size=(300, 2), dtype=np.uint64)]
    a = _keys([values[i] for i in rng.integers(0, 200, size=700)])
    b = _keys([values[i] for i in rng.integers(100, 300, size=700)])  # half of them also in a
    joined = pl.concat([a, b]).unique(maintain_order=True)
    assert distinct_keys(a, b).to_list() == joined.to_list()
    assert distinct_keys(b, a).to_list() == pl.concat([b, a]).unique(maintain_order=True).to_list()
    assert distinct_keys(a).to_list() == a.unique(maintain_order=True).to_list()
    assert distinct_keys(a.head(0), b.head(0)).len() == 0
    with pytest.raises(ValueError, match="at least one"):
        distinct_keys()
