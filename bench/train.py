"""Real training runs, step-time ratios and loader throughput for the six models (not tests).

Build the store once (here with the spaCy parser; the default biaffine parser where its model
is available), then dependency-based embeddings for `emb` from the store's own parses::

    export PRIOR_DATA_DIR=../shared/data PRIOR_NO_PROGRESS=1 OMP_NUM_THREADS=1
    prior build --dataset mrpc --features sdoi,wup,dep --parser spacy --workers 1 --store STORE
    prior embed train --contexts dep --store STORE --dataset mrpc --threads 1 --out EMB.txt
    prior build --dataset mrpc --features emb --embeddings EMB.txt --parser spacy --workers 1 --store STORE

Then (one process at a time, one torch thread each)::

    python bench/train.py loader --store STORE                               # the streaming loader per feature
    python bench/train.py resume --store STORE --dataset sick --model dafa-mini --save-every 50 --kill-at 120
    python bench/train.py steptime --store STORE --steps 4 --repeats 3       # × bert, same batches
    python bench/train.py runs --store STORE --regime sample --seeds 1,2,3   # 10% of train, 3 seeds
    python bench/train.py runs --store STORE --regime full --seeds 1         # full train split
    python bench/train.py table bench/out/train-sample.jsonl                 # the table again

``runs``: every ``-mini`` model (all-MiniLM-L6-v2) on MRPC with the papers' settings
(prior/trainers/registry.py), dev = a fixed 10% of train (MRPC has no dev split), evaluated on the full
test split; ``--regime sample`` trains on a fixed, seeded 10% of the remaining training pairs
(the same sample for every seed). Results: one JSON line per run in
bench/out/train-<regime>.jsonl (with the machine's load average at its end and the mean step
time) and a Markdown table (mean ± sd over seeds) on stdout; each run's metrics.jsonl,
summary.json and prior.json stay in bench/out/train/<regime>/<model>-<size>-s<seed>/ (weights
are deleted unless ``--keep-checkpoints``). ``--models`` runs a subset (e.g. the rest of an
interrupted regime). Models whose feature is missing from the store are reported and skipped.
On a GPU machine the same command uses CUDA with bf16 autocast; add ``--size base`` there.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
MODELS = ("bert", "bert-sim", "sgnet", "dafa", "gibert", "cda")
PAPER_BERT_BASE_MRPC = ("papers, BERT-base on MRPC: F1 88.0±0.4 (UERBERT Table 3, data-augmented BERT; BERT-Sim "
                        "88.3±0.3); 87.2 (DAFA and CDA Table 1, metric not named; DAFA-base 89.0, CDA-LM-base 89.1)")


def _store(path: str):
    from prior.featurestore import open_store

    return open_store(path, create=False)


def _has_feature(store, model: str) -> bool:
    from prior.errors import NotFoundError
    from prior.trainers.models import MODEL_CLASSES

    feature = MODEL_CLASSES[model].feature
    if feature is None:
        return True
    try:
        store.find_entry(feature)
        return True
    except NotFoundError:
        return False


def cmd_runs(args: argparse.Namespace) -> None:
    from prior.trainers.config import DataSpec, ModelSpec, RunSpec, TrainConfig
    from prior.trainers.loop import train

    store = _store(args.store)
    out_path = OUT / f"train-{args.regime}.jsonl"
    OUT.mkdir(parents=True, exist_ok=True)
    models = args.models.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    for model in models:
        if not _has_feature(store, model):
            print(f"skip {model}: its feature is not in {args.store}", file=sys.stderr)
            continue
        for seed in seeds:
            run_dir = OUT / "train" / args.regime / f"{model}-{args.size}-s{seed}"
            t0 = time.perf_counter()
            summary = train(TrainConfig(
                ModelSpec(f"{model}-{args.size}", seed=seed),
                DataSpec("mrpc", sample=0.1 if args.regime == "sample" else None, eval_splits=("test",)),
                RunSpec(output=run_dir, store=args.store, progress=False, threads=args.threads)))
            record = {"model": model, "size": args.size, "regime": args.regime, "seed": seed,
                      "seconds": time.perf_counter() - t0, "loadavg_end": list(os.getloadavg()),
                      "step_seconds": _mean_step_seconds(run_dir), **summary}
            if not args.keep_checkpoints:
                _drop_checkpoints(run_dir)
            with out_path.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            print(json.dumps(record), flush=True)
    table(out_path)


def _mean_step_seconds(run_dir: Path) -> float | None:
    """Mean seconds per training step over the run's epochs (from its metrics.jsonl)."""
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [r["step_seconds"] for r in lines if r.get("step_seconds") is not None]
    return statistics.mean(steps) if steps else None


def _drop_checkpoints(run_dir: Path) -> None:
    """Remove the run's weights (~90 MB per folder for -mini) once the test split is scored;
    keep best/prior.json (settings, store fingerprints, versions) beside metrics.jsonl."""
    meta = run_dir / "best" / "prior.json"
    if meta.is_file():
        shutil.copyfile(meta, run_dir / "prior.json")
    for name in ("best", "last"):
        shutil.rmtree(run_dir / name, ignore_errors=True)


def table(path: Path) -> None:
    rows: dict[str, list[dict]] = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        rows.setdefault(r["model"], []).append(r)

    def fmt(values: list[float]) -> str:
        if len(values) == 1:
            return f"{100 * values[0]:.1f}"
        return f"{100 * statistics.mean(values):.1f} ± {100 * statistics.stdev(values):.1f}"

    print("\n| model | seeds | test F1 | test accuracy | dev F1 | epochs | s/step | minutes/run |"
          "\n|---|---|---|---|---|---|---|---|")
    for model in MODELS:
        if model in rows:
            rs = rows[model]
            steps = [r["step_seconds"] for r in rs if r.get("step_seconds") is not None]
            print(f"| {model}-{rs[0].get('size', 'mini')} | {len(rs)} | "
                  f"{fmt([r['test']['f1'] for r in rs])} | {fmt([r['test']['accuracy'] for r in rs])} | "
                  f"{fmt([r['best_dev'] for r in rs])} | {statistics.mean(r['epochs'] for r in rs):.1f} | "
                  f"{statistics.mean(steps):.2f} | {statistics.mean(r['seconds'] for r in rs) / 60:.1f} |"
                  if steps else f"| {model} | {len(rs)} | {fmt([r['test']['f1'] for r in rs])} | "
                  f"{fmt([r['test']['accuracy'] for r in rs])} | | | | |")
    print(f"\n({PAPER_BERT_BASE_MRPC})")


def cmd_steptime(args: argparse.Namespace) -> None:
    """Seconds per training step (forward, backward, AdamW) of each model on the same batches.

    All models are built first, then timed round-robin: for every repeat and batch, one step
    of each model in turn (the order rotates every repeat), so that a change in machine load
    hits every model alike. Reported: the median step time and the median over (repeat, batch)
    of the paired ratio step(model) / step(bert) on the same batch.
    """
    from prior.trainers import backbones
    from prior.trainers.data import load_split
    from prior.trainers.models import MODEL_CLASSES

    torch.set_num_threads(args.threads)
    store = _store(args.store)
    path = backbones.resolve_backbone(args.size)
    tok = backbones.load_tokenizer(path)
    n_pairs = args.batch_size * args.steps
    models = [m for m in args.models.split(",") if _has_feature(store, m)]
    for m in set(args.models.split(",")) - set(models):
        print(f"skip {m}: feature missing", file=sys.stderr)
    nets, opts, batches = {}, {}, {}
    for model in models:
        data = load_split(store, "mrpc", "train", tok, feature=MODEL_CLASSES[model].feature,
                          max_length=args.max_length, limit=n_pairs)
        batches[model] = [data.batch(np.arange(i, i + args.batch_size))
                          for i in range(0, n_pairs, args.batch_size)]
        torch.manual_seed(0)
        nets[model] = backbones.build_model(MODEL_CLASSES[model], path, num_labels=2).train()
        opts[model] = torch.optim.AdamW(nets[model].parameters(), lr=1e-5)

    def step(model: str, b: int) -> float:
        t = time.perf_counter()
        nets[model](**batches[model][b]).loss.backward()
        opts[model].step()
        opts[model].zero_grad()
        return time.perf_counter() - t

    for model in models:  # warm-up step, not timed
        step(model, 0)
    times: dict[str, dict[tuple[int, int], float]] = {m: {} for m in models}
    for rep in range(args.repeats):
        order = models[rep % len(models):] + models[:rep % len(models)]
        for b in range(args.steps):
            for model in order:
                times[model][(rep, b)] = step(model, b)
    lengths = [int(x["input_ids"].shape[1]) for x in batches[models[0]]]
    print(f"{args.steps} batches of {args.batch_size} pairs (lengths {lengths}) × {args.repeats} "
          f"repeats, {args.threads} thread(s), load average {os.getloadavg()[0]:.2f}")
    print("\n| model | median s/step | × bert (median of paired ratios) |\n|---|---|---|")
    for model in models:
        med = statistics.median(times[model].values())
        ratio = (statistics.median(times[model][k] / times["bert"][k] for k in times[model])
                 if "bert" in times else float("nan"))
        print(f"| {model}-{args.size} | {med:.3f} | {ratio:.2f} |", flush=True)


def cmd_loader(args: argparse.Namespace) -> None:
    """Pairs/s of the streaming loader alone for each model's feature (one epoch, no model):
    `bench/loader.py run` for each (its JSON line, then a table)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from loader import run  # bench/loader.py

    print("| feature | pairs | first batch s | pairs/s | CPU ms/1k pairs (this + workers) |\n|---|---|---|---|---|")
    for feature in ("", "wup", "sdoi", "dep", "emb"):
        opts = argparse.Namespace(store=args.store, dataset=args.dataset, split="train", feature=feature,
                                  workers=args.workers, batch_size=args.batch_size, max_length=128,
                                  window=args.window, piece=args.piece, cache_mb=args.cache_mb, steps=0)
        try:
            r = run(opts)
        except Exception as exc:  # noqa: BLE001 - a feature missing from the store: say so, go on
            print(f"| {feature or '(none)'} | {type(exc).__name__}: {str(exc)[:80]} | | | |")
            continue
        cpu = r["cpu_s_per_1k_pairs"]
        print(f"| {feature or '(none)'} | {r['pairs']} | {r['first_batch_s']} | {r['pairs_per_s']:,.0f} | "
              f"{1000 * cpu['this']:.0f} + {1000 * cpu['workers']:.0f} |", flush=True)


_RESUME = """
import json, sys, time
t0 = time.perf_counter()
from prior.featurestore import StoreRef
import prior.trainers.run_setup as setup
from prior.trainers.config import RunSpec, TrainConfig
from prior.trainers.loader import run_batches
from prior.trainers.recorded import recorded_config
t_import = time.perf_counter() - t0
loaded = []
real = setup.load_checkpoint
def timed(folder):
    t = time.perf_counter(); out = real(folder); loaded.append(time.perf_counter() - t); return out
setup.load_checkpoint = timed
run_dir = sys.argv[1]
t1 = time.perf_counter()
recorded = recorded_config(run_dir, StoreRef(None, {}))
model, data = recorded.with_given({}, {})
cfg = TrainConfig(model, data, RunSpec(output=recorded.output, store=recorded.store, resume=run_dir, threads=1))
run = setup.start_run(cfg)
t2 = time.perf_counter()
batch = next(b for b in run_batches(run.stream, run.loader) if not b.skip)
t3 = time.perf_counter()
print(json.dumps({"import_s": round(t_import, 2), "model_load_s": round(sum(loaded), 2),
                  "start_run_s": round(t2 - t1, 2), "first_batch_s": round(t3 - t2, 2),
                  "resume_s_without_model_load": round(t3 - t1 - sum(loaded), 2),
                  "resumed_at": [run.state.epoch, run.state.batch, run.state.step], "batch": [batch.epoch, batch.batch]}))
"""


def cmd_resume(args: argparse.Namespace) -> None:
    """Kill a run (SIGKILL) at step ``--kill-at`` and resume it: the steps lost (at most
    ``--save-every``) and the seconds a resume takes to its first batch, model load apart."""
    import re
    import signal
    import subprocess

    out = Path(args.out) / "resume" / args.model
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PRIOR_NO_PROGRESS": "0", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "prior.cli.main", "train", args.model, "--dataset", args.dataset, "--store",
           args.store, "--output", str(out), "--save-every", str(args.save_every), "--log-every", "1",
           "--threads", str(args.threads), *shlex.split(args.train_args)]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    reached = 0
    assert proc.stderr is not None
    for line in proc.stderr:
        if found := re.match(r"epoch (\d+)/\d+ step (\d+)/(\d+):", line):
            reached = (int(found[1]) - 1) * int(found[3]) + int(found[2])
            if reached >= args.kill_at:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    saved = json.loads((out / "last" / "trainer_state.json").read_text())["step"]
    timing = subprocess.run([sys.executable, "-c", _RESUME, str(out)], env=env, capture_output=True, text=True,
                            check=True)
    record = {"model": args.model, "dataset": args.dataset, "save_every": args.save_every, "killed_after_step": reached,
              "saved_step": saved, "steps_lost": reached - saved, **json.loads(timing.stdout.strip().splitlines()[-1])}
    print(json.dumps(record))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("runs")
    r.add_argument("--store", required=True)
    r.add_argument("--regime", choices=("sample", "full"), default="sample")
    r.add_argument("--seeds", default="1")
    r.add_argument("--models", default=",".join(MODELS))
    r.add_argument("--size", default="mini")
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--keep-checkpoints", action="store_true",
                   help="keep best/ and last/ (default: delete them once the test split is scored)")
    s = sub.add_parser("steptime")
    s.add_argument("--store", required=True)
    s.add_argument("--models", default=",".join(MODELS))
    s.add_argument("--size", default="mini")
    s.add_argument("--steps", type=int, default=4)
    s.add_argument("--repeats", type=int, default=3)
    s.add_argument("--max-length", type=int, default=128)
    s.add_argument("--batch-size", type=int, default=32)
    s.add_argument("--threads", type=int, default=1)
    ld = sub.add_parser("loader")
    ld.add_argument("--store", required=True)
    ld.add_argument("--dataset", default="mrpc")
    ld.add_argument("--batch-size", type=int, default=32)
    ld.add_argument("--workers", type=int, default=2)
    ld.add_argument("--window", type=int, default=16384)
    ld.add_argument("--piece", type=int, default=128)
    ld.add_argument("--cache-mb", type=float, default=256)
    rs = sub.add_parser("resume")
    rs.add_argument("--store", required=True)
    rs.add_argument("--dataset", default="sick")
    rs.add_argument("--model", default="bert-mini")
    rs.add_argument("--save-every", type=int, default=50)
    rs.add_argument("--kill-at", type=int, default=120)
    rs.add_argument("--out", default=str(OUT), help="Where the killed run's folder goes.")
    rs.add_argument("--threads", type=int, default=2)
    rs.add_argument("--train-args", default="", help="More `prior train` options, e.g. '--backbone DIR'.")
    t = sub.add_parser("table")
    t.add_argument("path", type=Path)
    args = p.parse_args()
    if args.cmd == "table":
        table(args.path)
    else:
        {"runs": cmd_runs, "steptime": cmd_steptime, "loader": cmd_loader, "resume": cmd_resume}[args.cmd](args)


if __name__ == "__main__":
    main()
