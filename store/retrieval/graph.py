"""The graph signal of the ranking: notes and memories one link away from
the strongest hits rise towards them (never past them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import apsw

from memvault.store.embedding.vectors import VectorMatrix
from memvault.store.retrieval.candidate import Candidate, fetch_candidates
from memvault.store.retrieval.keyword import Filters, placeholders
from memvault.store.retrieval.similarity import best_chunk

if TYPE_CHECKING:  # numpy is imported where vectors are used: keyword recall runs without it
    import numpy as np

    from memvault.store.retrieval.neighbours import ContextVectors

#: Strongest fused hits whose neighbours the graph signal looks at.
GRAPH_SEEDS = 5
#: Share of the gap to its seed's fused score a neighbour closes (so a
#: neighbour rises towards, never past, the hit that brought it in).
GRAPH_DAMPING = 0.5
#: A neighbour's own similarity may be this much below the floor.
GRAPH_FLOOR_MARGIN = 0.1
#: Edge kinds the graph signal follows, both ways.
GRAPH_EDGE_KINDS = ("link", "embed", "property", "related", "derived_from")


def graph_neighbours(con: apsw.Connection, ids: Sequence[str]) -> dict[str, set[str]]:
    """Trace ids one edge away from each of ``ids`` (either direction)."""
    out: dict[str, set[str]] = {i: set() for i in ids}
    if not ids:
        return out
    kinds = list(GRAPH_EDGE_KINDS)
    m, km = placeholders(len(ids)), placeholders(len(kinds))
    for src, dst in con.execute(
        f"SELECT source_id, target_id FROM edges WHERE source_id IN ({m}) AND target_id IS NOT NULL AND kind IN ({km})",
        [*ids, *kinds],
    ):
        out[src].add(dst)
    for src, dst in con.execute(
        f"SELECT source_id, target_id FROM edges WHERE target_id IN ({m}) AND kind IN ({km})", [*ids, *kinds]
    ):
        out[dst].add(src)
    for i in ids:
        out[i].discard(i)
    return out


def add_graph(
    con: apsw.Connection,
    kept: dict[int, Candidate],
    matrix: VectorMatrix,
    query_vector: np.ndarray,
    filters: Filters,
    neighbour_floor: float,
    context: ContextVectors | None = None,
) -> None:
    """Give each candidate one link away from the strongest hits its
    :attr:`~Candidate.graph` lift; a neighbour that was no candidate joins
    ``kept`` when its own similarity reaches ``neighbour_floor``."""
    seeds = sorted(kept.values(), key=lambda c: (-c.fused, c.id))[:GRAPH_SEEDS]
    links = graph_neighbours(con, [s.id for s in seeds])
    seed_score: dict[str, float] = {}
    for s in seeds:
        for other in links[s.id]:
            seed_score[other] = max(seed_score.get(other, 0.0), s.fused)
    if not seed_score:
        return
    by_id = {c.id: c for c in kept.values()}
    missing = [i for i in seed_score if i not in by_id]
    if missing:
        for rowid, c in fetch_candidates(con, f"t.id IN ({placeholders(len(missing))})", missing, filters).items():
            found = best_chunk(matrix, query_vector, rowid, context)
            if found is None or found[0] < neighbour_floor:
                continue
            c.similarity, c.chunk_id, c.own_similarity = found
            c.passed = "graph"
            kept[rowid] = c
            by_id[c.id] = c
    for i, top in seed_score.items():
        seeded = by_id.get(i)
        if seeded is not None:
            seeded.graph = GRAPH_DAMPING * max(0.0, top - seeded.fused)
