"""The splits one training run reads: its training pairs (streamed), its dev split and the
splits it is scored on at the end.

Choices: the dev split is the one named, else the first of
`prior.trainers.dataset_ref.DEV_SPLITS` the dataset has; without one (MRPC has only train and
test), a fixed 10% of the training split (numpy seed 0, independent of the run's seed) is held
out as dev; ``sample`` then draws a fixed fraction of the remaining training pairs (seeded by
``sample_seed``, also independent of the seed), so runs with several seeds share their data.
Every split must be labelled as the training split is. A run trained with its feature
``neutral`` (`DataSpec.features`, a control) reads every split so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from prior.errors import DataError, PriorError
from prior.featurestore import Store
from prior.hints import option
from prior.trainers.config import DataSpec
from prior.trainers.dataset_ref import StoredDataset
from prior.trainers.evaluation import EvalSplit
from prior.trainers.index_cache import cached_index_split
from prior.trainers.reader import DEFAULT_CACHE_MB, SplitReader
from prior.trainers.registry import Task, task_for
from prior.trainers.split_index import SplitIndex


@dataclass
class RunData:
    """A run's splits: the training split's reader and the positions trained on (None: all),
    the dev split and the eval splits, each scored in order."""

    dataset: StoredDataset
    train: SplitReader
    subset: np.ndarray | None
    dev: EvalSplit
    evals: dict[str, EvalSplit]
    dev_note: str

    @property
    def train_index(self) -> SplitIndex:
        return self.train.index

    @property
    def train_pairs(self) -> int:
        return len(self.train.index) if self.subset is None else len(self.subset)


def open_run_data(store: Store, data: DataSpec, dataset: StoredDataset, feature: str | None, tokenizer: Any,
                  max_length: int, cache_mb: float | None = None) -> RunData:
    """The run's splits (module docstring), each indexed (`prior.trainers.split_index`) and
    read through a `SplitReader` of its own."""
    if data.features != "stored" and feature is None:
        raise PriorError(f"{option('features', data.features)}: the model reads no store feature, so it has "
                         "nothing to replace")
    kw: dict[str, Any] = {"feature": feature, "view": data.view, "request": data.request, "limit": data.limit,
                          "parser": data.parser, "parse": data.parse}
    cache = DEFAULT_CACHE_MB if cache_mb is None else cache_mb

    def reader(split: str) -> SplitReader:
        return SplitReader(cached_index_split(store, dataset.name, split, **kw), tokenizer, max_length,
                           piece=data.piece, cache_mb=cache, features=data.features)

    train = reader(data.train_split)
    positions = np.arange(len(train.index), dtype=np.int64)
    dev_split = data.dev_split or dataset.dev_split()
    if dev_split is not None:
        held = reader(dev_split)
        dev, note = EvalSplit(held, np.arange(len(held.index))), f"split {dev_split}"
    else:
        perm = np.random.default_rng(0).permutation(len(positions))
        n_dev = max(1, round(data.dev_fraction * len(positions)))
        dev = EvalSplit(train, np.sort(perm[:n_dev]))
        positions, note = np.sort(perm[n_dev:]), f"{n_dev} pairs held out of {data.train_split} (seed 0)"
    if data.sample is not None:
        if not 0 < data.sample <= 1:
            raise PriorError(f"{option('sample', str(data.sample))}: the fraction must be in (0, 1]")
        n = max(1, round(data.sample * len(positions)))
        positions = np.sort(positions[np.random.default_rng(data.sample_seed).permutation(len(positions))[:n]])
    evals = {s: EvalSplit(r, np.arange(len(r.index))) for s in data.eval_splits for r in [reader(s)]}
    subset = None if len(positions) == len(train.index) else positions
    run = RunData(dataset, train, subset, dev, evals, note)
    check_labels(run)
    return run


def check_labels(run: RunData) -> None:
    """Every split labelled, and with the training split's label kind and names."""
    train = run.train.index
    for role, index in [("train", train), ("dev", run.dev.reader.index),
                        *((s, e.reader.index) for s, e in run.evals.items())]:
        if index.labels is None:
            raise DataError(f"{index.dataset}/{index.split} has no labels: it cannot be used for {role}")
        if (index.label_kind, index.label_names) != (train.label_kind, train.label_names):
            raise DataError(f"{index.dataset}/{index.split} is stored with labels {_labels_text(index)} but "
                            f"{train.dataset}/{train.split} with {_labels_text(train)}; rebuild one of them with "
                            f"the other's {option('label_kind')} (and {option('labels')}) to use them together")


def _labels_text(index: SplitIndex) -> str:
    return "scores" if index.label_kind == "score" else f"{index.label_kind} {list(index.label_names)}"


def split_task(index: SplitIndex, dataset_kind: str) -> Task:
    """The task of a run trained on ``index``: its stored label kind and names decide
    classification or regression (the loss and the head), ``dataset_kind`` (the dataset it was
    read as) only adds the papers' reporting metrics where they fit."""
    task = task_for(index.label_kind, index.label_names, dataset_kind)
    if not task.regression and task.num_labels < 2:
        raise DataError(f"{index.dataset}/{index.split} is stored with {task.num_labels} class(es) "
                        f"{list(task.label_names)}: a classifier needs two or more; rebuild it with "
                        f"{option('labels')}, or with {option('label_kind', 'score')} for numeric labels")
    return task


__all__ = ["RunData", "check_labels", "open_run_data", "split_task"]
