"""A new user's first conversation, recalled without knowing a flag (issue 35).

A fresh store, `memvault ingest` of a Claude Code transcript written for this
test, `memvault sync` (the bundled model embeds its ~20 turns), then the
questions its turns answer: the default `memvault context` and `memvault hook
prompt` hand the answering turns to the agent, and a message about nothing
said stays silent. Identity joins a block only when it answers.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault.cli.main import cli

SESSION = "5f1c2d3e-0a1b-4c2d-9e8f-123456789abc"
#: (role, text): a working session where a database move is planned.
TURNS = [
    ("user", "We are moving the reporting data to a new Postgres cluster this quarter."),
    ("assistant", "Understood. Which port will the new cluster listen on?"),
    ("user", "The new database listens on port 6543, not the default one."),
    ("assistant", "Noted, 6543. I will update the connection strings in the deploy scripts."),
    ("user", "Also, the cutover is scheduled for Saturday 14 March at 02:00 UTC."),
    ("assistant", "A Saturday night window keeps the dashboards quiet. Do we freeze writes before it?"),
    ("user", "Yes, writes freeze one hour before the cutover."),
    ("assistant", "I will add the freeze to the runbook."),
    ("user", "Kofi Mensah owns the reporting service; ask him before touching its schema."),
    ("assistant", "Understood, Kofi approves schema changes to reporting."),
    ("user", "The old cluster stays read-only for two weeks after the move."),
    ("assistant", "Then we delete it once nobody reads from it."),
    ("user", "Can you write the migration script in Python rather than bash?"),
    ("assistant", "Sure. I will use psycopg and run it from the ops container."),
    ("user", "The staging copy refreshes every night at midnight."),
    ("assistant", "Good, so tests against staging see yesterday's data."),
]
#: Question -> a phrase of the turn that answers it.
ANSWERS = {
    "what port does the new database use?": "port 6543",
    "when is the cutover scheduled?": "Saturday 14 March",
    "who owns the reporting service?": "Kofi Mensah owns the reporting service",
}


def claude_code_transcript(path: Path) -> Path:
    """The turns as Claude Code writes a session's JSONL (user strings, assistant content blocks)."""
    lines = []
    for n, (role, text) in enumerate(TURNS):
        stamp = f"2026-03-02T10:{n:02d}:00.000Z"
        content: object = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(json.dumps({
            "parentUuid": f"u{n - 1}" if n else None, "isSidechain": False, "userType": "external",
            "cwd": "/home/sam/reporting", "sessionId": SESSION, "version": "2.1.202", "type": role,
            "message": {"role": role, "content": content}, "uuid": f"u{n}", "timestamp": stamp,
        }))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(vault: Path, *args: str, input: str | None = None) -> str:
    r = CliRunner().invoke(cli, ["--vault", str(vault), *args], input=input)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.fixture
def talked(vault: Path, tmp_path: Path) -> Path:
    """A fresh vault with one ingested Claude Code session, synced and embedded."""
    run(vault, "ingest", str(claude_code_transcript(tmp_path / f"{SESSION}.jsonl")))
    run(vault, "sync")
    return vault


def test_the_default_context_and_prompt_hook_hold_the_answering_turns(talked: Path) -> None:
    for question, answer in ANSWERS.items():
        block = run(talked, "context", question, "--no-record")
        assert block.startswith("## Recalled Memory") and answer in block, (question, block)
        prompt = {"session_id": "next", "transcript_path": "", "cwd": "", "permission_mode": "default",
                  "hook_event_name": "UserPromptSubmit", "prompt": question}
        out = run(talked, "hook", "prompt", "--timeout", "120", input=json.dumps(prompt))
        assert answer in out, (question, out)
    assert run(talked, "context", "what is the capital of Peru?", "--no-record") == ""


def test_the_installed_prompt_hook_answers_from_the_transcript(
    talked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's `memvault hook install --client claude-code`, then the
    command it wrote run as Claude Code runs it: a shell, the prompt on stdin."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    run(talked, "hook", "install", "--client", "claude-code")
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    (command,) = [h["command"] for g in settings["hooks"]["UserPromptSubmit"] for h in g["hooks"]
                  if " hook prompt " in h["command"]]
    prompt = {"session_id": "next", "transcript_path": "", "cwd": str(tmp_path), "permission_mode": "default",
              "hook_event_name": "UserPromptSubmit", "prompt": "who owns the reporting service?"}
    done = subprocess.run(command, shell=True, input=json.dumps(prompt), capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Kofi Mensah owns the reporting service" in done.stdout, (done.stdout, done.stderr)
