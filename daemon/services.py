"""The daemon's background services and their one supervisor.

A service (the watcher, the query server, the embedding worker, the llm
worker) is an object with a ``name`` and a ``run(stop)`` method that works
until the ``stop`` event is set. It never manages its own thread: the
:class:`Supervisor` does, the same way for all of them::

    supervisor = Supervisor()
    supervisor.add(EmbeddingService(store))
    supervisor.add(QueryServer(store))
    supervisor.start()             # in order, each in its own thread
    supervisor.status()            # {"embedding": {"state": "running", ...}, ...}
    supervisor.stop()              # in reverse order, waiting for each

A service whose ``run`` raises (or returns while not asked to stop) is
logged, reported by :meth:`Supervisor.status` as ``"restarting after
BusyError (3rd time)"``, and started again after a backoff that doubles from
:data:`BACKOFF_START` up to :data:`BACKOFF_MAX` seconds; it is never shown as
running while it is dead.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("memvault.daemon")

#: Seconds before the first restart of a failed service; doubled each time.
BACKOFF_START = 1.0
#: Longest wait between restarts.
BACKOFF_MAX = 60.0
#: A service that ran this long before failing starts its backoff afresh.
HEALTHY_AFTER = 120.0


class Service:
    """Base of the daemon's services: override :meth:`run` (and, where a
    blocking wait must be cut short on stop, :meth:`interrupt`). A service
    that takes a moment to get going sets :attr:`ready` once it serves."""

    name = "service"
    #: Whether run() sets :attr:`ready` itself once it serves; otherwise the
    #: supervisor sets it as run() starts.
    sets_ready = False
    ready: threading.Event

    def run(self, stop: threading.Event) -> None:
        """Work until ``stop`` is set; raise on failure (the supervisor restarts it)."""
        raise NotImplementedError

    def interrupt(self) -> None:
        """Called on the stopping thread after ``stop`` is set: wake ``run`` from a wait."""

    def status(self) -> dict[str, Any]:
        """What the service wants ``memvault status`` to show besides its state."""
        return {}

    def _ready_event(self) -> threading.Event:
        if "ready" not in self.__dict__:
            self.ready = threading.Event()
        return self.ready

    # -- one-service convenience (tests, one-off use) ------------------------

    def start(self, timeout: float = 30.0) -> None:
        """Run this service alone under a supervisor of its own, once it is
        ready; its first failure is raised here instead of retried."""
        own = Supervisor()
        self._own: Supervisor | None = own
        own.add(self)
        own.start()
        slot = own._slots[self.name]
        end = time.monotonic() + timeout
        while not self._ready_event().wait(0.02):
            if slot.error is not None or time.monotonic() > end:
                self.stop()
                if slot.error is not None:
                    raise slot.error
                raise TimeoutError(f"the {self.name} service did not get ready within {timeout:g} s")

    def stop(self, timeout: float = 30.0) -> None:
        """Stop what :meth:`start` started."""
        own: Supervisor | None = getattr(self, "_own", None)
        if own is not None:
            own.stop(timeout)
            self._own = None


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th... 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class ServiceExited(Exception):
    """A service's run() returned although nobody asked it to stop."""


@dataclass
class _Slot:
    service: Service
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    state: str = "not started"
    failures: int = 0
    last_error: str | None = None
    error: BaseException | None = None


class Supervisor:
    """Starts, watches, restarts and stops the daemon's services (module docstring)."""

    def __init__(
        self,
        *,
        backoff_start: float = BACKOFF_START,
        backoff_max: float = BACKOFF_MAX,
        on_change: Callable[[str, str], None] | None = None,
    ) -> None:
        self.backoff_start = backoff_start
        self.backoff_max = backoff_max
        #: Called with (service name, new state) on the service's thread
        #: whenever a state changes (the daemon republishes its status).
        self.on_change = on_change
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()

    def add(self, service: Service) -> None:
        """Supervise ``service`` (started by :meth:`start`, in the order added)."""
        if service.name in self._slots:
            raise ValueError(f"a service named {service.name!r} is already supervised")
        self._slots[service.name] = _Slot(service)

    def get(self, name: str) -> Service | None:
        """The service called ``name``, if supervised."""
        slot = self._slots.get(name)
        return slot.service if slot else None

    def start(self) -> None:
        """Start every service not running yet, in the order added."""
        for name in list(self._slots):
            self.start_service(name)

    def start_service(self, name: str) -> None:
        """Start one service (no-op when it runs)."""
        slot = self._slots[name]
        with self._lock:
            if slot.thread is not None and slot.thread.is_alive():
                return
            slot.stop = threading.Event()
            slot.state = "starting"
            slot.thread = threading.Thread(target=self._supervise, args=(slot,), name=f"memvault-{name}", daemon=True)
            slot.thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every service, last added first, waiting for each."""
        for name in reversed(list(self._slots)):
            self.stop_service(name, timeout)

    def stop_service(self, name: str, timeout: float = 30.0) -> None:
        """Stop one service and wait for its thread (a stuck one is logged)."""
        slot = self._slots[name]
        slot.stop.set()
        try:
            slot.service.interrupt()
        except Exception:
            log.exception("interrupting the %s service failed", name)
        thread = slot.thread
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                log.error("the %s service did not stop within %g s", name, timeout)
                return
            slot.thread = None
        slot.state = "stopped"

    def status(self) -> dict[str, dict[str, Any]]:
        """Each service's state line (``running``, ``restarting after X (2nd
        time)``, ``stopped``), restart count, last error and own details."""
        out = {}
        for name, slot in self._slots.items():
            try:
                details = slot.service.status()
            except Exception as exc:  # a status must never break the daemon's report
                details = {"status_error": str(exc)}
            out[name] = {"state": slot.state, "restarts": slot.failures, "last_error": slot.last_error, **details}
        return out

    def _set(self, slot: _Slot, state: str) -> None:
        slot.state = state
        if self.on_change is not None:
            try:
                self.on_change(slot.service.name, state)
            except Exception:
                log.exception("reporting the %s service's state failed", slot.service.name)

    def _supervise(self, slot: _Slot) -> None:
        """The thread of one service: run it, and again after a failure."""
        service, stop = slot.service, slot.stop
        streak = 0
        ready = service._ready_event()
        while not stop.is_set():
            if service.sets_ready:
                ready.clear()
            else:
                ready.set()
            self._set(slot, "running")
            started = time.monotonic()
            try:
                service.run(stop)
                if stop.is_set():
                    break
                raise ServiceExited(f"the {service.name} service stopped by itself")
            except Exception as exc:
                if stop.is_set():
                    log.debug("the %s service ended with %r while stopping", service.name, exc)
                    break
                slot.failures += 1
                slot.error = exc
                streak = 1 if time.monotonic() - started >= HEALTHY_AFTER else streak + 1
                slot.last_error = f"{type(exc).__name__}: {exc}"
                self._set(slot, f"restarting after {type(exc).__name__} ({ordinal(slot.failures)} time)")
                delay = min(self.backoff_max, self.backoff_start * 2 ** (streak - 1))
                log.error("the %s service failed (%s); restarting in %g s", service.name, slot.last_error, delay,
                          exc_info=True)
                if stop.wait(delay):
                    break
        self._set(slot, "stopped")
