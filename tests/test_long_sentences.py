"""Sentences a build cannot parse: one over the word limit is never parsed (no hang, no
killed worker), one the parser fails on is counted; either way it is reported with its file
and row, and its pair is skipped for every feature (dep included) while the rest is built."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import open_store
from prior.pipeline.parsers.base import MAX_WORDS, over_limit

runner = CliRunner()
FEATURES = "dep,sdoi,wup"


def _csv(path: Path, long_row: str) -> Path:
    path.write_text("sentence1,sentence2,label\n"
                    "A man is playing a guitar.,A person plays music.,1\n"
                    f"{long_row},A short sentence.,0\n"
                    "The cat sat on the mat.,A dog ran in the park.,0\n"
                    "Two women are talking.,Two people are speaking.,1\n", encoding="utf-8")
    return path


def _build(csv: Path, store: Path, *extra: str) -> str:
    result = runner.invoke(app, ["build", "--dataset", str(csv), "--features", FEATURES, "--parser", "spacy",
                                 "--workers", "0", "--store", str(store), *extra])
    assert result.exit_code == 0, result.output
    return result.output


def _held(store: Path) -> dict[str, int]:
    opened = open_store(store, create=False)
    return {e.name: len(opened.existing_keys(e)) for e in opened.entries() if e.name in ("dep", "sdoi", "wup")}


def test_over_limit_counts_words_and_characters() -> None:
    assert over_limit("a " * MAX_WORDS) is None
    assert str(over_limit("a " * (MAX_WORDS + 1))) == f"{MAX_WORDS + 1} words, over the {MAX_WORDS}-word limit"
    assert str(over_limit("one two three", max_words=2)) == "3 words, over the 2-word limit"


def test_issue35_a_long_token_names_the_character_limit() -> None:
    """A 20,000-character token is one word: the limit it breaks is the character limit, and the
    message says so (it said "1 words, over the 256-word limit")."""
    too_long = over_limit("x" * 20_000)
    assert too_long is not None and (too_long.words, too_long.characters) == (1, 20_000)
    assert str(too_long) == "20,000 characters, over the 5,120-character limit (20 characters per allowed word)"
    assert over_limit("x" * 1_300_000) is not None  # one 1.3 MB "word"


def test_issue28_a_5000_word_row_is_reported_and_skipped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "1")
    csv = _csv(tmp_path / "long.csv", " ".join(["word"] * 5000))
    t0 = time.perf_counter()
    out = _build(csv, tmp_path / "s")
    assert time.perf_counter() - t0 < 120  # the limit applies before parsing (parsing it took > 16 min)
    assert f"long/all {csv} row 3 text_a" in out and f"5000 words, over the {MAX_WORDS}-word limit" in out
    assert "1 sentence(s) over the" in out
    # every feature, dep included, holds the other three pairs (sdoi: their six sentences)
    assert _held(tmp_path / "s") == {"dep": 3, "sdoi": 7, "wup": 3}
    # a rerun with a higher limit parses it (the limit is not part of the parse id)
    out = _build(csv, tmp_path / "s", "--max-words", "6000")
    assert "over the" not in out
    assert _held(tmp_path / "s") == {"dep": 4, "sdoi": 8, "wup": 4}


def test_max_words_flag_lowers_the_limit(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    csv = _csv(tmp_path / "few.csv", "Seven words are in this one sentence.")
    out = _build(csv, tmp_path / "s", "--max-words", "6")
    assert "few/all" in out and "row 3 text_a" in out and "7 words, over the 6-word limit" in out
    assert _held(tmp_path / "s")["dep"] == 3


def test_issue25_a_sentence_the_parser_fails_on_still_builds_dep(tmp_path: Path, monkeypatch) -> None:
    from prior.pipeline.parsers.spacy_backend import SpacyParser

    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    real = SpacyParser.parse

    def parse(self, texts, *args):
        if any("UNPARSEABLE" in t for t in texts):
            raise RuntimeError("the parser gave up")
        return real(self, texts, *args)

    monkeypatch.setattr(SpacyParser, "parse", parse)
    csv = _csv(tmp_path / "bad.csv", "UNPARSEABLE text here.")
    out = _build(csv, tmp_path / "s")
    assert "bad/all" in out and "row 3 text_a" in out and "the parser gave up" in out
    assert _held(tmp_path / "s") == {"dep": 3, "sdoi": 7, "wup": 3}


@pytest.mark.parametrize("value", ["0", "x"])
def test_max_words_must_be_a_positive_number(tmp_path: Path, value: str) -> None:
    result = runner.invoke(app, ["build", "--dataset", "snli", "--max-words", value, "--store", str(tmp_path)])
    assert result.exit_code == 2 and "--max-words" in result.output
