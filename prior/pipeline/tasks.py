"""What the build's driver and its workers hand each other: one :class:`PartitionTask` per
partition (:class:`ParseTask` or :class:`FeatureTask`), one :class:`PartitionResult` back.

Plain frozen dataclasses, pickled by Dask to the workers (`prior.pipeline.worker` runs them).
A task carries its store as a `StoreRef` (location and the storage options the driver resolved:
a worker never reads its own environment's) and a *guard*: the build's lease, under which it
writes, and the segments of its parse or entry that were committed when the partition was
planned (``known``). Right before computing and again right before committing, a task drops
the keys of segments committed since that are not its own build's siblings: another build's,
and an earlier copy of this very task (``token``), which Dask runs again when the worker that
ran it was lost after its commit. So a partition's rows are committed once however often it
runs (docs/build.md, "A lost worker").
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from prior.featurestore import StoreRef
from prior.featurestore.parse_columns import ANNOTATIONS
from prior.pipeline.features.base import Feature


@dataclass(frozen=True, kw_only=True)
class PartitionTask(ABC):
    """One partition of a stage: its store, its keys and its guard."""

    store: StoreRef
    keys: tuple[str, ...]
    lease: str | None = None  # the build's lease: writes are claimed under it
    known: tuple[str, ...] = ()  # segment ids of this parse/entry when the partition was planned
    label: str = ""  # how the report names it: "parse 3/8", "feature wup 1/4"
    #: recorded with its segment: the splits the build read (`BuildRun.record`)
    record: dict[str, Any] = field(default_factory=dict)

    @property
    @abstractmethod
    def stage(self) -> str:
        """What the partition computes: its parse or its feature entry."""

    @property
    def token(self) -> str:
        """The partition's identity, recorded with its segment: what it computes (stage, parse
        or entry) and its keys; the same for every copy of the task Dask runs."""
        h = hashlib.blake2b(self.stage.encode(), digest_size=16)
        for key in self.keys:
            h.update(b"\0" + key.encode())
        return h.hexdigest()


@dataclass(frozen=True, kw_only=True)
class ParseTask(PartitionTask):
    """Parse ``texts`` (one per key) with ``parser`` and store them as parse ``parse``."""

    parser: str  # the parser spec (`prior.parser_spec`)
    parse: str  # the parse id
    fingerprint: dict[str, Any]  # the parser's identity, recorded with the parses
    texts: tuple[str, ...]
    device: str = "auto"  # where a biaffine model runs ("auto": this worker's GPU if it has one)
    #: the annotations beyond words, heads and relations that the build's features read (closed
    #: under what they are made from: `prior.pipeline.parsers.annotations.closure`)
    annotations: tuple[str, ...] = ANNOTATIONS

    @property
    def stage(self) -> str:
        held = "" if set(self.annotations) == set(ANNOTATIONS) else f" with {','.join(sorted(self.annotations)) or 'none'}"
        return f"parse {self.parse}{held}"


@dataclass(frozen=True, kw_only=True)
class FeatureTask(PartitionTask):
    """Compute ``feature`` for ``keys`` and store them in its entry (``target``). A sentence
    feature's keys are sentence keys (``pairs`` None); a pair feature's are pair keys, with
    ``pairs`` their (key_a, key_b). The parses are read from the store by the worker."""

    feature: Feature
    target: dict[str, Any]  # the entry's record (`EntryInfo.target`)
    parse: str
    pairs: tuple[tuple[str, str], ...] | None = None

    @property
    def stage(self) -> str:
        return f"feature {self.target['entry']}"


@dataclass(frozen=True)
class PartitionResult:
    """What a partition did: items stored (``done``), left to another build or an earlier copy of
    this task (``skipped``), and failed items as (key, one-line reason)."""

    done: int = 0
    skipped: int = 0
    failures: tuple[tuple[str, str], ...] = ()
    # an earlier copy of this task had committed (some of) it: this run is a rerun after the
    # worker that ran it was lost, and kept its keys once
    rerun: bool = False

    @property
    def settled(self) -> int:
        """Items this partition finished one way or another (for a progress bar)."""
        return self.done + self.skipped + len(self.failures)
