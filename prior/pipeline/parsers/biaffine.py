"""The `biaffine` backend: supar's Dozat & Manning parser over spaCy's words.

spaCy (the shared annotator) tokenizes, tags, lemmatizes, finds entities and splits sentences;
the biaffine model then gives heads and UD relations for each spaCy sentence, all sentences of
a batch of texts parsed together (sorted by length, batches of at most ``batch_tokens`` words).

Model resolution (``BiaffineParser(model)``):
- ``None``: ``$PRIOR_PARSER_MODEL`` if set, else the model shipped with the package
  (`prior.shipped`: ``data/parser/`` of a checkout, ``prior/data/parser`` when installed);
- a directory: our safetensors + JSON export (:mod:`.artifact`), loaded without pickle;
- a file: a supar checkpoint, loaded as supar does (pickle, trusted files only);
- anything else: a published supar model name (e.g. ``biaffine-dep-en``), downloaded by supar
  where online. Only LSTM + char models are supported (the BERT ones need transformers < 5).

Choices: decoding always yields one well-formed single-root tree per sentence (supar's
``tree=True``: MST where the greedy heads are not a tree); the ``<bos>`` entry of supar's
relation vocabulary is never output; inference runs in float32, through the fast path of
:mod:`.fast_biaffine` (the same trees as supar's own forward + decode, which
:meth:`BiaffineModel.predict_supar` keeps as the reference). Sentence boundaries come from
spaCy's ``senter`` rather than spaCy's dependency parser (see :mod:`.spacy_backend`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from prior.errors import ResourceError
from prior.hints import option
from prior.pipeline.parsers.annotations import ALL
from prior.pipeline.parsers.artifact import (
    SENTENCES_FOR_BIAFFINE,
    LoadedModel,
    biaffine_fingerprint,
    default_model_dir,
    load_artifact,
    model_settings_from_supar,
    vocabularies_from_supar,
)
from prior.pipeline.parsers.base import Parse
from prior.pipeline.parsers.fast_biaffine import FastBiaffine, Stage, batch_tensors, no_stage
from prior.pipeline.parsers.int8_rows import RowInt8Biaffine
from prior.pipeline.parsers.spacy_backend import (
    SpacyAnnotator,
    doc_to_parse,
    fingerprint_of_package,
    shared_annotator,
    splitter_of_package,
)
from prior.pipeline.parsers.supar_compat import quiet_supar_warnings

DEFAULT_BATCH_TOKENS = 5000
# spaCy component that splits texts into the sentences the biaffine model parses (see
# spacy_backend: "senter" where the pipeline has it, else spaCy's parser)
SENTENCES = SENTENCES_FOR_BIAFFINE


def load_supar_model(spec: str) -> LoadedModel:
    """A supar checkpoint file or published model name, loaded as supar does (pickle: trust it)."""
    import hashlib

    from supar import BiaffineDependencyParser

    from prior.pipeline.parsers.supar_compat import trusted_supar_load

    try:
        with trusted_supar_load():
            parser = BiaffineDependencyParser.load(spec)
    except Exception as exc:  # noqa: BLE001 - supar raises RuntimeError/URLError/KeyError/OSError variously
        raise ResourceError(
            f"cannot load supar model {spec!r} ({type(exc).__name__}: {exc}); give an existing file, "
            "a directory exported by `prior parser train`, or a supar model name while online; "
            f"or use {option('parser', 'spacy')}"
        ) from None
    model_settings_from_supar(parser.model.args)  # refuses BERT / tag-feature models clearly
    vocab = vocabularies_from_supar(parser.transform)
    parser.model.eval()
    digest = hashlib.blake2b(digest_size=16)
    for key, value in sorted(parser.model.state_dict().items()):
        digest.update(key.encode())
        digest.update(value.detach().float().cpu().numpy().tobytes())
    return LoadedModel(model=parser.model.float().cpu(), vocab=vocab, name=spec, checksum=digest.hexdigest(),
                       config={})


def _names_a_path(spec: str) -> bool:
    """Whether a model spec is written as a path (a separator, ``~``, a leading ``.``, or a file
    suffix) rather than a published supar model name (``biaffine-dep-en``)."""
    return any(sep in spec for sep in ("/", os.sep)) or spec.startswith(("~", ".")) or bool(Path(spec).suffix)


def load_model(spec: str | Path | None = None) -> LoadedModel:
    """Resolve and load a biaffine model (see module docstring). A spec written as a path that
    does not exist is an error here, before supar would try to download it as a model name."""
    if spec is None or str(spec) == "":
        path = default_model_dir()
        if not path.exists():
            raise ResourceError(f"biaffine parser model directory {path} is missing; reinstall prior (its "
                                "package ships the model), set PRIOR_PARSER_MODEL, retrain it with "
                                f"`prior parser train`, or use {option('parser', 'spacy')}")
        return load_artifact(path)
    path = Path(spec).expanduser()
    if path.is_dir():
        return load_artifact(path)
    if not path.exists() and _names_a_path(str(spec)):
        raise ResourceError(f"biaffine parser model {str(spec)!r} does not exist: give a model directory exported by "
                            "`prior parser train`, a supar checkpoint file or a published supar model name, "
                            f"or use {option('parser', 'spacy')}")
    return load_supar_model(str(spec))


class BiaffineModel:
    """Predict heads and relations for pre-tokenized sentences, batched.

    :meth:`predict` runs the fast path (:mod:`.fast_biaffine`: fused LSTM, relation scores for
    the chosen heads only) on ``device`` ("cpu" by default; "auto": CUDA where present, as the
    parser backend asks); :meth:`predict_supar`
    runs supar's own forward + decode on the CPU, the reference the fast path must equal.
    Both sort sentences by length and batch at most ``batch_tokens`` positions.
    """

    def __init__(self, loaded: LoadedModel, batch_tokens: int = DEFAULT_BATCH_TOKENS, device: str = "cpu") -> None:
        self.loaded = loaded
        self.model: Any = loaded.model
        self.vocab = loaded.vocab
        self.batch_tokens = batch_tokens
        self._bos_rel = self.vocab.rels.index(self.vocab.bos) if self.vocab.bos in self.vocab.rels else None
        self.fast = FastBiaffine(loaded.model, device)

    def _tensors(self, batch: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Word ids (B, n) and char ids (B, n, fix) as supar's CoNLL transform builds them."""
        v = self.vocab
        n = max(len(s) for s in batch) + 1
        chars = [[[v.char_bos]] + [v.char_ids(w) for w in s] for s in batch]
        fix = min(v.fix_len, max(len(c) for sent in chars for c in sent))
        words_t = torch.full((len(batch), n), v.word_pad, dtype=torch.long)
        chars_t = torch.full((len(batch), n, fix), v.char_pad, dtype=torch.long)
        for i, sent in enumerate(batch):
            words_t[i, : len(sent) + 1] = torch.tensor([v.word_bos] + [v.word_id(w) for w in sent])
            for j, ids in enumerate(chars[i]):
                ids = ids[:fix]
                chars_t[i, j, : len(ids)] = torch.tensor(ids)
        return words_t, chars_t  # (B, n), (B, n, fix)

    def _batches(self, sentences: Sequence[Sequence[str]]) -> Iterator[list[int]]:
        """Indices of the non-empty sentences, sorted by length, in batches of at most
        ``batch_tokens`` positions (words + the root token, padding included)."""
        order = sorted((i for i, s in enumerate(sentences) if len(s)), key=lambda i: len(sentences[i]))
        start = 0
        while start < len(order):
            stop, longest = start, 0
            while stop < len(order):
                longest = max(longest, len(sentences[order[stop]]) + 1)
                if (stop - start + 1) * longest > self.batch_tokens and stop > start:
                    break
                stop += 1
            yield order[start:stop]
            start = stop

    def _run(self, sentences: Sequence[Sequence[str]],
             batch_fn: Callable[[list[Sequence[str]]], tuple[torch.Tensor, torch.Tensor]],
             ) -> list[tuple[list[int], list[str]]]:
        out: list[tuple[list[int], list[str]]] = [([], []) for _ in sentences]
        for idx in self._batches(sentences):
            arcs, rels = batch_fn([sentences[i] for i in idx])
            for row, (arc_row, rel_row) in enumerate(zip(arcs.tolist(), rels.tolist())):
                n = len(sentences[idx[row]])
                out[idx[row]] = (arc_row[1 : n + 1], [self.vocab.rels[r] for r in rel_row[1 : n + 1]])
        return out

    def predict(self, sentences: Sequence[Sequence[str]],
                stage: Stage = no_stage) -> list[tuple[list[int], list[str]]]:
        """(heads, rels) per sentence: heads 1-based within the sentence, 0 = root (fast path).
        ``stage`` clocks the stages (``bench/parse_profile.py``)."""
        def batch(words: list[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
            with stage("tensors"):
                tensors = batch_tensors(self.vocab, words)
            return self.fast.predict(*tensors, banned_rel=self._bos_rel, stage=stage)

        return self._run(sentences, batch)

    def predict_supar(self, sentences: Sequence[Sequence[str]]) -> list[tuple[list[int], list[str]]]:
        """The same as :meth:`predict` through supar's own forward + decode (the reference)."""
        return self._run(sentences, self._supar_batch)

    @torch.inference_mode()
    def _supar_batch(self, batch: list[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        words_t, chars_t = self._tensors(batch)
        mask = words_t.ne(self.vocab.word_pad)
        mask[:, 0] = False
        with quiet_supar_warnings():
            s_arc, s_rel = self.model(words_t, [chars_t])  # (B, n, n), (B, n, n, n_rels)
            if self._bos_rel is not None:  # never output the padding label supar's vocabulary holds
                s_rel[..., self._bos_rel] = float("-inf")
            return self.model.decode(s_arc, s_rel, mask, tree=True, proj=False)


class BiaffineParser:
    """The `biaffine` backend of the DependencyParser protocol.

    Its own annotator splits sentences with spaCy's ``senter`` (:data:`SENTENCES`), not spaCy's
    parser; ``device`` ("auto", "cpu", "cuda") is where the biaffine model runs and is not part
    of the fingerprint.
    """

    name = "biaffine"

    def __init__(self, model: str | Path | None = None, annotator: SpacyAnnotator | None = None,
                 batch_tokens: int = DEFAULT_BATCH_TOKENS, device: str = "auto", int8: bool = False) -> None:
        if int8 and device == "auto":
            device = "cpu"  # int8 weights run on the CPU only
        self.biaffine = BiaffineModel(load_model(model), batch_tokens, device)
        self.int8 = int8
        if int8:
            self.name = "biaffine-int8"
            self.biaffine.fast = RowInt8Biaffine(self.biaffine.fast)
        self._annotator = annotator

    @property
    def annotator(self) -> SpacyAnnotator:
        if self._annotator is None:  # parse_words (evaluation) does not need spaCy
            self._annotator = shared_annotator(sentences=SENTENCES)
        return self._annotator

    def fingerprint(self) -> dict[str, Any]:
        loaded = self.biaffine.loaded
        if self._annotator is not None:
            spacy_part, sentences = self._annotator.fingerprint(), self._annotator.sentences
        else:
            spacy_part, sentences = fingerprint_of_package(), splitter_of_package(None, SENTENCES)
        return biaffine_fingerprint(loaded.name, loaded.checksum, spacy_part, sentences, int8=self.int8)

    def parse(self, texts: Sequence[str], annotations: Collection[str] = ALL) -> list[Parse]:
        docs = self.annotator.docs(texts, annotations)
        spans, words = self.sentence_words(docs)
        return self.assemble(docs, spans, self.biaffine.predict(words))

    @staticmethod
    def sentence_words(docs: Sequence[Any]) -> tuple[list[tuple[int, int, int]], list[list[str]]]:
        """Each spaCy sentence of ``docs`` as (doc index, start, end) and its words: what the
        model parses."""
        spans = [(d, s.start, s.end) for d, doc in enumerate(docs) for s in doc.sents]
        return spans, [[t.text for t in docs[d][a:b]] for d, a, b in spans]

    @staticmethod
    def assemble(docs: Sequence[Any], spans: Sequence[tuple[int, int, int]],
                 preds: Sequence[tuple[list[int], list[str]]]) -> list[Parse]:
        """One Parse per doc: spaCy's annotations, the model's heads and relations per sentence
        (heads shifted to index the whole text)."""
        heads: list[list[int]] = [[0] * len(doc) for doc in docs]
        rels: list[list[str]] = [[""] * len(doc) for doc in docs]
        for (d, a, b), (h, r) in zip(spans, preds):
            heads[d][a:b] = [x + a if x else 0 for x in h]
            rels[d][a:b] = r
        return [doc_to_parse(doc, heads[i], rels[i]) for i, doc in enumerate(docs)]

    def parse_words(self, sentences: Sequence[Sequence[str]]) -> list[tuple[list[int], list[str]]]:
        return self.biaffine.predict(sentences)
