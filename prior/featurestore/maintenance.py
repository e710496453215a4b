"""Store upkeep: what it holds (info), whether it is intact (verify), and clean-up (gc).

``verify`` checks every catalog record (``catalog.record_problem``) and every committed file
(size and blake2b); it reads nothing a record names unless the name passed its checks, and on
a local disk never follows a link out of the store. ``gc`` removes uncommitted segment folders
that no live build claims, what dead builds left (``lease.py``), temporary files that killed
writers left (of catalog records, leases and ``STORE.json``) and, when asked, damaged
segments; it refuses to run while a build holds the store unless forced, and even then keeps
every folder a live build claims.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from prior.errors import PriorError
from prior.featurestore.catalog import (
    CATALOG,
    SEGMENTS,
    Segment,
    claimed_segment,
    file_digest,
    is_segment_id,
    read_catalog,
)
from prior.featurestore.errors import StoreError
from prior.featurestore.fs import READ_FILES_AT_ONCE, StoreFS, concurrently, temporary_of
from prior.featurestore.lease import ID_LENGTH, LEASES, LeaseInfo, claims, gone_builds, read_leases, stale
from prior.featurestore.missing import incomplete_pairs, rebuild_recipes, short_splits
from prior.featurestore.recipe import Recipe
from prior.featurestore.segments import SegmentStore
from prior.featurestore.tree import STORE_FILE, Misplaced, misplaced
from prior.hints import option


@dataclass
class StoreInfo:
    location: str
    segments: dict[str, int]
    bytes: int
    datasets: list[dict[str, Any]]
    parses: list[dict[str, Any]]
    entries: list[dict[str, Any]]
    resources: list[dict[str, Any]]


def store_info(store: SegmentStore) -> StoreInfo:
    segs = store.segments(refresh=True)
    rows: Counter[tuple[str, str]] = Counter()
    for dataset, split in store.datasets():
        rows[(dataset, split)] = sum(s.rows for s in store.split_segments(dataset, split))
    per_parse: Counter[str] = Counter()
    for s in segs:
        if s.kind == "parses":
            per_parse[s.target["parse"]] += s.rows  # one step per segment, not per sentence
    entries = []
    for e in store.entries():
        parts = [s for s in segs if s.kind == "feature" and s.target["entry"] == e.key]
        entries.append({"entry": e.key, "feature": e.spec, "scope": e.scope, "components": list(e.components),
                        "default": e.is_default, "options": e.options, "built_by": e.built_by,
                        "recipe": e.recipe.to_dict() if e.recipe is not None else {},
                        "params": e.params, "parse": e.parse, "items": sum(p.rows for p in parts),
                        "segments": len(parts), "bytes": sum(f["size"] for p in parts for f in p.files.values())})
    return StoreInfo(
        location=store.location,
        segments=dict(Counter(s.kind for s in segs)),
        bytes=sum(f["size"] for s in segs for f in s.files.values()),
        datasets=[{"dataset": d, "split": sp, "rows": n} for (d, sp), n in sorted(rows.items())],
        parses=[{"parse": p, "fingerprint": fp, "sentences": per_parse[p]} for p, fp in store.parse_ids().items()],
        entries=entries,
        resources=[{"key": s.target["key"], "kind": s.target["kind"], "meta": s.target["meta"], "rows": s.rows}
                   for s in segs if s.kind == "resource"],
    )


@dataclass
class VerifyReport:
    checked_segments: int = 0
    checked_files: int = 0
    damaged: list[str] = field(default_factory=list)  # one line per problem
    damaged_segments: list[str] = field(default_factory=list)  # ids of committed segments with bad files
    damaged_records: list[str] = field(default_factory=list)  # catalog files that cannot be used
    leftovers: list[str] = field(default_factory=list)  # uncommitted folders no live build claims (gc removes)
    in_progress: list[str] = field(default_factory=list)  # uncommitted folders of live builds
    builds: list[str] = field(default_factory=list)  # live builds holding the store
    strays: list[str] = field(default_factory=list)  # entries of segments/ that are no segment folder
    incomplete: list[str] = field(default_factory=list)  # short splits; pairs whose sentences or parses are gone (rebuild)
    misplaced: list[str] = field(default_factory=list)  # paths of the wrong kind (`prior.featurestore.tree`)
    gone: list[str] = field(default_factory=list)  # leases of builds whose process is gone (dead; gc removes)

    @property
    def ok(self) -> bool:
        return not self.damaged


@dataclass
class _Scan:
    """The store's state as gc and verify see it, read in the order that makes gc safe."""

    folders: list[str]
    strays: list[str]
    temporary: list[str]  # unfinished commits' temporary catalog files
    marker_temporary: list[str]  # unfinished writes' temporary files of STORE.json, in the root
    live: list[LeaseInfo]
    dead: set[str]
    owned: set[str]
    segments: list[Segment]
    bad_records: dict[str, str]

    @property
    def committed(self) -> set[str]:
        return {s.id for s in self.segments}

    def held(self) -> set[str]:
        """Folders named like a damaged record's file: kept until ``--drop-damaged`` drops the record."""
        return {rel.rsplit("/", 1)[-1][:-len(".json")] for rel in self.bad_records}


def _scan(fs: StoreFS) -> _Scan:
    # folders (and temporary records) first, then leases and claims, then the catalog (see lease.py)
    names = fs.listdir(SEGMENTS)
    temporary = [n for n in fs.listdir(CATALOG) if ".tmp-" in n]
    marker = [n for n in fs.listdir("") if temporary_of(n, STORE_FILE) and fs.inside(n) and fs.is_file(n)]
    live, dead = read_leases(fs)
    owned = set().union(*(claims(fs, lease.id) for lease in live)) if live else set()
    bad: dict[str, str] = {}
    segments = read_catalog(fs, damaged=bad)
    return _Scan(folders=[n for n in names if is_segment_id(n)], strays=[n for n in names if not is_segment_id(n)],
                 temporary=temporary, marker_temporary=marker, live=live, dead=dead, owned=owned, segments=segments, bad_records=bad)


def verify_store(store: SegmentStore) -> VerifyReport:
    """Check the store's tree (`prior.featurestore.tree`), every catalog record and every
    committed file's size and blake2b, and each split against its manifest; list uncommitted
    leftovers, the work in progress of live builds and the leases of builds that are gone."""
    fs = store.fs
    misplaced_paths = misplaced(fs)
    if any(not m.removable for m in misplaced_paths):  # the catalog or the segments cannot be read
        lines = [m.line(store.location) for m in misplaced_paths]
        return VerifyReport(damaged=list(lines), misplaced=lines)
    scan = _scan(fs)
    report = VerifyReport(builds=[lease.describe() for lease in scan.live], strays=scan.strays,
                          gone=gone_builds(fs), misplaced=[m.line(store.location) for m in misplaced_paths])
    report.damaged += report.misplaced
    for rel, problem in sorted(scan.bad_records.items()):
        report.damaged.append(problem)
        report.damaged_records.append(rel)
    for seg, problems in zip(scan.segments, _segments_problems(fs, scan.segments)):
        report.checked_segments += 1
        report.checked_files += len(seg.files)
        report.damaged += problems
        if problems:
            report.damaged_segments.append(seg.id)
    # short splits, pairs whose sentences or parses are gone: damage a rebuild repairs, not a drop
    skip = set(report.damaged_segments)
    short = short_splits(store, scan.segments, skip)
    if short:  # a listing made while others committed may miss a record that one it saw was committed after
        found = {(d, s) for d, s, *_ in short}
        short = [item for item in short_splits(store, read_catalog(fs, damaged={}), skip) if item[:2] in found]
    for _, _, line, _ in [*short, *incomplete_pairs(store, scan.segments, skip)]:
        report.damaged.append(line)
        report.incomplete.append(line)
    uncommitted = [n for n in scan.folders if n not in scan.committed and n not in scan.held()]
    report.leftovers = [n for n in uncommitted if n not in scan.owned]
    report.in_progress = [n for n in uncommitted if n in scan.owned]
    return report


def _segments_problems(fs: StoreFS, segments: Sequence[Segment]) -> list[list[str]]:
    """Each segment's file problems (`_file_problem`), its files in name order: on a local disk
    one file after another, on an object store `READ_FILES_AT_ONCE` files at a time (each
    file is a few round trips there; one after another, a store of thousands of files cost
    their latencies added up)."""
    jobs = [(k, seg, inner, expected) for k, seg in enumerate(segments) for inner, expected in sorted(seg.files.items())]

    def check(job: tuple[int, Segment, str, dict[str, Any]]) -> str | None:
        return _file_problem(fs, *job[1:])

    found = concurrently(jobs, check, 1 if fs.local else READ_FILES_AT_ONCE)
    out: list[list[str]] = [[] for _ in segments]
    for (k, *_), problem in zip(jobs, found):
        if problem is not None:
            out[k].append(problem)
    return out


def _file_problem(fs: StoreFS, seg: Segment, inner: str, expected: dict[str, Any]) -> str | None:
    rel = f"{seg.folder}/{inner}"
    where = f"segment {seg.id} ({_describe(seg)})"
    if not fs.inside(rel):
        return f"{where}: {rel} is reached through a link (a store holds none; not followed)"
    if not fs.exists(rel):
        return f"{where}: missing file {rel}"
    if not fs.is_file(rel):
        return f"{where}: {rel} is a folder where a file belongs"
    size = fs.size(rel)
    if size != expected["size"]:
        return f"{where}: {rel} has {size} bytes, expected {expected['size']}"
    if file_digest(fs, rel) != expected["blake2b"]:
        return f"{where}: {rel} content changed (checksum)"
    return None


def _describe(seg: Segment) -> str:
    t = seg.target
    if seg.kind == "feature":
        return f"feature {t['name']}@{t['version']}"
    if seg.kind == "pairs":
        return f"pairs {t['dataset']}/{t['split']}"
    if seg.kind == "resource":
        return f"resource {t['kind']}"
    return seg.kind


@dataclass
class GcReport:
    removed: list[str]
    bytes: int
    dry_run: bool
    kept: list[str] = field(default_factory=list)  # uncommitted folders of live builds, left alone
    builds: list[str] = field(default_factory=list)  # live builds holding the store (gc --force)
    strays: list[str] = field(default_factory=list)  # entries of segments/ that are no segment folder, left alone
    rebuild: list[Recipe] = field(default_factory=list)  # the builds that recompute what was dropped


def gc_store(store: SegmentStore, *, dry_run: bool = False, drop_damaged: bool = False, force: bool = False) -> GcReport:
    """Remove uncommitted segment folders no live build claims, stray temporary files of
    unfinished catalog, lease and ``STORE.json`` writes (once older than the lease time, and
    never one a live build may still be writing) and what dead builds left under ``leases/``.

    Refuses (`StoreError` naming the builds) while a live build holds the store, unless
    ``force``: then it runs but keeps every folder and temporary file a live build claims.
    With ``drop_damaged`` it also un-commits damaged segments (their catalog record first, then
    their files) and removes catalog files that cannot be used (only that file: nothing a
    damaged record names is followed), so that a rebuild recomputes exactly those keys.
    ``bytes`` counts everything removed (or, in a dry run, everything that would be).
    """
    fs = store.fs
    found = misplaced(fs)
    if stuck := [m for m in found if not m.removable]:
        raise StoreError("gc removes nothing: " + stuck[0].line(store.location))
    relinked = _replace_linked_folders(fs, dry_run) if drop_damaged else []
    remade = _remove_misplaced(fs, found, dry_run)
    scan = _scan(fs)
    if scan.live and not force:
        raise StoreError("a build holds the store, gc removes nothing while builds run: "
                         + "; ".join(lease.describe() for lease in scan.live)
                         + f". Wait for it to end, or pass {option('force')} (which still keeps the folders those "
                           "builds own)")
    held = set() if drop_damaged else scan.held()
    targets: list[str] = []
    dropped: list[Segment] = []
    if drop_damaged:
        report = verify_store(store)
        dropped = [s for s in scan.segments if s.id in set(report.damaged_segments)]
        for sid in report.damaged_segments:
            targets += [f"{CATALOG}/{sid}.json", f"{SEGMENTS}/{sid}"]
        targets += sorted(scan.bad_records)
        dropped += [claimed for rel in sorted(scan.bad_records) if (claimed := _claimed(fs, rel)) is not None]
    targets += [f"{SEGMENTS}/{n}" for n in scan.folders
                if n not in scan.committed and n not in scan.owned and n not in held]
    targets = list(dict.fromkeys(targets + _left_by_writers(fs, scan)))
    size = sum(_bytes(fs, rel) for rel in targets)
    if not dry_run:
        _remove(fs, targets)
        store.refresh()
    targets = relinked + remade + targets
    rebuild: list[Recipe] = []
    if drop_damaged and not dry_run:
        try:
            rebuild = rebuild_recipes(store, dropped)
        except PriorError:  # the store has other damage still: verify names it
            rebuild = []
    kept = sorted(n for n in scan.folders if n in scan.owned and n not in scan.committed)
    return GcReport(removed=targets, bytes=size, dry_run=dry_run, kept=kept,
                    builds=[lease.describe() for lease in scan.live], strays=scan.strays, rebuild=rebuild)


def _left_by_writers(fs: StoreFS, scan: _Scan) -> list[str]:
    """Temporary files of catalog, lease and ``STORE.json`` writes that no live writer may
    still be writing (each older than the lease time), and what dead builds left in ``leases/``."""
    # a temporary file belongs to a commit or lease write in progress unless it is old
    out = [f"{CATALOG}/{n}" for n in scan.temporary if n[:ID_LENGTH] not in scan.owned and stale(fs, f"{CATALOG}/{n}")]
    # STORE.json is written by a new store's first open and by `upgrade` (under its lease): a
    # temporary of it may be a live writer's while any lease lives (gc --force)
    if not scan.live:
        out += [n for n in scan.marker_temporary if stale(fs, n)]
    live_ids = {lease.id for lease in scan.live}
    for name in fs.listdir(LEASES):
        if name[:ID_LENGTH] in scan.dead or (".tmp-" in name and name[:ID_LENGTH] not in live_ids
                                             and stale(fs, f"{LEASES}/{name}")):
            out.append(f"{LEASES}/{name}")
    return out


def _remove(fs: StoreFS, targets: list[str]) -> None:
    """Remove each store-relative path of ``targets``: a link itself, never what it points to;
    an entry of any name."""
    for rel in targets:
        folder, _, name = rel.rpartition("/")
        if folder:
            fs.remove_entry(folder, name)
        else:
            fs.remove(name)  # a file of the root (a temporary of STORE.json)


def _bytes(fs: StoreFS, rel: str) -> int:
    """Bytes of a file or folder inside the store (links are not followed, odd names not
    sized: 0)."""
    try:
        if not fs.inside(rel) or not fs.exists(rel):
            return 0
        return sum(fs.size(f) for f in fs.walk_files(rel) if fs.inside(f))
    except StoreError:
        return 0


def _claimed(fs: StoreFS, rel: str) -> Segment | None:
    """What a damaged catalog record claims to be (`catalog.claimed_segment`), for the build
    line that restores it once it is dropped."""
    try:
        return claimed_segment(fs.read_bytes(rel).decode("utf-8", "replace"), rel) if fs.is_file(rel) else None
    except (OSError, StoreError):
        return None


def _remove_misplaced(fs: StoreFS, found: list[Misplaced], dry_run: bool) -> list[str]:
    """Remove the paths of the wrong kind that hold no committed data (`prior.featurestore.tree`:
    ``leases/`` as a file is made again as a folder). Returns them."""
    if not dry_run:
        for m in found:
            folder, _, name = m.path.rpartition("/")
            if folder:
                fs.remove_entry(folder, name)
            else:
                fs.remove(m.path)
                fs.makedirs(m.path)
    return [m.path for m in found]


def _replace_linked_folders(fs: StoreFS, dry_run: bool) -> list[str]:
    """``catalog/``, ``segments/`` or ``leases/`` reached through a link (a store holds none):
    the link is removed, never followed, and an empty folder made in its place. Returns them."""
    linked = [name for name in (CATALOG, SEGMENTS, LEASES) if not fs.inside(name)]
    if not dry_run:
        for name in linked:
            fs.remove(name)
            fs.makedirs(name)
    return linked
