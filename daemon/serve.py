"""The daemon's query server: warm ``search`` and ``context`` answers over a unix socket.

::

    supervisor.add(QueryServer(store))   # a service (see .services): run() binds
    supervisor.start()                   # <data dir>/query.sock (0600), warms the model,
    ...                                  # answers until stopped, then removes the file

One request per connection, one JSON line each way (see :mod:`.client` for
the format). Requests are size-limited and every read has a timeout, so a
stuck or hostile client costs one handler thread for a few seconds at most;
only the socket's owner may connect (the file is 0600 in the 0700 data dir,
and the peer's uid is checked). Answers come from one warm retriever the
store builds on a connection of its own (:meth:`MemoryStore.open_retriever`),
one at a time.

The ``ingest`` op (the per-turn hook's) only queues a transcript for the
server's :class:`~.turn_ingest.TurnIngester` and answers at once; the
ingester works on a thread of its own while the server runs.

The ``add`` op (``memvault add``'s) writes a memory with the store's own
``add``, on a store of the server's threads (:meth:`MemoryStore.for_thread`),
its neighbours embedded by the warm model: a process that finds the daemon
loads neither the store's write path nor the model. A request refused before
anything is written comes back as ``_internal`` (the client writes it
itself); once the write began, any failure comes back with an exit code, so
the client never writes a second time.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.daemon.client import PROTOCOL, config_fingerprint, read_line, socket_address, socket_path
from memvault.daemon.services import Service
from memvault.daemon.turn_ingest import STOP_WAIT, TurnIngester
from memvault.store import location
from memvault.store.queries import QueryError, query_type
from memvault.store.queries.write import NewMemory
from memvault.vault_io import json_input
from memvault.vault_io.errors import MemvaultError

if TYPE_CHECKING:
    from memvault.store.hosted import Retriever
    from memvault.store.memory_store import MemoryStore

log = logging.getLogger("memvault.serve")

#: Largest request accepted (a query or message plus options).
MAX_REQUEST = 256 * 1024
#: Seconds a client has to send its request.
READ_TIMEOUT = 5.0
#: Connections handled at once; more wait in the listen backlog.
MAX_CLIENTS = 8
OPS = ("ping", "search", "context", "wake", "ingest", "session_start", "embed", "add")
#: Most texts one ``embed`` request may carry (an ``add`` asks for its text
#: and the few memories added since the last embedding pass).
MAX_EMBED_TEXTS = 64

_INGEST_ARGS = {"path", "session", "client", "cwd"}


class ServerRunningError(MemvaultError):
    """Another query server already listens on this vault's socket."""


class QueryServer(Service):
    """Serves one vault's queries while the supervisor runs it."""

    name = "query"
    sets_ready = True

    def __init__(
        self, store: "MemoryStore", *, warm: bool = True, on_wake: "Callable[[], None] | None" = None
    ) -> None:
        self.store = store
        #: What the ``wake`` op calls: the daemon's embedding service looks for
        #: work now (a CLI sync that left embedding to the daemon asks for it).
        self.on_wake = on_wake
        self.path: Path = socket_path(store.data_dir)
        self.warm = warm
        self.requests = 0
        self._sock: socket.socket | None = None
        self._handlers: set[threading.Thread] = set()
        self._handlers_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_CLIENTS)
        self._retriever: "Retriever | None" = None
        self._writer: "MemoryStore | None" = None
        self._answer_lock = threading.Lock()
        self._fingerprint = config_fingerprint(store.settings.values)
        self._write_fingerprint = config_fingerprint(store.settings.values, "add")
        self._inode: tuple[int, int] | None = None
        #: Transcripts announced by the per-turn hook, ingested off the request threads.
        self.turns = TurnIngester(store, on_done=on_wake)
        self._turn_thread: threading.Thread | None = None

    # -- the service ---------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Bind the socket, warm the model, answer until ``stop``; then close
        the socket, wait for requests in flight and remove the file."""
        self._bind()
        self._start_turns()
        self._ready_event().set()  # the socket takes connections; answers wait for the warm-up
        try:
            if self.warm:
                with self._answer_lock:
                    try:
                        self.retriever().warm()
                    except Exception:  # a cold answer later is still an answer
                        log.exception("warming the query server failed")
            self._accept_until(stop)
        finally:
            self._close()

    def status(self) -> dict[str, Any]:
        """Requests answered so far, and the per-turn ingests."""
        return {"requests": self.requests, "socket": self._sock is not None, "turn_ingest": self.turns.status()}

    def _start_turns(self) -> None:
        """Start the turn ingester's thread (a fresh ingester after a restart)."""
        if self._turn_thread is not None:
            self.turns = TurnIngester(self.store, on_done=self.on_wake)
        self._turn_thread = threading.Thread(target=self.turns.run, name="memvault-turn-ingest", daemon=True)
        self._turn_thread.start()

    def _bind(self) -> None:
        location.ensure_private_dir(self.store.data_dir)
        self._clear_stale()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with socket_address(self.path) as addr:
                sock.bind(addr)
            os.chmod(self.path, 0o600)
            st = os.stat(self.path)
            self._inode = (st.st_dev, st.st_ino)
            sock.listen(32)
            sock.settimeout(0.2)  # how often the accept loop looks at the stop flag
        except BaseException:
            sock.close()
            raise
        self._sock = sock

    def _close(self, timeout: float = 10.0) -> None:
        with self._handlers_lock:
            handlers = list(self._handlers)
        for t in handlers:
            t.join(timeout)
        self.turns.close()
        if self._turn_thread is not None:
            self._turn_thread.join(STOP_WAIT)  # the ingest in flight ends its write first
            if self._turn_thread.is_alive():
                log.warning("a turn ingest is still running at stop; its session end or the next start redoes it")
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._remove_socket_file()
        with self._answer_lock:
            if self._retriever is not None:
                self._retriever.close()
                self._retriever.con.close()
                self._retriever = None
            if self._writer is not None:
                self._writer.close()
                self._writer = None

    def _clear_stale(self) -> None:
        if not (self.path.exists() or self.path.is_symlink()):
            return
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(0.5)
        try:
            with socket_address(self.path) as addr:
                probe.connect(addr)
        except OSError:
            self.path.unlink(missing_ok=True)  # nobody listens: left by a crashed daemon
            return
        finally:
            probe.close()
        raise ServerRunningError(f"a query server already listens on {self.path}")

    def _remove_socket_file(self) -> None:
        try:
            st = os.stat(self.path)
        except OSError:
            return
        if self._inode == (st.st_dev, st.st_ino):  # never remove a successor's socket
            self.path.unlink(missing_ok=True)

    # -- serving -----------------------------------------------------------------

    def retriever(self) -> "Retriever":
        """The warm retriever on a connection of its own (created on first
        use; callers hold the answer lock)."""
        if self._retriever is None:
            self._retriever = self.store.open_retriever()
        return self._retriever

    def _accept_until(self, stop: threading.Event) -> None:
        assert self._sock is not None
        while not stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            if not self._slots.acquire(timeout=READ_TIMEOUT):
                conn.close()  # overloaded: the client answers in-process
                continue
            t = threading.Thread(target=self._handle, args=(conn,), name="memvault-query", daemon=True)
            with self._handlers_lock:
                self._handlers.add(t)
            t.start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.settimeout(READ_TIMEOUT)
                if not _same_user(conn):
                    return
                try:
                    line = read_line(conn, MAX_REQUEST)
                except OSError:
                    return
                if line is None:
                    self._reply(conn, _internal("request too large or incomplete"))
                    return
                self._reply(conn, self.answer(line))
        finally:
            self._slots.release()
            with self._handlers_lock:
                self._handlers.discard(threading.current_thread())

    @staticmethod
    def _reply(conn: socket.socket, reply: dict[str, Any]) -> None:
        try:
            conn.sendall(json.dumps(reply, ensure_ascii=False, default=str).encode("utf-8") + b"\n")
        except OSError:
            pass  # the client gave up; it answers in-process

    def answer(self, line: bytes) -> dict[str, Any]:
        """The reply to one request line (also the unit tests' entry point)."""
        try:
            req = json_input.loads(line)
        except ValueError:  # json_input.TooDeep too
            return _internal("request is not JSON")
        if not isinstance(req, dict) or req.get("v") != PROTOCOL or req.get("op") not in OPS:
            return _internal("unknown request")
        if req["op"] == "ping":
            return {"ok": True, "result": {"pid": os.getpid(), "requests": self.requests,
                                           "turn_ingest": self.turns.status()}}
        if req["op"] == "ingest":
            return self._queue_turns(req.get("args"))
        if req["op"] == "wake":
            if self.on_wake is not None:
                self.on_wake()
            return {"ok": True, "result": {"embedding": self.on_wake is not None}}
        if req["op"] == "add":
            if req.get("config") != self._write_fingerprint:  # written by other settings: the client writes it
                return {"ok": False, "fallback": True}
            return self._add(req.get("args"))
        if req.get("config") is not None and req["config"] != self._fingerprint:
            return {"ok": False, "fallback": True}
        if req["op"] == "embed":
            return self._embed(req.get("args"))
        try:
            query = query_type(req["op"]).from_json(req.get("args"))
        except (QueryError, TypeError) as exc:  # an option this version does not know: answered in-process
            return _internal(f"bad arguments: {exc}")
        with self._answer_lock:
            self.requests += 1
            try:
                result = getattr(self.retriever(), query.OP)(query).to_json()
            except MemvaultError as exc:
                # Failed the way it would in-process: the client exits with this code.
                return _failed(exc.exit_code, str(exc))
            except Exception as exc:
                log.exception("query failed")
                return _internal(str(exc))
        return {"ok": True, "result": result}

    def _embed(self, args: object) -> dict[str, Any]:
        """Put the vectors of the texts into the embedding cache with the
        loaded model, for a write in another process (``add``'s neighbours)."""
        texts = args.get("texts") if isinstance(args, dict) and set(args) == {"texts"} else None
        if not isinstance(texts, list) or not 0 < len(texts) <= MAX_EMBED_TEXTS \
                or not all(isinstance(t, str) for t in texts):
            return _internal("bad arguments")
        with self._answer_lock:
            self.requests += 1
            try:
                done = self.store.cache_vectors(texts, self.retriever())
            except MemvaultError as exc:  # vectors off, or no model here: the writer loads its own, or words
                return _internal(str(exc))
            except Exception as exc:
                log.warning("embed failed: %s", exc)
                return _internal(str(exc))
        return {"ok": True, "result": {"embedded": done}}

    def _add(self, args: object) -> dict[str, Any]:
        """Write the memory ``args`` describes (:class:`NewMemory`) as the
        store's ``add`` does in-process; its result as ``WriteResult.as_dict``."""
        try:
            new = NewMemory.from_json(args)
        except (QueryError, TypeError) as exc:  # nothing written: the client writes it itself
            return _internal(f"bad arguments: {exc}")
        with self._answer_lock:
            self.requests += 1
            try:
                result = self._write_store().add(
                    new.content, new.type, tags=new.tags, scope=new.scope, links=new.links, source=new.source,
                    allow_duplicate=new.allow_duplicate, key=new.key, reason=new.reason)
            except MemvaultError as exc:
                # A refusal that carries the memory as it is now (a key held) hands it back too.
                current = getattr(exc, "current", None)
                return _failed(exc.exit_code, str(exc), current if isinstance(current, dict) else None)
            except Exception as exc:  # perhaps half done: never answered as "write it yourself"
                log.exception("add failed")
                return _failed(1, f"memvault's daemon failed to add it: {exc}")
        return {"ok": True, "result": result.as_dict()}

    def _write_store(self) -> "MemoryStore":
        """The store the ``add`` op writes through (callers hold the answer
        lock): one of the server's threads, whose neighbours' vectors the warm
        model embeds."""
        if self._writer is None:
            writer = self.store.for_thread()
            writer.index_on_open = False  # the watch loop syncs the vault, not a write
            writer.vectors_elsewhere = self._embed_here
            self._writer = writer
        return self._writer

    def _embed_here(self, texts: list[str]) -> bool:
        """Put the vectors of ``texts`` into the cache with the warm model
        (what the ``embed`` op does for another process); False when it cannot."""
        try:
            self.store.cache_vectors(texts, self.retriever())
        except MemvaultError:
            return False
        return True

    def _queue_turns(self, args: object) -> dict[str, Any]:
        """Queue a transcript for the turn ingester; answered at once (the
        hook waits for nothing but this line)."""
        if not isinstance(args, dict) or not set(args) <= _INGEST_ARGS or not isinstance(args.get("path"), str) \
                or not all(isinstance(args.get(k), (str, type(None))) for k in ("session", "client", "cwd")):
            return _internal("bad arguments")
        try:
            result = self.turns.submit(args["path"], args.get("session"), args.get("client") or "claude-code",
                                       args.get("cwd"))
        except ValueError as exc:  # refused: outside the transcript folders, unreadable, queue full
            return _failed(2, str(exc))
        return {"ok": True, "result": result}


def _internal(message: str) -> dict[str, Any]:
    """A reply that makes the client answer in-process (a fault of this
    server, or a request it does not understand)."""
    return {"ok": False, "internal": True, "message": message}


def _failed(code: int, message: str, current: dict[str, Any] | None = None) -> dict[str, Any]:
    """A reply for a request that failed the way it would in the client's
    process: the client raises it with this exit code (1 or 2); ``current``:
    what a refusal carries (the memory that holds a key)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if current is not None:
        error["current"] = current
    return {"ok": False, "error": error}


def _same_user(conn: socket.socket) -> bool:
    """Whether the peer runs as this process's user (Linux SO_PEERCRED)."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return True  # elsewhere the 0600 socket in a 0700 folder is the guard
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    except OSError:
        return False
    _, uid, _ = struct.unpack("3i", creds)
    return uid == os.getuid()
