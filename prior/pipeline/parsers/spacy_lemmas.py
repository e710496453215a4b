"""spaCy's rule lemmatizer with its word index held as sets.

spaCy's rule lemmatizer (`spacy.pipeline.Lemmatizer`, ``"rule"`` mode: en_core_web_sm's)
keeps, per part of speech, the words it knows as a *list* (``lemma_index``: 57,528 nouns,
20,993 verbs, 8,700 adjectives, 3,775 adverbs in en_core_web_sm 3.8), and asks whether each
form a suffix rule makes is in it: a scan of the whole list, for every inflected word not met
before. That was most of the lemmatizer's 0.5 ms of CPU per sentence, 8 % of the default
parse (bench/parse_profile.py). :func:`index_as_sets` holds each of those lists as a
``frozenset`` of the same words instead; the lemmatizer only ever asks whether a form is in the
index (and whether the index is empty), which a set answers the same way, so every lemma stays
the same (tests/test_spacy_lemmas.py compares every token of the bundled slices). Like the BLAS
kernel (`prior.pipeline.parsers.spacy_kernels`), this is not part of a parse's fingerprint.
"""

from __future__ import annotations

from typing import Any

#: the lookups table of the words a rule lemmatizer knows, per part of speech
INDEX_TABLE = "lemma_index"


def index_as_sets(nlp: Any) -> int:
    """Hold the word index (`INDEX_TABLE`) of each rule lemmatizer in ``nlp`` as frozensets
    (module docstring); how many parts of speech were converted (0: no rule lemmatizer)."""
    from spacy.pipeline import Lemmatizer

    converted = 0
    for _, component in nlp.components:
        if not isinstance(component, Lemmatizer) or component.mode != "rule":
            continue
        if not component.lookups.has_table(INDEX_TABLE):
            continue
        table = component.lookups.get_table(INDEX_TABLE)
        for pos, words in list(table.items()):
            if isinstance(words, list):
                table[pos] = frozenset(words)
                converted += 1
    return converted


__all__ = ["INDEX_TABLE", "index_as_sets"]
