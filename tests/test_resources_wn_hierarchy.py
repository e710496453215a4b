"""The precomputed WordNet hierarchy: equal to nltk's depths and hypernym distances, cached once
on disk, rebuilt when damaged, and clear about damaged WordNet files."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prior.errors import ResourceError
from prior.pipeline.resources import wn_hierarchy as H


def nltk_view(table: H.HierarchyTable, wordnet: Any, id_: int) -> tuple[Any, dict[tuple[str, int], int]]:
    """nltk's synset at a table id and its ancestors' shortest distances by address."""
    synset = wordnet.synset_from_pos_and_offset(H.FILE_POS[table.file_pos[id_]], int(table.offset[id_]))
    paths = synset._shortest_hypernym_paths(simulate_root=False)
    return synset, {("a" if s.pos() == "s" else s.pos(), s.offset()): d for s, d in paths.items()}


def assert_rows_equal_nltk(table: H.HierarchyTable, wordnet: Any, ids: list[int]) -> None:
    for id_ in ids:
        synset, want = nltk_view(table, wordnet, id_)
        anc, dist = table.ancestors(id_)
        got = {(H.FILE_POS[table.file_pos[a]], int(table.offset[a])): d for a, d in zip(anc, dist)}
        assert anc[0] == id_ and dist[0] == 0
        assert got == want, synset
        assert H.SS_TYPES[table.ss_type[id_]] == synset.pos(), synset
        assert (table.min_depth[id_], table.max_depth[id_]) == (synset.min_depth(), synset.max_depth()), synset


def test_table_equals_nltk_on_sampled_synsets(wordnet: Any) -> None:
    table = H.table_for(wordnet)
    assert len(table) == 117_659  # WordNet 3.0
    rng = random.Random(3)
    ids = rng.sample(range(len(table)), 300)
    # instance hypernyms and a deep noun: both pointer kinds count, as in nltk
    ids += [table.address_map()[("n", wordnet.synset(name).offset())] for name in ("paris.n.01", "chef.n.01")]
    assert_rows_equal_nltk(table, wordnet, ids)


@pytest.mark.slow
def test_table_equals_nltk_on_every_synset(wordnet: Any) -> None:
    table = H.table_for(wordnet)
    assert_rows_equal_nltk(table, wordnet, list(range(len(table))))


def test_table_is_cached_on_disk_and_rebuilt_when_damaged(wordnet: Any, monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path))
    monkeypatch.setattr(H, "_tables", {})
    table = H.table_for(wordnet)
    directory = H.cache_dir(table.wordnet)
    # copies: the arrays are memory-mapped, and the file is damaged in place below
    first = {name: np.array(getattr(table, name)) for name in ("anc_id", "anc_dist", "max_depth")}
    del table
    assert directory.is_relative_to(tmp_path) and (directory / "meta.json").is_file()

    def no_build(*_: Any) -> H.HierarchyTable:
        raise AssertionError("rebuilt although the cache is intact")

    monkeypatch.setattr(H, "_tables", {})
    monkeypatch.setattr(H, "build_table", no_build)
    again = H.table_for(wordnet)  # a fresh process: read from disk, memory-mapped
    assert isinstance(again.anc_id, np.memmap)
    assert np.array_equal(again.anc_id, first["anc_id"]) and np.array_equal(again.max_depth, first["max_depth"])
    del again

    (directory / "anc_dist.npy").write_bytes(b"damaged")
    monkeypatch.setattr(H, "_tables", {})
    with pytest.raises(AssertionError, match="rebuilt"):
        H.table_for(wordnet)
    (directory / "anc_dist.npy").write_bytes(b"")  # empty, and meta.json not an object
    (directory / "meta.json").write_text("[]")
    monkeypatch.setattr(H, "_tables", {})
    with pytest.raises(AssertionError, match="rebuilt"):
        H.table_for(wordnet)
    monkeypatch.undo()
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path))
    monkeypatch.setattr(H, "_tables", {})
    rebuilt = H.table_for(wordnet)
    assert np.array_equal(rebuilt.anc_dist, first["anc_dist"])


# --------------------------------------------------------------------------- hand-made files
def write_wndb(directory: Path, noun_lines: list[str]) -> H.OpenFile:
    directory.mkdir(parents=True, exist_ok=True)
    header = "  1 This software and database is being provided to you, the LICENSEE, by\n"
    (directory / "data.noun").write_text(header + "".join(line + "\n" for line in noun_lines))
    for name in ("data.verb", "data.adj", "data.adv"):
        (directory / name).write_text(header)
    return lambda name: (directory / name).open("rb")


def test_build_from_hand_made_files(tmp_path: Path) -> None:
    # entity <- object <- {thing, paris (instance)}; thing <- item (two paths to object)
    open_file = write_wndb(tmp_path, [
        "00000100 03 n 01 entity 0 000 | root",
        "00000200 03 n 01 object 0 001 @ 00000100 n 0000 | o",
        "00000300 03 n 01 thing 0 001 @ 00000200 n 0000 | t",
        "00000400 03 n 01 paris 0 001 @i 00000200 n 0000 | p",
        "00000500 03 n 01 item 0 003 @ 00000300 n 0000 @ 00000200 n 0000 ~ 00000100 n 0000 | i",
    ])
    table = H.build_table(open_file, "wordnet-test")
    assert table.offset.tolist() == [100, 200, 300, 400, 500]
    assert table.min_depth.tolist() == [0, 1, 2, 2, 2]
    assert table.max_depth.tolist() == [0, 1, 2, 2, 3]
    anc, dist = table.ancestors(4)  # item: thing at 1, object at 1 (direct), entity at 2
    assert dict(zip(anc, dist)) == {4: 0, 2: 1, 1: 1, 0: 2}
    assert dict(zip(*table.ancestors(3))) == {3: 0, 1: 1, 0: 2}  # the instance pointer counts


def test_hypernym_cycle_and_damaged_line_are_named(tmp_path: Path) -> None:
    cycle = write_wndb(tmp_path / "cycle", [
        "00000100 03 n 01 a 0 001 @ 00000200 n 0000 | a",
        "00000200 03 n 01 b 0 001 @ 00000100 n 0000 | b",
    ])
    with pytest.raises(ResourceError, match=r"WordNet file /wn/data.noun, synset 00000[12]00: .*cycle"):
        H.build_table(cycle, "wordnet-test", "/wn")
    damaged = write_wndb(tmp_path / "damaged", ["00000100 03 n 01 a 0 002 @ 00000200 | a"])
    with pytest.raises(ResourceError, match=r"data.noun, line 2: malformed synset line"):
        H.build_table(damaged, "wordnet-test")
    dangling = write_wndb(tmp_path / "dangling", ["00000100 03 n 01 a 0 001 @ 00000900 n 0000 | a"])
    with pytest.raises(ResourceError, match=r"synset 00000100: hypernym \('n', 900\) has no synset line"):
        H.build_table(dangling, "wordnet-test")
