"""WordNet setup: lexnames generation, private copy, nltk loading, errors, version string."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from prior.errors import PriorError, ResourceError
from prior.pipeline.resources import wordnet as wnres

DEBIAN = wnres.DEBIAN_DIR
needs_debian = pytest.mark.skipif(not wnres._is_dict_dir(DEBIAN),
                                  reason="Debian wordnet-base is not installed")


def test_wordnet_lexnames_embedded_table() -> None:
    lines = wnres.lexnames_lines(None)
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3"
    assert lines[3] == "03\tnoun.Tops\t1"
    assert lines[29] == "29\tverb.body\t2"
    assert lines[2] == "02\tadv.all\t4"
    assert lines[44] == "44\tadj.ppl\t3"


@pytest.mark.skipif(not wnres.LEXNAMES_MAN.is_file(), reason="lexnames(5WN) man page absent")
def test_wordnet_lexnames_from_man_page_equals_table() -> None:
    assert wnres.lexnames_lines(wnres.LEXNAMES_MAN) == wnres.lexnames_lines(None)


def test_wordnet_lexnames_bad_man_page_falls_back(tmp_path: Path) -> None:
    import gzip

    page = tmp_path / "lexnames.5WN.gz"
    with gzip.open(page, "wt") as fh:
        fh.write("00\tadj.all\tall adjective clusters\n")  # one row only: not the table
    assert wnres.lexnames_lines(page) == wnres.lexnames_lines(None)


def test_wordnet_prior_home_resolved_at_call_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PRIOR_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert wnres.private_nltk_root() == tmp_path / "xdg" / "prior" / "nltk_data"
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    assert wnres.private_nltk_root() == tmp_path / "home" / "nltk_data"


@needs_debian
def test_wordnet_private_copy_is_complete_private_and_idempotent(tmp_path: Path) -> None:
    root = wnres.install_private_copy(DEBIAN, tmp_path / "nltk_data")
    target = root / "corpora" / "wordnet"
    for name in wnres.REQUIRED_FILES + ("lexnames",):
        assert (target / name).is_file(), name
    assert len((target / "lexnames").read_text().splitlines()) == 45
    for path in [root, root / "corpora", target, *target.iterdir()]:
        assert not path.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH), path
    mtime = (target / "data.noun").stat().st_mtime_ns
    assert wnres.install_private_copy(DEBIAN, tmp_path / "nltk_data") == root
    assert (target / "data.noun").stat().st_mtime_ns == mtime  # reused, not copied again
    assert not [p for p in (root / "corpora").iterdir() if p.name.startswith(".wordnet")]


def test_wordnet_missing_everywhere_names_install_commands(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setattr(wnres, "_nltk_has_wordnet", lambda paths=None: False)
    monkeypatch.setattr(wnres, "DEBIAN_DIR", tmp_path / "nowhere")
    monkeypatch.delenv(wnres.ENV_DIR, raising=False)
    with pytest.raises(ResourceError) as err:
        wnres.load_wordnet()
    message = str(err.value)
    assert "apt-get install -y --no-install-recommends wordnet-base" in message
    assert "python -m nltk.downloader wordnet" in message
    assert isinstance(err.value, PriorError) and isinstance(err.value, RuntimeError)


def test_wordnet_configured_dir_without_wordnet_is_an_error(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setattr(wnres, "_nltk_has_wordnet", lambda paths=None: False)
    monkeypatch.setenv(wnres.ENV_DIR, str(tmp_path))
    with pytest.raises(ResourceError, match=str(tmp_path)):
        wnres.load_wordnet()


@pytest.mark.slow
@needs_debian
def test_wordnet_loads_offline_from_debian_in_fresh_process(tmp_path: Path) -> None:
    """A fresh interpreter with no nltk data finds Debian's copy, installs it privately, loads."""
    env = {k: v for k, v in os.environ.items() if k not in ("NLTK_DATA", wnres.ENV_DIR)}
    env["PRIOR_HOME"] = str(tmp_path / "home")
    env["HOME"] = str(tmp_path / "user")  # no ~/nltk_data
    code = (
        "from prior.pipeline.resources.wordnet import load_wordnet, wordnet_version\n"
        "wn = load_wordnet()\n"
        "print(wn.get_version(), round(wn.synset('dog.n.01').wup_similarity(wn.synset('cat.n.01')), 3),"
        " wn.synset('dog.n.01').offset(), wordnet_version(wn))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=300).stdout.split()
    if (tmp_path / "home" / "nltk_data").exists():  # else a system nltk_data dir had WordNet
        assert (tmp_path / "home" / "nltk_data" / "corpora" / "wordnet" / "lexnames").is_file()
    assert out[:3] == ["3.0", "0.857", "2084071"]
    assert out[3].startswith("wordnet-3.0:") and len(out[3]) == len("wordnet-3.0:") + 32


def test_wordnet_loaded_reader_is_wordnet_30(wordnet) -> None:
    dog, cat = wordnet.synset("dog.n.01"), wordnet.synset("cat.n.01")
    assert wordnet.get_version() == "3.0" and dog.offset() == 2084071
    assert round(dog.wup_similarity(cat), 3) == 0.857
    assert dog.lexname() == "noun.animal"  # needs the generated lexnames file
    assert wnres.load_wordnet() is wordnet


def test_wordnet_version_is_stable(wordnet) -> None:
    v = wnres.wordnet_version(wordnet)
    assert v == wnres.wordnet_version(wordnet)
    assert v.startswith("wordnet-3.0:")


@needs_debian
def test_wordnet_version_without_nltk_equals_loaded_reader(wordnet, tmp_path: Path) -> None:
    """The fast id (files only, nltk never imported: every no-op build needs it) is the id of
    the database nltk actually loads."""
    env = {k: v for k, v in os.environ.items() if k not in ("NLTK_DATA", wnres.ENV_DIR)}
    env["HOME"] = str(tmp_path / "user")  # no ~/nltk_data
    env["PRIOR_HOME"] = str(tmp_path / "home")
    code = ("import sys\nfrom prior.pipeline.resources.wordnet import wordnet_files_dir, wordnet_version\n"
            "v = wordnet_version()\nprint(wordnet_files_dir() is not None, 'nltk' in sys.modules, v)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    if out[0] == "False":
        pytest.skip("a system nltk_data holds a zipped WordNet: only the nltk path applies")
    assert out[1] == "False"
    assert out[2] == wnres.wordnet_version(wordnet)


@needs_debian
def test_wordnet_incomplete_private_copy_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "nltk_data" / "corpora" / "wordnet"
    target.mkdir(parents=True)
    (target / "data.noun").write_text("truncated")
    wnres.install_private_copy(DEBIAN, tmp_path / "nltk_data")
    assert (target / "data.noun").stat().st_size == (DEBIAN / "data.noun").stat().st_size
    assert (target / "lexnames").is_file()
    assert sorted(p.name for p in (tmp_path / "nltk_data" / "corpora").iterdir()) == [".prior-install.lock", "wordnet"]


@needs_debian
def test_wordnet_private_copy_installed_meanwhile_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installer that finds, once it holds the lock, a complete copy that another process
    installed while it waited keeps that copy: it never moves aside a copy others may read."""
    from contextlib import contextmanager

    root = tmp_path / "nltk_data"
    done = wnres.install_private_copy(DEBIAN, tmp_path / "other")  # "the other process's" copy
    (root / "corpora").mkdir(parents=True)

    @contextmanager
    def other_process_finishes_first(path):
        os.replace(done / "corpora" / "wordnet", root / "corpora" / "wordnet")
        yield

    installs = []
    monkeypatch.setattr(wnres, "file_lock", other_process_finishes_first)
    monkeypatch.setattr(wnres, "_install", lambda *a: installs.append(a))
    before = (root / "corpora").stat().st_ino
    assert wnres.install_private_copy(DEBIAN, root) == root
    assert installs == [] and (root / "corpora").stat().st_ino == before
    assert wnres._is_dict_dir(root / "corpora" / "wordnet")


@needs_debian
def test_wordnet_concurrent_installs_and_readers(tmp_path: Path) -> None:
    """Three processes install the private copy at once and hash it right away (what the
    workers of a 2-worker build with the biaffine parser do: supar imports nltk there): all
    succeed with the same WordNet id. A smoke test of the real thing: the race it guards
    against needs unlucky timing; the test above pins the logic that prevents it."""
    code = ("import sys\n"
            "from pathlib import Path\n"
            "from prior.pipeline.resources import wordnet as w\n"
            "root = w.install_private_copy(w.DEBIAN_DIR, Path(sys.argv[1]))\n"
            "files = root / 'corpora' / 'wordnet'\n"
            "print(w._content_id(lambda name: (files / name).open('rb')))\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "nltk_data")], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
             for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    assert len({out.strip() for out, _ in outs}) == 1

