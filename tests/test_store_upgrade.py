"""``prior store upgrade`` (`prior.featurestore.upgrade`): a store of format 1 converted in place.

On a real version-1 store, written by `prior` as it was before the format changed
(`tests/fixtures/store-v1`, two ``--limit`` builds of the RTE slice): any other command refuses
it in one line naming the upgrade; after the upgrade it verifies and reads exactly the frames the
old code read from it (`tests/fixtures/store-v1-frames.json`, recorded with that code); its splits
carry manifests that catch a dropped pairs segment; a kill at any point of the upgrade leaves a
store that a rerun finishes. The shapes of format 1 older than the fixture (``build_args``
instead of recipes, records without a checksum, entries without options or layouts, parses
without a parser spec) are converted too: these tests replace the ones that checked that the
store read them as they were."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import ShortSplitError, StoreError, open_store
from prior.featurestore import recipe as rc
from prior.featurestore.catalog import CATALOG, record_checksum, record_problem
from prior.featurestore.maintenance import verify_store
from prior.featurestore.missing import restore_line
from prior.featurestore.recipe import FeatureRecipe, Recipe
from prior.featurestore.upgrade import recipe_from_build_args, upgrade_store

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture
def v1(tmp_path: Path) -> Path:
    location = tmp_path / "store"
    shutil.copytree(FIXTURES / "store-v1", location)
    return location


def _frames(location: Path) -> dict[str, dict]:
    store = open_store(location, create=False)
    out = {}
    for feature in ("sdoi", "dep"):
        for split in ("dev", "test"):
            df = store.frame(feature, dataset="rte", split=split)
            text = json.dumps(df.to_dicts(), sort_keys=True, default=str)
            out[f"{feature} rte/{split}"] = {"rows": df.height, "columns": df.columns,
                                             "blake2b": hashlib.blake2b(text.encode(), digest_size=16).hexdigest()}
    return out


def _records(location: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((location / CATALOG).glob("*.json"))]


def test_a_version_1_store_is_refused_in_one_line_naming_the_upgrade(v1: Path) -> None:
    with pytest.raises(StoreError, match="format version 1; convert it once, in place, with `prior store upgrade"):
        open_store(v1, create=False)
    for args in (["store", "verify"], ["store", "info"], ["store", "frame", "--feature", "sdoi", "--dataset", "rte"],
                 ["build", "--dataset", "rte", "--split", "dev", "--limit", "2", "--features", "sdoi"]):
        result = runner.invoke(app, [*args, "--store", str(v1)])
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert result.output.startswith("error:") and len(result.output.strip().splitlines()) == 1, result.output
        assert f"prior store upgrade --store {v1}" in result.output


def test_upgrade_converts_the_real_version_1_store_and_reads_what_the_old_code_read(v1: Path) -> None:
    before = {p.name for p in (v1 / "segments").iterdir()}
    result = runner.invoke(app, ["store", "upgrade", "--store", str(v1)])
    assert result.exit_code == 0, result.output
    assert "format 1 -> 2" in result.output and "converted" in result.output
    assert json.loads((v1 / "STORE.json").read_text())["version"] == 2
    assert {p.name for p in (v1 / "segments").iterdir()} == before  # no segment's files change
    assert verify_store(open_store(v1, create=False)).ok
    assert _frames(v1) == json.loads((FIXTURES / "store-v1-frames.json").read_text())
    pairs = [r for r in _records(v1) if r["kind"] == "pairs"]
    assert sorted((r["target"]["split"], r["meta"]["manifest"]["rows"], len(r["meta"]["manifest"]["segments"]))
                  for r in pairs) == [("dev", 2, 0), ("dev", 4, 1), ("test", 2, 0), ("test", 4, 1)]
    again = runner.invoke(app, ["store", "upgrade", "--store", str(v1)])
    assert again.exit_code == 0 and "nothing to do" in again.output


def test_an_upgraded_store_knows_a_dropped_pairs_segment(v1: Path) -> None:
    upgrade_store(str(v1))
    first = next(r for r in _records(v1) if r["kind"] == "pairs" and r["target"]["split"] == "dev")
    (v1 / CATALOG / f"{first['id']}.json").unlink()
    report = verify_store(open_store(v1, create=False))
    assert not report.ok and len(report.incomplete) == 1
    assert "rte/dev holds 2 of the 4 rows its manifest records" in report.incomplete[0]
    assert "restore them with: prior build --dataset rte --limit 4 --split dev" in report.incomplete[0]
    with pytest.raises(ShortSplitError, match="holds 2 of the 4 rows"):
        open_store(v1, create=False).frame("sdoi", dataset="rte", split="dev")


def _kill_at(location: Path, step: int, home: Path) -> int:
    """Run the upgrade in a fresh process that kills itself (SIGKILL) at its ``step``-th rename
    into place (a record, the lease, STORE.json); its exit code."""
    code = (
        "import os, signal, sys\n"
        "import prior.featurestore.fs as fsmod\n"
        "from prior.featurestore.upgrade import upgrade_store\n"
        "real, count = os.replace, [0]\n"
        "def replace(a, b):\n"
        f"    count[0] += 1\n"
        f"    if count[0] == {step}:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    real(a, b)\n"
        "fsmod.os.replace = replace\n"
        f"upgrade_store({str(location)!r})\n")
    env = {**os.environ, "PRIOR_HOME": str(home), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=300).returncode


def _killed_and_finished(v1: Path, tmp_path: Path, steps: list[int]) -> None:
    done = tmp_path / "done"
    shutil.copytree(v1, done)
    upgrade_store(str(done))
    expected = _frames(done)
    for step in steps:
        copy = tmp_path / f"killed-{step}"
        shutil.copytree(v1, copy)
        assert _kill_at(copy, step, tmp_path / "home") == -signal.SIGKILL
        result = runner.invoke(app, ["store", "upgrade", "--store", str(copy)])  # the lease's process is gone
        assert result.exit_code == 0, result.output
        assert verify_store(open_store(copy, create=False)).ok
        assert _frames(copy) == expected
        gc = runner.invoke(app, ["store", "gc", "--store", str(copy)])  # the killed run's lease is dead at once
        assert gc.exit_code == 0 and not list((copy / "leases").glob("*.json")), gc.output


def _converted(v1: Path) -> int:
    """How many records the upgrade rewrites (those not valid in format 2 as they are)."""
    return sum(record_problem(json.loads(p.read_text()), p.name) is not None for p in (v1 / CATALOG).glob("*.json"))


def test_upgrade_killed_at_the_first_record_the_middle_and_the_marker_is_finished_by_a_rerun(v1, tmp_path):
    n = _converted(v1)
    assert n >= 4  # the pairs records (their manifests)
    # renames into place: the lease file, then one per converted record, then STORE.json
    _killed_and_finished(v1, tmp_path, [2, 1 + n // 2, 2 + n])


@pytest.mark.slow
def test_upgrade_killed_at_every_step_is_finished_by_a_rerun(v1, tmp_path):
    _killed_and_finished(v1, tmp_path, list(range(1, _converted(v1) + 3)))


# --------------------------------------------------------------------------- older shapes of format 1
@pytest.mark.parametrize(("args", "options", "expected"), [
    (["--dataset", "/d/my.csv", "--name", "mine", "--data-dir", "/d", "--text-a", "first", "--label", ""], None,
     Recipe(dataset="/d/my.csv", name="mine", data_dir="/d", columns={"text_a": "first", "label": None})),
    (["--dataset", "sick"], None, Recipe(dataset="sick")),
    (["--features", "dep", "-o", "dep.nu=0.25"], {"nu": 0.25}, Recipe(features=(FeatureRecipe("dep", {"nu": 0.25}),))),
    (["--features", "emb", "--embeddings", "/v.vec"], {},
     Recipe(features=(FeatureRecipe("emb", {}, {"embeddings": "/v.vec"}),))),
])
def test_old_build_args_read_as_recipes(args: list[str], options: dict | None, expected: Recipe) -> None:
    assert recipe_from_build_args(args, options) == expected
    assert rc.read_recorded({"recipe": expected.to_dict(), "build_args": ["--dataset", "x"]}) == expected


def _to_old_format(store: Path) -> int:
    """Rewrite a store's records as the oldest `prior` of format 1 wrote them: ``build_args``
    instead of ``recipe``, no manifest, no checksum, no layout of an entry, no parser spec of a
    parse; and mark it format 1."""
    changed = 0
    for path in sorted((store / CATALOG).glob("*.json")):
        raw = json.loads(path.read_text())
        meta, target = raw.get("meta") or {}, raw["target"]
        if raw["kind"] == "pairs":
            r = meta.pop("recipe")
            meta.pop("manifest")
            meta["build_args"] = ["--dataset", r["dataset"], "--name", r["name"], "--text-a", "first",
                                  "--text-b", "second"]
        elif raw["kind"] == "feature":
            target.pop("recipe")
            target.pop("layout")
            target["build_args"] = ["--features", "sdoi", "-o", "sdoi.relation=span-interval"]
        elif raw["kind"] == "parses":
            target.pop("spec")
        raw.pop("checksum")
        path.write_text(json.dumps(raw))
        changed += 1
    (store / "STORE.json").write_text(json.dumps({"format": "prior-store", "version": 1}))
    return changed


def test_a_store_of_the_oldest_records_prints_the_same_build_lines_once_upgraded(tmp_path: Path) -> None:
    data = tmp_path / "my.csv"
    data.write_text("first,second,label\nA man is cooking.,A person cooks.,1\nThe cat sleeps.,A dog runs.,0\n")
    result = runner.invoke(app, [
        "build", "--dataset", str(data), "--name", "mine", "--text-a", "first", "--text-b", "second",
        "--features", "sdoi", "-o", "sdoi.relation=span-interval", "--parser", "spacy", "--limit", "1",
        "--workers", "0", "--store", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output

    def lines() -> tuple[str, str]:
        store = open_store(tmp_path / "s", create=False)
        return restore_line(store, "mine", "all"), store.missing_split("mine", "test")

    new = lines()
    entry = open_store(tmp_path / "s", create=False).entries()[0].key
    frame = open_store(tmp_path / "s", create=False).frame("sdoi", dataset="mine", split="all", entry=entry)
    assert _to_old_format(tmp_path / "s") >= 4
    with pytest.raises(StoreError, match="prior store upgrade"):
        lines()
    report = upgrade_store(str(tmp_path / "s"))
    assert report.upgraded and not report.damaged and len(report.converted) >= 4
    assert lines() == new
    store = open_store(tmp_path / "s", create=False)
    assert verify_store(store).ok
    assert store.frame("sdoi", dataset="mine", split="all", entry=entry).equals(frame)
    parses = [r for r in _records(tmp_path / "s") if r["kind"] == "parses"]
    assert parses and all(r["target"]["spec"] == "spacy" for r in parses)  # a spaCy parse recorded no spec
    record = next(r for r in _records(tmp_path / "s") if r["kind"] == "feature")
    assert record["target"]["layout"]["kind"] == "sentence-mask"


def test_a_record_whose_checksum_no_longer_matches_is_left_damaged(v1: Path) -> None:
    path = next(p for p in sorted((v1 / CATALOG).glob("*.json")) if json.loads(p.read_text())["kind"] == "pairs")
    raw = json.loads(path.read_text())
    raw["rows"] += 1  # changed after its checksum was written
    path.write_text(json.dumps(raw))
    report = upgrade_store(str(v1))
    assert [line.split(":")[0] for line in report.damaged] == [f"{CATALOG}/{path.name}"]
    assert raw["checksum"] != record_checksum(raw)
    assert not verify_store(open_store(v1, create=False)).ok
