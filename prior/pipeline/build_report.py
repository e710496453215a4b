"""What a build reports: per split what was read, per stage what was computed, reused or failed,
the entries it made, and notes (OOV rates, an IDF table, what it tidied, workers it lost).
Plain records: the command line prints them, the no-op record (`noop.py`) stores them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SplitReport:
    split: str
    location: str
    pairs: int
    new_rows: int
    skipped: dict[str, int]
    skip_examples: list[str]
    labels: dict[str, int] = field(default_factory=dict)  # a file's classes and their counts
    # where the file was found: "path", "data_dir", "bundled" or "hub" ("" when not known)
    origin: str = ""
    # for a bundled slice: the usable pairs of the full release's split (the slice has ``pairs``)
    release_pairs: int | None = None

    @property
    def slice_note(self) -> str | None:
        """``bundled slice: 200 of 4,500 pairs`` for a split read from a bundled slice."""
        if self.origin != "bundled":
            return None
        whole = f" of {self.release_pairs:,}" if self.release_pairs else ""
        return f"bundled slice: {self.pairs:,}{whole} pairs"


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
    # Dask workers that left the cluster while this build ran (their address), and the
    # partitions that ran again because of it (``parse 3/8``, ``feature wup 1/4``)
    lost_workers: list[str] = field(default_factory=list)
    recomputed: list[str] = field(default_factory=list)
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
