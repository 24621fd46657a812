"""The per-turn hook (`Stop`): a turn reaches memory while the session goes on.

A real daemon process, real transcripts in Claude Code's JSONL, the hook as
the process a client starts; no fixed sleeps (conditions with deadlines).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import opened, wait_for
from test_client_config import home, invoke  # noqa: F401  (a fake home for client settings)
from test_daemon_process import MEMVAULT, daemon

from memvault.cli.main import cli
from memvault.daemon.client import RemoteError, ask
from memvault.daemon.turn_ingest import TurnIngester, TurnJob
from memvault.daemon.turn_paths import TRANSCRIPT_DIRS_ENV
from memvault.store.location import vault_data_dir

HOOK = [sys.executable, "-I", "-m", "memvault.cli.turn_hook"]
SESSION = "5c1e0d1a-turn-hook"
CC_STOP = {"session_id": SESSION, "transcript_path": "", "cwd": "/tmp", "permission_mode": "default",
           "hook_event_name": "Stop", "stop_hook_active": False}


@pytest.fixture
def transcripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A transcript folder the hook and the daemon (which inherits the environment) accept."""
    folder = tmp_path / "claude" / "projects"
    folder.mkdir(parents=True)
    monkeypatch.setenv(TRANSCRIPT_DIRS_ENV, str(tmp_path / "claude"))
    return folder


class Transcript:
    """A Claude Code session transcript, appended to as the session goes (as Claude Code does)."""

    def __init__(self, path: Path, session: str = SESSION) -> None:
        self.path = path
        self.session = session
        self.parent: str | None = None
        self.clock = 0

    def turn(self, user: str, assistant: str) -> None:
        """Append one exchange: the user's message and the assistant's answer."""
        lines = []
        for role, text in (("user", user), ("assistant", assistant)):
            me = str(uuid.uuid4())
            self.clock += 5
            content: Any = text if role == "user" else [{"type": "text", "text": text}]
            lines.append({"type": role, "uuid": me, "parentUuid": self.parent, "sessionId": self.session,
                          "timestamp": f"2026-11-26T10:{self.clock // 60:02d}:{self.clock % 60:02d}Z",
                          "message": {"role": role, "content": content}})
            self.parent = me
        with open(self.path, "a", encoding="utf-8") as f:
            f.writelines(json.dumps(line) + "\n" for line in lines)


def run_hook(vault: Path, data: dict[str, Any] | str, *args: str) -> subprocess.CompletedProcess[str]:
    """The hook as the client runs it: its own process, JSON on stdin."""
    payload = data if isinstance(data, str) else json.dumps(data)
    return subprocess.run([*HOOK, "--vault", str(vault), "--client", "claude-code", *args], input=payload,
                          capture_output=True, text=True, timeout=30)


def log_text(home: Path) -> str:
    path = home / "hooks.log"
    return path.read_text() if path.exists() else ""


def found(vault: Path, word: str) -> list[dict[str, Any]]:
    """Session-note hits for ``word``, asked of the daemon from this (another) process."""
    result = ask(vault_data_dir(vault), "search", {"query": word, "mode": "keyword", "limit": 5})
    return [h for h in (result or {}).get("hits", []) if "sessions/" in str(h.get("path"))]


def turn_status(vault: Path) -> dict[str, Any]:
    result = ask(vault_data_dir(vault), "ping", {})
    assert result is not None
    return result["turn_ingest"]


def session_note(vault: Path) -> str:
    notes = list((vault / "Memory" / "episodic" / "sessions").glob("*.md"))
    assert len(notes) == 1, notes
    return notes[0].read_text(encoding="utf-8")


def test_a_turn_is_found_from_another_process_within_seconds(
        vault: Path, tmp_path: Path, transcripts: Path, memvault_env: Path) -> None:
    t = Transcript(transcripts / "work" / f"{SESSION}.jsonl")
    t.path.parent.mkdir()
    t.turn("Remember that the staging database is called quokkaprime.", "Noted: staging is quokkaprime.")
    stop = dict(CC_STOP, transcript_path=str(t.path))
    with daemon(vault, tmp_path):
        r = run_hook(vault, stop)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
        wait_for(lambda: found(vault, "quokkaprime"), timeout=5)
        # `memvault search` in a process of its own (another session) finds it too
        p = subprocess.run([*MEMVAULT, "--vault", str(vault), "search", "quokkaprime", "--json"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and "sessions/" in p.stdout, p.stderr

        t.turn("The deploy window is called wombatnight.", "Deploys happen in wombatnight.")
        assert run_hook(vault, stop).returncode == 0
        wait_for(lambda: found(vault, "wombatnight"), timeout=5)
        wait_for(lambda: turn_status(vault)["running"] is None)
        status = turn_status(vault)
        assert status["ingested"] == 2 and status["failed"] == 0 and status["last"]["new_turns"] == 2
        # A session killed now, without its end hook, has lost nothing.
        text = session_note(vault)
        assert text.count("Noted: staging is quokkaprime.") == 1 and text.count("Deploys happen in wombatnight.") == 1

        # The daemon reads only transcripts in the clients' folders, whoever asks.
        with pytest.raises(RemoteError, match="outside the transcript folders"):
            ask(vault_data_dir(vault), "ingest", {"path": "/etc/passwd.jsonl", "session": None, "client": None})

        # The session end only finishes what is left: the turn no hook announced.
        t.turn("Last thing: the cache is numbatfinal.", "Cache noted as numbatfinal.")
        end = dict(stop, hook_event_name="SessionEnd", reason="other")
        r = CliRunner().invoke(cli, ["--vault", str(vault), "hook", "session-end", "--timeout", "120"],
                               input=json.dumps(end))
        assert r.exit_code == 0 and r.output == ""
    log = log_text(memvault_env)
    assert '"action": "updated"' in log and '"new_turns": 2' in log, log
    text = session_note(vault)
    for answer in ("Noted: staging is quokkaprime.", "Deploys happen in wombatnight.", "Cache noted as numbatfinal."):
        assert text.count(answer) == 1, answer  # each turn once


def test_requests_for_one_transcript_coalesce_in_the_daemon(vault: Path, tmp_path: Path, transcripts: Path) -> None:
    t = Transcript(transcripts / f"{SESSION}.jsonl")
    for n in range(1500):  # a long session: its first ingest takes a while
        t.turn(f"Question {n} about the quarterly report and its figures?", f"Answer {n}: the figures hold.")
    args = {"path": str(t.path), "session": SESSION, "client": "claude-code"}
    with daemon(vault, tmp_path):
        replies = [ask(vault_data_dir(vault), "ingest", args)]
        wait_for(lambda: turn_status(vault)["running"] == str(t.path))
        replies += [ask(vault_data_dir(vault), "ingest", args) for _ in range(9)]
        during = turn_status(vault)
        wait_for(lambda: turn_status(vault)["running"] is None and turn_status(vault)["pending"] == 0, timeout=60)
        status = turn_status(vault)
    assert during["running"] == str(t.path)  # every reply came while the first ingest still ran: none waited for it
    assert all(r is not None and r["queued"] for r in replies)
    # nine requests while the first ingest ran: one more job waited for it, standing for all nine
    assert status["requests"] == 10 and status["ingested"] == 2 and status["coalesced"] == 8, status
    assert status["last"]["requests"] == 9
    assert sum(bool(r and r["coalesced"]) for r in replies) == status["coalesced"]
    assert session_note(vault).count("Answer 1499: the figures hold.") == 1


def test_one_pending_job_per_transcript_and_the_latest_wins(vault: Path, transcripts: Path) -> None:
    a, b = transcripts / "a.jsonl", transcripts / "b.jsonl"
    for p in (a, b):
        Transcript(p).turn("hello", "hi")
    gate, calls = threading.Event(), []

    def gated(store: object, job: TurnJob) -> None:
        calls.append((Path(job.path).name, job.session, job.requests))
        assert gate.wait(30)

    with opened(vault) as store:
        ingester = TurnIngester(store, ingest=gated)
        stop = threading.Event()
        worker = threading.Thread(target=ingester.run, args=(stop,))
        worker.start()
        try:
            assert ingester.submit(str(a), "s1", "claude-code")["pending"] == 1
            wait_for(lambda: ingester.status()["running"] == str(a))
            first = ingester.submit(str(a), "s2", "claude-code")  # waits behind the running one
            assert first == {"queued": True, "coalesced": False, "pending": 1, "running": True}
            assert ingester.submit(str(a), "s3", "claude-code")["coalesced"] is True
            assert ingester.submit(str(b), "s1", "codex")["pending"] == 2
            with pytest.raises(ValueError, match="outside the transcript folders"):
                ingester.submit("/etc/hosts.jsonl", None, "claude-code")
            gate.set()
            wait_for(ingester.idle)
        finally:
            gate.set()
            stop.set()
            worker.join(10)
    assert calls == [("a.jsonl", "s1", 1), ("a.jsonl", "s3", 2), ("b.jsonl", "s1", 1)]
    assert ingester.status()["coalesced"] == 1 and ingester.status()["refused"] == 1


def test_without_a_daemon_the_hook_logs_and_exits_0_at_once(
        vault: Path, transcripts: Path, memvault_env: Path) -> None:
    t = Transcript(transcripts / f"{SESSION}.jsonl")
    t.turn("hello there", "hi")
    started = time.monotonic()
    r = run_hook(vault, dict(CC_STOP, transcript_path=str(t.path)))
    took = time.monotonic() - started
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert took < 2.0  # a process start and one failed connect (bench/bench_turn_hook.py measures it)
    log = log_text(memvault_env)
    assert log.count("\n") == 1 and "will be ingested at session end" in log
    assert not (vault / "Memory").exists()  # nothing slow was done in the hook


def test_a_bad_transcript_path_is_one_log_line_and_exit_0(
        vault: Path, tmp_path: Path, transcripts: Path, memvault_env: Path) -> None:
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text('{"role": "user", "content": "x"}\n')
    link = transcripts / "link.jsonl"
    link.symlink_to(outside)  # a link inside that leads out
    folder = transcripts / "folder.jsonl"
    folder.mkdir()
    cases = {
        str(outside): "outside the transcript folders",
        str(link): "outside the transcript folders",
        str(folder): "not a readable file",
        str(transcripts / "missing.jsonl"): "not a readable file",
        "relative.jsonl": "not absolute",
        str(transcripts / "notes.txt"): "not a .jsonl file",
    }
    for path, why in cases.items():
        before = log_text(memvault_env)
        r = run_hook(vault, dict(CC_STOP, transcript_path=path))
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
        new = log_text(memvault_env)[len(before):]
        assert new.count("\n") == 1 and why in new and "not ingested" in new, (path, new)
    for garbage in ("not json", "[1, 2]", "", json.dumps(dict(CC_STOP, transcript_path=None))):
        r = run_hook(vault, garbage)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert log_text(memvault_env).count("no transcript_path") == 4
    # `memvault hook turn` (the slower entry point) does the same
    r = CliRunner().invoke(cli, ["--vault", str(vault), "hook", "turn"], input=json.dumps(dict(CC_STOP)))
    assert r.exit_code == 0 and r.output == "" and log_text(memvault_env).count("no transcript_path") == 5


@pytest.mark.parametrize("client,settings", [("claude-code", ".claude/settings.json"), ("codex", ".codex/hooks.json")])
def test_install_adds_the_stop_hook_and_uninstall_removes_it(
        home: Path, vault: Path, memvault_env: Path, client: str, settings: str) -> None:  # noqa: F811
    path = home / settings
    path.parent.mkdir()
    theirs = {"type": "command", "command": "afplay done.wav"}
    sample = {"hooks": {"Stop": [{"hooks": [theirs]}]}}
    path.write_text(json.dumps(sample))
    assert invoke(vault, "hook", "install", "--client", client).exit_code == 0
    stops = json.loads(path.read_text())["hooks"]["Stop"]
    assert stops[0] == sample["hooks"]["Stop"][0] and len(stops) == 2
    ours = stops[1]["hooks"][0]
    assert "-m memvault.cli.turn_hook" in ours["command"] and str(vault) in ours["command"]
    assert f"--client {client}" in ours["command"] and ours["timeout"] == 5
    again = invoke(vault, "hook", "install", "--client", client)
    assert again.output.startswith("memvault hooks already")  # idempotent
    # the installed command itself runs: no daemon here, so one log line and exit 0
    r = subprocess.run(ours["command"], shell=True, input=json.dumps(dict(CC_STOP, transcript_path="/nowhere.jsonl")),
                       capture_output=True, text=True, timeout=30, env=dict(os.environ))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "") and "outside the transcript folders" in log_text(memvault_env)
    assert invoke(vault, "hook", "uninstall", "--client", client).exit_code == 0
    assert json.loads(path.read_text()) == sample


def test_the_hook_imports_only_what_it_needs(vault: Path, transcripts: Path, memvault_env: Path) -> None:
    """Its start-up is the hook's cost on every turn: no Click, no store, no
    ``socket``/``typing``/``hashlib`` (milliseconds each); the socket file
    name and protocol are the client's."""
    from memvault.cli import turn_hook
    from memvault.daemon import client

    assert (turn_hook.SOCKET_NAME, turn_hook.PROTOCOL) == (client.SOCKET_NAME, client.PROTOCOL)
    t = Transcript(transcripts / f"{SESSION}.jsonl")
    t.turn("hello", "hi")
    probe = ("import sys; from memvault.cli.turn_hook import main; "
             f"main(['--vault', {str(vault)!r}]); print(' '.join(sorted(sys.modules)))")
    p = subprocess.run([sys.executable, "-I", "-c", probe], input=json.dumps(dict(CC_STOP, transcript_path=str(t.path))),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    loaded = set(p.stdout.split())
    assert "memvault.daemon.turn_paths" in loaded and "_socket" not in loaded  # no daemon: not even a connect
    for heavy in ("click", "typing", "socket", "hashlib", "memvault.daemon.client", "memvault.store.memory_store",
                  "apsw", "numpy"):
        assert heavy not in loaded, heavy
    assert "will be ingested at session end" in log_text(memvault_env)
