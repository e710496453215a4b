"""Mid-epoch resume: a run killed (SIGKILL) at a random step and resumed ends with the very
weights of an uninterrupted run; Ctrl-C says what can be resumed and exits 130; a bad
``--resume`` folder, a changed store and an output that is a file are one line each."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file

from tests.cli_run import cli, one_line_error
from tests.trainers_fixtures import many_pairs_store, tiny_backbone

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("resume")
    many_pairs_store(root / "store")
    return root / "store", tiny_backbone(root / "backbone")


def train_args(setup: tuple[Path, Path], out: Path, *extra: object) -> list[str]:
    store, backbone = setup
    return [str(a) for a in ("train", "dafa", "--backbone", backbone, "--dataset", "many", "--store", store,
                             "--output", out, "--batch-size", 4, "--epochs", 3, "--lr", "1e-3", "--threads", 1,
                             "--shuffle-window", 32, "--save-every", 5, *extra)]


def start(args: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PRIOR_NO_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    # SIGINT as a terminal gives it, even where this suite was started with it ignored (a job put
    # in the background by a shell that has no job control inherits it ignored)
    return subprocess.Popen([sys.executable, "-m", "prior.cli.main", *args, "--log-every", "1"], env=env,
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def run_until(proc: subprocess.Popen[str], step: int) -> list[str]:
    """The plain log lines (standard error is a pipe) up to the first of step ≥ ``step``."""
    lines = []
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line)
        found = re.match(r"epoch (\d+)/\d+ step (\d+)/\d+:", line)
        if found and (int(found[1]) - 1) * 27 + int(found[2]) >= step:
            return lines
    raise AssertionError("the run ended before step " + str(step) + ":\n" + "".join(lines))


def weights(folder: Path) -> dict:
    return load_file(str(folder / "model.safetensors"))


def test_resume_after_sigkill_gives_the_uninterrupted_weights(setup: tuple[Path, Path], tmp_path: Path) -> None:
    """108 training pairs (12 held out as dev), 27 steps an epoch, 3 epochs, a state every 5
    steps; killed at a random step, resumed, the final and best weights equal those of a run
    never killed, bit for bit (one CPU thread; the saved state holds the weights, AdamW's
    moments, the generator states and the loader's position)."""
    whole = tmp_path / "whole"
    cli(*train_args(setup, whole))
    killed = tmp_path / "killed"
    step = random.Random().randint(6, 60)
    proc = start(train_args(setup, killed))
    run_until(proc, step)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    saved = json.loads((killed / "last" / "trainer_state.json").read_text())["step"]
    assert step - saved <= 5 + 3  # at most --save-every steps lost (and the few the pipe was behind)
    cli("train", "--resume", killed, "--threads", 1)
    for name in ("last", "best"):
        a, b = weights(whole / name), weights(killed / name)
        assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a), f"{name} differs (killed at {step})"
    lines = [json.loads(x) for x in (killed / "metrics.jsonl").read_text().splitlines()]
    expected = [json.loads(x) for x in (whole / "metrics.jsonl").read_text().splitlines()]
    assert [(r["epoch"], r["step"], r["train_loss"], r["dev_accuracy"]) for r in lines] == \
        [(r["epoch"], r["step"], r["train_loss"], r["dev_accuracy"]) for r in expected]


def test_resume_ctrl_c_names_the_step_to_resume_and_exits_130(setup: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = start(train_args(setup, out))
    run_until(proc, 12)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    last = err.strip().splitlines()[-1]
    saved = json.loads((out / "last" / "trainer_state.json").read_text())["step"]
    assert last.startswith("interrupted; stopped at step ") and "Traceback" not in err
    assert last.endswith(f"resume from step {saved} with: prior train --resume {out}")


def test_resume_bad_folders_are_one_line(setup: tuple[Path, Path], tmp_path: Path) -> None:
    assert "no such folder" in one_line_error("train", "--resume", tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    assert "no resumable state in it" in one_line_error("train", "--resume", tmp_path / "empty")
    (tmp_path / "file").write_text("x")
    assert "not a folder" in one_line_error("train", "--resume", tmp_path / "file")
    out = tmp_path / "run"
    cli(*train_args(setup, out, "--epochs", 1))
    (out / "last" / "trainer_state.json").write_text("{not json")
    assert "trainer_state.json is damaged" in one_line_error("train", "--resume", out)


def test_resume_refuses_a_changed_store_in_one_line(setup: tuple[Path, Path], tmp_path: Path) -> None:
    import shutil

    import pyarrow as pa

    from prior.featurestore import open_store

    store = tmp_path / "store"
    shutil.copytree(setup[0], store)
    out = tmp_path / "run"
    cli(*train_args((store, setup[1]), out, "--epochs", 1))
    s = open_store(store, create=False)
    rows = s.pair_rows("many", "train").head(5)
    segs = s.split_segments("many", "train")
    s.write_pairs("many", "train", pa.table({
        "row": pa.array([r + 1000 for r in rows["row"].to_list()], pa.int64()), "pair_key": rows["pair_key"].to_list(),
        "key_a": rows["key_a"].to_list(), "key_b": rows["key_b"].to_list(), "label": rows["label"].to_list(),
        "id": pa.array([None] * 5, pa.string())}), source_sha256=segs[-1].target["source_sha256"], meta=segs[-1].meta)
    line = one_line_error("train", "--resume", out, "--epochs", 2)
    assert "the training split many/train changed since" in line and "120 pairs then, 125 now" in line


def test_resume_options_must_agree_with_the_run(setup: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "run"
    cli(*train_args(setup, out, "--epochs", 1))
    line = one_line_error("train", "--resume", out, "--seed", 7)
    assert "--seed 7 with --resume: the run was started with 42" in line
    cli("train", "dafa", "--resume", out / "last", "--epochs", 2, "--threads", 1)  # more epochs: allowed
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in lines] == [1, 2] and lines[1]["step"] == 2 * lines[0]["step"]


def test_train_output_that_is_a_file_is_one_line(setup: tuple[Path, Path], tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("x")
    line = one_line_error(*train_args(setup, tmp_path / "taken"))
    assert line == f"error: --output {tmp_path / 'taken'}: a file is there; name a folder for the run"


def _drop_lane_cuts(out: Path) -> None:
    """The state as a prior without ``Shuffle.lane_cuts`` wrote it."""
    path = out / "last" / "trainer_state.json"
    state = json.loads(path.read_text())
    del state["order"]["shuffle"]["lane_cuts"]
    path.write_text(json.dumps(state))


def test_resume_of_a_run_started_before_lane_cuts(setup: tuple[Path, Path], tmp_path: Path) -> None:
    """A split of one window was served in the same order before windows were cut where lanes
    start: its run resumes. A larger split's was not: one line."""
    one = tmp_path / "one"
    cli(*train_args(setup, one, "--epochs", 1, "--shuffle-window", 1024))
    _drop_lane_cuts(one)
    cli("train", "--resume", one, "--epochs", 2)
    assert json.loads((one / "last" / "trainer_state.json").read_text())["epoch"] == 2
    many = tmp_path / "many"
    cli(*train_args(setup, many, "--epochs", 1))
    _drop_lane_cuts(many)
    error = one_line_error("train", "--resume", many, "--epochs", 2)
    assert "was trained with another shuffle" in error and "the prior it started with" in error
