"""Bad input: every problem is an error naming where it is, or a counted skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from prior.errors import DataError, NotFoundError, PriorError
from prior.pipeline.datasets import read_split

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PRIOR_DATA_DIR", raising=False)
    monkeypatch.setenv("PRIOR_NO_HUB", "1")


RTE_HEADER = "index\tsentence1\tsentence2\tlabel"


def rte_file(tmp_path: Path, rows: list[str]) -> Path:
    p = tmp_path / "rte" / "dev.tsv"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("\n".join([RTE_HEADER, *rows]) + "\n", encoding="utf-8")
    return p


def test_datasets_missing_explicit_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "dev.tsv"
    with pytest.raises(NotFoundError) as e:
        read_split("rte", "dev", path=missing)
    assert str(missing) in str(e.value)
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, PriorError)


def test_datasets_missing_split_lists_places_searched(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIOR_DATA_DIR", str(tmp_path))
    with pytest.raises(NotFoundError) as e:
        read_split("snli", "train")
    msg = str(e.value)
    assert str(tmp_path / "snli" / "snli_1.0_train.jsonl") in msg
    assert str(REPO / "data" / "snli" / "snli_1.0_train.jsonl") in msg
    assert "PRIOR_NO_HUB" in msg and "PRIOR_DATA_DIR" in msg


def test_datasets_unknown_dataset_lists_known_names() -> None:
    with pytest.raises(NotFoundError) as e:
        read_split("glue-foo", "train")
    for name in ("snli", "mnli", "qqp", "mrpc", "stsb", "qnli", "rte", "sick", "sick-r",
                 "scitail", "twitterurl"):
        assert f"'{name}'" in str(e.value)


def test_datasets_unknown_split_lists_splits() -> None:
    with pytest.raises(NotFoundError, match="dev_matched"):
        read_split("mnli", "dev")


def test_datasets_short_row_empty_sentence_bad_label_are_counted(tmp_path: Path) -> None:
    rte_file(tmp_path, [
        "0\tA man sleeps.\tSomeone sleeps.\tentailment",
        "1\tonly two fields",
        "2\t   \tSomeone sleeps.\tentailment",
        "3\tA man sleeps.\tA dog barks.\tcontradiction",
        "4\tA man sleeps.\tA dog barks.\tnot_entailment\textra",
        "5\tA man sleeps.\tA woman sleeps.\tnot_entailment",
    ])
    d = read_split("rte", "dev", data_dir=tmp_path)
    assert [p.row for p in d.pairs] == [2, 7]
    got = [(s.row, s.field) for s in d.skipped]
    assert got == [(3, "(row)"), (4, "sentence1"), (5, "label"), (6, "(row)")]
    assert all(s.file == str(tmp_path / "rte" / "dev.tsv") for s in d.skipped)
    assert d.skipped[1].reason == "empty sentence"
    assert "'contradiction' is not one of ['entailment', 'not_entailment']" in d.skipped[2].reason
    assert d.skip_counts()["expected 4 tab-separated fields, found 2"] == 1


def test_datasets_non_numeric_score_is_counted(tmp_path: Path) -> None:
    p = tmp_path / "stsb" / "sts-dev.csv"
    p.parent.mkdir()
    p.write_text("main-forums\tdeft-forum\t2014\t0001\tn/a\tA.\tB.\n"
                 "main-forums\tdeft-forum\t2014\t0002\tnan\tA.\tB.\n"
                 "main-forums\tdeft-forum\t2014\t0003\t2.4\tA.\tB.\n", encoding="utf-8")
    d = read_split("stsb", "dev", data_dir=tmp_path)
    assert [p.label for p in d.pairs] == [2.4]
    assert [(s.row, s.field) for s in d.skipped] == [(1, "score"), (2, "score")]
    assert "not a number" in d.skipped[0].reason and "not a finite" in d.skipped[1].reason


def test_datasets_non_utf8_is_an_error_with_line_and_offset(tmp_path: Path) -> None:
    p = rte_file(tmp_path, ["0\tA man sleeps.\tSomeone sleeps.\tentailment"])
    with open(p, "ab") as f:
        f.write("1\tCaf\u00e9 au lait.\tA drink.\tentailment\n".encode("latin-1"))
    offset = len((RTE_HEADER + "\n0\tA man sleeps.\tSomeone sleeps.\tentailment\n1\tCaf").encode())
    with pytest.raises(DataError) as e:
        read_split("rte", "dev", data_dir=tmp_path)
    msg = str(e.value)
    assert str(p) in msg and "row 3" in msg and f"byte offset {offset}" in msg
    assert e.value.row == 3 and e.value.file == str(p)


def test_datasets_long_sentence_is_read(tmp_path: Path) -> None:
    long = " ".join(["word"] * 500) + "."
    rte_file(tmp_path, [f"0\t{long}\tShort.\tentailment"])
    d = read_split("rte", "dev", data_dir=tmp_path)
    assert d.pairs[0].text_a == long and len(d.pairs[0].text_a.split()) == 500


def test_datasets_wrong_header_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "rte" / "dev.tsv"
    p.parent.mkdir()
    p.write_text("index\tpremise\thypothesis\tlabel\n0\tA.\tB.\tentailment\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"lacks column\(s\) \['sentence1', 'sentence2'\]"):
        read_split("rte", "dev", data_dir=tmp_path)


def test_datasets_empty_file_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "rte" / "dev.tsv"
    p.parent.mkdir()
    p.write_bytes(b"")
    with pytest.raises(DataError, match="empty"):
        read_split("rte", "dev", data_dir=tmp_path)


def test_datasets_bad_json_line_is_counted(tmp_path: Path) -> None:
    p = tmp_path / "snli" / "snli_1.0_dev.jsonl"
    p.parent.mkdir()
    good = '{"gold_label": "entailment", "sentence1": "A.", "sentence2": "B.", "pairID": "x"}'
    p.write_text("\n".join([good, '{"gold_label": "entail', "[1, 2]",
                            '{"gold_label": "neutral", "sentence1": "A."}', "", good]) + "\n",
                 encoding="utf-8")
    d = read_split("snli", "dev", data_dir=tmp_path)
    assert [p.row for p in d.pairs] == [1, 6]
    assert [(s.row, s.field) for s in d.skipped] == [(2, "(row)"), (3, "(row)"), (4, "sentence2")]
    assert d.skipped[0].reason.startswith("not valid JSON")
    assert d.skipped[2].reason == "field is missing"


def test_issue34_jsonl_nested_100000_levels_is_one_counted_row(tmp_path: Path) -> None:
    """A line nested 100,000 levels deep (a whole line, or a field's value) is a counted skip
    naming its row, not a RecursionError; a build of the file alone fails in one line."""
    from tests.cli_run import one_line_error

    good = '{"sentence1": "A dog runs.", "sentence2": "An animal moves.", "label": "yes"}'
    deep = "[" * 100_000 + "]" * 100_000
    p = tmp_path / "deep.jsonl"
    p.write_text("\n".join([good, deep, '{"sentence1": ' + deep + ', "sentence2": "x", "label": "no"}']) + "\n")
    d = read_split(p, "all", text_a="sentence1", text_b="sentence2", label="label")
    assert [r.row for r in d.pairs] == [1]
    assert [(s.row, s.reason) for s in d.skipped] == [(2, "JSON nested too deeply to read (thousands of levels of [ or {)"),
                                                      (3, "JSON nested too deeply to read (thousands of levels of [ or {)")]
    only = tmp_path / "only.jsonl"
    only.write_text(deep + "\n")
    line = one_line_error("build", "--dataset", only, "--features", "sdoi", "--parser", "spacy", "--workers", 0,
                          "--store", tmp_path / "s")
    assert "nested too deeply" in line and "only.jsonl" in line


def test_datasets_twitter_bad_votes_counted(tmp_path: Path) -> None:
    p = tmp_path / "twitterurl" / "Twitter_URL_Corpus_test.txt"
    p.parent.mkdir()
    p.write_text("A.\tB.\t(2,6)\thttps://t.co/x\nA.\tB.\t(7,6)\thttps://t.co/x\n"
                 "A.\tB.\tyes\thttps://t.co/x\n\nA.\tB.\n", encoding="utf-8")
    d = read_split("twitterurl", "test", data_dir=tmp_path)
    assert [(p.row, p.label) for p in d.pairs] == [(1, "not_paraphrase")]
    assert [s.row for s in d.skipped] == [2, 3, 5]


def test_datasets_bad_limit_and_named_columns_rejected() -> None:
    with pytest.raises(DataError, match="limit"):
        read_split("rte", "dev", limit=-1)
    with pytest.raises(DataError, match="fixed format"):
        read_split("rte", "dev", text_a="x")
