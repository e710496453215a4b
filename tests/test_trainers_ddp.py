"""Elastic determinism across ranks: with a fixed global batch, a run on 1 rank and a run on 2
ranks (DDP, gloo on CPU, two processes started by torch.multiprocessing) see the same pairs in
the same optimizer steps, a multi-window split's lanes included."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
import torch.multiprocessing as mp

from tests.trainers_fixtures import many_pairs_store, tiny_backbone


def _config(store: Path, backbone: Path, out: Path) -> Any:
    from prior.trainers.config import DataSpec, ModelSpec, RunSpec, TrainConfig

    return TrainConfig(ModelSpec("dafa", backbone=str(backbone), overrides={"epochs": 2, "batch_size": 6, "lr": 1e-3}),
                       DataSpec("many", window=32, piece=8),
                       RunSpec(output=out, store=str(store), threads=1, progress=False, workers=0))


def _recorded_train(cfg: Any, log: Path) -> None:
    """`train(cfg)`, writing which pairs (positions, weight 1) each step of this rank served."""
    import prior.trainers.loop as loop

    steps: list[dict[str, Any]] = []
    real = loop._step

    def step(run: Any, batch: Any) -> float:
        real_pairs = batch.positions[batch.weights > 0]
        steps.append({"epoch": batch.epoch, "step": batch.batch, "pairs": sorted(real_pairs.tolist())})
        return real(run, batch)

    loop._step = step
    try:
        loop.train(cfg)
    finally:
        loop._step = real
    log.write_text(json.dumps(steps))


def _rank(rank: int, world: int, port: int, store: str, backbone: str, out: str) -> None:
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                       "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank), "PRIOR_NO_PROGRESS": "1"})
    _recorded_train(_config(Path(store), Path(backbone), Path(out)), Path(out) / f"steps-{rank}.json")
    import torch.distributed

    # the run ended the process group it started: a rank that exits with gloo's threads still
    # holding work aborts while the interpreter shuts down (seen once in this test)
    assert not torch.distributed.is_initialized()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_ddp_one_and_two_ranks_see_the_same_pairs_per_step(tmp_path: Path) -> None:
    store = many_pairs_store(tmp_path / "store").location
    backbone = tiny_backbone(tmp_path / "backbone")
    _recorded_train(_config(Path(store), backbone, tmp_path / "one"), tmp_path / "one.json")
    two = tmp_path / "two"
    two.mkdir()
    try:
        mp.start_processes(_rank, args=(2, _free_port(), store, str(backbone), str(two)), nprocs=2,
                           start_method="spawn", join=True)
    except mp.ProcessRaisedException as exc:  # pragma: no cover - the reason, when gloo cannot run here
        if "gloo" in str(exc).lower() or "address" in str(exc).lower():
            pytest.skip(f"gloo cannot start two ranks here: {str(exc).splitlines()[-1]}")
        raise
    one = json.loads((tmp_path / "one.json").read_text())
    ranks = [json.loads((two / f"steps-{r}.json").read_text()) for r in range(2)]
    assert len(one) == len(ranks[0]) == len(ranks[1]) == 2 * 18  # 108 pairs, global batch 6: 18 steps an epoch
    for whole, a, b in zip(one, *ranks):
        assert (whole["epoch"], whole["step"]) == (a["epoch"], a["step"]) == (b["epoch"], b["step"])
        assert sorted(a["pairs"] + b["pairs"]) == whole["pairs"]
        assert len(a["pairs"]) == len(b["pairs"]) == 3
    summary = json.loads((two / "summary.json").read_text())
    assert summary["steps"] == 36 and json.loads((two / "best" / "prior.json").read_text())["world_size"] == 2
