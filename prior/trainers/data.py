"""The loader: a split's pairs, labels, word pieces and word-level features, from the store.

:func:`load_split` reads the store once: the split's pairs, the parse's words, and the feature
a model reads, selected by the store's entry contract (`prior.featurestore.selection`) and gathered
for the split's pairs (`prior.featurestore.frame.gather`; a view such as DAFA's M_F combines its
entries here, `prior.layouts.views`). It tokenizes every distinct sentence once and assembles
the pairs from those pieces (`prior.trainers.tokens`). Features become batch tensors by their
storage layout alone (`prior.trainers.sources`): the loader knows no feature names.
:meth:`PairData.batch` then builds a batch with no per-pair Python work: rows of padded arrays
cut to the batch's longest pair (per-batch padding) and the feature grid built by vectorized
gathers (`prior.trainers.grid`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from prior.errors import DataError, PriorError
from prior.featurestore import Store
from prior.featurestore.frame import gather
from prior.featurestore.recipe import FeatureRecipe, Recipe, render
from prior.featurestore.selection import (
    EntrySelectionError,
    ParseSelectionError,
    Request,
    build_recipe,
    select_parse,
)
from prior.featurestore.store import EntryInfo
from prior.layouts.kinds import Layout, WordIds
from prior.layouts.views import VIEWS, column_name, view_of
from prior.trainers.sources import FEATURE_MODES, FeatureSource, derangement, source_for
from prior.trainers.tokens import Encoded, encode_indexed

log = logging.getLogger(__name__)


class MissingFeatureError(PriorError, LookupError):
    """The store lacks a feature (or some of its keys) that a model needs; ``recipe``: the
    build that adds it, when the message names one."""

    def __init__(self, message: str, *, recipe: Recipe | None = None) -> None:
        super().__init__(message)
        self.recipe = recipe


def _hint_note(message: str) -> str:
    """A word on what a placeholder in a printed build line stands for."""
    return ("\n(EMB_FILE: word2vec .txt/.bin, GloVe or fastText .vec, e.g. from "
            "`prior embed train --contexts dep --out EMB_FILE`)" if "EMB_FILE" in message else "")


def read_entries(store: Store, feature: str, dataset: str, split: str, *, request: Request | None = None,
                 entries: dict[str, str] | None = None) -> list[EntryInfo]:
    """The store entries a model's feature (an entry or view name) is read from for one split:
    the default entries, or those ``request`` picks by its ``params`` or ``entry`` (a key prefix)
    (`prior.featurestore.selection`), or exactly the ``entries`` (name → key) a checkpoint recorded.
    Each must hold every pair of the split; otherwise `MissingFeatureError` with the
    candidates or the `prior build` line that adds what is missing."""
    try:
        if entries:
            return [store.find_entry(name, Request(entry=key), dataset=dataset, split=split)
                    for name, key in entries.items()]
        return store.select(feature, request, dataset=dataset, split=split)
    except EntrySelectionError as exc:
        raise MissingFeatureError(f"{exc}{_hint_note(str(exc))}", recipe=exc.recipe) from None


def feature_entries(store: Store, feature: str, dataset: str, split: str, *, request: Request | None = None,
                    entries: dict[str, str] | None = None) -> list[EntryInfo]:
    """The entries ``feature`` (an entry or a view) is read from for a split (`read_entries`)."""
    view = view_of(feature)
    recorded = None if entries is None else {n: entries[n] for n in view.entries if n in entries}
    return read_entries(store, feature, dataset, split, request=request, entries=recorded)


def feature_source(store: Store, feature: str, chosen: list[EntryInfo], pair_keys: Sequence[str],
                   key_a: Sequence[str], key_b: Sequence[str]) -> FeatureSource:
    """The batch source of ``feature`` (an entry or a view) read from the ``chosen`` entries
    (`feature_entries`) for a split's pairs. A view combines its entries
    (`prior.layouts.views`); a plain entry is read by the layout it recorded."""
    view = view_of(feature)
    values = gather(store, chosen, pair_keys, key_a, key_b)
    fingerprint: dict[str, Any] = {e.name: e.key for e in chosen}
    main = chosen[0]
    layout: Layout | None
    if view.combine is not None and view.layout is not None:
        layout, column = view.layout, view.column or feature
        values[column] = view.combine(values, dict(view.options))
    else:
        layout = main.layout
        column = column_name(main.name, layout.component)
    table = None
    if isinstance(layout, WordIds):
        table, fingerprint["vocabulary"] = _vector_table(store, main, layout)
        fingerprint["embedding_kind"] = main.params.get("kind")  # GiBERT's injection place (emb entry)
    return source_for(layout, values, column, fingerprint, table)


def _vector_table(store: Store, entry: EntryInfo, layout: WordIds) -> tuple[np.ndarray, str]:
    """The vectors of the vocabulary resource a word-ids entry names in its parameters, with a
    zero row appended for id -1."""
    key = entry.params.get(layout.vocabulary_param)
    vectors = store.read_resource(str(key)).arrays.get(layout.array) if key else None
    if vectors is None:
        raise MissingFeatureError(f"{store.location}: entry {entry.spec} {entry.key[:12]} names no vocabulary "
                                  f"resource with a {layout.array!r} array in its parameter "
                                  f"{layout.vocabulary_param!r} ({entry.params})")
    table = np.zeros((vectors.shape[0] + 1, vectors.shape[1]), dtype=np.float32)
    table[:-1] = vectors
    return table, str(key)


def read_name(feature: str, view: str | None) -> str:
    """What a model reading ``feature`` reads when asked for ``view`` (``--dep-view``, whose
    default "dep" means none): a view registered as a variant of the feature (DAFA's
    ablations), else the feature itself."""
    if view in (None, "dep", feature):
        return feature
    variants = sorted(n for n, v in VIEWS.items() if v.variant_of == feature)
    if not variants:
        raise PriorError(f"a dep view ({view}) applies to DAFA's `dep` feature only; this model reads "
                         f"{feature!r}, which has no view variants")
    if view not in variants:
        raise PriorError(f"unknown dep view {view!r}; choose one of {', '.join(variants)}")
    return view


# --------------------------------------------------------------------------- pairs
def dataset_kind(store: Store, dataset: str) -> str:
    """The dataset a stored name was read as (``prior build --dataset mrpc --name mrpc-full``
    stores ``mrpc-full`` read as ``mrpc``): what the papers' per-dataset settings and metrics
    key on. A file's stem, or the name itself when the store does not say."""
    for seg in reversed(store.segments("pairs")):
        if seg.target["dataset"] == dataset:
            return str(seg.meta.get("reader", {}).get("dataset") or dataset)
    return dataset


def split_labels(store: Store, dataset: str, split: str) -> tuple[str, tuple[str, ...]]:
    """(label kind, class names) recorded with the split's pairs."""
    segs = store.split_segments(dataset, split)
    meta = segs[-1].meta if segs else {}
    return str(meta.get("label_kind", "class")), tuple(meta.get("labels", ()))


@dataclass
class PairData:
    """One split in memory; ``rows`` selects the pairs this object serves (subsets share arrays)."""

    dataset: str
    split: str
    pair_keys: np.ndarray
    labels: np.ndarray | None  # int64 class ids or float32 scores
    label_kind: str
    label_names: tuple[str, ...]
    encoded: Encoded
    source: FeatureSource | None
    fingerprint: dict[str, Any]
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    word_counts: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))  # (N, 2)

    def __len__(self) -> int:
        return len(self.rows)

    def subset(self, positions: np.ndarray) -> PairData:
        """The pairs at ``positions`` (indices into this object's pairs)."""
        return replace(self, rows=self.rows[np.asarray(positions, dtype=np.int64)])

    def with_features(self, mode: str, seed: int = 0) -> PairData:
        """The same pairs with the feature as stored, replaced by its neutral value
        (``neutral``: all-ones grid, full-visibility mask, zero vectors) or by another pair's
        (``shuffled``: a fixed derangement of the split's pairs, seeded by ``seed``; a lent
        feature is cut to this pair's words or filled with the neutral value). A model that
        scores the same either way does not use its feature."""
        if mode not in FEATURE_MODES:
            raise PriorError(f"unknown feature mode {mode!r}; choose one of {', '.join(FEATURE_MODES)}")
        if mode == "stored":
            return self
        if self.source is None:
            raise PriorError(f"{self.dataset}/{self.split} was read without a store feature: a model "
                             "that reads none has nothing to replace")
        donors = derangement(len(self.pair_keys), seed)
        source = self.source.perturbed(mode, self.word_counts, donors, self.encoded.lengths)
        return replace(self, source=source, fingerprint={**self.fingerprint, "features": mode})

    def batch_arrays(self, positions: np.ndarray) -> dict[str, np.ndarray]:
        """Numpy arrays of one batch, padded to its longest pair."""
        rows = self.rows[positions]
        enc = self.encoded
        T = int(enc.lengths[rows].max())
        seg, wid = enc.seg[rows, :T], enc.wid[rows, :T]
        out: dict[str, np.ndarray] = {
            "input_ids": enc.input_ids[rows, :T].astype(np.int64),
            "token_type_ids": enc.token_type_ids[rows, :T].astype(np.int64),
            "attention_mask": (np.arange(T)[None, :] < enc.lengths[rows][:, None]).astype(np.int64),
        }
        if self.source is not None:
            out[self.source.input_name] = self.source.batch(seg, wid, rows)
        if self.labels is not None:
            out["labels"] = self.labels[rows]
        return out

    def batch(self, positions: np.ndarray) -> dict[str, torch.Tensor]:
        return {k: torch.from_numpy(v) for k, v in self.batch_arrays(positions).items()}

    def order(self, shuffle: bool, seed: int = 0, epoch: int = 0, rank: int = 0,
              world: int = 1) -> np.ndarray:
        """Positions in serving order; with ``world`` > 1 each rank gets every world-th one,
        the order padded from its start to a multiple of ``world`` so every rank takes the
        same number of batches (as torch's DistributedSampler does)."""
        pos = np.arange(len(self.rows))
        if shuffle:
            pos = np.random.default_rng([seed, epoch]).permutation(pos)
        if world > 1 and len(pos) % world:
            pos = np.concatenate([pos, pos[:world - len(pos) % world]])
        return pos[rank::world]

    def batches(self, batch_size: int, *, shuffle: bool = False, seed: int = 0, epoch: int = 0,
                rank: int = 0, world: int = 1) -> Iterator[dict[str, torch.Tensor]]:
        pos = self.order(shuffle, seed, epoch, rank, world)
        for start in range(0, len(pos), batch_size):
            yield self.batch(pos[start:start + batch_size])


def _labels(raw: list[Any], kind: str, names: tuple[str, ...], dataset: str, split: str) -> np.ndarray | None:
    """Class ids (int64) or scores (float32) of a split's labels; None for an unlabelled split."""
    if kind == "score":
        return np.asarray(raw, dtype=np.float32)
    if kind != "class" or any(x is None for x in raw):
        return None
    lookup = {n: i for i, n in enumerate(names)}
    try:
        return np.asarray([lookup[x] for x in raw], dtype=np.int64)
    except KeyError as exc:
        raise DataError(f"{dataset}/{split}: label {exc.args[0]!r} is not one of {names}", field="label") from None


def load_split(store: Store, dataset: str, split: str, tokenizer: Any, *, max_length: int = 128,
               feature: str | None = None, request: Request | None = None,
               limit: int | None = None, dep_view: str | None = None,
               entries: dict[str, str] | None = None, parse: str | None = None,
               parser: str | None = None) -> PairData:
    """Read one split (and the feature a model reads, as the model input its layout names)
    from the store and tokenize it once.

    The feature's entries are the default ones, or those ``request`` picks by its ``params``
    or ``entry`` (a key prefix), or exactly the recorded ``entries`` (name → key,
    what `prior eval` passes from a checkpoint); ``dep_view`` reads a view variant of the
    feature instead (DAFA's ablations). The words are those of the feature's parse; without a
    feature, of ``parse`` (an id: what a checkpoint recorded), else of the parse of ``parser``
    (a ``--parser`` value; default: the default parser), never of "the latest" parse
    (`prior.featurestore.selection.select_parse`)."""
    read = None
    chosen: list[EntryInfo] = []
    if feature is not None:
        read = read_name(feature, dep_view)
        chosen = feature_entries(store, read, dataset, split, request=request, entries=entries)
        parse = chosen[0].parse
    elif dep_view not in (None, "dep"):
        raise PriorError(f"a dep view ({dep_view}) applies to DAFA's `dep` feature only; this model "
                         "reads no store feature")
    else:
        every = store.split_rows(dataset, split).rows
        try:
            parse = select_parse(store, every["key_a"].to_list() + every["key_b"].to_list(), parse=parse,
                                 parser=parser, dataset=dataset, split=split)
        except ParseSelectionError as exc:
            raise MissingFeatureError(str(exc), recipe=exc.recipe) from None
    # the split's rows as the store serves them to a read of this parse: checked against its
    # manifest, the pairs whose build skipped a sentence left out (and counted in `skipped`)
    served = store.split_rows(dataset, split, parse=parse)
    if served.note:
        log.warning(served.note)
    pairs = served.rows
    if limit is not None:
        pairs = pairs.head(limit)
    if pairs.height == 0:
        raise DataError(f"{store.location}: {dataset}/{split} has no pairs"
                        + (f" ({served.note})" if served.note else ""))
    key_a, key_b = pairs["key_a"].to_list(), pairs["key_b"].to_list()
    pair_keys = pairs["pair_key"].to_list()
    kind, names = split_labels(store, dataset, split)
    labels = _labels(pairs["label"].to_list(), kind, names, dataset, split)
    source = feature_source(store, read, chosen, pair_keys, key_a, key_b) if read is not None else None
    parses = store.parses(set(key_a) | set(key_b), parse=parse, columns=("words",))
    words = dict(zip(parses["sent_key"].to_list(), parses["words"].to_list()))
    missing = [k for k in set(key_a) | set(key_b) if k not in words]
    if missing:
        recipe = build_recipe(store, dataset=dataset, split=split, parse=parse,
                              features=[FeatureRecipe(feature or "sdoi")])
        raise MissingFeatureError(f"{store.location}: {len(missing)} sentences of {dataset}/{split} "
                                  f"have no parse {str(parse)[:12]}; restore them with: {render(recipe)}",
                                  recipe=recipe)
    position = {k: i for i, k in enumerate(words)}
    index_a = np.fromiter((position[k] for k in key_a), dtype=np.int64, count=len(key_a))
    index_b = np.fromiter((position[k] for k in key_b), dtype=np.int64, count=len(key_b))
    sentences = list(words.values())
    encoded = encode_indexed(tokenizer, sentences, index_a, index_b, max_length)
    parsers = store.parse_ids()
    fingerprint = {"store": store.location, "dataset": dataset, "split": split, "pairs": len(pair_keys),
                   "parse": parse, "parser": parsers.get(parse) if parse else None,
                   "entries": dict(source.fingerprint) if source else {}}
    if (read is not None and read != feature) or feature == "dep":
        fingerprint["dep_view"] = read
    sizes = np.fromiter((len(w) for w in sentences), dtype=np.int64, count=len(sentences))
    counts = np.stack([sizes[index_a], sizes[index_b]], axis=1)
    return PairData(dataset=dataset, split=split, pair_keys=np.asarray(pair_keys, dtype=object),
                    labels=labels, label_kind=kind, label_names=names, encoded=encoded,
                    source=source, fingerprint=fingerprint,
                    rows=np.arange(len(pair_keys), dtype=np.int64), word_counts=counts.reshape(-1, 2))
