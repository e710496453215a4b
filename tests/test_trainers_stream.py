"""The streaming loader: its order (a function of seed and epoch alone), its windows, pieces and
lanes, its workers, its position, and that a batch read piece by piece is the batch the whole
split gives."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from prior.errors import PriorError
from prior.trainers.caches import LruCache
from prior.trainers.data import load_split
from prior.trainers.loader import LoaderSettings, Position, TrainStream, run_batches
from prior.trainers.order import Shuffle, epoch_order, lane_starts, rank_batch, served_batch, windowed_order
from prior.trainers.pipes import PIPE_BYTES, pipe_capacity, result_pipe
from prior.trainers.reader import SplitReader
from prior.trainers.split_index import index_split
from prior.trainers.tokens import encode_pairs
from tests.trainers_fixtures import many_pairs_store, tiny_tokenizer

SMALL = Shuffle(seed=3, window=32, piece=8)  # 120 pairs: 4 windows of 4 pieces, 4 lanes


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    return many_pairs_store(tmp_path_factory.mktemp("many") / "s")


def reader(store, feature: str | None = "dep", **kw) -> SplitReader:
    return SplitReader(index_split(store, "many", "train", feature=feature), tiny_tokenizer(), 64, **kw)


def run(stream: TrainStream, workers: int = 0) -> list:
    return [b for b in run_batches(stream, LoaderSettings(workers=workers, window=SMALL.window, piece=SMALL.piece))
            if not b.skip]


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# --------------------------------------------------------------------------- the order
def test_order_of_a_split_in_one_window_is_the_full_permutation() -> None:
    """A split no larger than the window is shuffled exactly as every run was before streaming."""
    for n, epoch in ((1, 0), (37, 0), (4439, 2)):
        expected = np.random.default_rng([7, epoch]).permutation(n)
        np.testing.assert_array_equal(epoch_order(n, Shuffle(7), epoch), expected)


def test_order_in_windows_serves_every_pair_once_from_whole_pieces() -> None:
    n = 120
    for epoch in range(3):
        order, bounds = windowed_order(n, SMALL, epoch)
        assert sorted(order.tolist()) == list(range(n))
        for lo, hi in itertools.pairwise(bounds):
            pieces = order[lo:hi] // SMALL.piece
            counts = np.bincount(pieces, minlength=n // SMALL.piece)
            assert set(counts[counts > 0].tolist()) == {SMALL.piece}  # whole pieces only
    np.testing.assert_array_equal(epoch_order(n, SMALL, 1), epoch_order(n, SMALL, 1))
    assert not np.array_equal(epoch_order(n, SMALL, 1), epoch_order(n, SMALL, 2))


@pytest.mark.parametrize("batch_size", [2, 7, 13, 40])
def test_order_windows_are_cut_where_lanes_start(batch_size: int) -> None:
    """With the global batch size, a window a lane starts in is shuffled as two parts cut at the
    lane's first pair: the lanes share at most the piece the cut falls in; windows no lane
    starts in keep their order; every pair is served once."""
    n = 120
    starts = lane_starts(n, SMALL, batch_size)
    assert len(starts) == 3 and starts == sorted(starts)
    for epoch in range(3):
        order, bounds = windowed_order(n, SMALL, epoch, batch_size)
        plain, plain_bounds = windowed_order(n, SMALL, epoch)
        assert sorted(order.tolist()) == list(range(n))
        assert set(starts) <= set(bounds.tolist()) and set(plain_bounds.tolist()) <= set(bounds.tolist())
        for lo, hi in itertools.pairwise(plain_bounds):
            cut = [c for c in starts if lo < c < hi]
            if not cut:  # the same window, shuffled as before
                np.testing.assert_array_equal(order[lo:hi], plain[lo:hi])
                continue
            assert sorted(order[lo:hi].tolist()) == sorted(plain[lo:hi].tolist())
            edges = [lo, *cut, hi]
            for a, b, c in zip(edges, edges[1:], edges[2:]):
                shared = set((order[a:b] // SMALL.piece).tolist()) & set((order[b:c] // SMALL.piece).tolist())
                assert len(shared) <= 1
    assert np.array_equal(windowed_order(n, Shuffle(3, 32, 8, lane_cuts=False), 0, 7)[0], windowed_order(n, SMALL, 0)[0])
    small = Shuffle(seed=3)  # a split of one window: one lane, nothing to cut
    np.testing.assert_array_equal(epoch_order(4439, small, 2, 32), epoch_order(4439, small, 2))


def _pieces_read_per_lane(store, shuffle: Shuffle) -> int:
    """Pieces each lane reads for its windows, added over the lanes (one epoch, batches of 2)."""
    stream = TrainStream(reader(store), batch_size=2, shuffle=shuffle, epochs=1)
    touched: dict[tuple[int, tuple[int, int]], set[int]] = {}
    plain = stream._window_data

    def counted(lane: int, key: tuple[int, int], window: np.ndarray):  # type: ignore[no-untyped-def]
        touched.setdefault((lane, key), set()).update((window // shuffle.piece).tolist())
        return plain(lane, key, window)

    stream._window_data = counted  # type: ignore[method-assign]
    assert len(run(stream)) == 60
    return sum(len(p) for p in touched.values())


def test_stream_lanes_read_a_cut_window_once(store) -> None:
    """120 pairs in 30 pieces, 3 windows of 10 pieces, lanes starting at pairs 30, 60 and 90,
    inside each window: cut, the lanes read the 30 pieces once and the two pieces a cut falls
    in twice; uncut, each lane reads its share of a straddled window from all its pieces."""
    cut = _pieces_read_per_lane(store, Shuffle(3, window=40, piece=4))
    whole = _pieces_read_per_lane(store, Shuffle(3, window=40, piece=4, lane_cuts=False))
    assert cut == 30 + 2 and whole > 45


@pytest.mark.parametrize(("batches", "lanes"), [(1, 4), (3, 4), (4, 4), (17, 4), (30, 1)])
def test_order_lanes_serve_every_batch_once(batches: int, lanes: int) -> None:
    assert sorted(served_batch(t, batches, lanes) for t in range(batches)) == list(range(batches))


def test_order_rank_shares_make_the_global_batch() -> None:
    order = np.random.default_rng(0).permutation(11)
    for b in range(3):  # batches of 5, 5 and 1
        whole = rank_batch(order, b, 5)
        shares = [rank_batch(order, b, 5, r, 2) for r in range(2)]
        real = np.concatenate([s.positions[s.weights > 0] for s in shares])
        assert sorted(real.tolist()) == sorted(whole.positions.tolist())
        assert all(s.global_size == len(whole.positions) for s in shares)
    lone = rank_batch(order, 2, 5, 1, 2)  # the last batch has one pair: rank 1 stands in with weight 0
    assert lone.weights.tolist() == [0.0] and lone.positions.tolist() == order[10:].tolist()


# --------------------------------------------------------------------------- the stream
def test_stream_same_batches_with_0_1_and_2_workers(store) -> None:
    def stream() -> TrainStream:
        return TrainStream(reader(store), batch_size=6, shuffle=SMALL, epochs=2)

    plain = run(stream())
    assert [(b.epoch, b.batch) for b in plain] == [(e, t) for e in range(2) for t in range(20)]
    for workers in (1, 2):
        other = run(stream(), workers)
        assert [(b.epoch, b.batch) for b in other] == [(b.epoch, b.batch) for b in plain]
        assert all(same(a.tensors, b.tensors) for a, b in zip(plain, other))


def test_stream_workers_started_by_spawn_make_the_same_batches(store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where loader workers cannot fork (Windows; macOS's default), `torch.utils.data` pickles the
    stream, its reader and caches for each spawned worker: they pickle, and 2 spawned workers
    make the batches of the training process."""
    import pickle
    from functools import partial

    from torch.utils.data import DataLoader

    import prior.trainers.loader as loader

    plain = run(TrainStream(reader(store), batch_size=6, shuffle=SMALL, epochs=1))
    again = pickle.loads(pickle.dumps(TrainStream(reader(store, cache_mb=0.008), batch_size=6, shuffle=SMALL, epochs=1)))
    assert all(same(a.tensors, b.tensors) for a, b in zip(plain, [b for b in again if not b.skip], strict=True))
    monkeypatch.setattr(loader, "DataLoader", partial(DataLoader, multiprocessing_context="spawn"))
    spawned = run(TrainStream(reader(store), batch_size=6, shuffle=SMALL, epochs=1), workers=2)
    assert [(b.epoch, b.batch) for b in spawned] == [(b.epoch, b.batch) for b in plain]
    assert all(same(a.tensors, b.tensors) for a, b in zip(plain, spawned, strict=True))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")
def test_stream_workers_batches_cross_a_widened_pipe_the_same(store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader's result pipe is widened (its index queues are not); where the system refuses,
    the batches are the same."""
    settings = LoaderSettings(workers=2, window=SMALL.window, piece=SMALL.piece)
    plain = run(TrainStream(reader(store), batch_size=6, shuffle=SMALL, epochs=1))
    batches = run_batches(TrainStream(reader(store), batch_size=6, shuffle=SMALL, epochs=1), settings)
    fd = result_pipe(batches)
    assert fd is not None and pipe_capacity(fd) == min(PIPE_BYTES, widest())
    assert all(pipe_capacity(q._reader.fileno()) < PIPE_BYTES for q in batches._index_queues)
    assert all(same(a.tensors, b.tensors) for a, b in zip(plain, [b for b in batches if not b.skip], strict=True))

    def refused(fd: int, size: int = PIPE_BYTES) -> bool:
        return False

    monkeypatch.setattr("prior.trainers.pipes.widen", refused)
    other = run_batches(TrainStream(reader(store), batch_size=6, shuffle=SMALL, epochs=1), settings)
    fd = result_pipe(other)
    assert fd is not None and pipe_capacity(fd) < PIPE_BYTES
    assert all(same(a.tensors, b.tensors) for a, b in zip(plain, [b for b in other if not b.skip], strict=True))


def widest() -> int:
    with open("/proc/sys/fs/pipe-max-size", encoding="ascii") as f:
        return int(f.read())


def test_stream_batches_equal_the_whole_split_read(store) -> None:
    """A batch read through its window (pieces, cached sentences) is the batch the whole split
    gives for the same pairs, and the epoch covers every pair once."""
    whole = load_split(store, "many", "train", tiny_tokenizer(), feature="dep", max_length=64)
    stream = TrainStream(reader(store), batch_size=7, shuffle=SMALL, epochs=1)
    order, _ = stream.order(0)
    for b in run(stream):
        t = b.batch
        positions = order[served_batch(t, stream.steps_per_epoch, 4) * 7:][:7]
        assert same(b.tensors, whole.batch(positions))


def test_stream_first_batch_reads_its_own_pairs_then_whole_windows(store) -> None:
    """Each lane's first batch reads its own pairs only (the first batch does not wait for a
    window); after it a lane reads its part of a window once for all the batches it serves
    there, not a batch at a time."""
    r = reader(store)
    reads: list[int] = []
    plain = r.read

    def counted(positions, **kw):
        reads.append(len(positions))
        return plain(positions, **kw)

    r.read = counted  # type: ignore[method-assign]
    batches = run(TrainStream(r, batch_size=2, shuffle=SMALL, epochs=1))
    assert len(batches) == 60
    assert reads[0] == 2  # lane 0's first batch: its two pairs
    assert len(reads) <= 4 * 4  # per lane: its first batch, two windows' parts, one straddling batch


def test_stream_resumes_at_a_position_with_the_same_batches(store) -> None:
    full = run(TrainStream(reader(store), batch_size=6, shuffle=SMALL, epochs=2))
    for start in (Position(0, 7), Position(1, 0), Position(1, 19)):
        tail = run(TrainStream(reader(store), batch_size=6, shuffle=SMALL, epochs=2, start=start), workers=2)
        expected = [b for b in full if (b.epoch, b.batch) >= (start.epoch, start.batch)]
        assert [(b.epoch, b.batch) for b in tail] == [(b.epoch, b.batch) for b in expected]
        assert all(same(a.tensors, b.tensors) for a, b in zip(tail, expected))


def test_stream_two_ranks_serve_the_one_rank_steps(store) -> None:
    """The global batch is fixed: rank 0 and rank 1 of 2 together serve the very pairs 1 rank
    serves at each step (labels and input rows compared pair by pair)."""
    one = run(TrainStream(reader(store), batch_size=6, shuffle=SMALL, epochs=1))
    two = [run(TrainStream(reader(store), batch_size=6, shuffle=SMALL, epochs=1, rank=r, world=2)) for r in range(2)]
    for step, whole in enumerate(one):
        halves = [two[r][step].tensors for r in range(2)]
        assert torch.equal(torch.cat([h["labels"] for h in halves]).sort().values, whole.tensors["labels"].sort().values)
        rows = {tuple(r.tolist()) for h in halves for r in h["input_ids"]}
        width = whole.tensors["input_ids"].shape[1]
        padded = {tuple(r + (0,) * (width - len(r))) for r in rows}
        assert padded == {tuple(r.tolist()) for r in whole.tensors["input_ids"]}


def test_stream_workers_must_divide_the_lanes() -> None:
    with pytest.raises(PriorError, match="divides it"):
        LoaderSettings(workers=3)
    LoaderSettings(workers=4)


# --------------------------------------------------------------------------- bounded memory
def test_cache_keeps_within_its_bound() -> None:
    cache: LruCache[bytes] = LruCache(100, len)
    for i in range(50):
        cache.get(i, lambda i=i: bytes(30))
        assert cache.nbytes <= 100
    assert len(cache) == 3 and cache.loads == 50
    assert cache.get(200, lambda: bytes(500)) == bytes(500) and 200 not in cache  # too large: not kept


def test_reader_with_a_tiny_cache_reads_again_and_gives_the_same(store) -> None:
    big, small = reader(store), reader(store, cache_mb=0.001)
    positions = np.random.default_rng(1).permutation(len(big.index))[:40]
    assert same(big.read(positions).batch(np.arange(40)), small.read(positions).batch(np.arange(40)))
    assert small.pieces.nbytes <= small.pieces.max_bytes and small.parses.nbytes <= small.parses.max_bytes


def test_cache_counts_the_loads_of_what_its_bound_dropped() -> None:
    """A reader that goes round more keys than the bound holds reloads each of them: the cache
    says it is thrashing once every key it loaded was loaded again, on average; one that goes
    round what fits never is, nor is one cleared (a reset, not the bound)."""
    fits: LruCache[bytes] = LruCache(100, len)
    small: LruCache[bytes] = LruCache(100, len)
    for _ in range(3):
        for i in range(5):
            fits.get(i, lambda: bytes(20))
            small.get(i, lambda: bytes(30))
    assert (fits.reloads, fits.thrashing) == (0, False)
    assert small.seen == {i: 30 for i in range(5)} and small.reloads == 10 and small.thrashing
    small.clear()
    assert (small.reloads, small.seen, small.thrashing) == (0, {}, False)
    # what a reader fetched itself and puts (an object store's pieces) counts the same way
    kept: LruCache[bytes] = LruCache(100, len)
    for _ in range(3):
        for i in range(5):
            if kept.peek(i) is None:
                kept.put(i, bytes(30))
    assert kept.seen == {i: 30 for i in range(5)} and kept.reloads == 10 and kept.thrashing and kept.loads == 0
    kept.put(4, bytes(30))  # held: neither seen again nor reloaded
    assert kept.reloads == 10
    once: LruCache[bytes] = LruCache(100, len)
    for i in [*range(5), 0]:  # one key read again: not yet going round
        once.get(i, lambda: bytes(30))
    assert once.reloads == 1 and not once.thrashing
    assert LruCache(10, len).get("big", lambda: bytes(50)) == bytes(50)


def test_a_split_whose_sentences_do_not_fit_the_cache_warns_once(store, caplog: pytest.LogCaptureFixture) -> None:
    """Reading the split window by window twice: with a cache too small for its sentences'
    words and values the reader warns once, naming the split and a --cache-mb that holds what
    it read; with the default cache it does not warn. A lane's first batch (``keep=False``)
    reads around the cache and never warns."""
    import logging

    windows = np.array_split(np.random.default_rng(3).permutation(120), 4)
    with caplog.at_level(logging.WARNING, logger="prior.trainers.reader"):
        tiny = reader(store, cache_mb=0.001)  # less than any one parse segment's words
        for part in windows[:1]:
            tiny.read(part, keep=False)
        assert not caplog.records
        for part in [*windows, *windows]:
            tiny.read(part)
        roomy = reader(store)
        for part in [*windows, *windows]:
            roomy.read(part)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1, lines
    need = int(lines[0].rsplit("--cache-mb ", 1)[1].split()[0])
    # the sentences' caches and the pair entry's offsets all go round here: one line names them
    assert lines[0].startswith("loader: the words, sentence values and pair values' offsets of many/train (") and \
        "of --cache-mb 0.001)" in lines[0]
    assert need >= 64 and need % 64 == 0
    assert tiny.parses.thrashing and not roomy.parses.thrashing and not roomy.segments.thrashing


@pytest.mark.parametrize("layout", ["bert", "other"])
def test_reader_word_pieces_equal_each_sentence_tokenized(store, layout: str) -> None:
    """The reader's pairs, assembled from each distinct word's pieces across parse segments
    (the test split's sentences were parsed with train's, in another order), in a shuffled
    order, are the pairs each whole sentence's tokenization gives (`encode_pairs`); with a
    tokenizer that is not BERT's layout (it truncates on the left), the pairs its own pair
    encoding gives the stored words (`encode_each`)."""
    import copy

    from prior.trainers.tokens import bert_pair_layout, encode_each

    tok, length = tiny_tokenizer(), 64
    if layout == "other":
        tok, length = copy.deepcopy(tok), 12
        tok.truncation_side = "left"
        assert bert_pair_layout(tok) is None
    r = SplitReader(index_split(store, "many", "test"), tok, length)
    positions = np.random.default_rng(2).permutation(len(r.index))
    got = r.read(positions).encoded
    keys = store.split_rows("many", "test", parse=r.index.fingerprint["parse"]).rows
    words = {k: list(w) for k, w in store.parses(parse=r.index.fingerprint["parse"], columns=("words",))
             .select("sent_key", "words").iter_rows()}
    a = [words[k] for k in keys["key_a"].to_list()]
    b = [words[k] for k in keys["key_b"].to_list()]
    encode = encode_pairs if layout == "bert" else encode_each
    want = encode(tok, [a[i] for i in positions], [b[i] for i in positions], length)
    for name in ("input_ids", "token_type_ids", "lengths", "seg", "wid"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name


@pytest.mark.parametrize("filler, bound, path", [(0, 1 << 18, "kept"), (10, 34, "read again"), (0, 20, "own words")])
def test_reader_keeps_words_as_numbers_and_starts_over_with_the_word_pieces(store, filler: int, bound: int,
                                                                           path: str) -> None:
    """A parse segment's words are kept as the word pieces' numbers, each segment read once; when
    the word pieces start over during a read (their bound), the numbers kept are dropped and the
    segments read again; when they start over again, only the read's own words are numbered.
    The batch is the same on every path (the fixture's 2 parse segments hold 17 distinct words
    each: the bounds below take each path)."""
    positions = np.random.default_rng(3).permutation(120)[:50]
    want = reader(store).read(positions).batch(np.arange(50))
    r = reader(store)
    r.words.max_words = bound
    r.words.lookup([f"filler{i}" for i in range(filler)])
    own: list[int] = []
    plain = r._own_words
    r._own_words = lambda sentences: own.append(len(sentences)) or plain(sentences)  # type: ignore[method-assign]
    generation = r.words.generation
    assert same(r.read(positions).batch(np.arange(50)), want)
    fresh = r.words.generation - generation
    assert (r.parses.loads, len(own)) == ({"kept": 2, "read again": 4, "own words": 4}[path], int(path == "own words"))
    assert fresh == 0 if path == "kept" else fresh == 1 if path == "read again" else fresh > 1
    if path == "kept":
        assert all(isinstance(w.numbers, np.ndarray) and w.numbers.dtype == np.int32 for w, _ in r.parses._items.values())
    assert same(r.read(positions).batch(np.arange(50)), want)  # a second read: nothing kept is read again,
    assert r.parses.loads == {"kept": 2, "read again": 4, "own words": 4}[path]  # and a split past the bound
    assert len(own) == 2 * int(path == "own words")  # goes to its own words at once


@pytest.mark.parametrize("feature", ["dep", "sdoi"])
def test_parse_segments_of_many_row_groups_read_group_by_group_give_the_same_batches(
        store, tmp_path: Path, feature: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A parse segment's words are read a row group at a time, as dictionary indices (a
    compacted segment has several row groups): the same store written in row groups of 6 rows
    gives the batches of the one written in one row group per file, for reads that keep whole
    segments and for a first batch's own words (of each row group only the words it uses are
    looked up)."""
    import prior.featurestore.segment_files as segment_files
    import prior.trainers.reader as reader_module

    monkeypatch.setattr(segment_files, "KEY_GROUP_ROWS", 6)  # written in row groups of 6 rows
    grouped = many_pairs_store(tmp_path / "s")
    monkeypatch.undo()
    positions = np.random.default_rng(4).permutation(120)
    groups: list[int] = []
    plain = reader_module.read_string_lists

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        lists = plain(*args, **kwargs)
        groups.append(len(lists))
        return lists

    monkeypatch.setattr(reader_module, "read_string_lists", counted)
    for keep, some in ((True, positions), (False, positions[:2])):
        want = reader(store, feature).read(some, keep=keep).batch(np.arange(len(some)))
        groups.clear()
        r = reader(grouped, feature)
        assert same(r.read(some, keep=keep).batch(np.arange(len(some))), want)
        assert groups and min(groups) > 1  # every parse segment read has several row groups
    # the first batch looked up only its own words, not its row groups' whole dictionaries
    parse = r.index.fingerprint["parse"]
    words = dict(grouped.parses(parse=parse, columns=("words",)).select("sent_key", "words").iter_rows())
    rows = grouped.split_rows("many", "train", parse=parse).rows
    used = {w for i in positions[:2].tolist() for key in (rows["key_a"][i], rows["key_b"][i]) for w in words[key]}
    assert len(r.words.known) == len(used) < len({w for ws in words.values() for w in ws})


@pytest.mark.parametrize("feature", ["dep", "sdoi", "emb", "wup"])
def test_a_read_of_one_batch_reads_its_own_items_until_the_cache_holds_them(store, feature: str) -> None:
    """A lane's first batch (``keep=False``) does not wait for whole pieces, feature segments
    and parse segments: it reads its own items and words and keeps nothing; once a read has
    kept what it lies in, it uses that. The batch is the same either way."""
    positions = np.arange(0, 120, 13)
    want = reader(store, feature).read(positions).batch(np.arange(len(positions)))
    r = reader(store, feature)
    own: list[int] = []
    plain = r._own_words
    r._own_words = lambda sentences: own.append(len(sentences)) or plain(sentences)  # type: ignore[method-assign]
    assert same(r.read(positions, keep=False).batch(np.arange(len(positions))), want)
    assert (len(r.parses), len(r.pieces), len(r.segments), len(own)) == (0, 0, 0, 1)
    r.read(np.arange(120))  # a window: every piece and segment read and kept
    loads = (r.parses.loads, r.pieces.loads, r.segments.loads)
    assert same(r.read(positions, keep=False).batch(np.arange(len(positions))), want)
    assert (r.parses.loads, r.pieces.loads, r.segments.loads) == loads and len(own) == 1
    assert r.pieces.loads + r.segments.loads > 0  # the feature's values went through the caches


def test_index_keeps_integers_not_texts(store) -> None:
    index = index_split(store, "many", "train", feature="dep")
    arrays = [index.sent_a, index.sent_b, index.labels, *(x for loc in (index.words, *index.pair_locs.values(),
                                                                       *index.sentence_locs.values())
                                                           for x in (loc.seg, loc.item))]
    assert all(isinstance(a, np.ndarray) and a.dtype.kind in "iu" for a in arrays)
    assert index.pair_keys([0, 1]).tolist() == index.pair_keys()[:2].tolist()


@pytest.mark.parametrize("stored", ["in order", "scattered"])
@pytest.mark.parametrize("view", ["dep", "dep-no-trigram", "dep-no-subgraph", "dep-no-tfidf",
                                  "dep-no-trigram-no-subgraph", "dep-no-subgraph-no-tfidf"])
def test_dafa_view_combines_every_pair_at_once_bit_for_bit(view: str, stored: str) -> None:
    """The `dep` views compute M_F for all pairs at once, value for value `dafa_matrix`'s float32
    arithmetic (negative zeros included), from items whose values lie one after another (what a
    window reads: read as one run) or anywhere in their arrays (gathered)."""
    from prior.layouts.ragged import Ragged
    from prior.layouts.views import VIEWS, dafa_matrix

    rng = np.random.default_rng(0)
    shapes = [(int(rng.integers(1, 9)), int(rng.integers(1, 9))) for _ in range(60)]
    signs = [rng.choice(np.array([-1.0, 1.0, -0.0], np.float32), s) for s in shapes]
    parts = {"dep_trigram": [(rng.random(s) < 0.3).astype(np.float32) * g for s, g in zip(shapes, signs)],
             "dep_subgraph": [rng.standard_normal(s).astype(np.float32) for s in shapes],
             "tfidf_a": [rng.random(s[0]).astype(np.float32) for s in shapes],
             "tfidf_b": [rng.random(s[1]).astype(np.float32) for s in shapes]}
    shuffled = rng.permutation(len(shapes))  # items whose values are not in order
    whole = {k: Ragged.from_arrays(v, np.float32) for k, v in parts.items()}
    if stored == "in order":
        values = {k: r.take(shuffled) for k, r in whole.items()}
    else:  # the same items, their values left where they were
        values = {k: Ragged(r.values, r.offsets[shuffled], r.rows[shuffled], r.cols[shuffled]) for k, r in whole.items()}
    spec = VIEWS[view]
    got = spec.combine(values, dict(spec.options))  # type: ignore[misc]
    switches = {f"use_{k}": v for k, v in spec.options.items()}
    for i, j in enumerate(shuffled):
        want = dafa_matrix(*(parts[k][j] for k in ("dep_trigram", "dep_subgraph", "tfidf_a", "tfidf_b")), **switches)
        assert got.get(i).shape == want.shape and got.get(i).tobytes() == want.tobytes()


def test_reader_imports_no_pandas(store) -> None:
    """pyarrow's conversions (``pa.array``, ``to_numpy``, ``fill_null``) import pandas where it is
    installed: about a second of every loader worker's first batch. The index and the reader
    avoid them, for every layout."""
    pytest.importorskip("pandas")
    code = f"""
import sys
import numpy as np
from prior.featurestore import open_store
from prior.trainers.reader import SplitReader
from prior.trainers.split_index import index_split
from tests.trainers_fixtures import tiny_tokenizer
for feature in ("dep", "sdoi", "emb", "wup", None):
    index = index_split(open_store({str(store.location)!r}, create=False), "many", "train", feature=feature)
    SplitReader(index, tiny_tokenizer(), 64).read(np.arange(0, 120, 7)).batch_arrays(np.arange(18))
print(sorted(m for m in sys.modules if m.split(".")[0] == "pandas"))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_a_cache_that_reads_again_borrows_what_the_complete_ones_leave(store, caplog: pytest.LogCaptureFixture) -> None:
    """At 0.008 MB the pair entry's offsets (2.9 KB) do not fit their eighth (1 KB) while the
    sentences' words and values fit theirs with room to spare: once the offsets are read again,
    the words' and values' caches, holding every segment the split reads, lend them the rest
    of their shares. The bounds add up to the same; the offsets are then read once, nothing
    warns, and the batches are those of a reader with room for everything."""
    import logging

    windows = np.array_split(np.random.default_rng(3).permutation(120), 4)
    tight, roomy = reader(store, cache_mb=0.008), reader(store)
    caches = (tight.parses, tight.segments, tight.indexes, tight.pieces)
    bounds = [c.max_bytes for c in caches]
    with caplog.at_level(logging.WARNING, logger="prior.trainers.reader"):
        for part in [*windows, *windows]:
            assert same(tight.read(part).batch(np.arange(len(part))), roomy.read(part).batch(np.arange(len(part))))
    assert not caplog.records
    assert sum(c.max_bytes for c in caches) == sum(bounds)
    assert tight.indexes.max_bytes > 2 * bounds[2] and tight.indexes.nbytes > bounds[2]
    assert tight.parses.max_bytes < bounds[0] and tight.segments.max_bytes < bounds[1]
    loads = (tight.parses.loads, tight.segments.loads, tight.indexes.loads)
    for part in windows:
        tight.read(part)
    assert (tight.parses.loads, tight.segments.loads, tight.indexes.loads) == loads  # nothing read again


def test_lend_spare_meets_the_smallest_shortfall_first_and_keeps_the_sum() -> None:
    """`lend_spare`: each lender keeps what it holds and a tenth more; the takers' shortfalls
    (what they loaded, and a tenth, less their bound) are met smallest first, the rest shared;
    a taker named as a lender lends nothing; nothing to lend changes nothing."""
    from prior.trainers.caches import lend_spare

    def cache(bound: int, values: dict[int, int]) -> LruCache[bytes]:
        made: LruCache[bytes] = LruCache(bound, len)
        for key, size in values.items():
            made.get(key, lambda size=size: bytes(size))
        return made

    lender = cache(1_000, {1: 100, 2: 100})  # holds 200: 780 to spare
    small, large = cache(100, {1: 90, 2: 90}), cache(100, {1: 90, 2: 90, 3: 90, 4: 90})
    assert small.nbytes == 90 and large.nbytes == 90  # each holds one value
    assert lend_spare([large, small], [lender, small]) == 780
    assert lender.max_bytes == 220 and lender.nbytes == 200
    # shortfalls: small 198 - 100 = 98, large 396 - 100 = 296; both met, 386 left, shared
    assert (small.max_bytes, large.max_bytes) == (100 + 98 + 193, 100 + 296 + 193)
    assert lender.max_bytes + small.max_bytes + large.max_bytes == 1_000 + 100 + 100
    assert small.seen == {} and small.reloads == 0 and small.nbytes == 90  # counts afresh, values kept
    assert lend_spare([small], [lender]) == 0 and lender.max_bytes == 220
