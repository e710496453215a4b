"""DAFA's tf-idf weights: Ramos's count · ln(N/df) by default, smooth idf + L2 as ``l2``."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from prior.errors import PriorError
from prior.pipeline.features.tfidf import IdfTable, TfidfFeature, tfidf_weights
from prior.pipeline.parsers.base import Parse


def mk(words: list[str], lemmas: list[str] | None = None) -> Parse:
    n = len(words)
    return Parse(words=tuple(words), lemmas=tuple(lemmas or [w.lower() for w in words]),
                 upos=("X",) * n, tags=("X",) * n, heads=(0,) * n, rels=("dep",) * n,
                 ents=("",) * n)


TRAIN = [["a", "b"], ["a", "c"], ["a", "a", "d"]]


def test_tfidf_smooth_idf_by_hand() -> None:
    idf = IdfTable.from_documents(TRAIN)
    assert idf.n_docs == 3 and idf.df == {"a": 3, "b": 1, "c": 1, "d": 1}
    assert idf.idf("a") == pytest.approx(1.0)                  # ln(4/4) + 1
    assert idf.idf("b") == pytest.approx(1 + math.log(2))      # ln(4/2) + 1
    assert idf.idf("zzz") == pytest.approx(1 + math.log(4))    # unseen: df = 0


def test_tfidf_ramos_by_hand_with_repeated_and_unseen_word() -> None:
    idf = IdfTable.from_documents(TRAIN)
    w = tfidf_weights(["a", "a", "b", "zzz"], idf)          # default: ramos
    # a: count 2 · ln(3/3) = 0; b: 1 · ln(3/1); zzz unseen counts as df = 1
    np.testing.assert_allclose(w, [0.0, 0.0, math.log(3), math.log(3)], rtol=1e-6)
    assert w.dtype == np.float32
    np.testing.assert_allclose(tfidf_weights(["b", "b"], idf), [2 * math.log(3)] * 2, rtol=1e-6)
    with pytest.raises(PriorError, match="weighting"):
        tfidf_weights(["a"], idf, "bm25")


def test_tfidf_l2_weights_by_hand_with_repeated_word() -> None:
    idf = IdfTable.from_documents(TRAIN)
    w = tfidf_weights(["a", "a", "b"], idf, "l2")
    raw_a, raw_b = 2 * 1.0, 1 * (1 + math.log(2))          # tf · idf per distinct term
    norm = math.sqrt(raw_a**2 + raw_b**2)                     # L2 over distinct terms
    np.testing.assert_allclose(w, [raw_a / norm, raw_a / norm, raw_b / norm], rtol=1e-6)
    assert w.dtype == np.float32
    assert tfidf_weights([], idf).shape == (0,)


def test_tfidf_arrow_round_trip() -> None:
    idf = IdfTable.from_documents(TRAIN)
    table, arrays = idf.to_arrow()
    assert table.column("term").to_pylist() == ["a", "b", "c", "d"]
    back = IdfTable.from_arrow(table, arrays)
    assert back == idf


@dataclass
class FakeStore:
    splits: list[tuple[str, str]]
    written: list[tuple[str, pa.Table, dict[str, np.ndarray], dict[str, Any]]] = field(
        default_factory=list)

    def datasets(self) -> list[tuple[str, str]]:
        return self.splits

    def write_resource(self, kind: str, table: pa.Table, *, arrays: dict[str, np.ndarray],
                       meta: dict[str, Any]) -> str:
        self.written.append((kind, table, arrays, meta))
        return f"res{len(self.written)}"


@dataclass
class FakeContext:
    store: FakeStore
    sentences: dict[str, dict[str, Parse]]   # split → key → parse
    dataset: str = "toy"

    def split_keys(self, split: str) -> list[str]:
        return list(self.sentences[split])

    def parses(self, keys: list[str]) -> list[Parse]:
        merged = {k: p for split in self.sentences.values() for k, p in split.items()}
        return [merged[k] for k in keys]

    def words(self, keys: list[str], lemmas: bool = True) -> list[tuple[list[str], list[str]]]:
        return [(list(p.words), list(p.lemmas)) for p in self.parses(keys)]


def test_tfidf_prepare_counts_the_train_split_only() -> None:
    sentences = {
        "train": {"k1": mk(["A", "b"]), "k2": mk(["a", "c"]), "k3": mk(["a", "a", "d"])},
        "test": {"k4": mk(["b", "b", "b"]), "k1": mk(["A", "b"])},
    }
    ctx = FakeContext(FakeStore([("toy", "train"), ("toy", "test"), ("other", "train")]),
                      sentences)
    feature = TfidfFeature()
    feature.prepare(ctx)
    ((kind, table, arrays, meta),) = ctx.store.written
    assert kind == "idf" and meta["splits"] == ["train"] and meta["n_docs"] == 3
    assert dict(zip(table.column("term").to_pylist(), table.column("df").to_pylist())) == {
        "a": 3, "b": 1, "c": 1, "d": 1}
    assert feature.params() == {"compare": "lower", "weighting": "ramos", "dataset": "toy", "idf": "res1",
                                "idf_splits": ["train"], "idf_docs": 3}
    (out,) = feature.compute([mk(["A", "a", "B"])])
    np.testing.assert_allclose(out["tfidf"], tfidf_weights(["a", "a", "b"],
                                                           IdfTable.from_documents(TRAIN)))
    assert feature.report_lines("toy") == [
        "tfidf: IDF of toy counted on train (3 sentences, 4 terms), resource res1"]


def test_tfidf_prepare_without_train_split_uses_all_splits(caplog: pytest.LogCaptureFixture
                                                            ) -> None:
    sentences = {"dev": {"k1": mk(["a"])}, "test": {"k1": mk(["a"]), "k2": mk(["b"])}}
    ctx = FakeContext(FakeStore([("toy", "dev"), ("toy", "test")]), sentences)
    feature = TfidfFeature()
    with caplog.at_level(logging.WARNING):
        feature.prepare(ctx)
    assert "no 'train' split" in caplog.text
    # Each unique sentence counts once, even when two splits share it.
    assert feature.params()["idf_splits"] == ["dev", "test"] and feature.params()["idf_docs"] == 2


def test_tfidf_lemma_option() -> None:
    idf = IdfTable.from_documents([["dog", "run"], ["cat"]])
    feature = TfidfFeature(compare="lemma", weighting="l2").with_idf(idf, key="k", splits=["train"])
    (out,) = feature.compute([mk(["Dogs", "dog"], lemmas=["dog", "dog"])])
    # one distinct term: its normalized weight is 1, given to both of its words
    np.testing.assert_allclose(out["tfidf"], [1.0, 1.0], rtol=1e-6)
    (lower,) = TfidfFeature(weighting="l2").with_idf(idf, key="k", splits=["train"]).compute(
        [mk(["Dogs", "dog"])])
    assert lower["tfidf"][0] != lower["tfidf"][1]  # "dogs" is unseen, "dog" is not


def test_tfidf_compute_without_idf_is_an_error() -> None:
    with pytest.raises(PriorError, match="prepare"):
        TfidfFeature().compute([mk(["a"])])


def test_tfidf_view_selects_the_dataset_own_idf() -> None:
    from prior.layouts.views import VIEWS, select_dep

    first = {"compare": "lemma"}  # the main entry's params
    assert select_dep("tfidf", first, "sick") == {"dataset": "sick", "compare": "lemma", "weighting": "ramos"}
    assert select_dep("tfidf", {"tfidf": "l2"}, "sick")["weighting"] == "l2"
    assert VIEWS["dep-no-tfidf"].select is select_dep


def test_tfidf_two_datasets_keep_their_own_weights(tmp_path: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from prior.featurestore import open_store
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    for dataset in ("sick", "rte"):
        build(BuildOptions(dataset=dataset, splits=("train",), features=("dep",), limit=4),
              RunOptions(store=str(tmp_path / "store"), workers=0, progress=False))
    store = open_store(tmp_path / "store", create=False)
    assert {e.params["dataset"] for e in store.entries("tfidf")} == {"sick", "rte"}
    df = store.frame("dep", dataset="sick", split="train")
    assert df["dep"].null_count() == 0
