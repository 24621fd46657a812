"""A real OpenAI-compatible chat endpoint for tests: ``http.server`` in a
thread on 127.0.0.1 port 0, answering ``/v1/chat/completions`` from a script
of canned replies (or a function of the request), recording every request.
Start it with the ``llm`` fixture of a test module (:func:`serve`)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One canned answer: status, the assistant's content (or a raw body), delay."""

    content: Any = None
    status: int = 200
    delay: float = 0.0
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    trickle: float = 0.0  # seconds between single bytes of the answer
    trickle_headers: bool = False  # trickle the status line and headers too, not just the body
    gate: threading.Event | None = None  # answer only once this is set (a slow model the test controls)

    def body(self) -> bytes:
        if self.raw is not None:
            return self.raw
        content = self.content if isinstance(self.content, str) else json.dumps(self.content)
        return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()


class FakeLLM:
    """The scripted endpoint: replies in order (the last one repeats); records requests."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        #: When set, the reply to each request is ``answer(request JSON)`` instead of the script.
        self.answer: Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()  # set in teardown: trickling handlers give up
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length))
                with outer.lock:
                    outer.requests.append({"path": self.path, "headers": dict(self.headers), "json": payload})
                    if outer.answer is not None:
                        reply = outer.answer(payload)
                    else:
                        reply = outer.replies[min(len(outer.requests) - 1, len(outer.replies) - 1)]
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.gate is not None:
                    while not reply.gate.wait(0.02) and not outer.stopping.is_set():
                        pass
                    if outer.stopping.is_set() and not reply.gate.is_set():
                        return
                body = reply.body()
                if reply.trickle:
                    self._trickle(reply, body)
                    return
                try:
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def _trickle(self, reply: Reply, body: bytes) -> None:
                """One byte every ``reply.trickle`` seconds (a stalled or very slow server)."""
                head = (f"HTTP/1.1 {reply.status} OK\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(body)}\r\n\r\n").encode()
                out = (head + body) if reply.trickle_headers else body
                try:
                    if not reply.trickle_headers:
                        self.wfile.write(head)
                        self.wfile.flush()
                    for i in range(len(out)):
                        if outer.stopping.wait(reply.trickle):
                            break
                        self.wfile.write(out[i : i + 1])
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = False
        self.server.block_on_close = True  # server_close() joins the handler threads
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-llm", daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        self.replies = list(replies)


@contextmanager
def serve() -> Iterator[FakeLLM]:
    """A started :class:`FakeLLM`, shut down and joined on exit."""
    fake = FakeLLM()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.stopping.set()
        fake.server.shutdown()
        fake.server.server_close()
        fake.thread.join(5)
