"""Where a run computes: the device, the rank in a distributed run, mixed precision.

- device: ``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda`` or ``cuda:N``; under
  torchrun each rank takes the GPU of its ``LOCAL_RANK``;
- distributed: torchrun's environment (``WORLD_SIZE`` > 1) starts one process group, NCCL on
  GPUs and gloo on CPUs;
- mixed precision: bf16 autocast on CUDA (no loss scaling is needed for bf16); off on CPU
  unless asked (``precision="bf16"``, what the device tests exercise).
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from prior.errors import PriorError
from prior.hints import option

DEVICES = ("auto", "cpu", "cuda")


@dataclass
class Runtime:
    device: torch.device
    rank: int = 0
    world: int = 1
    precision: str = "auto"  # "auto": bf16 autocast on CUDA only; "bf16"; "fp32"
    owns_group: bool = False  # `runtime` started the process group (`close` ends it)

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        if self.precision == "fp32" or (self.precision == "auto" and self.device.type != "cuda"):
            return None
        return torch.bfloat16

    def close(self) -> None:
        """End the process group `runtime` started, if any. A process that exits with gloo's
        worker threads still holding work aborts (SIGABRT, "terminate called without an active
        exception") while the interpreter shuts down, after its run succeeded."""
        if self.owns_group and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
        self.owns_group = False

    def autocast(self) -> Any:
        dtype = self.autocast_dtype
        if dtype is None:
            return nullcontext()
        return torch.autocast(self.device.type, dtype=dtype)


def pick_device(name: str | None = None) -> torch.device:
    """The device ``name`` asks for (module docstring); a one-line error for one that is not here."""
    name = name or "auto"
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if name == "auto":
        return torch.device("cuda", local) if torch.cuda.is_available() else torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise PriorError(f"{option('device', name)}: not a device; give auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise PriorError(f"{option('device', name)}: this torch ({torch.__version__}) sees no CUDA device")
        index = local if device.index is None else device.index
        if index >= torch.cuda.device_count():
            raise PriorError(f"{option('device', name)}: there are {torch.cuda.device_count()} CUDA devices")
        return torch.device("cuda", index)
    if device.type != "cpu":
        raise PriorError(f"{option('device', name)}: prior trains on cpu or cuda")
    return device


def runtime(device: str | None = None, precision: str = "auto") -> Runtime:
    """The run's device (:func:`pick_device`) and, when started by torchrun (``WORLD_SIZE`` > 1),
    its process group: NCCL on CUDA, gloo on CPU (`Runtime.close` ends it)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    dev = pick_device(device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    owns = world > 1 and not torch.distributed.is_initialized()
    if owns:
        torch.distributed.init_process_group("nccl" if dev.type == "cuda" else "gloo")
    return Runtime(dev, rank, world, precision, owns_group=owns)


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def device_name(device: torch.device) -> str | None:
    """The accelerator's name for a run's record (``NVIDIA H200``); None on the CPU."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else None


def move_model(model: torch.nn.Module, device: torch.device) -> None:
    """Move a model in place (through `torch.nn.Module.to`: transformers wraps it with another
    signature in its type hints)."""
    torch.nn.Module.to(model, device)


__all__ = ["DEVICES", "Runtime", "move_model", "pick_device", "runtime", "to_device"]
