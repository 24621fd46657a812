"""CLI parity for agents: list and recent, memory scopes, forgetting one fact, identity
always, update --expect-version, and --what (the old --scope spelling still works)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.store.retrieval.when import parse_bound, time_bounds

ABOUT = """---
memory: source
---
# Profile

## Habits
- Drinks coffee black, no sugar
- Cycles to the office when it is dry
"""


def run(vault: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def rows(result: Any) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture
def memories(vault: Path) -> Path:
    write(vault, "Notes/Editors.md", "# Editors\n\nThe team standard is a dark editor theme.\n")
    with opened(vault) as store:
        store.sync()
        store.add("Works as a backend engineer in Lisbon", "identity")
        store.add("Prefers a dark editor theme", "preference", tags=["ui"])
        store.add("The billing project ships on Fridays", "semantic", scope="billing", tags=["ui/colours"])
        store.add("The search project ships on Mondays", "semantic", scope="search")
        store.add("Met the search team in Porto", "episodic", scope="search")
    return vault


def test_list_filters_sorts_and_pages(memories: Path) -> None:
    everything = rows(run(memories, "list", "--json"))
    assert len(everything) == 5 and all(r["kind"] == "memory" and r["version"] == 1 for r in everything)
    found = rows(run(memories, "list", "--scope", "search", "--type", "episodic", "--json"))
    assert [r["preview"] for r in found] == ["Met the search team in Porto"]
    assert {r["preview"] for r in rows(run(memories, "list", "--tag", "ui", "--json"))} == {
        "Prefers a dark editor theme", "The billing project ships on Fridays"}  # a nested tag counts
    first = run(memories, "list", "-n", "2", "--sort", "title")
    assert first.exit_code == 0 and "--cursor" in first.stderr
    cursor = first.stderr.split("--cursor ")[1].split()[0]
    rest = rows(run(memories, "list", "--sort", "title", "--cursor", cursor, "--json"))
    titles = [line.split("  ")[-1] for line in first.stdout.splitlines()]
    assert len(titles) == 2 and len(rest) == 3 and titles[0].startswith("Met the search")
    assert rows(run(memories, "list", "--since", "2999-01-01", "--json")) == []
    assert len(rows(run(memories, "list", "--what", "all", "--json"))) == 6
    assert run(memories, "list", "--since", "someday").exit_code == 2
    assert run(memories, "list", "--cursor", "nonsense").exit_code == 2
    # --json pages too: a last line with the cursor when more follow (issue 35), none on the last page.
    page = rows(run(memories, "list", "-n", "2", "--sort", "title", "--json"))
    assert len(page) == 3 and set(page[-1]) == {"next_cursor", "total"} and page[-1]["total"] == 5
    more = rows(run(memories, "list", "--sort", "title", "--cursor", page[-1]["next_cursor"], "--json"))
    assert [r["id"] for r in more] == [r["id"] for r in rest] and all("id" in r for r in more)


def test_recent_shows_changes_and_forgets(memories: Path) -> None:
    with opened(memories) as store:
        gone = store.list(scopes=["search"], types=["episodic"]).items[0].id
        store.forget(gone, "wrong city")
    recent = rows(run(memories, "recent", "--since", "1 hour", "--json"))
    assert any(r["id"] == gone and r["status"] == "deleted" for r in recent)
    first = rows(run(memories, "recent", "--since", "1 hour", "-n", "2", "--json"))
    assert len(first) == 3 and first[-1]["total"] == len(recent)
    rest = rows(run(memories, "recent", "--since", "1 hour", "--cursor", first[-1]["next_cursor"], "--json"))
    assert [r["id"] for r in first[:2] + rest] == [r["id"] for r in recent]
    assert any(r["kind"] == "note" for r in recent)
    assert rows(run(memories, "recent", "--since", "2999-01-01", "--json")) == []


def test_memory_scopes_filter_search_and_context(memories: Path) -> None:
    hits = rows(run(memories, "search", "project ships", "--scope", "billing", "--what", "memories", "--json"))
    assert [h["passage"] for h in hits] == ["The billing project ships on Fridays"]
    block = run(memories, "context", "when does the project ship", "--scope", "search")
    assert "Mondays" in block.output and "Fridays" not in block.output
    old = run(memories, "search", "editor theme", "--scope", "notes", "--json")
    assert old.exit_code == 0 and "old spelling of `--what notes`" in old.stderr
    assert [h["type"] for h in rows(old)] == ["note"]


def test_identity_always_or_when_relevant(memories: Path) -> None:
    assert run(memories, "context", "what is the capital of Peru").output == ""
    r = run(memories, "context", "what is the capital of Peru", "--identity", "always")
    assert r.exit_code == 0 and "backend engineer in Lisbon" in r.output


def test_update_expect_version_refuses_a_stale_change(memories: Path) -> None:
    with opened(memories) as store:
        memory = store.list(scopes=["billing"]).items[0]
    note = memories / memory.path
    assert run(memories, "update", memory.id, "--content", "Ships on Thursdays", "--expect-version", "1").exit_code == 0
    note.write_text(note.read_text().replace("Ships on Thursdays", "Ships on Wednesdays now"))  # a person's edit
    r = run(memories, "update", memory.id, "--content", "Ships on Tuesdays", "--expect-version", "2")
    assert r.exit_code == 1
    assert "is at version 3, not 2" in r.stderr and "edited in the vault" in r.stderr
    assert r.stdout.strip() == "Ships on Wednesdays now"
    assert "Wednesdays" in note.read_text()
    r = run(memories, "update", memory.id, "--content", "Ships on Tuesdays", "--expect-version", "3", "--json")
    assert json.loads(r.stdout)["version"] == 4


def test_a_forgotten_fact_stays_retired_until_restored(vault: Path) -> None:
    about = write(vault, "Profile.md", ABOUT)
    with opened(vault) as store:
        store.sync()
        fact = next(f for f in store.facts("Profile.md").facts if "coffee" in f.text)
    before = about.read_bytes()
    r = run(vault, "forget", fact.id, "--reason", "I quit coffee")
    assert r.exit_code == 0, r.output
    assert about.read_bytes() == before  # the source note is not touched

    def live() -> list[str]:
        return [h["id"] for h in rows(run(vault, "search", "coffee black", "--what", "facts", "--json"))]

    assert live() == []
    about.write_text(ABOUT + "- Walks to work every day\n")  # the note changes: facts are re-extracted
    assert run(vault, "sync", "--no-embed").exit_code == 0
    assert live() == []
    assert run(vault, "rebuild", "--no-embed").exit_code == 0  # a fresh index: still forgotten
    assert live() == []
    with opened(vault) as store:
        assert store.show(fact.id).status == "deleted"
    assert rows(run(vault, "search", "coffee black", "--what", "facts", "--include-deleted", "--json"))
    r = run(vault, "restore", fact.id)
    assert r.exit_code == 0, r.output
    assert live() == [fact.id]
    # Forgotten, then gone from the note: restoring leaves it history, and says so.
    assert run(vault, "forget", fact.id).exit_code == 0
    about.write_text(ABOUT.replace("- Drinks coffee black, no sugar\n", ""))
    assert run(vault, "sync", "--no-embed").exit_code == 0
    r = run(vault, "restore", fact.id)
    assert r.exit_code == 0 and "no longer says this" in r.stderr
    assert live() == []


def test_parse_time_spans_and_dates() -> None:
    """list and recent read --since/--until with the grammar search and context use."""
    from datetime import datetime, timezone

    now = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
    assert parse_bound("2 days", now) == "2026-11-21T12:00:00+00:00"
    assert parse_bound("3h", now) == "2026-11-23T09:00:00+00:00"
    assert parse_bound("yesterday", now) == "2026-11-22T00:00:00+00:00"
    assert parse_bound("last week", now) == "2026-11-16T12:00:00+00:00"
    assert parse_bound("2026-11-20", now) == "2026-11-20T00:00:00+00:00"
    assert time_bounds("", None, now) == {"since": None, "until": None}
