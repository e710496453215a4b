"""Our WNDB reader against nltk's WordNet reader on the same files: same synsets, in the same
order, with the same names, relations, lemmas and antonyms."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from featurestore.errors import ResourceError
from pipeline.resources.wndb import POS_LIST, WndbReader, open_wndb

ODD_WORDS = ["dogs", "ran", "geese", "better", "best", "was", "boxes", "ladies", "Dog", "hot dog",
             "hot_dog", "", "'s", "n't", "3", "U.S.", "us", "glasses", "axes", "men", "women",
             "fishes", "lying", "agreed", "hoping", "quicker", "bluest", "dies", "ss", "grass",
             "glass", "careful", "beautifuller", "oxen", "children", "corpora", "able", "good",
             "entity", "bank", "run", "set", "eerie", "abaci", "a", "the", "into", "I"]
POSES: list[str | None] = [None, "n", "v", "a", "r", "s"]


@pytest.fixture(scope="module")
def pair(wordnet: Any) -> tuple[Any, WndbReader]:
    return wordnet, open_wndb(wordnet.root.path)


def names(synsets: list[Any]) -> list[str]:
    return [s.name() for s in synsets]


def same_synset(x: Any, y: Any) -> None:
    assert (x.name(), x.pos(), x.offset()) == (y.name(), y.pos(), y.offset())
    # nltk keeps pointers in a set (order follows the hash seed): compare as sorted lists
    assert sorted(names(x.hypernyms())) == sorted(names(y.hypernyms()))
    assert sorted(names(x.instance_hypernyms())) == sorted(names(y.instance_hypernyms()))
    assert x.lemma_names() == y.lemma_names()
    assert [[a.name() for a in lx.antonyms()] for lx in x.lemmas()] == \
           [[a.name() for a in ly.antonyms()] for ly in y.lemmas()]


def sample_lemmas(reader: WndbReader, per_pos: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [w for p in POS_LIST for w in rng.sample(sorted(reader._index[p]), per_pos)]


def test_wndb_synsets_equal_nltk_on_odd_and_inflected_words(pair: tuple[Any, WndbReader]) -> None:
    nltk_wn, ours = pair
    for word in ODD_WORDS:
        for pos in POSES:
            expected, got = nltk_wn.synsets(word, pos), ours.synsets(word, pos)
            assert names(got) == names(expected), (word, pos)
            for x, y in zip(expected, got):
                same_synset(x, y)


def test_wndb_synsets_equal_nltk_on_sampled_lemmas(pair: tuple[Any, WndbReader]) -> None:
    nltk_wn, ours = pair
    for word in sample_lemmas(ours, 400):
        for pos in POSES:
            assert names(ours.synsets(word, pos)) == names(nltk_wn.synsets(word, pos)), (word, pos)
        for x, y in zip(nltk_wn.synsets(word), ours.synsets(word)):
            same_synset(x, y)


def test_wndb_satellites_instances_and_names(pair: tuple[Any, WndbReader]) -> None:
    nltk_wn, ours = pair
    for name in ("able.s.03", "quick.s.04", "dog.n.01", "paris.n.01", "einstein.n.01", "run.v.01", "good.a.01",
                 "well.r.01", "entity.n.01"):
        same_synset(nltk_wn.synset(name), ours.synset(name))
        assert ours.synset(name).name() == name
    assert ours.synset("Einstein.n.01") is ours.synset("einstein.n.01")  # names are case-blind
    assert ours.synset("einstein.n.01").instance_hypernyms()
    assert ours.get_version() == nltk_wn.get_version() == "3.0"
    with pytest.raises(ResourceError, match="has 7 senses, not 99"):
        ours.synset("dog.n.99")
    with pytest.raises(ResourceError, match="no lemma 'qqqx'"):
        ours.synset("qqqx.n.01")
    with pytest.raises(ResourceError, match="not a synset name"):
        ours.synset("dog")


def test_wndb_opens_without_importing_nltk(wordnet: Any) -> None:
    code = ("import sys, time\n"
            "t = time.perf_counter()\n"
            "from pipeline.resources.wndb import open_wndb\n"
            f"r = open_wndb({str(wordnet.root.path)!r})\n"
            "print(r.synsets('dogs')[0].name(), 'nltk' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.split() == ["dog.n.01", "False"]


def test_wndb_missing_and_damaged_files_name_the_file(wordnet: Any, tmp_path: Path) -> None:
    src = Path(wordnet.root.path)
    bare = tmp_path / "dict"
    shutil.copytree(src, bare)
    (bare / "index.verb").unlink()
    with pytest.raises(ResourceError, match=r"index\.verb is missing"):
        WndbReader(bare)
    shutil.copy(src / "index.verb", bare / "index.verb")
    data = bytearray((bare / "data.noun").read_bytes())
    offset = WndbReader(src).synsets("dog", "n")[0].offset()
    data[offset:offset + 8] = b"99999999"
    (bare / "data.noun").write_bytes(bytes(data))
    with pytest.raises(ResourceError, match=rf"data\.noun at offset {offset}: malformed"):
        WndbReader(bare).synsets("dog", "n")


@pytest.mark.slow
def test_wndb_every_lemma_equals_nltk(pair: tuple[Any, WndbReader]) -> None:
    """Exhaustive: every lemma of every index file, under every part of speech (minutes)."""
    nltk_wn, ours = pair
    for word in {w for p in POS_LIST for w in ours._index[p]}:
        for pos in POSES:
            assert names(ours.synsets(word, pos)) == names(nltk_wn.synsets(word, pos)), (word, pos)
