"""Llm fact extraction off the hot path: the jobs a background worker runs.

An llm call can take seconds, and a long-running host (the daemon) must keep
every other note searchable within its debounce. So, with ``extractor =
"llm"``, the host routes the store's llm extraction to a queue of its own
(the store's ``route_llm_facts``): each fact observer then queues a
changed source instead of asking the model inline (its facts stay as they
are meanwhile). The host's worker thread takes each queued source to
:meth:`LLMFactJobs.run`, built by the store's ``llm_fact_jobs`` on a
connection and an extractor of its own (and so its own circuit breaker)::

    store.route_llm_facts(queue.submit)       # False: the facts are not the llm's
    jobs = store.llm_fact_jobs(stop)          # on the worker's thread
    outcome = jobs.run(source_id)             # "written", "stale", "current", "gone", ...; None: stopping
    jobs.close()

The host keeps the thread, the queue and its bounds; what a job is (ask the
model outside any write lock, write unless the note moved on meanwhile) is
here and in :meth:`FactObserver.extract_in_background` /
:meth:`FactObserver.write_in_background`.
"""

from __future__ import annotations

import logging
import threading

import apsw

from memvault.store.facts.llm_extract import LLMCancelled
from memvault.store.facts.observer import FactObserver

log = logging.getLogger(__name__)


class LLMFactJobs:
    """Runs queued llm fact extractions, one source at a time, on one thread's
    own connection (see the module docstring)."""

    def __init__(self, observer: FactObserver, con: apsw.Connection, cancel: threading.Event) -> None:
        if observer.llm is None:
            raise ValueError("the facts of this vault do not come from the llm (extractor is not 'llm')")
        self.observer = observer
        self.con = con
        self.cancel = cancel
        observer.defer = None  # this is where deferred work is done
        observer.llm.cancel = cancel  # a call in flight is abandoned within CANCEL_CHECK seconds

    def run(self, source_id: str) -> str | None:
        """Extract and write the facts of one source; the outcome (``written``,
        ``stale``, ``current``, ``gone``, ``unmarked`` or ``failed``, logged),
        or None when the host is stopping (the job is redone at its next start)."""
        observer = self.observer
        try:
            job = observer.extract_in_background(source_id)
        except LLMCancelled:
            return None
        except Exception:
            log.exception("background fact extraction of %s failed", source_id)
            return "failed"
        if isinstance(job, str):
            return job
        if self.cancel.is_set():
            return None  # the hash mismatch re-queues it at the next start
        try:
            # write_transaction waits out a long writer (a full sync, a CLI
            # command) by the store's one retry policy.
            return observer.write_in_background(job)
        except Exception:
            log.exception("writing background facts of %s failed", source_id)
            return "failed"

    def close(self) -> None:
        """Close the jobs' connection."""
        self.con.close()
