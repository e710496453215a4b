"""What `prior train` tells: plain lines in a log, the bar's rate and loader share, the eval line
it prints last (which runs as printed, also for a dataset without a test split), TensorBoard."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import cli, cli_error, one_line_error
from tests.trainers_fixtures import many_pairs_store, tiny_backbone, tiny_store


@pytest.fixture(scope="module")
def backbone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_backbone(tmp_path_factory.mktemp("cli") / "backbone")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(many_pairs_store(tmp_path_factory.mktemp("cli") / "store").location)


def train(backbone: Path, store: Path, out: Path, *extra: object, dataset: str = "many") -> str:
    return cli("train", "bert", "--backbone", backbone, "--dataset", dataset, "--store", store, "--output", out,
               "--batch-size", 8, "--epochs", 2, "--threads", 1, *extra)


def test_train_writes_plain_lines_to_a_log(backbone: Path, store: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Standard error is not a terminal: a line every --log-every steps and at each epoch's end,
    with the rate and the loader's share of the step time."""
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "0")
    output = train(backbone, store, tmp_path / "run", "--log-every", 5)
    steps = [line for line in output.splitlines() if line.startswith("epoch 1/2 step ")]
    assert [line.split(" step ")[1].split(":")[0] for line in steps] == ["5/14", "10/14", "14/14"]
    assert all("pairs/s, loader " in line and "% of step time" in line for line in steps)
    assert sum(line.startswith("epoch 1 done at step 14: train_loss=") for line in output.splitlines()) == 1
    quiet = train(backbone, store, tmp_path / "quiet", "--log-every", 5, "--no-progress")
    assert not any(line.startswith("epoch ") for line in quiet.splitlines())


def test_train_bar_shows_pairs_per_second_and_the_loader_share(backbone: Path, store: Path, tmp_path: Path) -> None:
    from prior.trainers.config import DataSpec, ModelSpec, RunSpec, TrainConfig
    from prior.trainers.loop import train as run

    seen: list[tuple[Any, ...]] = []
    cfg = TrainConfig(ModelSpec("bert", backbone=str(backbone), overrides={"epochs": 1, "batch_size": 8}),
                      DataSpec("many"), RunSpec(output=tmp_path / "run", store=str(store), threads=1))
    run(cfg, progress=lambda *report: seen.append(report))
    stage, done, total, info = seen[-1]
    assert (stage, done, total) == ("epoch 1/1", 14, 14)
    assert info.startswith("loss ") and " pairs/s · loader " in info and info.endswith("%")


@pytest.mark.parametrize(("splits", "suggested"), [(("train", "test"), "test"), (("train", "trial"), "trial"),
                                                    (("train",), "train")])
def test_train_prints_an_eval_line_that_runs_as_printed(backbone: Path, tmp_path: Path, splits: tuple[str, ...],
                                                        suggested: str) -> None:
    """The store and its options are recorded in the checkpoint, so `prior eval RUN --split S`
    reaches it; S is a split the dataset has (a file with a train split only: train, said so)."""
    data = tiny_store(tmp_path / "store", features=(), splits=splits)
    output = train(backbone, Path(data.location), tmp_path / "run", "--no-progress", dataset="toy")
    hint = output.strip().splitlines()
    line = next(x.strip() for x in hint if x.strip().startswith("prior eval "))
    assert line == f"prior eval {tmp_path / 'run'} --split {suggested}"
    assert ("no test or dev split: this scores training pairs" in output) == (suggested == "train")
    scored = cli(*shlex.split(line)[1:])
    assert scored.strip().splitlines()[-1].startswith("accuracy=")


def test_train_report_to_tensorboard(backbone: Path, store: Path, tmp_path: Path) -> None:
    train(backbone, store, tmp_path / "run", "--report-to", "tensorboard")
    events = list((tmp_path / "run" / "tensorboard").glob("events.out.tfevents.*"))
    assert events and events[0].stat().st_size > 0
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 2


def test_train_report_to_tensorboard_without_the_package_is_one_line(backbone: Path, store: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # what a machine without it imports
    line = one_line_error("train", "bert", "--backbone", backbone, "--dataset", "many", "--store", store,
                          "--output", tmp_path / "run", "--report-to", "tensorboard")
    assert line == "error: reporting to TensorBoard needs the tensorboard package: pip install 'prior[tensorboard]'"


def test_train_records_storage_options_without_secrets(backbone: Path, store: Path, tmp_path: Path) -> None:
    from prior.trainers.store_record import record_store, split_secrets

    kept, secrets = split_secrets({"endpoint_url": "http://x", "key": "K", "secret": "S", "profile": "p",
                                   "client_kwargs": {"region_name": "r", "aws_session_token": "T"}})
    assert kept == {"endpoint_url": "http://x", "profile": "p", "client_kwargs": {"region_name": "r"}}
    assert secrets == ["key", "secret", "client_kwargs.aws_session_token"]
    from prior.featurestore import StoreRef

    assert "K" not in json.dumps(record_store(StoreRef("s3://b/s", {"key": "K", "anon": False})))


def test_train_passes_cache_mb_to_the_run(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`prior train --cache-mb` reaches the run's config (what each loader reader keeps);
    without it the run keeps the reader's default; below 1 it is refused."""
    import prior.trainers.loop as loop

    seen: list[float | None] = []

    def record(cfg: Any, **_: Any) -> dict[str, Any]:
        seen.append(cfg.run.cache_mb)
        return {}

    monkeypatch.setattr(loop, "train", record)
    for extra in (("--cache-mb", 384), ()):
        cli("train", "bert", "--dataset", "many", "--store", store, "--output", tmp_path / "run", *extra)
    assert seen == [384.0, None]
    assert "--cache-mb" in cli_error("train", "bert", "--dataset", "many", "--store", store, "--cache-mb", 0, code=2)

