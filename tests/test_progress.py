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


def test_progress_recent_rate_is_the_last_window_up_to_now() -> None:
    """Work that arrives in blocks: the rate is the window's average, taken up to now, never
    the rate between the two last reports (2,000 items 0.1 s apart read as 20,000/s)."""
    from prior.progress import RecentRate

    rate = RecentRate(window=60, now=0.0)
    rate.observe(2000, now=30.0)
    rate.observe(4000, now=30.1)  # two partitions finish together
    assert rate.rate(now=30.1) == pytest.approx(4000 / 30.1)
    assert rate.remaining(6000, now=30.1) == pytest.approx(6000 / (4000 / 30.1))
    # later with nothing new: the rate falls instead of keeping the burst's
    assert rate.rate(now=60.0) == pytest.approx(4000 / 60)
    assert rate.rate(now=75.0) == pytest.approx((4000 - 1000) / 60)  # 1,000 done by 15 s, as the block ran
    assert rate.rate(now=100.0) == 0.0 and rate.remaining(10, now=100.0) is None
    # the window's start falls between two samples: the count there is interpolated
    steady = RecentRate(window=10, now=0.0)
    for t in range(1, 31):
        steady.observe(100 * t, now=float(t))
    assert steady.rate(now=30.0) == pytest.approx(100.0)


def test_progress_plain_lines_when_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Output that is not a terminal (a batch job's log) gets plain lines: one when a stage
    starts, one per interval while it runs (done/total, rate, time left), one when it is done."""
    import time

    from prior.progress import PlainLines, bars

    monkeypatch.setenv("PRIOR_NO_PROGRESS", "0")
    monkeypatch.setenv("PRIOR_PROGRESS_INTERVAL", "0.05")
    sink = io.StringIO()
    with bars(console=Console(file=sink, force_terminal=False)) as progress:
        assert isinstance(progress, PlainLines)
        task = progress.add_task("parse", total=4000, info="")
        progress.advance(task, 1000)
        time.sleep(0.3)
        progress.update(task, completed=4000, info="loss 0.5")
    lines = sink.getvalue().splitlines()
    assert lines[0] == "parse: started 0/4,000 (0%)"
    running = [line for line in lines if line.startswith("parse: 1,000/4,000 (25%), ")]
    assert len(running) >= 2 and all(line.endswith(" left") and "/s, " in line for line in running)
    assert lines[-1].startswith("parse: done 4,000/4,000 (100%), in 0:00:00, ") and lines[-1].endswith("loss 0.5")
    assert "\x1b" not in sink.getvalue()  # no terminal codes in a log


def test_progress_plain_lines_are_what_stage_bars_write_to_a_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "0")
    sink = io.StringIO()
    with stage_bars(console=Console(file=sink, force_terminal=False)) as report:
        report("train", 5, 10, "loss 0.7")
        report("train", 10, 10, "loss 0.6")
    assert sink.getvalue().splitlines() == ["train: started 5/10 (50%), loss 0.7",
                                            sink.getvalue().splitlines()[1]]
    assert sink.getvalue().splitlines()[1].startswith("train: done 10/10 (100%), in ")


def test_progress_interval_setting_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from prior.errors import DataError
    from prior.progress import bars

    monkeypatch.setenv("PRIOR_NO_PROGRESS", "0")
    monkeypatch.setenv("PRIOR_PROGRESS_INTERVAL", "often")
    with pytest.raises(DataError, match="PRIOR_PROGRESS_INTERVAL='often' is not a number of seconds"), \
            bars(console=Console(file=io.StringIO(), force_terminal=False)):
        pass


def test_progress_terminal_time_left_is_taken_at_the_recent_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal the bars' time-left column is :class:`RecentRate`'s, not rich's estimate
    from the last two reports."""
    from prior.progress import bars

    monkeypatch.setenv("PRIOR_NO_PROGRESS", "0")
    with bars(console=Console(file=io.StringIO(), force_terminal=True, width=100)) as progress:
        column = next(c for c in progress.columns if type(c).__name__ == "RecentRemainingColumn")
        task_id = progress.add_task("parse", total=100, info="")
        task = progress.tasks[0]
        assert column.render(task).plain == "-:--:--"  # nothing done yet: unknown, not zero
        progress.advance(task_id, 50)
        rate = column.rates[task_id]
        assert column.render(task).plain != "-:--:--" and rate.rate() > 0


def test_progress_plain_lines_write_a_line_when_asked() -> None:
    from prior.progress import PlainLines

    sink = io.StringIO()
    with PlainLines(sink, interval=3600) as lines:
        task = lines.add_task("train", total=10, info="")
        lines.update(task, completed=4, info="loss 0.5")
        lines.write_line(task)
    assert sink.getvalue().splitlines()[1].startswith("train: 4/10 (40%), ") and "loss 0.5" in sink.getvalue()
    assert sink.getvalue().splitlines()[-1].startswith("train: stopped at 4/10 (40%)")
