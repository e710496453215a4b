"""One parser-spec parser: ``NAME[:ARG]`` split in one place, its text given back, a malformed
spec a one-line error, and the trust judgement on the parsed spec."""

from __future__ import annotations

import pytest

from prior.errors import PriorError
from prior.featurestore.selection import recorded_spec
from prior.parser_spec import ParserSpec, ParserSpecError, loads_code


@pytest.mark.parametrize(("text", "name", "arg"), [
    ("biaffine", "biaffine", None), ("spacy:en_core_web_sm", "spacy", "en_core_web_sm"),
    ("biaffine:s3://bucket/model:v2", "biaffine", "s3://bucket/model:v2"), ("stanza", "stanza", None)])
def test_parser_spec_parses_and_gives_its_text_back(text: str, name: str, arg: str | None) -> None:
    spec = ParserSpec.parse(text)
    assert (spec.name, spec.arg) == (name, arg) and str(spec) == text
    assert spec == ParserSpec(name, arg) and hash(spec) == hash(ParserSpec(name, arg))


@pytest.mark.parametrize(("text", "why"), [("", "no parser name"), (":model", "no parser name"),
                                           ("biaffine:", "nothing after ':'"), ("spacy:", "nothing after ':'")])
def test_parser_spec_malformed_is_a_one_line_error(text: str, why: str) -> None:
    with pytest.raises(ParserSpecError) as info:
        ParserSpec.parse(text)
    message = str(info.value)
    assert isinstance(info.value, PriorError) and "\n" not in message
    assert message.startswith(f"parser spec {text!r} is malformed ({why})") and "NAME:ARG" in message
    assert loads_code(text)  # what cannot be read is never trusted


def test_parser_spec_get_parser_refuses_a_malformed_spec_before_loading() -> None:
    from prior.pipeline.parsers import fingerprint_of, get_parser

    with pytest.raises(ParserSpecError, match="malformed"):
        get_parser("biaffine:")
    with pytest.raises(ParserSpecError, match="malformed"):
        fingerprint_of(":x")


def test_parser_spec_of_a_parses_record() -> None:
    assert recorded_spec({"spec": "biaffine:dir"}) == "biaffine:dir"
    # records without a spec (format 1) are given one by `prior store upgrade`: test_store_upgrade.py
