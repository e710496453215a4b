"""What runs on a Dask worker (or in-process): one partition of parsing or of a feature.

Each call writes its results as one segment and commits it before returning, so finished
partitions survive a crash of the build. Parsers and features are set up once per worker
process and cached here, keyed by what identifies them (parser spec, entry key).
A failing batch is retried item by item so that one bad sentence costs one counted failure,
never the partition.

Every task gets a *guard*, ``(lease id, known segment ids)``: it writes under the build's lease
(``prior.featurestore.lease``), and right before computing it drops the keys that another build
committed since the driver planned the partition (segments of the same parse or entry that are
neither in ``known`` nor its own build's). That costs one catalog read per task and, only when
another build committed meanwhile, a read of the keys of its new segments.

Every task gets the build's store as its `StoreRef` (``prior.featurestore.ref``): a worker opens
the store with the options the driver resolved, never with options from its own environment.
A plain location (a direct call outside a build) reads ``$PRIOR_STORAGE_OPTIONS`` as
`open_store` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prior.errors import NotFoundError
from prior.featurestore import StoreRef, open_store
from prior.featurestore.catalog import Segment
from prior.featurestore.store import EntryInfo, Store
from prior.pipeline import startup
from prior.pipeline.parsers.base import Parse

_FEATURES: dict[tuple[str, str], Any] = {}
_process_ready = False


def _set_up_process() -> None:
    """Once per process: the start-up tuning of a build's own workers (prior/pipeline/startup.py)."""
    global _process_ready
    if not _process_ready:
        _process_ready = True
        startup.set_up_local_worker()


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


Guard = tuple[str | None, Sequence[str]]  # (lease id, segment ids known when the partition was planned)


def _committed_elsewhere(store: Store, kind: str, match: Callable[[Segment], bool], guard: Guard) -> set[str]:
    """Keys of segments that other builds committed after the partition was planned."""
    lease, known = guard
    known_ids = set(known)
    fresh = [s for s in store.segments(kind) if match(s) and s.id not in known_ids and not (lease and s.lease == lease)]
    return store.segment_keys(fresh) if fresh else set()


def parse_partition(store_ref: StoreRef | str, parser_spec: str, parse: str, fingerprint: Mapping[str, Any],
                    keys: Sequence[str], texts: Sequence[str], guard: Guard = (None, ()),
                    device: str = "auto") -> dict[str, Any]:
    """Parse and store one partition; ``device`` is where a biaffine model runs ("auto": this
    worker's GPU if it has one)."""
    from prior.pipeline.parsers import get_parser

    _set_up_process()
    store = open_store(store_ref, lease=guard[0])
    done = _committed_elsewhere(store, "parses", lambda s: s.target["parse"] == parse, guard)
    todo = [(k, t) for k, t in zip(keys, texts) if k not in done]
    skipped = len(keys) - len(todo)
    keys, texts = [k for k, _ in todo], [t for _, t in todo]
    if not keys:
        return {"done": 0, "failures": [], "skipped": skipped}
    parser = get_parser(parser_spec, device)
    try:
        parses: list[Parse | None] = list(parser.parse(texts))
        failures: list[tuple[str, str]] = []
    except Exception:  # noqa: BLE001 - isolate the bad sentence(s), below
        parses, failures = [], []
        for key, text in zip(keys, texts):
            try:
                parses.append(parser.parse([text])[0])
            except Exception as exc:  # noqa: BLE001
                parses.append(None)
                failures.append((key, _short(exc)))
    ok = [(k, p) for k, p in zip(keys, parses) if p is not None]
    # what the parser failed on is recorded with the parses: reads leave those pairs out
    store.write_parses(parse, fingerprint, [k for k, _ in ok], [p.to_record() for _, p in ok], spec=parser_spec,
                       skipped={k: "the parser failed on it" for k, _ in failures})
    return {"done": len(ok), "failures": failures, "skipped": skipped}


def _feature(feature: Any, entry_key: str) -> Any:
    """The set-up copy of ``feature`` this process keeps for its entry, unless its worker
    token (`FeatureBase.worker_token`: e.g. the words an `emb` vocabulary was cut to for one
    build) says it was set up for other work."""
    key = (entry_key, getattr(feature, "worker_token", lambda: "")())
    cached = _FEATURES.get(key)
    if cached is None:
        feature.setup()
        _FEATURES[key] = cached = feature
    return cached


def feature_partition(store_ref: StoreRef | str, feature: Any, target: Mapping[str, Any], keys: Sequence[str],
                      payload: tuple[str, Sequence[tuple[str, str]] | None], guard: Guard = (None, ())) -> dict[str, Any]:
    """Compute and store one partition of a feature. ``payload`` is ``(parse id, None)`` for a
    sentence feature (``keys`` are sentence keys) or ``(parse id, [(key_a, key_b), …])`` for a
    pair feature (``keys`` are pair keys); the parses are read from the store here."""
    _set_up_process()
    entry = EntryInfo.from_target(target)
    parse, pairs = payload
    store = open_store(store_ref, lease=guard[0])
    done = _committed_elsewhere(store, "feature", lambda s: s.target["entry"] == entry.key, guard)
    kept = [i for i, k in enumerate(keys) if k not in done]
    skipped = len(keys) - len(kept)
    keys = [keys[i] for i in kept]
    pairs = None if pairs is None else [pairs[i] for i in kept]
    if not keys:
        return {"done": 0, "failures": [], "skipped": skipped}
    feature = _feature(feature, entry.key)
    wanted = keys if pairs is None else list(dict.fromkeys(k for pair in pairs for k in pair))
    parses = {r["sent_key"]: Parse.from_record(r)
              for r in store.parses(wanted, parse=parse, cache=True).iter_rows(named=True)}
    if (missing := [k for k in wanted if k not in parses]):
        raise NotFoundError(f"{store.location}: parse {parse} lacks {len(missing)} sentence(s) of this "
                            f"partition, e.g. {missing[0]}")
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
    ok = [(k, r) for k, r in zip(keys, results) if r is not None]
    store.write_feature(entry, [k for k, _ in ok], [r for _, r in ok])
    return {"done": len(ok), "failures": failures, "skipped": skipped}
