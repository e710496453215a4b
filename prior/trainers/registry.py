"""Model names, sizes and default settings, and the task a split's stored labels make.

A CLI model name is ``<model>-<size>`` (``dafa-large``, ``bert-mini``) or a bare model name
with ``--backbone``. Defaults:

- ``-base`` and ``-large`` (and bare names): the paper's settings, which each model class
  declares (``paper_settings``, ``dataset_settings``) over BERT's fine-tuning recipe
  (:class:`TrainSettings`: AdamW, linear warm-up over the first 10 % of steps, lr 2e-5,
  3 epochs, batch 32, max length 128, weight decay 0.01, clipping 1.0, early stopping after 2
  epochs without a better dev score);
- ``-mini`` (all-MiniLM-L6-v2, for CPU): one schedule for every model, :data:`MINI_SETTINGS`
  (plus, for a model whose own new parameters it cannot train, that model's ``mini_settings``:
  their ``prior_lr`` only),
  chosen on ``bert-mini``'s dev score alone, so that a comparison differs only by the method.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from prior.errors import PriorError
from prior.hints import option
from prior.trainers.models import MODEL_CLASSES

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
    # peak lr of the method's own parameters (PriorBertModel.prior_parameter_names); None: lr
    prior_lr: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_BASE = TrainSettings()
#: the -mini schedule for every model, chosen on bert-mini's SICK dev accuracy alone
#: (docs/results/sick-grid.jsonl): lr 5e-5 led 2e-5 at every one of 6 epochs (0.816 → 0.866
#: against 0.664 → 0.844); 3 epochs reach 0.862, within 2 of 500 dev pairs of the best seen in 6,
#: at half the cost. Batch 32, warm-up 10 %, weight decay 0.01, clipping 1.0 as for -base.
MINI_SETTINGS: dict[str, Any] = {"lr": 5e-5, "epochs": 3}


@dataclass(frozen=True)
class Task:
    """What a run learns and how it is scored, from the label kind the store records for the
    training split (`SplitIndex.label_kind`, `label_names`): classification over ``label_names``
    (cross-entropy, one logit per class) or regression (MSE on one score)."""

    kind: Literal["classification", "regression"]
    label_names: tuple[str, ...]
    metrics: tuple[str, ...]  # the first is the early-stopping metric; every metric is higher-better

    @property
    def regression(self) -> bool:
        return self.kind == "regression"

    @property
    def num_labels(self) -> int:
        """The classifier head's width: 1 score, or one logit per class."""
        return 1 if self.regression else len(self.label_names)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "label_names": list(self.label_names), "metrics": list(self.metrics)}


CLASSIFICATION_METRICS = ("accuracy",)
REGRESSION_METRICS = ("pearson", "spearman")
#: the metrics the papers report for a known dataset, where they differ from the kind's default:
#: F1 of class 1 first for the binary paraphrase sets (GLUE's convention). Used only when they fit
#: the stored kind (F1 needs two classes); the kind itself always comes from the store.
PAPER_METRICS: dict[str, tuple[str, ...]] = {
    "mrpc": ("f1", "accuracy"),
    "qqp": ("f1", "accuracy"),
    "twitterurl": ("f1", "accuracy"),
}


def task_for(label_kind: str, label_names: tuple[str, ...] | list[str] = (), dataset: str | None = None) -> Task:
    """The task of a split stored with ``label_kind`` ("score": regression; "class": classes
    ``label_names``), scored as the papers score ``dataset`` where that fits the kind."""
    if label_kind == "score":
        return Task("regression", (), REGRESSION_METRICS)
    if label_kind != "class":
        raise PriorError(f"a split with label kind {label_kind!r} cannot be trained on or scored; "
                         f"build it from a labelled file ({option('label_kind', 'class')} or score)")
    names = tuple(label_names)
    paper = PAPER_METRICS.get(dataset or "")
    fits = paper is not None and ("f1" not in paper or len(names) == 2)
    return Task("classification", names, paper if paper is not None and fits else CLASSIFICATION_METRICS)


def parse_model_name(name: str) -> tuple[str, str | None]:
    """``dafa-large`` → ("dafa", "large"); ``bert-sim`` → ("bert-sim", None)."""
    if name in MODEL_CLASSES:
        return name, None
    base, _, size = name.rpartition("-")
    if base in MODEL_CLASSES and size in SIZES:
        return base, size
    known = ", ".join(f"{m}-{{{','.join(SIZES)}}}" for m in MODEL_CLASSES)
    raise PriorError(f"unknown model {name!r}; known: {known} (or a bare model name with {option('backbone')})")


def default_settings(model: str, dataset: str, size: str | None = None) -> TrainSettings:
    """The defaults of ``model`` on ``dataset``: the paper's (as the model class declares them),
    or for ``size == "mini"`` the one -mini schedule shared by every model."""
    if size == "mini":
        # plus the model's settings for its own parameters only (``prior_lr``; bert has none)
        return replace(_BASE, **{**MINI_SETTINGS, **MODEL_CLASSES[model].mini_settings})
    cls = MODEL_CLASSES[model]
    return replace(_BASE, **cls.paper_settings, **cls.dataset_settings.get(dataset, {}))
