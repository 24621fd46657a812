"""The memory store of one vault: the one object every front end calls.

The CLI, the daemon, the MCP server, importers and consolidation all go
through a :class:`MemoryStore`; none of them assembles the pipeline itself::

    store = MemoryStore.open("~/Notes")        # settings from flags, env, file
    report = store.sync(embed=True)            # reconcile, facts, pending writes, vectors
    hits = store.search("weekly review")
    store.add("Prefers dark mode", "preference")
    store.close()

What it holds: the vault folder, the effective :class:`Settings`, and the
vault's private data dir with its two databases (see :mod:`.db.connection`):
``index.db``, the *derived* index that can be dropped and rebuilt from the
vault at any time, and ``state.db``, the *durable* state only memvault knows
(memory versions, forgets, recall statistics, fact history, conflicts, the
outbox). The collaborators that do the work (the reconciler, the memory
mirror, the fact sources, the retriever) are built once per store and share
its connection; a long-running caller (the daemon) keeps one store and asks
:meth:`connect` for extra connections for its background threads.

The post-sync sequence lives here once (:meth:`_after_sync`): after a
reconcile (whose observers extract facts) the outbox of store-side writes
that a dead writer left behind is finished, ``last_sync`` is recorded, and
whoever listens (the daemon's embedding service) is told.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import apsw

from memvault.store import location
from memvault.store.db.connection import IndexDatabaseError, connect
from memvault.store.settings import Settings, load_settings
from memvault.vault_io.errors import MemvaultError, UsageError

if TYPE_CHECKING:
    from memvault.store.consolidation.merge import MergeOutcome
    from memvault.store.consolidation.run import RunReport, UndoReport
    from memvault.store.embedding.cache import PruneReport
    from memvault.store.embedding.pipeline import EmbedReport
    from memvault.store.facts.observer import Defer, FactObserver
    from memvault.store.facts.source_notes import Sources
    from memvault.store.flows.backup import RestoreReport
    from memvault.store.flows.export import ExportOptions, ExportReport
    from memvault.store.flows.ingest import IngestReport
    from memvault.store.flows.sink import ImportReport
    from memvault.store.index.doctor import DoctorReport
    from memvault.store.index.rebuild import Restored
    from memvault.store.index.reconcile import Indexer, SyncSummary
    from memvault.store.memories.mirror import Memories, WriteResult
    from memvault.store.retrieval.retriever import Retriever

#: Store-side writes older than this (seconds) are taken for a dead writer's
#: and finished by the next sync; younger ones may still be in progress.
STALE_WRITE_S = 30.0

Progress = Callable[[int, int], None]
SyncListener = Callable[[str, "SyncSummary"], None]


class VaultError(UsageError):
    """The vault cannot be used (missing, not a folder, unreadable)."""


class NoIndexError(MemvaultError):
    """A read-only command ran before the vault was ever indexed."""


def resolve_vault_path(value: str | os.PathLike[str] | None) -> Path:
    """Check and absolutise a vault path given by flag, environment or config."""
    if value is None or str(value).strip() == "":
        raise VaultError(
            "no vault given: pass --vault PATH, set MEMVAULT_VAULT, or set `vault` in the config file"
        )
    path = Path(os.path.expanduser(str(value))).absolute()
    if not path.exists():
        raise VaultError(f"vault folder {path} does not exist")
    if not path.is_dir():
        raise VaultError(f"vault path {path} is not a folder")
    if not os.access(path, os.R_OK | os.X_OK):
        raise VaultError(f"vault folder {path} is not readable")
    home = location.data_home()
    if location.inside(home, path):
        # The index is a cache of the vault: inside it, it would be synced,
        # backed up and scanned along with the notes.
        raise VaultError(
            f"memvault's data dir {home} is inside the vault {path}: "
            "set MEMVAULT_HOME to a folder outside the vault"
        )
    return path


@dataclass
class SyncReport:
    """What one sync did: the reconcile's summary, the store-side writes it
    finished or could not finish, and the embedding run (when asked for)."""

    summary: "SyncSummary"
    restored: "Restored | None" = None  # what a fresh index got back from the durable state
    finished: list[str] = field(default_factory=list)  # ids whose interrupted write was finished
    unwritten: list[str] = field(default_factory=list)  # one line per note that still cannot be written
    embedding: "EmbedReport | None" = None

    def __getattr__(self, name: str) -> Any:
        # A report reads like its reconcile summary: report.added, report.warnings.
        if name == "summary":
            raise AttributeError(name)
        return getattr(self.summary, name)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the summary's keys, plus ``unwritten`` and ``embedding``)."""
        data = self.summary.as_dict()
        data["unwritten"] = list(self.unwritten)
        if self.restored is not None:
            data["restored"] = self.restored.as_dict()
        if self.embedding is not None:
            data["embedding"] = self.embedding.as_dict()
        return data


class MemoryStore:
    """One vault's memory: index, durable state, and every operation on them."""

    def __init__(self, root: Path, settings: Settings, *, data_dir: Path | None = None) -> None:
        self.root = root
        self.settings = settings
        if data_dir is not None:  # else derived from the vault's path (see location)
            self.__dict__["data_dir"] = data_dir
        #: Where llm fact extraction goes instead of being asked inline: the
        #: daemon's background worker, for every fact observer of this store.
        self.fact_defer: "Defer | None" = None
        #: Called after every sync with (kind, summary); kind is "sync" or "paths".
        self.sync_listeners: list[SyncListener] = []
        #: Session note id -> the fact ids it is to keep, while memvault's own
        #: export is restored: its facts are what the export lists, not what
        #: the repeat rule would decide in a vault filled in another order.
        self.fact_keep: dict[str, set[str]] = {}

    @classmethod
    def open(cls, vault: str | None = None, overrides: dict[str, Any] | None = None) -> "MemoryStore":
        """Load settings (flags in ``overrides``) and check the vault path."""
        settings = load_settings({"vault": vault, **(overrides or {})})
        return cls(resolve_vault_path(settings.vault), settings)

    # -- where things live -------------------------------------------------

    @property
    def name(self) -> str:
        """The vault's name as Obsidian shows it: its folder name."""
        return self.root.name

    @cached_property
    def data_dir(self) -> Path:
        """The private folder that holds this vault's databases, lock and socket."""
        return location.vault_data_dir(self.root)

    @property
    def index_path(self) -> Path:
        """The derived index database."""
        return self.data_dir / location.INDEX_FILE

    @property
    def state_path(self) -> Path:
        """The durable state database."""
        return self.data_dir / location.STATE_FILE

    def has_index(self) -> bool:
        """Whether this vault has been indexed before."""
        return self.index_path.exists()

    # -- connections ----------------------------------------------------------

    @cached_property
    def con(self) -> apsw.Connection:
        """The store's own connection (index with state attached), creating both if needed."""
        return self.connect()

    def connect(self) -> apsw.Connection:
        """A new connection for a background thread (each thread its own)."""
        location.ensure_private_dir(self.data_dir)
        return connect(self.index_path, state=self.state_path)

    def read_con(self) -> apsw.Connection:
        """The connection for read-only commands; refuses to create an index."""
        if not self.has_index():
            raise NoIndexError(
                f"vault {self.root} has no index yet: run `memvault --vault {self.root} sync` first"
            )
        try:
            return self.con
        except IndexDatabaseError as exc:
            raise NoIndexError(str(exc)) from exc

    def close(self) -> None:
        """Close the store's connections (it can be used again: they reopen)."""
        retriever = self.__dict__.pop("retriever", None)
        if retriever is not None:
            retriever.close()
        for name in ("reconciler", "memories", "sources"):
            self.__dict__.pop(name, None)
        con = self.__dict__.pop("con", None)
        if con is not None:
            con.close()

    # -- collaborators (one each per store) -------------------------------------

    def fact_observer(self, con: apsw.Connection | None = None) -> "FactObserver":
        """A fact observer on ``con`` (default: the store's own connection)."""
        from memvault.store.facts.observer import FactObserver

        observer = FactObserver(self.root, con or self.con, self.settings)
        observer.defer = self.fact_defer
        observer.keep = self.fact_keep
        return observer

    @cached_property
    def reconciler(self) -> "Indexer":
        """The reconciler of vault and index, with the fact observer attached."""
        from memvault.store.index.reconcile import Indexer

        return Indexer(
            self.root, self.con, ignore=self.settings.ignore, max_file_size=self.settings.max_file_size,
            memory_folder=self.settings.memory_folder, observers=[self.fact_observer()],
        )

    def refresh_source_globs(self) -> None:
        """Extract (or retire) notes whose source status changed because the
        ``sources`` globs changed since the last run (a no-op otherwise)."""
        from memvault.store.facts.observer import FactObserver

        for observer in self.reconciler.observers:
            if isinstance(observer, FactObserver):
                observer.refresh_globs()

    @cached_property
    def memories(self) -> "Memories":
        """The memory mirror: store-side changes written to the vault."""
        from memvault.store.memories.mirror import Memories

        return Memories(self)

    @cached_property
    def sources(self) -> "Sources":
        """Memory-source marking and fact listing."""
        from memvault.store.facts.source_notes import Sources

        return Sources(self)

    @cached_property
    def retriever(self) -> "Retriever":
        """Search and recall over this store (model and vectors loaded lazily)."""
        from memvault.store.retrieval.retriever import Retriever

        return Retriever(self, self.read_con())

    # -- syncing --------------------------------------------------------------------

    def sync(
        self,
        progress: Progress | None = None,
        *,
        embed: bool = False,
        embed_progress: Progress | None = None,
        stale_after: float = STALE_WRITE_S,
    ) -> SyncReport:
        """Bring the index in line with the whole vault, then (``embed``)
        embed what changed. ``progress(done, total)`` is called per note read."""
        self.refresh_source_globs()
        dialect = self._glob_dialect_check()
        report = self._after_sync("sync", self.reconciler.sync(progress=progress), stale_after)
        if dialect is not None:
            report.summary.warnings += dialect(report)
        if embed:
            report.embedding = self.embed(embed_progress)
        return report

    def _glob_dialect_check(self) -> "Callable[[SyncReport], list[str]] | None":
        """Once per set of ``ignore``/``sources`` patterns on an existing
        index: a check, run after the sync, of patterns that match the paths
        seen before or after it differently than memvault 0.1's dialects did."""
        import json

        from memvault.store.db import records as rec
        from memvault.store.db.connection import write_transaction
        from memvault.store.index import lookup
        from memvault.vault_io.globs import old_dialect_differences

        patterns = json.dumps([self.settings.ignore, self.settings.sources])
        if not (self.settings.ignore or self.settings.sources) or rec.get_meta(self.con, "globs_checked") == patterns:
            return None
        before = lookup.paths_under(self.con, "")

        def check(report: SyncReport) -> list[str]:
            with write_transaction(self.con):
                rec.set_meta(self.con, "globs_checked", patterns)
            if not before:
                return []  # a first index: nothing was ever matched the old way
            seen = before | lookup.paths_under(self.con, "")
            return (old_dialect_differences("ignore", self.settings.ignore, seen)
                    + old_dialect_differences("sources", self.settings.sources, seen))

        return check

    def sync_paths(self, paths: Iterable[str], *, stale_after: float = STALE_WRITE_S) -> SyncReport:
        """Reconcile only ``paths`` (a watcher's hints); others are untouched."""
        self.refresh_source_globs()  # one meta read while the globs stay as they were
        return self._after_sync("paths", self.reconciler.sync_paths(paths), stale_after)

    def _after_sync(self, kind: str, summary: "SyncSummary", stale_after: float) -> SyncReport:
        """The one post-sync sequence (module docstring)."""
        from memvault.store.db import records as rec
        from memvault.store.db.connection import write_transaction
        from memvault.store.index.rebuild import apply_state, backfill_state, recover_trash, state_applied
        from memvault.store.memories.mirror import flush_outbox

        report = SyncReport(summary)
        if kind == "sync" and not state_applied(self.con):
            # A fresh index (first sync, rebuild, deleted index.db): give it
            # back what only the durable state (or the vault's .trash) knows,
            # before pending writes are finished on top of it.
            report.restored = recover_trash(self.con, self.root, apply_state(self.con))
        elif kind == "sync":
            backfill_state(self.con)
        for result in flush_outbox(self, stale_after, errors=report.unwritten):
            report.finished.append(result.id)
            summary.warnings.append(f"finished an interrupted write of {result.id}")
        from memvault.store.consolidation.links import apply_durable

        apply_durable(self.con)  # merges, contradictions and links only the durable state holds
        if kind == "sync":
            with write_transaction(self.con):
                rec.set_meta(self.con, "last_sync", rec.now_iso())
        for listener in list(self.sync_listeners):
            listener(kind, summary)
        return report

    def rebuild(
        self, progress: Progress | None = None, *, embed: bool = False, embed_progress: Progress | None = None
    ) -> SyncReport:
        """Drop the derived index and build it again from the vault and the
        durable state (nothing only memvault knows is lost; vectors come back
        from the embedding cache). The caller makes sure no daemon uses it."""
        from memvault.store.index.doctor import data_files

        self.close()
        for path in data_files(self.data_dir):
            path.unlink(missing_ok=True)
        return self.sync(progress, embed=embed, embed_progress=embed_progress)

    def doctor(self, *, repair: bool = False, progress: Progress | None = None) -> "DoctorReport":
        """Check both databases and the vault; with ``repair``, fix what can be."""
        from memvault.store.index import doctor

        report = doctor.DoctorReport(doctor.diagnose(self))
        if repair and report.findings:
            report.repaired = doctor.repair(self, report.findings, progress)
            report.findings = doctor.diagnose(self)
        return report

    def embed(self, progress: Progress | None = None, should_stop: Callable[[], bool] = lambda: False) -> "EmbedReport":
        """Chunk and embed whatever has no vector yet (a missing model is
        reported in the result, not raised)."""
        from memvault.store.embedding.pipeline import EmbeddingPipeline

        pipeline = EmbeddingPipeline.for_store(self, self.con)
        try:
            return pipeline.run(progress, should_stop)
        finally:
            pipeline.close()

    # -- reading ---------------------------------------------------------------------

    def search(self, query: str, **options: Any) -> dict[str, Any]:
        """Hits for ``query``: ``{"mode", "hits", "notices"}`` (see :meth:`Retriever.search`)."""
        return self.retriever.search(query, **options)

    def context(self, message: str, **options: Any) -> dict[str, Any]:
        """The recall block for ``message`` (see :meth:`Retriever.context`)."""
        return self.retriever.context(message, **options)

    def show(self, ref: str) -> dict[str, Any]:
        """One note, memory or fact by id, vault path or title, as a dict."""
        from memvault.store.index import lookup

        return lookup.describe(self.read_con(), self._trace(ref), self.name)

    def links(self, ref: str) -> list[dict[str, Any]]:
        """Outgoing links, embeds and property links of a trace, resolved."""
        from memvault.store.index import lookup

        return lookup.outgoing(self.read_con(), self._trace(ref).id)

    def backlinks(self, ref: str) -> list[dict[str, Any]]:
        """Traces that link to ``ref`` (a trace, or an attachment by path)."""
        from memvault.store.index import lookup

        con = self.read_con()
        attachment = lookup.find_attachment(con, ref)
        if attachment:  # an image or PDF: no trace, but notes embed and link it
            return lookup.incoming_to_path(con, attachment)
        return lookup.incoming(con, self._trace(ref).id)

    def stats(self, *, parse_errors: bool = False) -> dict[str, Any]:
        """Counts of what the index holds (and every parse error, if asked)."""
        from memvault.store.index import lookup

        con = self.read_con()
        data = lookup.stats(con, self.index_path)
        data["vault"] = str(self.root)
        if parse_errors:
            data["parse_error_list"] = [{"path": p, "error": e} for p, e in lookup.parse_errors(con)]
        return data

    def history(self, ref: str) -> list[dict[str, Any]]:
        """The versions of a memory or fact, newest first, then the memories
        merged into it (each marked ``merged into``)."""
        from memvault.store.consolidation.rows import merged_members
        from memvault.store.db.records import get_trace

        traces = self.memories.history(ref)
        traces += [t for m in merged_members(self.con, traces[0].id) if (t := get_trace(self.con, m)) is not None]
        return [
            {"id": t.id, "status": t.status, "reason": t.reason, "type": t.type,
             "updated": t.updated, "content": t.content, "tags": t.tags}
            for t in traces
        ]

    def cache_prune(self, index: apsw.Connection | None = None) -> "PruneReport":
        """Drop cached vectors no note uses (older than ``embedding.cache_keep_days``,
        or past ``embedding.cache_max_mb``); ``index``: another thread's own connection."""
        from memvault.store.embedding import cache, vectors

        con = vectors.open_cache(self.data_dir)
        assert con is not None
        try:
            e = self.settings.embedding
            return cache.prune(con, index or self.read_con(), keep_days=e.cache_keep_days,
                               max_bytes=e.cache_max_mb * 2**20)
        finally:
            con.close()

    def cache_export(self, target: Path) -> int:
        """Write a copy of the embedding cache to ``target``; how many vectors."""
        from memvault.store.embedding.cache import export_cache

        return export_cache(self.data_dir, target)

    def cache_import(self, source: Path) -> int:
        """Add the vectors of a cache file (another device's export); how many were new."""
        from memvault.store.embedding.cache import import_cache

        return import_cache(self.data_dir, source)

    def model_status(self) -> dict[str, Any]:
        """The configured embedding model and how much of the vault has its vectors."""
        from memvault.store.embedding import vectors as vec
        from memvault.store.embedding.model import resolve_model

        spec = resolve_model(self.settings.embedding.model)
        data: dict[str, Any] = {"model": self.settings.embedding.model, "key": spec.key if spec else None}
        if spec is not None:
            con = self.read_con()
            cache = vec.open_cache(self.data_dir, create=False)
            try:
                done, total = vec.coverage(con, cache, spec.key)
            finally:
                if cache is not None:
                    cache.close()
            data.update(chunks=total, embedded=done, queued=vec.queue_size(con),
                        unavailable=vec.recorded_unavailable(con, spec.key))
        return data

    def conflicts(self) -> list[dict[str, Any]]:
        """Recorded conflicts whose store copy is still in the vault (a person
        resolves one by merging and deleting the ``(conflict ...)`` note)."""
        from memvault.store.index.lookup import sync_conflicts
        from memvault.store.memories.rows import conflicts

        # Without the vault folder nobody can tell which were resolved: list all.
        missing = not self.root.is_dir()
        own = [
            {"id": c.trace_id, "note": c.path, "conflict_note": c.conflict_path,
             "detail": c.detail, "when": c.created, "kind": "memvault"}
            for c in conflicts(self.read_con())
            if c.conflict_path is None or missing or (self.root / c.conflict_path).exists()
        ]
        synced = [
            dict(c, kind="sync", when=None,
                 detail=f"{c['tool']} kept two versions" + ("" if c["differs"] else " (the same text)"))
            for c in sync_conflicts(self.read_con())
        ]
        return own + synced

    def note_count(self) -> int:
        """How many notes the index holds."""
        from memvault.store.index import lookup

        return lookup.count_notes(self.con)

    def indexed_paths_under(self, folder: str) -> set[str]:
        """Every indexed vault path under ``folder`` (a daemon's folder event)."""
        from memvault.store.index import lookup

        return lookup.paths_under(self.con, folder)

    def checkpoint(self) -> None:
        """Fold the WAL files back into the databases (a daemon's shutdown)."""
        from memvault.store.db.connection import checkpoint

        checkpoint(self.con)

    def list(self, **options: Any) -> dict[str, Any]:
        """A page of memories (or notes, facts): ``{"items", "total", "next_cursor"}``
        (options: what, types, scopes, tags, sort, since, until, include_deleted,
        limit, cursor; see :func:`~memvault.store.index.browse.list_traces`)."""
        from memvault.store.index import browse

        return browse.list_traces(self.read_con(), self.name, **options)

    def recent(self, **options: Any) -> dict[str, Any]:
        """What changed lately, newest first (options: since, until, what,
        types, scopes, limit; see :func:`~memvault.store.index.browse.recent`)."""
        from memvault.store.index import browse

        return browse.recent(self.read_con(), self.name, **options)

    def read(self, ref: str, heading: str | None = None) -> dict[str, Any]:
        """One note, memory or fact with its metadata, version, links both
        ways and ``obsidian://`` URI; ``heading`` narrows a note to one section."""
        from memvault.store.index import browse

        return browse.read_trace(self.read_con(), self.name, self._trace(ref), heading)

    def identity(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The active identity memories, strongest and newest first."""
        from memvault.store.retrieval.recall import identity_items

        items = identity_items(self.read_con(), limit or self.settings.recall.identity_max)
        return [{"id": i.id, "path": i.path, "content": i.content} for i in items]

    def _trace(self, ref: str) -> Any:
        from memvault.store.index.lookup import find_trace

        trace = find_trace(self.read_con(), ref)
        if trace is None:
            raise MemvaultError(f"no note or trace matches {ref!r} (give an id or a vault path)")
        return trace

    # -- memories ------------------------------------------------------------------------

    def add(self, content: str, type_: str = "semantic", **options: Any) -> "WriteResult":
        """Remember ``content`` (options: tags, scope, links, source,
        allow_duplicate); a duplicate of a live memory returns that one."""
        return self.memories.add(content, type_, **options)

    def update(self, ref: str, **changes: Any) -> "WriteResult":
        """Change a memory (content, tags, type_, reason, expect_version); the
        old version is kept. ``expect_version`` refuses a change based on a
        version that is no longer current (:class:`~.memories.guard.VersionConflict`)."""
        return self.memories.update(ref, **changes)

    def forget(self, ref: str, reason: str | None = None) -> "WriteResult":
        """Soft-delete a memory (its note moves to ``.trash/``), or retire one
        fact (its source note untouched; it stays retired until restored)."""
        fact = self._fact(ref)
        if fact is not None:
            from memvault.store.facts.forgets import forget_fact

            return forget_fact(self, fact, reason)
        return self.memories.forget(ref, reason)

    def restore(self, ref: str) -> "WriteResult":
        """Bring back a forgotten memory and its note, or a forgotten fact; a
        merged memory is taken back out of the memory it was merged into."""
        fact = self._fact(ref)
        if fact is not None:
            from memvault.store.facts.forgets import restore_fact

            return restore_fact(self, fact)
        from memvault.store.consolidation.rows import merged_into
        from memvault.store.index.lookup import find_trace

        found = find_trace(self.con, ref)
        if found is not None and found.status == "superseded" and merged_into(self.con, found.id):
            from memvault.store.consolidation.merge import unmerge

            return unmerge(self, found.id)
        return self.memories.restore(ref)

    def _fact(self, ref: str) -> Any:
        """The fact ``ref`` names, if it names one."""
        from memvault.store.index.lookup import find_trace

        trace = find_trace(self.con, ref)
        return trace if trace is not None and trace.kind == "fact" else None

    # -- consolidation ------------------------------------------------------------------------

    def consolidate(self, *, dry_run: bool = False, today: Any = None, trigger: str = "cli",
                    avoid: Callable[[str], bool] | None = None) -> "RunReport":
        """Plan and (unless ``dry_run``) carry out a consolidation run (see
        :mod:`memvault.store.consolidation.run`); ``avoid(path)``: a note a
        person is editing, whose actions wait for a later run."""
        from memvault.store.consolidation.run import consolidate

        return consolidate(self, dry_run=dry_run, today=today, trigger=trigger, avoid=avoid)

    def undo_consolidation(self, run: str) -> "UndoReport":
        """Reverse a whole consolidation run (or ``memvault merge``)."""
        from memvault.store.consolidation.run import undo

        return undo(self, run)

    def consolidation_runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest consolidation runs, newest first."""
        from memvault.store.consolidation.run import runs

        return runs(self, limit)

    def merge(self, ids: Sequence[str], content: str | None = None) -> "MergeOutcome":
        """Merge memories into the first of ``ids`` (see :mod:`memvault.store.consolidation.merge`)."""
        from memvault.store.consolidation.run import merge_now

        return merge_now(self, ids, content)

    def set_contradiction(self, number: int, status: str) -> None:
        """Resolve or dismiss a flagged contradiction (a dismissed pair is never flagged again)."""
        from memvault.store.consolidation import rows as clog
        from memvault.store.consolidation.links import apply_durable
        from memvault.store.db.connection import write_transaction

        con = self.read_con()
        if not any(c.id == number for c in clog.contradictions(con, None)):
            raise MemvaultError(f"no contradiction number {number} (see `memvault conflicts --all`)")
        with write_transaction(con):
            clog.set_contradiction_status(con, number, status)
        apply_durable(con)

    def contradictions(self, status: str | None = "open") -> list[dict[str, Any]]:
        """Flagged contradictions (``open`` by default), with both texts."""
        from memvault.store.consolidation.rows import contradictions
        from memvault.store.db.records import get_trace

        out = []
        for c in contradictions(self.read_con(), status):
            newer, older = get_trace(self.con, c.newer_id), get_trace(self.con, c.older_id)
            out.append({
                "id": c.id, "kind": c.kind, "status": c.status, "reason": c.reason, "run": c.run_id, "flagged": c.created,
                "newer": {"id": c.newer_id, "content": newer.content if newer else None, "path": newer.path if newer else None},
                "older": {"id": c.older_id, "content": older.content if older else None, "path": older.path if older else None},
            })
        return out

    # -- flows: conversations, imports, export, backup -----------------------------------

    def ingest(
        self,
        source: "str | os.PathLike[str] | IO[str] | IO[bytes]",
        *,
        session: str | None = None,
        title: str | None = None,
        client: str | None = None,
    ) -> "IngestReport":
        """Write a conversation transcript (Claude Code or generic JSONL, a
        path or a stream) as its session note, appending only new turns, and
        index it (see :mod:`.flows.ingest`)."""
        from memvault.store.flows.ingest import ingest

        return ingest(self, source, session=session, title=title, client=client)

    def import_(
        self, fmt: str, path: "str | os.PathLike[str]", *, dry_run: bool = False, folder: str = "Imports",
        progress: Progress | None = None,
    ) -> "ImportReport":
        """Import a file of another tool (``chatgpt``, ``claude``, ``mem0``,
        ``mcp-memory``, ``csv``, ``markdown``) or memvault's own export
        (``json``/``jsonl``); see :mod:`.flows.sink`. ``progress(done, total)``."""
        from memvault.store.flows.sink import run_import

        return run_import(self, fmt, Path(path).expanduser(), dry_run=dry_run, folder=folder, progress=progress)

    def export(self, options: "ExportOptions") -> "ExportReport":
        """Write an export (see :mod:`.flows.export`); ``sqlite`` is a backup."""
        from memvault.store.flows.export import export

        return export(self, options)

    def restore_backup(self, file: "str | os.PathLike[str]") -> "RestoreReport":
        """Put a backup's durable state (and vectors) in place and rebuild the
        index (see :mod:`.flows.backup`). The caller makes sure no daemon runs."""
        from memvault.store.flows.backup import restore

        return restore(self, Path(file).expanduser())

    # -- memory sources ---------------------------------------------------------------------

    def source_add(self, paths: Sequence[str]) -> tuple[list[Any], list[str]]:
        """Mark notes as memory sources and extract their facts: (results, warnings)."""
        return self.sources.add(list(paths))

    def source_remove(self, paths: Sequence[str]) -> tuple[list[Any], list[str]]:
        """Unmark notes; their facts are retired: (results, warnings)."""
        return self.sources.remove(list(paths))

    def source_list(self) -> list[dict[str, Any]]:
        """Every memory source, how it is marked, and its fact count."""
        return self.sources.list()

    def facts(self, path: str, include_superseded: bool = False) -> tuple[str, list[dict[str, Any]], bool]:
        """The facts of one source note: (vault path, facts, whether the note is indexed)."""
        return self.sources.facts(path, include_superseded)


def wait_for(condition: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Poll ``condition`` until true or ``timeout`` seconds pass; its last value."""
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(interval)
    return True
