"""The `emb` feature: vocabulary resource, per-sentence word ids, OOV; made embeddings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from prior.errors import PriorError, ResourceError
from prior.featurestore import open_store
from prior.pipeline.embeddings.io import read_embeddings, write_word2vec_text
from prior.pipeline.embeddings.table import load_embeddings
from prior.pipeline.features.emb import EmbFeature, oov_rates, oov_stats, word_ids
from prior.pipeline.parsers.base import Parse


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
    assert feature.params() == {"vocab": "k", "lookup": "exact-then-lower", "kind": None}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    root = tmp_path_factory.mktemp("emb")
    vectors = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    emb_file = write_word2vec_text(root / "tiny.txt", ["a", "man", "is", "the", "boy", "."], vectors)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        build(BuildOptions(dataset="sick", splits=("train", "trial"), features=("emb",), limit=10,
                           embeddings=emb_file), RunOptions(store=str(root / "store"), workers=0, progress=False))
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
    from prior.pipeline.embeddings.counterfit import CounterfitSettings
    from prior.pipeline.embeddings.make import counterfit_embeddings, train_dependency_embeddings
    from prior.pipeline.embeddings.sgns import SgnsSettings

    store = open_store(built[0], create=False)
    made = train_dependency_embeddings(store, tmp_path / "deps.txt",
                                       settings=SgnsSettings(dim=8, epochs=2, min_count=1))
    emb = read_embeddings(made.path)
    assert emb.dim == 8 and "man" in emb.words and len(emb) == made.record["words"]
    record = json.loads(Path(f"{made.path}.json").read_text())
    assert record["settings"]["negative"] == 15 and record["contexts"] == "dep"
    assert made.resource in store.find_resources("embeddings")

    from tests.test_embeddings_counterfit import FakeLemma, FakeSynset, FakeWordNet

    tiny = FakeWordNet([FakeSynset([FakeLemma("kids", []), FakeLemma("children", [])]),   # a synonym
                        FakeSynset([FakeLemma("young", ["old"])])])                        # an antonym
    cf = counterfit_embeddings(str(made.path), tmp_path / "cf.txt", store=store,
                               settings=CounterfitSettings(), wordnet=tiny)
    out = read_embeddings(cf.path)
    unit = out.vectors / np.linalg.norm(out.vectors, axis=1, keepdims=True)
    i, j, k = out.index["kids"], out.index["children"], out.index["old"]
    y = out.index["young"]
    assert unit[i] @ unit[j] > 0.9 and unit[y] @ unit[k] < 0.1
    assert cf.record["synonym_pairs"] == 1 and cf.record["antonym_pairs"] == 1


def test_embeddings_feature_train_command_bar(built: tuple[Path, Path], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from prior.cli.main import app

    args = ["embed", "train", "--contexts", "dep", "--store", str(built[0]), "--dim", "8",
            "--epochs", "2", "--min-count", "1"]
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "0")
    shown = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a.txt")])
    assert shown.exit_code == 0, shown.output
    assert "training" in shown.output and "epoch 2/2, loss" in shown.output
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "1")
    quiet = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b.txt")])
    assert quiet.exit_code == 0 and "training" not in quiet.output and "words × 8" in quiet.output
    assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text()


def test_embeddings_feature_bad_file_leaves_the_store_as_it_was(built: tuple[Path, Path],
                                                                tmp_path: Path) -> None:
    from prior.errors import DataError
    from prior.featurestore.maintenance import verify_store
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    store_path, emb_file = built
    lines = emb_file.read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join([*lines[:4], lines[4] + " 0.5", *lines[5:]]) + "\n", encoding="utf-8")
    before = sorted(s.id for s in open_store(store_path, create=False).segments(refresh=True))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(tmp_path / "home"))
        with pytest.raises(DataError, match=r"bad.txt, row 5, field 'vector': expected a word and 4"):
            build(BuildOptions(dataset="sick", splits=("train", "trial"), features=("emb",), limit=10,
                               embeddings=bad), RunOptions(store=str(store_path), workers=0, progress=False))
    store = open_store(store_path, create=False)
    assert sorted(s.id for s in store.segments(refresh=True)) == before
    assert verify_store(store).ok


def test_embeddings_feature_reports_oov_per_split(built: tuple[Path, Path]) -> None:
    store_path, emb_file = built

    class Ctx:  # what a build hands to prepare(): here the already built store
        store = open_store(store_path, create=False)
        dataset = "sick"
        splits = ["train", "trial"]

        def split_keys(self, split: str) -> list[str]:
            rows = self.store.pair_rows("sick", split)
            return list(dict.fromkeys(k for ab in zip(rows["key_a"], rows["key_b"]) for k in ab))

        def parses(self, keys: list[str]) -> list[Parse]:
            df = self.store.parses(keys)
            by_key = {r["sent_key"]: Parse.from_record(r) for r in df.iter_rows(named=True)}
            return [by_key[k] for k in keys]

    feature = EmbFeature(embeddings=emb_file)
    feature.prepare(Ctx())
    stored = {s.split: s for s in oov_rates(Ctx.store, "sick")}
    assert [s.split for s in feature.oov] == ["train", "trial"]
    for s in feature.oov:
        assert (s.tokens, s.oov_tokens, s.types, s.oov_types) == (
            stored[s.split].tokens, stored[s.split].oov_tokens, stored[s.split].types,
            stored[s.split].oov_types)
    lines = feature.report_lines("sick")
    assert len(lines) == 2 and lines[0].startswith("emb: sick/train: OOV ")


def test_embeddings_feature_oov_cli(built: tuple[Path, Path]) -> None:
    from typer.testing import CliRunner

    from prior.cli.embed import app

    store_path, _ = built
    entry = open_store(store_path, create=False).find_entry("emb")
    runner = CliRunner()
    result = runner.invoke(app, ["oov", "--dataset", "sick", "--store", str(store_path),
                                 "--vocab", entry.params["vocab"]])
    assert result.exit_code == 0, result.output
    assert "sick/train: OOV " in result.output and "sick/trial: OOV " in result.output
    result = runner.invoke(app, ["oov", "--dataset", "snli", "--store", str(store_path)])
    assert result.exit_code == 1 and "no dataset 'snli'" in result.output


def test_embeddings_feature_restricted_index_gives_the_same_ids() -> None:
    from prior.pipeline.features.emb import LOOKUPS, restrict_index

    index = {"The": 0, "the": 1, "Paris": 2, "paris": 3, "cat": 4, "unused": 5, "CAT": 6}
    sentence = ["The", "PARIS", "Paris", "cat", "Cat", "dog"]
    small = restrict_index(index, sentence)
    assert "unused" not in small and "CAT" not in small
    for lookup in LOOKUPS:
        np.testing.assert_array_equal(word_ids(sentence, small, lookup), word_ids(sentence, index, lookup))


def test_embeddings_feature_missing_file_fails_before_any_work(tmp_path: Path) -> None:
    from prior.errors import NotFoundError
    from prior.pipeline.build_options import BuildOptions
    from prior.pipeline.features.registry import features_for

    with pytest.raises(ResourceError, match="--embeddings PATH"):
        features_for(("dep", "emb"), BuildOptions(dataset="sick"))
    with pytest.raises(NotFoundError, match="nope.vec does not exist"):
        features_for(("emb",), BuildOptions(dataset="sick", embeddings=tmp_path / "nope.vec"))
    (emb,) = features_for(("emb",), BuildOptions(dataset="sick",
                                                 feature_options={"emb": {"resource": "abc"}}))
    assert emb.params() == {"vocab": "abc", "lookup": "exact-then-lower", "kind": None}


def test_embeddings_feature_build_reads_all_four_formats(built: tuple[Path, Path],
                                                         tmp_path: Path) -> None:
    import shutil

    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions
    from prior.pipeline.embeddings.io import write_word2vec_binary

    store_path = Path(shutil.copytree(built[0], tmp_path / "store"))  # leave the shared store as it is
    emb_file = built[1]
    original = read_embeddings(emb_file)
    text = emb_file.read_text(encoding="utf-8").splitlines()
    files = {
        "word2vec-binary": write_word2vec_binary(tmp_path / "v.bin", original.words, original.vectors),
        "glove": tmp_path / "glove.txt",
        "word2vec": tmp_path / "wiki.vec",
    }
    files["glove"].write_text("\n".join(text[1:]) + "\n", encoding="utf-8")     # no header
    files["word2vec"].write_text("\n".join([text[0], *(t + " " for t in text[1:])]) + "\n",
                                 encoding="utf-8")                               # fastText style
    reference = open_store(store_path, create=False).find_entry("emb")
    ref_data = open_store(store_path, create=False).load_feature(reference)
    for fmt, path in files.items():
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PRIOR_HOME", str(tmp_path / "home"))
            report = build(BuildOptions(dataset="sick", splits=("train", "trial"), features=("emb",), limit=10,
                                        embeddings=path),
                           RunOptions(store=str(store_path), workers=0, progress=False))
        store = open_store(store_path, create=False)
        assert any(n.startswith("emb: sick/train: OOV ") for n in report.notes)  # the build report's line
        entry = next(e for e in store.entries("emb") if e.key == report.entries["emb@2"])
        res = store.read_resource(entry.params["vocab"])
        assert res.meta["format"] == fmt and res.table.column("word").to_pylist() == original.words
        np.testing.assert_allclose(res.arrays["vectors"], original.vectors, rtol=1e-6)
        data = store.load_feature(entry)
        for key in ref_data.keys:
            np.testing.assert_array_equal(data.get(key)["word_ids"], ref_data.get(key)["word_ids"])


def test_embeddings_feature_new_pairs_get_the_entry_vocabulary(built: tuple[Path, Path], tmp_path: Path) -> None:
    """`prior predict`'s build: the entry's vocabulary resource is copied into a new store
    (same key), restored instead of read from a file, and the new sentences get its ids. The
    fixture's build ran in this process too: its copy of the feature, cut to the fixture's
    words (no "."), must not serve these sentences."""
    from prior.featurestore import keys as K
    from prior.pipeline.predict import build_pairs

    source = open_store(built[0], create=False)
    entry = source.find_entry("emb")
    target = tmp_path / "predict"
    done = build_pairs(str(target), entries=[entry], parse=entry.parse, pairs=[("the boy is a man", "zzz qqq .")],
                       resources=str(built[0]))
    store = open_store(target, create=False)
    assert [e.key for e in store.entries("emb")] == [entry.key] and done.split == "all"
    vocabulary = load_embeddings(store, entry.params["vocab"]).words
    data = store.load_feature(entry)
    index = {w: i for i, w in enumerate(vocabulary)}
    keys = [K.sentence_key(text) for text in ("the boy is a man", "zzz qqq .")]
    parses = store.parses(keys, parse=entry.parse)
    for key, words in zip(parses["sent_key"].to_list(), parses["words"].to_list()):
        np.testing.assert_array_equal(data.get(key)["word_ids"], word_ids(words, index))
    assert sorted(parses["sent_key"].to_list()) == sorted(keys)
