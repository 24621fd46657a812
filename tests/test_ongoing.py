"""Ongoing work (issue 36 item 3): a memory type per project scope, shown at session start, closed when done.

``ongoing`` memories ("auth migration in progress, next: rotate the staging
keys") live in Memory/ongoing/, take the session's project scope, show at
session start after identity and lessons (newest first, in at most a share
of the budget), fade faster than facts, and are closed (become episodic) by
``update --done`` / MCP ``update`` with ``done``, or by ``consolidate`` once
their note says so (``done: true``, ``status: done``, a checked task).
"""

from __future__ import annotations

import asyncio
import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.store.consolidation.plan import Policy, make_plan
from memvault.store.consolidation.records import Record
from memvault.store.memories.memtypes import canonical_type
from memvault.store.project import project_at
from memvault.store.retrieval.recall import block_tokens
from memvault.store.retrieval.session_start import ONGOING_SHARE

ONGOING_HEAD = "## Ongoing work in project atlas"


def run(vault: Path, *args: str, input: str | None = None) -> Any:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args], input=input)


def added(vault: Path, *args: str) -> str:
    r = run(vault, "add", *args, "--json")
    assert r.exit_code == 0, r.output
    return str(json.loads(r.stdout)["id"])


@pytest.fixture
def atlas(vault: Path, tmp_path: Path) -> Path:
    """An indexed vault and a git project folder (scope: atlas) a session works in."""
    write(vault, "Projects/Atlas.md", "# Atlas\n\nAtlas deploys on Fridays.\n")
    run(vault, "sync", "--no-embed")
    folder = tmp_path / "atlas"
    (folder / ".git").mkdir(parents=True)
    return folder


def session_start(vault: Path, project: Path, *args: str) -> str:
    r = run(vault, "hook", "session-start", "--timeout", "60", *args, input=json.dumps({"cwd": str(project)}))
    assert r.exit_code == 0, r.output
    return str(r.stdout)


def test_the_type_its_words_and_its_folder(atlas: Path, vault: Path) -> None:
    assert canonical_type("ongoing") == canonical_type("wip") == canonical_type("in-progress") == "ongoing"
    work = added(vault, "Auth migration in progress, next: rotate the staging keys", "--type", "wip",
                 "--project", str(atlas))
    shown = json.loads(run(vault, "show", work, "--json").stdout)
    assert (shown["type"], shown["scope"]) == ("ongoing", "atlas") and shown["path"].startswith("Memory/ongoing/")
    listed = run(vault, "list", "--type", "ongoing", "--json").stdout.splitlines()
    assert [json.loads(line)["id"] for line in listed] == [work]


def test_session_start_shows_ongoing_work_after_identity_and_lessons_newest_first(atlas: Path, vault: Path) -> None:
    added(vault, "Works as a backend engineer in Lisbon", "--type", "identity")
    added(vault, "Never deploy atlas on a Friday afternoon", "--type", "lesson", "--project", str(atlas))
    older = added(vault, "Billing export rewrite under way, next: the CSV writer", "--type", "ongoing",
                  "--project", str(atlas))
    newer = added(vault, "Auth migration in progress, next: rotate the staging keys", "--type", "ongoing",
                  "--project", str(atlas))
    added(vault, "Zephyr's Node upgrade is half done", "--type", "ongoing", "--scope", "zephyr")
    note = next((vault / "Memory" / "ongoing").glob("billing-export*.md"))  # the older one: updated a week ago
    text = note.read_text(encoding="utf-8")
    stamp = next(line for line in text.splitlines() if line.startswith("updated:"))
    note.write_text(text.replace(stamp, "updated: '2026-11-01T10:00:00+00:00'", 1), encoding="utf-8")
    run(vault, "sync", "--no-embed")
    with opened(vault) as store:
        assert store.show(older).updated < store.show(newer).updated
    text = session_start(vault, atlas)
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert heads[:3] == ["## Who the person is", "## Lessons and decisions for project atlas (newest first)",
                         ONGOING_HEAD + " (newest first; `update --done` closes it)"], heads
    section = text.split(ONGOING_HEAD, 1)[1].split("\n\n", 1)[0]
    assert section.index("Auth migration") < section.index("Billing export")  # newest first
    assert "Zephyr" not in text  # another project's work stays out


def test_ongoing_work_takes_at_most_its_share_of_the_budget(atlas: Path, vault: Path) -> None:
    for n in range(12):
        added(vault, f"Workstream {n} of atlas is in progress: the {n}th migration step of the billing ledger "
                     "needs its staging dry run, its rollback plan and a reviewer before it moves on", "--type",
              "ongoing", "--project", str(atlas))
    budget = 400
    text = session_start(vault, atlas, "--budget", str(budget))
    section = ONGOING_HEAD + text.split(ONGOING_HEAD, 1)[1].split("\n\n", 1)[0]
    assert section.count("- [ongoing]") >= 1
    assert block_tokens(section) <= int(budget * ONGOING_SHARE)
    assert block_tokens(text) <= budget


def plans(path: Path, count: int) -> Path:
    """A generic transcript whose person states ``count`` plans: its session digest's open action items."""
    lines = [json.dumps({"role": "user", "content": f"I'll migrate ledger shard {n} of atlas next Friday, "
                                                   "with its dry run and rollback plan.",
                         "timestamp": f"2026-11-23T10:{n:02d}:00Z"}) for n in range(count)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("budget", [120, 300, 800, 1600])
def test_session_start_with_every_section_stays_within_its_token_budget(atlas: Path, vault: Path, tmp_path: Path,
                                                                         budget: int) -> None:
    long = " ".join(["with its reasons, its owners and what it waits for"] * 6)
    with opened(vault) as store:
        for n in range(6):
            store.add(f"Identity detail {n}: works on payments in Lisbon {long}", "identity")
            store.add(f"Lesson {n} for atlas deploys: run the smoke tests first {long}", "procedural", scope="atlas")
            store.add(f"Ongoing {n}: the atlas ledger migration step {n} is under way {long}", "ongoing",
                      scope="atlas")
            store.add(f"Atlas fact {n}: the billing ledger lives in Postgres {long}", "semantic", scope="atlas")
        store.ingest(plans(tmp_path / "plans.jsonl", 8))  # open action items, from the session's digest
    text = session_start(vault, atlas, "--budget", str(budget))
    assert text and block_tokens(text) <= budget
    if budget >= 1600:  # room for each section: all of them are there, in order
        heads = ["## Who the person is", "## Lessons and decisions", ONGOING_HEAD, "## Open action items"]
        assert all(head in text for head in heads), text
        assert [text.index(h) for h in heads] == sorted(text.index(h) for h in heads)


def test_update_done_closes_ongoing_work_cli_and_refuses_other_types(atlas: Path, vault: Path) -> None:
    work = added(vault, "Auth migration in progress, next: rotate the staging keys", "--type", "ongoing",
                 "--project", str(atlas))
    fact = added(vault, "Atlas uses Postgres 16")
    r = run(vault, "update", work, "--done", "--reason", "keys rotated", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["path"].startswith("Memory/episodic/")
    history = [json.loads(line) for line in run(vault, "history", work, "--json").stdout.splitlines()]
    assert [h["type"] for h in history][:2] == ["episodic", "ongoing"] or history[1]["reason"].startswith("done")
    assert any(h.get("reason") == "done: keys rotated" for h in history), history
    assert ONGOING_HEAD not in session_start(vault, atlas)
    for args in ((fact, "--done"), (work, "--done"), (work, "--done", "--type", "semantic")):
        r = run(vault, "update", *args)
        assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output, args


def test_mcp_remember_ongoing_takes_the_project_and_update_done_closes_it(atlas: Path, vault: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memvault.cli.mcp_server import build_server

    with opened(vault) as store:
        server = build_server(store, project=project_at(atlas))

        async def calls() -> list[Any]:
            async with Client(server, mode="legacy") as c:
                made = await c.call_tool("remember", {"content": "Search reindex running, next: swap the alias",
                                                      "type": "ongoing"})
                m = made.structured_content
                return [made, await c.call_tool("update", {"id": m["id"], "version": m["version"], "done": True}),
                        await c.call_tool("update", {"id": m["id"], "version": m["version"] + 1, "done": True})]

        made, closed, again = asyncio.run(calls())
        shown = store.show(made.structured_content["id"])
    assert not closed.is_error and closed.structured_content["path"].startswith("Memory/episodic/")
    assert (shown.type, shown.scope) == ("episodic", "atlas")
    assert again.is_error and "not ongoing work" in again.content[0].text


@pytest.mark.parametrize("mark", ["front-matter done", "status property", "checked task"])
def test_consolidate_closes_ongoing_work_its_note_marks_done(atlas: Path, vault: Path, mark: str) -> None:
    work = added(vault, "Auth migration in progress", "--type", "ongoing", "--project", str(atlas))
    other = added(vault, "Search reindex in progress", "--type", "ongoing", "--project", str(atlas))
    with opened(vault) as store:
        path = vault / str(store.show(work).path)
    text = path.read_text(encoding="utf-8")
    if mark == "front-matter done":
        text = text.replace("---\n", "---\ndone: true\n", 1)
    elif mark == "status property":
        text = text.replace("---\n", "---\nstatus: done\n", 1)
    else:
        text = text.replace("Auth migration in progress", "- [x] Auth migration in progress", 1)
    path.write_text(text, encoding="utf-8")
    run(vault, "sync", "--no-embed")
    plan = run(vault, "consolidate", "--dry-run", "--json")
    assert plan.exit_code == 0, plan.output
    r = run(vault, "consolidate", "--json")
    assert r.exit_code == 0, r.output
    with opened(vault) as store:
        assert store.show(work).type == "episodic"
        assert store.show(other).type == "ongoing"  # its note says nothing of the kind
        runs = store.consolidation_runs(limit=1)
    assert runs[0]["counts"]["task_done"] == 1
    r = run(vault, "consolidate", "--undo", runs[0]["run"])  # undoable like every run
    assert r.exit_code == 0, r.output
    with opened(vault) as store:
        assert store.show(work).type == "ongoing"


def test_ongoing_work_fades_faster_than_facts() -> None:
    made = datetime(2026, 11, 1, tzinfo=timezone.utc)
    records = [Record(id=f"m-{t}", kind="memory", type=t, scope="atlas", content=f"{t} thing", created=made,
                      strength=0.8) for t in ("ongoing", "semantic")]
    plan = make_plan(records, {}, Policy(), date(2026, 11, 15))
    changes = {c[0]: c[2] for a in plan.actions if a.kind == "decay" for c in a.detail["changes"]}
    assert changes["m-ongoing"] == pytest.approx(0.8 * 0.25)  # two half-lives of 7 days
    assert changes["m-semantic"] > 0.7
    later = make_plan(records, {}, Policy(), date(2026, 11, 15) + timedelta(days=1))
    assert not [a for a in later.actions if a.kind == "task_done"]  # not done: not closed
