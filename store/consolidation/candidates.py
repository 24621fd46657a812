"""Finding the pairs worth judging without comparing every pair.

Two generators, both deterministic and both about O(n log n):

* **Vectors: a random-projection forest.** Each tree splits the memories at
  the median of their projection on a random direction (seeded by tree and
  node, so every machine draws the same directions), recursively, until a
  leaf holds at most :data:`LEAF` memories; the few memories within
  :data:`SPILL` of a median go down both sides, so near neighbours that fall
  on either side of a cut still meet. Only pairs that share a leaf in one of
  :data:`TREES` trees are compared, a leaf at a time as one small matrix
  product, and only those at least ``floor`` similar come out. Cost: trees x
  (n x dim x depth + n x leaf x dim), with depth ~ log2(n / leaf).
* **Words: rare-word blocking.** Each memory is filed under its
  :data:`KEYS` rarest content words and names (rarity counted over the
  memories being compared); two memories are a candidate when they share such
  a key. A key held by more than :data:`POSTINGS` memories pairs each one
  only with its :data:`POSTINGS` neighbours in id order, so a common word
  never turns into a quadratic block. This is what contradictions and
  episodes need without vectors: their rules require shared words anyway.

Pairs come back as sorted ``(id, id)`` tuples, the smaller id first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from memvault.store.consolidation.records import Record

#: Trees in the forest.
TREES = 6
#: Largest leaf.
LEAF = 48
#: Share of a node (each side of the median) that also goes down the other side.
SPILL = 0.08
#: Seed of the forest's directions (numpy's RandomState, whose stream is fixed).
SEED = 20261123
#: Rarest words each memory is filed under.
KEYS = 3
#: Most memories paired under one key (beyond it: neighbours in id order).
POSTINGS = 64

Pair = tuple[str, str]


def _pair(a: str, b: str) -> Pair:
    return (a, b) if a < b else (b, a)


def _split(x: "np.ndarray", rows: "np.ndarray", tree: int, node: int) -> tuple["np.ndarray", "np.ndarray"]:
    """The two children of a node: rows below and above the median of a
    random projection, each with the spill of the other side."""
    import numpy as np

    direction = np.random.RandomState((SEED + tree * 1_000_003 + node) % (2**32)).standard_normal(x.shape[1])
    proj = x[rows] @ direction
    order = np.lexsort((rows, proj))  # ties broken by row: the same order everywhere
    n = len(rows)
    half = n // 2
    extra = max(1, int(n * SPILL))
    left = rows[order[: min(n, half + extra)]]
    right = rows[order[max(0, half - extra) :]]
    return left, right


def forest_pairs(ids: Sequence[str], x: "np.ndarray", floor: Callable[[int, int], float] | float,
                 *, trees: int = TREES, leaf: int = LEAF) -> dict[Pair, float]:
    """Pairs of ``ids`` (rows of unit vectors ``x``) that share a leaf and are
    at least ``floor`` similar (a number, or a function of the two row
    indices giving each pair its own floor), with their cosine similarity."""
    import numpy as np

    n = len(ids)
    out: dict[Pair, float] = {}
    if n < 2:
        return out
    fixed = None if callable(floor) else float(floor)
    for tree in range(trees if n > leaf else 1):
        stack = [(np.arange(n), 1)]
        while stack:
            rows, node = stack.pop()
            if len(rows) <= leaf:
                sims = x[rows] @ x[rows].T
                ii, jj = np.nonzero(np.triu(sims >= (fixed if fixed is not None else -1.0), 1))
                for i, j in zip(ii.tolist(), jj.tolist()):
                    a, b = int(rows[i]), int(rows[j])
                    s = round(float(sims[i, j]), 6)
                    if fixed is None and s < floor(a, b):  # type: ignore[operator]
                        continue
                    out[_pair(ids[a], ids[b])] = s
                continue
            left, right = _split(x, rows, tree, node)
            if len(left) >= len(rows) or len(right) >= len(rows):  # cannot split further (tiny nodes)
                stack.append((rows[: leaf], 2 * node))
                stack.append((rows[leaf:], 2 * node + 1))
                continue
            stack.append((right, 2 * node + 1))
            stack.append((left, 2 * node))
    return out


def word_pairs(records: Sequence["Record"], keys_of: Callable[["Record"], Iterable[str]] | None = None,
               *, keys: int = KEYS, postings: int = POSTINGS) -> set[Pair]:
    """Pairs of records that share one of their rarest words (module docstring)."""
    def default_keys(r: "Record") -> set[str]:
        f = r.memo.f
        return set(f.stems) | set(f.capitals)

    keys_of = keys_of or default_keys
    words = {r.id: sorted(set(keys_of(r))) for r in records}
    df = Counter(w for ws in words.values() for w in ws)
    filed: dict[str, list[str]] = {}
    for rid in sorted(words):
        for w in sorted(words[rid], key=lambda w: (df[w], w))[:keys]:
            if df[w] > 1:
                filed.setdefault(w, []).append(rid)
    out: set[Pair] = set()
    for members in filed.values():
        for i, a in enumerate(members):
            for b in members[i + 1 : i + 1 + postings]:
                out.add(_pair(a, b))
    return out


def exact_groups(records: Iterable["Record"], key: Callable[["Record"], object]) -> set[Pair]:
    """Pairs of records with equal ``key`` (normalised text, type and scope):
    found by hashing, whatever their number."""
    groups: dict[object, list[str]] = {}
    for r in records:
        groups.setdefault(key(r), []).append(r.id)
    out: set[Pair] = set()
    for members in groups.values():
        members.sort()
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                out.add(_pair(a, b))
    return out
