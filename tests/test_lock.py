"""One daemon per vault: the flock, its holder record, stale files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memvault.daemon.lock import DaemonLock, DaemonRunningError
from memvault.store.serving import is_locked, lock_path, read_holder


def test_second_lock_is_refused_with_the_holder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = DaemonLock(Path("/vault"), data)
    first.acquire()
    try:
        assert is_locked(data)
        holder = read_holder(data)
        assert holder and holder.pid == os.getpid() and holder.started == first.started
        with pytest.raises(DaemonRunningError) as err:
            DaemonLock(Path("/vault"), data).acquire(retry_for=0.05)
        assert str(err.value) == f"memvault daemon already running for /vault (pid {os.getpid()}, since {first.started})"
    finally:
        first.release()
    assert not is_locked(data)
    with DaemonLock(Path("/vault"), data) as again:
        assert again.held
    assert (lock_path(data).stat().st_mode & 0o777) == 0o600


def test_stale_lock_file_is_taken_over(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    lock_path(data).write_text(json.dumps({"pid": 999_999_999, "started": "yesterday"}))
    assert not is_locked(data)
    with DaemonLock(Path("/v"), data):
        assert read_holder(data).pid == os.getpid()


def test_lock_of_a_killed_process_is_released(tmp_path: Path) -> None:
    data = tmp_path / "data"
    code = (
        "import sys, time; from pathlib import Path; from memvault.daemon.lock import DaemonLock;"
        f"DaemonLock(Path('/v'), Path({str(data)!r})).acquire(); print('held', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        assert is_locked(data)
        with pytest.raises(DaemonRunningError, match=f"pid {proc.pid}"):
            DaemonLock(Path("/v"), data).acquire(retry_for=0.05)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    assert not is_locked(data)
    with DaemonLock(Path("/v"), data):
        pass


def test_no_lock_file(tmp_path: Path) -> None:
    assert read_holder(tmp_path) is None
    assert not is_locked(tmp_path)
