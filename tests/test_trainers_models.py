"""The six models on tiny random BERT configs (CPU): forward/backward, the exact reductions to
BERT, and save → load → identical predictions."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from prior.trainers.models import MODEL_CLASSES, BertPairModel
from prior.trainers.models.dafa import DafaSelfAttention
from prior.trainers.models.gibert import injection_block
from tests.trainers_fixtures import tiny_config

B, T, E = 3, 9, 5


def inputs(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 20, (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.long)
    mask[1, 6:] = 0  # one padded pair
    types = torch.zeros(B, T, dtype=torch.long)
    types[:, 5:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def features(name: str, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed + 1)
    if name in ("bert-sim", "dafa"):
        return {"prior_grid": 1 + torch.rand(B, T, T, generator=g)}
    if name == "sgnet":
        m = torch.rand(B, T, T, generator=g) > 0.5
        return {"sdoi_mask": m | torch.eye(T, dtype=torch.bool)}
    if name == "gibert":
        return {"word_vectors": torch.randn(B, T, E, generator=g)}
    return {}


def make(name: str, seed: int = 0, options: dict | None = None, **cfg):
    torch.manual_seed(seed)
    config = tiny_config(**cfg)
    config.prior_options = {"embedding_dim": E} if name == "gibert" else {}
    config.prior_options.update(options or {})
    return MODEL_CLASSES[name](config)


@pytest.mark.parametrize("name", sorted(MODEL_CLASSES))
def test_models_forward_backward(name: str) -> None:
    model = make(name).train()
    out = model(**inputs(), **features(name), labels=torch.tensor([0, 1, 1]))
    assert out.logits.shape == (B, 2)
    assert torch.isfinite(out.loss)
    out.loss.backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert model.config.prior_model == name


@pytest.mark.parametrize("name", sorted(MODEL_CLASSES))
def test_models_regression_head(name: str) -> None:
    model = make(name, num_labels=1).eval()
    out = model(**inputs(), **features(name), labels=torch.tensor([0.5, 1.0, 4.0]))
    assert out.logits.shape == (B, 1) and torch.isfinite(out.loss)


def same_weights(name: str, **options):
    """(bert, model) where every weight the two share is equal."""
    model = make(name, seed=1, options=options, attn_implementation="eager").eval()
    bert = make("bert", seed=2, attn_implementation="eager").eval()
    missing, _ = bert.load_state_dict(model.state_dict(), strict=False)
    assert not missing
    return bert, model


def test_models_bert_sim_all_ones_is_bert() -> None:
    bert, sim = same_weights("bert-sim")
    x = inputs()
    with torch.no_grad():
        expected = bert(**x).logits
        got = sim(**x, prior_grid=torch.ones(B, T, T)).logits
        other = sim(**x, **features("bert-sim")).logits
    assert torch.equal(got, expected)
    assert not torch.allclose(other, expected)  # the grid does act


def test_models_gibert_zero_gate_is_bert() -> None:
    bert, gib = same_weights("gibert")
    x = inputs()
    with torch.no_grad():
        expected = bert(**x).logits
        got = gib(**x, **features("gibert")).logits
        gib.bert.encoder.layer[gib.injection_index].injection.gate.fill_(0.5)
        moved = gib(**x, **features("gibert")).logits
    assert torch.equal(got, expected)
    assert not torch.allclose(moved, expected)


def test_models_sgnet_alpha_one_is_bert() -> None:
    bert, sg = same_weights("sgnet", alpha=1.0)
    x = inputs()
    with torch.no_grad():
        assert torch.equal(sg(**x, **features("sgnet")).logits, bert(**x).logits)
    _, half = same_weights("sgnet")
    with torch.no_grad():
        assert not torch.allclose(half(**x, **features("sgnet")).logits, bert(**x).logits)


def test_models_dafa_all_ones_dependency_branch_is_semantic_branch() -> None:
    model = make("dafa").eval()
    attn = model.bert.encoder.layer[0].attention.self
    assert isinstance(attn, DafaSelfAttention)
    h = torch.randn(B, T, 32)
    mask = torch.zeros(B, 1, 1, T)
    mask[1, ..., 6:] = torch.finfo(torch.float32).min
    with torch.no_grad():
        sem, dep, _ = attn.branches(h, mask, torch.ones(B, T, T))
        sem2, dep2, _ = attn.branches(h, mask, 1 + torch.rand(B, T, T))
    assert torch.equal(sem, dep)
    assert torch.equal(sem, sem2) and not torch.allclose(dep2, sem2)


def test_models_dafa_padding_keys_do_not_leak() -> None:
    """Changing a padded position's input changes nothing at the real positions."""
    model = make("dafa").eval()
    x, f = inputs(), features("dafa")
    y = {k: v.clone() for k, v in x.items()}
    y["input_ids"][1, 7] = 19
    with torch.no_grad():
        assert torch.allclose(model(**x, **f).logits[1], model(**y, **f).logits[1], atol=1e-6)


def test_models_gibert_injection_block_scales_with_depth() -> None:
    assert injection_block(12, "dependency", None) == 11
    assert injection_block(12, "counter-fitted", None) == 6
    assert injection_block(6, "dependency", None) == 5
    with pytest.raises(ValueError):
        injection_block(6, "dependency", 7)


def test_models_unknown_option_is_refused() -> None:
    with pytest.raises(ValueError, match="no option"):
        make("sgnet", options={"alpah": 1.0})


@pytest.mark.parametrize("name", sorted(MODEL_CLASSES))
def test_models_save_load_identical_predictions(name: str, tmp_path: Path) -> None:
    model = make(name).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model(**inputs(), **features(name), labels=torch.tensor([0, 1, 1])).loss.backward()
    opt.step()  # moves the zero-initialised gate and every new parameter
    model.eval()
    with torch.no_grad():
        before = model(**inputs(1), **features(name, 1)).logits
    model.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").is_file()
    loaded = MODEL_CLASSES[name].from_pretrained(tmp_path).eval()
    with torch.no_grad():
        after = loaded(**inputs(1), **features(name, 1)).logits
    assert torch.equal(before, after)
    if name == "gibert":
        assert loaded.bert.encoder.layer[loaded.injection_index].injection.gate.abs().sum() > 0


def test_models_bert_is_plain_huggingface() -> None:
    from transformers import BertForSequenceClassification

    assert issubclass(BertPairModel, BertForSequenceClassification)


def test_models_dafa_closed_filter_is_bert() -> None:
    """The residual reading of eq. 9 (output = s_i + f·tanh(W_l v + b)): with the fusion's last
    projection at zero the first layer is vanilla attention, so DAFA gives BERT's logits."""
    bert, dafa = same_weights("dafa")
    fusion = dafa.bert.encoder.layer[0].attention.self.fusion
    x, f = inputs(), features("dafa")
    with torch.no_grad():
        fusion.W_l.weight.zero_()
        fusion.W_l.bias.zero_()
        assert torch.equal(dafa(**x, **f).logits, bert(**x).logits)
        fusion.W_l.bias.fill_(0.3)
        assert not torch.allclose(dafa(**x, **f).logits, bert(**x).logits)


def test_models_dafa_additive_attention_depends_on_its_guide() -> None:
    """Eq. 7's "⊕" read as a sum inside tanh: the attention weights over d_j change with the
    guiding s_i (with a concatenation the s_i term would cancel in the softmax)."""
    from prior.trainers.models.dafa import AdaptiveFusion

    torch.manual_seed(0)
    fusion = AdaptiveFusion(head_size=8, attention_size=4, hidden_size=8).eval()
    dep = torch.randn(1, 5, 8)
    sem1, sem2 = torch.randn(1, 5, 8), torch.randn(1, 5, 8)
    with torch.no_grad():
        d1 = fusion._additive(fusion.W_D(dep), fusion.W_s(sem1), fusion.w_d, None, dep)
        d2 = fusion._additive(fusion.W_D(dep), fusion.W_s(sem2), fusion.w_d, None, dep)
    assert not torch.allclose(d1, d2)


def test_models_cda_separable_scores_equal_the_paper_formulas() -> None:
    """Additive tanh(w_a·[q_t; k_j] + b) and minus tanh(w_m·(q_t − k_j)) computed without the
    (T, T, d) tensor equal the formulas computed naively; bilinear is q_tᵀ W_b k_j, unscaled."""
    from prior.trainers.models.cda import CommixSelfAttention

    torch.manual_seed(0)
    attn = CommixSelfAttention(tiny_config(), layer_idx=0)
    d = attn.attention_head_size
    q, k = torch.randn(2, 4, 6, d), torch.randn(2, 4, 6, d)  # (B, nh, T, hs)
    dot, add, minus, bil = attn.scores(q, k)
    qq = q[:, :, :, None, :].expand(-1, -1, -1, 6, -1)  # (B, nh, Tq, Tk, hs)
    kk = k[:, :, None, :, :].expand(-1, -1, 6, -1, -1)
    w_a = torch.cat([attn.w_add_q.weight, attn.w_add_k.weight], dim=-1)  # (1, 2hs)
    naive_add = torch.tanh(torch.cat([qq, kk], dim=-1) @ w_a.T + attn.w_add_q.bias).squeeze(-1)
    naive_minus = torch.tanh((qq - kk) @ attn.w_minus.weight.T).squeeze(-1)
    naive_bil = torch.einsum("bhtd,ed,bhje->bhtj", q, attn.W_bilinear.weight, k)
    assert torch.allclose(add, naive_add, atol=1e-6)
    assert torch.allclose(minus, naive_minus, atol=1e-6)
    assert torch.allclose(bil, naive_bil, atol=1e-5)
    assert torch.allclose(dot, q @ k.transpose(2, 3) / d**0.5, atol=1e-6)


def test_models_cda_carry_init_passes_the_pretrained_attention_through(tmp_path: Path) -> None:
    """``init="carry"``: bilinear = dot score, g = ½, h^c = tanh(context^c), h^o = tanh(Σ_c a_c h^c),
    so the layer's output follows the dot attention's context; the default init leaves it near
    zero. A checkpoint loads its trained weights, not the carry start."""
    from prior.trainers.models.cda import CommixSelfAttention

    model = make("cda", options={"init": "carry"}).eval()
    attn = model.bert.encoder.layer[0].attention.self
    assert isinstance(attn, CommixSelfAttention)
    d = attn.attention_head_size
    dot, _, _, bil = attn.scores(torch.randn(2, 4, 6, d), torch.randn(2, 4, 6, d))
    assert torch.allclose(bil, dot, atol=1e-6)
    hidden = torch.randn(2, 6, 4 * d)
    with torch.no_grad():
        got, _ = attn(hidden)
        q, k, v = (lin(hidden).view(2, 6, 4, d).transpose(1, 2) for lin in (attn.query, attn.key, attn.value))
        contexts = [torch.softmax(s, dim=-1) @ v for s in attn.scores(q, k)]
        h = torch.stack([torch.tanh(c) for c in contexts], dim=-2)  # (B, nh, T, 4, hs)
        a = torch.softmax(torch.tanh(attn.agg_h(h) + attn.agg_z(attn.z)), dim=-2)
        want = torch.tanh((a * h).sum(dim=-2)).transpose(1, 2).reshape(2, 6, 4 * d)
    assert torch.allclose(got, want, atol=1e-6)
    bert_init = make("cda").eval().bert.encoder.layer[0].attention.self
    with torch.no_grad():
        assert bert_init(hidden)[0].norm() < 0.2 * got.norm()
    with torch.no_grad():
        attn.W_bilinear.weight.add_(0.5)
    model.save_pretrained(tmp_path)
    loaded = MODEL_CLASSES["cda"].from_pretrained(tmp_path).bert.encoder.layer[0].attention.self
    assert loaded.init_scheme == "carry"
    assert torch.equal(loaded.W_bilinear.weight, attn.W_bilinear.weight)
    with pytest.raises(ValueError, match="init must be one of"):
        make("cda", options={"init": "xavier"})


def test_models_sgnet_learned_alpha_starts_at_half_and_trains(tmp_path: Path) -> None:
    """Option learn_alpha (the authors' code): the two weights are parameters starting at 0.5."""
    model = make("sgnet", options={"learn_alpha": True}).train()
    assert isinstance(model.sg_weights, torch.nn.Parameter)
    assert model.sg_weights.tolist() == [0.5, 0.5]
    model(**inputs(), **features("sgnet"), labels=torch.tensor([0, 1, 1])).loss.backward()
    assert model.sg_weights.grad is not None and model.sg_weights.grad.abs().sum() > 0
    fixed = make("sgnet")
    assert not isinstance(fixed.sg_weights, torch.nn.Parameter)


def test_models_sgnet_mask_restricts_attention() -> None:
    """Eq. 7's M·QKᵀ as restriction: in the syntax layer a position sees only what its mask
    row allows, so changing a disallowed position's hidden state changes nothing at it."""
    model = make("sgnet", attn_implementation="eager").eval()
    H = torch.randn(1, 4, 32)
    allowed = torch.eye(4, dtype=torch.bool)[None]
    allowed[0, 0, 1] = True  # position 0 may see 1, not 2 or 3
    from prior.trainers.models.base import restrict_mask

    mask = restrict_mask(allowed, H.dtype)
    H2 = H.clone()
    H2[0, 2:] += 5.0
    with torch.no_grad():
        a, b = model.sg_layer(H, mask), model.sg_layer(H2, mask)
    assert torch.allclose(a[0, 0], b[0, 0], atol=1e-6)
    H3 = H.clone()
    H3[0, 1] += 5.0
    with torch.no_grad():
        assert not torch.allclose(model.sg_layer(H3, mask)[0, 0], a[0, 0])


def test_models_bert_sim_all_ones_is_bert_under_sdpa() -> None:
    """The default attention implementation (sdpa) hands layers a different padding mask (bool
    or None); the grid layer reads it right: same logits as BERT up to rounding."""
    model = make("bert-sim", seed=1).eval()
    bert = make("bert", seed=2).eval()
    assert model.config._attn_implementation == "sdpa"
    bert.load_state_dict(model.state_dict(), strict=False)
    x = inputs()
    with torch.no_grad():
        assert torch.allclose(model(**x, prior_grid=torch.ones(B, T, T)).logits, bert(**x).logits,
                              atol=1e-5)


def test_models_of_one_seed_start_from_the_same_head(tmp_path: Path) -> None:
    """Paired runs: every model built with one seed gets the same classifier head, whatever
    random numbers its own new modules drew."""
    from prior.trainers.backbones import build_model
    from tests.trainers_fixtures import tiny_backbone

    backbone = str(tiny_backbone(tmp_path / "b"))
    heads = {name: build_model(MODEL_CLASSES[name], backbone, num_labels=3, seed=7).classifier.weight
             for name in ("bert", "dafa", "sgnet", "cda")}
    for weight in heads.values():
        torch.testing.assert_close(weight, heads["bert"])
    other = build_model(MODEL_CLASSES["bert"], backbone, num_labels=3, seed=8).classifier.weight
    assert not torch.equal(other, heads["bert"])


@pytest.mark.parametrize("name,own", [("bert", set()), ("bert-sim", set()), ("gibert", {"injection"}),
                                      ("dafa", {"fusion"}), ("sgnet", None), ("cda", None)])
def test_prior_lr_applies_to_the_methods_own_parameters_only(name: str, own: set[str] | None) -> None:
    from prior.trainers.registry import TrainSettings
    from prior.trainers.schedule import make_optimizer

    model = make(name)
    names = model.prior_parameter_names()
    if own is not None:
        assert {part for n in names for part in own if f".{part}." in n or n.startswith(part)} == own
        assert bool(names) == bool(own)
    else:
        assert names  # an extra layer or attention functions of its own
    plain = {n for n, _ in model.named_parameters()} - names
    assert not any(".injection." in n or ".fusion." in n for n in plain)
    by_id = {id(p): n for n, p in model.named_parameters()}
    optimizer = make_optimizer(model, TrainSettings(lr=2e-5, prior_lr=1e-3))
    lrs = {by_id[id(p)]: group["lr"] for group in optimizer.param_groups for p in group["params"]}
    assert all(lrs[n] == (1e-3 if n in names else 2e-5) for n in lrs) and len(lrs) == len(by_id)
    same = make_optimizer(model, TrainSettings(lr=2e-5))
    assert {g["lr"] for g in same.param_groups} == {2e-5}
