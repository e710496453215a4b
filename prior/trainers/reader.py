"""Reading any pairs of an indexed split: word pieces and feature values, from the store, as
the run asks for them.

A :class:`SplitReader` turns positions of a split (`prior.trainers.split_index.SplitIndex`)
into a `prior.trainers.data.PairData` holding exactly those pairs, in that order: a training
batch, or a whole evaluation split. What it reads it keeps in bounded caches
(`prior.trainers.caches`), so memory follows the settings, never the split's size:

- **pair values** (a `dep` or `wup` matrix per pair) are read a *piece* at a time: the
  values of ``piece`` consecutive pairs of the split, from the segments that hold them, only
  those items' pieces of the flat arrays decompressed (`prior.featurestore.segment_files.read_items`).
  A shuffle window draws its pairs from a few pieces (`prior.trainers.order`), so each piece
  is read about once per window. On an object store a segment's array files are kept as
  fetched too (an eighth of the budget, out of the sentences' shares): every piece of the segment
  reads them, and each fetch is a round trip there (a local disk's page cache keeps them); a
  large shard (a compacted segment's) is kept as a handle read by byte ranges, and a window's
  pieces are read together, their ranges fetched at once (`_read_pieces`);
- **sentences**: their words, read a parse segment's word column at a time (row group by row
  group, as the Parquet dictionary of their strings: no string made per word,
  `prior.featurestore.segment_files.read_string_lists`) and kept as the words' numbers
  (:class:`SegmentWords`: 4 bytes a word, where the column of strings takes about 11, and a
  split with about as many sentences as pairs, as SNLI's, did not fit a cache of strings), and
  their word pieces,
  assembled from each distinct word's pieces (every word tokenized once per reader, by the
  tokenizer's backend: `prior.trainers.tokens.WordPieces`); their sentence values (SDOI masks,
  tf-idf weights, embedding ids), read a feature segment at a time.

The cache bounds are set in bytes (``cache_mb``, split between the caches; the words' pieces
are bounded by a count of words); a value is read again when it was dropped. The split is
fixed at the start; when a cache then reads again what it dropped while others hold every
value the split can ask of them, those lend it the rest of their shares (`lend_spare`: the
sum stays ``cache_mb``), and only what still goes round after that is warned of. Most of the
budget goes to the sentences' words and values: a window's pairs draw their sentences from
every segment of the split, window after window, while a piece of pair values is read about
once an epoch (its cache keeps the pieces two lanes' parts of a window share, and those of an
evaluation read batch by batch: a piece holds four batches of consecutive pairs). A read of one
batch (``keep=False``: a lane's first, or one across two windows) uses a cache where it holds
all the read needs, else reads the batch's own items and words, keeping nothing. Arrow arrays
are made and read through `prior.featurestore.tensors` (pyarrow's own conversions import
pandas, about a second of a loader worker's first batch). A reader belongs to one process: after a
fork (a loader worker) it reaches the store through a handle of its own.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from prior.featurestore.catalog import Segment
from prior.featurestore.checked import CheckedRanges
from prior.featurestore.fs import StoreFS
from prior.featurestore.segment_files import (
    array_sources,
    check_large_shards,
    index_columns,
    indexed_items,
    read_arrays,
    read_items,
    read_parquet,
    read_string_lists,
)
from prior.featurestore.store import EntryInfo
from prior.featurestore.tensors import arrow_array, numpy_array
from prior.hints import option
from prior.layouts.ragged import Ragged, item_ranges, item_starts
from prior.layouts.views import column_name
from prior.trainers.caches import LruCache, lend_spare
from prior.trainers.order import DEFAULT_PIECE
from prior.trainers.pair_data import PairData
from prior.trainers.split_index import Locator, SplitIndex
from prior.trainers.tokens import Pieces, WordPieces, assemble, bert_pair_layout, encode_each

log = logging.getLogger(__name__)

#: megabytes a reader keeps of what it read (word pieces, values of pieces and segments)
DEFAULT_CACHE_MB = 256


def narrow(values: np.ndarray) -> np.ndarray:
    """``values`` (int64) as int32 when every one fits, else as they are."""
    if len(values) == 0 or (int(values.min()) >= -(2**31) and int(values.max()) < 2**31):
        return values.astype(np.int32)
    return values


def _ragged_bytes(parts: dict[str, Ragged]) -> int:
    return sum(r.values.nbytes + 3 * 8 * len(r) for r in parts.values())


def _run(source: Ragged, items: np.ndarray) -> Ragged:
    """Items ``items`` of ``source``: a view of its values when they are consecutive items stored
    one after the other (a piece's pairs, read in order), else a compact copy."""
    lo, hi = (int(items[0]), int(items[-1]) + 1) if len(items) else (0, 0)
    if hi - lo == len(items) and len(items) and bool((np.diff(items) == 1).all()):
        sizes = source.rows[lo:hi].astype(np.int64) * np.where(source.cols[lo:hi] < 0, 1, source.cols[lo:hi])
        offsets = source.offsets[lo:hi].astype(np.int64)
        if bool((offsets[1:] - offsets[:-1] == sizes[:-1]).all()):
            start = int(offsets[0])
            return Ragged(source.values[start:start + int(sizes.sum())], offsets - start,
                          source.rows[lo:hi].astype(np.int64), source.cols[lo:hi].astype(np.int64))
    return source.take(items)


def gather(sources: Sequence[Ragged], which: np.ndarray, item: np.ndarray) -> Ragged:
    """Item ``item[k]`` of ``sources[which[k]]`` for every k, as one compact `Ragged`: runs of
    consecutive items as views, joined once, when the items come source by source (a window's
    sorted pairs, a piece's rows); else item by item for a batch's few, by one vectorized take
    per source for many."""
    if len(item) and bool((which[1:] >= which[:-1]).all()):  # in source order (a window's sorted pairs)
        bounds = np.searchsorted(which, np.arange(len(sources) + 1))
        runs = [_run(sources[w], item[lo:hi]) for w, (lo, hi) in enumerate(itertools.pairwise(bounds)) if hi > lo]
        return runs[0] if len(runs) == 1 else Ragged.concat(runs)
    if len(item) >= max(256, 16 * len(sources)):
        order = np.argsort(which, kind="stable")
        bounds = np.searchsorted(which[order], np.arange(len(sources) + 1))
        parts = [sources[w].take(item[order[lo:hi]]) for w, (lo, hi) in enumerate(itertools.pairwise(bounds))]
        back = np.empty(len(order), np.int64)
        back[order] = np.arange(len(order))
        return Ragged.concat(parts).take(back)
    views, rows, cols = [], np.empty(len(item), np.int64), np.empty(len(item), np.int64)
    for k, (w, i) in enumerate(zip(which.tolist(), item.tolist())):
        src = sources[w]
        o, r, c = int(src.offsets[i]), int(src.rows[i]), int(src.cols[i])
        views.append(src.values[o:o + r * (c if c >= 0 else 1)])
        rows[k], cols[k] = r, c
    dtype = sources[0].values.dtype if sources else np.float32
    values = np.concatenate(views) if views else np.zeros(0, dtype=dtype)
    return Ragged(values, item_starts(rows * np.where(cols < 0, 1, cols)), rows, cols)


class SplitReader:
    """Pairs of one indexed split as `PairData` (module docstring)."""

    def __init__(self, index: SplitIndex, tokenizer: Any, max_length: int, *, piece: int = DEFAULT_PIECE,
                 cache_mb: float = DEFAULT_CACHE_MB, features: str = "stored") -> None:
        self.index, self.tokenizer, self.max_length, self.piece = index, tokenizer, max_length, piece
        self.features = features  # "neutral": every read's feature replaced by its neutral value
        self.layout = bert_pair_layout(tokenizer) if max_length > 3 else None
        self.pad = int(tokenizer.pad_token_id or 0)
        budget = int(cache_mb * 1024 * 1024)
        self.cache_mb = cache_mb
        self._warned = False  # `_check_fit` has warned (in this process)
        self._fs: StoreFS | None = None
        self._pid = -1
        remote = not self.fs.local
        eighth, sixteenth = budget // 8, budget // 16
        sentence_share = 3 * eighth if not remote else 5 * sixteenth
        self.words = WordPieces(tokenizer)
        self._generation = self.words.generation  # the word numbers the parses cache holds
        self._keep_words = True  # False once the split's words pass the word pieces' bound
        # a parse segment's sentences as word numbers (42.5 MiB for 556k synthetic sentences of
        # 6-30 words)
        self.parses: LruCache[SegmentWords] = LruCache(sentence_share, _words_bytes)
        self.segments: LruCache[dict[str, Ragged]] = LruCache(sentence_share, _ragged_bytes)
        # a pair entry's segment offsets and shapes, compact: every piece of the segment reads
        # them, at any time of the epoch, so they are kept for the split's every segment (12 MiB
        # for DAFA's dep at 500k pairs)
        self.indexes: LruCache[dict[str, np.ndarray]] = LruCache(eighth, _arrays_bytes)
        # on an object store, a pair entry's segment files as fetched: every piece the segment
        # holds reads them, and each is a round trip there (a local disk's page cache keeps
        # them); a large shard as read by ranges (`array_sources`: its index kept), and the
        # compressed pieces fetched from it (a piece of the split takes part of one, and the
        # others are read by other windows)
        self.files: LruCache[dict[str, bytes | CheckedRanges] | bytes] | None = (
            LruCache(eighth, _fetched_bytes) if remote else None)
        shares = 2 * sentence_share + eighth + (eighth if remote else 0)
        self.pieces: LruCache[dict[str, Ragged]] = LruCache(budget - shares, _ragged_bytes)
        # each watched cache's share as set (a share lent to by `_check_fit` grows), and the
        # segments each locator's keys lie in (`_used_segments`); by name, not id: a reader is
        # pickled for a spawned loader worker
        self._shares = {name: cache.max_bytes for name, cache in self._watched()}
        self._used: dict[tuple[str, str], list[int]] = {}
        self._lend_at = 0.5  # `_check_fit` lends again once the caches' reads again reach twice this

    @property
    def fs(self) -> StoreFS:
        """This process's handle on the store (a forked worker opens its own)."""
        if self._fs is None or self._pid != os.getpid():
            self._fs, self._pid = StoreFS(self.index.ref), os.getpid()
        return self._fs

    def check_shards(self) -> int:
        """On an object store, check the large shards of the split's feature entries now, in
        this process (`check_large_shards`): loader workers forked afterwards inherit what it
        checked, where each would otherwise fetch every one of them to check it before its
        first batch. Returns how many it checked (0 on a local disk)."""
        if self.files is None or self.index.plan is None:
            return 0
        checked = 0
        for info in self.index.plan.entries:
            locs = self.index.pair_locs if info.scope == "pair" else self.index.sentence_locs
            for segment in locs[info.key].segments:
                checked += len(check_large_shards(self.fs, segment, info.components))
        return checked

    # ------------------------------------------------------------------ pairs
    def read(self, positions: np.ndarray | Sequence[int], *, keep: bool = True) -> PairData:
        """The pairs at ``positions`` of the split, in that order. ``keep`` False: a read of one
        batch, which should not wait for whole pieces and segments to be read and kept (a
        lane's first batch, whose 32 pairs lie in 32 pieces and as many segments): of what the
        cache does not hold, only the batch's own items and words are read, and nothing is
        kept."""
        index = self.index
        pos = np.asarray(positions, dtype=np.int64)
        n = len(pos)
        sentences, inverse = np.unique(np.concatenate([index.sent_a[pos], index.sent_b[pos]]), return_inverse=True)
        ia, ib = inverse[:n], inverse[n:]
        if self.layout is not None:
            pieces, counts = self._pieces(sentences, keep)
            encoded = assemble(pieces, ia, ib, self.max_length, self.layout, self.pad)
        else:  # a tokenizer without BERT's pair layout: its own pair encoding
            words = self._word_lists(sentences, keep)
            encoded = encode_each(self.tokenizer, [words[i] for i in ia], [words[i] for i in ib], self.max_length)
            counts = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
        source = None
        if index.plan is not None:
            source = index.plan.source(self._values(pos, sentences, ia, ib, keep))
        if keep:
            self._check_fit()
        labels = None if index.labels is None else index.labels[pos]
        data = PairData(dataset=index.dataset, split=index.split, labels=labels, label_kind=index.label_kind,
                        label_names=index.label_names, encoded=encoded, source=source,
                        fingerprint=dict(index.fingerprint), rows=np.arange(n, dtype=np.int64),
                        word_counts=np.stack([counts[ia], counts[ib]], axis=1).reshape(-1, 2))
        return data if self.features == "stored" else data.with_features(self.features)

    def _check_fit(self) -> None:
        """When a cache reads again what it dropped, lend it what the complete caches do not use
        (`_complete`, `lend_spare`: the bound stays ``cache_mb``; tried again each time its
        reads again double); when one goes round more than it holds and there is nothing left
        to lend, warn once (per process). The sentences' words and values: a window draws its
        sentences from every segment of the split, so once they pass their share, every window
        reads them again (a split of 1M pairs over 1.2M sentences at the default 256 MB: half
        the pairs per second of 500k; bench/RESULTS.md, "The loader at 1M pairs"). On an object
        store, the pair values' files and pieces as fetched: every window fetches them again (a
        compacted 500k-pair store on moto: 62 MiB of pieces against a share of 32; "A compacted
        store on S3"). The line names what does not fit and the ``--cache-mb`` that would hold
        what was read so far of each."""
        if self._warned:
            return
        again = [(what, cache) for what, cache in self._watched() if cache.reloads]
        reloads = sum(cache.reloads for _, cache in again)
        if reloads >= 2 * self._lend_at:
            lent = lend_spare([cache for _, cache in again], self._complete())
            self._lend_at = 0.5 if lent else reloads  # lent: the takers count afresh
            if lent:
                log.debug(f"loader: {lent / 2**20:.1f} MiB lent to the {_listed([w for w, _ in again])}")
                return
        over = [(what, cache) for what, cache in again if cache.thrashing]
        if not over:
            return
        self._warned = True
        seen = sum(sum(cache.seen.values()) for _, cache in over)
        need = 64 * max(math.ceil(self.cache_mb * sum(c.seen.values()) / max(self._shares[what], 1) / 64 * 1.25)
                        for what, c in over)
        shares = sum(cache.max_bytes for _, cache in over)
        log.warning(f"loader: the {_listed([what for what, _ in over])} of {self.index.dataset}/"
                    f"{self.index.split} ({seen / 2**20:.0f} MiB read so far) do not fit their share of the cache "
                    f"({shares / 2**20:.0f} MiB of {option('cache_mb', f'{self.cache_mb:g}')}): every window reads "
                    f"them again, and the loader slows; {option('cache_mb', str(need))} or more keeps them")

    def _complete(self) -> list[LruCache[Any]]:
        """The caches of the sentences' words and values and of the pair entries' offsets that
        hold a value for every segment the split reads them from, none of them read twice: what
        they hold is all they will need, and the rest of their share can be lent."""
        index, used = self.index, self._used_segments
        plan = index.plan.entries if index.plan is not None else ()
        wanted: list[tuple[LruCache[Any], list[Hashable]]] = [
            (self.parses, [(s, self._generation) for s in used(("words", ""), index.words)] if self._keep_words else []),
            (self.segments, [(i.key, s) for i in plan if i.scope != "pair"
                             for s in used(("sentence", i.key), index.sentence_locs[i.key])]),
            (self.indexes, [(index.pair_locs[i.key].segments[s].id, i.components) for i in plan
                            if i.scope == "pair" for s in used(("pair", i.key), index.pair_locs[i.key])])]
        return [cache for cache, keys in wanted
                if keys and cache.reloads == 0 and all(k in cache for k in keys)]

    def _used_segments(self, name: tuple[str, str], loc: Locator) -> list[int]:
        """The segments (ordinals in ``loc.segments``) the split's keys lie in, found once."""
        got = self._used.get(name)
        if got is None:
            got = self._used[name] = np.unique(loc.seg).tolist()
        return got

    def _watched(self) -> list[tuple[str, LruCache[Any]]]:
        """The caches `_check_fit` lends to and warns of, by what they hold."""
        caches = (("words", self.parses), ("sentence values", self.segments), ("pair values' offsets", self.indexes),
                  ("fetched pair values", self.files))
        return [(what, cache) for what, cache in caches if cache is not None]

    def _values(self, pos: np.ndarray, sentences: np.ndarray, ia: np.ndarray, ib: np.ndarray,
                keep: bool = True) -> dict[str, Ragged]:
        """The feature entries' values for the pairs (frame column → one item per pair)."""
        assert self.index.plan is not None
        values: dict[str, Ragged] = {}
        for info in self.index.plan.entries:
            if info.scope == "pair":
                for comp, items in self._pair_items(info, pos, keep).items():
                    values[column_name(info.name, comp)] = items
                continue
            for comp, items in self._sentence_items(info, sentences, keep).items():
                values[column_name(info.name, comp) + "_a"] = items.take(ia)
                values[column_name(info.name, comp) + "_b"] = items.take(ib)
        return values

    def _pair_items(self, info: EntryInfo, pos: np.ndarray, keep: bool = True) -> dict[str, Ragged]:
        """A pair entry's items for the pairs at ``pos``, through the cached pieces; ``keep``
        False (`read`): the pieces held, and of the others only the items asked for (a batch's
        pairs lie in as many pieces as it has pairs)."""
        pieces, local = np.divmod(pos, self.piece)
        if not keep and not all((info.key, int(p)) in self.pieces for p in np.unique(pieces).tolist()):
            loc = self.index.pair_locs[info.key]
            return self._items(info, loc, loc.seg[pos], loc.item[pos])
        wanted, which = np.unique(pieces, return_inverse=True)
        read = self._read_pieces(info, [p for p in wanted.tolist() if (info.key, p) not in self.pieces])
        loaded = [read[p] if p in read else self.pieces.get((info.key, p), partial(self._read_piece, info, p))
                  for p in wanted.tolist()]
        return {c: gather([part[c] for part in loaded], which, local) for c in info.components}

    def _read_pieces(self, info: EntryInfo, pieces: list[int]) -> dict[int, dict[str, Ragged]]:
        """On an object store, pieces ``pieces`` of a pair entry (each kept as `_read_piece`
        keeps it), read together: one read per segment for all of them, whose ranges a shard
        read by ranges fetches at once (`prior.featurestore.tensors`), so a window's pieces cost
        a few round trips, not one per piece. On a local disk (none read here: `_read_piece`
        reads each) a piece at a time costs less: 5-10 % more loader CPU on a store of small
        segments read together."""
        if self.files is None or len(pieces) < 2:
            return {}
        bounds = [(p * self.piece, min(len(self.index), (p + 1) * self.piece)) for p in pieces]
        rows = np.concatenate([np.arange(lo, hi) for lo, hi in bounds])
        loc = self.index.pair_locs[info.key]
        items = self._items(info, loc, loc.seg[rows], loc.item[rows])
        starts = np.cumsum([0] + [hi - lo for lo, hi in bounds])
        read = {}
        for p, lo, hi in zip(pieces, starts[:-1].tolist(), starts[1:].tolist()):
            own = np.arange(lo, hi)
            read[p] = self.pieces.put((info.key, p), {c: items[c].take(own) for c in info.components})
        return read

    def _read_piece(self, info: EntryInfo, p: int) -> dict[str, Ragged]:
        """Piece ``p``'s items of a pair entry, in split order, from the segments holding them."""
        rows = np.arange(p * self.piece, min(len(self.index), (p + 1) * self.piece))
        loc = self.index.pair_locs[info.key]
        return self._items(info, loc, loc.seg[rows], loc.item[rows])

    def _items(self, info: EntryInfo, loc: Locator, segs: np.ndarray, items: np.ndarray) -> dict[str, Ragged]:
        """Items (segment ordinal, item) of an entry, in the order given, reading only those
        items of each segment."""
        parts: list[dict[str, Ragged]] = []
        which = np.empty(len(segs), np.int64)
        where = np.empty(len(segs), np.int64)
        for k, s in enumerate(np.unique(segs).tolist()):
            mine = np.flatnonzero(segs == s)
            segment = loc.segments[s]
            columns = self.indexes.get((segment.id, info.components),
                                       partial(self._read_index, segment, info.components))
            files = None if self.files is None else self.files.get(
                (segment.id, info.components), partial(array_sources, self.fs, segment, info.components, self.files))
            assert files is None or isinstance(files, dict)
            parts.append(read_items(self.fs, segment, columns, info.components, items[mine], files))
            which[mine], where[mine] = k, np.arange(len(mine))
        return {c: gather([part[c] for part in parts], which, where) for c in info.components}

    def _read_index(self, segment: Segment, components: tuple[str, ...]) -> dict[str, np.ndarray]:
        """The item offsets and shapes of a pair entry's segment, as numpy once (every piece
        the segment holds reads them), as int32 where they fit: half the memory, so the
        split's every segment stays cached (`read_items` widens the items it takes)."""
        columns = [f"{c}.{part}" for c in components for part in ("offset", "rows", "cols")]
        return {name: narrow(values)
                for name, values in index_columns(read_parquet(self.fs, segment, "index.parquet", columns),
                                                  components).items()}

    # ------------------------------------------------------------------ sentences
    def _sentence_items(self, info: EntryInfo, sentences: np.ndarray, keep: bool = True) -> dict[str, Ragged]:
        """A sentence entry's items for ``sentences`` (numbered within the split), through the
        cached segments; ``keep`` False (`read`): the segments held, and of the others only the
        items asked for."""
        loc = self.index.sentence_locs[info.key]
        segs, items = loc.seg[sentences], loc.item[sentences]
        wanted, which = np.unique(segs, return_inverse=True)
        if not keep and not all((info.key, int(s)) in self.segments for s in wanted.tolist()):
            return self._items(info, loc, segs, items)
        loaded = [self.segments.get((info.key, int(s)), partial(self._read_segment, info, loc.segments[int(s)]))
                  for s in wanted]
        return {c: gather([part[c] for part in loaded], which, items) for c in info.components}

    def _read_segment(self, info: EntryInfo, segment: Segment) -> dict[str, Ragged]:
        columns = [f"{c}.{part}" for c in info.components for part in ("offset", "rows", "cols")]
        table = read_parquet(self.fs, segment, "index.parquet", columns)  # not its keys' text
        arrays = read_arrays(self.fs, segment, info.components)
        return {c: indexed_items(table, arrays, c) for c in info.components}

    def _word_numbers(self, sentences: np.ndarray, keep: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The words of ``sentences`` as their numbers (`WordPieces`), one sentence after the
        other, and each sentence's word count, from their parse segments (kept as numbers while
        they fit). When the word pieces start over during the read (the numbers kept before
        mean nothing then), it is read again; when they start over again, the segments' words
        together pass the pieces' bound, and from then on only each read's own words are
        numbered (nothing kept: what every read did before segments were kept as numbers).
        ``keep`` False (`read`): the read's own words, unless every segment is held."""
        if not self._keep_words:
            return self._own_words(sentences)
        loc = self.index.words
        segs, items = loc.seg[sentences], loc.item[sentences]
        groups = [(int(s), np.flatnonzero(segs == s)) for s in np.unique(segs).tolist()]
        if not keep and (self._generation != self.words.generation
                         or not all((s, self._generation) in self.parses for s, _ in groups)):
            return self._own_words(sentences)
        for _ in range(2):
            if self._generation != self.words.generation:
                self.parses.clear()
                self._generation = self.words.generation
            held = [self.parses.get((s, self._generation), partial(self._read_words, loc.segments[s]))
                    for s, _ in groups]
            if self._generation == self.words.generation:
                break
        else:
            self._keep_words = False
            self.parses.clear()
            return self._own_words(sentences)
        counts = np.zeros(len(sentences), np.int64)
        for (_, mine), words in zip(groups, held):
            counts[mine] = words.starts[items[mine] + 1] - words.starts[items[mine]]
        starts = item_starts(counts)
        numbers = np.empty(int(counts.sum()), np.int32)
        for (_, mine), words in zip(groups, held):
            numbers[item_ranges(starts[mine], counts[mine])] = words.numbers[item_ranges(words.starts[items[mine]], counts[mine])]
        return numbers, counts

    def _read_words(self, segment: Segment) -> SegmentWords:
        """A parse segment's sentences as word numbers (a sentence without words: none), a row
        group at a time (a compacted segment's words are never held as strings). Stamped with
        the word pieces' generation it began in: when they start over between two row groups,
        `_word_numbers` sees it and reads the segment again."""
        generation = self.words.generation
        parts = [self._as_numbers(lists) for lists in self._words_of(segment)]
        numbers = np.concatenate([n for n, _ in parts]) if parts else np.zeros(0, np.int32)
        counts = np.concatenate([c for _, c in parts]) if parts else np.zeros(0, np.int64)
        return SegmentWords(generation, numbers, np.append(item_starts(counts), counts.sum()))

    def _as_numbers(self, lists: pa.ListArray) -> tuple[np.ndarray, np.ndarray]:
        """Word lists (their strings as a row group's dictionary indices, `read_string_lists`,
        or plain) as their words' numbers (int32, one list after the other) and each list's
        length (a null list: 0): the distinct words looked up at once."""
        counts = np.nan_to_num(numpy_array(pc.list_value_length(lists))).astype(np.int64)
        flat = pc.list_flatten(lists)
        if not pa.types.is_dictionary(flat.type):
            flat = pc.dictionary_encode(flat)
        known = self.words.lookup(flat.dictionary)
        return known[numpy_array(flat.indices).astype(np.int64)].astype(np.int32), counts

    def _words_of(self, segment: Segment) -> list[pa.ListArray]:
        """A parse segment's word lists, one array per row group, the words as dictionary indices."""
        return read_string_lists(self.fs, segment, "parses.parquet", "words")

    def _own_words(self, sentences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`_word_numbers` of ``sentences`` read from their segments, nothing kept: of each row
        group only their lists are taken, their words made strings again (a batch's few) and
        numbered by one lookup, so the word pieces cannot start over between two parts of it."""
        loc = self.index.words
        segs, items = loc.seg[sentences], loc.item[sentences]
        order = np.lexsort((items, segs))  # segment by segment, each in row (and row group) order
        parts: list[pa.ListArray] = []
        for s, lo, hi in _runs(segs[order]):
            groups = self._words_of(loc.segments[s])
            bounds = np.cumsum([0, *(len(g) for g in groups)])
            wanted = items[order[lo:hi]]
            group_of = np.searchsorted(bounds, wanted, "right") - 1
            for g, glo, ghi in _runs(group_of):
                taken = groups[g].take(arrow_array(wanted[glo:ghi] - bounds[g]))
                parts.append(taken.cast(pa.list_(pa.string())) if pa.types.is_dictionary(taken.type.value_type)
                             else taken)
        if not parts:
            return np.zeros(0, np.int32), np.zeros(0, np.int64)
        back = np.empty(len(order), np.int64)
        back[order] = np.arange(len(order))
        return self._as_numbers(pa.concat_arrays(parts).take(arrow_array(back)))

    def _word_lists(self, sentences: np.ndarray, keep: bool = True) -> list[list[str]]:
        """The stored words of ``sentences`` (one list each, in that order)."""
        numbers, counts = self._word_numbers(sentences, keep)
        flat = self.words.known.take(arrow_array(numbers)).to_pylist()
        ends = np.cumsum(counts).tolist()
        return [flat[end - n:end] for end, n in zip(ends, counts.tolist())]

    def _pieces(self, sentences: np.ndarray, keep: bool = True) -> tuple[Pieces, np.ndarray]:
        """The word pieces of ``sentences`` and their word counts: their words' numbers read and
        the sentences assembled from the words' pieces (each word tokenized once per reader,
        `prior.trainers.tokens.WordPieces`)."""
        numbers, counts = self._word_numbers(sentences, keep)
        return self.words.sentences(numbers, counts), counts


@dataclass(frozen=True)
class SegmentWords:
    """A parse segment's sentences as the numbers `WordPieces` gave their words (in its
    ``generation``): sentence ``i``'s words are ``numbers[starts[i]:starts[i + 1]]``."""

    generation: int
    numbers: np.ndarray  # int32, every word of the segment, sentence after sentence
    starts: np.ndarray  # int64 (sentences + 1)

    @property
    def nbytes(self) -> int:
        return int(self.numbers.nbytes + self.starts.nbytes)


def _words_bytes(words: SegmentWords) -> int:
    return words.nbytes


def _arrays_bytes(arrays: dict[str, np.ndarray]) -> int:
    return sum(a.nbytes for a in arrays.values())


def _listed(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def _fetched_bytes(fetched: dict[str, bytes | CheckedRanges] | bytes) -> int:
    """The bytes of a segment's fetched files (a shard read by ranges: none but its index,
    about 16 bytes per 32,768 values, not counted), or of a compressed piece of a shard."""
    if isinstance(fetched, bytes):
        return len(fetched)
    return sum(len(b) for b in fetched.values() if isinstance(b, bytes))


def _runs(values: np.ndarray) -> list[tuple[int, int, int]]:
    """(value, start, end) of each run of equal ``values`` (sorted)."""
    if len(values) == 0:
        return []
    cuts = np.flatnonzero(values[1:] != values[:-1]) + 1
    starts, ends = np.concatenate([[0], cuts]), np.concatenate([cuts, [len(values)]])
    return [(int(values[a]), int(a), int(b)) for a, b in zip(starts.tolist(), ends.tolist())]


__all__ = ["DEFAULT_CACHE_MB", "SplitReader", "gather"]
