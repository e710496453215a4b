"""What runs on a Dask worker (or in-process): one partition of parsing or of a feature.

Each call takes one `PartitionTask` (`prior.pipeline.tasks`), writes its results as one segment
and commits it before returning a `PartitionResult`, so finished partitions survive a crash of
the build. Parsers and features are set up once per worker process and cached here, keyed by
what identifies them (parser spec, entry key). A failing batch is retried item by item so that
one bad sentence costs one counted failure, never the partition.

A task drops, right before computing and again right before committing, the keys that segments
committed since the driver planned the partition already hold (``_already_committed``): other
builds' segments of the same parse or entry, and an earlier copy of this task (its ``token``
is recorded with its segment), which Dask runs again when the worker that ran it was lost. That
costs one catalog listing per check (records are cached by their content tag) and a read of
the keys of such segments only when there are some.

Every task carries the build's store as a `StoreRef` (``prior.featurestore.ref``): a worker opens
the store with the options the driver resolved, never with options from its own environment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from prior.errors import NotFoundError
from prior.featurestore import open_store
from prior.featurestore.catalog import Segment
from prior.featurestore.segment_files import held_annotations
from prior.featurestore.store import EntryInfo, Store
from prior.pipeline.features.base import Feature, annotations_of
from prior.pipeline.parsers.base import Parse
from prior.pipeline.tasks import FeatureTask, ParseTask, PartitionResult, PartitionTask

_FEATURES: dict[tuple[str, str], Feature] = {}
TASK_META = "task"  # the segment meta field that records the task token


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def _already_committed(store: Store, kind: str, match: Callable[[Segment], bool],
                       task: PartitionTask) -> tuple[set[str], bool]:
    """Keys of segments committed since the partition was planned, other than its own build's
    sibling partitions: another build's, or an earlier copy of this task's; and whether such a
    copy was found (this run is a rerun after a lost worker)."""
    store.refresh()
    known = set(task.known)
    token = task.token
    fresh = [s for s in store.segments(kind) if match(s) and s.id not in known
             and (not task.lease or s.lease != task.lease or s.meta.get(TASK_META) == token)]
    rerun = any(s.meta.get(TASK_META) == token for s in fresh)
    return (store.segment_keys(fresh) if fresh else set()), rerun


def _kept(keys: Sequence[str], done: set[str]) -> list[int]:
    return [i for i, k in enumerate(keys) if k not in done]


def run_partition(task: PartitionTask) -> PartitionResult:
    """Run ``task``: the entry point the build submits to Dask (or calls in-process)."""
    if isinstance(task, ParseTask):
        return parse_partition(task)
    if isinstance(task, FeatureTask):
        return feature_partition(task)
    raise TypeError(f"not a partition task: {type(task).__name__}")


def parse_partition(task: ParseTask) -> PartitionResult:
    """Parse ``task.texts`` and store them as one parse segment. Returns what was stored,
    skipped (committed meanwhile) and failed (key, reason)."""
    from prior.pipeline.parsers import get_parser

    store = open_store(task.store, lease=task.lease)

    def committed() -> tuple[set[str], bool]:
        return _already_committed(store, "parses", lambda s: s.target["parse"] == task.parse
                                  and set(task.annotations) <= held_annotations(s), task)

    done, rerun = committed()
    todo = _kept(task.keys, done)
    if not todo:
        return PartitionResult(skipped=len(task.keys), rerun=rerun)
    keys, texts = [task.keys[i] for i in todo], [task.texts[i] for i in todo]
    parser = get_parser(task.parser, task.device)
    try:
        parses: list[Parse | None] = list(parser.parse(texts, task.annotations))
        failures: list[tuple[str, str]] = []
    except Exception:  # noqa: BLE001 - isolate the bad sentence(s), below
        parses, failures = [], []
        for key, text in zip(keys, texts):
            try:
                parses.append(parser.parse([text], task.annotations)[0])
            except Exception as exc:  # noqa: BLE001
                parses.append(None)
                failures.append((key, _short(exc)))
    done, raced = committed()  # a racing copy of this task, or another build, committed meanwhile
    ok = [(k, p) for k, p in zip(keys, parses) if p is not None and k not in done]
    # what the parser failed on is recorded with the parses: reads leave those pairs out
    store.write_parses(task.parse, task.fingerprint, [k for k, _ in ok], [p.to_record() for _, p in ok],
                       spec=task.parser, skipped={k: "the parser failed on it" for k, _ in failures if k not in done},
                       meta={**task.record, TASK_META: task.token}, annotations=task.annotations)
    skipped = len(task.keys) - len(ok) - len(failures)
    return PartitionResult(done=len(ok), skipped=skipped, failures=tuple(failures), rerun=rerun or raced)


def _feature(feature: Feature, entry_key: str) -> Feature:
    """The set-up copy of ``feature`` this process keeps for its entry, unless its worker
    token (`FeatureBase.worker_token`: e.g. the words an `emb` vocabulary was cut to for one
    build) says it was set up for other work."""
    key = (entry_key, getattr(feature, "worker_token", lambda: "")())
    cached = _FEATURES.get(key)
    if cached is None:
        feature.setup()
        _FEATURES[key] = cached = feature
    return cached


def feature_partition(task: FeatureTask) -> PartitionResult:
    """Compute and store one partition of a feature; the parses are read from the store here."""
    entry = EntryInfo.from_target(task.target)
    store = open_store(task.store, lease=task.lease)

    def committed() -> tuple[set[str], bool]:
        return _already_committed(store, "feature", lambda s: s.target["entry"] == entry.key, task)

    done, rerun = committed()
    kept = _kept(task.keys, done)
    if not kept:
        return PartitionResult(skipped=len(task.keys), rerun=rerun)
    keys = [task.keys[i] for i in kept]
    pairs = None if task.pairs is None else [task.pairs[i] for i in kept]
    feature = _feature(task.feature, entry.key)
    wanted = keys if pairs is None else list(dict.fromkeys(k for pair in pairs for k in pair))
    needs = annotations_of([feature])
    parses = {r["sent_key"]: Parse.from_record(r)
              for r in store.parses(wanted, parse=task.parse, cache=True, needs=needs).iter_rows(named=True)}
    if (missing := [k for k in wanted if k not in parses]):
        annotated = f" annotated with {', '.join(sorted(needs))}" if needs else ""
        raise NotFoundError(f"{store.location}: parse {task.parse} lacks {len(missing)} sentence(s){annotated} of "
                            f"this partition, e.g. {missing[0]}")
    items: list[Any] = [parses[k] for k in keys] if pairs is None else [(parses[a], parses[b]) for a, b in pairs]
    try:
        results: list[Any] = list(feature.compute(items))
        failures: list[tuple[str, str]] = []
    except Exception:  # noqa: BLE001 - retry one by one to isolate failures
        results, failures = [], []
        for key, item in zip(keys, items):
            try:
                results.append(feature.compute([item])[0])
            except Exception as exc:  # noqa: BLE001
                results.append(None)
                failures.append((key, _short(exc)))
    done, raced = committed()
    ok = [(k, r) for k, r in zip(keys, results) if r is not None and k not in done]
    store.write_feature(entry, [k for k, _ in ok], [r for _, r in ok], meta={**task.record, TASK_META: task.token})
    skipped = len(task.keys) - len(ok) - len(failures)
    return PartitionResult(done=len(ok), skipped=skipped, failures=tuple(failures), rerun=rerun or raced)
