"""The daemon's embedding service: embeds pending texts in the background.

A supervised service (see :mod:`.services`)::

    service = EmbeddingService(store)
    supervisor.add(service)      # run(): embeds whatever is pending, then waits
    ...
    service.wake()               # after a reconcile wrote traces: look again now

It wakes on :meth:`EmbeddingService.wake` and every ``poll_interval``
seconds otherwise; a cheap count decides whether there is work. A model that
cannot be loaded is logged once and retried only after ``retry_interval``
seconds or a wake. Any other failure (the index busy for longer than the
write timeout, say) ends ``run``; the supervisor reports it and starts it
again, and the pending texts are still pending.

The work of each step (chunk what changed, embed what is pending, record a
model that cannot be loaded) is the store's, the same code ``memvault sync``
runs in the foreground: the pipeline :meth:`MemoryStore.embedding_loop`
builds. This service keeps the thread and the timing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memvault.daemon.services import Service

if TYPE_CHECKING:
    from memvault.store.hosted import EmbeddingPipeline, EmbedReport
    from memvault.store.memory_store import MemoryStore

log = logging.getLogger("memvault.embedding")


class EmbeddingService(Service):
    """Embeds one store's pending texts while the supervisor runs it."""

    name = "embedding"

    def __init__(
        self,
        store: "MemoryStore",
        *,
        poll_interval: float = 5.0,
        retry_interval: float = 600.0,
        prune_interval: float = 86400.0,
        on_run: "Callable[[EmbedReport], None] | None" = None,
    ) -> None:
        self.store = store
        self.poll_interval = poll_interval
        self.retry_interval = retry_interval
        self.prune_interval = prune_interval
        self.on_run = on_run
        self.last_prune: dict[str, Any] | None = None
        self._next_prune = 0.0  # first prune once the first run found nothing pending
        self.last_report: "EmbedReport | None" = None
        self._wake = threading.Event()
        self._unavailable: str | None = None
        self._retry_at = 0.0
        self.idle = threading.Event()  # set while nothing is pending (tests, status)

    def wake(self) -> None:
        """Look for work now (new or changed traces)."""
        self._retry_at = 0.0
        self._wake.set()

    def interrupt(self) -> None:
        """Cut the wait short on stop."""
        self._wake.set()

    def status(self) -> dict[str, Any]:
        """What the service last did."""
        r = self.last_report
        return {
            "idle": self.idle.is_set(),
            "unavailable": self._unavailable,
            "last_run": r.as_dict() if r else None,
            "last_prune": self.last_prune,
        }

    def run(self, stop: threading.Event) -> None:
        """Embed, wait for a wake or the poll interval, again, until ``stop``."""
        self.idle.clear()
        pipeline = self.store.embedding_loop()
        try:
            while not stop.is_set():
                self._wake.clear()
                self._once(pipeline, stop)
                if stop.is_set():
                    break
                self._wake.wait(self.poll_interval)
        finally:
            pipeline.close(index_too=True)

    def _prune(self, pipeline: "EmbeddingPipeline") -> None:
        """Once a day, when idle: drop cached vectors no note uses any more."""
        self._next_prune = time.monotonic() + self.prune_interval
        report = self.store.cache_prune(pipeline.con)
        self.last_prune = report.as_dict()
        if report.dropped_unused or report.dropped_for_size:
            log.info("embedding cache pruned: %d unused and %d for size dropped, %.1f MB now",
                     report.dropped_unused, report.dropped_for_size, report.bytes_after / 2**20)

    def _once(self, pipeline: "EmbeddingPipeline", stop: threading.Event) -> None:
        asked: list[bool] = []

        def asking() -> None:  # the model is about to be asked: not idle
            self.idle.clear()
            asked.append(True)

        report = pipeline.run(None, stop.is_set, try_model=time.monotonic() >= self._retry_at, asking=asking)
        if report.unavailable:
            if self._unavailable != report.unavailable:
                log.warning("semantic search unavailable: %s", report.unavailable)
            self._unavailable = report.unavailable
            self._retry_at = time.monotonic() + self.retry_interval
        elif asked:
            self._unavailable = None
        if not report.pending or self._unavailable:
            self.idle.set()
            if time.monotonic() >= self._next_prune and not stop.is_set():
                self._prune(pipeline)
        if report.chunked or report.embedded or report.unavailable or self.last_report is None:
            self.last_report = report
            if self.on_run:
                self.on_run(report)
