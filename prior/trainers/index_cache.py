"""A split's index kept on local disk: the next run that reads the same split of the same
store starts from it instead of reading the split again.

Indexing a split (`prior.trainers.split_index.index_split`) reads its rows and the key column
of every segment its entries and its parse hold: 2.3–2.8 s at 500k pairs and 5–8 s at 1M, and
while it runs about 150 bytes a pair besides the 16 it keeps. Everything it reads is named by
the store's catalog, and committed segments never change (a new write is a new segment id, ids
are never reused, `gc` and compaction drop ids). So the index made from one catalog is the index
of every later read of that catalog with the same arguments. :func:`cached_index_split` keeps
it as ``$PRIOR_HOME/cache/index/<digest>.npz``, the digest made of the store's location, the
read's arguments (feature, view, entry request or recorded entries, parse, parser, limit) and
every segment id of the catalog. Any change to the catalog (a build, a compaction, a gc) is
another digest, and the split is indexed again.

A record is a NumPy archive: the index's arrays, and one JSON text for the rest (its segments by
id, its entries by key, its fingerprint, the pairs left out). It holds no pickle and is read with
``allow_pickle=False``. It is written to a temporary file and renamed, so a killed run leaves no
half record; one that does not read back (truncated, damaged: the archive's CRCs, arrays of the
wrong lengths, a segment the catalog lacks) is removed and the split indexed again. A read of a
record logs the pairs the build left out, as the index does. Records are used again by the run
that resumes, each evaluation of a checkpoint, each rank of a distributed run and the next model
trained on the same build.

The records together are kept under ``$PRIOR_HOME`` by ``$PRIOR_INDEX_CACHE_MB`` (default 1024):
the least recently used go first. 0 switches the cache off. Losing a record costs one index,
never a wrong answer; where ``PRIOR_HOME`` cannot be written every run indexes. A record answers
for a catalog, not for its files: a file damaged after the record was made is found by the reads
of its values, or by `prior store verify`, not by the next run's index.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from prior.errors import DataError
from prior.featurestore import Store
from prior.featurestore.catalog import Segment
from prior.featurestore.selection import Request
from prior.paths import prior_home
from prior.trainers.features import plan_of
from prior.trainers.split_index import Locator, SplitIndex, index_split

log = logging.getLogger(__name__)

#: bumped whenever what a record holds, or what the index computes, changes
RECORD_FORMAT = 1
ENV_LIMIT = "PRIOR_INDEX_CACHE_MB"
DEFAULT_LIMIT_MB = 1024


def records_dir() -> Path:
    return prior_home() / "cache" / "index"


def limit_bytes() -> int:
    """``$PRIOR_INDEX_CACHE_MB`` in bytes (read on each call); 0: no cache. `DataError` when it
    is not a number of megabytes."""
    raw = os.environ.get(ENV_LIMIT, "")
    try:
        mb = float(raw) if raw else DEFAULT_LIMIT_MB
    except ValueError:
        raise DataError(f"{ENV_LIMIT}={raw!r} is not a number of megabytes") from None
    if mb < 0:
        raise DataError(f"{ENV_LIMIT}={raw!r} must be 0 (no cache) or a positive number of megabytes")
    return int(mb * 1024 * 1024)


def index_digest(store: Store, dataset: str, split: str, args: dict[str, Any]) -> str:
    """What decides a split's index, hashed: the store's location, the read's ``args``
    (`index_split`'s keywords) and every segment id of its catalog."""
    request = args.get("request")
    given = {**args, "request": dataclasses.asdict(request) if isinstance(request, Request) else request}
    catalog = hashlib.sha256("\n".join(sorted(s.id for s in store.segments())).encode()).hexdigest()
    inputs = {"format": RECORD_FORMAT, "store": store.location, "dataset": dataset, "split": split, "args": given,
              "catalog": catalog}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


#: `index_split`'s keywords and their defaults: what a record is kept for besides the split
READ_ARGS: dict[str, Any] = {"feature": None, "view": None, "request": None, "entries": None, "parse": None,
                             "parser": None, "limit": None}


def record_path(store: Store, dataset: str, split: str, **read: Any) -> Path:
    """Where the record of this read of the split is kept for the store's current catalog
    (``read``: `index_split`'s keywords, the rest at their defaults); it may not exist."""
    unknown = sorted(set(read) - set(READ_ARGS))
    if unknown:
        raise TypeError(f"not an argument of index_split: {', '.join(unknown)}")
    return records_dir() / f"{index_digest(store, dataset, split, {**READ_ARGS, **read})}.npz"


def cached_index_split(store: Store, dataset: str, split: str, *, feature: str | None = None,
                       view: str | None = None, request: Request | None = None,
                       entries: dict[str, str] | None = None, parse: str | None = None,
                       parser: str | None = None, limit: int | None = None) -> SplitIndex:
    """`index_split` with the same arguments, from its record when one was kept for this
    catalog (module docstring), else indexed and recorded."""
    args: dict[str, Any] = {"feature": feature, "view": view, "request": request, "entries": entries,
                            "parse": parse, "parser": parser, "limit": limit}
    bound = limit_bytes()
    if bound == 0:
        return index_split(store, dataset, split, **args)
    path = record_path(store, dataset, split, **args)
    index = load(store, path)
    if index is not None:
        if index.note:
            log.warning(index.note)
        return index
    index = index_split(store, dataset, split, **args)
    if record_path(store, dataset, split, **args) == path:  # the catalog it was made from
        save(index, path, bound)
    return index


# ---------------------------------------------------------------------------- the record
def _locator_arrays(name: str, loc: Locator) -> dict[str, np.ndarray]:
    return {f"{name}.seg": loc.seg, f"{name}.item": loc.item}


def save(index: SplitIndex, path: Path, bound: int) -> None:
    """Record ``index`` at ``path`` (written whole, then renamed), then drop the least recently
    used records past ``bound`` bytes. A record larger than the bound is not written; a folder
    that cannot be written is no error."""
    arrays: dict[str, np.ndarray] = {"sent_a": index.sent_a, "sent_b": index.sent_b,
                                     **_locator_arrays("words", index.words)}
    if index.labels is not None:
        arrays["labels"] = index.labels
    pair_keys, sentence_keys = list(index.pair_locs), list(index.sentence_locs)
    for i, key in enumerate(pair_keys):
        arrays |= _locator_arrays(f"pair{i}", index.pair_locs[key])
    for i, key in enumerate(sentence_keys):
        arrays |= _locator_arrays(f"sentence{i}", index.sentence_locs[key])
    if sum(a.nbytes for a in arrays.values()) > bound:
        return
    meta = {"format": RECORD_FORMAT, "dataset": index.dataset, "split": index.split,
            "label_kind": index.label_kind, "label_names": list(index.label_names),
            "fingerprint": index.fingerprint, "skipped": index.skipped,
            "words": [s.id for s in index.words.segments],
            "pair_locs": [[k, [s.id for s in index.pair_locs[k].segments]] for k in pair_keys],
            "sentence_locs": [[k, [s.id for s in index.sentence_locs[k].segments]] for k in sentence_keys],
            "plan": None if index.plan is None else {"read": index.plan.read,
                                                     "entries": [e.key for e in index.plan.entries]}}
    arrays["meta"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
    with contextlib.suppress(OSError):  # no writable PRIOR_HOME: every run indexes
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(tmp, **arrays)  # type: ignore[arg-type]  # the stub reads **kwds as allow_pickle
        os.replace(tmp, path)
        _prune(path.parent, bound)
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def _prune(folder: Path, bound: int) -> None:
    """Remove the least recently used records until the rest take at most ``bound`` bytes."""
    records = []
    for p in folder.glob("*.npz"):
        with contextlib.suppress(OSError):
            st = p.stat()
            records.append((st.st_mtime_ns, st.st_size, p))
    total = sum(size for _, size, _ in records)
    for _, size, p in sorted(records, key=lambda r: r[0]):
        if total <= bound:
            break
        with contextlib.suppress(OSError):
            p.unlink()
        total -= size


class _Unusable(Exception):
    """A record that does not describe an index of this store's catalog."""


def load(store: Store, path: Path) -> SplitIndex | None:
    """The index recorded at ``path``, its segments and entries those of ``store``'s catalog;
    None when there is none, or when it does not read back (then it is removed)."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        index = _index(store, arrays)
    except (OSError, ValueError, KeyError, TypeError, IndexError, EOFError, zipfile.BadZipFile, _Unusable) as exc:
        log.debug("index record %s unusable (%s): indexing again", path, exc)
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: pruned last
    return index


def _index(store: Store, arrays: dict[str, np.ndarray]) -> SplitIndex:
    meta = json.loads(arrays.pop("meta").tobytes().decode())
    if meta.get("format") != RECORD_FORMAT:
        raise _Unusable(f"format {meta.get('format')}")
    segments = {s.id: s for s in store.segments()}
    pairs, sentences = int(meta["fingerprint"]["pairs"]), len(arrays["words.seg"])

    def locator(name: str, ids: list[str], length: int) -> Locator:
        if any(i not in segments for i in ids):
            raise _Unusable(f"{name}: a segment the catalog lacks")
        held: tuple[Segment, ...] = tuple(segments[i] for i in ids)
        seg, item = arrays[f"{name}.seg"], arrays[f"{name}.item"]
        if len(seg) != length or len(item) != length or (
                length and not 0 <= int(seg.min()) <= int(seg.max()) < len(held)):
            raise _Unusable(f"{name}: arrays of the wrong length or segments")
        return Locator(held, seg, item)

    sent_a, sent_b = arrays["sent_a"], arrays["sent_b"]
    labels = arrays.get("labels")
    if len(sent_a) != pairs or len(sent_b) != pairs or (labels is not None and len(labels) != pairs):
        raise _Unusable("pairs of the wrong length")
    if pairs and max(int(sent_a.max()), int(sent_b.max())) >= sentences:
        raise _Unusable("a sentence number past the split's sentences")
    pair_locs = {k: locator(f"pair{i}", ids, pairs) for i, (k, ids) in enumerate(meta["pair_locs"])}
    sentence_locs = {k: locator(f"sentence{i}", ids, sentences) for i, (k, ids) in enumerate(meta["sentence_locs"])}
    plan = None
    if meta["plan"] is not None:
        known = {e.key: e for e in store.entries()}
        if any(k not in known for k in meta["plan"]["entries"]):
            raise _Unusable("an entry the catalog lacks")
        plan = plan_of(store, meta["plan"]["read"], [known[k] for k in meta["plan"]["entries"]])
    return SplitIndex(store.ref, meta["dataset"], meta["split"], meta["label_kind"], tuple(meta["label_names"]),
                      labels, sent_a, sent_b, locator("words", meta["words"], sentences), pair_locs, sentence_locs,
                      plan, meta["fingerprint"], {str(k): int(v) for k, v in meta["skipped"].items()})


__all__ = ["DEFAULT_LIMIT_MB", "ENV_LIMIT", "READ_ARGS", "cached_index_split", "index_digest", "limit_bytes", "load",
           "record_path", "records_dir", "save"]
