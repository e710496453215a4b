"""CoNLL-U reading: comments, multi-word tokens, empty nodes, malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest

from prior.errors import DataError, NotFoundError
from prior.pipeline.parsers.conllu import format_conllu, parse_conllu, read_conllu

SLICE = Path(__file__).resolve().parents[1] / "data" / "ud_ewt_slice"

EDGE = """# sent_id = x-1
# text = I don't know.
1\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tknow\tknow\tVERB\tVB\t_\t0\troot\t_\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_


# sent_id = x-2
1\tSue\tSue\tPROPN\tNNP\t_\t2\tnsubj\t_\t_
2\tlikes\tlike\tVERB\tVBZ\t_\t0\troot\t_\t_
3\ttea\ttea\tNOUN\tNN\t_\t2\tobj\t_\t_
3.1\tlikes\tlike\tVERB\tVBZ\t_\t_\t_\t2:conj\t_
4\tand\tand\tCCONJ\tCC\t_\t5\tcc\t_\t_
5\tcoffee\tcoffee\tNOUN\tNN\t_\t3\tconj\t_\t_"""


def test_parsers_conllu_multiword_tokens_and_empty_nodes_skipped() -> None:
    first, second = parse_conllu(EDGE.splitlines())
    assert first.words == ("I", "do", "n't", "know", ".")
    assert first.heads == (4, 4, 4, 0, 4)
    assert first.text == "I don't know."
    assert first.comments[0] == "# sent_id = x-1"
    assert second.words == ("Sue", "likes", "tea", "and", "coffee")  # 3.1 dropped, no final blank line
    assert second.heads == (2, 0, 2, 5, 3) and second.rels[4] == "conj"
    assert second.text is None


def test_parsers_conllu_round_trip() -> None:
    sents = list(parse_conllu(EDGE.splitlines()))
    again = list(parse_conllu(format_conllu(sents).splitlines()))
    assert again == sents


@pytest.mark.parametrize(
    ("line", "field"),
    [("1\tI\tI\tPRON\tPRP\t_\tx\tnsubj\t_\t_", "HEAD"),
     ("1\tI\tI\tPRON\tPRP\t_\t7\tnsubj\t_\t_", "HEAD"),
     ("2\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_", "ID")],
)
def test_parsers_conllu_bad_sentence_names_file_and_field(line: str, field: str) -> None:
    with pytest.raises(DataError, match=f"file f.conllu, row 2, field '{field}'"):
        list(parse_conllu(["# c", line], source="f.conllu"))


def test_parsers_conllu_wrong_column_count() -> None:
    with pytest.raises(DataError, match="row 3: expected 10"):
        list(parse_conllu(["", "1\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_", "2\tbad"], source="f"))


def test_parsers_conllu_missing_file(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="does not exist"):
        read_conllu(tmp_path / "none.conllu")


def test_parsers_conllu_reads_real_slice() -> None:
    train = read_conllu(SLICE / "train.conllu")
    assert len(train) == 100
    assert all(len(s.words) == len(s.heads) and s.heads.count(0) == 1 for s in train)
    assert sum(len(s) for s in train) > 1000
    raw_ids = [ln.split("\t")[0] for ln in (SLICE / "train.conllu").read_text().splitlines()
               if ln and not ln.startswith("#")]
    assert any("-" in i for i in raw_ids) and any("." in i for i in raw_ids)  # the slice has both
