"""`memvault hook`: the real hook JSON of Claude Code and Codex in, text (or silence) out, always exit 0."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.daemon.client import socket_address, socket_path
from memvault.store.memory_store import MemoryStore

MEMVAULT = Path(sys.executable).parent / "memvault"

# The shapes the clients send (Claude Code hooks reference; Codex's generated schemas).
CC_START = {"session_id": "abc123", "transcript_path": "", "cwd": "", "permission_mode": "default",
            "hook_event_name": "SessionStart", "source": "startup", "model": "claude-sonnet-4-5-20250929"}
CC_PROMPT = {"session_id": "abc123", "transcript_path": "", "cwd": "", "permission_mode": "default",
             "hook_event_name": "UserPromptSubmit", "prompt": ""}
CC_END = {"session_id": "abc123", "transcript_path": "", "cwd": "", "permission_mode": "default",
          "hook_event_name": "SessionEnd", "reason": "other"}
CC_COMPACT = {"session_id": "abc123", "transcript_path": "", "cwd": "", "permission_mode": "default",
              "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""}
CODEX_PROMPT = {"session_id": "s-1", "turn_id": "t-1", "transcript_path": None, "cwd": "", "model": "gpt-5-codex",
                "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": ""}


@pytest.fixture
def hooked(vault: Path, tmp_path: Path) -> Path:
    """A vault with identity, project and other memories, indexed (keyword recall: no vectors)."""
    write(vault, "Projects/Billing.md", "# Billing\n\nThe billing service deploys with `make ship` after review.\n")
    with opened(vault) as store:
        store.sync()
        store.add("Works as a backend engineer in Lisbon", "identity")
        store.add("Deploys of the billing service need a second reviewer", "procedural", scope="billing")
        store.add("Prefers tea over coffee in the afternoon", "preference")
    (vault.parent / "billing").mkdir(exist_ok=True)  # the project a session works in (its scope: billing)
    return vault


def in_billing(vault: Path, shape: dict[str, Any], **values: Any) -> dict[str, Any]:
    """Hook input of a session working in the billing project (recall prefers its scope, then user)."""
    return dict(shape, cwd=str(vault.parent / "billing"), **values)


def hook(vault: Path, sub: str, data: dict[str, Any] | str, *args: str) -> Any:
    """Run a hook in-process. Past its budget a hook ends the process (os._exit), which
    would end pytest: these runs get a generous one; budgets are tested in a subprocess."""
    payload = data if isinstance(data, str) else json.dumps(data)
    return CliRunner().invoke(cli, ["--vault", str(vault), "hook", sub, *args, "--timeout", "120"], input=payload)


def log_text(home: Path) -> str:
    path = home / "hooks.log"
    return path.read_text() if path.exists() else ""


def test_session_start_prints_identity_recent_and_project_memories(hooked: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing"  # (the fixture made it)
    r = hook(hooked, "session-start", dict(CC_START, cwd=str(project)))
    assert r.exit_code == 0, r.output
    assert "## Who the person is" in r.output and "backend engineer in Lisbon" in r.output  # identity, always
    assert "second reviewer" in r.output  # the project's memories (scope billing)
    assert "Changed in memory lately" in r.output and "tea over coffee" in r.output


def test_prompt_prints_the_block_when_relevant_and_nothing_otherwise(hooked: Path) -> None:
    r = hook(hooked, "prompt", in_billing(hooked, CC_PROMPT, prompt="who reviews deploys of the billing service?"))
    assert r.exit_code == 0 and "second reviewer" in r.output
    r = hook(hooked, "prompt", in_billing(hooked, CODEX_PROMPT, prompt="who reviews deploys of the billing service?"),
             "--client", "codex")
    assert r.exit_code == 0 and "second reviewer" in r.output
    for irrelevant in ("what is the capital of Peru", "", "   "):
        r = hook(hooked, "prompt", dict(CC_PROMPT, prompt=irrelevant))
        assert r.exit_code == 0 and r.output == "", irrelevant
    r = hook(hooked, "prompt", dict(CC_PROMPT, prompt="billing deploys"), "--what", "all")
    assert "make ship" in r.output  # a note passage too


def test_session_end_hands_the_transcript_to_ingest(hooked: Path, tmp_path: Path, memvault_env: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))  # the client's own folder
    transcript = tmp_path / "claude" / "projects" / "-work-billing" / "t.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(
        '{"type":"user","sessionId":"abc123","timestamp":"2026-11-23T10:00:00Z",'
        '"message":{"role":"user","content":"Remember that I prefer tabs over spaces in Python."}}\n'
        '{"type":"assistant","sessionId":"abc123","timestamp":"2026-11-23T10:00:05Z",'
        '"message":{"role":"assistant","content":[{"type":"text","text":"Noted: tabs in Python."}]}}\n'
    )
    for sub, shape in (("session-end", CC_END), ("pre-compact", CC_COMPACT)):
        r = hook(hooked, sub, dict(shape, transcript_path=str(transcript)), "--client", "codex")
        assert r.exit_code == 0 and r.output == ""
    assert log_text(memvault_env).count(f"ingested {transcript}") == 2
    sessions = list((hooked / "Memory" / "episodic" / "sessions").glob("*.md"))
    assert len(sessions) == 1  # the second hook found the session already there
    text = sessions[0].read_text(encoding="utf-8")
    assert "abc123" in text and "tabs over spaces" in text and "codex" in text


def test_the_end_hooks_read_no_transcript_outside_the_clients_folders(
        hooked: Path, tmp_path: Path, memvault_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the per-turn hook (issue 35): hook input names a path, so session-end and pre-compact read a
    transcript only in the clients' folders (symlinks resolved), else log why and ingest nothing."""
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.delenv("MEMVAULT_TRANSCRIPT_DIRS", raising=False)
    line = ('{"type":"user","sessionId":"s-out","timestamp":"2026-11-23T10:00:00Z",'
            '"message":{"role":"user","content":"Remember that the vault key is under the desk."}}\n')
    outside = tmp_path / "elsewhere" / "notes.jsonl"
    outside.parent.mkdir()
    outside.write_text(line)
    link = claude / "projects" / "-x" / "link.jsonl"  # inside, but leading out
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    for path in (str(outside), str(link), "relative/t.jsonl", str(claude / "projects" / "-x" / "missing.jsonl")):
        for sub, shape in (("session-end", CC_END), ("pre-compact", CC_COMPACT)):
            r = hook(hooked, sub, dict(shape, transcript_path=path))
            assert (r.exit_code, r.output) == (0, "")
    log = log_text(memvault_env)
    assert log.count("outside the transcript folders") == 4 and log.count("is not absolute") == 2
    assert log.count("is not a readable file") == 2 and "ingested" not in log
    assert not list((hooked / "Memory").rglob("*.md")) or not any(
        "under the desk" in p.read_text() for p in (hooked / "Memory").rglob("*.md"))
    # The folder Codex keeps its rollouts in is one of them.
    rollout = tmp_path / "codex" / "sessions" / "2026" / "11" / "23" / "rollout.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text(line)
    r = hook(hooked, "session-end", dict(CC_END, transcript_path=str(rollout)), "--client", "codex")
    tail = log_text(memvault_env)[len(log):]
    assert r.exit_code == 0 and "outside the transcript folders" not in tail and "nothing to ingest" not in tail
    assert f"ingested {rollout}" in tail or "failed" in tail, tail  # read (a rollout ingest may not parse yet)


def test_failures_print_nothing_and_exit_0(hooked: Path, tmp_path: Path, memvault_env: Path) -> None:
    prompt = in_billing(hooked, CC_PROMPT, prompt="who reviews deploys of the billing service?")
    r = CliRunner().invoke(cli, ["--vault", str(tmp_path / "missing"), "hook", "prompt", "--timeout", "120"],
                           input=json.dumps(prompt))
    assert r.exit_code == 0 and r.output == ""
    assert "does not exist" in log_text(memvault_env)
    for garbage in ("not json at all", "[1, 2]", ""):
        r = hook(hooked, "prompt", garbage)
        assert r.exit_code == 0 and r.output == ""
    with opened(hooked) as store:
        index = store.index_path
    index.write_bytes(b"this is not a database" * 100)  # a damaged index
    for path in index.parent.glob("index.db-*"):
        path.unlink()
    r = hook(hooked, "prompt", prompt)
    assert r.exit_code == 0 and r.output == ""
    r = hook(hooked, "session-start", CC_START)
    assert r.exit_code == 0 and r.output == ""
    assert "failed" in log_text(memvault_env)


@contextmanager
def wedged_daemon(store: MemoryStore) -> Iterator[None]:
    """A query socket that accepts connections and never answers."""
    path = socket_path(store.data_dir)
    stop = threading.Event()
    held: list[socket.socket] = []
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with socket_address(path) as addr:
        sock.bind(addr)
    sock.listen(8)
    sock.settimeout(0.05)

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except (TimeoutError, OSError):
                continue

    thread = threading.Thread(target=accept, name="wedged-daemon")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        for c in held:
            c.close()
        sock.close()
        path.unlink(missing_ok=True)


def test_past_its_budget_a_hook_prints_nothing_and_exits_0(hooked: Path, memvault_env: Path) -> None:
    prompt = in_billing(hooked, CC_PROMPT, prompt="who reviews deploys of the billing service?")
    env = dict(os.environ)
    with opened(hooked) as store, wedged_daemon(store):
        start = time.monotonic()
        p = subprocess.run([str(MEMVAULT), "--vault", str(hooked), "hook", "prompt"], input=json.dumps(prompt),
                           capture_output=True, text=True, env=env, timeout=30)
        took = time.monotonic() - start
    assert p.returncode == 0 and p.stdout == "" and p.stderr == ""
    assert took < 10  # the wedged daemon would hold it 30 s; the 0.3 s budget ends it
    assert "gave up after" in log_text(memvault_env) and "budget 0.3s" in log_text(memvault_env)
    # Without a daemon (the default 2 s budget), the same hook answers.
    p = subprocess.run([str(MEMVAULT), "--vault", str(hooked), "hook", "prompt"], input=json.dumps(prompt),
                       capture_output=True, text=True, env=env, timeout=30)
    assert p.returncode == 0 and "second reviewer" in p.stdout


def test_without_a_daemon_a_hook_answers_by_words_from_its_one_store(
        hooked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading the model takes longer than a hook's budget: with no daemon the
    hook answers by words alone, through the store it has (no second one)."""
    from memvault.store.embedding import model

    def no_model(*args: object, **kwargs: object) -> None:
        raise AssertionError("a hook loaded the embedding model")

    opened_stores: list[str | None] = []
    real_open = MemoryStore.open.__func__  # type: ignore[attr-defined]

    def counting_open(cls: type[MemoryStore], vault: str | None = None, overrides: Any = None) -> MemoryStore:
        opened_stores.append(vault)
        return real_open(cls, vault, overrides)

    monkeypatch.setattr(model, "load_embedder", no_model)
    monkeypatch.setattr(MemoryStore, "open", classmethod(counting_open))
    r = hook(hooked, "prompt", in_billing(hooked, CC_PROMPT, prompt="who reviews deploys of the billing service?"))
    assert r.exit_code == 0 and "second reviewer" in r.output
    r = hook(hooked, "session-start", CC_START)
    assert r.exit_code == 0 and "backend engineer in Lisbon" in r.output
    assert len(opened_stores) == 2, opened_stores  # one per hook run
