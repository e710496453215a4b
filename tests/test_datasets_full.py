"""The readers on the full copies in ../shared/data (counts from each folder's SOURCE.md), and
the bundled slices recreated from them byte for byte. Skipped where the copies are absent."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from prior.pipeline.datasets import read_split

REPO = Path(__file__).resolve().parent.parent
SHARED = next((p for p in (REPO.parent / "shared" / "data", Path("/work/shared/data"))
               if p.is_dir()), None)

needs_shared = pytest.mark.skipif(SHARED is None, reason="no ../shared/data beside the repo")

# (dataset, split) -> (pairs, skipped, label counts or None)
EXPECTED = {
    ("snli", "dev"): (1273, 16, {"entailment": 433, "neutral": 421, "contradiction": 419}),
    ("snli", "test"): (1254, 23, {"neutral": 429, "contradiction": 420, "entailment": 405}),
    ("mrpc", "train"): (4076, 0, {"equivalent": 2753, "not_equivalent": 1323}),
    ("mrpc", "test"): (1725, 0, {"equivalent": 1147, "not_equivalent": 578}),
    ("stsb", "train"): (5749, 0, None),
    ("stsb", "dev"): (1500, 0, None),
    ("stsb", "test"): (1379, 0, None),
    ("rte", "train"): (2490, 0, {"entailment": 1249, "not_entailment": 1241}),
    ("rte", "dev"): (277, 0, {"entailment": 146, "not_entailment": 131}),
    ("rte", "test"): (3000, 0, None),
    ("qnli", "dev"): (5463, 0, {"entailment": 2702, "not_entailment": 2761}),
    ("qnli", "test"): (5463, 0, None),
    ("sick", "train"): (4500, 0, {"entailment": 1299, "neutral": 2536, "contradiction": 665}),
    ("sick", "trial"): (500, 0, {"entailment": 144, "neutral": 282, "contradiction": 74}),
    ("sick", "test"): (4927, 0, {"entailment": 1414, "neutral": 2793, "contradiction": 720}),
    ("sick-r", "test"): (4927, 0, None),
    ("twitterurl", "test"): (9334, 786, {"not_paraphrase": 7513, "paraphrase": 1821}),
}


@pytest.fixture(autouse=True)
def _shared_env(monkeypatch: pytest.MonkeyPatch) -> None:
    if SHARED is not None:
        monkeypatch.setenv("PRIOR_DATA_DIR", str(SHARED))
    monkeypatch.setenv("PRIOR_NO_HUB", "1")


@pytest.mark.slow
@needs_shared
@pytest.mark.parametrize(("name", "split"), sorted(EXPECTED))
def test_datasets_full_copies_match_source_counts(name: str, split: str) -> None:
    pairs, skipped, by_label = EXPECTED[(name, split)]
    d = read_split(name, split)
    assert d.origin == "data_dir"
    assert (len(d.pairs), len(d.skipped)) == (pairs, skipped)
    if by_label is not None:
        assert dict(Counter(p.label for p in d.pairs)) == by_label


@pytest.mark.slow
@needs_shared
def test_datasets_full_sick_txt_semeval_sets() -> None:
    full = SHARED / "sick" / "SICK.txt"
    counts = {s: len(read_split("sick", s, path=full).pairs) for s in ("train", "trial", "test")}
    assert counts == {"train": 4439, "trial": 495, "test": 4906}


@pytest.mark.slow
@needs_shared
def test_datasets_slices_are_reproducible(tmp_path: Path) -> None:
    out = tmp_path / "data"
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_slices.py"), "--source",
                    str(SHARED), "--out", str(out)], check=True, capture_output=True)
    for folder in sorted(p for p in out.iterdir() if p.is_dir()):
        for f in folder.iterdir():
            assert filecmp.cmp(f, REPO / "data" / folder.name / f.name, shallow=False), f
