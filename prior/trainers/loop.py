"""One training loop for every model: AdamW, linear warm-up, gradient clipping, early stopping
on the dev metric, checkpoints, resume, a JSONL metrics log and a progress bar.

Single process (CPU, or one GPU with bf16 autocast)::

    prior train dafa-mini --dataset mrpc --store STORE --output runs/dafa

Several GPUs (DDP; each rank serves every world-th pair of the shuffled split; the rank and
world size come from torchrun's environment)::

    torchrun --nproc_per_node 4 "$(command -v prior)" train dafa-base --dataset mrpc --store STORE

Output directory::

    best/            save_pretrained (safetensors) of the best dev epoch + tokenizer + prior.json
    last/            the latest epoch: model + optimizer.safetensors + trainer_state.json (resume)
    metrics.jsonl    one line per epoch (train loss, dev metrics, seconds, mean step time)

``prior.json`` records the model, backbone, settings, seed, label names, the store location
and the feature entries (fingerprints) of every split used, and the library versions.
Nothing is pickled: weights and optimizer state are safetensors, the rest JSON.

Choices: the dev split is the first of ``DEV_SPLITS`` ("dev", SICK's "trial", MNLI's
"dev_matched", "validation") the store has; without one (MRPC has only train and test), a
fixed 10% of the training split (numpy seed 0, independent of ``--seed``) is held out as dev;
``sample`` then draws a fixed fraction of the remaining training pairs (seeded by
``sample_seed``, also independent of ``--seed``), so runs with several seeds share their data.
Under DDP every rank evaluates the whole dev set (simple and exact; rank 0 writes).
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from prior.errors import DataError, NotFoundError, PriorError
from prior.featurestore import Request, Store, StoreRef, open_store
from prior.featurestore.names import check_name
from prior.featurestore.recipe import Recipe, render
from prior.featurestore.selection import parser_spec
from prior.layouts.views import resolve_view
from prior.progress import Progress, stage_bars
from prior.trainers import backbones, metrics
from prior.trainers import checkpoint as ckpt
from prior.trainers.data import PairData, dataset_kind, load_split
from prior.trainers.models import MODEL_CLASSES
from prior.trainers.models.base import PriorBertModel
from prior.trainers.registry import Task, TrainSettings, default_settings, parse_model_name, task_for

META_FILE = "prior.json"
#: a dataset's dev split, by the names the readers give it (SICK calls it "trial")
DEV_SPLITS = ("dev", "trial", "dev_matched", "validation")
STATE_FILE = "trainer_state.json"
OPTIMIZER_FILE = "optimizer.safetensors"
RUNS = Path("runs")


def default_output(model: str, dataset: str, seed: int) -> Path:
    """``runs/<model>-<dataset>-s<seed>``. The model and dataset names must be plain names
    (`prior.featurestore.names.check_name`: no separators, no ``..``), so the folder is always one
    entry directly inside ``runs/``, whatever name a store holds; `StoreError` otherwise."""
    name = f"{check_name('model', model)}-{check_name('dataset', dataset)}-s{int(seed)}"
    return RUNS / check_name("output folder", name)


@dataclass
class TrainConfig:
    model: str  # e.g. "dafa-mini", or "dafa" with backbone
    dataset: str
    output: Path
    store: StoreRef | str | None = None  # a location, or a StoreRef with the fsspec options of a store at a URL
    backbone: str | None = None
    settings: TrainSettings | None = None  # None: the papers' defaults for model and dataset
    overrides: dict[str, Any] = field(default_factory=dict)  # settings fields set on the command line
    seed: int = 42
    limit: int | None = None  # first N pairs of each split (quick runs)
    train_split: str = "train"
    dev_split: str | None = None  # None: the first of DEV_SPLITS the store has, else a held-out 10%
    dev_fraction: float = 0.1
    sample: float | None = None  # train on a fixed fraction of the training pairs
    sample_seed: int = 0
    eval_splits: tuple[str, ...] = ()  # evaluated with the best model at the end
    model_options: dict[str, Any] = field(default_factory=dict)
    feature_params: dict[str, Any] | None = None
    feature_entry: str | None = None  # a store entry key prefix (instead of feature_params)
    view: str | None = None  # a registered view replacing the model's feature (View.variant_of), e.g. "dep-no-tfidf"
    dep_view: str | None = None  # deprecated spelling of ``view`` (DAFA's models only)
    parser: str | None = None  # a model without a feature reads this --parser value's parse (default: the default parser's)
    parse: str | None = None  # ... or this parse (an id prefix), when one parser made several
    resume: Path | None = None
    progress: bool = True
    threads: int | None = None
    max_steps: int | None = None  # stop after this many optimizer steps (benchmarks)


# --------------------------------------------------------------------------- environment
def versions() -> dict[str, str]:
    import transformers

    try:
        prior_version = metadata.version("prior")
    except metadata.PackageNotFoundError:
        prior_version = "unknown"
    return {"prior": prior_version, "transformers": transformers.__version__,
            "torch": torch.__version__, "python": platform.python_version()}


@dataclass
class Runtime:
    device: torch.device
    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    def autocast(self) -> Any:
        if self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return nullcontext()


def runtime() -> Runtime:
    """CUDA when present, else CPU; DDP when started by torchrun (WORLD_SIZE > 1)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
    if world > 1 and not torch.distributed.is_initialized():
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Runtime(device, rank, world)


# --------------------------------------------------------------------------- data
@dataclass
class Splits:
    train: PairData
    dev: PairData
    evals: dict[str, PairData]
    dev_note: str


def load_splits(store: Store, cfg: TrainConfig, model: str, tokenizer: Any,
                settings: TrainSettings) -> Splits:
    """The training, dev and eval splits a run of ``model`` reads (module docstring: the dev
    split, the held-out 10 %, the sample)."""
    feature = MODEL_CLASSES[model].feature
    kw: dict[str, Any] = {"max_length": settings.max_length, "feature": feature,
          "request": Request(params=cfg.feature_params, entry=cfg.feature_entry), "limit": cfg.limit,
          "dep_view": run_view(cfg, model), "parser": cfg.parser,
          "parse": cfg.parse}
    train = load_split(store, cfg.dataset, cfg.train_split, tokenizer, **kw)
    present = {s for d, s in store.datasets() if d == cfg.dataset}
    dev_split = cfg.dev_split or next((s for s in DEV_SPLITS if s in present), None)
    if dev_split is not None:
        dev = load_split(store, cfg.dataset, dev_split, tokenizer, **kw)
        note = f"split {dev_split}"
    else:
        perm = np.random.default_rng(0).permutation(len(train))
        n_dev = max(1, round(cfg.dev_fraction * len(train)))
        dev, train = train.subset(np.sort(perm[:n_dev])), train.subset(np.sort(perm[n_dev:]))
        note = f"{n_dev} pairs held out of {cfg.train_split} (seed 0)"
    if cfg.sample is not None:
        if not 0 < cfg.sample <= 1:
            raise PriorError(f"--sample must be in (0, 1], not {cfg.sample}")
        n = max(1, round(cfg.sample * len(train)))
        pick = np.random.default_rng(cfg.sample_seed).permutation(len(train))[:n]
        train = train.subset(np.sort(pick))
    evals = {s: load_split(store, cfg.dataset, s, tokenizer, **kw) for s in cfg.eval_splits}
    for name, data in [("train", train), ("dev", dev), *evals.items()]:
        if data.labels is None:
            raise DataError(f"{cfg.dataset}/{data.split} has no labels: it cannot be used for {name}")
        if (data.label_kind, data.label_names) != (train.label_kind, train.label_names):
            raise DataError(f"{cfg.dataset}/{data.split} is stored with labels {_labels_text(data)} but "
                            f"{cfg.dataset}/{train.split} with {_labels_text(train)}; rebuild one of them "
                            "with the other's --label-kind (and --labels) to use them together")
    return Splits(train, dev, evals, note)


def run_view(cfg: TrainConfig, model: str) -> str | None:
    """The view a run of ``model`` reads instead of its feature (`prior.layouts.views.resolve_view`);
    None: the feature as stored."""
    feature = MODEL_CLASSES[model].feature
    view = cfg.view
    if cfg.dep_view not in (None, "dep"):  # the deprecated flag, with its own message
        if feature != "dep":
            raise PriorError(f"--dep-view {cfg.dep_view} applies to DAFA models only; {model} "
                             f"reads {feature or 'no store feature'}")
        if view not in (None, cfg.dep_view):
            raise PriorError(f"--view {view} and --dep-view {cfg.dep_view} disagree; give --view alone")
        view = cfg.dep_view
    return resolve_view(feature, view)


def stored_view(meta: dict[str, Any]) -> str | None:
    """The view a checkpoint was trained on (``prior.json``); checkpoints written before
    ``view`` recorded ``dep_view``, "dep" meaning none."""
    view = meta["view"] if "view" in meta else meta.get("dep_view")
    return None if view in (None, "dep", meta.get("feature")) else str(view)


def _labels_text(data: PairData) -> str:
    return "scores" if data.label_kind == "score" else f"{data.label_kind} {list(data.label_names)}"


def split_task(data: PairData, dataset_kind: str) -> Task:
    """The task of a run trained on ``data``: its stored label kind and names decide
    classification or regression (the loss and the head), ``dataset_kind`` (the dataset it was
    read as) only adds the papers' reporting metrics where they fit."""
    task = task_for(data.label_kind, data.label_names, dataset_kind)
    if not task.regression and task.num_labels < 2:
        raise DataError(f"{data.dataset}/{data.split} is stored with {task.num_labels} class(es) "
                        f"{list(task.label_names)}: a classifier needs two or more; rebuild it with "
                        "--labels, or with --label-kind score for numeric labels")
    return task


# --------------------------------------------------------------------------- evaluation
def _to(model: PriorBertModel, device: torch.device) -> None:
    """Move a model in place (through `torch.nn.Module.to`: transformers wraps it with
    another signature in its type hints)."""
    torch.nn.Module.to(model, device)


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


@torch.no_grad()
def predict(model: PriorBertModel, data: PairData, batch_size: int, rt: Runtime,
            progress: Progress | None = None, stage: str = "predict") -> np.ndarray:
    """Model outputs (logits (N, C) or scores (N, 1)) for every pair, in order; ``progress``
    hears ``(stage, batches done, batches, "")`` after each batch."""
    model.eval()
    outs = []
    total = math.ceil(len(data) / batch_size)
    for batch in data.batches(batch_size):
        batch.pop("labels", None)
        with rt.autocast():
            logits = model(**to_device(batch, rt.device)).logits
        outs.append(logits.float().cpu().numpy())
        if progress is not None:
            progress(stage, len(outs), total, "")
    return np.concatenate(outs) if outs else np.zeros((0, 1), dtype=np.float32)


def evaluate(model: PriorBertModel, data: PairData, batch_size: int, rt: Runtime,
             names: tuple[str, ...], progress: Progress | None = None) -> dict[str, float]:
    if data.labels is None:
        raise DataError(f"{data.dataset}/{data.split} has no labels to evaluate against")
    outputs = predict(model, data, batch_size, rt, progress, f"eval {data.split}")
    return metrics.compute(names, outputs, data.labels[data.rows])


# --------------------------------------------------------------------------- checkpoints
def save_optimizer(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """AdamW state as safetensors: ``<param>.exp_avg``, ``<param>.exp_avg_sq``, ``<param>.step``."""
    names = {id(p): n for n, p in model.named_parameters()}
    tensors: dict[str, torch.Tensor] = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state.get(p)
            if not state:
                continue
            n = names[id(p)]
            for key, value in state.items():
                t = value if torch.is_tensor(value) else torch.tensor(value)
                tensors[f"{n}.{key}"] = t.detach().cpu().contiguous()
    save_file(tensors, str(path))


def load_optimizer(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    tensors = load_file(str(path))
    for n, p in model.named_parameters():
        state = {key: tensors[f"{n}.{key}"].to(p.device) for key in ("step", "exp_avg", "exp_avg_sq")
                 if f"{n}.{key}" in tensors}
        if state:
            optimizer.state[p] = state


def save_checkpoint(directory: Path, model: PriorBertModel, tokenizer: Any, meta: dict[str, Any]) -> None:
    """``save_pretrained`` (safetensors) + tokenizer + ``prior.json``, which records the sha256
    of every file written (`prior.trainers.checkpoint`)."""
    directory.mkdir(parents=True, exist_ok=True)
    with backbones.quiet_hf():
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
    meta = {**meta, ckpt.CHECKSUMS: ckpt.file_checksums(directory)}
    (directory / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")


def load_checkpoint(directory: Path | str) -> tuple[PriorBertModel, Any, dict[str, Any]]:
    """(model, tokenizer, prior.json) of a checkpoint directory written by :func:`train`; a
    checkpoint that is damaged, altered or pickled is a one-line `CheckpointError`
    (`prior.trainers.checkpoint`)."""
    directory = Path(directory)
    meta = ckpt.read_meta(directory)
    ckpt.check_checkpoint(directory, meta)
    return (*ckpt.load_weights(directory, MODEL_CLASSES[meta["model"]]), meta)


# --------------------------------------------------------------------------- training
def linear_warmup(optimizer: torch.optim.Optimizer, warmup_steps: int,
                  total_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / max(1, warmup_steps)
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def make_optimizer(model: torch.nn.Module, s: TrainSettings) -> torch.optim.AdamW:
    """AdamW; no weight decay on biases and LayerNorm weights (BERT's recipe); the method's own
    parameters (``prior_parameter_names``) at ``s.prior_lr`` when it is set, else at ``s.lr``."""
    names = getattr(model, "prior_parameter_names", None)
    own: set[str] = names() if s.prior_lr is not None and callable(names) else set()
    groups: dict[tuple[bool, bool], list[torch.nn.Parameter]] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        groups.setdefault((name in own, p.ndim < 2 or "LayerNorm" in name), []).append(p)
    return torch.optim.AdamW([{"params": params, "weight_decay": 0.0 if bare else s.weight_decay,
                               "lr": s.prior_lr if prior and s.prior_lr is not None else s.lr}
                              for (prior, bare), params in sorted(groups.items())], lr=s.lr)


@dataclass
class _Run:
    """Everything one training run holds, built by :func:`_start`."""

    cfg: TrainConfig
    rt: Runtime
    settings: TrainSettings
    task: Task
    out: Path
    model: PriorBertModel
    net: torch.nn.Module  # the model, or its DDP wrapper
    tokenizer: Any
    splits: Splits
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    steps_per_epoch: int
    state: dict[str, Any]
    meta: dict[str, Any]


def train(cfg: TrainConfig) -> dict[str, Any]:
    """Train ``cfg.model`` on ``cfg.dataset`` from the store; returns the final summary."""
    run = _start(cfg)
    with stage_bars(cfg.progress and run.rt.main) as progress:
        for epoch in range(run.state["epoch"], run.settings.epochs):
            losses, step_times, seconds, stopped = _train_epoch(run, epoch, progress)
            dev = evaluate(run.model, run.splits.dev, run.settings.batch_size, run.rt, run.task.metrics)
            _end_epoch(run, epoch, dev, losses, step_times, seconds)
            if stopped or run.state["bad_epochs"] >= run.settings.patience:
                break
    return _finish(run)


def _start(cfg: TrainConfig) -> _Run:
    """Settings, data, model, optimizer and schedule of a new or resumed run."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    rt = runtime()
    model_name, size = parse_model_name(cfg.model)
    model_cls = MODEL_CLASSES[model_name]
    store = open_store(cfg.store, create=False)
    check_train_split(store, cfg.dataset, cfg.train_split)
    kind = dataset_kind(store, cfg.dataset)  # under another --name: the paper settings still apply
    settings = replace(cfg.settings or default_settings(model_name, kind, size), **cfg.overrides)
    state: dict[str, Any] = {"epoch": 0, "step": 0, "best": None, "bad_epochs": 0}
    if cfg.resume is not None:
        model, tokenizer, meta = load_checkpoint(cfg.resume)
        if meta["model"] != model_name:
            raise PriorError(f"{cfg.resume} holds a {meta['model']} model, not {model_name}")
        state = json.loads((Path(cfg.resume) / STATE_FILE).read_text())
        backbone = meta["backbone"]
    else:
        backbone = backbones.resolve_backbone(size, cfg.backbone)
        tokenizer = backbones.load_tokenizer(backbone)
    splits = load_splits(store, cfg, model_name, tokenizer, settings)
    task = split_task(splits.train, kind)
    view = run_view(cfg, model_name)
    if cfg.resume is None:
        num_labels = task.num_labels
        source = splits.train.source
        options = {**(model_cls.options_from_feature(source) if source is not None else {}), **cfg.model_options}
        torch.manual_seed(cfg.seed)
        try:
            model = backbones.build_model(model_cls, backbone, num_labels=num_labels, options=options, seed=cfg.seed,
                                          label_names=task.label_names)
        except ValueError as exc:  # an option value the model refuses (-o pool=max)
            raise PriorError(f"{model_name}: {exc} (model options: {cfg.model_options or 'none given'})") from None
    _to(model, rt.device)
    net: torch.nn.Module = model
    if rt.world > 1:
        net = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[rt.device.index] if rt.device.type == "cuda" else None)
    steps_per_epoch = math.ceil(len(splits.train.order(True, cfg.seed, 0, rt.rank, rt.world))
                                / settings.batch_size)
    optimizer, scheduler = _schedule(model, settings, steps_per_epoch, cfg, state)
    meta = {
        "model": model_name, "name": cfg.model, "backbone": backbone, "dataset": cfg.dataset,
        "label_kind": splits.train.label_kind, "label_names": list(splits.train.label_names),
        "feature": model_cls.feature, "feature_params": cfg.feature_params,
        "view": view, "dep_view": view,  # dep_view: the name older readers look for
        "settings": settings.to_dict(), "seed": cfg.seed, "sample": cfg.sample,
        "sample_seed": cfg.sample_seed, "dev": splits.dev_note, "limit": cfg.limit,
        "metrics_names": list(task.metrics), "task": task.to_dict(), "world_size": rt.world, "device": str(rt.device),
        "fingerprints": {"train": splits.train.fingerprint, "dev": splits.dev.fingerprint},
        "train_pairs": len(splits.train), "dev_pairs": len(splits.dev), "versions": versions(),
        **_build_record(store, splits.train.fingerprint),
    }
    out = Path(cfg.output)
    if rt.main:
        out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed + state["epoch"])  # dropout: the same stream for every model of a seed
    return _Run(cfg, rt, settings, task, out, model, net, tokenizer, splits, optimizer, scheduler,
                steps_per_epoch, state, meta)


def _build_record(store: Store, fingerprint: dict[str, Any]) -> dict[str, Any]:
    """What building the model's inputs for new pairs needs (`prior predict`), so that a
    checkpoint does not depend on its training store for it: the records of the entries it
    reads and the ``--parser`` spec of its parse."""
    keys = set((fingerprint.get("entries") or {}).values())
    return {"entry_records": {e.name: e.target() for e in store.entries() if e.key in keys},
            "parser_spec": parser_spec(store, fingerprint.get("parse"))}


def _schedule(model: PriorBertModel, settings: TrainSettings, steps_per_epoch: int, cfg: TrainConfig,
              state: dict[str, Any]) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW with linear warm-up and decay over the run's steps; a resumed run continues from
    its saved optimizer state and step."""
    total = steps_per_epoch * settings.epochs
    if cfg.max_steps is not None:
        total = min(total, cfg.max_steps)
    optimizer = make_optimizer(model, settings)
    scheduler = linear_warmup(optimizer, int(settings.warmup * total), total)
    if cfg.resume is not None:
        load_optimizer(Path(cfg.resume) / OPTIMIZER_FILE, model, optimizer)
        scheduler.last_epoch = state["step"]
        for group, base in zip(optimizer.param_groups, scheduler.base_lrs):
            group["lr"] = base * scheduler.lr_lambdas[0](state["step"])
    return optimizer, scheduler


def _train_epoch(run: _Run, epoch: int, progress: Progress) -> tuple[list[float], list[float], float, bool]:
    """One pass over the training pairs: (losses, step seconds, seconds, stopped by max_steps)."""
    cfg, settings, rt = run.cfg, run.settings, run.rt
    run.net.train()
    stage = f"{cfg.model} epoch {epoch + 1}/{settings.epochs}"
    t0, losses, step_times = time.perf_counter(), [], []
    for batch in run.splits.train.batches(settings.batch_size, shuffle=True, seed=cfg.seed, epoch=epoch,
                                          rank=rt.rank, world=rt.world):
        ts = time.perf_counter()
        losses.append(_step(run, batch))
        step_times.append(time.perf_counter() - ts)
        progress(stage, len(losses), run.steps_per_epoch, f"loss {np.mean(losses[-20:]):.4f}")
        if cfg.max_steps is not None and run.state["step"] >= cfg.max_steps:
            return losses, step_times, time.perf_counter() - t0, True
    return losses, step_times, time.perf_counter() - t0, False


def _step(run: _Run, batch: dict[str, torch.Tensor]) -> float:
    """One optimizer step on one batch; returns its loss."""
    batch = to_device(batch, run.rt.device)
    with run.rt.autocast():
        loss = run.net(**batch).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(run.model.parameters(), run.settings.clip)
    run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    run.state["step"] += 1
    return float(loss.detach())


def _end_epoch(run: _Run, epoch: int, dev: dict[str, float], losses: list[float], step_times: list[float],
               seconds: float) -> None:
    """Early-stopping state, the metrics line and the checkpoints of a finished epoch."""
    state, key_metric = run.state, run.task.metrics[0]  # every metric: higher is better
    improved = state["best"] is None or dev[key_metric] > state["best"]
    state["epoch"] = epoch + 1
    if improved:
        state["best"], state["bad_epochs"] = dev[key_metric], 0
    else:
        state["bad_epochs"] += 1
    if not run.rt.main:
        return
    record = {"epoch": epoch + 1, "step": state["step"], "train_loss": float(np.mean(losses)),
              **{f"dev_{k}": v for k, v in dev.items()}, "best": improved, "seconds": seconds,
              "step_seconds": float(np.mean(step_times)) if step_times else None}
    with (run.out / "metrics.jsonl").open("a") as fh:
        fh.write(json.dumps(record) + "\n")
    epoch_meta = {**run.meta, "epoch": epoch + 1, "dev_metrics": dev}
    if improved:
        save_checkpoint(run.out / "best", run.model, run.tokenizer, epoch_meta)
    save_checkpoint(run.out / "last", run.model, run.tokenizer, epoch_meta)
    save_optimizer(run.out / "last" / OPTIMIZER_FILE, run.model, run.optimizer)
    (run.out / "last" / STATE_FILE).write_text(json.dumps(state) + "\n")


def _finish(run: _Run) -> dict[str, Any]:
    """The summary: best dev score, and the best checkpoint's scores on the eval splits."""
    if run.rt.world > 1:
        torch.distributed.barrier()
    summary: dict[str, Any] = {"output": str(run.out), "best_dev": run.state["best"],
                               "epochs": run.state["epoch"], "steps": run.state["step"],
                               "key_metric": run.task.metrics[0]}
    if run.splits.evals:
        best, _, _ = load_checkpoint(run.out / "best")
        _to(best, run.rt.device)
        for split, data in run.splits.evals.items():
            summary[split] = evaluate(best, data, run.settings.batch_size, run.rt, run.task.metrics)
    if run.rt.main:
        (run.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def checkpoint_dir(path: Path | str) -> Path:
    """A checkpoint folder: ``path`` itself, or the ``best/`` of a `prior train` output folder."""
    path = Path(path)
    if not (path / META_FILE).is_file() and (path / "best" / META_FILE).is_file():
        return path / "best"
    return path


class CheckpointOutputs(NamedTuple):
    """A checkpoint's outputs on one split: logits (N, C) or scores (N, 1), in the order of
    ``data``'s pairs, and the metric names it is scored with."""

    outputs: np.ndarray
    data: PairData
    metric_names: tuple[str, ...]


def checkpoint_outputs(checkpoint: Path | str, dataset: str | None = None, split: str = "test", *,
                       store: StoreRef | str | None = None, limit: int | None = None, batch_size: int | None = None,
                       features: str = "stored", progress: Progress | None = None,
                       view: str | None = None) -> CheckpointOutputs:
    """What :func:`evaluate_checkpoint` scores: a saved checkpoint's outputs on one split of
    the store (default: the dataset it was trained on), read from exactly the feature entries it
    was trained on (`prior.json`): a store whose entries do not hold that split is an error
    naming the build line that adds them. ``features``: as stored, or destroyed (``neutral``,
    ``shuffled``; `PairData.with_features`). ``view``: read this variant view of the model's
    feature instead of the one it was trained on (an ablation at test time). ``store``: where
    the split is read, a location or a `StoreRef` with its storage options (one without a
    location reaches the store the checkpoint was trained from with those options)."""
    rt = runtime()
    model, tokenizer, meta = load_checkpoint(checkpoint_dir(checkpoint))
    dataset = dataset or meta["dataset"]
    trained = meta["fingerprints"]["train"]
    st = open_store(StoreRef.of(store).or_at(trained["store"]), create=False)
    read = stored_view(meta) if view is None else resolve_view(meta["feature"], view)
    settings = meta["settings"]
    data = load_split(st, dataset, split, tokenizer, max_length=settings["max_length"],
                      feature=meta["feature"],
                      entries=trained.get("entries") or None, limit=limit, dep_view=read,
                      parse=None if meta["feature"] else trained.get("parse"))
    if features != "stored" and meta["feature"] is None:
        raise PriorError(f"{meta['model']} reads no store feature: --features {features} has nothing to replace")
    data = data.with_features(features)
    _to(model, rt.device)
    names = tuple(meta.get("metrics_names")
                  or task_for(meta["label_kind"], meta.get("label_names") or (), dataset_kind(st, dataset)).metrics)
    outputs = predict(model, data, batch_size or settings["batch_size"], rt, progress, f"eval {split}")
    return CheckpointOutputs(outputs, data, names)


def evaluate_checkpoint(checkpoint: Path | str, dataset: str | None = None, split: str = "test", *,
                        store: StoreRef | str | None = None, limit: int | None = None,
                        batch_size: int | None = None, features: str = "stored",
                        progress: Progress | None = None, view: str | None = None) -> dict[str, float]:
    """Metrics of a saved checkpoint on one split (:func:`checkpoint_outputs`)."""
    outputs, data, names = checkpoint_outputs(checkpoint, dataset, split, store=store, limit=limit,
                                              batch_size=batch_size, features=features, progress=progress,
                                              view=view)
    if data.labels is None:
        raise DataError(f"{data.dataset}/{data.split} has no labels to evaluate against")
    return metrics.compute(names, outputs, data.labels[data.rows])


def check_train_split(store: Store, dataset: str | None, split: str = "train") -> str:
    """``dataset`` when the store has its ``split``; else a clear error (also when ``dataset``
    is not given) listing the datasets that have one."""
    present = store.datasets()
    if dataset is not None and (dataset, split) in present:
        return dataset
    if dataset is not None and any(d == dataset for d, _ in present):
        raise PriorError(store.missing_split(dataset, split))
    have = sorted({d for d, s in present if s == split})
    listed = ", ".join(have) if have else f"none (build one with `{render(Recipe(dataset='NAME', store=store.location))}`)"
    if dataset is None:
        raise PriorError(f"name the dataset to train on with --dataset; datasets with a {split} split in "
                         f"{store.location}: {listed}")
    raise NotFoundError(f"{store.location} has no {dataset}/{split}; datasets with a {split} split: {listed}")


__all__ = ["TrainConfig", "checkpoint_outputs", "evaluate", "evaluate_checkpoint", "load_checkpoint", "predict",
           "train"]
