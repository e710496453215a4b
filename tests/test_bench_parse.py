"""The parse benchmarks run end to end on a few sentences (so they cannot rot): the profile's
stages add up to the parser's own path and give its parses, and the spaCy kernel comparison
counts its fields."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(script: str, out: Path, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, str(ROOT / "bench" / script), *args, "--out", str(out)], check=True, cwd=ROOT,
                   env=env, capture_output=True, text=True, timeout=600)
    (written,) = out.glob("*.json")
    return json.loads(written.read_text(encoding="utf-8"))


def test_bench_parse_profile_runs_the_parsers_own_path(tmp_path: Path, shared_data: Path) -> None:
    result = _run("parse_profile.py", tmp_path, "--limit", "40", "--chunk", "20", "--skip-startup",
                  "--data-dir", str(shared_data))
    names = {row["component"] for row in result["components"]}
    assert {"tokenizer", "spacy:tok2vec", "spacy:ner", "bilstm", "arc", "decode", "rel", "records"} <= names
    assert result["sentences"] == 40 and result["parse_call_equal"] is True


def test_bench_spacy_kernels_counts_every_field(tmp_path: Path, shared_data: Path) -> None:
    result = _run("spacy_kernels.py", tmp_path, "--limit", "30", "--chunk", "10", "--data-dir", str(shared_data))
    assert result["texts"] == 30 and set(result["differing_tokens"]) == {"text", "tag_", "pos_", "lemma_",
                                                                         "ent_type_", "is_sent_start"}


def test_bench_annotations_compares_each_feature_sets_parse_with_the_complete_one(tmp_path: Path,
                                                                                  shared_data: Path) -> None:
    result = _run("annotations.py", tmp_path, "--limit", "24", "--chunk", "12", "--batch-sizes", "8,256",
                  "--ner-rule", "20", "--data-dir", str(shared_data))
    rows = {row["features"]: row for row in result["feature_sets"]}
    assert rows["dep,sdoi"]["annotations"] == [] and rows["dep,sdoi,wup (complete)"]["vs_complete"] == 1.0
    assert rows["dep,sdoi,wup -o wup.name_entities="]["annotations"] == ["lemmas", "tags", "upos"]
    assert all(n == 0 for row in rows.values() for n in row["differing_sentences"].values())
    assert [row["differing_sentences"] for row in result["batch_sizes"]] == [0, 0]
    sick = next(row for row in result["ner_rule"] if row["dataset"] == "sick")
    assert sick["texts"] == 20 and sick["skippable"] >= sick["with_entities"] >= sick["with_wup_names"] >= 0
