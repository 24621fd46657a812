"""Retention (issue 36 item 8): `sessions.retention_days` has `consolidate`
move old session notes to `.trash/`; their facts stay live and searchable,
the run is logged, `restore` and `consolidate --undo` bring the note back, a
note a person wrote in is never trashed, and the daemon only proposes it
unless `consolidate.auto` names it. Real files, CliRunner, the daemon's
consolidation service."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import opened, run_scheduled_consolidation

from memvault.cli.main import cli

OLD = "2026-01-05"
RECENT = "2026-02-20"
TODAY = "2026-03-01"
ENV = {"MEMVAULT_SESSIONS_RETENTION_DAYS": "30", "MEMVAULT_EMBEDDING_MODEL": "none"}


def _ingest(vault: Path, tmp_path: Path, name: str, day: str, lines: list[str], env: dict[str, str] = ENV) -> str:
    """A conversation on ``day`` ingested through the CLI; its session note's path."""
    src = tmp_path / f"{name}.jsonl"
    src.write_text("".join(json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": text,
                                       "timestamp": f"{day}T10:{i:02d}:00+00:00"}) + "\n"
                           for i, text in enumerate(lines)), encoding="utf-8")
    result = CliRunner().invoke(cli, ["--vault", str(vault), "ingest", str(src), "--session", name, "--json"],
                                env=env)
    assert result.exit_code == 0, result.output
    return str(json.loads(result.output.splitlines()[-1])["path"])


def _run(vault: Path, *args: str, env: dict[str, str] = ENV, code: int = 0) -> str:
    result = CliRunner().invoke(cli, ["--vault", str(vault), *args], env=env)
    assert result.exit_code == code, result.output
    return result.output


def _search(vault: Path, query: str) -> list[dict[str, object]]:
    out = _run(vault, "search", query, "--mode", "keyword", "--json")
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _back(vault: Path, old: str) -> None:
    """The note is searchable again (its turn), and its fact followed it back."""
    hits = _search(vault, "quokka2")
    assert {h["path"] for h in hits} == {old} and sorted(h["kind"] for h in hits) == ["fact", "turn"], hits


@pytest.fixture
def sessions(vault: Path, tmp_path: Path) -> tuple[str, str]:
    """An old session (ended 55 days before TODAY) and a recent one (9 days)."""
    old = _ingest(vault, tmp_path, "old", OLD, ["I'm a data engineer based in Lisbon.", "Noted.",
                                                "Remember that the staging database is called quokka2.", "Sure."])
    recent = _ingest(vault, tmp_path, "recent", RECENT, ["I prefer short answers with the fix first.", "Ok."])
    return old, recent


def test_off_by_default(vault: Path, sessions: tuple[str, str]) -> None:
    env = {"MEMVAULT_EMBEDDING_MODEL": "none"}
    out = _run(vault, "consolidate", "--today", TODAY, "--json", env=env)
    assert all(json.loads(line).get("kind") != "retention" for line in out.splitlines())
    assert (vault / sessions[0]).is_file() and not (vault / ".trash").exists()


def test_old_session_goes_to_the_trash_its_facts_stay_and_restore_brings_it_back(
        vault: Path, sessions: tuple[str, str]) -> None:
    old, recent = sessions
    before = (vault / old).read_bytes()
    plan = _run(vault, "consolidate", "--dry-run", "--today", TODAY)
    assert f"trash     {old}" in plan and recent not in plan and (vault / old).is_file()  # a dry run moves nothing
    out = _run(vault, "consolidate", "--today", TODAY)
    assert "1 retention" in out and "its facts stay" in out
    trashed = vault / ".trash" / Path(old).name
    assert not (vault / old).exists() and trashed.read_bytes() == before and (vault / recent).is_file()
    hits = _search(vault, "quokka2")
    assert [h["path"] for h in hits] == [f".trash/{Path(old).name}"], hits  # live, pointing at the trash copy
    assert hits[0]["kind"] == "fact" and "The staging database is called quokka2." in str(hits[0]), hits
    log = _run(vault, "consolidate", "--log")
    assert "1 retention" in log
    status = _run(vault, "status")
    assert "1 old session note trashed" in status, status
    note_id = next(line.split(": ", 1)[1] for line in before.decode().splitlines() if line.startswith("id: "))
    restored = _run(vault, "restore", note_id, "--json")
    assert json.loads(restored.splitlines()[-1])["action"] == "restored"
    assert (vault / old).read_bytes() == before and not trashed.exists()
    _back(vault, old)
    # Trashed again by the next run, and that run undone: back again, byte for byte.
    out = _run(vault, "consolidate", "--today", TODAY)
    run = out.split("--undo ")[-1].strip()
    assert not (vault / old).exists()
    _run(vault, "consolidate", "--undo", run)
    assert (vault / old).read_bytes() == before
    _back(vault, old)


def test_a_session_note_a_person_wrote_in_is_never_trashed(vault: Path, tmp_path: Path,
                                                           sessions: tuple[str, str]) -> None:
    old, _ = sessions
    path = vault / old
    path.write_bytes(path.read_bytes() + b"\nMy own thoughts on this chat.\n")
    _run(vault, "sync", "--no-embed")
    out = _run(vault, "consolidate", "--today", TODAY)
    assert "kept 1 old session note with writing of yours" in out and "trash     " not in out
    assert path.read_bytes().endswith(b"My own thoughts on this chat.\n")
    # The conversation grows: memvault revises the note, which keeps the person's lines, and stays kept.
    _ingest(vault, tmp_path, "old", OLD, ["I'm a data engineer based in Lisbon.", "Noted.",
                                          "Remember that the staging database is called quokka2.", "Sure.",
                                          "Thanks.", "Welcome."])
    out = _run(vault, "consolidate", "--today", TODAY)
    assert "kept 1 old session note" in out and path.is_file()


def test_a_rebuilt_index_gets_the_retained_facts_back(vault: Path, sessions: tuple[str, str]) -> None:
    old, _ = sessions
    _run(vault, "consolidate", "--today", TODAY)
    _run(vault, "rebuild")
    hits = _search(vault, "quokka2")
    assert [h["path"] for h in hits] == [f".trash/{Path(old).name}"], hits


def test_the_daemon_proposes_retention_unless_consolidate_auto_names_it(
        vault: Path, sessions: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    old, _ = sessions  # the real clock: January 2026 is more than 30 days before any run of this test
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    for auto, moved in (("decay, contradiction", False), ("decay, contradiction, retention", True)):
        monkeypatch.setenv("MEMVAULT_CONSOLIDATE_AUTO", auto)
        with opened(vault) as v:
            v.sync()
            run_scheduled_consolidation(v)
            run = v.consolidation_runs()[0]
        assert (vault / old).exists() is not moved
        assert (run["counts"].get("retention") == 2) if moved else (run["proposed"].get("retention") == 2), run
    status = _run(vault, "status")
    assert "2 old session notes trashed" in status, status


@pytest.mark.parametrize(("env", "config", "names"), [
    ({"MEMVAULT_SESSIONS_RETENTION_DAYS": "-3"}, "", "MEMVAULT_SESSIONS_RETENTION_DAYS"),
    ({"MEMVAULT_SESSIONS_RETENTION_DAYS": "a month"}, "", "MEMVAULT_SESSIONS_RETENTION_DAYS"),
    ({}, "[sessions]\nretention_days = -1\n", "config.toml"),
    ({}, '[consolidate]\nauto = ["retain"]\n', "consolidate.auto"),
])
def test_a_bad_setting_is_one_line_exit_2(vault: Path, memvault_env: Path, env: dict[str, str], config: str,
                                          names: str) -> None:
    if config:
        (memvault_env / "config.toml").write_text(config, encoding="utf-8")
    result = CliRunner().invoke(cli, ["--vault", str(vault), "consolidate", "--dry-run"], env=env)
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "Traceback" not in result.output
    assert names in result.output, result.output


def test_restoring_a_session_that_is_not_in_the_trash_is_one_line_exit_1(vault: Path,
                                                                        sessions: tuple[str, str]) -> None:
    result = CliRunner().invoke(cli, ["--vault", str(vault), "restore", "s-0000000000000000"], env=ENV)
    assert result.exit_code == 1 and result.output.count("\n") == 1 and "Traceback" not in result.output


def test_another_device_keeps_the_facts_live_whichever_arrives_first(vault: Path, tmp_path: Path,
                                                                     sessions: tuple[str, str]) -> None:
    """Device B sees the note leave the vault before the history log that
    says why: it retires the facts, then makes them live again at the trash
    copy when the log arrives (the order a sync tool delivers files in)."""
    import shutil

    old, _ = sessions
    home_b = tmp_path / "home-b"
    other = tmp_path / "other"
    shutil.copytree(vault, other)
    env_b = {**ENV, "MEMVAULT_HOME": str(home_b)}
    _run(other, "sync", "--no-embed", env=env_b)
    assert [h["path"] for h in _search_env(other, "quokka2", env_b) if h["kind"] == "fact"] == [old]
    _run(vault, "consolidate", "--today", TODAY)
    # First the deletion reaches B, then the trash copy and the history logs.
    (other / old).unlink()
    _run(other, "sync", "--no-embed", env=env_b)
    assert not [h for h in _search_env(other, "quokka2", env_b) if h["kind"] == "fact"]
    for p in [*(vault / ".trash").rglob("*"), *(vault / "Memory" / ".memvault").rglob("*")]:
        if p.is_file():
            target = other / p.relative_to(vault)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, target)
    _run(other, "sync", "--no-embed", env=env_b)
    hits = [h for h in _search_env(other, "quokka2", env_b) if h["kind"] == "fact"]
    assert [h["path"] for h in hits] == [f".trash/{Path(old).name}"], hits


def _search_env(vault: Path, query: str, env: dict[str, str]) -> list[dict[str, object]]:
    out = _run(vault, "search", query, "--mode", "keyword", "--json", env=env)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_a_run_killed_after_the_move_is_settled_and_undoable(vault: Path, sessions: tuple[str, str]) -> None:
    """A writer that died between moving the note and confirming its log row
    (the row still pending, the run still running): the next run settles it
    (confirmed from what the vault shows), marks the run interrupted, and its
    undo brings the note back."""
    from memvault.store.consolidation import rows as clog
    from memvault.store.db.connection import write_transaction

    old, _ = sessions
    before = (vault / old).read_bytes()
    out = _run(vault, "consolidate", "--today", TODAY)
    run = out.split("--undo ")[-1].strip()
    with opened(vault) as v:
        action = next(a for a in clog.actions(v.con, run) if a.kind == "retention")
        with write_transaction(v.con):
            clog.update_action(v.con, run, action.seq, {**(action.undo or {}), "pending": True})
            clog.set_run_status(v.con, run, "running")
    _run(vault, "consolidate", "--today", TODAY)
    log = _run(vault, "consolidate", "--log")
    assert f"{run}" in log and "interrupted" in log and "1 retention" in log, log
    _run(vault, "consolidate", "--undo", run)
    assert (vault / old).read_bytes() == before


def test_an_agent_applies_retention_and_restores_a_session_over_mcp(
        vault: Path, tmp_path: Path, sessions: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the MCP SDK's client against a real `memvault mcp`: the plan
    names both old sessions, applying it by id moves them, `restore` brings
    one back by its id, the run's undo the other."""
    pytest.importorskip("mcp")
    from test_mcp_consolidate import run_session, text

    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    old, recent = sessions
    ids = {p: next(line.split(": ", 1)[1] for line in (vault / p).read_text().splitlines() if line.startswith("id: "))
           for p in sessions}

    async def body(s: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["plan"] = plan = await s.call_tool("consolidate", {})
        out["run"] = await s.call_tool("consolidate", {"apply": plan.structured_content["plan"]})
        out["moved"] = not (vault / old).exists() and not (vault / recent).exists()
        out["restore"] = await s.call_tool("restore", {"id": ids[old]})
        out["undo"] = await s.call_tool("consolidate", {"undo": out["run"].structured_content["run"]})
        return out

    out = run_session(vault, tmp_path / "server.err", body)
    plan = out["plan"].structured_content
    assert sorted(a["detail"]["path"] for a in plan["actions"] if a["kind"] == "retention") == sorted(sessions)
    assert not out["run"].is_error and out["moved"], text(out["run"])
    assert out["restore"].structured_content["action"] == "restored", text(out["restore"])
    assert not out["undo"].is_error, text(out["undo"])
    assert (vault / old).is_file() and (vault / recent).is_file()
