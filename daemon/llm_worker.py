"""The daemon's llm fact extraction, on a background thread.

An llm call can take seconds, and the daemon must keep every other note
searchable within its debounce; so in the daemon the fact observer hands
each changed source to :class:`LLMFactWorker` and goes on at once (see
:mod:`.facts` for what the facts look like meanwhile).
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import apsw
from memvault.store.db.connection import connect

from memvault.store.facts.observer import FactObserver

if TYPE_CHECKING:
    from memvault.store.memory_store import Vault
    from memvault.store.index.reconcile import Indexer

log = logging.getLogger(__name__)

#: Most source notes waiting for the daemon's llm worker.
LLM_QUEUE_MAX = 1000
#: Seconds between tries of a background fact write that found the index busy.
LLM_WRITE_RETRY = 1.0
LLM_WRITE_TRIES = 5


class LLMFactWorker:
    """The daemon's llm extraction, off its hot path (see the module docstring).

    One thread with its own index connection and its own extractor (and so
    its own circuit breaker). Jobs are source trace ids in a bounded queue:
    a note changed again before its turn is queued once. :meth:`stop` sets
    the extractor's cancel event, so a call in flight is abandoned within
    :data:`~.http_deadline.CANCEL_CHECK` seconds, and joins the thread.
    """

    def __init__(
        self, vault: "Vault", *, max_pending: int = LLM_QUEUE_MAX, on_done: Callable[[str, str], None] | None = None
    ) -> None:
        self.vault = vault
        self.max_pending = max_pending
        self.on_done = on_done  # (source id, outcome), called on the worker thread
        self.idle = threading.Event()  # nothing queued and nothing in flight
        self.idle.set()
        self.counts: dict[str, int] = defaultdict(int)
        self.error: BaseException | None = None
        self.observer: FactObserver | None = None  # the daemon's own (for the backlog query)
        self._pending: dict[str, str] = {}  # source id -> path, oldest first
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def attach(
        cls, vault: "Vault", indexer: "Indexer", on_done: Callable[[str, str], None] | None = None
    ) -> "LLMFactWorker | None":
        """Start a worker for ``indexer``'s fact observer if it uses the llm
        extractor, and route its llm extraction there; None otherwise."""
        for observer in indexer.observers:
            if isinstance(observer, FactObserver) and observer.llm is not None:
                worker = cls(vault, on_done=on_done)
                worker.observer = observer
                worker.start()
                observer.defer = vault.fact_defer = worker.submit
                return worker
        return None

    def start(self) -> None:
        """Run the worker thread."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._main, name="memvault-llm-facts", daemon=True)
            self._thread.start()

    def submit(self, source_id: str, path: str) -> bool:
        """Queue one source; False when the queue is full or the worker is
        stopping or dead (the caller then extracts inline, as without it)."""
        with self._cond:
            if self._thread is None or self._stop.is_set() or self.error is not None or not self._thread.is_alive():
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
        if self.observer is None:
            return 0
        return sum(self.submit(sid, path) for sid, path in self.observer.llm_backlog(upgrade=upgrade))

    def stop(self, timeout: float = 10.0) -> None:
        """Abandon the call in flight, drop what is queued, join the thread."""
        self._stop.set()
        with self._cond:
            self._pending.clear()
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError("memvault llm fact worker did not stop")
            self._thread = None

    def status(self) -> dict[str, Any]:
        """Queue length and outcome counts, for the daemon's status."""
        with self._cond:
            queued = len(self._pending)
        return {"queued": queued, "idle": self.idle.is_set(), **self.counts}

    def _main(self) -> None:
        con: apsw.Connection | None = None
        try:
            con = connect(self.vault.index_path)
            observer = FactObserver(self.vault.root, con, self.vault.config)
            assert observer.llm is not None
            observer.llm.cancel = self._stop
            while True:
                with self._cond:
                    while not self._pending and not self._stop.is_set():
                        self.idle.set()
                        self._cond.wait()
                    if self._stop.is_set():
                        return
                    source_id = next(iter(self._pending))
                    del self._pending[source_id]
                outcome = self._run(observer, source_id)
                if outcome is None:
                    return
                self.counts[outcome] += 1
                if self.on_done is not None:
                    try:
                        self.on_done(source_id, outcome)
                    except Exception:
                        log.exception("llm fact worker callback failed")
        except BaseException as exc:  # the daemon keeps running; status reports it
            self.error = exc
            log.exception("memvault llm fact worker failed")
        finally:
            self.idle.set()
            if con is not None:
                con.close()

    def _run(self, observer: FactObserver, source_id: str) -> str | None:
        """One job; None when the worker is stopping."""
        from memvault.store.facts.llm_extract import LLMCancelled

        try:
            job = observer.extract_in_background(source_id)
        except LLMCancelled:
            return None
        except Exception:
            log.exception("background fact extraction of %s failed", source_id)
            return "failed"
        if isinstance(job, str):
            return job
        for _ in range(LLM_WRITE_TRIES):
            if self._stop.is_set():
                return None  # the hash mismatch re-queues it at the next start
            try:
                return observer.write_in_background(job)
            except apsw.BusyError:
                # A long writer (a full sync, a CLI command) holds the index;
                # the answer is kept and written when it lets go.
                if self._stop.wait(LLM_WRITE_RETRY):
                    return None
            except Exception:
                log.exception("writing background facts of %s failed", source_id)
                return "failed"
        return "busy"
