"""Predictions of a trained checkpoint for new sentence pairs: `prior predict` and the Python
entry point::

    from prior.pipeline.predict import build_pairs
    from prior.trainers import load_model

    # a `prior train` output (its best/) or a checkpoint; the pipeline builds the new pairs' features
    model = load_model("runs/dafa-mini-sick-s42", builder=build_pairs)
    for p in model.predict([("A man plays a guitar.", "Someone plays music.")]):
        print(p.label, p.probabilities)               # regression models: p.score

A model reads its feature from the store, as in training and evaluation. New pairs therefore
first get their parse and the model's feature entries, built exactly as the checkpoint's were
(same parse, same parameters, the training data's IDF table or vocabulary), into a store:
``store=`` or ``$PRIOR_HOME/predict-store``, where later predictions reuse what is there.
That build is the pipeline's job: the caller hands ``load_model`` a :class:`PairBuilder` (the
pipeline's `prior.pipeline.predict.build_pairs`, which `prior predict` passes). ``trainers``
never imports ``pipeline``: training, evaluation and prediction read only the store.

Where the entries' records come from: ``prior.json`` (``entry_records`` and ``parser_spec``,
written by training since they were added), else the training store it names. Resources the
entries name (an IDF table, a vocabulary) are copied from the training store into the
prediction store once.

The parser: ``parser=`` (``--parser``) when given, the choice of the person running it;
else the spec recorded in ``prior.json`` or the training store's parses record, which the
builder uses only where it loads no pickle (`prior.pipeline.parsers.check_recorded_spec`): a
checkpoint or a store never names code to run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from prior.errors import DataError, PriorError
from prior.featurestore import StoreRef, open_store
from prior.featurestore.selection import parser_spec
from prior.featurestore.store import EntryInfo
from prior.layouts.views import view_of
from prior.paths import prior_home
from prior.progress import stage_bars
from prior.trainers.checkpoint import checkpoint_dir, load_checkpoint, stored_view, trained_features
from prior.trainers.data import load_split
from prior.trainers.evaluation import predict
from prior.trainers.runtime import Runtime, runtime
from prior.trainers.store_record import recorded_store


def default_predict_store() -> str:
    """``$PRIOR_HOME/predict-store``: where `prior predict` builds new pairs' features."""
    return str(prior_home() / "predict-store")


@dataclass(frozen=True)
class Prediction:
    """One pair's prediction. ``label`` and ``probabilities`` (class name → probability, the
    softmax of the logits) for a classifier, ``score`` for a regression model. ``key`` is the
    pair key, ``a``/``b`` the normalized texts; ``row`` the pair's input row: its index in a
    list given to `Predictor.predict`, the file row `prior build` reports for a file."""

    key: str
    a: str
    b: str
    row: int
    label: str | None = None
    probabilities: dict[str, float] | None = None
    score: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"row": self.row, "key": self.key, "a": self.a, "b": self.b}
        if self.score is not None:
            return out | {"score": self.score}
        return out | {"label": self.label, "probabilities": self.probabilities}


@dataclass
class Predictions:
    """The predictions of one input, in input order, and the rows that could not be used
    (reason → count, and the first few as ``file:row [field] reason``)."""

    items: list[Prediction]
    skipped: dict[str, int] = field(default_factory=dict)
    skip_examples: list[str] = field(default_factory=list)


class Built(Protocol):
    """What a builder returns: where the pairs went and which input rows were unusable."""

    store: str
    dataset: str
    split: str
    skipped: dict[str, int]
    skip_examples: list[str]


class PairBuilder(Protocol):
    """Builds the pairs' parse and entries into a store: `prior.pipeline.predict.build_pairs`
    (its arguments are documented there), or a caller's own function of the same signature."""

    def __call__(self, store: StoreRef | str | None, *, entries: Sequence[EntryInfo], parse: str,
                 parser: str | None = None, pairs: Sequence[tuple[str, str]] | None = None,
                 file: str | Path | None = None, text_a: str = "sentence1", text_b: str = "sentence2",
                 resources: StoreRef | str | None = None, workers: int = 0, progress: bool = False,
                 recorded_parser: str | None = None, recorded_in: str = "the model") -> Built: ...


class Predictor:
    """A loaded checkpoint that predicts raw sentence pairs (:func:`load_model`)."""

    def __init__(self, checkpoint: Path, model: Any, tokenizer: Any, meta: dict[str, Any], rt: Runtime, *,
                 store: StoreRef, parser: str | None, builder: PairBuilder, batch_size: int | None,
                 workers: int) -> None:
        self.checkpoint, self.model, self.tokenizer, self.meta, self.rt = checkpoint, model, tokenizer, meta, rt
        self.store, self.workers = store, workers
        self.batch_size = batch_size or int(meta["settings"]["batch_size"])
        self._builder = builder
        trained = meta["fingerprints"]["train"]
        # the training store, with the options it was trained with (secrets: the caller's, store_record)
        self.train_store = recorded_store(trained, StoreRef(None, store.storage_options))
        self.parse: str = trained["parse"]
        self.read = (stored_view(meta) or meta["feature"]) if meta["feature"] else None
        recorded = dict(trained.get("entries") or {})
        self.entry_keys = ({n: recorded[n] for n in view_of(self.read).entries if n in recorded}
                           if self.read else {})
        self.entries = self._entries()
        self.parser = parser  # the caller's choice: any spec
        self.recorded_parser, self.recorded_in = (None, "") if parser else self._recorded_parser()

    @property
    def label_kind(self) -> str:
        return str(self.meta["label_kind"])

    @property
    def label_names(self) -> tuple[str, ...]:
        return tuple(self.meta.get("label_names") or ())

    def _train_store(self) -> Any:
        try:
            return open_store(self.train_store, create=False)
        except PriorError as exc:
            raise PriorError(f"{self.checkpoint} records no feature entries of its own and its training store "
                             f"cannot be read ({exc}); predict where that store is reachable") from None

    def _entries(self) -> list[EntryInfo]:
        """The entries the model read, from prior.json or else from the training store."""
        records = self.meta.get("entry_records") or {}
        if all(n in records for n in self.entry_keys):
            return [EntryInfo.from_target(records[n]) for n in self.entry_keys]
        held = {e.key: e for e in self._train_store().entries()}
        if missing := [n for n, k in self.entry_keys.items() if k not in held]:
            raise PriorError(f"the training store {self.train_store.location} no longer holds the {', '.join(missing)} "
                             f"entries {self.checkpoint} was trained on")
        return [held[k] for k in self.entry_keys.values()]

    def _recorded_parser(self) -> tuple[str | None, str]:
        """The parser spec data recorded for the model's parse, and where: the checkpoint's
        prior.json, else the training store's parses record (data: the builder checks it)."""
        if spec := self.meta.get("parser_spec"):
            return str(spec), f"{self.checkpoint / 'prior.json'} (parser_spec)"
        return self._stored_parser(), f"the parses record of {self.train_store.location}"

    def _stored_parser(self) -> str | None:
        try:
            return parser_spec(open_store(self.train_store, create=False), self.parse)
        except PriorError:
            return None  # the build's default parser; its parse id is checked against the model's

    def predict(self, pairs: Iterable[tuple[str, str]], *, progress: bool = False) -> list[Prediction]:
        """One prediction per pair, in order (``row`` = the pair's index). An unusable pair
        (an empty sentence) is a `DataError` naming it."""
        run = self.predict_pairs(pairs, progress=progress)
        if run.skipped:
            raise DataError(f"{sum(run.skipped.values())} pair(s) cannot be used: " + "; ".join(run.skip_examples))
        return run.items

    def predict_pairs(self, pairs: Iterable[tuple[str, str]], *, rows: Sequence[int] | None = None,
                      unit: str = "pair", progress: bool = False) -> Predictions:
        """Predictions of the usable pairs and the unusable ones counted, as a build counts a
        file's rows. A pair's ``row`` is its index, or its number in ``rows`` (e.g. the input
        lines the pairs came from); an unusable one is shown as ``<unit> <row> [b] empty sentence``."""
        given = [(str(a), str(b)) for a, b in pairs]
        numbers = list(range(len(given))) if rows is None else list(rows)
        if len(numbers) != len(given):
            raise PriorError(f"{len(numbers)} row numbers for {len(given)} pairs")
        if not given:
            return Predictions([])
        run = self._run(pairs=given, progress=progress)
        examples = []
        for example in run.skip_examples:  # "<file>:<line> [field] reason" of the JSON lines written
            where, _, rest = example.partition(" ")
            line = where.rpartition(":")[2]
            examples.append(f"{unit} {numbers[int(line) - 1]} {rest}" if line.isdigit() else example)
        return Predictions([replace(p, row=numbers[p.row - 1]) for p in run.items], run.skipped, examples)

    def predict_file(self, path: str | Path, *, text_a: str = "sentence1", text_b: str = "sentence2",
                     progress: bool = False) -> Predictions:
        """Predictions for the pairs of a table file (any format `prior build` reads); rows
        that cannot be used are skipped and counted, as a build does."""
        return self._run(file=Path(path), text_a=text_a, text_b=text_b, progress=progress)

    def _run(self, *, pairs: Sequence[tuple[str, str]] | None = None, file: Path | None = None,
             text_a: str = "sentence1", text_b: str = "sentence2", progress: bool = False) -> Predictions:
        built = self._builder(self.store, entries=self.entries, parse=self.parse, parser=self.parser, pairs=pairs,
                              file=file, text_a=text_a, text_b=text_b, resources=self.train_store,
                              workers=self.workers, progress=progress, recorded_parser=self.recorded_parser,
                              recorded_in=self.recorded_in)
        store = open_store(self.store.at(built.store), create=False)
        settings = self.meta["settings"]
        data = load_split(store, built.dataset, built.split, self.tokenizer, max_length=settings["max_length"],
                          feature=self.meta["feature"], entries=self.entry_keys or None,
                          view=stored_view(self.meta), parse=self.parse).with_features(trained_features(self.meta))
        with stage_bars(progress) as report:
            outputs = predict(self.model, data, self.batch_size, self.rt, report, "predict")
        rows = store.pairs(built.dataset, built.split, parse=self.parse)  # the pairs `data` holds, in its order
        return Predictions(self._predictions(rows, outputs), dict(built.skipped), list(built.skip_examples))

    def _predictions(self, rows: Any, outputs: np.ndarray) -> list[Prediction]:
        common = zip(rows["pair_key"].to_list(), rows["text_a"].to_list(), rows["text_b"].to_list(),
                     rows["row"].to_list())
        if self.label_kind == "score":
            return [Prediction(key=k, a=a, b=b, row=r, score=float(out[0])) for (k, a, b, r), out in zip(common, outputs)]
        logits = outputs.astype(np.float64)
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        names = self.label_names or tuple(str(i) for i in range(logits.shape[1]))
        return [Prediction(key=k, a=a, b=b, row=r, label=names[int(np.argmax(p))],
                           probabilities={n: float(x) for n, x in zip(names, p)})
                for (k, a, b, r), p in zip(common, probs)]


def load_model(checkpoint: str | Path, *, store: StoreRef | str | None = None, parser: str | None = None,
               batch_size: int | None = None, workers: int = 0, builder: PairBuilder | None = None) -> Predictor:
    """The checkpoint at ``checkpoint`` (a `prior train` output folder, whose ``best/`` is
    used, or a checkpoint folder) ready to predict raw pairs. ``store``: where the pairs'
    features are built (default ``$PRIOR_HOME/predict-store``), a location or a `StoreRef`,
    whose storage options also reach the training store; ``parser``: the ``--parser``
    spec that gives the model's parse (default: as recorded); ``workers``: Dask workers for
    the build (0: in this process); ``builder``: what builds the pairs' features, required
    (`prior.pipeline.predict.build_pairs`; `trainers` does not import the pipeline, so the
    caller names it)."""
    if builder is None:
        raise PriorError("load_model needs builder=, what builds the new pairs' parse and features: pass "
                         "builder=prior.pipeline.predict.build_pairs (what `prior predict` uses) or your own PairBuilder")
    folder = checkpoint_dir(checkpoint)
    model, tokenizer, meta = load_checkpoint(folder)
    rt = runtime()
    torch.nn.Module.to(model, rt.device)  # (transformers types its own `to` otherwise)
    return Predictor(folder, model, tokenizer, meta, rt, store=StoreRef.of(store).or_at(default_predict_store()),
                     parser=parser, builder=builder, batch_size=batch_size, workers=workers)


__all__ = ["Built", "PairBuilder", "Prediction", "Predictions", "Predictor", "default_predict_store", "load_model"]
