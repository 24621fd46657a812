"""`memvault status` while the vault folder is missing (an unmounted disk):
it reports from the data dir instead of failing on the vault path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import wait_for, write

from memvault.cli.main import cli
from memvault.daemon.status import read_state

pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")


def status(vault: Path, *args: str):
    return CliRunner().invoke(cli, ["--vault", str(vault), "status", *args])


def test_status_of_a_missing_vault_reports_from_the_data_dir(vault: Path, tmp_path: Path) -> None:
    write(vault, "a.md", "alpha")
    assert CliRunner().invoke(cli, ["--vault", str(vault), "sync", "--no-embed"]).exit_code == 0
    os.rename(vault, tmp_path / "away")
    r = status(vault, "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["vault"] == str(vault) and data["vault_missing"] is True
    assert data["running"] is False and data["index"]["notes"] == 1 and data["last_sync"]
    r = status(vault)
    assert r.exit_code == 0, r.output
    assert "missing: the folder does not exist" in r.output and "not running" in r.output
    assert "1 notes" in r.output


def test_status_of_a_vault_memvault_never_knew_is_still_a_usage_error(tmp_path: Path) -> None:
    r = status(tmp_path / "nowhere")
    assert r.exit_code == 2 and "does not exist" in r.output and "Traceback" not in r.output


def test_status_shows_the_daemon_waiting_for_its_vault(vault: Path, tmp_path: Path) -> None:
    from test_daemon_support import running

    write(vault, "a.md", "alpha")
    away = tmp_path / "away"
    with running(vault, publish_interval=0.05) as (runner, _):
        os.rename(vault, away)
        try:
            wait_for(lambda: (read_state(runner.store.data_dir) or {}).get("mode") == "waiting", timeout=15)
            r = status(vault, "--json")
            assert r.exit_code == 0, r.output
            data = json.loads(r.output)
            assert data["vault_missing"] is True and data["running"] is True
            assert data["mode"] == "waiting" and data["pid"] == os.getpid()
            r = status(vault)
            assert r.exit_code == 0 and "waiting for the vault folder to come back" in r.output
        finally:
            os.rename(away, vault)
        wait_for(lambda: runner.mode == "watch", timeout=15)
    r = status(vault, "--json")
    assert r.exit_code == 0 and json.loads(r.output)["vault_missing"] is False
