import os

from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import open_store

runner = CliRunner()


def _build(store, *extra):
    return runner.invoke(app, ["build", "--dataset", "snli", "--split", "test", "--features", "sdoi", "--parser",
                               "spacy", "--limit", "5", "--workers", "0", "--store", str(store), *extra])


def test_cli_build_info_verify_frame_gc(tmp_path):
    result = _build(tmp_path / "s")
    assert result.exit_code == 0, result.output
    assert "feature sdoi" in result.output and "store size" in result.output
    again = _build(tmp_path / "s")
    assert again.exit_code == 0 and "new rows" in again.output
    info = runner.invoke(app, ["store", "info", "--store", str(tmp_path / "s")])
    assert info.exit_code == 0 and "sdoi@1" in info.output and "snli" in info.output
    verify = runner.invoke(app, ["store", "verify", "--store", str(tmp_path / "s")])
    assert verify.exit_code == 0 and "ok" in verify.output
    frame = runner.invoke(app, ["store", "frame", "--store", str(tmp_path / "s"), "--dataset", "snli",
                                "--feature", "sdoi", "--rows", "1"])
    assert frame.exit_code == 0 and "sdoi_a" in frame.output and "5 pairs" in frame.output
    gc = runner.invoke(app, ["store", "gc", "--store", str(tmp_path / "s"), "--dry-run"])
    assert gc.exit_code == 0 and "dry run" in gc.output


def test_cli_verify_exits_nonzero_on_damage(tmp_path):
    assert _build(tmp_path / "s").exit_code == 0
    store = open_store(tmp_path / "s")
    seg = store.segments("feature")[0]
    victim = os.path.join(store.location, seg.folder, next(iter(seg.files)))
    with open(victim, "ab") as fh:
        fh.write(b"x")
    result = runner.invoke(app, ["store", "verify", "--store", str(tmp_path / "s")])
    assert result.exit_code == 1
    assert seg.id in result.output and "gc --drop-damaged" in result.output


def test_cli_errors_are_one_clear_line(tmp_path):
    result = runner.invoke(app, ["build", "--dataset", "nosuch", "--store", str(tmp_path / "s")])
    assert result.exit_code == 1 and "unknown dataset 'nosuch'" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["build", "--dataset", "snli", "--features", "wat", "--store", str(tmp_path / "s")])
    assert result.exit_code == 1 and "unknown feature 'wat'" in result.output
    result = runner.invoke(app, ["store", "info", "--store", str(tmp_path / "missing")])
    assert result.exit_code == 1 and "no feature store" in result.output


def test_cli_datasets_and_env(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIOR_DATA_DIR", str(tmp_path / "dd"))
    result = runner.invoke(app, ["datasets"])
    assert result.exit_code == 0 and "mrpc" in result.output and "bundled" in result.output
    env = runner.invoke(app, ["env"])
    assert env.exit_code == 0
    assert str(tmp_path / "dd") in env.output and "PRIOR_STORE" in env.output and "torch" in env.output
    assert "wordnet hierarchy table" in env.output or "not found" in env.output  # WordNet installed or not
    from prior.pipeline.parsers.spacy_backend import find_spacy_model

    (model_line,) = [line for line in env.output.splitlines() if line.startswith("spaCy model")]
    assert find_spacy_model() in model_line and "not installed" not in env.output


def test_cli_env_says_how_to_install_missing_wordnet(tmp_path, monkeypatch):
    """The line for a missing resource holds what to do (the summary line points at it). In a
    fresh process: one that has loaded WordNet reads it from nltk's data path first."""
    import subprocess
    import sys

    env = {**os.environ, "PRIOR_HOME": str(tmp_path / "home"), "PRIOR_WORDNET_DIR": str(tmp_path / "none"),
           "COLUMNS": "400"}
    out = subprocess.run([sys.executable, "-m", "prior.cli.main", "env"], env=env, capture_output=True, text=True,
                         check=True).stdout
    (line,) = [x for x in out.splitlines() if x.startswith("wordnet ")]
    assert "MISSING" in line and "apt-get install -y --no-install-recommends wordnet-base" in line
    assert "python -m nltk.downloader wordnet" in line and "MISSING: wordnet" in out


def test_cli_datasets_fits_80_columns_without_cutting_a_path(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("PRIOR_DATA_DIR", raising=False)
    result = runner.invoke(app, ["datasets"], terminal_width=80)
    assert result.exit_code == 0 and "…" not in result.output
    assert max(map(len, result.output.splitlines())) <= 80
    # paths are shown relative to the folder named once above the table
    from prior.pipeline.datasets.resolve import bundled_dir

    assert result.output.count(str(bundled_dir())) == 1 and "(bundled)" in result.output


def test_boolean_flags_show_as_plain_flag_pairs_in_help():
    for command in (["build"], ["train"], ["embed", "counterfit"], ["embed", "train"]):
        out = runner.invoke(app, [*command, "--help"], terminal_width=200).output
        assert "<bool>" not in out and "--no-no-" not in out, command
    assert "--no-store" in runner.invoke(app, ["embed", "counterfit", "--help"], terminal_width=200).output


def test_cli_build_any_csv_file_with_named_columns(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("q1,q2,same\nHow old is the sun?,What is the age of the sun?,1\nIs it raining?,Where is Paris?,0\n")
    result = runner.invoke(app, ["build", "--dataset", str(path), "--features", "sdoi", "--parser", "spacy",
                                 "--workers", "0", "--store", str(tmp_path / "s"), "--text-a", "q1", "--text-b", "q2",
                                 "--label", "same"])
    assert result.exit_code == 0, result.output
    df = open_store(tmp_path / "s").frame("sdoi", dataset="mine", split="all")
    assert df["label"].to_list() == ["1", "0"] and df["words_a"][0].to_list()[:3] == ["How", "old", "is"]
    bad = runner.invoke(app, ["build", "--dataset", str(path), "--features", "sdoi", "--parser", "spacy",
                              "--workers", "0", "--store", str(tmp_path / "s")])
    assert bad.exit_code == 1 and "sentence1" in bad.output
