"""Advisory file locks that wait a little: one helper for every lock memvault
takes on a file of its own (the daemon's, consolidation's), and one probe of
whether another process holds one."""

from __future__ import annotations

import fcntl
import os
import time


def flock_within(fd: int, seconds: float, interval: float = 0.02) -> bool:
    """Take an exclusive ``flock`` on ``fd``, retrying for up to ``seconds``;
    whether it was taken. The kernel releases it when the process dies."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(interval)


def held_elsewhere(path: str | os.PathLike[str], *, shared: bool = False) -> bool:
    """Whether another process holds the lock on the file at ``path`` now
    (a missing file: nobody). Probes with a non-blocking ``flock``, released
    at once: a *shared* probe fails exactly when someone holds the exclusive
    lock, so it never makes a process taking it fail."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's lock too
    return False
