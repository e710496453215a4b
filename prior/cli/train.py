"""`prior train` and `prior eval`: thin typer commands over prior.trainers.loop.

Registered in prior/cli/main.py.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from prior.cli.entry_flags import EntryOpt, FeatureParamOpt, feature_names, read_params, split_dotted
from prior.cli.key_value import read_value, split_item
from prior.cli.store_flags import StorageOptionOpt, StoreOpt, store_ref
from prior.errors import PriorError
from prior.trainers.models import MODELS

ViewOpt = Annotated[str | None, typer.Option(
    "--view", metavar="NAME", help="Read a registered variant view instead of the model's feature, e.g. "
    "dep-no-tfidf, dep-no-subgraph, dep-no-trigram for a model reading dep (the ablations; see "
    "`prior show --help`). For eval: default the view the model was trained on.")]
#: the former spelling of --view, kept working (hidden)
DepViewOpt = Annotated[str | None, typer.Option("--dep-view", hidden=True, help="Deprecated: --view.")]


class FeatureMode(StrEnum):
    stored = "stored"
    neutral = "neutral"
    shuffled = "shuffled"


def _options(pairs: list[str] | None) -> dict[str, object]:
    """``key=value`` options; values parsed as JSON when they parse (numbers, true, null)."""
    out: dict[str, object] = {}
    for item in pairs or []:
        if (split := split_item(item)) is None:
            raise typer.BadParameter(f"expected key=value, got {item!r}")
        out[split[0]] = read_value(split[1])
    return out


def train(
    model: Annotated[str, typer.Argument(help=f"Model and size: {'|'.join(MODELS)} + -base|-large|-mini, e.g. dafa-large.")],
    dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="Dataset name in the store (one with a train split).")] = None,
    store: StoreOpt = None,
    storage_option: StorageOptionOpt = None,
    output: Annotated[Path | None, typer.Option(help="Output directory (default runs/<model>-<dataset>-s<seed>).")] = None,
    backbone: Annotated[str | None, typer.Option(help="Any BERT-architecture checkpoint: hub id or directory (overrides the size).")] = None,
    epochs: Annotated[int | None, typer.Option(min=1, help="Default: the paper's.")] = None,
    lr: Annotated[float | None, typer.Option(help="Peak learning rate. Default: the paper's.")] = None,
    prior_lr: Annotated[float | None, typer.Option(help="Peak learning rate of the method's own parameters (gates, fusion, extra layers; none in bert). Default: --lr.")] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, help="Default: the paper's.")] = None,
    max_length: Annotated[int | None, typer.Option(min=8, help="Word pieces per pair. Default: the paper's.")] = None,
    warmup: Annotated[float | None, typer.Option(min=0.0, max=1.0, help="Warm-up fraction of steps.")] = None,
    weight_decay: Annotated[float | None, typer.Option(min=0.0)] = None,
    clip: Annotated[float | None, typer.Option(min=0.0, help="Gradient-norm clipping.")] = None,
    patience: Annotated[int | None, typer.Option(min=1, help="Epochs without dev improvement before stopping.")] = None,
    seed: Annotated[int, typer.Option()] = 42,
    limit: Annotated[int | None, typer.Option(min=1, help="Use only the first N pairs of each split.")] = None,
    sample: Annotated[float | None, typer.Option(help="Train on a fixed seeded fraction of the training pairs.")] = None,
    sample_seed: Annotated[int, typer.Option(help="Seed of --sample (independent of --seed).")] = 0,
    dev_split: Annotated[str | None, typer.Option(help="Dev split (default: dev, trial, dev_matched or validation when present, else 10% held out of train).")] = None,
    eval_split: Annotated[list[str] | None, typer.Option(help="Split(s) to score with the best model at the end.")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="Model option key=value (e.g. alpha=0.5, learn_alpha=true), or FEATURE.K=V to pick the store entry (e.g. -o wup.preset=uerbert-code).")] = None,
    feature_param: FeatureParamOpt = None,
    entry: EntryOpt = None,
    view: ViewOpt = None,
    dep_view: DepViewOpt = None,
    parser: Annotated[str | None, typer.Option(help="Models without a store feature (bert, cda): read the words of the parse this parser made (as given to `prior build --parser`; default: biaffine). A feature's entry decides its parse.")] = None,
    parse: Annotated[str | None, typer.Option(help="Models without a store feature: read this parse (an id prefix, as `prior store info` lists) instead of --parser's.")] = None,
    resume: Annotated[Path | None, typer.Option(help="Continue from a `last/` checkpoint folder.")] = None,
    threads: Annotated[int | None, typer.Option(min=1, help="torch CPU threads.")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Fine-tune a knowledge-enhanced BERT from features in the store."""
    from prior.featurestore import open_store
    from prior.trainers.loop import TrainConfig, check_train_split, default_output
    from prior.trainers.loop import train as run_train
    from prior.trainers.models import MODEL_CLASSES
    from prior.trainers.registry import parse_model_name

    try:
        ref = store_ref(store, storage_option)
        name, _ = parse_model_name(model)
        if dataset is None:
            dataset = check_train_split(open_store(ref, create=False), None)
        overrides = {k: v for k, v in {"epochs": epochs, "lr": lr, "prior_lr": prior_lr, "batch_size": batch_size,
                                       "max_length": max_length, "warmup": warmup,
                                       "weight_decay": weight_decay, "clip": clip,
                                       "patience": patience}.items() if v is not None}
        feature = MODEL_CLASSES[name].feature
        dotted, plain = split_dotted(option or [], feature_names(feature))
        params = read_params(feature_param, None, []) or {}
        if twice := sorted(set(params) & set(dotted)):
            raise PriorError(f"feature parameter {', '.join(twice)} is given twice")
        model_options = _options(plain)
        known = MODEL_CLASSES[name].default_options
        if unknown := sorted(set(model_options) - set(known)):
            feature_hint = f", or {feature}.K=V to pick its store entry" if feature else ""
            raise PriorError(f"model {name!r} has no option(s) {', '.join(unknown)}; -o takes "
                             + (", ".join(f"{k}=…" for k in sorted(known)) if known else "no model option here")
                             + feature_hint)
        out = output or default_output(model, dataset, seed)
        cfg = TrainConfig(model=model, dataset=dataset, store=ref, output=out,
                          backbone=backbone, overrides=overrides, seed=seed, limit=limit,
                          dev_split=dev_split, sample=sample, sample_seed=sample_seed,
                          eval_splits=tuple(eval_split or ()), model_options=model_options,
                          feature_params={**params, **dotted} or None, feature_entry=entry,
                          view=view, dep_view=dep_view, parser=parser, parse=parse, resume=resume,
                          threads=threads, progress=progress)
        summary = run_train(cfg)
    except PriorError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(json.dumps(summary))
    typer.echo(f"results in {out} (metrics.jsonl, summary.json; best checkpoint {out / 'best'}); score it with\n"
               f"  prior eval {out} --dataset {dataset} --split test", err=True)


def eval_(
    checkpoint: Annotated[Path, typer.Argument(help="A `prior train` output folder (its best/ is used) or a checkpoint folder.")],
    dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="Default: the dataset the model was trained on.")] = None,
    split: Annotated[str, typer.Option()] = "test",
    store: Annotated[str | None, typer.Option(help="Default: the store the model was trained from.")] = None,
    storage_option: StorageOptionOpt = None,
    limit: Annotated[int | None, typer.Option(min=1)] = None,
    batch_size: Annotated[int | None, typer.Option(min=1)] = None,
    view: ViewOpt = None,
    features: Annotated[FeatureMode, typer.Option(help="stored: as trained; neutral: the feature replaced by its neutral value (all-ones grid, full-visibility mask, zero vectors); shuffled: by another pair's (a fixed permutation). A model whose score does not move without its feature does not use it.")] = FeatureMode.stored,
) -> None:
    """Score a checkpoint on one split, reading the feature entries it was trained on; the
    last line lists `name=value` metrics."""
    from prior.progress import stage_bars
    from prior.trainers.checkpoint import read_meta
    from prior.trainers.loop import checkpoint_dir, evaluate_checkpoint

    try:
        ref = store_ref(store, storage_option)  # no --store: the store the model was trained from
        folder = checkpoint_dir(checkpoint)
        if dataset is None:
            dataset = str(read_meta(folder)["dataset"])
        with stage_bars() as progress:
            result = evaluate_checkpoint(folder, dataset, split, store=ref, limit=limit,
                                         batch_size=batch_size, features=features.value, progress=progress,
                                         view=view)
    except PriorError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"{folder} on {dataset}/{split}" + (f", features {features.value}" if features != "stored" else "")
               + (f", view {view}" if view else ""))
    typer.echo(" ".join(f"{k}={v:.4f}" for k, v in result.items()))
