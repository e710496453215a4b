"""A run's resumable state: written atomically every ``save_every`` steps and at each epoch's
end, read back by ``prior train --resume RUN``, which continues at the exact step.

``RUN/last/`` holds a checkpoint (`prior.trainers.checkpoint`) plus

- ``optimizer.safetensors``: AdamW's moments and step counts, by parameter name;
- ``rng.safetensors``: each rank's random generator states (CPU, and CUDA where used): dropout
  after a resume draws what it would have drawn;
- ``trainer_state.json``: the step, the loader's position (epoch, next step of the epoch), the
  order it was drawn in (`prior.trainers.order.Shuffle`), the global batch size and the pair
  count, the learning-rate schedule's state, early stopping, and the epoch's running loss.

Atomic against a killed process: the state is written whole into ``last.partial/``, then
``last/`` is renamed ``last.previous/``, ``last.partial/`` renamed ``last/`` and the previous one
removed; a kill between the renames leaves ``last.previous/`` complete, which a resume reads.
``best/`` is replaced the same way. A resumed run reads the same data only: :func:`check_same_data`
compares the data fingerprints recorded at the start (pairs and their digest, parse, entries)
with the store's now, and refuses a changed store in one line.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from prior.errors import PriorError
from prior.hints import option
from prior.trainers.checkpoint import META_FILE, CheckpointError, read_meta

STATE_FILE = "trainer_state.json"
OPTIMIZER_FILE = "optimizer.safetensors"
RNG_FILE = "rng.safetensors"
LAST = "last"
STATE_FORMAT = 1
#: the data fingerprint fields a resumed run must find unchanged
SAME_DATA = ("dataset", "split", "pairs", "pairs_digest", "parse", "entries", "view")


@dataclass
class TrainState:
    """Where a run is (module docstring); what ``trainer_state.json`` holds."""

    epoch: int = 0  # the epoch in progress (the next one after its end)
    step: int = 0  # optimizer steps done
    batch: int = 0  # the next step of the epoch (the loader's position)
    best: float | None = None
    bad_epochs: int = 0
    loss_sum: float = 0.0  # the epoch so far: summed step losses, steps, seconds
    epoch_steps: int = 0
    seconds: float = 0.0
    step_seconds: float = 0.0
    order: dict[str, Any] = field(default_factory=dict)  # shuffle, batch_size, pairs, lanes
    scheduler: dict[str, Any] = field(default_factory=dict)

    def end_epoch(self) -> None:
        self.epoch, self.batch = self.epoch + 1, 0
        self.loss_sum, self.epoch_steps, self.seconds, self.step_seconds = 0.0, 0, 0.0, 0.0

    def to_json(self) -> str:
        return json.dumps({"format": STATE_FORMAT, **asdict(self)}, indent=1) + "\n"

    @classmethod
    def read(cls, path: Path) -> TrainState:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(raw, dict) or raw.pop("format", None) != STATE_FORMAT:
                raise ValueError(f"not a format-{STATE_FORMAT} state")
            return cls(**raw)
        except (OSError, UnicodeDecodeError, ValueError, TypeError) as exc:
            raise CheckpointError(f"{path} is damaged ({exc}); resume from another run folder or train again") from None


def state_dir(path: Path | str) -> Path:
    """The resumable state a ``--resume`` path names: a run folder's ``last/`` (or, after a kill
    between the renames, ``last.previous/``), or such a folder itself; `CheckpointError` (one
    line) when there is none."""
    path = Path(path)
    for candidate in (path / LAST, path.with_name(f"{path.name}.previous") if path.name == LAST else None,
                      path / f"{LAST}.previous", path):
        if candidate is not None and (candidate / STATE_FILE).is_file() and (candidate / META_FILE).is_file():
            return candidate
    if not path.exists():
        raise CheckpointError(f"{option('resume', str(path))}: no such folder; give a `prior train` output folder")
    if not path.is_dir():
        raise CheckpointError(f"{option('resume', str(path))}: not a folder; give a `prior train` output folder")
    raise CheckpointError(f"{option('resume', str(path))}: no resumable state in it ({LAST}/{STATE_FILE} and "
                          f"{LAST}/{META_FILE}); a run saves one at each epoch's end and every "
                          f"{option('save_every', 'N')} steps")


def write_atomic_dir(final: Path, write: Callable[[Path], None]) -> None:
    """``write`` a folder whole beside ``final``, then put it in ``final``'s place (module
    docstring)."""
    partial, previous = final.with_name(f"{final.name}.partial"), final.with_name(f"{final.name}.previous")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    write(partial)
    if final.exists():
        shutil.rmtree(previous, ignore_errors=True)
        final.rename(previous)
    partial.rename(final)
    shutil.rmtree(previous, ignore_errors=True)


# --------------------------------------------------------------------------- optimizer and RNG
def save_optimizer(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """AdamW state as safetensors: ``<param>.exp_avg``, ``<param>.exp_avg_sq``, ``<param>.step``."""
    names = {id(p): n for n, p in model.named_parameters()}
    tensors: dict[str, torch.Tensor] = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            for key, value in (optimizer.state.get(p) or {}).items():
                t = value if torch.is_tensor(value) else torch.tensor(value)
                tensors[f"{names[id(p)]}.{key}"] = t.detach().cpu().contiguous()
    save_file(tensors, str(path))


def load_optimizer(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """The state :func:`save_optimizer` wrote, onto ``model``'s parameters: the moments on each
    parameter's device, the step counts on the CPU (where AdamW keeps them unless capturable)."""
    try:
        tensors = load_file(str(path))
    except (OSError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{path} cannot be read ({exc}); resume from another run folder or train again") from None
    for n, p in model.named_parameters():
        state = {key: tensors[f"{n}.{key}"] for key in ("step", "exp_avg", "exp_avg_sq") if f"{n}.{key}" in tensors}
        if state:
            optimizer.state[p] = {k: v if k == "step" else v.to(p.device) for k, v in state.items()}


def rng_states(device: torch.device) -> dict[str, torch.Tensor]:
    """This process's generator states: the CPU's, and its CUDA device's when it uses one."""
    states = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states


def save_rng(path: Path, ranks: Mapping[int, Mapping[str, torch.Tensor]]) -> None:
    save_file({f"rank{r}.{k}": v.contiguous() for r, states in ranks.items() for k, v in states.items()}, str(path))


def restore_rng(path: Path, rank: int, device: torch.device) -> None:
    """Set this rank's generators to what :func:`save_rng` recorded."""
    try:
        tensors = load_file(str(path))
    except (OSError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{path} cannot be read ({exc}); resume from another run folder or train again") from None
    if f"rank{rank}.cpu" not in tensors:
        raise CheckpointError(f"{path} holds no generator state of rank {rank}: the run had fewer ranks; resume "
                              "it with as many ranks as it started with")
    torch.set_rng_state(tensors[f"rank{rank}.cpu"])
    if device.type == "cuda" and f"rank{rank}.cuda" in tensors:
        torch.cuda.set_rng_state(tensors[f"rank{rank}.cuda"], device)


# --------------------------------------------------------------------------- the data
def check_same_data(run: Path, recorded: Mapping[str, Any], now: Mapping[str, Any], role: str) -> None:
    """Refuse, in one line, to resume ``run`` on data other than it started on: ``recorded``
    and ``now`` are one split's fingerprints (`prior.trainers.split_index.SplitIndex`)."""
    changed = [k for k in SAME_DATA if recorded.get(k) != now.get(k)]
    if not changed:
        return
    what = {"pairs": f"{recorded.get('pairs')} pairs then, {now.get('pairs')} now",
            "pairs_digest": "its pairs differ", "parse": "another parse", "entries": "other feature entries",
            "view": "another view"}
    said = "; ".join(dict.fromkeys(what.get(k, f"{k} differs") for k in changed))
    raise PriorError(f"{now.get('store')}: the {role} split {now.get('dataset')}/{now.get('split')} changed since "
                     f"{run} started ({said}); a resumed run reads the data it started on: resume on that store, or "
                     f"train again into a new {option('output')}")


def resume_meta(directory: Path) -> dict[str, Any]:
    """``prior.json`` of a state folder (checked as a checkpoint's)."""
    return read_meta(directory)


__all__ = ["LAST", "OPTIMIZER_FILE", "RNG_FILE", "STATE_FILE", "TrainState", "check_same_data", "load_optimizer",
           "restore_rng", "resume_meta", "rng_states", "save_optimizer", "save_rng", "state_dir", "write_atomic_dir"]
