"""The store's hints run as printed (issue 35): the parse-selection hint parses every split of the
dataset a read will need (the eval line train prints next reads the test split) and names the
parse once; ``store frame`` checks a feature name before it offers a build; an ``s3://`` store
without s3fs names the extra that installs it."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import open_store
from prior.featurestore.selection import ParseSelectionError, select_parse

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def invoke(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def spacy_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SICK train and test (4 pairs each) parsed by spaCy only: no parse of the default parser."""
    root = tmp_path_factory.mktemp("hints")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        mp.setenv("PRIOR_NO_PROGRESS", "1")
        code, output = invoke("build", "--dataset", "sick", "--split", "train,test", "--features", "sdoi",
                              "--parser", "spacy", "--limit", 4, "--workers", 0, "--store", root / "store")
        assert code == 0, output
    return root / "store"


def test_the_parse_hint_parses_every_split_of_the_dataset(spacy_only: Path, tmp_path: Path, monkeypatch) -> None:
    """A model without a feature reads the default parser's parse, which this store lacks: the
    hint parses train and test, so the eval of test that follows training finds its parse."""
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(spacy_only, location)

    def select(split: str) -> str:
        store = open_store(location, create=False)
        rows = store.pair_rows("sick", split)
        return select_parse(store, rows["key_a"].to_list() + rows["key_b"].to_list(), dataset="sick", split=split)

    with pytest.raises(ParseSelectionError) as err:
        select("train")
    assert err.value.recipe is not None and err.value.recipe.split == "train,test"
    line = str(err.value).split("parse them with\n  ", 1)[1].splitlines()[0]
    assert "--split train,test" in line and "--parser biaffine" in line
    code, output = invoke(*shlex.split(line)[1:], "--workers", "0")
    assert code == 0, output
    assert select("train") == select("test")  # both splits now read the default parser's parse


def test_a_parse_named_by_id_is_named_once(spacy_only: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    store = open_store(spacy_only, create=False)
    (parse,) = store.parse_ids()
    with pytest.raises(ParseSelectionError) as err:
        select_parse(store, ["0" * 32], parse=parse[:12], dataset="sick", split="train")
    assert str(err.value).count(parse[:12]) == 1, str(err.value)


def test_store_frame_checks_the_feature_name_before_it_offers_a_build(spacy_only: Path, tmp_path, monkeypatch):
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    code, output = invoke("store", "frame", "--feature", "depx", "--dataset", "sick", "--store", spacy_only)
    assert code == 1 and "unknown feature 'depx'" in output and "prior build" not in output
    assert "dep" in output and "sdoi" in output and len(output.strip().splitlines()) == 1
    code, output = invoke("store", "frame", "--feature", "wup", "--dataset", "sick", "--split", "train",
                          "--store", spacy_only)
    assert code == 1 and "--features wup" in output  # a feature a build makes: its build is offered


def test_an_s3_store_without_s3fs_names_the_extra(tmp_path: Path) -> None:
    code = ("import sys\n"
            "sys.modules['s3fs'] = None  # as if s3fs were not installed\n"
            "from prior.featurestore import StoreError, open_store\n"
            "try:\n"
            "    open_store('s3://bucket/store', create=False)\n"
            "except StoreError as exc:\n"
            "    print(exc)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "PRIOR_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'prior[s3]'" in out.stdout and "credentials" not in out.stdout, out.stdout
