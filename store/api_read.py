"""The reading half of :class:`~memvault.store.memory_store.MemoryStore`.

Search, recall, browsing and the lookups every front end shows (a note, its
links, a memory's history, conflicts, facts). Nothing here writes the vault;
the one write is recall bookkeeping inside the retriever. Kept apart from
the store's core so that each file reads in one sitting.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memvault.store.api_parts import StoreParts
from memvault.vault_io.errors import MemvaultError, UsageError

if TYPE_CHECKING:
    from memvault.store.answers.browse.facts import SourceFacts
    from memvault.store.answers.browse.history import MemoryVersion
    from memvault.store.answers.browse.listing import TracePage
    from memvault.store.answers.browse.stats import IndexStats
    from memvault.store.answers.browse.trace import Backlink, Link, ReadResult, ShowResult
    from memvault.store.answers.keys import KeyClash, KeyLookup
    from memvault.store.answers.recall import RecallBlock, SessionStartText
    from memvault.store.answers.reflect import Reflection
    from memvault.store.answers.review import (
        ConflictCopy,
        Contradiction,
        CopySides,
        IdentityItem,
        MemorySource,
        ModelStatus,
    )
    from memvault.store.answers.search import SearchResult
    from memvault.store.queries.recall import ContextQuery, SessionStartQuery
    from memvault.store.queries.search import SearchQuery


class ReadAPI(StoreParts):
    """Search, recall and lookups of a :class:`MemoryStore` (a mixin)."""

    def search(self, q: SearchQuery) -> SearchResult:
        """Hits for a search (see :meth:`Retriever.search`)."""
        return self.retriever.search(q)

    def context(self, q: ContextQuery) -> RecallBlock:
        """The recall block for a message (see :meth:`Retriever.context`)."""
        return self.retriever.context(q)

    def session_start(self, q: SessionStartQuery) -> SessionStartText:
        """What an agent's session starts with (see :meth:`Retriever.session_start`)."""
        return self.retriever.session_start(q)

    def current_versions(self, ids: list[str]) -> dict[str, int]:
        """The current version of each memory in ``ids`` (what ``update --expect-version`` checks)."""
        from memvault.store.memories.rows import current_versions

        return current_versions(self.read_con(), ids)

    def answer_by_words(self, q: "ContextQuery | SessionStartQuery") -> "RecallBlock | SessionStartText":
        """``q`` answered without loading the embedding model (keyword
        recall, as with vectors off): what a session hook can afford when no
        daemon has the model warm."""
        from memvault.store.retrieval.retriever import Retriever

        retriever = Retriever(self.ctx, self.read_con(), words_only=True)
        method: Callable[[Any], RecallBlock | SessionStartText] = getattr(retriever, q.OP)
        return method(q)

    def show(self, ref: str) -> ShowResult:
        """One note, memory or fact by id, vault path or title, as the index
        holds it (``path#^t12``: one turn of a session note)."""
        from memvault.store.index import lookup

        if "#^" in ref and lookup.find_trace(self.read_con(), ref) is None:
            from memvault.store.retrieval.turns import narrow_to_block

            base, block = ref.rsplit("#^", 1)
            return narrow_to_block(lookup.describe(self.read_con(), self._trace(base), self.name), block)
        return lookup.describe(self.read_con(), self._trace(ref), self.name)

    def links(self, ref: str) -> builtins.list[Link]:
        """Outgoing links, embeds and property links of a trace, resolved."""
        from memvault.store.index import lookup

        return lookup.outgoing(self.read_con(), self._trace(ref).id)

    def backlinks(self, ref: str) -> builtins.list[Backlink]:
        """Traces that link to ``ref`` (a trace, or an attachment by path)."""
        from memvault.store.index import lookup

        con = self.read_con()
        attachment = lookup.find_attachment(con, ref)
        if attachment:  # an image or PDF: no trace, but notes embed and link it
            return lookup.incoming_to_path(con, attachment)
        return lookup.incoming(con, self._trace(ref).id)

    def stats(self, *, parse_errors: bool = False) -> IndexStats:
        """Counts of what the index holds (and every parse error, if asked)."""
        from dataclasses import replace

        from memvault.store.answers.browse.stats import NoteParseError
        from memvault.store.index import lookup

        con = self.read_con()
        errors = tuple(NoteParseError(p, e) for p, e in lookup.parse_errors(con)) if parse_errors else None
        return replace(lookup.stats(con, self.index_path), vault=str(self.root), parse_error_list=errors)

    def history(self, ref: str) -> builtins.list[MemoryVersion]:
        """The versions of a memory or fact, newest first, then the memories
        merged into it (each marked ``merged into``)."""
        from memvault.store.answers.browse.history import MemoryVersion
        from memvault.store.consolidation.rows import merged_members
        from memvault.store.db.records import get_trace

        self.read_con()  # a vault never indexed: say so, and create nothing (reading never writes)
        traces = self.memories.history(ref)
        traces += [t for m in merged_members(self.con, traces[0].id) if (t := get_trace(self.con, m)) is not None]
        return [MemoryVersion(id=t.id, status=t.status, reason=t.reason, type=t.type, updated=t.updated,
                              content=t.content, tags=tuple(t.tags)) for t in traces]

    def list(
        self, *, what: str = "memories", types: Sequence[str] = (), scopes: Sequence[str] = (),
        tags: Sequence[str] = (), sort: str = "updated", since: str | None = None, until: str | None = None,
        include_deleted: bool = False, limit: int = 50, cursor: str | None = None, key: str | None = None,
    ) -> TracePage:
        """A page of memories (or notes, facts), ``cursor`` where the last
        one ended (see :func:`~memvault.store.index.browse.list_traces`);
        ``key``: memories holding that key (``deploy.*``: every key it begins)."""
        from memvault.store.index import browse

        return browse.list_traces(self.read_con(), self.name, what=what, types=types, scopes=scopes, tags=tags,
                                  sort=sort, since=since, until=until, include_deleted=include_deleted,
                                  limit=limit, cursor=cursor, key=key)

    def key_holder(self, key: str, scope: str = "user") -> KeyLookup:
        """Who holds ``key`` in ``scope``: the holder's id (None: nobody) and
        the other live memories that hold it too (a clash, see :mod:`.memories.keys`)."""
        from memvault.store.answers.keys import KeyLookup
        from memvault.store.memories.keys import check_key, holders

        key, scope = check_key(key), scope.strip() or "user"
        found = holders(self.read_con(), key, scope)
        return KeyLookup(key, scope, found[0].id if found else None, tuple(h.id for h in found[1:]))

    def key_clashes(self) -> builtins.list[KeyClash]:
        """Every key of a scope that two or more live memories hold (see :mod:`.memories.keys`)."""
        from memvault.store.memories.keys import clashes

        return clashes(self.read_con())

    def recent(
        self, *, since: str | None = "7 days", until: str | None = None, what: str = "all",
        types: Sequence[str] = (), scopes: Sequence[str] = (), limit: int = 20, cursor: str | None = None,
    ) -> TracePage:
        """What changed lately, newest first, ``cursor`` where the last page
        ended (see :func:`~memvault.store.index.browse.recent`)."""
        from memvault.store.index import browse

        return browse.recent(self.read_con(), self.name, since=since, until=until, what=what, types=types,
                             scopes=scopes, limit=limit, cursor=cursor)

    def read(self, ref: str, heading: str | None = None) -> ReadResult:
        """One note, memory or fact with its metadata, version, links both
        ways and ``obsidian://`` URI; ``heading`` narrows a note to one
        section, and ``path#^t12`` a session note to one turn."""
        from memvault.store.index import browse
        from memvault.store.index.lookup import find_trace

        if "#^" in ref and find_trace(self.read_con(), ref) is None:
            # "path#^t12": one turn of a session note, as search names it.
            from memvault.store.retrieval.turns import narrow_to_block

            base, block = ref.rsplit("#^", 1)
            return narrow_to_block(browse.read_trace(self.read_con(), self.name, self._trace(base)), block)
        return browse.read_trace(self.read_con(), self.name, self._trace(ref), heading)

    def identity(self, limit: int | None = None) -> builtins.list[IdentityItem]:
        """The active identity memories and identity facts (an "About me"
        source's lines), strongest and newest first."""
        from memvault.store.answers.review import IdentityItem
        from memvault.store.retrieval.recall import identity_items

        items = identity_items(self.read_con(), limit or self.settings.recall.identity_max)
        return [IdentityItem(id=i.id, kind=i.kind, type=i.type, path=i.path, content=i.content) for i in items]

    def _trace(self, ref: str) -> Any:
        from memvault.store.index.lookup import find_trace
        from memvault.vault_io.confine import check_inside

        # A path that leads (by a symlink) out of the vault is refused before
        # any lookup, and so is a trace whose file does (an index not yet
        # synced may still hold one): nothing outside the vault is shown.
        path = ref.strip().lstrip("/").replace("\\", "/")
        for candidate in (path, path + ".md") if path else ():
            check_inside(self.root, candidate, shown=ref)
        trace = find_trace(self.read_con(), ref)
        if trace is None:
            raise MemvaultError(f"no note or trace matches {ref!r} (give an id or a vault path)")
        if trace.path:
            check_inside(self.root, trace.path, shown=ref)
        return trace

    def model_status(self) -> ModelStatus:
        """The configured embedding model and how much of the vault has its vectors."""
        from memvault.store.answers.review import ModelCoverage, ModelStatus
        from memvault.store.embedding import vectors as vec
        from memvault.store.embedding.model import resolve_model

        spec = resolve_model(self.settings.embedding.model)
        if spec is None:
            return ModelStatus(self.settings.embedding.model, None)
        con = self.read_con()
        cache = vec.open_cache(self.data_dir, create=False)
        try:
            done, total = vec.coverage(con, cache, spec.key)
        finally:
            if cache is not None:
                cache.close()
        coverage = ModelCoverage(chunks=total, embedded=done, unembedded=total - done, queued=vec.queue_size(con),
                                 unavailable=vec.recorded_unavailable(con, spec.key))
        return ModelStatus(self.settings.embedding.model, spec.key, coverage)

    def conflicts(self) -> builtins.list[ConflictCopy]:
        """Conflict copies still in the vault, each with whose version it holds
        (``side``): memvault's own (``kind`` "memvault": this device's store
        version, written beside a note a person changed meanwhile; resolved by
        merging and deleting the ``(conflict ...)`` note), another device's
        memvault copy that the sync tool brought here (also "memvault", side
        "store version written on another device"), and sync tools' copies
        (``kind`` "sync": the other device's version; the note keeps the one
        the tool kept)."""
        from memvault.store.answers.review import CarriedConflict, OwnConflict, SyncCopy
        from memvault.store.index.lookup import sync_conflicts
        from memvault.store.memories.rows import conflicts
        from memvault.vault_io.sync_conflicts import SyncConflict

        con = self.read_con()
        # Without the vault folder nobody can tell which were resolved: list all.
        missing = not self.root.is_dir()
        own = [
            OwnConflict(id=c.trace_id, note=c.path, conflict_note=c.conflict_path, detail=c.detail, when=c.created,
                        kind="memvault", side="this device's store version")
            for c in conflicts(con)
            if c.conflict_path is None or missing or (self.root / c.conflict_path).exists()
        ]
        synced = [
            SyncCopy(id=c["id"], note=c["note"], conflict_note=c["conflict_note"], tool=c["tool"], device=c["device"],
                     differs=c["differs"], kind="sync", when=None,
                     side=SyncConflict(c["tool"], c["note"], c["device"]).describe(),
                     detail=f"{c['tool']} kept two versions" + ("" if c["differs"] else " (the same text)"))
            for c in sync_conflicts(con)
        ]
        listed = {c.conflict_note for c in own} | {c.conflict_note for c in synced}
        # memvault's conflict notes written on another device reach this one
        # through the sync tool; this device's state has no record of them.
        carried = [
            CarriedConflict(id=memory_id, note=rec_path, conflict_note=path, kind="memvault", when=None,
                            detail="the store's version, written beside a note edited meanwhile",
                            side="a store version written on another device")
            for path, memory_id, rec_path in con.execute(
                "SELECT f.path, json_extract(t.metadata, '$.frontmatter.conflict_of'), m.path "
                "FROM files f JOIN traces t ON t.id = f.trace_id "
                "LEFT JOIN traces m ON m.id = json_extract(t.metadata, '$.frontmatter.conflict_of') "
                "WHERE t.kind = 'note' AND json_valid(t.metadata) "
                "AND json_extract(t.metadata, '$.frontmatter.conflict_of') IS NOT NULL ORDER BY f.path")
            if path not in listed
        ]
        return [*own, *carried, *synced]

    def contradictions(self, status: str | None = "open") -> builtins.list[Contradiction]:
        """Flagged contradictions (``open`` by default), with both texts."""
        from memvault.store.answers.review import Contradiction, ContradictionSide
        from memvault.store.consolidation.rows import contradictions
        from memvault.store.db.records import get_trace

        def side(trace_id: str) -> ContradictionSide:
            t = get_trace(self.con, trace_id)
            return ContradictionSide(trace_id, t.content if t else None, t.path if t else None)

        return [Contradiction(id=c.id, kind=c.kind, status=c.status, reason=c.reason, run=c.run_id, flagged=c.created,
                              newer=side(c.newer_id), older=side(c.older_id))
                for c in contradictions(self.read_con(), status)]

    def reflect(self, question: str, block: "RecallBlock | None" = None, *, use_llm: bool = True) -> "Reflection":
        """``question`` answered from memory by the configured llm, citing ids
        and note links, or the evidence pack to answer it (the recall block,
        here or ``block`` from the daemon, and the open contradictions and
        action items it touches): :mod:`.retrieval.reflect`."""
        from memvault.store.queries.recall import ContextQuery
        from memvault.store.retrieval.reflect import reflect

        if not question.strip():
            raise UsageError("reflect needs a question")
        if block is None:
            block = self.context(ContextQuery(question, record=False))
        return reflect(self.settings, self.read_con(), question, block, self.contradictions("open"), use_llm=use_llm)

    def note_count(self) -> int:
        """How many notes the index holds."""
        from memvault.store.index import lookup

        return lookup.count_notes(self.con)

    def indexed_paths_under(self, folder: str) -> set[str]:
        """Every indexed vault path under ``folder`` (a daemon's folder event)."""
        from memvault.store.index import lookup

        return lookup.paths_under(self.con, folder)

    def conflict_copy(self, copy_path: str) -> CopySides:
        """What a conflict copy is: its note, its memory (if any), whose
        version each side holds, and both texts (see :mod:`.memories.copies`)."""
        from memvault.store.memories.copies import describe_copy

        return describe_copy(self.ctx, copy_path)

    def source_list(self) -> builtins.list[MemorySource]:
        """Every memory source, how it is marked, and its fact count."""
        return self.sources.list()

    def facts(self, path: str, include_superseded: bool = False) -> SourceFacts:
        """The facts of one source note, with its vault path and whether the note is indexed."""
        return self.sources.facts(path, include_superseded)
