"""`prior store info|verify|gc|compact|frame|export`."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from prior.cli.console import console, err_console, friendly_errors, human_bytes
from prior.cli.entry_flags import (
    READABLE,
    EntryOpt,
    FeatureOptionOpt,
    FeatureParamOpt,
    check_readable,
    feature_names,
    read_params,
)
from prior.cli.store_flags import StorageOptionOpt, StoreOpt, store_ref

app = typer.Typer(help="Inspect, check, clean, upgrade and export a feature store.", no_args_is_help=True)


@app.command("info")
@friendly_errors
def info_cmd(store: StoreOpt = None, storage_option: StorageOptionOpt = None,
             as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """What the store holds: datasets, parses, feature entries, resources, size."""
    from prior.featurestore import open_store
    from prior.featurestore.maintenance import store_info

    info = store_info(open_store(store_ref(store, storage_option), create=False))
    if as_json:
        console.print_json(json.dumps(info.__dict__, default=str))
        return
    console.print(f"[bold]{info.location}[/]: {human_bytes(info.bytes)} in "
                  + ", ".join(f"{n} {k} segments" for k, n in sorted(info.segments.items())))
    t = Table("dataset", "split", "rows", box=None)
    for d in info.datasets:
        t.add_row(d["dataset"], d["split"], str(d["rows"]))
    console.print(t)
    for p in info.parses:
        console.print(f"parse {p['parse'][:12]}: {p['sentences']} sentences, {p['fingerprint']}")
    parses = {e["parse"] for e in info.entries}
    t = Table("feature", "entry", "options / differs in", *(["parse"] if len(parses) > 1 else []),
              "scope", "items", "segments", "size", box=None)
    t.columns[2].overflow, t.columns[2].min_width = "fold", 28
    for e in sorted(info.entries, key=lambda e: e["feature"]):
        t.add_row(e["feature"], e["entry"][:12], _distinguishing(e, info.entries),
                  *([str(e["parse"])[:12]] if len(parses) > 1 else []),
                  e["scope"], str(e["items"]), str(e["segments"]), human_bytes(e["bytes"]))
    console.print(t)
    if info.entries:
        console.print("(reads use a feature's default entry unless -o FEATURE.K=V, --feature-param or "
                      "--entry pick another; `prior store info --json` lists every parameter)")
    for r in info.resources:
        console.print(f"resource {r['kind']} {r['key'][:12]}: {r['rows']} rows {r['meta']}")


def _value(value: object, width: int = 24) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    if isinstance(value, str) and len(text) == 32 and all(c in "0123456789abcdef" for c in text):
        return text[:8]  # a content key
    return text if len(text) <= width else text[:width - 1] + "…"


def _distinguishing(entry: dict, entries: list[dict]) -> str:
    """An entry's non-default options ("default" without), then the parameters in which it
    differs from the other entries of its feature with the same options (tf-idf of another
    dataset, embeddings of another file)."""
    shown = [f"{k}={_value(v)}" for k, v in sorted(entry["options"].items())] or ["default"]
    peers = [e for e in entries if e["feature"] == entry["feature"] and e["options"] == entry["options"]
             and e["entry"] != entry["entry"]]
    if peers:
        keys = sorted(k for k in entry["params"] if any(p["params"].get(k) != entry["params"][k] for p in peers))
        shown += [f"{k}={_value(entry['params'][k])}" for k in keys]
    return " ".join(shown)


@app.command("verify")
@friendly_errors
def verify_cmd(store: StoreOpt = None, storage_option: StorageOptionOpt = None) -> None:
    """Check every committed file (size and blake2b); exit 1 if anything is damaged."""
    from prior.featurestore import open_store
    from prior.featurestore.maintenance import verify_store

    report = verify_store(open_store(store_ref(store, storage_option), create=False))
    for line in report.damaged:
        err_console.print(f"[red]damaged:[/] {escape(line)}", soft_wrap=True)
    for build in report.builds:
        console.print(f"build in progress: {build}", markup=False)
    for build in report.gone:
        console.print(f"build gone, its lease is dead: {build} (`prior store gc` removes what it left)",
                      markup=False, soft_wrap=True)
    if report.in_progress:
        console.print(f"{len(report.in_progress)} uncommitted segment folder(s) of builds in progress")
    if report.leftovers:
        console.print(f"{len(report.leftovers)} uncommitted segment folder(s) from interrupted work "
                      "(harmless; `prior store gc` removes them)")
    if report.strays:
        console.print(f"not segment folders, left alone: {', '.join(report.strays)}", markup=False)
    if report.ok:
        outcome = "ok"
    elif report.misplaced and len(report.misplaced) == len(report.damaged):  # each line says what to do
        outcome = f"{len(report.damaged)} problem(s), each named above with what to do"
    elif len(report.incomplete) == len(report.damaged):  # nothing to drop: the build lines above restore it
        outcome = f"{len(report.damaged)} problem(s); run the build line(s) above to restore what is missing"
    else:
        outcome = f"{len(report.damaged)} problem(s); run `prior store gc --drop-damaged`, then the build line(s) it prints"
    console.print(f"checked {report.checked_segments} segments, {report.checked_files} files: {outcome}",
                  soft_wrap=True)
    if not report.ok:
        raise typer.Exit(1)


@app.command("gc")
@friendly_errors
def gc_cmd(store: StoreOpt = None, storage_option: StorageOptionOpt = None,
           dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be removed.")] = False,
           drop_damaged: Annotated[bool, typer.Option("--drop-damaged", help="Also un-commit damaged segments.")] = False,
           force: Annotated[bool, typer.Option("--force", help="Run while builds hold the store (their own folders are kept).")] = False,
           ) -> None:
    """Remove leftovers of interrupted builds (and, if asked, damaged segments)."""
    from prior.featurestore import open_store
    from prior.featurestore.maintenance import gc_store
    from prior.featurestore.recipe import render

    opened = open_store(store_ref(store, storage_option), create=False)
    report = gc_store(opened, dry_run=dry_run, drop_damaged=drop_damaged, force=force)
    for build in report.builds:
        console.print(f"build in progress: {build}", markup=False, soft_wrap=True)
    if report.kept:
        console.print(f"kept {len(report.kept)} uncommitted folder(s) of builds in progress")
    for rel in report.removed:
        console.print(("would remove " if dry_run else "removed ") + rel, markup=False)
    if report.strays:
        console.print(f"not segment folders, left alone: {', '.join(report.strays)}", markup=False)
    console.print(f"{len(report.removed)} path(s), {human_bytes(report.bytes)}" + (" (dry run)" if dry_run else ""))
    for recipe in report.rebuild:
        console.print(f"rebuild what was dropped with: {render(recipe)}", markup=False, soft_wrap=True)


@app.command("compact")
@friendly_errors
def compact_cmd(store: StoreOpt = None, storage_option: StorageOptionOpt = None,
                table: Annotated[list[str] | None, typer.Option("--table", help="Compact this table: pairs, sentences or parses (repeatable).")] = None,
                feature: Annotated[str | None, typer.Option("--feature", help="Compact this feature's entries.")] = None,
                max_rows: Annotated[int, typer.Option("--max-rows", help="Merge segments of fewer rows into segments of at most this many.")] = 250_000,
                dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be merged.")] = False,
                ) -> None:
    """Merge small segments into larger ones (all tables and features unless --table/--feature pick some)."""
    from prior.featurestore import StoreError, open_store
    from prior.featurestore.compact import TABLES, compact_store

    if unknown := [t for t in table or () if t not in TABLES]:
        raise StoreError(f"--table {unknown[0]!r}: expected one of {', '.join(TABLES)}")
    kinds = [*(table or ()), *(["feature"] if feature else [])] or [*TABLES, "feature"]
    opened = open_store(store_ref(store, storage_option), create=False)
    report = compact_store(opened, kinds=kinds, feature=feature, max_rows=max_rows, dry_run=dry_run)
    if report.finished:
        console.print(f"finished an interrupted compaction: un-committed {len(report.finished)} replaced segment(s)")
    for m in report.merges:
        console.print(("would merge " if dry_run else "merged ") + f"{len(m.segments)} segments of {m.group}: "
                      f"{m.rows} rows, {m.files} files, {human_bytes(m.bytes)}", markup=False, soft_wrap=True)
    files = sum(m.files for m in report.merges)
    console.print(f"{len(report.merges)} merge(s) of {sum(len(m.segments) for m in report.merges)} segments "
                  f"({files} files)" + (" (dry run)" if dry_run else ""))
    if report.uncommitted:
        console.print(f"the {len(report.uncommitted)} replaced segment folders ({human_bytes(report.replaced_bytes)}) "
                      "stay until `prior store gc` removes them, once no reader started before this compaction runs",
                      markup=False, soft_wrap=True)


@app.command("frame")
@friendly_errors
def frame_cmd(feature: Annotated[str, typer.Option(help=f"A feature (entry) or view: {READABLE}.")],
              dataset: Annotated[str, typer.Option(help="Dataset name as stored.")],
              split: Annotated[str | None, typer.Option(help="Split (default: the only split, else the first of train, dev, …, test).")] = None,
              store: StoreOpt = None,
              storage_option: StorageOptionOpt = None,
              rows: Annotated[int, typer.Option(min=1, help="How many pairs to show.")] = 3,
              feature_param: FeatureParamOpt = None,
              option: FeatureOptionOpt = None,
              entry: EntryOpt = None) -> None:
    """Preview `store.frame(feature, dataset, split)`: the Polars frame and a few matrices."""
    import numpy as np
    import polars as pl

    from prior.cli.pairview import split_order
    from prior.cli.split_names import stored_split
    from prior.featurestore import Request, open_store
    from prior.featurestore.selection import entries_line

    opened = open_store(store_ref(store, storage_option), create=False)
    check_readable(feature, (e.name for e in opened.entries()))
    if split is not None:
        split = stored_split(opened, dataset, split)
    else:
        present = split_order([s for d, s in opened.datasets() if d == dataset])
        split = present[0] if present else "test"
        if len(present) > 1:
            console.print(f"split {split} (of {', '.join(present)}; --split picks another)")
    params = read_params(feature_param, option, feature_names(feature))
    entries = opened.select(feature, Request(params=params, entry=entry), dataset=dataset, split=split)
    df = opened.frame(feature, dataset=dataset, split=split, entry=entries[0].key)
    console.print(f"{dataset}/{split} {feature} from {entries_line(entries)}", markup=False)
    if note := opened.split_rows(dataset, split, parse=entries[0].parse).note:
        console.print(f"{note} (left out)", markup=False, soft_wrap=True)
    matrix_cols = [c for c, t in df.schema.items() if isinstance(t, pl.List) and isinstance(t.inner, pl.List)]
    with pl.Config(tbl_rows=rows, fmt_str_lengths=40, tbl_width_chars=120):
        console.print(df.select(["row", "label", "text_a", "text_b", *matrix_cols]).head(rows))
    np.set_printoptions(precision=2, suppress=True, linewidth=140)
    for rec in df.head(rows).iter_rows(named=True):
        console.print(f"\n[bold]row {rec['row']}[/] A: {' '.join(rec['words_a'])}\n        B: {' '.join(rec['words_b'])}")
        for col in matrix_cols:
            if rec[col] is not None:
                console.print(f"{col} {np.array(rec[col]).shape}:\n{np.array(rec[col])}")
    console.print(f"\n{df.height} pairs; frame columns: {', '.join(df.columns)}")


@app.command("export")
@friendly_errors
def export_cmd(feature: Annotated[str, typer.Option(help=f"A feature (entry) or view: {READABLE}.")],
               dataset: Annotated[str, typer.Option(help="Dataset name as stored.")],
               out: Annotated[str, typer.Option(help="Local folder to write dataset=D/split=S/part-*.parquet into.")],
               split: Annotated[str | None, typer.Option(help="Comma-separated splits (default: every split the store holds).")] = None,
               store: StoreOpt = None,
               storage_option: StorageOptionOpt = None,
               feature_param: FeatureParamOpt = None,
               option: FeatureOptionOpt = None,
               entry: EntryOpt = None) -> None:
    """Write `store.frame(feature, dataset, split)` as a hive-partitioned Parquet dataset
    (Polars, pyarrow, DuckDB, Hugging Face datasets); a split exported again is replaced whole."""
    from prior.cli.split_names import stored_splits
    from prior.featurestore import Request, open_store
    from prior.featurestore.export import export_parquet
    from prior.featurestore.selection import entries_line

    params = read_params(feature_param, option, feature_names(feature))
    opened = open_store(store_ref(store, storage_option), create=False)
    splits = stored_splits(opened, dataset, [s.strip() for s in split.split(",") if s.strip()]) if split else None
    check_readable(feature, (e.name for e in opened.entries()))
    done = export_parquet(opened, feature, dataset=dataset, out=out, splits=splits,
                          request=Request(params=params, entry=entry))
    for part in done:
        console.print(f"{part.dataset}/{part.split}: {part.rows} pairs -> {part.folder} "
                      f"({', '.join(part.files)}) from {entries_line(part.entries)}",
                      markup=False, soft_wrap=True)
        if part.skipped:
            console.print(f"  {part.skipped} (left out)", markup=False, soft_wrap=True)
    console.print(f'read with: pl.scan_parquet("{out}", hive_partitioning=True)', markup=False, soft_wrap=True)


@app.command("upgrade")
@friendly_errors
def upgrade_cmd(store: StoreOpt = None, storage_option: StorageOptionOpt = None) -> None:
    """Convert a store of an older format to this prior's, in place (safe to interrupt and run again)."""
    from prior.featurestore import StoreRef
    from prior.featurestore.segments import FORMAT
    from prior.featurestore.upgrade import upgrade_store
    from prior.paths import default_store

    report = upgrade_store(StoreRef.of(store_ref(store, storage_option)).or_at(default_store()))
    if not report.upgraded:
        console.print(f"{report.location} is of format {FORMAT['version']} already: nothing to do", markup=False)
        return
    for line in report.damaged:
        err_console.print(f"[red]left as it is:[/] {escape(line)}", soft_wrap=True)
    console.print(f"{report.location}: format {report.before} -> {FORMAT['version']}; {len(report.converted)} "
                  f"catalog record(s) converted, {report.kept} already current", markup=False, soft_wrap=True)
    if report.damaged:
        console.print(f"{len(report.damaged)} damaged record(s) left as they are: `prior store verify` lists them, "
                      "`prior store gc --drop-damaged` drops them and prints the build lines that restore them",
                      markup=False, soft_wrap=True)
