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

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import apsw

from memvault.store import location
from memvault.store.embedding import vectors as vec
from memvault.store.embedding.model import ModelUnavailable, load_embedder, resolve_model
from memvault.store.retrieval.keyword import Filters, Hit, keyword_search
from memvault.vault_io.uri import obsidian_uri

if TYPE_CHECKING:
    from memvault.store.embedding.model import Embedder
    from memvault.store.memory_store import MemoryStore
    from memvault.store.retrieval.rank import RankParams
    from memvault.store.settings import RecallSettings

MODES = ("keyword", "semantic", "hybrid")
#: Trace kinds each scope covers (empty: every kind).
SCOPE_KINDS: dict[str, tuple[str, ...]] = {
    "all": (),
    "notes": ("note",),
    "memories": ("memory", "fact"),
    "facts": ("fact",),
}


def rank_params(recall: "RecallSettings") -> "RankParams":
    """Ranking knobs from the ``[recall]`` settings."""
    from memvault.store.retrieval.rank import RankParams

    return RankParams(
        min_similarity=recall.min_similarity,
        half_lives=dict(recall.half_life),
        evergreen_tags=frozenset(recall.evergreen_tags),
    )


class Retriever:
    """Search and recall over one vault's index (not thread-safe: callers serialise)."""

    def __init__(self, store: "MemoryStore", con: apsw.Connection) -> None:
        self.store = store
        self.settings = store.settings
        self.con = con
        self.spec = resolve_model(store.settings.embedding.model)
        self._cache: apsw.Connection | None = None
        self._matrix: vec.VectorMatrix | None = None
        self._embedder: "Embedder | None" = None
        self._unavailable: str | None = None

    # -- state -------------------------------------------------------------

    @property
    def model_key(self) -> str | None:
        """The key of the configured model's vectors (None: vectors off)."""
        return self.spec.key if self.spec else None

    def cache(self) -> apsw.Connection | None:
        """The embedding cache, if it exists."""
        if self._cache is None:
            self._cache = vec.open_cache(self.store.data_dir, create=False)
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

    def warm(self) -> None:
        """Load the model and the matrix now (the daemon does, before queries come)."""
        try:
            self.embedder().embed_query("warm up")
        except ModelUnavailable:
            return
        self.matrix()

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

    def search(
        self,
        query: str,
        *,
        mode: str | None = None,
        limit: int = 10,
        types: Sequence[str] = (),
        tags: Sequence[str] = (),
        path_glob: str | None = None,
        raw: bool = False,
        scope: str = "all",
        include_deleted: bool = False,
        include_superseded: bool = False,
        explain: bool = False,
        record: bool = False,
    ) -> dict[str, Any]:
        """Hits for ``query`` as JSON-ready dicts: ``{"mode", "hits", "notices"}``."""
        statuses = ("active",) + (("deleted",) if include_deleted else ()) + (("superseded",) if include_superseded else ())
        filters = Filters(types=tuple(types), tags=tuple(tags), path_glob=path_glob, statuses=statuses, kinds=SCOPE_KINDS[scope])
        chosen, notices = self.choose_mode(mode, raw)
        hits: list[Hit] | None = None
        if chosen != "keyword":
            try:
                hits = self._ranked_hits(query, chosen, filters, limit, explain)
            except ModelUnavailable as exc:
                notices = [f"semantic search unavailable: {exc}; using keyword search"]
                chosen = "keyword"
        if hits is None:
            hits = keyword_search(self.con, query, limit=limit, raw=raw, filters=filters)
            if explain:
                self._explain_keyword(query, raw, filters, hits)
        if record:
            from memvault.store.retrieval.recall import record_recall

            record_recall(self.con, [h.id for h in hits if h.kind in ("memory", "fact")])
        return {"mode": chosen, "hits": [self._hit_dict(h, explain) for h in hits], "notices": notices}

    def _ranked_hits(self, query: str, mode: str, filters: Filters, limit: int, explain: bool) -> list[Hit]:
        from memvault.store.retrieval.rank import to_hits

        cands = self._rank(query, mode, filters, limit)
        return to_hits(self.con, cands, explain, mode)

    def _explain_keyword(self, query: str, raw: bool, filters: Filters, hits: list[Hit]) -> None:
        """Explain keyword-mode hits (also the fallback when the model is
        unavailable): rank and BM25, nothing else. Keyword mode is BM25 order
        alone; no similarity, graph, recency or strength takes part, and the
        explanation says so rather than show neutral factors."""
        from memvault.store.retrieval.keyword import TITLE_TAGS, fts_top, natural_match_expressions

        match = "raw"
        if not raw and hits:
            # keyword_search tries every word first and any word only when
            # that finds nothing (within the filters): ask which it was.
            exprs = natural_match_expressions(query, self.con)
            strict = len(exprs) < 2 or exprs[0].startswith(TITLE_TAGS) or bool(fts_top(self.con, exprs[0], filters, 1))
            match = "all" if strict else "any"
        for n, h in enumerate(hits, 1):
            h.extra["explain"] = {
                "mode": "keyword", "keyword_rank": n, "keyword_match": match, "keyword_bm25": h.score,
                "vector_rank": None, "vector_similarity": None, "not_applied": ["graph", "recency", "strength"],
            }

    def _rank(self, query: str, mode: str, filters: Filters, limit: int) -> list[Any]:
        from memvault.store.retrieval.rank import rank

        qvec = self.embedder().embed_query(query) if query.strip() else None
        matrix = self.matrix()
        if mode == "semantic" and qvec is None:
            return []
        return rank(
            self.con, query, matrix=matrix, query_vector=qvec, mode=mode, filters=filters, limit=limit,
            params=rank_params(self.settings.recall), now=datetime.now(timezone.utc),
        )

    def _hit_dict(self, h: Hit, explain: bool) -> dict[str, Any]:
        anchor = None
        if h.kind == "fact":
            from memvault.store.facts.rows import fact_anchor  # only facts need it

            anchor = fact_anchor(self.con, h.id)
        uri = obsidian_uri(self.store.name, h.path, anchor.anchor if anchor else None) if h.path else None
        row: dict[str, Any] = {
            "id": h.id, "title": h.title, "type": h.type, "path": h.path, "uri": uri, "score": h.score, "snippet": h.snippet,
        }
        if anchor is not None:
            # A fact points at the exact place in its source note.
            row.update(kind="fact", anchor=anchor.anchor, source_uri=anchor.source_uri,
                       heading_path=anchor.heading_path, lines=[anchor.line_start, anchor.line_end])
        if h.status != "active":
            row["status"] = h.status
        if explain:
            row["explain"] = h.extra.get("explain") or {"keyword_rank": None}
        return row

    # -- context ---------------------------------------------------------------

    def context(self, message: str, *, budget: int | None = None, scope: str = "memories", record: bool = True) -> dict[str, Any]:
        """The recall block for ``message``: ``{"text", "tokens", "budget", "items", "notices"}``."""
        from memvault.store.retrieval.recall import (
            assemble,
            block_tokens,
            identity_items,
            items_for,
            mark_outdated,
            record_recall,
        )

        budget = self.settings.recall.budget if budget is None else int(budget)
        filters = Filters(kinds=SCOPE_KINDS[scope])
        notices: list[str] = []
        ranked: list[tuple[str, float]] = []
        if self.spec is not None and self.has_vectors():
            try:
                cands = self._rank(message, "hybrid", filters, 20)
                ranked = [(c.id, round(c.score, 6)) for c in cands]
            except ModelUnavailable as exc:
                notices = [f"semantic search unavailable: {exc}; using keyword search"]
                ranked = self._keyword_context(message, filters)
        else:
            _, notices = self.choose_mode(None, False)
            if self.spec is None:
                notices = []
            ranked = self._keyword_context(message, filters)
        identity = identity_items(self.con, self.settings.recall.identity_max)
        relevant = mark_outdated(self.con, items_for(self.con, ranked), identity)
        text, items = assemble(identity, relevant, budget)
        if record and items:
            record_recall(self.con, [i.id for i in items])
        return {
            "text": text, "tokens": block_tokens(text), "budget": budget,
            "items": [i.as_dict() for i in items], "notices": notices,
        }

    def _keyword_context(self, message: str, filters: Filters) -> list[tuple[str, float]]:
        """Relevant memories by words alone (no vectors): the hybrid keyword
        lists without stop words, by BM25, each sharing at least half the
        message's content words (:func:`~memvault.store.retrieval.rank.keyword_recall`)."""
        from memvault.store.retrieval.rank import keyword_recall

        return [(c.id, round(c.bm25 or 0.0, 6)) for c in keyword_recall(self.con, message, filters, 20)]

