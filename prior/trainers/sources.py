"""Feature sources: a split's word-level feature values → batch tensors, by storage layout.

A source holds one item per pair of the split (`prior.layouts.ragged.Ragged`, aligned with the
split's rows) and builds the batch tensor its layout calls for (`prior.layouts.kinds`) with the
vectorized gathers of `prior.trainers.grid`:

- `PairMatrix` → `PairGridSource`: a (B, T, T) float grid, the stored value (+ ``shift``) on
  the A×B and B×A blocks, ``neutral`` elsewhere;
- `SentenceMask` → `MaskSource`: a block-diagonal (B, T, T) bool grid;
- `WordIds` → `VectorSource`: (B, T, E) vectors from the vocabulary's table, zero for id -1.

Each source can also be *perturbed* (`prior eval --features`): its values replaced by the
layout's neutral value, or by another pair's values.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from prior.errors import PriorError
from prior.layouts.kinds import Layout, PairMatrix, SentenceMask, WordIds
from prior.layouts.ragged import Ragged
from prior.trainers.grid import mask_grid, pair_grid, word_rows

#: how `prior eval --features` feeds a model its feature: as stored, replaced by the neutral
#: value, or by another pair's feature (a fixed derangement of the split's pairs)
FEATURE_MODES = ("stored", "neutral", "shuffled")


class FeatureSource(Protocol):
    """How one store feature becomes a batch tensor (the model input ``input_name``); ``rows``
    index the split's pairs."""

    fingerprint: dict[str, Any]
    input_name: str

    def batch(self, seg: np.ndarray, wid: np.ndarray, rows: np.ndarray) -> np.ndarray: ...

    def perturbed(self, mode: str, counts: np.ndarray, donors: np.ndarray, lengths: np.ndarray) -> FeatureSource:
        """The source with its feature destroyed: the neutral value, or another pair's values
        (``donors[i]`` lends pair i its feature, cut or filled to ``counts[i]`` = (words of A,
        words of B)); ``lengths`` are the encoded pairs' lengths."""
        ...


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


def _sides(a: Ragged, b: Ragged) -> tuple[Ragged, np.ndarray, np.ndarray]:
    """One ragged array of the A items then the B items, and where each pair's two are."""
    rows = np.arange(len(a))
    return Ragged.concat([a, b]), rows, rows + len(a)


@dataclass
class PairGridSource:
    """A multiplicative pair matrix per pair (bert-sim's S, dafa's M_F + 1) → (B, T, T) float."""

    matrices: Ragged  # item i: pair i's n×m matrix, ``shift`` already added
    fingerprint: dict[str, Any]
    neutral: float = 1.0
    input_name: str = PairMatrix.input_name

    def __post_init__(self) -> None:
        self.matrices = self.matrices.with_fill(self.neutral)  # once per split

    def batch(self, seg: np.ndarray, wid: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return pair_grid(seg, wid, self.matrices, rows, neutral=self.neutral)

    def perturbed(self, mode: str, counts: np.ndarray, donors: np.ndarray, lengths: np.ndarray) -> PairGridSource:
        """Every pair's matrix the neutral value (``neutral``) or another pair's, cut or filled
        with the neutral value to this pair's n × m words (``shuffled``)."""
        mats = [np.full((int(n), int(m)), self.neutral, np.float32) if mode == "neutral" else
                _fit(self.matrices.get(int(d)), (int(n), int(m)), self.neutral)
                for (n, m), d in zip(counts, donors)]
        return replace(self, matrices=Ragged.from_arrays(mats, np.float32),
                       fingerprint={**self.fingerprint, "perturbed": mode})


@dataclass
class MaskSource:
    """Per-sentence masks (SG-Net's SDOI) → a block-diagonal (B, T, T) bool grid. With
    ``full_lengths`` (the neutral mask; the split's encoded lengths) every real piece sees
    every real piece, as in plain self-attention, and padding sees itself."""

    masks: Ragged  # the split's A masks, then its B masks
    index_a: np.ndarray
    index_b: np.ndarray
    fingerprint: dict[str, Any]
    full_lengths: np.ndarray | None = None
    input_name: str = SentenceMask.input_name

    def __post_init__(self) -> None:
        self.masks = self.masks.with_fill(0)  # 0: not allowed, once per split

    def batch(self, seg: np.ndarray, wid: np.ndarray, rows: np.ndarray) -> np.ndarray:
        if self.full_lengths is not None:
            T = seg.shape[1]
            real = np.arange(T)[None, :] < self.full_lengths[rows][:, None]  # (B, T)
            full: np.ndarray = (real[:, :, None] & real[:, None, :]) | np.eye(T, dtype=bool)  # (B, T, T)
            return full
        return mask_grid(seg, wid, self.masks, self.index_a[rows], self.index_b[rows])

    def perturbed(self, mode: str, counts: np.ndarray, donors: np.ndarray, lengths: np.ndarray) -> MaskSource:
        """The full mask (``neutral``) or each sentence's mask taken from the same side of
        another pair, cut or filled (visible) to this sentence's words (``shuffled``)."""
        fingerprint = {**self.fingerprint, "perturbed": mode}
        if mode == "neutral":
            return replace(self, full_lengths=np.asarray(lengths), fingerprint=fingerprint)
        a = [_fit(self.masks.get(int(self.index_a[d])), (int(n), int(n)), 1) for (n, _), d in zip(counts, donors)]
        b = [_fit(self.masks.get(int(self.index_b[d])), (int(m), int(m)), 1) for (_, m), d in zip(counts, donors)]
        masks, index_a, index_b = _sides(Ragged.from_arrays(a, np.uint8), Ragged.from_arrays(b, np.uint8))
        return replace(self, masks=masks, index_a=index_a, index_b=index_b, fingerprint=fingerprint)


@dataclass
class VectorSource:
    """Per-sentence vocabulary ids + a vector table (GiBERT) → (B, T, E) vectors.

    ``table`` has one extra last row of zeros: id -1 (out of vocabulary, special tokens,
    padding) reads it. A zero vector is not "nothing" once trained: GiBERT's projection turns it
    into tanh(b_P), one learned constant injected (through the gate) at every such piece
    (docs/papers.md, GiBERT).
    """

    ids: Ragged  # the split's A id vectors, then its B id vectors
    index_a: np.ndarray
    index_b: np.ndarray
    table: np.ndarray  # (V + 1, E) float32, last row zeros
    fingerprint: dict[str, Any]
    input_name: str = WordIds.input_name

    @property
    def width(self) -> int:
        """The vectors' size E."""
        return int(self.table.shape[1])

    def batch(self, seg: np.ndarray, wid: np.ndarray, rows: np.ndarray) -> np.ndarray:
        ids = word_rows(seg, wid, self.ids, self.index_a[rows], self.index_b[rows], missing=-1)
        vectors: np.ndarray = self.table[ids]  # (B, T, E); -1 → zero row
        return vectors

    def perturbed(self, mode: str, counts: np.ndarray, donors: np.ndarray, lengths: np.ndarray) -> VectorSource:
        """Zero vectors for every word (``neutral``: id -1) or each sentence's word ids taken
        from the same side of another pair, cut or filled with -1 (``shuffled``)."""
        def side(index: np.ndarray, sizes: np.ndarray) -> Ragged:
            return Ragged.from_arrays([np.full(int(n), -1, np.int32) if mode == "neutral" else
                                       _fit(self.ids.get(int(index[d])).astype(np.int32), (int(n),), -1)
                                       for n, d in zip(sizes, donors)], np.int32)

        ids, index_a, index_b = _sides(side(self.index_a, counts[:, 0]), side(self.index_b, counts[:, 1]))
        return replace(self, ids=ids, index_a=index_a, index_b=index_b,
                       fingerprint={**self.fingerprint, "perturbed": mode})


def source_for(layout: Layout, values: dict[str, Ragged], column: str, fingerprint: dict[str, Any],
               table: np.ndarray | None = None) -> FeatureSource:
    """The source of a feature read with ``layout``: ``values`` holds one item per pair of the
    split under ``column`` (pair layouts) or ``column + "_a"`` / ``"_b"`` (sentence layouts);
    ``table`` is a `WordIds` layout's vectors (one zero row appended)."""
    if isinstance(layout, PairMatrix):
        matrices = values[column]
        if layout.shift:  # shifted and filled in one copy (`Ragged.with_fill`'s layout)
            flat = np.empty(len(matrices.values) + 1, dtype=np.float32)
            flat[0] = layout.neutral
            np.add(matrices.values, np.float32(layout.shift), out=flat[1:], dtype=np.float32)
            matrices = Ragged(flat, matrices.offsets + 1, matrices.rows, matrices.cols, padded=True)
        return PairGridSource(matrices, fingerprint, neutral=layout.neutral)
    if isinstance(layout, SentenceMask):
        return MaskSource(*_sides(values[f"{column}_a"], values[f"{column}_b"]), fingerprint)
    if isinstance(layout, WordIds):
        if table is None:
            raise PriorError(f"a {layout.kind} feature needs its vocabulary's vectors")
        return VectorSource(*_sides(values[f"{column}_a"], values[f"{column}_b"]), table, fingerprint)
    raise PriorError(f"no model input is built from a {layout.kind} layout (column {column}); "
                     "read it through a view that combines it into one of: "
                     f"{PairMatrix.kind}, {SentenceMask.kind}, {WordIds.kind}")
