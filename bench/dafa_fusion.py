"""What DAFA's adaptive fusion adds to the first layer (docs/results/, "why dafa trails").

DAFA's first layer outputs s_i + f_i·tanh(W_l v_i) (trainers/models/dafa.py, eq. 9): the plain
attention output Sem plus a gated term computed by new, randomly initialised layers. This
script measures, on test pairs of a store, for a freshly initialised ``dafa`` model and for
trained checkpoints, with the neutral grid (G = 1, so Dep = Sem; the sensitivity checks show
M_F changes no prediction on SICK):

* ``fusion_norm_ratio``: median over tokens of ‖f_i·tanh(W_l v_i)‖ / ‖s_i‖, how large the term
  the fusion adds is relative to the attention output it is added to;
* ``f_mean`` / ``g_mean``: the mean filtration gate f_i and fusion gate g_i;
* ``layer1_cos`` / ``cls_cos``: cosine of the layer-1 output (per token) and the last hidden
  [CLS] to the pre-trained BERT's (``bert`` at the same seed) on the same tokens; a trained
  ``bert`` checkpoint passed with ``--checkpoint`` gives these two for reference.

    python bench/dafa_fusion.py --store runs/sick-store --pairs 256 \\
        --checkpoint runs/compare/sick-full-dafa-mini-s2/best --checkpoint runs/compare/sick-full-bert-mini-s2/best
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from cda_layer1 import _cos, _fresh, _trace, print_probes  # bench/ is the script's directory

from trainers.models.dafa import AdaptiveFusion


@torch.no_grad()
def _fusion_terms(model: Any, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Sem, the added term f·tanh(W_l v), f and g at layer 1, (B, T, ·) each."""
    fusion: AdaptiveFusion = model.bert.encoder.layer[0].attention.self.fusion
    got: dict[str, torch.Tensor] = {}

    def capture(module: AdaptiveFusion, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        sem, dep, key_mask = inputs
        d_star = module._additive(module.W_D(dep), module.W_s(sem), module.w_d, key_mask, dep)
        s_star = module._additive(module.W_S(sem), module.W_dstar(d_star), module.w_sstar, key_mask, sem)
        d_hat, s_hat = torch.tanh(module.W_dhat(d_star)), torch.tanh(module.W_shat(s_star))
        g = torch.sigmoid(module.w_g(torch.cat([d_hat, s_hat], dim=-1)))
        v = g * s_hat + (1 - g) * d_hat
        f = torch.sigmoid(module.w_f(torch.cat([sem, module.W_v(v)], dim=-1)))
        got.update(sem=sem, added=output - sem, f=f, g=g)

    hook = fusion.register_forward_hook(capture)
    model.eval()
    model.bert(**batch)
    hook.remove()
    return got


def probe(model: Any, reference: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The fusion's terms (DAFA models only) and the cosines to the pre-trained BERT (any model)."""
    traced = _trace(model, batch)
    real = batch["attention_mask"].bool()  # (B, T)
    row: dict[str, Any] = {}
    if hasattr(model.bert.encoder.layer[0].attention.self, "fusion"):
        terms = _fusion_terms(model, batch)
        ratio = terms["added"].norm(dim=-1)[real] / terms["sem"].norm(dim=-1)[real]
        row.update(fusion_norm_ratio=round(float(ratio.median()), 4),
                   f_mean=round(float(terms["f"][..., 0][real].mean()), 4),
                   g_mean=round(float(terms["g"][..., 0][real].mean()), 4))
    row.update(layer1_cos=round(float(_cos(traced["layer1"], reference["layer1"])[real].mean()), 4),
               cls_cos=round(float(_cos(traced["cls"], reference["cls"]).mean()), 4))
    return row


def main() -> None:
    print_probes(probe, {"dafa (initialised)": partial(_fresh, "dafa")}, __doc__.split("\n")[0])


if __name__ == "__main__":
    main()
