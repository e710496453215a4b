"""`prior predict`: only parses options and calls :func:`prior.trainers.predict.load_model` with
the pipeline's pair builder (:func:`prior.pipeline.predict.build_pairs`): the CLI wires the two
layers, since `trainers` never imports `pipeline`."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer

from prior.cli.console import err_console, friendly_errors
from prior.cli.store_flags import StorageOptionOpt, store_ref
from prior.errors import DataError, PriorError

if TYPE_CHECKING:
    from prior.trainers.predict import Prediction


class OutputFormat(StrEnum):
    jsonl = "jsonl"
    csv = "csv"


def read_json_lines(stream: IO[str], text_a: str = "sentence1", text_b: str = "sentence2"
                    ) -> tuple[list[tuple[str, str]], list[int]]:
    """Pairs from JSON lines (``{"a": …, "b": …}``, or the ``text_a``/``text_b`` names) and
    each pair's line number; blank lines are skipped, anything else unusable is a `DataError`."""
    pairs, lines = [], []
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"standard input line {number}: not valid JSON ({exc.msg})") from None
        names = next(((x, y) for x, y in (("a", "b"), (text_a, text_b)) if isinstance(obj, dict)
                      and x in obj and y in obj), None)
        if names is None:
            raise DataError(f"standard input line {number}: expected an object with \"a\" and \"b\" "
                            f"(or {text_a!r} and {text_b!r})")
        pairs.append((str(obj[names[0]]), str(obj[names[1]])))
        lines.append(number)
    return pairs, lines


@contextmanager
def _sink(out: Path | None) -> Iterator[IO[str]]:
    if out is None:
        yield sys.stdout
        return
    try:
        fh = out.open("w", encoding="utf-8", newline="")
    except OSError as exc:
        raise PriorError(f"--out {out}: cannot write it ({exc.strerror or exc})") from None
    with fh:
        yield fh


def write_predictions(predictions: Sequence[Prediction], fh: IO[str], fmt: OutputFormat,
                      label_names: Sequence[str], regression: bool) -> None:
    """JSON lines (`Prediction.as_dict`), or CSV with one probability column per class
    (``p_<label>``), or a ``score`` column."""
    if fmt == OutputFormat.jsonl:
        for p in predictions:
            fh.write(json.dumps(p.as_dict(), ensure_ascii=False) + "\n")
        return
    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(["row", "key", "a", "b", *(["score"] if regression else ["label", *(f"p_{n}" for n in label_names)])])
    for p in predictions:
        tail = [p.score] if regression else [p.label, *((p.probabilities or {}).get(n) for n in label_names)]
        writer.writerow([p.row, p.key, p.a, p.b, *tail])


@friendly_errors
def predict_cmd(
    checkpoint: Annotated[Path, typer.Argument(help="A `prior train` output folder (its best/ is used) or a checkpoint folder.")],
    a: Annotated[str | None, typer.Option("--a", help="First sentence of one pair (with --b).")] = None,
    b: Annotated[str | None, typer.Option("--b", help="Second sentence of one pair (with --a).")] = None,
    file: Annotated[Path | None, typer.Option(exists=True, dir_okay=False, help="A table of pairs, any format `prior build` reads (.csv, .tsv/.txt, .jsonl, .parquet).")] = None,
    text_a: Annotated[str, typer.Option(help="Column (file) or key (JSON lines) of the first sentence.")] = "sentence1",
    text_b: Annotated[str, typer.Option(help="Column (file) or key (JSON lines) of the second sentence.")] = "sentence2",
    store: Annotated[str | None, typer.Option(help="Where the pairs' parses and features are built (default $PRIOR_HOME/predict-store; reused).")] = None,
    storage_option: StorageOptionOpt = None,
    parser: Annotated[str | None, typer.Option(help="The --parser spec of the model's parse (default: as recorded with the model; a recorded supar file or name, a pickle, is loaded only when named here).")] = None,
    out: Annotated[Path | None, typer.Option(help="Write here instead of standard output.")] = None,
    fmt: Annotated[OutputFormat, typer.Option("--format", help="jsonl: one object per pair; csv: one column per class probability.")] = OutputFormat.jsonl,
    batch_size: Annotated[int | None, typer.Option(min=1)] = None,
    workers: Annotated[int, typer.Option(min=0, help="Dask workers for parsing and features (0: in this process).")] = 0,
    max_words: Annotated[int | None, typer.Option(min=1, help="A sentence with more words (or 20 characters a word) is not parsed: its pair gets no prediction and is counted as skipped (default: the build's 256).")] = None,
) -> None:
    """Predict sentence pairs with a trained checkpoint: from --a/--b, --file, or JSON lines on
    standard input ({"a": ..., "b": ...}); writes the label and class probabilities (or the
    score) of each pair with its key."""
    from prior.pipeline.predict import build_pairs
    from prior.trainers.predict import load_model

    if (a is None) != (b is None):
        raise PriorError("give both --a and --b")
    for flag, text in (("--a", a), ("--b", b)):
        if text is not None and not text.strip():
            raise PriorError(f"{flag} is empty: give the sentence's text")
    if a is not None and file is not None:
        raise PriorError("give --a/--b or --file, not both")
    pairs: list[tuple[str, str]] = []
    lines: list[int] = []
    if file is None and a is None:
        if sys.stdin.isatty():
            raise PriorError("no pairs: give --a TEXT --b TEXT, --file FILE, or JSON lines on standard input")
        pairs, lines = read_json_lines(sys.stdin, text_a, text_b)
    builder = build_pairs if max_words is None else partial(build_pairs, max_words=max_words)
    model = load_model(checkpoint, store=store_ref(store, storage_option), parser=parser, batch_size=batch_size,
                       workers=workers, builder=builder)
    with _sink(out) as fh:  # opened first: an unwritable --out fails before any work
        if file is not None:
            run = model.predict_file(file, text_a=text_a, text_b=text_b, progress=True)
        elif a is not None and b is not None:
            run = model.predict_pairs([(a, b)], progress=True)
        else:  # a pair's row: its line of standard input
            run = model.predict_pairs(pairs, rows=lines, unit="standard input line", progress=True)
        write_predictions(run.items, fh, fmt, model.label_names, model.label_kind == "score")
    if run.skipped:
        err_console.print(f"skipped {sum(run.skipped.values())} unusable pair(s): "
                          + ", ".join(f"{n} {reason}" for reason, n in run.skipped.items()), markup=False)
        for example in run.skip_examples:
            err_console.print(f"  skipped: {example}", markup=False)
