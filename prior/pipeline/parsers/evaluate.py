"""Attachment scores (UAS / LAS) of a parser on a CoNLL-U file, given the gold words.

Choices:
- Words are the gold syntactic words (multi-word tokens split, empty nodes dropped: see
  :mod:`.conllu`); every backend parses them through ``parse_words``, one tree per sentence.
- Punctuation is what the *gold* UPOS tags ``PUNCT``; scores are given with and without it.
  The headline (``UAS=… LAS=…``) excludes punctuation, as in Dozat & Manning and supar.
- LAS compares labels after a per-backend normalization ``label_map``:
  * biaffine (trained on UD): full UD labels, subtypes included (``nmod:poss`` must match
    exactly); :func:`universal` additionally gives LAS on the universal part only (CoNLL 2018).
  * spaCy: its ClearNLP-style labels are mapped to UD universal relations with
    :data:`SPACY_TO_UD` and compared with the gold label's universal part. The mapping is
    approximate, and spaCy's trees follow ClearNLP conventions (prepositions head their
    objects, copulas head predicates), so its UAS against UD gold partly measures the scheme
    difference, not only parse quality.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from prior.pipeline.parsers.conllu import ConlluSentence, read_conllu
from prior.progress import Progress

# ClearNLP (spaCy en_core_web_sm) -> UD universal relation. Approximate: see module docstring.
SPACY_TO_UD: dict[str, str] = {
    "ROOT": "root", "acl": "acl", "acomp": "xcomp", "advcl": "advcl", "advmod": "advmod",
    "agent": "obl", "amod": "amod", "appos": "appos", "attr": "obj", "aux": "aux",
    "auxpass": "aux", "case": "case", "cc": "cc", "ccomp": "ccomp", "compound": "compound",
    "conj": "conj", "csubj": "csubj", "csubjpass": "csubj", "dative": "iobj", "dep": "dep",
    "det": "det", "dobj": "obj", "expl": "expl", "intj": "discourse", "mark": "mark",
    "meta": "dep", "neg": "advmod", "nmod": "nmod", "npadvmod": "obl", "nsubj": "nsubj",
    "nsubjpass": "nsubj", "nummod": "nummod", "oprd": "xcomp", "parataxis": "parataxis",
    "pcomp": "advcl", "pobj": "obl", "poss": "nmod", "preconj": "cc", "predet": "det",
    "prep": "case", "prt": "compound", "punct": "punct", "quantmod": "advmod", "relcl": "acl",
    "xcomp": "xcomp",
}


def universal(label: str) -> str:
    """The universal part of a UD relation: ``nmod:poss`` -> ``nmod``."""
    return label.split(":", 1)[0]


def spacy_to_ud(label: str) -> str:
    return SPACY_TO_UD.get(label, "dep")


@dataclass(frozen=True)
class AttachmentScores:
    """Counts and percentages; ``*_punct`` include punctuation."""

    words: int
    words_punct: int
    uas_hits: int
    las_hits: int
    uas_hits_punct: int
    las_hits_punct: int

    @staticmethod
    def _pct(hits: int, total: int) -> float:
        return 100.0 * hits / total if total else 0.0

    @property
    def uas(self) -> float:
        return self._pct(self.uas_hits, self.words)

    @property
    def las(self) -> float:
        return self._pct(self.las_hits, self.words)

    @property
    def uas_punct(self) -> float:
        return self._pct(self.uas_hits_punct, self.words_punct)

    @property
    def las_punct(self) -> float:
        return self._pct(self.las_hits_punct, self.words_punct)

    def as_dict(self) -> dict[str, float | int]:
        return {"UAS": self.uas, "LAS": self.las, "UAS_with_punct": self.uas_punct,
                "LAS_with_punct": self.las_punct, "words": self.words, "words_with_punct": self.words_punct}


def attachment_scores(gold: Sequence[ConlluSentence], pred: Sequence[tuple[Sequence[int], Sequence[str]]],
                      pred_label: Callable[[str], str] = lambda r: r,
                      gold_label: Callable[[str], str] = lambda r: r) -> AttachmentScores:
    """Score ``pred`` (heads, rels per sentence) against ``gold``; labels compared after the maps."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(pred)} predicted sentences for {len(gold)} gold sentences")
    n = n_p = u = lab = u_p = lab_p = 0
    for i, (g, (heads, rels)) in enumerate(zip(gold, pred)):
        if len(heads) != len(g) or len(rels) != len(g):
            raise ValueError(f"sentence {i}: {len(heads)} predicted heads for {len(g)} gold words")
        for k in range(len(g)):
            head_ok = heads[k] == g.heads[k]
            both_ok = head_ok and pred_label(rels[k]) == gold_label(g.rels[k])
            n_p += 1
            u_p += head_ok
            lab_p += both_ok
            if g.upos[k] != "PUNCT":
                n += 1
                u += head_ok
                lab += both_ok
    return AttachmentScores(words=n, words_punct=n_p, uas_hits=u, las_hits=lab, uas_hits_punct=u_p,
                            las_hits_punct=lab_p)


#: sentences parsed between two progress reports (the bar's step; results do not depend on it
#: beyond float rounding, as with any batch size)
PROGRESS_SENTENCES = 256


def evaluate_parser(parser: object, gold: Sequence[ConlluSentence],
                    progress: Progress | None = None) -> dict[str, AttachmentScores]:
    """Scores of a backend on gold words: ``{"full": …, "universal": …}`` label variants.

    For the spaCy backend both use :data:`SPACY_TO_UD` against gold universal labels
    ("full" is then the same as "universal"). The sentences are parsed in blocks of
    :data:`PROGRESS_SENTENCES`, each reported to ``progress`` as ``("parse", done, total, "")``.
    """
    words = [list(s.words) for s in gold]
    pred: list[tuple[list[int], list[str]]] = []
    for start in range(0, len(words), PROGRESS_SENTENCES):
        pred += parser.parse_words(words[start:start + PROGRESS_SENTENCES])  # type: ignore[attr-defined]
        if progress is not None:
            progress("parse", len(pred), len(words), "")
    if getattr(parser, "name", "") == "spacy":
        scores = attachment_scores(gold, pred, spacy_to_ud, universal)
        return {"full": scores, "universal": scores}
    return {"full": attachment_scores(gold, pred),
            "universal": attachment_scores(gold, pred, universal, universal)}


@dataclass(frozen=True)
class EvalResult:
    parser: str
    sentences: int
    full: AttachmentScores
    universal: AttachmentScores


def evaluate_file(spec: str, path: str | Path, progress: Progress | None = None) -> EvalResult:
    """Evaluate the parser ``spec`` (see :func:`prior.pipeline.parsers.get_parser`) on a CoNLL-U file."""
    from prior.pipeline.parsers import get_parser

    gold = read_conllu(path)
    scores = evaluate_parser(get_parser(spec), gold, progress)
    return EvalResult(parser=spec, sentences=len(gold), full=scores["full"], universal=scores["universal"])
