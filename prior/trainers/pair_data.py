"""Pairs in memory, ready to batch: a training batch as the loader reads it
(`prior.trainers.reader`), or a whole evaluation split (`prior.trainers.data.load_split`).

A :class:`PairData` holds its pairs' word pieces (`prior.trainers.tokens.Encoded`), labels and
the batch source of the model's feature (`prior.trainers.sources`); :meth:`PairData.batch`
builds a batch with no per-pair Python work: rows of the padded arrays cut to the batch's
longest pair (per-batch padding) and the feature grid built by vectorized gathers
(`prior.trainers.grid`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from prior.errors import PriorError
from prior.trainers.sources import FEATURE_MODES, FeatureSource, derangement
from prior.trainers.tokens import Encoded


@dataclass
class PairData:
    """One split in memory; ``rows`` selects the pairs this object serves (subsets share arrays)."""

    dataset: str
    split: str
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

    def gold(self) -> np.ndarray | None:
        """The labels of the pairs served, in order (None: an unlabelled split)."""
        return None if self.labels is None else self.labels[self.rows]

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
        donors = derangement(len(self.encoded.lengths), seed)
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

    def batches(self, batch_size: int) -> Iterator[dict[str, torch.Tensor]]:
        """Batches of the pairs in order (evaluation; training batches come from the loader,
        `prior.trainers.loader`)."""
        for start in range(0, len(self.rows), batch_size):
            yield self.batch(np.arange(start, min(start + batch_size, len(self.rows))))


__all__ = ["PairData"]
