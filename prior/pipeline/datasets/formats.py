"""One reader per official file format.

Every reader has the signature ``(path, split, limit) -> Read``; the registry binds the
dataset's label scheme. Which variant of a dataset's formats a file is in is told by its
suffix or header, so an explicit path to any official file of that dataset works.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from prior.errors import DataError
from prior.pipeline.datasets import labels as L
from prior.pipeline.datasets.collect import Collected, Columns, collect
from prior.pipeline.datasets.lines import iter_lines
from prior.pipeline.datasets.tables import Record, iter_jsonl, iter_quoted, iter_tsv, iter_tsv_fixed
from prior.pipeline.datasets.types import LabelKind


@dataclass
class Read:
    collected: Collected
    label_kind: LabelKind


Reader = Callable[[Path, str, int | None], Read]


def _header(path: Path) -> list[str]:
    for line in iter_lines(path):
        return [h.strip() for h in line.text.split("\t")]
    raise DataError("the file is empty (no header line)", file=str(path))


def _tsv(path: Path, columns: Columns, scheme: L.LabelScheme, limit: int | None,
         records: Callable[[Iterator[Record]], Iterator[Record]] | None = None) -> Read:
    """A headed TSV; without the label column in the header the split is unlabelled."""
    header = _header(path)
    if columns.label is not None and columns.label not in header:
        columns = Columns(columns.text_a, columns.text_b, None, columns.id)
    required = [c for c in (columns.text_a, columns.text_b) if c]
    recs: Iterator[Record] = (r for _, r in iter_tsv(path, required=required))
    if records is not None:
        recs = records(recs)
    kind: LabelKind = scheme.kind if columns.label is not None else "none"
    return Read(collect(recs, path, columns, scheme if columns.label else None, limit), kind)


# SNLI and MultiNLI: jsonl, or the .txt release (tab-separated, same field names).
NLI_COLUMNS = Columns("sentence1", "sentence2", "gold_label", "pairID")


def read_nli(path: Path, split: str, limit: int | None) -> Read:
    """SNLI / MultiNLI 1.0 (.jsonl or .txt). gold_label "-" rows are skipped and counted."""
    if path.suffix in (".jsonl", ".json"):
        return Read(collect(iter_jsonl(path), path, NLI_COLUMNS, L.SNLI, limit), "class")
    return _tsv(path, NLI_COLUMNS, L.SNLI, limit)


def glue(text_a: str, text_b: str, label: str, ident: str, scheme: L.LabelScheme) -> Reader:
    """A GLUE task file (train/dev/test.tsv with a header; test files have no label)."""
    columns = Columns(text_a, text_b, label, ident)

    def read(path: Path, split: str, limit: int | None) -> Read:
        return _tsv(path, columns, scheme, limit)

    return read


read_qnli = glue("question", "sentence", "label", "index", L.GLUE_ENTAIL)
read_rte = glue("sentence1", "sentence2", "label", "index", L.GLUE_ENTAIL)
_read_qqp_glue = glue("question1", "question2", "is_duplicate", "id", L.QQP)
_read_stsb_glue = glue("sentence1", "sentence2", "score", "index", L.STSB)


def read_qqp(path: Path, split: str, limit: int | None) -> Read:
    """QQP: GLUE tsv (id qid1 qid2 question1 question2 is_duplicate; no quoting), or Quora's
    own quora_duplicate_questions.tsv (same columns, but CSV-quoted: a question may span
    lines), told apart by the file name."""
    if path.name.startswith("quora_duplicate_questions"):
        columns = Columns("question1", "question2", "is_duplicate", "id")
        recs = iter_quoted(path, delimiter="\t", required=["question1", "question2"])
        return Read(collect(recs, path, columns, L.QQP, limit), "class")
    return _read_qqp_glue(path, split, limit)


def read_mrpc(path: Path, split: str, limit: int | None) -> Read:
    """MRPC: msr_paraphrase_{train,test}.txt (BOM, CRLF, header "Quality #1 ID #2 ID
    #1 String #2 String"; Quality 1 = paraphrase) and GLUE's train/dev.tsv (same header) and
    test.tsv ("index #1 ID #2 ID #1 String #2 String", unlabelled). The id is "<#1 ID>_<#2 ID>"."""
    columns = Columns("#1 String", "#2 String", "Quality", ("#1 ID", "#2 ID"))
    return _tsv(path, columns, L.MRPC, limit)


STS_NAMES = ("genre", "filename", "year", "id", "score", "sentence1", "sentence2")


def read_stsb(path: Path, split: str, limit: int | None) -> Read:
    """STS-B: the original sts-{train,dev,test}.csv (tab-separated, no header: genre, file,
    year, id, score, s1, s2, and on some rows 2 trailing source fields, which are ignored),
    or GLUE's {train,dev,test}.tsv (header; test.tsv has no score). Scores must be in [0, 5].
    The id of an original row is "<filename>_<year>_<id>". The two are told apart by the
    first line: GLUE's starts with the column name "index" (GLUE also ships the original
    files as original/sts-*.tsv)."""
    if _header(path)[0] != "index":
        columns = Columns("sentence1", "sentence2", "score", ("filename", "year", "id"))
        recs = iter_tsv_fixed(path, STS_NAMES, extra=True)
        return Read(collect(recs, path, columns, L.STSB, limit), "score")
    return _read_stsb_glue(path, split, limit)


SICK_SETS = {"train": "TRAIN", "trial": "TRIAL", "test": "TEST"}


def sick(target: str) -> Reader:
    """SICK, entailment class (target "entailment") or relatedness score ("relatedness").

    Files: SemEval-2014 SICK_{train,trial,test_annotated}.txt (header pair_ID sentence_A
    sentence_B relatedness_score entailment_judgment), or the full SICK.txt, whose
    SemEval_set column (TRAIN/TRIAL/TEST) selects the split's rows; rows with any other
    SemEval_set value are skipped and counted in every split.
    """
    scheme = L.SICK if target == "entailment" else L.SICK_R

    def read(path: Path, split: str, limit: int | None) -> Read:
        header = _header(path)
        full = "SemEval_set" in header
        if target == "entailment":
            label = "entailment_label" if full else "entailment_judgment"
        else:
            label = "relatedness_score"
        columns = Columns("sentence_A", "sentence_B", label, "pair_ID")
        if not full:
            return _tsv(path, columns, scheme, limit)
        want = SICK_SETS.get(split)
        if want is None:
            raise DataError(f"SICK.txt has splits {sorted(SICK_SETS)}, not {split!r}",
                            file=str(path))

        def only(recs: Iterator[Record]) -> Iterator[Record]:
            for r in recs:
                if r.fields is None:
                    yield r
                    continue
                tag = r.fields.get("SemEval_set", "").strip()
                if tag == want:
                    yield r
                elif tag not in SICK_SETS.values():
                    yield Record(r.row, None, f"SemEval_set {tag!r} is not TRAIN/TRIAL/TEST")

        return _tsv(path, columns, scheme, limit, records=only)

    return read


def read_scitail(path: Path, split: str, limit: int | None) -> Read:
    """SciTail tsv_format: premise \\t hypothesis \\t label (entails / neutral), no header."""
    recs = iter_tsv_fixed(path, ("premise", "hypothesis", "label"), extra=False)
    return Read(collect(recs, path, Columns("premise", "hypothesis", "label"), L.SCITAIL, limit),
                "class")


def read_twitter_url(path: Path, split: str, limit: int | None) -> Read:
    """Twitter-URL: sentence1 \\t sentence2 \\t (n,6) \\t url, no header.

    Labels by the corpus README: n >= 4 paraphrase, n <= 2 not paraphrase, n == 3 skipped
    and counted. Fields after the third (the URL; on 10 test records an empty field before
    it; on 270 a text instead of a URL) are not used. Pairs have no id (a URL is shared by
    many pairs).
    """
    recs = iter_tsv_fixed(path, ("sentence1", "sentence2", "votes"), extra=True)
    columns = Columns("sentence1", "sentence2", "votes")
    return Read(collect(recs, path, columns, L.TWITTER, limit), "class")

