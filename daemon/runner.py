"""The daemon: keep the index in line with the vault while it runs.

One thread (the caller's for ``memvault daemon``, a private one for
:meth:`DaemonRunner.start`) owns the index connection and does all writing:

1. full sync (``Indexer.sync``), then ``READY=1`` to systemd;
2. a watchdog observer queues hinted paths (see :mod:`.watch`); when their
   debounce window has passed they are confirmed and applied in one batch
   by ``Indexer.sync_paths``;
3. every ``rescan_interval`` seconds a full sync catches what events missed;
4. if the vault folder disappears the observer stops and the daemon waits
   for it to come back, then starts again at 1 (no note is ever deleted
   because the whole vault vanished);
5. on stop (SIGTERM/SIGINT): no more events, the queue is applied at once,
   the WAL is checkpointed, ``STOPPING=1``.

Between deadlines the thread sleeps on a condition with a timeout equal to
the time to the next deadline (debounce, rescan, watchdog ping, vault check,
state publish), so an idle daemon costs next to nothing.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
from memvault.store.db import records as rec
from memvault.store.db.connection import checkpoint, write_transaction
from memvault.vault_io.scan import IgnoreRules, excluded, vault_rules
from watchdog.observers.api import BaseObserver

from memvault.store.memory_store import Vault
from memvault.store.embedding.pipeline import EmbeddingWorker
from memvault.daemon.llm_worker import LLMFactWorker
from memvault.store.index.reconcile import Indexer, SyncSummary, VaultMissingError
from memvault.daemon.lock import DaemonLock
from memvault.store.memories.mirror import flush_outbox
from memvault.daemon.notify import Notifier
from memvault.daemon.serve import QueryServer, ServerRunningError
from memvault.daemon.status import write_state
from memvault.daemon.watch import (
    OverflowListener,
    PathQueue,
    VaultEventHandler,
    WatchLimitError,
    check_watch_coverage,
    start_inotify,
    start_polling,
    stop_observer,
)

log = logging.getLogger("memvault.daemon")

#: Seconds between polls when inotify cannot watch the whole vault.
POLL_INTERVAL = 5.0
#: Seconds between checks that the vault folder is still the one watched.
ROOT_CHECK_INTERVAL = 2.0
#: Seconds between checks for a vanished vault's return.
VAULT_WAIT_INTERVAL = 1.0
#: Memory notes whose writer died are flushed once this old (seconds).
OUTBOX_AGE = 30.0
#: Seconds before a rescan that found the index busy is tried again.
BUSY_RETRY = 10.0
#: Seconds between keep-alives sent from inside a long full sync.
PROGRESS_INTERVAL = 10.0

BatchHook = Callable[[str, set[str], SyncSummary], None]


class _Stopped(Exception):
    """Raised from the sync progress callback to abandon a sync on stop."""


def _iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class DaemonRunner:
    """Runs the daemon loop for one vault; see the module docstring.

    ``on_batch(kind, paths, summary)`` is called after every reconcile, with
    ``kind`` one of ``"sync"`` (initial or resumed full sync), ``"batch"``,
    ``"rescan"`` or ``"final"``: tests and benchmarks count re-indexes there.
    """

    def __init__(
        self,
        vault: Vault,
        *,
        debounce_ms: int | None = None,
        rescan_interval: float | None = None,
        polling: bool = False,
        poll_interval: float = POLL_INTERVAL,
        notifier: Notifier | None = None,
        on_batch: BatchHook | None = None,
        publish_interval: float = 1.0,
        background: bool = True,
    ) -> None:
        self.vault = vault
        self.root = vault.root
        debounce_ms = vault.config["debounce_ms"] if debounce_ms is None else debounce_ms
        self.debounce = max(0, int(debounce_ms)) / 1000
        interval = vault.config["rescan_interval"] if rescan_interval is None else rescan_interval
        self.rescan_interval = max(0.0, float(interval))
        self.force_polling = polling
        self.poll_interval = poll_interval
        self.notifier = notifier if notifier is not None else Notifier()
        self.on_batch = on_batch
        self.publish_interval = publish_interval
        # The embedding worker and the query server: a real daemon runs both;
        # tests of the watch loop alone leave them out.
        self.background = background
        self._embedder: EmbeddingWorker | None = None
        self._server: QueryServer | None = None
        # With extractor = "llm": the model is asked off the hot path (daemon.facts).
        self._llm_worker: LLMFactWorker | None = None

        self.queue = PathQueue(self.debounce)
        self.lock = DaemonLock(self.root, vault.data_dir)
        self.ready = threading.Event()  # set after the first full sync
        self.mode = "starting"  # starting, watch, poll, waiting, stopping
        self.batches = 0
        self.rescans = 0
        self.failures = 0  # batches and rescans that raised
        self.error: BaseException | None = None

        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._observer: BaseObserver | None = None
        self._handler: VaultEventHandler | None = None
        self._indexer: Indexer | None = None
        self._root_gone = False
        self._rules_changed = False
        self._overflowed = False
        self._root_id: tuple[int, int] | None = None
        self._last_batch: str | None = None
        self._last_rescan: str | None = None
        self._next_rescan = float("inf")
        self._next_ping = float("inf")
        self._next_root_check = float("inf")
        self._last_publish = 0.0
        self._next_progress = 0.0

    # -- control -----------------------------------------------------------

    def start(self) -> None:
        """Take the vault lock, then run the loop in a background thread.

        Raises :class:`~.lock.DaemonRunningError` here, in the caller, when
        another daemon serves the vault.
        """
        self.lock.acquire()
        self._thread = threading.Thread(target=self._thread_main, name="memvault-daemon", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 60.0) -> None:
        """Ask the loop to stop and wait for it; re-raises an error it died of."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError("memvault daemon thread did not stop")
            self._thread = None
        if self.error is not None:
            raise self.error

    def request_stop(self) -> None:
        """Ask the loop to stop soon (safe from a signal handler)."""
        self._stop.set()
        self._wake()

    def run(self) -> None:
        """Run in the calling thread until :meth:`request_stop` (the CLI path)."""
        self.lock.acquire()
        self._run_locked()

    def _thread_main(self) -> None:
        try:
            self._run_locked()
        except BaseException as exc:  # handed to stop()
            self.error = exc
            log.exception("memvault daemon failed")

    def _wake(self) -> None:
        with self.queue.cond:
            self.queue.cond.notify_all()

    # -- the loop --------------------------------------------------------------

    def _run_locked(self) -> None:
        try:
            log.info("memvault daemon starting for %s (pid %d)", self.root, os.getpid())
            if self.background:
                from memvault.store.embedding.model import set_threads

                set_threads(self.vault.config["embedding.daemon_threads"])
                self._start_server()
            with OverflowListener(self._on_overflow):
                self._serve()
        finally:
            try:
                self._shutdown()
            finally:
                self.lock.release()

    def _serve(self) -> None:
        while not self._stop.is_set():
            if not self.root.is_dir():
                self._wait_for_vault()
                continue
            self._root_gone = False
            try:
                # Watch first, then sync: a change made during a long sync is
                # queued rather than left for the next rescan.
                self._set_mode("starting")
                watch_mode = self._start_watching()
                self._full_sync("sync")
                self._set_mode(watch_mode)
            except (VaultMissingError, OSError) as exc:
                stop_observer(self._observer)
                self._observer = None
                if isinstance(exc, VaultMissingError) or not self.root.is_dir():
                    continue
                raise
            except _Stopped:
                return
            if not self.ready.is_set():
                if self.background and self._embedder is None:
                    self._embedder = EmbeddingWorker(self.vault)
                    self._embedder.start()
                self.notifier.ready(self._status_line())
                self.ready.set()
                log.info("memvault daemon ready: watching %s (%s mode)", self.root, self.mode)
            if self._watch_loop() == "stop":
                return
            # The vault vanished: what was queued is moot, the next full sync decides.
            stop_observer(self._observer)
            self._observer = None
            self.queue.pop_all()
            log.warning("vault folder %s is gone; watching stopped until it is back", self.root)

    def _watch_loop(self) -> str:
        cond = self.queue.cond
        while True:
            with cond:
                if not (self._stop.is_set() or self._root_gone or self._rules_changed or self._overflowed):
                    timeout = self._next_deadline() - time.monotonic()
                    if timeout > 0:
                        cond.wait(timeout)
            if self._stop.is_set():
                return "stop"
            now = time.monotonic()
            if self._root_gone or (now >= self._next_root_check and not self._root_unchanged()):
                return "gone"
            try:
                self._tick(now)
            except VaultMissingError:
                return "gone"
            except _Stopped:  # a rescan gave up part-way for a stop request
                return "stop"

    def _tick(self, now: float) -> None:
        if self._rules_changed:
            self._rules_changed = False
            self._reload_rules()
            self._next_rescan = now  # what is excluded changed: reconcile everything
        if self._overflowed:
            self._overflowed = False
            log.warning("inotify queue overflowed, events were lost; rescanning the vault")
            self._next_rescan = now
        batch = self.queue.take(now)
        if batch is not None:
            files, dirs = batch
            try:
                self._apply(files, dirs, "batch")
            except apsw.BusyError:
                # A CLI writer held the index longer than the busy timeout:
                # keep the hints and try again after another debounce.
                log.warning("index busy; %d queued paths retried shortly", len(files) + len(dirs))
                for p in files:
                    self.queue.add(p)
                for d in dirs:
                    self.queue.add(d, is_dir=True)
            except VaultMissingError:
                raise
            except Exception:
                # One bad batch must not end the daemon (systemd would only
                # restart it into the same error): log it, let a rescan retry.
                self.failures += 1
                log.exception("indexing %d changed paths failed; the next rescan retries them", len(files) + len(dirs))
        if now >= self._next_rescan:
            try:
                self._full_sync("rescan")
            except apsw.BusyError:
                log.warning("index busy; rescan retried in %g s", BUSY_RETRY)
                self._next_rescan = now + BUSY_RETRY
            except (VaultMissingError, _Stopped):
                raise
            except Exception:
                self.failures += 1
                log.exception("rescan failed; retried in %g s", self.rescan_interval or BUSY_RETRY)
                self._next_rescan = now + (self.rescan_interval or BUSY_RETRY)
            else:
                self._recheck_coverage()
        if now >= self._next_ping:
            self._ping()
        if now >= self._next_root_check:
            self._next_root_check = now + ROOT_CHECK_INTERVAL
        if self.queue.changed and now - self._last_publish >= self.publish_interval:
            self._publish()

    def _next_deadline(self) -> float:
        deadlines = [self._next_rescan, self._next_ping, self._next_root_check]
        due = self.queue.wake_at()
        if due is not None:
            deadlines.append(due)
        if self.queue.changed:
            deadlines.append(self._last_publish + self.publish_interval)
        return min(deadlines)

    def _wait_for_vault(self) -> None:
        self._set_mode("waiting")
        log.warning("vault folder %s is missing; checking every %.0f s for it to come back", self.root, VAULT_WAIT_INTERVAL)
        next_ping = time.monotonic()
        while not self._stop.is_set() and not self.root.is_dir():
            if self.notifier.watchdog_interval and time.monotonic() >= next_ping:
                self.notifier.watchdog()  # waiting is healthy, not hung
                next_ping = time.monotonic() + self.notifier.watchdog_interval
            self._stop.wait(VAULT_WAIT_INTERVAL)
        if not self._stop.is_set():
            log.info("vault folder %s is back; resuming with a full sync", self.root)

    # -- watching --------------------------------------------------------------

    def _rules(self) -> IgnoreRules:
        return vault_rules(self.root, self.vault.config["ignore"])

    def _reload_rules(self) -> None:
        if self._handler is not None:
            self._handler.rules = self._rules()
        log.info("Obsidian's excluded files changed; rescanning the vault")

    def _on_root_gone(self) -> None:
        self._root_gone = True
        self._wake()

    def _on_rules_changed(self) -> None:
        self._rules_changed = True
        self._wake()

    def _on_overflow(self) -> None:
        self._overflowed = True
        self._wake()

    def _root_unchanged(self) -> bool:
        """Whether the vault folder is still the very folder being watched
        (a folder deleted and made anew has a new inode and no watches)."""
        try:
            st = os.stat(self.root)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._root_id

    def _start_watching(self) -> str:
        """Start the observer; returns the mode it runs in, "watch" or "poll"."""
        st = os.stat(self.root)
        self._root_id = (st.st_dev, st.st_ino)
        self._handler = VaultEventHandler(
            self.root,
            self.queue,
            self._rules(),
            on_root_gone=self._on_root_gone,
            on_rules_changed=self._on_rules_changed,
        )
        observer, mode = None, "watch"
        if not self.force_polling:
            try:
                observer = start_inotify(self.root, self._handler)
            except WatchLimitError as exc:
                log.warning("%s; falling back to polling every %g s", exc, self.poll_interval)
        if observer is None:
            observer, mode = start_polling(self.root, self._handler, self.poll_interval), "poll"
        self._observer = observer
        now = time.monotonic()
        self._next_root_check = now + ROOT_CHECK_INTERVAL
        if self.notifier.watchdog_interval:
            self._next_ping = min(self._next_ping, now + self.notifier.watchdog_interval)
        return mode

    def _recheck_coverage(self) -> None:
        """Fall back to polling if folders made since the start went unwatched.

        watchdog adds a watch for each new folder but ignores a failure to
        (the limit may be reached long after start-up); the rescan has just
        caught up on what those folders missed, this keeps it from recurring.
        """
        if self.mode != "watch" or self._observer is None:
            return
        try:
            check_watch_coverage(self._observer, self.root)
        except WatchLimitError as exc:
            log.warning("%s; falling back to polling every %g s", exc, self.poll_interval)
            stop_observer(self._observer)
            assert self._handler is not None
            self._observer = start_polling(self.root, self._handler, self.poll_interval)
            self._set_mode("poll")
        except OSError:
            pass  # the vault is vanishing; the root check handles that

    # -- reconciling -------------------------------------------------------------

    def _get_indexer(self) -> Indexer:
        if self._indexer is None:
            indexer = self.vault.indexer(refresh_globs=False)
            worker = LLMFactWorker.attach(self.vault, indexer, on_done=self._llm_done)
            try:
                # Only now, so that with the llm extractor the notes a changed
                # `sources` glob adds are queued for the worker, not asked inline.
                for observer in indexer.observers:
                    refresh = getattr(observer, "refresh_globs", None)
                    if refresh is not None:
                        refresh()
            except BaseException:
                if worker is not None:
                    worker.stop()
                raise  # the next call builds the indexer again, and refreshes again
            self._indexer, self._llm_worker = indexer, worker
        return self._indexer

    def _llm_done(self, source_id: str, outcome: str) -> None:
        """The llm worker wrote facts (its thread): embed them soon."""
        if outcome == "written" and self._embedder is not None:
            self._embedder.wake()

    def _full_sync(self, kind: str) -> None:
        """``Indexer.sync`` (raises VaultMissingError, _Stopped)."""
        started = time.monotonic()
        summary = self._get_indexer().sync(progress=self._progress)
        with write_transaction(self.vault.con):
            rec.set_meta(self.vault.con, "last_sync", rec.now_iso())
        if self._llm_worker is not None:
            # Sources whose llm job was lost (full queue, a stop); at start
            # also those holding default-extractor facts.
            self._llm_worker.submit_backlog(upgrade=kind == "sync")
        self._last_rescan = _iso_now()
        if kind == "rescan":
            self.rescans += 1
        self._log_summary("rescan" if kind == "rescan" else "full sync", summary, None)
        self._report(kind, set(), summary)
        now = time.monotonic()
        self._next_rescan = now + self.rescan_interval if self.rescan_interval > 0 else float("inf")
        if now - started > 1 and self.notifier.watchdog_interval:
            self._ping()

    def _progress(self, done: int, total: int) -> None:
        """Called per file during a full sync's read phase: keep systemd informed
        on a long first index, and give up early on stop (nothing is written yet)."""
        if self._stop.is_set():
            raise _Stopped
        now = time.monotonic()
        if not self.notifier.enabled or now < self._next_progress:
            return
        self._next_progress = now + PROGRESS_INTERVAL
        if not self.ready.is_set():
            self.notifier.extend_timeout(60)
            self.notifier.status(f"indexing {done}/{total}")
        if self.notifier.watchdog_interval:
            self._ping()

    def _apply(self, files: set[str], dirs: set[str], kind: str) -> None:
        """Confirm and apply one batch of hinted paths (raises VaultMissingError)."""
        paths = set(files)
        for d in dirs:
            paths |= self._expand_dir(d)
        if not paths:
            return
        summary = self._get_indexer().sync_paths(paths)
        self.batches += 1
        self._last_batch = _iso_now()
        self._log_summary("batch", summary, len(paths))
        self._report(kind, paths, summary)

    def _expand_dir(self, rel: str) -> set[str]:
        """The files under folder ``rel`` on disk now, plus the indexed paths
        under it: together they cover a folder created, filled, moved in,
        moved out or deleted."""
        rules = self._handler.rules if self._handler else self._rules()
        out: set[str] = set()
        top = self.root / rel
        for dirpath, dirnames, filenames in os.walk(top):
            base = Path(dirpath).relative_to(self.root).as_posix()
            dirnames[:] = [d for d in dirnames if not excluded(rules, f"{base}/{d}", is_dir=True)]
            for name in filenames:
                if not excluded(rules, f"{base}/{name}"):
                    out.add(f"{base}/{name}")
        rows = self.vault.con.execute("SELECT path FROM files WHERE path >= ? AND path < ?", (rel + "/", rel + "0"))
        out.update(r[0] for r in rows)
        return out

    def _start_server(self) -> None:
        """Answer ``search``/``context`` warm over the vault's socket."""
        try:
            self._server = QueryServer(self.vault)
            self._server.start()
        except (OSError, ServerRunningError) as exc:
            self._server = None
            log.warning("query socket unavailable, commands will work in-process: %s", exc)

    def _report(self, kind: str, paths: set[str], summary: SyncSummary) -> None:
        self._flush_outbox()
        if self._embedder is not None and summary.changed:
            self._embedder.wake()
        if self.on_batch is not None:
            self.on_batch(kind, paths, summary)
        self.queue.changed = True  # publish the new state
        if self.notifier.enabled:
            self.notifier.status(self._status_line())

    def _log_summary(self, what: str, summary: SyncSummary, checked: int | None) -> None:
        for line in summary.warnings:
            log.warning("%s", line)
        for line in summary.parse_errors:
            log.warning("parse error: %s", line)
        changed = summary.added + summary.updated + summary.moved + summary.deleted
        if checked is None:
            level = logging.INFO if changed or what == "full sync" else logging.DEBUG
            log.log(level, "%s: %d added, %d updated, %d moved, %d deleted in %.2fs",
                    what, summary.added, summary.updated, summary.moved, summary.deleted, summary.seconds)
        elif changed:
            log.info("indexed %d changed paths in %.2fs", changed, summary.seconds)
        else:
            log.debug("checked %d paths: nothing changed (%.2fs)", checked, summary.seconds)

    def _flush_outbox(self) -> None:
        """Write memory notes whose CLI writer died (see daemon.memories)."""
        try:
            flush_outbox(self.vault, older_than=OUTBOX_AGE)
        except Exception:
            log.exception("flushing the memory outbox failed")

    # -- reporting -----------------------------------------------------------------

    def _ping(self) -> None:
        self.notifier.watchdog()
        if self.notifier.watchdog_interval:
            self._next_ping = time.monotonic() + self.notifier.watchdog_interval

    def _set_mode(self, mode: str) -> None:
        self.mode = mode
        self._publish()

    def _status_line(self) -> str:
        try:
            notes = self.vault.con.execute("SELECT count(*) FROM files WHERE kind = 'note'").fetchone()[0]
        except Exception:
            notes = "?"
        return f"{self.mode}: {notes} notes indexed, queue {len(self.queue)}, {self.batches} batches, {self.rescans} rescans"

    def state(self) -> dict[str, Any]:
        """The live state, as published for ``memvault status``."""
        return {
            "pid": os.getpid(),
            "started": self.lock.started,
            "vault": str(self.root),
            "mode": self.mode,
            "queue": len(self.queue),
            "batches": self.batches,
            "rescans": self.rescans,
            "failures": self.failures,
            "last_batch": self._last_batch,
            "last_rescan": self._last_rescan,
            "debounce_ms": int(self.debounce * 1000),
            "rescan_interval": self.rescan_interval,
            "embedding": self._embedder.status() if self._embedder else None,
            "llm_facts": self._llm_worker.status() if self._llm_worker else None,
            "query_socket": bool(self._server),
            "updated": _iso_now(),
        }

    def _publish(self) -> None:
        self.queue.changed = False
        self._last_publish = time.monotonic()
        try:
            write_state(self.vault.data_dir, self.state())
        except OSError as exc:
            log.warning("cannot write daemon state file: %s", exc)

    # -- shutdown ----------------------------------------------------------------------

    def _shutdown(self) -> None:
        self.notifier.stopping()
        self.mode = "stopping"
        self.queue.close()  # no more hints, even from an observer still winding down
        stop_observer(self._observer)
        self._observer = None
        files, dirs = self.queue.pop_all()
        try:
            if (files or dirs) and self.root.is_dir():
                self._apply(files, dirs, "final")
        except VaultMissingError:
            pass
        except Exception:
            log.exception("could not apply the last queued changes; the next start's full sync will")
        for service in (self._llm_worker, self._server, self._embedder):
            if service is not None:
                try:
                    service.stop()
                except Exception:
                    log.exception("stopping %s failed", type(service).__name__)
        self._server = self._embedder = self._llm_worker = None
        try:
            checkpoint(self.vault.con)
        except Exception as exc:  # a reader in the middle of a query; harmless
            log.warning("WAL checkpoint at shutdown failed: %s", exc)
        self._publish()
        self.vault.close()
        self.notifier.close()
        log.info("memvault daemon stopped")
