"""`prior train` and `prior eval`: thin typer commands over `prior.trainers`.

Registered in prior/cli/main.py. Both go through the CLI's one error path
(`prior.cli.console.friendly_errors`): a `PriorError` is one line and exit 1; Ctrl-C during
training is one line saying what can be resumed, and exit 130.
"""

from __future__ import annotations

import functools
import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from prior.cli.console import err_console, friendly_errors
from prior.cli.entry_flags import EntryOpt, FeatureParamOpt, feature_names, read_params, split_dotted
from prior.cli.key_value import read_value, split_item
from prior.cli.store_flags import StorageOptionOpt, StoreOpt, store_ref
from prior.errors import PriorError
from prior.trainers.models import MODELS

if TYPE_CHECKING:
    from prior.featurestore import StoreRef
    from prior.trainers.config import TrainConfig

ViewOpt = Annotated[str | None, typer.Option(
    "--view", metavar="NAME", help="Read a registered variant view instead of the model's feature, e.g. "
    "dep-no-tfidf, dep-no-subgraph, dep-no-trigram for a model reading dep (the ablations; see "
    "`prior show --help`). For eval: default the view the model was trained on.")]
DeviceOpt = Annotated[str | None, typer.Option(
    metavar="DEVICE", help="auto (CUDA when present, else CPU), cpu, cuda or cuda:N. Under torchrun each rank "
    "takes its LOCAL_RANK's GPU.")]


class FeatureMode(StrEnum):
    stored = "stored"
    neutral = "neutral"
    shuffled = "shuffled"


class TrainFeatures(StrEnum):
    stored = "stored"
    neutral = "neutral"


class ReportTo(StrEnum):
    tensorboard = "tensorboard"


def _options(pairs: list[str] | None) -> dict[str, object]:
    """``key=value`` options; values parsed as JSON when they parse (numbers, true, null)."""
    out: dict[str, object] = {}
    for item in pairs or []:
        if (split := split_item(item)) is None:
            raise typer.BadParameter(f"expected key=value, got {item!r}")
        out[split[0]] = read_value(split[1])
    return out


@friendly_errors
def train(
    model: Annotated[str | None, typer.Argument(help=f"Model and size: {'|'.join(MODELS)} + -base|-large|-mini, e.g. dafa-large (with --resume: the run's own).")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="Dataset name in the store (one with a train split).")] = None,
    store: StoreOpt = None,
    storage_option: StorageOptionOpt = None,
    output: Annotated[Path | None, typer.Option(help="Output folder (default runs/<model>-<dataset>-s<seed>).")] = None,
    backbone: Annotated[str | None, typer.Option(help="Any BERT-architecture checkpoint: hub id or directory (overrides the size).")] = None,
    epochs: Annotated[int | None, typer.Option(min=1, help="Default: the paper's.")] = None,
    lr: Annotated[float | None, typer.Option(help="Peak learning rate. Default: the paper's.")] = None,
    prior_lr: Annotated[float | None, typer.Option(help="Peak learning rate of the method's own parameters (gates, fusion, extra layers; none in bert). Default: --lr.")] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, help="Pairs per optimizer step, over all GPUs. Default: the paper's.")] = None,
    max_length: Annotated[int | None, typer.Option(min=8, help="Word pieces per pair. Default: the paper's.")] = None,
    warmup: Annotated[float | None, typer.Option(min=0.0, max=1.0, help="Warm-up fraction of steps.")] = None,
    weight_decay: Annotated[float | None, typer.Option(min=0.0)] = None,
    clip: Annotated[float | None, typer.Option(min=0.0, help="Gradient-norm clipping.")] = None,
    patience: Annotated[int | None, typer.Option(min=1, help="Epochs without dev improvement before stopping.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the model's new parameters, dropout and the data order. [default: 42]")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Use only the first N pairs of each split.")] = None,
    sample: Annotated[float | None, typer.Option(help="Train on a fixed seeded fraction of the training pairs.")] = None,
    sample_seed: Annotated[int | None, typer.Option(help="Seed of --sample (independent of --seed). [default: 0]")] = None,
    dev_split: Annotated[str | None, typer.Option(help="Dev split (default: dev, trial, dev_matched or validation when present, else 10% held out of train).")] = None,
    eval_split: Annotated[list[str] | None, typer.Option(help="Split(s) to score with the best model at the end.")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="Model option key=value (e.g. alpha=0.5, learn_alpha=true), or FEATURE.K=V to pick the store entry (e.g. -o wup.preset=uerbert-code).")] = None,
    feature_param: FeatureParamOpt = None,
    entry: EntryOpt = None,
    view: ViewOpt = None,
    parser: Annotated[str | None, typer.Option(help="Models without a store feature (bert, cda): read the words of the parse this parser made (as given to `prior build --parser`; default: biaffine). A feature's entry decides its parse.")] = None,
    parse: Annotated[str | None, typer.Option(help="Models without a store feature: read this parse (an id prefix, as `prior store info` lists) instead of --parser's.")] = None,
    shuffle_window: Annotated[int | None, typer.Option(min=1, help="Pairs shuffled together; a split this small is fully shuffled. More: closer to a full shuffle, more memory. [default: 16384]")] = None,
    features: Annotated[TrainFeatures | None, typer.Option(help="neutral: train, choose and score the model with its feature replaced by its neutral value (all-ones grid, full-visibility mask, zero vectors): the method's architecture without its prior knowledge, a control for what the feature adds. [default: stored]")] = None,
    resume: Annotated[Path | None, typer.Option(help="Continue a run (its output folder, or its last/) at its last saved step.")] = None,
    save_every: Annotated[int | None, typer.Option(min=1, help="Also save the resumable state (last/) every N steps (always: at each epoch's end).")] = None,
    workers: Annotated[int | None, typer.Option(min=0, help="Loader worker processes that read and batch ahead (0: in the training process; must divide 4). [default: 2 on CUDA, 0 on CPU]")] = None,
    cache_mb: Annotated[float | None, typer.Option(min=1, help="Megabytes each loader reader (the training process, or each worker) keeps of what it read: the sentences' words and values, pieces of pair values. A split whose sentences do not fit is read again every window, and a warning names the size that fits. [default: 256]")] = None,
    device: DeviceOpt = None,
    report_to: Annotated[list[ReportTo] | None, typer.Option(help="Also write metrics for TensorBoard (RUN/tensorboard; needs pip install 'prior[tensorboard]').")] = None,
    log_every: Annotated[int, typer.Option(min=0, help="When standard error is not a terminal (a log file): one plain line every N steps and at each epoch's end (0: none).")] = 50,
    threads: Annotated[int | None, typer.Option(min=1, help="torch CPU threads.")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar (a log gets plain lines, --log-every).")] = True,
) -> None:
    """Fine-tune a knowledge-enhanced BERT from features in the store."""
    from prior.trainers.loop import TrainingInterrupted
    from prior.trainers.loop import train as run_train

    given = {k: v for k, v in locals().items() if v is not None and k not in ("progress", "log_every")}
    cfg = _config(given)
    try:
        summary = run_train(cfg, **_reporting(progress, log_every))
    except TrainingInterrupted as stop:
        raise KeyboardInterrupt(_resume_hint(stop.output, stop.step, stop.saved_step)) from None
    typer.echo(json.dumps(summary))
    err_console.print(_eval_hint(cfg), markup=False, highlight=False, soft_wrap=True)


def _config(given: dict[str, Any]) -> TrainConfig:
    """The run's config from the given options, on top of a resumed run's recorded one."""
    from prior.trainers.config import RunSpec, TrainConfig, default_output
    from prior.trainers.recorded import recorded_config

    ref = store_ref(given.get("store"), given.get("storage_option"))
    recorded = recorded_config(given["resume"], ref) if "resume" in given else None
    model_spec, data_spec = _specs(given, recorded, ref)
    run_store = recorded.store if recorded is not None else ref
    out = given.get("output") or (recorded.output if recorded else
                                  default_output(model_spec.model, data_spec.dataset, model_spec.seed))
    run = RunSpec(output=out, store=run_store, resume=given.get("resume"), save_every=given.get("save_every"),
                  workers=given.get("workers"), cache_mb=given.get("cache_mb"), device=given.get("device"),
                  threads=given.get("threads"), report_to=tuple(r.value for r in given.get("report_to", [])))
    return TrainConfig(model_spec, data_spec, run)


def _specs(given: dict[str, Any], recorded: Any, ref: StoreRef) -> tuple[Any, Any]:
    """The model and data specs: from the options, or a resumed run's own (options given with
    ``--resume`` must agree with it, settings may change: more epochs)."""
    from prior.cli.split_names import stored_split, stored_splits
    from prior.featurestore import open_store
    from prior.trainers.config import DataSpec, ModelSpec
    from prior.trainers.dataset_ref import StoredDataset
    from prior.trainers.models import MODEL_CLASSES
    from prior.trainers.registry import parse_model_name

    overrides: dict[str, Any] = {k: given[k] for k in ("epochs", "lr", "prior_lr", "batch_size", "max_length", "warmup",
                                       "weight_decay", "clip", "patience") if k in given}
    if recorded is not None:
        return recorded.with_given(given, overrides)
    if "model" not in given:
        raise PriorError("name the model to train (e.g. dafa-mini), or give --resume RUN to continue one")
    name, _ = parse_model_name(given["model"])
    feature = MODEL_CLASSES[name].feature
    dotted, plain = split_dotted(given.get("option") or [], feature_names(feature))
    params = read_params(given.get("feature_param"), None, []) or {}
    if twice := sorted(set(params) & set(dotted)):
        raise PriorError(f"feature parameter {', '.join(twice)} is given twice")
    model_options = _model_options(name, plain, feature)
    store = functools.cache(lambda: open_store(ref, create=False))  # opened only if a name needs it
    dataset = given.get("dataset") or StoredDataset.resolve(store(), None).name
    dev_split = stored_split(store(), dataset, given["dev_split"]) if "dev_split" in given else None
    eval_splits = tuple(stored_splits(store(), dataset, given["eval_split"])) if given.get("eval_split") else ()
    model_spec = ModelSpec(model=given["model"], backbone=given.get("backbone"), overrides=overrides,
                           options=model_options, seed=given.get("seed", 42))
    data_spec = DataSpec(dataset=dataset, dev_split=dev_split, eval_splits=eval_splits,
                         limit=given.get("limit"), sample=given.get("sample"), sample_seed=given.get("sample_seed", 0),
                         feature_params={**params, **dotted} or None, feature_entry=given.get("entry"),
                         view=given.get("view"), parser=given.get("parser"), parse=given.get("parse"),
                         features=str(given.get("features", "stored")),
                         **({"window": given["shuffle_window"]} if "shuffle_window" in given else {}))
    return model_spec, data_spec


def _model_options(name: str, plain: list[str], feature: str | None) -> dict[str, object]:
    from prior.trainers.models import MODEL_CLASSES

    model_options = _options(plain)
    known = MODEL_CLASSES[name].default_options
    if unknown := sorted(set(model_options) - set(known)):
        feature_hint = f", or {feature}.K=V to pick its store entry" if feature else ""
        raise PriorError(f"model {name!r} has no option(s) {', '.join(unknown)}; -o takes "
                         + (", ".join(f"{k}=…" for k in sorted(known)) if known else "no model option here")
                         + feature_hint)
    return model_options


def _reporting(progress: bool, log_every: int) -> dict[str, Any]:
    """Bars on a terminal; plain lines every ``log_every`` steps and at each epoch's end in a
    log (nothing with --no-progress or $PRIOR_NO_PROGRESS)."""
    from prior.progress import progress_disabled

    if not progress or progress_disabled():
        return {"progress": lambda *_: None}
    if sys.stderr.isatty():
        return {}
    return {"progress": lambda *_: None, "on_event": PlainLog(log_every)}


class PlainLog:
    """Training's plain lines for a log (standard error not a terminal)."""

    def __init__(self, every: int) -> None:
        self.every = every

    def __call__(self, kind: str, r: dict[str, Any]) -> None:
        if kind == "step" and self.every and (r["step"] % self.every == 0 or r["step"] == r["steps"]):
            eta = "" if r["eta_seconds"] is None else f", {_clock(r['eta_seconds'])} left in the epoch"
            line = (f"epoch {r['epoch']}/{r['epochs']} step {r['step']}/{r['steps']}: loss {r['loss']:.4f}, "
                    f"{r['pairs_per_second']:,.1f} pairs/s, loader {100 * r['loader_share']:.0f}% of step time{eta}")
        elif kind == "epoch":
            metrics = " ".join(f"{k}={v:.4f}" for k, v in r.items() if k.startswith("dev_"))
            line = (f"epoch {r['epoch']} done at step {r['step']}: train_loss={r['train_loss']:.4f} {metrics}"
                    f"{' (best)' if r['best'] else ''}, {_clock(r['seconds'])}")
        else:
            return
        print(line, file=sys.stderr, flush=True)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def _resume_hint(output: Path, step: int, saved: int | None) -> str:
    if saved is None:
        return (f"stopped at step {step}; nothing saved to resume yet ({output}/last/ is written at each epoch's "
                "end and every --save-every N steps)")
    return f"stopped at step {step}; resume from step {saved} with: prior train --resume {_quote(str(output))}"


def _eval_hint(cfg: TrainConfig) -> str:
    """What train prints last: where the results are and the eval line, as it runs."""
    from prior.featurestore import open_store
    from prior.trainers.dataset_ref import StoredDataset
    from prior.trainers.store_record import split_secrets

    out = cfg.run.output
    store = open_store(cfg.run.store, create=False)
    split = StoredDataset.resolve(store, cfg.data.dataset, cfg.data.train_split).eval_split(cfg.data.train_split)
    line = f"prior eval {_quote(str(out))} --split {_quote(split)}"
    _, secrets = split_secrets(store.ref.options())
    note = (f"\n  (the store's {', '.join(secrets)} are not recorded in the checkpoint: give them to eval as you gave "
            "them here, e.g. in $PRIOR_STORAGE_OPTIONS)") if secrets else ""
    scoring = "" if split != cfg.data.train_split else f"\n  ({cfg.data.dataset} has no test or dev split: this scores training pairs)"
    return (f"results in {out} (metrics.jsonl, summary.json; best checkpoint {out / 'best'}); score it with\n"
            f"  {line}{note}{scoring}")


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


@friendly_errors
def eval_(
    checkpoint: Annotated[Path, typer.Argument(help="A `prior train` output folder (its best/ is used) or a checkpoint folder.")],
    dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="Default: the dataset the model was trained on.")] = None,
    split: Annotated[str, typer.Option()] = "test",
    store: Annotated[str | None, typer.Option(help="Default: the store the model was trained from, reached with the storage options it recorded.")] = None,
    storage_option: StorageOptionOpt = None,
    limit: Annotated[int | None, typer.Option(min=1)] = None,
    batch_size: Annotated[int | None, typer.Option(min=1)] = None,
    view: ViewOpt = None,
    features: Annotated[FeatureMode, typer.Option(help="stored: as trained (a run trained with --features neutral reads it neutral); neutral: the feature replaced by its neutral value (all-ones grid, full-visibility mask, zero vectors); shuffled: by another pair's (a fixed permutation). A model whose score does not move without its feature does not use it.")] = FeatureMode.stored,
    device: DeviceOpt = None,
) -> None:
    """Score a checkpoint on one split, reading the feature entries it was trained on; the
    last line lists `name=value` metrics."""
    from prior.cli.split_names import stored_split
    from prior.featurestore import open_store
    from prior.progress import stage_bars
    from prior.trainers.checkpoint import checkpoint_dir, read_meta
    from prior.trainers.evaluation import evaluate_checkpoint
    from prior.trainers.store_record import recorded_store

    ref = store_ref(store, storage_option)  # no --store: the store the model was trained from
    folder = checkpoint_dir(checkpoint)
    meta = read_meta(folder)
    dataset = dataset or str(meta["dataset"])
    split = stored_split(open_store(recorded_store(meta["fingerprints"]["train"], ref), create=False), dataset, split)
    with stage_bars() as progress:
        result = evaluate_checkpoint(folder, dataset, split, store=ref, limit=limit, batch_size=batch_size,
                                     features=features.value, progress=progress, view=view, device=device)
    typer.echo(f"{folder} on {dataset}/{split}" + (f", features {features.value}" if features != "stored" else "")
               + (f", view {view}" if view else ""))
    typer.echo(" ".join(f"{k}={v:.4f}" for k, v in result.items()))
