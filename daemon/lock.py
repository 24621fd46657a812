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
from pathlib import Path

from memvault.store import location
from memvault.store.serving import Holder, holder_of, lock_path
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.locks import flock_within


class DaemonRunningError(MemvaultError):
    """Another daemon already holds the lock for this vault."""

    def __init__(self, vault: Path, holder: Holder) -> None:
        self.vault = vault
        self.holder = holder
        pid = holder.pid if holder.pid is not None else "?"
        since = holder.started or "?"
        super().__init__(f"memvault daemon already running for {vault} (pid {pid}, since {since})")


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
            holder = holder_of(fd)
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
