"""Segments and the catalog: how work becomes visible atomically.

Every write is a *segment*: a folder ``segments/<id>/`` of new files (Parquet tables, a Zarr
group) that no other segment shares. A segment becomes visible only when its record — kind,
target, and the size and blake2b of each of its files — is written to ``catalog/<id>.json``
in one atomic step. Readers list the catalog and read only recorded files, so a crash leaves
at worst an unrecorded folder (removed by ``gc``) and a rerun computes exactly what is missing.

A record is data someone may hand you, so it is checked before anything is done with it
(:func:`record_problem`): its id has the pattern of :func:`new_segment_id` and matches its file
name, its file names and the names it stores (dataset, split, components) pass
``names.check_name``, the fields readers use are there, and its ``checksum`` (blake2b-16 of
the record's canonical JSON without that field) matches. What the store's format requires of
each kind is there too: a pairs record's split manifest (`prior.featurestore.splits`), a
feature entry's options and storage layout, a parse's parser spec. A record that fails any
check is *damaged*: reading raises `StoreError` naming it, ``verify`` reports it and
``gc --drop-damaged`` removes the record file only (:func:`claimed_segment` reads what such a
record claims to be, for the build line that restores it).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from prior.featurestore.errors import SegmentLostError, StoreError
from prior.featurestore.fs import StoreFS
from prior.featurestore.names import file_problem, name_problem
from prior.featurestore.recipe import options_problem, recorded_recipe_problem
from prior.hints import option
from prior.layouts.kinds import from_json as layout_from_json

CATALOG = "catalog"
SEGMENTS = "segments"
KINDS = ("pairs", "sentences", "parses", "feature", "resource")
#: a pairs record's meta field that holds its split's manifest (`prior.featurestore.splits`)
MANIFEST = "manifest"
#: a parses or feature record's meta field: the splits its build read, each with the split's
#: latest pairs segment then (`prior.featurestore.splits`, ``SplitRef``)
SPLITS = "splits"
_SPLIT_REF_FIELDS = {"dataset", "split", "pairs", "rows", "source", "recipe"}
SEGMENT_ID = re.compile(r"[0-9]{20}-[0-9a-f]{12}")
def repair() -> str:
    """What to do about damage, as a message ends (the option named by the installed namer)."""
    return f"`prior store verify` lists the damage; `prior store gc {option('drop_damaged')}`, then a rebuild, repairs it"
# target fields every reader relies on, per kind, with their JSON types
TARGET_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "pairs": {"dataset": (str,), "split": (str,), "source_sha256": (str,)},
    "sentences": {},
    "parses": {"parse": (str,), "fingerprint": (dict,), "spec": (str,)},
    "feature": {"entry": (str,), "name": (str,), "version": (int,), "params": (dict,), "parse": (str, type(None)),
                "scope": (str,), "components": (list,), "options": (dict,), "layout": (dict,)},
    "resource": {"key": (str,), "kind": (str,), "meta": (dict,), "shapes": (dict,)},
}
# names a record stores that become file or array names (checked by names.name_problem)
_NAMED: dict[str, Callable[[dict[str, Any]], list[tuple[str, Any]]]] = {
          "pairs": lambda t: [("dataset", t["dataset"]), ("split", t["split"])],
          "feature": lambda t: [("component", c) for c in t["components"]],
          "resource": lambda t: [("array", n) for n in t.get("shapes") or {}]}
RECORD_FIELDS = {"id", "kind", "target", "files", "rows", "created", "meta", "lease", "checksum"}
_DIGEST = re.compile(r"[0-9a-f]{32}")
_SOURCE = re.compile(r"[0-9A-Za-z]{1,128}")  # a pairs target's source_sha256


def new_segment_id() -> str:
    """Sortable by creation time, unique across processes and machines (also used for leases)."""
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"


def is_segment_id(value: object) -> bool:
    return isinstance(value, str) and SEGMENT_ID.fullmatch(value) is not None


def record_checksum(raw: dict[str, Any]) -> str:
    """blake2b-16 of the record's canonical JSON, its ``checksum`` field left out."""
    body = {k: v for k, v in raw.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def record_problem(raw: object, name: str | None = None) -> str | None:
    """What is wrong with a parsed catalog record (``name``: its file name), or None."""
    if not isinstance(raw, dict):
        return "is not a JSON object"
    if (problem := content_problem(raw, name)) is not None:
        return problem
    if "checksum" not in raw:
        return "lacks its checksum"
    if raw["checksum"] != record_checksum(raw):
        return "does not match its checksum (its content changed)"
    return None


def content_problem(raw: dict[str, Any], name: str | None = None) -> str | None:
    """What is wrong with a catalog record's fields, its checksum left aside, or None."""
    if missing := {"id", "kind", "target", "files", "rows"} - set(raw):
        return f"lacks field(s) {sorted(missing)}"
    if unknown := set(raw) - RECORD_FIELDS:
        return f"has unknown field(s) {sorted(unknown)}"
    sid, kind, target, files = raw["id"], raw["kind"], raw["target"], raw["files"]
    if not is_segment_id(sid):
        return f"has an invalid segment id {sid!r} (expected 20 digits, '-', 12 hex digits)"
    if name is not None and name != f"{sid}.json":
        return f"names segment {sid} but is stored as {name}"
    if kind not in KINDS:
        return f"has an unknown kind {kind!r}"
    if not isinstance(target, dict) or not isinstance(files, dict) or not files or not isinstance(raw["rows"], int):
        return "has no target, no files or no row count"
    optional = {"shapes"}
    if absent := [f for f in TARGET_FIELDS[kind] if f not in target and f not in optional]:
        return f"lacks target field(s) {absent}"
    if wrong := [f for f, types in TARGET_FIELDS[kind].items() if f in target and not isinstance(target[f], types)]:
        return f"has target field(s) {wrong} of the wrong type"
    for inner, info in files.items():
        if (problem := file_problem(inner)) is not None:
            return f"lists a file {inner!r} that {problem}"
        if (not isinstance(info, dict) or not isinstance(info.get("size"), int) or info["size"] < 0
                or not isinstance(info.get("blake2b"), str) or not _DIGEST.fullmatch(info["blake2b"])):
            return f"has no valid size and blake2b for {inner}"
    for what, value in _NAMED[kind](target) if kind in _NAMED else []:
        if (problem := name_problem(value)) is not None:
            return f"has a {what} name {value!r} that {problem}"
    meta = raw.get("meta") or {}
    if not isinstance(meta, dict):
        return "has a meta field that is not an object"
    if kind == "feature" and (problem := options_problem(target["options"])) is not None:
        return f"records options that {problem}"
    for holder in (meta, target):  # a pairs segment's recipe, a feature entry's
        if (problem := recorded_recipe_problem(holder)) is not None:
            return problem
    if kind == "pairs" and (problem := _manifest_problem(meta.get(MANIFEST), sid)) is not None:
        return f"records a split manifest that {problem}"
    if SPLITS in meta and (problem := _split_refs_problem(meta[SPLITS])) is not None:
        return f"records the splits its build read in a form that {problem}"
    if kind == "feature" and (problem := _layout_problem(target["layout"])) is not None:
        return f"records a storage layout that {problem}"
    return None


def _manifest_problem(manifest: object, own: str) -> str | None:
    """What is wrong with a pairs record's split manifest (`prior.featurestore.splits`), or None."""
    if not isinstance(manifest, dict) or set(manifest) != {"rows", "segments"}:
        return "is missing or not an object of rows and segments"
    if type(manifest["rows"]) is not int or manifest["rows"] < 0:
        return "has no row count"
    ids = manifest["segments"]
    if not isinstance(ids, list) or not all(is_segment_id(i) for i in ids) or own in ids:
        return "lists something that is no other segment's id"
    return None


def _split_refs_problem(refs: object) -> str | None:
    """What is wrong with a record's references to the splits its build read
    (`prior.featurestore.splits.SplitRef`: names that pass the name check, a segment id, a row
    count, a source checksum, a recipe that passes its schema), or None."""
    if not isinstance(refs, list):
        return "is not a list"
    for ref in refs:
        if not isinstance(ref, dict) or not {"dataset", "split", "pairs", "rows"} <= set(ref) or set(ref) - _SPLIT_REF_FIELDS:
            return "holds something that is no split reference"
        for what in ("dataset", "split"):
            if (problem := name_problem(ref[what])) is not None:
                return f"names a {what} that {problem}"
        if not is_segment_id(ref["pairs"]):
            return "names a pairs segment by something that is no segment id"
        if type(ref["rows"]) is not int or ref["rows"] < 0:
            return "has no row count"
        if "source" in ref and not (isinstance(ref["source"], str) and _SOURCE.fullmatch(ref["source"])):
            return "has a source that is no checksum"
        if (problem := recorded_recipe_problem(ref)) is not None:
            return problem
    return None


def _layout_problem(layout: dict[str, Any]) -> str | None:
    try:
        layout_from_json(layout)
    except (TypeError, ValueError) as exc:
        return f"is unusable ({exc})"
    return None


def claimed_segment(text: str, source: str) -> Segment | None:
    """What a damaged record claims to be, when only its checksum fails or it lacks one: the
    content passes every other check (so its names and recipes are as safe to print as any
    record's). None when it is not JSON or its content is damaged too."""
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    if not isinstance(raw, dict) or content_problem(raw, source.rsplit("/", 1)[-1]) is not None:
        return None
    try:
        return Segment(id=raw["id"], kind=raw["kind"], target=raw["target"], files=raw["files"], rows=int(raw["rows"]),
                       meta=dict(raw.get("meta") or {}))
    except (ValueError, TypeError):
        return None


def file_digest(fs: StoreFS, rel: str) -> str:
    return str(file_entry(fs, rel)["blake2b"])


def file_entry(fs: StoreFS, rel: str) -> dict[str, Any]:
    """A file's record entry, ``{"size", "blake2b"}``, from one read of its content (on an
    object store a separate size query would be one more request per file)."""
    h = hashlib.blake2b(digest_size=16)
    size = 0
    with fs.open(rel, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
            size += len(block)
    return {"size": size, "blake2b": h.hexdigest()}


@dataclass(frozen=True)
class Segment:
    id: str
    kind: str
    target: dict[str, Any]
    files: dict[str, dict[str, Any]]  # path relative to the segment folder -> {size, blake2b}
    rows: int
    created: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    lease: str = ""  # the lease of the build that wrote it ("" for a writer without one)

    @property
    def folder(self) -> str:
        return f"{SEGMENTS}/{self.id}"

    def to_json(self) -> str:
        raw = {"id": self.id, "kind": self.kind, "target": self.target, "files": self.files, "rows": self.rows,
               "created": self.created, "meta": self.meta, "lease": self.lease}
        raw["checksum"] = record_checksum(raw)
        return json.dumps(raw, sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str, *, source: str) -> Segment:
        """The record in ``text`` (read from ``source``, ``catalog/<id>.json``), checked by
        :func:`record_problem`; `StoreError` naming the record when it is damaged."""
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise StoreError(f"catalog record {source} is damaged (not JSON: {exc}); {repair()}") from None
        problem = record_problem(raw, source.rsplit("/", 1)[-1])
        if problem is None:
            try:
                return cls(id=raw["id"], kind=raw["kind"], target=raw["target"], files=raw["files"],
                           rows=int(raw["rows"]), created=str(raw.get("created", "")),
                           meta=dict(raw.get("meta") or {}), lease=str(raw.get("lease") or ""))
            except (ValueError, TypeError) as exc:
                problem = f"has a malformed field ({exc})"
        raise StoreError(f"catalog record {source} is damaged: it {problem}; {repair()}")


def commit_segment(fs: StoreFS, segment_id: str, kind: str, target: dict[str, Any], rows: int,
                   meta: dict[str, Any] | None = None, *, required: Sequence[str] = (), lease: str = "",
                   ready: Callable[[], None] | None = None) -> Segment:
    """Record every file now in ``segments/<id>/`` and make the segment visible, atomically.

    ``required``: files the writer wrote; if one is gone (a forced ``gc`` removed the folder)
    nothing is committed and `SegmentLostError` is raised. ``ready`` runs right before the
    record is written (the writer's lease check). The required files are looked for again
    after the record is written: if they vanished meanwhile, the record is taken back.
    """
    if kind not in KINDS:
        raise StoreError(f"unknown segment kind {kind!r}")
    folder = f"{SEGMENTS}/{segment_id}"
    files = {}
    for rel in fs.walk_files(folder):
        inner = rel[len(folder) + 1:]
        files[inner] = file_entry(fs, rel)
    lost = [name for name in required if name not in files]
    if not files or lost:
        raise SegmentLostError(f"segment {segment_id} lost {', '.join(lost) or 'its files'} before its commit "
                               f"(its folder was removed, e.g. by `prior store gc {option('force')}`); nothing was committed")
    segment = Segment(id=segment_id, kind=kind, target=target, files=files, rows=rows,
                      created=datetime.now(UTC).isoformat(timespec="seconds"), meta=meta or {}, lease=lease)
    record = f"{CATALOG}/{segment_id}.json"
    if ready is not None:
        ready()
    fs.write_atomic(record, segment.to_json().encode("utf-8"))
    if not all(fs.exists(f"{folder}/{name}") for name in required):
        fs.remove(record)
        raise SegmentLostError(f"segment {segment_id}'s folder was removed while it was committed; "
                               "its record was taken back")
    return segment


# Records read before, by (store, record name, content tag): one listing of catalog/ gives every
# record's tag (an object store's ETag; inode, size and time on a local disk), so a record is fetched once per process, not at every
# catalog read (each build task reads the catalog: N tasks × N records requests otherwise).
_RECORDS: dict[tuple[str, str, str], Segment] = {}
_RECORDS_MAX = 100_000


def _record_texts(fs: StoreFS, rels: Sequence[str]) -> list[bytes | StoreError]:
    """Each catalog record's bytes, or the `StoreError` saying why it is no record: a link
    (local; a store holds none, so none is followed) or not a file. On an object store the
    records are fetched together (`StoreFS.read_files`), and only a record that could not be
    read is looked at again (a folder where it belongs); an error of another kind (the network)
    is raised as it came."""
    out: list[bytes | StoreError] = []
    if fs.local:
        for rel in rels:
            if not fs.inside(rel):
                out.append(StoreError(f"catalog record {rel} is a link (a store holds none; not followed); {repair()}"))
            elif not fs.is_file(rel):
                out.append(StoreError(f"catalog entry {rel} is not a file; {repair()}"))
            else:
                out.append(fs.read_bytes(rel))
        return out
    for rel, got in zip(rels, fs.read_files(rels)):
        if not isinstance(got, OSError):
            out.append(got)
        elif fs.is_file(rel):
            raise got
        else:
            out.append(StoreError(f"catalog entry {rel} is not a file; {repair()}"))
    return out


def read_catalog(fs: StoreFS, damaged: dict[str, str] | None = None) -> list[Segment]:
    """Committed segments, oldest first. Temporary files of unfinished commits are ignored.

    A damaged record raises StoreError, unless ``damaged`` is given: then its path is recorded
    there with the error and the record skipped (``verify`` and ``gc --drop-damaged`` use this).
    A record whose content tag (``StoreFS.listdir_tagged``) is the one read before in this
    process is not fetched again: the same tag means the same content, checked then. So a
    process reads each record once, not once per catalog read (a build reads the catalog
    several times, each of its tasks once more); ``verify`` and ``gc`` read local ones again.
    The records to read are fetched together (`_record_texts`: on an object store several at
    a time, one request each).
    """
    segments, fetch = [], []
    for name, tag in fs.listdir_tagged(CATALOG).items():
        if not name.endswith(".json") or ".tmp-" in name:
            continue
        # verify and gc (``damaged`` given) read every local record again: a local tag is only
        # as fine as the disk's clock, and they are the ones that must find damage
        known = (fs.url, name, tag) if tag and not (damaged is not None and tag.startswith("local:")) else None
        if known is not None and (cached := _RECORDS.get(known)) is not None:
            segments.append(cached)
        else:
            fetch.append((name, known))
    named = [(name, known) for name, known in fetch if is_segment_id(name[:-len(".json")])]
    texts = dict(zip((name for name, _ in named), _record_texts(fs, [f"{CATALOG}/{name}" for name, _ in named])))
    for name, known in fetch:
        rel = f"{CATALOG}/{name}"
        try:
            if name not in texts:
                raise StoreError(f"catalog file {rel} is not named after a segment id; {repair()}")
            text = texts[name]
            if isinstance(text, StoreError):
                raise text
            segment = Segment.from_json(text.decode("utf-8", "replace"), source=rel)
            segments.append(segment)
            if known is not None:
                if len(_RECORDS) >= _RECORDS_MAX:
                    _RECORDS.clear()
                _RECORDS[known] = segment
        except StoreError as exc:
            if damaged is None:
                raise
            damaged[rel] = str(exc)
    segments.sort(key=lambda s: s.id)
    return segments
