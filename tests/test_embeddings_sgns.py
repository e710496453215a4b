"""Dependency contexts (Levy & Goldberg) and the skip-gram trainer on a tiny corpus."""

from __future__ import annotations

import numpy as np
import pytest

from prior.errors import DataError
from prior.pipeline.embeddings.depcontexts import corpus_contexts, dependency_contexts
from prior.pipeline.embeddings.sgns import SgnsSettings, train_sgns
from prior.pipeline.parsers.base import Parse


def mk(words: list[str], heads: list[int], rels: list[str]) -> Parse:
    n = len(words)
    return Parse(words=tuple(words), lemmas=tuple(words), upos=("X",) * n, tags=("X",) * n,
                 heads=tuple(heads), rels=tuple(rels), ents=("",) * n)


def test_embeddings_sgns_contexts_heads_and_children() -> None:
    p = mk(["Australian", "scientist", "discovers", "star"], [2, 3, 0, 3],
           ["amod", "nsubj", "ROOT", "dobj"])
    assert sorted(dependency_contexts(p)) == sorted([
        ("scientist", "australian/amod"), ("australian", "scientist/amod-1"),
        ("discovers", "scientist/nsubj"), ("scientist", "discovers/nsubj-1"),
        ("discovers", "star/dobj"), ("star", "discovers/dobj-1"),
    ])
    assert ("Australian" in {w for w, _ in dependency_contexts(p, lowercase=False)})


def test_embeddings_sgns_collapses_prepositions() -> None:
    # "discovers star with telescope": discovers -prep-> with -pobj-> telescope (ClearNLP labels)
    p = mk(["discovers", "star", "with", "telescope"], [0, 1, 1, 3],
           ["ROOT", "dobj", "prep", "pobj"])
    got = set(dependency_contexts(p))
    assert ("discovers", "telescope/prep_with") in got
    assert ("telescope", "discovers/prep_with-1") in got
    assert not any(w == "with" or c.startswith("with/") for w, c in got)
    kept = set(dependency_contexts(p, collapse_prep=False))
    assert ("discovers", "with/prep") in kept and ("with", "telescope/pobj") in kept


def corpus() -> list[Parse]:
    sents = []
    for noun, adjs, verb, obj_verb in [("cat", ["small", "hungry", "sleepy"], "sleeps", "feed"),
                                       ("dog", ["small", "hungry", "sleepy"], "sleeps", "feed"),
                                       ("car", ["fast", "red", "old"], "stops", "drive"),
                                       ("truck", ["fast", "red", "old"], "stops", "drive")]:
        for adj in adjs:
            sents.append(mk(["the", adj, noun, verb], [3, 3, 4, 0], ["det", "amod", "nsubj", "ROOT"]))
            sents.append(mk(["we", obj_verb, "the", adj, noun], [2, 0, 5, 5, 2],
                            ["nsubj", "ROOT", "det", "amod", "dobj"]))
    return sents


def cos(x: np.ndarray, y: np.ndarray) -> float:
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


def test_embeddings_sgns_neighbours_move_as_expected() -> None:
    pairs = list(corpus_contexts(corpus()))
    untrained = train_sgns(pairs, SgnsSettings(dim=16, negative=3, epochs=1, min_count=1,
                                               lr=0.0, min_lr=0.0)).embeddings
    result = train_sgns(pairs, SgnsSettings(dim=16, negative=3, epochs=30, min_count=1,
                                            batch_size=8, lr=0.05, seed=3))
    emb = result.embeddings
    assert result.losses[-1] < result.losses[0]
    # Nouns sharing their dependency contexts end up nearest neighbours; at the start they are not.
    assert untrained.nearest("cat", 1)[0][0] != "dog"
    assert emb.nearest("cat", 1)[0][0] == "dog" and emb.nearest("car", 1)[0][0] == "truck"
    assert cos(emb.vector("cat"), emb.vector("dog")) > cos(untrained.vector("cat"),
                                                           untrained.vector("dog")) + 0.5
    assert cos(emb.vector("cat"), emb.vector("dog")) > cos(emb.vector("cat"), emb.vector("truck"))
    # Same seed, same vectors.
    again = train_sgns(pairs, SgnsSettings(dim=16, negative=3, epochs=30, min_count=1,
                                           batch_size=8, lr=0.05, seed=3)).embeddings
    np.testing.assert_array_equal(again.vectors, emb.vectors)


def test_embeddings_sgns_min_count() -> None:
    pairs = list(corpus_contexts(corpus()))
    result = train_sgns(pairs, SgnsSettings(dim=4, epochs=1, min_count=6))
    assert "cat" in result.embeddings.words and result.dropped_pairs > 0
    with pytest.raises(DataError, match="min_count"):
        train_sgns(pairs, SgnsSettings(dim=4, epochs=1, min_count=10_000))
