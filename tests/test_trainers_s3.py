"""Training from a store on S3 (moto's S3 API server on 127.0.0.1): the loader streams it — the
first step is taken before most of the split's feature values were read — and the checkpoint
records the store and its options, not its secrets, so the printed eval line runs with the
credentials given again."""

from __future__ import annotations

import json
import logging
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import cli
from tests.test_s3 import S3, s3, s3_server  # noqa: F401 - the fixtures
from tests.trainers_fixtures import many_pairs_store, tiny_backbone


def test_s3_training_streams_and_the_eval_line_runs(s3: S3, tmp_path: Path,  # noqa: F811
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import fsspec

    import prior.trainers.loop as loop
    import prior.trainers.reader as reader

    local = many_pairs_store(tmp_path / "local", pairs=320, partition=20)
    bucket = s3.bucket()
    remote = fsspec.filesystem("s3", **{"endpoint_url": s3.endpoint, "key": "testing", "secret": "testing"})
    remote.put(local.location + "/", f"{bucket}/store/", recursive=True)
    url = f"s3://{bucket}/store"
    read: list[str] = []
    at_first_step: list[int] = []
    real_items, real_step = reader.read_items, loop._step

    def items(fs: Any, segment: Any, *args: Any) -> Any:
        read.append(segment.id)
        return real_items(fs, segment, *args)

    def step(run: Any, batch: Any) -> float:
        if not at_first_step:
            at_first_step.append(len(set(read)))
        return real_step(run, batch)

    monkeypatch.setattr(reader, "read_items", items)
    monkeypatch.setattr(loop, "_step", step)
    backbone = tiny_backbone(tmp_path / "backbone")
    output = cli("train", "dafa", "--backbone", backbone, "--dataset", "many", "--store", url, *s3.cli_options(),
                 "--output", tmp_path / "run", "--batch-size", 16, "--epochs", 1, "--shuffle-window", 40,
                 "--threads", 1, "--eval-split", "test", "--no-progress")
    # the train split's dep segments (written first, one per partition of 20 pairs)
    dep = [s.id for s in local.segments("feature") if s.target["name"] == "dep"]
    train_dep = set(dep[:16])  # the train split's (written first), one per partition of 20 pairs
    # the first step read the pieces of its window alone: 40 of the 288 pairs trained on, at
    # most 2 pieces of the split (the held-out dev spreads them), 5 segments
    assert 0 < at_first_step[0] <= 5
    assert set(read) >= train_dep  # and every piece of the split by the epoch's end
    meta = json.loads((tmp_path / "run" / "best" / "prior.json").read_text())
    trained = meta["fingerprints"]["train"]
    assert trained["store"] == url and trained["storage_options"] == {"endpoint_url": s3.endpoint}
    assert trained["storage_secrets"] == ["key", "secret"] and "testing" not in json.dumps(meta)
    line = next(x.strip() for x in output.splitlines() if x.strip().startswith("prior eval "))
    assert "key, secret are not recorded" in output
    monkeypatch.setenv("PRIOR_STORAGE_OPTIONS", json.dumps({"key": "testing", "secret": "testing"}))
    assert cli(*shlex.split(line)[1:]).strip().splitlines()[-1].startswith("accuracy=")


def test_s3_reader_fetches_each_segments_files_once_and_reads_what_a_local_store_reads(
        s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """Every piece of a segment reads its array files: on an object store they are kept as
    fetched (`SplitReader.files`), so each segment's are fetched once, where a piece a fetch
    cost a round trip each; a local store keeps none (its page cache does)."""
    import fsspec
    import numpy as np

    import prior.trainers.reader as reader
    from prior.featurestore import StoreRef, open_store
    from prior.trainers.split_index import index_split
    from tests.trainers_fixtures import tiny_tokenizer

    local = many_pairs_store(tmp_path / "local", pairs=320, partition=20, splits=("train",))
    bucket = s3.bucket()
    options = {"endpoint_url": s3.endpoint, "key": "testing", "secret": "testing"}
    fsspec.filesystem("s3", **options).put(local.location + "/", f"{bucket}/store/", recursive=True)
    fetched: list[str] = []
    real = reader.array_sources

    def fetch(fs: Any, segment: Any, names: Any, *rest: Any) -> Any:
        fetched.append(segment.id)
        return real(fs, segment, names, *rest)

    monkeypatch.setattr(reader, "array_sources", fetch)
    remote = open_store(StoreRef(f"s3://{bucket}/store", options), create=False)
    readers = [reader.SplitReader(index_split(store, "many", "train", feature="dep"), tiny_tokenizer(), 64, piece=8)
               for store in (remote, local)]
    assert readers[0].files is not None and readers[1].files is None
    positions = np.random.default_rng(3).permutation(320)
    for part in np.array_split(positions, 10):  # 32 pairs from up to 32 pieces of 8: every segment read often
        got, want = (r.read(np.sort(part)) for r in readers)
        assert got.source is not None and want.source is not None
        assert np.array_equal(got.source.batch(got.encoded.seg, got.encoded.wid, got.rows),
                              want.source.batch(want.encoded.seg, want.encoded.wid, want.rows))
        assert np.array_equal(got.encoded.input_ids, want.encoded.input_ids)
    dep = {s.id for s in local.segments("feature") if s.target["name"] == "dep"}
    assert sorted(fetched) == sorted(dep)  # each of the split's 16 dep segments once, none by the local reader


def test_s3_reader_reads_a_compacted_segments_large_shards_by_ranges(
        s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    """A compacted segment's shards on an object store (large: `RANGED_REMOTE_BYTES` set to 0
    here; pieces of 64 values, so that a shard holds many) are never fetched whole: each checked
    once a chunk at a time, then each window's pieces read as one request per shard, their index
    fetched once, the compressed pieces kept in the reader's cache (a window read again fetches
    nothing; with a cache too small to keep them, it fetches them again); the same batches as
    the local store's."""
    import fsspec
    import numpy as np

    import prior.featurestore.segment_files as segment_files
    import prior.featurestore.tensors as tensors
    import prior.trainers.reader as reader
    from prior.featurestore import StoreRef, checked, open_store
    from prior.featurestore.compact import compact_store
    from prior.featurestore.fs import StoreFS
    from prior.trainers.split_index import index_split
    from tests.trainers_fixtures import tiny_tokenizer

    local = many_pairs_store(tmp_path / "local", pairs=320, partition=20, splits=("train",))
    assert tensors.write_flat.__kwdefaults__ is not None
    monkeypatch.setitem(tensors.write_flat.__kwdefaults__, "piece", 64)
    compact_store(local)
    monkeypatch.undo()
    local.refresh()
    bucket = s3.bucket()
    options = {"endpoint_url": s3.endpoint, "key": "testing", "secret": "testing"}
    fsspec.filesystem("s3", **options).put(local.location + "/", f"{bucket}/store/", recursive=True)
    monkeypatch.setattr(segment_files, "RANGED_REMOTE_BYTES", 0)
    checked.forget()
    whole: list[str] = []
    together: list[tuple[str, int]] = []
    tails: list[str] = []
    real_bytes, real_ranges = StoreFS.read_bytes, StoreFS.read_ranges

    def read_bytes(fs: StoreFS, rel: str) -> bytes:
        if not fs.local:
            whole.append(rel)
        return real_bytes(fs, rel)

    def read_ranges(fs: StoreFS, rel: str, spans: Any) -> list[bytes]:
        if not fs.local:
            together.append((rel, len(spans)))
            size = fs.size(rel)
            tails.extend(rel for o, n in spans if o + n == size)
        return real_ranges(fs, rel, spans)

    monkeypatch.setattr(StoreFS, "read_bytes", read_bytes)
    monkeypatch.setattr(StoreFS, "read_ranges", read_ranges)
    remote = open_store(StoreRef(f"s3://{bucket}/store", options), create=False)
    index = index_split(remote, "many", "train", feature="dep")
    readers = [reader.SplitReader(index, tiny_tokenizer(), 64, piece=8),
               reader.SplitReader(index_split(local, "many", "train", feature="dep"), tiny_tokenizer(), 64, piece=8)]
    (dep,) = [s for s in remote.segments("feature") if s.target["name"] == "dep"]
    shards = [f"{dep.folder}/arrays/{n}/c/0" for n in ("trigram", "subgraph")]
    # the large shards checked up front (before loader workers fork), once
    streamed: list[str] = []
    real_check = checked._check_streamed

    def check(fs: StoreFS, segment: Any, inner: str) -> None:
        streamed.append(inner)
        real_check(fs, segment, inner)

    monkeypatch.setattr(checked, "_check_streamed", check)
    assert readers[0].check_shards() > 2 and readers[1].check_shards() == 0
    assert all(checked.is_verified(remote.fs, dep, f"arrays/{n}/c/0") for n in ("trigram", "subgraph"))
    assert len(streamed) > 2
    checks = len(streamed)
    assert readers[0].check_shards() > 2 and len(streamed) == checks  # nothing fetched again

    def shard_reads(since: int) -> list[str]:
        return sorted(rel for rel, _ in together[since:] if rel in shards)

    for k in range(4):  # windows of 80 pairs, 10 pieces of 8 each, none read before
        part = np.random.default_rng(k).permutation(np.arange(80 * k, 80 * (k + 1)))
        before = len(together)
        got, want = (r.read(np.sort(part)) for r in readers)
        assert got.source is not None and want.source is not None
        assert np.array_equal(got.source.batch(got.encoded.seg, got.encoded.wid, got.rows),
                              want.source.batch(want.encoded.seg, want.encoded.wid, want.rows))
        # one request for each shard's pieces (and, on the first read, one for its index)
        assert shard_reads(before) == sorted(shards * (2 if k == 0 else 1))
    assert whole and not set(whole) & set(shards)  # (a sentence entry's segment is read whole and kept)
    assert sorted(t for t in tails if t in shards) == sorted(shards)  # each index fetched once
    # 0.002 MB: 262 bytes for what is fetched, which keeps neither a piece nor the shard's index;
    # fetching them again, the reader says so, and names a --cache-mb that keeps them
    for cache_mb, again in ((reader.DEFAULT_CACHE_MB, 0), (0.002, 2)):
        fresh = reader.SplitReader(index, tiny_tokenizer(), 64, piece=8, cache_mb=cache_mb)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="prior.trainers.reader"):
            first = fresh.read(np.arange(80))
            fresh.pieces.clear()  # the decoded pieces dropped: the compressed ones are what remains
            before = len(together)
            second = fresh.read(np.arange(80))
        assert shard_reads(before) == sorted(shards * again)
        assert first.source is not None and second.source is not None
        assert np.array_equal(first.source.batch(first.encoded.seg, first.encoded.wid, first.rows),
                              second.source.batch(second.encoded.seg, second.encoded.wid, second.rows))
        warned = [r.getMessage() for r in caplog.records]
        assert fresh.files is not None and fresh.files.thrashing == bool(again)
        assert warned == [] if not again else (len(warned) == 1 and "fetched pair values of many/train" in warned[0]
                                               and "--cache-mb 0.002" in warned[0])
    # 0.03 MB: what is fetched has 3.9 KB, a third of what the window's pieces take, while the
    # sentences' shares hold theirs with room to spare: once it fetches again, they lend it
    # their spare room (the bound the same), and from then on a read fetches nothing
    lending = reader.SplitReader(index, tiny_tokenizer(), 64, piece=8, cache_mb=0.03)
    assert lending.files is not None
    bounds = sum(c.max_bytes for c in (lending.parses, lending.segments, lending.indexes, lending.files,
                                        lending.pieces))
    fetched = []
    while len(fetched) < 5 and (not fetched or fetched[-1]):
        before = len(together)
        lending.read(np.arange(80))
        lending.pieces.clear()
        fetched.append(len(shard_reads(before)))
    # the second read fetches them again; the reader lends at its end, so the read after next
    # (the third's pieces fetched once more) fetches nothing
    assert fetched[0] == fetched[1] > 0 and len(fetched) == 4 and fetched[3] == 0, fetched
    assert lending.files.max_bytes > lending.files.nbytes > 3932
    assert sum(c.max_bytes for c in (lending.parses, lending.segments, lending.indexes, lending.files,
                                     lending.pieces)) == bounds
    checked.forget()


def test_s3_training_from_a_compacted_store_read_by_ranges_equals_the_local_run(
        s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A compacted store on S3 whose every shard is read by ranges (`RANGED_REMOTE_BYTES` 0)
    trains `dafa` to the very weights of a run on the local copy (one thread, 2 loader workers:
    the ranges, the kept pieces and the streamed checks give the same batches)."""
    import fsspec
    from safetensors.torch import load_file

    import prior.featurestore.segment_files as segment_files
    import prior.featurestore.tensors as tensors
    from prior.featurestore import checked
    from prior.featurestore.compact import compact_store
    from prior.featurestore.fs import StoreFS

    local = many_pairs_store(tmp_path / "local", pairs=320, partition=20, splits=("train",))
    assert tensors.write_flat.__kwdefaults__ is not None
    monkeypatch.setitem(tensors.write_flat.__kwdefaults__, "piece", 64)  # shards of many pieces
    compact_store(local)
    monkeypatch.undo()
    bucket = s3.bucket()
    fsspec.filesystem("s3", **{"endpoint_url": s3.endpoint, "key": "testing", "secret": "testing"}).put(
        local.location + "/", f"{bucket}/store/", recursive=True)
    monkeypatch.setattr(segment_files, "RANGED_REMOTE_BYTES", 0)
    checked.forget()
    ranges: list[str] = []
    real_ranges = StoreFS.read_ranges

    def read_ranges(fs: StoreFS, rel: str, spans: Any) -> list[bytes]:
        if not fs.local:
            ranges.append(rel)
        return real_ranges(fs, rel, spans)

    monkeypatch.setattr(StoreFS, "read_ranges", read_ranges)  # (the loader's workers are forked: counted here
    # only for what this process reads: the dev split's)
    checks = tmp_path / "checks.txt"  # the processes that check a shard (forked workers included)
    real_check = checked._check_streamed

    def check(fs: StoreFS, segment: Any, inner: str) -> None:
        with open(checks, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        real_check(fs, segment, inner)

    monkeypatch.setattr(checked, "_check_streamed", check)
    backbone = tiny_backbone(tmp_path / "backbone")
    runs = {}
    for name, store, options in (("local", local.location, ()), ("s3", f"s3://{bucket}/store", s3.cli_options())):
        cli("train", "dafa", "--backbone", backbone, "--dataset", "many", "--store", store, *options,
            "--output", tmp_path / name, "--batch-size", 16, "--epochs", 1, "--shuffle-window", 64,
            "--threads", 1, "--workers", 2, "--no-progress", "--seed", 3)
        runs[name] = load_file(str(tmp_path / name / "last" / "model.safetensors"))
    assert any("/arrays/" in rel and rel.endswith("/c/0") for rel in ranges)
    assert set(checks.read_text().split()) == {str(os.getpid())}  # checked before the workers forked
    assert runs["local"].keys() == runs["s3"].keys()
    assert all(bool((runs["local"][k] == runs["s3"][k]).all()) for k in runs["local"])
    checked.forget()
