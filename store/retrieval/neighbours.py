"""Neighbours in a conversation: the turns around a turn, the chunks around a chunk.

A turn of a conversation ("Moved it to July.") often means little without
the turn before it ("Is the exam still in June?"). memvault reads a turn's
neighbours as part of what it says, in both signals:

* **words**: a turn's keyword score gains :data:`PREV_WEIGHT` x the BM25 of
  the turn before it and :data:`NEXT_WEIGHT` x the turn after it
  (:func:`smooth_scores`), so the reply to a question that used the words is
  found too;
* **meaning**: a turn's similarity is that of its vector mixed with its
  neighbours' at the same weights, ``|v + 0.5 v_prev + 0.3 v_next|``-normalised
  (:class:`ContextVectors`); computed from the similarities already there,
  so it costs a gather per turn, no second matrix product.

Neighbours are the turns of one *session* (front-matter ``session``, or one
the index inferred: a conversation id, or the folder and day of an episodic
note; ordered by ``turn``, then event time, then path in natural order, as
Obsidian lists files, so ``turn-9`` comes before ``turn-10``: see
:mod:`memvault.store.index.event_time`),
whose chunks follow each other in turn order (so the consecutive chunks of an
ingested session note, a session of its own, are neighbours), and the
consecutive chunks of one long episodic memory.
Only active traces count. The weights were chosen on the dev split of the
conversational set (``bench/bench_recall.py``): recall@10 of plain cosine
0.608 -> 0.684 with mixed vectors, of BM25 0.402 -> 0.573 with smoothed
scores (0.3/0.2 and 0.7/0.3 did worse on both).
"""

from __future__ import annotations

import heapq
import re
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

import apsw

from memvault.store.db import rows as db
from memvault.store.index.event_time import INFERRED_PREFIX

if TYPE_CHECKING:
    import numpy as np

    from memvault.store.embedding.vectors import VectorMatrix

#: Share of the previous turn's (or chunk's) score a turn takes on.
PREV_WEIGHT = 0.5
#: Share of the next turn's score a turn takes on (an answer says less about
#: the question than the question about the answer).
NEXT_WEIGHT = 0.3


class Recalled(Protocol):
    """What :func:`with_turn_context` needs of a recalled item: its trace id."""

    @property
    def id(self) -> str:
        """The recalled trace's id."""
        ...


T = TypeVar("T", bound=Recalled)

#: Rows whose context norms are computed at once (bounds the memory it takes).
_NORM_BLOCK = 8192
#: Index connections whose ranking leaves inferred sessions out (``recall.infer_sessions = false``).
_WITHOUT_INFERRED: "weakref.WeakSet[apsw.Connection]" = weakref.WeakSet()
_DIGITS = re.compile(r"(\d+)")


def infer_sessions(con: apsw.Connection, on: bool) -> None:
    """Whether ranking over ``con`` counts the sessions the index inferred
    (``recall.infer_sessions``; explicit ``session`` keys always count)."""
    if on:
        _WITHOUT_INFERRED.discard(con)
    else:
        _WITHOUT_INFERRED.add(con)


def _explicit_only(con: apsw.Connection) -> str:
    """The SQL condition that leaves inferred sessions out, when they are off."""
    return f" AND session NOT LIKE '{INFERRED_PREFIX}%'" if con in _WITHOUT_INFERRED else ""


def _marks(n: int) -> str:
    return ",".join("?" * n)


def natural_key(path: str) -> tuple[tuple[int, int, str], ...]:
    """``path`` ordered as Obsidian lists files: runs of digits by their value
    ("turn-9" before "turn-10"), the rest case-folded."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p.casefold()) for p in _DIGITS.split(path) if p)


def _session_runs(con: apsw.Connection, sessions: Iterable[str]) -> list[tuple[str, list[int]]]:
    """Each of ``sessions`` with its active turns (trace rowids), in order:
    by position (none first), event time, path in natural order, rowid."""
    names = sorted(set(sessions))
    if not names:
        return []
    rows = list(con.execute(
        f"SELECT session, seq, happened, path, rowid FROM traces WHERE session IN ({_marks(len(names))}) "
        "AND session IS NOT NULL AND status = 'active'",
        names,
    ))
    rows.sort(key=lambda r: (r[0], r[1] is not None, r[1] or 0.0, r[2] or "", natural_key(r[3] or ""), r[4]))
    out: list[tuple[str, list[int]]] = []
    for session, _, _, _, rowid in rows:
        if not out or out[-1][0] != session:
            out.append((session, []))
        out[-1][1].append(rowid)
    return out


def session_turns(con: apsw.Connection, sessions: Iterable[str]) -> list[list[int]]:
    """The active turns (trace rowids) of each of ``sessions``, in order."""
    return [turns for _, turns in _session_runs(con, sessions)]


def _sessions_of(con: apsw.Connection, rowids: Sequence[int]) -> list[str]:
    """The sessions ``rowids`` are turns of."""
    if not rowids:
        return []
    return [
        s for (s,) in con.execute(
            f"SELECT DISTINCT session FROM traces WHERE rowid IN ({_marks(len(rowids))}) AND session IS NOT NULL"
            + _explicit_only(con),
            list(rowids),
        )
    ]


def session_positions(con: apsw.Connection, rowids: Sequence[int]) -> dict[int, tuple[str, int]]:
    """(session, place in it from 0) of each of ``rowids`` that is an active
    turn of a session, in the order :func:`session_turns` reads them."""
    wanted = set(rowids)
    return {
        rowid: (session, n)
        for session, turns in _session_runs(con, _sessions_of(con, rowids))
        for n, rowid in enumerate(turns)
        if rowid in wanted
    }


def turn_neighbours(con: apsw.Connection, rowids: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
    """(previous, next) turn of each of ``rowids`` that is a turn of a session."""
    out: dict[int, tuple[int | None, int | None]] = {}
    for turns in session_turns(con, _sessions_of(con, rowids)):
        for i, r in enumerate(turns):
            out[r] = (turns[i - 1] if i > 0 else None, turns[i + 1] if i + 1 < len(turns) else None)
    return out


def smooth_scores(
    con: apsw.Connection, match: str, scored: dict[int, float], neighbours: dict[int, tuple[int | None, int | None]]
) -> dict[int, tuple[float, float]]:
    """Keyword scores with neighbours, as (score, gain from neighbours): each
    turn among ``scored`` and their neighbours gets ``own + PREV_WEIGHT x prev
    + NEXT_WEIGHT x next``, where a neighbour's own BM25 for ``match`` is looked
    up when it was not scored. Traces that are no turn keep their score; a
    neighbour that gains nothing is left out."""
    missing = sorted({n for r in scored for n in neighbours.get(r, (None, None)) if n is not None and n not in scored})
    own = dict(scored)
    if missing:
        from memvault.store.retrieval.keyword import BM25_WEIGHTS

        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        own.update(
            (r, -b) for r, b in con.execute(
                f"SELECT rowid, bm25(traces_fts, {weights}) FROM traces_fts WHERE traces_fts MATCH ? "
                f"AND +rowid IN ({_marks(len(missing))})",
                (match, *missing),
            )
        )
    out: dict[int, tuple[float, float]] = {}
    for r in [*scored, *missing]:
        prev, nxt = neighbours.get(r, (None, None))
        gain = PREV_WEIGHT * own.get(prev, 0.0) if prev is not None else 0.0
        gain += NEXT_WEIGHT * own.get(nxt, 0.0) if nxt is not None else 0.0
        if gain > 0 or r in scored:
            out[r] = (own.get(r, 0.0) + gain, gain)
    return out


def with_turn_context(con: apsw.Connection, ranked: Sequence[T], beside: Callable[[str, T], T]) -> list[T]:
    """Recalled items (each with an ``id`` and a ``score``), best first, with
    each turn's neighbouring turns among them unless recalled already;
    ``beside(neighbour id, item)`` makes a neighbour's item from the one it
    stands beside.

    A reply means little without the turn it answers, but a neighbour is
    only context: it counts :data:`PREV_WEIGHT` (the turn before) or
    :data:`NEXT_WEIGHT` (the turn after) of its item's score, the weights its
    words and vector lend in ranking, and takes its place among the items by
    that (before the first item scoring less). So the neighbours of the best
    items come in, and a weak item's neighbours do not push a better item
    out of the budget. Measured against placing every neighbour beside its
    item (2026-11-26): LoCoMo-dev block 0.696 -> 0.707 (turn notes) and
    0.689 -> 0.727 (ingested sessions), the conversational set's ``context``
    recall dev 0.738 -> 0.747, test 0.706 -> 0.707 (and against no
    neighbours at all, 0.677 on LoCoMo turn notes)."""
    if not ranked:
        return list(ranked)
    ids = [item.id for item in ranked]
    rowid_of: dict[str, int] = dict(db.rows(con, f"SELECT id, rowid FROM traces WHERE id IN ({_marks(len(ids))})", ids))
    nb = turn_neighbours(con, list(rowid_of.values()))
    wanted = sorted({n for pair in nb.values() for n in pair if n is not None})
    if not wanted:
        return list(ranked)
    id_of: dict[int, str] = dict(db.rows(con, f"SELECT rowid, id FROM traces WHERE rowid IN ({_marks(len(wanted))})", wanted))
    present = set(ids)
    waiting: list[tuple[float, int, str, T]] = []  # (-weighted score, order, neighbour id, its item): a heap
    for item, tid in zip(ranked, ids):
        prev, nxt = nb.get(rowid_of.get(tid, -1), (None, None))
        for other, weight in ((id_of.get(prev) if prev else None, PREV_WEIGHT), (id_of.get(nxt) if nxt else None, NEXT_WEIGHT)):
            if other is not None and other not in present:
                heapq.heappush(waiting, (-weight * _score(item), len(waiting), other, item))
    out: list[T] = []
    seen: set[str] = set()

    def place(down_to: float) -> None:
        while waiting and -waiting[0][0] >= down_to:
            _, _, other, item = heapq.heappop(waiting)
            if other not in seen:
                seen.add(other)
                out.append(beside(other, item))

    for item, tid in zip(ranked, ids):
        place(_score(item))
        if tid not in seen:
            seen.add(tid)
            out.append(item)
    place(float("-inf"))
    return out


def _score(item: object) -> float:
    """An item's score (a keyword-only candidate's BM25 when it has none)."""
    return float(getattr(item, "score", 0.0) or getattr(item, "bm25", 0.0) or 0.0)


class ContextVectors:
    """Similarities in context for the matrix rows that have neighbours.

    ``rows[i]``'s context vector is ``M[rows[i]] + PREV_WEIGHT M[prev[i]] +
    NEXT_WEIGHT M[next[i]]`` (a missing neighbour adds nothing) divided by its
    norm, so its similarity to a unit query is a weighted sum of similarities
    already computed, over a precomputed norm.
    """

    def __init__(self, rows: "np.ndarray", prev: "np.ndarray", nxt: "np.ndarray", norms: "np.ndarray") -> None:
        self.rows = rows
        self.prev = prev
        self.next = nxt
        self.norms = norms
        self._pos: "np.ndarray | None" = None  # matrix row -> index in rows (-1: no neighbours)

    def __len__(self) -> int:
        return int(len(self.rows))

    @classmethod
    def build(cls, con: apsw.Connection, matrix: "VectorMatrix") -> "ContextVectors":
        """The neighbours of every row of ``matrix``: consecutive chunks of the
        turns of each session, and of each long episodic memory."""
        import numpy as np

        sequences: list[list[int]] = []
        sessions = [s for (s,) in con.execute("SELECT DISTINCT session FROM traces WHERE session IS NOT NULL"
                                              + _explicit_only(con))]
        for turns in session_turns(con, sessions):
            sequences.append(_chunk_rows(matrix, turns))
        for (rowid,) in con.execute(
            "SELECT rowid FROM traces WHERE kind = 'memory' AND type = 'episodic' AND status = 'active' AND "
            + ("(session IS NULL OR session LIKE ?)" if _explicit_only(con) else "session IS NULL AND ? IS NOT NULL"),
            (f"{INFERRED_PREFIX}%",),
        ):
            chunks = _chunk_rows(matrix, [rowid])
            if len(chunks) > 1:
                sequences.append(chunks)
        rows_l: list[int] = []
        prev_l: list[int] = []
        next_l: list[int] = []
        for seq in sequences:
            if len(seq) < 2:
                continue
            for i, row in enumerate(seq):
                rows_l.append(row)
                prev_l.append(seq[i - 1] if i > 0 else -1)
                next_l.append(seq[i + 1] if i + 1 < len(seq) else -1)
        rows = np.asarray(rows_l, dtype=np.int64)
        prev = np.asarray(prev_l, dtype=np.int64)
        nxt = np.asarray(next_l, dtype=np.int64)
        if not len(rows):
            return cls(rows, prev, nxt, np.zeros(0, dtype=np.float32))
        m = matrix.matrix
        norms = np.empty(len(rows), dtype=np.float32)
        for a in range(0, len(rows), _NORM_BLOCK):  # in blocks: a copy of every row at once is the matrix again
            r, p, n = rows[a : a + _NORM_BLOCK], prev[a : a + _NORM_BLOCK], nxt[a : a + _NORM_BLOCK]
            mixed = m[r].copy()
            mixed[p >= 0] += PREV_WEIGHT * m[p[p >= 0]]
            mixed[n >= 0] += NEXT_WEIGHT * m[n[n >= 0]]
            norms[a : a + _NORM_BLOCK] = np.linalg.norm(mixed, axis=1)
        norms[norms == 0] = 1.0
        return cls(rows, prev, nxt, norms)

    def apply(self, sims: "np.ndarray", matrix: "VectorMatrix", query: "np.ndarray") -> tuple["np.ndarray", "np.ndarray"]:
        """(own similarities, similarities in context) for ``sims`` from
        :meth:`VectorMatrix.similarities`. Above its exact size the matrix
        scores only the rows its first pass kept; a turn that was scored, or
        one next to a scored turn, has its neighbours (and itself) scored
        exactly here first, so a reply to a close question is found too."""
        if not len(self.rows):
            return sims, sims
        import numpy as np

        from memvault.store.embedding.vectors import NOT_SCORED

        own = sims
        rows, prev, nxt, norms = self.rows, self.prev, self.next, self.norms
        unscored = sims <= NOT_SCORED
        if unscored.any():
            scored = ~unscored
            touch = scored[rows] | ((prev >= 0) & scored[prev]) | ((nxt >= 0) & scored[nxt])
            rows, prev, nxt, norms = rows[touch], prev[touch], nxt[touch], norms[touch]
            need = np.unique(np.concatenate([rows, prev[prev >= 0], nxt[nxt >= 0]]))
            need = need[unscored[need]]
            if len(need):
                own = sims.copy()
                own[need] = matrix.exact(need, query)
        out = own.copy()
        mixed = own[rows].astype(np.float32)
        mixed += PREV_WEIGHT * np.where(prev >= 0, own[prev], 0.0)
        mixed += NEXT_WEIGHT * np.where(nxt >= 0, own[nxt], 0.0)
        out[rows] = mixed / norms
        return own, out

    def exact(self, matrix: "VectorMatrix", rows: "np.ndarray", query: "np.ndarray") -> tuple["np.ndarray", "np.ndarray"]:
        """(own, in context) similarity of ``rows``, computed exactly (for
        keyword-only and graph candidates the first pass may have skipped)."""
        import numpy as np

        own = matrix.exact(rows, query)
        if not len(self.rows):
            return own, own
        if self._pos is None or len(self._pos) != len(matrix):
            self._pos = np.full(len(matrix), -1, dtype=np.int64)
            self._pos[self.rows] = np.arange(len(self.rows))
        at = self._pos[rows]
        has = at >= 0
        ctx = own.copy()
        if has.any():
            i = at[has]
            p, n = self.prev[i], self.next[i]
            sp = np.where(p >= 0, matrix.exact(np.where(p >= 0, p, 0), query), 0.0)
            sn = np.where(n >= 0, matrix.exact(np.where(n >= 0, n, 0), query), 0.0)
            ctx[has] = (own[has] + PREV_WEIGHT * sp + NEXT_WEIGHT * sn) / self.norms[i]
        return own, ctx


def _chunk_rows(matrix: "VectorMatrix", trace_rowids: Sequence[int]) -> list[int]:
    """The matrix rows of the traces' chunks, trace by trace, each in chunk order."""
    out: list[int] = []
    for rowid in trace_rowids:
        rows = matrix.rows_of_trace(rowid)
        if rows is not None and len(rows):
            out.extend(int(r) for r in sorted(rows, key=lambda r: int(matrix.chunk_ids[r])))
    return out
