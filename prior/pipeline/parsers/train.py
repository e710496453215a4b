"""Train supar's biaffine dependency parser (Dozat & Manning) on CoNLL-U files, then export it.

Choices (see docs/parsers.md and data/parser/MODEL_CARD.md):
- LSTM encoder with word embeddings (random init, ``embed=''``) and a character LSTM feature;
  no pretrained embeddings, no BERT (supar 1.1.4's BERT path breaks on transformers 5).
- Multi-word-token and empty-node lines are dropped before training (see :mod:`.conllu`).
- Model selection uses dev only: supar keeps the epoch with the best dev LAS; its per-epoch
  "test" evaluation is pointed at the dev file too, so no test score is seen during training.
- supar's dill checkpoint stays in the run directory; what we ship is the safetensors + JSON
  export of :mod:`.artifact`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from prior.errors import DataError, ResourceError
from prior.hints import option
from prior.pipeline.parsers.conllu import read_conllu, write_conllu
from prior.pipeline.parsers.supar_compat import quiet_supar_warnings, supar_config, trusted_supar_load


@dataclass(frozen=True)
class TrainSettings:
    """The settings `prior parser train` exposes; everything else is supar's default.

    Defaults are those of the shipped model (a 2 x 300 BiLSTM, batches of 2,000 tokens: sized to
    train on 2 shared CPU cores); supar's own defaults are 3 x 400 and 5,000 tokens.
    """

    epochs: int = 40
    patience: int = 100
    n_lstm_hidden: int = 300
    n_lstm_layers: int = 2
    n_embed: int = 100
    n_char_embed: int = 50
    n_feat_embed: int = 100
    n_arc_mlp: int = 500
    n_rel_mlp: int = 100
    batch_size: int = 2000
    lr: float = 2e-3
    min_freq: int = 2
    seed: int = 1
    threads: int = 1

    def supar_overrides(self) -> dict[str, Any]:
        # supar widens the LSTM input by n_pretrained whenever n_pretrained != n_embed, even with
        # no pretrained embeddings: keep them equal.
        settings = {k: v for k, v in self.__dict__.items() if k != "threads"}
        return {**settings, "n_pretrained": self.n_embed}


def prepare_conllu(sources: Sequence[str | Path], target: Path) -> int:
    """Concatenate ``sources`` into ``target`` with MWT and empty-node lines removed."""
    sentences = [s for src in sources for s in read_conllu(src)]
    if not sentences:
        raise DataError("no sentences found", file=", ".join(map(str, sources)))
    write_conllu(sentences, target)
    return len(sentences)


def train_supar(train: Sequence[str | Path], dev: str | Path, run_dir: str | Path,
                settings: TrainSettings = TrainSettings(), resume: bool = False) -> Path:
    """Train in ``run_dir`` (supar checkpoint ``model.supar``, log ``train.log``); return the checkpoint path.

    ``resume``: continue a run in ``run_dir`` that was stopped (killed) before its last epoch,
    from supar's checkpoint: the best dev epoch so far with its optimizer, scheduler and random
    state, up to ``settings.epochs`` (epochs after that best one are run again); the log is
    appended to. supar drops the training state when a run ends normally, so a finished run
    cannot be resumed. This is how the shipped model's training was spread over sittings.
    """
    from supar import BiaffineDependencyParser
    from supar.utils.logging import init_logger, logger

    run_dir = Path(run_dir)
    if resume and not (run_dir / "model.supar").is_file():
        raise ResourceError(f"cannot resume: {run_dir / 'model.supar'} does not exist (start the run without {option('resume')})")
    run_dir.mkdir(parents=True, exist_ok=True)
    train_file, dev_file = run_dir / "train.conllu", run_dir / "dev.conllu"
    prepare_conllu(list(train), train_file)
    prepare_conllu([dev], dev_file)
    torch.set_num_threads(settings.threads)
    torch.manual_seed(settings.seed)
    # supar logs through the root logger's handlers (basicConfig); add our own file handler to
    # its "supar" logger so the log is written whatever the caller configured.
    supar_logger = logging.getLogger("supar")
    handler = logging.FileHandler(run_dir / "train.log", mode="a" if resume else "w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S"))
    supar_logger.addHandler(handler)
    try:
        init_logger(logger)
        supar_logger.setLevel(logging.INFO)
        path = run_dir / "model.supar"
        config = supar_config(**settings.supar_overrides(), path=str(path), train=str(train_file),
                              dev=str(dev_file), test=str(dev_file))
        logger.info(f"prior settings: {settings}")
        with trusted_supar_load(), quiet_supar_warnings():  # train() reloads its best checkpoint at the end
            if resume:  # our own run directory: its checkpoint is trusted like the one train() reloads
                try:
                    parser = BiaffineDependencyParser.load(str(path), checkpoint=True)
                except KeyError:
                    raise ResourceError(
                        f"cannot resume: {path} holds no training state. supar drops it when a run "
                        f"ends normally, so {option('resume')} continues only a run that was stopped before its "
                        "last epoch; start a new run (or export this one) instead") from None
                logger.info(f"resumed from the checkpoint of epoch {parser.checkpoint_state_dict.get('epoch')}")
                parser.train(**{**config, "checkpoint": True})
            else:
                parser = BiaffineDependencyParser.build(**config)
                parser.train(**config)
    finally:
        supar_logger.removeHandler(handler)
        handler.close()
    return path


def train_parser(train: Sequence[str | Path], dev: str | Path, out_dir: str | Path,
                 run_dir: str | Path | None = None, settings: TrainSettings = TrainSettings(),
                 dtype: str = "float16", resume: bool = False) -> Path:
    """Train (or, with ``resume``, continue the run in ``run_dir``), then export the best (dev)
    model to ``out_dir`` as safetensors + JSON; return ``out_dir``."""
    from prior.pipeline.parsers.artifact import export_supar_checkpoint

    out_dir = Path(out_dir)
    run_dir = Path(run_dir) if run_dir is not None else out_dir / "run"
    checkpoint = train_supar(train, dev, run_dir, settings, resume=resume)
    export_supar_checkpoint(checkpoint, out_dir, dtype=dtype,
                            training={"train": [Path(p).name for p in train], "dev": Path(dev).name,
                                      "settings": settings.__dict__})
    return out_dir
