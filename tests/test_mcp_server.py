"""`memvault mcp`: driven by the MCP SDK's own client over stdio, a real subprocess.

One server process per test (start-up is the SDK import, about a second):
the handshake and the listings; every tool with good and bad arguments and
a write followed by a read; the same answers with a running daemon (which
then really answers); the fast ``initialize`` equal to the SDK's own.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from fixtures.retrieval import support  # noqa: E402
from helpers import opened  # noqa: E402
from mcp import Client, ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.types import Implementation  # noqa: E402

from memvault.cli.clients.mcp_boot import handshake_versions, initialize_result, server_version  # noqa: E402
from memvault.cli.mcp_server import build_server  # noqa: E402
from memvault.daemon.serve import QueryServer  # noqa: E402
from memvault.store.memory_store import MemoryStore  # noqa: E402
from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery

MEMVAULT = Path(sys.executable).parent / "memvault"
NOTE = "kepano-obsidian/Notes/Minimal Theme.md"  # an ordinary note a person wrote
READS = {"search", "context", "read", "links", "recent", "list", "history", "status", "reflect"}
WRITES = {"remember", "update", "forget", "restore", "merge", "consolidate"}


@pytest.fixture
def agent_vault(tmp_path: Path, memvault_env: Path) -> Path:
    """The labelled retrieval vault (with its vectors), indexed."""
    return support.private_vault(tmp_path)


def params(root: Path, *extra: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k.startswith("MEMVAULT_")}
    return StdioServerParameters(command=str(MEMVAULT), args=["--vault", str(root), "mcp", *extra], env=env)


def run_session(root: Path, errlog: Path, body: Callable[[ClientSession], Awaitable[Any]], *extra: str) -> Any:
    """Start the server, initialize as "pytest-agent", run ``body``; the server's stderr goes to ``errlog``."""
    async def main() -> Any:
        with open(errlog, "w") as err:
            async with stdio_client(params(root, *extra), errlog=err) as (read, write):
                async with ClientSession(read, write, client_info=Implementation(name="pytest-agent", version="1")) as s:
                    init = await s.initialize()
                    assert init.server_info.name == "memvault"
                    assert "context" in (init.instructions or "")
                    return await body(s)

    return asyncio.run(main())


def mid_of(out: dict[str, Any]) -> str:
    return out["remember"].structured_content["id"]


def text(result: Any) -> str:
    return result.content[0].text


def test_listings_tools_and_a_write_then_read(agent_vault: Path, tmp_path: Path) -> None:
    async def body(s: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        tools = {t.name: t for t in (await s.list_tools()).tools}
        out["tools"] = tools
        out["resources"] = [str(r.uri) for r in (await s.list_resources()).resources]
        out["templates"] = [t.uri_template for t in (await s.list_resource_templates()).resource_templates]
        out["prompts"] = [p.name for p in (await s.list_prompts()).prompts]
        call = s.call_tool
        out["search"] = await call("search", {"q": "low latency sound server for linux", "k": 3})
        out["context"] = await call("context", {"message": "how do I deploy the billing service"})
        out["remember"] = await call("remember", {"content": "Prefers kayaking trips in the fjords", "tags": "outdoors",
                                                  "scope": "travel"})
        mid = out["remember"].structured_content["id"]
        out["again"] = await call("remember", {"text": "Prefers kayaking trips in the fjords", "scope": "travel"})
        # Searchable by meaning at once, no daemon running (issue 35).
        out["meaning"] = await call("search", {"q": "paddling between steep Norwegian cliffs", "mode": "semantic",
                                               "what": "memories", "k": 3})
        out["read"] = await call("read", {"id": mid})
        out["list"] = await call("list", {"scope": "travel"})
        out["recent"] = await call("recent", {"since": "1 day", "what": "memories"})
        out["update"] = await call("update", {"id": mid, "version": 1, "content": "Prefers canoe trips in the fjords"})
        out["stale"] = await call("update", {"id": mid, "version": 1, "content": "Prefers rafting"})
        out["history"] = await call("history", {"id": mid})
        out["forget"] = await call("forget", {"id": mid, "reason": "test"})
        out["restore"] = await call("restore", {"id": mid})
        out["links"] = await call("links", {"id": out["search"].structured_content["hits"][0]["path"]})
        out["status"] = await call("status", {})
        out["note"] = await s.read_resource(f"memvault://note/{out['search'].structured_content['hits'][0]['path']}")
        out["memory"] = await s.read_resource(f"memvault://memory/{mid}")
        out["identity"] = await s.read_resource("memvault://identity")
        out["prompt"] = await s.get_prompt("recall", {"topic": "deploying the billing service"})
        return out

    errlog = tmp_path / "server.err"
    out = run_session(agent_vault, errlog, body)
    tools = out["tools"]
    assert set(tools) == READS | WRITES
    # Hints the protocol assumes are left out (mcp_schema): read-only false, destructive true.
    for name in READS:
        assert tools[name].annotations.read_only_hint is True, name
    for name in WRITES:
        assert not tools[name].annotations.read_only_hint, name
    assert tools["forget"].annotations.destructive_hint in (True, None)
    assert tools["remember"].annotations.destructive_hint is False
    assert all(t.annotations.open_world_hint is False for t in tools.values())  # a memory's world is closed
    assert "query" in tools["search"].input_schema["properties"] and tools["search"].description
    # The list an agent keeps in context (issue 35): under 6,000 characters as the wire carries it, every
    # tool and every argument the server takes still listed.
    listed = {"tools": [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools.values()]}
    assert len(json.dumps(listed, separators=(",", ":"))) < 6000
    with opened(agent_vault) as store:  # the SDK's own list, as it checks arguments against it
        from mcp.server import MCPServer

        taken = {t.name: t.input_schema for t in asyncio.run(MCPServer.list_tools(build_server(store)))}
    assert set(taken) == set(tools)
    for name, schema in taken.items():
        assert set(tools[name].input_schema["properties"]) == set(schema["properties"]), name
        assert tools[name].input_schema.get("required", []) == schema.get("required", []), name
        assert "\n" not in (tools[name].description or "")
        assert not any("title" in p for p in tools[name].input_schema["properties"].values()), name
    assert "memvault://identity" in out["resources"]
    assert {"memvault://memory/{id}", "memvault://note/{+path}"} <= set(out["templates"])
    assert out["prompts"] == ["recall"]
    for key in ("search", "context", "remember", "again", "read", "list", "recent", "update", "history", "forget",
                "restore", "links", "status"):
        assert not out[key].is_error, (key, text(out[key]))
    hits = out["search"].structured_content["hits"]
    assert hits and all("passage" in h for h in hits) and len(hits) <= 3
    assert "## Recalled Memory" in text(out["context"])
    assert out["again"].structured_content["action"] == "duplicate_of"
    assert mid_of(out) in [h["id"] for h in out["meaning"].structured_content["hits"]]  # consolidation: a duplicate returns the live one
    read = out["read"].structured_content
    assert read["content"] == "Prefers kayaking trips in the fjords" and read["version"] == 1
    assert read["source"] == "mcp:pytest-agent" and read["scope"] == "travel" and read["uri"].startswith("obsidian://")
    assert [i["id"] for i in out["list"].structured_content["items"]] == [read["id"]]
    assert read["id"] in [i["id"] for i in out["recent"].structured_content["items"]]
    assert out["update"].structured_content["version"] == 2
    assert out["stale"].is_error and "version 2, not 1" in text(out["stale"]) and "canoe" in text(out["stale"])
    versions = out["history"].structured_content["versions"]
    assert [v["id"] for v in versions] == [read["id"], read["id"] + ".v1"]
    assert versions[1]["reason"] == "updated by mcp:pytest-agent"  # which client changed it
    assert out["forget"].structured_content["action"] == "forgotten"
    assert out["restore"].structured_content["action"] == "restored"
    assert out["status"].structured_content["vault"] == str(agent_vault)
    assert "canoe" in out["memory"].contents[0].text
    assert out["note"].contents[0].text.startswith("# ")
    assert "identity" in out["identity"].contents[0].text.lower()
    assert "Recalled Memory" in out["prompt"].messages[0].content.text
    assert "Traceback" not in errlog.read_text()
    note = agent_vault / read["path"]
    assert "source: mcp:pytest-agent" in note.read_text()


def test_bad_arguments_are_one_sentence_tool_errors(agent_vault: Path, tmp_path: Path) -> None:
    bad = [
        ("search", {}), ("search", {"query": "x", "limit": 0}), ("search", {"query": "x", "what": "everything"}),
        ("context", {}), ("read", {}), ("read", {"id": "m-nope"}), ("read", {"path": "Nope.md"}),
        ("read", {"path": NOTE, "heading": "No such heading"}),
        ("update", {"id": NOTE, "version": 1, "content": "overwritten"}), ("forget", {"id": NOTE}),
        ("links", {"id": "nope"}), ("recent", {"since": "the other day"}), ("list", {"cursor": "garbage"}),
        ("list", {"sort": "size"}), ("history", {"id": "nope"}), ("remember", {"content": "  "}),
        ("remember", {"content": "x", "type": "colour"}), ("update", {"id": "m-nope", "version": 1, "content": "x"}),
        ("update", {"id": "m-sem-coffee", "version": 1}), ("forget", {"id": "nope"}), ("restore", {"id": "nope"}),
        ("no_such_tool", {}),
    ]

    async def body(s: ClientSession) -> list[Any]:
        out = [await s.call_tool(name, args) for name, args in bad]
        out.append(await s.call_tool("status", {}))  # the server is still there
        return out

    errlog = tmp_path / "server.err"
    note_bytes = (agent_vault / NOTE).read_bytes()
    results = run_session(agent_vault, errlog, body)
    assert (agent_vault / NOTE).read_bytes() == note_bytes  # no tool changes a person's note
    for (name, args), r in zip(bad, results):
        assert r.is_error, (name, args)
        message = text(r)
        assert "\n" not in message and len(message) < 300 and "Traceback" not in message, (name, message)
    assert "argument 'query' is required" in text(results[0])
    assert not results[-1].is_error
    assert "Traceback" not in errlog.read_text()


def test_update_refuses_a_change_based_on_a_version_a_person_edited_since(agent_vault: Path, tmp_path: Path) -> None:
    note = agent_vault / "Memory" / "semantic" / "m-sem-coffee.md"

    async def body(s: ClientSession) -> list[Any]:
        read = await s.call_tool("read", {"id": "m-sem-coffee"})
        version = read.structured_content["version"]
        # The person edits the note in Obsidian; no daemon has seen it yet.
        note.write_text(note.read_text().replace("oat milk flat whites", "green tea"), encoding="utf-8")
        refused = await s.call_tool("update", {"id": "m-sem-coffee", "version": version, "tags": ["drinks"]})
        again = await s.call_tool("read", {"id": "m-sem-coffee"})
        redone = await s.call_tool("update", {"id": "m-sem-coffee", "version": again.structured_content["version"],
                                              "tags": ["drinks"]})
        return [read, refused, again, redone]

    read, refused, again, redone = run_session(agent_vault, tmp_path / "err", body)
    assert refused.is_error and "green tea" in text(refused)
    assert again.structured_content["version"] == read.structured_content["version"] + 1
    assert not redone.is_error
    assert "green tea" in note.read_text() and "drinks" in note.read_text()  # the person's edit survives


def test_read_only_server_offers_read_tools_only_and_answers_from_the_index_as_it_is(
    agent_vault: Path, tmp_path: Path
) -> None:
    # A sync writes the vault (id lines, the history log): a read-only server
    # does not sync, and says the index is behind (test_mcp_read_only checks the bytes).
    (agent_vault / "Zeppelins.md").write_text("Written while no daemon ran: zeppelins over Lake Constance.\n")

    async def body(s: ClientSession) -> tuple[set[str], Any]:
        found = await s.call_tool("search", {"query": "zeppelins Lake Constance", "mode": "keyword"})
        return {t.name for t in (await s.list_tools()).tools}, found

    names, found = run_session(agent_vault, tmp_path / "err", body, "--read-only")
    assert names == READS
    assert found.structured_content["hits"] == []
    assert "a read-only server does not sync" in (tmp_path / "err").read_text()


def test_search_and_context_go_to_a_running_daemon(agent_vault: Path, tmp_path: Path) -> None:
    query, message = "components inside a hard disk", "how do I ship the billing service"
    with opened(agent_vault) as store:
        cold_hits = store.search(SearchQuery(query, limit=5)).to_json()["hits"]
        cold_block = store.context(ContextQuery(message, record=False)).to_json()["text"]
    srv = QueryServer(MemoryStore.open(str(agent_vault)))
    srv.start()
    try:
        async def body(s: ClientSession) -> list[Any]:
            return [await s.call_tool("search", {"query": query, "limit": 5}),
                    await s.call_tool("context", {"message": message})]

        async def listing(s: ClientSession) -> None:
            await s.list_tools()
            await s.send_ping()  # the SDK's tool list is kept: the next start answers before the SDK loads

        run_session(agent_vault, tmp_path / "err0", listing)
        # Answered before the SDK has loaded (mcp_reads.early_call), read by the SDK's client as its own.
        search, context = run_session(agent_vault, tmp_path / "err", body)
        assert srv.requests >= 2  # answered warm by the daemon
    finally:
        srv.stop()
        srv.store.close()
    warm = search.structured_content["hits"]
    assert [h["id"] for h in warm] == [h["id"] for h in cold_hits]
    assert text(context) == cold_block


def test_the_first_calls_answered_before_the_sdk_loads_are_the_sdks(agent_vault: Path) -> None:
    """A tools/call that comes while the SDK loads is answered by mcp_reads when
    the daemon answers it: the same result the SDK's server gives, or None
    (left to the SDK) for anything the tool's schema does not plainly allow."""
    from memvault.cli.clients.mcp_reads import early_call

    calls = [("search", {"query": "components inside a hard disk", "limit": 3}),
             ("search", {"query": "billing", "what": "notes", "types": ["note"], "mode": "semantic"}),
             ("search", {"query": "editor theme", "scope": "user", "tags": ["ui", "editor"]}),
             ("context", {"message": "how do I ship the billing service", "budget": 300}),
             ("context", {"message": "zzzz qqqq"})]
    refused = [("search", {"q": "an alias"}), ("search", {"query": "x", "limit": "5"}),
               ("search", {"query": "x", "limit": 0}), ("search", {"query": "x", "what": "bogus"}),
               ("search", {}), ("context", {"message": "x", "budget": True}), ("read", {"id": "m-1"}),
               ("search", {"query": "billing", "mode": "keyword"}),  # no model needed: not the daemon's to answer
               ("search", {"query": "x", "scope": None})]  # a null the listed schema leaves out: the SDK takes it
    srv = QueryServer(MemoryStore.open(str(agent_vault)))
    with opened(agent_vault) as store:
        early = early_call(store, read_only=True)  # read-only: context records nothing, both answers alike
        async def sdk() -> tuple[dict[str, Any], list[dict[str, Any]]]:
            async with Client(build_server(store, read_only=True), mode="legacy") as c:
                listed = (await c.list_tools()).model_dump(by_alias=True, exclude_none=True, mode="json")
                return listed, [(await c.call_tool(name, args)).model_dump(by_alias=True, exclude_none=True,
                                                                           mode="json") for name, args in calls]

        listed, _ = asyncio.run(sdk())
        assert early(listed, {"name": "search", "arguments": {"query": "x"}}) is None  # no daemon: the SDK's call
        srv.start()
        try:
            _, theirs = asyncio.run(sdk())
            ours = [early(listed, {"name": name, "arguments": args}) for name, args in calls]
            assert all(early(listed, {"name": name, "arguments": args}) is None for name, args in refused)
        finally:
            srv.stop()
            srv.store.close()
    for (name, args), mine, sdks in zip(calls, ours, theirs):
        sdks.pop("resultType", None)  # the client model's own field (not on the wire in the legacy protocol)
        assert mine == sdks, (name, args)


def test_the_fast_initialize_answer_is_the_sdks(agent_vault: Path) -> None:
    import mcp_types.version

    assert handshake_versions() == mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS
    with opened(agent_vault) as store:
        async def main() -> tuple[Any, ...]:
            async with Client(build_server(store), mode="legacy") as c:
                return c.protocol_version, c.server_info, c.server_capabilities, c.instructions

        version, info, capabilities, instructions = asyncio.run(main())
    fast = initialize_result({"protocolVersion": version}, handshake_versions(), server_version())
    assert fast["protocolVersion"] == version
    assert fast["serverInfo"] == info.model_dump(by_alias=True, exclude_none=True)
    assert fast["capabilities"] == capabilities.model_dump(by_alias=True, exclude_none=True)
    assert fast["instructions"] == instructions
    assert initialize_result({"protocolVersion": "1999-01-01"}, handshake_versions(), "1")["protocolVersion"] == \
        mcp_types.version.LATEST_HANDSHAKE_VERSION
    assert json.dumps(fast)  # plain JSON


def test_an_sdk_choosing_another_version_than_the_fast_answer_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    from memvault.cli.clients.mcp_boot import DropReply

    class Sink:
        def __init__(self) -> None:
            self.frames: list[str] = []

        async def write(self, text: str) -> None:
            self.frames.append(text)

    for sdk_chose, warned in (("2025-11-25", False), ("2099-01-01", True)):
        caplog.clear()
        sink = Sink()
        drop = DropReply(sink, {json.dumps(1): ("initialize", "2025-11-25")})
        asyncio.run(drop.write(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": sdk_chose}})))
        asyncio.run(drop.write(json.dumps({"jsonrpc": "2.0", "id": 2, "result": {}})))
        assert [json.loads(f)["id"] for f in sink.frames] == [2]  # the replayed answer is dropped either way
        assert ("HANDSHAKE_VERSIONS" in caplog.text) is warned


def test_a_cold_start_answers_tools_list_from_the_sdks_last_answer(agent_vault: Path, tmp_path: Path,
                                                                  memvault_env: Path) -> None:
    """The first start keeps the SDK's tool list; the next answers it before the
    SDK has loaded. A stale one (same key, other tools) is answered once, logged, replaced."""
    from memvault.cli.clients.mcp_boot import tools_key

    async def listing(s: ClientSession) -> list[dict[str, Any]]:
        tools = (await s.list_tools()).tools
        await s.send_ping()  # answered by the SDK, after the replayed tools/list: the comparison is done
        return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]

    cache = memvault_env / "mcp-tools.json"
    first = run_session(agent_vault, tmp_path / "1.err", listing)
    saved = json.loads(cache.read_text())[tools_key(False)]
    assert [t["name"] for t in saved["tools"]] == [t["name"] for t in first] and len(first) > 5
    cache.write_text(json.dumps({tools_key(False): {"tools": saved["tools"][:1]}}))
    second = run_session(agent_vault, tmp_path / "2.err", listing)
    assert [t["name"] for t in second] == [first[0]["name"]]  # the cached list, answered before the SDK loaded
    assert "cached tool list answered at start was stale" in (tmp_path / "2.err").read_text()
    assert json.loads(cache.read_text())[tools_key(False)] == saved
    assert run_session(agent_vault, tmp_path / "3.err", listing) == first
    assert "stale" not in (tmp_path / "3.err").read_text() and "Traceback" not in (tmp_path / "3.err").read_text()


def test_http_transport_needs_the_bearer_token(agent_vault: Path, tmp_path: Path) -> None:
    import socket
    import subprocess
    import time
    import urllib.error
    import urllib.request

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)
    token = subprocess.run([str(MEMVAULT), "--vault", str(agent_vault), "mcp", "token"], capture_output=True,
                           text=True, env=env, check=True).stdout.strip()
    token_file = next(Path(env["MEMVAULT_HOME"]).glob("vaults/*/mcp_token"))
    assert len(token) > 30 and token_file.stat().st_mode & 0o777 == 0o600
    with open(tmp_path / "http.err", "w") as err:
        server = subprocess.Popen([str(MEMVAULT), "--vault", str(agent_vault), "mcp", "--http", str(port),
                                   "--read-only"], stdout=subprocess.DEVNULL, stderr=err, env=env)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"), timeout=2)
            except urllib.error.HTTPError as exc:
                assert exc.code == 401  # listening, and refusing a request without the token
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "http.err").read_text()
                time.sleep(0.2)

        async def main() -> tuple[set[str], Any, list[Any]]:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
                async with Client(streamable_http_client(url, http_client=http), mode="legacy") as c:
                    names = {t.name for t in (await c.list_tools()).tools}
                    told = [await c.call_tool("status", {}), await c.call_tool("read", {"path": "../../x.md"})]
                    return names, await c.call_tool("search", {"query": "Dolby Atmos", "mode": "keyword"}), told

        names, hits, told = asyncio.run(main())
        assert names == READS and not hits.is_error and hits.structured_content["hits"]
        # A remote client is told no path of the server (test_mcp_remote_paths has the rest).
        status, error = told
        assert status.structured_content["vault"] == agent_vault.name and error.is_error
        for answer in (status, error, hits):
            shown = text(answer) + json.dumps(answer.structured_content)
            assert str(tmp_path) not in shown and env["MEMVAULT_HOME"] not in shown, shown
    finally:
        server.terminate()
        server.wait(30)


def test_remember_of_a_similar_claim_stores_it_and_names_the_neighbour(agent_vault: Path, tmp_path: Path) -> None:
    """Issue 22: a guess never drops a write. "Prefers dogs to cats" after
    "Prefers cats to dogs" is another claim: stored, with the first named."""
    async def body(s: ClientSession) -> tuple[Any, Any, Any]:
        first = await s.call_tool("remember", {"content": "Prefers cats to dogs", "scope": "pets"})
        second = await s.call_tool("remember", {"content": "Prefers dogs to cats", "scope": "pets"})
        same = await s.call_tool("remember", {"content": "prefers cats to dogs!", "scope": "pets"})
        return first, second, same

    first, second, same = run_session(agent_vault, tmp_path / "err.log", body)
    a, b = first.structured_content, second.structured_content
    assert a["action"] == b["action"] == "added" and a["id"] != b["id"]
    assert [n["id"] for n in b["similar_to"]][:1] == [a["id"]]
    assert f"similar to {a['id']}" in text(second)
    assert (same.structured_content["action"], same.structured_content["id"]) == ("duplicate_of", a["id"])
