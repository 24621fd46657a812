"""Hybrid ranking: keyword, vector and graph signals fused, then adjusted.

1. **Keyword**: BM25 hits where every query word matches (strong), then
   hits where any content word matches (weak), ranked by BM25 on the FTS table.
2. **Vector**: the traces whose best chunk is most similar to the query.
3. **Fusion** by reciprocal rank: ``sum(w / (RRF_K + rank))`` over the lists a
   trace is in; the weak keyword list counts a quarter.
4. **Relevance floor**: a candidate stays when its best-chunk similarity
   reaches ``min_similarity``, or when its words are evidence enough (see
   :func:`floor_rule`): a strong match on a distinctive (rare) word passes
   whatever its similarity (identifiers embed poorly); one of the first
   ``KEYWORD_FLOOR_RANK`` keyword hits that shares at least
   ``KEYWORD_MIN_WORDS`` content words with the query needs only
   ``min_similarity - KEYWORD_FLOOR_MARGIN``; a trace with no vector yet is
   judged by its words alone (:func:`keyword_relevant`). Stop words and very
   common words are never evidence, so an unrelated query still returns
   nothing rather than the least bad notes.
5. **Graph**: notes and memories one link away from the strongest hits
   (wikilinks, embeds, property links, ``related``, fact-to-source
   ``derived_from``) close ``GRAPH_DAMPING`` of the gap between their own
   fused score and the seed's (a neighbour rises towards its seed, never
   past it); a
   neighbour that was no candidate joins only if its own similarity reaches
   ``min_similarity - GRAPH_FLOOR_MARGIN``.
6. **Recency and strength**: memories decay by type (half-life in days,
   0 = never; notes and evergreen-tagged memories are exempt by default), and
   strength (0-1, 0.5 when unset) scales the score by ``0.5 + strength``.
7. **MMR** (lambda 0.7) orders the result for diversity and drops
   near-duplicates (best chunks at cosine >= ``DUPLICATE_SIMILARITY``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import apsw

from memvault.store.embedding.vectors import VectorMatrix, chunk_rows
from memvault.store.retrieval.keyword import (
    Filters,
    Hit,
    common_words,
    filter_sql,
    fts_top,
    natural_match_expressions,
    placeholders,
    prefilter_sql,
    query_words,
    quoted,
    snippets,
    trace_count_estimate,
)

if TYPE_CHECKING:  # numpy is imported where vectors are used: keyword recall runs without it
    import numpy as np

#: Reciprocal-rank-fusion constant. The usual 60 flattens ranks so much that
#: a note in both lists at rank 8 beats the semantic #1; 10 keeps the top of
#: each list decisive (MRR on the labelled paraphrase set: 0.645 at 60,
#: 0.70 at 10, equal recall).
RRF_K = 10.0
#: Weight of a rank in the weak (any-word) keyword list: one shared content
#: word is thin evidence next to meaning.
WEAK_KEYWORD_WEIGHT = 0.25
#: How many hits each signal contributes before fusion.
CANDIDATES = 50
#: Strongest fused hits whose neighbours the graph signal looks at.
GRAPH_SEEDS = 5
#: Share of the gap to its seed's fused score a neighbour closes (so a
#: neighbour rises towards, never past, the hit that brought it in).
GRAPH_DAMPING = 0.5
#: A neighbour's own similarity may be this much below the floor.
GRAPH_FLOOR_MARGIN = 0.1
#: Edge kinds the graph signal follows, both ways.
GRAPH_EDGE_KINDS = ("link", "embed", "property", "related", "derived_from")
#: MMR trade-off between relevance (1.0) and novelty (0.0).
MMR_LAMBDA = 0.7
#: Best chunks this similar are the same thing said twice: the lower one goes.
DUPLICATE_SIMILARITY = 0.95
#: The relevance floor (cosine similarity), calibrated on the labelled set:
#: at 0.30 every unrelated query returns nothing and 34/40 paraphrase
#: targets stay findable; 0.25 keeps 37/40 but lets 3/10 unrelated queries
#: return noise (bench/bench_retrieval.py --only calibrate).
MIN_SIMILARITY = 0.3
#: A keyword hit below the floor still counts when it is among the first
#: KEYWORD_FLOOR_RANK keyword hits, shares at least KEYWORD_MIN_WORDS
#: distinct content words with the query and its similarity is at most
#: KEYWORD_FLOOR_MARGIN under the floor. On the labelled set this finds the
#: four paraphrase targets keyword mode found and hybrid dropped (similarity
#: 0.24-0.27, two shared words each) while every unrelated query stays
#: silent: their keyword hits share one content word ("machine" at 0.285)
#: or sit far below (two shared words at most 0.10).
KEYWORD_FLOOR_RANK = 10
KEYWORD_MIN_WORDS = 2
KEYWORD_FLOOR_MARGIN = 0.07
#: A word is distinctive (rare) when at most max(RARE_MIN_DOCS, RARE_SHARE x
#: traces) traces contain it: an identifier like ERR_CONNECTION_RESET, a
#: name, a term of art. Only a strong match on such a word skips the floor;
#: "time" (in 17% of the labelled vault) or a stop word never does.
RARE_MIN_DOCS = 3
RARE_SHARE = 0.01

DEFAULT_HALF_LIVES: dict[str, float] = {
    "identity": 180.0,
    "semantic": 90.0,
    "procedural": 90.0,
    "episodic": 14.0,
    "prospective": 0.0,
    "note": 0.0,
}


@dataclass(frozen=True)
class RankParams:
    """The knobs of :func:`rank`, from configuration."""

    min_similarity: float = MIN_SIMILARITY
    half_lives: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_HALF_LIVES))
    evergreen_tags: frozenset[str] = frozenset({"evergreen"})
    candidates: int = CANDIDATES


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

    def explain(self, mode: str = "hybrid") -> dict[str, Any]:
        """Every signal, for ``--explain``; ``passed`` names the rule that let
        the candidate past the relevance floor (:func:`floor_rule`)."""
        return {
            "mode": mode,
            "keyword_rank": self.keyword_rank,
            "keyword_match": None if self.keyword_rank is None else ("all" if self.keyword_strong else "any"),
            "keyword_bm25": None if self.bm25 is None else round(self.bm25, 4),
            "vector_rank": self.vector_rank,
            "vector_similarity": None if self.similarity is None else round(self.similarity, 4),
            "passed": self.passed,
            "graph": round(self.graph, 6),
            "fused": round(self.fused, 6),
            "recency": round(self.recency, 4),
            "strength": round(self.strength_factor, 4),
        }


_COLS = "t.rowid, t.id, t.title, t.type, t.kind, t.path, t.status, t.tags, t.strength, coalesce(nullif(t.updated, ''), t.created)"


def _fetch(con: apsw.Connection, where: str, params: Sequence[Any], filters: Filters) -> dict[int, Candidate]:
    fsql, fparams = filter_sql(filters)
    out: dict[int, Candidate] = {}
    for r in con.execute(f"SELECT {_COLS} FROM traces t WHERE {where}{fsql}", [*params, *fparams]):
        out[r[0]] = Candidate(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7].split(" ") if r[7] else [], r[8], r[9] or "")
    return out


#: Words too common to be evidence on their own in the any-word list.
STOPWORDS = frozenset(
    "a am an and are as at be been but by can could did do does for from had has have how i if in into is it its "
    "may me might must my no not of on or our shall should so than that the their them then there these they this "
    "to was we were what when where which who why will with would you your".split()
)


@dataclass
class KeywordLists:
    """The keyword signal of a query: strong hits (every word matches) and
    weak hits (some content word does), each as (rowid, BM25), best first."""

    strong: list[tuple[int, float]]
    weak: list[tuple[int, float]]
    strong_expr: str
    weak_expr: str
    #: Distinct query words that can be evidence: neither stop words nor
    #: very common words (lower-cased).
    content: list[str]


def content_words(words: Sequence[str], common: set[str]) -> list[str]:
    """The distinct words of a query that can be evidence, lower-cased:
    no stop words, no words in more than COMMON_DOCS traces."""
    out: list[str] = []
    for w in words:
        low = w.lower()
        if low not in STOPWORDS and w not in common and low not in out:
            out.append(low)
    return out


def keyword_hits(con: apsw.Connection, query: str, filters: Filters, k: int) -> KeywordLists:
    """Strong and weak keyword hits for ``query`` (at most ``k`` each)."""
    words = query_words(query)
    if not words:
        return KeywordLists([], [], "", "", [])
    common = common_words(con, words)
    strong_expr = natural_match_expressions(query, common=common)[0]
    pre = prefilter_sql(con, filters)
    strong = fts_top(con, strong_expr, filters, k, pre)
    # Neither stop words nor very common words are evidence on their own.
    content = content_words(words, common)
    weak: list[tuple[int, float]] = []
    weak_expr = " OR ".join(quoted(content))
    if len(words) > 1 and len(strong) < k and content:
        seen = {r for r, _ in strong}
        weak = [h for h in fts_top(con, weak_expr, filters, k, pre) if h[0] not in seen]
    return KeywordLists(strong, weak, strong_expr, weak_expr, content)


def matched_words(con: apsw.Connection, words: Sequence[str], rowids: Sequence[int]) -> dict[int, set[str]]:
    """Which of ``words`` each of ``rowids`` contains (FTS5's own tokenizer
    and stemmer decide: one lookup per word, on those rows only)."""
    out: dict[int, set[str]] = {r: set() for r in rowids}
    if not rowids:
        return out
    marks = placeholders(len(rowids))
    for w, expr in zip(words, quoted(words)):
        for (rowid,) in con.execute(f"SELECT rowid FROM traces_fts WHERE traces_fts MATCH ? AND rowid IN ({marks})", (expr, *rowids)):
            out[rowid].add(w)
    return out


def rare_words(con: apsw.Connection, words: Sequence[str]) -> set[str]:
    """The distinctive ones among ``words``: in at most max(RARE_MIN_DOCS,
    RARE_SHARE x traces) traces (stepping that far into each word's match
    list, as :func:`~store.search.common_words` does: no counting)."""
    if not words:
        return set()
    limit = max(RARE_MIN_DOCS, int(RARE_SHARE * trace_count_estimate(con)))
    return set(words) - common_words(con, words, limit)


def keyword_relevant(words_matched: int, content: int) -> bool:
    """Whether a keyword hit is relevant on its words alone (no vector to
    judge it by): it shares at least half the query's content words."""
    return content > 0 and words_matched >= max(1, math.ceil(content / 2))


def floor_rule(c: Candidate, floor: float, content: int, rare_matched: bool) -> str:
    """The rule by which ``c`` passes the relevance floor, "" when none does:

    * "similarity": its best chunk reaches ``floor``;
    * "distinctive word": every query word matches and one of them is rare;
    * "keyword words": one of the first KEYWORD_FLOOR_RANK keyword hits,
      sharing at least KEYWORD_MIN_WORDS content words, with similarity at
      least ``floor - KEYWORD_FLOOR_MARGIN``;
    * "keyword (no vector)": no vector yet, and :func:`keyword_relevant`.

    ``content`` is the number of the query's content words and
    ``rare_matched`` whether ``c`` contains a rare one; ``c.words_matched``
    must be set for keyword hits below the floor.
    """
    if c.similarity is not None and c.similarity >= floor:
        return "similarity"
    if c.keyword_rank is None:
        return ""
    if c.similarity is None:
        return "keyword (no vector)" if keyword_relevant(c.words_matched or 0, content) else ""
    if c.keyword_strong and rare_matched:
        return "distinctive word"
    if (
        c.keyword_rank <= KEYWORD_FLOOR_RANK
        and (c.words_matched or 0) >= KEYWORD_MIN_WORDS
        and c.similarity >= floor - KEYWORD_FLOOR_MARGIN
    ):
        return "keyword words"
    return ""


def _allowed_vector_hits(
    con: apsw.Connection, matrix: VectorMatrix, sims: np.ndarray, filters: Filters, k: int
) -> tuple[list[tuple[int, float, int]], dict[int, Candidate]]:
    """The ``k`` best traces by similarity that pass ``filters``."""
    want = k
    while True:
        best = matrix.best_per_trace(sims, want)
        if not best:
            return [], {}
        rows = _fetch(con, f"t.rowid IN ({placeholders(len(best))})", [b[0] for b in best], filters)
        kept = [b for b in best if b[0] in rows]
        if len(kept) >= k or len(best) < want:
            return kept[:k], rows
        want *= 4


def _best_chunk(matrix: VectorMatrix, query_vector: np.ndarray, rowid: int) -> tuple[float, int] | None:
    """The most similar chunk of one trace (exactly: a keyword hit may lie
    outside what the vector first pass scored)."""
    rows = matrix.rows_of_trace(rowid)
    if rows is None or len(rows) == 0:
        return None
    import numpy as np

    sims = matrix.exact(rows, query_vector)
    i = int(np.argmax(sims))
    return float(sims[i]), int(matrix.chunk_ids[rows[i]])


def _parse_time(value: str) -> datetime | None:
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def recency_factor(c: Candidate, params: RankParams, now: datetime) -> float:
    """0.5 ** (age in days / half-life of the trace's type); 1 when exempt."""
    kind_key = "note" if c.kind == "note" else c.type
    half = float(params.half_lives.get(kind_key, 0.0) or 0.0)
    if half <= 0 or any(t.lower() in params.evergreen_tags for t in c.tags):
        return 1.0
    when = _parse_time(c.stamp)
    if when is None:
        return 1.0
    age = max(0.0, (now - when).total_seconds() / 86400.0)
    return math.pow(0.5, age / half)


def strength_factor(strength: float | None) -> float:
    """``0.5 + strength``: 1.0 for the default strength 0.5."""
    s = 0.5 if strength is None else min(1.0, max(0.0, float(strength)))
    return 0.5 + s


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


def _keyword_candidates(con: apsw.Connection, kw: KeywordLists, filters: Filters) -> dict[int, Candidate]:
    """The keyword hits as candidates, with their rank, strength and BM25."""
    ranked = kw.strong + kw.weak
    if not ranked:
        return {}
    rank_of = {rowid: (n, bm25) for n, (rowid, bm25) in enumerate(ranked, 1)}
    fetched = _fetch(con, f"t.rowid IN ({placeholders(len(rank_of))})", list(rank_of), filters)
    for c in fetched.values():
        n, c.bm25 = rank_of[c.rowid]
        c.keyword_rank, c.keyword_strong = n, n <= len(kw.strong)
    return fetched


def keyword_recall(con: apsw.Connection, query: str, filters: Filters | None = None, limit: int = 20) -> list[Candidate]:
    """Relevant traces for ``query`` by words alone (no vectors: vectors off
    or the model unavailable): the hybrid keyword lists, strong hits then
    weak ones by BM25, keeping those that share at least half the query's
    content words (:func:`keyword_relevant`). Stop words never count, so a
    message's "how should I" does not keep a memory out and "what is the"
    brings none in."""
    filters = filters or Filters()
    kw = keyword_hits(con, query, filters, max(CANDIDATES, limit))
    cands = _keyword_candidates(con, kw, filters)
    words = matched_words(con, kw.content, list(cands))
    out = []
    for c in sorted(cands.values(), key=lambda c: (c.keyword_rank, c.id)):
        c.words_matched = len(words[c.rowid])
        c.passed = floor_rule(c, 1.0, len(kw.content), False)
        if c.passed:
            out.append(c)
    picked = out[:limit]
    for expr, strong in ((kw.strong_expr, True), (kw.weak_expr, False)):
        found = snippets(con, expr, [c.rowid for c in picked if c.keyword_strong == strong])
        for c in picked:
            c.snippet = found.get(c.rowid, c.snippet)
    return picked


def rank(
    con: apsw.Connection,
    query: str,
    *,
    matrix: VectorMatrix | None,
    query_vector: np.ndarray | None,
    mode: str = "hybrid",
    filters: Filters | None = None,
    limit: int = 10,
    params: RankParams | None = None,
    now: datetime | None = None,
) -> list[Candidate]:
    """Ranked candidates for ``query`` in ``mode`` "hybrid" or "semantic"."""
    filters = filters or Filters()
    params = params or RankParams()
    now = now or datetime.now(timezone.utc)
    k = max(params.candidates, limit)
    cands: dict[int, Candidate] = {}
    use_vectors = matrix is not None and query_vector is not None and len(matrix) > 0
    sims = matrix.similarities(query_vector) if use_vectors else None  # type: ignore[union-attr,arg-type]

    kw = KeywordLists([], [], "", "", [])
    if mode == "hybrid":
        kw = keyword_hits(con, query, filters, k)
        cands.update(_keyword_candidates(con, kw, filters))
    if use_vectors:
        best, rows = _allowed_vector_hits(con, matrix, sims, filters, k)  # type: ignore[arg-type]
        for n, (rowid, sim, chunk_id) in enumerate(best, 1):
            c = cands.get(rowid) or rows[rowid]
            c.vector_rank, c.similarity, c.chunk_id = n, sim, chunk_id
            cands[rowid] = c
        for c in cands.values():  # keyword-only candidates: their own best chunk
            if c.similarity is None:
                found = _best_chunk(matrix, query_vector, c.rowid)  # type: ignore[arg-type]
                if found:
                    c.similarity, c.chunk_id = found

    floor = params.min_similarity
    kept: dict[int, Candidate] = {}
    # Words are weighed only for keyword hits the similarity alone would
    # drop and a word rule could still keep: a strong hit contains every
    # content word by definition; a weak one is looked up only when it has
    # no vector, or its rank and similarity leave "keyword words" open.
    def needs_words(c: Candidate) -> bool:
        if c.keyword_rank is None or c.keyword_strong:
            return False
        if c.similarity is None:
            return True
        return c.similarity < floor and c.keyword_rank <= KEYWORD_FLOOR_RANK and c.similarity >= floor - KEYWORD_FLOOR_MARGIN

    words = matched_words(con, kw.content, [c.rowid for c in cands.values() if needs_words(c)])
    rare: set[str] | None = None
    for rowid, c in cands.items():
        rare_matched = False
        if c.keyword_strong:
            c.words_matched = len(kw.content)
            if c.similarity is not None and c.similarity < floor:
                rare = rare_words(con, kw.content) if rare is None else rare
                rare_matched = bool(rare)
        elif rowid in words:
            c.words_matched = len(words[rowid])
        c.passed = floor_rule(c, floor, len(kw.content), rare_matched)
        if c.passed:
            c.fused = _rrf(c)
            kept[rowid] = c

    if mode == "hybrid" and kept and use_vectors:
        _add_graph(con, kept, matrix, query_vector, filters, floor - GRAPH_FLOOR_MARGIN)  # type: ignore[arg-type]

    for c in kept.values():
        c.recency = recency_factor(c, params, now)
        c.strength_factor = strength_factor(c.strength)
        c.score = (c.fused + c.graph) * c.recency * c.strength_factor
    ordered = sorted(kept.values(), key=lambda c: (-c.score, c.id))
    picked = mmr(ordered, matrix, limit) if use_vectors else ordered[:limit]
    for expr, strong in ((kw.strong_expr, True), (kw.weak_expr, False)):
        found = snippets(con, expr, [c.rowid for c in picked if c.keyword_rank is not None and c.keyword_strong == strong])
        for c in picked:
            if c.rowid in found:
                c.snippet = found[c.rowid]
    return picked


def _rrf(c: Candidate) -> float:
    s = 0.0
    if c.keyword_rank is not None:
        s += (1.0 if c.keyword_strong else WEAK_KEYWORD_WEIGHT) / (RRF_K + c.keyword_rank)
    if c.vector_rank is not None:
        s += 1.0 / (RRF_K + c.vector_rank)
    return s


def _add_graph(
    con: apsw.Connection,
    kept: dict[int, Candidate],
    matrix: VectorMatrix,
    query_vector: np.ndarray,
    filters: Filters,
    neighbour_floor: float,
) -> None:
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
        for rowid, c in _fetch(con, f"t.id IN ({placeholders(len(missing))})", missing, filters).items():
            found = _best_chunk(matrix, query_vector, rowid)
            if found is None or found[0] < neighbour_floor:
                continue
            c.similarity, c.chunk_id = found
            c.passed = "graph"
            kept[rowid] = c
            by_id[c.id] = c
    for i, top in seed_score.items():
        c = by_id.get(i)
        if c is not None:
            c.graph = GRAPH_DAMPING * max(0.0, top - c.fused)


def mmr(ordered: list[Candidate], matrix: VectorMatrix | None, limit: int) -> list[Candidate]:
    """Maximal marginal relevance over candidates sorted by score: each pick
    maximises ``MMR_LAMBDA * relevance - (1 - MMR_LAMBDA) * similarity to the
    picks so far``; near-duplicates of a pick (same status) are dropped."""
    if not ordered or matrix is None:
        return ordered[:limit]
    import numpy as np

    top = ordered[0].score or 1.0
    n = len(ordered)
    rows = [matrix.row_of_chunk(c.chunk_id) if c.chunk_id is not None else None for c in ordered]
    has = np.array([r is not None for r in rows])
    vecs = np.zeros((n, matrix.matrix.shape[1] if len(matrix) else 1), dtype=np.float32)
    if has.any():
        vecs[has] = matrix.matrix[[r for r in rows if r is not None]]
    sim = vecs @ vecs.T  # candidates without a vector are similar to nothing (zero rows)
    status = [c.status for c in ordered]
    relevance = np.array([c.score / top for c in ordered], dtype=np.float64)
    closest = np.zeros(n)  # similarity to the nearest pick so far
    alive = np.ones(n, dtype=bool)
    picked: list[int] = []
    while alive.any() and len(picked) < limit:
        val = np.where(alive, MMR_LAMBDA * relevance - (1 - MMR_LAMBDA) * closest, -np.inf)
        best = int(np.argmax(val))
        picked.append(best)
        alive[best] = False
        dup = alive & (sim[best] >= DUPLICATE_SIMILARITY) & np.array([s_ == status[best] for s_ in status])
        alive &= ~dup
        closest = np.maximum(closest, sim[best])
    return [ordered[i] for i in picked]


def snippet_for(con: apsw.Connection, c: Candidate, words: int = 24) -> str:
    """A short excerpt of the candidate's best chunk (for vector-only hits)."""
    if c.chunk_id is None:
        return ""
    row = chunk_rows(con, [c.chunk_id]).get(c.chunk_id)
    if row is None:
        return ""
    _, start, stop, _ = row
    text = con.execute("SELECT substr(content, ?, ?) FROM traces WHERE rowid = ?", (start + 1, stop - start, c.rowid)).fetchone()
    parts = (text[0] if text else "").split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def to_hits(con: apsw.Connection, cands: Iterable[Candidate], explain: bool = False, mode: str = "hybrid") -> list[Hit]:
    """Candidates as :class:`~store.search.Hit` (score = the adjusted fused score)."""
    out = []
    for c in cands:
        extra: dict[str, Any] = {"explain": c.explain(mode)} if explain else {}
        out.append(
            Hit(
                id=c.id, title=c.title, type=c.type, kind=c.kind, path=c.path,
                score=round(c.score, 6), snippet=c.snippet or snippet_for(con, c), status=c.status, extra=extra,
            )
        )
    return out
