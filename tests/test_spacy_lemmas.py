"""The rule lemmatizer's word index held as sets (`prior.pipeline.parsers.spacy_lemmas`): the
same lemmas as spaCy's lists, on every token of the bundled slices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prior.pipeline.parsers import spacy_backend
from prior.pipeline.parsers.spacy_backend import SpacyAnnotator, shared_annotator
from prior.pipeline.parsers.spacy_lemmas import INDEX_TABLE, index_as_sets

ROOT = Path(__file__).resolve().parents[1]


def _texts() -> list[str]:
    """Distinct texts of the bundled SNLI, SICK and MRPC slices."""
    seen: dict[str, None] = {}
    for name in ("snli", "sick", "mrpc"):
        for path in sorted((ROOT / "data" / name).iterdir()):
            if path.suffix == ".jsonl":
                rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
                seen.update(dict.fromkeys(t for r in rows for t in (r.get("sentence1"), r.get("sentence2")) if t))
            elif path.suffix in (".txt", ".tsv"):
                for line in path.read_text(encoding="utf-8").splitlines()[1:]:
                    seen.update(dict.fromkeys(f for f in line.split("\t") if len(f.split()) > 3))
    return list(seen)


def _index(annotator: SpacyAnnotator) -> dict[int, object]:
    return dict(annotator.nlp.get_pipe("lemmatizer").lookups.get_table(INDEX_TABLE).items())


@pytest.fixture(scope="module")
def annotators() -> tuple[SpacyAnnotator, SpacyAnnotator]:
    """spaCy's own lemmatizer (lists), and the annotator every parser uses (sets)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(spacy_backend, "index_as_sets", lambda nlp: 0)
        lists = SpacyAnnotator(sentences="senter")
    return lists, shared_annotator(sentences="senter")


def test_the_index_holds_the_same_words_as_sets(annotators: tuple[SpacyAnnotator, SpacyAnnotator]) -> None:
    lists, sets = (_index(a) for a in annotators)
    assert lists.keys() == sets.keys() and len(lists) >= 4
    for pos, words in lists.items():
        assert isinstance(words, list) and isinstance(sets[pos], frozenset)
        assert sets[pos] == frozenset(words) and len(words) > 1000


def test_every_lemma_is_the_same_as_spacys(annotators: tuple[SpacyAnnotator, SpacyAnnotator]) -> None:
    texts = _texts()
    assert len(texts) > 1000
    lists, sets = ([[(t.text, t.lemma_, t.pos_, t.morph.key) for t in doc] for doc in a.docs(texts)]
                   for a in annotators)
    assert lists == sets
    # inflected words the suffix rules lemmatize through the index (dogs → dog, sitting → sit)
    ruled = {(w, lemma) for doc in sets for w, lemma, pos, _ in doc if pos in ("NOUN", "VERB") and lemma != w.lower()}
    assert len(ruled) > 200 and ("dogs", "dog") in ruled


def test_a_pipeline_without_a_rule_lemmatizer_is_left_as_it_is() -> None:
    import spacy

    nlp = spacy.blank("en")
    assert index_as_sets(nlp) == 0
    nlp.add_pipe("lemmatizer", config={"mode": "lookup"})
    assert index_as_sets(nlp) == 0
