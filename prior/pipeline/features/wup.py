"""UERBERT / BERT-Sim's word similarity matrix ``wup`` (uerbert.txt §4.1; FORMULAS.md).

For a pair (A, B) of n and m words, one component ``wup``: S, float32 n×m, S[a, b] in [0, 1].

Default (``preset="default"``), our reading of the paper:
- Proper names: the paper's rule is for "proper names of people and places". A word tagged
  PROPN, or inside a spaCy entity whose type is a *name* (``name_entities``, by default
  PERSON, NORP, FAC, ORG, GPE, LOC, PRODUCT, EVENT, WORK_OF_ART, LAW, LANGUAGE), is a proper
  name. If either word of a cell is one, S = 1 when the two surface forms are identical
  (case-sensitive), else 0; WordNet is not consulted for them. Words of DATE, TIME, PERCENT,
  MONEY, QUANTITY, ORDINAL and CARDINAL spans ("day" in "one day", "morning" in "this
  morning") are ordinary words and scored like any other. ``name_entities="any"`` treats every
  entity as a name (version 1's rule); ``""`` leaves PROPN alone.
- Lookup: WordNet synsets of the lemma, falling back to the surface form when the lemma has
  none; both lowercased (nltk's ``wn.synsets``, which applies morphy).
- POS restriction: UPOS NOUN→n, VERB→v, ADJ→a (with satellites s), ADV→r restrict the lookup
  to that part of speech; any other UPOS (AUX, DET, PRON, NUM, ADP, …) looks up all parts of
  speech (``unmapped_pos="all"``; ``"none"`` scores such words 0 instead). A word whose
  restricted lookup is empty is not in WordNet.
- S = 0 when either word is not in WordNet (e.g. "into", "the", punctuation, numbers).
- S = 1 when the two words share a synset (synonyms).
- Otherwise S = max of nltk's Wu-Palmer (``wup_similarity``, simulate_root=True, nltk's
  use_min_depth LCS) over the synset pairs of the two words that lie in the same hierarchy
  (noun, verb, adjective incl. satellites, adverb); S = 0 when there is none. Synsets of
  different parts of speech are not compared ("different POS hierarchies" have no value in the
  paper). nltk's convention stays as it is inside a hierarchy: verbs of different trees, and
  adjectives or adverbs (which have no hypernyms), meet in a simulated root, so two adjectives
  that share no synset score 0.5 = 2·1/(2+2).
The value equals, to float rounding, max over those pairs of nltk's own ``wup_similarity``.

The authors' released code (xiatingyu/Bert_sim) gives two presets, each reimplementing the
rules of one script and applied to our words (no proper-name rule, no POS restriction):

Preset ``"uerbert-code"``: the script the authors run to make the matrices for both ESIM and
BERT, ESIM/scripts/preprocessing/get_similarity.py (get_quora_similarity.py for QQP has the same
rules; UER's scripts only lay its output out on BERT's token grid):
- a word's key is its surface form lowercased with ASCII punctuation (``string.punctuation``)
  deleted; words that become empty (punctuation tokens, which the authors' whitespace
  tokenization never produced) score 0;
- no stop list; a word whose key is "oov" scores 0 (the script pads each side with an "oov"
  token and zeroes every cell of that token, a real "oov" included);
- if both keys have synsets (all POS, ``wn.synsets(key)``, duplicates kept): 1 when one key is a
  lemma name of the other's synsets (no antonym rule); else the **mean** of Wu-Palmer over all
  synset pairs in both directions (wup(x, y) and wup(y, x)), counting only pairs with a value,
  including pairs of different parts of speech (nltk ≥ 3.6 gives those a value through the
  simulated root; nltk < 3.6 gave one only when the first synset was not a noun: results on
  such pairs may differ slightly from the authors' files); if no pair has a value, 1 on exact
  key match, else 0 (unreachable with WordNet 3.0: all nouns share entity.n.01 and other
  parts of speech meet in the simulated root). Their try/except counts a Wu-Palmer call that
  raises as a value 0; no call raises in nltk ≥ 3.6, nor in our engine;
- if either key has no synsets: 1 on exact key match, else 0 ("into"/"into" scores 1).
Preset ``"uerbert-uer"``: the ``get_similarity`` function of UER/get_similarity.py, which the
repository defines but never calls. It differs from "uerbert-code" in three rules: 0 if either
key is in its stop list (36 words incl. "into", "the", "cls", "sep"), the first antonym of a
lemma counts as a synonym ("first"/"second" and "good"/"bad" score 1), and a pair of keys with
synsets but no Wu-Palmer value scores 0. It is kept because it is the only released code that
zeroes stop words, as the paper's text does ("if one word is a stop word like 'into'").
- Grid level, both presets (trainer's concern, recorded as ``params()["grid_special"] ==
  "uerbert-code"``): the "oov" pads, laid out on ``[CLS] A [SEP] B [SEP]`` by UER's script,
  become [CLS]↔B, A↔final [SEP] and the middle [SEP]'s row and column = 0 instead of the
  neutral 1 (``"neutral"``, our default). The store holds words only; special tokens are the
  token grid's business.

Speed: per-synset data comes from WordNet's precomputed hierarchy table (`WuPalmer`,
`prior.pipeline.resources.wn_hierarchy`), shared on disk by all workers; word → synset ids come from
the index files alone (no data lines parsed); word → sense set and sense-set pair → value are
cached here. Caches live per worker process: the object pickles without them (only its
settings) and loads WordNet lazily in `setup()` or on first use, through `load_wordnet_fast`:
our WNDB reader (`prior.pipeline.resources.wndb`, equal to nltk's answers), ready with the content
hash in ≈ 0.04 s instead of nltk's 2.3–3.6 s of import and load; nltk's reader only where
WordNet is a zip.
"""

from __future__ import annotations

import string
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from prior.errors import PriorError, ResourceError
from prior.layouts.kinds import PairMatrix
from prior.pipeline.features.base import FeatureBase
from prior.pipeline.features.wupalmer import SynsetInfo, WuPalmer
from prior.pipeline.parsers.base import Parse
from prior.pipeline.resources.wn_hierarchy import table_for
from prior.pipeline.resources.wordnet import load_wordnet_fast, wordnet_version

UPOS_TO_WN = {"NOUN": "n", "VERB": "v", "ADJ": "a", "ADV": "r"}
# spaCy's English entity types (OntoNotes 5): names, and the others (dates, times, numbers).
NAME_ENTITIES = ("PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART",
                 "LAW", "LANGUAGE")
OTHER_ENTITIES = ("DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL")
# The stop list of UER/get_similarity.py, verbatim.
UERBERT_STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with", "am", "cls", "sep",
})


@dataclass(frozen=True)
class CodeRules:
    """Where the authors' two scoring scripts differ (the rest is shared, see the docstring)."""

    script: str                         # the file whose rules these are
    zero_keys: frozenset[str]           # keys that score 0 against everything
    first_antonym_is_synonym: bool
    no_value: str                       # both keys have synsets, no wup value: "exact-match" | "zero"


CODE_PRESETS = {
    "uerbert-code": CodeRules("ESIM/scripts/preprocessing/get_similarity.py", frozenset({"oov"}),
                              first_antonym_is_synonym=False, no_value="exact-match"),
    "uerbert-uer": CodeRules("UER/get_similarity.py", UERBERT_STOPWORDS,
                             first_antonym_is_synonym=True, no_value="zero"),
}
PRESETS = ("default", *CODE_PRESETS)
_PUNCT = str.maketrans("", "", string.punctuation)
_CACHE_LIMIT = 4_000_000
# Loaded WordNet and caches, one set per process and configuration: every copy of a feature
# unpickled in the same worker process (one per Dask task) shares them.
_PROCESS_STATE: dict[tuple[Any, ...], dict[str, Any]] = {}
_PROCESS_LOCK = threading.Lock()


def _bounded_put(cache: dict[Any, Any], key: Any, value: Any, limit: int = _CACHE_LIMIT) -> None:
    """Insert, dropping the oldest half of the entries when the cache is full."""
    if len(cache) >= limit:
        for old in list(cache)[: len(cache) // 2]:
            del cache[old]
    cache[key] = value


class _SenseSet:
    """The synsets of one lookup: their data by hierarchy for the max, ids for sharing."""

    __slots__ = ("by_hierarchy", "members")

    def __init__(self, ids: Sequence[int], engine: WuPalmer) -> None:
        self.members = frozenset(ids)
        by: dict[str, dict[int, SynsetInfo]] = {}
        for id_ in ids:
            info = engine.info_by_id(id_)
            by.setdefault(info.hierarchy, {})[id_] = info
        self.by_hierarchy = {h: tuple(v.values()) for h, v in by.items()}


def resolve_name_entities(value: str | Iterable[str] | None) -> tuple[str, ...] | str:
    """The entity types whose words are proper names: a sorted tuple, or ``"any"``.

    ``None`` is the default (`NAME_ENTITIES`); a string is ``"any"`` or a comma-separated list
    (``"PERSON,GPE"``; ``""``: none, only PROPN words are names), as ``-o`` gives it.
    """
    if value is None:
        return tuple(sorted(NAME_ENTITIES))
    if isinstance(value, str):
        if value.strip() == "any":
            return "any"
        value = value.split(",")
    labels = {str(v).strip() for v in value} - {""}
    if unknown := sorted(labels - set(NAME_ENTITIES) - set(OTHER_ENTITIES)):
        raise PriorError(f"wup: unknown entity type(s) {', '.join(unknown)} in name_entities; spaCy's "
                         f"types are {', '.join(NAME_ENTITIES + OTHER_ENTITIES)} (or 'any')")
    return tuple(sorted(labels))


class _CodeWord:
    """One key of the uerbert-code and uerbert-uer presets."""

    __slots__ = ("key", "related", "stop", "synsets")

    def __init__(self, key: str, stop: bool, synsets: tuple[SynsetInfo, ...],
                 related: frozenset[str]) -> None:
        self.key, self.stop, self.synsets, self.related = key, stop, synsets, related


class WupFeature(FeatureBase):
    """The ``wup`` feature (scope "pair"): S, float32 n×m, for each (A, B) pair of parses."""

    name = "wup"
    version = 2
    scope = "pair"
    components = ("wup",)
    layout = PairMatrix("wup", neutral=1.0)  # the grid is 1 off the A×B blocks (attention unchanged)

    def __init__(self, preset: str = "default", unmapped_pos: str = "all",
                 name_entities: str | Sequence[str] | None = None,
                 wordnet_dir: str | None = None) -> None:
        if preset not in PRESETS:
            raise PriorError(f"wup: unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
        if unmapped_pos not in ("all", "none"):
            raise PriorError(f"wup: unmapped_pos must be 'all' or 'none', not {unmapped_pos!r}")
        if preset != "default" and (unmapped_pos != "all" or name_entities is not None):
            raise PriorError(f"wup: unmapped_pos and name_entities apply to the default preset only; "
                             f"the {preset} preset has no POS restriction and no proper-name rule")
        self.preset = preset
        self.unmapped_pos = unmapped_pos
        self.name_entities = resolve_name_entities(name_entities) if preset == "default" else ()
        self._rules = CODE_PRESETS.get(preset)
        self.wordnet_dir = wordnet_dir  # where to find WordNet: not a parameter (its hash is)
        self._version: str | None = None
        self._reset()

    # -- pickling: settings only; caches are per process ------------------------------------
    def _reset(self) -> None:
        self._wn: Any = None
        self._engine: WuPalmer | None = None
        self._lock = threading.RLock()
        self._words: dict[tuple[str, str, str, str], int] = {}   # word tuple -> sense-set id
        self._lookups: dict[tuple[str, str | None], int] = {}   # (form, pos) -> sense-set id
        self._sets: list[_SenseSet | None] = [None]               # id 0 = not in WordNet
        self._set_ids: dict[tuple[int, ...], int] = {}
        self._cells: dict[int, float] = {}                        # (id_a << 32 | id_b) -> S
        self._code_words: dict[str, int] = {}
        self._code_info: list[_CodeWord] = []

    def __getstate__(self) -> dict[str, Any]:
        return {"preset": self.preset, "unmapped_pos": self.unmapped_pos,
                "name_entities": self.name_entities, "wordnet_dir": self.wordnet_dir,
                "_version": self._version}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._rules = CODE_PRESETS.get(self.preset)
        self._reset()

    # -- Feature protocol ----------------------------------------------------------------------
    def setup(self) -> None:
        """Load WordNet once per process (idempotent) and attach the process-wide caches.

        Raises `ResourceError` when this process's WordNet differs from the one the
        parameters (``params()["wordnet"]``) were computed with, e.g. on another worker.
        """
        if self._wn is not None:
            return
        key = (self.preset, self.unmapped_pos, self.name_entities, self.wordnet_dir)
        with _PROCESS_LOCK:
            state = _PROCESS_STATE.get(key)
            if state is None:
                wn, version = load_wordnet_fast(self.wordnet_dir)
                fresh = WupFeature.__new__(WupFeature)
                fresh._reset()
                state = {name: getattr(fresh, name) for name in (
                    "_lock", "_words", "_lookups", "_sets", "_set_ids", "_cells", "_code_words",
                    "_code_info")}
                state |= {"_wn": wn, "_engine": WuPalmer(wn, table_for(wn, version)),
                          "_wordnet_version": version}
                _PROCESS_STATE[key] = state
        found = state["_wordnet_version"]
        self._check_version(found)
        self.__dict__.update({k: v for k, v in state.items() if k != "_wordnet_version"})
        self._version = found

    def check_resources(self) -> None:
        """Before a build writes anything (`prior.pipeline.preflight`): `ResourceError` when this
        process finds no WordNet, or another one than the parameters were resolved with. Reads
        the database files' content hash only; WordNet itself is loaded by `setup()`."""
        self._check_version(wordnet_version(directory=self.wordnet_dir))

    def _check_version(self, found: str) -> None:
        if self._version is not None and self._version != found:
            raise ResourceError(
                f"wup: this process's WordNet is {found}, but the feature's parameters were "
                f"resolved with {self._version}; install the same WordNet on every worker")

    def annotations(self) -> frozenset[str]:
        """The default preset: lemmas and UPOS (WordNet lookup, part of speech, PROPN names), and
        entity types where some are names (``name_entities``); the uerbert presets: words only."""
        if self.preset != "default":
            return frozenset()
        return frozenset({"lemmas", "upos"} | ({"ents"} if self.name_entities else set()))

    def params(self) -> dict[str, Any]:
        """Every setting that changes S, resolved; includes the WordNet content hash."""
        if self._version is None:
            self._version = wordnet_version(directory=self.wordnet_dir)
        common = {"preset": self.preset, "wordnet": self._version, "simulate_root": True,
                  "use_min_depth": True}
        if self.preset == "default":
            return common | {
                "aggregate": "max",
                "synonyms": "shared-synset",
                "lookup": ["lemma", "surface"],
                "lowercase": True,
                "pos_restriction": "upos",
                "upos_map": dict(UPOS_TO_WN),
                "unmapped_pos": self.unmapped_pos,
                "cross_hierarchy": "no-value",
                "proper_names": {"upos": ["PROPN"], "match": "identical-surface",
                                 "entities": (self.name_entities if self.name_entities == "any"
                                              else list(self.name_entities))},
                "stopwords": [],
                "no_synsets": "zero",
                "grid_special": "neutral",
            }
        rules = self._rules
        assert rules is not None
        return common | {
            "script": rules.script,
            "aggregate": "mean-both-directions",
            "synonyms": "lemma-name-or-first-antonym" if rules.first_antonym_is_synonym else "lemma-name",
            "lookup": ["surface-lowercase-strip-ascii-punctuation"],
            "lowercase": True,
            "pos_restriction": "none",
            "cross_hierarchy": "nltk",
            "proper_names": None,
            "stopwords": sorted(rules.zero_keys),
            "no_synsets": "exact-match",
            "no_wup_value": rules.no_value,
            "empty_after_strip": "zero",
            "grid_special": "uerbert-code",
        }

    def compute(self, items: Sequence[tuple[Parse, Parse]]) -> list[dict[str, np.ndarray]]:
        self.setup()
        fn = self.matrix if self.preset == "default" else self.code_matrix
        with self._lock:  # the caches are shared by the threads of a process
            return [{"wup": fn(a, b)} for a, b in items]

    # -- default preset ------------------------------------------------------------------------
    def _lookup(self, form: str, pos: str | None) -> int:
        key = (form, pos)
        sid = self._lookups.get(key)
        if sid is None:
            sid = self._register(self._synset_ids(form, pos) if form else ())
            self._lookups[key] = sid
        return sid

    def _synset_ids(self, form: str, pos: str | None) -> tuple[int, ...]:
        """Table ids of ``wn.synsets(form, pos)``, in its order; our reader answers from its
        index files alone, without parsing the synsets' data lines."""
        assert self._engine is not None
        return tuple(self._engine.synset_id(p, o) for p, o in self._wn.synset_addresses(form, pos))

    def _register(self, ids: tuple[int, ...]) -> int:
        if not ids:
            return 0
        sid = self._set_ids.get(ids)
        if sid is None:
            assert self._engine is not None
            sid = len(self._sets)
            self._sets.append(_SenseSet(ids, self._engine))
            self._set_ids[ids] = sid
        return sid

    def word_senses(self, word: str, lemma: str, upos: str, ent: str) -> int:
        """Sense-set id of a word (0: not in WordNet), or -1 for a proper name."""
        key = (word, lemma, upos, ent)
        sid = self._words.get(key)
        if sid is None:
            names = self.name_entities
            if upos == "PROPN" or (ent and (names == "any" or ent in names)):
                sid = -1
            else:
                pos = UPOS_TO_WN.get(upos)
                if pos is None and self.unmapped_pos == "none":
                    sid = 0
                else:
                    sid = self._lookup(lemma.lower(), pos) or self._lookup(word.lower(), pos)
            _bounded_put(self._words, key, sid)
        return sid

    def sense_similarity(self, sid_a: int, sid_b: int) -> float:
        """S for two words with sense sets (ids > 0): 1 if they share a synset, else max wup."""
        key = sid_a << 32 | sid_b
        value = self._cells.get(key)
        if value is not None:
            return value
        a, b = self._sets[sid_a], self._sets[sid_b]
        assert a is not None and b is not None and self._engine is not None
        if a.members & b.members:
            value = 1.0
        else:
            best = 0.0
            for hierarchy, infos_a in a.by_hierarchy.items():
                infos_b = b.by_hierarchy.get(hierarchy)
                if infos_b:
                    v = self._engine.max_wup(infos_a, infos_b)
                    if v is not None and v > best:
                        best = v
            value = best
        _bounded_put(self._cells, key, value)
        return value

    def matrix(self, a: Parse, b: Parse) -> np.ndarray:
        """S for one pair under the default preset."""
        self.setup()
        sa = [self.word_senses(*word) for word in zip(a.words, a.lemmas, a.upos, a.ents)]
        sb = [self.word_senses(*word) for word in zip(b.words, b.lemmas, b.upos, b.ents)]
        out = np.zeros((len(sa), len(sb)), dtype=np.float32)
        content_b = [(j, s) for j, s in enumerate(sb) if s > 0]
        proper_b = [j for j, s in enumerate(sb) if s < 0]
        for i, s in enumerate(sa):
            wi = a.words[i]
            if s < 0:
                out[i] = [wi == wj for wj in b.words]
                continue
            row = out[i]
            for j in proper_b:
                row[j] = wi == b.words[j]
            if s > 0:
                for j, t in content_b:
                    row[j] = self.sense_similarity(s, t)
        return out

    # -- uerbert-code and uerbert-uer presets ------------------------------------------------
    def _code_word(self, word: str) -> int:
        key = word.lower().translate(_PUNCT)
        idx = self._code_words.get(key)
        if idx is None:
            rules = self._rules
            assert rules is not None and self._engine is not None
            synsets = self._wn.synsets(key) if key else []
            related: set[str] = set()
            for syn in synsets:
                for lemma in syn.lemmas():
                    related.add(lemma.name())
                    if rules.first_antonym_is_synonym:
                        antonyms = lemma.antonyms()
                        if antonyms:
                            related.add(antonyms[0].name())
            idx = len(self._code_info)
            infos = tuple(self._engine.info(s) for s in synsets)
            self._code_info.append(_CodeWord(key, key in rules.zero_keys, infos, frozenset(related)))
            self._code_words[key] = idx
        return idx

    def code_similarity(self, word_a: str, word_b: str) -> float:
        """One cell of a code preset (the authors' per word pair rules)."""
        self.setup()
        with self._lock:
            return self._code_cell(self._code_word(word_a), self._code_word(word_b))

    def _code_cell(self, ia: int, ib: int) -> float:
        key = ia << 32 | ib
        value = self._cells.get(key)
        if value is not None:
            return value
        a, b = self._code_info[ia], self._code_info[ib]
        if not a.key or not b.key or a.stop or b.stop:
            value = 0.0
        elif a.synsets and b.synsets:
            if b.key in a.related or a.key in b.related:
                value = 1.0
            else:
                assert self._engine is not None
                sim = self._engine.wup
                # Two running sums, as the authors' code keeps them (same float rounding).
                total1, total2, count1, count2 = 0.0, 0.0, 0, 0
                for x in a.synsets:
                    for y in b.synsets:
                        v1 = sim(x, y)
                        v2 = sim(y, x)
                        if v1 is not None:
                            total1 += v1
                            count1 += 1
                        if v2 is not None:
                            total2 += v2
                            count2 += 1
                if count1 + count2:
                    value = (total1 + total2) / (count1 + count2)
                else:  # unreachable with WordNet 3.0 (see the module docstring)
                    assert self._rules is not None
                    value = float(self._rules.no_value == "exact-match" and a.key == b.key)
        else:
            value = 1.0 if a.key == b.key else 0.0
        _bounded_put(self._cells, key, value)
        return value

    def code_matrix(self, a: Parse, b: Parse) -> np.ndarray:
        """S for one pair under a code preset (word grid only; no [CLS]/[SEP])."""
        self.setup()
        ia = [self._code_word(w) for w in a.words]
        ib = [self._code_word(w) for w in b.words]
        cell = self._code_cell
        return np.array([[cell(x, y) for y in ib] for x in ia], dtype=np.float32).reshape(len(ia), len(ib))
