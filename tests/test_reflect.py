"""reflect (issue 36 item 9): a question answered from memory with an llm, else the evidence pack."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened
from test_llm_extract import FakeLLM, Reply, configure, llm, quick_backoff  # noqa: F401
from test_session_digest import SECRET, transcript

from memvault.cli.main import cli
from memvault.store.retrieval.reflect import REFLECT_PROMPT

#: What MCP tools/list may hold at most (another piece of work shrinks it below this).
TOOLS_LIST_CHARS = 6000


def _stocked(vault: Path, tmp_path: Path) -> dict[str, str]:
    """A vault with a session (an open action item), two memories a contradiction joins, and a secret."""
    with opened(vault) as store:
        store.ingest(transcript(tmp_path))
        older = store.add("The staging keys are rotated every month", "semantic").id
        newer = store.add("The staging keys are rotated every week", "semantic").id
        store.con.execute(
            "INSERT INTO state.contradictions (newer_id, older_id, kind, status, reason, created) "
            "VALUES (?, ?, 'number', 'open', 'month / week', '2026-11-24T00:00:00+00:00')", (newer, older))
        item = next(f.id for f in store.facts(next((vault / "Memory/episodic/sessions").glob("*.md"))
                                               .relative_to(vault).as_posix()).facts if f.due)
    return {"older": older, "newer": newer, "item": item}


def test_without_an_llm_the_evidence_pack_names_what_the_question_touches(vault: Path, tmp_path: Path) -> None:
    ids = _stocked(vault, tmp_path)
    r = CliRunner().invoke(cli, ["--vault", str(vault), "reflect", "how often are the staging keys rotated?",
                                 "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["answer"] is None and data["warning"] is None
    assert {c["newer"]["id"] for c in data["contradictions"]} == {ids["newer"]}
    assert [a["id"] for a in data["action_items"]] == [ids["item"]]
    assert f"[{ids['newer']}]" in data["evidence"] and f"[{ids['item']}] - [ ] I'll rotate" in data["evidence"]
    r = CliRunner().invoke(cli, ["--vault", str(vault), "reflect", "how often are the staging keys rotated?"])
    assert r.exit_code == 0 and r.output.startswith("## Evidence for: how often")
    assert "## Contradictions it touches" in r.output and "## Open action items it touches" in r.output


def test_bad_input_is_one_line_and_exit_2(vault: Path) -> None:
    r = CliRunner().invoke(cli, ["--vault", str(vault), "reflect", "   "])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "question" in r.output and "Traceback" not in r.output


def test_with_an_llm_one_call_answers_citing_ids_redacted(vault: Path, tmp_path: Path, llm: FakeLLM,  # noqa: F811
                                                         memvault_env: Path) -> None:
    ids = _stocked(vault, tmp_path)
    configure(memvault_env, llm.base_url)
    llm.requests.clear()
    llm.answer = lambda request: Reply(
        f"Weekly now [{ids['newer']}], it was monthly [{ids['older']}]; see [[Runbook]]. "
        f"Not evidence: [m-0123456789ab]. Key {SECRET}.")
    r = CliRunner().invoke(cli, ["--vault", str(vault), "reflect", "how often are the staging keys rotated?",
                                 "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert len(llm.requests) == 1 and llm.requests[0]["json"]["messages"][0]["content"] == REFLECT_PROMPT
    assert f"[{ids['newer']}]" in llm.requests[0]["json"]["messages"][1]["content"]
    assert data["cited"] == [ids["newer"], ids["older"]]  # an id not in the evidence is not a citation
    assert "[[Runbook]]" in data["answer"] and SECRET not in r.output
    # the llm down: the evidence, and why
    llm.answer = lambda request: Reply(status=500)
    r = CliRunner().invoke(cli, ["--vault", str(vault), "reflect", "staging keys", "--json"])
    data = json.loads(r.output)
    assert r.exit_code == 0 and data["answer"] is None and "did not answer" in data["warning"]


def test_mcp_reflect_over_the_sdk_client_and_the_tools_list_stays_small(vault: Path, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memvault.cli.mcp_server import build_server

    ids = _stocked(vault, tmp_path)
    with opened(vault) as store:

        async def main() -> tuple[object, object, list[object]]:
            async with Client(build_server(store), mode="legacy") as c:
                tools = await c.list_tools()
                good = await c.call_tool("reflect", {"question": "staging keys rotated"})
                bad = await c.call_tool("reflect", {"question": "  "})
                return good, bad, tools.tools

        good, bad, tools = asyncio.run(main())
    assert not good.is_error  # type: ignore[attr-defined]
    assert good.structured_content["action_items"][0]["id"] == ids["item"]  # type: ignore[attr-defined]
    assert good.content[0].text.startswith("## Evidence for: staging keys rotated")  # type: ignore[attr-defined]
    assert bad.is_error and "question" in bad.content[0].text  # type: ignore[attr-defined]
    listed = json.dumps([t.model_dump(mode="json", exclude_none=True) for t in tools])  # type: ignore[attr-defined]
    reflect_tool = next(t for t in tools if t.name == "reflect")  # type: ignore[attr-defined]
    assert len(json.dumps(reflect_tool.model_dump(mode="json", exclude_none=True))) < 700
    print("tools/list characters:", len(listed))
