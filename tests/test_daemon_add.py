"""`memvault add` while a daemon runs: the daemon writes the memory (its
write path and model are loaded), with the result, refusals and exit codes
of an add in-process; the process writes it itself only when the daemon
certainly did nothing, and never writes it a second time."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures.retrieval import support

from memvault.cli.main import cli
from memvault.daemon import client
from memvault.daemon.serve import QueryServer
from memvault.store.memory_store import MemoryStore


@pytest.fixture
def served(tmp_path: Path, memvault_env: Path) -> Iterator[QueryServer]:
    with support.query_server(tmp_path) as srv:
        yield srv


def add(root: Path, *args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, ["--vault", str(root), "add", *args])
    return r.exit_code, r.stdout, r.stderr


def memory_notes(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in (root / "Memory").rglob("*.md")}


def test_the_daemon_writes_the_memory(served: QueryServer) -> None:
    root = served.store.root
    assert served._writer is None
    before, notes = served.requests, memory_notes(root)
    code, out, _ = add(root, "Takes the 7:40 train on weekdays.", "--type", "episodic", "--tag", "commute", "--json")
    assert code == 0, out
    result = json.loads(out)
    assert served.requests == before + 1  # answered by the daemon
    assert served._writer is not None  # written through the daemon's own store, not this process's
    assert result["action"] == "added" and result["version"] == 1
    assert memory_notes(root) - notes == {result["path"]}
    text = (root / result["path"]).read_text(encoding="utf-8")
    assert "Takes the 7:40 train on weekdays." in text and "commute" in text
    # The same text again: the daemon finds the live memory, as the store does in-process.
    code, out, _ = add(root, "takes the 7:40 train on weekdays", "--type", "episodic")
    assert code == 0 and out.startswith(f"Already remembered as {result['id']}")
    assert served.requests == before + 2


@pytest.mark.parametrize("args", [["   "], ["x", "--type", "nonsense"], ["x" * 70_000]],
                         ids=["empty", "unknown type", "too long"])
def test_a_refusal_reads_as_it_does_in_process(served: QueryServer, args: list[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    root = served.store.root
    before, notes = served.requests, memory_notes(root)
    remote = add(root, *args)
    assert served.requests == before + 1
    monkeypatch.setattr(client, "socket_path", lambda data_dir: data_dir / "no-daemon.sock")
    local = add(root, *args)
    assert remote[0] == local[0] != 0
    assert remote[2] == local[2] and len(remote[2].strip().splitlines()) == 1
    assert memory_notes(root) == notes


def test_a_request_the_daemon_refuses_unread_is_written_here(served: QueryServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """An older daemon (no add op) or another configuration: nothing was written there."""
    root = served.store.root
    same = client.config_fingerprint(served.store.settings.values, "add")
    for request in ({"args": {"content": 1}, "config": same}, {"args": {"content": "x"}},
                    {"args": {"content": "x"}, "config": client.config_fingerprint({"memory_folder": "Elsewhere"}, "add")}):
        reply = served.answer(json.dumps({"v": client.PROTOCOL, "op": "add", **request}).encode())
        assert reply.get("ok") is False and "error" not in reply, request  # refused unread
    monkeypatch.setattr(client, "config_fingerprint", lambda values, op="search": "another configuration")
    before, notes = served.requests, memory_notes(root)
    code, out, _ = add(root, "Keeps spare keys with the neighbour.", "--json")
    assert code == 0, out
    assert served.requests == before  # the daemon wrote nothing
    assert memory_notes(root) - notes == {json.loads(out)["path"]}


@pytest.fixture
def mute_daemon(tmp_path: Path, memvault_env: Path) -> Iterator[tuple[Path, list[bytes]]]:
    """A vault whose socket takes a request and never answers (a daemon stopped mid-write)."""
    root = tmp_path / "vault"
    (root / "Memory").mkdir(parents=True)
    (root / "Note.md").write_text("# Note\n", encoding="utf-8")
    store = MemoryStore.open(str(root))
    store.sync()
    path = client.socket_path(store.data_dir)
    store.close()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    got: list[bytes] = []
    done = threading.Event()

    def take() -> None:
        conn, _ = server.accept()
        with conn:
            got.append(client.read_line(conn, 1 << 20) or b"")
            done.wait(10)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    try:
        yield root, got
    finally:
        done.set()
        thread.join(10)
        server.close()


def test_a_daemon_that_took_the_write_and_gave_no_answer_is_not_written_again(
        mute_daemon: tuple[Path, list[bytes]], monkeypatch: pytest.MonkeyPatch) -> None:
    root, got = mute_daemon
    monkeypatch.setattr(client, "REPLY_TIMEOUT", 0.3)
    code, out, err = add(root, "Parks on level 3.")
    assert code == 1 and out == ""
    assert "may be added" in err and len(err.strip().splitlines()) == 1
    assert json.loads(got[0])["op"] == "add"
    assert memory_notes(root) == set()  # not written here as well
