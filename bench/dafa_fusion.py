"""What DAFA's adaptive fusion adds to the first layer (docs/results/, "why dafa trails").

DAFA's first layer outputs s_i + f_i·tanh(W_l v_i) (prior/trainers/models/dafa.py, eq. 9): the plain
attention output Sem plus a gated term computed by new, randomly initialised layers. This
script measures, on test pairs of a store, for a freshly initialised ``dafa`` model and for
trained checkpoints, with the neutral grid (G = 1, so Dep = Sem; the sensitivity checks show
M_F changes no prediction on SICK):

* ``fusion_norm_ratio``: median over tokens of ‖f_i·tanh(W_l v_i)‖ / ‖s_i‖, how large the term
  the fusion adds is relative to the attention output it is added to;
* ``f_mean`` / ``g_mean``: the mean filtration gate f_i and fusion gate g_i; ``f_range`` /
  ``g_range``: their minimum, 5th and 95th percentile and maximum over the tokens;
* ``layer1_cos`` / ``cls_cos``: cosine of the layer-1 output (per token) and the last hidden
  [CLS] to the pre-trained BERT's (``bert`` at the same seed) on the same tokens; a trained
  ``bert`` checkpoint passed with ``--checkpoint`` gives these two for reference.

    python bench/dafa_fusion.py --store runs/sick-store --pairs 256 \\
        --checkpoint runs/compare/sick-full-dafa-mini-s2/best --checkpoint runs/compare/sick-full-bert-mini-s2/best

With ``--feature`` it reads each DAFA checkpoint's gates with the stored M_F grid instead
(the entries the checkpoint was trained on), their mean and spread (min, 5th, 95th
percentile, max; the paper's Table 7 shows gates from 0.11 to 0.93):

    python bench/dafa_fusion.py --feature --store runs/sick-store --pairs 256 \\
        --checkpoint runs/compare/sick-sample-dafa-epochs-10-patience-3-mini-s1/best
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from cda_layer1 import _cos, _fresh, _trace, print_probes  # bench/ is the script's directory

from prior.trainers.models.dafa import AdaptiveFusion


def _capture_fusion(fusion: AdaptiveFusion, got: dict[str, torch.Tensor]) -> list[Any]:
    """Hooks that record Sem, the added term f·tanh(W_l v) and the gates f, g (B, T, ·) during
    the next forward, read from the module's own layers rather than recomputed."""
    def whole(module: AdaptiveFusion, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        got.update(sem=inputs[0], added=output - inputs[0])

    return [fusion.register_forward_hook(whole),
            fusion.w_g.register_forward_hook(lambda m, i, o: got.__setitem__("g", torch.sigmoid(o))),
            fusion.w_f.register_forward_hook(lambda m, i, o: got.__setitem__("f", torch.sigmoid(o)))]


def probe(model: Any, reference: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The fusion's terms (DAFA models only) and the cosines to the pre-trained BERT (any model)."""
    terms: dict[str, torch.Tensor] = {}
    fusion = getattr(model.bert.encoder.layer[0].attention.self, "fusion", None)
    hooks = _capture_fusion(fusion, terms) if fusion is not None else []
    traced = _trace(model, batch)  # one forward fills `terms` too
    for hook in hooks:
        hook.remove()
    real = batch["attention_mask"].bool()  # (B, T)
    row: dict[str, Any] = {}
    if terms:
        ratio = terms["added"].norm(dim=-1)[real] / terms["sem"].norm(dim=-1)[real]
        f, g = terms["f"][..., 0][real], terms["g"][..., 0][real]
        q = torch.tensor([0.05, 0.95])
        row.update(fusion_norm_ratio=round(float(ratio.median()), 4),
                   f_mean=round(float(f.mean()), 4), g_mean=round(float(g.mean()), 4),
                   # the spread over tokens (the paper's Table 7 shows gates from 0.11 to 0.93)
                   f_range=[round(float(v), 4) for v in (f.min(), *torch.quantile(f, q), f.max())],
                   g_range=[round(float(v), 4) for v in (g.min(), *torch.quantile(g, q), g.max())])
    row.update(layer1_cos=round(float(_cos(traced["layer1"], reference["layer1"])[real].mean()), 4),
               cls_cos=round(float(_cos(traced["cls"], reference["cls"]).mean()), 4))
    return row


def feature_gates(argv: list[str]) -> None:
    """``--feature``: each checkpoint's gates with the stored M_F grid (the feature the model
    reads), one JSON line per checkpoint: the gates' mean and spread as the paper's Table 7
    shows them (0.11–0.93 there), and the fusion term's norm ratio."""
    import argparse
    import json
    import shlex

    import numpy as np

    from prior.featurestore import open_store
    from prior.trainers import backbones
    from prior.trainers.checkpoint import load_checkpoint, stored_view
    from prior.trainers.data import load_split as read_split

    p = argparse.ArgumentParser()
    p.add_argument("--store", required=True)
    p.add_argument("--dataset", default="sick")
    p.add_argument("--split", default="test")
    p.add_argument("--pairs", type=int, default=256)
    p.add_argument("--checkpoint", action="append", default=[])
    args = p.parse_args(argv)
    # each line carries the command that printed it, as run from the repository root
    command = shlex.join(["python", "bench/dafa_fusion.py", "--feature", *argv])
    torch.set_num_threads(1)
    tok = backbones.load_tokenizer(backbones.mini_path())
    st = open_store(args.store, create=False)
    for ckpt in args.checkpoint:
        model, _, meta = load_checkpoint(ckpt)
        data = read_split(st, args.dataset, args.split, tok, feature="dep", limit=args.pairs,
                          view=stored_view(meta), entries=meta["fingerprints"]["train"]["entries"])
        batch = data.batch(np.arange(len(data)))
        batch.pop("labels", None)
        terms: dict[str, torch.Tensor] = {}
        hooks = _capture_fusion(model.bert.encoder.layer[0].attention.self.fusion, terms)
        model.eval()
        with torch.no_grad():
            model(**batch)
        for h in hooks:
            h.remove()
        real = batch["attention_mask"].bool()
        f, g = terms["f"][..., 0][real], terms["g"][..., 0][real]
        q = torch.tensor([0.05, 0.95])
        ratio = terms["added"].norm(dim=-1)[real] / terms["sem"].norm(dim=-1)[real]
        print(json.dumps({"model": ckpt, "pairs": len(data), "grid": "stored M_F", "command": command,
                          "fusion_norm_ratio": round(float(ratio.median()), 4),
                          "f_mean": round(float(f.mean()), 4), "g_mean": round(float(g.mean()), 4),
                          "f_range": [round(float(v), 4) for v in (f.min(), *torch.quantile(f, q), f.max())],
                          "g_range": [round(float(v), 4) for v in (g.min(), *torch.quantile(g, q), g.max())]}))


def main() -> None:
    import sys

    if "--feature" in sys.argv:
        feature_gates([a for a in sys.argv[1:] if a != "--feature"])
        return
    print_probes(probe, {"dafa (initialised)": partial(_fresh, "dafa")}, __doc__.split("\n")[0])


if __name__ == "__main__":
    main()
