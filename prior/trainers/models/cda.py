"""`cda` (CDA-LM, cda.txt §3): commix dimensional attention in the first layer; no feature.

Per head of layer 1, four attention functions over queries q_t and keys k_j (t = output
position, j = attended position; the paper's s_j^t), each → softmax over j (+ padding mask) →
Σ_j a v_j:
    dot       q_t·k_j / √d        (BERT's scaled dot product, eq. 1)
    additive  tanh(w_a·[q_t; k_j]) = tanh(w_q·q_t + w_k·k_j + b)        (eq. 2)
    minus     tanh(w_m·(q_t − k_j)) = tanh(w_m·q_t − w_m·k_j)            (eq. 3)
    bilinear  q_tᵀ W_b k_j                                               (eq. 4)
The additive and minus scores are separable (an outer sum of two (B, nh, T) vectors), so no
(T, T, d) tensor is made. Self-interactive augmentation per function c (eq. 5):
x = [q_t^c; v_t], g = σ(w_g·x), h_t^c = tanh(W_d(g·x) + b). Normalized aggregation (eq. 6–7):
s_c = tanh(w_1·h_t^c + w_2·z^c) with a learned vector z^c per function, softmax over the four,
x_t = Σ_c a_c h_t^c, h_t^o = tanh(W_t x_t + b_t), which replaces the layer's self-attention
output (then BERT's output dense, residual and LayerNorm). Choices: "h_t^k of v_t" is the head's
value vector at t; every parameter is per function where the paper indexes it by c and shared
by the heads; the bilinear score is not scaled (the paper does not scale it).

Initialisation (the paper does not say): option ``init="bert"`` (the default) draws every new
matrix like BERT's (normal, std 0.02). Then the layer's output starts at ~1 % of the
pre-trained attention output's norm and stays there through fine-tuning (docs/results/): layer
1 works as if it had no self-attention, and the pre-trained attention of that layer is lost.
``init="carry"`` (ours) starts the module as a pass-through of the pre-trained attention:
W_b = I/√d (the bilinear score equals the dot score), the augmentation gates at zero (g = ½)
with W_d = [2I, 0] (h^c = tanh(q^c)), and W_t = I (h^o = tanh(Σ_c a_c h^c)). With the additive
and minus scores bounded in [−1, 1], their attention is near-uniform, so the output starts as
tanh(tanh(·)) of ½ the dot attention's context plus ¼ of each near-uniform context.
"""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import nn
from transformers import BertConfig
from transformers import initialization as init
from transformers.models.bert.modeling_bert import BertSelfAttention

from prior.trainers.models.base import PriorBertModel, additive_mask

FUNCTIONS = ("dot", "additive", "minus", "bilinear")


INITS = ("bert", "carry")


class CommixSelfAttention(BertSelfAttention):
    def __init__(self, config: BertConfig, layer_idx: int, init_scheme: str = "bert") -> None:
        super().__init__(config, layer_idx=layer_idx)
        if init_scheme not in INITS:
            raise ValueError(f"cda option init must be one of {INITS}, not {init_scheme!r}")
        self.init_scheme = init_scheme
        d = self.attention_head_size
        self.w_add_q = nn.Linear(d, 1)  # w_a on the query half (+ bias)
        self.w_add_k = nn.Linear(d, 1, bias=False)  # w_a on the key half
        self.w_minus = nn.Linear(d, 1, bias=False)  # w_m
        self.W_bilinear = nn.Linear(d, d, bias=False)  # W_b
        self.aug_gate = nn.ModuleList([nn.Linear(2 * d, 1, bias=False) for _ in FUNCTIONS])
        self.aug_dense = nn.ModuleList([nn.Linear(2 * d, d) for _ in FUNCTIONS])
        self.agg_h = nn.Linear(d, 1, bias=False)  # W_1
        self.agg_z = nn.Linear(d, 1)  # W_2
        self.z = nn.Parameter(torch.zeros(len(FUNCTIONS), d))  # z^c
        self.agg_out = nn.Linear(d, d)  # W_t, b_t

    def init_prior_parameters(self, std: float) -> None:
        """z^c like BERT's weights; with ``init="carry"`` the pass-through start (module doc).
        The ``transformers.initialization`` functions leave weights loaded from a checkpoint."""
        init.normal_(self.z, mean=0.0, std=std)
        if self.init_scheme != "carry":
            return
        d = self.attention_head_size
        eye = torch.eye(d)
        init.copy_(self.W_bilinear.weight, eye * self.scaling)
        for c in range(len(FUNCTIONS)):
            gate, dense = cast(nn.Linear, self.aug_gate[c]), cast(nn.Linear, self.aug_dense[c])
            init.zeros_(gate.weight)
            init.copy_(dense.weight, torch.cat([2 * eye, torch.zeros(d, d)], dim=1))
            init.zeros_(dense.bias)
        init.copy_(self.agg_out.weight, eye)
        init.zeros_(self.agg_out.bias)

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> list[torch.Tensor]:
        """The four (B, nh, T, T) score grids, in FUNCTIONS order."""
        dot = torch.matmul(q, k.transpose(2, 3)) * self.scaling  # (B, nh, T, T)
        add = torch.tanh(self.w_add_q(q) + self.w_add_k(k).transpose(2, 3))  # (B,nh,T,1)+(B,nh,1,T)
        mq, mk = self.w_minus(q), self.w_minus(k)  # (B, nh, T, 1)
        minus = torch.tanh(mq - mk.transpose(2, 3))  # (B, nh, T, T)
        bil = torch.matmul(self.W_bilinear(q), k.transpose(2, 3))  # (B, nh, T, T)
        return [dot, add, minus, bil]

    def forward(  # type: ignore[override]
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        past_key_values: Any = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, None]:
        B, T, C = hidden_states.shape
        hs = self.attention_head_size
        q = self.query(hidden_states).view(B, T, -1, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = self.key(hidden_states).view(B, T, -1, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = self.value(hidden_states).view(B, T, -1, hs).transpose(1, 2)  # (B, nh, T, hs)
        mask = additive_mask(attention_mask, q.dtype)
        augmented = []
        for c, s in enumerate(self.scores(q, k)):
            if mask is not None:
                s = s + mask
            a = nn.functional.dropout(torch.softmax(s, dim=-1), p=self.dropout.p,
                                      training=self.training)
            q_c = torch.matmul(a, v)  # (B, nh, T, hs)
            x = torch.cat([q_c, v], dim=-1)  # (B, nh, T, 2hs)
            g = torch.sigmoid(self.aug_gate[c](x))  # (B, nh, T, 1)
            augmented.append(torch.tanh(self.aug_dense[c](g * x)))  # (B, nh, T, hs)
        h = torch.stack(augmented, dim=-2)  # (B, nh, T, 4, hs)
        s = torch.tanh(self.agg_h(h) + self.agg_z(self.z))  # (B, nh, T, 4, 1) + (4, 1)
        a = torch.softmax(s, dim=-2)  # over the four functions
        x = (a * h).sum(dim=-2)  # (B, nh, T, hs)
        out = torch.tanh(self.agg_out(x))  # (B, nh, T, hs)
        return out.transpose(1, 2).reshape(B, T, C), None  # (B, T, nh*hs)


class CdaModel(PriorBertModel):
    model_name = "cda"
    # cda.txt §4: 5 epochs, gradient clipping 10; lr 2e-5 ∈ {1e-5, 2e-5, 3e-5, 8e-6}
    paper_settings = {"epochs": 5, "clip": 10.0}
    default_options = {"init": "bert"}

    def build_prior(self, config: BertConfig) -> None:
        self.bert.encoder.layer[0].attention.self = CommixSelfAttention(
            config, layer_idx=0, init_scheme=str(self.options["init"]))
