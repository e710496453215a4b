"""The best single-root dependency tree of a score matrix, in O(n²) work per contraction round.

supar's decoder (``MatrixTree(...).argmax`` → ``supar.structs.fn.mst``) runs Chu-Liu-Edmonds in
Python, one cycle at a time with a Python loop over the nodes for each cycle search, and for a
tree with several roots runs it again once per root: fine for sentences of tens of words, but
a 1,000-word sentence whose greedy heads are not a tree took 25 s and 2,000 words minutes
(growing like n³ and faster). :func:`best_tree` gives the same trees with numpy:

- **One root** as supar decides it: the best arborescence; where it gives the root token
  several words, the best of the arborescences that allow only one of those words under the
  root, each in turn (scores compared in float64).
- **All cycles at once**: each round takes every word's best head, finds every cycle of that
  head graph, and contracts all of them together (Chu-Liu-Edmonds' update: an arc entering a
  cycle at v counts its score less that of v's head in the cycle), vectorized over the whole
  matrix; the rounds stop when the heads form a tree, then the contractions are undone in
  reverse. A round costs O(n²) and most texts need a few rounds.

Ties (equal scores) go to the lower index, as numpy's and torch's argmax do. ``bench`` and the
tests compare it with supar's decoder on random matrices and the bundled treebank slice.
"""

from __future__ import annotations

import numpy as np

__all__ = ["best_tree", "best_trees"]


def _best_arc(row: np.ndarray, top: np.ndarray, node: int) -> tuple[int, float]:
    """The best source of an arc into ``node`` from outside it, and its score: the one O(n)
    step that :func:`_arborescence` takes once per node it makes (at most 2n)."""
    row = np.where(top == node, -np.inf, row)
    u = int(row.argmax())
    return u, float(row[u])


def _arborescence(scores: np.ndarray) -> np.ndarray:
    """The best arborescence rooted at 0 of ``scores`` (scores[d, h]: arc h → d; row 0 and the
    diagonal are not arcs), by Tarjan's contraction with Camerini et al.'s expansion: O(n²).

    Contraction: a path of nodes, each taking its best incoming arc from outside itself; when
    that arc closes a cycle, the cycle becomes one new node whose incoming scores are, per
    source, the best over its members of (score − the member's chosen arc). A path that reaches
    the root is done and another starts. Expansion: each top node's arc is final; the nodes of
    the cycles it enters are freed, and each keeps the arc it chose inside its cycle."""
    n = len(scores)
    incoming: dict[int, np.ndarray] = {}  # node -> best (adjusted) score from each original source
    dependent: dict[int, np.ndarray] = {}  # node -> the original word each of those arcs enters
    top = np.arange(n)  # original node -> the node (original or contracted) it is part of now
    chosen: dict[int, tuple[int, int, float]] = {}  # node -> (source, original dependent, score)
    parent: dict[int, int] = {}
    members: dict[int, list[int]] = {}
    after = n  # the next new node's id
    for start in range(1, n):
        if int(top[start]) in chosen:
            continue
        a = int(top[start])
        path = [a]
        while True:
            u, score = _best_arc(incoming[a] if a in incoming else scores[a], top, a)
            d = int(dependent[a][u]) if a in dependent else a
            chosen[a] = (u, d, score)
            b = int(top[u])
            if b == 0 or b not in path:
                if b == 0 or b in chosen:  # reached the root, or a finished path
                    break
                path.append(b)
                a = b
                continue
            cycle = path[path.index(b):]  # b … a, each taking its arc from the next
            c, after = after, after + 1
            rows = np.stack([(incoming[m] if m in incoming else scores[m]) - chosen[m][2] for m in cycle])
            pick = rows.argmax(0)
            incoming[c] = rows[pick, np.arange(n)]
            dependent[c] = np.stack([dependent[m] if m in dependent else np.full(n, m) for m in cycle])[pick, np.arange(n)]
            for m in cycle:
                parent[m] = c
                incoming.pop(m, None)
                dependent.pop(m, None)
            members[c] = cycle
            top[np.isin(top, cycle)] = c
            del path[path.index(b):]
            path.append(c)
            a = c
    return _expand(n, chosen, parent, members)


def _expand(n: int, chosen: dict[int, tuple[int, int, float]], parent: dict[int, int],
            members: dict[int, list[int]]) -> np.ndarray:
    """Heads from the contraction's choices: each top node's arc is final; the cycles it enters
    are freed, and each of their members keeps the arc it chose inside its cycle."""
    heads = np.zeros(n, dtype=np.int64)
    todo = [v for v in chosen if v not in parent]  # the top nodes
    while todo:
        v = todo.pop()
        source, word, _ = chosen[v]
        heads[word] = source
        u = word  # free the cycles the arc enters, from the word up to v
        while u in parent:
            p = parent.pop(u)
            todo.extend(m for m in members[p] if m != u)
            for m in members[p]:
                parent.pop(m, None)
            u = p
    return heads


def best_tree(scores: np.ndarray) -> np.ndarray:
    """Heads (n+1; position 0 is the root token, heads[0] = 0) of the best single-root tree
    of ``scores`` ((n+1) × (n+1), scores[d, h] the score of head h for word d; row 0 and the
    diagonal are ignored), decided as supar decides it: the best arborescence, and where it
    gives the root several words, the best of the trees with each of those words as the only
    root word (the first of equal scores)."""
    s = np.array(scores, dtype=np.float64)
    n = len(s)
    if n <= 2:
        return np.zeros(n, dtype=np.int64)
    s[0] = -np.inf
    np.fill_diagonal(s, -np.inf)
    tree = _arborescence(s)
    roots = np.flatnonzero(tree[1:] == 0) + 1
    if len(roots) < 2:
        return tree
    best, best_score = tree, -np.inf
    words = np.arange(1, n)
    for root in roots.tolist():
        one = s.copy()
        one[1:, 0] = -np.inf
        one[root, 0] = s[root, 0]
        candidate = _arborescence(one)
        score = float(one[words, candidate[1:]].sum())
        if score > best_score:
            best, best_score = candidate, score
    return best


def best_trees(scores: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """:func:`best_tree` of each sentence of a batch: ``scores`` (B, n, n) as supar masks them,
    ``lens`` (B,) the word counts; heads (B, n), 0 past each sentence's words."""
    out = np.zeros(scores.shape[:2], dtype=np.int64)
    for i, length in enumerate(lens.tolist()):
        out[i, : length + 1] = best_tree(scores[i, : length + 1, : length + 1])
    return out
