"""The spaCy annotator and the `spacy` backend."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from prior.errors import ResourceError
from prior.pipeline.parsers import get_parser
from prior.pipeline.parsers.base import DependencyParser, Parse
from prior.pipeline.parsers.spacy_backend import SpacyParser, find_spacy_model, shared_annotator, weights_digest


@pytest.fixture(scope="module")
def parser() -> SpacyParser:
    return SpacyParser(shared_annotator())


def test_parsers_spacy_implements_protocol(parser: SpacyParser) -> None:
    assert isinstance(parser, DependencyParser)
    assert parser.name == "spacy"


def test_parsers_spacy_parse_fields(parser: SpacyParser) -> None:
    (p,) = parser.parse(["Apple Inc. bought a startup in London."])
    assert isinstance(p, Parse)
    assert p.words == ("Apple", "Inc.", "bought", "a", "startup", "in", "London", ".")
    assert p.lemmas[2] == "buy" and p.upos[2] == "VERB" and p.tags[2] == "VBD"
    assert p.heads.count(0) == 1 and p.rels[p.heads.index(0)] == "ROOT"
    assert p.ents[0] == "ORG" and p.ents[6] == "GPE" and p.ents[3] == ""


def test_parsers_spacy_multi_sentence_forest(parser: SpacyParser) -> None:
    (p,) = parser.parse(["The cat sat on the mat. It was happy!"])
    assert p.heads.count(0) == 2
    second_root = [i for i, h in enumerate(p.heads) if h == 0][1]
    assert p.words[second_root] == "was"
    # heads of the second sentence index the whole text (1-based): "It" -> "was" (word 9)
    assert p.heads[p.words.index("It")] == second_root + 1


def test_parsers_spacy_whitespace_normalized(parser: SpacyParser) -> None:
    a, b, empty = parser.parse(["A dog  barks\n loudly. ", "A dog barks loudly.", "   "])
    assert a == b
    assert len(empty) == 0


def test_parsers_spacy_parse_words_one_tree_per_sentence(parser: SpacyParser) -> None:
    out = parser.parse_words([["The", "dog", "barks", ".", "He", "runs"], ["Hi"]])
    (h1, r1), (h2, r2) = out
    assert len(h1) == 6 and h1.count(0) == 1 and len(r1) == 6
    assert h2 == [0] and r2 == ["ROOT"]


def test_parsers_spacy_fingerprint_identity(parser: SpacyParser) -> None:
    fp = parser.fingerprint()
    assert fp["backend"] == "spacy"
    assert fp["spacy_model"] == "en_core_web_sm-3.8.0"  # same identity for both package names
    assert len(fp["spacy_weights"]) == 32
    assert parser.fingerprint() == fp


def test_parsers_spacy_fingerprint_without_loading_equals_loaded(parser: SpacyParser) -> None:
    """fingerprint_of("spacy") (every build calls it, no-op builds too) reads files only: in a
    fresh process it must not import spaCy, and must equal the loaded parser's fingerprint."""
    code = ("import json, sys\nfrom prior.pipeline.parsers import fingerprint_of\n"
            "fp = fingerprint_of('spacy')\nprint(json.dumps([fp, 'spacy' in sys.modules]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=120).stdout
    fp, imported = json.loads(out)
    assert imported is False
    assert fp == parser.fingerprint()


def test_parsers_spacy_weights_digest_ignores_packaging(tmp_path: Path) -> None:
    src = Path(shared_annotator().nlp.path)
    copy = tmp_path / "model"
    shutil.copytree(src, copy)
    before = weights_digest(copy)
    (copy / "meta.json").write_text('{"name": "renamed"}')
    (copy / "README.md").write_text("another readme")
    assert weights_digest(copy) == before
    with (copy / "tagger" / "model").open("ab") as handle:
        handle.write(b"\x00")
    assert weights_digest(copy) != before


def test_parsers_spacy_registry_cached_and_unknown() -> None:
    assert get_parser("spacy") is get_parser("spacy")
    with pytest.raises(ResourceError, match="unknown parser"):
        get_parser("stanza")


def test_parsers_spacy_missing_model_error() -> None:
    with pytest.raises(ResourceError, match="pip install"):
        find_spacy_model(["no_such_spacy_model_pkg"])


def test_parsers_spacy_worker_without_torch_parses_the_same(parser: SpacyParser) -> None:
    """A build worker for a CNN pipeline imports spaCy without torch (the build sets the
    variable) and parses exactly as a process with torch does."""
    import os

    from prior.pipeline.startup import LOCAL_WORKER_ENV, SPACY_WITHOUT_TORCH_ENV, local_worker_env

    env = local_worker_env("spacy")
    assert env == {LOCAL_WORKER_ENV: "1", SPACY_WITHOUT_TORCH_ENV: "1"}
    assert local_worker_env("biaffine") == {LOCAL_WORKER_ENV: "1"}
    code = ("import sys, json\n"
            "from prior.pipeline.parsers.spacy_backend import SpacyParser\n"
            "p = SpacyParser().parse(['Two dogs run across the snowy field.'])[0]\n"
            "import thinc.compat\n"
            "print(json.dumps(['torch' in sys.modules, thinc.compat.has_torch, p.heads, p.rels]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, **env}, cwd=Path(__file__).resolve().parents[1])
    torch_loaded, thinc_torch, heads, rels = json.loads(out.stdout.strip().splitlines()[-1])
    assert not torch_loaded and not thinc_torch
    (here,) = parser.parse(["Two dogs run across the snowy field."])
    assert (heads, rels) == (list(here.heads), list(here.rels))


def test_parsers_spacy_transformer_pipelines_keep_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prior.pipeline.parsers import spacy_models as spacy_backend

    def fake_dir(meta: dict) -> Path:
        d = tmp_path / str(len(list(tmp_path.iterdir())))
        d.mkdir()
        (d / "meta.json").write_text(json.dumps(meta))
        return d

    cnn = fake_dir({"pipeline": ["tok2vec", "tagger", "parser"], "requirements": []})
    trf = fake_dir({"pipeline": ["transformer", "tagger", "parser"],
                    "requirements": ["spacy-curated-transformers>=0.2.2,<0.3.0"]})
    dirs = {"cnn": cnn, "trf": trf}
    monkeypatch.setattr(spacy_backend, "installed_model_dir", lambda package: dirs[package])
    assert not spacy_backend.needs_torch("cnn")
    assert spacy_backend.needs_torch("trf")
    monkeypatch.setattr(spacy_backend, "installed_model_dir", lambda package: tmp_path / "missing")
    assert spacy_backend.needs_torch("gone")  # unreadable metadata: keep torch


def test_parsers_spacy_senter_annotator_splits_without_the_parser(parser: SpacyParser) -> None:
    """The biaffine backend's annotator: spaCy's senter instead of its parser; same words and tags."""
    senter = shared_annotator(sentences="senter")
    assert senter.sentences == "senter" and "parser" not in senter.nlp.pipe_names and "senter" in senter.nlp.pipe_names
    text = "The cat sat on the mat. It was happy!"
    (doc,) = senter.docs([text])
    assert [s.text for s in doc.sents] == ["The cat sat on the mat.", "It was happy!"]
    (full,) = parser.annotator.docs([text])
    assert [t.text for t in doc] == [t.text for t in full] and [t.tag_ for t in doc] == [t.tag_ for t in full]
    assert senter.fingerprint() == parser.annotator.fingerprint()  # the splitter is recorded by the backend


def test_parsers_spacy_sentence_splitter_falls_back_to_the_parser() -> None:
    from prior.pipeline.parsers.spacy_backend import sentence_splitter

    assert sentence_splitter({"components": ["tok2vec", "parser", "senter"]}, "senter") == "senter"
    assert sentence_splitter({"components": ["transformer", "parser"]}, "senter") == "parser"  # no senter shipped
    assert sentence_splitter({"components": ["parser", "senter"]}, "parser") == "parser"
    with pytest.raises(ResourceError, match="unknown sentence splitter 'spaces'"):
        sentence_splitter({}, "spaces")


@pytest.mark.parametrize("text, word", [
    ("A family 👨‍👩‍👧‍👦 smiles.", "👨\u200d👩\u200d👧\u200d👦"),
    ("The 🏳️‍🌈 flag flies.", "🏳\ufe0f\u200d🌈"),
    ("A 👩‍💻 writes code.", "👩\u200d💻"),
    ("I ❤️ this 👍🏽!", "👍🏽"),
])
def test_issue35_an_emoji_sequence_is_one_word(text: str, word: str) -> None:
    """A zero-width-joiner sequence (and an emoji with a skin tone or presentation selector) is
    one word for every backend; spaCy's tokenizer alone split it into its emoji and joiners."""
    words = shared_annotator().docs([text])[0]
    assert word in [t.text for t in words]
    assert "\u200d" not in [t.text for t in words]
    assert "I ❤️ this" not in text or "❤\ufe0f" in [t.text for t in words]
