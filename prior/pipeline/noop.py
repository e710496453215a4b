"""A build that has nothing to do answers from a record of the last complete run of it.

Working out that a build is complete means reading every split's rows and the keys of every
parse and feature segment it uses (and counting a tf-idf table again to know its entry's key):
on 500,000 pairs that was most of ten seconds for a rerun that computed nothing. So a build that
ends complete (no failed item) writes a small record, ``$PRIOR_HOME/cache/builds/<digest>.json``,
keyed by everything that decides what the build makes (the store, the options, each split's
source file and its checksum, the parser's fingerprint, each feature's version and settings)
and naming the catalog segments its result lives in. Running the same build again finds the
record and checks it against the catalog alone: the dataset's pairs segments must be exactly
those recorded (a changed, added, replaced or dropped split reads again) and every other
recorded segment (sentences, parses, the entries' features, resources) must still be committed
(segments are immutable and their ids never reused: a dropped or compacted one is missed).
Anything else, or no record, runs the build as usual, which notices what is missing; the
record only ever skips work a complete build already did. It is a local cache: losing it
costs one slow no-op, never a wrong answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from prior.featurestore.catalog import Segment
from prior.featurestore.store import Store
from prior.paths import prior_home
from prior.pipeline.build_options import BuildOptions
from prior.pipeline.build_report import BuildReport
from prior.pipeline.datasets.api import Source
from prior.pipeline.features.base import Feature

RECORD_FORMAT = 1


def records_dir() -> Path:
    return prior_home() / "cache" / "builds"


def inputs_digest(store: Store, options: BuildOptions, fingerprint: dict[str, Any], sources: list[Source | None],
                  planned: list[tuple[Feature, str]]) -> str | None:
    """What decides a build's result, hashed; None where it cannot be told without running it
    (a split read from the hub, restored entry parameters, a feature whose settings fail)."""
    if options.restore or options.replace:
        return None
    files = [s for s in sources if s is not None]
    if len(files) < len(sources):  # a split read from the hub
        return None
    try:
        features = [{"name": f.name, "version": f.version, "scope": f.scope, "built_by": built_by,
                     "params": f.params(), "inputs": {k: _file_state(v) for k, v in f.recipe_inputs().items()}}
                    for f, built_by in planned]
    except Exception:  # noqa: BLE001 - settings known only after prepare: the build works it out
        return None
    # the file's columns count as they resolve ("read" below): spelling out a default column
    # (the CLI does) is the same build as leaving it out (a library call does)
    given = {f.name: getattr(options, f.name) for f in dataclasses.fields(options) if f.name != "columns"}
    if options.embeddings is not None:
        given["embeddings_file"] = _file_state(str(options.embeddings))
    inputs = {"format": RECORD_FORMAT, "store": store.location, "options": given, "read": options.read_kwargs(),
              "sources": [(s.dataset, s.split, str(Path(s.location).resolve()), s.sha256) for s in files],
              "parser": fingerprint, "features": features}
    text = json.dumps(inputs, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _file_state(path: str) -> list[Any]:
    try:
        st = Path(path).expanduser().stat()
    except OSError:
        return [path, None]
    return [path, st.st_size, st.st_mtime_ns]


def _pairs(store: Store, dataset: str) -> list[str]:
    """The dataset's pairs segments."""
    return [s.id for s in store.segments("pairs") if s.target["dataset"] == dataset]


def _used_by(s: Segment, parse: str, entries: set[str]) -> bool:
    if s.kind in ("sentences", "resource"):
        return True
    if s.kind == "parses":
        return bool(s.target.get("parse") == parse)
    return s.kind == "feature" and s.target.get("entry") in entries


def save(store: Store, digest: str, report: BuildReport, *, skip_notes: int = 0) -> None:
    """Record a complete build (every stage without a failed item); a build with failures
    is run again in full next time (its failures are retried and reported). The report's
    first ``skip_notes`` notes are about this run (what it tidied), not its result."""
    if any(stage.failed for stage in report.stages):
        return
    store.refresh()
    entries = set(report.entries.values())
    other = [s.id for s in store.segments() if _used_by(s, report.parse, entries)]  # read by a build of it
    record = {"format": RECORD_FORMAT, "pairs": _pairs(store, report.dataset), "segments": other,
              "report": {"dataset": report.dataset, "parse": report.parse, "entries": report.entries,
                         "notes": report.notes[skip_notes:],
                         "splits": [dataclasses.asdict(s) for s in report.splits],
                         "stages": [dataclasses.asdict(s) for s in report.stages]}}
    folder = records_dir()
    tmp = folder / f".{digest}.{os.getpid()}.tmp"
    with contextlib.suppress(OSError):  # no writable PRIOR_HOME: every rerun checks in full
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(record, sort_keys=True))
        os.replace(tmp, folder / f"{digest}.json")
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def load(store: Store, digest: str) -> dict[str, Any] | None:
    """The recorded report of a complete build with these inputs, if the store still holds
    what it made (checked on the catalog only); None otherwise."""
    try:
        record = json.loads((records_dir() / f"{digest}.json").read_text())
        if record.get("format") != RECORD_FORMAT:
            return None
        report = record["report"]
        if sorted(_pairs(store, report["dataset"])) != sorted(record["pairs"]):
            return None
        present = {s.id for s in store.segments()}
        if not all(sid in present for sid in record["segments"]):
            return None
        return dict(report)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
