"""Project scope, automatically (issue 36 item 5).

A session works in a project: its git root, else its working folder; the
project's scope is the root's name, or what a ``.memvault`` file says.
Hooks and MCP calls take it unless told otherwise: ``remember`` writes
there, ``context`` and session start prefer it, then the person's own
memories (``user``), and leave other projects' out; hits show ``scope``.
``agents.project_scope = false`` turns it off.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.store.project import project_at


def run(root: Path, *args: str, input: str | None = None) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, ["--vault", str(root), *args], input=input)
    return r.exit_code, r.stdout, r.stderr


def test_the_project_of_a_folder(tmp_path: Path) -> None:
    repo = tmp_path / "billing-api"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    assert project_at(repo / "src" / "deep") == project_at(repo)
    found = project_at(repo / "src")
    assert found is not None and (found.root, found.scope, found.memory_off) == (repo.resolve(), "billing-api", False)
    plain = tmp_path / "notes"
    plain.mkdir()
    assert project_at(plain).scope == "notes"  # type: ignore[union-attr]  # no git: the folder itself
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: /elsewhere\n")  # a worktree's .git is a file
    assert project_at(worktree / ".").root == worktree.resolve()  # type: ignore[union-attr]
    (repo / ".memvault").write_text("# the team's name for it\nscope:  Billing API \nmemory: off\n")
    found = project_at(repo / "src" / "deep")
    assert found is not None and (found.scope, found.memory_off) == ("Billing API", True)
    (repo / "src" / ".memvault").write_text("scope: billing-core\n")  # the nearest one counts
    assert project_at(repo / "src" / "deep").scope == "billing-core"  # type: ignore[union-attr]
    (repo / "src" / ".memvault").write_bytes(b"\xff\xfe\x00binary" * 2000)
    assert project_at(repo / "src").scope == "billing-api"  # type: ignore[union-attr]  # junk: ignored
    assert project_at(None) is None and project_at(tmp_path / "missing") is None


@pytest.fixture
def projects(vault: Path, tmp_path: Path) -> dict[str, Path]:
    """Two projects with memories of their own and one of the person's, indexed."""
    atlas, zephyr = tmp_path / "code" / "atlas", tmp_path / "code" / "zephyr"
    for p in (atlas, zephyr):
        (p / ".git").mkdir(parents=True)
    for text, scope in (("Deploys need a green build and a second reviewer", "atlas"),
                        ("Deploys go out from the release branch only", "zephyr"),
                        ("Prefers small deploys early in the week", "user")):
        write(vault, f"Memory/semantic/{scope}.md", f"---\ntype: semantic\nscope: {scope}\n---\n{text}\n")
    with opened(vault) as v:
        v.sync(embed=False)
    return {"atlas": atlas, "zephyr": zephyr}


def test_cli_add_and_context_take_a_project(vault: Path, projects: dict[str, Path]) -> None:
    code, out, _ = run(vault, "add", "Atlas deploys run the smoke suite first", "--project",
                       str(projects["atlas"] / "."), "--json")
    assert code == 0 and json.loads(out)["path"].startswith("Memory/semantic/")
    code, out, _ = run(vault, "list", "--scope", "atlas", "--json")
    assert len(out.splitlines()) == 2
    code, _, err = run(vault, "add", "x", "--project", str(projects["atlas"]), "--scope", "user")
    assert code == 2 and "not both" in err
    code, out, _ = run(vault, "context", "how do deploys work", "--project", str(projects["atlas"]), "--json",
                       "--no-record")
    items = json.loads(out)["items"]
    texts = [i["text"] for i in items]
    assert any("second reviewer" in t for t in texts) and any("early in the week" in t for t in texts)
    assert not any("release branch" in t for t in texts)  # another project's
    first_user = next(n for n, t in enumerate(texts) if "early in the week" in t)
    assert all("atlas" in (i.get("source") or "") or n < first_user for n, i in enumerate(items)
               if "second reviewer" in i["text"] or "smoke suite" in i["text"])
    code, out, _ = run(vault, "search", "deploys", "--json", "--mode", "keyword")
    scopes = {json.loads(line)["scope"] for line in out.splitlines()}
    assert scopes == {"atlas", "zephyr", "user"}  # a hit shows its scope


def _hook(vault: Path, event: str, data: dict[str, Any], env: dict[str, str] | None = None) -> str:
    r = CliRunner().invoke(cli, ["--vault", str(vault), "hook", event, "--timeout", "30"], input=json.dumps(data),
                           env=env)
    assert r.exit_code == 0
    return r.stdout


def test_the_prompt_hook_prefers_the_session_project(vault: Path, projects: dict[str, Path]) -> None:
    data = {"prompt": "how do deploys work", "cwd": str(projects["zephyr"])}
    text = _hook(vault, "prompt", data)
    assert "release branch" in text and "early in the week" in text and "second reviewer" not in text
    assert text.index("release branch") < text.index("early in the week")  # the project's first
    off = _hook(vault, "prompt", data, env={"MEMVAULT_AGENTS_PROJECT_SCOPE": "false"})
    assert "second reviewer" in off and "release branch" in off  # the switch: every scope, as before
    start = _hook(vault, "session-start", {"cwd": str(projects["zephyr"])})
    assert "release branch" in start and "second reviewer" not in start


def test_mcp_remember_and_context_take_the_session_project(vault: Path, projects: dict[str, Path]) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memvault.cli.mcp_server import build_server

    with opened(vault) as store:
        async def main() -> list[Any]:
            async with Client(build_server(store, project=project_at(projects["atlas"])), mode="legacy") as c:
                return [
                    await c.call_tool("remember", {"content": "Atlas uses Postgres 16"}),
                    await c.call_tool("remember", {"content": "Is called Noor", "type": "identity"}),
                    await c.call_tool("remember", {"content": "Likes rye bread", "scope": "user"}),
                    await c.call_tool("context", {"message": "how do deploys work"}),
                    await c.call_tool("context", {"message": "how do deploys work", "scope": "zephyr"}),
                    await c.call_tool("search", {"query": "deploys", "mode": "keyword"}),
                    await c.call_tool("status", {}),
                ]

        added, identity, user, ctx, other, hits, status = asyncio.run(main())
        scopes = {t.id: t.scope for t in store.list(limit=50).items}
    assert scopes[added.structured_content["id"]] == "atlas"
    assert scopes[identity.structured_content["id"]] == "user"  # who the person is holds everywhere
    assert scopes[user.structured_content["id"]] == "user"
    block = ctx.content[0].text
    assert "second reviewer" in block and "release branch" not in block
    assert "release branch" in other.content[0].text and "second reviewer" not in other.content[0].text
    assert {h["scope"] for h in hits.structured_content["hits"]} >= {"atlas", "zephyr", "user"}
    assert status.structured_content["session_project"]["scope"] == "atlas"


def test_a_stdio_server_takes_its_working_folders_project(vault: Path, projects: dict[str, Path]) -> None:
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items() if k.startswith("MEMVAULT_")}
    exe = str(Path(sys.executable).parent / "memvault")
    params = StdioServerParameters(command=exe, args=["--vault", str(vault), "mcp"], env=env,
                                   cwd=str(projects["zephyr"]))

    async def main() -> Any:
        async with stdio_client(params) as (read, write_), ClientSession(read, write_) as s:
            await s.initialize()
            added = await s.call_tool("remember", {"content": "Zephyr pins Node 22"})
            return added, await s.call_tool("status", {})

    added, status = asyncio.run(main())
    assert status.structured_content["session_project"]["scope"] == "zephyr"
    with opened(vault) as v:
        assert v.show(added.structured_content["id"]).scope == "zephyr"
