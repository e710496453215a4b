"""The default parse gives one answer per sentence: the same record whether a sentence is parsed
alone, in a batch of 512, or by one of two worker processes that split the texts between them,
and on a second run (content addressing keys a parse by its sentence, never by its batch)."""

from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pytest

from prior.pipeline.parsers.conllu import read_conllu

ROOT = Path(__file__).resolve().parents[1]


def _texts(n: int) -> list[str]:
    """Distinct texts of the bundled slices: SNLI, SICK, MRPC and the EWT slice's sentences."""
    seen: dict[str, None] = {}
    for line in (ROOT / "data" / "snli").glob("*.jsonl"):
        for row in line.read_text(encoding="utf-8").splitlines():
            record = json.loads(row)
            seen.update(dict.fromkeys(t for t in (record.get("sentence1"), record.get("sentence2")) if t))
    for split in ("train", "dev", "test"):
        for sentence in read_conllu(ROOT / "data" / "ud_ewt_slice" / f"{split}.conllu"):
            seen.setdefault(" ".join(sentence.words), None)
    texts = list(seen)
    assert len(texts) >= n
    return texts[:n]


def _parse_in_process(texts: list[str]) -> list[dict[str, Any]]:
    import torch

    torch.set_num_threads(1)
    from prior.pipeline.parsers import get_parser

    return [p.to_record() for p in get_parser("biaffine", "cpu").parse(texts)]


@pytest.fixture(scope="module")
def batch() -> tuple[list[str], list[dict[str, Any]]]:
    texts = _texts(512)
    return texts, _parse_in_process(texts)


def test_parse_alone_equals_parse_in_a_batch_of_512(batch: tuple[list[str], list[dict[str, Any]]]) -> None:
    from prior.pipeline.parsers import get_parser

    texts, together = batch
    parser = get_parser("biaffine", "cpu")
    picked = list(range(0, len(texts), 4))  # every fourth text: each alone, against its record in the batch
    alone = [parser.parse([texts[i]])[0].to_record() for i in picked]
    together = [together[i] for i in picked]
    assert [i for i, (a, b) in enumerate(zip(alone, together)) if a != b] == []
    rerun = _parse_in_process(texts)  # a second run
    assert [rerun[i] for i in picked] == together


@pytest.mark.slow
def test_parse_by_two_workers_equals_one(batch: tuple[list[str], list[dict[str, Any]]]) -> None:
    """Two spawned processes, each with one thread and its own model, each parsing every other
    text (other batches, other neighbours), give the one process's records."""
    texts, together = batch
    halves = [texts[0::2], texts[1::2]]
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        even, odd = pool.map(_parse_in_process, halves)
    merged = [None] * len(texts)
    merged[0::2], merged[1::2] = even, odd
    assert merged == together
