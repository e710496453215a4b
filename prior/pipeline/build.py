"""`prior build`: dataset files → pairs → unique sentences → parses → features → store.

Each stage computes only what the store lacks, so a rerun of the same build computes nothing
and a second dataset reuses the parses of every sentence it shares with the first. Parsing and
features run as Dask tasks, one per partition of a few hundred to a few thousand items; each
task writes and commits its own segment, so a build killed part-way keeps what it committed
and the rerun computes exactly the keys that are missing. Models and resources are loaded once
per worker process (see ``worker.py``).

A build holds a lease on the store while it runs (``prior.featurestore.lease``): its segments are
claimed, so ``prior store gc`` leaves them alone, and it first removes what dead builds left.
Before its first commit it checks that it can finish (``preflight.py``): the store can be
reached with the build's storage options and written (a ``memory://`` store is refused when
worker processes would write it), the scheduler answers, the workers have the parser, WordNet
and the store. The storage options are resolved once, here, and handed to every worker task.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pyarrow as pa

from prior.errors import DataError, NotFoundError, PriorError
from prior.featurestore import StoreRef, make_entry, open_store
from prior.featurestore import keys as K
from prior.featurestore.lease import Lease, clean_dead, lease_seconds, read_leases
from prior.featurestore.names import name_problem
from prior.featurestore.recipe import DEFAULT_COLUMNS, FeatureRecipe, Recipe
from prior.featurestore.segment_cache import PARSE_SEGMENTS, limit_bytes
from prior.featurestore.selection import DEFAULT_PARSER
from prior.featurestore.store import EntryInfo, Store
from prior.featurestore.tree import check_tree
from prior.pipeline import noop, preflight, startup, worker
from prior.pipeline.features.context import BuildContext  # moved there; still importable from here
from prior.pipeline.parsers.base import CHARS_PER_WORD, MAX_WORDS, Parse, over_limit
from prior.progress import bars

log = logging.getLogger(__name__)

DEFAULT_FEATURES = ("dep", "sdoi", "wup")  # every feature of the papers that needs no input file


@dataclass
class BuildOptions:
    """What a build makes: every field changes what the store holds (the dataset and how it is
    read, the parser, the features and their options). How it runs is :class:`RunOptions`."""

    dataset: str
    splits: tuple[str, ...] | None = None
    features: tuple[str, ...] = DEFAULT_FEATURES
    parser: str = DEFAULT_PARSER
    limit: int | None = None
    data_dir: Path | None = None
    embeddings: Path | None = None
    feature_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    columns: dict[str, Any] = field(default_factory=dict)  # for a file: text_a, text_b, label, label_kind
    name: str | None = None  # the dataset's name in the store (default: a named dataset's, a file's stem)
    replace: bool = False  # a split whose source or reading options changed: replace its rows
    # the Hugging Face hub may give every split the dataset has there, not only those named in
    # ``splits`` (a named split is always looked up there when no local file has it)
    hub: bool = False
    max_words: int = MAX_WORDS  # a longer sentence is not parsed: counted, reported, its pair skipped
    # feature name -> an entry's recorded params: the feature restores them (`Feature.restore`)
    # instead of preparing them from this dataset (`prior predict`: new pairs, a model's entries)
    restore: dict[str, dict[str, Any]] = field(default_factory=dict)

    def read_kwargs(self) -> dict[str, Any]:
        """Column names for a dataset given as a file (GLUE-style names unless told otherwise)."""
        from prior.pipeline.datasets import SPECS

        if self.dataset.lower() in SPECS:
            return {}
        return {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "label_kind": "class"} | self.columns

    def source_recipe(self, data_dir: Path | None) -> Recipe:
        """How this dataset is read again (recorded with its pairs, replayed by the build an
        incomplete read names): a named dataset or a file's absolute path, the name in the
        store, the data directory, a file's columns that differ from the defaults."""
        from prior.pipeline.datasets import SPECS

        named = self.dataset.lower() in SPECS
        columns = {} if named else {k: v for k, v in self.columns.items() if v != DEFAULT_COLUMNS.get(k)}
        return Recipe(dataset=self.dataset if named else str(Path(self.dataset).expanduser().resolve()),
                      name=self.name or None,
                      data_dir=None if data_dir is None else str(Path(data_dir).expanduser().resolve()),
                      columns=columns)


@dataclass
class RunOptions:
    """How a build runs and where it writes; none of these changes what is computed.
    ``workers=0`` runs in this process (no Dask), for debugging."""

    # the store: a location, or a StoreRef with its fsspec options (endpoint, credentials); a
    # location alone reads $PRIOR_STORAGE_OPTIONS, once, in the driver. The workers get the
    # driver's, never read their own environment's. None: the default store.
    store: StoreRef | str | None = None
    workers: int = 2
    scheduler: str | None = None  # an existing Dask scheduler's address
    partition_size: int = 2000
    parse_device: str = "auto"  # where the biaffine model runs: auto (a worker's GPU if any), cpu, cuda
    progress: bool = True


def options_from(**given: Any) -> tuple[BuildOptions, RunOptions]:
    """``BuildOptions`` and ``RunOptions`` from one set of keyword arguments, each to the class
    that has the field (scripts and tests that name both kinds at once)."""
    run_fields = {f.name for f in fields(RunOptions)}
    run = {k: v for k, v in given.items() if k in run_fields}
    return BuildOptions(**{k: v for k, v in given.items() if k not in run_fields}), RunOptions(**run)


@dataclass
class SplitReport:
    split: str
    location: str
    pairs: int
    new_rows: int
    skipped: dict[str, int]
    skip_examples: list[str]
    labels: dict[str, int] = field(default_factory=dict)  # a file's classes and their counts


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


# --------------------------------------------------------------------------- Dask
# A sentence's parse cost in characters of text: spaCy's time is ~0.62 ms per sentence plus
# 0.027 ms per character (6,276 SNLI, MRPC and SICK sentences in 10 groups by length), so a
# sentence costs as much as 23 characters more. Parse partitions are cut to equal cost.
PARSE_COST_PER_SENTENCE = 23

# A partition's work: function, arguments, and what to do with its result.
Job = tuple[Callable[..., dict[str, Any]], tuple[Any, ...], Callable[[dict[str, Any]], None]]


def _log_to_file(path: str) -> None:
    """Send Dask's own log (``distributed``: a failed task's "Compute Failed" block with its
    traceback, worker restarts) to ``path`` instead of the terminal: a build's failure is the
    one line its error says; the details stay in that file ($PRIOR_HOME/logs/dask.log)."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path)  # opened now: a file that cannot be written fails here
    except OSError:  # no writable PRIOR_HOME: the log stays on the terminal
        return
    logger = logging.getLogger("distributed")
    for old in list(logger.handlers):
        if isinstance(old, logging.StreamHandler) and not isinstance(old, logging.FileHandler):
            logger.removeHandler(old)
    if any(isinstance(h, logging.FileHandler) and h.baseFilename == handler.baseFilename for h in logger.handlers):
        handler.close()
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
    logger.propagate = False


@contextlib.contextmanager
def _workers_ignore_ctrl_c() -> Iterator[None]:
    """Start worker processes with SIGINT ignored (they inherit it): Ctrl-C in a terminal
    reaches the whole process group, and the workers' own tracebacks would bury the build's
    one-line "interrupted" (the build stops them itself). The build's process ignores it only
    while the workers start."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class _Runner:
    """Runs partition tasks in this process or on Dask; the cluster starts only when needed."""

    def __init__(self, options: BuildOptions, settings: RunOptions) -> None:
        self.options, self.settings = options, settings
        self.client: Any = None
        self.cluster: Any = None

    def _start(self) -> None:
        if self.client is not None or (self.settings.workers == 0 and not self.settings.scheduler):
            return
        import dask
        from distributed import Client, LocalCluster

        logging.getLogger("distributed").setLevel(logging.ERROR)
        if self.settings.scheduler:
            self.client = preflight.connect(self.settings.scheduler)
        else:
            from prior.paths import prior_home

            scratch = prior_home() / "dask-scratch"
            scratch.mkdir(parents=True, exist_ok=True)
            # the dashboard cannot be switched off here; an ephemeral loopback port never collides.
            # The workers live for this build only: their start-up is tuned (prior/pipeline/startup.py).
            with dask.config.set(startup.local_cluster_config()), _workers_ignore_ctrl_c():
                self.cluster = LocalCluster(n_workers=self.settings.workers, threads_per_worker=1, processes=True,
                                            dashboard_address="127.0.0.1:0", local_directory=str(scratch),
                                            silence_logs=logging.ERROR,
                                            env=startup.local_worker_env(self.options.parser))
            self.client = Client(self.cluster)
            log_file = str(prior_home() / "logs" / "dask.log")
            _log_to_file(log_file)  # the scheduler, in this process
            self.client.run(_log_to_file, log_file)  # each worker (a failed task's log block)

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
        if self.settings.scheduler:
            self._start()
            return max(1, len(self.client.scheduler_info().get("workers", {})))
        return max(1, self.settings.workers)

    def close(self) -> None:
        if self.cluster is not None:  # our own workers only; an external cluster's are left alone
            startup.before_closing(self.client)
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
        if n_parts == len(items) or max(hi - lo for lo, hi in itertools.pairwise(bounds)) <= size:
            return [items[lo:hi] for lo, hi in itertools.pairwise(bounds)]
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


def _feature_call(store: Store, feature: Any, entry: EntryInfo, parse: str, part: list[Any],
                  known: list[str]) -> tuple[Any, ...]:
    """Arguments of `worker.feature_partition` for one partition: keys only. The worker reads
    the parses from the store itself, so the driver ships no parse records and every worker
    starts at once (on 9,927 SICK pairs the driver used to spend ~0.3 s per partition reading
    and converting parses while the workers waited). ``known``: the entry's segments when the
    partition was planned (the worker skips keys other builds committed since)."""
    guard = (store.lease, known)
    if feature.scope == "sentence":
        return (store.ref, feature, entry.target(), part, (parse, None), guard)
    return (store.ref, feature, entry.target(), [t[0] for t in part], (parse, [(a, b) for _, a, b in part]), guard)


def _check_before_commit(store: Store, options: BuildOptions, runner: _Runner, fingerprint: dict[str, Any],
                         features: list[Any]) -> None:
    """What must hold before the first commit (the store's writability was checked by taking
    the lease): an external scheduler answers and its workers have the parser, the features'
    resources and the store; a local build's machine has the features' resources."""
    if runner.settings.scheduler:
        runner._start()
        preflight.check_workers(runner.client, store.ref, str(store.lease), options.parser, fingerprint, features)
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


# --------------------------------------------------------------------------- stages
def _ingest(store: Store, options: BuildOptions, report: BuildReport,
            sources: dict[str, Any]) -> tuple[dict[str, list[tuple[str, str, str]]], dict[str, str]]:
    """Read the splits (``sources``: split -> its source, `_split_sources`), write new rows and
    new sentences; return split -> (pair, a, b) keys and
    the texts of the sentences read from files. A split whose file, reading options, rows and
    sentences the store already holds is taken from the store without parsing the file again.
    Each split's new sentences are committed before its pairs, so no kill leaves pairs that
    reference sentences the store lacks."""
    from prior.pipeline.datasets import read_split
    from prior.pipeline.datasets.resolve import data_dir_from_env

    stage = StageReport("read")
    t0 = time.perf_counter()
    texts: dict[str, str] = {}
    split_pairs: dict[str, list[tuple[str, str, str]]] = {}
    have_sentences = store.sentence_keys()
    for split, source in sources.items():
        held = _held_split(store, options, source, have_sentences) if source is not None else None
        if held is not None:
            assert source is not None
            triples, meta = held
            report.dataset = options.name or source.dataset
            split_pairs[source.split] = triples
            report.splits.append(SplitReport(split=source.split, location=source.location, pairs=len(triples),
                                             new_rows=0, skipped=dict(meta.get("skipped", {})),
                                             skip_examples=list(meta.get("skip_examples", []))))
            stage.items += len(triples)
            stage.reused += len(triples)
            stage.failed += sum(meta.get("skipped", {}).values())
            continue
        data = read_split(options.dataset, split, data_dir=options.data_dir, limit=options.limit,
                          hub=options.hub or options.splits is not None, **options.read_kwargs())
        if not data.pairs and options.limit != 0:
            raise _no_pairs(data)
        name = options.name or data.dataset
        if problem := name_problem(name):
            raise DataError(f"dataset name {name!r} (from {'--name' if options.name else data.location}) "
                            f"{problem}; give another with --name")
        report.dataset = name
        rows, labels, ids, triples = [], [], [], []
        for pair in data.pairs:
            ka, kb = K.sentence_key(pair.text_a), K.sentence_key(pair.text_b)
            texts.setdefault(ka, K.normalize_text(pair.text_a))
            texts.setdefault(kb, K.normalize_text(pair.text_b))
            triples.append((K.pair_key(ka, kb), ka, kb))
            rows.append(pair.row)
            labels.append(pair.label)
            ids.append(pair.id)
        reader = {"dataset": data.dataset, **options.read_kwargs()}
        have = _stored_rows(store, name, data.split, data.source_sha256, data.location, reader, options.replace)
        new = [i for i, r in enumerate(rows) if r not in have]
        skipped = data.skip_counts()
        examples = [f"{s.file}:{s.row} [{s.field}] {s.reason}" for s in data.skipped[:5]]
        # A split's sentences are committed before its pairs: pairs are never visible without the
        # sentences they reference, whenever a build is killed.
        if missing := sorted({k for _, a, b in triples for k in (a, b)} - have_sentences):
            store.write_sentences(missing, [texts[k] for k in missing])
            have_sentences.update(missing)
        if new:
            data_dir = options.data_dir or (data_dir_from_env() if data.origin == "data_dir" else None)
            store.write_pairs(name, data.split, pa.table({
                "row": pa.array([rows[i] for i in new], pa.int64()),
                "pair_key": [triples[i][0] for i in new],
                "key_a": [triples[i][1] for i in new],
                "key_b": [triples[i][2] for i in new],
                "label": pa.array([labels[i] for i in new],
                                  pa.float64() if data.label_kind == "score" else pa.string()),
                "id": pa.array([ids[i] for i in new], pa.string()),
            }), source_sha256=data.source_sha256,
                meta={"location": data.location, "label_kind": data.label_kind, "labels": list(data.labels),
                      "reader": reader, "limit": options.limit, "rows_read": len(rows),
                      "skipped": skipped, "skip_examples": examples,
                      "recipe": options.source_recipe(data_dir).with_(split=data.split,
                                                                      limit=options.limit).to_dict()})
        split_pairs[data.split] = triples
        report.splits.append(SplitReport(split=data.split, location=data.location, pairs=len(data.pairs),
                                         new_rows=len(new), skipped=skipped, skip_examples=examples))
        stage.items += len(data.pairs)
        stage.computed += len(new)
        stage.reused += len(data.pairs) - len(new)
        stage.failed += len(data.skipped)
    stage.seconds = time.perf_counter() - t0
    report.stages.append(stage)
    return split_pairs, texts


class NoUsablePairsError(DataError):
    """A dataset file that gave no usable pair; ``counts``: its skipped rows per reason."""

    def __init__(self, message: str, *, counts: dict[str, int], file: str | None = None,
                 row: int | None = None) -> None:
        super().__init__(message, file=file, row=row)
        self.counts = counts


def _no_pairs(data: Any) -> NoUsablePairsError:
    """A split that gave no usable pair: the real cause (its rows' problems, or no rows)."""
    if not data.skipped:
        return NoUsablePairsError(f"{data.dataset}/{data.split} has no rows (only a header, or nothing); give a "
                                  "file with at least one pair", counts={}, file=data.location)
    first, counts = data.skipped[0], data.skip_counts()
    causes = len(counts)
    return NoUsablePairsError(f"none of the {len(data.skipped)} row(s) of {data.dataset}/{data.split} can be "
                              f"used, the first because of field {first.field!r}: {first.reason}"
                              + (f" ({causes} different causes)" if causes > 1 else "")
                              + "; fix the file or its column options (--text-a, --text-b, --label, --label-kind)",
                              counts=counts, file=first.file, row=first.row)


def _held_split(store: Store, options: BuildOptions, source: Any, sentences: set[str]
                ) -> tuple[list[tuple[str, str, str]], dict[str, Any]] | None:
    """The (pair, a, b) keys of a split the store already holds as this build would read it:
    the same file (checksum), the same reading options, every row the build's ``--limit``
    asks for (a full read, or a limit within the rows read before; all rows that read gave,
    none of their segments dropped) and every sentence those rows reference (``sentences``:
    the keys the store holds). None otherwise: then the file is read and checked as usual,
    and what is missing is written again."""
    name = options.name or source.dataset
    segs = store.split_segments(name, source.split)
    if not segs or options.replace:
        return None
    meta = segs[-1].meta
    reader = {"dataset": source.dataset, **options.read_kwargs()}
    if segs[-1].target["source_sha256"] != source.sha256 or meta.get("reader") != reader:
        return None
    if any(s.meta.get("rows_read") is None for s in segs):  # written before this was recorded
        return None
    limits = [s.meta.get("limit") for s in segs]
    read = max((n for n in limits if isinstance(n, int)), default=0)
    if None not in limits and (options.limit is None or options.limit > read):
        return None
    rows = store.pair_rows(name, source.split)
    widest = max(segs, key=lambda s: s.meta["limit"] if isinstance(s.meta.get("limit"), int) else math.inf)
    rows_read = widest.meta.get("rows_read")
    if not isinstance(rows_read, int) or rows.height < rows_read:  # a pairs segment was dropped
        return None
    if options.limit is not None:
        rows = rows.head(options.limit)
    key_a, key_b = rows["key_a"].to_list(), rows["key_b"].to_list()  # each column converted once
    if not set(key_a).union(key_b) <= sentences:
        return None  # sentences dropped (gc --drop-damaged): read the file again for their texts
    return list(zip(rows["pair_key"].to_list(), key_a, key_b)), meta


def _stored_rows(store: Store, dataset: str, split: str, sha: str, location: str,
                 reader: dict[str, Any], replace: bool) -> set[int]:
    """Rows of ``dataset/split`` the store already holds from this source, read this way.

    A split read before from a file with other content, or with other reading options (columns,
    label kind), is refused: its rows would be mixed with, or silently kept instead of, the new
    ones. ``replace`` (``--replace``) makes the new source the split's content instead.
    """
    segs = store.split_segments(dataset, split)
    if not segs:
        return set()
    current = segs[-1]
    old_reader = current.meta.get("reader")
    changed = []
    if current.target["source_sha256"] != sha:
        changed.append(f"its source differs: the store's rows were read from "
                       f"{current.meta.get('location', '?')} (sha256 {current.target['source_sha256'][:12]}), "
                       f"this build reads {location} (sha256 {sha[:12]})")
    if old_reader is not None and old_reader != reader:
        diff = ", ".join(f"{k} {old_reader.get(k)!r} → {reader.get(k)!r}"
                         for k in sorted(set(old_reader) | set(reader)) if old_reader.get(k) != reader.get(k))
        changed.append(f"it was read with other options ({diff})")
    if changed and not replace:
        raise DataError(f"{dataset}/{split} in {store.location}: " + "; ".join(changed) + ". Build it under "
                        "another name (--name NAME), or replace the stored rows with --replace")
    if changed:
        return set()
    return set(store.pair_rows(dataset, split)["row"].to_list())


def default_splits(dataset: str, data_dir: Path | None = None, *, hub: bool = False) -> tuple[str, ...]:
    """Every split of a named dataset that can be read now from a local file (and, with
    ``hub``, from the Hugging Face hub); a file given by path is one split called "all"."""
    from prior.pipeline.datasets import SPECS, list_datasets

    if dataset.lower() not in SPECS and Path(dataset).expanduser().is_file():
        return ("all",)
    if dataset.lower() not in SPECS:
        raise PriorError(f"unknown dataset {dataset!r} and no such file; known datasets: {', '.join(sorted(SPECS))}; "
                         "or give a file's path as --dataset FILE with its columns: --text-a COL --text-b COL --label COL")
    info = next(i for i in list_datasets(data_dir=data_dir) if i.name == SPECS[dataset.lower()].name)
    found = tuple(s.split for s in info.splits if s.origin is not None and (hub or s.origin != "hub"))
    if not found:
        raise NotFoundError(f"no split of {info.name} has a local file here: " +
                            "; ".join(f"{s.split}: {s.location}" for s in info.splits) +
                            f". Pass --data-dir DIR (or set PRIOR_DATA_DIR) to a directory holding a "
                            f"{SPECS[dataset.lower()].folders[0]}/ folder, give a file as --dataset FILE, "
                            "or download the splits from the Hugging Face hub with --hub")
    return found


def _parser_fingerprint(spec: str) -> dict[str, Any]:
    """The parser's identity, from its model files without loading the model where the backend
    allows it (keeps a no-op rebuild fast)."""
    from prior.pipeline.parsers import fingerprint_of

    return dict(fingerprint_of(spec))


def build(options: BuildOptions, run: RunOptions | None = None) -> BuildReport:
    """Run a build and return its report. Safe to rerun; safe to interrupt.

    Steps: check the settings; take the store's lease; tidy what dead builds left; check
    resources before the first commit; ingest the splits; parse what the store has not parsed;
    prepare every feature in the driver and run all their partitions on the workers."""
    from prior.pipeline.features.registry import plan_features

    t_start = time.perf_counter()
    run = run or RunOptions()
    _check_settings(options)
    store = open_store(run.store)  # reachable, credentials valid
    _check_store_shared(store, run)
    check_tree(store.fs)  # a folder where a file belongs, or the reverse: one line, before the lease
    report = BuildReport(dataset=str(options.dataset), store=store.location)
    planned = plan_features(options.features, options)  # unknown names fail before any work
    fingerprint = _parser_fingerprint(options.parser)  # a missing parser model fails before any work
    report.parse = K.parse_id(fingerprint)
    runner = _Runner(options, run)
    lease = Lease(store.fs, f"prior build {options.dataset}").acquire()  # the store's writability check
    store.lease = lease.id
    try:
        report.notes += _tidy(store)
        tidied = len(report.notes)  # this run's notes, not the build's result: never recorded
        _check_before_commit(store, options, runner, fingerprint, [feature for feature, _ in planned])
        sources = _split_sources(options)
        digest = noop.inputs_digest(store, options, fingerprint, list(sources.values()), planned)
        recorded = noop.load(store, digest) if digest is not None else None
        if recorded is not None:
            _replay(report, recorded)
            return _finish(store, report, t_start)
        split_pairs, texts = _ingest(store, options, report, sources)
        with bars(run.progress) as progress:
            keys = {k for triples in split_pairs.values() for _, a, b in triples for k in (a, b)}
            failed = _parse_stage(store, options, runner, progress, report, keys, texts, fingerprint, lease.id)
            ctx = _context(store, report, options, split_pairs)
            ctx.unparsed = failed
            usable = keys - failed
            items: dict[str, list[Any]] = {"sentence": sorted(usable),
                     "pair": sorted({t for triples in split_pairs.values() for t in triples
                                     if t[1] in usable and t[2] in usable})}
            # Features are prepared in the driver one after the other, then the partitions of
            # all of them go to the workers at once, in that order, so no feature waits for the
            # last partition of the one before. A stage's seconds: its preparation, then until
            # its last partition is done.
            clock = _Clock()
            jobs = [job for feature, built_by in planned
                    for job in _feature_stage(store, options, runner, progress, report, ctx, feature, built_by,
                                              items[feature.scope], clock)]
            clock.start()
            runner.run(jobs)
    finally:
        try:
            runner.close()
        finally:
            lease.release()  # after the workers stopped: then its uncommitted folders are garbage
            PARSE_SEGMENTS.clear()  # filled in this process by an in-process build (workers=0)
    store.refresh()
    _label_counts(store, options, report)
    if digest is not None:
        noop.save(store, digest, report, skip_notes=tidied)
    return _finish(store, report, t_start)


def _finish(store: Store, report: BuildReport, t_start: float) -> BuildReport:
    report.store_bytes = store.size_bytes()
    report.seconds = time.perf_counter() - t_start
    return report


def _split_sources(options: BuildOptions) -> dict[str, Any]:
    """Each split this build reads and its source (file and checksum; None: read from the hub),
    worked out once for the no-op record's digest and for reading."""
    from prior.pipeline.datasets.api import source_of

    splits = options.splits or default_splits(options.dataset, options.data_dir, hub=options.hub)
    return {split: source_of(options.dataset, split, data_dir=options.data_dir) for split in splits}


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
    from prior.pipeline.datasets import SPECS

    if options.dataset.lower() in SPECS or options.read_kwargs().get("label") is None:
        return
    for s in report.splits:
        segs = store.split_segments(report.dataset, s.split)
        if not segs or segs[-1].meta.get("label_kind", "class") != "class":
            continue
        labels = store.pair_rows(report.dataset, s.split)["label"].drop_nulls().to_list()
        s.labels = dict(sorted(Counter(labels).items(), key=lambda kv: (-kv[1], kv[0])))


def _check_store_shared(store: Store, options: RunOptions) -> None:
    """A store in this process's memory (``memory://``) cannot be written by worker processes:
    each has its own memory, and the build would fail later with parses "missing" from it."""
    if store.fs.in_process and (options.workers > 0 or options.scheduler):
        where = (f"the Dask cluster at {options.scheduler}" if options.scheduler
                 else f"{options.workers} worker process(es)")
        raise DataError(f"the store {store.location} lives in this process's memory, which {where} cannot see "
                        "(each process has its own memory); build it with --workers 0 and no --scheduler, "
                        "or use a directory or an object store")


def _check_settings(options: BuildOptions) -> None:
    """Settings read from the environment and the dataset's name fail here, before any work."""
    limit_bytes()  # a malformed PRIOR_SEGMENT_CACHE_MB fails here, not in every worker task
    lease_seconds()
    preflight.scheduler_timeout()
    if options.name and (problem := name_problem(options.name)):
        raise DataError(f"--name {options.name!r} {problem}")


class _Clock:
    """When the feature partitions were submitted (their stages' seconds count from it)."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def start(self) -> None:
        self.t0 = time.perf_counter()

    def since(self) -> float:
        return time.perf_counter() - self.t0


def _count(stage: StageReport, result: dict[str, Any], label: str) -> int:
    """Add a partition's result to its stage; returns the items it settled (for the bar)."""
    stage.computed += result["done"]
    stage.reused += result["skipped"]
    stage.failed += len(result["failures"])
    stage.failures += [f"{label} {k}: {msg}".lstrip() for k, msg in result["failures"]]
    return result["done"] + len(result["failures"]) + result["skipped"]


def _parse_stage(store: Store, options: BuildOptions, runner: _Runner, progress: Any, report: BuildReport,
                 keys: set[str], texts: dict[str, str], fingerprint: dict[str, Any], lease: str) -> set[str]:
    """Parse every sentence of ``keys`` the store has not parsed with this parser (its text from
    ``texts``, else from the store); returns the keys of the sentences that failed."""
    parse = report.parse
    stage = StageReport("parse", items=len(keys))
    t0 = time.perf_counter()
    parsed = store.parsed_keys(parse)
    known = [s.id for s in store.segments("parses") if s.target["parse"] == parse]
    todo = sorted(k for k in keys if k not in parsed)
    stage.reused = len(keys) - len(todo)
    if any(k not in texts for k in todo):  # sentences of splits taken from the store
        stored = store.sentences()
        texts = {**dict(zip(stored["sent_key"].to_list(), stored["text"].to_list())), **texts}
    failed: set[str] = set()
    too_long = {k: n for k in todo if (n := over_limit(texts[k], options.max_words)) is not None}
    if too_long:
        todo = [k for k in todo if k not in too_long]
        failed.update(too_long)
        stage.failed += len(too_long)
        where = _sentence_rows(store, report, too_long)
        stage.failures += [f"{where[k]}: {n} (--max-words)" for k, n in too_long.items()]
        report.notes.append(f"{len(too_long)} sentence(s) over the length limit ({options.max_words} words or "
                            f"{options.max_words * CHARS_PER_WORD:,} characters) were not parsed; "
                            "their pairs get no features (raise the limit with --max-words)")
        _record_skipped(store, parse, fingerprint, options, {k: texts[k] for k in too_long})
    bar = progress.add_task("parse", total=len(todo), info="") if todo else None

    def done(result: dict[str, Any]) -> None:
        failed.update(k for k, _ in result["failures"])
        if result["failures"]:
            where = _sentence_rows(store, report, [k for k, _ in result["failures"]])
            result = {**result, "failures": [(where[k], msg) for k, msg in result["failures"]]}
        settled = _count(stage, result, "")
        if bar is not None:
            progress.advance(bar, settled)

    weights = [len(texts[k]) + PARSE_COST_PER_SENTENCE for k in todo]
    runner.run([(worker.parse_partition,
                 (store.ref, options.parser, parse, fingerprint, part, [texts[k] for k in part],
                  (lease, known), runner.settings.parse_device), done)
                for part in _partitions(todo, runner.workers, runner.settings.partition_size, weights)])
    stage.seconds = time.perf_counter() - t0
    report.stages.append(stage)
    store.refresh()
    return failed


def _record_skipped(store: Store, parse: str, fingerprint: dict[str, Any], options: BuildOptions,
                    texts: dict[str, str]) -> None:
    """Record, with the parse, the sentences too long to parse and which limit they are over, so
    that reads leave their pairs out (`prior.featurestore.splits`); those recorded before as such
    are not written again."""
    limit = options.max_words
    reasons = {k: f"over the {limit}-word limit" if len(t.split()) > limit
               else f"over the {limit * CHARS_PER_WORD}-character limit" for k, t in texts.items()}
    known = store.skipped_sentences(parse)
    if new := {k: r for k, r in reasons.items() if known.get(k) != r}:
        store.write_parses(parse, fingerprint, [], [], spec=options.parser, skipped=new)


def _sentence_rows(store: Store, report: BuildReport, keys: Iterable[str]) -> dict[str, str]:
    """Where each sentence of ``keys`` was read: ``dataset/split FILE row N (sentence KEY)``,
    from the first row of this build's splits that holds it."""
    wanted = set(keys)
    where: dict[str, str] = {}
    for s in report.splits:
        if not wanted - where.keys():
            break
        rows = store.pair_rows(report.dataset, s.split)
        for row, a, b in zip(rows["row"].to_list(), rows["key_a"].to_list(), rows["key_b"].to_list()):
            for k, side in ((a, "text_a"), (b, "text_b")):
                if k in wanted and k not in where:
                    where[k] = f"{report.dataset}/{s.split} {s.location} row {row} {side} (sentence {k[:12]})"
    return {k: where.get(k, f"sentence {k}") for k in wanted}


def _context(store: Store, report: BuildReport, options: BuildOptions,
             split_pairs: dict[str, list[tuple[str, str, str]]]) -> BuildContext:
    """What features' ``prepare`` may use, with the build's parses read on demand."""
    cache: dict[str, Parse] = {}

    def parses_of(keys: Sequence[str]) -> list[Parse]:
        wanted = [k for k in keys if k not in cache]
        if wanted:
            for rec in store.parses(wanted, parse=report.parse).iter_rows(named=True):
                cache[rec["sent_key"]] = Parse.from_record(rec)
        return [cache[k] for k in keys]

    return BuildContext(store=store, dataset=report.dataset, options=options, parse=report.parse,
                        split_pairs=split_pairs, _parses=parses_of)


def _feature_stage(store: Store, options: BuildOptions, runner: _Runner, progress: Any, report: BuildReport,
                   ctx: BuildContext, feature: Any, built_by: str, items: list[Any], clock: _Clock) -> list[Job]:
    """Prepare ``feature`` and return the jobs of its partitions that compute the ``items``
    (sentence keys, or (pair, a, b) key triples) its entry lacks."""
    t0 = time.perf_counter()
    if feature.name in options.restore:
        feature.restore(ctx, options.restore[feature.name])
    else:
        feature.prepare(ctx)
        report.notes += feature.report_lines(report.dataset)
    entry = make_entry(feature.name, feature.version, feature.params(), report.parse, feature.scope,
                       feature.components, built_by=built_by, layout=feature.layout,
                       **_entry_record(feature, built_by, options))
    report.entries[f"{feature.name}@{feature.version}"] = entry.key
    have = store.existing_keys(entry)
    known = [s.id for s in store.segments("feature") if s.target["entry"] == entry.key]
    todo = [item for item in items if (item if feature.scope == "sentence" else item[0]) not in have]
    stage = StageReport(f"feature {feature.name}", items=len(items), reused=len(items) - len(todo))
    bar = progress.add_task(feature.name, total=len(todo), info="") if todo else None
    stage.seconds = prepared = time.perf_counter() - t0
    report.stages.append(stage)

    def done(result: dict[str, Any]) -> None:
        settled = _count(stage, result, "key")
        stage.seconds = prepared + clock.since()
        if bar is not None:
            progress.advance(bar, settled)

    return [(worker.feature_partition, _feature_call(store, feature, entry, report.parse, part, known), done)
            for part in _partitions(todo, runner.workers, runner.settings.partition_size)]


def _entry_record(feature: Any, built_by: str, options: BuildOptions) -> dict[str, Any]:
    """What the store records of how an entry was built: its non-default options (``{}``: the
    default entry reads pick) and the recipe part that makes it again (feature, options, inputs)."""
    from prior.pipeline.features.registry import entry_options

    chosen = entry_options(feature, options.feature_options.get(built_by, {}))
    made = FeatureRecipe(built_by, dict(sorted(chosen.items())), dict(feature.recipe_inputs()))
    return {"options": chosen, "recipe": Recipe(features=(made,))}
