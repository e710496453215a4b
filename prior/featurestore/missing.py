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
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from prior.featurestore.entries import EntryInfo
from prior.featurestore.names import name_problem
from prior.featurestore.parse_columns import ANNOTATIONS
from prior.featurestore.rebuild import MissingDataError, restore_recipe
from prior.featurestore.recipe import Recipe, render
from prior.featurestore.segment_files import held_annotations, read_parquet, source_of
from prior.featurestore.selection import Coverage
from prior.featurestore.splits import later_refs, lost_pairs, restore_text, shape_recipe, split_shape

if TYPE_CHECKING:
    from prior.featurestore.catalog import Segment
    from prior.featurestore.segments import SegmentStore


def restore_line(store: SegmentStore, dataset: str, split: str, *, parse: str | None = None,
                 entries: Sequence[EntryInfo] = (), dropped: Segment | None = None) -> str:
    """:func:`restore_recipe` as the installed renderer writes it."""
    return render(restore_recipe(store, dataset, split, parse=parse, entries=entries, dropped=dropped))


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


def current_splits(segments: Sequence[Segment]) -> dict[tuple[str, str], list[Segment]]:
    """Each split's pairs segments of its current source (the latest segment's), oldest first,
    among ``segments`` (`SegmentStore.split_segments` for a list read elsewhere)."""
    by_split: dict[tuple[str, str], list[Segment]] = {}
    for s in segments:
        if s.kind == "pairs":
            by_split.setdefault((s.target["dataset"], s.target["split"]), []).append(s)
    return {split: [s for s in segs if source_of(s) == source_of(segs[-1])] for split, segs in by_split.items()}


def short_splits(store: SegmentStore, segments: Sequence[Segment],
                 skip: set[str]) -> list[tuple[str, str, str, Recipe]]:
    """(dataset, split, ``verify``'s line, the build that restores it) for each split that holds
    fewer rows than its manifest records, lacks a pairs segment it lists, or lacks its latest
    pairs segment that later records name (`prior.featurestore.splits`), also when that was its
    only one. ``skip``: ids of damaged segments (a split with one is reported as that segment's
    damage)."""
    out = []
    current = current_splits(segments)
    refs = later_refs(segments)
    for dataset, split in sorted(set(current) | set(refs)):
        segs = current.get((dataset, split), [])
        if any(s.id in skip for s in segs):
            continue
        lost = lost_pairs(segments, dataset, split, refs)
        if not segs and not lost:
            continue
        rows = {r for s in segs for r in read_parquet(store.fs, s, "pairs.parquet", ["row"]).column("row").to_pylist()}
        shape = split_shape(segs, len(rows), lost)
        if shape.short:
            recipe = shape_recipe(store, shape)
            out.append((dataset, split, f"pairs {shape.describe()}; restore them with: {restore_text(shape, recipe)}",
                        recipe))
    return out


def incomplete_pairs(store: SegmentStore, segments: Sequence[Segment], skip: set[str],
                     specs: Mapping[str, str] | None = None,
                     annotated: Mapping[str, tuple[str, ...]] | None = None) -> list[tuple[str, str, str, Recipe]]:
    """(dataset, split, ``verify``'s line, the build that restores them) for each current pairs
    segment whose sentences the store does not hold, or whose sentences lack a parse that a
    feature entry computed from them (so the parse was there and is gone). ``segments``: the
    committed ones; ``skip``: ids of damaged ones (their keys are not read, and what they may
    hold is not reported again); ``specs``: parse → parser spec of parses whose records were
    just dropped (the store records them no more); ``annotated``: parse → the annotations its dropped
    records held, which the build that restores them makes too (`dropped_annotations`)."""
    specs, annotated = specs or {}, annotated or {}
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
    out = []
    for seg in [s for segs in current_splits(usable).values() for s in segs]:
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
                recipe = restore_recipe(store, dataset, split, parse=info.parse, entries=[info],
                                        parser=specs.get(info.parse)).with_(annotate=annotated.get(info.parse, ()))
                out.append((dataset, split, f"{where}: {len(unparsed)} of its sentences have no parse "
                                            f"{info.parse[:12]} (entry {info.spec} {info.key[:12]} was computed "
                                            f"from it); restore it with: {render(recipe)}", recipe))
                break
    return out


def rebuild_recipes(store: SegmentStore, dropped: Sequence[Segment]) -> list[Recipe]:
    """After ``gc --drop-damaged`` dropped ``dropped`` (damaged segments, and what damaged
    records claimed to be): the builds that compute them again, one per split and entry (a
    rebuild reads and computes only what the store lacks). A dropped pairs segment's split, a
    split left short or with pairs whose sentences or parses are gone, a parse's splits that
    it no longer covers, a feature entry's splits that it no longer covers, and the splits a
    resource (an IDF table) was counted on, with the entries that name it."""
    store.refresh()
    segments = store.segments()
    specs = {s.target["parse"]: s.target["spec"] for s in dropped if s.kind == "parses"}
    held = dropped_annotations(dropped)
    short = short_splits(store, segments, set())
    # a split found short has its build already (it knows the row limit of a dropped latest segment)
    reported = {(dataset, split) for dataset, split, *_ in short}
    recipes = [restore_recipe(store, s.target["dataset"], s.target["split"], dropped=s)
               for s in dropped if s.kind == "pairs" and (s.target["dataset"], s.target["split"]) not in reported]
    recipes += [recipe for *_, recipe in short]
    recipes += [recipe for *_, recipe in incomplete_pairs(store, segments, set(), specs, held)]
    coverage = Coverage(store)
    for seg in dropped:
        if seg.kind == "feature":
            entry = EntryInfo.from_target(seg.target)
            recipes += [restore_recipe(store, d, sp, parse=entry.parse, entries=[entry], parser=specs.get(entry.parse))
                        for d, sp in store.datasets() if coverage.lacking(entry, d, sp)]
        elif seg.kind == "parses":
            recipes += _parse_recipes(store, seg, coverage)
        elif seg.kind == "resource":
            recipes += _resource_recipes(store, seg, coverage)
    unique = {json.dumps([r.to_dict(), r.recorded_parser_loads_code], sort_keys=True): r for r in recipes}
    return list(unique.values())


def _parse_recipes(store: SegmentStore, dropped: Segment, coverage: Coverage) -> list[Recipe]:
    """The builds that parse again what a dropped parses segment held: every split with
    sentences the parse lacks, where it still holds some (or holds none at all any more), with
    the parser the segment recorded. A dropped record of skips is restored the same way."""
    parse, spec = dropped.target["parse"], dropped.target["spec"]
    parsed = store.parsed_keys(parse)
    skipped = coverage.skipped(parse)
    out = []
    for dataset, split in store.datasets():
        rows = coverage.rows(dataset, split)
        keys = set(rows["key_a"].to_list()) | set(rows["key_b"].to_list())
        lacking = keys - parsed - skipped.keys()
        if lacking and (len(lacking) < len(keys) or not parsed):
            out.append(restore_recipe(store, dataset, split, parse=parse, parser=spec)
                       .with_(annotate=dropped_annotations([dropped]).get(parse, ())))
    return out


def dropped_annotations(dropped: Sequence[Segment]) -> dict[str, tuple[str, ...]]:
    """Parse → the annotations its dropped parses segments held (a build annotates only what its
    features read, so the one that parses them again is asked for these too)."""
    out: dict[str, set[str]] = {}
    for s in dropped:
        if s.kind == "parses" and s.rows:
            out.setdefault(s.target["parse"], set()).update(held_annotations(s))
    return {parse: tuple(a for a in ANNOTATIONS if a in names) for parse, names in out.items() if names}


def _resource_recipes(store: SegmentStore, dropped: Segment, coverage: Coverage) -> list[Recipe]:
    """The builds that make a dropped resource again: a resource is counted by a feature's
    build from the splits its meta names (an IDF table: ``dataset``, ``splits``), so the build
    of an entry that names it (in its parameters) over those splits writes it again, with the
    same content key. Without such a record: each split such an entry covers."""
    key, meta = dropped.target["key"], dropped.target["meta"]
    users = [e for e in store.entries() if key in {str(v) for v in e.params.values()}]
    out = []
    for entry in users:
        named = meta.get("splits") if name_problem(meta.get("dataset")) is None else None
        if isinstance(named, list) and named and all(name_problem(x) is None for x in named):
            out.append(restore_recipe(store, meta["dataset"], ",".join(named), parse=entry.parse, entries=[entry]))
            continue
        for name in coverage.covered_splits(entry):
            dataset, split = name.split("/", 1)
            out.append(restore_recipe(store, dataset, split, parse=entry.parse, entries=[entry]))
    return out
