"""Read every split of the full dataset copies and report pairs, skips and pairs/second.

    .venv/bin/python bench/datasets_read.py [--data-dir ../shared/data] [--repeat 3]

Reading is single-threaded Python (UTF-8 decoding, splitting, label checks, sha256 of the
file); the best of ``--repeat`` runs is reported per split.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from prior.errors import NotFoundError
from prior.pipeline.datasets import list_datasets, read_split

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    total_pairs, total_s = 0, 0.0
    print(f"{'dataset':<11} {'split':<8} {'pairs':>6} {'skipped':>7} {'ms':>7} "
          f"{'pairs/s':>9}  file")
    for info in list_datasets(data_dir=args.data_dir):
        for s in info.splits:
            if s.origin != "data_dir":
                continue
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                try:
                    d = read_split(info.name, s.split, data_dir=args.data_dir, hub=False)
                except NotFoundError:
                    break
                best = min(best, time.perf_counter() - t0)
            total_pairs += len(d.pairs)
            total_s += best
            print(f"{info.name:<11} {s.split:<8} {len(d.pairs):>6} {len(d.skipped):>7} "
                  f"{best * 1000:>7.1f} {len(d.pairs) / best:>9,.0f}  {s.location}")
    print(f"total: {total_pairs:,} pairs in {total_s:.2f} s ({total_pairs / total_s:,.0f} pairs/s)")


if __name__ == "__main__":
    main()
