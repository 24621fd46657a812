"""A trace under consideration by the ranking, with every signal it got."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from memvault.store.retrieval.keyword import Filters, filter_sql


@dataclass
class Candidate:
    """One trace under consideration, with every signal it got."""

    rowid: int
    id: str
    title: str
    type: str
    kind: str
    path: str | None
    status: str
    tags: list[str]
    strength: float | None
    stamp: str
    snippet: str = ""
    keyword_rank: int | None = None
    keyword_strong: bool = False
    #: Weight of its keyword rank in fusion (1 for a strong hit; see :func:`.rank.weak_weights`).
    keyword_weight: float = 1.0
    bm25: float | None = None
    words_matched: int | None = None
    passed: str = ""
    vector_rank: int | None = None
    similarity: float | None = None
    chunk_id: int | None = None
    graph: float = 0.0
    fused: float = 0.0
    recency: float = 1.0
    strength_factor: float = 1.0
    score: float = 0.0
    event_time: str | None = None
    #: Its place in time: event time, else creation, else last change.
    happened: str = ""
    #: Similarity of the best chunk alone, when its conversation neighbours
    #: made ``similarity`` (the one ranked on) differ.
    own_similarity: float | None = None
    #: BM25 the keyword score gained from conversation neighbours.
    keyword_neighbours: float = 0.0
    #: Factor for falling in the period the query names (1: none named, or outside).
    time_match: float = 1.0
    #: Factor for being said by someone the query names (1: no speaker named, or another).
    speaker_match: float = 1.0

    def explain(self, mode: str = "hybrid") -> dict[str, Any]:
        """Every signal, for ``--explain``; ``passed`` names the rule that let
        the candidate past the relevance floor (:func:`.floor.floor_rule`)."""
        return {
            "mode": mode,
            "keyword_rank": self.keyword_rank,
            "keyword_match": None if self.keyword_rank is None else ("all" if self.keyword_strong else "any"),
            "keyword_bm25": None if self.bm25 is None else round(self.bm25, 4),
            "keyword_weight": None if self.keyword_rank is None else round(self.keyword_weight, 4),
            "vector_rank": self.vector_rank,
            "vector_similarity": None if self.similarity is None else round(self.similarity, 4),
            "passed": self.passed,
            "similarity_alone": None if self.own_similarity is None else round(self.own_similarity, 4),
            "keyword_neighbours": round(self.keyword_neighbours, 4),
            "graph": round(self.graph, 6),
            "fused": round(self.fused, 6),
            "time_match": round(self.time_match, 4),
            "speaker_match": round(self.speaker_match, 4),
            "event_time": self.event_time,
            "recency": round(self.recency, 4),
            "strength": round(self.strength_factor, 4),
        }


#: A candidate's time for recency: when it happened, else when it last changed.
_COLS = (
    "t.rowid, t.id, t.title, t.type, t.kind, t.path, t.status, t.tags, t.strength, "
    "coalesce(t.event_time, nullif(t.updated, ''), t.created), t.event_time, t.happened"
)


def fetch_candidates(con: apsw.Connection, where: str, params: Sequence[Any], filters: Filters) -> dict[int, Candidate]:
    """The traces matching ``where`` (and ``filters``) as candidates, by rowid."""
    fsql, fparams = filter_sql(filters)
    out: dict[int, Candidate] = {}
    for r in con.execute(f"SELECT {_COLS} FROM traces t WHERE {where}{fsql}", [*params, *fparams]):
        out[r[0]] = Candidate(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7].split(" ") if r[7] else [], r[8], r[9] or "",
                              event_time=r[10], happened=r[11] or "")
    return out
