"""The optimizer and learning-rate schedule every model trains with: AdamW with BERT's
weight-decay groups, linear warm-up and linear decay."""

from __future__ import annotations

from typing import Any

import torch

from prior.trainers.registry import TrainSettings


def linear_warmup(optimizer: torch.optim.Optimizer, warmup_steps: int,
                  total_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / max(1, warmup_steps)
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def make_optimizer(model: torch.nn.Module, s: TrainSettings) -> torch.optim.AdamW:
    """AdamW; no weight decay on biases and LayerNorm weights (BERT's recipe); the method's own
    parameters (``prior_parameter_names``) at ``s.prior_lr`` when it is set, else at ``s.lr``."""
    names = getattr(model, "prior_parameter_names", None)
    own: set[str] = names() if s.prior_lr is not None and callable(names) else set()
    groups: dict[tuple[bool, bool], list[torch.nn.Parameter]] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        groups.setdefault((name in own, p.ndim < 2 or "LayerNorm" in name), []).append(p)
    return torch.optim.AdamW([{"params": params, "weight_decay": 0.0 if bare else s.weight_decay,
                               "lr": s.prior_lr if prior and s.prior_lr is not None else s.lr}
                              for (prior, bare), params in sorted(groups.items())], lr=s.lr)


def schedule(model: torch.nn.Module, settings: TrainSettings, total_steps: int
             ) -> tuple[torch.optim.AdamW, torch.optim.lr_scheduler.LambdaLR]:
    """The optimizer and its schedule over ``total_steps`` steps (warm-up: ``settings.warmup``
    of them)."""
    optimizer = make_optimizer(model, settings)
    return optimizer, linear_warmup(optimizer, int(settings.warmup * total_steps), total_steps)


def restore_schedule(optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LambdaLR,
                     step: int) -> None:
    """Continue the schedule at ``step`` (a resumed run): each group's rate as the schedule gives
    it there, computed as the schedule computes it."""
    scheduler.last_epoch = step
    scheduler._step_count = step + 1
    for group, base, factor in zip(optimizer.param_groups, scheduler.base_lrs, scheduler.lr_lambdas):
        group["lr"] = base * factor(step)
    scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]


def scheduler_state(scheduler: Any) -> dict[str, Any]:
    """What a state file records of the schedule (JSON): the step it is at and its rates."""
    return {"last_epoch": int(scheduler.last_epoch), "last_lr": [float(x) for x in scheduler.get_last_lr()]}


__all__ = ["linear_warmup", "make_optimizer", "restore_schedule", "schedule", "scheduler_state"]
