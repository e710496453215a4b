"""An example model for docs/extending.md: BERT whose first layer's attention scores get a
learned bonus where the two words are the same (the ``overlap`` example feature).

scores = QKᵀ/√d + w · O_grid + mask, with one scalar w per head, initialised to 0 so training
starts from BERT. One file, then one registration:

    from prior.trainers.models import register_model
    register_model(OverlapBertModel)
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import BertConfig
from transformers import initialization as init
from transformers.models.bert.modeling_bert import BertSelfAttention

from prior.trainers.models.base import PriorBertModel, additive_mask


class OverlapSelfAttention(BertSelfAttention):
    """BERT self-attention plus a learned per-head multiple of a (B, T, T) grid."""

    def __init__(self, config: BertConfig, layer_idx: int) -> None:
        super().__init__(config, layer_idx=layer_idx)
        self.overlap_weight = nn.Parameter(torch.zeros(config.num_attention_heads))  # w, one per head

    def init_prior_parameters(self, std: float) -> None:
        init.zeros_(self.overlap_weight)  # skips a value loaded from a checkpoint

    def forward(  # type: ignore[override]
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None,
        past_key_values: Any = None, prior_grid: torch.Tensor | None = None, **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, C = hidden_states.shape
        hs = self.attention_head_size
        q = self.query(hidden_states).view(B, T, -1, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = self.key(hidden_states).view(B, T, -1, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = self.value(hidden_states).view(B, T, -1, hs).transpose(1, 2)  # (B, nh, T, hs)
        scores = torch.matmul(q, k.transpose(2, 3)) * self.scaling  # (B, nh, T, T)
        if prior_grid is not None:
            scores = scores + self.overlap_weight[None, :, None, None] * prior_grid[:, None].to(scores.dtype)
        mask = additive_mask(attention_mask, scores.dtype)
        if mask is not None:
            scores = scores + mask
        probs = nn.functional.dropout(nn.functional.softmax(scores, dim=-1), p=self.dropout.p,
                                      training=self.training)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, C)  # (B, T, nh*hs)
        return out, probs


class OverlapBertModel(PriorBertModel):
    model_name = "overlap-bert"
    feature = "overlap"  # read by its layout (a pair matrix): passed to forward as prior_grid

    def build_prior(self, config: BertConfig) -> None:
        self.bert.encoder.layer[0].attention.self = OverlapSelfAttention(config, layer_idx=0)
