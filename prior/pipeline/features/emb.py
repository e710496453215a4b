"""GiBERT's aligned embeddings (gibert.txt §3; FORMULAS.md, GiBERT): per-sentence word ids.

The store holds the embedding vocabulary once (a resource: words + vectors, see
prior/pipeline/embeddings/table.py) and, per sentence, one int32 id per word (component
``word_ids``) indexing it; -1 marks a word without a vector. Loaders turn ids into vectors
(zero for -1) and copy each word's vector to its word pieces (tests/reference_align.py); special
tokens get zero vectors too. Zero for unknown words is our documented choice: the authors'
code gives all OOV words one shared small random vector.

Lookup (parameter ``lookup``): ``"exact-then-lower"`` (default) tries the word as written,
then lowercased — the files GiBERT uses (Levy & Goldberg's, Mrkšić's) are lowercase, while
cased files (fastText, GloVe 840B) keep case distinctions where they have both; ``"exact"``
only as written; ``"lower"`` only lowercased.

``prepare(ctx)`` reads the embedding file given to the build (``--embeddings PATH``; or uses
an embeddings resource already in the store, ``resource=KEY``), stores the vocabulary, and
counts the out-of-vocabulary rate of every split of the build (``oov`` attribute; logged at
INFO; ``report_lines(dataset)`` gives the lines a build report prints). The file is read
completely, and checked, before anything is written: a malformed file raises `DataError`
and leaves the store as it was. ``oov_rates(store, dataset)`` computes the same rates from
what is stored (``prior embed oov``).

Kind (parameter ``kind``, part of the entry's key): what the vectors are, ``dependency`` or
``counter-fitted`` (GiBERT injects them at different blocks, gibert.txt Table 3). Recorded
where it is known: ``-o emb.kind=KIND`` for a file from elsewhere; otherwise the ``kind`` of
the JSON record `prior embed train` / `prior embed counterfit` write beside their file
(``<file>.json``), or of the embeddings resource's meta. ``None`` when nothing says.

OOV counts word tokens (each occurrence in each unique sentence of the split: SNLI's
repeated premises count once) and distinct words; a word is OOV when ``lookup`` finds no
vector for it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from prior.errors import NotFoundError, PriorError, ResourceError
from prior.featurestore.keys import digest
from prior.featurestore.recipe import FeatureRecipe, Recipe, render
from prior.featurestore.splits import read_splits
from prior.layouts.kinds import WordIds
from prior.pipeline.features.base import FeatureBase
from prior.pipeline.parsers.base import Parse

log = logging.getLogger(__name__)

Lookup = Literal["exact-then-lower", "exact", "lower"]
LOOKUPS: tuple[str, ...] = ("exact-then-lower", "exact", "lower")
#: what the vectors are (GiBERT's injection place depends on it)
KINDS: tuple[str, ...] = ("dependency", "counter-fitted")


def recorded_kind(path: Path) -> str | None:
    """The ``kind`` of the JSON record `prior embed` writes beside an embedding file, if any."""
    import json

    record = Path(f"{path}.json")
    if not record.is_file():
        return None
    try:
        kind = json.loads(record.read_text(encoding="utf-8")).get("kind")
    except (ValueError, AttributeError):
        return None
    return str(kind) if kind in KINDS else None


@dataclass(frozen=True)
class OovStats:
    """Word tokens and how many had no vector, plus the distinct words of each kind."""

    split: str
    tokens: int
    oov_tokens: int
    types: int
    oov_types: int

    @property
    def rate(self) -> float:
        return self.oov_tokens / self.tokens if self.tokens else 0.0

    def line(self, dataset: str) -> str:
        return (f"{dataset}/{self.split}: OOV {self.rate:.2%} of {self.tokens} word tokens "
                f"({self.oov_types} of {self.types} distinct words)")


def word_ids(words: Sequence[str], index: dict[str, int], lookup: str = "exact-then-lower"
             ) -> np.ndarray:
    """int32 id of each word in ``index`` (-1 when absent), by the ``lookup`` rule."""
    if lookup not in LOOKUPS:
        raise PriorError(f"unknown lookup {lookup!r}; use one of {', '.join(LOOKUPS)}")
    out = np.empty(len(words), dtype=np.int32)
    for i, w in enumerate(words):
        if lookup == "lower":
            out[i] = index.get(w.lower(), -1)
        else:
            j = index.get(w, -1)
            if j < 0 and lookup == "exact-then-lower":
                j = index.get(w.lower(), -1)
            out[i] = j
    return out


def restrict_index(index: dict[str, int], words: Iterable[str]) -> dict[str, int]:
    """The part of ``index`` that ``word_ids`` can reach for ``words`` under any lookup rule
    (each word as written and lowercased), with the same ids.

    A build ships its feature object to every worker with each partition; a vocabulary of
    millions of words is cut to the few thousand the build's sentences use.
    """
    out: dict[str, int] = {}
    for w in words:
        for form in (w, w.lower()):
            j = index.get(form)
            if j is not None:
                out[form] = j
    return out


def oov_stats(split: str, sentences: Sequence[Sequence[str]], ids: Sequence[np.ndarray]) -> OovStats:
    tokens = sum(len(s) for s in sentences)
    oov_tokens = int(sum(int((i < 0).sum()) for i in ids))
    types: set[str] = set()
    oov_types: set[str] = set()
    for words, wid in zip(sentences, ids):
        for w, j in zip(words, wid.tolist()):
            types.add(w)
            if j < 0:
                oov_types.add(w)
    return OovStats(split, tokens, oov_tokens, len(types), len(oov_types))



def no_embedding_file() -> ResourceError:
    """The error of an `emb` build that names no embedding file."""
    line = render(Recipe(features=(FeatureRecipe("emb", inputs={"embeddings": "PATH"}),)))
    return ResourceError(f"the `emb` feature needs an embedding file: `{line}` "
                         "(word2vec .txt/.bin, GloVe .txt, fastText .vec)")


class EmbFeature(FeatureBase):
    """Sentence feature ``emb``: component ``word_ids`` (int32 per word, -1 = no vector)."""

    name = "emb"
    version = 2  # 2: parameter ``kind``
    scope = "sentence"
    components = ("word_ids",)
    layout = WordIds("word_ids", vocabulary_param="vocab")

    def __init__(self, *, embeddings: str | Path | None = None, resource: str | None = None,
                 fmt: str = "auto", lookup: str = "exact-then-lower", limit: int | None = None,
                 kind: str | None = None) -> None:
        if lookup not in LOOKUPS:
            raise PriorError(f"unknown lookup {lookup!r}; use one of {', '.join(LOOKUPS)}")
        if kind is not None and kind not in KINDS:
            raise PriorError(f"unknown embedding kind {kind!r}; use one of {', '.join(KINDS)}")
        self.kind = kind
        self.embeddings = None if embeddings is None else Path(embeddings)
        self.resource = resource
        self.fmt = fmt
        self.lookup = lookup
        self.limit = limit
        self.oov: list[OovStats] = []
        self._index: dict[str, int] | None = None
        self._token = ""

    def annotations(self) -> frozenset[str]:
        """Words only."""
        return frozenset()

    def params(self) -> dict[str, Any]:
        # The file path is not a parameter: the vocabulary's content key is.
        return {"vocab": self.resource, "lookup": self.lookup, "kind": self.kind}

    def with_vocabulary(self, words: Sequence[str], *, key: str) -> EmbFeature:
        """Use a vocabulary already in hand (``key`` names its resource)."""
        self._index = {w: i for i, w in enumerate(words)}
        self.resource = key
        self._token = ""
        return self

    def prepare(self, ctx: Any) -> None:
        """Store the vocabulary (from the file or the given resource) and count OOV rates.

        Afterwards the feature keeps only the part of the vocabulary index that the build's
        sentences can reach (`restrict_index`): ids are unchanged, the object shipped to
        the workers stays small.
        """
        from prior.pipeline.embeddings.io import read_embeddings
        from prior.pipeline.embeddings.table import load_embeddings, store_embeddings

        if self.resource is not None and self.embeddings is None:
            emb = load_embeddings(ctx.store, self.resource)
            if self.kind is None:
                meta_kind = ctx.store.read_resource(self.resource).meta.get("kind")
                self.kind = meta_kind if meta_kind in KINDS else None
            self.with_vocabulary(emb.words, key=self.resource)
        elif self.embeddings is not None:
            emb = read_embeddings(self.embeddings, self.fmt, limit=self.limit)
            if self.kind is None:
                self.kind = recorded_kind(self.embeddings)
            key = store_embeddings(ctx.store, emb, {"source": self.embeddings.name,
                                                    "format": emb.fmt, "limit": self.limit,
                                                    "duplicates": emb.duplicates, "kind": self.kind})
            self.with_vocabulary(emb.words, key=key)
        else:
            raise no_embedding_file()
        self._restrict(ctx)

    def restore(self, ctx: Any, params: Mapping[str, Any]) -> None:
        """The vocabulary an entry was built with (its parameter ``vocab``, a resource of the
        build's store), the lookup given by the options; then as ``prepare``."""
        from prior.pipeline.embeddings.table import load_embeddings

        key = params.get("vocab")
        if not key:
            raise ResourceError(f"the emb entry records no vocabulary (params {dict(params)})")
        self.embeddings = None
        if self.kind is None and params.get("kind") in KINDS:
            self.kind = str(params["kind"])
        self.with_vocabulary(load_embeddings(ctx.store, str(key)).words, key=str(key))
        self._restrict(ctx)

    def _restrict(self, ctx: Any) -> None:
        """Count the OOV rate of every split of the build and keep only the part of the index
        its words reach; the worker token names that part."""
        assert self._index is not None
        self.oov = []
        seen: set[str] = set()
        for split in ctx.splits:
            parses = ctx.parses(ctx.split_keys(split))
            sents = [p.words for p in parses]
            seen.update(w for s in sents for w in s)
            self.oov.append(oov_stats(split, sents, [word_ids(s, self._index, self.lookup)
                                                     for s in sents]))
            log.info("%s", self.oov[-1].line(ctx.dataset))
        self._index = restrict_index(self._index, seen)
        self._token = digest("\n".join(sorted(self._index)).encode())

    def worker_token(self) -> str:
        """The words the index was restricted to: a worker's copy set up for another build
        (another restriction of the same entry) is not reused for this one."""
        return self._token

    def recipe_inputs(self) -> dict[str, str]:
        """The embedding file (its absolute path) the vocabulary was read from."""
        return {} if self.embeddings is None else {"embeddings": str(Path(self.embeddings).expanduser().resolve())}

    def report_lines(self, dataset: str) -> list[str]:
        """One line per split of the last ``prepare``: its OOV rate, for the build report."""
        return [f"emb: {stats.line(dataset)}" for stats in self.oov]

    def setup(self) -> None:
        if self._index is None:
            raise PriorError("EmbFeature has no vocabulary: the build driver calls prepare() "
                             "first; outside a build, call with_vocabulary()")

    def compute(self, items: Sequence[Parse]) -> list[dict[str, np.ndarray]]:
        self.setup()
        assert self._index is not None
        return [{"word_ids": word_ids(p.words, self._index, self.lookup)} for p in items]


def oov_rates(store: Any, dataset: str, *, entry: Any | None = None,
              splits: Sequence[str] | None = None) -> list[OovStats]:
    """OOV statistics of a dataset's splits from the stored word ids (entry: the default
    `emb`), each split read as every reader reads it (`Store.split_rows` with the entry's
    parse: a split that lacks rows is a `ShortSplitError`; skipped pairs are left out)."""
    entry = entry or store.find_entry("emb")
    data = store.load_feature(entry)
    held = read_splits(store)
    present = [s for d, s in held if d == dataset]
    if not present:
        known = ", ".join(sorted({d for d, _ in held})) or "none"
        raise NotFoundError(f"{store.location} has no dataset {dataset!r} (present: {known})")
    out = []
    for split in splits or present:
        rows = store.split_rows(dataset, split, parse=entry.parse).rows
        keys = list(dict.fromkeys(k for pair in zip(rows["key_a"].to_list(), rows["key_b"].to_list())
                                  for k in pair))
        keys = [k for k in keys if k in data.index]
        parses = store.parses(keys, parse=entry.parse, columns=("words",))
        words = dict(zip(parses["sent_key"].to_list(), parses["words"].to_list()))
        sents = [words[k] for k in keys if k in words]
        ids = [data.get(k)["word_ids"] for k in keys if k in words]
        out.append(oov_stats(split, sents, ids))
    return out
