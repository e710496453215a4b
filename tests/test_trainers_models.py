"""The six models on tiny random BERT configs (CPU): forward/backward, the exact reductions to
BERT, and save → load → identical predictions."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.trainers_fixtures import tiny_config
from trainers.models import MODEL_CLASSES, BertPairModel
from trainers.models.dafa import DafaSelfAttention
from trainers.models.gibert import injection_block

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


def make(name: str, seed: int = 0, options: dict | None = None, **cfg):  # noqa: ANN201
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


def same_weights(name: str, **options):  # noqa: ANN201
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
