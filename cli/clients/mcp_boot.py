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

A client asks for the tools next (``tools/list``, after its
``notifications/initialized``), and that list is built by the SDK from the
tools' signatures. So the SDK's last answer is kept (:class:`ToolsCache`,
``mcp-tools.json`` in memvault's data dir, under a key of memvault's and
the SDK's versions, the server's mode and the tool modules' files) and a
cold start answers ``tools/list`` from it while the SDK loads; the request
is replayed to the SDK too, its answer dropped and compared: a different
one replaces the cache and is logged. Without a cached list for the key
(the first start after an upgrade), the SDK answers it as before.

The first tool calls come before the SDK has loaded too (an agent asks
``search`` or ``context`` right after the handshake): when a running daemon
answers them, they are answered here (:mod:`.mcp_reads`) and never reach
the SDK; any other call, or one the daemon does not answer, waits for it.

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
from pathlib import Path
from typing import Any

from memvault.vault_io import json_input

INSTRUCTIONS = """\
memvault is the long-term memory of this person and the agents working with them: an Obsidian \
vault of notes, memories (Memory/<type>/ notes) and facts extracted from notes they marked.
- At the start of a task call `context` with the user's message: it returns the few memories, facts \
and note passages that matter, within a token budget (empty when nothing is relevant).
- `search` finds notes, memories or facts by words and meaning; `read` shows one in full (with its \
version, links and an obsidian:// link for the person); `list` and `recent` browse without a query.
- `remember` durable things the person tells you (preferences, decisions, facts about them or the \
project), one self-contained statement each; it is idempotent. With a `key` (a slot such as \
editor.theme) a new value replaces the memory holding it only when you give a `reason`. `update` \
needs the `version` you read: if the person edited the memory since, it is refused with the current \
text, so redo your change on top of theirs.
- `reflect` answers a question from memory citing ids (with an llm configured), else gives the evidence \
(recalled items, contradictions, open action items) for you to answer from.
- `forget` is reversible (`restore`). Ordinary notes are the person's: no tool edits them.
- `consolidate` without arguments shows a plan (changing nothing); `apply` with its id carries it out, \
`undo` with a run id reverses one.
Ids: m-... memories, f-... facts; notes by vault path or title (an `id` argument takes any of them). \
Memory types: identity, semantic, episodic, procedural, prospective, ongoing (work in progress in \
this project: `remember` it with type ongoing, `update` it with done=true when finished) \
(`note`: ordinary notes). \
`since`/`until`: an ISO date or date-time (2023-05-01, 2023-05) or a span back from now (7d, 12h, \
2 weeks, last week, yesterday); when a thing happened, for `recent` when it changed."""

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
        msg = json_input.loads(line)
    except ValueError:  # json_input.TooDeep too: a frame nested too deeply is no message
        return None
    if not isinstance(msg, dict) or msg.get("method") != "initialize" or msg.get("jsonrpc") != "2.0":
        return None
    params = msg.get("params")
    if "id" not in msg or not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str) \
            or not isinstance(params.get("clientInfo"), dict):
        return None
    return msg["id"], params


def _message(line: bytes | str) -> dict[str, Any] | None:
    try:
        msg = json_input.loads(line)
    except ValueError:  # json_input.TooDeep too: a frame nested too deeply is no message
        return None
    return msg if isinstance(msg, dict) else None


def _id_key(msg_id: Any) -> str:
    """A JSON-RPC id as a dict key (1 and "1" stay apart)."""
    return json.dumps(msg_id)


class ToolsCache:
    """The ``tools/list`` result the SDK last gave, kept in memvault's data dir
    under a key of what the list depends on (:func:`tools_key`), so the
    next cold start can answer it before the SDK has loaded. The SDK's own
    answer to the replayed request is compared with it (:class:`DropReply`)
    and replaces it when they differ."""

    KEEP = 4  # keys kept (read-only and full servers, two versions)

    def __init__(self, path: Path, key: str) -> None:
        self.path = path
        self.key = key

    def _all(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def load(self) -> dict[str, Any] | None:
        """The cached result for this key, or None."""
        result = self._all().get(self.key)
        return result if isinstance(result, dict) and isinstance(result.get("tools"), list) else None

    def save(self, result: dict[str, Any]) -> None:
        """Keep ``result`` for this key (never raises: the cache only saves time)."""
        data = {k: v for k, v in self._all().items() if k != self.key}
        data = dict(list(data.items())[-(self.KEEP - 1):]) if self.KEEP > 1 else {}
        data[self.key] = result
        from memvault.store.location import make_private_dirs

        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            make_private_dirs(self.path.parent)  # the data home, when the server is the first to run
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)


def tools_key(read_only: bool) -> str:
    """What the tool list depends on: memvault's and the SDK's versions, the
    server's mode, and the modules that declare the tools (their size and
    modification time: a changed source is a new key)."""
    import hashlib
    import importlib.util
    from importlib.metadata import PackageNotFoundError, version

    try:
        sdk = version("mcp")
    except PackageNotFoundError:
        sdk = "?"
    parts = [server_version(), sdk, "read-only" if read_only else "full"]
    for module in ("memvault.cli.mcp_server", "memvault.cli.clients.mcp_tidy", "memvault.cli.clients.mcp_schema"):
        spec = importlib.util.find_spec(module)
        try:
            st = os.stat(spec.origin) if spec is not None and spec.origin else None
        except OSError:
            st = None
        parts.append(f"{module}:{st.st_size}:{st.st_mtime_ns}" if st is not None else f"{module}:-")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:24]


class Replay:
    """The SDK's stdin: lines already read (answered here or not), then the
    wire; notes the ids of ``tools/list`` requests, whose answers refresh the cache."""

    def __init__(self, first: list[str], rest: Any, listing: set[str] | None = None) -> None:
        self.first = first
        self.rest = rest
        self.listing = listing if listing is not None else set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        for line in self.first:
            self._note(line)
            yield line
        async for line in self.rest:
            self._note(line)
            yield line

    def _note(self, line: str) -> None:
        msg = _message(line)
        if msg is not None and msg.get("method") == "tools/list" and "id" in msg:
            self.listing.add(_id_key(msg["id"]))


class DropReply:
    """The SDK's stdout: the wire, less the SDK's answers to the replayed
    requests answered here already (``answered``: id key -> (method, what
    was answered)). The SDK's ``initialize`` answer should carry the
    protocol version answered (a warning says when it does not, an SDK whose
    table moved from :data:`HANDSHAKE_VERSIONS`); its ``tools/list`` answers
    refresh the cache (and a warning says when the cached one answered was stale)."""

    def __init__(self, sink: Any, answered: dict[str, tuple[str, Any]], listing: set[str] | None = None,
                 cache: ToolsCache | None = None) -> None:
        self.sink = sink
        self.answered = answered
        self.listing = listing if listing is not None else set()
        self.cache = cache

    async def write(self, text: str) -> None:
        """Pass a frame on, unless it answers a request answered here already."""
        msg = _message(text) if (self.answered or self.listing) else None
        if msg is not None and "method" not in msg and "id" in msg:
            key = _id_key(msg["id"])
            result = msg.get("result")
            if key in self.listing:
                self.listing.discard(key)
                if self.cache is not None and isinstance(result, dict) and self.cache.load() != result:
                    self.cache.save(result)
            if key in self.answered:
                method, ours = self.answered.pop(key)
                log = logging.getLogger("memvault.mcp")
                if method == "initialize":
                    chosen = (result or {}).get("protocolVersion") if isinstance(result, dict) else None
                    if chosen != ours:
                        log.warning("the MCP SDK chose protocol version %s where memvault answered %s: "
                                    "HANDSHAKE_VERSIONS in memvault.cli.clients.mcp_boot needs updating", chosen, ours)
                elif result != ours:
                    log.warning("the cached tool list answered at start was stale; the next start answers the new one")
                return
        await self.sink.write(text)

    async def flush(self) -> None:
        """Flush the wire."""
        await self.sink.flush()


def _write_line(writer: io.BufferedWriter, msg: dict[str, Any]) -> None:
    writer.write(json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
    writer.flush()


#: What answers a ``tools/call`` before the SDK has loaded: (the tool list, the
#: call's params) -> the result, or None to leave the call to the SDK.
EarlyCall = Callable[[dict[str, Any], Any], "dict[str, Any] | None"]


def serve_stdio(build: Callable[[], Any], tools: ToolsCache | None = None, calls: EarlyCall | None = None) -> None:
    """Serve the MCP server ``build()`` returns on this process's stdin and
    stdout, answering ``initialize`` while ``build`` runs (module docstring),
    and ``tools/list`` too when ``tools`` holds the list for this server;
    ``calls`` may answer the tool calls that come meanwhile (the read tools
    a running daemon answers, :func:`.mcp_reads.early_call`): one answered
    there is not replayed to the SDK."""
    reader = os.fdopen(os.dup(0), "rb")
    writer = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # handlers and children read EOF ...
    os.close(devnull)
    os.dup2(2, 1)  # ... and their stray output goes to stderr, never onto the wire
    built: dict[str, Any] = {}
    ready = threading.Event()

    def target() -> None:
        try:
            built["server"] = build()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            built["error"] = exc
        finally:
            ready.set()

    thread = threading.Thread(target=target, name="memvault-mcp-load", daemon=True)
    thread.start()
    first = reader.readline()
    if not first:
        return  # the client went away before saying anything
    lines = [first]
    answered: dict[str, tuple[str, Any]] = {}
    init = as_initialize(first)
    if init is not None:
        msg_id, params = init
        result = initialize_result(params, handshake_versions(), server_version())
        answered[_id_key(msg_id)] = ("initialize", result["protocolVersion"])
        _write_line(writer, {"jsonrpc": "2.0", "id": msg_id, "result": result})
        listed = tools.load() if tools is not None else None
        while listed is not None and not ready.is_set():
            # While the SDK loads: the client's "initialized" and its tools/list
            # (answered from the cache); anything else waits for the SDK.
            line = reader.readline()
            if not line:
                break
            lines.append(line)
            msg = _message(line) or {}
            if msg.get("method") == "notifications/initialized" and "id" not in msg:
                continue
            asked = msg.get("params")
            if msg.get("method") == "tools/list" and "id" in msg and not (isinstance(asked, dict) and asked.get("cursor")):
                answered[_id_key(msg["id"])] = ("tools/list", listed)
                _write_line(writer, {"jsonrpc": "2.0", "id": msg["id"], "result": listed})
                continue
            early = calls(listed, asked) if calls is not None and msg.get("method") == "tools/call" \
                and "id" in msg else None
            if early is not None:
                lines.pop()  # answered: the SDK never sees it
                _write_line(writer, {"jsonrpc": "2.0", "id": msg["id"], "result": early})
                continue
            break
    thread.join()
    if "error" in built:
        raise built["error"]
    _run_sdk(built["server"], [line.decode("utf-8", "replace") for line in lines], reader, writer, answered, tools)


def _run_sdk(server: Any, first: list[str], reader: io.BufferedReader, writer: io.BufferedWriter,
             answered: dict[str, tuple[str, Any]], tools: ToolsCache | None) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        source = anyio.wrap_file(io.TextIOWrapper(reader, encoding="utf-8", errors="replace"))
        sink = anyio.wrap_file(io.TextIOWrapper(writer, encoding="utf-8"))
        listing: set[str] = set()
        stdin = Replay(first, source, listing)
        stdout = DropReply(sink, answered, listing, tools)
        # stdio_server only iterates stdin and writes (and flushes) stdout;
        # its annotations ask for anyio's AsyncFile, which these stand in for.
        async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):  # type: ignore[arg-type]
            low = server._lowlevel_server  # what MCPServer.run_stdio_async runs, on our streams
            await low.run(read, write, low.create_initialization_options())

    anyio.run(run)
