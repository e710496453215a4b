"""Make the papers' embeddings here: dependency-based skip-gram and counter-fitting.

Both write (1) a standard word2vec text file, (2) a JSON file beside it (``<out>.json``)
recording the method, the embedding ``kind`` (``dependency`` or ``counter-fitted``: what
GiBERT's injection place depends on), every setting and the counts, and (3) when a store is given, an
``embeddings`` resource of the store whose ``meta`` holds the same record. The text file is
what ``prior build --features emb --embeddings PATH`` reads.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prior.errors import NotFoundError, PriorError
from prior.pipeline.embeddings import Progress
from prior.pipeline.embeddings.counterfit import CounterfitSettings, counterfit, wordnet_constraints
from prior.pipeline.embeddings.depcontexts import corpus_contexts
from prior.pipeline.embeddings.io import Embeddings, read_embeddings, write_word2vec_text
from prior.pipeline.embeddings.sgns import SgnsSettings, train_sgns
from prior.pipeline.embeddings.table import load_embeddings, store_embeddings

log = logging.getLogger(__name__)


@dataclass
class MadeEmbeddings:
    path: Path
    record: dict[str, Any]
    resource: str | None


def _write(emb: Embeddings, out: str | os.PathLike[str], record: dict[str, Any],
           store: Any | None) -> MadeEmbeddings:
    path = write_word2vec_text(out, emb.words, emb.vectors)
    record = {**record, "words": len(emb), "dim": emb.dim, "file": path.name}
    resource = None
    if store is not None:
        resource = store_embeddings(store, emb, record)
        record["resource"] = resource
    Path(f"{path}.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n",
                                    encoding="utf-8")
    return MadeEmbeddings(path=path, record=record, resource=resource)


def without_spaced_words(emb: Embeddings) -> tuple[Embeddings, int]:
    """``emb`` without the words the word2vec text format cannot hold (GloVe 840B has a few
    entries such as ``at name@domain.com``), and how many were left out."""
    keep = [i for i, w in enumerate(emb.words) if w and not any(ch.isspace() for ch in w)]
    if len(keep) == len(emb):
        return emb, 0
    return (Embeddings(words=[emb.words[i] for i in keep], vectors=emb.vectors[keep], fmt=emb.fmt),
            len(emb) - len(keep))


class _StoredParse:
    """The three fields dependency contexts need, from a store row."""

    __slots__ = ("heads", "rels", "words")

    def __init__(self, words: list[str], heads: list[int], rels: list[str]) -> None:
        self.words, self.heads, self.rels = words, heads, rels


def train_dependency_embeddings(store: Any, out: str | os.PathLike[str], *,
                                settings: SgnsSettings = SgnsSettings(), parse: str | None = None,
                                parser: str | None = None, datasets: list[str] | None = None, lowercase: bool = True,
                                collapse_prep: bool = True,
                                progress: Progress | None = None) -> MadeEmbeddings:
    """Levy & Goldberg-style embeddings from the parses already in ``store``.

    ``parse`` (an id prefix) picks the parse, else ``parser`` (a ``--parser`` value; default:
    the default parser's parse, never "the latest"; `prior.featurestore.selection.parse_of`);
    ``datasets`` restricts the corpus to the sentences of those datasets (default: every
    sentence of that parse), each split read as every reader reads it (`Store.split_rows`: a
    split that lacks rows is a `ShortSplitError` naming the build that restores them; pairs
    the parse's build skipped are left out). The record names the parse, its parser and the
    sentence count.
    """
    from prior.featurestore.selection import parse_of, recorded_parsers
    from prior.featurestore.splits import read_splits

    t0 = time.perf_counter()
    parse_id = parse_of(store, parse=parse, parser=parser)
    keys = None
    if datasets:
        keys = set()
        for dataset, split in read_splits(store):
            if dataset in datasets:
                rows = store.split_rows(dataset, split, parse=parse_id).rows
                keys.update(rows["key_a"].to_list())
                keys.update(rows["key_b"].to_list())
        if not keys:
            raise NotFoundError(f"{store.location} has no pairs of {', '.join(datasets)}")
    df = store.parses(keys, parse=parse_id)
    parses = [_StoredParse(w, h, r) for w, h, r in
              zip(df["words"].to_list(), df["heads"].to_list(), df["rels"].to_list())]
    if not parses:
        raise NotFoundError(f"{store.location} holds no parsed sentences to train on")
    result = train_sgns(corpus_contexts(parses, lowercase=lowercase, collapse_prep=collapse_prep),
                        settings, progress=progress)
    record = {"method": "dependency-sgns (Levy & Goldberg 2014; word2vecf objective)", "kind": "dependency",
              "contexts": "dep", "settings": settings.as_dict(), "lowercase": lowercase,
              "collapse_prep": collapse_prep, "parse": parse_id,
              "parser": recorded_parsers(store).get(parse_id), "datasets": datasets or "all",
              "sentences": len(parses), "pairs": result.pairs, "dropped_pairs": result.dropped_pairs,
              "context_vocabulary": result.contexts,
              "epoch_losses": [round(x, 5) for x in result.losses],
              "seconds": round(time.perf_counter() - t0, 1)}
    return _write(result.embeddings, out, record, store)


def counterfit_embeddings(source: str, out: str | os.PathLike[str], *, store: Any | None = None,
                          settings: CounterfitSettings = CounterfitSettings(),
                          fmt: str = "auto", limit: int | None = None,
                          wordnet: Any | None = None,
                          progress: Progress | None = None) -> MadeEmbeddings:
    """Counter-fit an embedding table (a file, or a store resource key) to WordNet's
    synonyms and antonyms.

    Words containing whitespace (possible in GloVe files) are left out of the result, which
    must be a word2vec text file; their number is recorded (``dropped_words_with_whitespace``).
    WordNet's constraints are single words, so none of them could move anyway.
    """
    t0 = time.perf_counter()
    if Path(source).expanduser().is_file():
        emb = read_embeddings(source, fmt, limit=limit)
        origin = Path(source).name
    elif store is not None and source in store.find_resources("embeddings"):
        emb = load_embeddings(store, source)
        origin = f"store resource {source}"
    else:
        raise NotFoundError(f"{source} is neither an embedding file nor an embeddings resource "
                            "of the store; pass a word2vec/GloVe/fastText file")
    if wordnet is None:
        from prior.pipeline.resources.wordnet import load_wordnet, wordnet_version

        wordnet = load_wordnet()
        wn_id = wordnet_version(wordnet)
    else:
        wn_id = str(getattr(wordnet, "get_version", lambda: "given")())
    emb, spaced = without_spaced_words(emb)
    synonyms, antonyms = wordnet_constraints(wordnet, vocabulary=emb.words)
    if not synonyms and not antonyms:
        raise PriorError(f"no WordNet synonym or antonym pair has both words in {origin}'s "
                         "vocabulary; are its words lowercase English?")
    result = counterfit(emb, synonyms, antonyms, settings, progress=progress)
    record = {"method": "counter-fitting (Mrkšić et al. 2016)", "kind": "counter-fitted", "source": origin,
              "settings": settings.as_dict(), "constraints": f"WordNet ({wn_id})",
              "synonym_pairs": result.synonyms, "antonym_pairs": result.antonyms,
              "vsp_pairs": result.vsp_pairs, "mean_cosine": round(result.mean_cosine, 4),
              "dropped_words_with_whitespace": spaced,
              "cost_before": round(result.costs[0], 5),
              "cost_after": round(result.costs[-1], 5),
              "seconds": round(time.perf_counter() - t0, 1)}
    return _write(result.embeddings, out, record, store)
