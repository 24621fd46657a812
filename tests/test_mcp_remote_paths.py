"""Over HTTP (``memvault mcp --http``) no answer names an absolute path of
the server machine: vault-relative paths, the vault's name, or ``<path>``.

In-process here through the SDK's own client (cheap); test_mcp_server's
HTTP test checks ``status`` and an error over the real transport too.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import opened

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

from memvault.cli.clients.mcp_remote import PathHider  # noqa: E402
from memvault.cli.mcp_server import build_server  # noqa: E402


def everything(result: Any) -> str:
    """All a client is told by one answer: its texts and its structured content."""
    parts = [getattr(c, "text", "") for c in getattr(result, "content", [])]
    parts += [json.dumps(getattr(result, "structured_content", None))]
    return "\n".join(parts)


def test_a_remote_client_is_told_no_path_of_the_server(vault: Path, tmp_path: Path, memvault_env: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "Secret.md").write_text("secret\n")
    (vault / "Secret.md").symlink_to(outside / "Secret.md")
    (vault / "Projects").mkdir()
    (vault / "Projects" / "Alpha.md").write_text("# Alpha\n\nThe quokka ships on Fridays.\n")
    server_paths = [str(tmp_path), os.path.realpath(tmp_path), str(memvault_env)]

    with opened(vault) as store:
        store.sync()

        async def session(remote: bool) -> dict[str, Any]:
            async with Client(build_server(store, remote=remote), mode="legacy") as c:
                out: dict[str, Any] = {"status": await c.call_tool("status", {}),
                                       "outside": await c.call_tool("read", {"path": "Secret.md"}),
                                       "dotdot": await c.call_tool("read", {"path": "../../etc/passwd"}),
                                       "search": await c.call_tool("search", {"query": "quokka", "mode": "keyword"}),
                                       "read": await c.call_tool("read", {"path": "Projects/Alpha.md"})}
                try:
                    await c.read_resource("memvault://note/Secret.md")
                except Exception as exc:  # the SDK raises the server's error
                    out["resource"] = str(exc)
                return out

        local, remote = asyncio.run(session(False)), asyncio.run(session(True))
    assert local["status"].structured_content["vault"] == str(vault)  # stdio: beside its client, told as it is
    assert any(p in everything(local["outside"]) for p in server_paths)
    for name, result in remote.items():
        told = result if isinstance(result, str) else everything(result)
        assert not any(p in told for p in server_paths), (name, told)
    assert remote["status"].structured_content["vault"] == vault.name
    assert remote["outside"].is_error and "Secret.md: leads outside the vault (to <path>)" in everything(
        remote["outside"])
    assert "Secret.md" in remote["resource"] and "<path>" in remote["resource"]
    assert remote["search"].structured_content["hits"][0]["path"] == "Projects/Alpha.md"
    assert remote["read"].structured_content["path"] == "Projects/Alpha.md"
    assert "The quokka ships on Fridays." in everything(remote["read"])


def test_the_hider_takes_off_only_whole_folders() -> None:
    hide = PathHider(Path("/srv/Notes"), "Notes", Path("/home/u/.local/share/memvault"), Path("/home/u"))
    assert hide.text("/srv/Notes/Projects/a.md") == "Projects/a.md"
    assert hide.text("vault /srv/Notes has no index") == "vault Notes has no index"
    assert hide.text("/srv/Notes2/x.md and /srv/Notes.bak") == "/srv/Notes2/x.md and /srv/Notes.bak"
    assert hide.text("/home/u/.local/share/memvault/vaults/n/query.sock") == "<memvault data>/vaults/n/query.sock"
    assert hide.text("/home/u/.config/memvault/config.toml") == "~/.config/memvault/config.toml"
    assert hide.error("x.md: leads outside the vault (to /etc/passwd); refused") == \
        "x.md: leads outside the vault (to <path>); refused"
    assert hide.error("see http://host/a/b and/or a 1/2 split, ~/x") == "see http://host/a/b and/or a 1/2 split, ~/x"
    assert hide.tree({"vault": "/srv/Notes", "list": ["/srv/Notes/a.md", 3]}) == {"vault": "Notes", "list": ["a.md", 3]}
