"""Fast Wu-Palmer similarity over WordNet synsets, equal to nltk's ``Synset.wup_similarity``.

nltk recomputes everything per call and re-reads a file header (``get_version()``) every time:
0.8–4.7 ms per word pair. `WuPalmer` reads what nltk's algorithm uses per synset (ancestors
with their shortest distances, minimum and maximum depth) from the precomputed hierarchy table
(`prior.pipeline.resources.wn_hierarchy`, built once per machine and memory-mapped by every process)
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

Objects of this class hold a loaded WordNet and the mapped table: create them in a worker
(``setup()``), never pickle them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prior.errors import ResourceError
from prior.pipeline.resources.wn_hierarchy import FILE_POS, SS_TYPES, HierarchyTable, table_for

ROOT = "*ROOT*"
ROOT_ID = -1
# An ancestor is coded (LEVELS - min_depth) << SHIFT | id: the smallest code of a set of
# ancestors is one of greatest minimum depth, found by the C-level min() of a frozenset.
SHIFT = 22
MASK = (1 << SHIFT) - 1
LEVELS = 1 << 10
_HIERARCHY = {"n": "n", "v": "v", "a": "a", "s": "a", "r": "r"}


class SynsetInfo:
    """What nltk's algorithm needs of one synset; ancestors are synset ids of the table."""

    __slots__ = ("anc", "dist", "ecc", "hierarchy", "id", "noun", "pos", "spd", "unique")

    def __init__(self, id_: int, pos: str, dist: dict[int, int], min_depth: Sequence[int]) -> None:
        self.id = id_
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
    """nltk-exact Wu-Palmer between synsets of a loaded WordNet reader (ours or nltk's).

    Per-synset data comes from the precomputed hierarchy table
    (`prior.pipeline.resources.wn_hierarchy`: ancestors, distances, depths for every synset, shared
    on disk by all processes) and is turned into a `SynsetInfo` on first use. Synset names,
    needed only to break ties between common hypernyms, are read from the reader when asked.
    """

    def __init__(self, wn: Any, table: HierarchyTable | None = None) -> None:
        self.wn = wn
        self.table = table if table is not None else table_for(wn)
        # nltk: Synset._needs_root() is true for nouns only with WordNet 1.6.
        self.noun_needs_root = wn.get_version() == "1.6"
        self._ids = self.table.address_map()
        self._infos: list[SynsetInfo | None] = [None] * len(self.table)
        self._names: dict[int, str] = {}
        self._min_depth: list[int] = self.table.min_depth.tolist()
        self._max_depth: list[int] = self.table.max_depth.tolist()
        self._ss_type: list[str] = [SS_TYPES[c] for c in self.table.ss_type.tolist()]

    # -- per synset ---------------------------------------------------------------------------
    def synset_id(self, pos: str, offset: int) -> int:
        """The table id of the synset at ``offset`` of the data file of ``pos`` (s: adjectives)."""
        try:
            return self._ids[("a" if pos == "s" else pos, offset)]
        except KeyError:
            raise ResourceError(f"WordNet synset {pos} {offset:08d} is not in the hierarchy table of "
                                f"{self.table.wordnet}") from None

    def info(self, synset: Any) -> SynsetInfo:
        """Data of a reader's Synset."""
        return self.info_by_id(self.synset_id(synset.pos(), synset.offset()))

    def info_by_name(self, name: str) -> SynsetInfo:
        return self.info(self.wn.synset(name))

    def info_by_id(self, id_: int) -> SynsetInfo:
        info = self._infos[id_]
        if info is None:
            ids, dists = self.table.ancestors(id_)
            info = self._infos[id_] = SynsetInfo(id_, self._ss_type[id_], dict(zip(ids, dists)), self._min_depth)
        return info

    def name(self, id_: int) -> str:
        """nltk's name of a synset id (``dog.n.01``), read from the reader once."""
        name = self._names.get(id_)
        if name is None:
            pos = FILE_POS[int(self.table.file_pos[id_])]
            name = self._names[id_] = self.wn.synset_from_pos_and_offset(pos, int(self.table.offset[id_])).name()
        return name

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
        return min(ties, key=lambda t: ROOT if t == ROOT_ID else self.name(t))

    def _spd(self, i: SynsetInfo, sub: int) -> int:
        """nltk's shortest_path_distance(i, sub) for an ancestor ``sub`` of i.

        Up from i and up from sub to a shared ancestor, fewest edges. The fake-root route
        (ecc_i + 1 + ecc_sub + 1) never wins: going to sub itself costs at most ecc_i.
        """
        if i.id == sub:
            return 0
        di = i.dist
        value = min([di[c] + dc for c, dc in self.info_by_id(sub).dist.items()])
        i.spd[sub] = value
        return value
