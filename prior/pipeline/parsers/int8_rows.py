"""int8 inference for the biaffine model whose result for a sentence does not depend on its batch.

``torch.ao.quantization.quantize_dynamic`` (the first ``biaffine-int8``) quantizes each matrix
product's input with one scale for the whole batch: the largest value among all the batch's
words. A sentence's int8 inputs, and so some of its trees, then change with the sentences it is
parsed beside, which a content-addressed store cannot accept (one parse per sentence).

Here every *row* of an input (one word, or one sentence's hidden state at one step) gets its own
scale, so a row's int8 values depend on that row alone:

- weights: int8 with one scale per output channel (symmetric, ``round(w / s)``, ``s = max|w| / 127``);
- inputs: int8 with one scale per row, the same rule;
- products: exact integer sums of int8 × int8 (so no order of summation to differ), then
  ``acc · s_row · s_channel + bias`` in float32, element by element.

The exact sums come one of two ways, with the same integers (:func:`int8_matmul`):
``torch._int_mm`` (int8 × int8 → int32), or a float32 product of the same int8 values, which
is exact where the inner dimension ``k`` is at most ``EXACT_FLOAT_K`` (1040): every product is
an integer of magnitude at most 127² and every partial sum, in whatever order or blocking the
matrix library adds them, one of at most ``k · 127² < 2**24``, which float32 holds exactly
(the biaffine model's largest ``k`` is 800). Which is faster depends on the CPU: ``_int_mm`` is
fast on some and a generic loop on others (on a 2-core AVX2 EPYC without AVX-512 or VNNI, 20-33×
slower than the float32 product of the same shape: bench/RESULTS.md), so a process times both
once on a product of the model's shape (:func:`product_kind`) and uses the faster;
``PRIOR_INT8_PRODUCT=int|float`` forces one. The trees are the same either way.

:class:`RowInt8Linear` replaces the MLPs' linear layers, :class:`RowInt8LSTM` the fused BiLSTM:
each step's input part for all words in one product, the recurrent part step by step for the
sentences still running (rows sorted by length), with float32 gates. The character LSTM, the
embeddings and the two biaffine scorers stay float32, as in the first ``biaffine-int8``.
"""

from __future__ import annotations

import copy
import functools
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import torch
from torch import nn

from prior.errors import DataError, ResourceError
from prior.hints import option
from prior.pipeline.parsers.fast_biaffine import FastBiaffine, Stage, no_stage

QMAX = 127
#: padding after each row of the LSTM's gates and cell state (`RowInt8LSTM`)
ROW_PAD = 16
#: the largest inner dimension whose int8 products a float32 product sums exactly (module docstring)
EXACT_FLOAT_K = (2**24 - 1) // QMAX**2
ProductKind = Literal["int", "float"]
PRODUCT_ENV = "PRIOR_INT8_PRODUCT"


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` (m, k) float → int8 (m, k) and the float32 scale of each row (m,): symmetric, a row
    of zeros gets scale 1."""
    amax = x.abs().amax(dim=-1)
    scale = torch.where(amax > 0, amax / QMAX, torch.ones_like(amax))
    q = torch.round(x / scale.unsqueeze(-1)).clamp_(-QMAX, QMAX).to(torch.int8)
    return q, scale


def int8_matmul(q: torch.Tensor, weight_t: torch.Tensor, weight_f: torch.Tensor | None = None) -> torch.Tensor:
    """The exact sums of ``q`` (m, k) int8 times ``weight_t`` (k, n) int8, as float32 (m, n):
    ``torch._int_mm``, or where ``weight_f`` (``weight_t`` as float32) is given a float32
    product, exact for ``k <= EXACT_FLOAT_K`` at float32's full precision (module docstring)."""
    if weight_f is None:
        return torch._int_mm(q, weight_t).float()
    return torch.mm(q.float(), weight_f)


def float_product_is_exact(k: int) -> bool:
    """Whether a float32 product over an inner dimension of ``k`` sums int8 products exactly
    here: ``k`` small enough, and float32 products at full precision (a matmul precision of
    "high" or "medium" lets the library round through TF32 or bfloat16)."""
    return k <= EXACT_FLOAT_K and torch.get_float32_matmul_precision() == "highest"


@functools.cache
def product_kind() -> ProductKind:
    """How this process sums int8 products (module docstring): ``PRIOR_INT8_PRODUCT`` when set,
    else the faster of the two on one thread for a product of the BiLSTM's shape (32 rows by
    400 by 1,616), each timed three times after one untimed call. Either gives the same sums."""
    forced = os.environ.get(PRODUCT_ENV, "").strip().lower()
    if forced:
        if forced not in ("int", "float"):
            raise DataError(f"{PRODUCT_ENV}={forced!r} is neither int nor float")
        return "float" if forced == "float" else "int"
    generator = torch.Generator().manual_seed(0)
    q = torch.randint(-QMAX, QMAX + 1, (32, 400), dtype=torch.int8, generator=generator)
    weight_t = torch.randint(-QMAX, QMAX + 1, (400, 4 * 400 + ROW_PAD), dtype=torch.int8, generator=generator)
    weight_f = weight_t.float()
    best = {"int": float("inf"), "float": float("inf")}
    with _one_thread(), torch.inference_mode():
        for w_f in (None, weight_f):  # untimed: first calls allocate
            int8_matmul(q, weight_t, w_f)
        for _ in range(3):
            for kind, w_f in (("int", None), ("float", weight_f)):
                start = time.perf_counter()
                int8_matmul(q, weight_t, w_f)
                best[kind] = min(best[kind], time.perf_counter() - start)
    return "float" if best["float"] < best["int"] else "int"


class RowInt8Linear(nn.Module):
    """``nn.Linear`` with int8 weights (a scale per output channel) and int8 inputs (a scale per
    row): module docstring."""

    weight_t: torch.Tensor
    weight_f: torch.Tensor | None
    weight_scale: torch.Tensor
    bias: torch.Tensor | None

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, pad: int = 0,
                 product: ProductKind | None = None) -> None:
        """``product``: how the sums are made (`int8_matmul`; default `product_kind`); a float
        product where it would not be exact (`float_product_is_exact`) is ``_int_mm``'s."""
        super().__init__()
        q, scale = quantize_rows(weight.detach().float())  # (n, k): a row per output channel
        self.out_features = q.shape[0]
        # ``pad`` zero columns after the n outputs: the output is then a view whose rows are not
        # adjacent (`RowInt8LSTM` says why it wants that)
        q = torch.cat([q, q.new_zeros(pad, q.shape[1])])
        scale = torch.cat([scale, scale.new_ones(pad)])
        self.register_buffer("weight_t", q.t().contiguous())  # (k, n + pad), as torch._int_mm takes it
        use_float = (product or product_kind()) == "float" and float_product_is_exact(q.shape[1])
        # the same int8 values as float32, for the float product (exact: module docstring)
        self.register_buffer("weight_f", self.weight_t.float() if use_float else None)
        self.register_buffer("weight_scale", scale)  # (n + pad,)
        self.register_buffer("bias", None if bias is None else
                             torch.cat([bias.detach().float(), bias.new_zeros(pad, dtype=torch.float32)]))

    @property
    def float_product(self) -> bool:
        """Whether the sums come from a float32 product (`int8_matmul`)."""
        return self.weight_f is not None

    @classmethod
    def of(cls, linear: nn.Linear) -> RowInt8Linear:
        return cls(linear.weight, linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        q, scale = quantize_rows(rows)
        # float32 products at full precision only (`float_product_is_exact`); else _int_mm's sums
        exact = self.weight_f if self.float_product and float_product_is_exact(self.weight_t.shape[0]) else None
        out = int8_matmul(q, self.weight_t, exact).mul_(scale.unsqueeze(-1)).mul_(self.weight_scale)
        if self.bias is not None:
            out.add_(self.bias)
        return out.view(*x.shape[:-1], -1)[..., :self.out_features]


class RowInt8LSTM(nn.Module):
    """A bidirectional, batch-first ``nn.LSTM`` (gate order input, forget, cell, output) with
    :class:`RowInt8Linear` products; takes padded input and lengths, returns the padded output
    (zeros past each sentence's end), as ``pad_packed_sequence`` of the fused LSTM gives it.

    The gates' nonlinearities are where a row could see its batch: torch computes ``sigmoid``
    and ``tanh`` with vector instructions and the elements left over at the end of a loop one by
    one, which may round differently, and it runs one loop over a tensor whose rows are adjacent
    in memory. The gates and the cell state are therefore views with ``ROW_PAD`` unused columns
    after each row: one loop per row, the same for every row whatever the batch. With several
    threads torch would also cut a large tensor where its size says, so the parser runs this
    model on one thread (`RowInt8Biaffine.predict`).
    """

    def __init__(self, lstm: nn.LSTM) -> None:
        super().__init__()
        if not (lstm.bidirectional and lstm.batch_first) or lstm.proj_size:
            raise ValueError("RowInt8LSTM takes a bidirectional, batch-first LSTM without projections")
        self.hidden = lstm.hidden_size
        self.num_layers = lstm.num_layers
        inputs, hiddens = [], []
        for i in range(lstm.num_layers):
            for suffix in ("", "_reverse"):  # forward, then backward: index 2·layer + direction
                w_ih, w_hh = getattr(lstm, f"weight_ih_l{i}{suffix}"), getattr(lstm, f"weight_hh_l{i}{suffix}")
                bias = getattr(lstm, f"bias_ih_l{i}{suffix}") + getattr(lstm, f"bias_hh_l{i}{suffix}")
                # the cell gate's rows doubled: tanh(g) = 2·sigmoid(2g) − 1, so one sigmoid serves all four gates
                double = torch.ones(4 * self.hidden, 1)
                double[2 * self.hidden:3 * self.hidden] = 2
                inputs.append(RowInt8Linear(w_ih * double, bias * double.squeeze(1)))
                hiddens.append(RowInt8Linear(w_hh * double, None, pad=ROW_PAD))
        self.input_weights = nn.ModuleList(inputs)
        self.hidden_weights = nn.ModuleList(hiddens)

    def forward(self, x: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:  # (B, n, d), (B,) -> (B, n, 2H)
        order = torch.argsort(lens, descending=True, stable=True)
        x, lens = x[order], lens[order]
        n = x.shape[1]
        steps = torch.arange(n, device=x.device)
        # reversing each sentence within its length (an involution; padding stays in place)
        flip = torch.where(steps < lens.unsqueeze(1), lens.unsqueeze(1) - 1 - steps, steps)  # (B, n)
        running = [int(a) for a in (lens.unsqueeze(0) > steps.unsqueeze(1)).sum(1).tolist()]  # per step
        for layer in range(self.num_layers):
            outs = []
            for d in (0, 1):
                w_ih, w_hh = self.input_weights[2 * layer + d], self.hidden_weights[2 * layer + d]
                inputs = x if d == 0 else x.gather(1, flip.unsqueeze(-1).expand_as(x))
                h = self._run(w_ih(inputs), w_hh, running)
                outs.append(h if d == 0 else h.gather(1, flip.unsqueeze(-1).expand_as(h)))
            x = torch.cat(outs, -1)  # zeros past each end: no step writes there
        out = torch.empty_like(x)
        out[order] = x
        return out

    def _run(self, gates_x: torch.Tensor, w_hh: nn.Module, running: list[int]) -> torch.Tensor:
        """One direction over (B, n, 4H) input gates, rows sorted by length: the hidden states."""
        b, n, _ = gates_x.shape
        hid = self.hidden
        out = gates_x.new_zeros(b, n, hid)
        h = gates_x.new_zeros(b, hid)
        c = gates_x.new_zeros(b, hid + ROW_PAD)[:, :hid]  # rows not adjacent, as the gates' (class docstring)
        for t in range(n):
            a = running[t]
            if a == 0:
                break
            gates = w_hh(h[:a]).add_(gates_x[:a, t]).sigmoid_()
            i, f, g, o = gates.chunk(4, -1)
            c_t = c[:a].mul_(f).addcmul_(i, g.mul(2).sub_(1))  # c = f·c + i·tanh(g)
            h_t = torch.tanh(c_t).mul_(o)
            h[:a] = h_t
            out[:a, t] = h_t
        return out


class RowInt8Biaffine(FastBiaffine):
    """``biaffine-int8``'s model: a copy of a CPU `FastBiaffine` with :class:`RowInt8LSTM` for its
    BiLSTM and :class:`RowInt8Linear` for its four MLPs' linear layers; predicts on one thread
    (:class:`RowInt8LSTM` says why)."""

    def __init__(self, fast: FastBiaffine) -> None:
        nn.Module.__init__(self)  # not FastBiaffine's: ``fast`` is already the fast copy of supar's model
        if fast.device.type != "cpu":
            raise ResourceError(f"the int8 biaffine model runs on the CPU only; use {option('parse_device', 'cpu')}")
        self.model: Any = copy.deepcopy(fast.model)
        self.pad_index = fast.pad_index
        self.model.encoder = RowInt8LSTM(fast.model.encoder)
        for name in ("arc_mlp_d", "arc_mlp_h", "rel_mlp_d", "rel_mlp_h"):
            mlp = getattr(self.model, name)
            mlp.linear = RowInt8Linear.of(mlp.linear)

    def _bilstm(self, x: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.model.encoder(x, lens)
        return out

    def predict(self, words: torch.Tensor, chars: torch.Tensor, banned_rel: int | None = None,
                stage: Stage = no_stage) -> tuple[torch.Tensor, torch.Tensor]:
        with _one_thread():
            return super().predict(words, chars, banned_rel, stage)


@contextmanager
def _one_thread() -> Iterator[None]:
    """torch on one thread inside the block (a build's workers already are)."""
    before = torch.get_num_threads()
    if before > 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before > 1:
            torch.set_num_threads(before)


__all__ = ["EXACT_FLOAT_K", "PRODUCT_ENV", "ProductKind", "RowInt8Biaffine", "RowInt8LSTM", "RowInt8Linear",
           "float_product_is_exact", "int8_matmul", "product_kind", "quantize_rows"]
