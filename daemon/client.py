"""Asking the daemon's query server (see :mod:`.serve`) for a warm answer.

The protocol is one JSON line each way over a unix socket in the vault's
data dir, one request per connection::

    -> {"v": 1, "op": "search", "args": {...}, "config": "<fingerprint>"}
    <- {"ok": true, "result": {...}}
    <- {"ok": false, "error": {"type": "memvault.store.retrieval.keyword.QuerySyntaxError", "message": "..."}}
    <- {"ok": false, "fallback": true}          (answer in-process instead)

:func:`ask` returns None whenever the daemon cannot answer (no socket, a
stale one, refused, timed out, a different configuration, an internal
error): the caller then answers in-process, silently. Only an error the
caller would have raised itself (a bad query, say) comes back as
:class:`RemoteError`. This module imports nothing heavy: it runs in every
``memvault search`` process.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.vault_io.errors import MemvaultError

if TYPE_CHECKING:
    import socket

    from memvault.store.memory_store import MemoryStore
    from memvault.store.queries import ContextQuery, SearchQuery, SessionStartQuery

    Query = SearchQuery | ContextQuery | SessionStartQuery

SOCKET_NAME = "query.sock"
PROTOCOL = 3
#: Longest reply accepted (a page of hits with snippets is a few KB).
MAX_REPLY = 16 * 1024 * 1024
#: Connecting to a live local server takes microseconds; a stale socket
#: fails at once. The timeout only guards against a wedged server.
CONNECT_TIMEOUT = 0.5
#: Longest wait for an answer (a first query may still wait for the model).
REPLY_TIMEOUT = 30.0
#: Configuration keys whose values change answers: the daemon answers only
#: a client whose values match its own.
ANSWER_KEYS = ("embedding.model", "recall.")
#: ``sun_path`` holds 108 bytes; longer socket paths go through /proc.
_MAX_SUN_PATH = 100


class RemoteError(MemvaultError):
    """The daemon ran the request and it failed the way it would in-process;
    it carries that failure's exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def socket_path(data_dir: Path) -> Path:
    """The query socket of the vault whose data dir is ``data_dir``."""
    return data_dir / SOCKET_NAME


def config_fingerprint(values: Mapping[str, Any]) -> str:
    """A digest of the configuration values that shape answers."""
    import hashlib  # here: a keyword search never asks the daemon, and hashlib takes milliseconds to load

    picked = {k: v for k, v in sorted(values.items()) if any(k == p or (p.endswith(".") and k.startswith(p)) for p in ANSWER_KEYS)}
    return hashlib.sha256(json.dumps(picked, sort_keys=True, default=str).encode()).hexdigest()[:16]


@contextlib.contextmanager
def socket_address(path: Path) -> Iterator[str]:
    """An address for ``path`` that fits ``sun_path``: the path itself, or
    the same file reached through ``/proc/self/fd`` of its open folder."""
    text = str(path)
    if len(text.encode()) <= _MAX_SUN_PATH:
        yield text
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def read_line(sock: socket.socket, limit: int) -> bytes | None:
    """Bytes up to the first newline; None when the peer sent more than
    ``limit`` bytes or closed early."""
    buf = bytearray()
    while True:
        data = sock.recv(65536)
        if not data:
            return None
        nl = data.find(b"\n")
        if nl >= 0:
            buf += data[:nl]
            return bytes(buf) if len(buf) <= limit else None
        buf += data
        if len(buf) > limit:
            return None


def ask(
    data_dir: Path,
    op: str,
    args: Mapping[str, Any],
    *,
    config: Mapping[str, Any] | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
    timeout: float = REPLY_TIMEOUT,
) -> dict[str, Any] | None:
    """The daemon's result for ``op`` with ``args``, or None to answer in-process."""
    path = socket_path(data_dir)
    if not path.exists():
        return None
    import socket  # here: most commands find no socket and never connect

    request = {"v": PROTOCOL, "op": op, "args": dict(args)}
    if config is not None:
        request["config"] = config_fingerprint(config)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(connect_timeout)
            with socket_address(path) as addr:
                sock.connect(addr)
            sock.settimeout(timeout)
            sock.sendall(json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n")
            line = read_line(sock, MAX_REPLY)
    except (OSError, ValueError):
        return None
    if not line:
        return None
    try:
        reply = json.loads(line)
    except ValueError:
        return None
    if not isinstance(reply, dict):
        return None
    if reply.get("ok") is True and isinstance(reply.get("result"), dict):
        return reply["result"]
    error = reply.get("error")
    if isinstance(error, dict) and error.get("code") in (1, 2):
        raise RemoteError(str(error.get("message", "")), int(error["code"]))
    return None


def answer(store: MemoryStore, q: Query, *, local: Callable[[Any], Any] | None = None) -> Any:
    """The answer to ``q`` (:mod:`memvault.store.answers`: a ``SearchResult``
    for a ``SearchQuery``, a ``RecallBlock`` for a ``ContextQuery``, a
    ``SessionStartText`` for a ``SessionStartQuery``), the one way every front
    end (CLI, MCP, hooks) gets one.

    The running daemon answers (its model and vectors are warm) when one
    serves this vault with the same configuration and ``q.warm_helps``; else
    ``local(q)`` does (default: ``store``'s own method, in this process). A
    failure the daemon reports the way it would have failed here is raised
    (:class:`RemoteError`, with that exit code); an answer this version cannot
    read is answered here instead.
    """
    from memvault.store.answers import ANSWERS, AnswerError

    if q.warm_helps:
        found = ask(store.data_dir, q.OP, q.to_json(), config=store.settings.values)
        if found is not None:
            try:
                return ANSWERS[q.OP].from_json(found)
            except AnswerError:
                pass
    return (local or getattr(store, q.OP))(q)


def daemon_embedder(store: MemoryStore) -> Callable[[list[str]], bool]:
    """What a front end sets as ``store.vectors_elsewhere``: the running
    daemon (same vault, same model) embeds the texts into the cache, so a
    write that needs vectors does not load the model in this process.
    False when no daemon answers (the store then loads the model itself)."""

    def embed(texts: list[str]) -> bool:
        try:
            return ask(store.data_dir, "embed", {"texts": texts}, config=store.settings.values) is not None
        except RemoteError:
            return False

    return embed
