"""An agent tidies its own memory through MCP: ``merge`` and ``consolidate``.

Driven by the MCP SDK's own client over stdio against a real ``memvault
mcp`` subprocess, as in test_mcp_server.py: a merge (its history, its note in
.trash/, ``restore`` taking it back out); a consolidation planned, applied by
its plan id (the run is the plan shown, the CLI's dry run shows the same
id), a stale plan id refused with nothing applied, and the run undone back
to the store as it was; a read-only server offers neither tool.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from click.testing import CliRunner  # noqa: E402
from helpers import opened, write  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.types import Implementation  # noqa: E402

from memvault.cli.main import cli  # noqa: E402
from memvault.store.consolidation.plan import plan_id  # noqa: E402

MEMVAULT = Path(sys.executable).parent / "memvault"


def note(root: Path, mid: str, content: str, *, created: str, tags: tuple[str, ...] = ()) -> None:
    """A semantic memory note as memvault writes them, with a chosen id and creation day."""
    tag_lines = "".join(f"  - {t}\n" for t in tags)
    write(root, f"Memory/semantic/{mid}.md",
          f"---\nid: {mid}\ntype: semantic\nscope: user\n" + (f"tags:\n{tag_lines}" if tags else "")
          + f"strength: 0.5\ncreated: '{created}T09:00:00+00:00'\nupdated: '{created}T09:00:00+00:00'\n"
          f"source: manual\n---\n{content}\n")


@pytest.fixture
def tidy_vault(vault: Path) -> Path:
    """Two memories that say the same thing and two that contradict each other, indexed."""
    note(vault, "m-dark1", "Prefers dark mode in every editor", created="2026-09-01", tags=("ui",))
    note(vault, "m-dark2", "prefers dark mode in every editor!", created="2026-09-03", tags=("editor",))
    note(vault, "m-porto", "Lives in Porto near the river", created="2026-09-01")
    note(vault, "m-lisbon", "Lives in Lisbon near the river", created="2026-10-01")
    write(vault, "Daily.md", "An ordinary note a person wrote.\n")
    with opened(vault) as v:
        v.sync()
    return vault


def run_session(root: Path, errlog: Path, body: Callable[[ClientSession], Awaitable[Any]], *extra: str) -> Any:
    """Start ``memvault mcp`` on ``root``, initialize as "pytest-agent", run ``body``."""
    env = {k: v for k, v in os.environ.items() if k.startswith("MEMVAULT_")}
    params = StdioServerParameters(command=str(MEMVAULT), args=["--vault", str(root), "mcp", *extra], env=env)

    async def main() -> Any:
        with open(errlog, "w") as err:
            async with stdio_client(params, errlog=err) as (read, write_):
                async with ClientSession(read, write_,
                                         client_info=Implementation(name="pytest-agent", version="1")) as s:
                    await s.initialize()
                    return await body(s)

    return asyncio.run(main())


def text(result: Any) -> str:
    return result.content[0].text


def files(root: Path) -> dict[str, str]:
    """Every vault file (outside .trash/ and memvault's history logs, which
    record the run and its undo) and its sha256."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".trash" not in p.parts and ".memvault" not in p.parts}


def live(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every live memory: type, content, tags, strength, path."""
    with opened(root) as v:
        return {r[0]: tuple(r[1:]) for r in v.read_con().execute(
            "SELECT id, type, content, tags, round(coalesce(strength, -1), 6), path FROM traces "
            "WHERE kind = 'memory' AND status = 'active' ORDER BY id")}


def flagged(root: Path) -> list[tuple[str, str]]:
    """Open contradictions: (newer, older)."""
    with opened(root) as v:
        return [(c.newer.id, c.older.id) for c in v.contradictions()]


def runs(root: Path) -> list[dict[str, Any]]:
    with opened(root) as v:
        return v.consolidation_runs()


def test_an_agent_merges_two_memories_and_restore_takes_one_back_out(tidy_vault: Path, tmp_path: Path) -> None:
    before = live(tidy_vault)
    merged_text = "Prefers dark mode in every editor and terminal"

    async def body(s: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["one"] = await s.call_tool("merge", {"ids": ["m-dark1"]})
        out["note"] = await s.call_tool("merge", {"ids": ["m-dark1", "Daily.md"]})
        out["merge"] = await s.call_tool("merge", {"ids": ["m-dark1", "m-dark2"], "content": merged_text,
                                                   "reason": "the same preference"})
        out["trashed"] = (tidy_vault / ".trash" / "m-dark2.md").exists()
        out["history"] = await s.call_tool("history", {"id": "m-dark1"})
        out["read"] = await s.call_tool("read", {"id": "m-dark1"})
        out["restore"] = await s.call_tool("restore", {"id": "m-dark2"})
        out["back"] = await s.call_tool("read", {"id": "m-dark1"})
        return out

    errlog = tmp_path / "server.err"
    out = run_session(tidy_vault, errlog, body)
    assert out["one"].is_error and "two or more" in text(out["one"])
    assert out["note"].is_error and "\n" not in text(out["note"])  # an ordinary note is never merged
    merge = out["merge"]
    assert not merge.is_error, text(merge)
    data = merge.structured_content
    assert (data["id"], data["action"], data["merged"]) == ("m-dark1", "merged", ["m-dark2"])
    assert data["run"].startswith("c-") and data["version"] == 2 and data["uri"].startswith("obsidian://")
    assert "restore" in text(merge) and data["run"] in text(merge)
    assert out["trashed"]
    reasons = [v["reason"] for v in out["history"].structured_content["versions"]]
    assert "merged m-dark2 into m-dark1 (the same preference, by mcp:pytest-agent)" in reasons
    read = out["read"].structured_content
    assert read["content"] == merged_text and set(read["tags"]) == {"ui", "editor"}
    assert out["restore"].structured_content["action"] == "restored", text(out["restore"])
    assert out["back"].structured_content["content"] == "Prefers dark mode in every editor"
    after = live(tidy_vault)
    assert set(after) == set(before)
    assert {k: v[1] for k, v in after.items()} == {k: v[1] for k, v in before.items()}  # the same texts
    # The refused merge of a note is logged as a failed run that changed nothing (as the CLI's).
    assert sorted((r["trigger"], r["status"]) for r in runs(tidy_vault)) == [("merge", "done"), ("merge", "failed")]
    assert "Traceback" not in errlog.read_text()


def test_an_agent_plans_applies_by_plan_id_and_undoes_a_consolidation(tidy_vault: Path, tmp_path: Path) -> None:
    cli_plan = CliRunner().invoke(cli, ["--vault", str(tidy_vault), "consolidate", "--dry-run", "--json"])
    assert cli_plan.exit_code == 0, cli_plan.output
    *cli_actions, cli_summary = [json.loads(line) for line in cli_plan.output.splitlines()]
    assert cli_summary["plan"] == plan_id(cli_actions)
    before_files, before_live = files(tidy_vault), live(tidy_vault)

    async def body(s: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["plan"] = await s.call_tool("consolidate", {})
        out["unchanged"] = files(tidy_vault) == before_files  # a dry run changes nothing
        out["both"] = await s.call_tool("consolidate", {"apply": "p-x", "undo": "c-x"})
        # The store changes under the plan: one of the duplicates is forgotten.
        await s.call_tool("forget", {"id": "m-dark2"})
        out["stale"] = await s.call_tool("consolidate", {"apply": out["plan"].structured_content["plan"]})
        out["stale_files"] = files(tidy_vault)
        await s.call_tool("restore", {"id": "m-dark2"})
        out["replan"] = await s.call_tool("consolidate", {})
        out["run"] = await s.call_tool("consolidate", {"plan_id": out["replan"].structured_content["plan"]})
        out["after_run"] = files(tidy_vault)
        out["flagged"] = flagged(tidy_vault)
        out["undo"] = await s.call_tool("consolidate", {"undo": out["run"].structured_content["run"]})
        out["again"] = await s.call_tool("consolidate", {"undo": out["run"].structured_content["run"]})
        return out

    errlog = tmp_path / "server.err"
    out = run_session(tidy_vault, errlog, body)
    plan = out["plan"].structured_content
    assert not out["plan"].is_error and plan["dry_run"] is True and plan["run"] is None
    # The agent sees the plan a person sees with `consolidate --dry-run --json`.
    assert plan["plan"] == cli_summary["plan"] and plan["actions"] == cli_actions
    kinds = [a["kind"] for a in plan["actions"]]
    assert "merge" in kinds and "contradiction" in kinds, kinds
    assert f"apply={plan['plan']}" in text(out["plan"]) and out["unchanged"]
    assert out["both"].is_error and "not both" in text(out["both"])

    stale = out["stale"]
    assert stale.is_error and "the plan changed since you saw it" in text(stale) and "\n" not in text(stale)
    assert plan["plan"] in text(stale)
    # Nothing applied: only the forget moved a note, and no run was logged for the stale id.
    assert out["stale_files"] == {k: v for k, v in before_files.items() if k != "Memory/semantic/m-dark2.md"}

    replan = out["replan"].structured_content
    assert replan["plan"] == plan["plan"]  # the store as it was gives the same plan, and the same id
    run = out["run"]
    assert not run.is_error, text(run)
    done = run.structured_content
    assert done["run"].startswith("c-") and done["plan"] == replan["plan"] and not done["dry_run"]
    assert done["actions"] == replan["actions"] and done["failed_actions"] == []  # the run is the plan shown
    assert f"undo={done['run']}" in text(run)
    merged = next(a for a in done["actions"] if a["kind"] == "merge")["detail"]["members"]
    assert merged and not {f"Memory/semantic/{m}.md" for m in merged} & set(out["after_run"])  # in .trash/
    assert out["flagged"] == [("m-lisbon", "m-porto")]  # newer over older
    assert [r["trigger"] for r in runs(tidy_vault)] == ["mcp"]  # the stale apply left no run

    undo = out["undo"]
    assert not undo.is_error, text(undo)
    assert undo.structured_content["undone"] == len(done["actions"]) and undo.structured_content["refused"] == []
    assert out["again"].is_error and "already undone" in text(out["again"])
    assert flagged(tidy_vault) == []
    assert live(tidy_vault) == before_live  # the same live memories, texts, tags, strengths, paths
    assert files(tidy_vault) == before_files  # and the same note bytes
    assert "Traceback" not in errlog.read_text()


def test_the_cli_dry_run_shows_the_plan_id(tidy_vault: Path) -> None:
    out = CliRunner().invoke(cli, ["--vault", str(tidy_vault), "consolidate", "--dry-run"])
    assert out.exit_code == 0, out.output
    with opened(tidy_vault) as v:
        shown = v.consolidate(dry_run=True)
    assert f"Plan id {shown.plan}\n" in out.output and shown.plan == plan_id(shown.actions)


def test_a_read_only_server_offers_neither_tool(tidy_vault: Path, tmp_path: Path) -> None:
    async def body(s: ClientSession) -> tuple[set[str], Any, Any]:
        names = {t.name for t in (await s.list_tools()).tools}
        return (names, await s.call_tool("merge", {"ids": ["m-dark1", "m-dark2"]}),
                await s.call_tool("consolidate", {}))

    before = files(tidy_vault)
    names, merge, consolidate = run_session(tidy_vault, tmp_path / "err", body, "--read-only")
    assert "search" in names and not {"merge", "consolidate"} & names
    for refused in (merge, consolidate):
        assert refused.is_error and "this server is read-only" in text(refused)
    assert files(tidy_vault) == before and runs(tidy_vault) == []
