"""The vector signal of the ranking: the traces whose best chunk is most
similar to the query, and each candidate's best chunk (a turn's compared in
context, its vector mixed with its neighbours')."""

from __future__ import annotations

from typing import TYPE_CHECKING

import apsw

from memvault.store.embedding.vectors import VectorMatrix
from memvault.store.retrieval.candidate import Candidate, fetch_candidates
from memvault.store.retrieval.keyword import Filters, placeholders

if TYPE_CHECKING:  # numpy is imported where vectors are used: keyword recall runs without it
    import numpy as np

    from memvault.store.retrieval.neighbours import ContextVectors


def allowed_vector_hits(
    con: apsw.Connection, matrix: VectorMatrix, sims: np.ndarray, filters: Filters, k: int
) -> tuple[list[tuple[int, float, int]], dict[int, Candidate]]:
    """The ``k`` best traces by similarity that pass ``filters``."""
    want = k
    while True:
        best = matrix.best_per_trace(sims, want)
        if not best:
            return [], {}
        rows = fetch_candidates(con, f"t.rowid IN ({placeholders(len(best))})", [b[0] for b in best], filters)
        kept = [b for b in best if b[0] in rows]
        if len(kept) >= k or len(best) < want:
            return kept[:k], rows
        want *= 4


def best_chunk(
    matrix: VectorMatrix, query_vector: np.ndarray, rowid: int, context: ContextVectors | None = None
) -> tuple[float, int, float | None] | None:
    """The most similar chunk of one trace, exactly (a keyword hit may lie
    outside what the vector first pass scored): (similarity in context,
    chunk id, own similarity when neighbours changed it)."""
    rows = matrix.rows_of_trace(rowid)
    if rows is None or len(rows) == 0:
        return None
    import numpy as np

    if context is not None:
        own, sims = context.exact(matrix, rows, query_vector)
    else:
        own = sims = matrix.exact(rows, query_vector)
    i = int(np.argmax(sims))
    alone = float(own[i]) if abs(float(own[i]) - float(sims[i])) > 1e-6 else None
    return float(sims[i]), int(matrix.chunk_ids[rows[i]]), alone


def vector_candidates(
    con: apsw.Connection, cands: dict[int, Candidate], matrix: VectorMatrix, query_vector: np.ndarray,
    sims: np.ndarray, own: np.ndarray, filters: Filters, k: int, context: ContextVectors | None,
) -> None:
    """Add the ``k`` most similar traces to ``cands``, and give every
    candidate its best chunk's similarity (in context, and alone when that differs)."""
    best, rows = allowed_vector_hits(con, matrix, sims, filters, k)
    for n, (rowid, sim, chunk_id) in enumerate(best, 1):
        c = cands.get(rowid) or rows[rowid]
        c.vector_rank, c.similarity, c.chunk_id = n, sim, chunk_id
        row = matrix.row_of_chunk(chunk_id)
        if row is not None and sims is not own and abs(float(own[row]) - sim) > 1e-6:
            c.own_similarity = float(own[row])
        cands[rowid] = c
    for c in cands.values():
        if c.similarity is None:  # keyword-only candidates: their own best chunk, exactly
            found = best_chunk(matrix, query_vector, c.rowid, context)
            if found:
                c.similarity, c.chunk_id, c.own_similarity = found
