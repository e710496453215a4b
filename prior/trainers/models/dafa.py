"""`dafa` (DAFA, dafa.txt §2.2): dependency-calibrated attention with adaptive fusion, layer 1.

Per head of the first layer (eq. 6):
    Sem = softmax(QKᵀ/√d + mask)·V,   Dep = softmax((QKᵀ ⊙ G)/√d + mask)·V,
where G (prior/trainers/grid.py) holds M_F + 1 on the A×B block, (M_F + 1)ᵀ on B×A and 1 elsewhere
("we change the dimension of M_F by adding 1"). With an all-ones G, Dep equals Sem exactly.

Adaptive fusion (eq. 7–9), for position i with s_i ∈ Sem, d_i ∈ Dep (the heads' outputs
concatenated, size d_v = hidden size):
    δ_ij = tanh(W_D d_j + W_s s_i + b_s),      d*_i = Σ_j softmax_j(w_d·δ_ij + b_d) d_j
    γ_ij = tanh(W_S s_j + W_d* d*_i + b_d*),   s*_i = Σ_j softmax_j(w_s*·γ_ij + b_s*) s_j
    d̂_i = tanh(W_d̂ d*_i + b),  ŝ_i = tanh(W_ŝ s*_i + b),  g_i = σ(w_g·[d̂_i; ŝ_i])
    v_i = g_i ŝ_i + (1 − g_i) d̂_i
    f_i = σ(w_f·[s_i; W_v v_i + b_v]),   l_i = f_i · tanh(W_l v_i + b_l)
    output_i = s_i + l_i
Choices where the paper is ambiguous (documented, tested where testable):
- eq. 7's "⊕" inside tanh is read as additive (Bahdanau) attention, a sum: with a
  concatenation the query term would be constant over j and cancel in the softmax;
- Sem and Dep enter the fusion as the concatenation of the heads' outputs (B, T, C), once per
  layer, not per head: per head the two additive attentions would cost nh times more
  (B·nh·T²·k), which the paper's notation (vectors s_i, d_i; W ∈ R^{d_seq×d_v}) does not force;
- the additive attention has inner size ``fusion_attention_size`` (default: the head size)
  and d_hid (``fusion_hidden_size``) defaults to the backbone's hidden size; padded keys
  are masked;
- the output keeps the residual "s_i +" (our reading of "incorporate the fusion features and
  the original features"): with f → 0 the layer is vanilla attention;
- attention dropout: Sem and Dep share one dropout mask (option ``dropout_mask="shared"``, the
  default). The paper says only "dropout at 0.1–0.3" (§3.2); with a mask each, dropout alone
  makes Dep differ from Sem in training by more than the calibration does, and the fusion
  learns from noise. ``dropout_mask="independent"`` keeps one mask per branch (the reading
  before this option existed).
Cost: the two additive attentions hold a (B, T, T, k) tensor in the first layer only.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import BertConfig
from transformers.models.bert.modeling_bert import BertSelfAttention

from prior.trainers.models.base import PriorBertModel, additive_mask

#: attention dropout of the Sem and Dep branches: one mask for both (default) or one each
DROPOUT_MASKS = ("shared", "independent")


class AdaptiveFusion(nn.Module):
    """Eq. 7–9 on Sem and Dep signals of shape (B, T, d) (heads concatenated)."""

    def __init__(self, head_size: int, attention_size: int, hidden_size: int) -> None:
        super().__init__()
        d, k, h = head_size, attention_size, hidden_size
        # eq. 7, semantic-guided attention over Dep
        self.W_D = nn.Linear(d, k, bias=False)
        self.W_s = nn.Linear(d, k)
        self.w_d = nn.Linear(k, 1)
        # eq. 7, dependency-guided attention over Sem
        self.W_S = nn.Linear(d, k, bias=False)
        self.W_dstar = nn.Linear(d, k)
        self.w_sstar = nn.Linear(k, 1)
        # eq. 8, gated fusion
        self.W_dhat = nn.Linear(d, h)
        self.W_shat = nn.Linear(d, h)
        self.w_g = nn.Linear(2 * h, 1, bias=False)
        # eq. 9, filtration gate
        self.W_v = nn.Linear(h, d)
        self.w_f = nn.Linear(2 * d, 1, bias=False)
        self.W_l = nn.Linear(h, d)

    @staticmethod
    def _additive(keys: torch.Tensor, query: torch.Tensor, w: nn.Linear,
                  key_mask: torch.Tensor | None, values: torch.Tensor) -> torch.Tensor:
        # keys (B, T, k) projected signal; query (B, T, k) projected guide
        delta = torch.tanh(query[:, :, None, :] + keys[:, None, :, :])  # (B, Ti, Tj, k)
        scores = w(delta).squeeze(-1)  # (B, Ti, Tj)
        if key_mask is not None:
            scores = scores + key_mask  # (B, 1|T, Tj) additive padding mask
        weights = torch.softmax(scores, dim=-1)
        return torch.matmul(weights, values)  # (B, Ti, d)

    def forward(self, sem: torch.Tensor, dep: torch.Tensor,
                key_mask: torch.Tensor | None) -> torch.Tensor:
        # sem, dep: (B, T, d)
        d_star = self._additive(self.W_D(dep), self.W_s(sem), self.w_d, key_mask, dep)  # (B, T, d)
        s_star = self._additive(self.W_S(sem), self.W_dstar(d_star), self.w_sstar, key_mask, sem)
        d_hat = torch.tanh(self.W_dhat(d_star))  # (B, T, h)
        s_hat = torch.tanh(self.W_shat(s_star))  # (B, T, h)
        g = torch.sigmoid(self.w_g(torch.cat([d_hat, s_hat], dim=-1)))  # (B, T, 1)
        v = g * s_hat + (1 - g) * d_hat  # (B, T, h)
        f = torch.sigmoid(self.w_f(torch.cat([sem, self.W_v(v)], dim=-1)))  # (B, T, 1)
        return sem + f * torch.tanh(self.W_l(v))  # (B, T, d)


class DafaSelfAttention(BertSelfAttention):
    """BERT self-attention (same q/k/v names) computing Sem, Dep and their adaptive fusion."""

    def __init__(self, config: BertConfig, layer_idx: int, attention_size: int | None,
                 hidden_size: int | None, dropout_mask: str = "shared") -> None:
        super().__init__(config, layer_idx=layer_idx)
        if dropout_mask not in DROPOUT_MASKS:
            raise ValueError(f"dafa option dropout_mask must be one of {', '.join(DROPOUT_MASKS)}, "
                             f"not {dropout_mask!r}")
        self.dropout_mask = dropout_mask
        self.fusion = AdaptiveFusion(self.all_head_size, attention_size or self.attention_head_size,
                                     hidden_size or config.hidden_size)

    def branches(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None,
                 prior_grid: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(Sem, Dep, additive mask) of eq. 6; Sem, Dep: (B, nh, T, d_v)."""
        B, T, _ = hidden_states.shape
        hs = self.attention_head_size
        q = self.query(hidden_states).view(B, T, -1, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = self.key(hidden_states).view(B, T, -1, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = self.value(hidden_states).view(B, T, -1, hs).transpose(1, 2)  # (B, nh, T, hs)
        raw = torch.matmul(q, k.transpose(2, 3)) * self.scaling  # (B, nh, T, T)
        mask = additive_mask(attention_mask, raw.dtype)  # (B, 1, 1|T, T) or None
        dep_raw = raw if prior_grid is None else raw * prior_grid[:, None].to(raw.dtype)
        keep = None
        if self.training and self.dropout.p > 0 and self.dropout_mask == "shared":
            # one mask (scaled as nn.functional.dropout scales) for both branches
            keep = torch.empty_like(raw).bernoulli_(1 - self.dropout.p) / (1 - self.dropout.p)
        sem = self._attend(raw, mask, v, keep)
        dep = self._attend(dep_raw, mask, v, keep)
        return sem, dep, mask

    def _attend(self, scores: torch.Tensor, mask: torch.Tensor | None, v: torch.Tensor,
                keep: torch.Tensor | None = None) -> torch.Tensor:
        if mask is not None:
            scores = scores + mask
        probs = nn.functional.softmax(scores, dim=-1)
        if keep is not None:
            probs = probs * keep  # the shared dropout mask (B, nh, T, T)
        else:
            probs = nn.functional.dropout(probs, p=self.dropout.p, training=self.training)
        return torch.matmul(probs, v)  # (B, nh, T, hs)

    def forward(  # type: ignore[override]
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        past_key_values: Any = None,
        prior_grid: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, None]:
        B, T, C = hidden_states.shape
        sem, dep, mask = self.branches(hidden_states, attention_mask, prior_grid)
        sem = sem.transpose(1, 2).reshape(B, T, C)  # (B, nh, T, hs) -> (B, T, nh*hs)
        dep = dep.transpose(1, 2).reshape(B, T, C)
        key_mask = None if mask is None else mask[:, 0]  # (B, 1, 1|T, T) -> (B, 1|T, T)
        return self.fusion(sem, dep, key_mask), None  # (B, T, C)


class DafaModel(PriorBertModel):
    model_name = "dafa"
    feature = "dep"
    # dafa.txt §3.2: weight decay 1e-8, gradient clipping 10 ∈ {7.5, 10, 15}; lr 2e-5 ∈ {1e-5, 2e-5, 3e-5, 8e-6}
    paper_settings = {"weight_decay": 1e-8, "clip": 10.0}
    # -mini: the fusion module (fresh) at its own lr, chosen on SICK's dev split from
    # 5e-5, 1e-4, 3e-4, 1e-3 (docs/results/sick-prior-lr-grid-h200.jsonl: 85.4, 85.8, 85.4,
    # 85.0). At the shared 5e-5 an oracle M_F that determines the label is not learned in the
    # SICK sample's 150 steps; at 1e-3 it is (docs/results/oracle.jsonl)
    mini_settings = {"prior_lr": 1e-4}
    default_options = {"fusion_attention_size": None, "fusion_hidden_size": None, "dropout_mask": "shared"}

    def build_prior(self, config: BertConfig) -> None:
        self.bert.encoder.layer[0].attention.self = DafaSelfAttention(
            config, layer_idx=0, attention_size=self.options["fusion_attention_size"],
            hidden_size=self.options["fusion_hidden_size"], dropout_mask=self.options["dropout_mask"])
