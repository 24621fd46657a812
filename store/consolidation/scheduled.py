"""Consolidation on a schedule: the runs a long-running host (the daemon) makes.

The host decides when (every ``consolidate.interval`` seconds, at a quiet
moment, see :mod:`memvault.daemon.consolidate_service`); the store says how
long ago the last run of any kind started and makes the run::

    runner = store.consolidation_runner()     # on a connection of its own
    since = runner.seconds_since_last_run()   # None: never ran
    report = runner.run(avoid=editing, cancel=stop)   # None: stopped while the llm was asked
    runner.close()

The runner works on its own thread's store of the same vault
(:meth:`MemoryStore.for_thread`: its own connection, the host's settings,
data dir and llm routing), like a CLI command beside the daemon; every note
it writes goes through the memory mirror's atomic, conflict-checked writer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from memvault.store.facts.llm_extract import LLMCancelled

if TYPE_CHECKING:
    from memvault.store.consolidation.run import RunReport
    from memvault.store.memory_store import MemoryStore


class ConsolidationRunner:
    """Scheduled consolidation runs of one vault (see the module docstring)."""

    def __init__(self, store: "MemoryStore") -> None:
        """Runs on ``store``, a store of the runner's own thread.

        The one place in this package that keeps the facade (issue 24): the
        runner owns a whole second store (:meth:`MemoryStore.for_thread`), runs
        its ``consolidate`` (which flushes the history log to the vault after
        each run, :func:`~memvault.store.api_change.logged`) and closes it."""
        self.store = store

    def seconds_since_last_run(self) -> float | None:
        """Seconds since the latest run of any kind (a CLI's, a merge, the
        daemon's) started, as the durable log says; None when none ever ran."""
        runs = self.store.consolidation_runs(limit=1)
        if not runs:
            return None
        return (datetime.now(timezone.utc) - datetime.fromisoformat(runs[0]["started"])).total_seconds()

    def run(self, *, avoid: Callable[[str], bool] | None = None,
            cancel: threading.Event | None = None) -> "RunReport | None":
        """One run (trigger ``daemon``): ``avoid(path)``, a note a person is
        editing, whose actions wait for a later run. Only the kinds of
        action ``consolidate.auto`` names are carried out; the rest are
        proposed (logged with the run, shown by ``status``) for a person to
        apply with ``memvault consolidate``. None, with nothing done, when
        ``cancel`` was set while the llm confirmed contradictions."""
        try:
            return self.store.consolidate(trigger="daemon", avoid=avoid, cancel=cancel,
                                          kinds=self.store.settings.consolidate.auto)
        except LLMCancelled:
            return None

    def close(self) -> None:
        """Close the runner's connections."""
        self.store.close()
