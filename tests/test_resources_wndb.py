"""Our WNDB reader against nltk's WordNet reader on the same files: same synsets in the same
order, same names, relations (in nltk's order), lemmas, antonyms, morphy, errors and version.

Every expectation comes from nltk (the ``wordnet`` fixture); words are sampled from the raw
index and exception files, read here without either reader."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from prior.errors import PriorError, ResourceError
from prior.pipeline.resources.wndb import POS_LIST, WndbReader, WordNetError, open_wndb

REPO = Path(__file__).resolve().parents[1]
POSES: list[str | None] = [None, "n", "v", "a", "r", "s"]
FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
ODD_WORDS = [
    "dogs", "ran", "geese", "better", "best", "was", "boxes", "ladies", "Dog", "DOG", "hot dog",
    "hot_dog", "Hot_Dog", "", " ", "dog ", "'s", "n't", "3", "1", "U.S.", "u.s.", "us", "glasses",
    "axes", "men", "women", "fishes", "lying", "agreed", "hoping", "quicker", "bluest", "dies", "ss",
    "grass", "glass", "boss", "careful", "beautiful", "handful", "beautifuller", "oxen", "children",
    "corpora", "abaci", "aardwolves", "churches", "able", "good", "well", "entity", "bank", "run",
    "set", "eerie", "a", "the", "into", "I", "is", "are", "been", "had", "does", "ca", "wo", "hardrock",
    "book", "saw", "leaves", "lay", "found", "axis", "dingy", "ded", "ing", "s", "es", "er", "est",
    "men's", "café", "naïve", "\u0130stanbul", "straße", "dog\tcat", "dog\ncat", "x" * 300,
    "1st", ".22", ".22_caliber", "a-bomb", "a_la_carte", "zzz", "~", "\x00",
]


@pytest.fixture(scope="module")
def pair(wordnet: Any) -> tuple[Any, WndbReader]:
    """(nltk's reader, ours) over the same WordNet files."""
    return wordnet, open_wndb(Path(wordnet.root.path))


@pytest.fixture(scope="module")
def files(wordnet: Any) -> Path:
    return Path(wordnet.root.path)


def raw_index_lemmas(directory: Path, pos: str) -> list[str]:
    """The first token of every non-license line of index.<pos>, straight from the file."""
    text = (directory / f"index.{FILES[pos]}").read_text(encoding="utf-8")
    return [line.split()[0] for line in text.splitlines() if line and not line.startswith(" ")]


def raw_exception_forms(directory: Path, pos: str) -> list[str]:
    text = (directory / f"{FILES[pos]}.exc").read_text(encoding="utf-8")
    return [line.split()[0] for line in text.splitlines() if line.strip()]


def sample(words: list[str], k: int, seed: str) -> list[str]:
    return random.Random(seed).sample(sorted(words), min(k, len(words)))


def inflections(word: str) -> list[str]:
    return [word, word + "s", word + "es", word + "ed", word + "ing", word + "er", word + "est",
            word.upper(), word.replace("_", " ")]


def names(synsets: Iterable[Any]) -> list[str]:
    return [s.name() for s in synsets]


def same_synset(x: Any, y: Any) -> None:
    """nltk synset x and our synset y agree on everything the Wu-Palmer feature reads."""
    assert (x.name(), x.pos(), x.offset()) == (y.name(), y.pos(), y.offset())
    assert (x._name, x._pos) == (y._name, y._pos)
    assert names(x.hypernyms()) == names(y.hypernyms()), x  # nltk's (set) order, same process
    assert names(x.instance_hypernyms()) == names(y.instance_hypernyms()), x
    assert x.lemma_names() == y.lemma_names()
    assert [lemma.name() for lemma in x.lemmas()] == [lemma.name() for lemma in y.lemmas()]
    assert [[(a.synset().name(), a.name()) for a in lx.antonyms()] for lx in x.lemmas()] == \
           [[(a.synset().name(), a.name()) for a in ly.antonyms()] for ly in y.lemmas()], x
    assert repr(x) == repr(y)


def assert_synsets_equal(nltk_wn: Any, ours: WndbReader, words: Iterable[str],
                         poses: Iterable[str | None] = POSES, deep: bool = True) -> int:
    """synsets(word, pos) equal for every word and pos; returns how many lists were compared."""
    seen: set[str] = set()
    count = 0
    for word in words:
        for pos in poses:
            expected, got = nltk_wn.synsets(word, pos), ours.synsets(word, pos)
            assert names(got) == names(expected), (word, pos)
            count += 1
            if deep:
                for x, y in zip(expected, got):
                    if x.name() not in seen:
                        seen.add(x.name())
                        same_synset(x, y)
    return count


def test_wndb_reads_the_real_files_by_bisection(pair: tuple[Any, WndbReader]) -> None:
    """The comparisons below exercise the fast path: every index file passed the sort check."""
    _, ours = pair
    assert all(ours._index(p).sorted for p in POS_LIST)


def test_wndb_synsets_equal_nltk_on_odd_and_inflected_words(pair: tuple[Any, WndbReader]) -> None:
    nltk_wn, ours = pair
    assert_synsets_equal(nltk_wn, ours, ODD_WORDS)
    assert_synsets_equal(nltk_wn, ours, ODD_WORDS, poses=["nv", "as", "", ("r", "n")])


def test_wndb_synsets_equal_nltk_on_sampled_lemmas(pair: tuple[Any, WndbReader], files: Path) -> None:
    """1,000 lemmas of each index file, under every part of speech, and what they lead to."""
    nltk_wn, ours = pair
    words = [w for p in POS_LIST for w in sample(raw_index_lemmas(files, p), 1000, f"lemmas-{p}")]
    assert assert_synsets_equal(nltk_wn, ours, words) == 6 * len(words)
    got = [s for w in words for s in ours.synsets(w)]
    assert {s.pos() for s in got} == {"n", "v", "a", "s", "r"}  # satellites were among them
    assert any(s.instance_hypernyms() for s in got)                 # and instances


def test_wndb_synsets_equal_nltk_on_inflections_and_exception_forms(pair: tuple[Any, WndbReader],
                                                                    files: Path) -> None:
    nltk_wn, ours = pair
    stems = [w for p in POS_LIST for w in sample(raw_index_lemmas(files, p), 150, f"stems-{p}")]
    assert_synsets_equal(nltk_wn, ours, [f for w in stems for f in inflections(w)], deep=False)
    exceptions = [w for p in POS_LIST for w in sample(raw_exception_forms(files, p), 300, f"exc-{p}")]
    assert_synsets_equal(nltk_wn, ours, exceptions)
    for word in exceptions + ODD_WORDS[:40]:
        for pos in ("n", "v", "a", "s", "r"):
            assert ours._morphy(word.lower(), pos) == nltk_wn._morphy(word.lower(), pos), (word, pos)
        for pos in (None, "n", "v", "a", "r"):
            assert ours.morphy(word, pos) == nltk_wn.morphy(word, pos), (word, pos)


def test_wndb_synset_by_name_equals_nltk(pair: tuple[Any, WndbReader], files: Path) -> None:
    nltk_wn, ours = pair
    words = [w for p in POS_LIST for w in sample(raw_index_lemmas(files, p), 100, f"names-{p}")]
    for synset in [s for w in words for s in ours.synsets(w)]:
        assert ours.synset(synset.name()) is synset                 # round trip, interned
        same_synset(nltk_wn.synset(synset.name()), synset)
    queries = ["dog.n.01", "Dog.N.01", "dog.n.1", "dog.n.00", "dog.n.-1", "dog.n.7", "good.a.03",
               "good.s.01", "able.s.03", "quick.s.04", "paris.n.01", "einstein.n.01", "run.v.01",
               "well.r.01", "entity.n.01", "a.n.01", ".22.a.01", ".22_caliber.s.01", "u.s..n.01",
               "dog.n.99", "qqqx.n.01", "dog.x.01", "dog.s.01", "hot dog.n.01"]
    queries += [f"{w}.s.01" for w in sample(raw_index_lemmas(files, "a"), 200, "sat-names")]
    for query in queries:
        try:
            expected = nltk_wn.synset(query)
        except Exception as exc:  # nltk's WordNetError: ours gives the same message
            if type(exc).__name__ != "WordNetError":
                raise
            with pytest.raises(WordNetError) as err:
                ours.synset(query)
            assert str(err.value) == str(exc), query
        else:
            same_synset(expected, ours.synset(query))
    assert ours.synset("dog.n.01") is ours.synsets("dog")[0] is ours.synsets("dogs", "n")[0]
    for bad in ("dog", "dog.n", "dog.n.x"):
        with pytest.raises(WordNetError, match="not a synset name"):
            ours.synset(bad)
    with pytest.raises(WordNetError) as err:
        ours.synsets("dog", "x")
    assert isinstance(err.value, PriorError) and isinstance(err.value, LookupError)


def test_wndb_version_equals_nltk(pair: tuple[Any, WndbReader]) -> None:
    nltk_wn, ours = pair
    assert ours.get_version() == nltk_wn.get_version() == "3.0"


def test_wndb_one_reader_per_directory_and_threads(files: Path) -> None:
    assert open_wndb(files) is open_wndb(str(files)) is open_wndb(f"{files}/../{files.name}/")
    fresh = WndbReader(files)  # not the cached one: every file still unread
    words = ["dog", "cat", "run", "good", "well", "bank", "set", "able", "fast", "light"] * 5
    results: list[list[str]] = []

    def work() -> None:
        results.append([s.name() for w in words for s in fresh.synsets(w)])

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6 and all(r == results[0] for r in results)
    assert fresh.synset("dog.n.01") is fresh.synsets("dog")[0]


def _copy(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for name in ("data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb",
                 "index.adj", "index.adv", "noun.exc", "verb.exc", "adj.exc", "adv.exc"):
        shutil.copyfile(src / name, dst / name)
    return dst


def test_wndb_unsorted_index_falls_back_to_nltks_reading(pair: tuple[Any, WndbReader], files: Path,
                                                         tmp_path: Path) -> None:
    """An index file out of order (or with a tab) is read as nltk reads it: same answers."""
    nltk_wn, _ = pair
    bare = _copy(files, tmp_path / "dict")
    lines = (bare / "index.noun").read_bytes().split(b"\n")
    header = [line for line in lines if line.startswith(b" ")]
    body = [line for line in lines if line and not line.startswith(b" ")]
    random.Random(1).shuffle(body)
    (bare / "index.noun").write_bytes(b"\n".join(header + body) + b"\n")
    adj = (bare / "index.adj").read_bytes()
    (bare / "index.adj").write_bytes(adj.replace(b"\nable a ", b"\nable\ta ", 1))
    reader = WndbReader(bare)
    assert not reader._index("n").sorted and not reader._index("a").sorted and reader._index("v").sorted
    words = [w for p in ("n", "a") for w in sample(raw_index_lemmas(files, p), 300, f"fallback-{p}")]
    assert_synsets_equal(nltk_wn, reader, words + ["able", "dogs", "hot dog", ""], deep=False)


def test_wndb_missing_and_damaged_files_name_the_file(files: Path, tmp_path: Path) -> None:
    bare = _copy(files, tmp_path / "dict")
    (bare / "index.verb").unlink()
    with pytest.raises(ResourceError, match=r"index\.verb is missing"):
        WndbReader(bare)
    shutil.copyfile(files / "index.verb", bare / "index.verb")

    offset = WndbReader(files).synset("dog.n.01").offset()
    data = bytearray((bare / "data.noun").read_bytes())
    data[offset:offset + 8] = b"99999999"
    (bare / "data.noun").write_bytes(bytes(data))
    with pytest.raises(ResourceError, match=rf"data\.noun, offset {offset}: no synset line"):
        WndbReader(bare).synsets("dog", "n")

    lines = (bare / "index.verb").read_text().split("\n")
    number = next(i for i, line in enumerate(lines, 1) if line.startswith("run v "))
    fields = lines[number - 1].split(" ")
    fields[2] = "0"  # synset count
    lines[number - 1] = " ".join(fields)
    (bare / "index.verb").write_text("\n".join(lines))
    with pytest.raises(ResourceError, match=rf"index\.verb, line {number}: malformed index line"):
        WndbReader(bare).synsets("run", "v")


def test_wndb_opens_without_importing_nltk(files: Path) -> None:
    code = ("import sys\n"
            "from prior.pipeline.resources.wndb import open_wndb\n"
            f"r = open_wndb({str(files)!r})\n"
            "print(r.synsets('dogs')[0].name(), r.get_version(), 'nltk' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO, timeout=120)
    assert out.stdout.split() == ["dog.n.01", "3.0", "False"]


def test_wndb_is_what_the_wup_feature_uses(wordnet: Any) -> None:
    from prior.pipeline.features.wup import WupFeature
    from prior.pipeline.resources import wordnet as wnres

    wn, version = wnres.load_wordnet_fast()
    assert isinstance(wn, WndbReader) and wn.directory == Path(wordnet.root.path).resolve()
    assert version == wnres.wordnet_version(wordnet)
    feature = WupFeature()
    feature.setup()
    assert isinstance(feature._wn, WndbReader) and feature._version == version


@pytest.mark.slow
def test_wndb_every_lemma_equals_nltk(pair: tuple[Any, WndbReader], files: Path) -> None:
    """Exhaustive: every lemma of every index file and every exception form, under every part
    of speech, and every synset they reach (minutes)."""
    nltk_wn, ours = pair
    words = {w for p in POS_LIST for w in raw_index_lemmas(files, p)}
    words |= {w for p in POS_LIST for w in raw_exception_forms(files, p)}
    assert assert_synsets_equal(nltk_wn, ours, sorted(words)) == 6 * len(words)
