"""The daemon's llm fact extraction, on a background thread.

An llm call can take seconds, and the daemon must keep every other note
searchable within its debounce; so in the daemon the store's fact observers
hand each changed source to :class:`LLMFactWorker` and go on at once
(:meth:`MemoryStore.route_llm_facts`). The worker is the thread and the
queue; each job is the store's (:meth:`MemoryStore.llm_fact_jobs`, see
:mod:`memvault.store.facts.background` for what a job does and what the
facts look like meanwhile).
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memvault.daemon.services import Service

if TYPE_CHECKING:
    from memvault.store.memory_store import MemoryStore

log = logging.getLogger(__name__)

#: Most source notes waiting for the daemon's llm worker.
LLM_QUEUE_MAX = 1000


class LLMFactWorker(Service):
    """The daemon's llm extraction, off its hot path (see the module docstring).

    A supervised service whose jobs the store runs on the worker's own index
    connection and extractor (and so its own circuit breaker). Jobs are
    source trace ids in a bounded queue: a note changed again before its turn
    is queued once. Stopping sets the extractor's cancel event, so a call in
    flight is abandoned within
    :data:`~memvault.store.facts.http_deadline.CANCEL_CHECK` seconds.
    """

    name = "llm_facts"
    sets_ready = True

    def __init__(
        self, store: "MemoryStore", *, max_pending: int = LLM_QUEUE_MAX,
        on_done: Callable[[str, str], None] | None = None,
    ) -> None:
        self.store = store
        self.max_pending = max_pending
        self.on_done = on_done  # (source id, outcome), called on the worker thread
        self.idle = threading.Event()  # nothing queued and nothing in flight
        self.idle.set()
        self.counts: dict[str, int] = defaultdict(int)
        self.routed = False  # the store's llm extraction comes here (for_store)
        self._pending: dict[str, str] = {}  # source id -> path, oldest first
        self._cond = threading.Condition()
        self.accepting = threading.Event()  # set only while run() takes jobs
        self._cancel: threading.Event | None = None

    @classmethod
    def for_store(cls, store: "MemoryStore", on_done: Callable[[str, str], None] | None = None) -> "LLMFactWorker | None":
        """A worker for the store's fact observer when it uses the llm
        extractor, with the store's llm extraction routed to it; else None.
        The caller supervises it."""
        worker = cls(store, on_done=on_done)
        if not store.route_llm_facts(worker.submit):
            return None
        worker.routed = True
        return worker

    def submit(self, source_id: str, path: str) -> bool:
        """Queue one source; False when the queue is full or the worker is
        not running (stopping, or dead and waiting to restart): the caller
        then extracts with the default rules, as without it."""
        with self._cond:
            if not self.accepting.is_set():
                return False
            if source_id not in self._pending and len(self._pending) >= self.max_pending:
                self.counts["dropped"] += 1
                return False
            self._pending[source_id] = path
            self.idle.clear()
            self._cond.notify()
        return True

    def submit_backlog(self, *, upgrade: bool = False) -> int:
        """Queue every source whose facts lag behind its note (on the daemon's
        thread, after a full sync); how many were queued. ``upgrade`` also
        queues sources with default-extractor facts (at start-up)."""
        if not self.routed:
            return 0
        return sum(self.submit(sid, path) for sid, path in self.store.llm_fact_backlog(upgrade=upgrade))

    def interrupt(self) -> None:
        """Abandon the call in flight and drop what is queued."""
        with self._cond:
            self.accepting.clear()
            self._pending.clear()
            if self._cancel is not None:
                self._cancel.set()
            self._cond.notify_all()

    def status(self) -> dict[str, Any]:
        """Queue length and outcome counts, for the daemon's status."""
        with self._cond:
            queued = len(self._pending)
        return {"queued": queued, "idle": self.idle.is_set(), **self.counts}

    def run(self, stop: threading.Event) -> None:
        """Take jobs until ``stop``, each extracted and written on this
        thread's own connection."""
        jobs = self.store.llm_fact_jobs(stop)
        self._cancel = stop
        try:
            if not stop.is_set():
                self.accepting.set()
            self._ready_event().set()
            while True:
                with self._cond:
                    while not self._pending and not stop.is_set():
                        self.idle.set()
                        self._cond.wait()
                    if stop.is_set():
                        return
                    source_id = next(iter(self._pending))
                    del self._pending[source_id]
                outcome = jobs.run(source_id)
                if outcome is None:
                    return
                self.counts[outcome] += 1
                if self.on_done is not None:
                    try:
                        self.on_done(source_id, outcome)
                    except Exception:
                        log.exception("llm fact worker callback failed")
        finally:
            self.accepting.clear()
            self.idle.set()
            jobs.close()
