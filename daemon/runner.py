"""The daemon: keep the index in line with the vault while it runs.

One thread (the caller's for ``memvault daemon``, a private one for
:meth:`DaemonRunner.start`) runs the watch loop and does all reconciling,
always through the vault's :class:`~memvault.store.memory_store.MemoryStore`:

1. the file watcher starts (a supervised service, :class:`.watch.WatchService`),
   then a full sync (``MemoryStore.sync``), then ``READY=1`` to systemd;
2. the watcher queues hinted paths; when their debounce window has passed
   they are confirmed and applied in one batch (``MemoryStore.sync_paths``);
3. every ``rescan_interval`` seconds a full sync catches what events missed;
4. if the vault folder disappears the watcher stops and the daemon waits
   for it to come back, then starts again at 1 (no note is ever deleted
   because the whole vault vanished);
5. on stop (SIGTERM/SIGINT): no more events, the queue is applied at once,
   the services stop, the WAL is checkpointed, ``STOPPING=1``.
6. ``index.db`` or ``state.db`` deleted or replaced while it runs (another
   inode or device on each tick, checked before a batch is applied): the
   services that hold connections stop, the store closes and reopens, and a
   full sync rebuilds the index from the vault and the durable state (the
   old connection would go on writing into a file nobody else sees).

The background services (the watcher, and those of
:class:`.background.BackgroundServices`: the llm fact worker, the query
server, the embedding worker and the consolidation schedule) run under one
:class:`.services.Supervisor`, which restarts a failed one with backoff and
reports each one's state. Consolidation runs at a quiet moment: the runner
tells it how long the vault has been quiet (:meth:`DaemonRunner.quiet_for`)
and whether a person may be editing a note (:meth:`DaemonRunner.editing`).

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
from typing import Any

import apsw

from memvault.daemon.background import START_WAIT, BackgroundServices
from memvault.daemon.db_files import DatabaseFiles
from memvault.daemon.lock import DaemonLock
from memvault.daemon.notify import Notifier
from memvault.daemon.services import Supervisor
from memvault.daemon.status import iso_now, log_summary, write_state
from memvault.daemon.watch import OverflowListener, PathQueue, VaultEventHandler, WatchService
from memvault.store.hosted import StoreBusyError, SyncSummary, VaultMissingError
from memvault.store.memory_store import MemoryStore
from memvault.vault_io.scan import IgnoreRules, vault_rules

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


class DaemonRunner:
    """Runs the daemon loop for one vault; see the module docstring.

    ``on_batch(kind, paths, summary)`` is called after every reconcile, with
    ``kind`` one of ``"sync"`` (initial or resumed full sync), ``"batch"``,
    ``"rescan"`` or ``"final"``: tests and benchmarks count re-indexes there.
    """

    def __init__(
        self,
        store: MemoryStore,
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
        self.store = store
        store.index_on_open = False  # the watch loop's first full sync comes after its workers are wired
        store.is_daemon = True  # it holds the daemon lock: the store's refusals while one runs are not for it
        self.root = store.root
        debounce_ms = store.settings.debounce_ms if debounce_ms is None else debounce_ms
        self.debounce = max(0, int(debounce_ms)) / 1000
        interval = store.settings.rescan_interval if rescan_interval is None else rescan_interval
        self.rescan_interval = max(0.0, float(interval))
        self.notifier = notifier if notifier is not None else Notifier()
        self.on_batch = on_batch
        self.publish_interval = publish_interval

        self.queue = PathQueue(self.debounce)
        self.handler = VaultEventHandler(
            self.root, self.queue, self._rules(),
            on_root_gone=self._on_root_gone, on_rules_changed=self._on_rules_changed,
        )
        self.services = Supervisor(on_change=self._service_changed)
        self.watcher = WatchService(
            self.root, self.handler, force_polling=polling, poll_interval=poll_interval, on_watching=self._on_watching
        )
        self.services.add(self.watcher)
        # The query server, the embedding worker and the consolidation
        # schedule: a real daemon runs them; tests of the watch loop alone
        # leave them out (``background``).
        self.background = BackgroundServices(
            store, self.services, enabled=background, quiet_for=self.quiet_for, editing=self.editing
        )
        self._last_activity = time.monotonic()  # the last batch of vault events applied
        store.sync_listeners.append(self._synced)

        self.lock = DaemonLock(self.root, store.data_dir)
        self.ready = threading.Event()  # set after the first full sync
        self.mode = "starting"  # starting, watch, poll, waiting, stopping
        self.batches = 0
        self.rescans = 0
        self.failures = 0  # batches and rescans that raised
        self.reopens = 0  # times index.db or state.db was found deleted or replaced
        self.error: BaseException | None = None

        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._root_gone = False
        self._rules_changed = False
        self._overflowed = False
        self._root_id: tuple[int, int] | None = None
        self.databases = DatabaseFiles(store.index_path, store.state_path)
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
            self._start_services()
            with OverflowListener(self._on_overflow):
                self._serve()
        finally:
            try:
                self._shutdown()
            finally:
                self.lock.release()

    def _start_services(self) -> None:
        """What the watcher skips (this device's history log), and the
        background services that start before the first sync."""
        self.handler.history = (self.store.settings.history_folder, self.store.device_id())
        self.background.start()

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
                self._start_watching()
                self._full_sync("sync")
                self._set_mode(self.watcher.mode or "watch")
            except (VaultMissingError, OSError) as exc:
                self.services.stop_service(self.watcher.name)
                if isinstance(exc, VaultMissingError) or not self.root.is_dir():
                    continue
                raise
            except _Stopped:
                return
            if not self.ready.is_set():
                self.background.start_after_first_sync()
                self.notifier.ready(self._status_line())
                self.ready.set()
                log.info("memvault daemon ready: watching %s (%s mode)", self.root, self.mode)
            if self._watch_loop() == "stop":
                return
            # The vault vanished: what was queued is moot, the next full sync decides.
            self.services.stop_service(self.watcher.name)
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
            self.handler.rules = self._rules()
            log.info("Obsidian's excluded files changed; rescanning the vault")
            self._next_rescan = now  # what is excluded changed: reconcile everything
        if self._overflowed:
            self._overflowed = False
            log.warning("inotify queue overflowed, events were lost; rescanning the vault")
            self._next_rescan = now
        replaced = self.databases.changed()
        if replaced:
            self._reopen_databases(replaced)  # its full sync covers whatever is queued too
        batch = self.queue.take(now)
        if batch is not None:
            self._apply_batch(*batch)
        if now >= self._next_rescan:
            self._rescan(now)
        if now >= self._next_ping:
            self._ping()
        if now >= self._next_root_check:
            self._next_root_check = now + ROOT_CHECK_INTERVAL
        if self.queue.changed and now - self._last_publish >= self.publish_interval:
            self._publish()

    def _apply_batch(self, files: set[str], dirs: set[str]) -> None:
        try:
            self._apply(files, dirs, "batch")
        except (StoreBusyError, apsw.BusyError):
            # A CLI writer held the index longer than the write timeout:
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

    def _rescan(self, now: float) -> None:
        try:
            self._full_sync("rescan")
        except (StoreBusyError, apsw.BusyError):
            log.warning("index busy; rescan retried in %g s", BUSY_RETRY)
            self._next_rescan = now + BUSY_RETRY
        except (VaultMissingError, _Stopped):
            raise
        except Exception:
            self.failures += 1
            log.exception("rescan failed; retried in %g s", self.rescan_interval or BUSY_RETRY)
            self._next_rescan = now + (self.rescan_interval or BUSY_RETRY)
        else:
            self.watcher.check_coverage()

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
        return vault_rules(self.root, self.store.settings.ignore)

    def quiet_for(self) -> float:
        """Seconds since the last vault event was applied (0 while any is queued)."""
        if len(self.queue) or not self.ready.is_set() or self.mode not in ("watch", "poll"):
            return 0.0
        return time.monotonic() - self._last_activity

    def editing(self, path: str) -> bool:
        """Whether a person may be editing the note at ``path`` right now:
        events are queued, or it was saved within the quiet period."""
        if len(self.queue):
            return True
        try:
            mtime = (self.root / path).stat().st_mtime
        except OSError:
            return False
        return time.time() - mtime < self.store.settings.consolidate.quiet

    def _on_root_gone(self) -> None:
        self._root_gone = True
        self._wake()

    def _on_rules_changed(self) -> None:
        self._rules_changed = True
        self._wake()

    def _on_overflow(self) -> None:
        self._overflowed = True
        self._wake()

    def _on_watching(self, mode: str) -> None:
        """The watcher (re)started (its thread): after a restart or a switch
        to polling, events may have been missed, so rescan soon."""
        if self.ready.is_set():
            self.mode = mode
            self._next_rescan = time.monotonic()
            self.queue.changed = True
            self._wake()

    def _service_changed(self, name: str, state: str) -> None:
        """A service started, failed or stopped (its thread): publish soon."""
        self.queue.changed = True
        self._wake()

    def _root_unchanged(self) -> bool:
        """Whether the vault folder is still the very folder being watched
        (a folder deleted and made anew has a new inode and no watches)."""
        try:
            st = os.stat(self.root)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._root_id

    def _start_watching(self) -> None:
        """Start the watcher service and wait until events flow."""
        st = os.stat(self.root)
        self._root_id = (st.st_dev, st.st_ino)
        self.handler.rules = self._rules()
        self.services.start_service(self.watcher.name)
        end = time.monotonic() + START_WAIT
        while not self.watcher.watching.wait(0.05):
            if self._stop.is_set() or time.monotonic() > end:
                raise OSError(f"the file watcher did not start: {self.services.status()['watch']['state']}")
        now = time.monotonic()
        self._next_root_check = now + ROOT_CHECK_INTERVAL
        if self.notifier.watchdog_interval:
            self._next_ping = min(self._next_ping, now + self.notifier.watchdog_interval)

    # -- the databases under the daemon -----------------------------------------

    def _reopen_databases(self, what: str) -> None:
        """Close every connection to the old files and build the index again
        from the vault and the durable state (module docstring, 6)."""
        log.warning("%s while the daemon ran; reopening the databases and indexing the whole vault again", what)
        if "state.db was deleted" in what:
            log.error("state.db is gone: what only memvault knew (versions, forgotten memories, strength) is lost "
                      "unless it is restored from a backup (`memvault restore-backup`)")
        holders = self.background.stop_holders(keep=self.watcher.name)  # each holds connections to the old files
        self.store.close()
        self.databases.forget()
        self.reopens += 1
        try:
            self._full_sync("sync")
        finally:
            self.background.restart(holders)
        self.background.after_reopen(holders)

    # -- reconciling -------------------------------------------------------------

    def _synced(self, kind: str, summary: SyncSummary) -> None:
        """The store finished a sync (a store listener): embed what changed."""
        if summary.changed:
            self.background.wake_embedder()

    def _full_sync(self, kind: str) -> None:
        """``MemoryStore.sync`` (raises VaultMissingError, _Stopped)."""
        started = time.monotonic()
        summary = self.store.sync(progress=self._progress, stale_after=OUTBOX_AGE).summary
        self.databases.remember()  # the files this sync wrote into
        # Sources whose llm job was lost (full queue, a stop); at start
        # also those holding default-extractor facts.
        self.background.submit_llm_backlog(upgrade=kind == "sync")
        self._last_rescan = iso_now()
        if kind == "rescan":
            self.rescans += 1
        log_summary("rescan" if kind == "rescan" else "full sync", summary, None)
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
        paths = set(files) | self.store.expand_paths(dirs, self.handler.rules)
        if not paths:
            return
        summary = self.store.sync_paths(paths, stale_after=OUTBOX_AGE).summary
        self._last_activity = time.monotonic()
        self.batches += 1
        self._last_batch = iso_now()
        log_summary("batch", summary, len(paths))
        self._report(kind, paths, summary)

    def _report(self, kind: str, paths: set[str], summary: SyncSummary) -> None:
        if self.on_batch is not None:
            self.on_batch(kind, paths, summary)
        self.queue.changed = True  # publish the new state
        if self.notifier.enabled:
            self.notifier.status(self._status_line())

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
            notes: object = self.store.note_count()
        except Exception:
            notes = "?"
        return f"{self.mode}: {notes} notes indexed, queue {len(self.queue)}, {self.batches} batches, {self.rescans} rescans"

    def state(self) -> dict[str, Any]:
        """The live state, as published for ``memvault status``."""
        services = self.services.status()
        return {
            "pid": os.getpid(),
            "started": self.lock.started,
            "vault": str(self.root),
            "mode": self.mode,
            "queue": len(self.queue),
            "batches": self.batches,
            "rescans": self.rescans,
            "failures": self.failures,
            "reopened": self.reopens,
            "last_batch": self._last_batch,
            "last_rescan": self._last_rescan,
            "debounce_ms": int(self.debounce * 1000),
            "rescan_interval": self.rescan_interval,
            "services": services,
            "embedding": services.get("embedding"),
            "llm_facts": services.get("llm_facts"),
            "consolidate": services.get("consolidate"),
            "query_socket": services.get("query", {}).get("socket", False),
            "updated": iso_now(),
        }

    def _publish(self) -> None:
        self.queue.changed = False
        self._last_publish = time.monotonic()
        try:
            write_state(self.store.data_dir, self.state())
        except OSError as exc:
            log.warning("cannot write daemon state file: %s", exc)

    # -- shutdown ----------------------------------------------------------------------

    def _shutdown(self) -> None:
        self.notifier.stopping()
        self.mode = "stopping"
        self.queue.close()  # no more hints, even from a watcher still winding down
        self.services.stop_service(self.watcher.name)
        files, dirs = self.queue.pop_all()
        try:
            if (files or dirs) and self.root.is_dir():
                self._apply(files, dirs, "final")
        except VaultMissingError:
            pass
        except Exception:
            log.exception("could not apply the last queued changes; the next start's full sync will")
        self.services.stop()
        try:
            self.store.checkpoint()
        except Exception as exc:  # a reader in the middle of a query; harmless
            log.warning("WAL checkpoint at shutdown failed: %s", exc)
        self._publish()
        self.store.sync_listeners.remove(self._synced)
        self.store.close()
        self.notifier.close()
        log.info("memvault daemon stopped")
