"""The build's parse stage: parse every sentence of the build the store has not parsed with this
parser, in partitions of equal cost (`partitions.py`), on the build's runner.

A sentence over the word limit is not parsed: it is counted as failed with the file and row it
was read from, and its pairs get no features. Each partition is a `ParseTask` run by
`prior.pipeline.worker.parse_partition`, which commits its own parse segment.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from prior.hints import option
from prior.pipeline.build_report import StageReport
from prior.pipeline.build_run import BuildRun, count
from prior.pipeline.parsers.base import CHARS_PER_WORD, over_limit
from prior.pipeline.partitions import PARSE_COST_PER_SENTENCE, partitions
from prior.pipeline.runner import Job
from prior.pipeline.tasks import ParseTask, PartitionResult


def parse_stage(run: BuildRun, keys: set[str], texts: dict[str, str]) -> set[str]:
    """Parse every sentence of ``keys`` the store has not parsed with this parser (its text from
    ``texts``, else from the store); returns the keys of the sentences that failed."""
    store, parse = run.store, run.report.parse
    stage = StageReport("parse", items=len(keys))
    t0 = time.perf_counter()
    parsed = store.parsed_keys(parse, needs=run.annotations)  # a sentence parsed without them is annotated again
    known = tuple(s.id for s in store.segments("parses") if s.target["parse"] == parse)
    todo = sorted(k for k in keys if k not in parsed)
    stage.reused = len(keys) - len(todo)
    texts = _with_stored_texts(run, todo, texts)
    failed = _too_long(run, stage, todo, texts)
    todo = [k for k in todo if k not in failed]
    bar = run.bar("parse", len(todo))

    def done(result: PartitionResult) -> None:
        failed.update(k for k, _ in result.failures)
        if result.failures:
            where = sentence_rows(run, [k for k, _ in result.failures])
            result = PartitionResult(result.done, result.skipped, tuple((where[k], msg) for k, msg in result.failures),
                                     result.rerun)
        run.advance(bar, count(stage, result, ""))

    weights = [len(texts[k]) + PARSE_COST_PER_SENTENCE for k in todo]
    parts = partitions(todo, run.runner.workers, run.settings.partition_size, weights)
    run.runner.run([Job(ParseTask(store=store.ref, keys=tuple(part), lease=run.lease, known=known, record=run.record(),
                                  label=f"parse {i}/{len(parts)}", parser=run.options.parser, parse=parse,
                                  fingerprint=run.fingerprint, texts=tuple(texts[k] for k in part),
                                  device=run.settings.parse_device, annotations=tuple(sorted(run.annotations))), done)
                    for i, part in enumerate(parts, 1)])
    stage.seconds = time.perf_counter() - t0
    run.report.stages.append(stage)
    store.refresh()
    return failed


def _with_stored_texts(run: BuildRun, todo: list[str], texts: dict[str, str]) -> dict[str, str]:
    """``texts`` and, where a sentence to parse came from a split taken from the store, its text there."""
    if all(k in texts for k in todo):
        return texts
    stored = run.store.sentences()
    return {**dict(zip(stored["sent_key"].to_list(), stored["text"].to_list())), **texts}


def _too_long(run: BuildRun, stage: StageReport, todo: list[str], texts: dict[str, str]) -> set[str]:
    """The sentences of ``todo`` over the word limit, counted as failed with where they were read."""
    limit = run.options.max_words
    too_long = {k: n for k in todo if (n := over_limit(texts[k], limit)) is not None}
    if not too_long:
        return set()
    stage.failed += len(too_long)
    where = sentence_rows(run, too_long)
    stage.failures += [f"{where[k]}: {n} ({option('max_words')})" for k, n in too_long.items()]
    run.report.notes.append(f"{len(too_long)} sentence(s) over the length limit ({limit} words or "
                            f"{limit * CHARS_PER_WORD:,} characters) were not parsed; "
                            f"their pairs get no features (raise the limit with {option('max_words')})")
    _record_skipped(run, {k: texts[k] for k in too_long})
    return set(too_long)


def _record_skipped(run: BuildRun, texts: dict[str, str]) -> None:
    """Record, with the parse, the sentences too long to parse and which limit they are over, so
    that reads leave their pairs out (`prior.featurestore.splits`); those recorded before as such
    are not written again."""
    limit = run.options.max_words
    reasons = {k: f"over the {limit}-word limit" if len(t.split()) > limit
               else f"over the {limit * CHARS_PER_WORD}-character limit" for k, t in texts.items()}
    known = run.store.skipped_sentences(run.report.parse)
    if new := {k: r for k, r in reasons.items() if known.get(k) != r}:
        run.store.write_parses(run.report.parse, run.fingerprint, [], [], spec=run.options.parser, skipped=new,
                               meta=run.record())


def sentence_rows(run: BuildRun, keys: Iterable[str]) -> dict[str, str]:
    """Where each sentence of ``keys`` was read: ``dataset/split FILE row N (sentence KEY)``,
    from the first row of this build's splits that holds it."""
    report = run.report
    wanted = set(keys)
    where: dict[str, str] = {}
    for s in report.splits:
        if not wanted - where.keys():
            break
        rows = run.store.pair_rows(report.dataset, s.split)  # skipped pairs too: they are the ones named
        for row, a, b in zip(rows["row"].to_list(), rows["key_a"].to_list(), rows["key_b"].to_list()):
            for k, side in ((a, "text_a"), (b, "text_b")):
                if k in wanted and k not in where:
                    where[k] = f"{report.dataset}/{s.split} {s.location} row {row} {side} (sentence {k[:12]})"
    return {k: where.get(k, f"sentence {k}") for k in wanted}
