"""Answering ``search`` and ``context`` for one vault, in-process or in the daemon.

:class:`Retriever` holds what makes a semantic answer fast: the loaded model
and the in-memory vector matrix (reloaded when the index's vector generation
moves). The CLI builds one per command when no daemon runs; the daemon's
:class:`~.serve.QueryServer` keeps one warm. Both return the same plain
dicts, so an answer is identical whichever process computed it.

Keyword mode never imports numpy or fastembed: this module imports them
only once a semantic or hybrid answer is actually computed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import apsw

from memvault.store import location
from memvault.store.answers.search import SearchHit, SearchResult
from memvault.store.embedding import vectors as vec
from memvault.store.embedding.model import ModelUnavailable, load_embedder, resolve_model
from memvault.store.queries.search import SearchQuery
from memvault.store.retrieval.keyword import Filters, Hit, keyword_search
from memvault.vault_io.uri import obsidian_uri

if TYPE_CHECKING:
    # Recall's types are imported where it runs: a search process never loads them.
    from memvault.store.answers.recall import RecallBlock, SessionStartText
    from memvault.store.context import StoreContext
    from memvault.store.embedding.model import Embedder
    from memvault.store.queries.recall import ContextQuery, SessionStartQuery
    from memvault.store.retrieval.rank import RankParams
    from memvault.store.settings import RecallSettings

MODES = ("keyword", "semantic", "hybrid")
#: Trace kinds each choice of what to search covers (empty: every kind).
#: (Called ``scope`` before 0.3; a memory's scope is the ``memory_scope`` filter.)
WHAT_KINDS: dict[str, tuple[str, ...]] = {
    "all": (),
    "notes": ("note", "turn"),
    "memories": ("memory", "fact"),
    "facts": ("fact",),
}
IDENTITY_MODES = ("always", "relevant")


def what_of(value: str) -> str:
    """``value`` if it names a choice of what to search (:data:`WHAT_KINDS`), else a usage error."""
    if value not in WHAT_KINDS:
        from memvault.vault_io.errors import UsageError

        raise UsageError(f"what to search must be one of {', '.join(WHAT_KINDS)}, not {value!r}")
    return value


def rank_params(recall: "RecallSettings") -> "RankParams":
    """Ranking knobs from the ``[recall]`` settings."""
    from memvault.store.retrieval.rank import RankParams

    return RankParams(
        min_similarity=recall.min_similarity,
        half_lives=dict(recall.half_life),
        evergreen_tags=frozenset(recall.evergreen_tags),
    )


#: The fewest tokens a recall line takes (date, speaker or type, a few words, a short source).
MIN_LINE_TOKENS = 20


def context_candidates(budget: int) -> int:
    """How many ranked candidates a recall block of ``budget`` tokens looks at:
    as many lines as could fit (at least 20), so a roomy budget is filled
    with what ranks next rather than left empty."""
    return max(20, budget // MIN_LINE_TOKENS)


@dataclass
class _NeighbourTurn:
    """A turn recalled because it stands beside a recalled turn (neighbours.py)."""

    id: str
    score: float
    bm25: float | None = None

    @classmethod
    def beside(cls, trace_id: str, item: Any) -> "_NeighbourTurn":
        """The neighbour ``trace_id`` of recalled ``item``, at its score."""
        return cls(trace_id, item.score or item.bm25 or 0.0)


class Retriever:
    """Search and recall over one vault's index (not thread-safe: callers serialise)."""

    def __init__(self, ctx: StoreContext, con: apsw.Connection, *, words_only: bool = False) -> None:
        """A retriever of ``ctx``'s vault that reads through ``con`` (the
        store's read connection, or one of its own for another thread);
        ``words_only``: never load the model (keyword answers, as with vectors off)."""
        self.ctx = ctx
        self.settings = ctx.settings
        self.con = con
        if not ctx.settings.recall.infer_sessions:
            from memvault.store.retrieval.neighbours import infer_sessions

            infer_sessions(con, False)
        self.spec = None if words_only else resolve_model(ctx.settings.embedding.model)
        self._cache: apsw.Connection | None = None
        self._matrix: vec.VectorMatrix | None = None
        self._context: tuple[vec.VectorMatrix, Any] | None = None
        self._embedder: "Embedder | None" = None
        self._unavailable: str | None = None
        #: The time recency is measured from (benchmarks fix it).
        self.clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)

    # -- state -------------------------------------------------------------

    @property
    def model_key(self) -> str | None:
        """The key of the configured model's vectors (None: vectors off)."""
        return self.spec.key if self.spec else None

    def cache(self) -> apsw.Connection | None:
        """The embedding cache, if it exists."""
        if self._cache is None:
            self._cache = vec.open_cache(self.ctx.data_dir, create=False)
        return self._cache

    def has_vectors(self) -> bool:
        """Whether the configured model has vectors here (the default mode's test)."""
        return self.spec is not None and vec.has_vectors(self.cache(), self.spec.key)

    def embedder(self) -> "Embedder":
        """The loaded model; raises :class:`ModelUnavailable` (remembered)."""
        if self.spec is None:
            raise ModelUnavailable("vectors are turned off (embedding.model = none)")
        if self._unavailable:
            raise ModelUnavailable(self._unavailable)
        if self._embedder is None:
            try:
                self._embedder = load_embedder(self.spec, location.data_home())
            except ModelUnavailable as exc:
                self._unavailable = str(exc)
                raise
        return self._embedder

    def matrix(self) -> vec.VectorMatrix | None:
        """The vector matrix of the configured model, reloaded when stale."""
        if self.spec is None:
            return None
        if self._matrix is None or self._matrix.stale(self.con):
            self._matrix = vec.VectorMatrix.load(self.con, self.cache(), self.spec.key)
        return self._matrix

    def context_vectors(self) -> Any:
        """The conversation-neighbour mixing for the current matrix (built once per matrix)."""
        from memvault.store.retrieval.neighbours import ContextVectors

        matrix = self.matrix()
        if matrix is None:
            return None
        if self._context is None or self._context[0] is not matrix:
            self._context = (matrix, ContextVectors.build(self.con, matrix))
        return self._context[1]

    def warm(self) -> None:
        """Load the model and the matrix now (the daemon does, before queries come)."""
        from memvault.store.embedding.model import count_tokens

        count_tokens(["warm up"])  # the recall block's tokenizer: a hook's first answer has 0.3 s
        try:
            self.embedder().embed_query("warm up")
        except ModelUnavailable:
            return
        self.context_vectors()

    def close(self) -> None:
        """Close the cache connection (the index connection is the caller's)."""
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def recorded_unavailable(self) -> str | None:
        """Why a previous run could not load the configured model, if it said so."""
        return vec.recorded_unavailable(self.con, self.spec.key) if self.spec else None

    # -- search --------------------------------------------------------------

    def choose_mode(self, mode: str | None, raw: bool) -> tuple[str, list[str]]:
        """The mode to run and the notices to show (at most one)."""
        if raw:
            return "keyword", []
        if mode is None:
            if self.has_vectors():
                return "hybrid", []
            why = self.recorded_unavailable()
            return "keyword", ([f"semantic search unavailable: {why}; using keyword search"] if why else [])
        if mode == "keyword":
            return mode, []
        if self.spec is None:
            return "keyword", ["vectors are turned off (embedding.model = none); using keyword search"]
        return mode, []

    def search(self, q: SearchQuery) -> SearchResult:
        """Hits for a search, best first, the mode it ran in and notices.

        ``q.what`` picks notes, memories, facts or all; ``q.memory_scope``
        keeps only memories of those scopes (notes and facts have none and
        pass); ``since``/``until`` bound when the hits happened
        (:func:`~.when.time_bounds`). Each hit carries the plain text of its
        matching passage (``passage``) beside the highlighted snippet,
        unless ``q.passages`` is False (a reader of snippets only).
        """
        query, limit, explain = q.query, q.limit, q.explain
        statuses = ("active",) + (("deleted",) if q.include_deleted else ()) + (
            ("superseded",) if q.include_superseded else ())
        filters = Filters(types=q.types, tags=q.tags, path_glob=q.path_glob, statuses=statuses,
                          kinds=WHAT_KINDS[what_of(q.what)], scopes=q.memory_scope,
                          **self.time_bounds(q.since, q.until))
        chosen, notices = self.choose_mode(q.mode, q.raw)
        hits: list[Hit] | None = None
        qvec = None
        if chosen != "keyword":
            try:
                qvec = self.embedder().embed_query(query) if query.strip() else None
                hits = self._ranked_hits(query, chosen, filters, limit, explain, qvec)
            except ModelUnavailable as exc:
                notices = [f"semantic search unavailable: {exc}; using keyword search"]
                chosen = "keyword"
        if hits is None:
            hits = keyword_search(self.con, query, limit=limit, raw=q.raw, filters=filters)
            if explain:
                self._explain_keyword(q.raw, hits)
        if q.record:
            from memvault.store.retrieval.recall import record_recall

            record_recall(self.con, [h.id for h in hits if h.kind in ("memory", "fact")])
        scopes = self._memory_scopes([h.id for h in hits if h.kind == "memory"])
        return SearchResult(
            chosen, tuple(SearchHit.from_json({**self._hit_dict(h, explain, query, qvec, q.passages),
                                                **({"scope": scopes[h.id]} if h.id in scopes else {})})
                          for h in hits),
            tuple(notices))

    def _memory_scopes(self, ids: list[str]) -> dict[str, str]:
        """The scope of each memory of ``ids`` (``user`` when it has none)."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return {r[0]: r[1] or "user" for r in self.con.execute(
            f"SELECT id, scope FROM traces WHERE id IN ({marks})", ids)}

    def time_bounds(self, since: str | None, until: str | None) -> dict[str, str | None]:
        """``since``/``until`` as written by a person, as :class:`Filters` bounds (now: :attr:`clock`)."""
        if since is None and until is None:
            return {"since": None, "until": None}  # the time grammar is not even imported
        from memvault.store.retrieval.when import time_bounds

        return time_bounds(since, until, self.clock())

    def _ranked_hits(
        self, query: str, mode: str, filters: Filters, limit: int, explain: bool, qvec: Any = None
    ) -> list[Hit]:
        from memvault.store.retrieval.rank import to_hits

        cands = self._rank(query, mode, filters, limit, qvec)
        return to_hits(self.con, cands, explain, mode)

    def _explain_keyword(self, raw: bool, hits: list[Hit]) -> None:
        """Explain keyword-mode hits (also the fallback when the model is
        unavailable): rank and BM25, nothing else. Keyword mode is BM25 order
        alone; no similarity, graph, recency or strength takes part, and the
        explanation says so rather than show neutral factors."""
        for n, h in enumerate(hits, 1):
            # keyword_search says which hits matched every word and which
            # only some (they fill the page after the first).
            h.extra["explain"] = {
                "mode": "keyword", "keyword_rank": n, "keyword_match": "raw" if raw else h.extra.get("match", "all"),
                "keyword_bm25": h.score, "keyword_neighbours": round(h.extra.get("neighbours", 0.0), 4),
                "vector_rank": None, "vector_similarity": None, "not_applied": ["graph", "recency", "strength"],
            }

    def _rank(
        self, query: str, mode: str, filters: Filters, limit: int, qvec: Any = None, for_context: bool = False
    ) -> list[Any]:
        from memvault.store.retrieval.rank import rank

        if qvec is None:
            qvec = self.embedder().embed_query(query) if query.strip() else None
        matrix = self.matrix()
        if mode == "semantic" and qvec is None:
            return []
        return rank(
            self.con, query, matrix=matrix, query_vector=qvec, mode=mode, filters=filters, limit=limit,
            params=rank_params(self.settings.recall), now=self.clock(), context=self.context_vectors(),
            for_context=for_context,
        )

    def _hit_dict(
        self, h: Hit, explain: bool, query: str = "", qvec: Any = None, passages: bool = True
    ) -> dict[str, Any]:
        anchor = None
        if h.kind == "fact":
            from memvault.store.facts.rows import fact_anchor  # only facts need it

            anchor = fact_anchor(self.con, h.id)
        uri = obsidian_uri(self.ctx.name, h.path, anchor.anchor if anchor else None) if h.path else None
        row: dict[str, Any] = {
            "id": h.id, "title": h.title, "type": h.type, "path": h.path, "uri": uri, "score": h.score, "snippet": h.snippet,
        }
        if anchor is not None:
            # A fact points at the exact place in its source note.
            row.update(kind="fact", anchor=anchor.anchor, source_uri=anchor.source_uri,
                       heading_path=anchor.heading_path, lines=[anchor.line_start, anchor.line_end])
        turn = None
        if passages or h.kind == "turn":
            # A turn's hit is addressed at its block even when its text is not
            # wanted (a session note with turn traces is never a hit itself:
            # keyword.filter_sql leaves it out, its turns stand for it).
            passage, turn = self._passage_text(h, query, qvec)
            if passages:
                row["passage"] = passage
        if turn is not None:
            # A session note's hit is its best turn, addressed by its block id.
            from memvault.store.retrieval.turns import turn_hit

            row.update(turn_hit(self.con, h, turn, query),
                       uri=obsidian_uri(self.ctx.name, h.path, turn.anchor) if h.path else None)
            if h.kind == "turn":  # a turn trace's own title is its speaker; a hit shows its note's
                found = self.con.execute("SELECT json_extract(metadata, '$.note_title') FROM traces WHERE id = ? "
                                         "AND json_valid(metadata)", (h.id,)).fetchone()
                row["title"] = (found[0] if found else None) or h.title
        if h.status != "active":
            row["status"] = h.status
        if explain:
            row["explain"] = h.extra.get("explain") or {"keyword_rank": None}
        return row

    # -- context ---------------------------------------------------------------

    def context(self, q: ContextQuery) -> RecallBlock:
        """The recall block for a message, its lines and notices.

        ``q.what`` is "auto" (memories, facts and conversation turns ranked
        together, ordinary notes only when they beat them: :mod:`.admission`),
        "memories" (memories and facts) or "all" (ordinary notes too, each
        quoted by its matching passage); ``q.memory_scope`` keeps only
        memories of those scopes; ``q.identity`` is "relevant" (identity lines
        only when relevant, pinned or asked for) or "always" (None:
        ``recall.identity``); ``since``/``until`` bound when the recalled
        memories happened.
        """
        from memvault.store.answers.recall import RecallBlock, RecallLine, full_note
        from memvault.store.retrieval.admission import asks_about_self
        from memvault.store.retrieval.neighbours import with_turn_context
        from memvault.store.retrieval.recall import assemble, block_tokens, mark_outdated, record_recall

        message = q.message
        budget = self.settings.recall.budget if q.budget is None else int(q.budget)
        identity = q.identity or self.settings.recall.identity
        if identity not in IDENTITY_MODES:
            from memvault.vault_io.errors import UsageError

            raise UsageError(f"identity must be always or relevant, not {identity!r}")
        scopes = q.memory_scope
        if not scopes and q.prefer_scope:  # the session's project, then the person's own
            scopes = tuple(dict.fromkeys([q.prefer_scope, "user"]))
        cands, qvec, notices = self._context_candidates(q, budget, scopes)
        ids = self._identity_lines(message, identity, scopes)
        relevant = self._recall_items(with_turn_context(self.con, cands, _NeighbourTurn.beside), message, qvec)
        relevant = mark_outdated(self.con, relevant, ids)
        if q.prefer_scope and not q.memory_scope:
            relevant = self._scope_first(relevant, q.prefer_scope)
        if q.pinned:
            relevant = self._pinned_first(relevant)
        always = identity == "always" or bool(ids and asks_about_self(message))
        text, items = assemble(ids, relevant, budget, always_identity=always)
        if q.record and items:
            record_recall(self.con, list(dict.fromkeys(i.id for i in items)))
        # What was ranked relevant and did not fit: an agent can ask with a larger budget.
        left_out = len({i.id for i in relevant} - {i.id for i in items}) if text else 0
        tokens = block_tokens(text)
        return RecallBlock(text, tokens, budget, tuple(RecallLine.from_json(i.as_dict()) for i in items),
                           tuple(notices), left_out or None, full_note(tokens, budget, left_out))

    def _context_candidates(self, q: ContextQuery, budget: int,
                            scopes: Sequence[str]) -> tuple[list[Any], Any, list[str]]:
        """The ranked candidates of a recall block, the message's vector (None
        without vectors) and notices. ``what = "auto"`` ranks every kind
        together and keeps the notes that beat the rest (:mod:`.admission`)."""
        from memvault.store.retrieval.admission import AUTO, notes_that_beat

        message = q.message
        auto = q.what == AUTO
        bounds = self.time_bounds(q.since, q.until)
        filters = Filters(kinds=() if auto else WHAT_KINDS[what_of(q.what)], scopes=tuple(scopes),
                          since=bounds["since"], until=bounds["until"])
        limit = context_candidates(budget)
        # Notes that lose to the rest are dropped afterwards: rank more, so they do not take the others' places.
        wanted = 2 * limit if auto else limit
        notices: list[str] = []
        qvec = None
        if self.spec is not None and self.has_vectors():
            try:
                qvec = self.embedder().embed_query(message) if message.strip() else None
                cands = self._rank(message, "hybrid", filters, wanted, qvec, for_context=True)
            except ModelUnavailable as exc:
                notices = [f"semantic search unavailable: {exc}; using keyword search"]
                cands = self._keyword_context(message, filters, wanted)
        else:
            _, notices = self.choose_mode(None, False)
            if self.spec is None:
                notices = []
            cands = self._keyword_context(message, filters, wanted)
        return (notes_that_beat(cands, limit) if auto else cands), qvec, notices

    def _identity_lines(self, message: str, identity: str, scopes: Sequence[str]) -> list[Any]:
        """The identity items a block lists first: all of them for a session
        start (``always``) or a message about the person themself, else only
        the pinned ones (a relevant identity item is ranked like any other)."""
        from memvault.store.retrieval.admission import asks_about_self, pinned
        from memvault.store.retrieval.recall import identity_items

        ids = identity_items(self.con, self.settings.recall.identity_max, scopes)
        return ids if identity == "always" or asks_about_self(message) else pinned(self.con, ids)

    def session_start(self, q: SessionStartQuery) -> SessionStartText:
        """What a session starts with (:func:`~.session_start.session_start`)."""
        from memvault.store.retrieval.session_start import session_start

        return session_start(self, q.project, q.budget)

    def _scope_first(self, items: list[Any], scope: str) -> list[Any]:
        """``items`` with the memories of ``scope`` first, each group in its order."""
        marks = ",".join("?" * len(items))
        ours = {r[0] for r in self.con.execute(
            f"SELECT id FROM traces WHERE id IN ({marks}) AND kind = 'memory' AND scope = ?",
            [*(i.id for i in items), scope])} if items else set()
        return sorted(items, key=lambda i: i.id not in ours)

    def _pinned_first(self, items: list[Any]) -> list[Any]:
        """``items`` with the memories marked ``pinned: true`` first, each group in its order."""
        marks = ",".join("?" * len(items))
        pinned = {r[0] for r in self.con.execute(
            f"SELECT id FROM traces WHERE id IN ({marks}) AND json_valid(metadata) "
            "AND json_extract(metadata, '$.frontmatter.pinned') = 1", [i.id for i in items])} if items else set()
        return sorted(items, key=lambda i: i.id not in pinned)

    def _recall_items(self, cands: Sequence[Any], message: str, qvec: Any) -> list[Any]:
        """RecallItems for ranked candidates, best first: a note, or a memory
        long enough to have several chunks, as its matching passages."""
        from memvault.store.retrieval.neighbours import session_positions
        from memvault.store.retrieval.passages import event_when, quote
        from memvault.store.retrieval.recall import PASSAGE_MAX_TOKENS, RecallItem
        from memvault.store.retrieval.turns import turn_items

        if not cands:
            return []
        marks = ",".join("?" * len(cands))
        rows = {
            r[0]: r for r in self.con.execute(
                "SELECT id, kind, type, title, path, content, rowid, event_time, CASE WHEN json_valid(metadata) "
                "THEN json_extract(metadata, '$.frontmatter.speaker') END, CASE WHEN kind = 'turn' "
                f"THEN json_extract(metadata, '$.anchor') END FROM traces WHERE id IN ({marks})",
                [c.id for c in cands],
            )
        }
        out: list[RecallItem] = []
        places = session_positions(self.con, [r[6] for r in rows.values() if isinstance(r[8], str) and r[8]])
        for c in cands:
            row = rows.get(c.id)
            if row is None:
                continue
            trace_id, kind, type_, title, path, content, rowid, event_time, speaker, anchor = row
            score = round(c.score if c.score else (c.bm25 or 0.0), 6)
            spans = self._passages(kind, type_, rowid, content, message, qvec)
            session, position = places.get(rowid, ("", None))
            whole = RecallItem(trace_id, kind, type_, title, path, content, score=score, when=event_when(event_time),
                               speaker=speaker if isinstance(speaker, str) else "",
                               anchor=anchor if isinstance(anchor, str) else "",
                               beside=isinstance(c, _NeighbourTurn), session=session, position=position)
            if not spans:
                out.append(whole.dated())
                continue
            for span in spans:
                if span.turn is not None:
                    out += turn_items(whole, content, span.turn)
                    continue
                out.append(replace(whole, content=quote(content, span), heading=span.heading, start=span.start,
                                   max_tokens=PASSAGE_MAX_TOKENS).dated())
        return out

    def _passages(self, kind: str, type_: str, rowid: int, content: str, message: str, qvec: Any) -> list[Any]:
        """The passages to quote of a recalled trace ([] to show it whole):
        notes always, memories only when long (several chunks), facts never."""
        from memvault.store.retrieval.passages import passages_by_vector, passages_by_words, trace_spans
        from memvault.store.retrieval.recall import ITEM_MAX_TOKENS
        from memvault.store.retrieval.turns import as_turns

        if kind in ("fact", "turn") or (kind == "memory" and (type_ == "identity" or len(content) < ITEM_MAX_TOKENS * 4)):
            return []
        spans = trace_spans(self.con, rowid, content)
        if kind == "memory" and len(spans) < 2:
            return []  # a memory of one chunk is shown whole, like a short one
        if qvec is not None:
            matrix = self.matrix()
            if matrix is not None:
                found = passages_by_vector(self.con, matrix, qvec, rowid, self.settings.recall.min_similarity)
                if found:
                    return as_turns(content, found, message) if kind == "note" else found
        found = passages_by_words(spans, content, message)
        return as_turns(content, found, message) if kind == "note" else found

    def _passage_text(self, h: Hit, query: str, qvec: Any) -> tuple[str, Any]:
        """The plain text of a hit's matching passage: a fact's or a short
        memory's whole text, else the note's best chunk (by the query's
        vector when there is one, else by its words); and the session
        note's turn it is, if it is one (else None)."""
        from memvault.store.retrieval.passages import Passage, quote
        from memvault.store.retrieval.turns import turn_line

        row = self.con.execute("SELECT rowid, kind, type, content FROM traces WHERE id = ?", (h.id,)).fetchone()
        if row is None:
            return "", None
        rowid, kind, type_, content = row
        if kind == "turn":  # a turn of a session note, a trace of its own
            from memvault.store.retrieval.turns import trace_turn

            turn = trace_turn(self.con, h.id)
            return (turn_line(turn), turn) if turn is not None else (content, None)
        spans = self._passages(kind, type_, rowid, content, query, qvec)
        if not spans:  # a fact or short memory: whole (a huge one cut, so a hit stays small)
            return quote(content, Passage(0, len(content), "")), None
        span = spans[0]
        if span.turn is not None:
            return turn_line(span.turn), span.turn
        text = quote(content, span)
        return (f"{span.heading}\n{text}" if span.heading else text), None

    def _keyword_context(self, message: str, filters: Filters, limit: int) -> list[Any]:
        """Relevant memories by words alone (no vectors): the hybrid keyword
        lists without stop words, by BM25, each sharing at least half the
        message's content words (:func:`~memvault.store.retrieval.rank.keyword_recall`)."""
        from memvault.store.retrieval.rank import keyword_recall

        return keyword_recall(self.con, message, filters, limit)

