"""Starting the stdio MCP server fast: ``initialize`` is answered before the SDK loads.

Importing the ``mcp`` SDK costs about a second of CPU (its protocol models
are built at import), longer than an agent client should wait for a
server's handshake. So :func:`serve_stdio` answers the client's
``initialize`` request itself, from this SDK-free module, while another
thread imports the SDK and builds the server; then the SDK takes over the
wire, with the ``initialize`` request replayed to it (so its session knows
the client, whose name memory writes record) and its own answer to that
request dropped (the client has one already). The answer given is the one
the SDK gives: the same protocol-version choice (from the SDK's version
table, kept in :data:`HANDSHAKE_VERSIONS` and checked against the SDK by a
test and at run time), capabilities, server info and
instructions (a test compares the two).

A first message that is not an ``initialize`` request (a client of the
stateless 2026 protocol era) is simply handed to the SDK once it is ready.
While serving, fd 0 reads the null device and fd 1 writes to stderr, so
nothing but protocol can reach stdout.
"""

from __future__ import annotations

import io
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

INSTRUCTIONS = """\
memvault is the long-term memory of this person and the agents working with them: an Obsidian \
vault of notes, memories (Memory/<type>/ notes) and facts extracted from notes they marked.
- At the start of a task call `context` with the user's message: it returns the few memories, facts \
and note passages that matter, within a token budget (empty when nothing is relevant).
- `search` finds notes, memories or facts by words and meaning; `read` shows one in full (with its \
version, links and an obsidian:// link for the person); `list` and `recent` browse without a query.
- `remember` durable things the person tells you (preferences, decisions, facts about them or the \
project); it is idempotent. `update` needs the `version` you read: if the person edited the memory \
since, it is refused with the current text, so redo your change on top of theirs.
- `forget` is reversible (`restore`). Ordinary notes are the person's: no tool edits them.
Ids: m-... memories, f-... facts; notes by vault path or title."""

SERVER_NAME = "memvault"
#: What the server offers (no list-changed or subscription notifications).
CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}


def server_version() -> str:
    """memvault's version, as the server reports it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memvault")
    except PackageNotFoundError:
        return "0"


#: The protocol versions the SDK negotiates in ``initialize``, oldest first:
#: ``mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS`` of the SDK this memvault
#: is tested with (pyproject pins ``mcp>=2.3,<3``). The SDK offers no way to
#: read them without importing ``mcp_types``, whose ``__init__`` builds every
#: protocol model (0.4 s), so they are kept here; tests/test_mcp_server.py
#: checks them against the installed SDK, and a server whose SDK chose
#: another version than the one answered logs a warning (:class:`DropReply`).
HANDSHAKE_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def handshake_versions() -> tuple[str, ...]:
    """The protocol versions answered in ``initialize`` (:data:`HANDSHAKE_VERSIONS`)."""
    return HANDSHAKE_VERSIONS


def initialize_result(params: dict[str, Any], versions: tuple[str, ...], version: str) -> dict[str, Any]:
    """The ``initialize`` result the SDK would give for ``params``."""
    asked = params.get("protocolVersion")
    chosen = asked if asked in versions else versions[-1]
    return {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "protocolVersion": chosen,
        "serverInfo": {"name": SERVER_NAME, "version": version},
    }


def as_initialize(line: bytes) -> tuple[Any, dict[str, Any]] | None:
    """(request id, params) when ``line`` is a well-formed ``initialize`` request."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("method") != "initialize" or msg.get("jsonrpc") != "2.0":
        return None
    params = msg.get("params")
    if "id" not in msg or not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str) \
            or not isinstance(params.get("clientInfo"), dict):
        return None
    return msg["id"], params


class Replay:
    """The SDK's stdin: lines already read (the ``initialize`` request), then the wire."""

    def __init__(self, first: list[str], rest: Any) -> None:
        self.first = first
        self.rest = rest

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        for line in self.first:
            yield line
        async for line in self.rest:
            yield line


class DropReply:
    """The SDK's stdout: the wire, less the SDK's answer to the replayed
    ``initialize`` (whose protocol version should be the one answered: a
    warning says when it is not, an SDK whose table moved from
    :data:`HANDSHAKE_VERSIONS`)."""

    def __init__(self, sink: Any, drop_id: Any, answered: str | None = None) -> None:
        self.sink = sink
        self.drop_id = drop_id
        self.answered = answered
        self.dropped = drop_id is None

    async def write(self, text: str) -> None:
        """Pass a frame on, unless it is the one answer to drop."""
        if not self.dropped:
            try:
                msg = json.loads(text)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and "method" not in msg and msg.get("id") == self.drop_id:
                self.dropped = True
                chosen = (msg.get("result") or {}).get("protocolVersion")
                if self.answered is not None and chosen != self.answered:
                    logging.getLogger("memvault.mcp").warning(
                        "the MCP SDK chose protocol version %s where memvault answered %s: "
                        "HANDSHAKE_VERSIONS in memvault.cli.clients.mcp_boot needs updating", chosen, self.answered)
                return
        await self.sink.write(text)

    async def flush(self) -> None:
        """Flush the wire."""
        await self.sink.flush()


def serve_stdio(build: Callable[[], Any]) -> None:
    """Serve the MCP server ``build()`` returns on this process's stdin and
    stdout, answering ``initialize`` while ``build`` runs (module docstring)."""
    reader = os.fdopen(os.dup(0), "rb")
    writer = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # handlers and children read EOF ...
    os.close(devnull)
    os.dup2(2, 1)  # ... and their stray output goes to stderr, never onto the wire
    built: dict[str, Any] = {}

    def target() -> None:
        try:
            built["server"] = build()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            built["error"] = exc

    thread = threading.Thread(target=target, name="memvault-mcp-load", daemon=True)
    thread.start()
    first = reader.readline()
    if not first:
        return  # the client went away before saying anything
    drop_id = answered = None
    init = as_initialize(first)
    if init is not None:
        drop_id, params = init
        result = initialize_result(params, handshake_versions(), server_version())
        answered = result["protocolVersion"]
        reply = {"jsonrpc": "2.0", "id": drop_id, "result": result}
        writer.write(json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
        writer.flush()
    thread.join()
    if "error" in built:
        raise built["error"]
    _run_sdk(built["server"], first.decode("utf-8", "replace"), reader, writer, drop_id, answered)


def _run_sdk(server: Any, first: str, reader: io.BufferedReader, writer: io.BufferedWriter, drop_id: Any,
             answered: str | None) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        source = anyio.wrap_file(io.TextIOWrapper(reader, encoding="utf-8", errors="replace"))
        sink = anyio.wrap_file(io.TextIOWrapper(writer, encoding="utf-8"))
        async with stdio_server(stdin=Replay([first], source), stdout=DropReply(sink, drop_id, answered)) as (read, write):
            low = server._lowlevel_server  # what MCPServer.run_stdio_async runs, on our streams
            await low.run(read, write, low.create_initialization_options())

    anyio.run(run)
