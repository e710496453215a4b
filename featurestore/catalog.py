"""Segments and the catalog: how work becomes visible atomically.

Every write is a *segment*: a folder ``segments/<id>/`` of new files (Parquet tables, a Zarr
group) that no other segment shares. A segment becomes visible only when its record — kind,
target, and the size and blake2b of each of its files — is written to ``catalog/<id>.json``
in one atomic step. Readers list the catalog and read only recorded files, so a crash leaves
at worst an unrecorded folder (removed by ``gc``) and a rerun computes exactly what is missing.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from featurestore.errors import StoreError
from featurestore.fs import StoreFS

CATALOG = "catalog"
SEGMENTS = "segments"
KINDS = ("pairs", "sentences", "parses", "feature", "resource")


def new_segment_id() -> str:
    """Sortable by creation time, unique across processes and machines."""
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"


def file_digest(fs: StoreFS, rel: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    with fs.open(rel, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class Segment:
    id: str
    kind: str
    target: dict[str, Any]
    files: dict[str, dict[str, Any]]  # path relative to the segment folder -> {size, blake2b}
    rows: int
    created: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> str:
        return f"{SEGMENTS}/{self.id}"

    def to_json(self) -> str:
        return json.dumps({"id": self.id, "kind": self.kind, "target": self.target, "files": self.files,
                           "rows": self.rows, "created": self.created, "meta": self.meta},
                          sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str, *, source: str) -> Segment:
        try:
            raw = json.loads(text)
            return cls(id=raw["id"], kind=raw["kind"], target=raw["target"], files=raw["files"],
                       rows=int(raw["rows"]), created=raw.get("created", ""), meta=raw.get("meta", {}))
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"catalog record {source} is damaged ({exc}); run `prior store verify`") from exc


def commit_segment(fs: StoreFS, segment_id: str, kind: str, target: dict[str, Any], rows: int,
                   meta: dict[str, Any] | None = None) -> Segment:
    """Record every file now in ``segments/<id>/`` and make the segment visible, atomically."""
    if kind not in KINDS:
        raise StoreError(f"unknown segment kind {kind!r}")
    folder = f"{SEGMENTS}/{segment_id}"
    files = {}
    for rel in fs.walk_files(folder):
        inner = rel[len(folder) + 1:]
        files[inner] = {"size": fs.size(rel), "blake2b": file_digest(fs, rel)}
    if not files:
        raise StoreError(f"segment {segment_id} has no files to commit")
    segment = Segment(id=segment_id, kind=kind, target=target, files=files, rows=rows,
                      created=datetime.now(timezone.utc).isoformat(timespec="seconds"), meta=meta or {})
    fs.write_atomic(f"{CATALOG}/{segment_id}.json", segment.to_json().encode("utf-8"))
    return segment


def read_catalog(fs: StoreFS, damaged: list[str] | None = None) -> list[Segment]:
    """Committed segments, oldest first. Temporary files of unfinished commits are ignored.

    A damaged record raises StoreError, unless ``damaged`` is given: then its path is appended
    there and the record skipped (``verify`` and ``gc --drop-damaged`` use this).
    """
    segments = []
    for name in fs.listdir(CATALOG):
        if not name.endswith(".json") or ".tmp-" in name:
            continue
        try:
            segments.append(Segment.from_json(fs.read_bytes(f"{CATALOG}/{name}").decode("utf-8", "replace"),
                                              source=f"{CATALOG}/{name}"))
        except StoreError:
            if damaged is None:
                raise
            damaged.append(f"{CATALOG}/{name}")
    segments.sort(key=lambda s: s.id)
    return segments
