"""Pathway check: can each feature model learn the label from its feature at all?

Each feature model is trained with an *oracle* feature: a feature in the model's own storage
layout and value range that determines the gold label, so a model whose pathway carries its
feature to the prediction reaches ~100 % test accuracy, and one whose pathway does not stays
where `bert` is. The oracle replaces the model's feature source wherever the run reads pairs (a
wrapper around the readers `prior.trainers.run_setup.open_run_data` opens: the training
stream, dev and the scored splits); the store is only read, nothing is written to it.

Oracles, per layout (class c = the pair's gold label id):

- pair matrix (`dafa`'s M_F + 1, `bert-sim`'s S): every cross-sentence cell of the pair holds
  the class's value, the rest of the grid stays neutral (1). `bert-sim`: 0, 0.5, 1 (S lies in
  [0, 1]). `dafa`: 1, 1 + the median and 1 + the 90th percentile of the non-zero M_F cells of
  the training split (the values G takes on real pairs);
- sentence mask (`sgnet`'s SDOI): every word of both sentences sees itself only (c = 0), itself
  and the words before it (c = 1: the SDOI mask of a chain), or every word (c = 2);
- word vectors (`gibert`): every word of both sentences gets the vector of one vocabulary word
  per class (the first three rows of the vocabulary with non-zero vectors).

    python bench/oracle.py runs --store STORE --dataset sick --seeds 1 \\
        --models "dafa;sgnet;sgnet:pool=mean;bert-sim;gibert" --out docs/results/oracle.jsonl
    python bench/oracle.py runs ... --train-args "--prior-lr 1e-3"
    python bench/oracle.py report docs/results/oracle.jsonl --baseline docs/results/sick.jsonl

Each run trains `MODEL-mini` on the 10 % sample of the training split (``--sample 0.1
--sample-seed 0``) with the sample regime's schedule (10 epochs, patience 3), scores the best
checkpoint on the test split with the oracle (``test_accuracy``) and with the oracle replaced
by the neutral feature (``test_accuracy_neutral``: what the model gets without it), and
records the gate values a pathway opens (`gibert`'s g, `dafa`'s filtration and fusion gates
are in bench/dafa_fusion.py).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

FEATURE_MODELS = ("dafa", "sgnet", "bert-sim", "gibert")
#: bert-sim's S lies in [0, 1]: one value per class
SIM_LEVELS = (0.0, 0.5, 1.0)


def grid_levels(model: str, source: Any) -> tuple[float, ...]:
    """The per-class cross-sentence values of a pair-matrix oracle (module docstring)."""
    if model == "bert-sim":
        return SIM_LEVELS
    values = np.asarray(source.matrices.values, dtype=np.float64) - 1.0  # G = M_F + 1
    nonzero = values[values > 0]
    if nonzero.size == 0:
        return (1.0, 2.0, 3.0)
    return (1.0, 1.0 + float(np.quantile(nonzero, 0.5)), 1.0 + float(np.quantile(nonzero, 0.9)))


def _chain_mask(n: int, c: int) -> np.ndarray:
    if c == 0:
        return np.eye(n, dtype=np.uint8)
    if c == 1:
        return np.tril(np.ones((n, n), dtype=np.uint8))
    return np.ones((n, n), dtype=np.uint8)


def vector_ids(table: np.ndarray, classes: int) -> list[int]:
    """One vocabulary row per class: the first rows with non-zero vectors."""
    rows = [i for i in range(table.shape[0] - 1) if np.any(table[i])]
    if len(rows) < classes:
        raise ValueError(f"the vocabulary has {len(rows)} non-zero vectors; an oracle needs {classes}")
    return rows[:classes]


def oracle_source(source: Any, labels: np.ndarray, counts: np.ndarray, model: str,
                  levels: tuple[float, ...] | None = None) -> Any:
    """``source`` (a feature source of one split) with every pair's feature set from its label."""
    from prior.layouts.ragged import Ragged
    from prior.trainers.sources import MaskSource, PairGridSource, VectorSource, _sides

    labels = np.asarray(labels, dtype=np.int64)
    fingerprint = {**source.fingerprint, "oracle": model}
    if isinstance(source, PairGridSource):
        lv = levels or grid_levels(model, source)
        mats = [np.full((int(n), int(m)), lv[int(y)], np.float32) for (n, m), y in zip(counts, labels)]
        return replace(source, matrices=Ragged.from_arrays(mats, np.float32), fingerprint=fingerprint)
    if isinstance(source, MaskSource):
        a = [_chain_mask(int(n), int(y)) for (n, _), y in zip(counts, labels)]
        b = [_chain_mask(int(m), int(y)) for (_, m), y in zip(counts, labels)]
        masks, index_a, index_b = _sides(Ragged.from_arrays(a, np.uint8), Ragged.from_arrays(b, np.uint8))
        return replace(source, masks=masks, index_a=index_a, index_b=index_b, full_lengths=None,
                       fingerprint=fingerprint)
    if isinstance(source, VectorSource):
        ids = vector_ids(source.table, int(labels.max()) + 1)
        a = [np.full(int(n), ids[int(y)], np.int32) for (n, _), y in zip(counts, labels)]
        b = [np.full(int(m), ids[int(y)], np.int32) for (_, m), y in zip(counts, labels)]
        both, index_a, index_b = _sides(Ragged.from_arrays(a, np.int32), Ragged.from_arrays(b, np.int32))
        return replace(source, ids=both, index_a=index_a, index_b=index_b, fingerprint=fingerprint)
    raise TypeError(f"no oracle for a {type(source).__name__}")


def with_oracle(data: Any, model: str, levels: tuple[float, ...] | None = None) -> Any:
    """A `PairData` whose feature is the oracle of its labels (a model without a feature: as is)."""
    if data.source is None:
        return data
    if data.labels is None:
        raise ValueError(f"{data.dataset}/{data.split} has no labels: no oracle")
    source = oracle_source(data.source, data.labels, data.word_counts, model, levels)
    return replace(data, source=source, fingerprint={**data.fingerprint, "oracle": model})


class OracleReader:
    """A `prior.trainers.reader.SplitReader` whose pairs come with the oracle feature: what a
    training run reads through it (the stream, the dev and eval splits)."""

    def __init__(self, reader: Any, model: str, levels: tuple[float, ...] | None) -> None:
        self.reader, self.model, self.levels = reader, model, levels
        self.index = replace(reader.index, fingerprint={**reader.index.fingerprint, "oracle": model})

    def read(self, positions: Any, *, keep: bool = True) -> Any:
        return with_oracle(self.reader.read(positions, keep=keep), self.model, self.levels)


def train_with_oracle(cfg: Any, model: str, given: tuple[float, ...] | None = None) -> dict[str, Any]:
    """`prior.trainers.loop.train(cfg)` with every split's feature replaced by its oracle. The
    levels of a pair-matrix oracle are ``given``, else (dafa) from the real training split; the
    same levels for every split."""
    import prior.trainers.loop as loop
    import prior.trainers.run_setup as setup

    real = setup.open_run_data
    levels: dict[str, tuple[float, ...]] = {"grid": given} if given else {}

    def opened(*args: Any, **kw: Any) -> Any:
        data = real(*args, **kw)
        if data.train_index.plan is None:  # a model without a feature: as is
            return data
        if "grid" not in levels:
            source = data.train.read(np.arange(len(data.train.index))).source
            if hasattr(source, "matrices"):
                levels["grid"] = grid_levels(model, source)
        wrap = {id(r): OracleReader(r, model, levels.get("grid"))
                for r in (data.train, data.dev.reader, *(e.reader for e in data.evals.values()))}
        return replace(data, train=wrap[id(data.train)], dev=replace(data.dev, reader=wrap[id(data.dev.reader)]),
                       evals={s: replace(e, reader=wrap[id(e.reader)]) for s, e in data.evals.items()})

    setup.open_run_data = opened
    try:
        summary: dict[str, Any] = loop.train(cfg)
    finally:
        setup.open_run_data = real
    summary["oracle_levels"] = list(levels.get("grid", ()))
    return summary


def _spec(spec: str) -> tuple[str, dict[str, Any], str]:
    model, _, opts = spec.partition(":")
    options = dict(o.split("=", 1) for o in opts.split(",") if o)
    label = f"{model}[{','.join(f'{k}={v}' for k, v in options.items())}]" if options else model
    return model, options, label


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def cmd_one(args: argparse.Namespace) -> None:
    """One oracle run, in this process; appends its record to ``--out``."""
    import torch

    from prior.featurestore import open_store
    from prior.trainers.checkpoint import load_checkpoint, stored_view
    from prior.trainers.config import DataSpec, ModelSpec, RunSpec, TrainConfig
    from prior.trainers.data import load_split
    from prior.trainers.dataset_ref import StoredDataset
    from prior.trainers.evaluation import evaluate
    from prior.trainers.registry import task_for
    from prior.trainers.runtime import runtime

    model, options, label = _spec(args.model)
    overrides: dict[str, Any] = {"epochs": args.epochs, "patience": args.patience}
    if args.prior_lr is not None:
        overrides["prior_lr"] = args.prior_lr
    if args.lr is not None:
        overrides["lr"] = args.lr
    if args.batch_size is not None:
        overrides["batch_size"] = args.batch_size
    run = Path(args.runs) / f"oracle-{args.dataset}-{label.replace('[', '-').replace(']', '').replace('=', '')}" \
        f"{'-plr' + str(args.prior_lr) if args.prior_lr else ''}{'-lr' + str(args.lr) if args.lr else ''}-s{args.seed}"
    cfg = TrainConfig(ModelSpec(f"{model}-mini", backbone=args.backbone, seed=args.seed, overrides=overrides,
                                options={k: _value(v) for k, v in options.items()}),
                      DataSpec(args.dataset, sample=args.sample, sample_seed=args.sample_seed,
                               eval_splits=(args.eval_split,), limit=args.limit),
                      RunSpec(output=run, store=args.store, threads=args.threads, progress=False))
    t0 = time.perf_counter()
    summary = train_with_oracle(cfg, model, _levels(args))
    record: dict[str, Any] = {
        "kind": "oracle", "model": f"{model}-mini", "variant": label + _suffix(args),
        "options": options, "prior_lr": args.prior_lr, "lr": args.lr, "dataset": args.dataset, "regime": "sample",
        "sample": args.sample, "sample_seed": args.sample_seed, "seed": args.seed,
        "best_dev": summary["best_dev"], "epochs_run": summary["epochs"],
        "oracle_levels": summary["oracle_levels"],
        **{f"test_{k}": v for k, v in summary[args.eval_split].items()},
        # as anyone reruns it from the repository root: no interpreter or checkout path
        "command": shlex.join(["python", "bench/oracle.py", *sys.argv[1:]]),
    }
    # the same checkpoint without its feature (neutral): what the model gets without the oracle
    best, tokenizer, meta = load_checkpoint(run / "best")
    st = open_store(args.store, create=False)
    data = load_split(st, args.dataset, args.eval_split, tokenizer, max_length=meta["settings"]["max_length"],
                      feature=meta["feature"], view=stored_view(meta), limit=args.limit)
    rt = runtime()
    best = best.to(rt.device)  # the loaded checkpoint computes where the run did (CUDA when present)
    # the task as the run was scored: the split's stored label kind and names, the papers' metrics
    # for the dataset the split was read as
    read_as = StoredDataset.resolve(st, args.dataset, args.eval_split).read_as
    metrics = task_for(data.label_kind, data.label_names, read_as).metrics
    if data.source is not None:
        oracle = with_oracle(data, model, tuple(summary["oracle_levels"]) or None)
        neutral = oracle.with_features("neutral")
        record["test_accuracy_neutral"] = evaluate(best, neutral, 64, rt, metrics)["accuracy"]
        # what the model predicts when the oracle says each class, on every pair of the split
        record["classes"] = list(data.label_names)
        record["forced"] = forced_counts(best, data, model, tuple(summary["oracle_levels"]) or None, rt)
    if model == "gibert":
        gate = next(p for n, p in best.named_parameters() if n.endswith("injection.gate"))
        record["gate_abs_max"] = round(float(gate.detach().abs().max()), 5)
        record["gate_abs_mean"] = round(float(gate.detach().abs().mean()), 5)
        record["injection_block"] = int(getattr(best, "injection_index", -1)) + 1
    record["settings"] = meta["settings"]
    record["device"], record["device_name"] = meta.get("device"), meta.get("device_name")
    record["seconds"] = round(time.perf_counter() - t0, 1)
    del torch
    _append(Path(args.out), record)


def _append(out: Path, record: dict[str, Any]) -> None:
    """One JSON line at the end of ``out`` under an exclusive lock (runs at once share a file)."""
    import fcntl

    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
        fcntl.flock(fh, fcntl.LOCK_UN)
    print(json.dumps(record, sort_keys=True), flush=True)


def cmd_reach(args: argparse.Namespace) -> None:
    """How far each class's oracle moves a model's output, fresh and trained: the same test
    pairs with the oracle of class 0, 1, 2 forced on every pair. ``cls_change``: median over
    pairs of ‖x(c) − x(0)‖ / ‖x(0)‖, x the classifier's input (the pooled pair; c = 1, 2);
    ``logit_change``: mean over pairs of the largest logit difference; for bert-sim
    ``cross_attention_mass_c``: the share of layer 1's attention a word gives the other
    sentence under class c's oracle (S = 0, 0.5, 1). A pathway that starts
    at 0 can only open through its own parameters' updates."""
    import torch

    from prior.featurestore import open_store
    from prior.trainers import backbones
    from prior.trainers.checkpoint import load_checkpoint
    from prior.trainers.data import load_split
    from prior.trainers.models import MODEL_CLASSES

    st = open_store(args.store, create=False)
    models: list[tuple[str, str, Any]] = []
    for spec in args.models.split(";") if args.models else []:
        model, options, label = _spec(spec)
        models.append((f"{label} (initialised)", model, lambda m=model, o=options: backbones.build_model(
            MODEL_CLASSES[m], backbones.mini_path(), num_labels=3, seed=args.seed,
            options={k: _value(v) for k, v in o.items()})))
    for ckpt in args.checkpoint:
        meta = json.loads((Path(ckpt) / "prior.json").read_text())
        models.append((ckpt, meta["model"], lambda c=ckpt: load_checkpoint(c)[0]))
    tokenizer = backbones.load_tokenizer(backbones.mini_path())
    cache: dict[str, Any] = {}
    for name, model, build in models:
        net = build().eval()
        cls = MODEL_CLASSES[model]
        if cls.feature not in cache:
            data = load_split(st, args.dataset, "test", tokenizer, feature=cls.feature, limit=args.pairs)
            train = load_split(st, args.dataset, "train", tokenizer, feature=cls.feature)
            levels = grid_levels(model, train.source) if hasattr(train.source, "matrices") else None
            cache[cls.feature] = (data, levels)
        data, levels = cache[cls.feature]
        if model in ("dafa", "bert-sim"):
            levels = grid_levels(model, data.source) if model == "bert-sim" else levels
        outs = []
        row: dict[str, Any] = {"model": name, "pairs": len(data)}
        with torch.no_grad():
            for c in range(3):
                forced = with_oracle(replace(data, labels=np.full(len(data.encoded.lengths), c, np.int64)), model, levels)
                batch = forced.batch(np.arange(len(forced)))
                batch.pop("labels", None)
                seen: dict[str, torch.Tensor] = {}
                hook = net.classifier.register_forward_pre_hook(lambda m, i, seen=seen: seen.__setitem__("x", i[0]))
                hooks = [hook]
                if model == "bert-sim":  # layer 1's attention probabilities (B, nh, T, T)
                    hooks.append(net.bert.encoder.layer[0].attention.self.register_forward_hook(
                        lambda m, i, o, seen=seen: seen.__setitem__("probs", o[1])))
                out = net(**batch)
                for h in hooks:
                    h.remove()
                outs.append((seen["x"], out.logits))
                if "probs" in seen:  # the attention mass a word gives the other sentence, in layer 1
                    T = seen["probs"].shape[-1]
                    seg = torch.from_numpy(forced.encoded.seg[forced.rows, :T].astype(np.int64))
                    cross = ((seg[:, :, None] == 0) & (seg[:, None, :] == 1)) | ((seg[:, :, None] == 1) & (seg[:, None, :] == 0))
                    mass = (seen["probs"] * cross[:, None].to(seen["probs"].dtype)).sum(-1).mean(1)  # (B, T)
                    row[f"cross_attention_mass_{c}"] = round(float(mass[seg >= 0].mean()), 4)
        for c in (1, 2):
            h0, l0 = outs[0]
            hc, lc = outs[c]
            row[f"cls_change_{c}"] = round(float(((hc - h0).norm(dim=-1) / h0.norm(dim=-1)).median()), 6)
            row[f"logit_change_{c}"] = round(float((lc - l0).abs().max(dim=-1).values.mean()), 6)
        print(json.dumps(row), flush=True)


def cmd_saturation(args: argparse.Namespace) -> None:
    """DAFA's saturation curve: the same test pairs with every cross-sentence cell of G set to
    each level (the oracle's layout), for a fresh model and trained checkpoints; one JSON line
    per model and level (appended to ``--out``). ``attention_tv``: layer 1's Dep attention against
    Sem's (G = 1), total variation, mean over heads and word pieces; ``cross_share``: the share of
    Dep's attention a word piece gives the other sentence; ``top_prob``: Dep's largest attention
    probability per row; ``cls_change`` / ``step_change``: median over pairs of how far the
    classifier's input moves from G = 1 / from the previous level (relative); ``predicted``: how
    many pairs the model predicts as each class at that level (a trained oracle's forced class)."""
    import torch

    from prior.featurestore import open_store
    from prior.trainers import backbones
    from prior.trainers.checkpoint import load_checkpoint
    from prior.trainers.data import load_split
    from prior.trainers.models import MODEL_CLASSES
    from prior.trainers.models.base import additive_mask

    levels = [float(v) for v in args.levels.split(",")]
    if levels[0] != 1.0:
        raise SystemExit("--levels must start at 1 (G = 1: Dep equals Sem)")
    torch.set_num_threads(args.threads)
    st = open_store(args.store, create=False)
    backbone = args.backbone or backbones.mini_path()
    tokenizer = backbones.load_tokenizer(backbone)
    data = load_split(st, args.dataset, args.split, tokenizer, feature="dep", limit=args.pairs)
    nets: list[tuple[str, Any]] = []
    if args.fresh:
        nets.append(("dafa (initialised)", backbones.build_model(
            MODEL_CLASSES["dafa"], backbone, num_labels=len(data.label_names), seed=args.seed)))
    nets += [(ckpt, load_checkpoint(ckpt)[0]) for ckpt in args.checkpoint]
    command = shlex.join(["python", "bench/oracle.py", *sys.argv[1:]])
    out = Path(args.out) if args.out else None
    for name, net in nets:
        net.eval()
        attn = net.bert.encoder.layer[0].attention.self
        seen: dict[str, Any] = {}
        hooks = [attn.register_forward_hook(lambda m, a, kw, o, seen=seen: seen.update(
                     h=a[0] if a else kw["hidden_states"], mask=kw.get("attention_mask"), grid=kw.get("prior_grid")),
                     with_kwargs=True),
                 net.classifier.register_forward_pre_hook(lambda m, i, seen=seen: seen.__setitem__("x", i[0]))]
        previous = first = None
        for level in levels:
            forced = with_oracle(replace(data, labels=np.zeros(len(data.encoded.lengths), np.int64)), "dafa",
                                 (level,))
            batch = forced.batch(np.arange(len(forced)))
            batch.pop("labels", None)
            with torch.no_grad():
                logits = net(**batch).logits
                h = seen["h"]
                B, T, _ = h.shape
                hs = attn.attention_head_size
                q = attn.query(h).view(B, T, -1, hs).transpose(1, 2)
                k = attn.key(h).view(B, T, -1, hs).transpose(1, 2)
                raw = torch.matmul(q, k.transpose(2, 3)) * attn.scaling
                mask = additive_mask(seen["mask"], raw.dtype)
                mask = 0 if mask is None else mask
                sem = torch.softmax(raw + mask, -1)
                dep = torch.softmax(raw * seen["grid"][:, None].to(raw.dtype) + mask, -1)
            seg = torch.from_numpy(forced.encoded.seg[forced.rows, :T].astype(np.int64))
            words = (seg >= 0)[:, None].expand(-1, dep.shape[1], -1)  # (B, nh, T) rows of word pieces
            cross = (((seg[:, :, None] == 0) & (seg[:, None, :] == 1)) | ((seg[:, :, None] == 1) & (seg[:, None, :] == 0)))
            x = seen["x"]
            row: dict[str, Any] = {
                "kind": "saturation", "model": name, "level": level, "pairs": len(forced), "split": args.split,
                "attention_tv": round(float((0.5 * (dep - sem).abs().sum(-1))[words].mean()), 4),
                "cross_share": round(float((dep * cross[:, None].to(dep.dtype)).sum(-1)[words].mean()), 4),
                "top_prob": round(float(dep.max(-1).values[words].mean()), 4),
                "cls_change": 0.0 if first is None else round(float(((x - first).norm(dim=-1) / first.norm(dim=-1)).median()), 4),
                "step_change": 0.0 if previous is None else round(float(
                    ((x - previous).norm(dim=-1) / previous.norm(dim=-1)).median()), 4),
                "predicted": [int((logits.argmax(-1) == c).sum()) for c in range(logits.shape[-1])],
                "command": command}
            first = x if first is None else first
            previous = x
            if out is not None:
                _append(out, row)
            else:
                print(json.dumps(row), flush=True)
        for hook in hooks:
            hook.remove()


def chosen_levels(curve: list[dict[str, Any]], shares: tuple[float, ...] = (1 / 3, 2 / 3)) -> tuple[float, ...]:
    """Oracle levels inside the unsaturated range of one model's curve: 1 (G = 1, Dep = Sem) and
    the levels at which Dep's attention has moved ``shares`` of the way to where it saturates
    (``attention_tv`` at the largest level measured), interpolated in log(level), 2 significant
    digits."""
    import math

    points = sorted((r["level"], r["attention_tv"]) for r in curve)
    top = points[-1][1]
    got = [1.0]
    for share in shares:
        want = share * top
        for (l0, r0), (l1, r1) in itertools.pairwise(points):
            if r0 <= want <= r1 and r1 > r0:
                t = (want - r0) / (r1 - r0)
                level = math.exp(math.log(l0) + t * (math.log(l1) - math.log(l0)))
                got.append(float(f"{level:.2g}"))
                break
    return tuple(got)


def saturation_table(records: list[dict[str, Any]]) -> str:
    """Markdown: per model and level, the saturation measures of `cmd_saturation`."""
    rows = [r for r in records if r.get("kind") == "saturation"]
    lines = ["| model | G on cross-sentence cells | Dep vs Sem attention (TV) | cross-sentence share | "
             "largest attention | classifier input moved from G = 1 | … from the previous level | "
             "predicted classes |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['level']:g} | {r['attention_tv']:.3f} | {r['cross_share']:.3f} | "
                     f"{r['top_prob']:.3f} | {100 * r['cls_change']:.1f} % | {100 * r['step_change']:.1f} % | "
                     f"{' / '.join(map(str, r['predicted']))} |")
    return "\n".join(lines)


def forced_table(records: list[dict[str, Any]]) -> str:
    """Markdown: per oracle run, what the model predicts when the oracle says each class (every
    test pair forced to that class's oracle): counts per predicted class, and the share that
    follows the oracle."""
    rows = [r for r in records if r.get("kind") == "oracle" and "forced" in r]
    classes = rows[0]["classes"] if rows else []
    lines = ["| model | oracle levels | oracle says | " + " | ".join(f"predicted {c}" for c in classes) +
             " | follows the oracle |", "|---|---|---|" + "---|" * (len(classes) + 1)]
    for r in rows:
        name = r["variant"].replace(r["model"].removesuffix("-mini"), r["model"], 1)
        name = name.split(" --levels ")[0]
        levels = ", ".join(f"{v:g}" for v in r.get("oracle_levels") or []) or "–"
        for c, counts in enumerate(r["forced"]):
            lines.append(f"| {name} | {levels} | {r['classes'][c]} | " + " | ".join(map(str, counts)) +
                         f" | {100 * counts[c] / max(1, sum(counts)):.1f} % |")
    return "\n".join(lines)


def _suffix(args: argparse.Namespace) -> str:
    """The variant's schedule arguments, as `prior train` takes them, and the oracle's levels
    where they were given."""
    return (f" --lr {args.lr:g}" if getattr(args, "lr", None) else "") + \
        (f" --prior-lr {args.prior_lr:g}" if args.prior_lr else "") + \
        (f" --levels {args.levels}" if getattr(args, "levels", None) else "")


def _levels(args: argparse.Namespace) -> tuple[float, ...] | None:
    return tuple(float(v) for v in args.levels.split(",")) if getattr(args, "levels", None) else None


def forced_counts(net: Any, data: Any, model: str, levels: tuple[float, ...] | None, rt: Any,
                  batch_size: int = 64) -> list[list[int]]:
    """Row c: how many pairs the model predicts as each class when the oracle of class c is set
    on every pair (the gold labels play no part)."""
    from prior.trainers.evaluation import predict

    classes = len(data.label_names)
    rows = []
    for c in range(classes):
        forced = with_oracle(replace(data, labels=np.full(len(data.encoded.lengths), c, np.int64)), model, levels)
        predicted = predict(net, forced, batch_size, rt).argmax(-1)
        rows.append([int((predicted == k).sum()) for k in range(classes)])
    return rows


def _recorded(out: Path) -> set[tuple[str, int]]:
    if not out.exists():
        return set()
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {(r["variant"], r["seed"]) for r in rows if r.get("kind") == "oracle"}


def cmd_runs(args: argparse.Namespace) -> None:
    """Every model of ``--models`` at every seed, each run a `one` subprocess (``--parallel``
    at once); a run already in ``--out`` is skipped."""
    done = _recorded(Path(args.out))
    jobs = []
    for seed in args.seeds.split(","):
        for spec in args.models.split(";"):
            label = _spec(spec)[2] + _suffix(args)
            if (label, int(seed)) in done:
                continue
            cmd = [sys.executable, str(Path(__file__).resolve()), "one", "--model", spec, "--seed", seed,
                   "--store", args.store, "--dataset", args.dataset, "--runs", args.runs, "--out", args.out,
                   "--threads", str(args.threads), "--epochs", str(args.epochs), "--patience", str(args.patience),
                   "--sample", str(args.sample), "--sample-seed", str(args.sample_seed), "--eval-split", args.eval_split]
            if args.prior_lr:
                cmd += ["--prior-lr", str(args.prior_lr)]
            if args.lr:
                cmd += ["--lr", str(args.lr)]
            for flag, value in (("--backbone", args.backbone), ("--limit", args.limit),
                                ("--batch-size", args.batch_size), ("--levels", args.levels)):
                if value is not None:
                    cmd += [flag, str(value)]
            jobs.append(cmd)
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads),
           "TOKENIZERS_PARALLELISM": "false", "PRIOR_NO_PROGRESS": "1", "HF_HUB_OFFLINE": "1"}

    def go(cmd: list[str]) -> bool:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"`{shlex.join(cmd)}` failed:\n{done.stderr[-3000:]}", file=sys.stderr, flush=True)
        return done.returncode == 0

    with ThreadPoolExecutor(args.parallel) as pool:
        ok = list(pool.map(go, jobs))
    if not all(ok):  # a run that wrote no record is a failure of the whole command, not a note
        sys.exit(f"{ok.count(False)} of {len(ok)} oracle runs failed (above); their records are missing")


def report_table(records: list[dict[str, Any]], baseline: dict[int, float]) -> str:
    """Markdown: per oracle run, test accuracy with the oracle, without it (neutral), and
    bert-mini's at the same seed."""
    lines = ["| model | seed | test accuracy, oracle | Δ vs bert-mini | test accuracy, oracle neutral | "
             "gate max abs | best dev | epochs |", "|---|---|---|---|---|---|---|---|"]
    for r in records:
        if r.get("kind") != "oracle":
            continue
        base = baseline.get(r["seed"])
        acc = r["test_accuracy"]
        lines.append(" | ".join([
            f"| {r['variant'].replace(r['model'].removesuffix('-mini'), r['model'], 1)}", str(r["seed"]),
            f"{100 * acc:.1f}", "" if base is None else f"{100 * (acc - base):+.1f}",
            "" if "test_accuracy_neutral" not in r else f"{100 * r['test_accuracy_neutral']:.1f}",
            str(r.get("gate_abs_max", "")), f"{100 * r['best_dev']:.1f}", str(r["epochs_run"])]) + " |")
    return "\n".join(lines)


def baseline_scores(path: str | None, variant: str) -> dict[int, float]:
    """bert-mini's sample-regime test accuracy per seed, from the runs of ``variant`` in ``path``."""
    baseline: dict[int, float] = {}
    if path and Path(path).exists():
        for line in Path(path).read_text().splitlines():
            r = json.loads(line) if line.strip() else {}
            if r.get("kind") == "run" and r["regime"] == "sample" and r["variant"] == variant:
                baseline[r["seed"]] = r["test_accuracy"]
    return baseline


def cmd_report(args: argparse.Namespace) -> None:
    records = [json.loads(line) for line in Path(args.results).read_text().splitlines() if line.strip()]
    print(report_table(records, baseline_scores(args.baseline, args.baseline_variant)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("one", "runs"):
        s = sub.add_parser(name)
        s.add_argument("--store", required=True)
        s.add_argument("--dataset", default="sick")
        s.add_argument("--runs", default="runs/oracle")
        s.add_argument("--out", required=True)
        s.add_argument("--threads", type=int, default=1)
        s.add_argument("--epochs", type=int, default=10)
        s.add_argument("--patience", type=int, default=3)
        s.add_argument("--prior-lr", type=float, default=None)
        s.add_argument("--lr", type=float, default=None, help="peak lr of every parameter (default: -mini's)")
        s.add_argument("--sample", type=float, default=0.1)
        s.add_argument("--sample-seed", type=int, default=0)
        s.add_argument("--eval-split", default="test")
        s.add_argument("--backbone", default=None, help="a BERT checkpoint folder instead of MiniLM (tests)")
        s.add_argument("--limit", type=int, default=None, help="first N pairs of each split (tests)")
        s.add_argument("--batch-size", type=int, default=None)
        s.add_argument("--levels", default=None, help="a pair-matrix oracle's value per class, e.g. 1,2.2,3.5 "
                       "(default: bert-sim 0,0.5,1; dafa 1 + the median and 90th percentile of M_F)")
        if name == "one":
            s.add_argument("--model", required=True, help="e.g. dafa, sgnet:pool=mean")
            s.add_argument("--seed", type=int, default=1)
        else:
            s.add_argument("--models", default="dafa;sgnet;sgnet:pool=mean;bert-sim;gibert")
            s.add_argument("--seeds", default="1")
            s.add_argument("--parallel", type=int, default=2)
    c = sub.add_parser("reach")
    c.add_argument("--store", required=True)
    c.add_argument("--dataset", default="sick")
    c.add_argument("--models", default="", help="fresh models, e.g. 'dafa;gibert;bert-sim;sgnet:pool=mean'")
    c.add_argument("--checkpoint", action="append", default=[])
    c.add_argument("--pairs", type=int, default=128)
    c.add_argument("--seed", type=int, default=1)
    t = sub.add_parser("saturation", help="DAFA's saturation curve over oracle levels")
    t.add_argument("--store", required=True)
    t.add_argument("--dataset", default="sick")
    t.add_argument("--split", default="test")
    t.add_argument("--pairs", type=int, default=256)
    t.add_argument("--levels", default="1,1.25,1.5,2,2.5,3,4,5,7.3,10,20,40,70.3,100")
    t.add_argument("--fresh", action="store_true", help="also a freshly initialised dafa-mini")
    t.add_argument("--checkpoint", action="append", default=[])
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--out", default=None, help="jsonl to append to")
    t.add_argument("--backbone", default=None, help="the fresh model's backbone (default: MiniLM; tests)")
    r = sub.add_parser("report")
    r.add_argument("results")
    r.add_argument("--baseline", default=str(REPO / "docs" / "results" / "sick.jsonl"))
    r.add_argument("--baseline-variant", default="bert --epochs 10 --patience 3")
    args = p.parse_args()
    {"one": cmd_one, "runs": cmd_runs, "reach": cmd_reach, "saturation": cmd_saturation,
     "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    main()
