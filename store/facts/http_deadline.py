"""HTTP requests under one absolute deadline (and a cancel event).

urllib's ``timeout`` bounds each socket operation, not the call: a server
that sends one byte just before every timeout keeps a read going forever
(and ``HTTPResponse.read(n)`` loops until it has n bytes). Here the socket
the connection reads and writes through checks one absolute deadline (and
the cancel event) before every recv/send, and waits at most
:data:`CANCEL_CHECK` seconds at a time. :func:`deadline_opener` plugs it into
urllib, so proxies, redirects and HTTPError handling stay urllib's.
"""

from __future__ import annotations

import errno
import http.client
import io
import os
import selectors
import socket
import ssl
import threading
import time
import urllib.request
from functools import partial
from typing import Any

#: Longest a blocking socket operation waits before the deadline and the
#: cancel event are looked at again.
CANCEL_CHECK = 0.2


class CancelledIO(OSError):
    """Raised inside the socket layer when the cancel event is set."""


class Deadline:
    """An absolute monotonic deadline plus an optional cancel event."""

    def __init__(self, at: float, cancel: threading.Event | None) -> None:
        self.at = at
        self.cancel = cancel

    def wait_slice(self) -> float:
        """Seconds the next blocking step may wait; raises once past the deadline or cancelled."""
        if self.cancel is not None and self.cancel.is_set():
            raise CancelledIO("cancelled")
        left = self.at - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        return min(left, CANCEL_CHECK) if self.cancel is not None else left

    def remaining(self) -> float:
        """Seconds to the deadline (raises once past it or cancelled), for a
        step that cannot be sliced: the TLS handshake, a proxy's CONNECT."""
        self.wait_slice()
        return max(0.001, self.at - time.monotonic())


def _connect(deadline: Deadline, address: tuple[str, int], timeout: Any = None, source_address: Any = None,
             **_: Any) -> socket.socket:
    """``socket.create_connection`` with a non-blocking connect that honours the deadline and cancel."""
    host, port = address
    error: OSError | None = None
    for family, kind, proto, _name, addr in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        try:
            if source_address:
                sock.bind(source_address)
            sock.setblocking(False)
            code = sock.connect_ex(addr)
            if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
                raise OSError(code, os.strerror(code))
            if code != 0:
                with selectors.DefaultSelector() as sel:
                    sel.register(sock, selectors.EVENT_WRITE)
                    while not sel.select(deadline.wait_slice()):
                        pass
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code:
                    raise OSError(code, os.strerror(code))
            # The TLS handshake and a proxy tunnel run on this socket's own
            # timeout: the whole remaining deadline (a slice would cut a
            # handshake that takes longer than CANCEL_CHECK).
            sock.settimeout(deadline.remaining())
            return sock
        except (TimeoutError, CancelledIO):
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            error = exc
    raise error if error is not None else OSError(f"cannot resolve {host}")


class DeadlineSocket:
    """Wraps a connected socket: every send and recv checks the deadline."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        self._sock = sock
        self._deadline = deadline
        self._readers = 0
        self._closed = False

    def sendall(self, data: Any) -> None:
        """Send everything before the deadline (``socket.sendall`` cannot be
        resumed after a timeout, so this loops over ``send``)."""
        view = memoryview(data).cast("B")
        while view:
            self._sock.settimeout(self._deadline.wait_slice())
            try:
                sent = self._sock.send(view)
            except TimeoutError:
                continue
            view = view[sent:]

    def recv_into(self, buffer: Any) -> int:
        """One ``recv_into`` that waits no longer than the deadline allows."""
        while True:
            self._sock.settimeout(self._deadline.wait_slice())
            try:
                return self._sock.recv_into(buffer)
            except TimeoutError:
                continue

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        """A buffered reader whose every raw read goes through :meth:`recv_into`."""
        self._readers += 1
        return io.BufferedReader(DeadlineReader(self))

    def reader_closed(self) -> None:
        """A reader from :meth:`makefile` was closed."""
        self._readers -= 1
        if self._closed and self._readers <= 0:
            self._sock.close()

    def close(self) -> None:
        """Close once no reader needs the socket (as ``socket.makefile`` does:
        urllib closes the connection's socket before the body is read)."""
        self._closed = True
        if self._readers <= 0:
            self._sock.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class DeadlineReader(io.RawIOBase):
    """The raw stream under an ``HTTPResponse``."""

    def __init__(self, sock: DeadlineSocket) -> None:
        self._dsock: DeadlineSocket | None = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._dsock is None:
            raise ValueError("read from a closed response")
        return self._dsock.recv_into(buffer)

    def close(self) -> None:
        if self._dsock is not None:
            self._dsock.reader_closed()
            self._dsock = None
        super().close()


class DeadlineMixin:
    """Connections whose socket connects, sends and reads under one deadline."""

    _deadline: Deadline
    sock: Any

    def _use_deadline(self, deadline: Deadline) -> None:
        self._deadline = deadline
        # http.client opens the TCP connection through this attribute.
        self._create_connection = partial(_connect, deadline)

    def connect(self) -> None:
        # A mixin: super() is the HTTP(S)Connection it is mixed into, which mypy cannot see from here.
        super().connect()  # type: ignore[misc]
        self.sock = DeadlineSocket(self.sock, self._deadline)


class _HTTPConnection(DeadlineMixin, http.client.HTTPConnection):
    def __init__(self, *args: Any, deadline: Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._use_deadline(deadline)


class _HTTPSConnection(DeadlineMixin, http.client.HTTPSConnection):
    def __init__(self, *args: Any, deadline: Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._use_deadline(deadline)


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(partial(_HTTPConnection, deadline=self._deadline), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._deadline = deadline
        self._ctx = ssl.create_default_context()

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(partial(_HTTPSConnection, deadline=self._deadline, context=self._ctx), req)


def deadline_opener(deadline: Deadline) -> urllib.request.OpenerDirector:
    """A urllib opener whose HTTP and HTTPS connections work under ``deadline``."""
    return urllib.request.build_opener(_HTTPHandler(deadline), _HTTPSHandler(deadline))
