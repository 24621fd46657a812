"""The query server and its client: warm answers, identical to in-process ones."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures.retrieval import support

from memvault.cli.main import cli
from memvault.daemon import client, serve
from memvault.daemon.serve import QueryServer, ServerRunningError
from memvault.store.memory_store import MemoryStore


@pytest.fixture
def own_vault(tmp_path: Path, memvault_env: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(support.VAULT, root)
    support.build(root)
    return root


@pytest.fixture
def server(own_vault: Path):
    srv = QueryServer(MemoryStore.open(str(own_vault)))
    srv.start()
    yield srv
    srv.stop()
    srv.store.close()


def cli_json(root: Path, *args: str) -> list[dict]:
    r = CliRunner().invoke(cli, ["--vault", str(root), *args, "--json"])
    assert r.exit_code == 0, r.output
    return [json.loads(x) for x in r.stdout.splitlines()]


QUERIES = ["low latency sound server for making music on linux", "Dolby Atmos", "components inside a hard disk"]


def test_answers_are_identical_with_and_without_the_server(own_vault: Path) -> None:
    cold = {q: cli_json(own_vault, "search", q, "--explain") for q in QUERIES}
    cold_ctx = cli_json(own_vault, "context", "how do I ship the billing service", "--no-record")
    srv = QueryServer(MemoryStore.open(str(own_vault)))
    srv.start()
    try:
        warm = {q: cli_json(own_vault, "search", q, "--explain") for q in QUERIES}
        warm_ctx = cli_json(own_vault, "context", "how do I ship the billing service", "--no-record")
        assert srv.requests == len(QUERIES) + 1  # they really went to the server
    finally:
        srv.stop()
        srv.store.close()
    assert warm == cold
    assert warm_ctx == cold_ctx and cold_ctx[0]["items"]


def test_socket_is_private_and_removed_on_stop(server: QueryServer) -> None:
    st = os.stat(server.path)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert stat.S_IMODE(os.stat(server.path.parent).st_mode) == 0o700
    server.stop()
    assert not server.path.exists()


def test_a_second_server_is_refused_and_a_stale_socket_is_cleared(server: QueryServer, own_vault: Path) -> None:
    with pytest.raises(ServerRunningError):
        QueryServer(server.store).start()
    server.stop()
    # a crashed daemon leaves its socket file behind: nobody listens on it
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(server.path))
    s.close()
    assert server.path.exists()
    rows = cli_json(own_vault, "search", "Dolby Atmos")  # falls back silently
    assert rows and rows[0]["path"].endswith("Surround Sound Formats.md")
    again = QueryServer(server.store)
    again.start()
    again.stop()


def test_client_falls_back_without_a_server(own_vault: Path, tmp_path: Path) -> None:
    assert client.ask(tmp_path, "search", {"query": "x"}) is None  # no socket at all
    (tmp_path / client.SOCKET_NAME).write_text("not a socket")
    assert client.ask(tmp_path, "search", {"query": "x"}) is None


def test_protocol_errors_and_limits(server: QueryServer, monkeypatch: pytest.MonkeyPatch) -> None:
    assert server.answer(b"not json")["internal"] is True
    assert server.answer(json.dumps({"v": 99, "op": "search"}).encode())["ok"] is False
    assert server.answer(json.dumps({"v": client.PROTOCOL, "op": "drop tables"}).encode())["ok"] is False
    bad = {"v": client.PROTOCOL, "op": "search", "args": {"query": "x", "evil": 1}}
    assert server.answer(json.dumps(bad).encode())["message"] == "bad arguments: search: unknown option 'evil'"
    assert server.answer(json.dumps({"v": client.PROTOCOL, "op": "ping"}).encode())["ok"] is True
    # a different configuration gets no answer: the client computes its own
    other = {"v": client.PROTOCOL, "op": "search", "args": {"query": "x"}, "config": "0" * 16}
    assert server.answer(json.dumps(other).encode()) == {"ok": False, "fallback": True}
    # oversized request: refused without reading it all
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(server.path))
        s.sendall(b"x" * (serve.MAX_REQUEST + 10))
        reply = json.loads(client.read_line(s, 1 << 20) or b"{}")
    assert reply["ok"] is False


def test_silent_client_times_out(own_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve, "READ_TIMEOUT", 0.3)
    srv = QueryServer(MemoryStore.open(str(own_vault)), warm=False)
    srv.start()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(srv.path))
            s.settimeout(5)
            start = time.monotonic()
            assert s.recv(10) == b""  # the server hung up
            assert time.monotonic() - start < 3
    finally:
        srv.stop()
        srv.store.close()


def test_library_errors_come_back_typed(server: QueryServer, own_vault: Path) -> None:
    with pytest.raises(client.RemoteError) as err:
        client.ask(server.store.data_dir, "search", {"query": '"unbalanced', "raw": True}, config=server.store.settings.values)
    assert err.value.exit_code == 2
    r = CliRunner().invoke(cli, ["--vault", str(own_vault), "search", "--raw", '"unbalanced'])
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_client_module_imports_nothing_heavy() -> None:
    code = "import sys, memvault.daemon.client, memvault.cli.main; print(sorted(m for m in ('numpy','fastembed','onnxruntime') if m in sys.modules))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "[]", r.stderr


def test_long_data_dir_paths_go_through_proc(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path = deep / client.SOCKET_NAME
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with client.socket_address(path) as addr:
        assert addr.startswith("/proc/self/fd/")
        s.bind(addr)
    s.listen(1)
    try:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with client.socket_address(path) as addr:
            c.connect(addr)
        c.close()
    finally:
        s.close()
