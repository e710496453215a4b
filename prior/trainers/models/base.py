"""The common base of every `prior` model: a Hugging Face ``BertForSequenceClassification``.

Each model subclasses :class:`PriorBertModel` and changes only what its paper changes, by
swapping a module of the encoder (layer 0's self-attention, or one whole layer) for a subclass
of the Hugging Face module that keeps its parameter names, so pre-trained BERT weights load
unchanged into it and only the paper's new parameters start from scratch.

Feature tensors reach the swapped modules as keyword arguments: Hugging Face BERT (transformers
5) forwards extra keyword arguments from ``BertForSequenceClassification.forward`` through
``BertModel``, ``BertEncoder`` and every ``BertLayer`` down to each self-attention module, where
the stock attention functions ignore them. Names used: ``prior_grid`` (B, T, T) float multiplier
(bert-sim, dafa), ``sdoi_mask`` (B, T, T) bool (sgnet), ``word_vectors`` (B, T, E) float (gibert).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn
from transformers import BertConfig, BertForSequenceClassification


def additive_mask(attention_mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """The padding mask as the additive float mask eager attention uses.

    Hugging Face hands layers ``None`` (no padding, sdpa), a bool mask (True = attend, sdpa) or
    an additive float mask (eager); all three become an additive mask of ``dtype`` (or None).
    """
    if attention_mask is None:
        return None
    if attention_mask.dtype == torch.bool:
        zero = torch.zeros((), dtype=dtype, device=attention_mask.device)
        return torch.where(attention_mask, zero, torch.finfo(dtype).min)
    return attention_mask.to(dtype)


def restrict_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A bool (B, T, T) "may attend" grid as an additive (B, 1, T, T) mask (−∞ elsewhere)."""
    zero = torch.zeros((), dtype=dtype, device=allowed.device)
    return torch.where(allowed, zero, torch.finfo(dtype).min)[:, None]  # (B, 1, T, T)


class PriorBertModel(BertForSequenceClassification):
    """Plain BERT for sentence pairs: the `bert` baseline and the parent of every model.

    ``config.prior_model`` names the model (so a checkpoint knows what to load) and
    ``config.prior_options`` holds the paper options the model was built with.
    """

    model_name: ClassVar[str] = "bert"
    #: the store feature (an entry or view name) the model reads, None for none; the loader
    #: builds its batch tensor by the feature's storage layout and passes it as the forward
    #: argument the layout names (``prior_grid``, ``sdoi_mask``, ``word_vectors``; prior/layouts/kinds.py)
    feature: ClassVar[str | None] = None
    #: paper options and their defaults; stored in ``config.prior_options``
    default_options: ClassVar[dict[str, Any]] = {}
    #: the paper's training settings where they differ from BERT's recipe
    #: (`prior.trainers.registry.TrainSettings`), and per dataset where the paper tuned them
    paper_settings: ClassVar[dict[str, Any]] = {}
    dataset_settings: ClassVar[dict[str, dict[str, Any]]] = {}
    #: settings of the `-mini` schedule that concern the method's own parameters only
    #: (``prior_lr``), where the shared schedule cannot train them (bench/oracle.py measures it)
    mini_settings: ClassVar[dict[str, Any]] = {}

    @classmethod
    def options_from_feature(cls, source: Any) -> dict[str, Any]:
        """Options a new model takes from the feature it reads (the batch source of the
        training split), e.g. GiBERT's embedding width; none by default."""
        return {}

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        config.prior_model = self.model_name
        options = {**self.default_options, **(getattr(config, "prior_options", None) or {})}
        unknown = sorted(set(options) - set(self.default_options))
        if unknown:
            raise ValueError(f"model {self.model_name!r} has no option(s) {unknown}; "
                             f"known: {sorted(self.default_options)}")
        config.prior_options = options
        self.options = options
        self.build_prior(config)
        self.post_init()

    def build_prior(self, config: BertConfig) -> None:
        """Add or swap the modules the paper changes (nothing for plain BERT)."""

    def initialize_weights(self) -> None:
        """BERT's init, then each module's ``init_prior_parameters`` for its bare parameters.

        Hugging Face initialises the modules under ``self.bert`` with ``BertModel._init_weights``,
        which knows Linear/LayerNorm/Embedding but not a bare ``nn.Parameter`` (a gate, a
        learned vector): those modules say how in ``init_prior_parameters(std)``. The
        ``transformers.initialization`` functions used there skip parameters that were
        loaded from a checkpoint.
        """
        super().initialize_weights()
        if "options" not in self.__dict__:  # BERT's own post_init, before build_prior
            return
        for sub in self.modules():
            hook = getattr(sub, "init_prior_parameters", None)
            if hook is not None:
                hook(self.config.initializer_range)

    def prior_parameter_names(self) -> set[str]:
        """Names of the method's own parameters: those a plain ``BertForSequenceClassification``
        of the same config does not have (a gate, a fusion module, an extra layer). They start
        from scratch or from zero where the rest is pre-trained, which is what a separate
        learning rate (``TrainSettings.prior_lr``) is for. Plain BERT has none."""
        with torch.device("meta"):
            plain = BertForSequenceClassification(BertConfig(**self.config.to_dict()))
        known = {name for name, _ in plain.named_parameters()}
        return {name for name, _ in self.named_parameters() if name not in known}

    @staticmethod
    def pair_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Cross-entropy for classes, mean squared error for one regression output."""
        if logits.shape[-1] == 1:
            return nn.functional.mse_loss(logits.squeeze(-1), labels.to(logits.dtype))
        return nn.functional.cross_entropy(logits, labels)
