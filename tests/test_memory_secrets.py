"""Secrets in memories: `add`, `update`, memory notes edited in the vault and MCP `remember`
never put a credential in a file name, the index, a snippet, a context block or the text
that is embedded; a note a person typed is never rewritten to take it out."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.store.embedding import vectors
from memvault.store.memory_store import MemoryStore
from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery

GITHUB = "ghp_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7d"
OPENAI = "sk-proj-" + "Q2w3E4r5T6y7U8i9O0p1A2s3D4f5G6h7"
PASSWORD = "hunter2-Correct-Horse"
SECRETS = (GITHUB, OPENAI, PASSWORD)


def run(vault: Path, *args: str) -> object:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def assert_nowhere_in_the_index(store: MemoryStore, *secrets: str) -> None:
    """No trace, FTS row, chunk text (what is embedded), search snippet or context holds a secret."""
    con = store.con
    vectors.rechunk(con, [r[0] for r in con.execute("SELECT rowid FROM traces")])
    texts = [t for (t,) in con.execute("SELECT title || ' ' || content || ' ' || coalesce(path, '') FROM traces")]
    texts += [" ".join(str(c) for c in row) for row in con.execute("SELECT * FROM traces_fts")]
    texts += [t for _, t in vectors.chunk_texts(con, [r[0] for r in con.execute("SELECT id FROM chunks")]).values()]
    texts += [t for (t,) in con.execute("SELECT trace FROM state.memory_versions")]
    texts += [p for (p,) in con.execute("SELECT path FROM files")]
    for query in ("token", "GitHub token", "password", "deploy key"):
        for hit in store.search(SearchQuery(query, mode="keyword")).to_json()["hits"]:
            texts += [hit["snippet"], hit["passage"], hit["title"]]
        texts.append(store.context(ContextQuery(query, record=False)).to_json()["text"])
    for secret in secrets:
        assert not any(secret in t for t in texts), secret
        assert store.search(SearchQuery(secret, mode="keyword")).to_json()["hits"] == []


def test_add_and_update_store_redacted_and_say_so(vault: Path) -> None:
    r = run(vault, "add", f"My GitHub token is {GITHUB}", "--tag", "dev")
    assert r.exit_code == 0, r.output
    assert "1 secret in the content was stored as [redacted]" in r.output
    memory_id = r.output.split()[1]
    notes = list((vault / "Memory").rglob("*.md"))
    assert len(notes) == 1 and GITHUB not in notes[0].name and "ghp" not in notes[0].name
    assert GITHUB not in notes[0].read_text() and "[redacted]" in notes[0].read_text()
    r = run(vault, "update", memory_id, "--content", f"Deploy key {OPENAI}; db password: {PASSWORD}", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["redacted"] == 2 and any("2 secrets" in w for w in out["warnings"])
    with opened(vault) as store:
        assert_nowhere_in_the_index(store, *SECRETS)
        history = store.history(memory_id)
        assert all(s not in v.content for v in history for s in SECRETS)
    assert all(s not in p.read_text() for p in vault.rglob("*.md") for s in SECRETS)


def test_a_secret_typed_into_a_memory_note_is_indexed_redacted_and_the_note_left_as_typed(vault: Path) -> None:
    path = write(vault, "Memory/semantic/deploy.md",
                 f"---\ntype: semantic\n---\nThe deploy token: {GITHUB} goes in the CI settings.\n")
    with opened(vault) as store:
        store.sync()
        typed = path.read_text()
        assert_nowhere_in_the_index(store, GITHUB)
        found = store.search(SearchQuery("deploy token CI settings", mode="keyword")).to_json()["hits"]
        assert found and "[redacted]" in found[0]["passage"]
        memory_id = found[0]["id"]
        assert path.read_text() == typed  # reading never writes
        # A store-side change that leaves the content alone keeps the body as typed...
        result = store.update(memory_id, tags=["ci"])
        assert result.action == "updated"
        assert GITHUB in path.read_text() and "ci" in path.read_text()
        # ... and an edit in the vault is re-read, redacted, again.
        path.write_text(path.read_text().replace("CI settings", f"CI settings; backup {OPENAI}"))
        store.sync()
        assert_nowhere_in_the_index(store, GITHUB, OPENAI)
        assert store.show(memory_id).content.count("[redacted]") == 2


def test_mcp_remember_stores_a_secret_redacted(vault: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memvault.cli.mcp_server import build_server

    with opened(vault) as store:
        store.sync()

        async def main() -> tuple[object, object]:
            async with Client(build_server(store), mode="legacy") as c:
                added = await c.call_tool("remember", {"content": f"The OpenAI key is {OPENAI}", "type": "fact"})
                read = await c.call_tool("read", {"id": added.structured_content["id"]})
                return added, read

        added, read = asyncio.run(main())
        assert not added.is_error and "[redacted]" in added.content[0].text  # says so
        assert OPENAI not in json.dumps(added.structured_content) and OPENAI not in json.dumps(read.structured_content)
        assert OPENAI not in added.structured_content["path"]
        assert_nowhere_in_the_index(store, OPENAI)
    assert all(OPENAI not in p.read_text() and OPENAI not in p.name for p in vault.rglob("*.md"))
