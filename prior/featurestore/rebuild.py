"""The builds that make again what a store lacks, composed from what it recorded.

A store keeps, with a split's pairs, the recipe that read them (`prior.featurestore.recipe`),
with each feature entry the part of a build that makes it, and with each parse the parser spec
that made it. Every message that tells how to add or restore something carries a recipe
composed here from those records: the split's dataset source (a file path, a name, columns,
the row limit of the builds that read it), the features, the parse's parser. The text of a
recipe is the installed renderer's (`prior.featurestore.recipe.render`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from prior.errors import NotFoundError, PriorError
from prior.featurestore.recipe import FeatureRecipe, Recipe, read_recorded
from prior.parser_spec import loads_code

if TYPE_CHECKING:
    from prior.featurestore.catalog import Segment
    from prior.featurestore.entries import EntryInfo
    from prior.featurestore.segments import SegmentStore


class MissingDataError(NotFoundError):
    """What a read needs is not in the store (pairs reference sentences, or sentences a parse,
    that it does not hold; a split lacks some of its rows); ``recipe``: the build that
    restores them."""

    def __init__(self, message: str, *, recipe: Recipe | None = None) -> None:
        super().__init__(message)
        self.recipe = recipe


class ShortSplitError(MissingDataError):
    """A split holds fewer rows than its manifest records (a pairs segment was dropped or its
    record deleted): a read would come back short, so it fails instead."""


def build_recipe(store: SegmentStore, *, dataset: str | None, split: str | None, features: Sequence[FeatureRecipe],
                 parse: str | None = None, parser: str | None = None) -> Recipe:
    """The build that adds ``features``' items for a split (a comma-separated list of splits),
    from what the store recorded: the split's dataset source (a file path, a name, columns),
    the features and the parse's parser (``parser``: this parser spec instead)."""
    recipe = Recipe()
    if dataset is not None:
        recipe = (pairs_recipe(store, dataset, split) or Recipe(dataset=dataset)).with_(split=split)
    from_store = parser is None
    parser = parser or parser_spec(store, parse)
    return recipe.with_(features=tuple(features), parser=parser or None, store=store.location,
                        recorded_parser_loads_code=bool(from_store and parser and loads_code(parser)))


def pairs_recipe(store: SegmentStore, dataset: str, split: str | None) -> Recipe | None:
    """How the build that wrote a split's pairs read its dataset, with the row limit when every
    build of its current rows read only a prefix of the file (then the recipe reads the same rows
    again instead of the whole file); None when the store recorded nothing. ``split``: one split
    or a comma-separated list (the first one's record serves; the limit is the widest of them)."""
    names = split.split(",") if split is not None else [s for d, s in store.datasets() if d == dataset][:1]
    groups = [segs for name in names if (segs := store.split_segments(dataset, name))]
    recorded = read_recorded(groups[0][-1].meta) if groups else None
    if recorded is None or recorded.dataset is None:
        return None
    current = [s for segs in groups for s in segs]
    limits = [n for s in current if isinstance(n := s.meta.get("limit"), int)]
    limit = max(limits) if split is not None and len(limits) == len(current) else None
    return recorded.source().with_(limit=limit)


def recorded_spec(target: Mapping[str, Any]) -> str:
    """The ``--parser`` value a parses record (a segment's target) names."""
    return str(target["spec"])


def parser_spec(store: SegmentStore, parse: str | None) -> str | None:
    """The ``--parser`` value that reproduces ``parse`` (default: the store's latest parse)."""
    segs = store.segments("parses")
    if parse is not None:
        segs = [s for s in segs if s.target["parse"] == parse]
    if not segs:
        return None
    return recorded_spec(segs[-1].target)


def feature_recipe(entry: EntryInfo | None, name: str, built_by: str | None = None,
                   params: Mapping[str, Any] | None = None) -> FeatureRecipe:
    """The feature of a build that makes ``entry`` again, or a new entry of ``name`` with
    ``params`` as options when there is none yet (with the view's ``build_inputs``)."""
    from prior.layouts.views import VIEWS

    if entry is not None and entry.recipe is not None and entry.recipe.features:
        return entry.recipe.features[0]
    feature = (entry.built_by if entry is not None else None) or built_by or name
    options = entry.options if entry is not None else dict(params or {})
    return FeatureRecipe(feature, dict(options), dict(VIEWS[name].build_inputs) if name in VIEWS else {})


def restore_recipe(store: SegmentStore, dataset: str, split: str, *, parse: str | None = None,
                   entries: Sequence[EntryInfo] = (), dropped: Segment | None = None,
                   parser: str | None = None, source: Recipe | None = None) -> Recipe:
    """The build that restores ``dataset``/``split``'s pairs, sentences and parses (and the items
    of ``entries``): the split's recorded dataset source, the first entry's feature (else one the
    store holds, else ``sdoi``, which needs no resources), the parse's parser (``parser``: a
    spec recorded elsewhere, e.g. by a dropped parses segment). ``dropped``: the split's pairs
    segment that was just dropped, whose record serves when the split has no other.
    ``source``: how the split's rows were read (a recipe with their row limit), recorded
    elsewhere than in its pairs records (`prior.featurestore.splits.SplitRef`)."""
    try:
        entry = entries[0] if entries else next(iter(store.entries()), None)
        features = [feature_recipe(entry, entry.name) if entry is not None else FeatureRecipe("sdoi")]
        loads = bool(parser and loads_code(parser))
        if source is None and all(store.split_segments(dataset, s) for s in split.split(",")):
            recipe = build_recipe(store, dataset=dataset, split=split, features=features, parse=parse)
            return recipe if parser is None else recipe.with_(parser=parser, recorded_parser_loads_code=loads)
        made = build_recipe(store, dataset=None, split=None, features=features, parse=parse)
        if parser is not None:
            made = made.with_(parser=parser, recorded_parser_loads_code=loads)
        base = source.with_(split=split) if source is not None else _dropped_source(store, dataset, split, dropped)
        return base.with_(features=made.features, parser=made.parser, store=made.store,
                          recorded_parser_loads_code=made.recorded_parser_loads_code)
    except PriorError:  # the catalog itself is damaged: a recipe without recorded sources
        return Recipe(dataset=dataset, split=split, store=store.location)


def _dropped_source(store: SegmentStore, dataset: str, split: str, dropped: Segment | None) -> Recipe:
    """The dataset source of a split whose pairs segments are all gone: the record of its
    dropped segment or of another split of the dataset (with its row limit), else the plain name."""
    splits = [[dropped]] if dropped is not None else []
    splits += [store.split_segments(dataset, other) for d, other in store.datasets() if d == dataset]
    for segs in splits:
        recorded = read_recorded(segs[-1].meta)
        limits = [n for s in segs if isinstance(n := s.meta.get("limit"), int)]
        if recorded is not None and recorded.dataset is not None:
            return recorded.source().with_(split=split, limit=max(limits) if len(limits) == len(segs) else None)
    return Recipe(dataset=dataset, split=split)


__all__ = ["MissingDataError", "ShortSplitError", "build_recipe", "feature_recipe", "pairs_recipe", "parser_spec", "recorded_spec", "restore_recipe"]
