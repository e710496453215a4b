"""The trainers' device paths on a GPU, in one short run: what `tests/test_trainers_devices.py`
checks without one, done for real, and the step times the loader has to keep up with.

    python bench/gpu_check.py --store STORE --tokenizer DIR --out OUT --work DIR [--device cuda]

STORE: a store with a ``synth`` train/dev/test split holding `dep` (``bench/synthetic_store.py
STORE --pairs 8000 --splits dev:500,test:500``); DIR: a BERT tokenizer (the ``-mini`` backbone's
folder: bert-base-uncased's vocabulary). Random weights only (no hub here): two backbones are
written into OUT, a tiny one and one of bert-base's shape (12 layers, hidden 768).

1. every model (tiny) trains 3 steps on the device with bf16 autocast through the loop's own
   step, on a batch from the store's loader, and predicts: finite losses and outputs;
2. ``prior train dafa --device DEVICE`` with bert-base's shape, 2 loader workers (pinned
   memory), ``--save-every 50``, one epoch, then ``--resume`` for a second, then ``prior eval``;
   and ``prior train bert`` the same for one epoch: step seconds, pairs/s and the loader's share
   of the step time, from metrics.jsonl and the plain log lines.

One JSON line per check on standard output and in OUT/gpu_check.jsonl, each command's log in
OUT; the backbones and runs (weights: hundreds of MB) go to ``--work``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _record(out: Path, row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)
    with (out / "gpu_check.jsonl").open("a") as fh:
        fh.write(json.dumps(row) + "\n")


def backbones(out: Path, tokenizer: Path, base: bool = True) -> list[Path]:
    """A tiny and (``base``) a bert-base-shaped random BERT with the given tokenizer, as checkpoints."""
    import shutil

    import torch
    from transformers import BertConfig, BertModel

    made = []
    shapes = [("tiny", dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)),
              ("base", dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072))]
    for name, shape in shapes[:2 if base else 1]:
        folder = out / f"backbone-{name}"
        torch.manual_seed(0)
        BertModel(BertConfig(vocab_size=30522, max_position_embeddings=512, **shape)).save_pretrained(folder)
        for f in tokenizer.iterdir():
            if f.name.startswith(("tokenizer", "vocab", "special_tokens")):
                shutil.copy(f, folder / f.name)
        made.append(folder)
    return made


def models_on_device(store: str, tiny: Path, device: str, out: Path) -> None:
    """Each model: 3 steps of the loop's own step and a prediction, bf16 on the device."""
    import torch

    from prior.featurestore import open_store
    from prior.trainers import backbones as bb
    from prior.trainers.evaluation import predict
    from prior.trainers.loader import TrainBatch
    from prior.trainers.loop import _step
    from prior.trainers.models import MODEL_CLASSES
    from prior.trainers.reader import SplitReader
    from prior.trainers.registry import TrainSettings
    from prior.trainers.resume import TrainState
    from prior.trainers.runtime import Runtime, move_model
    from prior.trainers.schedule import schedule
    from prior.trainers.split_index import index_split

    st = open_store(store, create=False)
    tok = bb.load_tokenizer(str(tiny))
    rt = Runtime(torch.device(device), precision="bf16")
    for name, cls in MODEL_CLASSES.items():
        t0 = time.perf_counter()
        try:
            feature = "dep" if name in ("dafa", "bert-sim") else None  # the store holds dep (a pair matrix) only
            reader = SplitReader(index_split(st, "synth", "train", feature=feature), tok, 128)
            options = {"embedding_dim": 8} if name == "gibert" else {}
            model = bb.build_model(cls, str(tiny), num_labels=3, options=options, seed=0)
            move_model(model, rt.device)
            optimizer, scheduler = schedule(model, TrainSettings(lr=1e-3), 10)
            run: Any = type("Run", (), {})()
            run.model = run.net = model.train()
            run.rt, run.settings, run.optimizer, run.scheduler, run.state = rt, TrainSettings(), optimizer, scheduler, \
                TrainState()
            data = reader.read(np.arange(32))
            arrays = data.batch_arrays(np.arange(32))
            if name == "gibert":
                arrays["word_vectors"] = np.random.default_rng(0).random((*arrays["input_ids"].shape, 8), np.float32)
            if name == "sgnet":
                real = arrays["attention_mask"].astype(bool)
                arrays["sdoi_mask"] = real[:, :, None] & real[:, None, :]
            losses = [_step(run, TrainBatch(0, i, arrays, np.ones(32, np.float32), 32)) for i in range(3)]
            outputs = predict(model, _Fixed(arrays), 16, rt)
            ok = bool(np.isfinite(losses).all() and np.isfinite(outputs).all())
            row = {"check": "model_on_device", "model": name, "ok": ok, "losses": [round(x, 4) for x in losses]}
        except Exception as exc:  # noqa: BLE001 - a device check reports every failure, then goes on
            row = {"check": "model_on_device", "model": name, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:600]}
        row["seconds"] = round(time.perf_counter() - t0, 2)
        _record(out, row)


class _Fixed:
    """One batch's arrays, as the evaluation reads pairs (labels left out)."""

    dataset, split = "synth", "train"

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.arrays = arrays

    def __len__(self) -> int:
        return len(self.arrays["input_ids"])

    def batches(self, batch_size: int) -> Any:
        import torch

        for start in range(0, len(self), batch_size):
            yield {k: torch.from_numpy(v[start:start + batch_size]) for k, v in self.arrays.items() if k != "labels"}

    def gold(self) -> np.ndarray:
        return self.arrays["labels"]


def library_run(cfg: Any, out: Path, name: str) -> dict[str, Any]:
    """`prior.trainers.loop.train` in this process; every 50th step's record kept."""
    from prior.trainers.loop import train

    steps: list[dict[str, Any]] = []

    def event(kind: str, record: dict[str, Any]) -> None:
        if kind == "epoch" or record["step"] % 50 == 0:
            steps.append({"kind": kind, **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in record.items()}})

    t0 = time.perf_counter()
    try:
        summary: Any = train(cfg, progress=lambda *_: None, on_event=event)
        ok = True
    except Exception as exc:  # noqa: BLE001 - a device check reports every failure, then goes on
        summary, ok = f"{type(exc).__name__}: {exc}"[:800], False
    (out / f"{name}.log").write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    return {"ok": ok, "seconds": round(time.perf_counter() - t0, 1), "summary": summary, "records": steps[-4:]}


def training(store: str, base: Path, device: str, out: Path, work: Path) -> None:
    """train / resume / eval on the device with bert-base's shape (module docstring)."""
    from prior.featurestore import StoreRef
    from prior.trainers.config import DataSpec, ModelSpec, RunSpec, TrainConfig
    from prior.trainers.evaluation import evaluate_checkpoint
    from prior.trainers.recorded import recorded_config

    def cfg(model: str, run: Path, epochs: int, save_every: int | None) -> Any:
        return TrainConfig(ModelSpec(model, backbone=str(base), overrides={"epochs": epochs, "batch_size": 32,
                                                                         "max_length": 128}),
                           DataSpec("synth"), RunSpec(output=run, store=store, device=device, workers=2,
                                                      save_every=save_every))

    for model, save_every in (("dafa", 50), ("bert", None)):
        run = work / f"run-{model}"
        row = {"check": f"train_{model}", **library_run(cfg(model, run, 1, save_every), out, f"train-{model}")}
        if (run / "metrics.jsonl").is_file():
            row["metrics"] = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
        _record(out, row)
    run = work / "run-dafa"
    try:
        recorded = recorded_config(run, StoreRef(None, {}))
        model_spec, data_spec = recorded.with_given({}, {"epochs": 2})
        resumed = TrainConfig(model_spec, data_spec, RunSpec(output=recorded.output, store=recorded.store,
                                                            resume=run, device=device, workers=2))
        _record(out, {"check": "resume_dafa", **library_run(resumed, out, "resume-dafa")})
        _record(out, {"check": "metrics_after_resume",
                      "metrics": [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]})
        scores = evaluate_checkpoint(run, "synth", "test", device=device)
        _record(out, {"check": "eval_dafa", "ok": True, "scores": scores})
    except Exception as exc:  # noqa: BLE001
        _record(out, {"check": "resume_eval_dafa", "ok": False, "error": f"{type(exc).__name__}: {exc}"[:800]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True)
    ap.add_argument("--tokenizer", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--skip-training", action="store_true")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    import torch
    import transformers

    _record(args.out, {"check": "environment", "torch": torch.__version__, "transformers": transformers.__version__,
                       "cuda": torch.cuda.is_available(),
                       "device_name": torch.cuda.get_device_name() if torch.cuda.is_available() else None})
    made = backbones(args.work, args.tokenizer, base=not args.skip_training)
    models_on_device(args.store, made[0], args.device, args.out)
    if not args.skip_training:
        training(args.store, made[1], args.device, args.out, args.work)


if __name__ == "__main__":
    main()
