"""Whether a daemon serves a vault: the probe of its lock file.

The daemon (``memvault.daemon.lock.DaemonLock``) holds an exclusive
``flock`` on ``daemon.lock`` in the vault's data dir while it runs, and
writes who it is (pid, start time) into the file. The store asks here
before the operations a running daemon forbids (a rebuild or a restore
replaces the index under its open connections); every front end asks here
too, so "is a daemon running?" has one answer.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.locks import held_elsewhere

LOCK_FILE = "daemon.lock"


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) the lock."""

    pid: int | None
    started: str | None
    vault: str | None = None


class DaemonServesError(MemvaultError):
    """An operation a running daemon forbids (a rebuild, a restore) was asked for."""


def lock_path(data_dir: Path) -> Path:
    """The lock file of the vault whose data dir is ``data_dir``."""
    return data_dir / LOCK_FILE


def holder_of(fd: int) -> Holder:
    """What an open lock file says of its holder (empty when it says nothing readable)."""
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
        return holder_of(fd)
    finally:
        os.close(fd)


def is_locked(data_dir: Path) -> bool:
    """Whether a live process holds the daemon lock of this data dir.

    Probes with a *shared* non-blocking lock, released at once: it fails
    exactly when someone holds the exclusive one. A daemon starting in that
    same instant retries (see :meth:`DaemonLock.acquire`), so the probe
    cannot make it fail.
    """
    return held_elsewhere(lock_path(data_dir), shared=True)


def daemon_pid(data_dir: Path) -> int | None:
    """The pid of the daemon serving the vault whose data dir is ``data_dir``
    (-1: one runs, its pid unknown); None when none runs."""
    if not is_locked(data_dir):
        return None
    holder = read_holder(data_dir)
    return holder.pid if holder is not None and holder.pid is not None else -1


def refuse_while_served(data_dir: Path, what: str) -> None:
    """Raise :class:`DaemonServesError` when a daemon serves this data dir
    (``what``: the operation, "rebuilding its index")."""
    pid = daemon_pid(data_dir)
    if pid is not None:
        shown = f" (pid {pid})" if pid > 0 else ""
        raise DaemonServesError(f"a memvault daemon{shown} serves this vault: stop it before {what} "
                                "(systemctl --user stop memvault), then start it again")
