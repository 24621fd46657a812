"""sd_notify without libsystemd: datagrams on a real bound socket."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from test_daemon_support import NotifySocket

from memvault.daemon.notify import Notifier


def test_messages_reach_a_path_socket(tmp_path: Path) -> None:
    sock = NotifySocket(tmp_path / "n.sock")
    n = Notifier({"NOTIFY_SOCKET": str(sock.path)})
    try:
        assert n.enabled
        assert n.ready("indexed 3 notes")
        assert n.status("watch:  3 notes\nqueue 0")  # one line, whatever it is given
        assert n.watchdog() and n.extend_timeout(1.5) and n.stopping()
        got = [sock.receive(5) for _ in range(5)]
    finally:
        n.close()
        sock.close()
    assert got == [
        "READY=1\nSTATUS=indexed 3 notes",
        "STATUS=watch: 3 notes queue 0",
        "WATCHDOG=1",
        "EXTEND_TIMEOUT_USEC=1500000",
        "STOPPING=1",
    ]


def test_abstract_namespace_socket() -> None:
    name = f"memvault-test-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind("\0" + name)
    server.settimeout(5)
    n = Notifier({"NOTIFY_SOCKET": "@" + name})
    try:
        assert n.ready()
        assert server.recv(100) == b"READY=1"
    finally:
        n.close()
        server.close()


def test_unset_socket_is_a_no_op() -> None:
    n = Notifier({})
    assert not n.enabled
    assert n.ready() is False and n.watchdog() is False and n.stopping() is False
    assert n.watchdog_interval is None


def test_missing_socket_is_not_fatal(tmp_path: Path) -> None:
    n = Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone.sock")})
    assert n.enabled and n.ready() is False
    n.close()


def test_watchdog_interval_is_half_of_watchdog_usec() -> None:
    assert Notifier({"WATCHDOG_USEC": "60000000"}).watchdog_interval == 30.0
    assert Notifier({"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": str(os.getpid())}).watchdog_interval == 30.0
    assert Notifier({"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": "1"}).watchdog_interval is None
    assert Notifier({"WATCHDOG_USEC": "junk"}).watchdog_interval is None
    assert Notifier({"WATCHDOG_USEC": "0"}).watchdog_interval is None


def test_a_listener_that_stops_reading_cannot_block_the_daemon(tmp_path: Path) -> None:
    sock = NotifySocket(tmp_path / "n.sock")  # bound, never read
    n = Notifier({"NOTIFY_SOCKET": str(sock.path)})
    try:
        sent = [n.status(f"message {i}") for i in range(500)]  # returns at once, full queue or not
    finally:
        n.close()
        sock.close()
    assert sent[0] is True and sent[-1] is False
