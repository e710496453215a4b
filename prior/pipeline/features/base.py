"""The `Feature` protocol: a versioned, pure function of parses (and resources).

A feature has a ``scope``: "sentence" features compute from one `Parse` (SDOI masks, tf-idf
weights), "pair" features from the two parses of a pair (Wu-Palmer, DAFA's matrices). Each
computes one or more named components (word-level arrays) per item; the store keeps each
component separately. ``params()`` returns every parameter fully resolved, defaults included:
it is hashed into the store entry with ``name@version`` and the parse id. Settings that do not
change results (batch sizes, workers) are not parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

from prior.featurestore.parse_columns import ANNOTATIONS
from prior.layouts.kinds import Layout

if TYPE_CHECKING:
    from prior.pipeline.features.context import BuildContext

Scope = Literal["sentence", "pair"]


@runtime_checkable
class Feature(Protocol):
    """What the build calls on a feature, in order: ``check_resources`` (driver and each worker,
    before anything is committed), ``prepare`` (driver, after parsing: store a resource such as
    an IDF table or a vocabulary) or ``restore`` (take them from an existing entry's record),
    ``report_lines`` (driver, for the build report), ``params`` (the entry key), then per
    worker ``setup`` once and ``compute`` per partition. ``layout``
    says what the stored values are (`prior.layouts.kinds`); the store records it in the entry so
    readers need no feature names."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int: ...

    @property
    def scope(self) -> Scope: ...

    @property
    def components(self) -> tuple[str, ...]: ...

    @property
    def layout(self) -> Layout: ...

    def params(self) -> dict[str, Any]: ...

    def check_resources(self) -> None:
        """Raise when this process lacks what ``setup`` needs (WordNet, a model file)."""
        ...

    def prepare(self, ctx: BuildContext) -> None:
        """Driver-side preparation before any partition is computed."""
        ...

    def restore(self, ctx: BuildContext, params: Mapping[str, Any]) -> None:
        """Instead of ``prepare``: take what it would compute from the dataset (an IDF table,
        a vocabulary) from an entry's recorded ``params``, reading the resources they name
        from ``ctx.store``; then ``params()`` equals them. `prior predict` computes a model's
        features of new pairs this way, exactly as the model was trained."""
        ...

    def report_lines(self, dataset: str) -> list[str]:
        """Lines for the build report (OOV rates, the IDF table used)."""
        ...

    def recipe_inputs(self) -> dict[str, str]:
        """Input files beyond the options that make this entry again (input name → path, e.g.
        ``{"embeddings": "/abs/vectors.vec"}``), recorded with the entry's recipe."""
        ...

    def setup(self) -> None:
        """Load resources (WordNet, tables) once per worker process; idempotent."""
        ...

    def compute(self, items: Sequence[Any]) -> list[dict[str, np.ndarray]]:
        """One dict component → array per item, in order; the items are `Parse`s (scope
        "sentence") or (A, B) pairs of them (scope "pair")."""
        ...


class FeatureBase:
    """Defaults for the hooks a feature may leave out: nothing to check, prepare, report or
    load. Concrete features inherit it and declare name, version, scope, components, layout,
    ``params`` and ``compute``."""

    name: str
    version: int
    scope: Scope
    components: tuple[str, ...]
    layout: Layout

    def check_resources(self) -> None:
        """Nothing to check."""

    def prepare(self, ctx: BuildContext) -> None:
        """Nothing to prepare."""

    def restore(self, ctx: BuildContext, params: Mapping[str, Any]) -> None:
        """Nothing to restore: the parameters come from the constructor's options alone."""

    def worker_token(self) -> str:
        """What a worker's set-up copy of this feature must match beyond the entry key to be
        reused (a worker keeps one copy per entry; `prior.pipeline.worker`): ``""`` for a feature
        whose state is its parameters. Optional: the worker reads it with ``getattr``."""
        return ""

    def report_lines(self, dataset: str) -> list[str]:
        return []

    def recipe_inputs(self) -> dict[str, str]:
        return {}

    def setup(self) -> None:
        """Nothing to load."""

    def annotations(self) -> frozenset[str]:
        """The parse annotations (of `ANNOTATIONS`: tags, UPOS, lemmas, entity types) that
        ``compute`` and ``prepare`` read beyond words, heads and relations; the build has spaCy
        make only those its features read (`prior.pipeline.parsers.annotations`). All of them
        unless a feature says less. Optional: the build reads it with `annotations_of`."""
        return frozenset(ANNOTATIONS)


def annotations_of(features: Iterable[Any]) -> frozenset[str]:
    """The parse annotations that ``features`` read together (all of them for a feature that
    does not say)."""
    out: set[str] = set()
    for feature in features:
        reads = getattr(feature, "annotations", None)
        out |= set(ANNOTATIONS) if reads is None else set(reads())
    return frozenset(out)
