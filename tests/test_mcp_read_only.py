"""`memvault mcp --read-only` writes nothing, and a symlink out of the vault is never served.

Driven by the MCP SDK's own client over stdio against a real server
subprocess, as in test_mcp_server.py: a read-only session that uses every
read tool, the resources and the prompt leaves the durable state and the
recall statistics as they were (also when a running daemon answers
``context``), and a write tool answers that the server is read-only.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from fixtures.retrieval import support  # noqa: E402
from helpers import opened  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.types import Implementation  # noqa: E402

from memvault.daemon.serve import QueryServer  # noqa: E402
from memvault.store.memory_store import MemoryStore  # noqa: E402

MEMVAULT = Path(sys.executable).parent / "memvault"
MESSAGE = "how do I ship the billing service"


@pytest.fixture
def agent_vault(tmp_path: Path, memvault_env: Path) -> Path:
    """The labelled retrieval vault (with its vectors), indexed."""
    return support.private_vault(tmp_path)


def run_session(root: Path, errlog: Path, body: Callable[[ClientSession], Awaitable[Any]], *extra: str) -> Any:
    """Start ``memvault mcp`` on ``root``, initialize, run ``body``."""
    env = {k: v for k, v in os.environ.items() if k.startswith("MEMVAULT_")}
    params = StdioServerParameters(command=str(MEMVAULT), args=["--vault", str(root), "mcp", *extra], env=env)

    async def main() -> Any:
        with open(errlog, "w") as err:
            async with stdio_client(params, errlog=err) as (read, write):
                async with ClientSession(read, write, client_info=Implementation(name="pytest-agent", version="1")) as s:
                    await s.initialize()
                    return await body(s)

    return asyncio.run(main())


def durable_state(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the durable state, plus the index's recall
    columns and its meta table (the time of the last sync)."""
    with opened(root) as store:
        con = store.read_con()
        tables = [r[0] for r in con.execute("SELECT name FROM state.sqlite_master WHERE type = 'table'")]
        out = {t: sorted(map(tuple, con.execute(f'SELECT * FROM state."{t}"')), key=repr) for t in tables}
        out["index recall"] = sorted(map(tuple, con.execute(
            "SELECT id, retrieval_count, last_access, strength FROM traces")), key=repr)
        out["index meta"] = sorted(map(tuple, con.execute("SELECT key, value FROM main.meta")))
    return out


async def every_read(s: ClientSession) -> dict[str, Any]:
    """Each read tool, the resources and the prompt once; then a write tool."""
    out: dict[str, Any] = {"context": await s.call_tool("context", {"message": MESSAGE, "what": "all"})}
    hits = (await s.call_tool("search", {"query": "billing service deploy", "limit": 5})).structured_content["hits"]
    memory = next(h["id"] for h in hits if h["id"].startswith("m-"))
    for name, args in (("read", {"id": memory}), ("links", {"id": memory}), ("history", {"id": memory}),
                       ("recent", {"since": "3650 days"}), ("list", {}), ("status", {})):
        out[name] = await s.call_tool(name, args)
    await s.read_resource(f"memvault://memory/{memory}")
    await s.read_resource("memvault://identity")
    out["prompt"] = await s.get_prompt("recall", {"topic": "deploying the billing service"})
    out["remember"] = await s.call_tool("remember", {"content": "Prefers kayaking in the fjords"})
    return out


def check_read_only_session(out: dict[str, Any], errlog: Path) -> None:
    """Every read answered; the write refused, saying why."""
    for name in ("context", "read", "links", "history", "recent", "list", "status"):
        assert not out[name].is_error, (name, out[name].content[0].text)
    assert "## Recalled Memory" in out["context"].content[0].text  # something was recalled, and not recorded
    assert out["remember"].is_error
    assert "this server is read-only: remember is not available" in out["remember"].content[0].text
    assert "Traceback" not in errlog.read_text()


def vault_files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and folder of the vault: its bytes (empty for a folder) and mtime."""
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else b"", p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


def test_a_read_only_session_writes_no_recall_statistics_and_refuses_writes_saying_so(
    agent_vault: Path, tmp_path: Path
) -> None:
    # The vault changed since its last sync, as a catch-up sync would write
    # into: a memory note without an id line, a new note, an edited one.
    (agent_vault / "Memory" / "semantic" / "Kayaks.md").write_text("Prefers kayaking in the fjords.\n")
    (agent_vault / "Fresh note.md").write_text("# Fresh\n\nThe quokka pond ships billing.\n")
    edited = next(p for p in sorted((agent_vault / "Memory" / "semantic").glob("*.md")) if p.name != "Kayaks.md")
    edited.write_text(edited.read_text() + "\nOne more line.\n")
    before, files = durable_state(agent_vault), vault_files(agent_vault)
    out = run_session(agent_vault, tmp_path / "err", every_read, "--read-only")
    assert durable_state(agent_vault) == before
    assert vault_files(agent_vault) == files  # not a byte, not an mtime: no id line, no history log
    check_read_only_session(out, tmp_path / "err")


def test_a_read_only_session_answered_by_a_running_daemon_writes_nothing_either(
    agent_vault: Path, tmp_path: Path
) -> None:
    before = durable_state(agent_vault)
    srv = QueryServer(MemoryStore.open(str(agent_vault)), warm=False)
    srv.start()
    try:
        out = run_session(agent_vault, tmp_path / "err", every_read, "--read-only")
        assert srv.requests >= 2  # context (and the prompt) went to the daemon
    finally:
        srv.stop()
        srv.store.close()
    assert durable_state(agent_vault) == before
    check_read_only_session(out, tmp_path / "err")


def test_a_symlink_out_of_the_vault_is_not_read_searched_or_recalled(agent_vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "Secret.md").write_text("The billing service ships from the zanzibar quokka pond.\n")
    (agent_vault / "Secret.md").symlink_to(outside / "Secret.md")
    (agent_vault / "Elsewhere").symlink_to(outside, target_is_directory=True)

    async def body(s: ClientSession) -> list[Any]:
        message = "where does the billing service ship from, zanzibar quokka pond"
        return [await s.call_tool("search", {"query": "zanzibar quokka", "mode": "keyword"}),
                await s.call_tool("context", {"message": message, "what": "all"}),
                await s.call_tool("read", {"path": "Secret.md"}),
                await s.call_tool("read", {"path": "Elsewhere/Secret.md"})]

    search, context, read, read_folder = run_session(agent_vault, tmp_path / "err", body)
    assert search.structured_content["hits"] == []
    assert "zanzibar" not in context.content[0].text
    assert read.is_error and "Secret.md: leads outside the vault" in read.content[0].text
    assert read_folder.is_error and "leads outside the vault" in read_folder.content[0].text

