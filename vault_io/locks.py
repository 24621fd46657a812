"""Advisory file locks that wait a little: one helper for every lock memvault
takes on a file of its own (the daemon's, consolidation's)."""

from __future__ import annotations

import fcntl
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
