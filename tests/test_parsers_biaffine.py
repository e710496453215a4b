"""The shipped biaffine model (data/parser/): round trip, the backend, errors and fallback."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.errors import ResourceError
from prior.pipeline.parsers import fingerprint_of, get_parser
from prior.pipeline.parsers.artifact import CONFIG_FILE, WEIGHTS_FILE, load_artifact
from prior.pipeline.parsers.biaffine import BiaffineParser, default_model_dir
from prior.pipeline.parsers.spacy_backend import SpacyParser, shared_annotator

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "data" / "parser"
SLICE = ROOT / "data" / "ud_ewt_slice"

# Recorded from the shipped model (float16 weights, float32 inference) when it was exported;
# a changed model must change these on purpose.
REFERENCE_SENTENCES = [
    ["The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "."],
    ["A", "man", "is", "playing", "a", "guitar", "on", "stage", "."],
    ["I", "do", "n't", "think", "she", "knew", "what", "he", "wanted", "."],
]
REFERENCE = [
    ([5, 3, 4, 5, 0, 9, 9, 9, 5, 5],
     ['det', 'amod', 'compound', 'compound', 'root', 'case', 'det', 'amod', 'nmod', 'punct']),
    ([2, 4, 4, 0, 6, 4, 8, 4, 4],
     ['det', 'nsubj', 'aux', 'root', 'det', 'obj', 'case', 'obl', 'punct']),
    ([4, 4, 4, 0, 6, 4, 9, 9, 6, 4],
     ['nsubj', 'aux', 'advmod', 'root', 'nsubj', 'ccomp', 'obj', 'nsubj', 'ccomp', 'punct']),
]


@pytest.fixture(scope="module")
def parser() -> BiaffineParser:
    return BiaffineParser(SHIPPED, annotator=shared_annotator(sentences="senter"), device="cpu")


def test_parsers_biaffine_shipped_artifact_is_small_safetensors_json() -> None:
    assert default_model_dir() == SHIPPED
    assert sorted(p.name for p in SHIPPED.iterdir()) == ["MODEL_CARD.md", CONFIG_FILE, WEIGHTS_FILE]
    weights = (SHIPPED / WEIGHTS_FILE).read_bytes()
    assert len(weights) + (SHIPPED / CONFIG_FILE).stat().st_size <= 25_000_000
    (header_len,) = struct.unpack("<Q", weights[:8])
    header = json.loads(weights[8:8 + header_len])  # a safetensors header, not a pickle
    assert header["__metadata__"]["format"] == "prior-biaffine-dep/1"
    config = json.loads((SHIPPED / CONFIG_FILE).read_text())
    assert config["vocab"]["rels"][0] == "<bos>" and "nsubj:pass" in config["vocab"]["rels"]


def test_parsers_biaffine_shipped_round_trip(parser: BiaffineParser) -> None:
    assert parser.parse_words(REFERENCE_SENTENCES) == REFERENCE
    # same result whatever the batching
    small = BiaffineParser(SHIPPED, annotator=shared_annotator(), batch_tokens=12)
    assert small.parse_words(REFERENCE_SENTENCES[::-1]) == REFERENCE[::-1]


def test_parsers_biaffine_parse_uses_spacy_words_and_forest(parser: BiaffineParser) -> None:
    texts = ["The cat sat on the mat. It was happy!", "", "Apple bought a startup in London."]
    ours = parser.parse(texts)
    spacy = SpacyParser(shared_annotator()).parse(texts)
    for a, b in zip(ours, spacy):
        assert (a.words, a.lemmas, a.upos, a.tags, a.ents) == (b.words, b.lemmas, b.upos, b.tags, b.ents)
    first = ours[0]
    assert first.heads.count(0) == 2  # one tree per spaCy sentence
    assert all(h == 0 or h > 7 for h in first.heads[7:])  # second sentence points inside itself
    assert first.rels[first.words.index("was")] != "" and len(ours[1]) == 0
    assert "root" in ours[2].rels and "nsubj" in ours[2].rels


def test_parsers_biaffine_fingerprint_and_registry(parser: BiaffineParser) -> None:
    fp = parser.fingerprint()
    assert fp["backend"] == "biaffine" and len(fp["model_checksum"]) == 32
    assert fp["spacy_model"] == "en_core_web_sm-3.8.0"
    assert fingerprint_of("biaffine") == fp == fingerprint_of(f"biaffine:{SHIPPED}")
    assert get_parser("biaffine") is get_parser("biaffine")


def test_parsers_biaffine_fingerprint_imports_neither_torch_nor_spacy() -> None:
    """Every build computes the parser fingerprint, no-op builds too: it must stay file-only."""
    code = ("import json, sys\nfrom prior.pipeline.parsers import fingerprint_of\nfp = fingerprint_of('biaffine')\n"
            "print(json.dumps([fp['backend'], [m for m in ('torch', 'spacy', 'supar') if m in sys.modules]]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=120).stdout
    assert json.loads(out) == ["biaffine", []]


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "model"
    shutil.copytree(SHIPPED, target)
    return target


def test_parsers_biaffine_missing_file_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _copy(tmp_path)
    (model / WEIGHTS_FILE).unlink()
    with pytest.raises(ResourceError, match=r"model\.safetensors is missing.*--parser spacy"):
        load_artifact(model)
    monkeypatch.setenv("PRIOR_PARSER_MODEL", str(tmp_path / "nowhere"))
    with pytest.raises(ResourceError, match=r"nowhere is missing.*--parser spacy"):
        BiaffineParser()
    assert get_parser("spacy").parse(["Fallback works."])[0].words == ("Fallback", "works", ".")


def test_parsers_biaffine_damaged_file_errors(tmp_path: Path) -> None:
    model = _copy(tmp_path)
    data = bytearray((model / WEIGHTS_FILE).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (model / WEIGHTS_FILE).write_bytes(bytes(data))
    with pytest.raises(ResourceError, match=r"model\.safetensors do not match the checksum"):
        load_artifact(model)
    (model / CONFIG_FILE).write_text("{not json")
    with pytest.raises(ResourceError, match=r"config\.json is damaged"):
        load_artifact(model)


def test_parsers_biaffine_unreadable_weights_with_matching_checksum(tmp_path: Path) -> None:
    from prior.pipeline.parsers.artifact import _file_digest

    model = _copy(tmp_path)
    (model / WEIGHTS_FILE).write_bytes(b"\x00" * 64)
    config = json.loads((model / CONFIG_FILE).read_text())
    config["weights_blake2b"] = _file_digest(model / WEIGHTS_FILE)
    (model / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(ResourceError, match="cannot be read"):
        load_artifact(model)


def test_parsers_biaffine_eval_cli_last_line() -> None:
    from prior.cli.parser import app

    result = CliRunner().invoke(app, ["eval", "--parser", "biaffine", str(SLICE / "test.conllu")])
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    match = re.fullmatch(r"UAS=(\d+\.\d\d) LAS=(\d+\.\d\d)", last)
    assert match, last
    uas, las = map(float, match.groups())
    assert 80.0 < uas <= 100.0 and 70.0 < las <= uas  # a working parser on 50 EWT test sentences


def test_parsers_biaffine_unknown_supar_model_is_a_resource_error() -> None:
    with pytest.raises(ResourceError, match=r"cannot load supar model 'no-such-supar-model'.*--parser spacy"):
        get_parser("biaffine:no-such-supar-model")


@pytest.mark.parametrize("spec", ["biaffine:/nonexistent/x", "biaffine:./no/such/model.pt", "biaffine:~/no_such.pt"])
def test_issue34_a_missing_model_path_is_one_line_without_a_download(spec: str, capfd: pytest.CaptureFixture[str]) -> None:
    """A spec written as a path that does not exist is refused before supar sees it (supar printed
    "Downloading: /nonexistent/x ..." as if it were a published model name)."""
    from prior.errors import ResourceError
    from prior.pipeline.parsers import get_parser

    with pytest.raises(ResourceError) as caught:
        get_parser(spec, "cpu")
    assert "does not exist" in str(caught.value) and "\n" not in str(caught.value)
    out, err = capfd.readouterr()
    assert "Downloading" not in out + err
