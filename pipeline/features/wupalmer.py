"""Fast Wu-Palmer similarity over WordNet synsets, equal to nltk's ``Synset.wup_similarity``.

nltk recomputes everything per call and re-reads a file header (``get_version()``) every time:
0.8–4.7 ms per word pair. `WuPalmer` precomputes, once per synset, what nltk's algorithm uses
and reproduces nltk (≥ 3.6) to the last bit, quirks included:

- ``need_root`` is true unless both synsets are nouns (WordNet ≠ 1.6). Then a fake root
  ``*ROOT*`` (min and max depth 0) joins the common hypernyms: verbs of different trees, and
  adjectives and adverbs (no hypernyms at all), get a value through it; so do synsets of
  different parts of speech.
- The lowest common subsumer is chosen with ``use_min_depth=True``: among common hypernyms
  (each synset counts as its own hypernym) those of the greatest *minimum* depth; ties are
  sorted by synset name (``*ROOT*`` sorts before letters) and the first synset itself wins if
  tied, else the first by name.
- depth = max_depth(lcs) + 1; len_k = nltk's ``shortest_path_distance(s_k, lcs)``: the fewest
  edges of a path going up from s_k and up from lcs to a shared ancestor (0 if s_k is lcs; via
  the fake root, the largest BFS distance from s_k to any of its ancestors + 1).
- wup = 2·depth / (len_1 + len_2 + 2·depth); None when there is no common subsumer.

Objects of this class hold a loaded WordNet: create them in a worker (``setup()``), never
pickle them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ROOT = "*ROOT*"
ROOT_ID = -1
# An ancestor is coded (LEVELS - min_depth) << SHIFT | id: the smallest code of a set of
# ancestors is one of greatest minimum depth, found by the C-level min() of a frozenset.
SHIFT = 22
MASK = (1 << SHIFT) - 1
LEVELS = 1 << 10
_HIERARCHY = {"n": "n", "v": "v", "a": "a", "s": "a", "r": "r"}


class SynsetInfo:
    """What nltk's algorithm needs of one synset; ancestors are integer ids of `WuPalmer`."""

    __slots__ = ("id", "name", "pos", "hierarchy", "noun", "dist", "ecc", "spd", "anc", "unique")

    def __init__(self, id_: int, name: str, pos: str, dist: dict[int, int], min_depth: list[int]) -> None:
        self.id = id_
        self.name = name
        self.pos = pos
        self.hierarchy = _HIERARCHY[pos]
        self.noun = pos == "n"
        self.dist = dist                    # ancestor id (self included) -> BFS distance
        self.ecc = max(dist.values())       # nltk's max(path.values()) before the fake root
        self.spd: dict[int, int] = {}       # cache: ancestor id -> shortest_path_distance
        levels = [min_depth[c] for c in dist]
        self.anc = frozenset((LEVELS - m) << SHIFT | c for c, m in zip(dist, levels))
        # No two ancestors share a minimum depth: then no pair with this synset has LCS ties.
        self.unique = len(set(levels)) == len(levels)


class WuPalmer:
    """nltk-exact Wu-Palmer between synsets, with per-synset data built once per synset.

    Synset data is built from the synset's direct hypernyms' data (shortest distances,
    minimum and maximum depth follow the same recursions nltk evaluates), so each synset's
    hypernym pointers are read from nltk once.
    """

    def __init__(self, wn: Any) -> None:
        self.wn = wn
        # nltk: Synset._needs_root() is true for nouns only with WordNet 1.6.
        self.noun_needs_root = wn.get_version() == "1.6"
        self._by_name: dict[str, SynsetInfo] = {}
        self._names: list[str] = []
        self._infos: list[SynsetInfo] = []
        self._min_depth: list[int] = []
        self._max_depth: list[int] = []

    # -- per synset ---------------------------------------------------------------------------
    def info(self, synset: Any) -> SynsetInfo:
        """Data of an nltk Synset (built on first use)."""
        info = self._by_name.get(synset._name)
        if info is None:
            info = self._build(synset)
        return info

    def info_by_name(self, name: str) -> SynsetInfo:
        info = self._by_name.get(name)
        if info is None:
            info = self._build(self.wn.synset(name))
        return info

    def _build(self, synset: Any) -> SynsetInfo:
        # Iterative post-order over hypernyms + instance hypernyms (no recursion limit issue).
        stack: list[tuple[Any, bool]] = [(synset, False)]
        parents_of: dict[str, list[Any]] = {}
        while stack:
            s, expanded = stack.pop()
            name = s._name
            if name in self._by_name:
                continue
            if not expanded:
                if name in parents_of:  # already scheduled on this walk (DAG re-entry)
                    continue
                parents = s.hypernyms() + s.instance_hypernyms()
                parents_of[name] = parents
                stack.append((s, True))
                stack.extend((p, False) for p in parents if p._name not in self._by_name)
                continue
            parents = [self._by_name[p._name] for p in parents_of[name]]
            id_ = len(self._names)
            dist: dict[int, int] = {id_: 0}
            for p in parents:
                for c, d in p.dist.items():
                    if d + 1 < dist.get(c, 1 << 30):
                        dist[c] = d + 1
            self._names.append(name)
            self._min_depth.append(1 + min(self._min_depth[p.id] for p in parents) if parents else 0)
            self._max_depth.append(1 + max(self._max_depth[p.id] for p in parents) if parents else 0)
            info = SynsetInfo(id_, name, s._pos, dist, self._min_depth)
            self._infos.append(info)
            self._by_name[name] = info
        return self._by_name[synset._name]

    def min_depth(self, info: SynsetInfo) -> int:
        return self._min_depth[info.id]

    def max_depth(self, info: SynsetInfo) -> int:
        return self._max_depth[info.id]

    # -- per synset pair ----------------------------------------------------------------------
    def similarity(self, name1: str, name2: str) -> float | None:
        """nltk's ``wn.synset(name1).wup_similarity(wn.synset(name2))`` (simulate_root=True)."""
        return self.wup(self.info_by_name(name1), self.info_by_name(name2))

    def wup(self, i1: SynsetInfo, i2: SynsetInfo) -> float | None:
        """Wu-Palmer of two synsets' data, as nltk computes it; None when it has no value."""
        need_root = not (i1.noun and i2.noun) or self.noun_needs_root
        common = i1.anc & i2.anc
        if common:
            m = min(common)
            best = LEVELS - (m >> SHIFT)
            if (need_root and best == 0) or not (i1.unique or i2.unique):
                sub = self._lcs_with_ties(i1, common, m, need_root and best == 0)
            else:
                sub = m & MASK
        elif need_root:
            sub = ROOT_ID
        else:
            return None
        if sub == ROOT_ID:
            # Via the fake root (max_depth 0): depth 1, each path = largest BFS distance + 1.
            return 2.0 / (i1.ecc + 1 + 1 + i2.ecc + 1 + 1)
        depth = self._max_depth[sub] + 1
        len1 = 0 if i1.id == sub else i1.spd.get(sub)
        if len1 is None:
            len1 = self._spd(i1, sub)
        len2 = 0 if i2.id == sub else i2.spd.get(sub)
        if len2 is None:
            len2 = self._spd(i2, sub)
        return (2.0 * depth) / (len1 + depth + len2 + depth)

    def max_wup(self, xs: Sequence[SynsetInfo], ys: Sequence[SynsetInfo]) -> float | None:
        """max over x in xs, y in ys of ``wup(x, y)``; None when no pair has a value."""
        best: float | None = None
        wup = self.wup
        for x in xs:
            for y in ys:
                v = wup(x, y)
                if v is not None and (best is None or v > best):
                    best = v
        return best

    def _lcs_with_ties(self, i1: SynsetInfo, common: frozenset[int], m: int, with_root: bool) -> int:
        """nltk's pick among the common hypernyms of greatest minimum depth (and the root)."""
        level = m >> SHIFT
        ties = [c & MASK for c in common if c >> SHIFT == level]
        if with_root:
            ties.append(ROOT_ID)
        if i1.id in ties:
            return i1.id
        if len(ties) == 1:
            return ties[0]
        names = self._names
        return min(ties, key=lambda t: ROOT if t == ROOT_ID else names[t])

    def _spd(self, i: SynsetInfo, sub: int) -> int:
        """nltk's shortest_path_distance(i, sub) for an ancestor ``sub`` of i.

        Up from i and up from sub to a shared ancestor, fewest edges. The fake-root route
        (ecc_i + 1 + ecc_sub + 1) never wins: going to sub itself costs at most ecc_i.
        """
        if i.id == sub:
            return 0
        di = i.dist
        value = min([di[c] + dc for c, dc in self._infos[sub].dist.items()])
        i.spd[sub] = value
        return value
