"""The pause switch (issue 36 item 6): `memvault pause` / `resume`, `memory: off`, `hook install --only`.

While memory is paused (all of it, or one project's), no hook, ingest path
or MCP write stores what an agent's session says, and `status` says so;
turns said during a pause stay out even when their transcript is ingested
after the resume. A project's `.memvault` `memory: off` stores and recalls
nothing for it; a session note's `memory: off` stops its recording. A pause
is shared through the vault's history log (every device holds it).
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import opened, wait_for, write
from test_turn_hook import transcripts  # noqa: F401  (a transcript folder the hook and the daemon accept)

from memvault.cli.main import cli
from memvault.store.db.connection import write_transaction
from memvault.store.pause import MemoryPaused, parse_for
from memvault.store.pause import pause as pause_row
from memvault.store.pause import resume as resume_rows
from memvault.store.project import project_at

T0 = datetime(2026, 11, 26, 10, 0, tzinfo=timezone.utc)


def run(vault: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args], input=input, env=env)


def transcript(path: Path, turns: list[tuple[str, str, str]], cwd: str | None = None, session: str = "s-pause") -> Path:
    """A Claude Code transcript of (role, ISO time, text) turns, each line naming ``cwd`` as Claude Code does."""
    lines = []
    for role, at, text in turns:
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        line: dict[str, Any] = {"type": role, "sessionId": session, "timestamp": at,
                                "message": {"role": role, "content": content}}
        if cwd is not None:
            line["cwd"] = cwd
        lines.append(json.dumps(line))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def sessions(vault: Path) -> list[Path]:
    return sorted((vault / "Memory" / "episodic" / "sessions").glob("*.md"))


@pytest.fixture
def project(vault: Path, tmp_path: Path) -> Path:
    """An indexed vault and a git project folder (scope: atlas) a session works in."""
    write(vault, "Projects/Atlas.md", "# Atlas\n\nAtlas deploys on Fridays.\n")
    with opened(vault) as store:
        store.sync()
        store.add("Works as a backend engineer in Lisbon", "identity")
    folder = tmp_path / "atlas"
    (folder / ".git").mkdir(parents=True)
    return folder


def test_a_span_is_read_or_refused_in_one_line(vault: Path) -> None:
    assert parse_for("2h") == timedelta(hours=2)
    assert parse_for("1h30m") == timedelta(minutes=90)
    assert parse_for("3 days") == timedelta(days=3)
    assert parse_for("45 min") == timedelta(minutes=45)
    for bad in ("", "2x", "h", "0m", "-1h", "2h later", "400 days"):
        r = run(vault, "pause", "--for", bad)
        assert r.exit_code == 2, (bad, r.output)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output


def test_pause_and_resume_through_the_cli_and_status(project: Path, vault: Path) -> None:
    r = run(vault, "pause", "--for", "2h", "--reason", "screen share", "--json")
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)
    assert row["scope"] == "*" and row["until"] > row["since"] and row["reason"] == "screen share"
    r = run(vault, "pause", "--project", str(project))
    assert r.exit_code == 0 and "project atlas paused" in r.stdout
    status = json.loads(run(vault, "status", "--json").stdout)
    assert {p["scope"] for p in status["paused"]} == {"*", "atlas"}
    human = run(vault, "status").stdout
    assert human.count("paused:") == 2 and "screen share" in human
    r = run(vault, "resume", "--project", str(project))
    assert r.exit_code == 0 and "Resumed: project atlas" in r.stdout and "Still paused: all memory" in r.stdout
    assert [p["scope"] for p in json.loads(run(vault, "status", "--json").stdout)["paused"]] == ["*"]
    assert json.loads(run(vault, "resume", "--json").stdout)["resumed"][0]["scope"] == "*"
    assert run(vault, "resume").stdout.strip() == "Memory was not paused."
    assert json.loads(run(vault, "status", "--json").stdout)["paused"] == []
    r = run(vault, "pause", "--project", str(project / "nowhere"))
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_a_pause_ends_by_itself(project: Path, vault: Path) -> None:
    with opened(vault) as store:
        with write_transaction(store.con):
            pause_row(store.con, store.device_id(), "*", timedelta(hours=1), now=T0)  # long over
        assert store.pauses() == []
        store.check_capture(None)  # nothing holds: no refusal


def test_nothing_is_ingested_while_paused_and_turns_said_then_stay_out(project: Path, vault: Path,
                                                                         tmp_path: Path) -> None:
    t = transcript(tmp_path / "t.jsonl", [
        ("user", "2026-11-26T09:30:00Z", "The staging host is called quokkaprime."),
        ("assistant", "2026-11-26T09:30:05Z", "Noted: quokkaprime."),
        ("user", "2026-11-26T10:20:00Z", "Off the record: the intern is called wombatsecret."),
        ("assistant", "2026-11-26T10:20:05Z", "Understood, wombatsecret."),
        ("user", "2026-11-26T11:10:00Z", "Back on: the cache is numbatfinal."),
    ], cwd=str(project))
    r = run(vault, "pause", "--project", str(project))
    assert r.exit_code == 0
    r = run(vault, "ingest", str(t))  # the project comes from the transcript's own cwd
    assert r.exit_code == 1 and "project atlas paused" in r.stderr and "nothing was ingested" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and sessions(vault) == []
    assert run(vault, "resume").exit_code == 0
    with opened(vault) as store:  # a pause from 10:00 to 11:00 that day (as if made then)
        with write_transaction(store.con):
            pause_row(store.con, store.device_id(), "atlas", None, now=T0)
            resume_rows(store.con, "atlas", now=T0 + timedelta(hours=1))
    r = run(vault, "ingest", str(t), "--json")
    assert r.exit_code == 0, r.output
    assert any("2 turns said while memory was paused were left out" in w for w in json.loads(r.stdout)["warnings"])
    text = sessions(vault)[0].read_text(encoding="utf-8")
    assert "quokkaprime" in text and "numbatfinal" in text and "wombatsecret" not in text
    # another project's transcript is not touched by atlas's pause
    other = tmp_path / "zephyr"
    other.mkdir()
    t2 = transcript(tmp_path / "t2.jsonl", [("user", "2026-11-26T10:20:00Z", "Zephyr pins Node 22.")],
                    cwd=str(other), session="s-other")
    assert run(vault, "ingest", str(t2)).exit_code == 0 and len(sessions(vault)) == 2


def test_the_hooks_store_nothing_while_paused(project: Path, vault: Path, tmp_path: Path, transcripts: Path,
                                              memvault_env: Path) -> None:
    t = transcript(transcripts / "t.jsonl", [("user", "2026-11-26T10:20:00Z", "The deploy key lives in vault B.")])
    end = {"session_id": "s-pause", "transcript_path": str(t), "cwd": str(project), "hook_event_name": "SessionEnd"}
    run(vault, "pause", "--project", str(project))
    r = run(vault, "hook", "session-end", "--timeout", "60", input=json.dumps(end))
    assert r.exit_code == 0 and r.output == "" and sessions(vault) == []
    assert "project atlas paused" in (memvault_env / "hooks.log").read_text()
    start = run(vault, "hook", "session-start", "--timeout", "60", input=json.dumps({"cwd": str(project)}))
    assert start.exit_code == 0
    first = start.stdout.splitlines()[0]
    assert "project atlas paused" in first and "do not call remember" in first
    assert "backend engineer" in start.stdout  # recall goes on: only storing stops
    elsewhere = run(vault, "hook", "session-start", "--timeout", "60", input=json.dumps({"cwd": str(tmp_path)}))
    assert "paused" not in elsewhere.stdout  # another project stores as before
    run(vault, "resume")
    r = run(vault, "hook", "session-end", "--timeout", "60", input=json.dumps(end))
    assert r.exit_code == 0 and len(sessions(vault)) == 1


def test_memory_off_in_a_project_marker_stores_and_recalls_nothing(project: Path, vault: Path,
                                                                      transcripts: Path) -> None:
    (project / ".memvault").write_text("# no memory here\nmemory: off\n")
    (project / "src").mkdir()
    t = transcript(transcripts / "t.jsonl", [("user", "2026-11-26T10:20:00Z", "Client names are confidential.")],
                   cwd=str(project / "src"))
    data = {"cwd": str(project), "prompt": "where does a backend engineer work", "transcript_path": str(t)}
    for event in ("session-start", "prompt", "session-end", "pre-compact"):
        r = run(vault, "hook", event, "--timeout", "60", input=json.dumps(data))
        assert (r.exit_code, r.stdout) == (0, ""), event
    assert sessions(vault) == []
    r = run(vault, "ingest", str(t))  # the transcript says where it worked
    assert r.exit_code == 1 and "memory is off for project atlas" in r.stderr
    # without the marker the same prompt recalls
    (project / ".memvault").write_text("memory: on\n")
    assert "backend engineer" in run(vault, "hook", "prompt", "--timeout", "60", input=json.dumps(data)).stdout


def test_a_session_note_saying_memory_off_is_not_recorded_any_more(project: Path, vault: Path,
                                                                     tmp_path: Path) -> None:
    turns = [("user", "2026-11-26T10:20:00Z", "I prefer tabs over spaces in Python."),
             ("assistant", "2026-11-26T10:20:05Z", "Noted: tabs.")]
    t = transcript(tmp_path / "t.jsonl", turns)
    assert run(vault, "ingest", str(t)).exit_code == 0
    note = sessions(vault)[0]
    with opened(vault) as store:
        assert store.facts(note.relative_to(vault).as_posix()).facts  # a memory source: its facts
    edited = note.read_text(encoding="utf-8").replace("memory: source", "memory: off", 1)
    note.write_text(edited, encoding="utf-8")
    transcript(t, [*turns, ("user", "2026-11-26T10:30:00Z", "Another thing: the cache is numbatfinal.")])
    r = run(vault, "ingest", str(t), "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["action"] == "skipped", r.output
    assert note.read_text(encoding="utf-8") == edited  # not a byte added
    with opened(vault) as store:
        store.sync()
        assert store.facts(note.relative_to(vault).as_posix()).facts == ()  # no memory source now: its facts retired


def test_mcp_remember_and_update_are_refused_while_paused(project: Path, vault: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memvault.cli.mcp_server import build_server

    with opened(vault) as store:
        kept = store.add("Atlas uses Postgres 16", scope="atlas")
        server = build_server(store, project=project_at(project))

        async def calls() -> list[Any]:
            async with Client(server, mode="legacy") as c:
                out = [await c.call_tool("status", {})]
                store.pause("atlas")
                out += [await c.call_tool("status", {}),
                        await c.call_tool("remember", {"content": "Atlas moves to Postgres 17"}),
                        await c.call_tool("update", {"id": kept.id, "version": 1, "content": "Postgres 17"}),
                        await c.call_tool("context", {"message": "which postgres does atlas use"})]
                store.resume()
                out.append(await c.call_tool("remember", {"content": "Atlas moves to Postgres 17"}))
                return out

        before, during, remember, update, context, after = asyncio.run(calls())
    assert before.structured_content["storing"] is True
    assert during.structured_content["storing"] is False
    assert [p["scope"] for p in during.structured_content["paused"]] == ["atlas"]
    for refused in (remember, update):
        assert refused.is_error and "project atlas paused" in refused.content[0].text
    assert "Postgres 16" in context.content[0].text  # recall still answers
    assert not after.is_error and after.structured_content["action"] == "added"


def test_hook_install_only_some_hooks(vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    r = run(vault, "hook", "install", "--client", "claude-code", "--only", "prompt,turn", "--json")
    assert r.exit_code == 0, r.output
    settings_path = Path(json.loads(r.stdout)["path"])
    assert set(json.loads(settings_path.read_text())["hooks"]) == {"UserPromptSubmit", "Stop"}
    r = run(vault, "hook", "install", "--client", "claude-code")  # all of them again
    assert r.exit_code == 0, r.output
    assert set(json.loads(settings_path.read_text())["hooks"]) == {
        "SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd", "Stop"}
    before = settings_path.read_bytes()
    for bad in ("prompt,nope", ",", "sessionstart"):
        r = run(vault, "hook", "install", "--client", "claude-code", "--only", bad)
        assert r.exit_code == 2 and "--only" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert settings_path.read_bytes() == before  # nothing written
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    r = run(vault, "hook", "install", "--client", "codex", "--only", "turn", "--json")
    assert r.exit_code == 0, r.output
    hooks_path = Path(json.loads(r.stdout.splitlines()[0])["path"])
    assert set(json.loads(hooks_path.read_text())["hooks"]) == {"Stop"}


def test_capture_check_refuses_in_one_line(project: Path, vault: Path) -> None:
    with opened(vault) as store:
        store.pause()
        with pytest.raises(MemoryPaused, match=r"all memory paused since .*`memvault resume`"):
            store.check_capture(project_at(project))
        with pytest.raises(MemoryPaused):
            store.check_capture(None)
        store.resume()
        store.check_capture(None)


def test_a_log_row_with_bad_times_is_no_pause(project: Path, vault: Path) -> None:
    with opened(vault) as store:
        with write_transaction(store.con):  # as a hostile or damaged history log could leave it
            store.con.execute("INSERT INTO state.pauses (id, scope, since) VALUES ('x-1', '*', '')")
        assert store.pauses() == []
        store.check_capture(None)


def test_a_pause_made_on_one_device_holds_on_the_other(tmp_path: Path) -> None:
    from test_two_devices_history import two

    a, b, carry = two(tmp_path)
    a.run("pause", "--for", "2h", "--reason", "demo")
    carry()
    b.run("sync", "--no-embed")
    paused = json.loads(b.run("status", "--json").stdout)["paused"]
    assert [(p["scope"], p["reason"]) for p in paused] == [("*", "demo")]
    b.run("rebuild")  # the index is derived: the pause is durable state, and in the vault's log
    assert json.loads(b.run("status", "--json").stdout)["paused"] == paused
    b.run("resume")
    carry()
    a.run("sync", "--no-embed")
    assert json.loads(a.run("status", "--json").stdout)["paused"] == []


def test_the_turn_hook_process_stores_nothing_while_paused(vault: Path, tmp_path: Path, transcripts: Path) -> None:
    from test_daemon_process import daemon
    from test_turn_hook import CC_STOP, Transcript, run_hook, turn_status

    folder = tmp_path / "atlas"
    (folder / ".git").mkdir(parents=True)
    t = Transcript(transcripts / "s-turn.jsonl")
    t.turn("The staging host is called quokkaprime.", "Noted: quokkaprime.")
    stop = dict(CC_STOP, transcript_path=str(t.path), cwd=str(folder))
    assert run(vault, "pause", "--project", str(folder)).exit_code == 0
    with daemon(vault, tmp_path):
        r = run_hook(vault, stop)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
        wait_for(lambda: turn_status(vault)["paused"] == 1, timeout=10)
        assert turn_status(vault)["ingested"] == 0 and sessions(vault) == []
        assert run(vault, "resume").exit_code == 0
        assert run_hook(vault, stop).returncode == 0
        wait_for(lambda: turn_status(vault)["ingested"] == 1, timeout=10)
    assert "quokkaprime" in sessions(vault)[0].read_text(encoding="utf-8")
