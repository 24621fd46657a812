"""The memory store of one vault: the one object every front end calls.

The CLI, the daemon, the MCP server, importers and consolidation all go
through a :class:`MemoryStore`; none of them assembles the pipeline itself::

    store = MemoryStore.open("~/Notes")        # settings from flags, env, file
    report = store.sync(embed=True)            # reconcile, facts, pending writes, vectors
    hits = store.search(SearchQuery("weekly review"))   # typed questions: memvault.store.queries
    store.add("Prefers dark mode", "preference")
    store.close()

What it holds: the vault folder, the effective :class:`Settings`, and the
vault's private data dir with its two databases (see :mod:`.db.connection`):
``index.db``, the *derived* index that can be dropped and rebuilt from the
vault at any time, and ``state.db``, the *durable* state only memvault knows
(memory versions, forgets, recall statistics, fact history, conflicts, the
outbox). The collaborators that do the work (the reconciler, the memory
mirror, the fact sources, the retriever) are built once per store and share
its connection; a long-running caller (the daemon) keeps one store, and
the store builds what its background threads run, each on a connection of
its own: the embedding loop (:meth:`embedding_loop`), a warm retriever
(:meth:`open_retriever`), the llm fact jobs (:meth:`route_llm_facts`,
:meth:`llm_fact_jobs`), consolidation runs (:meth:`consolidation_runner`) and
a store for another thread (:meth:`for_thread`); see :mod:`.hosted`.

This module holds the store's core (opening, connections, collaborators,
rebuild, doctor, embed); the history logs, sync and the one post-sync
sequence are in :class:`~.api_sync.SyncAPI`, and the operations front ends
call are grouped in :class:`~.api_read.ReadAPI` (search, recall, lookups)
and :class:`~.api_change.ChangeAPI` (memories, consolidation, flows,
sources), which :class:`MemoryStore` combines.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from memvault.store import location
from memvault.store.api_change import ChangeAPI
from memvault.store.api_read import ReadAPI
from memvault.store.api_sync import SyncAPI, SyncListener, SyncReport
from memvault.store.context import StoreContext
from memvault.store.settings import Settings, load_settings
from memvault.vault_io.errors import UsageError

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import threading

    from memvault.store.consolidation.scheduled import ConsolidationRunner
    from memvault.store.embedding.pipeline import EmbeddingPipeline, EmbedReport
    from memvault.store.facts.background import LLMFactJobs
    from memvault.store.facts.observer import Defer, FactObserver
    from memvault.store.facts.source_notes import Sources
    from memvault.store.index.doctor import DoctorReport
    from memvault.store.index.reconcile import Indexer
    from memvault.store.memories.mirror import Memories
    from memvault.store.retrieval.retriever import Retriever

Progress = Callable[[int, int], None]


class VaultError(UsageError):
    """The vault cannot be used (missing, not a folder, unreadable)."""


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


class MemoryStore(SyncAPI, ReadAPI, ChangeAPI):
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
        self._syncing = False  # a full sync is under way (see ``con``)
        #: Index a never-synced vault on the first connection (see ``con``). The
        #: daemon turns it off: it syncs at start itself, after wiring its workers.
        self.index_on_open = True
        #: A store that never writes the vault (``memvault mcp --read-only``):
        #: opening it indexes nothing, closing it appends no history log.
        #: What it reads is the index as the last sync left it.
        self.read_only = False
        #: This store is the running daemon's own (which holds the daemon lock,
        #: so the refusals of :mod:`.serving` do not apply to it).
        self.is_daemon = False
        #: Asks a process whose model is loaded (the running daemon) to put the
        #: vectors of these texts into the embedding cache; whether it did. A
        #: front end sets it (``daemon.client.daemon_embedder``); None: a write
        #: that needs a vector (``add``'s neighbours) loads the model here.
        self.vectors_elsewhere: Callable[[list[str]], bool] | None = None
        #: Embed what a change on request wrote before it answers (``add``,
        #: ``update``, ``restore``, ``source add``, ``ingest``: see
        #: :meth:`embed_written`), so it is searchable by meaning at once. The
        #: front ends (CLI, MCP) turn it on; the daemon's own store leaves it
        #: off (its embedding service follows every write within a second).
        self.embed_writes = False

    @classmethod
    def open(cls, vault: str | None = None, overrides: dict[str, Any] | None = None) -> "MemoryStore":
        """Load settings (flags in ``overrides``) and check the vault path."""
        settings = load_settings({"vault": vault, **(overrides or {})})
        return cls(resolve_vault_path(settings.vault), settings)

    # -- where things live -------------------------------------------------

    @property
    def name(self) -> str:
        """The vault's name as Obsidian shows it: its folder name."""
        return self.ctx.name

    @cached_property
    def data_dir(self) -> Path:
        """The private folder that holds this vault's databases, lock and socket."""
        return location.vault_data_dir(self.root)

    # Where the databases and logs are: the context's answers (see :mod:`.context`).

    @property
    def index_path(self) -> Path:
        """The derived index database."""
        return self.ctx.index_path

    @property
    def state_path(self) -> Path:
        """The durable state database."""
        return self.ctx.state_path

    @property
    def history_folder(self) -> Path:
        """The vault folder of every device's history log (:mod:`.history`)."""
        return self.ctx.history_folder

    def has_index(self) -> bool:
        """Whether this vault has been indexed before."""
        return self.ctx.has_index()

    @cached_property
    def ctx(self) -> StoreContext:
        """What the store's sub-packages are given (:mod:`.context`): the
        vault, settings, data dir and this store's connection."""
        return StoreContext(self.root, self.settings, self.data_dir, lambda: self.con)

    # -- connections ----------------------------------------------------------

    @cached_property
    def con(self) -> apsw.Connection:
        """The store's own connection (index with state attached), creating both if needed.

        An index never built from the whole vault (new, or ``index.db``
        deleted or replaced, perhaps by a partial one a single write made)
        is built first: a partial index is never served as the whole. Notes
        an import wrote and was killed before indexing are indexed first too."""
        con = self.connect()
        if self.index_on_open and not self.read_only and not self._syncing and self.root.is_dir():
            self.__dict__["con"] = con  # what follows uses it
            self._complete_index(con)
        return con

    def _complete_index(self, con: apsw.Connection) -> None:
        """Build an index never built from the whole vault; index the notes
        a killed import wrote and never indexed (:mod:`.flows.unindexed`)."""
        from memvault.store.db.records import state_applied
        from memvault.store.flows import unindexed

        if not state_applied(con):
            self.sync()
            unindexed.indexed(con, unindexed.listed(con))
        else:
            unindexed.index_leftovers(con, self.sync_paths)

    def connect(self) -> apsw.Connection:
        """A new connection for a background thread (each thread its own)."""
        return self.ctx.connect()

    def read_con(self) -> apsw.Connection:
        """The connection for read-only commands; refuses to create an index."""
        return self.ctx.read_con()

    def close(self) -> None:
        """Close the store's connections (it can be used again: they reopen).

        Never raises for SQLite: closing the last connection checkpoints the
        write-ahead log, and a disk still full (or failing) then makes that
        checkpoint fail. Every commit is safe in the WAL all the same and the
        next open checkpoints it, so a command that ends here has nothing to
        report beyond one logged line (and a traceback after its own error
        would be wrong)."""
        retriever = self.__dict__.pop("retriever", None)
        if retriever is not None:
            _quietly(retriever.close)
        for name in ("reconciler", "memories", "sources"):
            self.__dict__.pop(name, None)
        con = self.__dict__.pop("con", None)
        if con is not None:
            if not self.read_only:
                self._flush_history(con)
            _quietly(con.close, lambda: con.close(force=True))

    def for_thread(self) -> "MemoryStore":
        """A store of the same vault for another thread of this process (the
        daemon's turn ingest and consolidation runs): its own connection and
        collaborators; this store's settings, data dir, llm routing
        (:meth:`route_llm_facts`) and daemon flag. The caller closes it."""
        other = MemoryStore(self.root, self.settings, data_dir=self.data_dir)
        other.fact_defer = self.fact_defer
        other.is_daemon = self.is_daemon
        return other

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
            memory_folder=self.settings.memory_folder, observers=[self.fact_observer()], gate=self.ctx.gate,
        )

    def _llm_fact_observer(self) -> "FactObserver | None":
        """The reconciler's fact observer when it asks the llm, else None."""
        from memvault.store.facts.observer import FactObserver

        for observer in self.reconciler.observers:
            if isinstance(observer, FactObserver) and observer.llm is not None:
                return observer
        return None

    def route_llm_facts(self, submit: "Defer") -> bool:
        """Send this store's llm fact extraction to ``submit(source_id, path)``
        (a background worker's queue; False from it: extract here with the
        default rules) instead of asking the model inline, in every fact
        observer of the store, its reconciler's and those built later (the
        memory mirror's). False, and nothing routed, when the facts do not come
        from the llm (see :mod:`.facts.background`)."""
        observer = self._llm_fact_observer()
        if observer is None:
            return False
        observer.defer = self.fact_defer = submit
        return True

    def llm_fact_backlog(self, *, upgrade: bool = False) -> list[tuple[str, str]]:
        """(source id, path) of the sources whose llm facts lag behind their
        note; ``upgrade``: also those whose facts came from the default rules."""
        observer = self._llm_fact_observer()
        return [] if observer is None else observer.llm_backlog(upgrade=upgrade)

    def llm_fact_jobs(self, cancel: "threading.Event") -> "LLMFactJobs":
        """The llm extraction a background worker runs, one queued source at a
        time, on a connection of its own with an extractor of its own that
        ``cancel`` abandons mid-call (see :mod:`.facts.background`); the
        caller closes it."""
        from memvault.store.facts.background import LLMFactJobs

        con = self.connect()
        try:
            return LLMFactJobs(self.fact_observer(con), con, cancel)
        except BaseException:
            con.close()
            raise

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

        return Memories(self.ctx, self.reconciler, self._vectors_elsewhere)

    def _vectors_elsewhere(self, texts: list[str]) -> bool:
        """:attr:`vectors_elsewhere` as set when asked (a front end sets it
        after the mirror may be built); False: nobody else embeds them."""
        return self.vectors_elsewhere is not None and self.vectors_elsewhere(texts)

    @cached_property
    def sources(self) -> "Sources":
        """Memory-source marking and fact listing."""
        from memvault.store.facts.source_notes import Sources

        return Sources(self.ctx, self.sync_paths, self.refresh_source_globs)

    @cached_property
    def retriever(self) -> "Retriever":
        """Search and recall over this store (model and vectors loaded lazily)."""
        from memvault.store.retrieval.retriever import Retriever

        return Retriever(self.ctx, self.read_con())

    def open_retriever(self) -> "Retriever":
        """A retriever on a connection of its own, for a long-lived server that
        answers on other threads than the store's (the daemon's query server:
        one warm retriever, its model and vectors loaded once). The caller
        serialises its calls and closes it and its connection
        (``close()``, then ``con.close()``)."""
        from memvault.store.retrieval.retriever import Retriever

        return Retriever(self.ctx, self.connect())

    def pending_writes(self) -> list[dict[str, Any]]:
        """Memory notes whose write is still pending (``memvault status``)."""
        from memvault.store.memories.rows import pending_writes

        return pending_writes(self.read_con())

    def rebuild(
        self, progress: Progress | None = None, *, embed: bool = False, embed_progress: Progress | None = None
    ) -> SyncReport:
        """Drop the derived index and build it again from the vault and the
        durable state (nothing only memvault knows is lost; vectors come back
        from the embedding cache). Refused (:class:`~.serving.DaemonServesError`)
        while a daemon serves the vault: the index would be replaced under its
        open connections."""
        from memvault.store.index.doctor import data_files
        from memvault.store.serving import refuse_while_served

        if not self.is_daemon:
            refuse_while_served(self.data_dir, "rebuilding its index")
        self.close()
        for path in data_files(self.data_dir):
            path.unlink(missing_ok=True)
        return self.sync(progress, embed=embed, embed_progress=embed_progress)

    def doctor(self, *, repair: bool = False, progress: Progress | None = None) -> "DoctorReport":
        """Check both databases and the vault; with ``repair``, fix what can be
        (refused while a daemon serves the vault: a repair may rebuild)."""
        from memvault.store.index import doctor
        from memvault.store.serving import refuse_while_served

        if repair and not self.is_daemon:
            refuse_while_served(self.data_dir, "repairing its index")
        report = doctor.DoctorReport(doctor.diagnose(self.ctx))
        if repair and report.findings:
            doctor.repair_report(self.ctx, report, progress, rebuild=self.rebuild, sync=self.sync, embed=self.embed,
                                 recover=self._recover_runs)
        return report

    def _recover_runs(self) -> None:
        """Settle what a consolidation run, merge or undo that died left (doctor's repair)."""
        from memvault.store.consolidation.journal import exclusive, recover

        with exclusive(self.ctx):
            recover(self.ctx, self.memories)

    def embed(self, progress: Progress | None = None, should_stop: Callable[[], bool] = lambda: False) -> "EmbedReport":
        """Chunk and embed whatever has no vector yet (a missing model is
        reported in the result, not raised)."""
        from memvault.store.embedding.pipeline import EmbeddingPipeline

        pipeline = EmbeddingPipeline.for_ctx(self.ctx, self.con)
        try:
            return pipeline.run(progress, should_stop)
        finally:
            pipeline.close()

    def embed_written(self, ids: Sequence[str] = (), paths: Sequence[str] = ()) -> list[str]:
        """Embed the texts of what a change just wrote, the traces ``ids``
        and those of the notes ``paths`` (their turns and facts too), unless
        :attr:`embed_writes` is off; what to tell the person about texts left
        without a vector (none: all are searchable by meaning now).

        The running daemon's model embeds them when one answers
        (:attr:`vectors_elsewhere`), else the model is loaded here. A write
        that made more than :data:`~.embedding.pipeline.EMBED_NOW_LIMIT`
        texts leaves them to ``sync`` or the daemon, and says so."""
        if not self.embed_writes or (not ids and not paths):
            return []
        from memvault.store.embedding import vectors as vec
        from memvault.store.embedding.pipeline import EmbeddingPipeline

        pipeline = EmbeddingPipeline.for_ctx(self.ctx, self.con)
        try:
            report = pipeline.embed_traces(vec.written_traces(self.con, ids, paths), elsewhere=self._vectors_elsewhere)
        finally:
            pipeline.close()
        if not report.pending:
            return []
        if report.unavailable:
            return [f"not yet searchable by meaning (keyword search finds it): {report.unavailable}"]
        return [f"{report.pending} texts are not yet searchable by meaning (more than a change embeds at once); "
                "`memvault sync` embeds them, and a running daemon does by itself"]

    def embedding_loop(self) -> "EmbeddingPipeline":
        """The embedding pipeline a background embedder (the daemon's
        embedding service) runs step by step, :meth:`EmbeddingPipeline.run`
        each time it looks, on a connection of its own; the caller closes it
        (``close(index_too=True)``)."""
        from memvault.store.embedding.pipeline import EmbeddingPipeline

        return EmbeddingPipeline.for_ctx(self.ctx)

    def consolidation_runner(self) -> "ConsolidationRunner":
        """Scheduled consolidation runs (the daemon's), on a store of their own
        thread (:meth:`for_thread`); the caller closes it (see
        :mod:`.consolidation.scheduled`)."""
        from memvault.store.consolidation.scheduled import ConsolidationRunner

        return ConsolidationRunner(self.for_thread())

    def limit_model_threads(self, threads: int | None = None) -> None:
        """Limit the threads of embedding models this process loads from now
        on (default ``embedding.daemon_threads``: the daemon embeds in the
        background and leaves cores to the person and to queries)."""
        from memvault.store.embedding.model import set_threads

        set_threads(self.settings.embedding.daemon_threads if threads is None else threads)

    def checkpoint(self) -> None:
        """Fold the WAL files back into the databases (a daemon's shutdown)."""
        from memvault.store.db.connection import checkpoint

        checkpoint(self.con)


def _quietly(close: Callable[[], None], fallback: Callable[[], None] | None = None) -> None:
    """Run ``close``; a SQLite error (the closing checkpoint on a full disk)
    is logged as one line, and ``fallback`` releases what is left."""
    try:
        close()
    except apsw.Error as exc:
        log.warning("the write-ahead log was not folded back on close (%s); the next open does it", exc)
        if fallback is not None:
            try:
                fallback()
            except apsw.Error:
                pass
