"""The order a training split is served in: a function of the seed, the epoch and the split's
size alone, never of the number of ranks or loader workers (elastic determinism).

**Pieces and windows.** A split's ``n`` pairs (in stored order) are cut into *pieces* of
``piece`` consecutive pairs. An epoch's order is a seeded permutation of the pieces, taken
``window // piece`` pieces at a time (a *window*); the pairs of each window are shuffled
together. A pair therefore lands anywhere in the epoch (its piece's place is uniform), and a
batch mixes pairs of ``window // piece`` pieces drawn from the whole split, while a reader
needs only the pieces of the current window at hand (MosaicML Streaming's block shuffle,
``py1b``). ``docs/trainers.md`` gives the measures of how close it comes to a full shuffle.

A split of at most ``window`` pairs is one window: its order is exactly a full permutation,
``numpy.random.default_rng([seed, epoch]).permutation(n)``, the order every run had before
streaming (SICK, MRPC, RTE and STS-B keep their orders bit for bit).

**Lanes.** A split larger than one window is served in ``lanes`` (4) interleaved lanes: its
global batches, in the order above, are cut into ``lanes`` blocks of consecutive batches, and
step ``t`` of the epoch serves batch ``t div lanes`` of block ``t mod lanes``. The batches are
the same; only the steps they are served at interleave. A loader with ``w`` workers (``w``
dividing ``lanes``) gives each worker whole lanes; the order depends on the constant
``lanes``, never on ``w``. A split of one window has one lane: its batches are served in
order, as before streaming.

**Windows cut where lanes start** (``Shuffle.lane_cuts``, given the global batch size). A lane
starts inside some window; shuffled whole, that window's pairs would be spread over both
lanes, and both would read all of its pieces. Instead its pieces, in their drawn order, are
cut at the lane's first pair and each part is shuffled on its own, so the lanes share at most
the one piece the cut falls in. Every other window is shuffled exactly as without cuts.

**Batches across ranks.** Global batch ``b`` of an epoch is ``order[b·G:(b+1)·G]`` for the
global batch size ``G``, whatever the world size; rank ``r`` of ``world`` serves its pairs
``[r::world]``. So 1 rank and 2 ranks see the same pairs in the same optimizer steps. A rank
left without a pair (a last batch shorter than the world) serves the batch's first pair with
weight 0 (:class:`RankBatch`), so every rank takes part in every step and the gradient is
that of the real pairs alone.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from prior.errors import PriorError

#: pairs one shuffle window spans; a split this small or smaller is fully shuffled
DEFAULT_WINDOW = 16384
#: consecutive pairs of a piece, the unit the window's pieces are drawn in
DEFAULT_PIECE = 128
#: interleaved lanes of a split larger than a window (loader workers must divide it)
LANES = 4


@dataclass(frozen=True)
class Shuffle:
    """How an epoch's order is drawn; recorded in a resumable state (a position means
    something only under the same order)."""

    seed: int
    window: int = DEFAULT_WINDOW
    piece: int = DEFAULT_PIECE
    lanes: int = LANES
    lane_cuts: bool = True  # a window a lane starts in is shuffled as two parts (module docstring)

    def __post_init__(self) -> None:
        if self.window < 1 or self.piece < 1 or self.lanes < 1:
            raise PriorError(f"the shuffle window ({self.window}), piece ({self.piece}) and lanes ({self.lanes}) "
                             "must be positive")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Shuffle:
        """A recorded shuffle; one recorded before ``lane_cuts`` existed cut no window."""
        return cls(**{"lane_cuts": False, **raw})

    def order_key(self, n: int) -> dict[str, Any]:
        """What an epoch's order of ``n`` pairs depends on: ``lane_cuts`` only where the split is
        larger than one window (a split of one window has one lane)."""
        key = self.to_dict()
        if n <= self.window:
            del key["lane_cuts"]
        return key


def epoch_order(n: int, shuffle: Shuffle | None, epoch: int, batch_size: int | None = None) -> np.ndarray:
    """The positions (0 … n-1, int64) of an epoch in serving order; ``shuffle`` None: stored
    order (evaluation)."""
    return windowed_order(n, shuffle, epoch, batch_size)[0]


def windowed_order(n: int, shuffle: Shuffle | None, epoch: int,
                   batch_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`epoch_order`, where each window starts in it, with ``n`` last): a reader needs
    the pairs of one window at a time. With the global ``batch_size`` (and ``lane_cuts``) a
    window is also cut where a lane starts (module docstring), and each part counts as a window."""
    if shuffle is None:
        return np.arange(n, dtype=np.int64), np.array([0, n], dtype=np.int64)
    if n <= shuffle.window:
        order = np.random.default_rng([shuffle.seed, epoch]).permutation(n).astype(np.int64)
        return order, np.array([0, n], dtype=np.int64)
    pieces = math.ceil(n / shuffle.piece)
    drawn = np.random.default_rng([shuffle.seed, epoch, 1]).permutation(pieces)
    per_window = max(1, shuffle.window // shuffle.piece)
    cuts = lane_starts(n, shuffle, batch_size) if batch_size is not None and shuffle.lane_cuts else []
    parts = []
    at = 0  # where the window starts in the epoch
    for w, start in enumerate(range(0, pieces, per_window)):
        chosen = drawn[start:start + per_window]
        rows = np.concatenate([np.arange(p * shuffle.piece, min(n, (p + 1) * shuffle.piece), dtype=np.int64)
                               for p in chosen])
        inside = [c - at for c in cuts if at < c < at + len(rows)]
        if not inside:
            parts.append(np.random.default_rng([shuffle.seed, epoch, 2, w]).permutation(rows))
        else:
            for k, (lo, hi) in enumerate(itertools.pairwise([0, *inside, len(rows)])):
                parts.append(np.random.default_rng([shuffle.seed, epoch, 2, w, k]).permutation(rows[lo:hi]))
        at += len(rows)
    bounds = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=bounds[1:])
    return np.concatenate(parts), bounds


def batches_per_epoch(n: int, batch_size: int) -> int:
    """Optimizer steps in an epoch of ``n`` pairs at global batch size ``batch_size``."""
    return math.ceil(n / batch_size)


def lane_count(n: int, shuffle: Shuffle | None) -> int:
    """The lanes an epoch of ``n`` pairs is served in: one for a split of one window."""
    return 1 if shuffle is None or n <= shuffle.window else shuffle.lanes


def lane_starts(n: int, shuffle: Shuffle, batch_size: int) -> list[int]:
    """Where in an epoch of ``n`` pairs (at global batch ``batch_size``) each lane after the
    first starts: its first batch's first pair."""
    batches, lanes = batches_per_epoch(n, batch_size), lane_count(n, shuffle)
    return [lane_batches(lane, batches, lanes)[0] * batch_size for lane in range(1, lanes)]


def served_batch(t: int, batches: int, lanes: int) -> int:
    """The batch (in order) served at step ``t`` of an epoch of ``batches`` batches in
    ``lanes`` lanes: batch ``t div lanes`` of block ``t mod lanes``, the first ``batches mod
    lanes`` blocks one batch longer than the others."""
    lane = t % lanes
    return lane_batches(lane, batches, lanes)[0] + t // lanes


def lane_batches(lane: int, batches: int, lanes: int) -> tuple[int, int]:
    """The batches (in order, [first, end)) lane ``lane`` serves (:func:`served_batch`)."""
    q, r = divmod(batches, lanes)
    first = lane * q + min(lane, r)
    return first, first + q + (1 if lane < r else 0)


@dataclass(frozen=True)
class RankBatch:
    """The pairs one rank serves in one step: positions into the split, and each pair's weight
    in the step's loss (1, or 0 for a stand-in that keeps an otherwise empty rank in step)."""

    positions: np.ndarray
    weights: np.ndarray
    global_size: int  # real pairs in the whole step, over all ranks

    @property
    def real(self) -> int:
        return int(self.weights.sum())


def rank_batch(order: np.ndarray, b: int, batch_size: int, rank: int = 0, world: int = 1) -> RankBatch:
    """Rank ``rank``'s share of global batch ``b`` of ``order`` (module docstring)."""
    whole = order[b * batch_size:(b + 1) * batch_size]
    mine = whole[rank::world]
    if len(mine) == 0:
        return RankBatch(whole[:1], np.zeros(1, dtype=np.float32), len(whole))
    return RankBatch(mine, np.ones(len(mine), dtype=np.float32), len(whole))


__all__ = ["DEFAULT_PIECE", "DEFAULT_WINDOW", "LANES", "RankBatch", "Shuffle", "batches_per_epoch", "epoch_order",
           "lane_batches", "lane_count", "lane_starts", "rank_batch", "served_batch", "windowed_order"]
