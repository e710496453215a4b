"""Counter-fitting pulls synonyms together, pushes antonyms apart, keeps the rest in place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from pipeline.embeddings.counterfit import CounterfitSettings, counterfit, vsp_pairs, wordnet_constraints
from pipeline.embeddings.io import Embeddings


def cos(emb: Embeddings, a: str, b: str) -> float:
    x, y = emb.vector(a), emb.vector(b)
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


def toy() -> Embeddings:
    rng = np.random.default_rng(0)
    words = ["good", "bad", "fine", "cheap", "expensive", "inexpensive", "east", "eastern"]
    words += [f"w{i}" for i in range(60)]
    vec = rng.normal(size=(len(words), 24)).astype(np.float32)
    vec[1] = vec[0] + 0.1 * rng.normal(size=24)   # antonyms start close (as in distributional spaces)
    vec[4] = vec[3] + 0.1 * rng.normal(size=24)
    vec[7] = vec[6] + 0.05 * rng.normal(size=24)  # a close pair outside every constraint
    return Embeddings(words, vec)


SYN = [("good", "fine"), ("cheap", "inexpensive"), ("good", "notinvocab")]
ANT = [("good", "bad"), ("cheap", "expensive")]


def test_embeddings_counterfit_attract_and_repel() -> None:
    emb = toy()
    assert cos(emb, "good", "bad") > 0.9 and abs(cos(emb, "good", "fine")) < 0.3
    result = counterfit(emb, SYN, ANT)
    out = result.embeddings
    assert result.synonyms == 2 and result.antonyms == 2  # out-of-vocabulary pairs are dropped
    assert cos(out, "good", "fine") > 0.95 and cos(out, "cheap", "inexpensive") > 0.95
    assert cos(out, "good", "bad") < 0.05 and cos(out, "cheap", "expensive") < 0.05
    assert result.costs[-1] < 0.05 * result.costs[0]
    np.testing.assert_allclose(np.linalg.norm(out.vectors, axis=1), 1.0, rtol=1e-5)
    # Words outside every constraint keep their direction.
    assert cos(out, "east", "eastern") == pytest.approx(cos(emb, "east", "eastern"), abs=1e-6)
    np.testing.assert_allclose(out.vector("w5"), emb.vector("w5") / np.linalg.norm(emb.vector("w5")),
                               rtol=1e-5)


def test_embeddings_counterfit_antonym_wins_over_synonym() -> None:
    result = counterfit(toy(), [("good", "bad")], [("bad", "good")])
    assert result.synonyms == 0 and result.antonyms == 1


def test_embeddings_counterfit_vsp_keeps_close_neighbours() -> None:
    emb = toy()
    # "eastern" is close to "east"; pulling "east" towards "good" drags it along only with VSP.
    with_vsp = counterfit(emb, [("east", "good")], [], CounterfitSettings(rho=0.2))
    without = counterfit(emb, [("east", "good")], [], CounterfitSettings(k3=0.0))
    assert with_vsp.vsp_pairs >= 1 and without.vsp_pairs == 0
    assert cos(with_vsp.embeddings, "east", "eastern") > cos(without.embeddings, "east", "eastern")
    unit = emb.vectors / np.linalg.norm(emb.vectors, axis=1, keepdims=True)
    pairs, dists = vsp_pairs(unit, np.array([emb.index["east"]]), 0.2)
    assert [tuple(p) for p in pairs.tolist()] == [(6, 7)] and dists[0] <= 0.2


@dataclass
class FakeLemma:
    word: str
    opposite: list[str]

    def name(self) -> str:
        return self.word

    def antonyms(self) -> list[FakeLemma]:
        return [FakeLemma(o, []) for o in self.opposite]


@dataclass
class FakeSynset:
    names: list[FakeLemma]

    def lemmas(self) -> list[FakeLemma]:
        return self.names


class FakeWordNet:
    def all_synsets(self) -> list[FakeSynset]:
        return [FakeSynset([FakeLemma("Good", ["bad"]), FakeLemma("fine", []),
                            FakeLemma("all_right", [])]),
                FakeSynset([FakeLemma("cheap", ["expensive"]), FakeLemma("inexpensive", [])])]


def test_embeddings_counterfit_wordnet_constraints() -> None:
    syn, ant = wordnet_constraints(FakeWordNet())
    assert syn == [("cheap", "inexpensive"), ("fine", "good")]   # multi-word lemmas left out
    assert ant == [("bad", "good"), ("cheap", "expensive")]
    syn, ant = wordnet_constraints(FakeWordNet(), vocabulary={"good", "fine", "bad"})
    assert syn == [("fine", "good")] and ant == [("bad", "good")]


@pytest.mark.slow
def test_embeddings_counterfit_real_wordnet() -> None:
    from pipeline.resources.wordnet import load_wordnet

    syn, ant = wordnet_constraints(load_wordnet(), vocabulary={"good", "bad", "big", "large",
                                                               "small", "hot", "cold"})
    assert ("big", "large") in syn and ("big", "small") in ant and ("cold", "hot") in ant


def test_embeddings_counterfit_center_option_and_mean_cosine() -> None:
    emb = toy()
    shifted = Embeddings(emb.words, emb.vectors + 20.0)  # every vector shares one big direction
    plain = counterfit(shifted, SYN, ANT, CounterfitSettings(iterations=1))
    centred = counterfit(shifted, SYN, ANT, CounterfitSettings(iterations=1, center=True))
    assert plain.mean_cosine > 0.9 and abs(centred.mean_cosine) < 0.1
    assert plain.vsp_pairs > 100 and centred.vsp_pairs == 0


def test_embeddings_counterfit_file_with_spaced_words(tmp_path: Path) -> None:
    from pipeline.embeddings.io import read_embeddings
    from pipeline.embeddings.make import counterfit_embeddings

    glove = tmp_path / "glove.txt"
    glove.write_text("good 1 0.1 0\nat & t 0 1 0\nfine 0.1 1 0.1\nbad 1 0.2 0\n", encoding="utf-8")
    made = counterfit_embeddings(str(glove), tmp_path / "cf.txt", wordnet=FakeWordNet())
    out = read_embeddings(made.path)
    assert out.words == ["good", "fine", "bad"]
    assert made.record["dropped_words_with_whitespace"] == 1
    assert cos(out, "good", "fine") > cos(read_embeddings(glove), "good", "fine")
