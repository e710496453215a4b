"""Dependency parser backends and their registry.

``get_parser(spec)`` returns one parser per process and spec (so one model per Dask worker):

- ``"spacy"``: spaCy's own parse (:class:`~prior.pipeline.parsers.spacy_backend.SpacyParser`);
- ``"biaffine"``: supar's biaffine parser with the model shipped in ``data/parser/``
  (or ``$PRIOR_PARSER_MODEL``);
- ``"biaffine-int8"`` (``"biaffine-int8:<dir>"``): the same model with int8 products for its
  BiLSTM and MLPs, a scale per row (CPU, :mod:`.int8_rows`): faster, slightly different trees,
  the same tree for a sentence in any batch, its own parse id; opt-in;
- ``"biaffine:<dir>"``: a model exported by ``prior parser train`` (safetensors + JSON);
- ``"biaffine:<file or supar model name>"``: a supar checkpoint or a published supar model
  (e.g. ``biaffine-dep-en``), loaded as supar does (pickle: trusted files only; needs network
  for published names).

Who may name which: a spec given by the person running `prior` (``--parser``, a Python
argument) may be any of these. A spec read from data (a store's parses record, a checkpoint's
``prior.json``) goes through :func:`check_recorded_spec` first: it may name spaCy, the shipped
biaffine model or an exported model directory, never a pickle (supar file or published name:
loading one runs code it contains).
"""

from __future__ import annotations

import functools
from typing import Any

from prior.errors import ResourceError
from prior.hints import option
from prior.parser_spec import ParserSpec, loads_code
from prior.pipeline.parsers.base import DependencyParser, Parse

__all__ = ["BACKENDS", "DependencyParser", "Parse", "UntrustedParserError", "annotator_for", "check_recorded_spec",
           "fingerprint_of", "get_parser"]

BACKENDS = ("biaffine", "biaffine-int8", "spacy")
BIAFFINE_NAMES = ("biaffine", "biaffine-int8")


class UntrustedParserError(ResourceError):
    """Data (a store record, a checkpoint) names a parser that would load a pickle."""


def check_recorded_spec(spec: str, source: str) -> str:
    """``spec`` when it may be used although ``source`` (a store record, a checkpoint), not
    the person running `prior`, named it: ``spacy``, ``spacy:<installed package name>``,
    ``biaffine`` (the shipped model) or ``biaffine:<directory>`` (a model exported as
    safetensors + JSON, loaded without pickle and checked by its checksum when read). Anything
    else (a supar file or published model name: pickle, i.e. code) is an
    :class:`UntrustedParserError`. Decided from the text and a directory test alone: no file
    is opened."""
    if not loads_code(spec):
        return spec
    shown = option("parser", spec) if spec.isprintable() else f"{option('parser')} {spec!r}"  # one line, whatever it holds
    raise UntrustedParserError(
        f"{source} names the parser {spec!r}, which is not the shipped model, spaCy or a model directory "
        "exported by `prior parser train` (a supar file or name is a pickle, which can run code), so it is "
        f"not loaded; if you trust it, name it yourself: {shown}")


def fingerprint_of(spec: str | ParserSpec = "biaffine") -> dict[str, Any]:
    """``get_parser(spec).fingerprint()``, computed from the model files without loading models
    where possible (spacy, spacy:<package>, biaffine, biaffine:<exported dir>)."""
    parsed = spec if isinstance(spec, ParserSpec) else ParserSpec.parse(spec)
    if parsed.name == "spacy":
        from prior.pipeline.parsers.spacy_backend import fingerprint_of_package

        return {"backend": "spacy", **fingerprint_of_package(parsed.arg)}
    if parsed.name in BIAFFINE_NAMES:
        from prior.pipeline.parsers.artifact import fingerprint_of_spec

        cheap = fingerprint_of_spec(parsed.arg or "", int8=parsed.name == "biaffine-int8")
        if cheap is not None:
            return cheap
    return dict(get_parser(parsed).fingerprint())


def get_parser(spec: str | ParserSpec = "biaffine", device: str = "auto") -> DependencyParser:
    """The parser named by ``spec`` (see module docstring), loaded once per process and device.

    ``device`` ("auto": CUDA where torch sees a GPU, "cpu", "cuda") is where the biaffine model
    runs; spaCy always runs on the CPU. It does not change the fingerprint.
    """
    return _load_parser(spec if isinstance(spec, ParserSpec) else ParserSpec.parse(spec), device)


def annotator_for(spec: str | ParserSpec = "biaffine") -> Any:
    """The spaCy annotator (one per process) the biaffine parser of ``spec`` uses: loading it
    first lets a profile time spaCy's load apart from the model's."""
    from prior.pipeline.parsers.biaffine import SENTENCES
    from prior.pipeline.parsers.spacy_backend import shared_annotator

    return shared_annotator(sentences=SENTENCES)


@functools.lru_cache(maxsize=8)
def _load_parser(spec: ParserSpec, device: str) -> DependencyParser:
    if spec.name == "spacy":
        if spec.arg:
            from prior.pipeline.parsers.spacy_backend import SpacyAnnotator, SpacyParser

            return SpacyParser(SpacyAnnotator(spec.arg))
        from prior.pipeline.parsers.spacy_backend import SpacyParser

        return SpacyParser()
    if spec.name in BIAFFINE_NAMES:
        from prior.pipeline.parsers.biaffine import BiaffineParser

        return BiaffineParser(spec.arg, device=device, int8=spec.name == "biaffine-int8")
    raise ResourceError(f"unknown parser {str(spec)!r}; choose one of {', '.join(BACKENDS)} "
                        "(or biaffine:<model dir, supar file or supar model name>, biaffine-int8:<the same>, "
                        "spacy:<spaCy package>)")
