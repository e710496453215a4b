"""What CDA's first layer keeps of the pre-trained one (docs/results/, "why cda trails").

CDA-LM replaces the self-attention output of BERT's first layer by its aggregation of four
attention functions (cda.txt §3, eq. 5–7): new dense layers that start from BERT's own
initialisation (normal, std 0.02) or, with ``-o init=carry``, from a pass-through of the
pre-trained attention (prior/trainers/models/cda.py). This script measures, on test pairs of a store, for a
freshly initialised ``cda`` model of each init and for trained checkpoints:

* ``attn_norm_ratio``: the norm of layer 1's self-attention output (per token, before the
  output dense) relative to the pre-trained BERT's on the same tokens;
* ``layer1_cos`` / ``cls_cos``: cosine between the model's layer-1 output (per token) and last
  hidden [CLS] and those of the pre-trained BERT (``bert`` at the same seed), i.e. how much of the
  pre-trained representation the replaced attention lets through;
* ``function_weights``: the mean aggregation weight a_c of each attention function (eq. 6).

    python bench/cda_layer1.py --store runs/sick-store --dataset sick --pairs 512 \\
        --checkpoint runs/compare/sick-full-cda-mini-s1/best --checkpoint runs/compare/sick-full-bert-mini-s1/best
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from prior.featurestore import open_store
from prior.trainers import backbones
from prior.trainers.checkpoint import load_checkpoint
from prior.trainers.models import MODEL_CLASSES
from prior.trainers.models.cda import FUNCTIONS, INITS, CommixSelfAttention


def _fresh(model: str, seed: int, **options: Any) -> Any:
    return backbones.build_model(MODEL_CLASSES[model], backbones.mini_path(), num_labels=3, seed=seed,
                                 options=options)


@torch.no_grad()
def _trace(model: Any, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Layer-1 self-attention output, layer-1 output, last [CLS] and, for CDA, a_c per token."""
    got: dict[str, torch.Tensor] = {}
    layer = model.bert.encoder.layer[0]
    hooks = [layer.attention.self.register_forward_hook(lambda m, i, o: got.__setitem__("attn", o[0])),
             layer.register_forward_hook(lambda m, i, o: got.__setitem__("layer1", o[0] if isinstance(o, tuple) else o))]
    attn = layer.attention.self
    if isinstance(attn, CommixSelfAttention):
        hooks.append(attn.agg_h.register_forward_hook(lambda m, i, o: got.__setitem__("agg_h", o)))
        hooks.append(attn.agg_z.register_forward_hook(lambda m, i, o: got.__setitem__("agg_z", o)))
    model.eval()
    out = model.bert(**batch)
    for h in hooks:
        h.remove()
    got["cls"] = out.last_hidden_state[:, 0]
    if "agg_h" in got:  # eq. 6: a = softmax_c tanh(w_1 h + w_2 z), (B, nh, T, 4)
        got["weights"] = torch.softmax(torch.tanh(got.pop("agg_h") + got.pop("agg_z")), dim=-2)[..., 0]
    return got


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a, b, dim=-1)


def probe(model: Any, reference: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]) -> dict[str, Any]:
    got = _trace(model, batch)
    real = batch["attention_mask"].bool()  # (B, T)
    row: dict[str, Any] = {
        "attn_norm_ratio": float((got["attn"].norm(dim=-1)[real] / reference["attn"].norm(dim=-1)[real]).median()),
        "layer1_cos": float(_cos(got["layer1"], reference["layer1"])[real].mean()),
        "cls_cos": float(_cos(got["cls"], reference["cls"]).mean()),
    }
    if "weights" in got:
        w = got["weights"].permute(0, 2, 1, 3)[real]  # (tokens, nh, 4)
        row["function_weights"] = {f: round(float(w[..., c].mean()), 4) for c, f in enumerate(FUNCTIONS)}
    return row


def probe_inputs(description: str) -> tuple[argparse.Namespace, int, dict[str, torch.Tensor]]:
    """The command line (store, split, pairs, seed, checkpoints) and the tokenised test pairs."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--store", required=True)
    p.add_argument("--dataset", default="sick")
    p.add_argument("--split", default="test")
    p.add_argument("--pairs", type=int, default=512)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--checkpoint", action="append", default=[])
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)  # the new modules draw from the global stream (as `prior train` seeds it)
    rows = open_store(args.store).pairs(args.dataset, args.split).head(args.pairs)
    tok = backbones.load_tokenizer(backbones.mini_path())
    batch = dict(tok(rows["text_a"].to_list(), rows["text_b"].to_list(), padding=True, truncation=True,
                     max_length=128, return_tensors="pt"))
    return args, len(rows), batch


ProbeFn = Callable[[Any, dict[str, torch.Tensor], dict[str, torch.Tensor]], dict[str, Any]]


def print_probes(probe_fn: ProbeFn, fresh: dict[str, Callable[[int], Any]], description: str) -> None:
    """One JSON line per freshly built model (name -> builder of a seed) and per --checkpoint."""
    args, pairs, batch = probe_inputs(description)
    reference = _trace(_fresh("bert", args.seed), batch)
    results = {name: probe_fn(build(args.seed), reference, batch) for name, build in fresh.items()}
    for ckpt in args.checkpoint:
        results[ckpt] = probe_fn(load_checkpoint(ckpt)[0], reference, batch)
    for name, row in results.items():
        print(json.dumps({"model": name, "pairs": pairs, **row}))


def main() -> None:
    fresh = {f"cda -o init={scheme} (initialised)": partial(_fresh, "cda", init=scheme) for scheme in INITS}
    print_probes(probe, fresh, __doc__.split("\n")[0])


if __name__ == "__main__":
    main()
