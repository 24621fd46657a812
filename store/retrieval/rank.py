"""Hybrid ranking: keyword, vector and graph signals fused, then adjusted.

1. **Keyword**: BM25 hits where every query word matches (strong), then
   hits where any content word matches (weak), ranked by BM25 on the FTS
   table; a turn of a conversation scores with its neighbouring turns
   (:mod:`.neighbours`), so the reply to a matching question joins.
2. **Vector**: the traces whose best chunk is most similar to the query; a
   turn's chunk is compared in context (its vector mixed with its
   neighbours').
3. **Relevance floor** (:mod:`.floor`): in ``context`` only candidates that
   pass count; in ``search`` the floor is a gate (nothing passes: nothing is
   shown) and candidates down to ``SEARCH_FLOOR_MARGIN`` under it stay
   listed, since evidence spread over turns often sits under it.
4. **Fusion** by reciprocal rank: ``sum(w / (RRF_K + rank))`` over the lists a
   trace is in. A strong keyword hit and a vector hit count 1; a weak keyword
   hit that is a turn of a conversation counts by how much of the query it
   carries (:func:`weak_weights`): the share of the query's content-word IDF
   (in this vault) that it and its neighbouring turns match, so a turn on
   the rare words of the query counts nearly as a strong hit and one on a
   name every other turn carries counts little; other weak hits count a
   quarter.
5. **Graph**: notes and memories one link away from the strongest hits
   (wikilinks, embeds, property links, ``related``, fact-to-source
   ``derived_from``) close ``GRAPH_DAMPING`` of the gap between their own
   fused score and the seed's (a neighbour rises towards its seed, never
   past it); a neighbour that was no candidate joins only if its own
   similarity reaches ``min_similarity - GRAPH_FLOOR_MARGIN``.
6. **Time**: a candidate from the period the query names ("in May 2023",
   "last week") gains ``TIME_MATCH_BOOST``, and so does a turn by a speaker the
   query names ("What did Teodor paint?": Teodor's turns); memories decay by the age of
   their event time (else their last change) per type, bounded below by
   ``RECENCY_FLOOR`` (:mod:`.when`); strength (0-1, 0.5 when unset) scales
   the score by ``0.5 + strength``.
7. **MMR** (lambda 0.7) orders ``context``'s candidates for diversity and
   drops near-duplicates (best chunks at cosine >= ``DUPLICATE_SIMILARITY``);
   ``search`` keeps score order (MMR moved evidence out of its top 10).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import apsw

from memvault.store.embedding.vectors import VectorMatrix, chunk_rows
from memvault.store.retrieval.candidate import Candidate, fetch_candidates
from memvault.store.retrieval.floor import (  # noqa: F401  (re-exported: the floor's knobs belong to ranking)
    KEYWORD_FLOOR_MARGIN,
    KEYWORD_FLOOR_RANK,
    KEYWORD_MIN_WORDS,
    MIN_SIMILARITY,
    SEARCH_FLOOR_MARGIN,
    apply_floor,
    floor_rule,
    keyword_relevant,
    matched_words,
)
from memvault.store.retrieval.graph import GRAPH_FLOOR_MARGIN, add_graph
from memvault.store.retrieval.keyword import (
    Filters,
    Hit,
    common_words,
    content_words,
    fts_top,
    natural_match_expressions,
    placeholders,
    prefilter_sql,
    query_words,
    quoted,
    snippets,
    trace_count_estimate,
    with_neighbours,
)
from memvault.store.retrieval.similarity import vector_candidates
from memvault.store.retrieval.when import RECENCY_FLOOR, TIME_MATCH_BOOST, named_periods

if TYPE_CHECKING:  # numpy is imported where vectors are used: keyword recall runs without it
    import numpy as np

    from memvault.store.retrieval.neighbours import ContextVectors

#: Reciprocal-rank-fusion constant. The usual 60 flattens ranks so much that
#: a note in both lists at rank 8 beats the semantic #1; a small k keeps the
#: top of each list decisive. Chosen with WEAK_KEYWORD_WEIGHT on the
#: conversational dev split (bench/bench_recall.py) under the paraphrase
#: set's bar (hybrid MRR >= semantic MRR, 0.760): dev recall@10 ranged
#: 0.68-0.71 over k 3-20 and weak weights 0.25-0.75; the best that keeps the
#: bar is k 5 with weight 0.25 (0.699, paraphrase MRR 0.767). Weight 0.5 gave
#: 0.708 on dev but paraphrase MRR 0.738; k 10 with 0.25 gave 0.697 / 0.757.
RRF_K = 5.0
#: Weight of a rank in the weak (any-word) keyword list for a hit that is no
#: turn of a conversation (a turn is weighed by :func:`weak_weights`): one
#: shared content word is thin evidence next to meaning.
WEAK_KEYWORD_WEIGHT = 0.25
#: Weight of a rank in the vector list.
VECTOR_WEIGHT = 1.0
#: How many hits each signal contributes before fusion.
CANDIDATES = 50
#: Lift of a turn whose speaker the query names: the same as for a named
#: period (both say which part of the memory the question is about). On
#: LoCoMo-dev hybrid recall@10 0.645 -> 0.662, on the conversational set dev
#: 0.719 -> 0.725 and test 0.673 -> 0.691 (0.1: 0.654, 0.723, 0.683); no
#: category of either set went down.
SPEAKER_MATCH_BOOST = TIME_MATCH_BOOST
#: How keyword and vector evidence combine (:func:`_fuse`): "score" (the
#: vector similarity and the keyword score as a share of the query's best
#: BM25, weighted as :func:`_rrf` weighs its rank, averaged: mem0's
#: additive form with a per-query normalisation instead of a sigmoid) or
#: "rrf" (weighted reciprocal ranks, :data:`RRF_K`). Chosen on LoCoMo-dev and
#: the own sets together (docs/benchmarks.md, issue 37): LoCoMo-dev turn notes
#: (3 conversations) R@10 0.707 -> 0.770, block 0.767 -> 0.826, every
#: category up; own conversational R@10 dev 0.709 -> 0.732, context 0.783 ->
#: 0.802; labelled paraphrase MRR 0.767 -> 0.830 but R@5 0.975 -> 0.950.
FUSION = "score"
#: MMR trade-off between relevance (1.0) and novelty (0.0).
MMR_LAMBDA = 0.7
#: Best chunks this similar are the same thing said twice: the lower one goes.
DUPLICATE_SIMILARITY = 0.95

DEFAULT_HALF_LIVES: dict[str, float] = {
    "identity": 180.0,
    "semantic": 90.0,
    "procedural": 90.0,
    "episodic": 14.0,
    "prospective": 0.0,
    "ongoing": 7.0,
    "note": 0.0,
}


@dataclass(frozen=True)
class RankParams:
    """The knobs of :func:`rank`, from configuration."""

    min_similarity: float = MIN_SIMILARITY
    half_lives: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_HALF_LIVES))
    evergreen_tags: frozenset[str] = frozenset({"evergreen"})
    candidates: int = CANDIDATES
    recency_floor: float = field(default_factory=lambda: RECENCY_FLOOR)


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
    #: What each hit gained from its conversation neighbours (neighbours.py).
    gains: dict[int, float] = field(default_factory=dict)


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
    gains: dict[int, float] = {}
    if len(words) > 1 and len(strong) < k and content:
        seen = {r for r, _ in strong}
        # Turns of a conversation score with their neighbours; strong hits
        # lend their any-word score to the turns around them.
        ranked, gains = with_neighbours(con, weak_expr, fts_top(con, weak_expr, filters, k, pre), filters, k + len(strong))
        weak = [h for h in ranked if h[0] not in seen][:k]
    return KeywordLists(strong, weak, strong_expr, weak_expr, content, gains)


def recency_factor(c: Candidate, params: RankParams, now: datetime) -> float:
    """The candidate's recency factor (:func:`~memvault.store.retrieval.when.recency_factor`)."""
    from memvault.store.retrieval.when import recency_factor as factor

    return factor(c.kind, c.type, c.tags, c.stamp, params.half_lives, params.evergreen_tags, now, params.recency_floor)


def strength_factor(strength: float | None) -> float:
    """``0.5 + strength``: 1.0 for the default strength 0.5."""
    s = 0.5 if strength is None else min(1.0, max(0.0, float(strength)))
    return 0.5 + s


def word_rows(con: apsw.Connection, words: Sequence[str]) -> dict[str, set[int]]:
    """The traces each of ``words`` matches (FTS5's tokenizer and stemmer),
    read up to COMMON_DOCS + 1 of them: content words match fewer."""
    from memvault.store.retrieval.keyword import COMMON_DOCS

    return {
        w: {r for (r,) in con.execute("SELECT rowid FROM traces_fts WHERE traces_fts MATCH ? LIMIT ?", (expr, COMMON_DOCS + 1))}
        for w, expr in zip(words, quoted(words))
    }


def idf(con: apsw.Connection, words: Sequence[str], rows: Mapping[str, set[int]] | None = None) -> dict[str, float]:
    """BM25's inverse document frequency of each of ``words`` in this index,
    ``ln(1 + (N - n + 0.5) / (n + 0.5))`` (the form FTS5's ``bm25()`` uses),
    ``n`` counted from :func:`word_rows` (or ``rows``, already read)."""
    rows = word_rows(con, words) if rows is None else rows
    n_traces = max(1, trace_count_estimate(con))
    return {w: math.log(1.0 + (n_traces - len(rows[w]) + 0.5) / (len(rows[w]) + 0.5)) for w in words}


def weak_weights(con: apsw.Connection, kw: KeywordLists) -> dict[int, float]:
    """The fusion weight of each weak keyword hit that is a turn of a
    conversation: the share of the query's content-word IDF that the turn
    matches, counting the words of its neighbouring turns (which lent it
    their score, :mod:`.neighbours`). Other hits keep
    :data:`WEAK_KEYWORD_WEIGHT`: a long note shares many of a query's words
    by its length alone (weighed so, the labelled set's paraphrase MRR fell
    from 0.760 to 0.737, under semantic's), while a turn is one utterance.

    A weak hit is evidence as far as the words it shares are informative in
    this vault: "beekeeping club meeting" in a chat about many things is, the
    name of one of its two speakers is not. A constant weight (0.25 before)
    either drowned keyword evidence under meaning (LoCoMo, where questions
    name rare things) or let thin matches through (paraphrases).
    """
    if not kw.weak or not kw.content:
        return {}
    from memvault.store.retrieval.neighbours import turn_neighbours

    rows = [r for r, _ in kw.weak]
    beside = turn_neighbours(con, rows)
    # A turn has a turn before or after it; an ingested session note is a
    # session of one trace, a whole transcript: weighed as a long note.
    turns = [r for r in rows if any(n is not None for n in beside.get(r, (None, None)))]
    if not turns:
        return {}  # no turn among them (most vaults): nothing more to look up
    rows_of = word_rows(con, kw.content)
    weights = idf(con, kw.content, rows_of)
    total = sum(weights.values())
    if total <= 0:
        return {}
    out = {}
    for r in turns:
        near = [x for x in (r, *beside[r]) if x is not None]
        out[r] = sum(weights[w] for w in kw.content if any(x in rows_of[w] for x in near)) / total
    return out


def named_speakers(con: apsw.Connection, query: str, rowids: Sequence[int]) -> set[int]:
    """Those of ``rowids`` said by someone the query names: a turn (memory
    or note) whose front-matter ``speaker`` has a word (a first name, say)
    among the query's words, compared lower-cased."""
    if not rowids:
        return set()
    words = {w.lower() for w in query_words(query)}
    out = set()
    for rowid, speaker in con.execute(
        f"SELECT rowid, json_extract(metadata, '$.frontmatter.speaker') FROM traces WHERE rowid IN ({placeholders(len(rowids))}) "
        "AND json_valid(metadata) AND json_type(metadata, '$.frontmatter.speaker') = 'text'",
        list(rowids),
    ):
        if any(w.lower() in words for w in query_words(speaker or "")):
            out.add(rowid)
    return out


def _keyword_candidates(con: apsw.Connection, kw: KeywordLists, filters: Filters) -> dict[int, Candidate]:
    """The keyword hits as candidates, with their rank, strength and BM25."""
    ranked = kw.strong + kw.weak
    if not ranked:
        return {}
    rank_of = {rowid: (n, bm25) for n, (rowid, bm25) in enumerate(ranked, 1)}
    fetched = fetch_candidates(con, f"t.rowid IN ({placeholders(len(rank_of))})", list(rank_of), filters)
    for c in fetched.values():
        n, c.bm25 = rank_of[c.rowid]
        c.keyword_rank, c.keyword_strong = n, n <= len(kw.strong)
        c.keyword_weight = 1.0 if c.keyword_strong else WEAK_KEYWORD_WEIGHT
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
    context: ContextVectors | None = None,
    for_context: bool = False,
) -> list[Candidate]:
    """Ranked candidates for ``query`` in ``mode`` "hybrid" or "semantic".

    ``context`` gives conversation turns their similarity in context
    (neighbours.py). For ``search`` the relevance floor decides whether the
    query finds anything at all: when some candidate passes it, the best
    ``limit`` candidates are returned in score order, whether they pass or
    not (the floor must not cut evidence from a result list). For ``context``
    (``for_context``) only candidates that pass count, and MMR orders them.
    """
    filters = filters or Filters()
    params = params or RankParams()
    now = now or datetime.now(timezone.utc)
    k = max(params.candidates, limit)
    cands: dict[int, Candidate] = {}
    # (matrix, query vector, own similarities, similarities in context) when vectors take part.
    vectors: tuple[VectorMatrix, np.ndarray, np.ndarray, np.ndarray] | None = None
    if matrix is not None and query_vector is not None and len(matrix) > 0:
        own = sims = matrix.similarities(query_vector)  # the same array when no context changes it
        if context is not None:
            own, sims = context.apply(own, matrix, query_vector)
        vectors = (matrix, query_vector, own, sims)
    use_vectors = vectors is not None

    kw = KeywordLists([], [], "", "", [])
    if mode == "hybrid":
        kw = keyword_hits(con, query, filters, k)
        cands.update(_keyword_candidates(con, kw, filters))
        weights = weak_weights(con, kw)
        for c in cands.values():
            if c.keyword_rank is not None and not c.keyword_strong:
                c.keyword_weight = weights.get(c.rowid, WEAK_KEYWORD_WEIGHT)
    if vectors is not None:
        vector_candidates(con, cands, vectors[0], vectors[1], vectors[3], vectors[2], filters, k, context)

    floor = params.min_similarity
    passed = apply_floor(con, cands, kw, floor)
    if not passed:
        return []
    kept = passed if for_context else {
        r: c for r, c in cands.items()
        if c.passed or (c.similarity is not None and c.similarity >= floor - SEARCH_FLOOR_MARGIN)
    }
    _fuse(kept.values())

    if mode == "hybrid" and vectors is not None:
        add_graph(con, kept, vectors[0], vectors[1], filters, floor - GRAPH_FLOOR_MARGIN, context)

    periods = named_periods(query, now) if mode == "hybrid" else []
    named = named_speakers(con, query, list(kept)) if mode == "hybrid" else set()
    for c in kept.values():
        if any(p.start <= c.happened < p.end for p in periods):
            c.time_match = 1.0 + TIME_MATCH_BOOST
        c.recency = recency_factor(c, params, now)
        c.strength_factor = strength_factor(c.strength)
        if c.rowid in named:
            c.speaker_match = 1.0 + SPEAKER_MATCH_BOOST
        c.score = (c.fused + c.graph) * c.time_match * c.speaker_match * c.recency * c.strength_factor
    ordered = sorted(kept.values(), key=lambda c: (-c.score, c.id))
    picked = mmr(ordered, matrix, limit) if use_vectors and for_context else ordered[:limit]
    for expr, strong in ((kw.strong_expr, True), (kw.weak_expr, False)):
        found = snippets(con, expr, [c.rowid for c in picked if c.keyword_rank is not None and c.keyword_strong == strong])
        for c in picked:
            if c.rowid in found:
                c.snippet = found[c.rowid]
    return picked


def _fuse(cands: Iterable[Candidate]) -> None:
    """Each candidate's fused score (:data:`FUSION`): for "score", the mean of
    its similarity (0 below zero or without a vector) and its BM25 as a share
    of the best among the candidates, times its keyword weight. Both halves
    are on one scale (0-1) whatever the query, so a strong keyword hit and a
    close paraphrase meet in the middle instead of by rank alone."""
    cands = list(cands)
    if FUSION == "rrf":
        for c in cands:
            c.fused = _rrf(c)
        return
    top = max((c.bm25 or 0.0 for c in cands if c.keyword_rank is not None), default=0.0)
    for c in cands:
        kw = 0.0
        if c.keyword_rank is not None and top > 0:
            kw = (c.bm25 or 0.0) / top * c.keyword_weight
        c.fused = (max(0.0, c.similarity or 0.0) + kw) / 2


def _rrf(c: Candidate) -> float:
    s = 0.0
    if c.keyword_rank is not None:
        s += c.keyword_weight / (RRF_K + c.keyword_rank)
    if c.vector_rank is not None:
        s += VECTOR_WEIGHT / (RRF_K + c.vector_rank)
    return s


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
