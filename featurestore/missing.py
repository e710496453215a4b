"""Pairs whose sentences or parses the store does not hold: found, named, and how to restore them.

A split's pairs reference sentences by key, and a read joins the pairs with the sentences'
texts and parses. When a sentences or parses segment is gone (``prior store gc
--drop-damaged`` dropped it) a join would give nulls; instead every read (`Store.pairs`,
`Store.frame`, `Store.scan`, the export, the trainers' loader) raises :class:`MissingDataError`:
one line naming what is missing and the ``prior build`` line that restores it (the build
reads the split's file again for texts it lacks and parses sentences it has no parse of).
``verify`` reports such pairs (:func:`incomplete_pairs`) and ``gc --drop-damaged`` prints the
rebuild lines of what it dropped (:func:`rebuild_lines`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from prior.featurestore.errors import NotFoundError, PriorError
from prior.featurestore.segments import EntryInfo, source_of
from prior.featurestore.selection import Coverage, build_command, feature_args

if TYPE_CHECKING:
    from prior.featurestore.catalog import Segment
    from prior.featurestore.segments import SegmentStore


class MissingDataError(NotFoundError):
    """Pairs reference sentences, or sentences a parse, that the store does not hold."""


def restore_line(store: SegmentStore, dataset: str, split: str, *, parse: str | None = None,
                 entries: Sequence[EntryInfo] = (), dropped: Segment | None = None) -> str:
    """The ``prior build`` line that restores ``dataset``/``split``'s pairs, sentences and
    parses (and the items of ``entries``): the split's recorded dataset arguments, the first
    entry's feature arguments (else one the store holds, else ``--features sdoi``, which needs
    no resources), the parse's parser. ``dropped``: the split's pairs segment that was just
    dropped, whose recorded arguments serve when the split has no other."""
    try:
        entry = entries[0] if entries else next(iter(store.entries()), None)
        features = feature_args(entry, entry.name) if entry is not None else ["--features", "sdoi"]
        if store.split_segments(dataset, split):
            return build_command(store, dataset=dataset, split=split, feature_args=features, parse=parse)
        return build_command(store, dataset=None, split=None, feature_args=[
            *_dataset_args(store, dataset, split, dropped), *features], parse=parse)
    except PriorError:  # the catalog itself is damaged: a line without recorded arguments
        return f"prior build --dataset {dataset} --split {split} --store {store.location}"


def _dataset_args(store: SegmentStore, dataset: str, split: str, dropped: Segment | None) -> list[str]:
    """``--dataset … --split S`` for a split whose pairs segments are all gone: the recorded
    arguments of its dropped segment or of another split of the dataset (with ``--limit``),
    else the plain name."""
    splits = [[dropped]] if dropped is not None else []
    splits += [store.split_segments(dataset, other) for d, other in store.datasets() if d == dataset]
    for segs in splits:
        args = list(segs[-1].meta.get("build_args", []))
        limits = [n for s in segs if isinstance(n := s.meta.get("limit"), int)]
        if args:
            return [*args, "--split", split, *(["--limit", str(max(limits))] if len(limits) == len(segs) else [])]
    return ["--dataset", dataset, "--split", split]


def missing_sentences(store: SegmentStore, dataset: str, split: str, count: int,
                      entries: Sequence[EntryInfo] = ()) -> MissingDataError:
    return MissingDataError(
        f"{store.location}: {count} sentence(s) of {dataset}/{split} are not in the store (their sentences "
        f"segment was dropped or never committed), so their texts would be null; restore them with: "
        f"{restore_line(store, dataset, split, entries=entries)}")


def missing_parses(store: SegmentStore, dataset: str, split: str, parse: str | None, count: int,
                   entries: Sequence[EntryInfo] = ()) -> MissingDataError:
    return MissingDataError(
        f"{store.location}: {count} sentence(s) of {dataset}/{split} have no parse {str(parse)[:12]} in the "
        f"store (its parses segment was dropped), so their words, heads and tags would be null; restore "
        f"them with: {restore_line(store, dataset, split, parse=parse, entries=entries)}")


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


def incomplete_pairs(store: SegmentStore, segments: Sequence[Segment], skip: set[str]) -> list[tuple[str, str, str]]:
    """(dataset, split, ``verify``'s line) for each current pairs segment whose sentences the
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
            out.append((dataset, split, f"{where}: {len(lost)} of its sentences are not in the store; restore "
                                        f"them with: {restore_line(store, dataset, split)}"))
        for info, have in entries.values():
            if info.parse is None or info.parse in damaged_parses:
                continue
            if info.scope == "pair":
                used = {k for p, a, b in zip(rows["pair_key"].to_list(), rows["key_a"].to_list(),
                                             rows["key_b"].to_list()) if p in have for k in (a, b)}
            else:
                used = keys & have
            if unparsed := used - parsed.get(info.parse, set()):
                out.append((dataset, split, f"{where}: {len(unparsed)} of its sentences have no parse "
                                            f"{info.parse[:12]} (entry {info.spec} {info.key[:12]} was computed "
                                            f"from it); restore it with: "
                                            f"{restore_line(store, dataset, split, parse=info.parse, entries=[info])}"))
                break
    return out


def rebuild_lines(store: SegmentStore, dropped: Sequence[Segment]) -> list[str]:
    """After ``gc --drop-damaged`` dropped ``dropped``: the ``prior build`` lines that compute
    them again, one per split and entry (a rebuild reads and computes only what the store
    lacks). A dropped feature segment's entry is rebuilt for every split it now lacks items of."""
    store.refresh()
    lines = [restore_line(store, s.target["dataset"], s.target["split"], dropped=s)
             for s in dropped if s.kind == "pairs"]
    lines += [line.split("with: ", 1)[1] for _, _, line in incomplete_pairs(store, store.segments(), set())]
    coverage = Coverage(store)
    for seg in dropped:
        if seg.kind != "feature":
            continue
        entry = EntryInfo.from_target(seg.target)
        for dataset, split in store.datasets():
            if coverage.missing(entry, dataset, split)[0]:
                lines.append(restore_line(store, dataset, split, parse=entry.parse, entries=[entry]))
    return list(dict.fromkeys(lines))
