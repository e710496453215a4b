"""What a training run is asked to do, in three parts that change different things:

- :class:`ModelSpec` — the model and how it learns (backbone, settings, options, seed);
- :class:`DataSpec` — what it reads (dataset, splits, sample, which feature entries, the
  shuffle window): with the model spec, everything that decides the result;
- :class:`RunSpec` — how it runs (output, store handle, resume, saving, loader workers,
  device, logging): never the result, except ``max_steps``, a benchmark's stop.

`prior train` fills them from its options; ``TrainConfig(model, data, run)`` holds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prior.errors import PriorError
from prior.featurestore import StoreRef
from prior.featurestore.names import check_name
from prior.featurestore.selection import Request
from prior.hints import option
from prior.trainers.loader import LoaderSettings
from prior.trainers.order import DEFAULT_PIECE, DEFAULT_WINDOW
from prior.trainers.registry import TrainSettings

RUNS = Path("runs")
#: how a run reads its feature (`prior train --features`): as stored, or replaced by its neutral
#: value in training, dev and evaluation alike (the model's architecture without its prior)
TRAIN_FEATURE_MODES = ("stored", "neutral")
#: where metrics go besides metrics.jsonl (`prior train --report-to`)
REPORTERS = ("tensorboard",)


@dataclass(frozen=True)
class ModelSpec:
    model: str  # e.g. "dafa-mini", or "dafa" with backbone
    backbone: str | None = None
    settings: TrainSettings | None = None  # None: the papers' defaults for model and dataset
    overrides: dict[str, Any] = field(default_factory=dict)  # settings fields set on the command line
    options: dict[str, Any] = field(default_factory=dict)  # the model's paper options (-o key=value)
    seed: int = 42


@dataclass(frozen=True)
class DataSpec:
    dataset: str
    train_split: str = "train"
    dev_split: str | None = None  # None: the first of DEV_SPLITS the store has, else a held-out part
    dev_fraction: float = 0.1
    eval_splits: tuple[str, ...] = ()  # scored with the best model at the end
    limit: int | None = None  # first N pairs of each split (quick runs)
    sample: float | None = None  # train on a fixed fraction of the training pairs
    sample_seed: int = 0
    feature_params: dict[str, Any] | None = None
    feature_entry: str | None = None  # a store entry key prefix (instead of feature_params)
    view: str | None = None  # a registered view replacing the model's feature (View.variant_of)
    parser: str | None = None  # a model without a feature reads this --parser value's parse
    parse: str | None = None  # ... or this parse (an id prefix), when one parser made several
    window: int = DEFAULT_WINDOW  # pairs shuffled together (prior.trainers.order)
    piece: int = DEFAULT_PIECE  # consecutive pairs read together: at most a window
    features: str = "stored"  # or "neutral": every split read with the feature's neutral value (a control)

    def __post_init__(self) -> None:
        if self.features not in TRAIN_FEATURE_MODES:
            raise PriorError(f"{option('features', self.features)}: a run trains on its feature as stored or "
                             f"neutral ({', '.join(TRAIN_FEATURE_MODES)}); another pair's feature is an "
                             f"evaluation's ablation (prior eval {option('features', 'shuffled')})")
        if self.piece > self.window:
            object.__setattr__(self, "piece", self.window)

    @property
    def request(self) -> Request:
        return Request(params=self.feature_params, entry=self.feature_entry)


@dataclass(frozen=True)
class RunSpec:
    output: Path
    store: StoreRef | str | None = None  # a location, or a StoreRef with a store's fsspec options
    resume: Path | None = None  # a run folder (or its last/) to continue
    save_every: int | None = None  # also save the resumable state every N steps
    workers: int | None = None  # loader worker processes (None: 2 on CUDA, 0 on CPU)
    prefetch: int = 4
    cache_mb: float | None = None  # what each loader reader keeps (default: prior.trainers.reader's)
    device: str | None = None  # auto, cpu, cuda, cuda:N
    threads: int | None = None
    max_steps: int | None = None  # stop after this many optimizer steps (benchmarks)
    report_to: tuple[str, ...] = ()
    progress: bool = True


@dataclass(frozen=True)
class TrainConfig:
    model: ModelSpec
    data: DataSpec
    run: RunSpec

    def loader(self, device_type: str = "cpu") -> LoaderSettings:
        """The loader's settings; workers by default: 2 on CUDA (the loader keeps ahead of the
        GPU), none on a CPU (the cores are the model's)."""
        workers = self.run.workers if self.run.workers is not None else (2 if device_type == "cuda" else 0)
        return LoaderSettings(workers=workers, prefetch=self.run.prefetch, window=self.data.window,
                              piece=self.data.piece)


def default_output(model: str, dataset: str, seed: int) -> Path:
    """``runs/<model>-<dataset>-s<seed>``. The model and dataset names must be plain names
    (`prior.featurestore.names.check_name`: no separators, no ``..``), so the folder is always one
    entry directly inside ``runs/``, whatever name a store holds; `StoreError` otherwise."""
    name = f"{check_name('model', model)}-{check_name('dataset', dataset)}-s{int(seed)}"
    return RUNS / check_name("output folder", name)


__all__ = ["REPORTERS", "RUNS", "TRAIN_FEATURE_MODES", "DataSpec", "ModelSpec", "RunSpec", "TrainConfig", "default_output"]
