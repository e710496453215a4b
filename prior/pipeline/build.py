"""`prior build`: dataset files → pairs → unique sentences → parses → features → store.

Each stage computes only what the store lacks, so a rerun of the same build computes nothing
and a second dataset reuses the parses of every sentence it shares with the first. Parsing and
features run as Dask tasks, one per partition of a few hundred to a few thousand items; each
task writes and commits its own segment, so a build killed part-way keeps what it committed
and the rerun computes exactly the keys that are missing. Models and resources are loaded once
per worker process (``worker.py``).

This module is the order of things; each part has its own module: what a build makes and how
it runs (``build_options.py``), its report (``build_report.py``), the running build handed to
every stage (``build_run.py``), where tasks run (``runner.py``), partitions (``partitions.py``),
the driver-worker records (``tasks.py``), the stages (``ingest.py``, ``parse_stage.py``,
``feature_stage.py``), the no-op record (``noop.py``) and the checks before the first commit
(``preflight.py``).

A build holds a lease on the store while it runs (``prior.featurestore.lease``): its segments are
claimed, so ``prior store gc`` leaves them alone, and it first removes what dead builds left.
Before its first commit it checks that it can finish (``preflight.py``): the store can be
reached with the build's storage options and written (a ``memory://`` store is refused when
worker processes would write it), the scheduler answers, the workers have the parser, WordNet
and the store. The storage options are resolved once, here, and handed to every worker task.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from prior.errors import DataError, PriorError
from prior.featurestore import keys as K
from prior.featurestore import open_store
from prior.featurestore.lease import Lease, clean_dead, lease_seconds, read_leases
from prior.featurestore.names import name_problem
from prior.featurestore.segment_cache import PARSE_SEGMENTS, limit_bytes
from prior.featurestore.splits import split_refs
from prior.featurestore.store import Store
from prior.featurestore.tree import check_tree
from prior.hints import option
from prior.pipeline import noop, preflight
from prior.pipeline.build_options import BuildOptions, RunOptions
from prior.pipeline.build_report import BuildReport, SplitReport, StageReport
from prior.pipeline.build_run import BuildRun
from prior.pipeline.datasets.api import Source
from prior.pipeline.feature_stage import StageClock, feature_context, feature_jobs
from prior.pipeline.features.base import Feature, annotations_of
from prior.pipeline.ingest import ingest, split_sources
from prior.pipeline.parse_stage import parse_stage
from prior.pipeline.parsers.annotations import ALL, ANNOTATIONS, closure
from prior.pipeline.runner import Runner
from prior.progress import bars

Planned = list[tuple[Feature, str]]  # each feature to build and the feature set (CLI name) that makes it


def build(options: BuildOptions, run: RunOptions | None = None) -> BuildReport:
    """Run a build and return its report. Safe to rerun; safe to interrupt.

    Steps: check the settings; take the store's lease; tidy what dead builds left; check
    resources before the first commit; ingest the splits; parse what the store has not parsed;
    prepare every feature in the driver and run all their partitions on the workers."""
    from prior.pipeline.features.registry import plan_features

    started = time.perf_counter()
    settings = run or RunOptions()
    _check_settings(options)
    store = open_store(settings.store)  # reachable, credentials valid
    _check_store_shared(store, settings)
    check_tree(store.fs)  # a folder where a file belongs, or the reverse: one line, before the lease
    report = BuildReport(dataset=str(options.dataset), store=store.location)
    planned = plan_features(options.features, options)  # unknown names fail before any work
    annotations = _annotations(options, [feature for feature, _ in planned])
    fingerprint = _parser_fingerprint(options.parser)  # a missing parser model fails before any work
    report.parse = K.parse_id(fingerprint)
    lease = Lease(store.fs, f"prior build {options.dataset}").acquire()  # the store's writability check
    store.lease = lease.id
    current = BuildRun(store, options, settings, Runner(settings), report, fingerprint, annotations, started=started)
    try:
        report.notes += _tidy(store)
        tidied = len(report.notes)  # this run's notes, not the build's result: never recorded
        _check_before_commit(current, [feature for feature, _ in planned])
        sources = split_sources(options)
        digest = noop.inputs_digest(store, options, fingerprint, list(sources.values()), planned)
        recorded = noop.load(store, digest) if digest is not None else None
        if recorded is not None:
            _replay(report, recorded)
            return _finish(current)
        _run_stages(current, sources, planned)
    finally:
        try:
            current.runner.close()
        finally:
            lease.release()  # after the workers stopped: then its uncommitted folders are garbage
            PARSE_SEGMENTS.clear()  # filled in this process by an in-process build (workers=0)
    report.lost_workers, report.recomputed = current.runner.losses.workers, current.runner.losses.recomputed
    store.refresh()
    _label_counts(store, options, report)
    if digest is not None:
        noop.save(store, digest, report, skip_notes=tidied)
    return _finish(current)


def _run_stages(run: BuildRun, sources: dict[str, Source | None], planned: Planned) -> None:
    """Ingest, parse, then every feature: prepared in the driver one after the other, then the
    partitions of all of them go to the workers at once, in that order."""
    ingested = ingest(run.store, run.options, run.report, sources)
    run.splits = tuple(split_refs(run.store, run.report.dataset, ingested.split_pairs))
    with bars(run.settings.progress) as progress:
        run.progress = progress
        keys = ingested.sentence_keys()
        failed = parse_stage(run, keys, ingested.texts)
        ctx = feature_context(run, ingested.split_pairs, failed)
        usable = keys - failed
        items: dict[str, list[Any]] = {"sentence": sorted(usable),
                                       "pair": sorted({t for triples in ingested.split_pairs.values() for t in triples
                                                       if t[1] in usable and t[2] in usable})}
        clock = StageClock()
        jobs = [job for feature, built_by in planned
                for job in feature_jobs(run, ctx, feature, built_by, items[feature.scope], clock)]
        clock.start()
        run.runner.run(jobs)


def _finish(run: BuildRun) -> BuildReport:
    run.report.store_bytes = run.store.size_bytes()
    run.report.seconds = run.elapsed()
    return run.report


def _parser_fingerprint(spec: str) -> dict[str, Any]:
    """The parser's identity, from its model files without loading the model where the backend
    allows it (keeps a no-op rebuild fast)."""
    from prior.pipeline.parsers import fingerprint_of

    return dict(fingerprint_of(spec))


def _replay(report: BuildReport, recorded: dict[str, Any]) -> None:
    """The report of a build that finds everything done: the recorded complete build's splits,
    entries and notes, every item reused (`noop.load` checked that the store still holds them)."""
    report.dataset, report.parse = recorded["dataset"], recorded["parse"]
    report.entries = dict(recorded["entries"])
    report.notes += recorded["notes"]  # after this run's own (what it tidied)
    for s in recorded["splits"]:
        report.splits.append(SplitReport(**{**s, "new_rows": 0}))
    for st in recorded["stages"]:
        report.stages.append(StageReport(name=st["name"], items=st["items"], reused=st["items"]))


def _label_counts(store: Store, options: BuildOptions, report: BuildReport) -> None:
    """The classes of a file read by path and how many pairs each has, per split: a file's
    labels are taken as they are written, so a typo makes a class of its own and shows here."""
    if options.named or options.read_kwargs().get("label") is None:
        return
    for s in report.splits:
        segs = store.split_segments(report.dataset, s.split)
        if not segs or segs[-1].meta.get("label_kind", "class") != "class":
            continue
        # the file's classes as committed, skipped pairs included (not a read of the split's features)
        labels = store.pair_rows(report.dataset, s.split)["label"].drop_nulls().to_list()
        s.labels = dict(sorted(Counter(labels).items(), key=lambda kv: (-kv[1], kv[0])))


def _check_store_shared(store: Store, settings: RunOptions) -> None:
    """A store in this process's memory (``memory://``) cannot be written by worker processes:
    each has its own memory, and the build would fail later with parses "missing" from it."""
    if store.fs.in_process and (settings.workers > 0 or settings.scheduler):
        where = (f"the Dask cluster at {settings.scheduler}" if settings.scheduler
                 else f"{settings.workers} worker process(es)")
        raise DataError(f"the store {store.location} lives in this process's memory, which {where} cannot see "
                        f"(each process has its own memory); build it with {option('workers', '0')} and no "
                        f"{option('scheduler')}, or use a directory or an object store")


def build_annotations(options: BuildOptions) -> frozenset[str]:
    """The parse annotations a build with ``options`` makes (what `build` computes before any
    work): those its planned features read, and those asked for."""
    from prior.pipeline.features.registry import plan_features

    return _annotations(options, [feature for feature, _ in plan_features(options.features, options)])


def _annotations(options: BuildOptions, features: list[Feature]) -> frozenset[str]:
    """The parse annotations the build makes: those its features read, and those asked for."""
    if unknown := sorted(set(options.annotate) - ALL):
        raise PriorError(f"{option('annotate', ','.join(options.annotate))}: unknown annotation(s) "
                         f"{', '.join(unknown)}; choose from {', '.join(ANNOTATIONS)}")
    return closure(annotations_of(features) | set(options.annotate))


def _check_settings(options: BuildOptions) -> None:
    """Settings read from the environment and the dataset's name fail here, before any work."""
    limit_bytes()  # a malformed PRIOR_SEGMENT_CACHE_MB fails here, not in every worker task
    lease_seconds()
    preflight.scheduler_timeout()
    if options.name and (problem := name_problem(options.name)):
        raise DataError(f"{option('name', options.name)} {problem}")


def _check_before_commit(run: BuildRun, features: list[Feature]) -> None:
    """What must hold before the first commit (the store's writability was checked by taking
    the lease): an external scheduler answers and its workers have the parser, the features'
    resources and the store; a local build's machine has the features' resources."""
    client = run.runner.start() if run.settings.scheduler else None  # connects; no local cluster is started
    if client is not None:
        preflight.check_workers(client, run.store.ref, str(run.lease), run.options.parser, run.fingerprint, features)
    else:
        preflight.check_local(features)


def _tidy(store: Store) -> list[str]:
    """Remove what dead builds left (their claimed, uncommitted folders and leases): one note."""
    _, dead = read_leases(store.fs)
    if not dead:
        return []
    removed = clean_dead(store.fs, dead, {s.id for s in store.segments(refresh=True)})
    folders = sum(1 for rel in removed if not rel.startswith("leases/"))
    return [f"removed {folders} uncommitted segment folder(s) left by {len(dead)} interrupted build(s)"]
