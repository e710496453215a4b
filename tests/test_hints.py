"""Messages that lead somewhere: every printed "run this" line works as printed, CLI hints
name flags (not Python arguments), bad options and Ctrl-C end in one line, and a file's labels
are listed after its build so a typo shows."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from prior.featurestore import open_store
from prior.pipeline.datasets import SPECS
from tests.cli_run import cli as ok
from tests.cli_run import one_line_error
from tests.trainers_fixtures import tiny_backbone, tiny_store

QUICK = ["--parser", "spacy", "--features", "sdoi", "--workers", "0"]


def hinted_command(message: str) -> list[str]:
    """The `prior …` line a message tells to run, as arguments."""
    line = message.split("add it with: ", 1)[1] if "add it with: " in message else message
    return shlex.split(line[line.index("prior "):])[1:]


def _mine(path: Path, labels: tuple[str, ...] = ("yes", "no", "yes")) -> Path:
    rows = ["A man sleeps.,A person rests.", "A dog runs.,A cat sits.", "A kid plays.,A child plays."]
    path.write_text("sentence1,sentence2,label\n" + "".join(f"{r},{lab}\n" for r, lab in zip(rows, labels)))
    return path


def test_build_without_dataset_lists_the_known_ones(tmp_path: Path) -> None:
    line = one_line_error("build", "--store", tmp_path / "s")
    assert "--dataset is required" in line and all(name in line for name in SPECS)
    assert not (tmp_path / "s").exists()
    assert "--dataset snli" in (Path(__file__).parent.parent / "Makefile").read_text()


def test_issue28_missing_split_of_a_file_prints_a_build_line_that_works(tmp_path: Path) -> None:
    mine, store = _mine(tmp_path / "mine.csv"), tmp_path / "s"
    ok("build", "--dataset", mine, *QUICK, "--store", store)
    line = one_line_error("train", "bert-mini", "--dataset", "mine", "--store", store)
    args = hinted_command(line)
    assert args[:2] == ["build", "--dataset"] and args[2] == str(mine) and "--split" in args
    ok(*args, "--workers", "0")  # as printed (in this process, for speed)
    assert ("mine", "train") in open_store(store, create=False).datasets()


def test_dataset_hints_name_flags_not_python_arguments(tmp_path: Path) -> None:
    unknown = one_line_error("build", "--dataset", "nosuch", "--store", tmp_path / "s")
    assert "--dataset FILE" in unknown and "--text-a COL" in unknown and "read_file" not in unknown
    odd = tmp_path / "odd.csv"
    odd.write_text("q1,q2,same\nHow old is the sun?,What is the age of the sun?,1\n")
    columns = one_line_error("build", "--dataset", odd, *QUICK, "--store", tmp_path / "s")
    assert "--text-a COL --text-b COL --label COL" in columns and "read_file" not in columns
    ok("build", "--dataset", odd, *QUICK, "--store", tmp_path / "s", "--text-a", "q1", "--text-b", "q2",
       "--label", "same")
    missing = one_line_error("store", "info", "--store", tmp_path / "nothing")
    assert "path=" not in missing and "prior build --dataset" in missing


def test_bad_options_end_in_one_line(tmp_path: Path) -> None:
    line = one_line_error("build", "--dataset", "sick", "--limit", 2, *QUICK[:2], "--features", "dep",
                          "-o", "dep.nu=abc", "--workers", 0, "--store", tmp_path / "s")
    assert "-o dep.nu=abc" in line and "'abc'" in line
    assert "not of the form FEATURE.NAME=VALUE" in one_line_error("build", "--dataset", "sick", "-o", "nu",
                                                                  "--store", tmp_path / "s")
    store = tiny_store(tmp_path / "tiny")
    common = ["--dataset", "toy", "--store", store.location, "--epochs", 1, "--output", tmp_path / "run"]
    line = one_line_error("train", "bert-mini", *common, "-o", "nonsense=1")
    assert "model 'bert' has no option(s) nonsense" in line
    line = one_line_error("train", "sgnet-mini", *common, "--backbone", tiny_backbone(tmp_path / "bb"),
                          "-o", "pool=max")
    assert "sgnet option pool must be" in line


def test_a_files_labels_are_listed_after_its_build(tmp_path: Path) -> None:
    out = ok("build", "--dataset", _mine(tmp_path / "typo.csv", ("yes", "no", "yse")), *QUICK,
             "--store", tmp_path / "s")
    assert "labels of typo/all: 3 classes: 'no' 1, 'yes' 1, 'yse' 1" in out
    out = ok("build", "--dataset", "sick", "--split", "test", "--limit", 2, *QUICK, "--store", tmp_path / "s")
    assert "labels of" not in out  # a named dataset's labels are checked by its reader


def _committed(store: Path, kind: str) -> int:
    catalog = store / "catalog"
    if not catalog.is_dir():
        return 0
    return sum(1 for n in os.listdir(catalog) if n.endswith(".json") and ".tmp-" not in n
               and json.loads((catalog / n).read_text()).get("kind") == kind)


def test_issue28_ctrl_c_during_a_build_is_one_line_and_the_store_stays_intact(tmp_path: Path) -> None:
    store = tmp_path / "s"
    # Ctrl-C in a terminal: SIGINT to the whole process group, Dask's worker processes included
    cmd = [sys.executable, "-m", "prior.cli.main", "build", "--dataset", "snli", "--split", "test", "--features", "sdoi",
           "--parser", "spacy", "--limit", "60", "--workers", "2", "--partition-size", "6", "--store", str(store)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PRIOR_NO_PROGRESS="1"), start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while _committed(store, "parses") < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert err.strip().splitlines() == ["interrupted; rerun to continue (the store keeps what was committed)"], err
    assert "Traceback" not in out + err
    assert "ok" in ok("store", "verify", "--store", store)
    ok("build", "--dataset", "snli", "--split", "test", "--features", "sdoi", "--parser", "spacy", "--limit", 60,
       "--workers", 0, "--store", store)
    frame = open_store(store, create=False).frame("sdoi", dataset="snli", split="test")
    assert frame.height == 60 and frame["sdoi_a"].null_count() == 0


def test_a_store_without_parses_or_a_split_names_the_build_for_library_and_cli_alike(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    """The build a store without parses (or without the split asked for) needs is named without
    a flag nested in a command's quotes: ``dataset`` for a library user, ``--dataset`` under the
    `prior` command."""
    import pytest

    import prior.hints as hints
    from prior.cli.recipe import CommandLines
    from prior.errors import NotFoundError

    store = open_store(tmp_path / "s")
    for namer, named in ((hints._words, "`dataset`"), (CommandLines().option, "--dataset")):
        monkeypatch.setattr(hints, "_namer", namer)
        with pytest.raises(NotFoundError) as raised:
            store.parses()
        for message in (str(raised.value), store.missing_split("mine", "train")):
            assert f"`prior build` and {named}" in message and "``" not in message, message
