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

from memvault.vault_io import json_input
from memvault.vault_io.errors import MemvaultError

if TYPE_CHECKING:
    import socket

    from memvault.store.answers.write import WriteResult
    from memvault.store.memory_store import MemoryStore
    from memvault.store.queries.recall import ContextQuery, SessionStartQuery
    from memvault.store.queries.search import SearchQuery
    from memvault.store.queries.write import NewMemory

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
#: Ops that write: the daemon does them only for a client whose whole configuration is its own.
WRITE_OPS = ("add",)
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


def config_fingerprint(values: Mapping[str, Any], op: str = "search") -> str:
    """A digest of the configuration values that shape ``op``'s answer: for
    a question, :data:`ANSWER_KEYS`; for a write (``add``), every value but
    the vault's path (which names the same folder in either spelling)."""
    import hashlib  # here: a keyword search never asks the daemon, and hashlib takes milliseconds to load

    if op in WRITE_OPS:
        picked = {k: v for k, v in sorted(values.items()) if k != "vault"}
    else:
        picked = {k: v for k, v in sorted(values.items())
                  if any(k == p or (p.endswith(".") and k.startswith(p)) for p in ANSWER_KEYS)}
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


class _NotSent(Exception):
    """The request never reached a server (no socket, refused, a stale file)."""


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
    try:
        reply = _exchange(data_dir, op, args, config, connect_timeout, timeout)
    except (_NotSent, OSError, ValueError):
        return None
    return _result(reply)


def _exchange(data_dir: Path, op: str, args: Mapping[str, Any], config: Mapping[str, Any] | None,
              connect_timeout: float, timeout: float) -> object:
    """The daemon's reply to one request (any JSON value). Raises
    :class:`_NotSent` when no server took the request, OSError or ValueError
    when one took it and no readable reply came."""
    path = socket_path(data_dir)
    if not path.exists():
        raise _NotSent
    import socket  # here: most commands find no socket and never connect

    request = {"v": PROTOCOL, "op": op, "args": dict(args)}
    if config is not None:
        request["config"] = config_fingerprint(config, op)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(connect_timeout)
        try:
            with socket_address(path) as addr:
                sock.connect(addr)
            sock.settimeout(timeout)
            # A request cut short has no newline: the server reads it as nothing and does nothing.
            sock.sendall(json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n")
        except OSError:
            raise _NotSent from None
        line = read_line(sock, MAX_REPLY)
    if not line:
        raise ValueError("no reply")
    return json_input.loads(line)


def _result(reply: object) -> dict[str, Any] | None:
    """The result of a reply; None when the daemon did not answer (the caller
    answers in-process); :class:`RemoteError` for a failure with an exit code."""
    if not isinstance(reply, dict):
        return None
    if reply.get("ok") is True and isinstance(reply.get("result"), dict):
        return reply["result"]
    error = reply.get("error")
    if isinstance(error, dict) and error.get("code") in (1, 2):
        if isinstance(error.get("current"), dict):  # a keyed write refused: the memory holding the key
            from memvault.store.answers.keys import KeyHeld

            raise KeyHeld(str(error.get("message", "")), error["current"])
        raise RemoteError(str(error.get("message", "")), int(error["code"]))
    return None


def add(store: MemoryStore, new: NewMemory) -> WriteResult:
    """Add the memory ``new`` describes: the running daemon writes it (its
    write path and model are loaded) when one serves this vault with the same
    configuration, else ``store.add`` does, here.

    The write is never done twice: it is done here only when the daemon
    certainly did nothing (no server took the request, or it refused it
    before writing). When the daemon took it and no readable reply came
    (it stopped, or took longer than :data:`REPLY_TIMEOUT`), the memory may
    be written: an error says so instead of writing it again."""
    from memvault.store.answers.write import WriteResult

    try:
        reply = _exchange(store.data_dir, new.OP, new.to_json(), store.settings.values, CONNECT_TIMEOUT,
                          REPLY_TIMEOUT)
    except _NotSent:
        reply = None
    except (OSError, ValueError) as exc:
        raise MemvaultError(f"memvault's daemon took the memory but gave no answer ({exc or 'no reply'}): it may "
                            "be added; see `memvault recent --since 10m` before adding it again") from None
    result = _result(reply)
    if result is None:
        return store.add(new.content, new.type, tags=new.tags, scope=new.scope, links=new.links,
                         source=new.source, allow_duplicate=new.allow_duplicate, key=new.key, reason=new.reason)
    try:
        return WriteResult.from_dict(result)
    except ValueError:
        raise MemvaultError("memvault's daemon added the memory but its answer could not be read; see "
                            "`memvault recent --since 10m`") from None


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
    from memvault.store.answers import AnswerError, answer_type

    if q.warm_helps:
        found = ask(store.data_dir, q.OP, q.to_json(), config=store.settings.values)
        if found is not None:
            try:
                return answer_type(q.OP).from_json(found)
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
