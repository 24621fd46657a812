"""Memory as the conversation goes: transcripts announced turn by turn, ingested in the background.

The per-turn hook (``memvault hook turn``, run at Claude Code's and Codex's
``Stop`` event, see :mod:`memvault.cli.turn_hook`) sends the daemon's query
socket one small ``ingest`` request naming the session's transcript and
returns. The query server hands it to a :class:`TurnIngester`, which ingests
transcripts one at a time on a thread of its own::

    ingester = TurnIngester(store, on_done=embedder.wake)
    ingester.submit("/home/me/.claude/projects/p/abc.jsonl", "abc", "claude-code")
    threading.Thread(target=ingester.run, args=(stop,)).start()

Requests coalesce: there is at most one pending job per transcript, and a
newer request for a transcript still waiting replaces it (the latest wins:
ingest reads the whole file, so the newest request covers every turn the
earlier ones announced). A transcript being ingested while a request for it
arrives is ingested once more afterwards. A job runs :data:`SETTLE` seconds
after its latest request, not at once (module constant's comment). Ingest is incremental (a session
note grows by the new turns only, see :mod:`memvault.store.flows.sessions`),
so a turn costs the new turns' writing and indexing, not the session's.

Only transcripts in the clients' own folders are read
(:func:`~.turn_paths.transcript_refusal`): the hook and the daemon both check, so a
request cannot make the daemon copy an arbitrary file of the person's into
the vault.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.daemon.turn_paths import transcript_refusal

if TYPE_CHECKING:
    from memvault.store.memory_store import MemoryStore

log = logging.getLogger("memvault.turns")

#: Most transcripts waiting at once; a request beyond is refused (the session end still ingests it).
MAX_PENDING = 256
#: Seconds a stopping daemon waits for the ingest in flight.
STOP_WAIT = 30.0
#: Seconds a job waits after its latest request before it runs: the reply to
#: the hook goes out without an ingest competing for the interpreter, and a
#: client still appending to the transcript as it fires ``Stop`` is done.
SETTLE = 0.05



@dataclass
class TurnJob:
    """One transcript to ingest: the latest request for it."""

    path: str
    session: str | None
    client: str
    queued: float  # time.monotonic() of the first request it stands for
    requests: int = 1
    latest: float = 0.0  # time.monotonic() of its latest request
    cwd: str | None = None  # the session's working folder (its project's pause holds)


Ingest = Callable[["MemoryStore", TurnJob], Any]


def _store_ingest(store: "MemoryStore", job: TurnJob) -> Any:
    """The store's own ingest (incremental: only new turns are written; the
    digest block by the rules: the llm's one call per session is the end hook's)."""
    return store.ingest(Path(job.path), session=job.session, client=job.client, cwd=job.cwd, llm_digest=False)


class TurnIngester:
    """Coalescing queue of transcripts and the worker that ingests them (module docstring).

    ``on_done()`` is called after each ingest that wrote something (the
    daemon wakes its embedding worker, so the new turns are found by meaning
    soon too). ``ingest`` replaces the store's ingest (tests gate it).
    """

    def __init__(self, store: "MemoryStore", *, on_done: Callable[[], None] | None = None,
                 ingest: Ingest = _store_ingest, settle: float = SETTLE) -> None:
        self.store = store
        self.on_done = on_done
        self.settle = settle
        self._ingest = ingest
        self._pending: dict[str, TurnJob] = {}  # insertion order: first come, first ingested
        self._running: str | None = None
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self.counts = {"requests": 0, "coalesced": 0, "ingested": 0, "failed": 0, "refused": 0, "paused": 0}
        self.last: dict[str, Any] | None = None

    # -- the request side (query server handler threads) -----------------------------

    def submit(self, path: str, session: str | None, client: str, cwd: str | None = None) -> dict[str, Any]:
        """Queue ``path`` for ingest, replacing a request for it still waiting.

        Returns what happened (``queued``, ``coalesced``, ``pending``);
        raises ValueError when the path is refused or the queue is full.
        """
        refusal = transcript_refusal(path)
        with self._cond:
            self.counts["requests"] += 1
            if refusal is None and path not in self._pending and len(self._pending) >= MAX_PENDING:
                refusal = f"{MAX_PENDING} transcripts already wait; {path} is left for the session end"
            if refusal is not None:
                self.counts["refused"] += 1
                raise ValueError(refusal)
            old = self._pending.get(path)
            if old is not None:
                self.counts["coalesced"] += 1
                self._pending[path] = TurnJob(path, session, client, old.queued, old.requests + 1, time.monotonic(),
                                              cwd)
            else:
                now = time.monotonic()
                self._pending[path] = TurnJob(path, session, client, now, latest=now, cwd=cwd)
            self._cond.notify_all()
            return {"queued": True, "coalesced": old is not None, "pending": len(self._pending),
                    "running": self._running == path}

    def status(self) -> dict[str, Any]:
        """Counts, what waits and what runs (``ping`` and ``memvault status`` show it)."""
        with self._cond:
            return {**self.counts, "pending": len(self._pending), "running": self._running, "last": self.last}

    def idle(self) -> bool:
        """Whether nothing waits and nothing runs."""
        with self._cond:
            return not self._pending and self._running is None

    # -- the worker ----------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> None:
        """Ingest queued transcripts until ``stop`` (or :meth:`close`), on a
        store of its own thread (:meth:`MemoryStore.for_thread`: its own
        connection, like a CLI command beside the daemon; with extractor =
        "llm", facts go to the daemon's llm worker, not asked inline)."""
        own = self.store.for_thread()
        try:
            while True:
                job = self._next(stop)
                if job is None:
                    return
                try:
                    self._one(own, job)
                finally:
                    with self._cond:
                        self._running = None
                        self._cond.notify_all()
        finally:
            own.close()
            with self._cond:
                left = list(self._pending)
                self._pending.clear()
            if left:
                log.info("stopping: %d transcript(s) left for their session end or the next turn", len(left))

    def close(self) -> None:
        """Ask :meth:`run` to return once the ingest in flight is done."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()

    def _next(self, stop: threading.Event | None) -> TurnJob | None:
        """The oldest waiting job once it has settled (:data:`SETTLE`), now
        running; None once asked to stop."""
        with self._cond:
            while True:
                if self._stop.is_set() or (stop is not None and stop.is_set()):
                    return None
                if not self._pending:
                    self._cond.wait(0.5)  # stop may be set without a notify (the supervisor's event)
                    continue
                path = next(iter(self._pending))
                wait = self._pending[path].latest + self.settle - time.monotonic()
                if wait <= 0:
                    self._running = path
                    return self._pending.pop(path)
                self._cond.wait(wait)

    def _one(self, store: "MemoryStore", job: TurnJob) -> None:
        """Ingest one job; a failure is logged and counted, never raised
        (the next turn or the session end tries again)."""
        from memvault.store.pause import MemoryPaused

        started = time.monotonic()
        try:
            report = self._ingest(store, job)
        except MemoryPaused as exc:  # as asked: nothing stored, nothing failed
            with self._cond:
                self.counts["paused"] += 1
                self.last = {"path": job.path, "action": "paused", "why": str(exc)}
            log.info("turn ingest of %s: %s", job.path, exc)
            return
        except Exception as exc:  # noqa: BLE001 - one transcript must not stop the others
            with self._cond:
                self.counts["failed"] += 1
                self.last = {"path": job.path, "error": f"{type(exc).__name__}: {exc}"}
            log.warning("turn ingest of %s failed: %s", job.path, exc)
            return
        took = time.monotonic() - started
        summary = report.as_dict() if hasattr(report, "as_dict") else {}
        with self._cond:
            self.counts["ingested"] += 1
            self.last = {"path": job.path, "action": summary.get("action"), "new_turns": summary.get("new_turns"),
                         "requests": job.requests, "seconds": round(took, 3),
                         "waited": round(started - job.queued, 3)}
        log.info("turn ingest of %s: %s, %s new turn(s) in %.2fs (%d request(s))", job.path,
                 summary.get("action"), summary.get("new_turns"), took, job.requests)
        if self.on_done is not None and summary.get("action") != "skipped":
            self.on_done()
