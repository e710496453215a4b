"""int8 inference for the biaffine model whose result for a sentence does not depend on its batch.

``torch.ao.quantization.quantize_dynamic`` (the first ``biaffine-int8``) quantizes each matrix
product's input with one scale for the whole batch: the largest value among all the batch's
words. A sentence's int8 inputs, and so some of its trees, then change with the sentences it is
parsed beside, which a content-addressed store cannot accept (one parse per sentence).

Here every *row* of an input (one word, or one sentence's hidden state at one step) gets its own
scale, so a row's int8 values depend on that row alone:

- weights: int8 with one scale per output channel (symmetric, ``round(w / s)``, ``s = max|w| / 127``);
- inputs: int8 with one scale per row, the same rule;
- products: ``torch._int_mm`` (int8 × int8 → int32: exact, so no order of summation to differ),
  then ``acc · s_row · s_channel + bias`` in float32, element by element.

:class:`RowInt8Linear` replaces the MLPs' linear layers, :class:`RowInt8LSTM` the fused BiLSTM:
each step's input part for all words in one product, the recurrent part step by step for the
sentences still running (rows sorted by length), with float32 gates. The character LSTM, the
embeddings and the two biaffine scorers stay float32, as in the first ``biaffine-int8``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from prior.errors import ResourceError
from prior.hints import option
from prior.pipeline.parsers.fast_biaffine import FastBiaffine, Stage, no_stage

QMAX = 127
#: padding after each row of the LSTM's gates and cell state (`RowInt8LSTM`)
ROW_PAD = 16


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` (m, k) float → int8 (m, k) and the float32 scale of each row (m,): symmetric, a row
    of zeros gets scale 1."""
    amax = x.abs().amax(dim=-1)
    scale = torch.where(amax > 0, amax / QMAX, torch.ones_like(amax))
    q = torch.round(x / scale.unsqueeze(-1)).clamp_(-QMAX, QMAX).to(torch.int8)
    return q, scale


class RowInt8Linear(nn.Module):
    """``nn.Linear`` with int8 weights (a scale per output channel) and int8 inputs (a scale per
    row): module docstring."""

    weight_t: torch.Tensor
    weight_scale: torch.Tensor
    bias: torch.Tensor | None

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, pad: int = 0) -> None:
        super().__init__()
        q, scale = quantize_rows(weight.detach().float())  # (n, k): a row per output channel
        self.out_features = q.shape[0]
        # ``pad`` zero columns after the n outputs: the output is then a view whose rows are not
        # adjacent (`RowInt8LSTM` says why it wants that)
        q = torch.cat([q, q.new_zeros(pad, q.shape[1])])
        scale = torch.cat([scale, scale.new_ones(pad)])
        self.register_buffer("weight_t", q.t().contiguous())  # (k, n + pad), as torch._int_mm takes it
        self.register_buffer("weight_scale", scale)  # (n + pad,)
        self.register_buffer("bias", None if bias is None else
                             torch.cat([bias.detach().float(), bias.new_zeros(pad, dtype=torch.float32)]))

    @classmethod
    def of(cls, linear: nn.Linear) -> RowInt8Linear:
        return cls(linear.weight, linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        q, scale = quantize_rows(rows)
        out = torch._int_mm(q, self.weight_t).float().mul_(scale.unsqueeze(-1)).mul_(self.weight_scale)
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


__all__ = ["RowInt8Biaffine", "RowInt8LSTM", "RowInt8Linear", "quantize_rows"]
