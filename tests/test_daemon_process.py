"""`memvault daemon` as a real process: signals, the lock, crashes, notify, status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw
from click.testing import CliRunner
from helpers import wait_for, write
from test_daemon_support import NotifySocket, indexed, query, running

from memvault.cli.main import cli
from memvault.store.location import index_path

MEMVAULT = [sys.executable, "-c", "from memvault.cli.main import main; main()"]


def daemon_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")}
    # These tests are about the process; embedding every test note would only
    # load the CPU (tests/test_daemon_services.py covers the background parts).
    env.setdefault("MEMVAULT_EMBEDDING_MODEL", "none")
    env.update(extra)
    return env


@contextmanager
def daemon(root: Path, tmp_path: Path, *args: str, **env: str) -> Iterator[tuple[subprocess.Popen[str], NotifySocket]]:
    """`memvault --vault ROOT daemon ARGS` with a notify socket; ready on entry."""
    sock = NotifySocket(tmp_path / f"notify-{len(list(tmp_path.glob('notify-*')))}.sock")
    proc = subprocess.Popen(
        [*MEMVAULT, "--vault", str(root), "daemon", "--debounce-ms", "100", *args],
        env=daemon_env(NOTIFY_SOCKET=str(sock.path), **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        try:
            sock.wait_for("READY=1", timeout=30)
        except AssertionError as exc:
            proc.kill()
            _, err = proc.communicate(timeout=30)
            raise AssertionError(f"{exc}; the daemon said:\n{err}") from None
        yield proc, sock
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
        sock.close()


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> tuple[int, str]:
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    return proc.returncode, err


def integrity(root: Path) -> str:
    return query(root, "PRAGMA integrity_check")[0][0]


def test_sigterm_exits_0_and_checkpoints_the_wal(vault: Path, tmp_path: Path) -> None:
    write(vault, "a.md", "alpha")
    with daemon(vault, tmp_path) as (proc, sock):
        write(vault, "b.md", "beta written while running")
        wait_for(lambda: "b.md" in indexed(vault))
        # A reader that stays open keeps SQLite from deleting the WAL on the
        # daemon's close, so an empty WAL afterwards shows the checkpoint.
        reader = apsw.Connection(str(index_path(vault)), flags=apsw.SQLITE_OPEN_READONLY)
        reader.execute("SELECT count(*) FROM files").fetchall()
        code, err = stop(proc)
        sock.wait_for("STOPPING=1")
    assert code == 0, err
    assert "Traceback" not in err and "stopped" in err
    wal = Path(f"{index_path(vault)}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    reader.close()
    assert integrity(vault) == "ok"


def test_sigint_stops_cleanly_and_applies_the_queue(vault: Path, tmp_path: Path) -> None:
    with daemon(vault, tmp_path, "--debounce-ms", "60000") as (proc, sock):
        write(vault, "queued.md", "waiting for a long debounce")
        wait_for(lambda: json.loads((state_file(vault)).read_text()).get("queue") == 1)
        code, err = stop(proc, signal.SIGINT)
    assert code == 0, err
    assert indexed(vault) == {"queued.md"}


def state_file(root: Path) -> Path:
    from memvault.store.location import vault_data_dir

    return vault_data_dir(root) / "daemon.json"


def test_second_daemon_exits_1_with_the_holder(vault: Path, tmp_path: Path) -> None:
    with daemon(vault, tmp_path) as (proc, _):
        second = subprocess.run(
            [*MEMVAULT, "--vault", str(vault), "daemon"], env=daemon_env(), capture_output=True, text=True, timeout=30
        )
        assert second.returncode == 1
        assert f"memvault daemon already running for {vault} (pid {proc.pid}, since " in second.stderr
        assert "Traceback" not in second.stderr
        assert stop(proc)[0] == 0


def test_killed_daemon_leaves_a_sound_index_and_the_next_start_reconciles(vault: Path, tmp_path: Path) -> None:
    with daemon(vault, tmp_path) as (proc, _):
        for i in range(1000):
            (vault / f"n{i:04}.md").write_text(f"burst note {i}")
        wait_for(lambda: len(indexed(vault)) > 0, timeout=30)
        proc.kill()  # SIGKILL, mid-burst: no cleanup at all
        proc.wait(timeout=30)
    assert integrity(vault) == "ok"
    # Nothing half-written in the vault: every note whole, no temp files.
    files = sorted(p for p in vault.rglob("*") if p.is_file())
    assert [p.name for p in files] == [f"n{i:04}.md" for i in range(1000)]
    assert all(p.read_text() == f"burst note {int(p.stem[1:])}" for p in files)
    # The lock died with the process: a new daemon starts and catches up.
    with daemon(vault, tmp_path) as (proc, _):
        assert len(indexed(vault)) == 1000  # the initial sync ran before READY
        assert stop(proc)[0] == 0


def test_notify_protocol_ready_status_watchdog_stopping(vault: Path, tmp_path: Path) -> None:
    write(vault, "a.md", "alpha")
    with daemon(vault, tmp_path, WATCHDOG_USEC="200000") as (proc, sock):
        ready = next(m for m in sock.messages if "READY=1" in m.split("\n"))
        assert "STATUS=watch: 1 notes indexed, queue 0, 0 batches, 0 rescans" in ready.split("\n")
        sock.wait_for("WATCHDOG=1", timeout=5)
        sock.wait_for("WATCHDOG=1", timeout=5)  # pinged again, every 0.1 s
        write(vault, "b.md", "beta")
        sock.wait_for("STATUS=watch: 2 notes indexed, queue 0, 1 batches, 0 rescans")
        code, _ = stop(proc)
        sock.wait_for("STOPPING=1")
    assert code == 0
    lines = sock.lines()
    assert lines.index("READY=1") < lines.index("STOPPING=1")


def test_watchdog_pid_of_another_process_means_no_pings(vault: Path, tmp_path: Path) -> None:
    with daemon(vault, tmp_path, WATCHDOG_USEC="100000", WATCHDOG_PID="1") as (proc, sock):
        write(vault, "b.md", "beta")
        sock.wait_for("STATUS=watch: 1 notes indexed, queue 0, 1 batches, 0 rescans")
        assert stop(proc)[0] == 0
    assert "WATCHDOG=1" not in sock.lines()


def test_daemon_without_notify_socket_runs(vault: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen([*MEMVAULT, "--vault", str(vault), "daemon"], env=daemon_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: state_file(vault).exists() and json.loads(state_file(vault).read_text())["mode"] == "watch",
                 timeout=30)
        write(vault, "x.md", "x")
        wait_for(lambda: "x.md" in indexed(vault))
    finally:
        code, err = stop(proc)
    assert code == 0, err
    assert "ready: watching" in err


# -- status ----------------------------------------------------------------------------------


def status_json(root: Path) -> dict:
    result = CliRunner().invoke(cli, ["--vault", str(root), "status", "--json"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def test_status_without_index_or_daemon(vault: Path) -> None:
    data = status_json(vault)
    assert data["running"] is False and data["pid"] is None and data["index"] is None
    text = CliRunner().invoke(cli, ["--vault", str(vault), "status"])
    assert text.exit_code == 0 and "not running" in text.output and "none yet" in text.output


def test_status_with_a_running_daemon_then_stale(vault: Path, tmp_path: Path) -> None:
    write(vault, "a.md", "alpha")
    with daemon(vault, tmp_path) as (proc, _):
        wait_for(lambda: state_file(vault).exists())
        data = status_json(vault)
        assert data["running"] is True and data["pid"] == proc.pid and data["mode"] == "watch"
        assert data["queue"] == 0 and data["failures"] == 0 and data["since"] and data["last_sync"]
        assert data["index"]["notes"] == 1 and data["conflicts"] == data["index"].get("conflicts", 0)
        text = CliRunner().invoke(cli, ["--vault", str(vault), "status"])
        assert f"running (pid {proc.pid}" in text.output
        proc.kill()  # the state file stays behind, the lock does not
        proc.wait(timeout=30)
    data = status_json(vault)
    assert data["running"] is False and data["mode"] is None and data["queue"] is None
    assert data["index"]["notes"] == 1


def test_status_in_process_runner(vault: Path) -> None:
    with running(vault) as (runner, _):
        wait_for(lambda: state_file(vault).exists())
        data = status_json(vault)
        assert data["running"] and data["pid"] == os.getpid() and data["mode"] == "watch"


def test_daemon_on_missing_vault_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--vault", str(tmp_path / "nope"), "daemon"])
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_stale_lock_file_does_not_block(vault: Path, tmp_path: Path) -> None:
    from memvault.store.location import vault_data_dir

    data_dir = vault_data_dir(vault)
    data_dir.mkdir(parents=True)
    (data_dir / "daemon.lock").write_text(json.dumps({"pid": 999_999_999, "started": "long ago"}))
    with daemon(vault, tmp_path) as (proc, _):
        assert stop(proc)[0] == 0
