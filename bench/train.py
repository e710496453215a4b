"""Real training runs, step-time ratios and loader throughput for the six models (not tests).

Build the store once (spaCy parser here; the default parser where available)::

    PRIOR_DATA_DIR=../shared/data prior build --dataset mrpc --features sdoi,wup,dep,emb \\
        --embeddings EMB_FILE --store STORE

Then::

    python bench/train.py runs --store STORE --regime sample --seeds 1,2,3   # 10% of train, 3 seeds
    python bench/train.py runs --store STORE --regime full --seeds 1         # full train split
    python bench/train.py steptime --store STORE --steps 5                  # vs bert, same batches
    python bench/train.py loader --store STORE                              # pairs/s per core

``runs``: every ``-mini`` model (all-MiniLM-L6-v2) on MRPC with the papers' settings
(trainers/registry.py), dev = a fixed 10% of train (MRPC has no dev split), evaluated on the full
test split; ``--regime sample`` trains on a fixed, seeded 10% of the remaining training pairs
(the same sample for every seed). Results: one JSON line per run in
bench/out/train-<regime>.jsonl and a Markdown table (mean ± sd over seeds) on stdout.
Models whose feature is missing from the store are reported and skipped.
On a GPU machine the same command uses CUDA with bf16 autocast; add ``--size base`` there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
MODELS = ("bert", "bert-sim", "sgnet", "dafa", "gibert", "cda")
PAPER_BERT_BASE_MRPC = "BERT-base in the papers: F1 88.0±0.4 (UERBERT §5), acc 87.2 (CDA Table 1)"


def _store(path: str):  # noqa: ANN202
    from featurestore import open_store

    return open_store(path, create=False)


def _has_feature(store, model: str) -> bool:  # noqa: ANN001
    from featurestore.errors import NotFoundError
    from trainers.registry import MODEL_FEATURES

    feature = MODEL_FEATURES[model]
    if feature is None:
        return True
    try:
        store.find_entry(feature)
        return True
    except NotFoundError:
        return False


def cmd_runs(args: argparse.Namespace) -> None:
    from trainers.loop import TrainConfig, train

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
                model=f"{model}-{args.size}", dataset="mrpc", store=args.store, output=run_dir,
                seed=seed, sample=0.1 if args.regime == "sample" else None,
                eval_splits=("test",), progress=False, threads=args.threads))
            record = {"model": model, "size": args.size, "regime": args.regime, "seed": seed,
                      "seconds": time.perf_counter() - t0, **summary}
            with out_path.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            print(json.dumps(record), flush=True)
    table(out_path)


def table(path: Path) -> None:
    rows: dict[str, list[dict]] = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        rows.setdefault(r["model"], []).append(r)

    def fmt(values: list[float]) -> str:
        if len(values) == 1:
            return f"{100 * values[0]:.1f}"
        return f"{100 * statistics.mean(values):.1f} ± {100 * statistics.stdev(values):.1f}"

    print(f"\n| model | seeds | test F1 | test accuracy | ({PAPER_BERT_BASE_MRPC}) |")
    print("|---|---|---|---|---|")
    for model in MODELS:
        if model in rows:
            rs = rows[model]
            print(f"| {model}-mini | {len(rs)} | {fmt([r['test']['f1'] for r in rs])} | "
                  f"{fmt([r['test']['accuracy'] for r in rs])} | |")


def cmd_steptime(args: argparse.Namespace) -> None:
    """Median seconds per training step (forward, backward, AdamW) on the same batches."""
    from trainers import backbones
    from trainers.data import load_split
    from trainers.models import MODEL_CLASSES
    from trainers.registry import MODEL_FEATURES

    torch.set_num_threads(args.threads)
    store = _store(args.store)
    path = backbones.resolve_backbone(args.size)
    tok = backbones.load_tokenizer(path)
    n_pairs = args.batch_size * args.steps
    result: dict[str, float] = {}
    for model in args.models.split(","):
        if not _has_feature(store, model):
            print(f"skip {model}: feature missing", file=sys.stderr)
            continue
        data = load_split(store, "mrpc", "train", tok, feature=MODEL_FEATURES[model], limit=n_pairs)
        batches = [data.batch(np.arange(i, i + args.batch_size)) for i in range(0, n_pairs, args.batch_size)]
        torch.manual_seed(0)
        net = backbones.build_model(MODEL_CLASSES[model], path, num_labels=2).train()
        opt = torch.optim.AdamW(net.parameters(), lr=1e-5)
        times = []
        for rep in range(args.repeats):
            for b in batches:
                t = time.perf_counter()
                net(**b).loss.backward()
                opt.step()
                opt.zero_grad()
                times.append(time.perf_counter() - t)
        result[model] = statistics.median(times[1:])  # the first step warms up
        print(f"{model}: {result[model]:.3f} s/step", flush=True)
    base = result.get("bert")
    print("\n| model | s/step | × bert |\n|---|---|---|")
    for model, s in result.items():
        print(f"| {model}-{args.size} | {s:.3f} | {s / base:.2f} |" if base else f"| {model} | {s:.3f} | |")


def cmd_loader(args: argparse.Namespace) -> None:
    """Pairs/s of the loader alone (one thread): the one-time read + tokenization, and the
    per-batch part (row gathering, grid building, padding, collation to tensors)."""
    from trainers import backbones
    from trainers.data import load_split
    from trainers.registry import MODEL_FEATURES

    torch.set_num_threads(1)
    store = _store(args.store)
    tok = backbones.load_tokenizer(backbones.resolve_backbone(args.size))
    print("| feature | pairs | read+tokenize pairs/s | batches pairs/s (per core) | mean T |")
    print("|---|---|---|---|---|")
    for model in ("bert", "bert-sim", "sgnet", "dafa", "gibert"):
        if not _has_feature(store, model):
            continue
        feature = MODEL_FEATURES[model]
        t0 = time.perf_counter()
        data = load_split(store, "mrpc", "train", tok, feature=feature)
        t_load = time.perf_counter() - t0
        best = float("inf")
        for _ in range(args.repeats):
            t1 = time.perf_counter()
            lengths = [b["input_ids"].shape[1] for b in data.batches(args.batch_size, shuffle=True)]
            best = min(best, time.perf_counter() - t1)
        print(f"| {feature or '(none)'} | {len(data)} | {len(data) / t_load:,.0f} | "
              f"{len(data) / best:,.0f} | {np.mean(lengths):.1f} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("runs")
    r.add_argument("--store", required=True)
    r.add_argument("--regime", choices=("sample", "full"), default="sample")
    r.add_argument("--seeds", default="1")
    r.add_argument("--models", default=",".join(MODELS))
    r.add_argument("--size", default="mini")
    r.add_argument("--threads", type=int, default=2)
    s = sub.add_parser("steptime")
    s.add_argument("--store", required=True)
    s.add_argument("--models", default=",".join(MODELS))
    s.add_argument("--size", default="mini")
    s.add_argument("--steps", type=int, default=4)
    s.add_argument("--repeats", type=int, default=2)
    s.add_argument("--batch-size", type=int, default=32)
    s.add_argument("--threads", type=int, default=2)
    ld = sub.add_parser("loader")
    ld.add_argument("--store", required=True)
    ld.add_argument("--size", default="mini")
    ld.add_argument("--batch-size", type=int, default=32)
    ld.add_argument("--repeats", type=int, default=3)
    t = sub.add_parser("table")
    t.add_argument("path", type=Path)
    args = p.parse_args()
    if args.cmd == "table":
        table(args.path)
    else:
        {"runs": cmd_runs, "steptime": cmd_steptime, "loader": cmd_loader}[args.cmd](args)


if __name__ == "__main__":
    main()
