"""DAFA's tf-idf weights (dafa.txt eq. 5): one weight per word, IDF from the training split.

Choices (FORMULAS.md, DAFA; each has a test in tests/test_features_tfidf.py):

- A document is one sentence of the dataset (each unique sentence once: the store keeps
  unique sentences, so SNLI's repeated premises count once). Terms are word forms compared
  as in DAFA's matrices: lowercased words by default, lowercased lemmas with
  ``compare="lemma"`` (prior/pipeline/features/forms.py). Every word is a term, punctuation
  included: each word needs a weight for the n×m matrix.
- Two weightings (parameter ``weighting``, part of the entry's key):

  - ``"ramos"`` (default): the weight DAFA's eq. 5 cites, Ramos et al. (2003):
    w(t) = count(t in the sentence) · ln(N / df(t)), N the number of training sentences.
    Unnormalized, so a content word seen in a few of SICK's ~4,800 training sentences weighs
    ~5–8, a word in every sentence 0. A term never seen in training counts as df = 1 (the
    rarest a seen term can be; ln(N/0) has no value).
  - ``"l2"``: scikit-learn's reading, smooth idf(t) = ln((1 + N) / (1 + df(t))) + 1 (an
    unseen term has df = 0), tf · idf L2-normalized over the sentence's distinct terms, so a
    weight is ~0.3–0.5. This was the only reading before feature version 2.

  Each word gets its term's weight, so a repeated word carries the same weight at every
  position.
- The IDF table comes from the dataset's ``train`` split. A dataset without a train split in
  the store (the partial SNLI copy, QNLI dev/test) falls back to the union of the splits it
  has; the splits used are a parameter of the entry (``idf_splits``), so such an entry never
  passes for one built from a train split.

The table is a resource of the store (kind ``idf``: columns term, df; array n_docs), and
its key is the parameter ``idf`` of the entry; the parameter ``dataset`` names the dataset
whose IDF it is, so each dataset has its own `tfidf` entry and a reader picks it with
``store.find_entry("tfidf", Request(params={"dataset": ...}))``.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from prior.errors import PriorError, ResourceError
from prior.layouts.kinds import SentenceVector
from prior.pipeline.features.base import FeatureBase
from prior.pipeline.features.forms import WordCompare, check_compare, word_forms
from prior.pipeline.parsers.base import Parse

log = logging.getLogger(__name__)

IDF_RESOURCE = "idf"


@dataclass(frozen=True)
class IdfTable:
    """Document frequencies of a collection of sentences and its size N."""

    df: Mapping[str, int]
    n_docs: int

    @classmethod
    def from_documents(cls, documents: Iterable[Sequence[str]]) -> IdfTable:
        """Count each term once per document."""
        df: Counter[str] = Counter()
        n = 0
        for doc in documents:
            df.update(set(doc))
            n += 1
        return cls(df=dict(df), n_docs=n)

    def idf(self, term: str) -> float:
        """Smooth idf: ln((1 + N) / (1 + df)) + 1."""
        return math.log((1 + self.n_docs) / (1 + self.df.get(term, 0))) + 1.0

    def ramos_idf(self, term: str) -> float:
        """Ramos et al. (2003): ln(N / df), an unseen term counting as df = 1."""
        return math.log(self.n_docs / max(self.df.get(term, 0), 1)) if self.n_docs else 0.0

    def to_arrow(self) -> tuple[pa.Table, dict[str, np.ndarray]]:
        """The resource form: a (term, df) table sorted by term, and N as an array."""
        terms = sorted(self.df)
        table = pa.table({"term": pa.array(terms, pa.string()),
                          "df": pa.array([self.df[t] for t in terms], pa.int64())})
        return table, {"n_docs": np.array([self.n_docs], dtype=np.int64)}

    @classmethod
    def from_arrow(cls, table: pa.Table, arrays: Mapping[str, np.ndarray]) -> IdfTable:
        terms = table.column("term").to_pylist()
        dfs = table.column("df").to_pylist()
        return cls(df=dict(zip(terms, dfs)), n_docs=int(np.asarray(arrays["n_docs"])[0]))


WEIGHTINGS: tuple[str, ...] = ("ramos", "l2")


def tfidf_weights(forms: Sequence[str], idf: IdfTable, weighting: str = "ramos") -> np.ndarray:
    """Per-word tf-idf weight (float32, one per word): count · ln(N/df) (``ramos``), or
    count · smooth idf L2-normalized over the distinct terms (``l2``)."""
    if weighting not in WEIGHTINGS:
        raise PriorError(f"unknown tf-idf weighting {weighting!r}; use one of {', '.join(WEIGHTINGS)}")
    if not forms:
        return np.zeros(0, dtype=np.float32)
    counts = Counter(forms)
    if weighting == "ramos":
        return np.array([counts[t] * idf.ramos_idf(t) for t in forms], dtype=np.float32)
    raw = {t: c * idf.idf(t) for t, c in counts.items()}
    norm = math.sqrt(sum(v * v for v in raw.values()))
    return np.array([raw[t] / norm for t in forms], dtype=np.float32)


class _Words(NamedTuple):
    """The two fields of a parse that word forms read."""

    words: list[str]
    lemmas: list[str]


class TfidfFeature(FeatureBase):
    """Sentence feature ``tfidf``: component ``tfidf``, one float32 weight per word.

    ``prepare(ctx)`` (build driver) counts the IDF table on the dataset's training split,
    writes it as a store resource and records its key; ``with_idf`` does the same for a
    table in hand (tests, notebooks).
    """

    name = "tfidf"
    version = 2  # 2: parameter ``weighting``, Ramos's count · ln(N/df) by default
    scope = "sentence"
    components = ("tfidf",)
    layout = SentenceVector("tfidf")

    def __init__(self, *, compare: str = "lower", idf_split: str = "train",
                 weighting: str = "ramos") -> None:
        if weighting not in WEIGHTINGS:
            raise PriorError(f"unknown tf-idf weighting {weighting!r}; use one of {', '.join(WEIGHTINGS)}")
        self.weighting = weighting
        self.compare: WordCompare = check_compare(compare)
        self.idf_split = idf_split
        self.idf_key: str | None = None
        self.idf_splits: tuple[str, ...] = ()
        self.dataset: str | None = None
        self._idf: IdfTable | None = None

    def annotations(self) -> frozenset[str]:
        """Words; lemmas too where words compare by lemma."""
        return frozenset({"lemmas"}) if self.compare == "lemma" else frozenset()

    def params(self) -> dict[str, Any]:
        return {"compare": self.compare, "weighting": self.weighting, "dataset": self.dataset, "idf": self.idf_key,
                "idf_splits": list(self.idf_splits),
                "idf_docs": None if self._idf is None else self._idf.n_docs}

    def with_idf(self, idf: IdfTable, *, key: str, splits: Sequence[str],
                 dataset: str | None = None) -> TfidfFeature:
        """Use an IDF table already counted (``key`` names it in the store or elsewhere)."""
        self._idf, self.idf_key, self.idf_splits = idf, key, tuple(splits)
        self.dataset = dataset
        return self

    def prepare(self, ctx: Any) -> None:
        """Count the IDF table on ``ctx.dataset``'s training split and store it as a resource."""
        present = sorted({split for dataset, split in ctx.store.datasets() if dataset == ctx.dataset})
        if not present:
            raise ResourceError(f"dataset {ctx.dataset!r} has no pairs in the store: ingest it "
                                "before building tf-idf weights")
        splits = [self.idf_split] if self.idf_split in present else present
        if splits != [self.idf_split]:
            log.warning("dataset %s has no %r split in the store; IDF counted on %s instead "
                        "(recorded in the entry's parameter idf_splits)",
                        ctx.dataset, self.idf_split, "+".join(splits))
        keys: list[str] = []
        seen: set[str] = set()
        for split in splits:
            for key in ctx.split_keys(split):
                if key not in seen:
                    seen.add(key)
                    keys.append(key)
        idf = IdfTable.from_documents(word_forms(_Words(words, lemmas), self.compare)
                                      for words, lemmas in ctx.words(keys, lemmas=self.compare == "lemma"))
        table, arrays = idf.to_arrow()
        key = ctx.store.write_resource(
            IDF_RESOURCE, table, arrays=arrays,
            meta={"dataset": ctx.dataset, "splits": splits, "n_docs": idf.n_docs,
                  "compare": self.compare,
                  "formula": "idf = ln((1 + N) / (1 + df)) + 1"},
        )
        self.with_idf(idf, key=key, splits=splits, dataset=ctx.dataset)

    def restore(self, ctx: Any, params: Mapping[str, Any]) -> None:
        """The IDF table an entry was built with (its parameter ``idf``, a resource of the
        build's store), with the dataset and splits it was counted on: new sentences get the
        weights the entry's dataset gives them."""
        key = params.get("idf")
        if not key:
            raise ResourceError(f"the tfidf entry records no IDF table (params {dict(params)})")
        res = ctx.store.read_resource(str(key))
        if res.kind != IDF_RESOURCE:
            raise ResourceError(f"resource {key} of {ctx.store.location} is a {res.kind!r} table, "
                                f"not {IDF_RESOURCE!r}")
        self.with_idf(IdfTable.from_arrow(res.table, res.arrays), key=str(key),
                      splits=list(params.get("idf_splits") or ()), dataset=params.get("dataset"))

    def report_lines(self, dataset: str) -> list[str]:
        """The IDF table the last ``prepare`` counted, for the build report."""
        if self._idf is None:
            return []
        return [f"tfidf: IDF of {dataset} counted on {'+'.join(self.idf_splits)} "
                f"({self._idf.n_docs} sentences, {len(self._idf.df)} terms), resource {self.idf_key}"]

    def setup(self) -> None:
        if self._idf is None:
            raise PriorError("TfidfFeature has no IDF table: the build driver calls prepare() "
                             "first; outside a build, call with_idf()")

    def compute(self, items: Sequence[Parse]) -> list[dict[str, np.ndarray]]:
        self.setup()
        assert self._idf is not None
        return [{"tfidf": tfidf_weights(word_forms(p, self.compare), self._idf, self.weighting)}
                for p in items]
