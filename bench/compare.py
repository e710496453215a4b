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
import importlib.util
import json
import os
import re
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
    """One JSON line at the end of ``out``, under an exclusive lock: several comparisons may
    write to one file at once (bench/run_queue.py runs two), and a long line is more than one write."""
    import fcntl

    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
        fcntl.flock(fh, fcntl.LOCK_UN)
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
    meta = json.loads((run / "best" / "prior.json").read_text())
    settings = meta["settings"]
    return {"kind": "grid", "model": f"{model}-mini", "dataset": args.dataset,
            "lr": float(lr) if lr else None, "prior_lr": float(prior_lr) if prior_lr else None,
            "seed": args.seed, "epochs_max": settings["epochs"], "patience": settings["patience"],
            "best_dev": summary["best_dev"], "key_metric": summary["key_metric"],
            "epochs_run": summary["epochs"], "per_epoch": epochs_of(run), "settings": settings,
            "device": meta.get("device"), "device_name": meta.get("device_name"),
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
    meta = json.loads((run / "best" / "prior.json").read_text())
    scores = summary[args.eval_split]
    record: dict[str, Any] = {
        "kind": "run", "model": f"{model}-mini", "variant": label, "options": options[1::2], "train_args": extra,
        "dataset": args.dataset, "regime": args.regime, "seed": seed, "eval_split": args.eval_split,
        "sample": float(args.sample) if sample else None, "sample_seed": args.sample_seed if sample else None,
        "best_dev": summary["best_dev"], "epochs_run": summary["epochs"],
        # which pairs chose the checkpoint (a dev split, or the pairs held out of train) and how many
        **{k: meta.get(k) for k in ("dev", "dev_pairs", "train_pairs")},
        "settings": meta["settings"], "device": meta.get("device"), "device_name": meta.get("device_name"),
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
    the drops when the feature is neutral or shuffled. ``metric`` may name several (``f1,accuracy``):
    each gets its score and paired-difference columns; the counts and drops are the first one's."""
    metrics = metric.split(",")
    key = metrics[0]
    runs = [r for r in records if r.get("kind") == "run" and r["regime"] == regime]
    bert = {m: {(r["variant"], r["seed"]): r[f"test_{m}"] for r in runs if r["variant"].split(" ")[0] == "bert"}
            for m in metrics}
    variants = list(dict.fromkeys(r["variant"] for r in runs))
    if len(metrics) == 1:
        scored = f"test {key} | Δ vs bert (paired) | seeds ahead/level/behind | drop, neutral feature | " \
                 "drop, shuffled feature"
    else:
        scored = " | ".join(f"test {m} | Δ {m} vs bert (paired)" for m in metrics) + \
            f" | seeds ahead/level/behind ({key}) | drop, neutral feature ({key}) | drop, shuffled feature ({key})"
    lines = [f"| model | seeds | {scored} | best dev | epochs |",
             "|" + "---|" * (7 + 2 * len(metrics))]
    for variant in variants:
        rows = sorted((r for r in runs if r["variant"] == variant), key=lambda r: r["seed"])
        is_bert = variant.split(" ")[0] == "bert"
        cells: list[str] = []
        for m in metrics:
            base = _paired_bert(variant, bert[m])
            deltas = [r[f"test_{m}"] - base[r["seed"]] for r in rows if r["seed"] in base]
            cells += [_mean_sd([r[f"test_{m}"] for r in rows]), "" if is_bert else _mean_sd(deltas)]
            if m == key:
                signs = "" if is_bert else _signs(deltas)
        drops = {f: [r["sensitivity"][f]["drop"][key] for r in rows if "sensitivity" in r]
                 for f in ("neutral", "shuffled")}
        lines.append(" | ".join([
            f"| {_mini(variant)}", ",".join(str(r["seed"]) for r in rows), *cells, signs,
            _mean_sd(drops["neutral"]) or "n/a",
            _mean_sd(drops["shuffled"]) or "n/a", _mean_sd([r["best_dev"] for r in rows]),
            ",".join(str(r["epochs_run"]) for r in rows)]) + " |")
    return "\n".join(lines)


def _two(value: float) -> str:
    """Two decimals, or one significant digit where two decimals would show a non-zero as 0.00."""
    return f"{value:.1g}" if 0 < abs(value) < 0.005 else f"{value:.2f}"


_CHECKPOINT = re.compile(r"^(?P<dataset>[^-]+)-(?P<regime>sample|full)-(?P<model>[a-z]+)(?P<rest>.*)-mini-s(?P<seed>\d+)$")


def _checkpoint_run(path: str) -> dict[str, str] | None:
    """``runs/compare/sick-full-dafa-prior-lr-5e-5-mini-s1/best`` → dataset, regime, model, the
    arguments beyond the regime's schedule (``--prior-lr 5e-5``) and the seed (compare.py's names)."""
    name = Path(path).parent.name if Path(path).name in ("best", "last") else Path(path).name
    got = _CHECKPOINT.match(name)
    if got is None:
        return None
    rest = got["rest"].replace("-epochs-10-patience-3", "").strip("-")
    extra = re.sub(r"^(prior-lr|dep-view)-(.+)$", r"--\1 \2", rest) if rest else ""
    return {**got.groupdict(), "extra": extra}


def gates_table(records: list[dict[str, Any]], regime: str) -> str:
    """DAFA's gates with the stored M_F (`bench/dafa_fusion.py --feature` records) of the
    checkpoints of one regime: the fusion term's size and each gate's mean and spread."""
    lines = [f"| checkpoint ({regime}) | fusion term / attention output | filtration f mean (range) | "
             "fusion g mean (range) |", "|---|---|---|---|"]
    for r in records:
        run = _checkpoint_run(r["model"]) if r.get("grid") == "stored M_F" else None
        if run is None or run["regime"] != regime:
            continue
        label = " ".join(x for x in (run["model"], f"`{run['extra']}`" if run["extra"] else "", f"seed {run['seed']}") if x)
        spread = [f"{_two(r[f'{g}_mean'])} ({_two(r[f'{g}_range'][0])}, {_two(r[f'{g}_range'][1])}–"
                  f"{_two(r[f'{g}_range'][2])}, {_two(r[f'{g}_range'][3])})" for g in ("f", "g")]
        lines.append(f"| {label} | {_two(r['fusion_norm_ratio'])} | {spread[0]} | {spread[1]} |")
    return "\n".join(lines)


def choose(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The grid's choice among one model's cells: the best dev score; a tie goes to the cell with
    the higher mean dev score over its epochs (the steadier), then to the smaller learning rate."""
    def key(c: dict[str, Any]) -> tuple[float, float, float]:
        devs = [e[f"dev_{c['key_metric']}"] for e in c["per_epoch"] if f"dev_{c['key_metric']}" in e]
        mean = sum(devs) / len(devs) if devs else 0.0
        return (c["best_dev"], mean, -(c.get("prior_lr") or c.get("lr") or 0.0))
    return max(cells, key=key)


def grid_table(records: list[dict[str, Any]]) -> str:
    """A learning-rate grid (`grid` records): per model and setting the dev score per epoch and
    the best, the chosen setting per model marked (`choose`)."""
    cells = [r for r in records if r.get("kind") == "grid"]
    which = [name for name in ("lr", "prior_lr") if any(c.get(name) is not None for c in cells)]
    lines = ["| model | " + " | ".join(which) + " | dev per epoch | best dev | epochs | chosen |",
             "|---|" + "---|" * (len(which) + 4)]
    for model in dict.fromkeys(c["model"] for c in cells):
        mine = [c for c in cells if c["model"] == model]
        best = choose(mine)
        for c in sorted(mine, key=lambda c: tuple(c.get(n) or 0.0 for n in which)):
            devs = [e[f"dev_{c['key_metric']}"] for e in c["per_epoch"] if f"dev_{c['key_metric']}" in e]
            lines.append(" | ".join([f"| {model}", *(f"{c[n]:g}" if c.get(n) is not None else "default" for n in which),
                                     ", ".join(f"{100 * d:.1f}" for d in devs), f"{100 * c['best_dev']:.1f}",
                                     str(c["epochs_run"]), "**chosen**" if c is best else ""]) + " |")
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


def paired_figure(panels: list[tuple[str, list[dict[str, Any]], str]], path: Path, regime: str = "full") -> None:
    """One panel per (title, records, metric): each model's paired difference to ``bert`` at the
    same seed (a dot per seed, the mean with a ±sd bar), 0 a line: the same scale for every model.
    Models run down the panel, each named with its seed count, so long variant names stay
    readable; the panels share the figure's height."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    for title, records, metric in panels:
        runs = [r for r in records if r.get("kind") == "run" and r["regime"] == regime]
        bert = {(r["variant"], r["seed"]): r[f"test_{metric}"] for r in runs if r["variant"].split(" ")[0] == "bert"}
        variants = [v for v in dict.fromkeys(r["variant"] for r in runs) if v.split(" ")[0] != "bert"]
        diffs = {}
        for variant in variants:
            base = _paired_bert(variant, bert)
            ys = [100 * (r[f"test_{metric}"] - base[r["seed"]]) for r in runs
                  if r["variant"] == variant and r["seed"] in base]
            if ys:
                diffs[variant] = ys
        rows.append((title, metric, diffs))
    height = max(2.4, 0.42 * max((len(d) for _, _, d in rows), default=1) + 1.3)
    label_chars = max((len(_mini(v)) + 7 for _, _, d in rows for v in d), default=10)
    width = 3.4 + 0.065 * label_chars  # the plot, and the labels' width at 8 points
    fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), height), squeeze=False)
    for ax, (title, metric, diffs) in zip(axes[0], rows):
        labels = []
        for y, (variant, xs) in enumerate(diffs.items()):
            mean = sum(xs) / len(xs)
            sd = (sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5 if len(xs) > 1 else 0.0
            ax.scatter(xs, [y] * len(xs), s=14, color="0.55", zorder=2)
            ax.errorbar([mean], [y], xerr=[sd], fmt="o", color="C0", capsize=4, zorder=3)
            labels.append(f"{_mini(variant)} (n={len(xs)})")
        ax.axvline(0, color="C3", lw=0.8, ls="--", zorder=1)
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_ylim(len(labels) - 0.5, -0.5)  # the first model on top
        ax.set_xlabel(f"test {metric}: model − bert-mini (points)")
        ax.set_title(f"{title}, paired by seed")
        ax.grid(axis="x", lw=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def cmd_figure(args: argparse.Namespace) -> None:
    """``FILE:METRIC`` panels, e.g. docs/results/mrpc.jsonl:f1 docs/results/rte.jsonl:accuracy."""
    panels = []
    for spec in args.panels:
        name, _, metric = spec.rpartition(":")
        records = read_records(name)
        dataset = next((r["dataset"] for r in records if r.get("kind") == "run"), Path(name).stem)
        panels.append((f"{dataset.upper()} {metric}", records, metric))
    paired_figure(panels, Path(args.out), args.regime)


def _bench(name: str) -> Any:
    """Another script of bench/ as a module (they are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_records(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


TABLES = ("runs", "oracle", "forced", "saturation", "grid", "gates")


def _tables_of(records: list[dict[str, Any]]) -> list[str]:
    """The kinds of table ``records`` make, in TABLES' order."""
    kinds = {r.get("kind") for r in records}
    has = {"runs": "run" in kinds, "oracle": "oracle" in kinds, "forced": "forced" in kinds,
           "saturation": "saturation" in kinds, "grid": "grid" in kinds,
           "gates": any(r.get("grid") == "stored M_F" for r in records)}
    return [t for t in TABLES if has[t]]


def report(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(title, markdown) of every table ``args`` asks for, from ``args.results``."""
    records = read_records(args.results)
    out: list[tuple[str, str]] = []
    for table in [args.table] if args.table else _tables_of(records):
        if table in ("runs", "gates"):
            found = [r["regime"] for r in records if r.get("kind") == "run"] if table == "runs" else [
                run["regime"] for r in records if r.get("grid") == "stored M_F"
                for run in [_checkpoint_run(r["model"])] if run is not None]
            for regime in [args.regime] if args.regime else list(dict.fromkeys(found)):
                made = report_table(records, regime, args.metric) if table == "runs" else gates_table(records, regime)
                out.append((f"{table} {regime}", made))
        elif table == "grid":
            out.append(("grid", grid_table(records)))
        else:
            oracle = _bench("oracle")
            if table == "oracle":
                out.append(("oracle", oracle.report_table(records, oracle.baseline_scores(
                    args.baseline, args.baseline_variant))))
            else:
                out.append((table, oracle.forced_table(records) if table == "forced" else oracle.saturation_table(records)))
    return out


def cmd_report(args: argparse.Namespace) -> None:
    tables = report(args)
    for title, table in tables:
        print(f"\n{title}:\n\n{table}" if len(tables) > 1 else table)
    if args.figure:
        report_figure(read_records(args.results), Path(args.figure), args.metric)


#: a generated table in a markdown file: this comment line, then the table `report` prints
MARKER = re.compile(r"^<!-- report: (?P<args>.+?) -->$")


def _report_parser() -> argparse.ArgumentParser:
    o = argparse.ArgumentParser(prog="compare.py report", add_help=False)
    o.add_argument("results")
    o.add_argument("--table", choices=TABLES, help="one kind of table (default: every kind the file makes)")
    o.add_argument("--regime", help="runs and gates tables: this regime only")
    o.add_argument("--metric", default="accuracy", help="','-separated, e.g. f1,accuracy")
    o.add_argument("--baseline", default=str(REPO / "docs" / "results" / "sick.jsonl"),
                   help="oracle table: bert-mini's runs to compare with")
    o.add_argument("--baseline-variant", default="bert --epochs 10 --patience 3")
    o.add_argument("--figure", help="PNG to write")
    return o


def regenerate(text: str, root: Path = REPO) -> str:
    """``text`` (markdown) with every table under a ``<!-- report: ARGS -->`` line replaced by
    what `report ARGS` prints now (paths in ARGS relative to ``root``); one table per marker."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        out.append(lines[i])
        got = MARKER.match(lines[i])
        i += 1
        if got is None:
            continue
        args = _report_parser().parse_args(shlex.split(got["args"]))
        args.results = str(root / args.results)
        if args.baseline and not Path(args.baseline).is_absolute():
            args.baseline = str(root / args.baseline)
        tables = report(args)
        if len(tables) != 1:
            raise SystemExit(f"`{got['args']}` makes {len(tables)} tables; a marker needs exactly one")
        out.extend(tables[0][1].split("\n"))
        while i < len(lines) and lines[i].startswith("|"):
            i += 1  # the table as it was
    return "\n".join(out)


def cmd_choice(args: argparse.Namespace) -> None:
    """Print the setting the grid chose for one model (`choose`), e.g. for `--prior-lr $(…)`;
    fail while the grid has fewer than ``--cells`` cells of that model."""
    cells = [r for r in read_records(args.results) if r.get("kind") == "grid" and r["model"] == f"{args.model}-mini"]
    if len(cells) < args.cells:
        sys.exit(f"the grid has {len(cells)} of {args.cells} cells of {args.model}-mini")
    print(f"{choose(cells)[args.setting]:g}")


def cmd_docs(args: argparse.Namespace) -> None:
    """Regenerate the marked tables of markdown files; with ``--check`` only say which differ."""
    stale = []
    for name in args.files:
        path = Path(name)
        text = path.read_text()
        new = regenerate(text)
        if new != text:
            stale.append(name)
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        sys.exit(f"tables differ from their records in: {', '.join(stale)} (run `python bench/compare.py docs "
                 f"{' '.join(stale)}`)")


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
    sub.add_parser("report", parents=[_report_parser()], help="tables (and a figure) from a records file")
    d = sub.add_parser("docs", help="regenerate the tables under `<!-- report: ARGS -->` lines")
    d.add_argument("files", nargs="+")
    d.add_argument("--check", action="store_true", help="change nothing; fail if a table differs")
    f = sub.add_parser("figure", help="paired differences to bert-mini, one panel per FILE:METRIC")
    f.add_argument("panels", nargs="+")
    f.add_argument("--out", required=True)
    f.add_argument("--regime", default="full")
    c = sub.add_parser("choice", help="the setting a grid chose for one model")
    c.add_argument("results")
    c.add_argument("--model", required=True, help="e.g. dafa (the grid trained dafa-mini)")
    c.add_argument("--setting", default="prior_lr", choices=("lr", "prior_lr"))
    c.add_argument("--cells", type=int, default=1, help="fail while the grid has fewer cells of the model")
    args = p.parse_args()
    {"grid": cmd_grid, "runs": cmd_runs, "report": cmd_report, "docs": cmd_docs, "choice": cmd_choice,
     "figure": cmd_figure}[args.cmd](args)


if __name__ == "__main__":
    main()
