"""`prior build`: dataset files → pairs → unique sentences → parses → features → store.

Each stage computes only what the store lacks, so a rerun of the same build computes nothing
and a second dataset reuses the parses of every sentence it shares with the first. Parsing and
features run as Dask tasks, one per partition of a few hundred to a few thousand items; each
task writes and commits its own segment, so a build killed part-way keeps what it committed
and the rerun computes exactly the keys that are missing. Models and resources are loaded once
per worker process (see ``worker.py``).
"""

from __future__ import annotations

import gc
import logging
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from featurestore import keys as K
from featurestore import make_entry, open_store
from featurestore.errors import NotFoundError, PriorError
from featurestore.segment_cache import PARSE_SEGMENTS, limit_bytes
from featurestore.store import EntryInfo, Store
from pipeline import worker
from pipeline.parsers.base import Parse

log = logging.getLogger(__name__)

DEFAULT_PARSER = "biaffine"  # the papers parse with Dozat & Manning's biaffine parser; "spacy" stays available
DEFAULT_FEATURES = ("sdoi", "wup")


@dataclass
class BuildOptions:
    """Everything a build needs. ``workers=0`` runs in this process (no Dask), for debugging."""

    dataset: str
    splits: tuple[str, ...] | None = None
    features: tuple[str, ...] = DEFAULT_FEATURES
    store: str | None = None
    parser: str = DEFAULT_PARSER
    limit: int | None = None
    workers: int = 2
    scheduler: str | None = None
    partition_size: int = 2000
    data_dir: Path | None = None
    embeddings: Path | None = None
    feature_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    columns: dict[str, Any] = field(default_factory=dict)  # for a file: text_a, text_b, label, label_kind
    progress: bool = True
    parse_device: str = "auto"  # where the biaffine model runs: auto (a worker's GPU if any), cpu, cuda

    def read_kwargs(self) -> dict[str, Any]:
        """Column names for a dataset given as a file (GLUE-style names unless told otherwise)."""
        from pipeline.datasets import SPECS

        if self.dataset.lower() in SPECS:
            return {}
        return {"text_a": "sentence1", "text_b": "sentence2", "label": "label"} | self.columns


@dataclass
class SplitReport:
    split: str
    location: str
    pairs: int
    new_rows: int
    skipped: dict[str, int]
    skip_examples: list[str]


@dataclass
class StageReport:
    name: str
    items: int = 0
    computed: int = 0
    reused: int = 0
    failed: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


@dataclass
class BuildReport:
    dataset: str
    store: str
    parse: str = ""
    splits: list[SplitReport] = field(default_factory=list)
    stages: list[StageReport] = field(default_factory=list)
    entries: dict[str, str] = field(default_factory=dict)  # feature spec -> entry key
    notes: list[str] = field(default_factory=list)  # lines features add: OOV rates, IDF tables
    store_bytes: int = 0
    seconds: float = 0.0

    def stage(self, name: str) -> StageReport:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def computed(self) -> int:
        return sum(s.computed for s in self.stages)


@dataclass
class BuildContext:
    """What a feature's ``prepare`` may use (in the driver, after parsing)."""

    store: Store
    dataset: str
    options: BuildOptions
    parse: str
    split_pairs: dict[str, list[tuple[str, str, str]]]  # split -> (pair_key, key_a, key_b)
    _parses: Callable[[Sequence[str]], list[Parse]]

    @property
    def splits(self) -> list[str]:
        return list(self.split_pairs)

    def split_keys(self, split: str) -> list[str]:
        """Unique sentence keys of a split of this dataset, in first-seen order."""
        if split in self.split_pairs:
            rows = self.split_pairs[split]
        else:
            df = self.store.pair_rows(self.dataset, split)
            rows = list(zip(df["pair_key"], df["key_a"], df["key_b"]))
        return list(dict.fromkeys(k for _, a, b in rows for k in (a, b)))

    def parses(self, sentence_keys: Sequence[str]) -> list[Parse]:
        return self._parses(sentence_keys)


# --------------------------------------------------------------------------- progress and Dask
@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    disabled = not enabled or os.environ.get("PRIOR_NO_PROGRESS", "") not in ("", "0")
    with Progress(TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=disabled, transient=False) as progress:
        yield progress


# Dask's nanny sets MALLOC_TRIM_THRESHOLD_=65536 in every worker it spawns, to hand freed memory
# back to the OS in long-lived workers. Setting it also switches off glibc's adaptive mmap
# threshold, so every large numpy buffer spaCy allocates is a fresh mmap with page faults:
# spaCy parses 20-25 % slower (2,665 SNLI sentences: 4.66 s without, 5.54-5.95 s with it).
# The build's own workers live for one build: they keep glibc's defaults.
LOCAL_WORKER_CONFIG = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}


# A sentence's parse cost in characters of text: spaCy's time is ~0.62 ms per sentence plus
# 0.027 ms per character (6,276 SNLI, MRPC and SICK sentences in 10 groups by length), so a
# sentence costs as much as 23 characters more. Parse partitions are cut to equal cost.
PARSE_COST_PER_SENTENCE = 23

# A partition's work: function, arguments, and what to do with its result.
Job = tuple[Callable[..., dict[str, Any]], tuple[Any, ...], Callable[[dict[str, Any]], None]]


class _Runner:
    """Runs partition tasks in this process or on Dask; the cluster starts only when needed."""

    def __init__(self, options: BuildOptions) -> None:
        self.options = options
        self.client: Any = None
        self.cluster: Any = None

    def _start(self) -> None:
        if self.client is not None or (self.options.workers == 0 and not self.options.scheduler):
            return
        import dask
        from distributed import Client, LocalCluster

        logging.getLogger("distributed").setLevel(logging.ERROR)
        if self.options.scheduler:
            self.client = Client(self.options.scheduler, timeout="30s")
        else:
            from featurestore.paths import prior_home

            scratch = prior_home() / "dask-scratch"
            scratch.mkdir(parents=True, exist_ok=True)
            from pipeline.parsers import worker_environment

            # the dashboard cannot be switched off here; an ephemeral loopback port never collides.
            # The workers live for this build only: their environment is tuned to its parser.
            with dask.config.set(LOCAL_WORKER_CONFIG):
                self.cluster = LocalCluster(n_workers=self.options.workers, threads_per_worker=1, processes=True,
                                            dashboard_address="127.0.0.1:0", local_directory=str(scratch),
                                            silence_logs=logging.ERROR,
                                            env={**worker_environment(self.options.parser),
                                                 worker.LOCAL_WORKER_ENV: "1"})
            self.client = Client(self.cluster)

    def run(self, jobs: list[Job]) -> None:
        """Run every job, handing each result to its callback as it arrives; Dask starts the
        jobs in the order given."""
        if not jobs:
            return
        self._start()
        if self.client is None:
            for fn, args, on_done in jobs:
                on_done(fn(*args))
            return
        from distributed import as_completed

        futures, callbacks = [], {}
        for fn, args, on_done in jobs:
            future = self.client.submit(fn, *args, pure=False)
            futures.append(future)
            callbacks[future.key] = on_done
        for future in as_completed(futures):
            callbacks[future.key](future.result())

    @property
    def workers(self) -> int:
        """Worker count for partitioning; asks an external scheduler, never starts a local cluster."""
        if self.options.scheduler:
            self._start()
            return max(1, len(self.client.scheduler_info().get("workers", {})))
        return max(1, self.options.workers)

    def close(self) -> None:
        if self.cluster is not None:
            # Our workers then exit at once: `gc.freeze` exempts their objects from the
            # interpreter's final collection, which otherwise walks spaCy's heap (closing 2
            # workers: 0.47 -> 0.06 s). An external cluster's workers are left alone.
            with suppress(Exception):
                self.client.run(gc.freeze)
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _partitions(items: list[Any], workers: int, size: int,
                weights: Sequence[float] | None = None) -> list[list[Any]]:
    """Few, large partitions in the items' order: at least one per worker (two when there is
    enough work), at most ``size`` items each, and a multiple of the worker count, so no worker is
    left with one more partition than the others (SICK's 9,842 pairs in 5 partitions left one
    of 2 workers a third one to run alone).

    Without ``weights`` the sizes differ by at most 1. With them (an estimate of each item's
    cost) the cuts give every partition about the same total weight: with two partitions per
    worker, a partition that costs more than the others leaves the other workers idle at the
    end of its stage. 2,000 MRPC pairs parsed by 2 workers in 4 partitions: with equal counts
    the workers finished 0.17–0.21 s apart, cut by characters 0.03–0.04 s.
    """
    if not items:
        return []
    n_parts = max(math.ceil(len(items) / size), workers * (2 if len(items) >= 400 * workers else 1))
    while True:
        n_parts = min(math.ceil(n_parts / workers) * workers, len(items))
        bounds = _cuts(len(items), n_parts, weights)
        if n_parts == len(items) or max(hi - lo for lo, hi in zip(bounds, bounds[1:])) <= size:
            return [items[lo:hi] for lo, hi in zip(bounds, bounds[1:])]
        n_parts += workers  # light items made a partition too long: cut finer


def _cuts(n: int, parts: int, weights: Sequence[float] | None) -> list[int]:
    """``parts + 1`` increasing bounds over ``n`` items, each partition non-empty: equal counts
    (differing by at most 1) or, with ``weights``, cut where the running weight first reaches
    each ``k / parts`` of the total."""
    if weights is None:
        return [n * i // parts for i in range(parts + 1)]
    if len(weights) != n:
        raise ValueError(f"{len(weights)} weights for {n} items")
    if any(w < 0 for w in weights):
        raise ValueError(f"negative weight {min(weights)}")
    total = float(sum(weights))
    if total <= 0:
        return _cuts(n, parts, None)
    bounds, running, i = [0], 0.0, 0
    for k in range(1, parts):
        target = total * k / parts
        # at least one item per partition, and leave one for each partition still to come
        while i < n - (parts - k) and (i < bounds[-1] + 1 or running + weights[i] / 2 <= target):
            running += weights[i]
            i += 1
        bounds.append(i)
    bounds.append(n)
    return bounds


def _feature_call(store_url: str, feature: Any, entry: EntryInfo, parse: str, part: list[Any]) -> tuple[Any, ...]:
    """Arguments of `worker.feature_partition` for one partition: keys only. The worker reads
    the parses from the store itself, so the driver ships no parse records and every worker
    starts at once (on 9,927 SICK pairs the driver used to spend ~0.3 s per partition reading
    and converting parses while the workers waited)."""
    if feature.scope == "sentence":
        return (store_url, feature, entry.target(), part, (parse, None))
    return (store_url, feature, entry.target(), [t[0] for t in part], (parse, [(a, b) for _, a, b in part]))


# --------------------------------------------------------------------------- stages
def _ingest(store: Store, options: BuildOptions, report: BuildReport) -> dict[str, list[tuple[str, str, str]]]:
    """Read the splits, write new rows and new sentences; return split -> (pair, a, b) keys."""
    from pipeline.datasets import read_split

    stage = StageReport("read")
    t0 = time.perf_counter()
    splits = options.splits or default_splits(options.dataset, options.data_dir)
    texts: dict[str, str] = {}
    split_pairs: dict[str, list[tuple[str, str, str]]] = {}
    for split in splits:
        data = read_split(options.dataset, split, data_dir=options.data_dir, limit=options.limit,
                          **options.read_kwargs())
        report.dataset = data.dataset
        rows, labels, ids, triples = [], [], [], []
        for pair in data.pairs:
            ka, kb = K.sentence_key(pair.text_a), K.sentence_key(pair.text_b)
            texts.setdefault(ka, K.normalize_text(pair.text_a))
            texts.setdefault(kb, K.normalize_text(pair.text_b))
            triples.append((K.pair_key(ka, kb), ka, kb))
            rows.append(pair.row)
            labels.append(pair.label)
            ids.append(pair.id)
        try:
            existing = store.pair_rows(data.dataset, data.split)
            have = set(existing["row"].to_list()) if _same_source(store, data.dataset, data.split,
                                                                  data.source_sha256) else set()
        except NotFoundError:
            have = set()
        new = [i for i, r in enumerate(rows) if r not in have]
        if new:
            store.write_pairs(data.dataset, data.split, pa.table({
                "row": pa.array([rows[i] for i in new], pa.int64()),
                "pair_key": [triples[i][0] for i in new],
                "key_a": [triples[i][1] for i in new],
                "key_b": [triples[i][2] for i in new],
                "label": pa.array([labels[i] for i in new],
                                  pa.float64() if data.label_kind == "score" else pa.string()),
                "id": pa.array([ids[i] for i in new], pa.string()),
            }), source_sha256=data.source_sha256,
                meta={"location": data.location, "label_kind": data.label_kind, "labels": list(data.labels)})
        split_pairs[data.split] = triples
        report.splits.append(SplitReport(
            split=data.split, location=data.location, pairs=len(data.pairs), new_rows=len(new),
            skipped=data.skip_counts(),
            skip_examples=[f"{s.file}:{s.row} [{s.field}] {s.reason}" for s in data.skipped[:5]]))
        stage.items += len(data.pairs)
        stage.computed += len(new)
        stage.reused += len(data.pairs) - len(new)
        stage.failed += len(data.skipped)
    have_sentences = store.sentence_keys()
    missing = sorted(k for k in texts if k not in have_sentences)
    store.write_sentences(missing, [texts[k] for k in missing])
    stage.seconds = time.perf_counter() - t0
    report.stages.append(stage)
    report._texts = texts  # type: ignore[attr-defined]  # handed to the parse stage
    return split_pairs


def default_splits(dataset: str, data_dir: Path | None = None) -> tuple[str, ...]:
    """Every split of a named dataset that can be read now (locally or from the hub); a file
    given by path is one split called "all"."""
    from pipeline.datasets import SPECS, list_datasets

    if dataset.lower() not in SPECS and Path(dataset).expanduser().is_file():
        return ("all",)
    if dataset.lower() not in SPECS:
        raise PriorError(f"unknown dataset {dataset!r} and no such file; known datasets: {', '.join(sorted(SPECS))}")
    info = next(i for i in list_datasets(data_dir=data_dir) if i.name == SPECS[dataset.lower()].name)
    found = tuple(s.split for s in info.splits if s.origin is not None)
    if not found:
        raise NotFoundError(f"no split of {info.name} can be read here: " +
                            "; ".join(f"{s.split}: {s.location}" for s in info.splits) +
                            ". Set PRIOR_DATA_DIR or pass --data-dir, or give a file path.")
    return found


def _same_source(store: Store, dataset: str, split: str, sha: str) -> bool:
    segs = [s for s in store.segments("pairs") if s.target["dataset"] == dataset and s.target["split"] == split]
    return bool(segs) and segs[-1].target["source_sha256"] == sha


def _parser_fingerprint(spec: str) -> dict[str, Any]:
    """The parser's identity, from its model files without loading the model where the backend
    allows it (keeps a no-op rebuild fast)."""
    from pipeline.parsers import fingerprint_of

    return dict(fingerprint_of(spec))


def build(options: BuildOptions) -> BuildReport:
    """Run a build and return its report. Safe to rerun; safe to interrupt."""
    from pipeline.features.registry import features_for

    t_start = time.perf_counter()
    limit_bytes()  # a malformed PRIOR_SEGMENT_CACHE_MB fails here, not in every worker task
    store = open_store(options.store)
    report = BuildReport(dataset=str(options.dataset), store=store.location)
    features = features_for(options.features, options)  # unknown names fail before any work
    split_pairs = _ingest(store, options, report)
    texts: dict[str, str] = report._texts  # type: ignore[attr-defined]
    del report._texts  # type: ignore[attr-defined]

    fingerprint = _parser_fingerprint(options.parser)
    parse = K.parse_id(fingerprint)
    report.parse = parse
    runner = _Runner(options)
    failed_sentences: set[str] = set()
    try:
        with _progress(options.progress) as progress:
            # ---- parse every sentence the store has not parsed with this parser
            stage = StageReport("parse", items=len(texts))
            t0 = time.perf_counter()
            parsed = store.parsed_keys(parse)
            todo = sorted(k for k in texts if k not in parsed)
            stage.reused = len(texts) - len(todo)
            bar = progress.add_task("parse", total=len(todo))

            def parsed_done(result: dict[str, Any]) -> None:
                stage.computed += result["done"]
                stage.failed += len(result["failures"])
                stage.failures += [f"sentence {k}: {msg}" for k, msg in result["failures"]]
                failed_sentences.update(k for k, _ in result["failures"])
                progress.advance(bar, result["done"] + len(result["failures"]))

            weights = [len(texts[k]) + PARSE_COST_PER_SENTENCE for k in todo]
            runner.run([(worker.parse_partition,
                         (store.location, options.parser, parse, fingerprint, part, [texts[k] for k in part],
                          options.parse_device),
                         parsed_done) for part in _partitions(todo, runner.workers, options.partition_size, weights)])
            stage.seconds = time.perf_counter() - t0
            report.stages.append(stage)
            store.refresh()

            parse_cache: dict[str, Parse] = {}

            def parses_of(keys: Sequence[str]) -> list[Parse]:
                wanted = [k for k in keys if k not in parse_cache]
                if wanted:
                    df = store.parses(wanted, parse=parse)
                    for rec in df.iter_rows(named=True):
                        parse_cache[rec["sent_key"]] = Parse.from_record(rec)
                return [parse_cache[k] for k in keys]

            usable = set(texts) - failed_sentences
            ctx = BuildContext(store=store, dataset=report.dataset, options=options, parse=parse,
                               split_pairs=split_pairs, _parses=parses_of)
            sentence_keys = sorted(usable)
            pair_items = sorted({t for triples in split_pairs.values() for t in triples
                                 if t[1] in usable and t[2] in usable})
            # ---- features: prepared in the driver one after the other, then the partitions of
            # all of them go to the workers at once, in that order, so no feature waits for the
            # last partition of the one before. A stage's seconds: its preparation, then until
            # its last partition is done.
            jobs: list[Job] = []
            t_submit = 0.0  # read by feature_done when results arrive
            for feature in features:
                t0 = time.perf_counter()
                prepare = getattr(feature, "prepare", None)
                if prepare is not None:
                    prepare(ctx)
                    report.notes += getattr(feature, "report_lines", lambda _dataset: [])(report.dataset)
                entry = make_entry(feature.name, feature.version, feature.params(), parse, feature.scope,
                                   feature.components)
                report.entries[f"{feature.name}@{feature.version}"] = entry.key
                have = store.existing_keys(entry)
                if feature.scope == "sentence":
                    todo_items = [k for k in sentence_keys if k not in have]
                    total = len(sentence_keys)
                else:
                    todo_items = [t for t in pair_items if t[0] not in have]
                    total = len(pair_items)
                stage = StageReport(f"feature {feature.name}", items=total, reused=total - len(todo_items))
                bar = progress.add_task(feature.name, total=len(todo_items))
                prepared = time.perf_counter() - t0
                stage.seconds = prepared

                def feature_done(result: dict[str, Any], stage: StageReport = stage, bar: Any = bar,
                                 prepared: float = prepared) -> None:
                    stage.computed += result["done"]
                    stage.failed += len(result["failures"])
                    stage.failures += [f"key {k}: {msg}" for k, msg in result["failures"]]
                    stage.seconds = prepared + time.perf_counter() - t_submit
                    progress.advance(bar, result["done"] + len(result["failures"]))

                jobs += [(worker.feature_partition, _feature_call(store.location, feature, entry, parse, part),
                          feature_done) for part in _partitions(todo_items, runner.workers, options.partition_size)]
                report.stages.append(stage)
            t_submit = time.perf_counter()
            runner.run(jobs)
    finally:
        runner.close()
        PARSE_SEGMENTS.clear()  # filled in this process by an in-process build (workers=0)
    store.refresh()
    report.store_bytes = store.size_bytes()
    report.seconds = time.perf_counter() - t_start
    return report


def entry_for(store: Store, feature: str, parse: str | None = None) -> EntryInfo:
    """The entry a build of ``feature`` made most recently (for scripts and the CLI)."""
    try:
        return store.find_entry(feature, parse=parse)
    except NotFoundError as exc:
        raise PriorError(str(exc)) from exc
