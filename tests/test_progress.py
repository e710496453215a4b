"""The shared progress bars: a bar per stage with work, none for a stage with nothing to do,
nothing drawn with PRIOR_NO_PROGRESS=1; `prior parser eval` reports its sentences."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from prior.pipeline.parsers.conllu import ConlluSentence
from prior.pipeline.parsers.evaluate import PROGRESS_SENTENCES, evaluate_parser
from prior.progress import stage_bars


def drawn(monkeypatch: pytest.MonkeyPatch, setting: str) -> str:
    monkeypatch.setenv("PRIOR_NO_PROGRESS", setting)
    sink = io.StringIO()
    with stage_bars(console=Console(file=sink, force_terminal=True, width=100)) as report:
        report("nothing to do", 0, 0, "")
        report("parse", 3, 4, "")
        report("parse", 4, 4, "loss 0.5")
    return sink.getvalue()


def test_progress_bar_per_stage_with_work_only(monkeypatch: pytest.MonkeyPatch) -> None:
    out = drawn(monkeypatch, "0")
    assert "parse" in out and "4/4" in out and "loss 0.5" in out
    assert "nothing to do" not in out


def test_progress_off_with_prior_no_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    assert drawn(monkeypatch, "1") == ""


class _Chain:
    """A parser that attaches every word to the one before it."""

    name = "chain"

    def parse_words(self, sentences: list[list[str]]) -> list[tuple[list[int], list[str]]]:
        return [(list(range(len(s))), ["dep"] * len(s)) for s in sentences]


def test_progress_parser_eval_reports_blocks_of_sentences() -> None:
    gold = [ConlluSentence(words=("a", "b"), lemmas=("_",) * 2, upos=("X", "X"), xpos=("_",) * 2, heads=(0, 1),
                           rels=("root", "dep"))] * (PROGRESS_SENTENCES + 4)
    calls: list[tuple[str, int, int, str]] = []
    scores = evaluate_parser(_Chain(), gold, lambda *a: calls.append(a))
    assert calls == [("parse", PROGRESS_SENTENCES, len(gold), ""), ("parse", len(gold), len(gold), "")]
    assert scores["full"].uas == 100.0 and scores["full"].las == 50.0
