"""The loader against a small hand-written store: features reach the right word pieces,
labels, sharding, and missing features name the `prior build` command that adds them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from prior.errors import PriorError
from prior.trainers.data import MissingFeatureError, load_split
from tests.trainers_fixtures import PAIRS, pair_value, tiny_store, tiny_tokenizer


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    return tiny_store(tmp_path_factory.mktemp("store") / "s")


def positions(data, i: int) -> tuple[np.ndarray, np.ndarray]:
    row = data.rows[i]
    return data.encoded.seg[row], data.encoded.wid[row]


@pytest.mark.parametrize("feature", ["wup", "dep"])
def test_data_pair_features_land_on_their_pieces(store, feature: str) -> None:
    data = load_split(store, "toy", "train", tiny_tokenizer(), feature=feature)
    batch = data.batch_arrays(np.arange(len(data)))
    grid = batch["prior_grid"]
    T = grid.shape[1]
    shift = 1.0 if feature == "dep" else 0.0  # dep: M_F + 1 with S = 0, tf-idf = 1
    for i in range(len(data)):
        seg, wid = positions(data, i)
        seg, wid = seg[:T], wid[:T]
        for p in range(T):
            for q in range(T):
                if seg[p] == 0 and seg[q] == 1:
                    assert grid[i, p, q] == pytest.approx(pair_value(i, wid[p], wid[q]) + shift)
                    assert grid[i, q, p] == grid[i, p, q]
                elif not (seg[p] == 1 and seg[q] == 0):
                    assert grid[i, p, q] == 1.0


def test_data_sdoi_and_embeddings(store) -> None:
    tok = tiny_tokenizer()
    sd = load_split(store, "toy", "train", tok, feature="sdoi").batch_arrays(np.arange(4))
    assert sd["sdoi_mask"].dtype == bool
    # pair 0, A = the unbelievable cat sat (heads 2 4 4 0): "the" (pos 1) sees its ancestors
    assert sd["sdoi_mask"][0, 1, [1, 2, 3, 4, 6]].all() and not sd["sdoi_mask"][0, 1, 5]
    emb = load_split(store, "toy", "train", tok, feature="emb").batch_arrays(np.arange(4))
    vec = emb["word_vectors"]
    assert vec.shape[:2] == sd["input_ids"].shape and vec.shape[2] == 3
    assert (vec[0, 0] == 0).all()  # [CLS]
    assert (vec[0, 2:5] == 0).all()  # un ##believ ##able: out of vocabulary → zeros
    assert (vec[0, 1] != 0).all()  # "the"


def test_data_labels_and_per_batch_padding(store) -> None:
    data = load_split(store, "toy", "test", tiny_tokenizer())
    assert data.label_names == ("0", "1")
    assert data.labels.tolist() == [int(p[4]) for p in PAIRS]
    b = data.batch(np.array([2]))
    assert b["input_ids"].shape[1] == int(data.encoded.lengths[2])  # padded to this batch only
    assert b["attention_mask"].all()


def test_data_missing_feature_prints_build_command(tmp_path: Path) -> None:
    bare = tiny_store(tmp_path / "bare", features=())
    with pytest.raises(MissingFeatureError) as err:
        load_split(bare, "toy", "train", tiny_tokenizer(), feature="dep")
    # the store's parse records its parser (biaffine), as every parse does
    assert (f"prior build --dataset toy --split train --features dep --parser biaffine "
            f"--store {bare.location}") in str(err.value)


def test_data_missing_feature_command_names_parser_and_embeddings(tmp_path: Path) -> None:
    """A store parsed with spaCy needs `--parser spacy` (the build default is biaffine), and
    `emb` needs an embedding file: the printed command says both."""
    bare = tiny_store(tmp_path / "bare", features=(), parser={"backend": "spacy"})
    with pytest.raises(MissingFeatureError) as err:
        load_split(bare, "toy", "train", tiny_tokenizer(), feature="emb")
    assert (f"prior build --dataset toy --split train --features emb --embeddings EMB_FILE --parser spacy "
            f"--store {bare.location}") in str(err.value)
    assert "prior embed train" in str(err.value)


def test_data_truncation_keeps_alignment(store) -> None:
    data = load_split(store, "toy", "train", tiny_tokenizer(), feature="wup", max_length=9)
    grid = data.batch_arrays(np.array([0]))["prior_grid"][0]
    seg, wid = positions(data, 0)
    assert int(data.encoded.lengths[0]) == 9
    for p in range(9):
        for q in range(9):
            if seg[p] == 0 and seg[q] == 1:
                assert grid[p, q] == pytest.approx(pair_value(0, wid[p], wid[q]))


def test_data_fingerprint_records_entries_and_parser(store) -> None:
    """What a checkpoint's prior.json records about the data: the feature entry keys and the
    parse (id and parser fingerprint) the words came from, also for a model without feature."""
    dep = load_split(store, "toy", "train", tiny_tokenizer(), feature="dep")
    assert set(dep.fingerprint["entries"]) == {"dep", "tfidf"}
    assert dep.fingerprint["parser"] == {"parser": "hand"}
    plain = load_split(store, "toy", "train", tiny_tokenizer())
    assert plain.fingerprint["entries"] == {} and plain.fingerprint["parse"] == dep.fingerprint["parse"]


def test_data_view_gives_dafa_ablations(store) -> None:
    """`view` switches DAFA's components off (tiny store: S = 0, tf-idf = 1): without the
    trigram matrix M_F = |S|·tf tfᵀ = 0, so every A↔B cell holds the neutral 1; without S it
    equals the full matrix; the view is part of the data fingerprint."""
    tok = tiny_tokenizer()
    full = load_split(store, "toy", "train", tok, feature="dep")
    no_s = load_split(store, "toy", "train", tok, feature="dep", view="dep-no-subgraph")
    no_m = load_split(store, "toy", "train", tok, feature="dep", view="dep-no-trigram")
    rows = np.arange(len(full))
    g_full, g_no_s, g_no_m = (d.batch_arrays(rows)["prior_grid"] for d in (full, no_s, no_m))
    np.testing.assert_array_equal(g_no_s, g_full)
    assert (g_no_m == 1.0).all() and not (g_full == 1.0).all()
    assert no_m.fingerprint["view"] == "dep-no-trigram" and full.fingerprint["view"] is None
    with pytest.raises(PriorError, match="view 'dep-no-everything' is not a registered variant view"):
        load_split(store, "toy", "train", tok, feature="dep", view="dep-no-everything")
    with pytest.raises(PriorError, match="view 'dep-no-tfidf' does not apply: this model reads 'wup'"):
        load_split(store, "toy", "train", tok, feature="wup", view="dep-no-tfidf")


def test_data_derangement_moves_every_pair() -> None:
    from prior.trainers.sources import derangement

    for n in (2, 3, 10, 101):
        d = derangement(n)
        assert sorted(d.tolist()) == list(range(n)) and not (d == np.arange(n)).any()
    np.testing.assert_array_equal(derangement(10), derangement(10))


@pytest.mark.parametrize("feature", ["wup", "dep", "sdoi", "emb"])
def test_data_destroyed_features_reach_the_batch(store, feature: str) -> None:
    """`neutral` puts the feature's neutral value everywhere; `shuffled` gives each pair
    another pair's values, cut or filled to its own words."""
    data = load_split(store, "toy", "train", tiny_tokenizer(), feature=feature)
    rows = np.arange(len(data))
    stored = data.batch_arrays(rows)
    neutral = data.with_features("neutral").batch_arrays(rows)
    shuffled = data.with_features("shuffled").batch_arrays(rows)
    key = {"wup": "prior_grid", "dep": "prior_grid", "sdoi": "sdoi_mask", "emb": "word_vectors"}[feature]
    assert not np.array_equal(stored[key], neutral[key]) and not np.array_equal(stored[key], shuffled[key])
    if key == "prior_grid":
        assert (neutral[key] == 1.0).all()
    elif key == "word_vectors":
        assert (neutral[key] == 0).all()
    else:
        real = stored["attention_mask"].astype(bool)
        assert (neutral[key] == ((real[:, :, None] & real[:, None, :]) | np.eye(real.shape[1], dtype=bool))).all()
    assert data.with_features("shuffled").fingerprint["features"] == "shuffled"
    with pytest.raises(PriorError, match="unknown feature mode"):
        data.with_features("gone")


def test_data_shuffled_pair_matrix_is_the_donors(store) -> None:
    from prior.trainers.sources import derangement

    data = load_split(store, "toy", "train", tiny_tokenizer(), feature="wup")
    shuffled = data.with_features("shuffled").source
    donors = derangement(len(data))
    for i, d in enumerate(donors):
        n, m = data.word_counts[i]
        got = shuffled.matrices.get(i)
        want = data.source.matrices.get(int(d))
        k, j = min(n, want.shape[0]), min(m, want.shape[1])
        np.testing.assert_array_equal(got[:k, :j], want[:k, :j])
        assert got.shape == (n, m) and (got[k:, :] == 1).all() and (got[:, j:] == 1).all()
