"""Scoring: a model's outputs on a split, and a saved checkpoint's metrics (`prior eval`).

A split is evaluated in stored order through the loader's reader (`prior.trainers.reader`):
whole in memory when it is no larger than a shuffle window (kept for the next epoch's dev
score), else read batch by batch, so a test split of any size is scored in bounded memory.
``prior eval --features neutral|shuffled`` reads the split whole (a shuffled feature lends
each pair another pair's).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np
import torch

from prior.errors import DataError, PriorError
from prior.featurestore import StoreRef, open_store
from prior.hints import option
from prior.layouts.views import resolve_view
from prior.progress import Progress
from prior.trainers import metrics
from prior.trainers.checkpoint import checkpoint_dir, load_checkpoint, stored_view, trained_features
from prior.trainers.dataset_ref import StoredDataset
from prior.trainers.index_cache import cached_index_split
from prior.trainers.models.base import PriorBertModel
from prior.trainers.order import DEFAULT_WINDOW
from prior.trainers.pair_data import PairData
from prior.trainers.reader import SplitReader
from prior.trainers.registry import task_for
from prior.trainers.runtime import Runtime, move_model, runtime, to_device
from prior.trainers.store_record import recorded_store


class Batches(Protocol):
    """Pairs a model can be scored on, in order: `PairData` or :class:`EvalSplit`."""

    @property
    def dataset(self) -> str: ...

    @property
    def split(self) -> str: ...

    def __len__(self) -> int: ...

    def batches(self, batch_size: int) -> Iterator[dict[str, torch.Tensor]]: ...

    def gold(self) -> np.ndarray | None: ...


@dataclass
class EvalSplit:
    """A split (or the ``positions`` of it a run holds out) scored in stored order (module
    docstring)."""

    reader: SplitReader
    positions: np.ndarray
    whole: int = DEFAULT_WINDOW
    features: str = "stored"  # or destroyed (`PairData.with_features`): then read whole
    _held: PairData | None = None

    @property
    def dataset(self) -> str:
        return self.reader.index.dataset

    @property
    def split(self) -> str:
        return self.reader.index.split

    def __len__(self) -> int:
        return len(self.positions)

    def gold(self) -> np.ndarray | None:
        labels = self.reader.index.labels
        return None if labels is None else labels[self.positions]

    @property
    def pair_keys(self) -> np.ndarray:
        """The pairs' keys, in order (read again from the store: the index keeps none)."""
        return self.reader.index.pair_keys(self.positions)

    def batches(self, batch_size: int) -> Iterator[dict[str, torch.Tensor]]:
        if len(self) <= self.whole or self.features != "stored":
            if self._held is None:
                self._held = self.reader.read(self.positions).with_features(self.features)
            yield from self._held.batches(batch_size)
            return
        for start in range(0, len(self), batch_size):
            part = self.positions[start:start + batch_size]
            yield self.reader.read(part).batch(np.arange(len(part)))


@torch.no_grad()
def predict(model: PriorBertModel, data: Batches, batch_size: int, rt: Runtime,
            progress: Progress | None = None, stage: str = "predict") -> np.ndarray:
    """Model outputs (logits (N, C) or scores (N, 1)) for every pair, in order; ``progress``
    hears ``(stage, batches done, batches, "")`` after each batch."""
    model.eval()
    outs = []
    total = math.ceil(len(data) / batch_size)
    for batch in data.batches(batch_size):
        batch.pop("labels", None)
        with rt.autocast():
            logits = model(**to_device(batch, rt.device)).logits
        outs.append(logits.float().cpu().numpy())
        if progress is not None:
            progress(stage, len(outs), total, "")
    return np.concatenate(outs) if outs else np.zeros((0, 1), dtype=np.float32)


def evaluate(model: PriorBertModel, data: Batches, batch_size: int, rt: Runtime,
             names: tuple[str, ...], progress: Progress | None = None) -> dict[str, float]:
    gold = data.gold()
    if gold is None:
        raise DataError(f"{data.dataset}/{data.split} has no labels to evaluate against")
    outputs = predict(model, data, batch_size, rt, progress, f"eval {data.split}")
    return metrics.compute(names, outputs, gold)


class CheckpointOutputs(NamedTuple):
    """A checkpoint's outputs on one split: logits (N, C) or scores (N, 1), in the order of
    ``data``'s pairs, and the metric names it is scored with."""

    outputs: np.ndarray
    data: EvalSplit
    metric_names: tuple[str, ...]


def checkpoint_outputs(checkpoint: Path | str, dataset: str | None = None, split: str = "test", *,
                       store: StoreRef | str | None = None, limit: int | None = None, batch_size: int | None = None,
                       features: str = "stored", progress: Progress | None = None,
                       view: str | None = None, device: str | None = None) -> CheckpointOutputs:
    """What :func:`evaluate_checkpoint` scores: a saved checkpoint's outputs on one split of
    the store (default: the dataset it was trained on), read from exactly the feature entries it
    was trained on (`prior.json`): a store whose entries do not hold that split is an error
    naming the build line that adds them. ``features``: as trained (``stored``; a run trained
    with its feature ``neutral`` is read so), or destroyed (``neutral``, ``shuffled``;
    `PairData.with_features`). ``view``: read this variant view of the model's
    feature instead of the one it was trained on (an ablation at test time). ``store``: where
    the split is read, a location or a `StoreRef` with its storage options; one without a
    location reaches the training store with the options the checkpoint recorded (its secrets
    supplied by the caller's options or environment, `prior.trainers.store_record`)."""
    rt = runtime(device)
    model, tokenizer, meta = load_checkpoint(checkpoint_dir(checkpoint))
    dataset = dataset or meta["dataset"]
    trained = meta["fingerprints"]["train"]
    st = open_store(recorded_store(trained, store), create=False)
    read = stored_view(meta) if view is None else resolve_view(meta["feature"], view)
    if features == "stored":
        features = trained_features(meta)
    if features != "stored" and meta["feature"] is None:
        raise PriorError(f"{meta['model']} reads no store feature: {option('features', features)} has nothing to "
                         "replace")
    index = cached_index_split(st, dataset, split, feature=meta["feature"], view=read,
                               entries=trained.get("entries") or None, limit=limit,
                               parse=None if meta["feature"] else trained.get("parse"))
    reader = SplitReader(index, tokenizer, int(meta["settings"]["max_length"]))
    data = EvalSplit(reader, np.arange(len(index)), features=features)
    move_model(model, rt.device)
    names = tuple(meta.get("metrics_names") or task_for(meta["label_kind"], meta.get("label_names") or (),
                                                        StoredDataset.resolve(st, dataset, split).read_as).metrics)
    outputs = predict(model, data, batch_size or int(meta["settings"]["batch_size"]), rt, progress, f"eval {split}")
    return CheckpointOutputs(outputs, data, names)


def evaluate_checkpoint(checkpoint: Path | str, dataset: str | None = None, split: str = "test", *,
                        store: StoreRef | str | None = None, limit: int | None = None,
                        batch_size: int | None = None, features: str = "stored",
                        progress: Progress | None = None, view: str | None = None,
                        device: str | None = None) -> dict[str, float]:
    """Metrics of a saved checkpoint on one split (:func:`checkpoint_outputs`)."""
    outputs, data, names = checkpoint_outputs(checkpoint, dataset, split, store=store, limit=limit,
                                              batch_size=batch_size, features=features, progress=progress,
                                              view=view, device=device)
    gold = data.gold()
    if gold is None:
        raise DataError(f"{data.dataset}/{data.split} has no labels to evaluate against")
    return metrics.compute(names, outputs, gold)


__all__ = ["Batches", "CheckpointOutputs", "EvalSplit", "checkpoint_outputs", "evaluate", "evaluate_checkpoint",
           "predict"]
