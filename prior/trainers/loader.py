"""The training loader: a split's batches, read from the store as the run goes, in background
workers, in an order that depends on the seed and the epoch alone.

:class:`TrainStream` is a ``torch.utils.data.IterableDataset`` over a whole run, from a start
:class:`Position` (an epoch and its next global batch: 0 for a new run, a saved position for a
resumed one) to the last epoch. Each global batch is `prior.trainers.order`'s: the epoch's order
cut in batches of the global batch size, this rank's share of it. Batch ``t`` of the run (counted
from the start position) is made by loader worker ``t mod workers``; ``torch.utils.data.DataLoader``
asks its workers in that same round and hands the batches on in order, so the sequence is the
same with 0, 1 or 8 workers. Each worker reads what its batches need through its own
`prior.trainers.reader.SplitReader` (bounded caches: a shuffle window's pieces, the split's
sentences' word pieces) and builds the batch tensors there, ahead of the model:
``prefetch`` batches per worker.

A :class:`TrainBatch` carries the batch's arrays, each pair's loss weight
(`prior.trainers.order.RankBatch`), where it is in the run (epoch, batch) and how long the worker
took to make it. Workers hand it on as numpy arrays, pickled through the DataLoader's pipe: a
tensor would cross through a shared-memory file and a socket per tensor, which costs the training
process about four times as much per batch; the loop takes them as tensors without a copy. The
pipe they cross is widened so that a batch goes through in one or two writes, not eight
(`prior.trainers.pipes`).
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from prior.errors import PriorError
from prior.hints import option
from prior.trainers.order import (
    DEFAULT_PIECE,
    DEFAULT_WINDOW,
    LANES,
    Shuffle,
    batches_per_epoch,
    lane_batches,
    lane_count,
    rank_batch,
    served_batch,
    windowed_order,
)
from prior.trainers.pair_data import PairData
from prior.trainers.pipes import widen_results
from prior.trainers.reader import SplitReader


@dataclass(frozen=True)
class LoaderSettings:
    """How the loader runs; none of it changes the order or the batches (but ``window`` and
    ``piece``, which are part of the order: `prior.trainers.order.Shuffle`)."""

    workers: int = 2  # background worker processes (0: batches made in the training process)
    prefetch: int = 4  # batches each worker makes ahead
    window: int = DEFAULT_WINDOW  # pairs shuffled together
    piece: int = DEFAULT_PIECE  # consecutive pairs read together
    lanes: int = LANES

    def __post_init__(self) -> None:
        if self.workers < 0 or self.prefetch < 1:
            raise PriorError(f"the loader needs 0 or more workers ({self.workers}) and a prefetch of 1 or more "
                             f"({self.prefetch})")
        if self.workers > 1 and self.lanes % self.workers:
            divisors = ", ".join(str(d) for d in range(1, self.lanes + 1) if self.lanes % d == 0)
            raise PriorError(f"{option('workers', str(self.workers))}: the loader serves a large split in {self.lanes} "
                             f"lanes, one worker's each; give a number of workers that divides it ({divisors})")

    def shuffle(self, seed: int) -> Shuffle:
        """The order's parameters (a window smaller than a piece is one piece)."""
        return Shuffle(seed, self.window, min(self.piece, self.window), self.lanes)


@dataclass(frozen=True)
class Position:
    """Where a run is in its data: the next global batch ``batch`` of epoch ``epoch``."""

    epoch: int = 0
    batch: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class TrainBatch:
    """One rank's batch of one optimizer step (module docstring)."""

    epoch: int
    batch: int
    arrays: dict[str, Any]  # model input name → numpy array (or tensor)
    weights: np.ndarray  # float32 (pairs,): 1, or 0 for a stand-in pair
    global_pairs: int  # real pairs of the step over every rank
    seconds: float = 0.0  # what making it took its worker
    skip: bool = False  # a place holder that keeps the workers' round (no step)
    positions: np.ndarray | None = None  # the pairs' positions in the split, in batch order

    @property
    def pairs(self) -> int:
        return int(np.asarray(self.weights).sum())

    @property
    def tensors(self) -> dict[str, torch.Tensor]:
        """The arrays as tensors (the same memory)."""
        return {k: v if torch.is_tensor(v) else torch.from_numpy(v) for k, v in self.arrays.items()}

    def pin_memory(self) -> TrainBatch:  # DataLoader(pin_memory=True) calls this, in its own thread
        return replace(self, arrays={k: v.pin_memory() for k, v in self.tensors.items()})


class TrainStream(IterableDataset[TrainBatch]):
    """The run's batches for one rank (module docstring). ``subset``: the split positions
    trained on, when not all of them (a held-out dev part or a sample removed); the order
    then permutes the subset."""

    def __init__(self, reader: SplitReader, *, batch_size: int, shuffle: Shuffle, epochs: int,
                 start: Position = Position(), rank: int = 0, world: int = 1,
                 subset: np.ndarray | None = None) -> None:
        super().__init__()
        self.reader, self.batch_size, self.shuffle, self.epochs = reader, batch_size, shuffle, epochs
        self.start, self.rank, self.world, self.subset = start, rank, world, subset
        self._windows: dict[int, tuple[tuple[int, int], np.ndarray, PairData]] = {}  # lane → its window's data
        self._started: set[int] = set()  # lanes that served a batch in this run

    def __len__(self) -> int:  # pairs trained on per epoch
        return len(self.reader.index) if self.subset is None else len(self.subset)

    @property
    def steps_per_epoch(self) -> int:
        return batches_per_epoch(len(self), self.batch_size)

    def order(self, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        """Split positions of ``epoch`` in serving order, and where its windows start."""
        order, bounds = windowed_order(len(self), self.shuffle, epoch, self.batch_size)
        return (order if self.subset is None else self.subset[order]), bounds

    def __iter__(self) -> Iterator[TrainBatch]:
        """This worker's batches of the run: step ``t`` of an epoch is made by worker ``t mod
        workers``, which owns lane ``t mod lanes`` (`prior.trainers.order`). Each epoch's steps
        are served from a multiple of the worker count and up to one, so that ownership holds
        in every epoch and after a resume: the steps outside the epoch come as place holders
        (:attr:`TrainBatch.skip`) that the loop passes over."""
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        self._windows, self._started = {}, set()
        steps = self.steps_per_epoch
        for epoch in range(self.start.epoch, self.epochs):
            order, bounds = self.order(epoch)
            lanes = lane_count(len(self), self.shuffle)
            first = self.start.batch if epoch == self.start.epoch else 0
            for t in range(first - first % workers, steps + (-steps) % workers):
                if t % workers != worker:
                    continue
                if t < first or t >= steps:
                    yield TrainBatch(epoch, t, {}, np.zeros(0, np.float32), 0, skip=True)
                    continue
                yield self.make(order, bounds, epoch, t, served_batch(t, steps, lanes), t % lanes)
        self._windows = {}

    def make(self, order: np.ndarray, bounds: np.ndarray, epoch: int, step: int, b: int = -1,
             lane: int = 0) -> TrainBatch:
        """Step ``step`` of ``epoch``: this rank's share of global batch ``b`` (default:
        ``step``) of the epoch's ``order`` (windows starting at ``bounds``), from the pairs of
        its window, read once per lane (every batch of the window that lane serves takes its
        pairs from there), or read for itself where it straddles two windows. A lane's first batch
        of the run is read for itself too, before the lane's window: the first batch waits for
        its own pairs, not for a whole window (the same arrays either way)."""
        t0 = time.perf_counter()
        b = step if b < 0 else b
        share = rank_batch(order, b, self.batch_size, self.rank, self.world)
        lo, hi = b * self.batch_size, min((b + 1) * self.batch_size, len(order))
        w = int(np.searchsorted(bounds, lo, side="right")) - 1
        first_of_lane = lane not in self._started
        self._started.add(lane)
        if hi <= bounds[w + 1] and not (first_of_lane and hi - lo < bounds[w + 1] - bounds[w]):
            # the lane's part of the window: lanes meet inside a window, and each reads its own part
            lanes = lane_count(len(order), self.shuffle)
            first, end = lane_batches(lane, self.steps_per_epoch, lanes)
            part = order[max(bounds[w], first * self.batch_size):min(bounds[w + 1], end * self.batch_size)]
            positions, window = self._window_data(lane, (epoch, w), part)
            arrays = window.batch_arrays(np.searchsorted(positions, share.positions))
        else:  # straddling two windows, or a lane's first batch (made before its window is read,
            # and before whole parse segments are numbered for it)
            arrays = self.reader.read(share.positions, keep=False).batch_arrays(np.arange(len(share.positions)))
        return TrainBatch(epoch, step, arrays, share.weights, share.global_size, time.perf_counter() - t0,
                          positions=share.positions)

    def _window_data(self, lane: int, key: tuple[int, int], window: np.ndarray) -> tuple[np.ndarray, PairData]:
        """The pairs of a lane's window ``key`` (epoch, window), its positions sorted and their
        data: read when the lane moves to another window, or when another epoch's window holds
        other pairs (a split of one window is read once for the whole run)."""
        held = self._windows.get(lane)
        if held is not None and held[0] == key:
            return held[1], held[2]
        positions = np.sort(window)
        if held is None or not np.array_equal(held[1], positions):
            self._windows.pop(lane, None)  # the old window goes before the new one is read
            held = (key, positions, self.reader.read(positions))
        self._windows[lane] = (key, held[1], held[2])
        return held[1], held[2]


def _as_made(batch: Any) -> Any:
    """No collation: a batch is made whole, and crosses to the loop as numpy arrays."""
    return batch


def _worker_init(_: int) -> None:
    """A loader worker uses one thread: the batches are numpy work, the cores the workers'."""
    torch.set_num_threads(1)


def run_batches(stream: TrainStream, settings: LoaderSettings, *, pin_memory: bool = False) -> Iterator[TrainBatch]:
    """The stream's batches, made by ``settings.workers`` background workers (none: in this
    process), in the stream's order."""
    if settings.workers <= 0:
        return iter(stream)
    # the tokenizer's own threads must not be live across the workers' fork (and say so once)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    stream.reader.check_shards()  # on an object store, once here rather than once per worker
    loader = DataLoader(stream, batch_size=None, num_workers=settings.workers, prefetch_factor=settings.prefetch,
                        worker_init_fn=_worker_init, pin_memory=pin_memory, collate_fn=_as_made)
    # the objects alive now move out of the collector's reach while the workers fork: a forked
    # worker's collections would otherwise write to every object's header and copy the pages
    # it shares with this process (a worker's private memory)
    gc.freeze()
    try:
        batches = iter(loader)
    finally:
        gc.unfreeze()
    widen_results(batches)  # a batch in one or two writes, not eight (prior.trainers.pipes)
    return batches


__all__ = ["LoaderSettings", "Position", "TrainBatch", "TrainStream", "run_batches"]
