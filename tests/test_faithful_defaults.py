"""The papers' magnitudes by default, the earlier readings as options: DAFA's tf-idf (Ramos or
L2), DAFA's shared dropout mask, GiBERT's injection block from the `emb` entry's kind, and
bert-sim's special-token cells (neutral or the authors')."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch

from prior.errors import PriorError
from prior.featurestore import keys as K
from prior.featurestore import open_store
from prior.featurestore.store import make_entry
from prior.layouts.kinds import WordIds
from prior.layouts.views import dafa_matrix
from prior.pipeline.features.dep import DepFeature, dep_feature_set
from prior.pipeline.features.emb import recorded_kind
from prior.pipeline.features.tfidf import IdfTable, TfidfFeature
from prior.pipeline.parsers.base import Parse
from prior.trainers.data import load_split
from prior.trainers.models import MODEL_CLASSES
from prior.trainers.models.bert_sim import authors_special_cells
from prior.trainers.models.dafa import DafaSelfAttention
from tests.trainers_fixtures import PAIRS, PARSE, tiny_config, tiny_store, tiny_tokenizer


def parse(words: list[str], heads: list[int], rels: list[str]) -> Parse:
    n = len(words)
    return Parse(words=tuple(words), lemmas=tuple(words), upos=("X",) * n, tags=("X",) * n,
                 heads=tuple(heads), rels=tuple(rels), ents=("",) * n)


# A: "dogs run" (run is the root), B: "dogs run fast"; training sentences for the IDF table
A = parse(["dogs", "run"], [2, 0], ["nsubj", "root"])
Bp = parse(["dogs", "run", "fast"], [2, 0, 2], ["nsubj", "root", "advmod"])
TRAIN = [["dogs", "run"], ["cats", "sleep"], ["dogs", "sleep"], ["birds", "run", "fast"]]  # N = 4


@pytest.mark.parametrize("weighting", ["ramos", "l2"])
def test_dafa_mf_cell_by_hand(weighting: str) -> None:
    """M_F[dogs, dogs] = |M + S| · tf_A(dogs) · tf_B(dogs), by hand under both weightings."""
    idf = IdfTable.from_documents(TRAIN)
    tfidf, dep = dep_feature_set({"tfidf": weighting})
    assert isinstance(tfidf, TfidfFeature) and tfidf.weighting == weighting and dep.params()["tfidf"] == weighting
    tfidf.with_idf(idf, key="k", splits=["train"])
    ta, tb = (tfidf.compute([p])[0]["tfidf"] for p in (A, Bp))
    out = DepFeature().compute([(A, Bp)])[0]
    mf = dafa_matrix(out["trigram"], out["subgraph"], ta, tb)
    # M[dogs, dogs]: heads equal (run = run) + tails equal, relations equal (nsubj): (1 + 1) · θ = 4
    # S[dogs, dogs]: same word and relation, no children: α = 1
    if weighting == "ramos":  # df(dogs) = 2, df(run) = 2, df(fast) = 1, N = 4
        tf_a_dogs = tf_b_dogs = math.log(4 / 2)
    else:  # smooth idf = ln(5 / (1 + df)) + 1, L2 over the sentence's terms
        idf_dogs, idf_run, idf_fast = (math.log(5 / 3) + 1, math.log(5 / 3) + 1, math.log(5 / 2) + 1)
        tf_a_dogs = idf_dogs / math.hypot(idf_dogs, idf_run)
        tf_b_dogs = idf_dogs / math.sqrt(idf_dogs**2 + idf_run**2 + idf_fast**2)
    assert mf[0, 0] == pytest.approx((4 + 1) * tf_a_dogs * tf_b_dogs, rel=1e-5)
    if weighting == "ramos":
        assert mf[0, 0] == pytest.approx(5 * math.log(2) ** 2, rel=1e-5)  # ~2.4, against ~1.6 under l2


def test_dep_tfidf_option_is_checked_and_keyed() -> None:
    assert DepFeature().params()["tfidf"] == "ramos"
    assert DepFeature(tfidf="l2").params() != DepFeature().params()
    with pytest.raises(PriorError, match="weighting 'bm25'"):
        dep_feature_set({"tfidf": "bm25"})


def _dafa_attention(dropout_mask: str) -> DafaSelfAttention:
    torch.manual_seed(0)
    cfg = tiny_config(attention_probs_dropout_prob=0.3)
    return DafaSelfAttention(cfg, layer_idx=0, attention_size=None, hidden_size=None,
                             dropout_mask=dropout_mask).train()


def test_dafa_branches_share_one_dropout_mask_by_default() -> None:
    """In training with an all-ones grid, Sem and Dep are equal under one shared mask and
    differ (dropout alone) with a mask each."""
    h = torch.randn(2, 7, 32)
    grid = torch.ones(2, 7, 7)
    sem, dep, _ = _dafa_attention("shared").branches(h, None, grid)
    assert torch.equal(sem, dep)
    sem, dep, _ = _dafa_attention("independent").branches(h, None, grid)
    assert not torch.allclose(sem, dep)
    assert MODEL_CLASSES["dafa"].default_options["dropout_mask"] == "shared"
    with pytest.raises(ValueError, match="dropout_mask"):
        _dafa_attention("per-head")


def test_dafa_shared_mask_still_drops() -> None:
    """The shared mask is a dropout mask: training output differs from eval output."""
    attn = _dafa_attention("shared")
    h = torch.randn(2, 7, 32)
    train_sem, _, _ = attn.branches(h, None, None)
    eval_sem, _, _ = attn.eval().branches(h, None, None)
    assert not torch.allclose(train_sem, eval_sem)


def _emb_store(path: Path, kind: str | None) -> Path:
    """The toy store with one `emb` entry whose parameters record ``kind``."""
    store = tiny_store(path, features=())
    texts = {K.sentence_key(" ".join(w)): w for p in PAIRS for w in (p[0], p[2])}
    keys = sorted(texts)
    words = sorted({w for k in keys for w in texts[k]})
    vocab = store.write_resource("vocabulary", pa.table({"word": words}),
                                 arrays={"vectors": np.ones((len(words), 3), np.float32)})
    e = make_entry("emb", 2, {"vocab": vocab, "kind": kind}, PARSE, "sentence", ("word_ids",),
                   layout=WordIds("word_ids", vocabulary_param="vocab"))
    lookup = {w: i for i, w in enumerate(words)}
    store.write_feature(e, keys, [{"word_ids": np.array([lookup[w] for w in texts[k]], np.int32)} for k in keys])
    return path


@pytest.mark.parametrize(("kind", "block"), [("counter-fitted", 2), ("dependency", 3)])
def test_gibert_injection_block_from_the_emb_entry(tmp_path: Path, kind: str, block: int) -> None:
    """A counter-fitted entry puts the injection after the middle block (L/2), a dependency one
    after block L−1 (gibert.txt Table 3), with no model option given."""
    data = load_split(open_store(_emb_store(tmp_path / "s", kind), create=False), "toy", "train",
                      tiny_tokenizer(), feature="emb")
    cls = MODEL_CLASSES["gibert"]
    options = cls.options_from_feature(data.source)
    assert options == {"embedding_dim": 3, "embedding_kind": kind}
    config = tiny_config(num_hidden_layers=4)
    config.prior_options = options
    assert cls(config).injection_index + 1 == block


def test_emb_kind_recorded_beside_made_vectors(tmp_path: Path) -> None:
    vec = tmp_path / "v.vec"
    vec.write_text("1 2\na 0.1 0.2\n")
    assert recorded_kind(vec) is None
    Path(f"{vec}.json").write_text(json.dumps({"kind": "counter-fitted", "method": "counter-fitting"}))
    assert recorded_kind(vec) == "counter-fitted"


def test_bert_sim_authors_special_cells() -> None:
    """[CLS] A1 A2 [SEP] B1 [SEP]: the authors' code scores [CLS]↔B, A↔final [SEP] and the middle
    [SEP]'s row and column 0; words↔words and [CLS]↔A keep their values."""
    T = 6
    grid = torch.full((1, T, T), 0.7)
    types = torch.tensor([[0, 0, 0, 0, 1, 1]])
    got = authors_special_cells(grid, torch.ones(1, T, dtype=torch.long), types)[0]
    cls, a1, a2, mid, b1, fin = range(T)
    for p, q in [(cls, b1), (cls, fin), (a1, fin), (a2, fin), (mid, a1), (mid, b1), (mid, cls)]:
        assert got[p, q] == 0 and got[q, p] == 0
    for p, q in [(a1, b1), (a2, b1), (cls, a1), (a1, a2), (b1, fin)]:
        assert got[p, q] == pytest.approx(0.7)
    assert MODEL_CLASSES["bert-sim"].default_options["special"] == "neutral"


def test_bert_sim_special_option_changes_logits_only_when_authors() -> None:
    torch.manual_seed(0)
    x = {"input_ids": torch.randint(5, 20, (2, 8)), "attention_mask": torch.ones(2, 8, dtype=torch.long),
         "token_type_ids": torch.tensor([[0] * 4 + [1] * 4] * 2), "prior_grid": 1 + torch.rand(2, 8, 8)}
    logits = {}
    for special in ("neutral", "authors"):
        torch.manual_seed(0)
        config = tiny_config()
        config.prior_options = {"special": special}
        logits[special] = MODEL_CLASSES["bert-sim"](config).eval()(**x).logits
    assert not torch.allclose(logits["neutral"], logits["authors"])
