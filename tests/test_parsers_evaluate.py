"""Attachment scores on hand-made trees."""

from __future__ import annotations

import pytest

from prior.pipeline.parsers.conllu import ConlluSentence
from prior.pipeline.parsers.evaluate import attachment_scores, spacy_to_ud, universal


def _gold() -> ConlluSentence:
    # "Sue likes green tea ." ; '.' is PUNCT
    return ConlluSentence(words=("Sue", "likes", "green", "tea", "."), lemmas=("_",) * 5,
                          upos=("PROPN", "VERB", "ADJ", "NOUN", "PUNCT"), xpos=("_",) * 5,
                          heads=(2, 0, 4, 2, 2), rels=("nsubj", "root", "amod", "obj", "punct"))


def test_parsers_evaluate_hand_made_scores() -> None:
    # head of 'green' wrong; label of 'tea' wrong; head of '.' wrong
    pred = [([2, 0, 2, 2, 4], ["nsubj", "root", "amod", "iobj", "punct"])]
    s = attachment_scores([_gold()], pred)
    assert (s.words, s.words_punct) == (4, 5)
    assert (s.uas_hits, s.las_hits) == (3, 2)
    assert s.uas == 75.0 and s.las == 50.0
    assert s.uas_punct == 60.0 and s.las_punct == 40.0


def test_parsers_evaluate_perfect_and_label_maps() -> None:
    gold = _gold()
    assert attachment_scores([gold], [(list(gold.heads), list(gold.rels))]).las == 100.0
    sub = ConlluSentence(**{**gold.__dict__, "rels": ("nsubj:pass", "root", "amod", "obj", "punct")})
    pred = [(list(gold.heads), ["nsubj", "root", "amod", "obj", "punct"])]
    assert attachment_scores([sub], pred).las == 75.0  # subtypes must match by default
    assert attachment_scores([sub], pred, universal, universal).las == 100.0
    spacy_rels = ["nsubjpass", "ROOT", "amod", "dobj", "punct"]
    assert attachment_scores([sub], [(list(gold.heads), spacy_rels)], spacy_to_ud, universal).las == 100.0


def test_parsers_evaluate_spacy_label_map() -> None:
    assert spacy_to_ud("dobj") == "obj" and spacy_to_ud("ROOT") == "root"
    assert spacy_to_ud("prep") == "case" and spacy_to_ud("no-such-label") == "dep"


def test_parsers_evaluate_length_mismatch() -> None:
    with pytest.raises(ValueError, match="sentence 0"):
        attachment_scores([_gold()], [([0], ["root"])])
    with pytest.raises(ValueError, match="1 gold"):
        attachment_scores([_gold()], [])
