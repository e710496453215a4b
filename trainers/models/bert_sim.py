"""`bert-sim` (UERBERT, Xia et al. 2021, uerbert.txt §4.2): word similarity in layer 1's attention.

In the first layer only, every head scores ``(QKᵀ ⊙ S_grid)/√d_k + mask``; the other layers
are BERT's. ``S_grid`` (built by the loader, trainers/grid.py) holds the stored Wu-Palmer /
synonym matrix S on the A×B block and Sᵀ on B×A; inside a sentence, on special tokens and on
padding it is 1 (attention unchanged), our default where the paper is silent (FORMULAS.md's
alternative, within-sentence similarities, is not offered: the store's ``wup`` entry holds the
A×B matrix only). The padding mask is added in every layer as in BERT. No new parameters:
BERT-base-Sim has BERT-base's 110M. The authors' code's scoring (``uerbert-code``) is a preset
of the ``wup`` feature, not of the model: build it into the store and select it with
``prior train bert-sim-… --feature-param preset=uerbert-code``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import BertConfig
from transformers.models.bert.modeling_bert import BertSelfAttention

from prior.trainers.models.base import PriorBertModel, additive_mask


class GridSelfAttention(BertSelfAttention):
    """BERT self-attention whose raw scores are multiplied element-wise by a (B, T, T) grid.

    With no grid (or an all-ones grid) it computes exactly BERT's eager attention.
    """

    def forward(  # type: ignore[override]
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        past_key_values: Any = None,
        prior_grid: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, C = hidden_states.shape
        hs = self.attention_head_size
        q = self.query(hidden_states).view(B, T, -1, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = self.key(hidden_states).view(B, T, -1, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = self.value(hidden_states).view(B, T, -1, hs).transpose(1, 2)  # (B, nh, T, hs)
        scores = torch.matmul(q, k.transpose(2, 3)) * self.scaling  # (B, nh, T, T)
        if prior_grid is not None:
            scores = scores * prior_grid[:, None].to(scores.dtype)  # (B, 1, T, T) broadcast on heads
        mask = additive_mask(attention_mask, scores.dtype)
        if mask is not None:
            scores = scores + mask
        probs = nn.functional.softmax(scores, dim=-1)
        probs = nn.functional.dropout(probs, p=self.dropout.p, training=self.training)
        out = torch.matmul(probs, v)  # (B, nh, T, hs)
        out = out.transpose(1, 2).reshape(B, T, C)  # (B, T, nh*hs)
        return out, probs


class BertSimModel(PriorBertModel):
    """UERBERT: BERT with layer 0's self-attention replaced by :class:`GridSelfAttention`."""

    model_name = "bert-sim"
    feature = "wup"

    def build_prior(self, config: BertConfig) -> None:
        self.bert.encoder.layer[0].attention.self = GridSelfAttention(config, layer_idx=0)
