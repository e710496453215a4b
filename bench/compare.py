"""The model comparison behind docs/results/: real `prior train` / `prior eval` runs, recorded.

Every run is a `prior` command executed as a user would type it; its exact command line, its
settings and its results are appended as one JSON line to the file given with ``--out``, so a
result can be traced to the command that made it and re-run. Checkpoints stay under
``--runs`` (never in git).

    # 1. the -mini schedule, chosen on bert-mini's dev score alone (no test split is read)
    python bench/compare.py grid --store STORE --dataset sick --lrs 2e-5,5e-5,1e-4 --epochs 10 \\
        --out docs/results/sick-grid.jsonl
    # 2. every model x seeds, full training split and a fixed 10 % sample of it
    python bench/compare.py runs --store STORE --dataset sick --regime full --seeds 1,2,3 \\
        --out docs/results/sick.jsonl
    python bench/compare.py runs --store STORE --dataset sick --regime sample --seeds 1,2,3,4,5 \\
        --out docs/results/sick.jsonl
    # 3. tables and the figure
    python bench/compare.py report docs/results/sick.jsonl --figure docs/results/sick.png

``runs`` scores each run's best checkpoint on the test split three times: as trained, with its
feature replaced by the neutral value and by another pair's feature (`prior eval --features
neutral|shuffled`), so a model that ignores its feature shows no drop.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODELS = ("bert", "bert-sim", "sgnet", "dafa", "gibert", "cda")
FEATURE_MODELS = ("bert-sim", "sgnet", "dafa", "gibert")


def prior(*args: object, threads: int) -> tuple[list[str], str]:
    """Run `prior ARGS` (one torch thread per process unless told) and return the command and
    its standard output; a failure stops the comparison with the command's own error."""
    cmd = ["prior", *map(str, args)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "TOKENIZERS_PARALLELISM": "false", "PRIOR_NO_PROGRESS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"`{shlex.join(cmd)}` failed:\n{done.stderr}")
    return cmd, done.stdout


def metrics_line(stdout: str) -> dict[str, float]:
    """The ``name=value`` metrics of `prior eval`'s last line."""
    last = stdout.strip().splitlines()[-1]
    return {k: float(v) for k, v in (item.split("=") for item in last.split())}


def epochs_of(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def append(out: Path, record: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
    print(json.dumps(record, sort_keys=True), flush=True)


def cmd_grid(args: argparse.Namespace) -> None:
    """bert-mini at each learning rate for up to ``--epochs`` epochs with early stopping on
    the dev metric: the -mini schedule is the setting with the best dev score."""
    for lr in args.lrs.split(","):
        run = Path(args.runs) / f"grid-{args.dataset}-bert-mini-lr{lr}-s{args.seed}"
        t0 = time.perf_counter()
        cmd, stdout = prior("train", "bert-mini", "--dataset", args.dataset, "--store", args.store,
                            "--output", run, "--lr", lr, "--epochs", args.epochs, "--patience", args.patience,
                            "--seed", args.seed, "--threads", args.threads, "--no-progress",
                            threads=args.threads)
        summary = json.loads(stdout.strip().splitlines()[0])
        append(Path(args.out), {"kind": "grid", "model": "bert-mini", "dataset": args.dataset,
                                "lr": float(lr), "seed": args.seed, "epochs_max": args.epochs,
                                "patience": args.patience, "best_dev": summary["best_dev"],
                                "key_metric": summary["key_metric"], "epochs_run": summary["epochs"],
                                "per_epoch": epochs_of(run), "command": shlex.join(cmd),
                                "seconds": round(time.perf_counter() - t0, 1)})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("grid")
    g.add_argument("--store", required=True)
    g.add_argument("--dataset", default="sick")
    g.add_argument("--lrs", default="2e-5,5e-5,1e-4")
    g.add_argument("--epochs", type=int, default=10)
    g.add_argument("--patience", type=int, default=3)
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--threads", type=int, default=1)
    g.add_argument("--runs", default="runs/compare")
    g.add_argument("--out", required=True)
    args = p.parse_args()
    {"grid": cmd_grid}[args.cmd](args)


if __name__ == "__main__":
    main()
