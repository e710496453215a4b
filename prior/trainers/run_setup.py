"""A training run made ready: settings, data, model, optimizer, schedule and the loader's
stream, for a new run or one resumed from its saved state (`prior.trainers.resume`).

A new run seeds torch with the run's seed before the model is built (Hugging Face draws the
paper's new parameters from it; the classifier head has its own seeded generator,
`prior.trainers.backbones.build_model`) and again before the first step (dropout): every model
of one seed sees the same data order and the same dropout stream. A resumed run loads the
weights, optimizer and generator states it saved and starts the loader at the saved step.
"""

from __future__ import annotations

import contextlib
import platform
from dataclasses import asdict, dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from prior.errors import PriorError
from prior.featurestore import Store, StoreRef, open_store
from prior.featurestore.selection import parser_spec
from prior.hints import option
from prior.layouts.views import resolve_view
from prior.trainers import backbones
from prior.trainers.checkpoint import load_checkpoint
from prior.trainers.config import TrainConfig
from prior.trainers.dataset_ref import StoredDataset
from prior.trainers.loader import LoaderSettings, Position, TrainStream
from prior.trainers.models import MODEL_CLASSES
from prior.trainers.models.base import PriorBertModel
from prior.trainers.order import Shuffle
from prior.trainers.registry import Task, TrainSettings, default_settings, parse_model_name
from prior.trainers.resume import (
    OPTIMIZER_FILE,
    RNG_FILE,
    TrainState,
    check_same_data,
    load_optimizer,
    restore_rng,
    state_dir,
)
from prior.trainers.run_data import RunData, open_run_data, split_task
from prior.trainers.runtime import Runtime, device_name, move_model, runtime
from prior.trainers.schedule import restore_schedule, schedule
from prior.trainers.store_record import record_store


@dataclass
class Run:
    """Everything one training run holds."""

    cfg: TrainConfig
    rt: Runtime
    settings: TrainSettings
    task: Task
    out: Path
    model: PriorBertModel
    net: torch.nn.Module  # the model, or its DDP wrapper
    tokenizer: Any
    data: RunData
    stream: TrainStream
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    state: TrainState
    meta: dict[str, Any]
    loader: LoaderSettings

    @property
    def steps_per_epoch(self) -> int:
        return self.stream.steps_per_epoch


def versions() -> dict[str, str]:
    import transformers

    try:
        prior_version = metadata.version("prior")
    except metadata.PackageNotFoundError:
        prior_version = "unknown"
    return {"prior": prior_version, "transformers": transformers.__version__,
            "torch": torch.__version__, "python": platform.python_version()}


def check_output(out: Path) -> None:
    """An output folder that can be one: not an existing file, and creatable."""
    if out.exists() and not out.is_dir():
        raise PriorError(f"{option('output', str(out))}: a file is there; name a folder for the run")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PriorError(f"{option('output', str(out))}: cannot create it ({exc.strerror or exc})") from None


def start_run(cfg: TrainConfig) -> Run:
    """The run ``cfg`` asks for, new or resumed (module docstring)."""
    if cfg.run.threads:
        torch.set_num_threads(cfg.run.threads)
    rt = runtime(cfg.run.device)
    out = Path(cfg.run.output)
    if rt.main:
        check_output(out)
    model_name, size = parse_model_name(cfg.model.model)
    store = open_store(cfg.run.store, create=False)
    dataset = StoredDataset.resolve(store, cfg.data.dataset, cfg.data.train_split)
    settings = replace(cfg.model.settings or default_settings(model_name, dataset.read_as, size), **cfg.model.overrides)
    resumed = _resumed(cfg, model_name)
    if resumed is None:
        backbone = backbones.resolve_backbone(size, cfg.model.backbone)
        tokenizer = backbones.load_tokenizer(backbone)
        state = TrainState()
    else:
        model, tokenizer, saved, state = resumed
        backbone = saved["backbone"]
    data = open_run_data(store, cfg.data, dataset, MODEL_CLASSES[model_name].feature, tokenizer, settings.max_length,
                         cfg.run.cache_mb)
    task = split_task(data.train_index, dataset.read_as)
    if resumed is None:
        model = _new_model(cfg, model_name, backbone, task, data)
    else:
        _check_resumable(cfg, saved, state, data, settings)
    move_model(model, rt.device)
    net: torch.nn.Module = model
    if rt.world > 1:
        net = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[rt.device.index] if rt.device.type == "cuda" else None)
    loader = cfg.loader(rt.device.type)
    stream = TrainStream(data.train, batch_size=settings.batch_size, shuffle=loader.shuffle(cfg.model.seed),
                         epochs=settings.epochs, start=Position(state.epoch, state.batch), rank=rt.rank,
                         world=rt.world, subset=data.subset)
    total = stream.steps_per_epoch * settings.epochs
    optimizer, scheduler = schedule(model, settings, min(total, cfg.run.max_steps or total))
    if resumed is None:
        torch.manual_seed(cfg.model.seed)  # dropout: the same stream for every model of a seed
    else:
        folder = state_dir(cfg.run.resume or "")
        load_optimizer(folder / OPTIMIZER_FILE, model, optimizer)
        restore_schedule(optimizer, scheduler, state.step)
        restore_rng(folder / RNG_FILE, rt.rank, rt.device)
    meta = _meta(cfg, store, model_name, backbone, settings, task, data, rt, stream)
    return Run(cfg, rt, settings, task, out, model, net, tokenizer, data, stream, optimizer, scheduler, state, meta,
               loader)


def _new_model(cfg: TrainConfig, model_name: str, backbone: str, task: Task, data: RunData) -> PriorBertModel:
    model_cls = MODEL_CLASSES[model_name]
    plan = data.train_index.plan
    options = {**(model_cls.options_from_feature(plan) if plan is not None else {}), **cfg.model.options}
    torch.manual_seed(cfg.model.seed)
    try:
        return backbones.build_model(model_cls, backbone, num_labels=task.num_labels, options=options,
                                     seed=cfg.model.seed, label_names=task.label_names)
    except ValueError as exc:  # an option value the model refuses (-o pool=max)
        raise PriorError(f"{model_name}: {exc} (model options: {cfg.model.options or 'none given'})") from None


def _resumed(cfg: TrainConfig, model_name: str) -> tuple[PriorBertModel, Any, dict[str, Any], TrainState] | None:
    """The saved state a resumed run continues from (`prior.trainers.resume`), else None."""
    if cfg.run.resume is None:
        return None
    folder = state_dir(cfg.run.resume)
    state = TrainState.read(folder / "trainer_state.json")
    model, tokenizer, saved = load_checkpoint(folder)
    if saved["model"] != model_name:
        raise PriorError(f"{folder} holds a {saved['model']} model, not {model_name}")
    return model, tokenizer, saved, state


def _check_resumable(cfg: TrainConfig, saved: dict[str, Any], state: TrainState, data: RunData,
                     settings: TrainSettings) -> None:
    """The data and order of a resumed run are those it started with (one line otherwise)."""
    run = Path(cfg.run.resume or "")
    check_same_data(run, saved["fingerprints"]["train"], data.train_index.fingerprint, "training")
    n = data.train_pairs
    order = {"shuffle": cfg.loader().shuffle(cfg.model.seed).order_key(n), "batch_size": settings.batch_size,
             "pairs": n}
    saved_order = dict(state.order)
    if isinstance(saved_order.get("shuffle"), dict):
        # a shuffle this prior does not know stays as recorded (and is refused below)
        with contextlib.suppress(TypeError, PriorError):
            saved_order["shuffle"] = Shuffle.from_dict(saved_order["shuffle"]).order_key(n)
    if state.order and saved_order != order:
        changed = ", ".join(k for k in order if saved_order.get(k) != order[k])
        raise PriorError(f"{run} was trained with another {changed} ({state.order}); a resumed run keeps the order "
                         "of its data: resume with the settings it started with (or the prior it started with)")


def _meta(cfg: TrainConfig, store: Store, model_name: str, backbone: str, settings: TrainSettings, task: Task,
          data: RunData, rt: Runtime, stream: TrainStream) -> dict[str, Any]:
    """``prior.json``: the model, settings, data fingerprints (the store with its non-secret
    options, `prior.trainers.store_record`), what `prior predict` needs, and the versions."""
    index = data.train_index
    # the options the store was asked to open with (those of the handle given, or the environment's)
    train_fp = {**index.fingerprint, **record_store(StoreRef(store.location, StoreRef.of(cfg.run.store).options()))}
    feature = MODEL_CLASSES[model_name].feature
    return {
        "model": model_name, "name": cfg.model.model, "backbone": backbone, "dataset": data.dataset.name,
        "dataset_read_as": data.dataset.read_as, "label_kind": index.label_kind, "label_names": list(index.label_names),
        "feature": feature, "feature_params": cfg.data.feature_params, "view": resolve_view(feature, cfg.data.view),
        "features": cfg.data.features,
        "settings": settings.to_dict(), "seed": cfg.model.seed, "sample": cfg.data.sample,
        "sample_seed": cfg.data.sample_seed, "dev": data.dev_note, "limit": cfg.data.limit,
        "metrics_names": list(task.metrics), "task": task.to_dict(), "world_size": rt.world, "device": str(rt.device),
        "device_name": device_name(rt.device),
        "fingerprints": {"train": train_fp, "dev": data.dev.reader.index.fingerprint},
        "train_pairs": data.train_pairs, "dev_pairs": len(data.dev), "versions": versions(),
        "spec": {"model": {k: v for k, v in asdict(cfg.model).items() if k != "settings"}, "data": asdict(cfg.data)},
        "order": {"shuffle": stream.shuffle.to_dict(), "batch_size": settings.batch_size, "pairs": len(stream),
                  "steps_per_epoch": stream.steps_per_epoch},
        **_build_record(store, index.fingerprint),
    }


def _build_record(store: Store, fingerprint: dict[str, Any]) -> dict[str, Any]:
    """What building the model's inputs for new pairs needs (`prior predict`), so that a
    checkpoint does not depend on its training store for it: the records of the entries it
    reads and the parser spec of its parse."""
    keys = set((fingerprint.get("entries") or {}).values())
    return {"entry_records": {e.name: e.target() for e in store.entries() if e.key in keys},
            "parser_spec": parser_spec(store, fingerprint.get("parse"))}


__all__ = ["Run", "check_output", "start_run", "versions"]
