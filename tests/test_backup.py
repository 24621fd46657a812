"""`memvault export --format sqlite` and `memvault restore-backup`."""

from __future__ import annotations

import json
import threading
import zipfile
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner
from helpers import opened, write
from test_daemon_support import running

from memvault.cli.main import cli
from memvault.store.flows.backup import BackupError
from memvault.store.flows.export import ExportOptions
from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def _versions(con: apsw.Connection) -> set[tuple[str, int]]:
    return {(r[0], r[1]) for r in con.execute("SELECT memory_id, version FROM state.memory_versions")}


def test_a_backup_restores_versions_forgets_and_recall(vault: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    with opened(vault) as store:
        store.sync()
        kept = store.add("Prefers dark mode", "semantic")
        store.update(kept.id, content="Prefers light mode", reason="changed mind")
        gone = store.add("Something to forget", "semantic")
        store.forget(gone.id, reason="obsolete")
        store.context(ContextQuery("light mode")).to_json()
    r = runner.invoke(cli, ["--vault", str(vault), "export", "--format", "sqlite", "--output", str(tmp_path / "backups")])
    assert r.exit_code == 0, r.output
    backup = next((tmp_path / "backups").glob("memvault-backup-vault-*.zip"))
    assert r.output.strip() == f"Backup written to {backup}"
    assert backup.stat().st_mode & 0o777 == 0o600
    with zipfile.ZipFile(backup) as z:
        manifest = json.loads(z.read("manifest.json"))
        assert {"manifest.json", "state.db"} <= set(z.namelist())
    assert manifest["format"] == "memvault-backup" and manifest["vault"] == "vault"
    # The state is lost (a new machine, a deleted data dir): the vault alone
    # has the live memories, the backup everything else.
    with opened(vault) as store:
        data_dir = store.data_dir
    for f in data_dir.glob("state.db*"):
        f.unlink()
    r = runner.invoke(cli, ["--vault", str(vault), "restore-backup", str(backup), "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["kept"] is None and report["rebuild"]["restored"]["versions"] == 1
    with opened(vault) as store:
        assert [h.content for h in store.history(kept.id)] == ["Prefers light mode", "Prefers dark mode"]
        assert store.search(SearchQuery("forget", mode="keyword", include_deleted=True)).to_json()["hits"][0]["status"] == "deleted"
        row = store.con.execute("SELECT retrieval_count FROM state.recall WHERE trace_id = ?", (kept.id,)).fetchone()
        assert row is not None and row[0] >= 1


def test_restoring_keeps_the_state_it_replaces(vault: Path, tmp_path: Path) -> None:
    with opened(vault) as store:
        store.sync()
        store.add("Before the backup", "semantic")
        backup = store.export(ExportOptions(format="sqlite", output=tmp_path)).output
        later = store.add("After the backup", "semantic")
        store.update(later.id, content="After the backup, changed", reason="later")
        report = store.restore_backup(backup)
        assert report.kept and Path(report.kept).name.startswith("state.db.before-restore-")
        # The backup predates the update, but the history log in the vault holds it: it comes back.
        assert (later.id, 1) in _versions(store.con)
        # The memory itself is still in the vault, so it is still a memory.
        assert store.show(later.id).content == "After the backup, changed"
        kept = apsw.Connection(report.kept)
        try:
            assert (later.id, 1) in {(r[0], r[1]) for r in kept.execute("SELECT memory_id, version FROM memory_versions")}
        finally:
            kept.close()


def test_a_backup_taken_during_a_burst_of_daemon_writes_is_consistent(vault: Path, tmp_path: Path) -> None:
    with opened(vault) as store:
        store.sync()
    stop = threading.Event()
    done: list[str] = []
    errors: list[BaseException] = []

    def burst() -> None:
        try:
            with opened(vault) as writer:
                n = 0
                while not stop.is_set() and n < 300:
                    result = writer.add(f"burst memory number {n}", "semantic")
                    writer.update(result.id, content=f"burst memory number {n}, changed", reason="burst")
                    write(vault, f"Notes/burst {n}.md", f"# Burst {n}\nwritten while the backup runs")
                    done.append(result.id)
                    n += 1
        except BaseException as exc:  # surfaced by the test below
            errors.append(exc)

    with running(vault):
        thread = threading.Thread(target=burst, name="burst-writer")
        thread.start()
        try:
            while len(done) < 5 and thread.is_alive():
                threading.Event().wait(0.01)
            with opened(vault) as store:
                before = set(done)
                backup = Path(store.export(ExportOptions(format="sqlite", output=tmp_path)).output)
        finally:
            stop.set()
            thread.join(60)
        r = CliRunner().invoke(cli, ["--vault", str(vault), "restore-backup", str(backup)])
        assert r.exit_code == 1 and "a memvault daemon" in r.output and "stop it before restoring a backup" in r.output
    assert not errors, errors
    with zipfile.ZipFile(backup) as z:
        z.extract("state.db", tmp_path / "x")
    copy = apsw.Connection(str(tmp_path / "x" / "state.db"))
    try:
        assert copy.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        versions = {(r[0], r[1]) for r in copy.execute("SELECT memory_id, version FROM memory_versions")}
    finally:
        copy.close()
    # Every update finished before the backup began is in it; nothing half-written is.
    assert {(i, 1) for i in before} <= versions
    assert all(v == 1 for _, v in versions)
    with opened(vault) as store:
        report = store.restore_backup(backup)
        # What the backup holds, and what the history logs in the vault hold since (every update).
        assert versions <= _versions(store.con) and {(i, 1) for i in done} <= _versions(store.con)
        assert report.sync is not None and not report.sync.unwritten
        assert len(store.search(SearchQuery("burst", mode="keyword", limit=1000)).to_json()["hits"]) >= 2 * len(done)


def test_not_a_backup_and_a_damaged_backup_are_refused(vault: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    (tmp_path / "x.zip").write_bytes(b"not a zip at all")
    r = runner.invoke(cli, ["--vault", str(vault), "restore-backup", str(tmp_path / "x.zip")])
    assert r.exit_code == 1 and "is not a memvault backup (not a zip archive)" in r.output
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as z:
        z.writestr("hello.txt", "hi")
    r = runner.invoke(cli, ["--vault", str(vault), "restore-backup", str(tmp_path / "other.zip")])
    assert r.exit_code == 1 and "no manifest.json" in r.output
    with opened(vault) as store:
        store.sync()
        store.add("A memory worth keeping", "semantic")
        good = Path(store.export(ExportOptions(format="sqlite", output=tmp_path / "b.zip")).output)
    damaged = tmp_path / "damaged.zip"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(damaged, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            broken = data[:4000] + bytes(b ^ 0xFF for b in data[4000:4100]) + data[4100:]
            dst.writestr(info, broken if info.filename == "state.db" else data)
    with opened(vault) as store, pytest.raises(BackupError, match="does not match its checksum"):
        store.restore_backup(damaged)
    with opened(vault) as store:  # nothing was replaced
        assert store.search(SearchQuery("worth keeping", mode="keyword")).to_json()["hits"]
