"""memvault's MCP server: one vault's memory as tools, resources and a prompt.

``memvault mcp`` serves it on stdio (an agent client starts it), ``memvault
mcp --http`` on the SDK's Streamable HTTP transport (see :mod:`.clients.mcp_serve`).
It is one more front end of :class:`~memvault.store.memory_store.MemoryStore`:
every tool is a call of a store method, nothing else.

- Reads (read-only annotations): ``search``, ``context``, ``read``, ``links``,
  ``recent``, ``list``, ``history``, ``status``.
- Writes, all reversible (versions, ``.trash/``, ``restore``): ``remember``,
  ``update`` (refused when the memory changed since the version the agent
  read), ``forget``, ``restore``. None of them touches an ordinary note a
  person wrote: they change memories, and ``forget`` of a fact only retires
  it. Each memory an agent writes says which client wrote it in ``source``
  (``mcp:<client name>``). ``merge`` and ``consolidate`` (plan, apply by
  plan id, undo) tidy memory as the CLI does (:mod:`.clients.mcp_tidy`).
- Resources ``memvault://memory/{id}``, ``memvault://note/{+path}``,
  ``memvault://identity``; the prompt ``recall``.

Start-up is cheap: the store is opened without touching the model, so
``initialize`` is answered at once; ``search`` and ``context`` ask the
running daemon's socket first (warm) and otherwise load the model in this
process on first use. Tools run on worker threads; one lock serialises the
store. A failure is a tool error of one sentence (the SDK prefixes the tool
name); nothing but protocol is written to stdout (the SDK points fd 1 at
stderr while it serves stdio, and logging goes to stderr).

This is the only module that imports the ``mcp`` SDK (the ``mcp`` extra):
no other command pays for it.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AliasChoices, Field, ValidationError

from memvault.cli.clients.mcp_boot import INSTRUCTIONS, SERVER_NAME, server_version
from memvault.cli.clients.mcp_reads import as_list, context_data, memory_types, payload, search_data
from memvault.cli.clients.mcp_remote import PathHider, for_store
from memvault.store.memory_store import MemoryStore
from memvault.store.project import Project
from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery
from memvault.vault_io.errors import MemvaultError, cap_echoes, shorten
from memvault.vault_io.secrets import redact, redact_tree

log = logging.getLogger("memvault.mcp")
T = TypeVar("T")

_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

# -- argument types (with the names models tend to guess as aliases) --------------


def _field(description: str | None, *names: str, **limits: Any) -> Any:
    """An argument's schema: a few words where its name and type do not say enough (None: they do),
    and the aliases models tend to guess."""
    return Field(description=description, validation_alias=AliasChoices(*names), **limits)


# The tool list sits in an agent's context for the whole session (issue 35: under 6,000 characters), so a
# tool's docstring, its description there, is one short sentence, an argument says a few words only where
# its name and type do not say enough, and what every tool shares (ids, memory types, WHEN) is said once,
# in the server's instructions (clients.mcp_boot.INSTRUCTIONS). docs/agents.md has the detail.
Query = Annotated[str, _field(None, "query", "q", "text", "search", "keywords")]
Message = Annotated[str, _field(None, "message", "query", "q", "prompt", "text", "topic")]
Ref = Annotated[str, _field(None, "id", "ref", "memory_id", "fact_id", "note", "path")]
Limit = Annotated[int, _field(None, "limit", "k", "top_k", "n", "max_results", "count", ge=1, le=100)]
What = Annotated[Literal["all", "notes", "memories", "facts"],
                 _field(None, "what", "kind", "kinds", "search_in", "collection")]
MemoryScope = Annotated[str | None, _field(None, "scope", "memory_scope", "namespace")]
Types = Annotated[str | list[str] | None, _field(None, "types", "type", "memory_type", "memory_types")]
Tags = Annotated[str | list[str] | None, _field(None, "tags", "tag")]
# WHEN: changed (recent) or happened (search, context, list); the forms are in the instructions.
Since = Annotated[str | None, _field(None, "since", "after", "from", "start")]
Until = Annotated[str | None, _field(None, "until", "before", "to", "end")]
Reason = Annotated[str | None, _field(None, "reason", "why")]



_as_list = as_list
_types = memory_types


def _ok(data: dict[str, Any], text: str | None = None) -> CallToolResult:
    """A result with structured content and its text (the JSON unless ``text``),
    redacted (:func:`.clients.mcp_reads.payload`)."""
    shown, structured = payload(data, text)
    return CallToolResult(content=[TextContent(type="text", text=shown)], structured_content=structured)


def client_source(ctx: Context | None) -> str:
    """``mcp:<client name>`` from the MCP client's ``initialize`` (``mcp`` when it gave none)."""
    name = None
    try:
        params = ctx.session.client_params if ctx is not None else None
        name = params.client_info.name if params is not None else None
    except Exception:  # no session (an in-process call), or an HTTP request without one
        name = None
    clean = re.sub(r"[^A-Za-z0-9._ -]+", "", name or "").strip()[:60]
    return f"mcp:{clean}" if clean else "mcp"


class Backend:
    """The vault's store, opened once, behind one lock (tools run on worker threads).

    ``read_only``: the server writes nothing, not even the recall statistics
    that ``context`` keeps (see :meth:`recall_args`).
    """

    def __init__(self, store: MemoryStore, *, read_only: bool = False, project: Project | None = None) -> None:
        from memvault.daemon.client import daemon_embedder

        self.store = store
        #: The project the sessions work in (None: none): ``remember`` writes its scope, ``context`` prefers it.
        self.project = project
        self.project_scope = project.scope if project is not None else None
        if store.vectors_elsewhere is None:  # `remember` asks the running daemon's loaded model first
            store.vectors_elsewhere = daemon_embedder(store)
        store.embed_writes = True  # `remember` and `update` answer searchable by meaning
        self.lock = threading.Lock()
        self.read_only = read_only

    def default_scope(self, type_: str | None) -> str:
        """Where a memory goes when the agent names no scope: the session's
        project, but ``user`` for who the person is (identity) or without a project."""
        from memvault.store.memories.memtypes import maybe_type

        if self.project_scope is None or maybe_type(type_ or "semantic") == "identity":
            return "user"
        return self.project_scope

    def run(self, fn: Callable[[MemoryStore], T]) -> T:
        """``fn(store)`` under the lock; memvault's errors become one-sentence tool errors."""
        from memvault.store.answers.keys import KeyHeld
        from memvault.store.memories.guard import VersionConflict

        with self.lock:
            try:
                return fn(self.store)
            except VersionConflict as exc:
                current = exc.current
                raise ToolError(f"{cap_echoes(str(exc))}. Current text (version {current['version']}, "
                                f"tags {current['tags']}):\n{current['content']}") from None
            except KeyHeld as exc:  # a refusal that says exactly what holds the key
                current = exc.current
                raise ToolError(f"{cap_echoes(str(exc))}. Current text of {current['id']} (version "
                                f"{current['version']}):\n{current['content']}") from None
            except MemvaultError as exc:
                raise ToolError(cap_echoes(str(exc))) from None  # a huge id is not echoed back whole
            except (ToolError, ValidationError):
                raise
            except Exception as exc:  # a bug must not end the session: say so in one line, log the rest
                log.exception("tool failed")
                raise ToolError(f"memvault failed with {type(exc).__name__}: {exc} (see the server's log)") from None

    def storing(self, fn: Callable[[MemoryStore], T]) -> T:
        """:meth:`run` of a write that stores what an agent says: refused
        while memory is paused or off for the session's project (:mod:`memvault.store.pause`)."""
        def checked(s: MemoryStore) -> T:
            s.check_capture(self.project, "nothing was stored (the person paused memory)")
            return fn(s)

        return self.run(checked)

    def answer(self, q: SearchQuery | ContextQuery) -> Any:
        """``q`` answered by the running daemon (model and vectors warm), else
        here under the lock; memvault's errors become one-sentence tool errors.
        Read-only: a recall is not recorded."""
        from memvault.daemon.client import answer

        if self.read_only and q.record:
            q = dataclasses.replace(q, record=False)
        return self.run(lambda s: answer(s, q))

    def versions(self, ids: list[str]) -> dict[str, int]:
        """Current versions of memories, for hits an agent may update."""
        with self.lock:
            return self.store.current_versions(ids)


def build_server(store: MemoryStore, *, read_only: bool = False, project: Project | None = None,
                 remote: bool = False, **server_options: Any) -> MCPServer:
    """The MCP server over ``store`` (read tools only with ``read_only``);
    ``project``: the sessions' project (see :func:`.clients.mcp_reads.session_project`);
    ``remote``, an HTTP server's: no absolute path of this machine in any
    answer; ``server_options`` go to :class:`MCPServer` (the HTTP auth settings)."""
    server = MemvaultMCP(SERVER_NAME, version=server_version(), instructions=INSTRUCTIONS, log_level="WARNING",
                         **server_options)
    server.read_only = read_only
    if remote:
        server.hide = for_store(store)
    backend = Backend(store, read_only=read_only, project=project)
    _recall_tools(server, backend)
    _lookup_tools(server, backend)
    _browse_tools(server, backend)
    if not read_only:
        _write_tools(server, backend)
        from memvault.cli.clients.mcp_tidy import tidy_tools  # merge and consolidate, a module of their own

        tidy_tools(server, backend)
    _resources(server, backend)
    return server


#: The write tools, which a read-only server does not offer.
WRITE_TOOLS = ("remember", "update", "forget", "restore", "merge", "consolidate")


class MemvaultMCP(MCPServer):
    """The SDK's server, with argument errors said in one sentence and a compact tool list; over
    HTTP every answer and error says vault-relative paths (:mod:`.clients.mcp_remote`)."""

    read_only = False
    #: Set on an HTTP server: what a remote client is told of this machine's paths.
    hide: PathHider | None = None

    async def list_tools(self) -> list[Any]:
        """The SDK's tool list, each tool said once and plainly (:mod:`.clients.mcp_schema`)."""
        from memvault.cli.clients.mcp_schema import compact_tool

        return [compact_tool(tool) for tool in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """:meth:`_call_tool`, its answer and its error as a remote client is told them."""
        if self.hide is None:
            return await self._call_tool(name, arguments, context)
        try:
            return self.hide.result(await self._call_tool(name, arguments, context))
        except ToolError as exc:
            raise ToolError(self.hide.error(str(exc))) from None

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        """The SDK's, as a remote client is told it (its text, its error)."""
        if self.hide is None:
            return await super().read_resource(uri, context)
        try:
            found = await super().read_resource(uri, context)
        except ResourceError as exc:
            raise type(exc)(self.hide.error(str(exc))) from None
        return self.hide.texts(found) if isinstance(found, list) else found

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        """The SDK's, as a remote client is told it."""
        result = await super().get_prompt(name, arguments, context)
        return result if self.hide is None else self.hide.prompt(result)

    async def _call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Call a tool; a schema violation reads "argument 'limit': ..." instead of pydantic's report,
        and a write tool on a read-only server says so instead of "Unknown tool"."""
        if self.read_only and name in WRITE_TOOLS:
            raise ToolError(f"this server is read-only: {name} is not available")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"Error executing tool {shorten(name)}: {argument_error(cause)}") from cause
            if str(exc).startswith("Unknown tool"):  # the SDK's own, with the name as given: cut it short
                raise ToolError(cap_echoes(str(exc))) from None
            raise


def argument_error(exc: ValidationError) -> str:
    """The first problem of a validation error as one sentence."""
    errors = exc.errors()
    if not errors:
        return "bad arguments"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if not isinstance(p, int)) or "arguments"
    if first.get("type") == "missing":
        text = f"argument {where!r} is required"
    else:
        text = f"argument {where!r}: {first.get('msg', 'is not valid')}"
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return text + more


# -- read tools ----------------------------------------------------------------------


def _recall_tools(server: MCPServer, backend: Backend) -> None:
    @server.tool(annotations=_READ)
    def search(
        query: Query,
        what: What = "all",
        scope: MemoryScope = None,
        types: Types = None,
        tags: Tags = None,
        path: Annotated[str | None, _field("glob", "path", "path_glob", "folder", "glob")] = None,
        mode: Annotated[Literal["hybrid", "keyword", "semantic"] | None, _field(None, "mode")] = None,
        limit: Limit = 10,
        since: Since = None,
        until: Until = None,
        raw: Annotated[bool, _field("query in FTS5 syntax", "raw", "fts")] = False,
    ) -> CallToolResult:
        """Notes, memories, facts by words and meaning."""
        return _ok(*search_data(backend, query, what, scope, types, tags, path, mode, limit, since, until, raw))

    @server.tool(annotations=_READ)
    def context(
        message: Message,
        budget: Annotated[int | None, _field("tokens", "budget", "max_tokens", "tokens",
                                             ge=50, le=20000)] = None,
        what: Annotated[Literal["auto", "memories", "all"], _field(
            "auto: turns too, notes that beat them; all: notes too", "what", "kind", "search_in")] = "auto",
        scope: MemoryScope = None,
        since: Since = None,
        until: Until = None,
    ) -> CallToolResult:
        """Memories that matter for a message, as one block."""
        return _ok(*context_data(backend, message, budget, what, scope, since, until))

    @server.tool(annotations=_READ)
    def reflect(question: Annotated[str, _field(None, "question", "q")]) -> CallToolResult:
        """Answer a question from memory, citing ids."""
        block = backend.answer(ContextQuery(question, record=False, prefer_scope=backend.project_scope))
        result = backend.run(lambda s: s.reflect(question, block))
        return _ok(result.to_json(), result.text)


def _lookup_tools(server: MCPServer, backend: Backend) -> None:
    @server.tool(annotations=_READ)
    def read(
        id: Annotated[str | None, _field(None, "id", "ref", "memory_id", "fact_id")] = None,
        path: Annotated[str | None, _field(None, "path", "file", "note")] = None,
        title: Annotated[str | None, _field(None, "title", "name")] = None,
        heading: Annotated[str | None, _field("one section", "heading", "section")] = None,
        key: Annotated[str | None, _field(None, "key", "slot")] = None,
        scope: Annotated[str, _field(None, "scope", "memory_scope", "namespace")] = "user",
    ) -> CallToolResult:
        """A note, memory or fact in full."""
        if key:
            found = backend.run(lambda s: s.key_holder(key, scope))
            if found.holder is None:
                raise ToolError(f"no live memory holds key {found.key} (scope {found.scope})")
            data = backend.run(lambda s: s.read(str(found.holder), heading)).to_json()
            if found.others:
                data["also_held_by"] = list(found.others)
            return _ok(data)
        ref = id or path or title
        if not ref:
            raise ToolError("give an id, a path, a title or a key")
        return _ok(backend.run(lambda s: s.read(ref, heading)).to_json())

    @server.tool(annotations=_READ)
    def links(
        id: Ref,
        direction: Annotated[Literal["out", "in", "both"], _field(None, "direction", "dir")] = "both",
    ) -> CallToolResult:
        """Links out of and into a note."""
        def run(s: MemoryStore) -> dict[str, Any]:
            data: dict[str, Any] = {}
            if direction in ("out", "both"):
                data["out"] = [link.to_json() for link in s.links(id)]
            if direction in ("in", "both"):
                data["in"] = [link.to_json() for link in s.backlinks(id)]
            return data

        return _ok(backend.run(run))


def _browse_tools(server: MCPServer, backend: Backend) -> None:
    @server.tool(annotations=_READ)
    def recent(
        since: Since = "7 days",
        until: Until = None,
        what: Annotated[Literal["all", "notes", "memories", "facts"], _field(None, "what", "kind")] = "all",
        types: Types = None,
        limit: Limit = 20,
    ) -> CallToolResult:
        """What changed lately."""
        return _ok(backend.run(lambda s: s.recent(since=since, until=until, what=what, types=_types(types),
                                                  limit=limit)).to_json())

    @server.tool(name="list", annotations=_READ)
    def list_(
        what: Annotated[Literal["memories", "notes", "facts", "all"], _field(None, "what", "kind")] = "memories",
        types: Types = None,
        scope: MemoryScope = None,
        tags: Tags = None,
        sort: Annotated[Literal["updated", "happened", "strength", "created", "title"],
                        _field(None, "sort", "order", "order_by")] = "updated",
        since: Since = None,
        until: Until = None,
        limit: Annotated[int, _field(None, "limit", "k", "n", "page_size", ge=1, le=200)] = 50,
        cursor: Annotated[str | None, _field("next_cursor", "cursor", "page", "next")] = None,
        key: Annotated[str | None, _field("deploy.*: a prefix", "key", "slot")] = None,
    ) -> CallToolResult:
        """Memories (or notes, facts) without a query, paged."""
        return _ok(backend.run(lambda s: s.list(
            what=what, types=_types(types), scopes=_as_list(scope), tags=_as_list(tags), sort=sort, since=since,
            until=until, limit=limit, cursor=cursor, key=key)).to_json())

    @server.tool(annotations=_READ)
    def history(id: Ref) -> CallToolResult:
        """Versions of a memory or fact."""
        return _ok({"versions": [v.to_json() for v in backend.run(lambda s: s.history(id))]})

    @server.tool(annotations=_READ)
    def status() -> CallToolResult:
        """Vault, daemon, counts, conflicts."""
        from memvault.daemon.status import vault_status

        data = backend.run(vault_status)
        p = backend.project
        data["session_project"] = None if p is None else {"scope": p.scope, "root": str(p.root),
                                                          "memory_off": p.memory_off}
        # Whether what this session says is stored now (a pause of all memory counts with no project too).
        data["storing"] = backend.run(lambda s: _storing(s, p))
        return _ok(data)


# -- write tools ---------------------------------------------------------------------


def _write_tools(server: MCPServer, backend: Backend) -> None:
    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=False))
    def remember(
        content: Annotated[str, _field(None, "content", "text", "memory", "fact", "statement")],
        type: Annotated[str | None, _field("default semantic", "type", "memory_type", "kind", "category")] = None,
        tags: Tags = None,
        links: Annotated[str | list[str] | None, _field("related notes", "links", "link", "related")] = None,
        scope: Annotated[str | None, _field(
            "default: the session's project; user: everywhere",
            "scope", "memory_scope", "namespace")] = None,
        key: Annotated[str | None, _field(None, "key", "slot")] = None,
        reason: Annotated[str | None, _field(None, "reason", "why")] = None,
        ctx: Context = None,  # type: ignore[assignment]
    ) -> CallToolResult:
        """Store a durable memory (idempotent)."""
        source = client_source(ctx)
        why = _by(reason, "superseded", ctx) if reason else None
        where = scope.strip() if scope and scope.strip() else backend.default_scope(type)
        result = backend.storing(lambda s: s.add(content, type if key else type or "semantic", tags=_as_list(tags),
                                             scope=where, links=_as_list(links), source=source, key=key,
                                             reason=why))
        return _write_result(backend, result)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                             open_world_hint=False))
    def update(
        id: Annotated[str, _field(None, "id", "ref", "memory_id")],
        version: Annotated[int, _field(None, "version", "expected_version", "expect_version",
                                       "base_version", ge=1)],
        content: Annotated[str | None, _field("whole new text", "content", "text", "memory")] = None,
        tags: Tags = None,
        type: Annotated[str | None, _field(None, "type", "memory_type")] = None,
        reason: Reason = None,
        done: Annotated[bool, _field(None, "done", "finished")] = False,
        ctx: Context = None,  # type: ignore[assignment]
    ) -> CallToolResult:
        """Change a memory; refused if changed since version."""
        if content is None and tags is None and type is None and not done:
            raise ToolError("nothing to update: give content, tags, type or done")
        result = backend.storing(lambda s: s.update(
            id, content=content, tags=_as_list(tags) if tags is not None else None, type_=type,
            reason=_by(reason, "done" if done else "updated", ctx), expect_version=version, done=done))
        return _write_result(backend, result)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                                             open_world_hint=False))
    def forget(id: Ref, reason: Reason = None, ctx: Context = None) -> CallToolResult:  # type: ignore[assignment]
        """Forget a memory or retire a fact (restorable)."""
        return _write_result(backend, backend.run(lambda s: s.forget(id, _by(reason, "forgotten", ctx))))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=False))
    def restore(id: Ref) -> CallToolResult:
        """Bring back a forgotten memory or fact, or a session note retention moved."""
        return _write_result(backend, backend.run(lambda s: s.restore(id)))


def _by(reason: str | None, verb: str, ctx: Context | None) -> str:
    """A change's reason, saying which client made it (history and forgets keep it)."""
    who = client_source(ctx)
    return f"{reason} ({who})" if reason else f"{verb} by {who}"


def _storing(store: MemoryStore, project: Project | None) -> bool:
    """Whether ``remember`` and ``update`` store now for sessions of ``project``."""
    from memvault.store.pause import MemoryPaused

    try:
        store.check_capture(project)
    except MemoryPaused:
        return False
    return True


def _write_result(backend: Backend, result: Any) -> CallToolResult:
    from memvault.vault_io.uri import obsidian_uri

    data = result.as_dict()
    if result.path:
        data["uri"] = obsidian_uri(backend.store.name, result.path)
    lines = [f"{result.action} {result.id}" + (f" -> {result.path}" if result.path else "")
             + (f" (version {result.version})" if result.version else "")]
    lines += data["warnings"]
    if result.conflict:
        lines.append(f"conflict: {result.conflict}; the store's version was written to {result.conflict_path}")
    lines += [_resembles(s) for s in result.similar_to or []]
    lines += [f"contradicts {c['id']} ({c['kind']}; now possibly outdated): {c['text']}"
              for c in result.contradicts or []]
    return _ok(data, "\n".join(lines))


def _resembles(similar: dict[str, Any]) -> str:
    """One line naming a live memory a new one resembles (update or merge it if it says the same)."""
    return f"similar to {similar['id']} ({similar['measure']} {similar['similarity']}): {similar['text']}"


# -- resources and the prompt -----------------------------------------------------------


def _resources(server: MCPServer, backend: Backend) -> None:
    def read_or_404(ref: str, kinds: tuple[str, ...]) -> dict[str, Any]:
        try:
            read = backend.run(lambda s: s.read(ref))
        except ToolError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        if read.kind not in kinds:
            raise ResourceNotFoundError(f"{ref} is a {read.kind}, not a {' or '.join(kinds)}")
        return redact_tree(read.to_json())

    @server.resource("memvault://memory/{id}", mime_type="text/markdown",
                     description="One memory (or fact) as Markdown, with its metadata.")
    def memory_resource(id: str) -> str:
        return _markdown(read_or_404(id, ("memory", "fact")))

    @server.resource("memvault://note/{+path}", mime_type="text/markdown",
                     description="One note of the vault by its vault path.")
    def note_resource(path: str) -> str:
        return _markdown(read_or_404(path, ("note", "memory")))

    @server.resource("memvault://identity", mime_type="text/markdown",
                     description="Who the person is: their identity memories and identity facts.")
    def identity_resource() -> str:
        try:
            items = backend.run(lambda s: s.identity())
        except ToolError as exc:
            raise ResourceError(str(exc)) from None
        if not items:
            return "No identity memories yet.\n"
        return "# Identity\n\n" + "".join(f"- {' '.join(i.content.split())} ({i.id})\n" for i in items)

    @server.prompt(description="Recall what memvault holds about a topic, to ground the answer in it.")
    def recall(topic: str) -> str:
        try:
            result = backend.answer(ContextQuery(topic, what="all"))
        except ToolError as exc:
            return f"memvault could not recall anything about {topic!r}: {exc}"
        if not result.text:
            return f"memvault holds nothing relevant about: {topic}"
        return (f"Here is what memvault (the person's long-term memory) recalls about: {topic}\n\n"
                f"{redact(result.text)[0]}\n\nUse it where it helps, say where it came from, and ask before "
                "relying on anything that looks outdated.")


def _markdown(data: dict[str, Any]) -> str:
    """A trace as a Markdown document: title, a few metadata lines, its content."""
    meta = [f"{k}: {data[k]}" for k in ("id", "kind", "type", "scope", "version", "status", "path", "updated", "uri")
            if data.get(k) not in (None, "", [])]
    if data.get("tags"):
        meta.append("tags: " + ", ".join(data["tags"]))
    return f"# {data.get('title') or data['id']}\n\n" + "\n".join(f"- {m}" for m in meta) + f"\n\n{data['content']}\n"
