"""The loader's queues: pipes widened where the system allows it, the default start method kept,
and a refusal that leaves a working queue (`prior.trainers.pipes`)."""

from __future__ import annotations

import multiprocessing
import os
import sys

import numpy as np
import pytest

from prior.trainers import pipes
from prior.trainers.pipes import PIPE_BYTES, pipe_capacity, widen, worker_context

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")


def _max_size() -> int:
    with open("/proc/sys/fs/pipe-max-size", encoding="ascii") as f:
        return int(f.read())


def _default_size() -> int:
    """What the system gives a new pipe (16 pages: 64 KiB with 4 KiB pages)."""
    read, write = os.pipe()
    try:
        size = pipe_capacity(read)
        assert size is not None
        return size
    finally:
        os.close(read)
        os.close(write)


@linux
def test_pipes_a_loader_queue_holds_a_batch() -> None:
    context = worker_context()
    assert context is not None
    assert context.get_start_method() == multiprocessing.get_start_method()
    queue = context.Queue()
    assert pipe_capacity(queue._reader.fileno()) == min(PIPE_BYTES, _max_size()) > _default_size()


@linux
def test_pipes_a_plain_queue_is_not_widened() -> None:
    queue = multiprocessing.get_context().Queue()
    assert pipe_capacity(queue._reader.fileno()) == _default_size()


@linux
def test_pipes_a_refused_widening_keeps_the_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    real = pipes.fcntl.fcntl

    def refuse(fd: int, cmd: int, *arg: int) -> int:
        if cmd == pipes._SET:
            raise PermissionError(1, "Operation not permitted")
        return real(fd, cmd, *arg)

    monkeypatch.setattr(pipes.fcntl, "fcntl", refuse)
    context = worker_context()
    assert context is not None
    queue = context.Queue()
    assert not widen(queue._reader.fileno())
    assert pipe_capacity(queue._reader.fileno()) == _default_size()
    queue.put({"grid": np.arange(10, dtype=np.float32)})
    assert np.array_equal(queue.get(timeout=10)["grid"], np.arange(10, dtype=np.float32))


def _send(queue: multiprocessing.Queue, array: np.ndarray) -> None:  # type: ignore[type-arg]
    queue.put(array)


@linux
def test_pipes_a_batch_larger_than_the_pipe_crosses_whole() -> None:
    context = worker_context()
    assert context is not None
    queue = context.Queue()
    array = np.random.default_rng(0).random((32, 128, 128), dtype=np.float32)  # 2 MiB: two writes
    process = context.Process(target=_send, args=(queue, array))
    process.start()
    got = queue.get(timeout=60)
    process.join(60)
    assert np.array_equal(got, array)


def test_pipes_no_call_no_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipes, "_CONTEXTS", {})
    monkeypatch.setattr(pipes, "_SET", None)
    assert worker_context() is None
    assert not widen(0)
