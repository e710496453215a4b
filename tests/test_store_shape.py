"""A store knows its own shape (issue 34): each split's latest pairs record carries its manifest
(the rows it holds, the pairs segments it is made of), so a dropped or deleted pairs record is
found by ``verify`` and makes every read of the split fail in one line with the build line that
restores it — never a short frame — and ``gc --drop-damaged`` prints a build line for every
kind of thing it drops."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import ShortSplitError, open_store
from prior.featurestore.export import export_parquet
from prior.featurestore.maintenance import verify_store

runner = CliRunner()


def ok(*args: object) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def one_line_error(*args: object) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert result.output.startswith("error:") and len(result.output.strip().splitlines()) == 1, result.output
    return result.output


def _records(location: Path, kind: str) -> list[Path]:
    return [p for p in sorted((location / "catalog").glob("*.json")) if json.loads(p.read_text())["kind"] == kind]


def _rebuild(line: str, location: Path) -> None:
    args = shlex.split(line)
    assert args[:2] == ["prior", "build"] and "--replace" not in args, line
    ok(*args[1:], "--workers", "0")
    assert verify_store(open_store(location, create=False)).ok


@pytest.fixture(scope="module")
def stepped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """SICK train built in four steps (``--limit`` 10, 25, 40, 50, partitions of 10): four pairs
    segments, as issue 34's 100/250/400/500 build has; and the frame's height."""
    root = tmp_path_factory.mktemp("stepped")
    location = root / "store"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        mp.setenv("PRIOR_NO_PROGRESS", "1")
        for limit in (10, 25, 40, 50):
            ok("build", "--dataset", "sick", "--split", "train", "--features", "sdoi", "--parser", "spacy",
               "--limit", limit, "--partition-size", 10, "--workers", 0, "--store", location)
        assert len(_records(location, "pairs")) == 4
        frame = open_store(location, create=False).frame("sdoi", dataset="sick", split="train")
    return location, frame.height


def test_issue34_a_split_missing_its_second_pairs_record_is_never_read_short(stepped, tmp_path, monkeypatch):
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(stepped[0], location)
    assert stepped[1] == 50
    _records(location, "pairs")[1].unlink()  # the --limit 25 build's 15 rows
    report = verify_store(open_store(location, create=False))
    assert not report.ok and len(report.incomplete) == 1
    line = report.incomplete[0]
    assert "sick/train holds 35 of the 50 rows its manifest records" in line and "not in the catalog" in line
    verified = runner.invoke(app, ["store", "verify", "--store", str(location)])
    assert verified.exit_code == 1 and "run the build line(s) above" in verified.output
    store = open_store(location, create=False)
    for read in (lambda: store.frame("sdoi", dataset="sick", split="train"),
                 lambda: store.scan("sdoi", dataset="sick", split="train").collect(),
                 lambda: store.pairs("sick", "train"),
                 lambda: store.split_rows("sick", "train"),
                 lambda: export_parquet(store, "sdoi", dataset="sick", out=tmp_path / "x")):
        with pytest.raises(ShortSplitError, match="holds 35 of the 50 rows.*restore them with: prior build"):
            read()
    for args in (["store", "frame", "--feature", "sdoi", "--dataset", "sick", "--split", "train"],
                 ["store", "export", "--feature", "sdoi", "--dataset", "sick", "--out", tmp_path / "y"]):
        assert "restore them with: prior build --dataset sick --limit 50 --split train" in one_line_error(
            *args, "--store", location)
    _rebuild(line.split("restore them with: ", 1)[1], location)
    assert open_store(location, create=False).frame("sdoi", dataset="sick", split="train").height == 50


def test_issue34_the_trainers_loader_reads_no_short_split(stepped, tmp_path, monkeypatch):
    from prior.trainers.data import load_split

    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(stepped[0], location)
    _records(location, "pairs")[2].unlink()
    with pytest.raises(ShortSplitError, match="holds 35 of the 50 rows"):
        load_split(open_store(location, create=False), "sick", "train", tokenizer=None, feature="sdoi")


def _restore_line(line: str) -> str:
    return line.split("restore them with: ", 1)[1]


def _reads_fail(store, match: str, tmp_path: Path) -> None:
    """Every read of sick/train is a `ShortSplitError` matching ``match``, with the build line."""
    for read in (lambda: store.frame("sdoi", dataset="sick", split="train"),
                 lambda: store.scan("sdoi", dataset="sick", split="train").collect(),
                 lambda: store.pairs("sick", "train"),
                 lambda: store.split_rows("sick", "train"),
                 lambda: export_parquet(store, "sdoi", dataset="sick", splits=["train"], out=tmp_path / "x")):
        with pytest.raises(ShortSplitError, match=match + ".*restore them with: prior build"):
            read()


def test_issue34_a_split_missing_its_latest_pairs_record_is_never_read_short(stepped, tmp_path, monkeypatch):
    """The latest pairs record carries the manifest, so losing it leaves an older manifest that
    looks whole: the parse and feature records its build committed after it name it."""
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(stepped[0], location)
    _records(location, "pairs")[-1].unlink()  # the --limit 50 build's 10 rows
    report = verify_store(open_store(location, create=False))
    assert not report.ok and len(report.incomplete) == 1, report.damaged
    line = report.incomplete[0]
    assert "sick/train holds 40 of the 50 rows" in line and "not in the catalog" in line, line
    assert "restore them with: prior build --dataset sick --limit 50 --split train" in line, line
    verified = runner.invoke(app, ["store", "verify", "--store", str(location)])
    assert verified.exit_code == 1 and "sick/train holds 40 of the 50 rows" in verified.output
    assert "run the build line(s) above" in verified.output
    _reads_fail(open_store(location, create=False), "holds 40 of the 50 rows", tmp_path)
    assert "restore them with: prior build --dataset sick --limit 50 --split train" in one_line_error(
        "store", "frame", "--feature", "sdoi", "--dataset", "sick", "--split", "train", "--store", location)
    _rebuild(_restore_line(line), location)
    assert open_store(location, create=False).frame("sdoi", dataset="sick", split="train").height == 50


def test_a_split_whose_only_pairs_record_is_gone_is_found_after_compaction(stepped, tmp_path, monkeypatch):
    """After ``compact`` and ``gc`` the store verifies and reads as before; the merged pairs
    record is then the split's only one, and losing it is found (the merged parse and feature
    records keep naming the split's latest pairs), never a split that is simply not there."""
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(stepped[0], location)
    before = open_store(location, create=False).frame("sdoi", dataset="sick", split="train")
    ok("store", "compact", "--store", location)
    ok("store", "gc", "--store", location)
    assert len(_records(location, "pairs")) == 1 and len(_records(location, "feature")) == 1
    after = open_store(location, create=False)
    assert verify_store(after).ok and after.frame("sdoi", dataset="sick", split="train").equals(before)
    _records(location, "pairs")[0].unlink()
    report = verify_store(open_store(location, create=False))
    assert not report.ok and len(report.incomplete) == 1, report.damaged
    assert "sick/train holds 0 of the 50 rows" in report.incomplete[0], report.incomplete
    _reads_fail(open_store(location, create=False), "holds 0 of the 50 rows", tmp_path)
    from prior.trainers.dataset_ref import StoredDataset  # a run finds the split, and its read fails

    assert StoredDataset.resolve(open_store(location, create=False), "sick").splits == ("train",)
    _rebuild(_restore_line(report.incomplete[0]), location)
    assert open_store(location, create=False).frame("sdoi", dataset="sick", split="train").equals(before)


def test_a_build_in_progress_never_makes_its_split_look_short(stepped, tmp_path, monkeypatch):
    """Another builder growing the split: after each of its commits ``verify`` is ok and the
    split reads whole (its pairs are committed before the records that name them)."""
    import prior.featurestore.segments as segments_module
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(stepped[0], location)
    commit = segments_module.commit_segment
    seen: list[tuple[str, bool, int]] = []

    def commit_then_look(*args, **kwargs):
        segment = commit(*args, **kwargs)
        store = open_store(location, create=False)
        seen.append((segment.kind, verify_store(store).ok, store.split_rows("sick", "train").rows.height))
        return segment

    monkeypatch.setattr(segments_module, "commit_segment", commit_then_look)
    build(BuildOptions(dataset="sick", splits=("train",), features=("sdoi",), parser="spacy", limit=60),
          RunOptions(store=str(location), workers=0, progress=False, partition_size=10))
    assert [kind for kind, *_ in seen][:2] == ["sentences", "pairs"] and len(seen) > 3, seen
    assert all(verified for _, verified, _ in seen), seen
    assert [rows for *_, rows in seen] == [50] + [60] * (len(seen) - 1), seen


def test_a_listing_that_missed_the_latest_pairs_record_is_made_again(stepped, tmp_path, monkeypatch):
    """A listing of ``catalog/`` made while another build committed may hold a record without
    the pairs record committed before it: a read or ``verify`` that finds the split short lists
    the catalog once more before it says so."""
    import prior.featurestore.maintenance as maintenance_module
    import prior.featurestore.segments as segments_module

    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(stepped[0], location)
    latest = _records(location, "pairs")[-1].stem
    for module in (segments_module, maintenance_module):
        read = module.read_catalog
        calls = [0]

        def first_misses_it(*args, read=read, calls=calls, **kwargs):
            calls[0] += 1
            found = read(*args, **kwargs)
            return [s for s in found if s.id != latest] if calls[0] == 1 else found

        monkeypatch.setattr(module, "read_catalog", first_misses_it)
        store = open_store(location, create=False)
        if module is segments_module:
            assert store.split_rows("sick", "train").rows.height == 50
        else:
            assert verify_store(store).ok
        assert calls[0] >= 2


@pytest.mark.parametrize(("field", "value"), [("dataset", "../x"), ("pairs", "nope"), ("rows", -1),
                                            ("recipe", {"dataset": "--code=/x/evil.py"}), ("code", "x")])
def test_a_record_that_names_its_splits_badly_is_damaged(stepped, tmp_path, monkeypatch, field, value):
    """The splits a record names are data someone may hand you: checked with the record (names,
    a segment id, a row count, a recipe by its schema), its checksum recomputed or not."""
    from prior.featurestore.catalog import record_checksum

    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(stepped[0], location)
    record = _records(location, "feature")[-1]
    raw = json.loads(record.read_text())
    pairs = _records(location, "pairs")[-1].stem
    raw["meta"]["splits"] = [{"dataset": "sick", "split": "train", "pairs": pairs, "rows": 50,
                              "recipe": {"dataset": "sick", "split": "train", "limit": 50}, field: value}]
    raw["checksum"] = record_checksum(raw)
    record.write_text(json.dumps(raw))
    report = verify_store(open_store(location, create=False))
    assert report.damaged_records == [f"catalog/{record.name}"], report.damaged
    assert "records the splits its build read" in report.damaged[0] and "evil" not in " ".join(report.damaged)


def test_compaction_keeps_the_manifest_true(stepped, tmp_path, monkeypatch):
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(stepped[0], location)
    ok("store", "compact", "--table", "pairs", "--max-rows", 30, "--store", location)  # merges some, not all
    ok("store", "compact", "--table", "pairs", "--store", location)  # and the merged one again
    assert len(_records(location, "pairs")) == 1
    assert verify_store(open_store(location, create=False)).ok
    assert open_store(location, create=False).frame("sdoi", dataset="sick", split="train").height == 50


def _flip_rows(record: Path) -> None:
    """Flip a digit after ``"rows": `` in a record (its checksum no longer matches)."""
    text = record.read_text()
    match = re.search(r'"rows": (\d)', text)
    assert match is not None
    digit = match.group(1)
    record.write_text(text[:match.start(1)] + str((int(digit) + 1) % 10) + text[match.end(1):])


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """RTE dev, 6 pairs, one build: sdoi and dep (DAFA's matrices and the IDF table they read)."""
    root = tmp_path_factory.mktemp("whole")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        mp.setenv("PRIOR_NO_PROGRESS", "1")
        ok("build", "--dataset", "rte", "--split", "dev", "--features", "sdoi,dep", "--parser", "spacy",
           "--limit", 6, "--workers", 0, "--store", root / "store")
    return root / "store"


@pytest.mark.parametrize("kind", ["pairs", "sentences", "parses", "feature", "resource"])
def test_issue34_gc_drop_damaged_prints_a_build_line_for_every_kind_it_drops(whole, tmp_path, monkeypatch, kind):
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(whole, location)
    before = open_store(location, create=False).frame("dep", dataset="rte", split="dev")
    _flip_rows(_records(location, kind)[0])
    assert not verify_store(open_store(location, create=False)).ok
    output = ok("store", "gc", "--drop-damaged", "--store", location)
    lines = [line.split("with: ", 1)[1] for line in output.splitlines()
             if line.startswith("rebuild what was dropped with: ")]
    assert lines, output
    for line in lines:
        _rebuild(line, location)
    assert open_store(location, create=False).frame("dep", dataset="rte", split="dev").equals(before)


def test_a_lost_replacing_build_names_its_own_file_and_the_replace(tmp_path, monkeypatch):
    """The latest pairs record came from a build that replaced the split's rows with another
    file's: without it the split would read the older file's rows. The line names the newer
    file (from the later records) and says the build must replace the rows again."""
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    files = {}
    for name, rows in (("old", [("A man plays.", "A person plays.", 1), ("The cat sat.", "A dog ran.", 0)]),
                       ("new", [("Two women talk.", "Two people speak.", 1), ("It rains.", "It is sunny.", 0)])):
        files[name] = tmp_path / f"{name}.csv"
        files[name].write_text("sentence1,sentence2,label\n" + "".join(f"{a},{b},{y}\n" for a, b, y in rows))
    common = ["--name", "mine", "--features", "sdoi", "--parser", "spacy", "--workers", 0, "--store", location]
    ok("build", "--dataset", files["old"], *common)
    ok("build", "--dataset", files["new"], "--replace", *common)
    texts = open_store(location, create=False).frame("sdoi", dataset="mine", split="all")["text_a"].to_list()
    assert texts == ["Two women talk.", "It rains."]
    _records(location, "pairs")[-1].unlink()
    report = verify_store(open_store(location, create=False))
    assert not report.ok and len(report.incomplete) == 1, report.damaged
    line = report.incomplete[0]
    assert f"restore them with: prior build --dataset {files['new']} --name mine --split all" in line, line
    assert line.endswith(" with --replace (the rows that are gone were read from another file, sha256 "
                         f"{_sha256(files['new'])[:12]}, than those the split holds now)"), line
    with pytest.raises(ShortSplitError, match="with --replace"):
        open_store(location, create=False).frame("sdoi", dataset="mine", split="all")
    rebuild = _restore_line(line).split(" with --replace ")[0]
    ok(*shlex.split(rebuild)[1:], "--replace", "--workers", 0)
    store = open_store(location, create=False)
    assert verify_store(store).ok and store.frame("sdoi", dataset="mine", split="all")["text_a"].to_list() == texts


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()
