"""The fast biaffine path gives supar's own trees: exactness on the bundled EWT slice, and its parts."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from prior.errors import ResourceError
from prior.hints import option
from prior.pipeline.parsers import fingerprint_of
from prior.pipeline.parsers.biaffine import BiaffineModel, BiaffineParser, load_model
from prior.pipeline.parsers.conllu import read_conllu
from prior.pipeline.parsers.fast_biaffine import (
    batch_tensors,
    fused_lstm,
    greedy_is_tree,
    resolve_device,
)

ROOT = Path(__file__).resolve().parents[1]
SLICE = ROOT / "data" / "ud_ewt_slice"


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread, as in build workers: on a busy machine torch's spinning OpenMP threads
    made these tests 30x slower with two."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def model() -> BiaffineModel:
    return BiaffineModel(load_model(), device="cpu")


@pytest.fixture(scope="module")
def slice_sentences() -> list[list[str]]:
    return [list(s.words) for name in ("train", "dev", "test") for s in read_conllu(SLICE / f"{name}.conllu")]


def test_parsers_fast_biaffine_equals_supar_forward_decode_on_ewt_slice(model: BiaffineModel,
                                                                        slice_sentences: list[list[str]]) -> None:
    """The contract: identical heads and relations to supar's own forward + decode (gold words)."""
    assert len(slice_sentences) == 180
    reference = model.predict_supar(slice_sentences)
    fast = model.predict(slice_sentences)
    assert fast == reference
    # some sentences of the slice need the tree search (their greedy heads are not a tree)
    small_batches = BiaffineModel(model.loaded, batch_tokens=50, device="cpu")
    assert small_batches.predict(slice_sentences) == reference  # batching does not change trees


def test_parsers_fast_biaffine_batch_tensors_equal_reference_builder(model: BiaffineModel,
                                                                    slice_sentences: list[list[str]]) -> None:
    batches = [slice_sentences[:7], slice_sentences[40:41], [["x" * 40, "Ünïcödé", "a"], ["b"]]]
    for batch in batches:
        words, chars = batch_tensors(model.vocab, batch)
        ref_words, ref_chars = model._tensors(batch)
        assert torch.equal(words, ref_words) and torch.equal(chars, ref_chars)


def _supar_istree(heads: list[int]) -> bool:
    from supar.utils.transform import CoNLL

    return bool(CoNLL.istree(heads, False))


def test_parsers_fast_biaffine_greedy_is_tree_matches_supar_istree() -> None:
    rng = random.Random(15)
    rows = [[0], [1], [2, 0], [0, 0], [2, 1], [0, 1, 2], [3, 0, 2, 3], [2, 0, 2]]  # incl. self-loops, cycles
    for _ in range(2000):
        n = rng.randint(1, 12)
        heads = [rng.randint(0, n) for _ in range(n)]
        if rng.random() < 0.5:  # many random trees: attach each word to an earlier-placed one
            order = rng.sample(range(1, n + 1), n)
            heads = [0] * n
            for k, w in enumerate(order[1:], 1):
                heads[w - 1] = order[rng.randrange(k)]
        rows.append(heads)
    n_max = max(map(len, rows)) + 1
    padded = torch.tensor([[0] + r + [rng.randint(0, n_max - 1) for _ in range(n_max - 1 - len(r))] for r in rows])
    lens = torch.tensor([len(r) for r in rows])
    ours = greedy_is_tree(padded, lens).tolist()
    assert ours == [_supar_istree(r) for r in rows]
    assert 0 < sum(ours) < len(rows)


def test_parsers_fast_biaffine_fused_lstm_holds_the_same_weights(model: BiaffineModel) -> None:
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    encoder = model.model.encoder
    lstm = fused_lstm(encoder)
    assert torch.equal(lstm.weight_hh_l1_reverse, encoder.b_cells[1].weight_hh)
    x = torch.randn(3, 5, encoder.input_size)
    packed = pack_padded_sequence(x, [5, 2, 4], True, False)
    with torch.inference_mode():
        ours = pad_packed_sequence(lstm(packed)[0], True)[0]
        theirs = pad_packed_sequence(encoder(packed)[0], True)[0]
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_parsers_fast_biaffine_device_resolution() -> None:
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ResourceError, match="unknown parse device 'tpu'"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ResourceError, match=f"no CUDA GPU.*{re.escape(option('parse_device', 'cpu'))}"):
            resolve_device("cuda")


def test_parsers_fast_biaffine_device_is_not_in_the_fingerprint(model: BiaffineModel) -> None:
    parser = BiaffineParser(device="cpu")
    assert parser.biaffine.fast.device.type == "cpu"
    fp = parser.fingerprint()
    assert fp == fingerprint_of("biaffine") and "device" not in fp and fp["sentences"] == "senter"


def test_parsers_fast_biaffine_build_parse_device_option(tmp_path: Path) -> None:
    """`prior build --parse-device` reaches the parse stage and leaves the parse id alone."""
    from typer.testing import CliRunner

    from prior.cli.main import app
    from prior.featurestore import keys

    def build(device: str) -> str:
        result = CliRunner().invoke(app, ["build", "--dataset", "snli", "--split", "test", "--features", "sdoi",
                                          "--limit", "3", "--workers", "0", "--store", str(tmp_path / "s"),
                                          "--parse-device", device])
        assert result.exit_code == 0, result.output
        return result.output

    def flat(output: str) -> str:  # the report wraps a long store path where the terminal ends
        return " ".join(output.split())

    first = build("cpu")
    parse_id = keys.parse_id(fingerprint_of("biaffine"))
    assert f"(parse {parse_id[:12]})" in flat(first)
    again = build("auto")  # the same parse id whatever the device: nothing is parsed again
    assert f"(parse {parse_id[:12]})" in flat(again)
    assert any(line.split()[:4] == ["parse", "5", "0", "5"] for line in again.splitlines()), again
    bad = CliRunner().invoke(app, ["build", "--dataset", "snli", "--parse-device", "tpu"])
    assert bad.exit_code == 2 and "tpu" in bad.output


def test_parsers_fast_biaffine_cuda_runs_in_ieee_float32_and_restores_settings() -> None:
    """The CUDA forward pass switches TF32 off for matmul and cuDNN's LSTM (torch 2.13 runs cuDNN
    RNNs in TF32 by default) through the fp32_precision settings alone; the CPU path leaves them."""
    from prior.pipeline.parsers.fast_biaffine import _ieee_float32

    settings = (torch.backends.cuda.matmul, torch.backends.cudnn.rnn)
    before = [s.fp32_precision for s in settings]
    with _ieee_float32(torch.device("cpu")):
        assert [s.fp32_precision for s in settings] == before
    with _ieee_float32(torch.device("cuda")):  # flags only: no GPU needed
        assert [s.fp32_precision for s in settings] == ["ieee", "ieee"]
    assert [s.fp32_precision for s in settings] == before
