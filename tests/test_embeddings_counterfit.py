"""Counter-fitting pulls synonyms together, pushes antonyms apart, keeps the rest in place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prior.pipeline.embeddings.counterfit import CounterfitSettings, counterfit, wordnet_constraints
from prior.pipeline.embeddings.io import Embeddings


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
    assert with_vsp.vsp_pairs == 2 and without.vsp_pairs == 0   # (east, eastern), (good, bad)
    assert cos(with_vsp.embeddings, "east", "eastern") > cos(without.embeddings, "east", "eastern")


@dataclass
class FakeLemma:
    word: str
    opposite: list[str]

    def name(self) -> str:
        return self.word

    def antonyms(self) -> list[FakeLemma]:
        return [FakeLemma(o, []) for o in self.opposite]


@dataclass(eq=False)
class FakeSynset:
    names: list[FakeLemma]

    def lemmas(self) -> list[FakeLemma]:
        return self.names


class FakeWordNet:
    """nltk's reader as far as ``wordnet_constraints`` uses it."""

    def __init__(self, synsets: list[FakeSynset] | None = None) -> None:
        self.synsets_ = synsets if synsets is not None else [
            FakeSynset([FakeLemma("Good", ["bad"]), FakeLemma("fine", []), FakeLemma("all_right", [])]),
            FakeSynset([FakeLemma("cheap", ["expensive"]), FakeLemma("inexpensive", [])])]

    def all_synsets(self) -> list[FakeSynset]:
        return self.synsets_

    def synsets(self, word: str) -> list[FakeSynset]:
        return [s for s in self.synsets_ if any(lem.name().lower() == word.lower() for lem in s.lemmas())]


def test_embeddings_counterfit_wordnet_constraints() -> None:
    syn, ant = wordnet_constraints(FakeWordNet())
    assert syn == [("cheap", "inexpensive"), ("fine", "good")]   # multi-word lemmas left out
    assert ant == [("bad", "good"), ("cheap", "expensive")]
    syn, ant = wordnet_constraints(FakeWordNet(), vocabulary={"good", "fine", "bad"})
    assert syn == [("fine", "good")] and ant == [("bad", "good")]
    syn, ant = wordnet_constraints(FakeWordNet(), vocabulary={"bad", "cheap", "expensive", "x_y"})
    assert syn == [] and ant == [("cheap", "expensive")]   # "bad" alone is no lemma of a synset


@pytest.mark.slow
def test_embeddings_counterfit_wordnet_constraints_by_word_equal_full_walk(wordnet: Any) -> None:
    """Visiting the vocabulary's synsets finds exactly the pairs of a walk over all synsets."""
    names = sorted({lem.name().lower() for synset in list(wordnet.all_synsets())[::7]
                    for lem in synset.lemmas()})
    vocabulary = names[::3] + ["dogs", "better", "ran", "Good", "rock'n'roll", "3d", "x y"]

    class WalkOnly:   # the same reader without its lemma index: forces the full walk
        def all_synsets(self) -> Any:
            return wordnet.all_synsets()

    vocab = set(vocabulary)
    walked = WalkOnly()
    full_syn, full_ant = wordnet_constraints(walked, vocabulary=None)
    full = ([p for p in full_syn if set(p) <= vocab], [p for p in full_ant if set(p) <= vocab])
    assert wordnet_constraints(wordnet, vocabulary=vocabulary) == full
    assert len(full[0]) > 1000 and len(full[1]) > 30


@pytest.mark.slow
def test_embeddings_counterfit_real_wordnet() -> None:
    from prior.pipeline.resources.wordnet import load_wordnet

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
    from prior.pipeline.embeddings.io import read_embeddings
    from prior.pipeline.embeddings.make import counterfit_embeddings

    glove = tmp_path / "glove.txt"
    glove.write_text("good 1 0.1 0\nat & t 0 1 0\nfine 0.1 1 0.1\nbad 1 0.2 0\n", encoding="utf-8")
    made = counterfit_embeddings(str(glove), tmp_path / "cf.txt", wordnet=FakeWordNet())
    out = read_embeddings(made.path)
    assert out.words == ["good", "fine", "bad"]
    assert made.record["dropped_words_with_whitespace"] == 1
    assert cos(out, "good", "fine") > cos(read_embeddings(glove), "good", "fine")


# --------------------------------------------------------------------------- against the reference
def clustered(n: int = 240, dim: int = 16, seed: int = 0) -> tuple[Embeddings, list[tuple[str, str]],
                                                                      list[tuple[str, str]]]:
    """Words 0..n/2 share one strong direction (dense VSP neighbourhoods, as skip-gram spaces),
    the rest are random (sparse ones); random synonym and antonym pairs across both halves."""
    rng = np.random.default_rng(seed)
    vec = rng.normal(size=(n, dim))
    vec[: n // 2] += 3.0 * rng.normal(size=dim)
    words = [f"w{i}" for i in range(n)]
    pick = rng.integers(0, n, size=(90, 2))
    syn = [(words[a], words[b]) for a, b in pick[:70]]
    ant = [(words[a], words[b]) for a, b in pick[70:]] + [syn[0]]   # one pair is both: antonym
    return Embeddings(words, vec.astype(np.float32)), syn, ant


@pytest.mark.parametrize("density, cache, dense", [(0.0, 1 << 30, "all"), (0.0, 0, "all"),
                                                   (2.0, 1 << 30, "none"), (0.3, 1 << 30, "some")],
                         ids=["dense", "dense-recomputed", "pair-by-pair", "mixed"])
def test_embeddings_counterfit_matches_reference_on_every_path(monkeypatch: pytest.MonkeyPatch,
                                                                density: float, cache: int,
                                                                dense: str) -> None:
    """Same terms, same Jacobi update, same words renormalised: only float32 rounding differs
    (no hinge of these inputs is within rounding of its switch, so no term switches)."""
    import prior.pipeline.embeddings.counterfit as cf
    from tests.counterfit_reference import reference_counterfit

    monkeypatch.setattr(cf, "BLOCK", 32)
    monkeypatch.setattr(cf, "DENSE_MIN_DENSITY", density)
    monkeypatch.setattr(cf, "BASE_CACHE_BYTES", cache)
    found: list[tuple[int, int]] = []
    search = cf._neighbourhoods

    def spy(original: np.ndarray, constrained: int, *args: object) -> tuple[list[object], int]:
        blocks, pairs = search(original, constrained, *args)  # type: ignore[arg-type]
        found.append((len(blocks), -(-constrained // cf.BLOCK)))
        return blocks, pairs

    monkeypatch.setattr(cf, "_neighbourhoods", spy)
    for seed in range(3):
        emb, syn, ant = clustered(seed=seed)
        ref = reference_counterfit(emb, syn, ant, CounterfitSettings(), renormalise="moved")
        new = counterfit(emb, syn, ant, CounterfitSettings())
        assert (new.synonyms, new.antonyms, new.vsp_pairs) == (ref.synonyms, ref.antonyms, ref.vsp_pairs)
        assert new.vsp_pairs > 1000
        dense_blocks, blocks = found[-1]
        assert blocks > 2 and {"all": dense_blocks == blocks, "none": dense_blocks == 0,
                               "some": 0 < dense_blocks < blocks}[dense]
        x, y = ref.embeddings.vectors, new.embeddings.vectors
        np.testing.assert_allclose(y @ y.T, x @ x.T, atol=1e-5)
        np.testing.assert_allclose(new.costs, ref.costs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("density", [0.0, 2.0], ids=["dense", "pair-by-pair"])
def test_embeddings_counterfit_unmoved_words_keep_their_bits(monkeypatch: pytest.MonkeyPatch,
                                                             density: float) -> None:
    """Without synonym and antonym terms nothing moves: every VSP term starts at exactly 0 and
    stays there, on both paths (renormalising unmoved words would switch some on by rounding)."""
    import prior.pipeline.embeddings.counterfit as cf

    monkeypatch.setattr(cf, "BLOCK", 32)
    monkeypatch.setattr(cf, "DENSE_MIN_DENSITY", density)
    emb, syn, ant = clustered()
    result = counterfit(emb, syn, ant, CounterfitSettings(k1=0.0, k2=0.0))
    assert result.vsp_pairs > 1000 and result.costs == [0.0] * 21
    np.testing.assert_array_equal(result.embeddings.vectors, cf.normalise(emb.vectors))


# --------------------------------------------------------------------------- the command
@pytest.fixture
def fake_wordnet(monkeypatch: pytest.MonkeyPatch) -> None:
    import prior.pipeline.resources.wordnet as wordnet

    monkeypatch.setattr(wordnet, "load_wordnet", lambda *a, **k: FakeWordNet())
    monkeypatch.setattr(wordnet, "wordnet_version", lambda *a, **k: "fake")


def test_embeddings_counterfit_cli_positional_input_and_bars(tmp_path: Path, fake_wordnet: None,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from prior.cli.main import app
    from prior.pipeline.embeddings.io import read_embeddings, write_word2vec_text

    emb = toy()
    source = write_word2vec_text(tmp_path / "toy.vec", emb.words, emb.vectors)
    runner = CliRunner()
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "0")
    shown = runner.invoke(app, ["embed", "counterfit", str(source), "--out", str(tmp_path / "a.vec"), "--no-store"])
    assert shown.exit_code == 0, shown.output
    assert "neighbourhoods" in shown.output and "iterations" in shown.output and "20/20" in shown.output
    assert "2 synonym, 2 antonym" in shown.output and "store resource" not in shown.output
    # no VSP term: that stage has nothing to do and gets no bar
    no_vsp = runner.invoke(app, ["embed", "counterfit", str(source), "--out", str(tmp_path / "b.vec"),
                                 "--no-store", "--k3", "0"])
    assert no_vsp.exit_code == 0 and "neighbourhoods" not in no_vsp.output and "iterations" in no_vsp.output
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "1")
    alias = runner.invoke(app, ["embed", "counterfit", "--embeddings", str(source), "--out", str(tmp_path / "c.vec"),
                                "--no-store"])
    assert alias.exit_code == 0 and "iterations" not in alias.output and "2 synonym" in alias.output
    np.testing.assert_array_equal(read_embeddings(tmp_path / "a.vec").vectors,
                                  read_embeddings(tmp_path / "c.vec").vectors)
    both = runner.invoke(app, ["embed", "counterfit", str(source), "--embeddings", "other.vec",
                               "--out", str(tmp_path / "d.vec"), "--no-store"])
    assert both.exit_code == 2 and "give one" in both.output
    neither = runner.invoke(app, ["embed", "counterfit", "--out", str(tmp_path / "e.vec"), "--no-store"])
    assert neither.exit_code == 2 and "deps-cf.vec" in neither.output
