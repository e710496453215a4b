"""Scaling measured on a build long enough to mean it: every dataset held, built together.

    PRIOR_DATA_DIR=../shared/data python bench/build_all.py            # ~53k pairs; 1 and 2 workers
    python bench/build_all.py --limit 30 --subset-pairs 150 --ceiling-repeat 0   # a smoke test

Every split of every dataset in the data dir (SNLI copy, MRPC, STS-B, QNLI, RTE, SICK,
Twitter-URL; not SICK-R, which repeats SICK's sentences) goes into one fresh store with the
default parser and features (biaffine; dep, sdoi, wup), one `prior build` per dataset as a user
would run them, all on one local Dask cluster started exactly as `prior build` starts its own
(`prior.pipeline.runner.Runner`: the same workers a build starts), so the cluster's start-up is paid once.

Runs, each cold (new cluster, new store): a subset of about ``--subset-pairs`` pairs (every
split cut to its first N pairs, N chosen so the total comes near the target) and all pairs,
each with 1 and 2 workers. Reported per run: wall time end to end (cluster start included) and
its pairs/s, the processing time (the builds, without the cluster's start), seconds per pair
both ways, every dataset's own build with its stages' items/s, and each worker's peak RSS.
Then: 2-worker over 1-worker scaling of the all-pairs run, next to this machine's own 2-process
ceiling (``bench/scaling.py``'s CPU-bound jobs, measured in the same session); per-pair cost of
all pairs over the subset (it should not grow with size); and the time of ``store.frame(...)``
for the largest split, per feature.

Writes bench/out/build-all-<date>.json. On a shared machine read ratios, not absolute rates.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from build import stage_rates  # noqa: E402  (bench/build.py)
from results import write_json  # noqa: E402  (bench/results.py)


def held_splits(data_dir: Path) -> dict[str, dict[str, int]]:
    """{dataset: {split: usable pairs}} for every split the data dir holds (SICK-R left out)."""
    from prior.pipeline.datasets import list_datasets, read_split

    out: dict[str, dict[str, int]] = {}
    for info in list_datasets(data_dir=data_dir):
        if info.name == "sick-r":
            continue
        for split in info.splits:
            if split.origin == "data_dir":
                out.setdefault(info.name, {})[split.split] = len(
                    read_split(info.name, split.split, data_dir=data_dir, hub=False).pairs)
    return out


def per_split_limit(counts: dict[str, dict[str, int]], target: int) -> int:
    """The largest N with sum(min(pairs, N)) over all splits <= target (at least 1)."""
    sizes = [n for splits in counts.values() for n in splits.values()]
    lo, hi = 1, max(sizes)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(n, mid) for n in sizes) <= target:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run_all(counts: dict[str, dict[str, int]], limit: int | None, workers: int, features: tuple[str, ...],
            parser: str, store: Path, parse_device: str) -> dict[str, Any]:
    """One cold cluster, one build per dataset into ``store``; see module docstring."""
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions
    from prior.pipeline.runner import Runner

    t0 = time.perf_counter()
    runner = Runner(RunOptions(workers=workers))
    builds = []
    try:
        client = runner.start()
        assert client is not None
        cluster_s = time.perf_counter() - t0
        address = runner.address
        for dataset, splits in counts.items():
            b0 = time.perf_counter()
            report = build(BuildOptions(dataset=dataset, splits=tuple(splits), features=features, parser=parser,
                                        limit=limit),
                           RunOptions(store=str(store), workers=workers, scheduler=address, progress=False,
                                      parse_device=parse_device))
            stages, processing = stage_rates(report)
            pairs = sum(s.pairs for s in report.splits)
            builds.append({"dataset": dataset, "pairs": pairs, "wall_s": round(time.perf_counter() - b0, 2),
                           "processing_s": round(processing, 2), "stages": stages})
            print(f"  {dataset:<11} {pairs:>6} pairs  {builds[-1]['wall_s']:>7} s  parse "
                  f"{stages['parse']['per_s']} sentences/s", flush=True)
        rss = client.run(_peak_rss_mib)
    finally:
        runner.close()
    wall = time.perf_counter() - t0
    pairs = sum(b["pairs"] for b in builds)
    build_s = sum(b["wall_s"] for b in builds)
    return {"workers": workers, "pairs": pairs, "per_split_limit": limit, "wall_s": round(wall, 2),
            "cluster_start_s": round(cluster_s, 2), "builds_s": round(build_s, 2),
            "end_to_end_pairs_per_s": round(pairs / wall, 1), "builds_pairs_per_s": round(pairs / build_s, 1),
            "ms_per_pair_end_to_end": round(1000 * wall / pairs, 3), "ms_per_pair_builds": round(1000 * build_s / pairs, 3),
            "worker_peak_rss_mib": {w.rsplit(":", 1)[-1]: round(v, 1) for w, v in rss.items()},
            "driver_peak_rss_mib": round(_peak_rss_mib(), 1), "datasets": builds}


def frame_seconds(store: Path, counts: dict[str, dict[str, int]], features: tuple[str, ...]) -> dict[str, Any]:
    """``store.frame(feature, dataset, split)`` of the largest split, per feature (wall seconds)."""
    from prior.featurestore import open_store

    dataset, split = max(((d, s) for d, splits in counts.items() for s in splits), key=lambda ds: counts[ds[0]][ds[1]])
    st = open_store(store)
    out: dict[str, Any] = {"dataset": dataset, "split": split, "pairs": counts[dataset][split]}
    for feature in features:
        t0 = time.perf_counter()
        frame = st.frame(feature, dataset=dataset, split=split)
        out[feature] = {"seconds": round(time.perf_counter() - t0, 3), "rows": frame.height,
                        "columns": frame.width}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("PRIOR_DATA_DIR", SHARED)))
    ap.add_argument("--features", default="dep,sdoi,wup")
    ap.add_argument("--parser", default="biaffine")
    ap.add_argument("--parse-device", default="auto")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--subset-pairs", type=int, default=10_000, help="Size of the smaller run (pairs, about).")
    ap.add_argument("--limit", type=int, default=None, help="Cut every split to N pairs in the 'all' run (smoke tests).")
    ap.add_argument("--ceiling-repeat", type=int, default=3, help="Runs of the machine-ceiling jobs (0: skip).")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = ap.parse_args()
    os.environ.setdefault("PRIOR_DATA_DIR", str(args.data_dir))
    os.environ.setdefault("PRIOR_HOME", str(REPO / ".prior" / "bench-home"))
    features = tuple(args.features.split(","))
    counts = held_splits(args.data_dir)
    if args.limit is not None:
        counts = {d: {s: min(n, args.limit) for s, n in splits.items()} for d, splits in counts.items()}
    subset = per_split_limit(counts, args.subset_pairs)
    results: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                               "cpu_count": os.cpu_count(), "parser": args.parser, "features": features,
                               "parse_device": args.parse_device, "splits": counts,
                               "load_avg_start": round(os.getloadavg()[0], 2), "runs": []}
    print(f"{sum(n for s in counts.values() for n in s.values())} pairs in {sum(map(len, counts.values()))} splits "
          f"of {len(counts)} datasets; subset: first {subset} pairs of each split", flush=True)
    if args.ceiling_repeat:
        from scaling import machine_ceiling  # bench/scaling.py

        results["machine_ceiling"] = machine_ceiling(args.ceiling_repeat)
        print(json.dumps({"machine_ceiling": results["machine_ceiling"]}), flush=True)
    root = Path(tempfile.mkdtemp(prefix="prior-bench-all-"))
    try:
        for size, limit in (("subset", subset), ("all", args.limit)):
            for workers in args.workers:
                store = root / f"{size}-{workers}"
                print(f"{size} with {workers} worker(s):", flush=True)
                run = run_all(counts, limit, workers, features, args.parser, store, args.parse_device)
                run["size"] = size
                results["runs"].append(run)
                print(json.dumps({k: v for k, v in run.items() if k != "datasets"}), flush=True)
                if size == "all" and workers == max(args.workers):
                    results["frame"] = frame_seconds(store, counts, features)
                    print(json.dumps({"frame": results["frame"]}), flush=True)
                shutil.rmtree(store, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    runs = {(r["size"], r["workers"]): r for r in results["runs"]}
    if ("all", 1) in runs and ("all", 2) in runs:
        scaling = runs[("all", 2)]["end_to_end_pairs_per_s"] / runs[("all", 1)]["end_to_end_pairs_per_s"]
        results["scaling_all_2_over_1"] = round(scaling, 2)
        if "machine_ceiling" in results:
            results["scaling_over_ceiling"] = round(scaling / max(results["machine_ceiling"].values()), 2)
    for workers in args.workers:
        if ("all", workers) in runs and ("subset", workers) in runs:
            results.setdefault("per_pair_cost_all_over_subset", {})[workers] = {
                k: round(runs[("all", workers)][k] / runs[("subset", workers)][k], 2)
                for k in ("ms_per_pair_end_to_end", "ms_per_pair_builds")}
    print(json.dumps({k: results.get(k) for k in ("scaling_all_2_over_1", "machine_ceiling", "scaling_over_ceiling",
                                                  "per_pair_cost_all_over_subset")}))
    write_json(args.out, "build-all", results)


if __name__ == "__main__":
    main()
