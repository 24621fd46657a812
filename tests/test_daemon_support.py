"""Shared support for the daemon tests (no tests here): a runner in a thread, index probes, a notify socket."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw

from memvault.daemon.runner import DaemonRunner
from memvault.store.index.reconcile import SyncSummary
from memvault.store.location import index_path
from memvault.store.memory_store import MemoryStore


class Recorder:
    """The runner's ``on_batch`` hook: remembers every reconcile."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[str, frozenset[str], SyncSummary]] = []

    def __call__(self, kind: str, paths: set[str], summary: SyncSummary) -> None:
        with self.lock:
            self.calls.append((kind, frozenset(paths), summary))

    def of(self, *kinds: str) -> list[tuple[str, frozenset[str], SyncSummary]]:
        """The recorded calls of these kinds (all when none given)."""
        with self.lock:
            return [c for c in self.calls if not kinds or c[0] in kinds]

    def reindexed(self, kinds: tuple[str, ...] = ("batch", "rescan", "final")) -> Counter[str]:
        """How often each path was (re)written to the index after the first sync."""
        out: Counter[str] = Counter()
        for _, _, s in self.of(*kinds):
            out.update(s.changed_paths)
        return out

    def hinted(self) -> set[str]:
        """Every path handed to a batch."""
        out: set[str] = set()
        for _, paths, _ in self.of("batch", "final"):
            out |= paths
        return out

    def deleted(self) -> int:
        """Notes deleted from the index by any reconcile."""
        return sum(s.deleted for _, _, s in self.of())


@contextmanager
def running(root: Path, **kwargs: Any) -> Iterator[tuple[DaemonRunner, Recorder]]:
    """A daemon for ``root`` in a background thread, ready, stopped on exit."""
    rec = Recorder()
    kwargs.setdefault("debounce_ms", 100)
    kwargs.setdefault("rescan_interval", 0)
    kwargs.setdefault("background", False)  # the watch loop alone; see test_daemon_services
    runner = DaemonRunner(MemoryStore.open(str(root)), on_batch=rec, **kwargs)
    runner.start()
    try:
        end = time.monotonic() + 30
        while not runner.ready.wait(0.05):
            if runner.error is not None or time.monotonic() > end:
                raise AssertionError(f"daemon did not become ready: {runner.error!r}")
        yield runner, rec
    finally:
        runner.stop()


def query(root: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run ``sql`` on a fresh read-only connection to the vault's index."""
    con = apsw.Connection(str(index_path(root)), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        con.set_busy_timeout(5000)
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def indexed(root: Path, prefix: str = "") -> set[str]:
    """The paths in the index (under ``prefix``)."""
    return {r[0] for r in query(root, "SELECT path FROM files WHERE path LIKE ? || '%'", (prefix,))}


def content(root: Path, path: str) -> str | None:
    """The indexed body of the note at ``path``."""
    rows = query(root, "SELECT content FROM traces WHERE path = ?", (path,))
    return rows[0][0] if rows else None


def on_disk(root: Path) -> set[str]:
    """The vault's non-hidden files, as a full scan sees them."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for f in filenames:
            if not f.startswith("."):
                out.add((Path(dirpath) / f).relative_to(root).as_posix())
    return out


class NotifySocket:
    """A datagram socket standing in for systemd's notify socket."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.messages: list[str] = []

    def receive(self, timeout: float) -> str | None:
        """The next datagram, or None after ``timeout`` seconds."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(4096).decode()
        except socket.timeout:
            return None
        self.messages.append(data)
        return data

    def wait_for(self, line: str, timeout: float = 20.0) -> str:
        """Receive until a datagram holds ``line``; fail after ``timeout``."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            msg = self.receive(max(0.01, end - time.monotonic()))
            if msg is not None and line in msg.split("\n"):
                return msg
        raise AssertionError(f"no {line!r} within {timeout}s; got {self.messages}")

    def lines(self) -> list[str]:
        """Every line received so far."""
        return [line for m in self.messages for line in m.split("\n")]

    def close(self) -> None:
        self.sock.close()
