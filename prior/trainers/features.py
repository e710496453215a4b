"""Which store entries a model's feature is read from, and how their values become its input.

A model names one feature (`PriorBertModel.feature`: an entry or a view name); a run may read
a registered variant view of it instead (``view``, DAFA's ablations; `prior.layouts.views`).
:func:`plan_feature` resolves that once per split: the entries (`prior.featurestore.selection`:
the default ones, those a `Request` picks, or exactly those a checkpoint recorded), the layout
the model input is built by, the frame column the values go to and a vocabulary's vectors.
:func:`feature_source` then turns gathered values (one item per pair) into the batch source of
`prior.trainers.sources`. The loader knows no feature names: only layouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from prior.errors import PriorError
from prior.featurestore import Store
from prior.featurestore.recipe import Recipe
from prior.featurestore.selection import Coverage, EntrySelectionError, Request
from prior.featurestore.store import EntryInfo
from prior.hints import option
from prior.layouts.kinds import Layout, WordIds
from prior.layouts.ragged import Ragged
from prior.layouts.views import View, column_name, resolve_view, view_of
from prior.trainers.sources import FeatureSource, source_for


class MissingFeatureError(PriorError, LookupError):
    """The store lacks a feature (or some of its keys) that a model needs; ``recipe``: the
    build that adds it, when the message names one."""

    def __init__(self, message: str, *, recipe: Recipe | None = None) -> None:
        super().__init__(message)
        self.recipe = recipe


def _hint_note(message: str) -> str:
    """A word on what a placeholder in a printed build line stands for."""
    return ("\n(EMB_FILE: word2vec .txt/.bin, GloVe or fastText .vec, e.g. from "
            f"`prior embed train {option('contexts', 'dep')} {option('out', 'EMB_FILE')}`)"
            if "EMB_FILE" in message else "")


def read_entries(store: Store, feature: str, dataset: str, split: str, *, request: Request | None = None,
                 entries: dict[str, str] | None = None, coverage: Coverage | None = None) -> list[EntryInfo]:
    """The store entries a feature (an entry or view name) is read from for one split: the
    default entries, or those ``request`` picks by its ``params`` or ``entry`` (a key prefix)
    (`prior.featurestore.selection`), or exactly the ``entries`` (name → key) a checkpoint
    recorded. Each must hold every pair of the split; otherwise `MissingFeatureError` with the
    candidates or the `prior build` line that adds what is missing. ``coverage``: the
    selection's reads, kept for the caller (`prior.featurestore.selection.Coverage`)."""
    try:
        if entries:
            return [store.find_entry(name, Request(entry=key), dataset=dataset, split=split, coverage=coverage)
                    for name, key in entries.items()]
        return store.select(feature, request, dataset=dataset, split=split, coverage=coverage)
    except EntrySelectionError as exc:
        raise MissingFeatureError(f"{exc}{_hint_note(str(exc))}", recipe=exc.recipe) from None


@dataclass(frozen=True)
class FeaturePlan:
    """How one split's pairs get a model's feature: the name read (the feature or a view of
    it), its entries, the layout of the model input, the column the values go to, and (for
    word ids) the vocabulary's vectors with a zero row appended."""

    read: str
    entries: tuple[EntryInfo, ...]
    view: View
    layout: Layout
    column: str
    fingerprint: dict[str, Any]
    table: np.ndarray | None = None

    @property
    def parse(self) -> str | None:
        return self.entries[0].parse

    @property
    def width(self) -> int:
        """The vectors' size E of a word-ids feature (`PriorBertModel.options_from_feature`)."""
        return 0 if self.table is None else int(self.table.shape[1])

    def source(self, values: dict[str, Ragged]) -> FeatureSource:
        """The batch source of gathered ``values`` (frame column → one item per pair)."""
        if self.view.combine is not None:
            values = {**values, self.column: self.view.combine(values, dict(self.view.options))}
        return source_for(self.layout, values, self.column, dict(self.fingerprint), self.table)


def plan_feature(store: Store, feature: str, dataset: str, split: str, *, view: str | None = None,
                 request: Request | None = None, entries: dict[str, str] | None = None,
                 coverage: Coverage | None = None) -> FeaturePlan:
    """The :class:`FeaturePlan` of ``feature`` (read as ``view`` when given: a registered
    variant, `prior.layouts.views.resolve_view`) for ``dataset``/``split``; ``coverage`` as for
    `read_entries`."""
    read = resolve_view(feature, view) or feature
    spec = view_of(read)
    recorded = None if entries is None else {n: entries[n] for n in spec.entries if n in entries}
    chosen = read_entries(store, read, dataset, split, request=request, entries=recorded, coverage=coverage)
    return plan_of(store, read, chosen)


def plan_of(store: Store, read: str, chosen: Sequence[EntryInfo]) -> FeaturePlan:
    """The :class:`FeaturePlan` of reading ``read`` (a feature or view name) from the entries
    ``chosen`` for it (`read_entries`, or those a split's recorded index names)."""
    spec = view_of(read)
    fingerprint: dict[str, Any] = {e.name: e.key for e in chosen}
    main = chosen[0]
    layout: Layout | None
    if spec.combine is not None and spec.layout is not None:
        layout, column = spec.layout, spec.column or read
    else:
        layout = main.layout  # every entry records its layout (store format 2)
        column = column_name(main.name, layout.component)
    table = None
    if isinstance(layout, WordIds):
        table, fingerprint["vocabulary"] = _vector_table(store, main, layout)
        fingerprint["embedding_kind"] = main.params.get("kind")  # GiBERT's injection place (emb entry)
    return FeaturePlan(read, tuple(chosen), spec, layout, column, fingerprint, table)


def _vector_table(store: Store, entry: EntryInfo, layout: WordIds) -> tuple[np.ndarray, str]:
    """The vectors of the vocabulary resource a word-ids entry names in its parameters, with a
    zero row appended for id -1."""
    key = entry.params.get(layout.vocabulary_param)
    vectors = store.read_resource(str(key)).arrays.get(layout.array) if key else None
    if vectors is None:
        raise MissingFeatureError(f"{store.location}: entry {entry.spec} {entry.key[:12]} names no vocabulary "
                                  f"resource with a {layout.array!r} array in its parameter "
                                  f"{layout.vocabulary_param!r} ({entry.params})")
    table = np.zeros((vectors.shape[0] + 1, vectors.shape[1]), dtype=np.float32)
    table[:-1] = vectors
    return table, str(key)


__all__ = ["FeaturePlan", "MissingFeatureError", "plan_feature", "plan_of", "read_entries"]
