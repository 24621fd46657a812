"""Watching a vault: file-system events become debounced path hints.

Events are hints, never facts: the indexer confirms every hinted path by
stat and hash. So this module only has to be sure not to *lose* a path, and
not to hand over a path before the editor that is writing it has finished:

* :class:`PathQueue` keeps one due time per path, pushed back by every new
  event on that path (per-path debounce). An editor's save, in place, by
  temp-file-and-rename or by delete-and-create, touches its paths within a
  few milliseconds; a batch is made only once the whole queue is due (or a
  window later during a long burst), so the note is re-indexed once, with
  its final content.
* :class:`VaultEventHandler` turns watchdog events into vault-relative hints,
  dropping hidden paths (``.obsidian``, ``.trash``, ``.git``, swap files) and
  the vault's ignore rules. A folder event becomes a *folder hint*, expanded
  when due into the files now under it plus the indexed paths under it, which
  covers folders filled before their watch existed and folders moved out.
* :func:`start_inotify` starts the real inotify observer and raises
  :class:`WatchLimitError` when the inotify limits do not allow watching
  every folder; the daemon then polls (:func:`start_polling`), loudly.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingEmitter

from memvault.daemon.services import Service
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.scan import IgnoreRules, excluded

log = logging.getLogger("memvault.daemon")

#: watchdog (7.x, inotify) warns when a new folder's watch is added twice: by
#: the recursive walk of its parent's creation and by its own creation event
#: ("Memory/" and "Memory/semantic/" made at once). The second add replaces the
#: same callback on the same watch, so nothing is lost; the warning is noise.
DOUBLE_WATCH_WARNING = r"Callback with id .* already exists for watch"
warnings.filterwarnings("ignore", message=DOUBLE_WATCH_WARNING, category=RuntimeWarning,
                        module=r"watchdog\.observers\.inotify")

#: The events that can mean a changed path. Leaving out opens, reads and
#: folder "modified" events keeps the kernel from even queueing the flood the
#: indexer's own reading would cause.
EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileDeletedEvent, FileClosedEvent,
    DirCreatedEvent, DirMovedEvent, DirDeletedEvent,
]

#: Obsidian's settings file: its "Excluded files" change what is indexed.
APP_JSON = ".obsidian/app.json"


class PathQueue:
    """Paths and folders waiting for their debounce window to pass.

    All methods are thread-safe; :attr:`cond` is the condition the daemon
    loop sleeps on, notified when the queue goes from empty to non-empty
    (later events only push due times back, so they need no wake-up).
    """

    def __init__(self, debounce: float) -> None:
        self.debounce = debounce
        self.cond = threading.Condition()  # an RLock inside: safe from signal handlers
        self._files: dict[str, float] = {}
        self._dirs: dict[str, float] = {}
        self.accepting = True
        self.changed = False  # set on every change; the runner clears it when it publishes

    def add(self, rel: str, is_dir: bool = False) -> None:
        """Hint that ``rel`` (a file, or a folder with ``is_dir``) may have changed."""
        with self.cond:
            if not self.accepting:
                return
            was_empty = not self._files and not self._dirs
            (self._dirs if is_dir else self._files)[rel] = time.monotonic() + self.debounce
            self.changed = True
            if was_empty:
                self.cond.notify_all()

    def _dues(self) -> list[float]:
        return [*self._files.values(), *self._dirs.values()]

    def wake_at(self) -> float | None:
        """When :meth:`take` may next return a batch; None while empty."""
        with self.cond:
            dues = self._dues()
            if not dues:
                return None
            first, last = min(dues), max(dues)
            if first > time.monotonic():
                return first
            return min(last, first + self.debounce)

    def take(self, now: float) -> tuple[set[str], set[str]] | None:
        """Remove and return the (files, folders) whose debounce has passed, or
        None while it is better to wait.

        Every entry waits out its own debounce. The batch is made when the
        whole queue is due (the vault went quiet), or once the earliest due
        entry has waited one more debounce window: during a long burst that
        makes one batch per window instead of one per file, and a path
        waits at most two windows.
        """
        with self.cond:
            dues = self._dues()
            if not dues:
                return None
            first, last = min(dues), max(dues)
            if first > now or (last > now and now < first + self.debounce):
                return None
            files = {p for p, due in self._files.items() if due <= now}
            dirs = {p for p, due in self._dirs.items() if due <= now}
            for p in files:
                del self._files[p]
            for p in dirs:
                del self._dirs[p]
            self.changed = True
            return files, dirs

    def pop_all(self) -> tuple[set[str], set[str]]:
        """Remove and return everything, due or not (shutdown)."""
        with self.cond:
            files, dirs = set(self._files), set(self._dirs)
            self._files.clear()
            self._dirs.clear()
            self.changed = True
            return files, dirs

    def close(self) -> None:
        """Stop accepting hints (shutdown)."""
        with self.cond:
            self.accepting = False

    def __len__(self) -> int:
        with self.cond:
            return len(self._files) + len(self._dirs)


class VaultEventHandler(FileSystemEventHandler):
    """Feeds watchdog events for one vault into a :class:`PathQueue`.

    Runs on the observer's thread, so it only computes paths and queues
    them; anything that touches the index happens on the daemon's thread.
    """

    def __init__(
        self,
        root: Path,
        queue: PathQueue,
        rules: IgnoreRules,
        *,
        on_root_gone: Callable[[], None],
        on_rules_changed: Callable[[], None],
    ) -> None:
        self.root = os.fspath(root)
        self.queue = queue
        self.rules = rules  # replaced by the runner when app.json changes
        self.on_root_gone = on_root_gone
        self.on_rules_changed = on_rules_changed
        #: (the history logs' folder, this device's id), once the daemon knows
        #: them: another device's log arriving is a hint though it is hidden.
        self.history: tuple[str, str] | None = None

    def on_any_event(self, event: FileSystemEvent) -> None:
        """Queue the paths an event names (a move names two)."""
        kind = event.event_type
        if kind in ("opened", "closed_no_write"):
            return
        if event.is_directory and kind in ("modified", "closed"):
            return  # a child changed: the child has its own event
        self._hint(event.src_path, event.is_directory, kind)
        dest = getattr(event, "dest_path", "")
        if kind == "moved" and dest:
            self._hint(dest, event.is_directory, "created")

    def _hint(self, path: str | bytes, is_dir: bool, kind: str) -> None:
        path = os.fsdecode(path)
        if path == self.root:
            if kind in ("deleted", "moved"):
                self.on_root_gone()
            return
        if not path.startswith(self.root + os.sep):
            return  # the other end of a move out of / into the vault
        rel = path[len(self.root) + 1 :].replace(os.sep, "/")
        if rel == APP_JSON:
            self.on_rules_changed()
            return
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            return  # the scan skips (and warns about) such names too
        if not is_dir and self.history is not None and _another_devices_log(rel, *self.history):
            self.queue.add(rel)  # a hint that makes the batch read the logs (the reconcile skips it)
            return
        if excluded(self.rules, rel, is_dir):
            return
        self.queue.add(rel, is_dir=is_dir)


def _another_devices_log(rel: str, folder: str, device: str) -> bool:
    """Whether ``rel`` is a history log file of another device (this
    device's own appends need no batch)."""
    name = rel[len(folder) + 1:] if rel.startswith(folder + "/") else ""
    return bool(name) and "/" not in name and name.endswith(".jsonl") and not name.startswith((".", device))


class OverflowListener(logging.Handler):
    """Hears watchdog report a kernel inotify queue overflow.

    When more events arrive than the kernel queues
    (``fs.inotify.max_queued_events``), they are dropped; watchdog rebuilds
    its watches but only *logs* the loss. The daemon answers with a full
    rescan right away instead of waiting for the next scheduled one.
    """

    LOGGER = "watchdog.observers"

    def __init__(self, callback: Callable[[], None]) -> None:
        super().__init__(logging.WARNING)
        self.callback = callback

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Inotify queue overflowed"):
            self.callback()

    def __enter__(self) -> "OverflowListener":
        logging.getLogger(self.LOGGER).addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger(self.LOGGER).removeHandler(self)


# -- observers -------------------------------------------------------------


class WatchLimitError(MemvaultError):
    """inotify cannot watch every folder of the vault."""


def _sysctl(name: str) -> str:
    try:
        return Path(f"/proc/sys/fs/inotify/{name}").read_text().strip()
    except OSError:
        return "?"


def watchable_dirs(root: Path) -> int:
    """How many inotify watches watchdog needs for ``root``: every folder, hidden
    ones included, not following symlinks (as watchdog walks it)."""
    count = 1
    for dirpath, dirnames, _files in os.walk(root):
        count += sum(1 for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
    return count


def inotify_watches(observer: BaseObserver) -> int | None:
    """How many watches the observer's inotify instance holds, from
    ``/proc/self/fdinfo``; None when that cannot be read."""
    try:
        fd = observer._inotify_fd._inotify_fd  # type: ignore[attr-defined]  # watchdog internals
        text = Path(f"/proc/self/fdinfo/{fd}").read_text()
    except (AttributeError, OSError):
        return None
    return sum(1 for line in text.splitlines() if line.startswith("inotify wd:"))


def check_watch_coverage(observer: BaseObserver, root: Path) -> None:
    """Raise :class:`WatchLimitError` if the observer watches fewer folders than exist.

    watchdog ignores a failure to watch a *sub*folder (it may have vanished
    mid-walk), so hitting ``max_user_watches`` half-way would otherwise go
    unnoticed and leave part of the vault silently unwatched. Counting once
    more absorbs folders deleted between the two counts.
    """
    for attempt in range(2):
        have = inotify_watches(observer)
        if have is None or have >= watchable_dirs(root):
            return
        if attempt == 0:
            time.sleep(0.05)
    raise WatchLimitError(f"inotify watch limit reached (fs.inotify.max_user_watches={_sysctl('max_user_watches')})")


def start_inotify(root: Path, handler: FileSystemEventHandler) -> BaseObserver:
    """Start an inotify observer over the whole vault, or raise :class:`WatchLimitError`."""
    try:
        observer = Observer()
    except OSError as exc:  # the inotify instance itself is refused
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            raise WatchLimitError(
                f"inotify instance limit reached (fs.inotify.max_user_instances={_sysctl('max_user_instances')})"
            ) from exc
        raise
    try:
        observer.schedule(handler, os.fspath(root), recursive=True, event_filter=EVENTS)
        observer.start()
        check_watch_coverage(observer, root)
    except (OSError, WatchLimitError) as exc:
        stop_observer(observer)
        if isinstance(exc, WatchLimitError):
            raise
        if exc.errno == errno.ENOSPC:
            raise WatchLimitError(
                f"inotify watch limit reached (fs.inotify.max_user_watches={_sysctl('max_user_watches')})"
            ) from exc
        if exc.errno == errno.EMFILE:
            raise WatchLimitError(
                f"inotify instance limit reached (fs.inotify.max_user_instances={_sysctl('max_user_instances')})"
            ) from exc
        raise
    return observer


#: Share of one core the polling fallback may spend listing the vault: each
#: full listing is followed by a pause of at least its CPU time / this share.
POLL_CPU_SHARE = 0.005
#: Longest pause between two listings, however large the vault.
POLL_MAX_INTERVAL = 60.0


class AdaptivePollingEmitter(PollingEmitter):
    """watchdog's polling emitter, pausing longer on a vault whose listing is
    expensive: re-listing 20,000 files every 5 s costs ~5% of a core, so the
    pause grows with the measured cost of a listing (between the configured
    interval and :data:`POLL_MAX_INTERVAL`) to stay near :data:`POLL_CPU_SHARE`."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.base_interval = float(self._timeout)

    def queue_events(self, timeout: float) -> None:
        """One pause and one listing, then the next pause from its CPU cost."""
        before = time.thread_time()
        super().queue_events(timeout)
        cost = time.thread_time() - before
        wanted = min(POLL_MAX_INTERVAL, max(self.base_interval, cost / POLL_CPU_SHARE))
        if abs(wanted - self._timeout) > 0.5:
            log.info("polling every %.0f s (listing the vault took %.0f ms of CPU)", wanted, cost * 1000)
        self._timeout = wanted


class AdaptivePollingObserver(BaseObserver):
    """A polling observer built on :class:`AdaptivePollingEmitter`."""

    def __init__(self, *, timeout: float) -> None:
        super().__init__(AdaptivePollingEmitter, timeout=timeout)


def start_polling(root: Path, handler: FileSystemEventHandler, interval: float) -> BaseObserver:
    """Start a polling observer that re-lists the vault every ``interval``
    seconds, or less often when listing it is expensive."""
    observer = AdaptivePollingObserver(timeout=interval)
    observer.schedule(handler, os.fspath(root), recursive=True, event_filter=EVENTS)
    observer.start()
    return observer


def stop_observer(observer: BaseObserver | None, timeout: float = 10.0) -> None:
    """Stop an observer and wait for its threads, whether or not it started.

    ``stop()`` also stops the emitters and inotify reader of an observer
    whose ``start()`` failed (watchdog's ``on_thread_stop`` does that).
    """
    if observer is None:
        return
    observer.stop()
    if observer.is_alive():
        observer.join(timeout)


class WatcherDied(Exception):
    """The file watcher's thread ended on its own."""


class WatchService(Service):
    """The vault's file watcher as a supervised service.

    ``run`` starts an inotify observer over the whole vault (or, at the
    inotify limit or when polling is forced, an adaptive polling one) that
    feeds ``handler``, then keeps an eye on it: an observer whose thread died
    ends ``run`` with :class:`WatcherDied`, and the supervisor starts it
    again. ``on_watching(mode)`` is called each time watching starts, so the
    daemon can catch up (rescan) on what a restart may have missed.
    """

    name = "watch"
    sets_ready = True

    def __init__(
        self,
        root: Path,
        handler: FileSystemEventHandler,
        *,
        force_polling: bool = False,
        poll_interval: float = 5.0,
        on_watching: Callable[[str], None] | None = None,
    ) -> None:
        self.root = root
        self.handler = handler
        self.force_polling = force_polling
        self.poll_interval = poll_interval
        self.on_watching = on_watching
        self.mode: str | None = None  # "watch" or "poll" while running
        self.watching = self._ready_event()  # set once events flow
        self._observer: BaseObserver | None = None
        self._to_polling = threading.Event()

    def run(self, stop: threading.Event) -> None:
        """Watch until ``stop``; raise when the observer dies."""
        self._observer, self.mode = self._start(self.force_polling)
        try:
            self.watching.set()
            if self.on_watching is not None:
                self.on_watching(self.mode)
            while not stop.wait(1.0):
                if self._to_polling.is_set() and self.mode == "watch":
                    self._to_polling.clear()
                    stop_observer(self._observer)
                    self._observer, self.mode = self._start(True)
                    if self.on_watching is not None:
                        self.on_watching(self.mode)
                if not self._observer.is_alive():
                    raise WatcherDied(f"the file watcher ({self.mode} mode) stopped")
        finally:
            self.watching.clear()
            stop_observer(self._observer)
            self._observer = None

    def interrupt(self) -> None:
        """Nothing to wake: run() looks at its stop event every second."""

    def status(self) -> dict[str, Any]:
        """The watch mode."""
        return {"mode": self.mode}

    def check_coverage(self) -> None:
        """Fall back to polling if folders made since the start went unwatched.

        watchdog adds a watch for each new folder but ignores a failure to
        (the limit may be reached long after start-up); the caller has just
        rescanned, this keeps it from recurring.
        """
        observer = self._observer
        if self.mode != "watch" or observer is None:
            return
        try:
            check_watch_coverage(observer, self.root)
        except WatchLimitError as exc:
            log.warning("%s; falling back to polling every %g s", exc, self.poll_interval)
            self._to_polling.set()
        except OSError:
            pass  # the vault is vanishing; the daemon's root check handles that

    def _start(self, polling: bool) -> tuple[BaseObserver, str]:
        if not polling:
            try:
                return start_inotify(self.root, self.handler), "watch"
            except WatchLimitError as exc:
                log.warning("%s; falling back to polling every %g s", exc, self.poll_interval)
        return start_polling(self.root, self.handler, self.poll_interval), "poll"
