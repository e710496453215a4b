"""Readers of formats with no bundled copy (QQP, MultiNLI, SciTail, SNLI .txt, GLUE variants),
on files written in tmp_path in the official layouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prior.pipeline.datasets import read_split
from prior.pipeline.datasets.labels import SNLI_NO_GOLD


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PRIOR_DATA_DIR", raising=False)
    monkeypatch.setenv("PRIOR_NO_HUB", "1")


def write(path: Path, lines: list[str], *, newline: str = "\n", bom: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = newline.join(lines) + newline
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data.encode("utf-8"))
    return path


QQP_HEADER = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate"


def test_datasets_qqp_glue_tsv(tmp_path: Path) -> None:
    p = write(tmp_path / "qqp" / "dev.tsv", [
        QQP_HEADER,
        "133273\t213221\t213222\tHow is the life of a math student? Could you describe your "
        "own experiences?\tWhich level of prepration is enough for the exam jlpt5?\t0",
        "402555\t536040\t536041\tHow do I control my horny emotions?\tHow do you control your "
        "horniness?\t1",
        "360472\t364011\t490273\tWhat causes stool color to change to yellow?\t\t0",
        "1\t2\t3\tA?\tB?\t2",
    ])
    d = read_split("qqp", "dev", data_dir=tmp_path)
    assert [(p.row, p.label, p.id) for p in d.pairs] == [
        (2, "not_duplicate", "133273"), (3, "duplicate", "402555")]
    assert [(s.row, s.field) for s in d.skipped] == [(4, "question2"), (5, "is_duplicate")]
    assert d.skipped[0].reason == "empty sentence"
    assert d.labels == ("not_duplicate", "duplicate") and d.path == p


def test_datasets_qqp_glue_test_is_unlabelled(tmp_path: Path) -> None:
    write(tmp_path / "qqp" / "test.tsv", ["id\tquestion1\tquestion2", "0\tWhy?\tWhy not?"])
    d = read_split("qqp", "test", data_dir=tmp_path)
    assert d.label_kind == "none" and d.pairs[0].label is None


def test_datasets_qqp_quora_release_quoted_multiline(tmp_path: Path) -> None:
    write(tmp_path / "qqp" / "quora_duplicate_questions.tsv", [
        '"id"\t"qid1"\t"qid2"\t"question1"\t"question2"\t"is_duplicate"',
        '0\t1\t2\tWhat is the step by step guide to invest in share market in india?\tWhat is '
        'the step by step guide to invest in share market?\t0',
        '1\t3\t4\t"What is ""this""\nquestion?"\tIs it a question?\t1',
        '2\t5\t6\tLast one?\tYes.\t1',
    ])
    d = read_split("qqp", "all", data_dir=tmp_path)
    assert [p.row for p in d.pairs] == [2, 3, 5]
    assert d.pairs[1].text_a == 'What is "this"\nquestion?' and d.pairs[1].label == "duplicate"
    assert d.pairs[0].label == "not_duplicate"


def _mnli(pair_id: str, gold: str, genre: str = "government") -> str:
    return json.dumps({"annotator_labels": [gold], "genre": genre, "gold_label": gold,
                       "pairID": pair_id, "promptID": "31193",
                       "sentence1": "Conceptually cream skimming has two basic dimensions - "
                                    "product and geography.",
                       "sentence1_binary_parse": "( x )", "sentence1_parse": "(ROOT x)",
                       "sentence2": "Product and geography are what make cream skimming work. ",
                       "sentence2_binary_parse": "( y )", "sentence2_parse": "(ROOT y)"})


def test_datasets_mnli_jsonl_splits_and_gold_dash(tmp_path: Path) -> None:
    write(tmp_path / "multinli_1.0" / "multinli_1.0_dev_mismatched.jsonl",
          [_mnli("31193n", "neutral"), _mnli("1", "-"), _mnli("2", "contradiction")])
    d = read_split("mnli", "validation_mismatched", data_dir=tmp_path)
    assert d.split == "dev_mismatched"
    assert [(p.row, p.label) for p in d.pairs] == [(1, "neutral"), (3, "contradiction")]
    assert d.pairs[0].text_b == "Product and geography are what make cream skimming work."
    assert [(s.row, s.field, s.reason) for s in d.skipped] == [(2, "gold_label", SNLI_NO_GOLD)]


NLI_TXT_HEADER = ("gold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
                  "sentence2_parse\tsentence1\tsentence2\tcaptionID\tpairID\tlabel1\tlabel2\t"
                  "label3\tlabel4\tlabel5")


def test_datasets_snli_txt_release(tmp_path: Path) -> None:
    row = ("neutral\t( ( A person ) ( on ( a horse ) ) )\t( ( A person ) ( is ( training ( "
           "his horse ) ) ) )\t(ROOT ...)\t(ROOT ...)\tA person on a horse jumps over a broken "
           "down airplane.\tA person is training his horse for a competition.\t3416050480.jpg#4"
           "\t3416050480.jpg#4r1n\tneutral\t\t\t\t")
    write(tmp_path / "snli_1.0" / "snli_1.0_train.txt",
          [NLI_TXT_HEADER, row, row.replace("neutral", "-", 1), "too\tshort"])
    d = read_split("snli", "train", data_dir=tmp_path)
    assert len(d.pairs) == 1 and d.pairs[0].row == 2 and d.pairs[0].id == "3416050480.jpg#4r1n"
    assert d.pairs[0].text_a == "A person on a horse jumps over a broken down airplane."
    assert [(s.row, s.field) for s in d.skipped] == [(3, "gold_label"), (4, "(row)")]
    assert "expected 14 tab-separated fields, found 2" in d.skipped[1].reason


def test_datasets_scitail_tsv(tmp_path: Path) -> None:
    write(tmp_path / "SciTailV1.1" / "tsv_format" / "scitail_1.0_dev.tsv", [
        "Based on the list provided of the uses of substances 1-7, estimate the pH of each "
        "unknown and record the number in the data table in the estimated pH column.\t"
        "If a substance has a ph value greater than 7,that indicates that it is base.\tneutral",
        "A wave passes energy.\tWaves transfer energy.\tentails",
        "A.\tB.\tcontradiction",
    ])
    d = read_split("scitail", "dev", data_dir=tmp_path)
    assert [p.label for p in d.pairs] == ["neutral", "entailment"]
    assert d.labels == ("entailment", "neutral")
    assert d.skipped[0].row == 3 and "contradiction" in d.skipped[0].reason


def test_datasets_mrpc_glue_tsv_by_path(tmp_path: Path) -> None:
    p = write(tmp_path / "test.tsv", [
        "index\t#1 ID\t#2 ID\t#1 String\t#2 String",
        "0\t1089874\t1089925\tPCCW's chief operating officer.\tCurrent Chief Operating Officer.",
    ])
    d = read_split("mrpc", "test", path=p)
    assert d.label_kind == "none" and d.pairs[0].id == "1089874_1089925" and d.origin == "path"


def test_datasets_stsb_glue_tsv(tmp_path: Path) -> None:
    header = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
              "sentence2\tscore")
    write(tmp_path / "STS-B" / "dev.tsv", [
        header,
        "0\tmain-captions\tMSRvid\t2012test\t0000\tnone\tnone\tA man with a hard hat is dancing."
        "\tA man wearing a hard hat is dancing.\t5.000",
        "1\tmain-captions\tMSRvid\t2012test\t0002\tnone\tnone\tA young child.\tA child.\tfive",
        "2\tmain-captions\tMSRvid\t2012test\t0003\tnone\tnone\tA.\tB.\t5.5",
    ])
    d = read_split("stsb", "dev", data_dir=tmp_path)
    assert [(p.row, p.label, p.id) for p in d.pairs] == [(2, 5.0, "0")]
    assert [s.reason for s in d.skipped] == ["score 'five' is not a number",
                                             "score '5.5' is outside [0, 5]"]


def test_datasets_sts_original_extra_columns(tmp_path: Path) -> None:
    write(tmp_path / "stsb" / "sts-test.csv", [
        "main-news\theadlines\t2016\t0001\t4.0\tA.\tB.\tsrc1\tsrc2",
        "main-news\theadlines\t2016\t0002\t1.0\tC.",
    ])
    d = read_split("stsb", "test", data_dir=tmp_path)
    assert [(p.label, p.id) for p in d.pairs] == [(4.0, "headlines_2016_0001")]
    assert d.skipped[0].row == 2 and "at least 7" in d.skipped[0].reason
