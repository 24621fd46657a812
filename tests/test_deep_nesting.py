"""Deeply nested input is one clear line, never a RecursionError traceback.

``[[[[...]]]]`` a few thousand levels deep is a few KB: Python's json and
PyYAML recurse once per level and raised RecursionError, which no ``except
ValueError`` caught. A ``.base`` file, an import file, a transcript line, a
client config, a list cursor, a hook's stdin and a frame of the daemon's
socket or the MCP server each get the answer a malformed one gets: one line
naming the file or argument, exit 1 or 2 (a hook exits 0 and logs it), and
the daemon's socket answers the next request.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened

from memvault.cli.main import cli

DEPTH = 50_000
DEEP = "[" * DEPTH + "]" * DEPTH
MEMVAULT = Path(sys.executable).parent / "memvault"


def one_clear_line(r: object, exit_code: int, *names: str) -> None:
    out = r.output  # type: ignore[attr-defined]
    assert r.exit_code == exit_code, out  # type: ignore[attr-defined]
    assert "Traceback" not in out and "RecursionError" not in out and out.count("\n") == 1, out
    assert all(name in out for name in names), (names, out)


@pytest.fixture
def indexed(vault: Path) -> Path:
    (vault / "a.md").write_text("# A\n")
    with opened(vault) as store:
        store.sync()
    return vault


@pytest.mark.parametrize("text", [f"filters: {DEEP}\n",
                                  "filters:\n" + "".join("  " * (i + 1) + "and:\n" for i in range(3000)),
                                  "views:\n- type: table\n  filters:\n"
                                  + "".join("  " * (i + 2) + "- and:\n" for i in range(600))])
def test_views_check_of_a_deeply_nested_base_is_one_line(vault: Path, text: str) -> None:
    (vault / "Deep.base").write_text(text)
    r = CliRunner().invoke(cli, ["--vault", str(vault), "views", "check", str(vault / "Deep.base")])
    one_clear_line(r, 1, "Deep.base", "nests too deeply")


@pytest.mark.parametrize("fmt,name,text,why", [
    ("json", "deep.json", DEEP, "nests too deeply"),
    ("jsonl", "deep.jsonl", '{"record": "header", "format": "memvault-export", "version": 2}\n' + DEEP + "\n",
     "nests too deeply"),
    ("mcp-memory", "memory.jsonl", DEEP + "\n", "is not an MCP memory file"),  # its first line is no object
    ("chatgpt", "conversations.json", f"[{DEEP}]", "nests too deeply"),
    ("mem0", "mem0.json", DEEP, "is not a mem0"),
    ("claude", "memories.json", DEEP, "nests too deeply"),
])
def test_an_import_of_deeply_nested_json_is_one_line_naming_the_file(
    indexed: Path, tmp_path: Path, fmt: str, name: str, text: str, why: str
) -> None:
    (tmp_path / name).write_text(text)
    r = CliRunner().invoke(cli, ["--vault", str(indexed), "import", fmt, str(tmp_path / name)])
    assert r.exit_code == 1 and "Traceback" not in r.output and "RecursionError" not in r.output, r.output
    assert name in r.output and why in r.output, r.output


def test_a_deeply_nested_config_file_is_one_line_naming_it(
    indexed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.toml").write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    monkeypatch.setenv("MEMVAULT_CONFIG", str(tmp_path / "config.toml"))
    r = CliRunner().invoke(cli, ["--vault", str(indexed), "status"])
    one_clear_line(r, 2, "config.toml", "nests too deeply")


def test_ingest_of_a_transcript_with_a_deeply_nested_line_skips_it(indexed: Path, tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text(json.dumps({"role": "user", "content": "Hello there, about the quokkas"}) + "\n" + DEEP + "\n"
                 + json.dumps({"role": "assistant", "content": "They live on Rottnest."}) + "\n")
    r = CliRunner().invoke(cli, ["--vault", str(indexed), "ingest", str(t)])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    assert "line 2 is not JSON; skipped" in r.output


def test_a_deeply_nested_cursor_is_a_usage_error(indexed: Path) -> None:
    cursor = base64.urlsafe_b64encode(DEEP.encode()).decode().rstrip("=")
    r = CliRunner().invoke(cli, ["--vault", str(indexed), "list", "--cursor", cursor])
    one_clear_line(r, 2, "is not one this list handed out")


def test_mcp_install_over_a_deeply_nested_client_config_is_one_line(
    indexed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".claude.json").write_text('{"a": ' + DEEP + "}")
    r = CliRunner().invoke(cli, ["--vault", str(indexed), "mcp", "install", "--client", "claude-code"])
    one_clear_line(r, 1, ".claude.json", "nests too deeply")
    assert (tmp_path / ".claude.json").read_text() == '{"a": ' + DEEP + "}"


@pytest.mark.parametrize("hook", ["session-start", "prompt", "session-end"])
def test_a_hook_given_deeply_nested_stdin_prints_nothing_and_exits_0(indexed: Path, hook: str) -> None:
    r = CliRunner().invoke(cli, ["--vault", str(indexed), "hook", hook], input=DEEP)
    assert (r.exit_code, r.output) == (0, "")


def test_the_turn_hook_given_deeply_nested_stdin_logs_one_line(indexed: Path, memvault_env: Path) -> None:
    r = subprocess.run([sys.executable, "-I", "-m", "memvault.cli.turn_hook", "--vault", str(indexed),
                        "--client", "claude-code"], input=DEEP, capture_output=True, text=True, timeout=30,
                       env=dict(os.environ))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert "no transcript_path" in (memvault_env / "hooks.log").read_text()


def test_the_daemon_socket_answers_a_deeply_nested_frame_and_the_next_request(indexed: Path) -> None:
    from memvault.daemon.client import PROTOCOL, socket_path
    from memvault.daemon.serve import QueryServer
    from memvault.store.memory_store import MemoryStore

    srv = QueryServer(MemoryStore.open(str(indexed)), warm=False)
    srv.start()
    try:
        def ask(frame: bytes) -> dict[str, object]:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(10)
                s.connect(str(socket_path(srv.store.data_dir)))
                s.sendall(frame + b"\n")
                data = b""
                while not data.endswith(b"\n"):
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            return json.loads(data)

        bad = ask(b"[" * 4000 + b"]" * 4000)  # within the request limit, thousands deep
        assert bad["ok"] is False and "not JSON" in str(bad), bad
        assert ask(json.dumps({"v": PROTOCOL, "op": "ping", "args": {}}).encode())["ok"] is True
    finally:
        srv.stop()
        srv.store.close()


def test_the_mcp_server_answers_initialize_after_a_deeply_nested_frame(indexed: Path, tmp_path: Path) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    p = subprocess.Popen([str(MEMVAULT), "--vault", str(indexed), "mcp"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(("[" * 5000 + "]" * 5000 + "\n" + json.dumps(init) + "\n").encode())
        p.stdin.flush()
        replies = []
        while not any(r.get("id") == 1 for r in replies):
            line = p.stdout.readline()
            assert line, "the server ended"
            replies.append(json.loads(line))
        assert next(r for r in replies if r.get("id") == 1)["result"]["serverInfo"]["name"]
        p.stdin.close()
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = p.stderr.read().decode() if p.stderr is not None else ""
    assert "Traceback" not in err and "RecursionError" not in err, err


def test_a_deeply_nested_obsidian_app_json_is_read_as_a_malformed_one(indexed: Path) -> None:
    """``.obsidian/app.json`` is the vault's (a sync tool brings it): nested
    too deeply it means no filters, as a malformed one does, and sync goes on."""
    (indexed / ".obsidian").mkdir()
    (indexed / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": ' + DEEP + "}", "utf-8")
    (indexed / "b.md").write_text("# B\n")
    r = CliRunner().invoke(cli, ["--vault", str(indexed), "sync"])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    with opened(indexed) as store:
        assert store.con.execute("SELECT count(*) FROM files WHERE path = 'b.md'").fetchone()[0] == 1
