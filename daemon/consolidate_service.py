"""The daemon's consolidation schedule: a run every ``consolidate.interval``
seconds (default daily), at a quiet moment.

A supervised service (see :mod:`.services`)::

    service = ConsolidateService(store, quiet_for=runner.quiet_for, editing=runner.editing)
    supervisor.add(service)

When a run is due (the interval has passed since the last run of any kind,
as the durable log says, so a restart does not run it again), the service
waits until the vault has been quiet for ``consolidate.quiet`` seconds (no
events, nothing queued: ``quiet_for()``), then runs consolidation through
the runner the store builds (:meth:`MemoryStore.consolidation_runner`, on a
connection of its own, like a CLI command beside the daemon; see
:mod:`memvault.store.consolidation.scheduled`). A run carries out only the
kinds of action ``consolidate.auto`` names (by default decay and flagging
contradictions, which write no note) and proposes the rest: ``status``
shows them, ``memvault consolidate`` applies them. Every note it writes goes
through the memory mirror's atomic, conflict-checked writer, and an action
that would write a note a person is editing (``editing(path)``: queued by the
watcher, or saved within the quiet period) is deferred to the next run. A run
that fails ends ``run``; the supervisor reports it and starts the service
again. This service keeps the thread and the timing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memvault.daemon.services import Service

if TYPE_CHECKING:
    from memvault.store.hosted import ConsolidationRunner
    from memvault.store.memory_store import MemoryStore

log = logging.getLogger("memvault.consolidate")

#: Longest sleep between looks at the clock and the vault (seconds).
POLL = 5.0


class ConsolidateService(Service):
    """Runs consolidation on schedule while the supervisor runs it."""

    name = "consolidate"

    def __init__(
        self,
        store: "MemoryStore",
        *,
        quiet_for: Callable[[], float],
        editing: Callable[[str], bool] = lambda path: False,
        interval: float | None = None,
        quiet: float | None = None,
        poll: float = POLL,
        on_run: Callable[[Any], None] | None = None,
    ) -> None:
        self.store = store
        settings = store.settings.consolidate
        self.interval = float(settings.interval if interval is None else interval)
        self.quiet = float(settings.quiet if quiet is None else quiet)
        self.quiet_for = quiet_for
        self.editing = editing
        self.poll = poll
        self.on_run = on_run
        self.last_report: Any = None
        self.runs = 0
        self._wake = threading.Event()

    def interrupt(self) -> None:
        """Cut a wait short on stop."""
        self._wake.set()

    def status(self) -> dict[str, Any]:
        """The last run the service made."""
        r = self.last_report
        return {"interval": self.interval, "runs": self.runs, "last_run": r.as_dict() if r is not None else None}

    def run(self, stop: threading.Event) -> None:
        """Wait for a due run and a quiet vault, run, repeat, until ``stop``."""
        if self.interval <= 0:
            stop.wait()
            return
        runner = self.store.consolidation_runner()
        try:
            while not stop.is_set():
                wait = self._until_due(runner)
                if wait > 0:
                    self._sleep(stop, min(wait, self.poll))
                    continue
                quiet = self.quiet_for()
                if quiet < self.quiet:
                    self._sleep(stop, min(self.poll, self.quiet - quiet))
                    continue
                self._run_once(runner, stop)
        finally:
            runner.close()

    def _sleep(self, stop: threading.Event, seconds: float) -> None:
        self._wake.clear()
        if not stop.is_set():
            self._wake.wait(max(0.01, seconds))

    def _until_due(self, runner: "ConsolidationRunner") -> float:
        """Seconds until the next run is due (<= 0: due now)."""
        since = runner.seconds_since_last_run()
        return 0.0 if since is None else self.interval - since

    def _run_once(self, runner: "ConsolidationRunner", stop: threading.Event | None = None) -> None:
        started = time.monotonic()
        report = runner.run(avoid=self.editing, cancel=stop)
        if report is None:
            log.info("consolidation left for the next start: stopped while the llm was asked")
            return
        self.last_report = report
        self.runs += 1
        log.info("consolidation %s: %s in %.2fs", report.run_id, report.counts() or "nothing to do",
                 time.monotonic() - started)
        if report.proposed:
            log.info("proposed, not done (consolidate.auto leaves them to you): %s; `memvault consolidate "
                     "--dry-run` shows them, `memvault consolidate` applies them", report.proposed_counts())
        for action in report.deferred:
            log.info("deferred while a note is edited: %s %s", action["kind"], ", ".join(action["ids"]))
        for action in report.failed:
            log.warning("consolidation could not %s %s: %s", action["kind"], ", ".join(action["ids"]), action["error"])
        if self.on_run is not None:
            self.on_run(report)
