"""``prior store upgrade``: a store of an older format converted in place, kill-safe.

Format 2 (`prior.featurestore.segments.FORMAT`) asks of every catalog record what format 1 left
optional: its own checksum; with a split's pairs, the split's manifest
(`prior.featurestore.splits`) and the build's recipe (format 1 could hold the build's
command-line arguments instead, ``build_args``); with a feature entry, its options and its
storage layout; with a parse, its parser spec. This module is the one place that knows format
1: the rest of the store reads format 2 only, and opening a store of format 1 for anything
else is a one-line error that names this command.

How a record is converted: a record that already passes format 2's checks is left alone; one
whose checksum no longer matches its content is damaged and left as it is (``verify`` names
it, ``gc --drop-damaged`` drops it and prints the build that restores it); any other gets

- a recipe from its ``build_args`` (a frozen list: ``--dataset X [--name N] [--data-dir D]
  [--text-a C …]`` of a split's pairs, ``--features F [-o …] [--embeddings P]`` of an entry,
  whose options are the entry's own);
- for a pairs segment, the split's manifest as it stood after that segment: the segments of
  the same source before it and the distinct rows they hold with it;
- for an entry recorded before options were, none (the default entry); before layouts were,
  the layout of its feature as `prior` wrote those entries (``wup``, ``sdoi``, ``emb``,
  ``tfidf``; an entry of another feature without a layout cannot be read and is left damaged);
- for a parse recorded before specs were, ``spacy`` for a spaCy parse, else the default parser;
- its checksum,

and is written back under its own name in one atomic step. ``STORE.json`` is written last.
A kill at any point leaves records of either format, each whole, and ``STORE.json`` still of
format 1 until every record was converted: running ``upgrade`` again converts what is left.
Flat arrays stored in one chunk (format 1 before pieces) stay readable as they are (Zarr
decodes them whole); ``prior store compact`` rewrites them in pieces. The upgrade holds a lease
like a build, and refuses while a build holds the store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from prior.errors import NotFoundError
from prior.featurestore import keys as keymod
from prior.featurestore.catalog import CATALOG, is_segment_id, record_checksum, record_problem
from prior.featurestore.errors import StoreError
from prior.featurestore.fs import StoreFS
from prior.featurestore.lease import Lease, read_leases
from prior.featurestore.recipe import FeatureRecipe, Recipe
from prior.featurestore.ref import StoreRef
from prior.featurestore.segment_files import arrow_owned
from prior.featurestore.segments import FORMAT
from prior.featurestore.selection import DEFAULT_PARSER
from prior.featurestore.tree import STORE_FILE, check_tree
from prior.layouts.kinds import Layout, PairMatrix, SentenceMask, SentenceVector, WordIds
from prior.layouts.kinds import to_json as layout_json

#: the layouts of the entries format 1 wrote before entries recorded one, by entry name
FORMAT_1_LAYOUTS: dict[str, Layout] = {"wup": PairMatrix("wup"), "sdoi": SentenceMask("sdoi"),
                                       "emb": WordIds("word_ids"), "tfidf": SentenceVector("tfidf")}
# format 1's build arguments, by the option each named (the list is frozen: no other was written)
_SOURCE = {"dataset": "dataset", "name": "name", "data-dir": "data_dir"}
_COLUMNS = {"text-a": "text_a", "text-b": "text_b", "label": "label", "label-kind": "label_kind"}
_INPUTS = {"embeddings": "embeddings"}


@dataclass
class UpgradeReport:
    location: str
    before: int  # the format version found
    converted: list[str] = field(default_factory=list)  # records rewritten
    kept: int = 0  # records already of the current format
    damaged: list[str] = field(default_factory=list)  # records left as they are, with why

    @property
    def upgraded(self) -> bool:
        return self.before < int(FORMAT["version"])


def recipe_from_build_args(args: Sequence[str], options: Mapping[str, Any] | None = None) -> Recipe:
    """The recipe a format-1 ``"build_args"`` list records (module docstring); ``options``:
    the entry's recorded options."""
    fields: dict[str, Any] = {}
    columns: dict[str, str | None] = {}
    inputs: dict[str, str] = {}
    feature = None
    for flag, value in zip(args[::2], args[1::2]):
        name = flag[2:] if flag.startswith("--") else ""
        if name in _SOURCE:
            fields[_SOURCE[name]] = value
        elif name in _COLUMNS:
            columns[_COLUMNS[name]] = value or None
        elif name in _INPUTS:
            inputs[_INPUTS[name]] = value
        elif name == "features":
            feature = value
    features = (FeatureRecipe(feature, dict(options or {}), inputs),) if feature else ()
    return Recipe(columns=columns, features=features, **fields)


def _recipe(holder: dict[str, Any], options: Mapping[str, Any] | None) -> None:
    """``holder``'s ``build_args`` (a pairs meta, an entry's target) as its ``recipe``."""
    args = holder.pop("build_args", None)
    if "recipe" not in holder and isinstance(args, list) and all(isinstance(a, str) for a in args):
        holder["recipe"] = recipe_from_build_args(args, options).to_dict()


def convert_record(raw: dict[str, Any], manifests: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """A format-1 record in format 2 (module docstring); checked by the caller."""
    new: dict[str, Any] = json.loads(json.dumps({k: v for k, v in raw.items() if k != "checksum"}))
    kind, target, meta = new.get("kind"), new.get("target"), new.setdefault("meta", {})
    if not isinstance(target, dict) or not isinstance(meta, dict):
        return new
    if kind == "pairs":
        _recipe(meta, None)
        if new.get("id") in manifests:
            meta["manifest"] = manifests[new["id"]]
    elif kind == "feature":
        if target.get("options") is None:
            target["options"] = {}
        _recipe(target, target["options"])
        if target.get("layout") is None and target.get("name") in FORMAT_1_LAYOUTS:
            target["layout"] = layout_json(FORMAT_1_LAYOUTS[target["name"]])
    elif kind == "parses" and not target.get("spec"):
        fingerprint = target.get("fingerprint")
        target["spec"] = "spacy" if isinstance(fingerprint, dict) and fingerprint.get("backend") == "spacy" \
            else DEFAULT_PARSER
    new["checksum"] = record_checksum(new)
    return new


def _pair_rows(fs: StoreFS, raw: dict[str, Any]) -> list[int] | None:
    """The row numbers of a pairs segment, read from its file once it matches its record
    (None when it does not: that segment's damage is for ``verify`` to name)."""
    inner = "pairs.parquet"
    expected = raw.get("files", {}).get(inner)
    try:
        data = fs.read_bytes(f"segments/{raw['id']}/{inner}")
    except (OSError, StoreError):
        return None
    if not isinstance(expected, dict) or hashlib.blake2b(data, digest_size=16).hexdigest() != expected.get("blake2b"):
        return None
    with pq.ParquetFile(pa.BufferReader(arrow_owned(data))) as pf:
        return [int(r) for r in pf.read(columns=["row"]).column("row").to_pylist()]


def _manifests(fs: StoreFS, records: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each pairs segment's manifest as the split stood after it: the earlier segments of its
    split's source, and the distinct rows they hold with it (a segment whose file cannot be
    read counts its recorded rows)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for raw in records.values():
        target, meta = raw.get("target"), raw.get("meta") or {}
        if raw.get("kind") == "pairs" and isinstance(target, dict) and isinstance(meta, dict):
            source = keymod.canonical_json([target.get("dataset"), target.get("split"), target.get("source_sha256"),
                                            meta.get("reader")])
            groups.setdefault(source, []).append(raw)
    out: dict[str, dict[str, Any]] = {}
    for segs in groups.values():
        segs.sort(key=lambda r: str(r["id"]))
        seen: set[int] = set()
        unread = 0
        for i, raw in enumerate(segs):
            rows = _pair_rows(fs, raw)
            if rows is None:
                unread += int(raw.get("rows") or 0)
            else:
                seen.update(rows)
            out[str(raw["id"])] = {"rows": len(seen) + unread, "segments": [str(r["id"]) for r in segs[:i]]}
    return out


def store_version(fs: StoreFS) -> int:
    """The format version ``STORE.json`` names; `NotFoundError` without one, `StoreError` for
    one that is not a store's."""
    if not fs.exists(STORE_FILE):
        raise NotFoundError(f"no feature store at {fs.url} (no {STORE_FILE})")
    try:
        fmt = json.loads(fs.read_bytes(STORE_FILE))
        version = int(fmt["version"])
        if fmt.get("format") != FORMAT["format"]:
            raise ValueError(fmt.get("format"))
    except (ValueError, TypeError, KeyError, AttributeError, OSError):
        raise StoreError(f"{fs.url}/{STORE_FILE} is damaged; restore it as {json.dumps(FORMAT)}") from None
    if version > FORMAT["version"]:
        raise StoreError(f"{fs.url} holds store format {version}, newer than this prior's {FORMAT['version']}: "
                         "upgrade prior")
    return version


def upgrade_store(store: StoreRef | str) -> UpgradeReport:
    """Convert the store at ``store`` to the current format, in place (module docstring)."""
    fs = StoreFS(StoreRef.of(store))
    check_tree(fs)
    report = UpgradeReport(location=fs.url, before=store_version(fs))
    if not report.upgraded:
        return report
    live, _ = read_leases(fs)
    if live:
        raise StoreError("a build holds the store, upgrade waits until none does: "
                         + "; ".join(lease.describe() for lease in live))
    with Lease(fs, "prior store upgrade"):
        records: dict[str, dict[str, Any]] = {}
        for name in fs.listdir(CATALOG):
            if not (name.endswith(".json") and is_segment_id(name[:-len(".json")])) or not fs.is_file(f"{CATALOG}/{name}"):
                continue  # not a record: `verify` names it, `gc --drop-damaged` drops it
            try:
                raw = json.loads(fs.read_bytes(f"{CATALOG}/{name}"))
            except (ValueError, UnicodeDecodeError):
                report.damaged.append(f"{CATALOG}/{name}: not JSON")
                continue
            if isinstance(raw, dict):
                records[name] = raw
        manifests = _manifests(fs, {n: r for n, r in records.items() if "checksum" not in r
                                    or r["checksum"] == record_checksum(r)})
        for name, raw in sorted(records.items()):
            _upgrade_record(fs, name, raw, manifests, report)
        fs.write_atomic(STORE_FILE, json.dumps(FORMAT).encode())
    return report


def _upgrade_record(fs: StoreFS, name: str, raw: dict[str, Any], manifests: Mapping[str, dict[str, Any]],
                    report: UpgradeReport) -> None:
    rel = f"{CATALOG}/{name}"
    if record_problem(raw, name) is None:
        report.kept += 1
        return
    if "checksum" in raw and raw["checksum"] != record_checksum(raw):
        report.damaged.append(f"{rel}: does not match its checksum (its content changed)")
        return
    new = convert_record(raw, manifests)
    if (problem := record_problem(new, name)) is not None:
        report.damaged.append(f"{rel}: {problem}")
        return
    fs.write_atomic(rel, json.dumps(new, sort_keys=True, indent=1).encode("utf-8"))
    report.converted.append(rel)




__all__ = ["FORMAT_1_LAYOUTS", "UpgradeReport", "convert_record", "recipe_from_build_args", "store_version", "upgrade_store"]
