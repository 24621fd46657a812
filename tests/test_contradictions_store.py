"""Contradictions as people's memory holds them: claims in one store, never
pair by pair (issue 33), and at write time (issue 36: ``add``, ``update``
and MCP ``remember`` answer ``contradicts``; the newer claim is stored and
the older one flagged at once)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import write

from memvault.cli.main import cli

#: Issue 33's reproduction: six single-slot changes a store of twelve memories missed (older, newer).
ISSUE_33 = [
    ("Partner is named Rui", "Partner is named Tomas"),
    ("Supports Benfica", "Supports Sporting"),
    ("The desktop runs Fedora", "The desktop runs Windows 10"),
    ("Leases the car", "Owns the car"),
    ("Works at Siemens", "Left Siemens and now works at Bosch"),
    ("Lives in Porto", "Lives in Lisbon"),
]


@pytest.fixture
def ticking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's clock moves a minute at every reading: each ``add`` is
    later than the one before (the store keeps whole seconds)."""
    from memvault.store.db import records as rec

    moment = [datetime(2026, 10, 1, 9, 0, tzinfo=timezone.utc)]

    def now_iso() -> str:
        moment[0] += timedelta(minutes=1)
        return moment[0].isoformat()

    monkeypatch.setattr(rec, "now_iso", now_iso)


def _run(runner: CliRunner, vault: Path, *args: str) -> list[dict[str, Any]]:
    done = runner.invoke(cli, ["--vault", str(vault), *args, "--json"])
    assert done.exit_code == 0, done.output
    return [json.loads(line) for line in done.output.splitlines() if line.startswith("{")]


def _flags(runner: CliRunner, vault: Path) -> dict[frozenset[str], dict]:
    return {frozenset(a["ids"]): a for a in _run(runner, vault, "consolidate", "--dry-run")
            if a.get("kind") == "contradiction"}


def test_issue_33_the_plan_judges_every_pair_a_store_holds(vault: Path) -> None:
    """The twelve as memory notes (written in Obsidian, say: no write-time
    check), older ones a month before: the plan flags each pair, the newer
    over the older, and nothing else."""
    for k, (older, newer) in enumerate(ISSUE_33):
        for mid, text, day in ((f"m-old{k}", older, "2026-09-01"), (f"m-new{k}", newer, "2026-10-01")):
            write(vault, f"Memory/semantic/{mid}.md", f"---\nid: {mid}\ntype: semantic\nscope: user\n"
                  f"created: '{day}T09:0{k}:00+00:00'\nupdated: '{day}T09:0{k}:00+00:00'\n---\n{text}\n")
    runner = CliRunner()
    assert runner.invoke(cli, ["--vault", str(vault), "sync", "--no-embed"]).exit_code == 0
    flags = _flags(runner, vault)
    for k, pair in enumerate(ISSUE_33):
        found = flags.get(frozenset((f"m-old{k}", f"m-new{k}")))
        assert found is not None, pair
        assert found["detail"]["newer"] == f"m-new{k}", pair
    assert len(flags) == len(ISSUE_33), [a["reason"] for a in flags.values()]


def test_add_answers_what_a_new_claim_contradicts_and_flags_it_at_once(vault: Path, ticking: None) -> None:
    """Every older claim first, then each newer one: its answer names the
    older claim (``contradicts``), both are stored, ``conflicts`` lists the
    pair at once (newer over older), ``context`` marks the older possibly
    outdated, and consolidation does not flag the pair again."""
    runner = CliRunner()
    ids = {older: _run(runner, vault, "add", older)[-1]["id"] for older, _ in ISSUE_33}
    for older, newer in ISSUE_33:
        answer = _run(runner, vault, "add", newer)[-1]
        assert answer["action"] == "added"
        ids[newer] = answer["id"]
        assert [c["id"] for c in answer["contradicts"]] == [ids[older]], (newer, answer["contradicts"])
        assert answer["contradicts"][0]["text"] == older and answer["contradicts"][0]["kind"]
    listed = {(c["older"]["id"], c["newer"]["id"]) for c in _run(runner, vault, "conflicts")}
    assert listed == {(ids[o], ids[n]) for o, n in ISSUE_33}
    assert _flags(runner, vault) == {}
    done = runner.invoke(cli, ["--vault", str(vault), "context", "where does she live?"])
    assert done.exit_code == 0, done.output
    assert "Lives in Lisbon" in done.output and "possibly outdated" in done.output
    human = runner.invoke(cli, ["--vault", str(vault), "add", "Lives in Faro"])
    assert f"contradicts {ids['Lives in Lisbon']}" in human.output and "Lives in Lisbon" in human.output


def test_update_answers_what_the_new_text_contradicts(vault: Path, ticking: None) -> None:
    runner = CliRunner()
    porto = _run(runner, vault, "add", "Lives in Porto")[-1]["id"]
    other = _run(runner, vault, "add", "Plays the cello")[-1]
    assert other["contradicts"] == []
    assert _run(runner, vault, "add", "Went sailing with Ana", "--type", "episodic")[-1]["contradicts"] == []
    changed = _run(runner, vault, "update", other["id"], "--content", "Lives in Braga")[-1]
    assert changed["action"] == "updated"
    assert [c["id"] for c in changed["contradicts"]] == [porto]
    unrelated = _run(runner, vault, "update", other["id"], "--tag", "home")[-1]
    assert "contradicts" not in unrelated  # only a new text is judged


def test_mcp_remember_answers_contradicts(vault: Path, memvault_env: Path, tmp_path: Path) -> None:
    """The real MCP SDK client over stdio: ``remember`` of a newer claim names
    the older one (both stored, in the server's scope)."""
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters, stdio_client

    assert CliRunner().invoke(cli, ["--vault", str(vault), "sync", "--no-embed"]).exit_code == 0
    env = {k: v for k, v in os.environ.items() if k.startswith("MEMVAULT_")}
    server = StdioServerParameters(command=str(Path(sys.executable).parent / "memvault"),
                                   args=["--vault", str(vault), "mcp"], env=env, cwd=str(tmp_path))

    async def main() -> list[Any]:
        with open(tmp_path / "mcp.err", "w") as err:
            async with stdio_client(server, errlog=err) as (read, write_), ClientSession(read, write_) as s:
                await s.initialize()
                return [await s.call_tool("remember", {"content": text})
                        for text in ("Supports Benfica", "Supports Sporting")]

    first, second = asyncio.run(main())
    assert not first.is_error and not second.is_error, (first.content, second.content)
    assert first.structured_content["contradicts"] == []
    data = second.structured_content
    assert data["action"] == "added" and data["contradicts"] == [
        {"id": first.structured_content["id"], "text": "Supports Benfica", "kind": data["contradicts"][0]["kind"]}]
    assert "contradicts" in second.content[0].text and "Supports Benfica" in second.content[0].text


@pytest.fixture
def served(tmp_path: Path, memvault_env: Path) -> Iterator[Any]:
    from fixtures.retrieval import support

    with support.query_server(tmp_path) as srv:
        yield srv


def test_add_through_the_daemon_answers_contradicts(served: Any) -> None:
    """``add`` while a daemon runs: the daemon writes it and its answer names
    the older claim, in JSON and in the human lines, as in-process."""
    root, runner = served.store.root, CliRunner()
    older = _run(runner, root, "add", "Lives in Tallinn")[-1]
    before = served.requests
    newer = _run(runner, root, "add", "Lives in Riga")[-1]
    assert served.requests == before + 1  # answered by the daemon
    assert [c["id"] for c in newer["contradicts"]] == [older["id"]]
    human = runner.invoke(cli, ["--vault", str(root), "add", "Lives in Vilnius"])
    assert served.requests == before + 2
    assert f"contradicts {newer['id']}" in human.output and "Lives in Riga" in human.output
