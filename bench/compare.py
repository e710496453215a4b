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
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
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
    # the `prior` on PATH where one is installed, else this interpreter's `-m prior.cli.main`
    # (the same program; the record keeps the command as a user types it)
    exe = [shutil.which("prior") or ""] if shutil.which("prior") else [sys.executable, "-m", "prior.cli.main"]
    if len(exe) > 1:  # this checkout's prior, as run from the repository root
        env["PYTHONPATH"] = os.pathsep.join(x for x in (str(REPO), os.environ.get("PYTHONPATH", "")) if x)
    done = subprocess.run([*exe, *cmd[1:]], env=env, capture_output=True, text=True)
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


def _grid_recorded(out: Path) -> set[tuple[str, float | None, float | None, int]]:
    if not out.exists():
        return set()
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {(r["model"], r.get("lr"), r.get("prior_lr"), r["seed"]) for r in rows if r.get("kind") == "grid"}


def grid_one(args: argparse.Namespace, model: str, lr: str | None, prior_lr: str | None) -> dict[str, Any]:
    """One grid cell: ``MODEL-mini`` trained at ``lr`` (the backbone's peak lr; None: -mini's)
    and ``prior_lr`` (the method's own parameters; None: the model's -mini default), scored on
    the dev split only (no eval split is read)."""
    tag = "-".join(x for x in (f"lr{lr}" if lr else "", f"plr{prior_lr}" if prior_lr else "") if x)
    run = Path(args.runs) / f"grid-{args.dataset}-{model}-mini-{tag}-s{args.seed}"
    schedule = [*(["--epochs", args.epochs] if args.epochs else []),
                *(["--patience", args.patience] if args.patience else [])]
    t0 = time.perf_counter()
    cmd, stdout = prior("train", f"{model}-mini", "--dataset", args.dataset, "--store", args.store,
                        "--output", run, *(["--lr", lr] if lr else []),
                        *(["--prior-lr", prior_lr] if prior_lr else []), *schedule,
                        *shlex.split(args.train_args), "--seed", args.seed, "--threads", args.threads,
                        "--no-progress", threads=args.threads)
    summary = json.loads(stdout.strip().splitlines()[0])
    settings = json.loads((run / "best" / "prior.json").read_text())["settings"]
    return {"kind": "grid", "model": f"{model}-mini", "dataset": args.dataset,
            "lr": float(lr) if lr else None, "prior_lr": float(prior_lr) if prior_lr else None,
            "seed": args.seed, "epochs_max": settings["epochs"], "patience": settings["patience"],
            "best_dev": summary["best_dev"], "key_metric": summary["key_metric"],
            "epochs_run": summary["epochs"], "per_epoch": epochs_of(run), "settings": settings,
            "command": shlex.join(cmd), "seconds": round(time.perf_counter() - t0, 1)}


def cmd_grid(args: argparse.Namespace) -> None:
    """Every model of ``--models`` at each ``--lrs`` x ``--prior-lrs`` setting, with early
    stopping on the dev metric, scored on dev alone: the chosen setting is the one with the best
    dev score. A cell already in ``--out`` is skipped, so an interrupted grid resumes."""
    out = Path(args.out)
    done = _grid_recorded(out)
    lrs = args.lrs.split(",") if args.lrs else [None]
    prior_lrs = args.prior_lrs.split(",") if args.prior_lrs else [None]
    jobs = [(model, lr, plr) for plr in prior_lrs for lr in lrs for model in args.models.split(";")
            if (f"{model}-mini", float(lr) if lr else None, float(plr) if plr else None, args.seed) not in done]
    with ThreadPoolExecutor(args.parallel) as pool:
        for record in pool.map(lambda job: grid_one(args, *job), jobs):
            append(out, record)


def _model_spec(spec: str) -> tuple[str, list[str], str]:
    """``sgnet:pool=mean`` → (``sgnet``, [``-o``, ``pool=mean``], ``sgnet[pool=mean]``)."""
    model, _, opts = spec.partition(":")
    options = [o for o in opts.split(",") if o]
    label = f"{model}[{','.join(options)}]" if options else model
    return model, [a for o in options for a in ("-o", o)], label


def _recorded(out: Path) -> set[tuple[str, str, int]]:
    if not out.exists():
        return set()
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {(r["variant"], r["regime"], r["seed"]) for r in rows if r.get("kind") == "run"}


def run_one(args: argparse.Namespace, spec: str, seed: int) -> dict[str, Any]:
    """Train one model at one seed, score its best checkpoint on ``--eval-split`` as trained and,
    for a feature model, with its feature neutral and shuffled."""
    model, options, label = _model_spec(spec)
    extra = shlex.split(args.train_args)
    label = " ".join([label, *extra])
    tag = "-".join(part.strip("-") for part in
                   label.replace("[", " ").replace("]", "").replace("=", "").replace(",", " ").split())
    run = Path(args.runs) / f"{args.dataset}-{args.regime}-{tag}-mini-s{seed}"
    sample = ["--sample", args.sample, "--sample-seed", args.sample_seed] if args.regime == "sample" else []
    t0 = time.perf_counter()
    cmd, stdout = prior("train", f"{model}-mini", "--dataset", args.dataset, "--store", args.store,
                        "--output", run, "--seed", seed, *sample, *options, *extra, "--eval-split", args.eval_split,
                        "--threads", args.threads, "--no-progress", threads=args.threads)
    summary = json.loads(stdout.strip().splitlines()[0])
    scores = summary[args.eval_split]
    record: dict[str, Any] = {
        "kind": "run", "model": f"{model}-mini", "variant": label, "options": options[1::2], "train_args": extra,
        "dataset": args.dataset, "regime": args.regime, "seed": seed, "eval_split": args.eval_split,
        "sample": float(args.sample) if sample else None, "sample_seed": args.sample_seed if sample else None,
        "best_dev": summary["best_dev"], "epochs_run": summary["epochs"],
        "settings": json.loads((run / "best" / "prior.json").read_text())["settings"],
        "per_epoch": epochs_of(run), "command": shlex.join(cmd), "train_seconds": round(time.perf_counter() - t0, 1),
        **{f"test_{k}": v for k, v in scores.items()},
    }
    if model in FEATURE_MODELS:
        record["sensitivity"] = {}
        for features in ("neutral", "shuffled"):
            ecmd, out = prior("eval", run, "--split", args.eval_split, "--features", features,
                              threads=args.threads)
            got = metrics_line(out)
            record["sensitivity"][features] = {
                **got, "drop": {k: round(scores[k] - v, 6) for k, v in got.items() if k in scores},
                "command": shlex.join(ecmd)}
    record["seconds"] = round(time.perf_counter() - t0, 1)
    return record


def cmd_runs(args: argparse.Namespace) -> None:
    """Every model of ``--models`` at every seed (seed-major, ``--parallel`` at once); a run
    already in ``--out`` is skipped, so an interrupted comparison resumes."""
    out = Path(args.out)
    done = _recorded(out)
    extra = shlex.split(args.train_args)
    jobs = [(spec, int(seed)) for seed in args.seeds.split(",") for spec in args.models.split(";")
            if (" ".join([_model_spec(spec)[2], *extra]), args.regime, int(seed)) not in done]
    with ThreadPoolExecutor(args.parallel) as pool:
        for record in pool.map(lambda job: run_one(args, *job), jobs):
            append(out, record)


def _mini(variant: str) -> str:
    """``sgnet[pool=mean]`` → ``sgnet-mini[pool=mean]``; ``gibert --prior-lr 1e-3`` →
    ``gibert-mini --prior-lr 1e-3``."""
    name, space, args = variant.partition(" ")
    model, bracket, rest = name.partition("[")
    return f"{model}-mini{bracket}{rest}{space}{args}"


def _mean_sd(values: list[float]) -> str:
    """``mean ± sd`` in percentage points (sd over seeds, n-1; blank with one seed)."""
    n = len(values)
    if n == 0:
        return ""
    mean = sum(values) / n
    shown = f"{100 * mean:.1f}".replace("-0.0", "0.0")
    if n == 1:
        return shown
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
    return f"{shown} ± {100 * sd:.1f}"


#: `prior train` arguments that concern a method's feature or parameters only: bert's run is
#: the same with or without them (it has no parameters of its own and reads no feature)
MODEL_ONLY_ARGS = ("--prior-lr", "--dep-view", "--feature-param")


def _schedule_args(args: str) -> str:
    """``args`` without the model-only arguments and their values."""
    words = shlex.split(args)
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in MODEL_ONLY_ARGS:
            skip = True
            continue
        kept.append(word)
    return " ".join(kept)


def _paired_bert(variant: str, bert: dict[tuple[str, int], float]) -> dict[int, float]:
    """bert's score per seed to pair ``variant`` with: bert trained with the same schedule
    arguments (``dafa --epochs 10`` → ``bert --epochs 10``; ``--prior-lr``, ``--dep-view`` and
    ``--feature-param`` leave bert's run unchanged and are dropped) where it ran, else plain bert."""
    _, _, args = variant.partition(" ")
    same = " ".join(["bert", _schedule_args(args)]).strip()
    chosen = same if any(v == same for v, _ in bert) else "bert"
    return {seed: score for (v, seed), score in bert.items() if v == chosen}


def _signs(deltas: list[float]) -> str:
    """``ahead/level/behind``: how many seeds the variant beat bert at, tied (the same score:
    the same number of test pairs right) and lost."""
    return "/".join(str(sum(1 for d in deltas if test(d))) for test in (
        lambda d: d > 0, lambda d: d == 0, lambda d: d < 0))


def report_table(records: list[dict[str, Any]], regime: str, metric: str = "accuracy") -> str:
    """Markdown table of one regime: test score per model over seeds, the paired difference to
    ``bert`` at the same seed (mean ± sd, and at how many seeds it is ahead, level, behind), and
    the drops when the feature is neutral or shuffled."""
    runs = [r for r in records if r.get("kind") == "run" and r["regime"] == regime]
    bert = {(r["variant"], r["seed"]): r[f"test_{metric}"] for r in runs if r["variant"].split(" ")[0] == "bert"}
    variants = list(dict.fromkeys(r["variant"] for r in runs))
    lines = [f"| model | seeds | test {metric} | Δ vs bert (paired) | seeds ahead/level/behind | "
             "drop, neutral feature | drop, shuffled feature | best dev | epochs |",
             "|---|---|---|---|---|---|---|---|---|"]
    for variant in variants:
        rows = sorted((r for r in runs if r["variant"] == variant), key=lambda r: r["seed"])
        scores = [r[f"test_{metric}"] for r in rows]
        base = _paired_bert(variant, bert)
        deltas = [r[f"test_{metric}"] - base[r["seed"]] for r in rows if r["seed"] in base]
        drops = {f: [r["sensitivity"][f]["drop"][metric] for r in rows if "sensitivity" in r]
                 for f in ("neutral", "shuffled")}
        lines.append(" | ".join([
            f"| {_mini(variant)}", ",".join(str(r["seed"]) for r in rows), _mean_sd(scores),
            *(["", ""] if variant.split(" ")[0] == "bert" else [_mean_sd(deltas), _signs(deltas)]),
            _mean_sd(drops["neutral"]) or "n/a",
            _mean_sd(drops["shuffled"]) or "n/a", _mean_sd([r["best_dev"] for r in rows]),
            ",".join(str(r["epochs_run"]) for r in rows)]) + " |")
    return "\n".join(lines)


def report_figure(records: list[dict[str, Any]], path: Path, metric: str = "accuracy") -> None:
    """One panel per regime: each seed a dot, the mean with a ±sd bar, bert's mean a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in records if r.get("kind") == "run"]
    regimes = list(dict.fromkeys(r["regime"] for r in runs))
    fig, axes = plt.subplots(1, len(regimes), figsize=(5.5 * len(regimes), 4), squeeze=False)
    for ax, regime in zip(axes[0], regimes):
        rows = [r for r in runs if r["regime"] == regime]
        variants = list(dict.fromkeys(r["variant"] for r in rows))
        for x, variant in enumerate(variants):
            ys = [100 * r[f"test_{metric}"] for r in rows if r["variant"] == variant]
            mean = sum(ys) / len(ys)
            sd = (sum((y - mean) ** 2 for y in ys) / (len(ys) - 1)) ** 0.5 if len(ys) > 1 else 0.0
            ax.scatter([x] * len(ys), ys, s=14, color="0.55", zorder=2)
            ax.errorbar([x], [mean], yerr=[sd], fmt="o", color="C3" if variant.split(" ")[0] == "bert" else "C0",
                        capsize=4, zorder=3)
            if variant.split(" ")[0] == "bert":
                ax.axhline(mean, color="C3", lw=0.8, ls="--", zorder=1)
                ax.annotate(f"{_mini(variant)} mean", xy=(len(variants) - 0.45, mean), color="C3", fontsize=8,
                            ha="right", va="bottom")
        ax.set_xticks(range(len(variants)), [_mini(v) for v in variants], rotation=30, ha="right")
        ax.set_xlim(-0.6, len(variants) - 0.4)
        ax.set_ylabel(f"test {metric} (%)")
        dataset = rows[0]["dataset"]
        ax.set_title(f"{dataset}, {regime} training split ({len({r['seed'] for r in rows})} seed(s))")
        low, high = ax.get_ylim()
        ax.set_ylim(low - 0.3, high + 0.3)
        ax.grid(axis="y", lw=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def cmd_report(args: argparse.Namespace) -> None:
    records = [json.loads(line) for line in Path(args.results).read_text().splitlines() if line.strip()]
    regimes = list(dict.fromkeys(r["regime"] for r in records if r.get("kind") == "run"))
    for regime in regimes:
        print(f"\n{regime}:\n\n{report_table(records, regime, args.metric)}")
    if args.figure:
        report_figure(records, Path(args.figure), args.metric)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("grid")
    g.add_argument("--store", required=True)
    g.add_argument("--dataset", default="sick")
    g.add_argument("--models", default="bert", help="';'-separated models, each trained as MODEL-mini")
    g.add_argument("--lrs", default="", help="','-separated peak lrs (default: -mini's only)")
    g.add_argument("--prior-lrs", default="", help="','-separated lrs of the method's own parameters "
                   "(default: the model's -mini default only)")
    g.add_argument("--epochs", type=int, default=None, help="default: -mini's")
    g.add_argument("--patience", type=int, default=None, help="default: -mini's")
    g.add_argument("--train-args", default="", help="more `prior train` arguments for every cell")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--parallel", type=int, default=1, help="cells at once")
    g.add_argument("--threads", type=int, default=1)
    g.add_argument("--runs", default="runs/compare")
    g.add_argument("--out", required=True)
    r = sub.add_parser("runs")
    r.add_argument("--store", required=True)
    r.add_argument("--dataset", default="sick")
    r.add_argument("--regime", choices=("full", "sample"), default="full")
    r.add_argument("--seeds", default="1,2,3")
    r.add_argument("--models", default=";".join(MODELS),
                   help="';'-separated, a model's options after ':' (e.g. 'bert;sgnet:pool=mean')")
    r.add_argument("--sample", default="0.1")
    r.add_argument("--sample-seed", default="0")
    r.add_argument("--eval-split", default="test")
    r.add_argument("--train-args", default="", help="more `prior train` arguments for every run, part of "
                   "the variant's name, e.g. '--prior-lr 1e-3'")
    r.add_argument("--parallel", type=int, default=2, help="runs at once")
    r.add_argument("--threads", type=int, default=1, help="torch threads per run")
    r.add_argument("--runs", default="runs/compare")
    r.add_argument("--out", required=True)
    o = sub.add_parser("report")
    o.add_argument("results")
    o.add_argument("--metric", default="accuracy")
    o.add_argument("--figure", help="PNG to write")
    args = p.parse_args()
    {"grid": cmd_grid, "runs": cmd_runs, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    main()
