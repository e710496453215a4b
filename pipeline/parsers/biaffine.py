"""The `biaffine` backend: supar's Dozat & Manning parser over spaCy's words.

spaCy (the shared annotator) tokenizes, tags, lemmatizes, finds entities and splits sentences;
the biaffine model then gives heads and UD relations for each spaCy sentence, all sentences of
a batch of texts parsed together (sorted by length, batches of at most ``batch_tokens`` words).

Model resolution (``BiaffineParser(model)``):
- ``None``: ``$PRIOR_PARSER_MODEL`` if set, else the model shipped in ``<repo>/data/parser/``;
- a directory: our safetensors + JSON export (:mod:`.artifact`), loaded without pickle;
- a file: a supar checkpoint, loaded as supar does (pickle, trusted files only);
- anything else: a published supar model name (e.g. ``biaffine-dep-en``), downloaded by supar
  where online. Only LSTM + char models are supported (the BERT ones need transformers < 5).

Choices: decoding always yields one well-formed single-root tree per sentence (supar's
``tree=True``: MST where the greedy heads are not a tree); the ``<bos>`` entry of supar's
relation vocabulary is never output; inference runs in float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from featurestore.errors import ResourceError
from pipeline.parsers.artifact import (LoadedModel, biaffine_fingerprint, default_model_dir, load_artifact,
                                       model_settings_from_supar, vocabularies_from_supar)
from pipeline.parsers.base import Parse
from pipeline.parsers.spacy_backend import SpacyAnnotator, doc_to_parse, fingerprint_of_package, shared_annotator
from pipeline.parsers.supar_compat import quiet_supar_warnings

DEFAULT_BATCH_TOKENS = 5000


def load_supar_model(spec: str) -> LoadedModel:
    """A supar checkpoint file or published model name, loaded as supar does (pickle: trust it)."""
    import hashlib

    from supar import BiaffineDependencyParser

    from pipeline.parsers.supar_compat import trusted_supar_load

    try:
        with trusted_supar_load():
            parser = BiaffineDependencyParser.load(spec)
    except Exception as exc:  # supar raises RuntimeError/URLError/KeyError/OSError variously
        raise ResourceError(
            f"cannot load supar model {spec!r} ({type(exc).__name__}: {exc}); give an existing file, "
            "a directory exported by `prior parser train`, or a supar model name while online; "
            "or use `--parser spacy`"
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


def load_model(spec: str | Path | None = None) -> LoadedModel:
    """Resolve and load a biaffine model (see module docstring)."""
    if spec is None or str(spec) == "":
        path = default_model_dir()
        if not path.exists():
            raise ResourceError(f"biaffine parser model directory {path} is missing; reinstall prior from a "
                                "checkout with data/parser/, set PRIOR_PARSER_MODEL, retrain it with "
                                "`prior parser train`, or use `--parser spacy`")
        return load_artifact(path)
    path = Path(spec).expanduser()
    if path.is_dir():
        return load_artifact(path)
    return load_supar_model(str(spec))


class BiaffineModel:
    """Predict heads and relations for pre-tokenized sentences, batched."""

    def __init__(self, loaded: LoadedModel, batch_tokens: int = DEFAULT_BATCH_TOKENS) -> None:
        self.loaded = loaded
        self.model = loaded.model
        self.vocab = loaded.vocab
        self.batch_tokens = batch_tokens
        self._bos_rel = self.vocab.rels.index(self.vocab.bos) if self.vocab.bos in self.vocab.rels else None

    def _tensors(self, batch: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
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

    @torch.inference_mode()
    def predict(self, sentences: Sequence[Sequence[str]]) -> list[tuple[list[int], list[str]]]:
        """(heads, rels) per sentence: heads 1-based within the sentence, 0 = root."""
        out: list[tuple[list[int], list[str]] | None] = [None] * len(sentences)
        order = sorted((i for i, s in enumerate(sentences) if len(s)), key=lambda i: len(sentences[i]))
        for i, s in enumerate(sentences):
            if not len(s):
                out[i] = ([], [])
        start = 0
        while start < len(order):
            stop, longest = start, 0
            while stop < len(order):
                longest = max(longest, len(sentences[order[stop]]) + 1)
                if (stop - start + 1) * longest > self.batch_tokens and stop > start:
                    break
                stop += 1
            idx = order[start:stop]
            words_t, chars_t = self._tensors([sentences[i] for i in idx])
            mask = words_t.ne(self.vocab.word_pad)
            mask[:, 0] = False
            with quiet_supar_warnings():
                s_arc, s_rel = self.model(words_t, [chars_t])  # (B, n, n), (B, n, n, n_rels)
                if self._bos_rel is not None:  # never output the padding label supar's vocabulary holds
                    s_rel[..., self._bos_rel] = float("-inf")
                arcs, rels = self.model.decode(s_arc, s_rel, mask, tree=True, proj=False)
            for row, i in enumerate(idx):
                n = len(sentences[i])
                out[i] = (arcs[row, 1 : n + 1].tolist(), [self.vocab.rels[r] for r in rels[row, 1 : n + 1].tolist()])
            start = stop
        return [o for o in out if o is not None]


class BiaffineParser:
    """The `biaffine` backend of the DependencyParser protocol."""

    name = "biaffine"

    def __init__(self, model: str | Path | None = None, annotator: SpacyAnnotator | None = None,
                 batch_tokens: int = DEFAULT_BATCH_TOKENS) -> None:
        self.biaffine = BiaffineModel(load_model(model), batch_tokens)
        self._annotator = annotator

    @property
    def annotator(self) -> SpacyAnnotator:
        if self._annotator is None:  # parse_words (evaluation) does not need spaCy
            self._annotator = shared_annotator()
        return self._annotator

    def fingerprint(self) -> dict[str, Any]:
        loaded = self.biaffine.loaded
        spacy_part = self._annotator.fingerprint() if self._annotator is not None else fingerprint_of_package()
        return biaffine_fingerprint(loaded.name, loaded.checksum, spacy_part)

    def parse(self, texts: Sequence[str]) -> list[Parse]:
        docs = self.annotator.docs(texts)
        spans = [(d, s.start, s.end) for d, doc in enumerate(docs) for s in doc.sents]
        preds = self.biaffine.predict([[t.text for t in docs[d][a:b]] for d, a, b in spans])
        heads: list[list[int]] = [[0] * len(doc) for doc in docs]
        rels: list[list[str]] = [[""] * len(doc) for doc in docs]
        for (d, a, b), (h, r) in zip(spans, preds):
            heads[d][a:b] = [x + a if x else 0 for x in h]
            rels[d][a:b] = r
        return [doc_to_parse(doc, heads[i], rels[i]) for i, doc in enumerate(docs)]

    def parse_words(self, sentences: Sequence[Sequence[str]]) -> list[tuple[list[int], list[str]]]:
        return self.biaffine.predict(sentences)
