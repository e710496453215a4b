"""Model names → classes, the store feature each needs, and the papers' default settings.

A CLI model name is ``<model>-<size>`` (``dafa-large``, ``bert-mini``) or a bare model name
with ``--backbone``. Defaults come from each paper's reported settings (FORMULAS.md,
"Hyper-parameters the papers report"); where a paper gives a range, the first value BERT's
authors recommend inside it is taken and the choice is stated here:

- every model: AdamW, linear warm-up over the first 10% of steps, max length 128, batch 32;
- `bert`, `bert-sim` (UERBERT: "BERT-base configuration"): lr 2e-5, 3 epochs, weight decay
  0.01, clip 1.0 (BERT's fine-tuning recipe; UERBERT reports no other);
- `sgnet`: lr 2e-5 ∈ {2e-5, 3e-5}, weight decay 0.01, 3 epochs ∈ 2–5, α = 0.5;
- `dafa`: lr 2e-5 ∈ {1e-5, 2e-5, 3e-5, 8e-6}, weight decay 1e-8, 3 epochs ∈ 3–5,
  gradient clipping 10.0 ∈ {7.5, 10, 15};
- `gibert`: 3 epochs with early stopping on dev F1; per dataset from its Table 8: MSRP
  (MRPC) lr 5e-5, max length 80; Quora (QQP) lr 2e-5, max length 48; else lr 2e-5;
- `cda`: lr 2e-5 ∈ {1e-5, 2e-5, 3e-5, 8e-6}, weight decay 0.01, 5 epochs, clip 10.0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from featurestore.errors import PriorError
from trainers.models import MODEL_CLASSES

SIZES = ("base", "large", "mini")


@dataclass(frozen=True)
class TrainSettings:
    lr: float = 2e-5
    epochs: int = 3
    batch_size: int = 32
    max_length: int = 128
    warmup: float = 0.1
    weight_decay: float = 0.01
    clip: float = 1.0
    patience: int = 2  # epochs without dev improvement before stopping

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_BASE = TrainSettings()
PAPER_SETTINGS: dict[str, TrainSettings] = {
    "bert": _BASE,
    "bert-sim": _BASE,
    "sgnet": _BASE,
    "dafa": replace(_BASE, weight_decay=1e-8, clip=10.0),
    "gibert": _BASE,
    "cda": replace(_BASE, epochs=5, clip=10.0),
}
#: per (model, dataset) overrides the papers report
DATASET_SETTINGS: dict[tuple[str, str], dict[str, Any]] = {
    ("gibert", "mrpc"): {"lr": 5e-5, "max_length": 80},
    ("gibert", "qqp"): {"lr": 2e-5, "max_length": 48},
}


@dataclass(frozen=True)
class DatasetTask:
    """How a dataset is scored, as the papers report it."""

    metrics: tuple[str, ...]  # the first is the early-stopping metric
    regression: bool = False


TASKS: dict[str, DatasetTask] = {
    "mrpc": DatasetTask(("f1", "accuracy")),
    "qqp": DatasetTask(("f1", "accuracy")),
    "twitterurl": DatasetTask(("f1", "accuracy")),
    "stsb": DatasetTask(("pearson", "spearman"), regression=True),
    "sick-r": DatasetTask(("pearson", "spearman"), regression=True),
}
DEFAULT_TASK = DatasetTask(("accuracy",))


def task_for(dataset: str) -> DatasetTask:
    return TASKS.get(dataset, DEFAULT_TASK)


def parse_model_name(name: str) -> tuple[str, str | None]:
    """``dafa-large`` → ("dafa", "large"); ``bert-sim`` → ("bert-sim", None)."""
    if name in MODEL_CLASSES:
        return name, None
    base, _, size = name.rpartition("-")
    if base in MODEL_CLASSES and size in SIZES:
        return base, size
    known = ", ".join(f"{m}-{{{','.join(SIZES)}}}" for m in MODEL_CLASSES)
    raise PriorError(f"unknown model {name!r}; known: {known} (or a bare model name with --backbone)")


def default_settings(model: str, dataset: str) -> TrainSettings:
    return replace(PAPER_SETTINGS[model], **DATASET_SETTINGS.get((model, dataset), {}))
