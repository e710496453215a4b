"""`bert-sim` (UERBERT, Xia et al. 2021, uerbert.txt §4.2): word similarity in layer 1's attention.

In the first layer only, every head scores ``(QKᵀ ⊙ S_grid)/√d_k + mask``; the other layers
are BERT's. ``S_grid`` (built by the loader, prior/trainers/grid.py) holds the stored Wu-Palmer /
synonym matrix S on the A×B block and Sᵀ on B×A; inside a sentence, on special tokens and on
padding it is 1 (attention unchanged), our default where the paper is silent (FORMULAS.md's
alternative, within-sentence similarities, is not offered: the store's ``wup`` entry holds the
A×B matrix only). The padding mask is added in every layer as in BERT. No new parameters:
BERT-base-Sim has BERT-base's 110M.

Special tokens (option ``special``): ``"neutral"`` (default) leaves every cell of [CLS] and
[SEP] at 1, BERT's attention; ``"authors"`` sets them as the authors' ``get_similarity.py``
does, where [CLS] and [SEP] are stop words that score 0 against words: [CLS]↔B's words and
the final [SEP], A's words↔the final [SEP], and the whole row and column of the middle [SEP]
are 0 (a zero multiplier gives those logits 0). The default follows the paper's text (§4.1:
S is defined over the words of the two sentences; special tokens are not words, so the
paper does not put them in S) and FORMULAS.md's convention that a multiplicative feature is
1 wherever it has no value; ``authors`` reproduces the released code. The authors' code's scoring (``uerbert-code``) is a preset
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


SPECIALS = ("neutral", "authors")


def authors_special_cells(grid: torch.Tensor, attention_mask: torch.Tensor,
                          token_type_ids: torch.Tensor) -> torch.Tensor:
    """``grid`` (B, T, T) with the special-token cells the authors' code scores 0 set to 0.

    Inputs are ``[CLS] A [SEP] B [SEP]`` (padding after): [CLS] is position 0, the middle
    [SEP] the last position of segment 0, the final [SEP] the last real position.
    """
    real = attention_mask.bool()  # (B, T)
    B, T = real.shape
    pos = torch.arange(T, device=grid.device)[None, :].expand(B, T)
    seg_a = real & (token_type_ids == 0)
    seg_b = real & (token_type_ids == 1)
    mid = pos == (seg_a.sum(1, keepdim=True) - 1)  # (B, T) the middle [SEP]
    final = pos == (real.sum(1, keepdim=True) - 1)  # (B, T) the final [SEP]
    cls = pos == 0
    words_a = seg_a & ~cls & ~mid
    words_b = seg_b & ~final
    zero = (cls[:, :, None] & (words_b | final)[:, None, :])  # [CLS] -> B and final [SEP]
    zero |= words_a[:, :, None] & final[:, None, :]  # A's words -> final [SEP]
    zero = zero | zero.transpose(1, 2)
    zero |= (mid[:, :, None] & real[:, None, :]) | (real[:, :, None] & mid[:, None, :])  # middle [SEP]
    return grid.masked_fill(zero, 0.0)


class BertSimModel(PriorBertModel):
    """UERBERT: BERT with layer 0's self-attention replaced by :class:`GridSelfAttention`."""

    model_name = "bert-sim"
    feature = "wup"
    default_options = {"special": "neutral"}

    def forward(self, *args: Any, prior_grid: torch.Tensor | None = None, **kwargs: Any) -> Any:
        if prior_grid is not None and self.options["special"] == "authors":
            mask, types = kwargs.get("attention_mask"), kwargs.get("token_type_ids")
            if mask is None or types is None:
                raise ValueError("bert-sim special=authors needs attention_mask and token_type_ids")
            prior_grid = authors_special_cells(prior_grid, mask, types)
        return super().forward(*args, prior_grid=prior_grid, **kwargs)

    def build_prior(self, config: BertConfig) -> None:
        if self.options["special"] not in SPECIALS:
            raise ValueError(f"bert-sim option special must be one of {', '.join(SPECIALS)}, "
                             f"not {self.options['special']!r}")
        self.bert.encoder.layer[0].attention.self = GridSelfAttention(config, layer_idx=0)
