"""Finding the pairs worth judging without comparing every pair.

Two generators, both deterministic and both about O(n log n):

* **Vectors: a random-projection forest.** Each tree splits the memories at
  the median of their projection on a random direction (one per tree level,
  seeded by tree, so every machine draws the same directions), recursively,
  until a leaf holds at most :data:`LEAF` memories; the memories within
  :data:`SPILL` of a median go down both sides, so near neighbours that fall
  on either side of a cut still meet. Only pairs that share a leaf in one of
  :data:`TREES` trees are compared, a leaf at a time as one small matrix
  product, and only those at least ``floor`` similar, and among each one's
  :data:`NEIGHBOURS` nearest in the leaf, come out (a crowd of look-alikes,
  a habit noted every week for years, costs n x neighbours pairs, not n
  squared). Cost: trees x
  (n x dim x depth + n x depth x log n + n x leaf x dim), depth ~ log2(n / leaf).
* **Words: rare-word blocking.** Each memory is filed under the
  :data:`KEYS` rarest of its content words and names that another memory
  shares (rarity counted over the memories being compared); two memories are
  a candidate when they share such a key. A key held by more than
  :data:`POSTINGS` memories pairs each one only with its :data:`POSTINGS`
  neighbours in id order, so a common word never turns into a quadratic
  block. This is what contradictions need (their rule requires shared words
  anyway), and episodes without vectors.

Pairs come back as sorted ``(id, id)`` tuples, the smaller id first.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from memvault.store.consolidation.records import Record

#: Trees in the forest.
TREES = 6
#: Largest leaf.
LEAF = 48
#: Share of a node (each side of the median) that also goes down the other side.
SPILL = 0.08
#: Most pairs each memory makes per leaf: its nearest neighbours there.
NEIGHBOURS = 10
#: Seed of the forest's directions (numpy's RandomState, whose stream is fixed).
SEED = 20261123
#: Rarest words each memory is filed under.
KEYS = 4
#: Most memories paired under one key (beyond it: neighbours in id order).
POSTINGS = 24

Pair = tuple[str, str]


def _pair(a: str, b: str) -> Pair:
    return (a, b) if a < b else (b, a)


@lru_cache(maxsize=1)
def _openblas_local() -> Any:
    """OpenBLAS's per-thread thread count setter (0.3.27+), if numpy's BLAS is
    OpenBLAS and has it; else None."""
    import ctypes
    import glob
    import os

    import numpy as np

    for lib in sorted(glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "*openblas*"))):
        try:
            fn = ctypes.CDLL(lib).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
        return fn
    return None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block's matrix products on one BLAS thread (this thread only).

    The forest does thousands of tiny products; OpenBLAS starting its threads
    for each costs 10 to 40 times the product itself on a busy two-core
    machine (measured: 11 ms instead of 0.3 ms for 80 x 384). Elsewhere a no-op.
    """
    setter = _openblas_local()
    if setter is None:
        yield
        return
    previous = setter(1)
    try:
        yield
    finally:
        setter(previous if previous > 0 else 0)


def _directions(dim: int, tree: int, levels: int) -> "np.ndarray":
    """The random directions of one tree, one per level (dim x levels)."""
    import numpy as np

    return np.random.RandomState((SEED + tree * 1_000_003) % (2**32)).standard_normal((dim, levels))


def forest_pairs(ids: Sequence[str], x: "np.ndarray", floor: float, *, trees: int = TREES,
                 leaf: int = LEAF) -> dict[Pair, float]:
    """Pairs of ``ids`` (rows of unit vectors ``x``) that share a leaf and are
    at least ``floor`` similar, with their cosine similarity rounded to 6 decimals.

    Each tree projects every row once on one random direction per level (one
    matrix product), then splits each node at the median of its level's
    projection, ties broken by row, with :data:`SPILL` of each side going down
    the other too.
    """
    import numpy as np

    out: dict[Pair, float] = {}
    if len(ids) < 2:
        return out
    levels = max(1, int(np.ceil(np.log2(max(2, len(ids)) / leaf))) + 1)
    with one_blas_thread():
        for tree in range(trees if len(ids) > leaf else 1):
            proj = x @ _directions(x.shape[1], tree, levels)
            stack = [(np.arange(len(ids)), 0)]
            while stack:
                rows, level = stack.pop()
                if len(rows) <= leaf or level >= levels:
                    _leaf_pairs(ids, x, rows, floor, out)
                    continue
                order = rows[np.lexsort((rows, proj[rows, level]))]
                half, extra = len(rows) // 2, max(1, int(len(rows) * SPILL))
                stack.append((order[max(0, half - extra) :], level + 1))
                stack.append((order[: half + extra], level + 1))
    return out


def _leaf_pairs(ids: Sequence[str], x: "np.ndarray", rows: "np.ndarray", floor: float,
                out: dict[Pair, float], neighbours: int = NEIGHBOURS) -> None:
    """The pairs of one leaf at least ``floor`` similar, into ``out``: each
    row with its ``neighbours`` most similar rows of the leaf (so a crowd of
    look-alikes costs n x neighbours pairs, not n squared)."""
    import numpy as np

    sims = x[rows] @ x[rows].T
    np.fill_diagonal(sims, -2.0)
    k = min(neighbours, len(rows) - 1)
    if k <= 0:
        return
    near = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < len(rows) - 1 else None
    keep = sims >= floor
    if near is not None:
        top = np.zeros_like(keep)
        np.put_along_axis(top, near, True, axis=1)
        keep &= top | top.T
    ii, jj = np.nonzero(np.triu(keep, 1))
    values = np.round(sims[ii, jj], 6).tolist()
    for i, j, s in zip(rows[ii].tolist(), rows[jj].tolist(), values):
        out[_pair(ids[i], ids[j])] = s


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
        # A word no other memory has pairs nothing: the rarest shared ones count.
        for w in sorted((w for w in words[rid] if df[w] > 1), key=lambda w: (df[w], w))[:keys]:
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


#: Most earlier claims each claim is paired with under one slot key (newest first).
SLOT_NEIGHBOURS = 16


def slot_pairs(records: Sequence["Record"]) -> set[Pair]:
    """Pairs of claims that fill one slot of one frame (:mod:`.frames`), at
    any similarity: a refilled value meets its rival however far apart
    MiniLM puts them. Each claim is filed under its frame's keys
    (:func:`.conflicts.slot_keys`: the subject and relation of a naming, a
    residence, a copula about a thing; what a change or a denial is about,
    and what a positive claim is about, its kinds by WordNet included);
    under each key it is paired with the :data:`SLOT_NEIGHBOURS` claims filed
    before it (oldest first), and a probe (a change or a denial) with the
    claims that hold what it is about. O(n x keys x neighbours)."""
    from memvault.store.consolidation.conflicts import slot_keys

    ordered = sorted(records, key=lambda r: (r.created, r.id))
    keyed = [(r.id, slot_keys(r.content)) for r in ordered]
    probes = {k for _, (_, probe, _) in keyed for k in probe}
    shared: dict[str, list[str]] = {}
    held: dict[str, list[str]] = {}
    out: set[Pair] = set()
    for rid, (symmetric, probe, target) in keyed:
        for k in symmetric:
            filed = shared.setdefault(k, [])
            out.update(_pair(rid, other) for other in filed[-SLOT_NEIGHBOURS:])
            filed.append(rid)
        for k in target:
            if k in probes:
                held.setdefault(k, []).append(rid)
    for rid, (_, probe, _) in keyed:
        for k in probe:
            out.update(_pair(rid, other) for other in held.get(k, [])[-SLOT_NEIGHBOURS:] if other != rid)
    return out
