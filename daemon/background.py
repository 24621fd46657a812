"""The services a daemon runs beside its watch loop.

The llm fact worker, the query server, the embedding worker and the
consolidation schedule, each a :class:`.services.Service` under the daemon's
one :class:`.services.Supervisor` (which restarts a failed one with backoff
and reports each one's state). The llm worker and the query server start
before the first full sync (so that even that sync defers to the worker);
the embedding worker and the consolidation schedule after it.
"""

from __future__ import annotations

from collections.abc import Callable

from memvault.daemon.consolidate_service import ConsolidateService
from memvault.daemon.embedding_service import EmbeddingService
from memvault.daemon.llm_worker import LLMFactWorker
from memvault.daemon.serve import QueryServer
from memvault.daemon.services import Supervisor
from memvault.store.memory_store import MemoryStore

#: Longest wait for the watcher (and the llm worker) to start.
START_WAIT = 30.0


class BackgroundServices:
    """The daemon's background services for one store (see the module docstring).

    ``enabled`` False (tests of the watch loop alone) leaves out the query
    server, the embedding worker and the consolidation schedule; the llm
    worker runs whenever the store's facts come from the llm.
    """

    def __init__(
        self,
        store: MemoryStore,
        supervisor: Supervisor,
        *,
        enabled: bool,
        quiet_for: Callable[[], float],
        editing: Callable[[str], bool],
    ) -> None:
        self.store = store
        self.supervisor = supervisor
        self.enabled = enabled
        self._quiet_for = quiet_for
        self._editing = editing
        self.embedder: EmbeddingService | None = None
        self.server: QueryServer | None = None
        self.consolidator: ConsolidateService | None = None
        # With extractor = "llm": the model is asked off the hot path.
        self.llm_worker: LLMFactWorker | None = None

    def start(self) -> None:
        """The llm worker (so that even the first sync defers to it) and the
        query server start now; the embedding worker after the first sync
        (:meth:`start_after_first_sync`)."""
        self.llm_worker = LLMFactWorker.for_store(self.store, on_done=self._llm_done)
        if self.llm_worker is not None:
            self.supervisor.add(self.llm_worker)
            self.supervisor.start_service(self.llm_worker.name)
            self.llm_worker.accepting.wait(START_WAIT)
        if self.enabled:
            self.store.limit_model_threads()
            self.embedder = EmbeddingService(self.store)
            self.server = QueryServer(self.store, on_wake=self.embedder.wake)
            self.supervisor.add(self.server)
            self.supervisor.start_service(self.server.name)
            self.supervisor.add(self.embedder)
            if self.store.settings.consolidate.interval > 0:
                self.consolidator = ConsolidateService(self.store, quiet_for=self._quiet_for, editing=self._editing)
                self.supervisor.add(self.consolidator)

    def start_after_first_sync(self) -> None:
        """The embedding worker and the consolidation schedule."""
        if self.embedder is not None:
            self.supervisor.start_service(self.embedder.name)
        if self.consolidator is not None:
            self.supervisor.start_service(self.consolidator.name)

    def wake_embedder(self) -> None:
        """Embed what changed soon (a sync or the llm worker wrote)."""
        if self.embedder is not None:
            self.embedder.wake()

    def _llm_done(self, source_id: str, outcome: str) -> None:
        """The llm worker wrote facts (its thread): embed them soon."""
        if outcome == "written":
            self.wake_embedder()

    def submit_llm_backlog(self, *, upgrade: bool) -> None:
        """Queue for the llm worker (if it runs) the sources whose llm job was
        lost (full queue, a stop); ``upgrade``: also those holding the
        default extractor's facts."""
        if self.llm_worker is not None:
            self.llm_worker.submit_backlog(upgrade=upgrade)

    def stop_holders(self, keep: str) -> list[str]:
        """Stop every running service but ``keep`` (each holds connections
        of its own to the database files); their names, for :meth:`restart`."""
        holders = [name for name, s in self.supervisor.status().items()
                   if name != keep and s["state"] not in ("stopped", "not started")]
        for name in holders:
            self.supervisor.stop_service(name)
        return holders

    def restart(self, holders: list[str]) -> None:
        """Start again the services :meth:`stop_holders` stopped."""
        for name in holders:
            self.supervisor.start_service(name)

    def after_reopen(self, holders: list[str]) -> None:
        """The databases were reopened and synced while ``holders`` were
        stopped: if the llm worker was among them, its sources got the
        default rules' facts; queue them for the llm now it takes jobs."""
        worker = self.llm_worker
        if worker is not None and worker.name in holders:
            worker.accepting.wait(START_WAIT)
            worker.submit_backlog(upgrade=True)
