"""Store upkeep: what it holds (info), whether it is intact (verify), and clean-up (gc)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from featurestore.catalog import CATALOG, SEGMENTS, Segment, file_digest, read_catalog
from featurestore.store import Store


@dataclass
class StoreInfo:
    location: str
    segments: dict[str, int]
    bytes: int
    datasets: list[dict[str, Any]]
    parses: list[dict[str, Any]]
    entries: list[dict[str, Any]]
    resources: list[dict[str, Any]]


def store_info(store: Store) -> StoreInfo:
    segs = store.segments(refresh=True)
    rows: Counter[tuple[str, str]] = Counter()
    for dataset, split in store.datasets():
        rows[(dataset, split)] = sum(s.rows for s in store.split_segments(dataset, split))
    per_parse: Counter[str] = Counter(s.target["parse"] for s in segs if s.kind == "parses" for _ in range(s.rows))
    entries = []
    for e in store.entries():
        parts = [s for s in segs if s.kind == "feature" and s.target["entry"] == e.key]
        entries.append({"entry": e.key, "feature": e.spec, "scope": e.scope, "components": list(e.components),
                        "default": e.is_default, "options": e.options or {}, "built_by": e.built_by,
                        "build_args": list(e.build_args),
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
    leftovers: list[str] = field(default_factory=list)  # uncommitted folders (harmless; gc removes)

    @property
    def ok(self) -> bool:
        return not self.damaged


def verify_store(store: Store) -> VerifyReport:
    """Check every committed file's size and blake2b; list uncommitted leftovers."""
    report = VerifyReport()
    fs = store.fs
    bad_records: list[str] = []
    segments = read_catalog(fs, damaged=bad_records)
    report.damaged += [f"catalog record {rel} is damaged (unreadable JSON or fields)" for rel in bad_records]
    for seg in segments:
        report.checked_segments += 1
        for inner, expected in sorted(seg.files.items()):
            rel = f"{seg.folder}/{inner}"
            report.checked_files += 1
            if not fs.exists(rel):
                report.damaged.append(f"segment {seg.id} ({_describe(seg)}): missing file {rel}")
            elif fs.size(rel) != expected["size"]:
                report.damaged.append(f"segment {seg.id} ({_describe(seg)}): {rel} has {fs.size(rel)} bytes, "
                                      f"expected {expected['size']}")
            elif file_digest(fs, rel) != expected["blake2b"]:
                report.damaged.append(f"segment {seg.id} ({_describe(seg)}): {rel} content changed (checksum)")
    committed = {s.id for s in segments}
    report.leftovers = [name for name in fs.listdir(SEGMENTS) if name not in committed]
    return report


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


def gc_store(store: Store, *, dry_run: bool = False, drop_damaged: bool = False) -> GcReport:
    """Remove uncommitted segment folders and stray temporary catalog files.

    With ``drop_damaged`` also un-commit segments that ``verify`` finds damaged (their catalog
    record first, then their files), so that a rebuild recomputes exactly those keys.
    """
    fs = store.fs
    bad_records: list[str] = []
    segments = read_catalog(fs, damaged=bad_records)
    committed = {s.id for s in segments}
    targets = [f"{SEGMENTS}/{name}" for name in fs.listdir(SEGMENTS) if name not in committed]
    targets += [f"{CATALOG}/{name}" for name in fs.listdir(CATALOG) if ".tmp-" in name]
    damaged_ids: list[str] = []
    if drop_damaged:
        damaged_ids = sorted({line.split()[1] for line in verify_store(store).damaged if line.startswith("segment ")})
        targets += bad_records
    size = 0
    for rel in targets:
        size += sum(fs.size(f) for f in fs.walk_files(rel)) if not rel.startswith(CATALOG) else fs.size(rel)
    for sid in damaged_ids:
        targets += [f"{CATALOG}/{sid}.json", f"{SEGMENTS}/{sid}"]
    if not dry_run:
        for rel in targets:
            if fs.exists(rel):
                fs.remove(rel)
        store.refresh()
    return GcReport(removed=targets, bytes=size, dry_run=dry_run)
