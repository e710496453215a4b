"""One training loop for every model: AdamW, linear warm-up, gradient clipping, AMP on CUDA,
early stopping on the dev metric, checkpoints, mid-epoch resume, a JSONL metrics log.

One process (CPU, or one GPU with bf16 autocast)::

    prior train dafa-mini --dataset mrpc --store STORE --output runs/dafa
    prior train dafa-base --dataset mrpc --store STORE --device cuda --save-every 200

Several GPUs (DDP over NCCL; rank and world size from torchrun's environment). The batch size
is the global one: each rank serves its share of every step's pairs, so any number of ranks
sees the same pairs in the same steps (`prior.trainers.order`)::

    torchrun --nproc_per_node 4 "$(command -v prior)" train dafa-base --dataset mrpc --store STORE

Resume a run at its last saved step (``--save-every N`` saves every N steps, and every epoch's
end saves)::

    prior train --resume runs/dafa

Output folder::

    best/            save_pretrained (safetensors) of the best dev epoch + tokenizer + prior.json
    last/            the latest saved state: model, optimizer, generators, loader position (resume)
    metrics.jsonl    one line per epoch (train loss, dev metrics, seconds, mean step time)
    summary.json     the best dev score and the best model's scores on the eval splits

``prior.json`` records the model, backbone, settings, seed, label names, the store (location
and non-secret options) and the feature entries (fingerprints) of every split used, and the
library versions. Nothing is pickled: weights, optimizer and generator states are
safetensors, the rest JSON. Under DDP every rank evaluates the whole dev set (simple and
exact; rank 0 writes).
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch

from prior.progress import Progress, stage_bars
from prior.trainers.checkpoint import load_checkpoint, save_checkpoint
from prior.trainers.config import TrainConfig
from prior.trainers.evaluation import evaluate
from prior.trainers.loader import TrainBatch, run_batches
from prior.trainers.reporting import Event, Reporter, StepClock
from prior.trainers.resume import (
    LAST,
    OPTIMIZER_FILE,
    RNG_FILE,
    STATE_FILE,
    rng_states,
    save_optimizer,
    save_rng,
    write_atomic_dir,
)
from prior.trainers.run_setup import Run, start_run
from prior.trainers.runtime import move_model, to_device
from prior.trainers.schedule import scheduler_state


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training: the run folder, the steps done, and the step its last saved
    state holds (None: nothing saved yet). The command line says how to resume it."""

    def __init__(self, output: Path, step: int, saved_step: int | None) -> None:
        super().__init__(f"stopped at step {step} of {output}")
        self.output, self.step, self.saved_step = output, step, saved_step


def train(cfg: TrainConfig, *, progress: Progress | None = None, on_event: Event | None = None) -> dict[str, Any]:
    """Train ``cfg``'s model on its dataset from the store; returns the final summary.
    ``progress`` draws the step bar (default: rich bars unless ``cfg.run.progress`` is off);
    ``on_event`` hears every step and epoch record (`prior.trainers.reporting`)."""
    run = start_run(cfg)
    saved: list[int] = []
    bars = nullcontext(progress) if progress is not None else stage_bars(cfg.run.progress and run.rt.main)
    try:
        with bars as draw:
            reporter = Reporter(run.out, main=run.rt.main, progress=draw, on_event=on_event,
                                report_to=cfg.run.report_to)
            try:
                _loop(run, reporter, saved)
            except KeyboardInterrupt:
                raise TrainingInterrupted(run.out, run.state.step, saved[-1] if saved else _saved_step(run)) from None
            finally:
                reporter.close()
        return _finish(run)
    finally:
        run.rt.close()  # the process group, under torchrun


def _saved_step(run: Run) -> int | None:
    """The step of a state saved before this process started (a resumed run), else None."""
    path = run.out / LAST / STATE_FILE
    return int(json.loads(path.read_text())["step"]) if path.is_file() else None


def _loop(run: Run, reporter: Reporter, saved: list[int]) -> None:
    """The steps from the run's position to its end: early stopping, ``max_steps``."""
    state, every = run.state, run.cfg.run.save_every
    batches = run_batches(run.stream, run.loader, pin_memory=run.rt.device.type == "cuda")
    clock = StepClock()
    run.net.train()
    for batch in batches:
        if batch.skip:
            continue
        wait = clock.lap()
        loss = _step(run, batch)
        seconds = wait + clock.lap()
        state.batch = batch.batch + 1
        state.loss_sum, state.epoch_steps = state.loss_sum + loss, state.epoch_steps + 1
        state.seconds, state.step_seconds = state.seconds + seconds, state.step_seconds + seconds - wait
        reporter.step(epoch=batch.epoch, epochs=run.settings.epochs, step=state.batch, steps=run.steps_per_epoch,
                      global_step=state.step, loss=loss, wait=wait, seconds=seconds, pairs=batch.global_pairs)
        stop = run.cfg.run.max_steps is not None and state.step >= run.cfg.run.max_steps
        if state.batch == run.steps_per_epoch or stop:
            stop = _end_epoch(run, reporter) or stop
            saved.append(state.step)
            run.net.train()  # evaluation left it in eval mode
        elif every and state.step % every == 0:
            _save_state(run)
            saved.append(state.step)
        if stop:
            break
        clock.lap()  # the next wait starts now, not before an evaluation or a save


def _step(run: Run, batch: TrainBatch) -> float:
    """One optimizer step on one batch; returns its loss. Under DDP each rank's loss is its
    pairs' share of the step's mean (a stand-in pair weighs 0), so the averaged gradient is
    that of the whole step's pairs."""
    tensors = to_device(batch.tensors, run.rt.device)
    with run.rt.autocast():
        if run.rt.world == 1:
            loss = run.net(**tensors).loss
        else:
            labels = tensors.pop("labels")
            logits = run.net(**tensors).logits
            weights = torch.from_numpy(batch.weights).to(run.rt.device)
            loss = _weighted_loss(logits, labels, weights, batch.global_pairs, run.rt.world)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(run.model.parameters(), run.settings.clip)
    run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    run.state.step += 1
    return float(loss.detach())


def _weighted_loss(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor, global_pairs: int,
                   world: int) -> torch.Tensor:
    """Σ weight · loss over this rank's pairs, scaled so that DDP's mean over ranks is the
    mean over the step's pairs (cross-entropy for classes, squared error for one score, as
    `PriorBertModel.pair_loss`)."""
    logits = logits.float()
    if logits.shape[-1] == 1:
        each = torch.nn.functional.mse_loss(logits.squeeze(-1), labels.to(logits.dtype), reduction="none")
    else:
        each = torch.nn.functional.cross_entropy(logits, labels, reduction="none")
    return (each * weights).sum() * (world / max(1, global_pairs))


def _end_epoch(run: Run, reporter: Reporter) -> bool:
    """The dev score, metrics line and checkpoints of a finished epoch (or one stopped by
    ``max_steps``); True when early stopping ends the run."""
    state, key_metric = run.state, run.task.metrics[0]  # every metric: higher is better
    dev = evaluate(run.model, run.data.dev, run.settings.batch_size, run.rt, run.task.metrics)
    improved = state.best is None or dev[key_metric] > state.best
    steps = max(1, state.epoch_steps)
    record = {"epoch": state.epoch + 1, "step": state.step, "train_loss": state.loss_sum / steps,
              **{f"dev_{k}": v for k, v in dev.items()}, "best": improved, "seconds": state.seconds,
              "step_seconds": state.step_seconds / steps}
    if improved:
        state.best, state.bad_epochs = dev[key_metric], 0
    else:
        state.bad_epochs += 1
    state.end_epoch()
    reporter.epoch(record)
    if improved and run.rt.main:
        meta = {**run.meta, "epoch": state.epoch, "dev_metrics": dev}
        write_atomic_dir(run.out / "best", lambda d: save_checkpoint(d, run.model, run.tokenizer, meta))
    _save_state(run, {"dev_metrics": dev})
    return state.bad_epochs >= run.settings.patience


def _save_state(run: Run, extra: dict[str, Any] | None = None) -> None:
    """The resumable state in ``last/``, atomically (`prior.trainers.resume`); every rank's
    generator states, rank 0 writes."""
    state = run.state
    state.order = {"shuffle": run.stream.shuffle.to_dict(), "batch_size": run.settings.batch_size,
                   "pairs": len(run.stream)}
    state.scheduler = scheduler_state(run.scheduler)
    ranks = {run.rt.rank: rng_states(run.rt.device)}
    if run.rt.world > 1:
        gathered: list[Any] = [None] * run.rt.world
        torch.distributed.all_gather_object(gathered, (run.rt.rank, {k: v.cpu() for k, v in ranks[run.rt.rank].items()}))
        ranks = dict(gathered)
    if run.rt.main:
        meta = {**run.meta, "epoch": state.epoch, "step": state.step, **(extra or {})}

        def write(folder: Path) -> None:
            save_checkpoint(folder, run.model, run.tokenizer, meta)
            save_optimizer(folder / OPTIMIZER_FILE, run.model, run.optimizer)
            save_rng(folder / RNG_FILE, ranks)
            (folder / STATE_FILE).write_text(state.to_json())

        write_atomic_dir(run.out / LAST, write)
    if run.rt.world > 1:
        torch.distributed.barrier()


def _finish(run: Run) -> dict[str, Any]:
    """The summary: best dev score, and the best checkpoint's scores on the eval splits."""
    if run.rt.world > 1:
        torch.distributed.barrier()
    summary: dict[str, Any] = {"output": str(run.out), "best_dev": run.state.best, "epochs": run.state.epoch,
                               "steps": run.state.step, "key_metric": run.task.metrics[0]}
    if run.data.evals:
        best, _, _ = load_checkpoint(run.out / "best")
        move_model(best, run.rt.device)
        for split, data in run.data.evals.items():
            summary[split] = evaluate(best, data, run.settings.batch_size, run.rt, run.task.metrics)
    if run.rt.main:
        (run.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


__all__ = ["TrainingInterrupted", "train"]
