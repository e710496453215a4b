"""How far can 2 workers get past 1 on this machine? A benchmark (not a test) of the bounds on
`prior build`'s worker scaling, next to what `bench/build.py` measures.

    python bench/scaling.py                                   # bounds from the newest build run
    python bench/scaling.py --build bench/out/build-X.json    # ... from a given one

Three measurements, each the median of ``--repeat`` runs:

1. **The machine's own ceiling**: the same CPU-bound jobs (a pure-Python loop; numpy matrix
   products) in 1 and 2 processes, nothing else running. No build can scale better.
2. **A build's fixed start-up per worker**: what `prior build --workers N` pays before its first
   sentence is parsed, in the build's own code (`prior.pipeline.runner.Runner`): the Dask cluster
   until its workers are up, then loading the parser in each worker (imports, spaCy's model,
   one sentence). The workers start side by side, so with 2 workers this costs as much wall
   time as with 1: it does not shrink with more workers.
3. **The bound** (Amdahl) for each dataset of the build benchmark's cold runs: with 1-worker
   wall T1, fixed start-up S and the machine's ceiling c, 2 workers need at least
   S + (T1 - S) / c, so the scaling is at most T1 / (S + (T1 - S) / c). This assumes
   everything after start-up (reading, parsing, features, the driver and the Dask scheduler,
   which share the same two cores) scales as well as the ceiling jobs: a generous bound.

Results go to bench/out/scaling-<date>.json and are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from multiprocessing import get_context
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _python_job(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def _numpy_job(n: int) -> float:
    import numpy as np

    a = np.random.default_rng(0).random((300, 300), dtype=np.float32)
    for _ in range(n):
        a = np.tanh(a @ a * 0.001)
    return float(a.sum())


def machine_ceiling(repeat: int) -> dict[str, float]:
    """Speed-up of 4 equal CPU-bound jobs run by 2 processes instead of 1 (processes warmed).
    One BLAS/OpenMP thread per process, as Dask's nanny sets for the build's workers."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"  # inherited by the spawned processes
    out = {}
    for name, job, size in (("python", _python_job, 12_000_000), ("numpy", _numpy_job, 2000)):
        walls: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(repeat):
            for procs in (1, 2):
                with ProcessPoolExecutor(procs, mp_context=get_context("spawn")) as pool:
                    list(pool.map(job, [size // 20] * procs))  # start and warm the processes
                    t0 = time.perf_counter()
                    list(pool.map(job, [size] * 4))
                    walls[procs].append(time.perf_counter() - t0)
        out[name] = round(statistics.median(walls[1]) / statistics.median(walls[2]), 3)
    return out


def _load_parser(spec: str) -> float:
    """In a worker: seconds to load the build's parser and parse one sentence."""
    t0 = time.perf_counter()
    from prior.pipeline.parsers import get_parser

    get_parser(spec).parse(["A man is walking his dog in the park."])
    return time.perf_counter() - t0


def worker_startup(workers: int, parser: str, repeat: int) -> dict[str, float]:
    """The build's fixed start-up with ``workers`` local workers: cluster up, then the slowest
    worker's parser load (median over runs)."""
    from prior.pipeline.build_options import RunOptions
    from prior.pipeline.runner import Runner

    clusters, loads = [], []
    for _ in range(repeat):
        with Runner(RunOptions(workers=workers)) as runner:
            t0 = time.perf_counter()
            client = runner.start()
            assert client is not None
            clusters.append(time.perf_counter() - t0)
            names = list(client.scheduler_info()["workers"])
            futures = [client.submit(_load_parser, parser, workers=[w], pure=False) for w in names]
            loads.append(max(f.result() for f in futures))
    cluster, load = statistics.median(clusters), statistics.median(loads)
    return {"cluster_s": round(cluster, 3), "parser_load_s": round(load, 3), "total_s": round(cluster + load, 3)}


def _parser_of(run: dict, build_json: dict) -> str:
    return run.get("parser", build_json.get("parser", ""))  # runs name their parser since several rows exist


def bounds(build_json: dict, startup_s: float, ceiling: float, parser: str) -> list[dict]:
    """Amdahl's bound on 2-worker scaling for each dataset's cold run of ``parser`` in ``build_json``
    (on the CPU where the runs name a device)."""
    runs = {(r["dataset"], r["workers"]): r for r in build_json["runs"]
            if r["cluster"] == "cold" and _parser_of(r, build_json) == parser and r.get("parse_device", "cpu") in ("cpu", "-")}
    out = []
    for (dataset, workers), one in runs.items():
        if workers != 1:
            continue
        t1 = one["wall_s"]
        best_t2 = startup_s + (t1 - startup_s) / ceiling
        two = runs.get((dataset, 2))
        out.append({"dataset": dataset, "t1_s": t1, "best_t2_s": round(best_t2, 2),
                    "max_scaling": round(t1 / best_t2, 2),
                    "measured_t2_s": two["wall_s"] if two else None,
                    "measured_scaling": round(t1 / two["wall_s"], 2) if two else None})
    return out


def newest_build_json(out_dir: Path, parser: str) -> Path | None:
    """The newest bench/build.py result of ``parser`` with cold runs of 1 and 2 workers."""
    for path in sorted(out_dir.glob("build-*.json"), reverse=True):
        result = json.loads(path.read_text())
        cold = {r["workers"] for r in result["runs"] if r["cluster"] == "cold" and _parser_of(r, result) == parser}
        if cold >= {1, 2}:
            return path
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parser", default="biaffine")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--build", type=Path, help="A bench/build.py result with 1- and 2-worker cold runs.")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = ap.parse_args()
    os.environ.setdefault("PRIOR_HOME", str(REPO / ".prior" / "bench-home"))
    ceiling = machine_ceiling(args.repeat)
    print(json.dumps({"machine_ceiling": ceiling}), flush=True)
    startup = {n: worker_startup(n, args.parser, args.repeat) for n in (1, 2)}
    print(json.dumps({"startup": startup}), flush=True)
    results = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "cpu_count": os.cpu_count(),
               "parser": args.parser, "repeat": args.repeat, "machine_ceiling": ceiling, "startup": startup}
    build_path = args.build or newest_build_json(args.out, args.parser)
    if build_path is not None:
        # generous: the smaller start-up of the two, the larger of the two ceilings
        results["build"] = str(build_path)
        results["bounds"] = bounds(json.loads(build_path.read_text()),
                                   min(s["total_s"] for s in startup.values()), max(ceiling.values()), args.parser)
        for row in results["bounds"]:
            print(json.dumps(row), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"scaling-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
