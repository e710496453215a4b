"""The default parse, and ``biaffine-int8``'s, give one answer per sentence: the same record whether
a sentence is parsed alone, in a batch of 512, or by one of two worker processes that split the
texts between them, and on a second run (content addressing keys a parse by its sentence, never
by its batch)."""

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


def _parse_in_process(texts: list[str], name: str = "biaffine") -> list[dict[str, Any]]:
    import torch

    torch.set_num_threads(1)
    from prior.pipeline.parsers import get_parser

    return [p.to_record() for p in get_parser(name, "cpu").parse(texts)]


Batch = tuple[str, list[str], list[dict[str, Any]]]


@pytest.fixture(scope="module", params=["biaffine", "biaffine-int8"])
def batch(request: pytest.FixtureRequest) -> Batch:
    texts = _texts(512)
    return request.param, texts, _parse_in_process(texts, request.param)


def test_parse_alone_equals_parse_in_a_batch_of_512(batch: Batch) -> None:
    import torch

    from prior.pipeline.parsers import get_parser

    name, texts, together = batch
    parser = get_parser(name, "cpu")
    picked = list(range(0, len(texts), 4))  # every fourth text: each alone, against its record in the batch
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # int8 parses on one thread whatever the process uses
    try:
        alone = [parser.parse([texts[i]])[0].to_record() for i in picked]
    finally:
        torch.set_num_threads(threads)
    together = [together[i] for i in picked]
    assert [i for i, (a, b) in enumerate(zip(alone, together)) if a != b] == []
    rerun = _parse_in_process(texts, name)  # a second run
    assert [rerun[i] for i in picked] == together


@pytest.mark.slow
def test_parse_by_two_workers_equals_one(batch: Batch) -> None:
    """Two spawned processes, each with one thread and its own model, each parsing every other
    text (other batches, other neighbours), give the one process's records."""
    name, texts, together = batch
    halves = [texts[0::2], texts[1::2]]
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        even, odd = pool.map(_parse_in_process, halves, [name, name])
    merged = [None] * len(texts)
    merged[0::2], merged[1::2] = even, odd
    assert merged == together
