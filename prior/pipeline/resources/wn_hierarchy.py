"""WordNet's hypernym hierarchy, precomputed once per database and shared by every process.

Wu-Palmer needs, per synset, its ancestors with their shortest distances and the minimum and
maximum depth of each (`prior.pipeline.features.wupalmer`). Building that per synset on demand cost a
build worker ≈ 0.6 s per 1,000 SNLI pairs (data lines parsed, hypernyms walked), and every
worker paid it again for the same vocabulary: the ``wup`` stage scaled 1.2× from 1 to 2
workers. This table holds the answer for all 117,659 synsets of WordNet 3.0 in flat arrays
(7.7 MB on disk). It is built from the four ``data.*`` files (≈ 1.1 s), written once per machine and
database under ``$PRIOR_HOME/cache/wordnet/<content id>/`` (``.npy`` files, no pickle) and
memory-mapped by every process that needs it, so a worker's first matrix costs lookups only.

What it holds, by synset id (ids follow the files: nouns, verbs, adjectives, adverbs, each in
offset order):

- ``file_pos`` (code of n, v, a, r: the data file) and ``offset``: the synset's address;
- ``ss_type``: its own part of speech (code of n, v, a, s, r);
- ``min_depth`` / ``max_depth``: nltk's ``min_depth()`` / ``max_depth()``;
- ``anc_ptr`` / ``anc_id`` / ``anc_dist``: its ancestors (itself included, at distance 0) over
  hypernym and instance-hypernym pointers, each with its shortest distance (nltk's
  ``_shortest_hypernym_paths``), in CSR form.

Pointers are nltk's synset pointers (source/target ``0000``) with symbols ``@`` and ``@i``,
which `WuPalmer` follows. A hypernym cycle (none in WordNet 3.0; nltk would recurse forever)
is a `ResourceError` naming the synset. The cache directory is written to a temporary sibling
and renamed into place under a file lock; a damaged or partial cache is rebuilt.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from prior.errors import ResourceError
from prior.paths import prior_home

FORMAT = 1
FILE_POS = ("n", "v", "a", "r")
SS_TYPES = ("n", "v", "a", "s", "r")
_FILE_NAMES = {"n": "data.noun", "v": "data.verb", "a": "data.adj", "r": "data.adv"}
_HYPERNYM_SYMBOLS = (b"@", b"@i")
_ARRAYS = ("file_pos", "offset", "ss_type", "min_depth", "max_depth", "anc_ptr", "anc_id", "anc_dist")

OpenFile = Callable[[str], IO[bytes]]


@dataclass(frozen=True)
class HierarchyTable:
    """The precomputed hierarchy (module docstring); ids index every array but ``anc_*``."""

    file_pos: np.ndarray   # uint8, code in FILE_POS
    offset: np.ndarray     # int64
    ss_type: np.ndarray    # uint8, code in SS_TYPES
    min_depth: np.ndarray  # int16
    max_depth: np.ndarray  # int16
    anc_ptr: np.ndarray    # int64, len = synsets + 1
    anc_id: np.ndarray     # int32
    anc_dist: np.ndarray   # int16
    wordnet: str           # the database's content id (`wordnet_version`)

    def __len__(self) -> int:
        return len(self.offset)

    def address_map(self) -> dict[tuple[str, int], int]:
        """(data file part of speech, offset) -> synset id."""
        return dict(zip(zip((FILE_POS[c] for c in self.file_pos.tolist()), self.offset.tolist()),
                        range(len(self))))

    def ancestors(self, synset_id: int) -> tuple[list[int], list[int]]:
        """Ancestor ids (the synset first) and their shortest distances."""
        lo, hi = int(self.anc_ptr[synset_id]), int(self.anc_ptr[synset_id + 1])
        return self.anc_id[lo:hi].tolist(), self.anc_dist[lo:hi].tolist()


# --------------------------------------------------------------------------- building
def _read_pointers(open_file: OpenFile, source: str) -> tuple[list[tuple[str, int, str]],
                                                              list[list[tuple[str, int]]]]:
    """Every synset's (file pos, offset, ss_type) and hypernym targets, from the data files."""
    synsets: list[tuple[str, int, str]] = []
    parents: list[list[tuple[str, int]]] = []
    for file_pos in FILE_POS:
        name = f"{source}/{_FILE_NAMES[file_pos]}"
        with open_file(_FILE_NAMES[file_pos]) as fh:
            data = fh.read()
        for number, line in enumerate(data.split(b"\n"), start=1):
            if not line or line[:1] == b" ":  # licence header lines start with two spaces
                continue
            tokens = line.split(b"|", 1)[0].split()
            try:
                offset = int(tokens[0])
                ss_type = tokens[2].decode("ascii")
                at = 4 + 2 * int(tokens[3], 16)
                n_pointers = int(tokens[at])
                targets = []
                for i in range(at + 1, at + 1 + 4 * n_pointers, 4):
                    symbol, target, target_pos, ids = tokens[i:i + 4]
                    if symbol in _HYPERNYM_SYMBOLS and ids == b"0000":
                        pos = target_pos.decode("ascii")
                        targets.append(("a" if pos == "s" else pos, int(target)))
            except (ValueError, IndexError, UnicodeDecodeError) as exc:
                raise ResourceError(f"WordNet file {name}, line {number}: malformed synset line ({exc})") from None
            if ss_type not in SS_TYPES or (ss_type != file_pos and not (file_pos == "a" and ss_type == "s")):
                raise ResourceError(f"WordNet file {name}, line {number}: part of speech {ss_type!r}")
            synsets.append((file_pos, offset, ss_type))
            parents.append(targets)
    return synsets, parents


def _flatten(dist: list[dict[int, int] | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each synset's ancestors (itself first) and their distances as CSR arrays: pointers,
    ancestor ids, distances."""
    counts = np.fromiter((len(d) for d in dist), np.int64, len(dist))  # type: ignore[arg-type]
    anc_ptr = np.zeros(len(dist) + 1, np.int64)
    np.cumsum(counts, out=anc_ptr[1:])
    anc_id = np.empty(int(anc_ptr[-1]), np.int32)
    anc_dist = np.empty(int(anc_ptr[-1]), np.int16)
    for s, d in enumerate(dist):
        lo = int(anc_ptr[s])
        assert d is not None
        anc_id[lo:lo + len(d)] = list(d)       # itself first (inserted first)
        anc_dist[lo:lo + len(d)] = list(d.values())
    return anc_ptr, anc_id, anc_dist


def build_table(open_file: OpenFile, wordnet: str, source: str = "WordNet") -> HierarchyTable:
    """The table of the database whose files ``open_file(name)`` opens (binary); ``source``
    (the directory) names the files in errors."""
    synsets, targets = _read_pointers(open_file, source)

    def where(s: int) -> str:
        p, o, _ = synsets[s]
        return f"WordNet file {source}/{_FILE_NAMES[p]}, synset {o:08d}"

    ids = {(p, o): i for i, (p, o, _) in enumerate(synsets)}
    parents: list[list[int]] = []
    for s, ts in enumerate(targets):
        try:
            parents.append(sorted({ids[t] for t in ts}))
        except KeyError as exc:
            raise ResourceError(f"{where(s)}: hypernym {exc.args[0]} has no synset line") from None
    n = len(synsets)
    dist: list[dict[int, int] | None] = [None] * n
    min_depth = np.zeros(n, np.int16)
    max_depth = np.zeros(n, np.int16)
    on_path = bytearray(n)
    for root in range(n):
        if dist[root] is not None:
            continue
        stack = [(root, False)]
        while stack:  # iterative post-order over parents
            s, expanded = stack.pop()
            if dist[s] is not None:
                continue
            if not expanded:
                if on_path[s]:
                    raise ResourceError(f"{where(s)}: its hypernyms lead back to it (a cycle)")
                on_path[s] = 1
                stack.append((s, True))
                stack.extend((q, False) for q in parents[s] if dist[q] is None)
                continue
            own: dict[int, int] = {s: 0}
            for q in parents[s]:
                dq = dist[q]
                if dq is None:  # a parent still on the path: a cycle
                    raise ResourceError(f"{where(s)}: its hypernyms lead back to it (a cycle)")
                for c, steps in dq.items():
                    if steps + 1 < own.get(c, 1 << 30):
                        own[c] = steps + 1
            if parents[s]:
                min_depth[s] = 1 + min(int(min_depth[q]) for q in parents[s])
                max_depth[s] = 1 + max(int(max_depth[q]) for q in parents[s])
            dist[s] = own
            on_path[s] = 0
    anc_ptr, anc_id, anc_dist = _flatten(dist)
    return HierarchyTable(
        file_pos=np.array([FILE_POS.index(p) for p, _, _ in synsets], np.uint8),
        offset=np.array([o for _, o, _ in synsets], np.int64),
        ss_type=np.array([SS_TYPES.index(t) for _, _, t in synsets], np.uint8),
        min_depth=min_depth, max_depth=max_depth, anc_ptr=anc_ptr, anc_id=anc_id, anc_dist=anc_dist,
        wordnet=wordnet)


# --------------------------------------------------------------------------- on disk
def cache_dir(wordnet: str) -> Path:
    """``$PRIOR_HOME/cache/wordnet/<content id>/hierarchy-v<FORMAT>`` (resolved now)."""
    safe = wordnet.replace(":", "-").replace("/", "-")
    return prior_home() / "cache" / "wordnet" / safe / f"hierarchy-v{FORMAT}"


def save_table(table: HierarchyTable, directory: Path) -> None:
    """Write the arrays and a meta.json into a fresh sibling, then rename it into place."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".hierarchy-", dir=directory.parent))
    try:
        for name in _ARRAYS:
            np.save(staging / f"{name}.npy", getattr(table, name), allow_pickle=False)
        meta = {"format": FORMAT, "wordnet": table.wordnet, "synsets": len(table),
                "ancestors": int(table.anc_ptr[-1])}
        (staging / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        if directory.exists():  # damaged: replaced
            shutil.rmtree(directory)
        os.replace(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def load_table(directory: Path, wordnet: str) -> HierarchyTable:
    """The table in ``directory`` (memory-mapped); ResourceError if it is missing or damaged."""
    try:
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            raise ValueError("meta.json is not an object")
        arrays = {name: np.load(directory / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _ARRAYS}
    except (OSError, ValueError, EOFError) as exc:
        raise ResourceError(f"WordNet hierarchy cache {directory} is unreadable: {exc}") from None
    n = meta.get("synsets")
    problems = [name for name in ("file_pos", "offset", "ss_type", "min_depth", "max_depth")
                if arrays[name].shape != (n,)]
    if not isinstance(n, int) or arrays["anc_ptr"].shape != (n + 1,):
        problems.append("anc_ptr")
    elif not (arrays["anc_id"].shape == arrays["anc_dist"].shape == (int(arrays["anc_ptr"][-1]),)
              == (meta.get("ancestors"),)):
        problems.append("anc_id/anc_dist")
    if meta.get("format") != FORMAT or meta.get("wordnet") != wordnet or problems:
        raise ResourceError(f"WordNet hierarchy cache {directory} does not match "
                            f"(format {meta.get('format')}, wordnet {meta.get('wordnet')}, bad {problems})")
    return HierarchyTable(**arrays, wordnet=wordnet)


_tables: dict[str, HierarchyTable] = {}
_tables_lock = threading.Lock()


def hierarchy_table(open_file: OpenFile, wordnet: str, source: str = "WordNet") -> HierarchyTable:
    """The table of database ``wordnet``: from this process, else from the cache on disk, else
    built from the files (under a file lock, so concurrent workers build it once)."""
    with _tables_lock:
        table = _tables.get(wordnet)
        if table is not None:
            return table
        directory = cache_dir(wordnet)
        try:
            table = load_table(directory, wordnet)
        except ResourceError:
            from prior.pipeline.resources.wordnet import file_lock

            directory.parent.mkdir(parents=True, exist_ok=True)
            with file_lock(directory.parent / ".hierarchy.lock"):
                try:  # another process may have built it while we waited
                    table = load_table(directory, wordnet)
                except ResourceError:
                    save_table(build_table(open_file, wordnet, source), directory)
                    table = load_table(directory, wordnet)
        _tables[wordnet] = table
        return table


def table_for(wn: Any, wordnet: str | None = None) -> HierarchyTable:
    """The table of a loaded reader, ours or nltk's; ``wordnet`` is its content id
    (`wordnet_version`), computed from the files when not given."""
    from prior.pipeline.resources.wordnet import file_opener, reader_files, wordnet_version

    location = reader_files(wn)
    return hierarchy_table(file_opener(location), wordnet or wordnet_version(wn), str(location))
