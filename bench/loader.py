"""The training loader alone (no model): time to the first batch, batches per second, memory.

    python bench/loader.py run --store STORE                         # one epoch, DAFA's dep, 2 workers
    python bench/loader.py sizes bench/out/scale/store-100000 bench/out/scale/store-500000
    python bench/loader.py s3 --store STORE --steps 40                # the same store local and on moto's S3
    python bench/loader.py fetched --store STORE --steps 1000         # what a run fetches from the store on S3
    python bench/loader.py fetched-table LINES.jsonl                  # the tables of fetched and s3 lines
    python bench/loader.py make STORE --pairs 500000 --sentences 63000 [--ids]  # a store without parsing (synthetic)
    python bench/loader.py make STORE --pairs 500000 --sentences 600000 --ids   # ... with SNLI's ratio of sentences to pairs
    python bench/loader.py index-memory --store STORE                 # the index's memory, step by step (Linux)
    python bench/loader.py words --store STORE                        # every parse segment's words: strings or dictionaries
    python bench/loader.py summary RUNS.jsonl [RUNS.jsonl ...]        # the spread of many runs' lines, a row per file
    python bench/loader.py numbered --store STORE --against CHECKOUT  # the split's rows as numbers: this checkout and another

``run`` (one process; JSON on the last line): the split is indexed (`prior.trainers.split_index`),
or read from the record a run before kept (`prior.trainers.index_cache`: ``index_recorded``;
``PRIOR_INDEX_CACHE_MB=0`` indexes every run), then the stream of `prior.trainers.loader` makes one
epoch of global batches of ``--batch-size`` with ``--workers`` loader workers, the batches consumed
and dropped. Reported: ``index_s`` (the split resolved: rows, entry selection, key columns),
``first_batch_s`` (from the start of the index to the first batch in hand), ``pairs_per_s`` over the
epoch (wall) and ``second_half_pairs_per_s`` over its second half (every worker past its first
reads: what a long run sees epoch after epoch), CPU seconds per 1,000 pairs of this process and of
the workers together (user + sys; what a shared machine disturbs least), and peak RSS of this
process and of the largest worker (MiB, ``getrusage``); a forked worker's RSS counts the pages it
shares with this process, so its peak PSS and private memory are sampled too
(``/proc/PID/smaps_rollup``, every 0.5 s): what a worker adds.
``--steps`` stops after that many batches.

``sizes``: ``run`` in a fresh process per store, a Markdown table (the RSS of a process that read
nothing else). The stores of `bench/scale.py` (``bench/out/scale/store-N``, dataset ``scale``)
or of ``make``. ``s3``: starts moto's S3 server in this process, copies the store into a bucket,
and compares ``run`` from the local store and from ``s3://`` (the same batches; the reads go
through HTTP). Timings mean something only on a machine nothing else uses.

``fetched`` (JSON on the last line): ``run`` from a copy of the store on moto's S3 API server,
started as its own process, in this process (``--workers`` 0 by default: a forked worker's
reads are not counted), counting what the store's reads fetch: whole files (``read_bytes``) and
byte ranges, their requests and MiB, and KiB per pair; the index's reads included. Counts, not
times: they hold on a busy machine (``pairs_per_s`` does not, and moto serves each request from
Python, so it weighs requests far above bytes). ``--latency-ms N`` adds N ms to each request
(a whole file, a range, one call of concurrent ranges): moto on the loopback answers at once,
a real object store over a network after a round trip, and what is fetched one after another
pays it each time. ``fetched-table``: Markdown tables of such lines
and of ``s3``'s (each line with a ``label`` and ``commit``; an ``s3`` line's label ends in
``, local`` or ``, s3 (moto)``): a row per label and commit, whole epochs apart from parts.

``summary``: each file holds the last lines of many ``run`` calls (one JSON object a line,
e.g. ``bench/loader.py run ... | tail -1 >> RUNS.jsonl`` in a loop; a line may carry a
``label``, and more keys, such as the command); a Markdown row per file and label of the runs,
how many read a recorded index, min / median / max of ``index_s`` and ``first_batch_s``, and
the median peak RSS of this process and of the largest worker.

``numbered`` (a JSON line per process): `prior.featurestore.numbered_split.numbered_split` of
``--split`` called ``--calls`` times in a fresh process after one untimed call, with this
checkout's code and with ``--against``'s (another checkout of prior), the two alternating for
``--rounds`` rounds; each line: the checkout, its fastest and median call, and the numbers'
sums (the same numbering, the same sums).

``index-memory`` (one process, JSON on the last line): this process's RSS and peak RSS
(``/proc/self/status``) after the imports and the tokenizer, around each step of
`prior.trainers.split_index.index_split` (the split's rows as numbers, the feature's entry
selection, each key lookup; steps wrapped where the index calls them), at its end, and 5 s
later (what the allocator gave back); and the bytes of the arrays the index keeps. Memory, not
time: a busy machine does not change it.

``words`` (one process; JSON on the last line): every parse segment's ``words`` column read
``--rounds`` times each way, alternating, its files already checked: as plain strings and
dictionary-encoded afterwards (what the reader did), and as the row groups' Parquet
dictionaries (`prior.featurestore.segment_files.read_string_lists`, what it does); seconds per
pass over the store, each round, and the distinct words per row group.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _cpu() -> tuple[float, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


class MemoryWatch:
    """Samples this process's and its children's memory every ``every`` seconds (Linux
    ``/proc``): peak RSS, and for the children (forked loader workers, which share the pages
    they were forked with) peak PSS and peak private memory, what they cost beyond the parent."""

    def __init__(self, every: float = 0.5) -> None:
        import threading

        self.every, self.peak = every, {"rss": 0.0, "worker_pss": 0.0, "worker_private": 0.0, "workers_pss_sum": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _rollup(pid: int) -> dict[str, float]:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            return {}
        fields = dict(line.split(":", 1) for line in text.splitlines()[1:] if ":" in line)
        return {k: float(v.split()[0]) / 1024 for k, v in fields.items()}  # MiB

    def _children(self) -> list[int]:
        try:
            return [int(p) for p in Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()]
        except OSError:
            return []

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            me = self._rollup(os.getpid())
            self.peak["rss"] = max(self.peak["rss"], me.get("Rss", 0.0))
            kids = [self._rollup(pid) for pid in self._children()]
            for kid in kids:
                self.peak["worker_pss"] = max(self.peak["worker_pss"], kid.get("Pss", 0.0))
                private = kid.get("Private_Clean", 0.0) + kid.get("Private_Dirty", 0.0)
                self.peak["worker_private"] = max(self.peak["worker_private"], private)
            self.peak["workers_pss_sum"] = max(self.peak["workers_pss_sum"], sum(k.get("Pss", 0.0) for k in kids))

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        return {k: round(v, 1) for k, v in self.peak.items()}


def _dataset(store: Any, dataset: str | None, split: str) -> str:
    names = sorted({d for d, s in store.datasets() if s == split})
    if dataset is None and len(names) != 1:
        raise SystemExit(f"name the dataset (--dataset): {store.location} has {names}")
    return dataset or names[0]


def run(args: argparse.Namespace, storage_options: dict[str, Any] | None = None) -> dict[str, Any]:
    import torch

    from prior.featurestore import StoreRef, open_store
    from prior.trainers import backbones
    from prior.trainers.index_cache import cached_index_split, limit_bytes, record_path
    from prior.trainers.loader import LoaderSettings, TrainStream, run_batches
    from prior.trainers.reader import SplitReader

    torch.set_num_threads(1)
    tokenizer = backbones.load_tokenizer(backbones.resolve_backbone("mini"))
    watch = MemoryWatch()
    cpu0, wall0 = _cpu(), time.perf_counter()
    store = open_store(StoreRef(args.store, storage_options), create=False)
    dataset = _dataset(store, args.dataset, args.split)
    recorded = bool(limit_bytes()) and record_path(store, dataset, args.split, feature=args.feature or None).exists()
    index = cached_index_split(store, dataset, args.split, feature=args.feature or None)
    index_s = time.perf_counter() - wall0
    settings = LoaderSettings(workers=args.workers, window=args.window, piece=min(args.piece, args.window))
    reader = SplitReader(index, tokenizer, args.max_length, piece=settings.piece, cache_mb=args.cache_mb)
    stream = TrainStream(reader, batch_size=args.batch_size, shuffle=settings.shuffle(1), epochs=1)
    first, pairs, batches = None, 0, 0
    half_at, half_pairs = None, (min(len(index), args.steps * args.batch_size) if args.steps else len(index)) // 2
    for batch in run_batches(stream, settings):
        if batch.skip:
            continue
        first = first if first is not None else time.perf_counter() - wall0
        pairs, batches = pairs + batch.pairs, batches + 1
        if half_at is None and pairs >= half_pairs:
            half_at, half_pairs = time.perf_counter() - wall0, pairs
        if args.steps and batches >= args.steps:
            break
    wall = time.perf_counter() - wall0
    cpu = _cpu()
    memory = watch.stop()
    return {"store": str(args.store), "dataset": dataset, "split_pairs": len(index), "feature": args.feature,
            "workers": args.workers, "window": settings.window, "piece": settings.piece, "cache_mb": args.cache_mb,
            "batches": batches,
            "pairs": pairs, "index_recorded": recorded, "index_s": round(index_s, 2),
            "first_batch_s": round(first or 0.0, 2),
            "pairs_per_s": round(pairs / (wall - (first or 0.0) + 1e-9) if batches > 1 else 0.0, 1),
            "second_half_pairs_per_s": round((pairs - half_pairs) / (wall - half_at + 1e-9)
                                             if half_at is not None and pairs > half_pairs else 0.0, 1),
            "epoch_s": round(wall, 2),
            "cpu_s_per_1k_pairs": {"this": round(1000 * (cpu[0] - cpu0[0]) / max(pairs, 1), 3),
                                   "workers": round(1000 * (cpu[1] - cpu0[1]) / max(pairs, 1), 3)},
            "peak_rss_mib": {"this": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                             "largest_worker": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)},
            "sampled_mib": memory}


def sizes(args: argparse.Namespace) -> None:
    rows = []
    for store in args.stores:
        cmd = [sys.executable, __file__, "run", "--store", store, *args.run_args]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    print("\n| store | pairs | index s | first batch s | pairs/s | second half pairs/s | CPU ms/1k pairs "
          "(this + workers) | peak RSS MiB (this / worker) | worker peak PSS / private MiB |\n"
          "|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cpu, rss, seen = r["cpu_s_per_1k_pairs"], r["peak_rss_mib"], r["sampled_mib"]
        print(f"| {r['store']} | {r['split_pairs']} | {r['index_s']} | {r['first_batch_s']} | {r['pairs_per_s']:,.0f} | "
              f"{r.get('second_half_pairs_per_s', 0):,.0f} | "
              f"{1000 * cpu['this']:.0f} + {1000 * cpu['workers']:.0f} | {rss['this']:.0f} / {rss['largest_worker']:.0f} | "
              f"{seen['worker_pss']:.0f} / {seen['worker_private']:.0f} |")


def summary(args: argparse.Namespace) -> None:
    """A row per file of ``run`` lines (module docstring)."""
    import statistics

    def spread(values: list[float]) -> str:
        return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"

    print("| runs | pairs | index recorded | index s (min / median / max) | first batch s (min / median / max) "
          "| peak RSS MiB (this / worker, median) |\n|---|---|---|---|---|---|")
    for name in args.files:
        text = Path(name).read_text(encoding="utf-8")
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        if not lines:
            raise SystemExit(f"{name}: no run lines")
        labels = list(dict.fromkeys(r.get("label") for r in lines))
        for label in labels:
            rows = [r for r in lines if r.get("label") == label]
            pairs = sorted({r["split_pairs"] for r in rows})
            rss = [r["peak_rss_mib"] for r in rows]
            print(f"| {name}{f' {label}' if label else ''}: {len(rows)} | {', '.join(f'{p:,}' for p in pairs)} | "
                  f"{sum(bool(r['index_recorded']) for r in rows)} | {spread([r['index_s'] for r in rows])} | "
                  f"{spread([r['first_batch_s'] for r in rows])} | {statistics.median(m['this'] for m in rss):.0f} / "
                  f"{statistics.median(m['largest_worker'] for m in rss):.0f} |")


_NUMBERED = """
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from prior.featurestore import StoreRef, open_store
from prior.featurestore.numbered_split import numbered_split
store = open_store(StoreRef(sys.argv[2]), create=False)
dataset = sys.argv[3]
numbered_split(store, dataset, sys.argv[4])
seconds = []
for _ in range(int(sys.argv[5])):
    start = time.perf_counter()
    n = numbered_split(store, dataset, sys.argv[4])
    seconds.append(time.perf_counter() - start)
print(json.dumps({"checkout": sys.argv[1], "min_s": round(min(seconds), 3),
                  "median_s": round(statistics.median(seconds), 3), "pairs": n.height,
                  "sentences": n.sentences.len(), "sums": [int(n.sent_a.sum()), int(n.sent_b.sum())]}))
"""


def numbered(args: argparse.Namespace) -> None:
    """This checkout's numbering against another's (module docstring)."""
    from prior.featurestore import open_store

    dataset = _dataset(open_store(args.store, create=False), args.dataset, args.split)
    for _ in range(args.rounds):
        for checkout in (str(ROOT), str(Path(args.against).resolve())):
            out = subprocess.run([sys.executable, "-c", _NUMBERED, checkout, args.store, dataset,
                                  args.split, str(args.calls)], capture_output=True, text=True, check=False)
            if out.returncode:
                raise SystemExit(f"numbered with {checkout} failed:\n{out.stderr[-3000:]}")
            print(out.stdout.strip().splitlines()[-1], flush=True)


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """moto's S3 API server as a process of its own on a free local port, up: its endpoint."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()


def _bucket(store: str, endpoint: str) -> tuple[str, dict[str, Any]]:
    """A new bucket at the S3 API ``endpoint`` holding a copy of ``store``: its URL and options."""
    import uuid

    import boto3
    import fsspec

    options = {"endpoint_url": endpoint, "key": "bench", "secret": "bench"}
    bucket = f"prior-bench-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="bench", aws_secret_access_key="bench",
                 region_name="us-east-1").create_bucket(Bucket=bucket)
    fsspec.filesystem("s3", **options).put(str(Path(store)) + "/", f"{bucket}/store/", recursive=True)
    return f"s3://{bucket}/store", options


def s3(args: argparse.Namespace) -> None:
    """The store local and on moto's S3 (module docstring)."""
    import logging
    import threading

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    threading.Thread(target=server.start, daemon=True).start()
    time.sleep(1.0)
    host, port = server.get_host_and_port()
    url, options = _bucket(args.store, f"http://{host}:{port}")
    try:
        local = run(args)
        print(json.dumps(local), flush=True)
        remote = run(argparse.Namespace(**{**vars(args), "store": url}), options)
        print(json.dumps(remote), flush=True)
    finally:
        server.stop()
    for name, r in (("local", local), ("s3 (moto)", remote)):
        print(f"{name}: first batch {r['first_batch_s']} s, {r['pairs_per_s']:,.0f} pairs/s, "
              f"{r['pairs_per_s'] / args.batch_size:,.1f} steps/s of batches of {args.batch_size}")


def fetched(args: argparse.Namespace) -> dict[str, Any]:
    """What a run fetches from the store on S3 (module docstring)."""
    from collections import Counter

    from prior.featurestore.fs import StoreFS

    counts: Counter[str] = Counter()
    real_bytes, real_range = StoreFS.read_bytes, StoreFS.read_range
    real_ranges = getattr(StoreFS, "read_ranges", None)  # (a checkout before 2026-12-04 has none)

    wait = args.latency_ms / 1000

    def read_bytes(fs: StoreFS, rel: str) -> bytes:
        time.sleep(wait)
        data = real_bytes(fs, rel)
        counts["whole_files"] += 1
        counts["whole_bytes"] += len(data)
        return data

    def read_range(fs: StoreFS, rel: str, offset: int, length: int) -> bytes:
        time.sleep(wait)
        data = real_range(fs, rel, offset, length)
        counts["ranges"] += 1
        counts["range_bytes"] += len(data)
        return data

    def read_ranges(fs: StoreFS, rel: str, spans: Any) -> list[bytes]:
        assert real_ranges is not None
        if len(spans) < 2:  # through read_range
            return list(real_ranges(fs, rel, spans))
        time.sleep(wait)  # the ranges go out together
        data = list(real_ranges(fs, rel, spans))
        counts["ranges"] += len(data)
        counts["range_bytes"] += sum(len(b) for b in data)
        counts["range_calls"] += 1
        return data

    with moto_server() as endpoint:
        url, options = _bucket(args.store, endpoint)
        counted = {"read_bytes": read_bytes, "read_range": read_range}
        if real_ranges is not None:
            counted["read_ranges"] = read_ranges
        real = {name: getattr(StoreFS, name) for name in counted}
        for name, fn in counted.items():
            setattr(StoreFS, name, fn)
        try:
            result = run(argparse.Namespace(**{**vars(args), "store": url}), options)
        finally:
            for name, fn in real.items():
                setattr(StoreFS, name, fn)
    requests = counts["whole_files"] + counts["ranges"]
    mib = (counts["whole_bytes"] + counts["range_bytes"]) / 2**20
    store_mib = sum(p.stat().st_size for p in Path(args.store).rglob("*") if p.is_file()) / 2**20
    return {**result, "store": str(args.store), "store_mib": round(store_mib, 1), "fetched_mib": round(mib, 1),
            "requests": requests, **{k: counts[k] for k in ("whole_files", "ranges", "range_calls")},
            "whole_mib": round(counts["whole_bytes"] / 2**20, 1), "range_mib": round(counts["range_bytes"] / 2**20, 1),
            "kib_per_pair": round(1024 * mib / max(result["pairs"], 1), 2), "latency_ms": args.latency_ms}


def fetched_table(args: argparse.Namespace) -> None:
    """The tables of ``fetched`` and ``s3`` lines (module docstring)."""
    rows: dict[tuple[str, str, int], list[dict[str, Any]]] = {}  # (label, commit, batches) → its runs
    for path in args.files:
        for line in Path(path).read_text().splitlines():
            if line.strip():
                d = json.loads(line)
                rows.setdefault((d.get("label", ""), str(d.get("commit", "")), int(d["batches"])), []).append(d)

    def some(values: list[float], fmt: str = ",.0f") -> str:
        return ", ".join(f"{v:{fmt}}" for v in values)

    def side(label: str, commit: str) -> str:
        return f"{label} ({commit})" if commit else label

    fetched = {k: v for k, v in rows.items() if "fetched_mib" in v[0] and not v[0].get("latency_ms")}
    for title, whole in (("One epoch", True), ("Part of an epoch", False)):
        chosen = {k: v for k, v in fetched.items() if (v[0]["pairs"] >= v[0]["split_pairs"]) == whole}
        if not chosen:
            continue
        print(f"{title}, one process:\n")
        print("| side | batches | fetched MiB | whole files (MiB) | ranges (requests in calls, MiB) | KiB per pair "
              "| first batch s | pairs/s (moto) |")
        print("|---|---|---|---|---|---|---|---|")
        for (label, commit, _), runs in chosen.items():
            d = runs[0]
            print(f"| {side(label, commit)} | {d['batches']:,} | {d['fetched_mib']:,.1f} | {d['whole_files']:,} "
                  f"({d['whole_mib']:,.1f}) | {d['ranges']:,} in {d['range_calls']:,} ({d['range_mib']:,.1f}) "
                  f"| {d['kib_per_pair']:.2f} | {some([r['first_batch_s'] for r in runs], '.2f')} "
                  f"| {some([r['pairs_per_s'] for r in runs])} |")
        print()
    delayed = {k: v for k, v in rows.items() if v[0].get("latency_ms")}
    if delayed:
        print("With a round trip added to each request (`--latency-ms`), one process:\n")
        print("| side | batches | ms a request | index s | first batch s | whole files | ranges |")
        print("|---|---|---|---|---|---|---|")
        for (label, commit, _), runs in delayed.items():
            d = runs[0]
            print(f"| {side(label, commit)} | {d['batches']:,} | {d['latency_ms']:g} | {some([r['index_s'] for r in runs], '.1f')} "
                  f"| {some([r['first_batch_s'] for r in runs], '.1f')} | {d['whole_files']:,} | {d['ranges']:,} |")
        print()
    sides: dict[tuple[str, str, int], dict[str, list[dict[str, Any]]]] = {}
    for (label, commit, batches), runs in rows.items():
        for where in ("local", "s3 (moto)"):
            if label.endswith(", " + where) and "fetched_mib" not in runs[0]:
                sides.setdefault((label[:-len(", " + where)], commit, batches), {})[where] = runs
    if sides:
        print("With the loader's workers (`s3`): pairs/s of the whole run; first batch s:\n")
        print("| side | batches | local store | S3 (moto) |")
        print("|---|---|---|---|")
        for (label, commit, batches), of in sides.items():
            cells = [f"{some([r['pairs_per_s'] for r in of.get(w, [])])} pairs/s; "
                     f"{some([r['first_batch_s'] for r in of.get(w, [])], '.2f')} s" for w in ("local", "s3 (moto)")]
            print(f"| {side(label, commit)} | {batches:,} | {cells[0]} | {cells[1]} |")


def make(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from synthetic_store import make_store  # bench/synthetic_store.py

    t0 = time.perf_counter()
    make_store(args.path, args.pairs, args.sentences, partition=args.partition,
               features=tuple(args.features.split(",")), ids=args.ids)
    print(f"{args.path}: {args.pairs} pairs in {time.perf_counter() - t0:.1f} s")


def _memory() -> dict[str, int]:
    """This process's RSS and peak RSS now (MiB)."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {"rss": int(fields["VmRSS"].split()[0]) // 1024, "peak": int(fields["VmHWM"].split()[0]) // 1024}


def index_memory(args: argparse.Namespace) -> dict[str, Any]:
    import prior.featurestore.numbered_split as numbered_split
    import prior.trainers.split_index as split_index
    from prior.featurestore import open_store
    from prior.trainers import backbones

    backbones.load_tokenizer(backbones.resolve_backbone("mini"))
    steps: list[dict[str, Any]] = [{"step": "imports and tokenizer", **_memory()}]

    def watched(module: Any, name: str) -> None:
        inner = getattr(module, name)

        def call(*a: Any, **k: Any) -> Any:
            before = _memory()
            out = inner(*a, **k)
            steps.append({"step": name, "before": before, **_memory()})
            return out

        setattr(module, name, call)

    for module, name in ((numbered_split, "numbered_split"), (numbered_split, "locate_keys"),
                         (split_index, "plan_feature"), (split_index, "_words")):
        watched(module, name)
    store = open_store(args.store, create=False)
    dataset = _dataset(store, args.dataset, args.split)
    index = split_index.index_split(store, dataset, args.split, feature=args.feature or None)
    steps.append({"step": "index built", **_memory()})
    time.sleep(5)
    steps.append({"step": "5 s later", **_memory()})
    locators = [index.words, *index.pair_locs.values(), *index.sentence_locs.values()]
    kept = sum(a.nbytes for a in (index.sent_a, index.sent_b, *(x for loc in locators for x in (loc.seg, loc.item))))
    return {"store": str(args.store), "split_pairs": len(index), "steps": steps,
            "index_arrays_mib": round(kept / 2**20, 1)}


def words(args: argparse.Namespace) -> dict[str, Any]:
    import pyarrow.compute as pc

    from prior.featurestore import open_store
    from prior.featurestore.segment_files import read_parquet, read_string_lists

    store = open_store(args.store, create=False)
    segments = list(store.segments("parses"))

    def strings() -> int:
        return sum(len(pc.dictionary_encode(pc.list_flatten(
            read_parquet(store.fs, s, "parses.parquet", ["words"]).column("words").combine_chunks())).dictionary)
                   for s in segments)

    def dictionaries() -> int:
        return sum(len(pc.list_flatten(g).dictionary)
                   for s in segments for g in read_string_lists(store.fs, s, "parses.parquet", "words"))

    strings()  # every file checked once, as a reader's first reads check them
    seconds: dict[str, list[float]] = {"strings": [], "dictionaries": []}
    distinct: dict[str, int] = {}
    for _ in range(args.rounds):
        for name, read in (("strings", strings), ("dictionaries", dictionaries)):
            start = time.perf_counter()
            distinct[name] = read()
            seconds[name].append(round(time.perf_counter() - start, 3))
    return {"store": str(args.store), "segments": len(segments), "sentences": sum(s.rows for s in segments),
            "seconds": seconds, "distinct_words_summed": distinct}


def _run_options(p: argparse.ArgumentParser) -> None:
    from prior.trainers.order import DEFAULT_PIECE, DEFAULT_WINDOW
    from prior.trainers.reader import DEFAULT_CACHE_MB

    p.add_argument("--dataset", default=None, help="Default: the store's only dataset with the split.")
    p.add_argument("--split", default="train")
    p.add_argument("--feature", default="dep", help="The store feature read (dep: DAFA's M_F; '' for none).")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--window", type=int, default=DEFAULT_WINDOW)
    p.add_argument("--piece", type=int, default=DEFAULT_PIECE)
    p.add_argument("--cache-mb", type=float, default=DEFAULT_CACHE_MB)
    p.add_argument("--steps", type=int, default=0, help="Stop after this many batches (0: one epoch).")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--store", required=True)
    _run_options(r)
    z = sub.add_parser("sizes")
    z.add_argument("stores", nargs="+")
    z.add_argument("--run-args", nargs=argparse.REMAINDER, default=[], help="Passed on to each run.")
    m = sub.add_parser("s3")
    m.add_argument("--store", required=True)
    _run_options(m)
    f = sub.add_parser("fetched")
    f.add_argument("--store", required=True)
    f.add_argument("--latency-ms", type=float, default=0.0, help="a round trip added to each request")
    _run_options(f)
    f.set_defaults(workers=0)
    t = sub.add_parser("fetched-table")
    t.add_argument("files", nargs="+")
    k = sub.add_parser("make")
    k.add_argument("path")
    k.add_argument("--pairs", type=int, default=100_000)
    k.add_argument("--sentences", type=int, default=63_000)
    k.add_argument("--partition", type=int, default=2000)
    k.add_argument("--features", default="dep")
    k.add_argument("--ids", action="store_true", help="Pair ids shaped like SNLI's pairID (default: null).")
    i = sub.add_parser("index-memory")
    i.add_argument("--store", required=True)
    i.add_argument("--dataset", default=None, help="Default: the store's only dataset with the split.")
    i.add_argument("--split", default="train")
    i.add_argument("--feature", default="dep", help="The store feature read ('' for none).")
    n = sub.add_parser("numbered")
    n.add_argument("--store", required=True)
    n.add_argument("--against", required=True, help="Another checkout of prior, timed in turn with this one.")
    n.add_argument("--dataset", default=None, help="Default: the store's only dataset with the split.")
    n.add_argument("--split", default="train")
    n.add_argument("--calls", type=int, default=5)
    n.add_argument("--rounds", type=int, default=3)
    y = sub.add_parser("summary")
    y.add_argument("files", nargs="+")
    w = sub.add_parser("words")
    w.add_argument("--store", required=True)
    w.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("PRIOR_NO_PROGRESS", "1")
    if args.cmd == "run":
        print(json.dumps(run(args)))
    elif args.cmd == "fetched":
        print(json.dumps(fetched(args)))
    elif args.cmd == "words":
        print(json.dumps(words(args)))
    elif args.cmd == "index-memory":
        print(json.dumps(index_memory(args)))
    else:
        {"sizes": sizes, "s3": s3, "make": make, "summary": summary, "numbered": numbered,
         "fetched-table": fetched_table}[args.cmd](args)


if __name__ == "__main__":
    main()
