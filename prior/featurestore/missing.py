"""Pairs whose sentences or parses the store does not hold: found, named, and how to restore them.

A split's pairs reference sentences by key, and a read joins the pairs with the sentences'
texts and parses. When a sentences or parses segment is gone (``prior store gc
--drop-damaged`` dropped it) a join would give nulls; instead every read (`Store.pairs`,
`Store.frame`, `Store.scan`, the export, the trainers' loader) raises :class:`MissingDataError`:
one line naming what is missing and the build that restores it (its recipe, written by the
installed renderer: a ``prior build`` line under the ``prior`` command; the build reads the
split's file again for texts it lacks and parses sentences it has no parse of).
``verify`` reports such pairs (:func:`incomplete_pairs`) and ``gc --drop-damaged`` reports the
builds that recompute what it dropped (:func:`rebuild_recipes`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from prior.errors import NotFoundError, PriorError
from prior.featurestore.entries import EntryInfo
from prior.featurestore.recipe import FeatureRecipe, Recipe, read_recorded, render
from prior.featurestore.segment_files import source_of
from prior.featurestore.selection import Coverage, build_recipe, feature_recipe

if TYPE_CHECKING:
    from prior.featurestore.catalog import Segment
    from prior.featurestore.segments import SegmentStore


class MissingDataError(NotFoundError):
    """Pairs reference sentences, or sentences a parse, that the store does not hold;
    ``recipe``: the build that restores them."""

    def __init__(self, message: str, *, recipe: Recipe | None = None) -> None:
        super().__init__(message)
        self.recipe = recipe


def restore_recipe(store: SegmentStore, dataset: str, split: str, *, parse: str | None = None,
                   entries: Sequence[EntryInfo] = (), dropped: Segment | None = None) -> Recipe:
    """The build that restores ``dataset``/``split``'s pairs, sentences and parses (and the items
    of ``entries``): the split's recorded dataset source, the first entry's feature (else one the
    store holds, else ``sdoi``, which needs no resources), the parse's parser. ``dropped``: the
    split's pairs segment that was just dropped, whose record serves when the split has no other."""
    try:
        entry = entries[0] if entries else next(iter(store.entries()), None)
        features = [feature_recipe(entry, entry.name) if entry is not None else FeatureRecipe("sdoi")]
        if store.split_segments(dataset, split):
            return build_recipe(store, dataset=dataset, split=split, features=features, parse=parse)
        made = build_recipe(store, dataset=None, split=None, features=features, parse=parse)
        return _dropped_source(store, dataset, split, dropped).with_(
            features=made.features, parser=made.parser, store=made.store,
            recorded_parser_loads_code=made.recorded_parser_loads_code)
    except PriorError:  # the catalog itself is damaged: a recipe without recorded sources
        return Recipe(dataset=dataset, split=split, store=store.location)


def restore_line(store: SegmentStore, dataset: str, split: str, *, parse: str | None = None,
                 entries: Sequence[EntryInfo] = (), dropped: Segment | None = None) -> str:
    """:func:`restore_recipe` as the installed renderer writes it."""
    return render(restore_recipe(store, dataset, split, parse=parse, entries=entries, dropped=dropped))


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


def missing_sentences(store: SegmentStore, dataset: str, split: str, count: int,
                      entries: Sequence[EntryInfo] = ()) -> MissingDataError:
    recipe = restore_recipe(store, dataset, split, entries=entries)
    return MissingDataError(
        f"{store.location}: {count} sentence(s) of {dataset}/{split} are not in the store (their sentences "
        f"segment was dropped or never committed), so their texts would be null; restore them with: "
        f"{render(recipe)}", recipe=recipe)


def missing_parses(store: SegmentStore, dataset: str, split: str, parse: str | None, count: int,
                   entries: Sequence[EntryInfo] = ()) -> MissingDataError:
    recipe = restore_recipe(store, dataset, split, parse=parse, entries=entries)
    return MissingDataError(
        f"{store.location}: {count} sentence(s) of {dataset}/{split} have no parse {str(parse)[:12]} in the "
        f"store (its parses segment was dropped), so their words, heads and tags would be null; restore "
        f"them with: {render(recipe)}", recipe=recipe)


def check_held(store: SegmentStore, dataset: str, split: str, keys: Iterable[str], held: Iterable[str], *,
               parse: str | None = None, entries: Sequence[EntryInfo] = ()) -> None:
    """Raise `MissingDataError` when some of ``keys`` (sentence keys a read needs) are not in
    ``held`` (those found): sentences when ``parse`` is None, else parses of ``parse``."""
    found = set(held)
    missing = {k for k in keys if k not in found}
    if not missing:
        return
    if parse is None:
        raise missing_sentences(store, dataset, split, len(missing), entries)
    raise missing_parses(store, dataset, split, parse, len(missing), entries)


def incomplete_pairs(store: SegmentStore, segments: Sequence[Segment],
                     skip: set[str]) -> list[tuple[str, str, str, Recipe]]:
    """(dataset, split, ``verify``'s line, the build that restores them) for each current pairs
    segment whose sentences the
    store does not hold, or whose sentences lack a parse that a feature entry computed from
    them (so the parse was there and is gone). ``segments``: the committed ones; ``skip``: ids
    of damaged ones (their keys are not read, and what they may hold is not reported again)."""
    usable = [s for s in segments if s.id not in skip]
    # what a damaged (not yet dropped) segment may hold is reported as that segment's damage
    damaged_sentences = any(s.kind == "sentences" for s in segments if s.id in skip)
    damaged_parses = {s.target["parse"] for s in segments if s.id in skip and s.kind == "parses"}
    sentences = store.segment_keys(s for s in usable if s.kind == "sentences")
    parsed: dict[str, set[str]] = {}
    for s in usable:
        if s.kind == "parses":
            parsed.setdefault(s.target["parse"], set()).update(store.segment_keys([s]))
    entries: dict[str, tuple[EntryInfo, set[str]]] = {}
    for s in usable:
        if s.kind == "feature":
            held = entries.setdefault(s.target["entry"], (EntryInfo.from_target(s.target), set()))
            held[1].update(store.segment_keys([s]))
    latest = {(s.target["dataset"], s.target["split"]): source_of(s) for s in usable if s.kind == "pairs"}
    current = {s.id for s in usable if s.kind == "pairs"
               and source_of(s) == latest[s.target["dataset"], s.target["split"]]}
    out = []
    for seg in usable:
        if seg.id not in current:
            continue
        dataset, split = seg.target["dataset"], seg.target["split"]
        rows = store.pair_rows_of(seg)
        keys = set(rows["key_a"].to_list()) | set(rows["key_b"].to_list())
        where = f"segment {seg.id} (pairs {dataset}/{split})"
        if (lost := keys - sentences) and not damaged_sentences:
            recipe = restore_recipe(store, dataset, split)
            out.append((dataset, split, f"{where}: {len(lost)} of its sentences are not in the store; restore "
                                        f"them with: {render(recipe)}", recipe))
        for info, have in entries.values():
            if info.parse is None or info.parse in damaged_parses:
                continue
            if info.scope == "pair":
                used = {k for p, a, b in zip(rows["pair_key"].to_list(), rows["key_a"].to_list(),
                                             rows["key_b"].to_list()) if p in have for k in (a, b)}
            else:
                used = keys & have
            if unparsed := used - parsed.get(info.parse, set()):
                recipe = restore_recipe(store, dataset, split, parse=info.parse, entries=[info])
                out.append((dataset, split, f"{where}: {len(unparsed)} of its sentences have no parse "
                                            f"{info.parse[:12]} (entry {info.spec} {info.key[:12]} was computed "
                                            f"from it); restore it with: {render(recipe)}", recipe))
                break
    return out


def rebuild_recipes(store: SegmentStore, dropped: Sequence[Segment]) -> list[Recipe]:
    """After ``gc --drop-damaged`` dropped ``dropped``: the builds that compute them again, one
    per split and entry (a rebuild reads and computes only what the store lacks). A dropped
    feature segment's entry is rebuilt for every split it now lacks items of."""
    store.refresh()
    recipes = [restore_recipe(store, s.target["dataset"], s.target["split"], dropped=s)
               for s in dropped if s.kind == "pairs"]
    recipes += [recipe for *_, recipe in incomplete_pairs(store, store.segments(), set())]
    coverage = Coverage(store)
    for seg in dropped:
        if seg.kind != "feature":
            continue
        entry = EntryInfo.from_target(seg.target)
        for dataset, split in store.datasets():
            if coverage.missing(entry, dataset, split)[0]:
                recipes.append(restore_recipe(store, dataset, split, parse=entry.parse, entries=[entry]))
    unique = {json.dumps([r.to_dict(), r.recorded_parser_loads_code], sort_keys=True): r for r in recipes}
    return list(unique.values())
