"""The MCP read tools an agent calls first, ``search`` and ``context``, without the SDK.

The SDK's tools (:mod:`memvault.cli.mcp_server`) call :func:`search_data`
and :func:`context_data` with the arguments pydantic checked. A cold stdio
start (:mod:`.mcp_boot`) calls them too, for a ``tools/call`` that arrives
while the SDK is still loading (about a second of CPU, longer than a warm
answer takes) when a running daemon answers it (:func:`early_call`): the
arguments are checked against the tool's input schema in the tool list the
SDK last gave (:func:`checked_arguments`: the part of JSON Schema pydantic
writes for these signatures), and the result is the one the SDK would send
(``content``, ``structuredContent``, ``isError``). Anything it cannot vouch
for (a name the schema lacks, such as the alias ``q``; a value the schema
does not plainly allow; no daemon; any failure) waits for the SDK, which
answers it as always, so an agent sees the same answers either way.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery
from memvault.vault_io.secrets import redact, redact_tree

if TYPE_CHECKING:
    from memvault.store.memory_store import MemoryStore
    from memvault.store.project import Project


class Reads(Protocol):
    """What the read tools ask of the server's backend."""

    #: The scope of the session's project (:func:`session_project`): ``context`` prefers it.
    project_scope: str | None

    def answer(self, q: SearchQuery | ContextQuery) -> Any:
        """``q``'s answer (the daemon's when one runs)."""
        ...

    def versions(self, ids: list[str]) -> dict[str, int]:
        """The current version of each memory in ``ids``."""
        ...


def as_list(value: str | list[str] | None) -> list[str]:
    """A comma-separated string or a list, as a list of its non-empty items."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [v.strip() for v in value if v and v.strip()]


def memory_types(value: str | list[str] | None) -> list[str]:
    """Memory types as given (aliases such as ``todo`` allowed; ``note`` for ordinary notes)."""
    from memvault.store.memories.memtypes import NOTE_TYPE, canonical_type

    return [NOTE_TYPE if t.lower() == NOTE_TYPE else canonical_type(t) for t in as_list(value)]


def search_data(reads: Reads, query: str, what: str = "all", scope: str | None = None,
                types: str | list[str] | None = None, tags: str | list[str] | None = None, path: str | None = None,
                mode: str | None = None, limit: int = 10, since: str | None = None,
                until: str | None = None, raw: bool = False) -> tuple[dict[str, Any], str | None]:
    """The ``search`` tool's answer: the hits (memory hits with the version an
    ``update`` needs), and no text of its own (the JSON is the text).
    ``raw``: the query is FTS5 syntax (one FTS5 cannot read is a usage error)."""
    q = SearchQuery(query, mode=mode, limit=limit, types=tuple(memory_types(types)), tags=tuple(as_list(tags)),
                    path_glob=path, what=what, memory_scope=tuple(as_list(scope)),
                    since=since or None, until=until or None, raw=raw)
    result = reads.answer(q)
    versions = reads.versions([h.id for h in result.hits if h.id.startswith("m-") and "." not in h.id])
    hits = [dataclasses.replace(h, version=versions[h.id]) if h.id in versions else h for h in result.hits]
    data: dict[str, Any] = dataclasses.replace(result, hits=tuple(hits)).to_json()
    return data, None


def context_data(reads: Reads, message: str, budget: int | None = None, what: str = "memories",
                 scope: str | None = None, since: str | None = None,
                 until: str | None = None) -> tuple[dict[str, Any], str | None]:
    """The ``context`` tool's answer: the recall block's parts, and the block as its text.
    Without ``scope``: the session's project's memories first, then the person's own (``user``)."""
    result = reads.answer(ContextQuery(message, budget=budget, what=what, memory_scope=tuple(as_list(scope)),
                                       since=since or None, until=until or None,
                                       prefer_scope=None if scope else reads.project_scope))
    data = {k: v for k, v in result.to_json().items() if k != "notices"}
    return data, result.text or "(nothing relevant in memory)"


def payload(data: dict[str, Any], text: str | None = None) -> tuple[str, dict[str, Any]]:
    """(text, structured content) of a tool result: the JSON unless ``text``.

    Every string in it is redacted on its way out (a credential in a note's
    path or a link's name is not in the index's redacted text)."""
    data = redact_tree(data)
    text = json.dumps(data, ensure_ascii=False, indent=1, default=str) if text is None else redact(text)[0]
    structured: dict[str, Any] = json.loads(json.dumps(data, default=str))
    return text, structured


#: The tools :func:`early_call` may answer, and the function that does.
EARLY_TOOLS: dict[str, Callable[..., tuple[dict[str, Any], str | None]]] = {
    "search": search_data,
    "context": context_data,
}


def _fits(schema: Any, value: Any) -> bool:
    """Whether ``value`` is plainly one ``schema`` allows (no coercion: "5"
    for an integer is pydantic's to judge). A keyword this does not know
    makes it say no."""
    if not isinstance(schema, dict):
        return False
    if "anyOf" in schema:
        return any(_fits(s, value) for s in schema["anyOf"])
    known = {"type", "enum", "minimum", "maximum", "items", "description", "title", "default"}
    if set(schema) - known or ("enum" in schema and value not in schema["enum"]):
        return False
    kind = schema.get("type")
    if kind == "string":
        return isinstance(value, str)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list) and all(_fits(schema.get("items"), v) for v in value)
    if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return schema.get("minimum", value) <= value <= schema.get("maximum", value)
    return False


def checked_arguments(schema: Any, args: Any) -> dict[str, Any] | None:
    """``args`` with the defaults the schema gives the rest (None for an
    optional one listed without a default, as :mod:`.mcp_schema` lists them),
    when every one is a property of the schema that plainly allows its value
    and nothing required is missing; else None (the SDK is to judge them)."""
    if not isinstance(schema, dict) or not isinstance(args, dict) or schema.get("type") != "object":
        return None
    props = schema.get("properties")
    if not isinstance(props, dict) or any(name not in props or not _fits(props[name], v) for name, v in args.items()):
        return None
    out = dict(args)
    required = schema.get("required") or []
    for name, prop in props.items():
        if name not in out:
            if name in required or not isinstance(prop, dict):
                return None
            # An optional argument listed without a default is one whose default is None (mcp_schema).
            out[name] = prop.get("default")
    return out


class NotWarm(Exception):
    """No daemon answered: the SDK's server answers it, once it has loaded."""


def session_project(store: MemoryStore, given: str | None = None, *, here: bool = True) -> Project | None:
    """The project the server's sessions work in: ``given`` (``memvault mcp
    --project PATH``), else, when ``here`` (a stdio server, which the agent's
    client starts in its working folder) and ``agents.project_scope`` is on,
    the working folder's (:func:`memvault.store.project.project_at`)."""
    import os

    from memvault.store.project import project_at

    if given:
        return project_at(given)
    if not here or not store.settings.agents.project_scope:
        return None
    return project_at(os.getcwd())


class DaemonReads:
    """:class:`Reads` answered by the running daemon alone (:func:`early_call`)."""

    def __init__(self, store: MemoryStore, read_only: bool, project: Project | None = None) -> None:
        self.store = store
        self.read_only = read_only
        self.project_scope = project.scope if project is not None else None

    def answer(self, q: SearchQuery | ContextQuery) -> Any:
        """The daemon's answer to ``q``; :class:`NotWarm` when none comes."""
        from memvault.daemon.client import answer

        if self.read_only and q.record:
            q = dataclasses.replace(q, record=False)  # a read-only server records no recall either

        def not_warm(_q: Any) -> Any:
            raise NotWarm

        return answer(self.store, q, local=not_warm)

    def versions(self, ids: list[str]) -> dict[str, int]:
        """The current version of each memory in ``ids`` (read from the index)."""
        return self.store.current_versions(ids)


def early_call(store: MemoryStore, read_only: bool,
               project: Project | None = None) -> Callable[[dict[str, Any], Any], dict[str, Any] | None]:
    """What :func:`.mcp_boot.serve_stdio` calls for a ``tools/call`` that comes
    before the SDK has loaded: ``(tool list, params)`` to the result the SDK
    would send, or None to leave the call to the SDK (module docstring)."""
    reads = DaemonReads(store, read_only, project)

    def call(listed: dict[str, Any], params: Any) -> dict[str, Any] | None:
        if not isinstance(params, dict) or params.get("name") not in EARLY_TOOLS:
            return None
        name = params["name"]
        schema = next((t.get("inputSchema") for t in listed.get("tools", [])
                       if isinstance(t, dict) and t.get("name") == name), None)
        args = checked_arguments(schema, params.get("arguments", {}))
        if args is None:
            return None
        try:
            text, structured = payload(*EARLY_TOOLS[name](reads, **args))
        except Exception:  # noqa: BLE001 - no daemon, or a failure: the SDK answers, and reports it
            return None
        return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}

    return call
