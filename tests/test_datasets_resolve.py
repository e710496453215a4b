"""Where a named dataset's split is read from: path, data_dir / PRIOR_DATA_DIR, bundled, hub."""

from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path

import pytest

from prior.errors import NotFoundError
from prior.pipeline.datasets import dataset_splits, list_datasets, read_split
from prior.pipeline.datasets.labels import SNLI_NO_GOLD
from prior.pipeline.datasets.resolve import bundled_dir

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("PRIOR_DATA_DIR", "PRIOR_BUNDLED_DATA", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PRIOR_NO_HUB", "1")


def copy_rte_dev(root: Path, folder: str = "rte", rows: int = 10) -> Path:
    dst = root / folder / "dev.tsv"
    dst.parent.mkdir(parents=True)
    lines = (DATA / "rte" / "dev.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    dst.write_text("".join(lines[: rows + 1]), encoding="utf-8")
    return dst


def test_datasets_bundled_dir_is_repo_data() -> None:
    assert bundled_dir() == DATA


def test_datasets_prior_data_dir_wins_over_bundled(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    copy_rte_dev(tmp_path)
    assert len(read_split("rte", "dev").pairs) == 200  # bundled
    monkeypatch.setenv("PRIOR_DATA_DIR", str(tmp_path))  # read at call time
    d = read_split("rte", "dev")
    assert d.origin == "data_dir" and len(d.pairs) == 10
    # a split missing from the data dir falls through to the bundled slice
    assert read_split("rte", "train").origin == "bundled"


def test_datasets_data_dir_argument_wins_over_env(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    copy_rte_dev(tmp_path / "a", rows=3)
    copy_rte_dev(tmp_path / "b", rows=5)
    monkeypatch.setenv("PRIOR_DATA_DIR", str(tmp_path / "a"))
    assert len(read_split("rte", "dev", data_dir=tmp_path / "b").pairs) == 5


def test_datasets_explicit_path_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_rte_dev(tmp_path / "env", rows=3)
    monkeypatch.setenv("PRIOR_DATA_DIR", str(tmp_path / "env"))
    f = copy_rte_dev(tmp_path / "mine", rows=7)
    assert len(read_split("rte", "dev", path=f).pairs) == 7
    assert len(read_split("rte", "dev", path=f.parent).pairs) == 7  # a dataset folder
    assert len(read_split("rte", "dev", path=tmp_path / "mine").pairs) == 7  # a data dir


def test_datasets_official_folder_names(tmp_path: Path) -> None:
    copy_rte_dev(tmp_path, folder="RTE", rows=4)  # as GLUE's archive unpacks
    assert len(read_split("rte", "dev", data_dir=tmp_path).pairs) == 4


def test_datasets_prior_bundled_data_override(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    copy_rte_dev(tmp_path, rows=2)
    monkeypatch.setenv("PRIOR_BUNDLED_DATA", str(tmp_path))
    d = read_split("rte", "dev")
    assert d.origin == "bundled" and len(d.pairs) == 2
    with pytest.raises(NotFoundError):
        read_split("mrpc", "train")


def test_datasets_read_split_accepts_a_file_path(tmp_path: Path) -> None:
    f = tmp_path / "pairs.tsv"
    shutil.copyfile(DATA / "rte" / "dev.tsv", f)
    d = read_split(f, "dev", text_a="sentence1", text_b="sentence2", label="label")
    assert d.dataset == "pairs" and d.split == "dev" and len(d.pairs) == 200
    assert d.labels == ("entailment", "not_entailment")
    d2 = read_split(str(f), "dev", text_a="sentence1", text_b="sentence2")
    assert d2.label_kind == "none"


def test_datasets_splits_and_listing(tmp_path: Path) -> None:
    assert dataset_splits("mnli") == ("train", "dev_matched", "dev_mismatched")
    assert dataset_splits("sick") == ("train", "trial", "test")
    infos = {i.name: i for i in list_datasets()}
    assert len(infos) == 11
    rte = {s.split: s for s in infos["rte"].splits}
    assert rte["dev"].location == str(DATA / "rte" / "dev.tsv") and rte["dev"].origin == "bundled"
    assert {s.location for s in infos["qqp"].splits} == {"not found"}
    assert infos["stsb"].label_kind == "score" and infos["sick-r"].labels == ()
    copy_rte_dev(tmp_path)
    rte = {s.split: s for s in {i.name: i for i in list_datasets(data_dir=tmp_path)}["rte"].splits}
    assert rte["dev"].origin == "data_dir"


class _ClassLabel:
    def __init__(self, names: list[str]) -> None:
        self.names = names


class _FakeHubSplit:
    def __init__(self, rows: list[dict], label_feature: object) -> None:
        self.rows = rows
        self.features = {"label": label_feature}

    def __getitem__(self, column: str) -> list:
        return [r[column] for r in self.rows]

    def __iter__(self):
        return iter(self.rows)


def fake_datasets(monkeypatch: pytest.MonkeyPatch, rows: list[dict], label_feature: object,
                  calls: list) -> None:
    mod = types.ModuleType("datasets")

    def load_dataset(path: str, name: str | None = None, split: str | None = None):
        calls.append((path, name, split))
        if path == "offline":
            raise ConnectionError("no network")
        return _FakeHubSplit(rows, label_feature)

    mod.load_dataset = load_dataset  # type: ignore[attr-defined]
    mod.__spec__ = types.SimpleNamespace(name="datasets")  # type: ignore[assignment]
    monkeypatch.setitem(sys.modules, "datasets", mod)
    monkeypatch.setattr("prior.pipeline.datasets.hub.hub_unreachable", lambda: None)  # the fake needs no network
    monkeypatch.setattr("importlib.util.find_spec",
                        lambda name, *a: object() if name == "datasets" else None)
    monkeypatch.delenv("PRIOR_NO_HUB")


def test_datasets_hub_branch_with_classlabel(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    calls: list = []
    rows = [{"premise": "A man.", "hypothesis": "A person.", "label": 0},
            {"premise": "A dog.", "hypothesis": "A cat.", "label": -1},
            {"premise": "A girl.", "hypothesis": "A boy.", "label": 2}]
    fake_datasets(monkeypatch, rows, _ClassLabel(["entailment", "neutral", "contradiction"]), calls)
    monkeypatch.setenv("PRIOR_BUNDLED_DATA", str(tmp_path))
    d = read_split("snli", "train")
    assert calls == [("stanfordnlp/snli", None, "train")]
    assert d.origin == "hub" and d.path is None and d.location == "hf://stanfordnlp/snli/train"
    assert [(p.row, p.label) for p in d.pairs] == [(1, "entailment"), (3, "contradiction")]
    assert [(s.row, s.reason) for s in d.skipped] == [(2, SNLI_NO_GOLD)]
    assert len(d.source_sha256) == 64
    infos = {i.name: i for i in list_datasets()}
    assert infos["snli"].splits[0].location == "hub: hf://stanfordnlp/snli/train"


def test_datasets_hub_unlabelled_test_and_offline(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    calls: list = []
    rows = [{"sentence1": "A.", "sentence2": "B.", "label": -1}]
    fake_datasets(monkeypatch, rows, _ClassLabel(["entailment", "not_entailment"]), calls)
    monkeypatch.setenv("PRIOR_BUNDLED_DATA", str(tmp_path))
    d = read_split("rte", "test")
    assert calls == [("nyu-mll/glue", "rte", "test")] and d.label_kind == "none"
    assert d.pairs[0].label is None
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(NotFoundError, match="HF_HUB_OFFLINE"):
        read_split("rte", "test")
    assert len(calls) == 1
    with pytest.raises(NotFoundError, match="not tried \\(not asked for"):
        read_split("rte", "dev", hub=False)


def test_datasets_hub_failure_is_not_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from prior.pipeline.datasets import registry

    calls: list = []
    fake_datasets(monkeypatch, [], _ClassLabel([]), calls)
    spec = registry.SPECS["rte"]
    hub = registry.HubSource("offline", None, "a", "b", "label", {"dev": "validation"})
    monkeypatch.setitem(registry.SPECS, "rte", registry.DatasetSpec(
        spec.name, spec.title, spec.folders, spec.files, spec.reader, spec.scheme,
        spec.aliases, hub))
    monkeypatch.setenv("PRIOR_BUNDLED_DATA", str(tmp_path))
    with pytest.raises(NotFoundError, match="ConnectionError: no network"):
        read_split("rte", "dev")


def test_datasets_no_hub_without_datasets_library(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.delenv("PRIOR_NO_HUB")
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    monkeypatch.setenv("PRIOR_BUNDLED_DATA", str(tmp_path))
    with pytest.raises(NotFoundError, match="`datasets` library is not installed"):
        read_split("rte", "dev")
