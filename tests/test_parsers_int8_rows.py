"""``biaffine-int8``: int8 products with a scale per row, so a sentence's result does not depend on
the batch it is parsed in (the parse-level checks are in tests/test_parse_invariance.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from prior.errors import DataError, ResourceError
from prior.pipeline.parsers import fingerprint_of, get_parser
from prior.pipeline.parsers.biaffine import BiaffineModel, load_model
from prior.pipeline.parsers.conllu import read_conllu
from prior.pipeline.parsers.evaluate import attachment_scores
from prior.pipeline.parsers.fast_biaffine import batch_tensors, greedy_is_tree
from prior.pipeline.parsers.int8_rows import (
    EXACT_FLOAT_K,
    PRODUCT_ENV,
    RowInt8Biaffine,
    RowInt8Linear,
    RowInt8LSTM,
    _one_thread,
    float_product_is_exact,
    int8_matmul,
    product_kind,
    quantize_rows,
)

SLICE = Path(__file__).resolve().parents[1] / "data" / "ud_ewt_slice"


@pytest.fixture(autouse=True)
def threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_quantize_rows_scales_each_row_by_its_own_largest_value() -> None:
    x = torch.tensor([[1.0, -2.0, 0.5], [0.0, 0.0, 0.0], [254.0, 127.0, -1.0]])
    q, scale = quantize_rows(x)
    assert q.dtype == torch.int8 and torch.equal(scale, torch.tensor([2 / 127, 1.0, 2.0]))
    assert q.tolist() == [[64, -127, 32], [0, 0, 0], [127, 64, 0]]  # round half to even: 63.5 -> 64, 0.5 -> 0
    assert torch.equal(quantize_rows(x[2:])[0], q[2:])  # a row's values are its own


@pytest.mark.parametrize("pad", [0, 16])
def test_row_int8_linear_is_close_to_float_and_each_row_is_its_own(pad: int) -> None:
    torch.manual_seed(0)
    linear = nn.Linear(600, 500)
    q = RowInt8Linear(linear.weight, linear.bias, pad=pad)
    x = torch.randn(4, 9, 600)
    with torch.inference_mode():
        out, ref = q(x), linear(x)
        assert out.shape == ref.shape == (4, 9, 500)
        assert float((out - ref).abs().max() / ref.abs().max()) < 0.02
        assert torch.equal(q(x[2:3, 4:5]), out[2:3, 4:5])  # one row alone
        assert torch.equal(q(x.flip(0))[1], out[2])  # in another order


@pytest.mark.parametrize("k", [1, 13, 400, 800, EXACT_FLOAT_K])
def test_the_float_product_of_int8_values_is_int_mms_exact_sum(k: int) -> None:
    """Random values, and the largest sums there are (every product 127·127 or −127·127),
    against int32 sums. (Not against `torch._int_mm`: on an Intel Xeon with AMX, torch 2.13.0's
    gave uninitialised memory for a (3, 1) by (1, 3) product whose size-1 dimensions have
    stride 1.)"""
    generator = torch.Generator().manual_seed(k)
    q = torch.randint(-127, 128, (37, k), dtype=torch.int8, generator=generator)
    w = torch.randint(-127, 128, (k, 53), dtype=torch.int8, generator=generator)
    top = torch.full((3, k), 127, dtype=torch.int8)
    assert float_product_is_exact(k)
    for a, b in ((q, w), (top, w), (top, torch.full((k, 5), -127, dtype=torch.int8)), (top, top.t().contiguous())):
        assert torch.equal(int8_matmul(a, b, b.float()), (a.int() @ b.int()).float())


def test_past_the_bound_a_float_product_would_round_and_is_not_used() -> None:
    k = EXACT_FLOAT_K + 1  # 1041 · 127² = 16,790,289: odd and above 2**24, so no float32 holds it
    top = torch.full((1, k), 127, dtype=torch.int8)
    assert int(torch._int_mm(top, top.t().contiguous())) == k * 127 * 127
    assert int(int8_matmul(top, top.t().contiguous(), top.t().float())) != k * 127 * 127
    assert not float_product_is_exact(k)
    linear = nn.Linear(k, 4)
    assert not RowInt8Linear(linear.weight, linear.bias, product="float").float_product


def test_int8_linear_gives_the_same_values_with_either_product() -> None:
    torch.manual_seed(0)
    linear = nn.Linear(600, 500)
    x = torch.randn(3, 7, 600)
    as_int, as_float = (RowInt8Linear(linear.weight, linear.bias, pad=16, product=p) for p in ("int", "float"))
    assert as_float.float_product and not as_int.float_product and as_int.weight_f is None
    with torch.inference_mode():
        assert torch.equal(as_int(x), as_float(x))
        before = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("medium")  # the library may round products: _int_mm's sums then
        try:
            assert not float_product_is_exact(600) and torch.equal(as_float(x), as_int(x))
        finally:
            torch.set_float32_matmul_precision(before)


def test_the_product_kind_is_timed_once_or_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    product_kind.cache_clear()
    try:
        for forced in ("int", "float", " Float "):
            monkeypatch.setenv(PRODUCT_ENV, forced)
            product_kind.cache_clear()
            assert product_kind() == forced.strip().lower()
        monkeypatch.setenv(PRODUCT_ENV, "fast")
        product_kind.cache_clear()
        with pytest.raises(DataError, match="PRIOR_INT8_PRODUCT='fast' is neither int nor float"):
            product_kind()
        monkeypatch.delenv(PRODUCT_ENV)
        product_kind.cache_clear()
        timed = product_kind()
        assert timed in ("int", "float")
        monkeypatch.setenv(PRODUCT_ENV, "int" if timed == "float" else "float")
        assert product_kind() == timed  # timed once per process, then kept
    finally:
        product_kind.cache_clear()


def _reference(lstm: nn.LSTM, x: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    packed = pack_padded_sequence(x, lens.tolist(), True, False)
    return pad_packed_sequence(lstm(packed)[0], True, total_length=x.shape[1])[0]


@pytest.mark.parametrize("threads", [1, 2])
def test_row_int8_lstm_is_close_to_the_fused_lstm_and_batch_invariant(threads: int) -> None:
    """Close to torch's LSTM; each sentence's output bit for bit the same alone, in a batch of 200
    and in batches of 13 others, on one thread or two."""
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    lstm = nn.LSTM(200, 300, 2, batch_first=True, bidirectional=True).eval()
    q = RowInt8LSTM(lstm)
    b, n = 200, 30
    x = torch.randn(b, n, 200)
    lens = torch.randint(1, n + 1, (b,))
    lens[0] = n
    with torch.inference_mode():
        out, ref = q(x, lens), _reference(lstm, x, lens)
        assert float((out - ref).abs().max()) < 0.01 < float(ref.abs().max())
        words = torch.arange(n) < lens.unsqueeze(1)
        assert not out[~words].any()  # zeros past each sentence's end
        differ = 0
        for i in range(0, b, 9):
            alone = q(x[i:i + 1, :lens[i]], lens[i:i + 1])[0]
            others = torch.randperm(b)[:14]
            others = torch.cat([others[others != i][:13], torch.tensor([i])])
            within = q(x[others], lens[others])[-1]
            differ += (not torch.equal(alone, out[i, :lens[i]])) + (not torch.equal(within, out[i]))
        assert differ == 0


def test_row_int8_lstm_takes_only_bidirectional_batch_first_lstms() -> None:
    with pytest.raises(ValueError, match="bidirectional, batch-first"):
        RowInt8LSTM(nn.LSTM(4, 3, batch_first=True))


def test_one_thread_inside_and_the_count_restored() -> None:
    torch.set_num_threads(2)
    with _one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2


def test_biaffine_int8_trees_are_valid_and_close_to_float() -> None:
    """On the EWT slice (gold words): every tree well formed, LAS within 1.5 of the float model's
    on 180 sentences (EWT test, 2,077 sentences: 86.38 against 86.40, docs/parsers.md), the same
    trees in batches of any size, and its own parse id."""
    torch.set_num_threads(1)
    gold = [s for name in ("train", "dev", "test") for s in read_conllu(SLICE / f"{name}.conllu")]
    sentences = [list(s.words) for s in gold]
    fp32 = BiaffineModel(load_model(), device="cpu")
    int8 = BiaffineModel(fp32.loaded, device="cpu")
    int8.fast = RowInt8Biaffine(fp32.fast)
    assert isinstance(int8.fast, RowInt8Biaffine) and not isinstance(fp32.fast, RowInt8Biaffine)
    words, chars = batch_tensors(fp32.vocab, sentences[:20])
    heads, _ = int8.fast.predict(words, chars)
    assert greedy_is_tree(heads, words.ne(fp32.vocab.word_pad).sum(1) - 1).all()
    trees = int8.predict(sentences)
    assert abs(attachment_scores(gold, trees).las - attachment_scores(gold, fp32.predict(sentences)).las) < 1.5
    small = BiaffineModel(fp32.loaded, batch_tokens=50, device="cpu")
    small.fast = int8.fast
    assert small.predict(sentences) == trees
    fp = fingerprint_of("biaffine-int8")
    assert fp["weights"] == "int8-rows" and fp != fingerprint_of("biaffine")
    assert get_parser("biaffine-int8").fingerprint() == fp


def test_biaffine_int8_trees_are_the_same_with_either_product() -> None:
    torch.set_num_threads(1)
    sentences = [list(s.words) for s in read_conllu(SLICE / "dev.conllu")][:16]
    fp32 = BiaffineModel(load_model(), device="cpu")
    trees = {}
    for kind in ("int", "float"):
        model = BiaffineModel(fp32.loaded, device="cpu")
        model.fast = RowInt8Biaffine(fp32.fast)
        for linear in (m for m in model.fast.modules() if isinstance(m, RowInt8Linear)):
            linear.weight_f = linear.weight_t.float() if kind == "float" else None
        trees[kind] = model.predict(sentences)
    assert trees["int"] == trees["float"] and len(trees["int"]) == 16


def test_biaffine_int8_runs_on_the_cpu_only() -> None:
    class OnCuda:  # a model on a GPU, as far as the conversion asks
        device = torch.device("cuda")

    with pytest.raises(ResourceError, match="CPU only; use --parse-device cpu"):
        RowInt8Biaffine(OnCuda())  # type: ignore[arg-type]
