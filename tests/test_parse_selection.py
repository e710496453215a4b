"""Which parse a read uses: the entry's for a feature, the default parser's (or `--parser`'s)
for a read without a feature, the recorded one for a checkpoint; never "the latest parse".

The repro: SICK parsed by the default parser, a bert-mini trained on it, then MRPC parsed by
spaCy (now the store's latest parse); bert-mini still trains and evaluates on SICK, and
`prior embed train` reads the default parser's parse.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from prior.featurestore import open_store
from prior.featurestore.selection import ParseSelectionError, recorded_parsers, select_parse
from tests.cli_run import cli, cli_error
from tests.trainers_fixtures import tiny_backbone


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("parsesel")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        mp.setenv("PRIOR_NO_PROGRESS", "1")
        cli("build", "--dataset", "sick", "--split", "train,test", "--features", "sdoi", "--limit", 6,
            "--workers", 0, "--store", root / "store")
    return root


def _parses(store_path: Path) -> dict[str, str | None]:
    return recorded_parsers(open_store(store_path, create=False))


def test_issue28_bert_trains_and_evals_after_another_parser_is_built(home: Path, monkeypatch) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(home / "home"))
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "1")
    store = home / "store"
    backbone = tiny_backbone(home / "backbone")
    common = ["--backbone", backbone, "--store", store, "--epochs", 1, "--batch-size", 4, "--max-length", 64,
              "--no-progress"]
    (default_parse,) = _parses(store)
    cli("train", "bert-mini", "--dataset", "sick", "--output", home / "before", *common)
    cli("build", "--dataset", "mrpc", "--split", "train", "--limit", 5, "--parser", "spacy", "--features", "sdoi",
        "--workers", 0, "--store", store)
    parses = _parses(store)
    assert list(parses.values())[-1] == "spacy"  # the latest parse is spaCy's, of MRPC only
    cli("train", "bert-mini", "--dataset", "sick", "--output", home / "after", *common)
    meta = json.loads((home / "after" / "best" / "prior.json").read_text())
    assert meta["fingerprints"]["train"]["parse"] == default_parse
    out = cli("eval", home / "before", "--dataset", "sick", "--split", "test")
    assert "accuracy=" in out.splitlines()[-1]
    # MRPC has no parse of the default parser: the error names --parser spacy, which works
    err = cli_error("train", "bert-mini", "--dataset", "mrpc", "--output", home / "mrpc", *common)
    assert "10 of the 10 sentences of mrpc/train are not in the parse of parser biaffine" in err
    assert "--parser spacy" in err and "prior build --dataset mrpc" in err
    cli("train", "bert-mini", "--dataset", "mrpc", "--parser", "spacy", "--output", home / "mrpc", *common)
    meta = json.loads((home / "mrpc" / "best" / "prior.json").read_text())
    assert parses[meta["fingerprints"]["train"]["parse"]] == "spacy"
    # the printed build line parses MRPC with the default parser, as printed
    line = next(x.strip() for x in err.splitlines() if x.strip().startswith("prior build"))
    cli(*shlex.split(line)[1:], "--workers", 0)
    cli("train", "bert-mini", "--dataset", "mrpc", "--output", home / "mrpc-default", *common)
    # --parse names one parse by its id, as `describe_parses` offers when --parser cannot
    spacy_parse = next(p for p, spec in parses.items() if spec == "spacy")
    cli("train", "bert-mini", "--dataset", "mrpc", "--parse", spacy_parse[:12], "--output", home / "mrpc-id",
        *common)
    meta = json.loads((home / "mrpc-id" / "best" / "prior.json").read_text())
    assert meta["fingerprints"]["train"]["parse"] == spacy_parse


def test_embed_train_reads_the_default_parse(home: Path, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(home / "home"))
    store = home / "store"
    opened = open_store(store, create=False)
    parses = recorded_parsers(opened)
    default = next(p for p, spec in parses.items() if spec in (None, "biaffine"))
    sentences = len(opened.parsed_keys(default))
    flags = ["--store", store, "--dim", 8, "--epochs", 1, "--min-count", 1]
    out = cli("embed", "train", "--out", tmp_path / "d.vec", *flags)
    assert f"read parse {default[:12]} (parser" in out and f"{sentences} sentences" in out
    if "spacy" in parses.values():
        spacy = next(p for p, spec in parses.items() if spec == "spacy")
        out = cli("embed", "train", "--out", tmp_path / "s.vec", "--parser", "spacy", *flags)
        assert f"read parse {spacy[:12]} (parser spacy): {len(opened.parsed_keys(spacy))} sentences" in out
    err = cli_error("embed", "train", "--out", tmp_path / "x.vec", "--parser", "biaffine:nowhere", *flags)
    assert "holds no parse of parser biaffine:nowhere" in err and "parses present" in err


def test_select_parse_never_falls_back_to_the_latest(home: Path) -> None:
    store = open_store(home / "store", create=False)
    rows = store.pair_rows("sick", "test")
    keys = rows["key_a"].to_list() + rows["key_b"].to_list()
    (default,) = [p for p, spec in recorded_parsers(store).items() if spec in (None, "biaffine")]
    assert select_parse(store, keys, dataset="sick", split="test") == default
    assert select_parse(store, keys, parse=default[:10]) == default
    with pytest.raises(ParseSelectionError, match="holds no parse of parser biaffine:x"):
        select_parse(store, keys, parser="biaffine:x", dataset="sick", split="test")
