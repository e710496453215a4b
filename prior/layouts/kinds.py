"""Storage layouts: what a feature entry's values are, so that readers need no feature names.

A feature declares its layout (`prior/pipeline/features`), the build records it in every segment of
the entry, and a reader (the trainers' loader, `prior eval --features`) handles an entry by
its layout alone:

- `PairMatrix`: per pair, an n × m matrix over the words of A (rows) and B (columns), with the
  value a token-grid cell takes where no word pair is (special tokens, within a sentence):
  ``neutral``; ``shift`` is added to every stored value when the grid is built (DAFA's
  "M_F + 1"). Batched as a (B, T, T) float grid, the model input ``prior_grid``.
- `SentenceMask`: per sentence, an n × n 0/1 matrix (row: the word; columns: what it may
  attend to). Batched as a block-diagonal (B, T, T) bool grid, the model input ``sdoi_mask``;
  its neutral value lets every real token see every real token.
- `SentenceVector`: per sentence, one value per word (DAFA's tf-idf weights); no model input of
  its own (a view combines it).
- `WordIds`: per sentence, one vocabulary id per word (-1: none) into the ``array`` of the
  store resource named by the entry parameter ``vocabulary_param``. Batched as (B, T, E)
  vectors, the model input ``word_vectors``, zero where the id is -1 (special tokens, padding,
  unknown words).

Layouts are small frozen records with a JSON form (`to_json` / `from_json`), the form the
store records.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar, Literal

Scope = Literal["sentence", "pair"]


@dataclass(frozen=True)
class PairMatrix:
    component: str
    neutral: float = 1.0
    shift: float = 0.0
    kind: ClassVar[str] = "pair-matrix"
    scope: ClassVar[Scope] = "pair"
    input_name: ClassVar[str] = "prior_grid"


@dataclass(frozen=True)
class SentenceMask:
    component: str
    kind: ClassVar[str] = "sentence-mask"
    scope: ClassVar[Scope] = "sentence"
    input_name: ClassVar[str] = "sdoi_mask"


@dataclass(frozen=True)
class SentenceVector:
    component: str
    kind: ClassVar[str] = "sentence-vector"
    scope: ClassVar[Scope] = "sentence"
    input_name: ClassVar[str] = ""


@dataclass(frozen=True)
class WordIds:
    component: str
    vocabulary_param: str = "vocab"
    array: str = "vectors"
    kind: ClassVar[str] = "word-ids"
    scope: ClassVar[Scope] = "sentence"
    input_name: ClassVar[str] = "word_vectors"


Layout = PairMatrix | SentenceMask | SentenceVector | WordIds
KINDS: dict[str, type[Layout]] = {cls.kind: cls for cls in (PairMatrix, SentenceMask, SentenceVector, WordIds)}


def to_json(layout: Layout) -> dict[str, Any]:
    return {"kind": layout.kind, **asdict(layout)}


def from_json(record: dict[str, Any]) -> Layout:
    """The layout a store recorded; ValueError for an unknown kind or field."""
    cls = KINDS.get(str(record.get("kind")))
    if cls is None:
        raise ValueError(f"unknown layout kind {record.get('kind')!r}; known: {', '.join(KINDS)}")
    names = {f.name for f in fields(cls)}
    if unknown := sorted(set(record) - names - {"kind"}):
        raise ValueError(f"layout {cls.kind}: unknown field(s) {unknown}")
    return cls(**{k: v for k, v in record.items() if k != "kind"})
