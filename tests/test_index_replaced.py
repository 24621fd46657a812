"""index.db deleted or replaced while the daemon runs (issue 19 item 11): the
daemon notices (inode check), reopens and indexes the whole vault again; a
CLI process never serves a partial index as the whole."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import apsw
from click.testing import CliRunner
from helpers import opened, wait_for, write
from test_daemon_process import daemon, state_file, stop
from test_daemon_support import indexed

from memvault.cli.main import cli
from memvault.store.location import index_path


def _cli(vault: Path, *args: str) -> list[dict]:
    r = CliRunner().invoke(cli, ["--vault", str(vault), *args, "--json"])
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in r.output.splitlines() if line.startswith("{")]


def _whole(vault: Path, notes: set[str]) -> bool:
    """index.db is there again and holds every note (a fresh connection sees it)."""
    try:
        return notes <= indexed(vault)
    except apsw.Error:
        return False  # not there yet, or being created


def _a_vault(vault: Path) -> tuple[set[str], str]:
    for i in range(5):
        write(vault, f"Notes/n{i}.md", f"# Note {i}\nzebra crossing number {i}\n")
    [added] = _cli(vault, "add", "Prefers dark mode in every editor", "--type", "preference")
    notes = {f"Notes/n{i}.md" for i in range(5)} | {added["path"]}
    return notes, added["id"]


def test_the_daemon_rebuilds_an_index_deleted_under_it(vault: Path, tmp_path: Path) -> None:
    notes, memory_id = _a_vault(vault)
    with daemon(vault, tmp_path) as (proc, _):
        index_path(vault).unlink()  # a person deletes index.db while the daemon runs
        wait_for(lambda: json.loads(state_file(vault).read_text()).get("reopened") == 1, timeout=30)
        wait_for(lambda: _whole(vault, notes), timeout=30)
        write(vault, "Notes/late.md", "# Late\nwritten after the rebuild\n")
        wait_for(lambda: "Notes/late.md" in indexed(vault), timeout=30)  # it writes into the new file
        [again] = _cli(vault, "add", "Prefers dark mode in every editor", "--type", "preference")
        assert again["id"] == memory_id and again["action"] == "duplicate_of"
        assert len(list((vault / "Memory").rglob("*.md"))) == 1  # no second note with the same id
        hits = _cli(vault, "search", "zebra", "--mode", "keyword")
        assert {h["path"] for h in hits} >= {f"Notes/n{i}.md" for i in range(5)}
        code, err = stop(proc)
    assert code == 0, err
    assert "index.db was " in err and "reopening the databases" in err, err  # deleted, or already made anew


def test_the_daemon_reopens_an_index_replaced_under_it(vault: Path, tmp_path: Path) -> None:
    notes, _ = _a_vault(vault)
    stale = tmp_path / "stale.db"
    with opened(vault) as store:
        store.sync()
    shutil.copy(index_path(vault), stale)  # an older copy, put back over the live file
    write(vault, "Notes/new.md", "# New\nzebra written after the copy\n")
    with daemon(vault, tmp_path) as (proc, _):
        wait_for(lambda: "Notes/new.md" in indexed(vault), timeout=30)
        shutil.copy(stale, tmp_path / "swap.db")
        (tmp_path / "swap.db").replace(index_path(vault))  # another inode at the same path
        wait_for(lambda: json.loads(state_file(vault).read_text()).get("reopened") == 1, timeout=30)
        wait_for(lambda: _whole(vault, notes | {"Notes/new.md"}), timeout=30)
        code, err = stop(proc)
    assert code == 0, err
    assert "index.db was replaced" in err


def test_a_cli_never_serves_an_index_that_a_single_write_made(vault: Path) -> None:
    notes, memory_id = _a_vault(vault)
    index_path(vault).unlink()  # no daemon: the next command finds it missing
    [again] = _cli(vault, "add", "Prefers dark mode in every editor", "--type", "preference")
    assert again["id"] == memory_id and again["action"] == "duplicate_of"
    assert notes <= indexed(vault)
    assert len(_cli(vault, "list")) == 1
