"""Every text memvault stores or prints goes through the redactor (issue 32 items 2, 3, 5).

One test per sink, each with a planted credential (all failed on main before
this change): reasons of ``update``/``forget`` and a merge's text (the history
log in the vault, the durable state, ``history`` output), ``history`` output of
a reason stored before redaction reached it, ``import mem0`` metadata in the
front-matter, a link's text in the index, a note's tag, a tool call's shell
command copied into a session note by ``ingest`` (also when the command is
longer than the line that stands for it), and log lines.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import apsw
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli

PW = "Rsn-Pw-91xq"  # a password, after "password:"
TOKEN = "ghp_" + "Qw7eRt9yUi1oPa3sDf5gHj7kLz9xCv2bNm4q"


def run(vault: Path, *args: str, input: str | None = None) -> Any:
    r = CliRunner().invoke(cli, ["--vault", str(vault), *args], input=input)
    assert r.exit_code == 0, r.output
    return r


def _added(vault: Path, text: str) -> str:
    return str(json.loads(run(vault, "add", text, "--json").stdout)["id"])


def _everything(vault: Path, home: Path) -> str:
    """Every file under the vault and every text column of every database in the data dir."""
    texts = [p.read_text("utf-8", "replace") + p.name for p in vault.rglob("*") if p.is_file()]
    texts += [p.read_text("utf-8", "replace") for p in home.rglob("*.log*") if p.is_file()]
    for db in home.rglob("*.db"):
        con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            try:
                rows = con.execute(f'SELECT * FROM "{table}"').fetchall()
            except apsw.Error:
                continue  # an FTS shadow table or a virtual table without its module
            texts += [str(c) for row in rows for c in row if isinstance(c, str)]
        con.close()
    return "\n".join(texts)


def test_reasons_and_merge_texts_are_redacted_everywhere(vault: Path, memvault_env: Path) -> None:
    first = _added(vault, "The deploy host is alpha")
    second = _added(vault, "The deploy host is beta")
    third = _added(vault, "The backup runs at two")
    run(vault, "update", first, "--content", "The deploy host is gamma", "--reason", f"rotated, old password: {PW}")
    run(vault, "merge", first, second, "--content", f"Deploy hosts alpha and beta; the db password: {PW}x")
    run(vault, "forget", third, "--reason", f"it held the token {TOKEN}")
    printed = "".join(run(vault, "history", ref, *flags).output
                      for ref in (first, third) for flags in ((), ("--json",)))
    assert "[redacted]" in printed and "rotated, old password" in printed
    logs = list((vault / "Memory" / ".memvault" / "history").glob("*.jsonl"))
    assert logs and "rotated, old password" in "".join(p.read_text() for p in logs)
    stored = _everything(vault, memvault_env)
    for secret in (PW, TOKEN):
        assert secret not in printed and secret not in stored, secret


def test_history_redacts_a_reason_stored_before_redaction_reached_it(vault: Path) -> None:
    memory = _added(vault, "The deploy host is alpha")
    run(vault, "update", memory, "--content", "The deploy host is gamma", "--reason", "moved")
    with opened(vault) as store:  # as an older memvault stored it
        store.con.execute("UPDATE state.memory_versions SET reason = ?", (f"moved, password: {PW}",))
    for flags in ((), ("--json",)):
        out = run(vault, "history", memory, *flags).output
        assert PW not in out and "moved, password: [redacted]" in out


def test_import_mem0_metadata_tags_and_names_hold_no_secret(vault: Path, tmp_path: Path, memvault_env: Path) -> None:
    export = tmp_path / "mem0.json"
    export.write_text(json.dumps({"results": [
        {"id": "a1", "memory": f"The staging db password is {PW}", "user_id": "ana",
         "metadata": {"api_key": "sk-proj-" + "Q2w3E4r5T6y7U8i9O0p1A2s3D4f5G6h7", "note": f"db password: {PW}y",
                      "category": "ops"}},
        {"id": "a2", "memory": "wifi notes for guests", "user_id": "ana", "categories": ["home", TOKEN]},
    ]}))
    out = run(vault, "import", "mem0", str(export)).output
    assert "2 imported" in out
    notes = list((vault / "Memory").rglob("*.md"))
    assert len(notes) == 2 and any("api_key: '[redacted]'" in p.read_text() for p in notes)
    stored = _everything(vault, memvault_env)
    for secret in (PW, "Q2w3E4r5T6y7U8i9", TOKEN):
        assert secret not in stored, secret


def test_link_text_and_tags_are_indexed_redacted(vault: Path) -> None:
    write(vault, "Other.md", "# Other\n")
    write(vault, "Note.md", f"See [[Other|the password: {PW}]] and [[Other#token {TOKEN}]].\n\n#{TOKEN} #ops\n")
    run(vault, "sync", "--no-embed")
    with opened(vault) as store:
        edges = " ".join(str(c) for row in store.con.execute("SELECT display, anchor FROM edges") for c in row)
        tags = " ".join(t for (t,) in store.con.execute("SELECT tag FROM trace_tags"))
    assert "the password: [redacted]" in edges and PW not in edges and TOKEN not in edges
    assert "ops" in tags and TOKEN.lower() not in tags.lower()


def _claude_line(uuid: str, parent: str | None, role: str, content: Any) -> str:
    return json.dumps({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s-sinks",
                       "timestamp": "2026-11-23T10:00:00Z", "message": {"role": role, "content": content}}) + "\n"


def test_ingest_redacts_tool_calls_and_their_output(vault: Path, tmp_path: Path) -> None:
    pad = "x" * 100  # the token starts near the cut of a tool call's line (120 characters)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        _claude_line("u1", None, "user", "please back up the database")
        + _claude_line("a1", "u1", "assistant", [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f"mysql -u root -p{PW} app"}},
            {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": f"echo {pad} {TOKEN}"}}])
        + _claude_line("u2", "a1", "user", [{"type": "tool_result", "tool_use_id": "t1",
                                       "content": f"warning: password: {PW} on the command line"}]))
    run(vault, "ingest", str(transcript))
    notes = list(vault.rglob("*.md"))
    assert len(notes) == 1
    text = notes[0].read_text()
    assert "tool call: Bash `mysql -u root -p[redacted] app`" in text
    for secret in (PW, TOKEN[:12]):
        assert secret not in text, secret


def test_log_lines_are_redacted(caplog: Any, memvault_env: Path) -> None:
    from memvault.cli import logs

    logs.hook_log(f"session title: deploy with password: {PW}", "session-end")
    record = logging.LogRecord("memvault", logging.WARNING, __file__, 1, f"could not read {TOKEN}", None, None)
    for role in ("daemon", "cli"):
        logs.setup_logging(role)
        handler = logging.getLogger("memvault").handlers[0]
        assert handler.formatter is not None
        assert TOKEN not in handler.formatter.format(record)
    logs.setup_logging("cli")
    text = "".join(p.read_text() for p in memvault_env.rglob("hooks.log*"))
    assert "session title: deploy with password: [redacted]" in text and PW not in text
