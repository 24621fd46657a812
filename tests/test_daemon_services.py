"""The daemon's background services: warm queries over the socket, and embedding in the background."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from helpers import wait_for, write
from memvault.cli.main import cli
from test_daemon_support import running


def search(root: Path, *args: str) -> list[dict]:
    r = CliRunner().invoke(cli, ["--vault", str(root), "search", *args, "--json"])
    assert r.exit_code == 0, r.output
    return [json.loads(x) for x in r.stdout.splitlines()]


def test_daemon_serves_queries_and_embeds_new_notes(vault: Path) -> None:
    write(vault, "Sourdough.md", "Feed the starter with flour and water every morning before baking bread.\n")
    with running(vault, background=True) as (runner, _):
        assert runner._server is not None
        # a paraphrase with no shared words is found once the note is embedded
        hits = wait_for(lambda: search(vault, "morning baking habits", "--mode", "semantic"), timeout=60)
        assert hits[0]["path"] == "Sourdough.md"
        assert runner._server.requests >= 1  # answered by the daemon, not in-process
        write(vault, "Cycling.md", "Oil the bicycle chain after riding in the rain.\n")
        hits = wait_for(
            lambda: [h for h in search(vault, "bike maintenance", "--mode", "semantic") if h["path"] == "Cycling.md"],
            timeout=60,
        )
        assert hits
        def status() -> dict | None:
            r = CliRunner().invoke(cli, ["--vault", str(vault), "status", "--json"])
            state = json.loads(r.stdout)
            return state if state["embedding"] else None  # published about once a second

        state = wait_for(status)
        assert state["query_socket"] is True and state["embedding"]["running"] is True
    assert not (runner.vault.data_dir / "query.sock").exists()
