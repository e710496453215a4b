"""How close the loader's windowed shuffle comes to a full shuffle (`prior.trainers.order`).

    python bench/shuffle_quality.py                          # 500k pairs, the default window and a few others
    python bench/shuffle_quality.py --pairs 550152 --windows 8192 --pieces 256

No store is read: the order is a function of the split's size, the seed and the epoch alone.
Each row compares the order with a full permutation (``window = pairs``) on the measures of
Streaming's shuffle-quality notes, over ``--epochs`` epochs at a global batch of ``--batch``:

- ``labels TV``: a split stored sorted by label (three classes in three blocks, the worst case a
  file can be), the mean total-variation distance between a batch's label mix and the split's.
  A full shuffle's is the sampling noise of a batch; the window adds the noise of drawing
  ``window / piece`` pieces;
- ``pieces/batch``: distinct stored pieces (``piece`` consecutive pairs) in a batch;
- ``neighbours together``: how often two pairs stored next to each other land in one batch
  (full shuffle: (batch − 1)/(pairs − 1));
- ``displacement``: mean |served position − stored position| / pairs (full shuffle: 1/3).

Windows are cut where lanes start, as the loader serves them (``--uncut`` adds each window
without its cuts).
"""

from __future__ import annotations

import argparse

import numpy as np

from prior.trainers.order import Shuffle, batches_per_epoch, lane_count, served_batch, windowed_order


def served(n: int, shuffle: Shuffle, epoch: int, batch: int) -> np.ndarray:
    """The epoch's positions in the order the steps serve them (lanes interleaved)."""
    order, _ = windowed_order(n, shuffle, epoch, batch)  # windows cut where lanes start, as the loader serves them
    steps = batches_per_epoch(n, batch)
    lanes = lane_count(n, shuffle)
    return np.concatenate([order[served_batch(t, steps, lanes) * batch:][:batch] for t in range(steps)])


def measures(n: int, shuffle: Shuffle, batch: int, epochs: int, classes: int = 3) -> dict[str, float]:
    label = np.arange(n) * classes // n  # sorted by label: the worst stored order
    share = np.bincount(label, minlength=classes) / n
    tv, pieces, together, moved = [], [], [], []
    for epoch in range(epochs):
        seq = served(n, shuffle, epoch, batch)
        full = len(seq) // batch * batch
        batches = seq[:full].reshape(-1, batch)
        counts = np.stack([np.bincount(b, minlength=classes) for b in label[batches]]) / batch
        tv.append(float(np.abs(counts - share).sum(axis=1).mean() / 2))
        pieces.append(float(np.mean([len(np.unique(b // shuffle.piece)) for b in batches])))
        step = np.empty(n, np.int64)
        step[seq] = np.arange(n) // batch
        together.append(float(np.mean(step[:-1] == step[1:])))
        place = np.empty(n, np.int64)
        place[seq] = np.arange(n)
        moved.append(float(np.abs(place - np.arange(n)).mean() / n))
    return {"labels_tv": float(np.mean(tv)), "pieces_per_batch": float(np.mean(pieces)),
            "neighbours_together": float(np.mean(together)), "displacement": float(np.mean(moved))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=500_000)
    ap.add_argument("--windows", default="2048,8192,32768")
    ap.add_argument("--pieces", default="256")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--uncut", action="store_true", help="Also each window without its cuts where lanes start.")
    args = ap.parse_args()
    rows = [("full shuffle", Shuffle(0, window=args.pairs, piece=1))]
    for w in args.windows.split(","):
        for p in args.pieces.split(","):
            rows.append((f"window {w}, piece {p}", Shuffle(0, window=int(w), piece=int(p))))
            if args.uncut:
                rows.append((f"window {w}, piece {p}, uncut", Shuffle(0, window=int(w), piece=int(p), lane_cuts=False)))
    print(f"{args.pairs} pairs, batch {args.batch}, {args.epochs} epochs\n")
    print("| order | labels TV | pieces/batch | neighbours together | displacement |\n|---|---|---|---|---|")
    for name, shuffle in rows:
        m = measures(args.pairs, shuffle, args.batch, args.epochs)
        print(f"| {name} | {m['labels_tv']:.4f} | {m['pieces_per_batch']:.1f} | {m['neighbours_together']:.2e} | "
              f"{m['displacement']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
