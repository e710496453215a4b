"""The `emb` feature: vocabulary resource, per-sentence word ids, OOV; made embeddings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from featurestore import open_store
from featurestore.errors import PriorError, ResourceError
from pipeline.embeddings.io import read_embeddings, write_word2vec_text
from pipeline.embeddings.table import load_embeddings
from pipeline.features.emb import EmbFeature, oov_rates, oov_stats, word_ids
from pipeline.parsers.base import Parse


def mk(words: list[str]) -> Parse:
    n = len(words)
    return Parse(words=tuple(words), lemmas=tuple(words), upos=("X",) * n, tags=("X",) * n,
                 heads=(0,) * n, rels=("dep",) * n, ents=("",) * n)


def test_embeddings_feature_lookup_rules() -> None:
    index = {"the": 0, "Paris": 1, "paris": 2, "cat": 3}
    words = ["The", "Paris", "cat", "CAT", "dog"]
    np.testing.assert_array_equal(word_ids(words, index), [0, 1, 3, 3, -1])
    np.testing.assert_array_equal(word_ids(words, index, "exact"), [-1, 1, 3, -1, -1])
    np.testing.assert_array_equal(word_ids(words, index, "lower"), [0, 2, 3, 3, -1])
    assert word_ids([], index).dtype == np.int32
    with pytest.raises(PriorError, match="lookup"):
        word_ids(words, index, "stem")


def test_embeddings_feature_oov_stats() -> None:
    stats = oov_stats("dev", [["a", "b", "a"], ["c"]], [np.array([0, -1, 0]), np.array([-1])])
    assert (stats.tokens, stats.oov_tokens, stats.types, stats.oov_types) == (4, 2, 3, 2)
    assert stats.rate == 0.5 and "OOV 50.00% of 4 word tokens (2 of 3 distinct words)" in stats.line("x")


def test_embeddings_feature_needs_vocabulary() -> None:
    with pytest.raises(PriorError, match="prepare"):
        EmbFeature().compute([mk(["a"])])
    feature = EmbFeature().with_vocabulary(["a", "b"], key="k")
    (out,) = feature.compute([mk(["b", "A", "z"])])
    np.testing.assert_array_equal(out["word_ids"], [1, 0, -1])
    assert feature.params() == {"vocab": "k", "lookup": "exact-then-lower"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from pipeline.build import BuildOptions, build

    root = tmp_path_factory.mktemp("emb")
    vectors = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    emb_file = write_word2vec_text(root / "tiny.txt", ["a", "man", "is", "the", "boy", "."], vectors)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        build(BuildOptions(dataset="sick", splits=("train", "trial"), features=("emb",),
                           store=str(root / "store"), limit=10, workers=0, embeddings=emb_file,
                           progress=False))
    return root / "store", emb_file


def test_embeddings_feature_build_stores_vocabulary_and_ids(built: tuple[Path, Path]) -> None:
    store_path, emb_file = built
    store = open_store(store_path, create=False)
    entry = store.find_entry("emb")
    emb = load_embeddings(store, entry.params["vocab"])
    original = read_embeddings(emb_file)
    assert emb.words == original.words
    np.testing.assert_array_equal(emb.vectors, original.vectors)
    data = store.load_feature(entry)
    parses = store.parses(list(data.keys))
    index = {w: i for i, w in enumerate(emb.words)}
    for key, words in zip(parses["sent_key"].to_list(), parses["words"].to_list()):
        ids = data.get(key)["word_ids"]
        assert ids.dtype == np.int32 and len(ids) == len(words)
        np.testing.assert_array_equal(ids, word_ids(words, index))
    stats = {s.split: s for s in oov_rates(store, "sick")}
    assert set(stats) == {"train", "trial"}
    assert 0 < stats["train"].rate < 1 and stats["train"].tokens > 50


def test_embeddings_feature_missing_file_is_explained(tmp_path: Path) -> None:
    class Ctx:
        store = None

    with pytest.raises(ResourceError, match="--embeddings PATH"):
        EmbFeature().prepare(Ctx())


def test_embeddings_feature_train_and_counterfit_from_store(built: tuple[Path, Path],
                                                            tmp_path: Path) -> None:
    from pipeline.embeddings.counterfit import CounterfitSettings
    from pipeline.embeddings.make import counterfit_embeddings, train_dependency_embeddings
    from pipeline.embeddings.sgns import SgnsSettings

    store = open_store(built[0], create=False)
    made = train_dependency_embeddings(store, tmp_path / "deps.txt",
                                       settings=SgnsSettings(dim=8, epochs=2, min_count=1))
    emb = read_embeddings(made.path)
    assert emb.dim == 8 and "man" in emb.words and len(emb) == made.record["words"]
    record = json.loads(Path(f"{made.path}.json").read_text())
    assert record["settings"]["negative"] == 15 and record["contexts"] == "dep"
    assert made.resource in store.find_resources("embeddings")

    class TinyWordNet:  # stands in for nltk's reader: a synonym pair and an antonym pair
        def all_synsets(self) -> list[object]:
            from tests.test_embeddings_counterfit import FakeLemma, FakeSynset

            return [FakeSynset([FakeLemma("kids", []), FakeLemma("children", [])]),
                    FakeSynset([FakeLemma("young", ["old"])])]

    cf = counterfit_embeddings(str(made.path), tmp_path / "cf.txt", store=store,
                               settings=CounterfitSettings(), wordnet=TinyWordNet())
    out = read_embeddings(cf.path)
    unit = out.vectors / np.linalg.norm(out.vectors, axis=1, keepdims=True)
    i, j, k = out.index["kids"], out.index["children"], out.index["old"]
    y = out.index["young"]
    assert unit[i] @ unit[j] > 0.9 and unit[y] @ unit[k] < 0.1
    assert cf.record["synonym_pairs"] == 1 and cf.record["antonym_pairs"] == 1
