"""Device and dtype correctness without a GPU.

A tensor a model (or the loop, or the predict path) makes without naming its device lands on
the CPU, and fails only at a user's first GPU run. Two checks find one here:

- every model's forward and backward run with its weights and inputs on PyTorch's ``meta``
  device, where a CPU tensor mixed in raises (HF's attention-mask shortcut reads mask values,
  which ``meta`` has none of, so these runs pass no padding mask);
- a `TorchFunctionMode` watches the tensor factories (``zeros``, ``ones``, ``arange``, ``full``,
  ``tensor``, ``eye``, ``empty``, random draws) called from `prior`'s own files during a
  training step (the loader's batch moved by the loop, the loss, the optimizer step) and the
  predict path: each must name a device.

Mixed precision: every model under ``torch.autocast("cpu", dtype=torch.bfloat16)`` gives a
finite loss and gradients. The harness is checked against a module that breaks the rule.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

import prior
from prior.trainers.models import MODEL_CLASSES
from tests.trainers_fixtures import tiny_config

PRIOR_DIR = str(Path(prior.__file__).parent)
FACTORIES = {torch.zeros, torch.ones, torch.arange, torch.full, torch.tensor, torch.eye, torch.empty, torch.randn,
             torch.rand, torch.randint, torch.linspace, torch.as_tensor}
FEATURE_INPUTS = {"bert-sim": "prior_grid", "dafa": "prior_grid", "sgnet": "sdoi_mask", "gibert": "word_vectors"}


def make_model(name: str, device: str = "cpu") -> Any:
    config = tiny_config()
    config._attn_implementation = "eager"
    config.prior_options = {"embedding_dim": 3} if name == "gibert" else {"pool": "mean"} if name == "sgnet" else {}
    torch.manual_seed(0)
    with torch.device(device):
        return MODEL_CLASSES[name](config)


def make_batch(name: str, device: str = "cpu", mask: bool = True) -> dict[str, torch.Tensor]:
    B, T = 3, 9
    g = torch.Generator().manual_seed(1)
    batch = {"input_ids": torch.randint(5, 20, (B, T), generator=g), "token_type_ids": torch.zeros(B, T, dtype=torch.long),
             "labels": torch.tensor([0, 1, 1])}
    if mask:
        batch["attention_mask"] = (torch.arange(T)[None, :] < torch.tensor([[9], [7], [5]])).long()
    feature = FEATURE_INPUTS.get(name)
    if feature == "prior_grid":
        batch[feature] = 1 + torch.rand(B, T, T, generator=g)
    elif feature == "sdoi_mask":
        batch[feature] = torch.rand(B, T, T, generator=g) > 0.3
    elif feature == "word_vectors":
        batch[feature] = torch.rand(B, T, 3, generator=g)
    return {k: v.to(device) for k, v in batch.items()}


class FactoryWatch(TorchFunctionMode):
    """Records each tensor factory called from a file of the `prior` package without a device."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func in FACTORIES and kwargs.get("device") is None:
            caller = inspect.stack()[1]
            if caller.filename.startswith(PRIOR_DIR):
                self.calls.append(f"{Path(caller.filename).name}:{caller.lineno} {func.__name__}")
        return func(*args, **kwargs)


@contextmanager
def watched() -> Iterator[FactoryWatch]:
    with FactoryWatch() as watch:
        yield watch


@pytest.mark.parametrize("name", list(MODEL_CLASSES))
def test_device_every_model_trains_on_the_meta_device(name: str) -> None:
    model = make_model(name, "meta").train()
    out = model(**make_batch(name, "meta", mask=False))
    out.loss.backward()
    assert out.logits.device.type == "meta"
    assert all(p.grad is None or p.grad.device.type == "meta" for p in model.parameters())


@pytest.mark.parametrize("name", list(MODEL_CLASSES))
def test_device_tensors_made_in_a_step_name_their_device(name: str) -> None:
    """The loop's own step (the batch moved, the loss, clipping, AdamW, the schedule) and the
    model's forward and backward make no tensor without a device."""
    from prior.trainers.loader import TrainBatch
    from prior.trainers.loop import _step
    from prior.trainers.registry import TrainSettings
    from prior.trainers.resume import TrainState
    from prior.trainers.runtime import Runtime
    from prior.trainers.schedule import schedule

    model = make_model(name)
    optimizer, scheduler = schedule(model, TrainSettings(), 10)
    run: Any = type("R", (), {})()
    run.model = run.net = model.train()
    run.rt, run.settings, run.optimizer, run.scheduler, run.state = (Runtime(torch.device("cpu")), TrainSettings(),
                                                                     optimizer, scheduler, TrainState())
    batch = TrainBatch(0, 0, make_batch(name), np.ones(3, np.float32), 3)
    with watched() as watch:
        loss = _step(run, batch)
        run.rt.world = 2  # the DDP branch's weighted loss, computed without a process group
        _step(run, batch)
    assert np.isfinite(loss)
    assert watch.calls == [], watch.calls


def test_device_predict_path_names_its_devices(tmp_path: Path) -> None:
    from prior.trainers.data import load_split
    from prior.trainers.evaluation import predict
    from prior.trainers.runtime import Runtime
    from tests.trainers_fixtures import tiny_store, tiny_tokenizer

    data = load_split(tiny_store(tmp_path / "s"), "toy", "test", tiny_tokenizer(), feature="dep", max_length=32)
    with watched() as watch:
        out = predict(make_model("dafa"), data, 2, Runtime(torch.device("cpu"), precision="bf16"))
    assert out.shape == (4, 2) and np.isfinite(out).all()
    assert watch.calls == [], watch.calls


@pytest.mark.parametrize("name", list(MODEL_CLASSES))
def test_device_bf16_autocast_on_cpu_gives_a_finite_loss(name: str) -> None:
    model = make_model(name).train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(**make_batch(name))
    out.loss.backward()
    assert torch.isfinite(out.loss) and all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_device_checks_catch_a_tensor_made_on_the_cpu() -> None:
    """The harness itself: a module that makes its tensor without a device fails both checks."""
    class Careless(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * torch.ones(x.shape[-1])  # no device=: a CPU tensor

    Careless.__module__ = "prior.trainers.careless"
    x = torch.zeros(2, 4, device="meta")
    with pytest.raises(RuntimeError, match="device"):
        Careless()(x)
    import prior.trainers as package

    source = "import torch\ndef careless(x):\n    return x * torch.ones(x.shape[-1])\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, str(Path(package.__file__).parent / "careless.py"), "exec"), namespace)
    with watched() as watch:
        namespace["careless"](torch.zeros(2, 4))
    assert watch.calls == ["careless.py:3 ones"]
