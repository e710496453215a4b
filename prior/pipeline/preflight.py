"""Checks a build makes before its first commit, so that a build that cannot finish fails at
once, in one line naming the cause, and leaves nothing half-done behind.

- The store can be reached with the build's storage options: opening it reads (or, for a new
  store, writes) ``STORE.json``; a missing endpoint, missing credentials or an unknown bucket
  is one `StoreError` line, before anything else is read or written. A ``memory://`` store is
  refused when worker processes would write it (each process has its own memory).
- The store can be written: taking the build's lease writes (and reads back) its lease file
  (``prior.featurestore.lease``), before this module runs.
- An external scheduler (``--scheduler``) answers within ``$PRIOR_SCHEDULER_TIMEOUT`` seconds
  (default 5) and has workers.
- Every worker has what its tasks need (:func:`worker_problems`): the parser's model, with the
  same fingerprint as the driver's; each feature's resources (``check_resources()`` where a
  feature has one: WordNet for ``wup``); and the store, opened and written by the worker itself
  with the build's storage options (endpoint, credentials: the driver's, handed over, not the
  worker's environment), so a worker that cannot reach the store is named before any commit
  instead of failing mid-build. On a local cluster the workers share the driver's machine and
  environment, so the driver checks the feature resources itself and no cluster is started
  (a no-op rebuild stays fast).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from prior.errors import PriorError, ResourceError
from prior.hints import option
from prior.paths import positive_number

if TYPE_CHECKING:
    from distributed import Client

    from prior.featurestore.ref import StoreRef
    from prior.pipeline.features.base import Feature

ENV_TIMEOUT = "PRIOR_SCHEDULER_TIMEOUT"
DEFAULT_TIMEOUT = 5.0


def scheduler_timeout() -> float:
    """``$PRIOR_SCHEDULER_TIMEOUT`` in seconds (read on each call), else 5."""
    return positive_number(ENV_TIMEOUT, DEFAULT_TIMEOUT, "seconds")


def _short(exc: BaseException) -> str:
    """``exc`` on one line. Our own errors are kept whole (their last lines say what to do, e.g.
    WordNet's install line); another library's message is cut at :data:`MAX_FOREIGN` characters."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if isinstance(exc, PriorError) or len(text) <= MAX_FOREIGN else text[:MAX_FOREIGN] + " …"


MAX_FOREIGN = 600


def connect(address: str) -> Client:
    """A `distributed.Client` of the scheduler at ``address``; `ResourceError` when it does not
    answer within :func:`scheduler_timeout`."""
    from distributed import Client

    timeout = scheduler_timeout()
    try:
        return Client(address, timeout=f"{timeout}s")
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise ResourceError(f"cannot reach the Dask scheduler at {address} within {timeout:g} s ({_short(exc)}); "
                            f"start it, check the address, or leave out {option('scheduler')} to run a local cluster"
                            ) from None


def feature_problems(features: Sequence[Feature]) -> list[str]:
    """What this process lacks for ``features`` (each one's ``check_resources()``)."""
    problems = []
    for feature in features:
        try:
            feature.check_resources()
        except Exception as exc:  # noqa: BLE001 - reported, one line each
            problems.append(f"feature {feature.name}: {_short(exc)}")
    return problems


def worker_problems(store: StoreRef | str, lease: str, parser_spec: str, fingerprint: Mapping[str, Any],
                    features: Sequence[Feature]) -> list[str]:
    """Runs on a worker: what this process lacks to do its tasks (empty when nothing)."""
    from prior.featurestore import StoreRef, open_store
    from prior.featurestore.lease import probe_writable
    from prior.pipeline.parsers import fingerprint_of

    problems = []
    try:
        found = dict(fingerprint_of(parser_spec))
        if found != dict(fingerprint):
            problems.append(f"parser {parser_spec} differs from the driver's ({found} here, {dict(fingerprint)} there); "
                            "install the same model everywhere")
    except Exception as exc:  # noqa: BLE001 - reported
        problems.append(f"parser {parser_spec}: {_short(exc)}")
    problems += feature_problems(features)
    try:
        probe_writable(open_store(store, create=False).fs, lease)
    except Exception as exc:  # noqa: BLE001 - reported
        problems.append(f"store {StoreRef.of(store).location}: {_short(exc)}")
    return problems


def check_workers(client: Client, store: StoreRef | str, lease: str, parser_spec: str, fingerprint: Mapping[str, Any],
                  features: Sequence[Feature]) -> None:
    """`ResourceError` listing what the cluster's workers lack (or that it has none)."""
    if not client.scheduler_info().get("workers"):
        try:
            client.wait_for_workers(1, timeout=scheduler_timeout())
        except (TimeoutError, OSError):
            raise ResourceError(f"the Dask scheduler at {client.scheduler.address} has no workers; "
                                "start some (`dask worker ADDRESS`)") from None
    results = client.run(worker_problems, store, lease, parser_spec, dict(fingerprint), list(features))
    problems = [f"worker {address}: {p}" for address, found in sorted(results.items()) for p in found]
    if problems:
        raise ResourceError(f"{len(problems)} problem(s) found before anything was written: " + "; ".join(problems[:3])
                            + (f"; and {len(problems) - 3} more" if len(problems) > 3 else ""))


def check_local(features: Sequence[Feature]) -> None:
    """`ResourceError` naming what this machine lacks for ``features`` (local builds)."""
    if problems := feature_problems(features):
        raise ResourceError(f"{len(problems)} problem(s) found before anything was written: " + "; ".join(problems))
