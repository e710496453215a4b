"""The loader: a split's pairs, labels, word pieces and word-level features, from the store.

:func:`load_split` reads the store once (pairs, the parse's words, the feature entry as
flat in-memory arrays — ``FeatureData``) and tokenizes every pair once with the fast
tokenizer, ``tokenizer(words_a, words_b, is_split_into_words=True, truncation=...)``, so that
``word_ids`` map each word piece to the stored word index. :meth:`PairData.batch` then builds a
batch with no per-pair Python work: rows of padded arrays cut to the batch's longest pair
(per-batch padding) and the feature grid built by vectorized gathers (trainers/grid.py).

Truncation is ``longest_first`` to ``max_length``: it drops word pieces from the end of the
longer sentence; every kept piece keeps its word index, so a feature is cut exactly as the
input is (a word whose pieces are partly cut keeps its value on the pieces that remain).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import torch

from featurestore import Store
from featurestore.errors import DataError, NotFoundError, PriorError
from featurestore.selection import EntrySelectionError, build_command
from featurestore.store import EntryInfo, FeatureData
from featurestore.views import dafa_matrix, dep_switches
from trainers.grid import FlatMatrices, FrontPadded, mask_grid, pair_grid, token_positions, word_rows

log = logging.getLogger(__name__)


class MissingFeatureError(PriorError, LookupError):
    """The store lacks a feature (or some of its keys) that a model needs."""


def _emb_note(feature: str) -> str:
    return ("\n(EMB_FILE: word2vec .txt/.bin, GloVe or fastText .vec, e.g. from "
            "`prior embed train --contexts dep --out EMB_FILE`)" if feature == "emb" else "")


# --------------------------------------------------------------------------- tokens
@dataclass(frozen=True)
class Encoded:
    """A split tokenized once: (N, L) arrays padded to the longest pair, and lengths."""

    input_ids: np.ndarray  # int32 (N, L)
    token_type_ids: np.ndarray  # int8 (N, L)
    lengths: np.ndarray  # int32 (N,)
    seg: np.ndarray  # int8 (N, L): 0 = A, 1 = B, -1 = special/pad
    wid: np.ndarray  # int32 (N, L): word index in its sentence, -1 = special/pad


def encode_pairs(tokenizer: Any, words_a: Sequence[Sequence[str]], words_b: Sequence[Sequence[str]],
                 max_length: int, chunk: int = 2048) -> Encoded:
    """Tokenize pairs of word lists with a fast tokenizer, keeping each piece's word index."""
    if not getattr(tokenizer, "is_fast", False):
        raise PriorError(f"{type(tokenizer).__name__} is not a fast tokenizer: word_ids are needed "
                         "to align word-level features; use a backbone with a tokenizer.json")
    ids: list[list[int]] = []
    types: list[list[int]] = []
    positions: list[tuple[np.ndarray, np.ndarray]] = []
    for start in range(0, len(words_a), chunk):
        a = [list(w) for w in words_a[start:start + chunk]]
        b = [list(w) for w in words_b[start:start + chunk]]
        enc = tokenizer(a, b, is_split_into_words=True, truncation="longest_first",
                        max_length=max_length, return_token_type_ids=True)
        for i in range(len(a)):
            row = enc["input_ids"][i]
            ids.append(row)
            types.append(enc["token_type_ids"][i])
            positions.append(token_positions(enc.word_ids(i), enc.sequence_ids(i), len(row)))
    n = len(ids)
    lengths = np.array([len(r) for r in ids], dtype=np.int32)
    L = int(lengths.max()) if n else 0
    input_ids = np.full((n, L), tokenizer.pad_token_id or 0, dtype=np.int32)
    token_type_ids = np.zeros((n, L), dtype=np.int8)
    seg = np.full((n, L), -1, dtype=np.int8)
    wid = np.full((n, L), -1, dtype=np.int32)
    for i, (row, tt, (s, w)) in enumerate(zip(ids, types, positions)):
        k = len(row)
        input_ids[i, :k] = row
        token_type_ids[i, :k] = tt
        seg[i, :k] = s
        wid[i, :k] = w
    return Encoded(input_ids, token_type_ids, lengths, seg, wid)


# --------------------------------------------------------------------------- features
class FeatureSource(Protocol):
    """How one store feature becomes batch tensors; ``rows`` index the split's pairs."""

    name: str
    fingerprint: dict[str, Any]

    def batch(self, seg: np.ndarray, wid: np.ndarray, rows: np.ndarray) -> dict[str, np.ndarray]: ...

    def perturbed(self, mode: str, counts: np.ndarray, donors: np.ndarray, lengths: np.ndarray) -> FeatureSource:
        """The source with its feature destroyed: the neutral value, or another pair's values
        (``donors[i]`` lends pair i its feature, cut or filled to ``counts[i]`` = (words of A,
        words of B)); ``lengths`` are the encoded pairs' lengths."""
        ...


def _flat(data: FeatureData, component: str) -> FlatMatrices:
    cols = data.cols[component].astype(np.int64)
    return FlatMatrices(values=data.flat[component], offsets=data.offsets[component].astype(np.int64),
                        rows=data.rows[component].astype(np.int64), cols=np.where(cols < 0, 1, cols))


#: how `prior eval --features` feeds a model its feature: as stored, replaced by the neutral
#: value, or by another pair's feature (a fixed derangement of the split's pairs)
FEATURE_MODES = ("stored", "neutral", "shuffled")


def derangement(n: int, seed: int = 0) -> np.ndarray:
    """A fixed permutation of ``n`` items in which no item keeps its place (n > 1): item
    ``order[k]`` takes the place of ``order[k + 1]`` in a seeded random order."""
    order = np.random.default_rng(seed).permutation(n)
    out = np.empty(n, dtype=np.int64)
    out[order] = np.roll(order, -1)
    return out


def _fit(donor: np.ndarray, shape: tuple[int, ...], fill: float) -> np.ndarray:
    """``donor``'s values on a ``shape`` array: its overlapping corner, ``fill`` beyond it."""
    out = np.full(shape, fill, dtype=donor.dtype)
    corner = tuple(slice(0, min(a, b)) for a, b in zip(shape, donor.shape))
    out[corner] = donor[corner]
    return out


@dataclass
class PairGridSource:
    """A multiplicative pair matrix (bert-sim's S, dafa's M_F + 1) → ``prior_grid``."""

    name: str
    matrices: FlatMatrices | FrontPadded
    index: np.ndarray  # (N,) item of each split row in ``matrices``
    fingerprint: dict[str, Any]
    neutral: float = 1.0

    def __post_init__(self) -> None:
        self.matrices = FrontPadded.of(self.matrices, self.neutral)  # once per split

    def batch(self, seg: np.ndarray, wid: np.ndarray, rows: np.ndarray) -> dict[str, np.ndarray]:
        return {"prior_grid": pair_grid(seg, wid, self.matrices, self.index[rows], neutral=self.neutral)}

    def perturbed(self, mode: str, counts: np.ndarray, donors: np.ndarray, lengths: np.ndarray) -> PairGridSource:
        """Every pair's matrix the neutral 1 (``neutral``) or another pair's, cut or filled with
        1 to this pair's n × m words (``shuffled``; ``donors[i]`` gives pair i its matrix)."""
        mats = [np.full((int(n), int(m)), self.neutral, np.float32) if mode == "neutral" else
                _fit(self.matrices.get(int(self.index[d])), (int(n), int(m)), self.neutral)
                for (n, m), d in zip(counts, donors)]
        return replace(self, matrices=FlatMatrices.from_list(mats, np.float32), index=np.arange(len(mats)),
                       fingerprint={**self.fingerprint, "perturbed": mode})


@dataclass
class MaskSource:
    """Per-sentence masks (SG-Net's SDOI) → ``sdoi_mask``. With ``full_lengths`` (the neutral
    mask; the split's encoded lengths) every real piece sees every real piece, as in plain
    self-attention, and padding sees itself."""

    name: str
    masks: FlatMatrices | FrontPadded
    index_a: np.ndarray
    index_b: np.ndarray
    fingerprint: dict[str, Any]
    full_lengths: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.masks = FrontPadded.of(self.masks, 0)  # 0: not allowed, once per split

    def batch(self, seg: np.ndarray, wid: np.ndarray, rows: np.ndarray) -> dict[str, np.ndarray]:
        if self.full_lengths is not None:
            T = seg.shape[1]
            real = np.arange(T)[None, :] < self.full_lengths[rows][:, None]  # (B, T)
            return {"sdoi_mask": (real[:, :, None] & real[:, None, :]) | np.eye(T, dtype=bool)}
        return {"sdoi_mask": mask_grid(seg, wid, self.masks, self.index_a[rows], self.index_b[rows])}

    def perturbed(self, mode: str, counts: np.ndarray, donors: np.ndarray, lengths: np.ndarray) -> MaskSource:
        """The full mask (``neutral``) or each sentence's mask taken from the same side of
        another pair, cut or filled (visible) to this sentence's words (``shuffled``)."""
        fingerprint = {**self.fingerprint, "perturbed": mode}
        if mode == "neutral":
            return replace(self, full_lengths=np.asarray(lengths), fingerprint=fingerprint)
        masks = []
        for (n, m), d in zip(counts, donors):
            masks.append(_fit(self.masks.get(int(self.index_a[d])), (int(n), int(n)), 1))
            masks.append(_fit(self.masks.get(int(self.index_b[d])), (int(m), int(m)), 1))
        rows = np.arange(len(counts))
        return replace(self, masks=FlatMatrices.from_list(masks, np.uint8), index_a=2 * rows,
                       index_b=2 * rows + 1, fingerprint=fingerprint)


@dataclass
class VectorSource:
    """Per-sentence vocabulary ids + a vector table (GiBERT) → ``word_vectors``.

    ``table`` has one extra last row of zeros: id -1 (out of vocabulary, special tokens,
    padding) reads it, so those pieces inject nothing.
    """

    name: str
    ids: FlatMatrices
    index_a: np.ndarray
    index_b: np.ndarray
    table: np.ndarray  # (V + 1, E) float32, last row zeros
    fingerprint: dict[str, Any]

    def batch(self, seg: np.ndarray, wid: np.ndarray, rows: np.ndarray) -> dict[str, np.ndarray]:
        ids = word_rows(seg, wid, self.ids, self.index_a[rows], self.index_b[rows], missing=-1)
        return {"word_vectors": self.table[ids]}  # (B, T, E); -1 → zero row

    def perturbed(self, mode: str, counts: np.ndarray, donors: np.ndarray, lengths: np.ndarray) -> VectorSource:
        """Zero vectors for every word (``neutral``: id -1) or each sentence's word ids taken
        from the same side of another pair, cut or filled with -1 (``shuffled``)."""
        ids = []
        for (n, m), d in zip(counts, donors):
            for size, item in ((n, self.index_a[d]), (m, self.index_b[d])):
                own = np.full((int(size), 1), -1, np.int32)
                ids.append(own if mode == "neutral" else _fit(self.ids.get(int(item)).astype(np.int32),
                                                              (int(size), 1), -1))
        rows = np.arange(len(counts))
        return replace(self, ids=FlatMatrices.from_list(ids, np.int32), index_a=2 * rows, index_b=2 * rows + 1,
                       fingerprint={**self.fingerprint, "perturbed": mode})


def read_entries(store: Store, feature: str, dataset: str, split: str, *,
                 params: dict[str, Any] | None = None, entry: str | None = None,
                 entries: dict[str, str] | None = None) -> list[EntryInfo]:
    """The store entries a model's feature is read from for one split: the feature's default
    entry, or the one ``params`` or ``entry`` (a key prefix) pick (`featurestore.selection`),
    or exactly the ``entries`` (name → key) a checkpoint recorded. Each must hold every pair of
    the split; otherwise `MissingFeatureError` with the candidates or the `prior build` line
    that adds what is missing."""
    try:
        if entries:
            return [store.find_entry(name, entry=key, dataset=dataset, split=split)
                    for name, key in entries.items()]
        return store.select(feature, dataset=dataset, split=split, params=params, entry=entry)
    except EntrySelectionError as exc:
        raise MissingFeatureError(f"{exc}{_emb_note(feature)}") from None


def _positions(data: FeatureData, keys: Sequence[str]) -> np.ndarray:
    pos = data.positions(list(keys))
    if (pos < 0).any():  # selection checked the split is held: only a concurrent gc gets here
        raise MissingFeatureError(f"entry {data.entry.spec} ({data.entry.key}) lost "
                                  f"{int((pos < 0).sum())} of its items while being read; read again")
    return pos


def _vector_table(store: Store, entry: Any) -> tuple[np.ndarray, str]:
    """The vectors of the vocabulary resource an ``emb`` entry names in its parameters."""
    for name, value in sorted(entry.params.items()):
        if isinstance(value, str) and len(value) == 32 and ("vocab" in name or "resource" in name
                                                             or name.endswith("key")):
            try:
                res = store.read_resource(value)
            except NotFoundError:
                continue
            vectors = res.arrays.get("vectors")
            if vectors is not None:
                table = np.zeros((vectors.shape[0] + 1, vectors.shape[1]), dtype=np.float32)
                table[:-1] = vectors
                return table, value
    raise MissingFeatureError(f"{store.location}: the emb entry {entry.key} names no vocabulary "
                              f"resource with a 'vectors' array in its parameters {entry.params}")


#: the store entries each model feature is read from (a view may join several)
FEATURE_ENTRIES = {"wup": ("wup",), "dep": ("dep", "tfidf"), "sdoi": ("sdoi",), "emb": ("emb",)}


def feature_source(store: Store, feature: str, dataset: str, split: str, key_a: Sequence[str],
                   key_b: Sequence[str], pair_keys: Sequence[str],
                   params: dict[str, Any] | None = None, dep_view: str = "dep",
                   entries: dict[str, str] | None = None, entry: str | None = None
                   ) -> tuple[FeatureSource, str | None]:
    """The source of one store feature for a split's pairs, and the parse it was computed on.

    The entries come from :func:`read_entries` (``params`` or recorded ``entries``).
    ``dep_view`` picks DAFA's matrix or one of its ablations (``dep-no-tfidf``, …; see
    `featurestore.views.DEP_VIEWS`), computed from the same stored components."""
    if dep_view != "dep" and feature != "dep":
        raise PriorError(f"a dep view ({dep_view}) applies to DAFA's `dep` feature only; this model "
                         f"reads {feature!r}")
    if feature not in FEATURE_ENTRIES:
        raise PriorError(f"unknown store feature {feature!r}; known: {', '.join(sorted(FEATURE_ENTRIES))}")
    switches = dep_switches(dep_view) if feature == "dep" else {}
    recorded = None if entries is None else {n: entries[n] for n in FEATURE_ENTRIES[feature] if n in entries}
    chosen = read_entries(store, feature, dataset, split, params=params, entry=entry, entries=recorded)
    entry = chosen[0]
    fp = {e.name: e.key for e in chosen}
    data = store.load_feature(entry)
    if feature == "wup":
        return PairGridSource("wup", _flat(data, "wup"), _positions(data, pair_keys), fp), entry.parse
    if feature == "dep":
        tf = store.load_feature(chosen[1])
        pos, pa, pb = _positions(data, pair_keys), _positions(tf, key_a), _positions(tf, key_b)
        # M_F + 1 per pair, combined once per split ("adding 1": the neutral value is 1)
        mats = [dafa_matrix(data.array("trigram", int(p)), data.array("subgraph", int(p)),
                            tf.array("tfidf", int(a)), tf.array("tfidf", int(b)), **switches) + np.float32(1.0)
                for p, a, b in zip(pos, pa, pb)]
        return (PairGridSource("dep", FlatMatrices.from_list(mats, np.float32),
                               np.arange(len(mats)), fp), entry.parse)
    if feature == "sdoi":
        return MaskSource("sdoi", _flat(data, "sdoi"), _positions(data, key_a), _positions(data, key_b),
                          fp), entry.parse
    component = entry.components[0]
    table, vocab = _vector_table(store, entry)
    return VectorSource("emb", _flat(data, component), _positions(data, key_a), _positions(data, key_b),
                        table, fp | {"vocabulary": vocab}), entry.parse


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
    segs = [s for s in store.segments("pairs")
            if s.target["dataset"] == dataset and s.target["split"] == split]
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
            out.update(self.source.batch(seg, wid, rows))
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


def load_split(store: Store, dataset: str, split: str, tokenizer: Any, *, max_length: int = 128,
               feature: str | None = None, feature_params: dict[str, Any] | None = None,
               feature_entry: str | None = None, limit: int | None = None, dep_view: str = "dep",
               entries: dict[str, str] | None = None) -> PairData:
    """Read one split (and the feature the model needs) from the store and tokenize it once.

    The feature's entry is the default one, or the one ``feature_params`` or ``feature_entry``
    (a key prefix) pick, or exactly the recorded ``entries`` (name → key, what `prior eval`
    passes from a checkpoint)."""
    pairs = store.pairs(dataset, split)
    if limit is not None:
        pairs = pairs.head(limit)
    if pairs.height == 0:
        raise DataError(f"{store.location}: {dataset}/{split} has no pairs")
    key_a, key_b = pairs["key_a"].to_list(), pairs["key_b"].to_list()
    pair_keys = pairs["pair_key"].to_list()
    kind, names = split_labels(store, dataset, split)
    labels: np.ndarray | None = None
    raw = pairs["label"].to_list()
    if kind == "score":
        labels = np.asarray(raw, dtype=np.float32)
    elif kind == "class" and all(x is not None for x in raw):
        lookup = {n: i for i, n in enumerate(names)}
        try:
            labels = np.asarray([lookup[x] for x in raw], dtype=np.int64)
        except KeyError as exc:
            raise DataError(f"{dataset}/{split}: label {exc.args[0]!r} is not one of {names}",
                            field="label") from None

    source: FeatureSource | None = None
    parse: str | None = None
    if feature is not None:
        source, parse = feature_source(store, feature, dataset, split, key_a, key_b, pair_keys,
                                       feature_params, dep_view, entries, feature_entry)
    parses = store.parses(set(key_a) | set(key_b), parse=parse, columns=("words",))
    words = dict(zip(parses["sent_key"].to_list(), parses["words"].to_list()))
    missing = [k for k in set(key_a) | set(key_b) if k not in words]
    if missing:
        command = build_command(store, dataset=dataset, split=split, parse=parse,
                                feature_args=["--features", feature or "sdoi"])
        raise MissingFeatureError(f"{store.location}: {len(missing)} sentences of {dataset}/{split} "
                                  f"have no parse {parse or '(latest)'}; run\n  {command}")
    encoded = encode_pairs(tokenizer, [words[k] for k in key_a], [words[k] for k in key_b], max_length)
    parsers = store.parse_ids()
    used = parse or (list(parsers)[-1] if parsers else None)  # store.parses' "latest"
    fingerprint = {"store": store.location, "dataset": dataset, "split": split, "pairs": len(pair_keys),
                   "parse": used, "parser": parsers.get(used) if used else None,
                   "entries": dict(source.fingerprint) if source else {}}
    if feature == "dep":
        fingerprint["dep_view"] = dep_view
    counts = np.array([[len(words[a]), len(words[b])] for a, b in zip(key_a, key_b)], dtype=np.int64)
    return PairData(dataset=dataset, split=split, pair_keys=np.asarray(pair_keys, dtype=object),
                    labels=labels, label_kind=kind, label_names=names, encoded=encoded,
                    source=source, fingerprint=fingerprint,
                    rows=np.arange(len(pair_keys), dtype=np.int64), word_counts=counts.reshape(-1, 2))
