"""Fast inference for supar's LSTM + char biaffine dependency model: supar's trees, less work.

:class:`FastBiaffine` wraps a copy of a loaded ``supar.models.BiaffineDependencyModel`` and
predicts heads and relations from word and character ids. What it does differently from supar's
own ``forward`` + ``decode(tree=True, proj=False)``, and why the trees stay the same:

- **Encoder**: supar's ``VariationalLSTM`` runs the BiLSTM one ``torch.lstm_cell`` call per
  position, layer and direction from Python (its variational dropout is off at inference). The
  copy's encoder is a fused ``torch.nn.LSTM`` (bidirectional, packed sequences) holding the
  same weights (:func:`fused_lstm`); supar's own ``Model.encode`` (embeddings, char LSTM,
  packing) runs around it unchanged. The recurrences are the same; the fused LSTM multiplies
  the inputs of all steps in one matrix product, so hidden states differ from supar's in the
  last bits (~1e-7). supar's CharLSTM (already a fused ``nn.LSTM``) runs once per distinct
  word of a batch (:class:`UniqueWordsCharLSTM`; bit-identical features, half its time).
- **Arc scores**: supar's arc MLPs and biaffine layer, unchanged.
- **Tree decoding**: supar's: greedy heads, and Chu-Liu-Edmonds with supar's single-root search
  for the sentences whose greedy heads are not a tree, as :mod:`.mst` computes it (supar's
  trees, O(n²) per contraction instead of supar's Python loops, O(n³) and worse). Which
  sentences those are is decided by :func:`greedy_is_tree`, a vectorized form of supar's
  ``CoNLL.istree(heads, proj=False, multiroot=False)`` (one root, no cycle) that gives the same
  answer without a Python loop per sentence (a test pins the equivalence).
- **Relation scores** only for each word's chosen head: B×n×labels instead of supar's
  B×n×n×labels. The first contraction (dependent × weight) is the one supar's einsum computes;
  the second takes one head per word instead of all of them.

Exactness is the contract, and it is measured, not assumed: the test suite compares this path
with supar's forward + decode on the bundled UD EWT slice, and ``bench/parse.py`` on the whole
UD EWT test file (heads and relations, word by word). Floating-point near-ties could in
principle flip an argmax; none does on those files.

Devices: the copy may live on CUDA (``device``). Scores stay float32 with TF32 switched off
inside the forward pass (matrix products and cuDNN's LSTM), so a GPU computes what the CPU
computes up to float32 rounding; the tree search runs on the CPU as in supar. The device is not part of a
parse's fingerprint (like batch sizes, it does not change results beyond float rounding).

Opt-in, not exact: ``biaffine-int8`` (:mod:`.int8_rows`: int8 products for the BiLSTM and the
MLPs, CPU only) changes some trees; its accuracy is measured by ``bench/parse.py --int8``.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from prior.errors import ResourceError
from prior.hints import option
from prior.pipeline.parsers.supar_compat import quiet_supar_warnings

if TYPE_CHECKING:
    from prior.pipeline.parsers.artifact import Vocabularies

DEVICES = ("auto", "cpu", "cuda")
REL_CHUNK = 128  # words per relation-score chunk (see FastBiaffine.rel_scores)
#: A stage clock: ``stage("encode")`` is a context manager around one stage of a prediction
#: (``bench/parse_profile.py`` passes one that adds up CPU time per stage; by default none).
Stage = Callable[[str], AbstractContextManager[None]]


def no_stage(name: str) -> AbstractContextManager[None]:
    """The stage clock that measures nothing."""
    return contextlib.nullcontext()


def resolve_device(device: str = "auto") -> str:
    """``"auto"``: ``"cuda"`` where torch sees a GPU, else ``"cpu"``; ``"cuda"`` without a GPU is
    an error that says what to do."""
    if device not in DEVICES:
        raise ResourceError(f"unknown parse device {device!r}; choose one of {', '.join(DEVICES)}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ResourceError(f"{option('parse_device', 'cuda')}: torch sees no CUDA GPU here (CPU-only torch build, no "
                            f"driver, or CUDA_VISIBLE_DEVICES hides it); use {option('parse_device', 'cpu')} or auto")
    return device


def batch_tensors(vocab: Vocabularies, batch: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Word ids (B, n) and char ids (B, n, fix) of a batch, as supar's CoNLL transform builds
    them: the root token first, words cut to ``fix_len`` characters, ``fix`` the longest word
    of the batch (at most ``fix_len``). Each distinct word is looked up once; one tensor is
    built per field (the reference builder makes one small tensor per word)."""
    entries: dict[str, tuple[int, list[int]]] = {}
    rows = []
    for sentence in batch:
        row = []
        for word in sentence:
            entry = entries.get(word)
            if entry is None:
                entry = entries[word] = (vocab.word_id(word), vocab.char_ids(word))
            row.append(entry)
        rows.append(row)
    n = max(len(r) for r in rows) + 1
    fix = min(vocab.fix_len, max([1] + [len(c) for _, c in entries.values()]))
    word_pad, char_pad = vocab.word_pad, vocab.char_pad
    root_chars = [vocab.char_bos] + [char_pad] * (fix - 1)
    pad_chars = [char_pad] * fix
    words = [[vocab.word_bos] + [w for w, _ in r] + [word_pad] * (n - 1 - len(r)) for r in rows]
    chars = [[root_chars] + [c[:fix] + [char_pad] * (fix - len(c)) for _, c in r] + [pad_chars] * (n - 1 - len(r))
             for r in rows]
    return torch.tensor(words, dtype=torch.long), torch.tensor(chars, dtype=torch.long)  # (B, n), (B, n, fix)


def fused_lstm(encoder: Any) -> nn.LSTM:  # supar's VariationalLSTM (untyped attributes)
    """A ``torch.nn.LSTM`` (batch first, bidirectional, packed input) with the weights of supar's
    ``VariationalLSTM`` ``encoder``: layer i's forward cell becomes ``*_l{i}``, its backward
    cell ``*_l{i}_reverse``. Both use the gate order (input, forget, cell, output)."""
    if not getattr(encoder, "bidirectional", False):
        raise ResourceError("the fast biaffine path needs supar's bidirectional VariationalLSTM encoder")
    lstm = nn.LSTM(encoder.input_size, encoder.hidden_size, encoder.num_layers, batch_first=True,
                   bidirectional=True)
    state = {}
    for i in range(encoder.num_layers):
        for cells, suffix in ((encoder.f_cells, ""), (encoder.b_cells, "_reverse")):
            cell = cells[i]
            state[f"weight_ih_l{i}{suffix}"] = cell.weight_ih
            state[f"weight_hh_l{i}{suffix}"] = cell.weight_hh
            state[f"bias_ih_l{i}{suffix}"] = cell.bias_ih
            state[f"bias_hh_l{i}{suffix}"] = cell.bias_hh
    lstm.load_state_dict({k: v.detach().clone() for k, v in state.items()}, strict=True)
    return lstm.eval()


class UniqueWordsCharLSTM(nn.Module):
    """supar's ``CharLSTM`` run once per distinct word of a batch instead of once per position.

    A word's character features depend on its characters only, and words repeat (function
    words, punctuation, the root token): the batch's (B, n, fix) character rows are reduced to
    their distinct rows, encoded, and spread back. Rows of padding (no characters) come out as
    zeros, as in supar.
    """

    def __init__(self, char_lstm: nn.Module) -> None:
        super().__init__()
        self.char_lstm: Any = char_lstm

    def forward(self, chars: torch.Tensor) -> torch.Tensor:  # (B, n, fix) -> (B, n, n_out)
        rows, inverse = torch.unique(chars.view(-1, chars.shape[-1]), dim=0, return_inverse=True)  # (U, fix)
        encoded = self.char_lstm(rows.unsqueeze(0)).squeeze(0)  # (U, n_out)
        return encoded[inverse].view(*chars.shape[:2], -1)


def greedy_is_tree(heads: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """Per sentence, whether ``heads`` (B, n+1; position 0 is the root token, heads of words
    1..len) form a single-rooted tree: supar's ``CoNLL.istree(proj=False, multiroot=False)``.

    Exactly one word has head 0, and every word reaches the root by following heads (pointer
    doubling: after k rounds each word points 2^k steps up; a cycle, self-loops included, never
    reaches 0).
    """
    n = heads.shape[1]
    positions = torch.arange(n, device=heads.device)
    words = (positions.unsqueeze(0) >= 1) & (positions.unsqueeze(0) <= lens.unsqueeze(1))  # (B, n+1)
    up = heads.masked_fill(~words, 0)  # padding and the root token point to the root
    one_root = (up.eq(0) & words).sum(1).eq(1)
    for _ in range(max(1, (n - 1).bit_length())):
        up = up.gather(1, up)
    return one_root & up.eq(0).all(1)


def decode_heads(s_arc: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """supar's ``BiaffineDependencyModel.decode(tree=True, proj=False)`` for heads: the greedy
    heads, replaced by the best single-rooted spanning tree where they are not a tree.
    ``s_arc`` (B, n, n) is masked as supar masks it, ``mask`` (B, n) marks the words (position
    0 excluded). The tree search is :func:`prior.pipeline.parsers.mst.best_trees`: supar's
    trees in O(n²) per contraction (supar's own took minutes for a 2,000-word sentence)."""
    from prior.pipeline.parsers.mst import best_trees

    lens = mask.sum(1)
    arc_preds = s_arc.argmax(-1)
    bad = ~greedy_is_tree(arc_preds, lens)
    if bool(bad.any()):
        trees = best_trees(s_arc[bad].detach().float().cpu().numpy(), lens[bad].cpu().numpy())
        arc_preds[bad] = torch.from_numpy(trees).to(arc_preds.device)
    return arc_preds


@contextlib.contextmanager
def _ieee_float32(device: torch.device) -> Iterator[None]:
    """On CUDA, float32 matrix products and cuDNN RNNs in IEEE float32 within the block (cuDNN's
    RNNs default to TF32 in torch 2.13); a no-op on the CPU. Uses torch's ``fp32_precision``
    settings only: mixing them with the legacy ``allow_tf32`` flags is an error in torch."""
    if device.type != "cuda":
        yield
        return
    settings: tuple[Any, ...] = (torch.backends.cuda.matmul, torch.backends.cudnn.rnn)
    before = [s.fp32_precision for s in settings]
    for s in settings:
        s.fp32_precision = "ieee"
    try:
        yield
    finally:
        for s, value in zip(settings, before):
            s.fp32_precision = value


class FastBiaffine(nn.Module):
    """Inference-only copy of a supar biaffine dependency model (see module docstring)."""

    def __init__(self, model: Any, device: str = "cpu") -> None:  # supar's model: untyped attributes
        super().__init__()
        if getattr(model.args, "encoder", None) != "lstm":
            raise ResourceError("the fast biaffine path supports supar's LSTM encoder only")
        self.model: Any = copy.deepcopy(model).float().eval()
        self.model.encoder = fused_lstm(model.encoder)  # same interface: packed in, (packed, state) out
        if hasattr(self.model, "char_embed"):
            self.model.char_embed = UniqueWordsCharLSTM(self.model.char_embed)
        self.pad_index = int(model.args.pad_index)
        self.to(resolve_device(device))

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def scores(self, words: torch.Tensor, chars: torch.Tensor,
               stage: Stage = no_stage) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Arc scores (B, n, n) masked as supar masks them, and the relation MLP outputs of
        dependents and heads (B, n, n_rel_mlp) each."""
        from supar.utils.common import MIN

        m = self.model
        with stage("embed"):
            x = m.embed(words, [chars])  # (B, n, n_embed + n_char_out): word and character features
        with stage("bilstm"):
            x = self._bilstm(x, words.ne(self.pad_index).sum(1))  # (B, n, 2 * n_lstm_hidden)
        with stage("arc"):
            mask = words.ne(self.pad_index)
            s_arc = m.arc_attn(m.arc_mlp_d(x), m.arc_mlp_h(x)).masked_fill_(~mask.unsqueeze(1), MIN)
        with stage("rel"):
            return s_arc, m.rel_mlp_d(x), m.rel_mlp_h(x)

    def _bilstm(self, x: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
        """supar's ``Model.encode`` after the embeddings: pack, the fused BiLSTM, pad back."""
        from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

        packed = pack_padded_sequence(x, lens.tolist(), True, False)
        out, _ = self.model.encoder(packed)
        return pad_packed_sequence(out, True, total_length=x.shape[1])[0]

    def rel_scores(self, rel_d: torch.Tensor, rel_h: torch.Tensor, heads: torch.Tensor,
                   mask: torch.Tensor) -> torch.Tensor:
        """Scores (B, n, n_rels) of every relation for each word (``mask``) and its chosen head
        only; 0 elsewhere.

        supar's ``Biaffine`` (bias on both sides) contracts ``'bxi,oij,byj->boxy'``, dependent
        and weight first; this does that first contraction for the words only, then takes one
        head per word. In chunks of :data:`REL_CHUNK` words: the (words, labels, d+1)
        intermediate then stays in the CPU's cache (2-2.5x less time than all at once).
        """
        attn = self.model.rel_attn
        n_rels, d = attn.weight.shape[0], attn.weight.shape[2]
        rel_d = torch.cat((rel_d, torch.ones_like(rel_d[..., :1])), -1)  # (B, n, d)
        rel_h = torch.cat((rel_h, torch.ones_like(rel_h[..., :1])), -1)  # (B, n, d)
        chosen = rel_h.gather(1, heads.unsqueeze(-1).expand(-1, -1, d))[mask]  # (N words, d)
        dependents = rel_d[mask]  # (N, d)
        weight = attn.weight.permute(1, 0, 2).reshape(d, n_rels * d)  # (i, o * j)
        parts = []
        for start in range(0, len(dependents), REL_CHUNK):
            left = (dependents[start:start + REL_CHUNK] @ weight).view(-1, n_rels, d)  # (chunk, o, j)
            parts.append((left * chosen[start:start + REL_CHUNK].unsqueeze(1)).sum(-1))  # (chunk, o)
        s = rel_d.new_zeros(*mask.shape, n_rels)
        if parts:
            s[mask] = torch.cat(parts)
        return s / attn.n_in ** attn.scale if attn.scale else s

    @torch.inference_mode()
    def predict(self, words: torch.Tensor, chars: torch.Tensor, banned_rel: int | None = None,
                stage: Stage = no_stage) -> tuple[torch.Tensor, torch.Tensor]:
        """Heads and relation ids (B, n) on the CPU; position 0 and padding are meaningless.
        ``banned_rel`` (supar's ``<bos>`` label) is never chosen. ``stage`` clocks the stages."""
        device = self.device
        words, chars = words.to(device, non_blocking=True), chars.to(device, non_blocking=True)
        with _ieee_float32(device), quiet_supar_warnings():
            s_arc, rel_d, rel_h = self.scores(words, chars, stage)
            mask = words.ne(self.pad_index)
            mask[:, 0] = False
            with stage("decode"):
                heads = decode_heads(s_arc, mask)
            with stage("rel"):
                s_rel = self.rel_scores(rel_d, rel_h, heads, mask)
                if banned_rel is not None:
                    s_rel[..., banned_rel] = float("-inf")
                rels = s_rel.argmax(-1)
        return heads.cpu(), rels.cpu()
