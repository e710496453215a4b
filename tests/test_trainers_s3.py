"""Training from a store on S3 (moto's S3 API server on 127.0.0.1): the loader streams it — the
first step is taken before most of the split's feature values were read — and the checkpoint
records the store and its options, not its secrets, so the printed eval line runs with the
credentials given again."""

from __future__ import annotations

import json
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
