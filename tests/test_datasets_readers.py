"""Each official reader on real rows of the bundled slices in data/ (counts checked with awk)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from prior.pipeline.datasets import read_split
from prior.pipeline.datasets.labels import SNLI_NO_GOLD, TWITTER_DEBATABLE

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"


@pytest.fixture(autouse=True)
def _bundled_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PRIOR_DATA_DIR", raising=False)
    monkeypatch.delenv("PRIOR_BUNDLED_DATA", raising=False)
    monkeypatch.setenv("PRIOR_NO_HUB", "1")


def labels(d) -> dict:
    return dict(Counter(p.label for p in d.pairs))


def test_datasets_snli_dev_slice() -> None:
    d = read_split("snli", "dev")
    assert d.origin == "bundled" and d.path == DATA / "snli" / "snli_1.0_dev.partial.jsonl"
    assert (len(d.pairs), len(d.skipped)) == (296, 4)
    assert labels(d) == {"entailment": 96, "neutral": 97, "contradiction": 103}
    first = d.pairs[0]
    assert first.row == 1 and first.id == "4705552913.jpg#2r1n" and first.label == "neutral"
    assert first.text_a == "Two women are embracing while holding to go packages."
    assert first.text_b == ("The sisters are hugging goodbye while holding to go packages after "
                            "just eating lunch.")
    assert {s.reason for s in d.skipped} == {SNLI_NO_GOLD}
    assert all(s.field == "gold_label" for s in d.skipped)
    assert d.labels == ("entailment", "neutral", "contradiction") and d.label_kind == "class"


def test_datasets_snli_test_slice_skips_are_counted_by_row() -> None:
    d = read_split("snli", "test")
    assert (len(d.pairs), len(d.skipped)) == (294, 6)
    assert len(d.pairs) + len(d.skipped) == 300
    rows = {p.row for p in d.pairs} | {s.row for s in d.skipped}
    assert rows == set(range(1, 301))
    assert d.pairs[0].text_b == "Four males are playing out in the yard."
    assert d.pairs[0].label == "contradiction"


def test_datasets_mrpc_train_bom_header_and_labels() -> None:
    d = read_split("mrpc", "train")
    assert (len(d.pairs), len(d.skipped)) == (200, 0)
    assert labels(d) == {"equivalent": 138, "not_equivalent": 62}
    first = d.pairs[0]
    assert first.row == 2 and first.id == "702876_702977" and first.label == "equivalent"
    assert first.text_a == ('Amrozi accused his brother, whom he called "the witness", of '
                            "deliberately distorting his evidence.")
    assert not first.text_b.endswith("\r")
    assert d.labels == ("not_equivalent", "equivalent")


def test_datasets_mrpc_test() -> None:
    d = read_split("mrpc", "test")
    assert len(d.pairs) == 200 and labels(d) == {"equivalent": 134, "not_equivalent": 66}
    assert d.pairs[0].text_b == ("Current Chief Operating Officer Mike Butcher and Group Chief "
                                 "Financial Officer Alex Arena will report to So.")


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_datasets_stsb_scores_are_floats(split: str) -> None:
    d = read_split("stsb", split)
    assert len(d.pairs) == 200 and not d.skipped and d.label_kind == "score" and d.labels == ()
    assert all(isinstance(p.label, float) and 0.0 <= p.label <= 5.0 for p in d.pairs)


def test_datasets_stsb_first_row_and_id() -> None:
    d = read_split("stsb", "train")
    first = d.pairs[0]
    assert (first.row, first.text_a, first.text_b, first.label, first.id) == (
        1, "A plane is taking off.", "An air plane is taking off.", 5.0, "MSRvid_2012test_0001")
    assert read_split("stsb", "test").pairs[1].label == 3.6


def test_datasets_qnli_dev_and_unlabelled_test() -> None:
    dev = read_split("qnli", "dev")
    assert len(dev.pairs) == 200 and labels(dev) == {"entailment": 93, "not_entailment": 107}
    assert dev.pairs[0].text_a == "What came into force after the new constitution was herald?"
    assert dev.pairs[0].label == "entailment" and dev.pairs[0].id == "0"
    test = read_split("qnli", "test")
    assert test.label_kind == "none" and len(test.pairs) == 100
    assert all(p.label is None for p in test.pairs)
    assert test.labels == ("entailment", "not_entailment")
    # unbalanced quotes inside a field are text, not CSV quoting
    assert '"quiescent"' in test.pairs[0].text_b


def test_datasets_rte_splits() -> None:
    train = read_split("rte", "train")
    assert len(train.pairs) == 200 and labels(train) == {"entailment": 95, "not_entailment": 105}
    assert train.pairs[0].text_a == "No Weapons of Mass Destruction Found in Iraq Yet."
    assert train.pairs[0].label == "not_entailment"
    dev = read_split("rte", "validation")  # alias
    assert dev.split == "dev" and labels(dev) == {"entailment": 108, "not_entailment": 92}
    assert read_split("rte", "test").label_kind == "none"


def test_datasets_sick_entailment_lowercased() -> None:
    d = read_split("sick", "train")
    assert labels(d) == {"neutral": 137, "entailment": 38, "contradiction": 25}
    trial = read_split("sick", "dev")  # alias of trial
    assert trial.split == "trial" and len(trial.pairs) == 100
    assert trial.pairs[0].label == "contradiction" and trial.pairs[0].id == "4"
    assert trial.pairs[0].text_a == ("The young boys are playing outdoors and the man is "
                                     "smiling nearby")
    test = read_split("sick", "test")
    assert test.path is not None and test.path.name == "SICK_test_annotated.txt"
    assert len(test.pairs) == 200  # CRLF file
    assert not test.pairs[0].text_b.endswith("\r")


def test_datasets_sick_r_relatedness() -> None:
    d = read_split("sick-r", "trial")
    assert d.label_kind == "score" and d.pairs[0].label == 3.6
    assert all(1.0 <= p.label <= 5.0 for p in d.pairs)


def test_datasets_sick_full_release_splits_by_semeval_set() -> None:
    full = DATA / "sick" / "SICK.txt"
    got = {s: read_split("sick", s, path=full) for s in ("train", "trial", "test")}
    assert {s: len(d.pairs) for s, d in got.items()} == {"train": 100, "trial": 50, "test": 100}
    assert sum(labels(d)["neutral"] for d in got.values()) == 164
    first = got["train"].pairs[0]
    assert first.row == 2 and first.label == "neutral" and first.id == "1"
    r = read_split("sick-r", "train", path=full)
    assert r.pairs[0].label == 4.5


def test_datasets_twitterurl_vote_rule() -> None:
    d = read_split("twitterurl", "test")
    assert labels(d) == {"not_paraphrase": 313, "paraphrase": 76}
    assert len(d.skipped) == 31 and {s.reason for s in d.skipped} == {TWITTER_DEBATABLE}
    first = d.pairs[0]
    assert first.label == "paraphrase" and first.row == 1  # (4,6)
    assert first.text_a == ("How an unverified but explosive dossier became a crisis for "
                            "Donald Trump")
    assert d.pairs[1].label == "not_paraphrase"  # (0,6)
    # the 10 records with an extra empty field (lines 421-430 of the slice) are read
    assert [p.row for p in d.pairs if p.row > 420] != []
    assert max(p.row for p in d.pairs + d.skipped) <= 430


def test_datasets_limit_is_first_n_usable_pairs() -> None:
    full = read_split("snli", "dev")
    first_skip = full.skipped[0].row
    d = read_split("snli", "dev", limit=50)
    assert [p.row for p in d.pairs] == [p.row for p in full.pairs[:50]]
    assert all(s.row < d.pairs[-1].row for s in d.skipped)
    assert len(d.skipped) == sum(1 for s in full.skipped if s.row < d.pairs[-1].row)
    assert first_skip > 0
    assert read_split("snli", "dev", limit=0).pairs == []
    assert len(read_split("snli", "dev", limit=10_000).pairs) == 296
    assert d.source_sha256 == full.source_sha256  # the whole file's hash


def test_datasets_source_sha256_is_file_hash() -> None:
    import hashlib

    d = read_split("rte", "dev")
    assert d.path is not None
    assert d.source_sha256 == hashlib.sha256(d.path.read_bytes()).hexdigest()
