"""`prior build`: only parses options and calls :func:`prior.pipeline.build.build`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from prior.cli.console import console, friendly_errors, human_bytes, warn_missing_data_dir
from prior.cli.key_value import parse_feature_options
from prior.cli.store_flags import StorageOptionOpt, StoreOpt, store_ref
from prior.errors import PriorError
from prior.pipeline.build_options import DEFAULT_FEATURES
from prior.pipeline.build_report import BuildReport
from prior.pipeline.features.registry import FEATURE_SETS
from prior.pipeline.parsers.base import MAX_WORDS


class ParseDevice(StrEnum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


def _csv(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    return items or None


@friendly_errors
def build_cmd(
    dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="Dataset name (see `prior datasets`) or a file path.", show_default=False)] = None,
    features: Annotated[str, typer.Option(help=f"Comma-separated features: {', '.join(FEATURE_SETS)}.")] = ",".join(DEFAULT_FEATURES),
    split: Annotated[str | None, typer.Option("--split", help="Comma-separated splits (default: all the dataset has).")] = None,
    store: StoreOpt = None,
    storage_option: StorageOptionOpt = None,
    parser: Annotated[str | None, typer.Option(help="biaffine (default), biaffine-int8 (CPU), spacy, or biaffine:<model>.")] = None,
    parse_device: Annotated[ParseDevice, typer.Option(help="Where the biaffine model runs: auto (a worker's CUDA GPU if it has one), cpu or cuda. Not part of the parse id.")] = ParseDevice.auto,
    limit: Annotated[int | None, typer.Option(min=1, help="Read only the first N usable pairs of each split.")] = None,
    workers: Annotated[int, typer.Option(min=0, help="Local Dask worker processes (0: run in this process).")] = 2,
    scheduler: Annotated[str | None, typer.Option(help="Use an existing Dask scheduler, e.g. tcp://host:8786.")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Where full dataset copies live (default $PRIOR_DATA_DIR).")] = None,
    embeddings: Annotated[Path | None, typer.Option(help="Embedding file for `emb` (word2vec txt/bin, GloVe, fastText .vec).")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="Feature option FEATURE.NAME=VALUE, repeatable, e.g. -o dep.nu=0.25 -o wup.preset=uerbert-code (see docs/).")] = None,
    hub: Annotated[bool, typer.Option("--hub", help="Read every split the Hugging Face hub has that no local file holds (needs the `datasets` library and network). Without it the hub is tried only for a split named with --split.")] = False,
    annotate: Annotated[str | None, typer.Option(help="Parse annotations to make beyond those the features read: any of lemmas, upos, tags, ents (by default a build has spaCy make only what its features read; see docs/parsers.md).")] = None,
    max_words: Annotated[int, typer.Option(min=1, help="Longest sentence to parse, in words (or 20 characters a word); a longer one is reported with its file and row and its pair gets no features.")] = MAX_WORDS,
    partition_size: Annotated[int, typer.Option(min=1, help="Items per Dask partition (does not change results).")] = 2000,
    text_a: Annotated[str, typer.Option(help="For a file: column of the first sentence.")] = "sentence1",
    text_b: Annotated[str, typer.Option(help="For a file: column of the second sentence.")] = "sentence2",
    label: Annotated[str | None, typer.Option(help="For a file: label column ('' for none).")] = "label",
    label_kind: Annotated[str, typer.Option(help="For a file: 'class' or 'score'.")] = "class",
    name: Annotated[str | None, typer.Option(help="The dataset's name in the store (default: a named dataset's own name, a file's stem).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="A split the store read from another source or with other columns: replace its rows with this build's (default: refuse).")] = False,
) -> None:
    """Build features of a dataset into the store; reruns compute only what is missing."""
    from prior.pipeline.build import build
    from prior.pipeline.build_options import DEFAULT_PARSER, BuildOptions, RunOptions

    if dataset is None:
        from prior.pipeline.datasets import SPECS

        raise PriorError(f"--dataset is required: a dataset name ({', '.join(sorted(SPECS))}; see `prior datasets`) "
                         "or a file path")
    feats = _csv(features)
    if not feats:
        raise PriorError(f"--features is empty; name at least one of {', '.join(FEATURE_SETS)}")
    options = BuildOptions(dataset=dataset, splits=_csv(split), features=feats, parser=parser or DEFAULT_PARSER,
                           limit=limit, data_dir=data_dir, embeddings=embeddings,
                           feature_options=parse_feature_options(option or []), max_words=max_words, hub=hub,
                           annotate=_csv(annotate) or (),
                           columns={"text_a": text_a, "text_b": text_b, "label": label or None,
                                    "label_kind": label_kind}, name=name, replace=replace)
    warn_missing_data_dir(data_dir)
    run = RunOptions(store=store_ref(store, storage_option), workers=workers,
                     scheduler=scheduler, partition_size=partition_size, parse_device=parse_device.value)
    report = build(options, run)
    print_report(report)


def print_report(report: BuildReport) -> None:
    console.print(f"[bold]built[/] {report.dataset} into {report.store} (parse {report.parse[:12]})")
    table = Table("split", "pairs read", "new rows", "skipped", "source", box=None)
    for s in report.splits:
        skipped = ", ".join(f"{n} {reason}" for reason, n in s.skipped.items()) or "0"
        table.add_row(s.split, str(s.pairs), str(s.new_rows), skipped, s.location)
    console.print(table)
    for s in report.splits:
        for example in s.skip_examples:
            console.print(f"  skipped: {example}", markup=False, soft_wrap=True)
        if (more := sum(s.skipped.values()) - len(s.skip_examples)) > 0 and s.skip_examples:
            console.print(f"  skipped: {more} more row(s) of {report.dataset}/{s.split}", markup=False)
    for s in report.splits:
        if s.slice_note:  # a slice shipped with prior, read because no full copy was found
            console.print(f"{report.dataset}/{s.split}: {s.slice_note} (a full copy is read from --data-dir or "
                          "$PRIOR_DATA_DIR)", markup=False, soft_wrap=True)
    for s in report.splits:
        if s.labels:  # a file's classes as written: a typo shows as a class of its own
            classes = ", ".join(f"{label!r} {n}" for label, n in s.labels.items())
            console.print(f"labels of {report.dataset}/{s.split}: {len(s.labels)} classes: {classes}",
                          markup=False, soft_wrap=True)
    _print_stages(report)
    for note in report.notes:
        console.print(note, markup=False, soft_wrap=True)
    console.print(f"store size {human_bytes(report.store_bytes)}; total {report.seconds:.1f} s")


def _print_stages(report: BuildReport) -> None:
    stages = Table("stage", "items", "computed", "reused", "failed", "seconds", "items/s", box=None)
    for st in report.stages:
        rate = f"{st.computed / st.seconds:.0f}" if st.seconds > 0 and st.computed else "-"
        stages.add_row(st.name, str(st.items), str(st.computed), str(st.reused), str(st.failed),
                       f"{st.seconds:.2f}", rate)
    console.print(stages)
    for st in report.stages:
        for failure in st.failures[:5]:  # one line each: a file path and row stay whole
            console.print(f"  {st.name} failed: {failure}", markup=False, soft_wrap=True)
        if len(st.failures) > 5:
            console.print(f"  {st.name}: {len(st.failures) - 5} more failure(s)", markup=False)
    if report.lost_workers:
        again = ", ".join(report.recomputed) or "none"
        console.print(f"lost {len(report.lost_workers)} Dask worker(s) during the build: "
                      f"{', '.join(report.lost_workers)}; partitions run again: {again} (each committed once)",
                      markup=False, soft_wrap=True)
