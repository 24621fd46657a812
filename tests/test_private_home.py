"""memvault's data home is private whichever process makes it first.

``hooks.log`` names projects and session titles; the data home holds the
index and the durable state. Whichever front end runs first (a hook, a CLI
command, the MCP server, the daemon), every folder memvault creates on the
way is owner-only (0700) and the log is 0600, whatever the umask. A folder
that already exists (the person made it, or named it in ``MEMVAULT_HOME``)
is left as it is; memvault's own log is tightened to 0600 when an older
memvault left it readable.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault.cli.main import cli

TURN_HOOK = [sys.executable, "-I", "-m", "memvault.cli.turn_hook"]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    """The usual umask, under which a plain mkdir or open makes world-readable files."""
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.fixture
def new_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data home two folders below one that exists: neither is there yet."""
    home = tmp_path / "share" / "memvault"
    monkeypatch.setenv("MEMVAULT_HOME", str(home))
    return home


def test_a_hook_first_makes_the_home_0700_and_its_log_0600(new_home: Path, vault: Path) -> None:
    r = subprocess.run([*TURN_HOOK, "--vault", str(vault), "--client", "claude-code"],
                       input=json.dumps({"transcript_path": "relative.jsonl"}), capture_output=True, text=True,
                       timeout=30, env={**os.environ, "MEMVAULT_HOME": str(new_home)})
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert "not absolute" in (new_home / "hooks.log").read_text()
    assert (mode(new_home.parent), mode(new_home), mode(new_home / "hooks.log")) == (0o700, 0o700, 0o600)


def test_the_cli_first_makes_every_folder_0700(new_home: Path, vault: Path) -> None:
    (vault / "a.md").write_text("# A\n")
    r = CliRunner().invoke(cli, ["--vault", str(vault), "sync"])
    assert r.exit_code == 0, r.output
    made = [new_home.parent, new_home, *[p for p in new_home.rglob("*") if p.is_dir()]]
    assert len(made) >= 4 and {p.relative_to(new_home.parent).as_posix(): mode(p) for p in made} == {
        p.relative_to(new_home.parent).as_posix(): 0o700 for p in made}


def test_the_mcp_servers_tool_cache_first_makes_the_home_0700(new_home: Path) -> None:
    from memvault.cli.clients.mcp_boot import ToolsCache

    ToolsCache(new_home / "mcp-tools.json", "k").save({"tools": []})
    assert (mode(new_home.parent), mode(new_home)) == (0o700, 0o700)
    assert ToolsCache(new_home / "mcp-tools.json", "k").load() == {"tools": []}


def test_the_daemon_lock_first_makes_the_home_0700(new_home: Path, vault: Path) -> None:
    from memvault.daemon.lock import DaemonLock
    from memvault.store.location import vault_data_dir

    lock = DaemonLock(vault, vault_data_dir(vault))
    lock.acquire()
    try:
        assert (mode(new_home.parent), mode(new_home), mode(new_home / "vaults")) == (0o700, 0o700, 0o700)
    finally:
        lock.release()


def test_a_folder_the_person_made_is_left_as_it_is_and_an_old_log_is_tightened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.cli.logs import hook_log

    home = tmp_path / "mine"
    home.mkdir(mode=0o755)
    (home / "hooks.log").write_text("an older memvault's line\n")
    (home / "hooks.log").chmod(0o644)
    monkeypatch.setenv("MEMVAULT_HOME", str(home))
    hook_log("a project and a session title", "session-end")
    assert mode(home) == 0o755  # not memvault's to change
    assert mode(home / "hooks.log") == 0o600
    assert (home / "hooks.log").read_text().count("\n") == 2
