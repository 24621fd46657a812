"""One daemon per vault: an ``flock`` on a file in the vault's data dir.

The kernel drops an ``flock`` when its holder exits, however it exits, so a
lock file left behind by a killed daemon never blocks the next one: the file
is only a place to hang the lock on and to say who holds it (pid and start
time, as JSON). The file is never deleted, because unlinking a lock file
while another process opens it lets two processes each "hold" a lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.store import location
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.locks import flock_within

LOCK_FILE = "daemon.lock"


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) the lock."""

    pid: int | None
    started: str | None
    vault: str | None = None


class DaemonRunningError(MemvaultError):
    """Another daemon already holds the lock for this vault."""

    def __init__(self, vault: Path, holder: Holder) -> None:
        self.vault = vault
        self.holder = holder
        pid = holder.pid if holder.pid is not None else "?"
        since = holder.started or "?"
        super().__init__(f"memvault daemon already running for {vault} (pid {pid}, since {since})")


def lock_path(data_dir: Path) -> Path:
    """The lock file of the vault whose data dir is ``data_dir``."""
    return data_dir / LOCK_FILE


def _read_holder(fd: int) -> Holder:
    try:
        data: Any = json.loads(os.pread(fd, 4096, 0).decode("utf-8") or "{}")
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    pid = data.get("pid")
    return Holder(pid if isinstance(pid, int) else None, data.get("started"), data.get("vault"))


def read_holder(data_dir: Path) -> Holder | None:
    """What the lock file says, held or not; None when there is no lock file."""
    try:
        fd = os.open(lock_path(data_dir), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return _read_holder(fd)
    finally:
        os.close(fd)


def is_locked(data_dir: Path) -> bool:
    """Whether a live process holds the daemon lock of this data dir.

    Probes with a *shared* non-blocking lock, released at once: it fails
    exactly when someone holds the exclusive one. A daemon starting in that
    same instant retries (see :meth:`DaemonLock.acquire`), so the probe
    cannot make it fail.
    """
    try:
        fd = os.open(lock_path(data_dir), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops our shared lock too
    return False


class DaemonLock:
    """The exclusive daemon lock of one vault, held while the daemon runs."""

    def __init__(self, vault_root: Path, data_dir: Path) -> None:
        self.vault_root = vault_root
        self.data_dir = data_dir
        self.path = lock_path(data_dir)
        self.started = ""
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self, retry_for: float = 0.5) -> None:
        """Take the lock or raise :class:`DaemonRunningError`.

        A short retry covers `memvault status` probing at the same instant;
        a real daemon holds the lock far longer than ``retry_for``.
        """
        location.ensure_private_dir(self.data_dir)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        if not flock_within(fd, retry_for):
            holder = _read_holder(fd)
            os.close(fd)
            raise DaemonRunningError(self.vault_root, holder)
        self.started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        info = {"pid": os.getpid(), "started": self.started, "vault": str(self.vault_root)}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode("utf-8"), 0)
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (the file stays; its contents are now stale)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "DaemonLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
