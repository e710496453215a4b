"""Benchmark of the start-up tricks in `prior/pipeline/startup.py` (not a test): does each one pay on
the default path?

    PRIOR_DATA_DIR=../shared/data python bench/startup.py                     # all SICK, biaffine, 2 workers
    PRIOR_DATA_DIR=../shared/data python bench/startup.py --parser spacy      # the spaCy row

For each configuration of ``PRIOR_STARTUP_TUNING`` (``all``, ``none``, and ``all`` minus one
trick at a time) it runs a cold ``prior build`` through the CLI, as a user would, into a fresh
store (``dep,sdoi,wup``), then ``--noop`` no-op rebuilds of that store. Configurations alternate
within each round so that a drift of the machine's load hits them alike; ``--rounds`` rounds,
medians reported. A trick pays when removing it (``-TRICK``) makes the build slower than
``all``. Results go to bench/out/startup-<date>.json and are printed as a table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from prior.pipeline.startup import ENV, TRICKS

REPO = Path(__file__).resolve().parents[1]


def configurations() -> dict[str, str]:
    """Label → value of ``PRIOR_STARTUP_TUNING``."""
    out = {"all": "all", "none": "none"}
    for trick in TRICKS:
        out[f"-{trick}"] = ",".join(t for t in TRICKS if t != trick)
    return out


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="sick")
    p.add_argument("--parser", default="biaffine")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--noop", type=int, default=3, help="no-op rebuilds per build")
    p.add_argument("--only", help="comma-separated configuration labels (default: all of them)")
    args = p.parse_args()
    configs = configurations()
    if args.only:
        configs = {k: v for k, v in configs.items() if k in args.only.split(",")}
    walls: dict[str, list[float]] = {k: [] for k in configs}
    noops: dict[str, list[float]] = {k: [] for k in configs}
    prior = str(Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin" / "prior")
    # one PRIOR_HOME for every run, its one-time caches (WordNet's hierarchy table) made by an
    # untimed first build; each timed build goes into a fresh store
    home = Path(tempfile.mkdtemp(prefix="prior-startup-"))
    base_cmd = [prior, "build", "--dataset", args.dataset, "--parser", args.parser, "--workers", str(args.workers)]
    env0 = {**os.environ, "PRIOR_NO_PROGRESS": "1", "PRIOR_HOME": str(home)}
    timed([*base_cmd, "--store", str(home / "warm-up"), "--limit", "20"], env0)
    try:
        for _ in range(args.rounds):
            for label, value in configs.items():
                env = {**env0, ENV: value}
                cmd = [*base_cmd, "--store", str(home / "store")]
                walls[label].append(round(timed(cmd, env), 3))
                noops[label] += [round(timed(cmd, env), 3) for _ in range(args.noop)]
                shutil.rmtree(home / "store", ignore_errors=True)
                print(f"{label:24} build {walls[label][-1]:7.2f} s   no-op {min(noops[label][-args.noop:]):.2f} s",
                      flush=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    base = statistics.median(walls["all"]) if "all" in walls else None
    rows = []
    print(f"\n{'configuration':24} {'build median':>13} {'vs all':>8} {'no-op median':>13}")
    for label in configs:
        med, nmed = statistics.median(walls[label]), statistics.median(noops[label])
        rel = f"{med / base:.3f}" if base else "-"
        print(f"{label:24} {med:12.2f}s {rel:>8} {nmed:12.2f}s")
        rows.append({"configuration": label, "value": configs[label], "build_walls_s": walls[label],
                     "build_median_s": med, "noop_walls_s": noops[label], "noop_median_s": nmed})
    out = REPO / "bench" / "out" / f"startup-{datetime.now(UTC):%Y%m%d-%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": datetime.now(UTC).isoformat(timespec="seconds"), "dataset": args.dataset,
                               "parser": args.parser, "workers": args.workers, "rounds": args.rounds,
                               "load_avg_start": os.getloadavg()[0], "runs": rows}, indent=2) + "\n")
    print(f"\n{out}")


if __name__ == "__main__":
    main()
