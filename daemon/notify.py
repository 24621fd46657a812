"""The systemd notification protocol (``sd_notify``), without libsystemd.

A service started with ``Type=notify`` finds a datagram socket in
``$NOTIFY_SOCKET`` and sends it newline-separated ``KEY=VALUE`` lines:
``READY=1`` once it serves, ``STATUS=...`` for ``systemctl status``,
``WATCHDOG=1`` keep-alives and ``STOPPING=1`` when it begins to shut down.
A socket name starting with ``@`` lives in Linux's abstract namespace (the
``@`` stands for a leading NUL byte). Outside systemd the variable is unset
and every call here does nothing, so the daemon runs the same in a terminal.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger(__name__)


class Notifier:
    """Sends ``sd_notify`` messages to the socket named by the environment."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.address = _socket_address(env.get("NOTIFY_SOCKET", ""))
        self.watchdog_interval = _watchdog_interval(env)
        self._sock: socket.socket | None = None

    @property
    def enabled(self) -> bool:
        """Whether a service manager is listening."""
        return self.address is not None

    def send(self, *lines: str) -> bool:
        """Send one datagram of ``lines``; True when it was delivered.

        Failures are logged at debug level only: notifications are a courtesy
        to the service manager and must never take the daemon down.
        """
        if self.address is None or not lines:
            return False
        try:
            if self._sock is None:
                # Non-blocking: a listener that stops reading fills its queue
                # (ten datagrams by default) and must not freeze the daemon;
                # the message is dropped instead.
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK)
            self._sock.sendto("\n".join(lines).encode("utf-8"), self.address)
            return True
        except OSError as exc:
            log.debug("sd_notify to %r failed: %s", self.address, exc)
            return False

    def ready(self, status: str | None = None) -> bool:
        """``READY=1``: start-up is complete (for systemd, the unit is active)."""
        return self.send("READY=1", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> bool:
        """``STATUS=...``: one line shown by ``systemctl status``."""
        return self.send(f"STATUS={' '.join(text.split())}")

    def watchdog(self) -> bool:
        """``WATCHDOG=1``: the keep-alive ping."""
        return self.send("WATCHDOG=1")

    def extend_timeout(self, seconds: float) -> bool:
        """``EXTEND_TIMEOUT_USEC``: ask for more time (a long first index)."""
        return self.send(f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}")

    def stopping(self) -> bool:
        """``STOPPING=1``: shutdown has begun."""
        return self.send("STOPPING=1")

    def close(self) -> None:
        """Close the socket (it is reopened on the next send)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _socket_address(value: str) -> str | bytes | None:
    if not value:
        return None
    if value.startswith("@"):
        return b"\0" + value[1:].encode("utf-8")  # abstract namespace
    if value.startswith("/"):
        return value
    return None  # systemd also knows vsock addresses; not for a user service


def _watchdog_interval(env: Mapping[str, str]) -> float | None:
    """Seconds between keep-alives: half of ``WATCHDOG_USEC``, as sd_watchdog_enabled(3) advises.

    ``WATCHDOG_PID``, when set, names the one process meant to ping; a child
    that merely inherited the variables must stay quiet.
    """
    try:
        usec = int(env.get("WATCHDOG_USEC", "") or 0)
    except ValueError:
        return None
    if usec <= 0:
        return None
    pid = env.get("WATCHDOG_PID", "")
    if pid and pid != str(os.getpid()):
        return None
    return usec / 2 / 1_000_000
