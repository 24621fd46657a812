"""Two databases, one truth: the derived index can be dropped and rebuilt,
the durable state keeps what only memvault knows, and edits made in the vault
are versions like any other."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.daemon.lock import DaemonLock
from memvault.store.db import index_schema
from memvault.store.db.connection import connect, user_version
from memvault.store.location import vault_data_dir


def run(vault: Path, *args: str) -> CliRunner:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def ids(result) -> str:  # type: ignore[no-untyped-def]
    return json.loads(result.stdout)["id"]


def history(vault: Path, memory_id: str) -> list[tuple[str, str, str | None]]:
    r = run(vault, "history", memory_id, "--json")
    assert r.exit_code == 0, r.output
    return [(v["id"], v["content"], v["reason"]) for v in map(json.loads, r.stdout.splitlines())]


def populated(vault: Path) -> dict[str, str]:
    """A vault with an updated memory, a vault-edited one, a forgotten one,
    a recalled one and a fact with history."""
    moved = ids(run(vault, "add", "Lives in Lisbon", "--json"))
    assert run(vault, "update", moved, "--content", "Lives in Porto", "--reason", "moved").exit_code == 0
    edited = ids(run(vault, "add", "Standup is at 10:00", "--type", "event", "--json"))
    note = next((vault / "Memory/episodic").glob("*.md"))
    note.write_text(note.read_text(encoding="utf-8").replace("10:00", "10:30"), encoding="utf-8")
    gone = ids(run(vault, "add", "Prefers tea over coffee", "--json"))
    assert run(vault, "forget", gone, "--reason", "not true").exit_code == 0
    write(vault, "About me.md", "---\nmemory: source\n---\n- Favourite colour is green\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    write(vault, "About me.md", "---\nmemory: source\n---\n- Favourite colour is dark green\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    recalled = run(vault, "context", "where does the person live").output
    assert "Porto" in recalled
    return {"moved": moved, "edited": edited, "gone": gone}


def facts_of(vault: Path) -> list[tuple[str, str]]:
    r = run(vault, "facts", "About me.md", "--all", "--json")
    return sorted((f["text"], f["status"]) for f in map(json.loads, r.stdout.splitlines()))


def strengths(vault: Path) -> dict[str, float]:
    with opened(vault) as v:
        return dict(v.con.execute("SELECT id, strength FROM traces WHERE kind IN ('memory', 'fact') AND status = 'active'"))


def test_a_vault_edit_of_a_memory_note_is_a_version(vault: Path) -> None:
    mid = ids(run(vault, "add", "Standup is at 10:00", "--json"))
    note = next((vault / "Memory/semantic").glob("*.md"))
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("10:00", "10:30"), encoding="utf-8")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    assert history(vault, mid) == [(mid, "Standup is at 10:30", None), (f"{mid}.v1", "Standup is at 10:00", "edited in the vault")]
    # a save that changes only what the note format normalises makes no version
    note.write_text(note.read_text(encoding="utf-8").replace("10:30", "10:30   ") + "\n\n", encoding="utf-8")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    assert len(history(vault, mid)) == 2
    # an update through the store is the next version, on top of the person's
    assert run(vault, "update", mid, "--content", "Standup is at 11:00").exit_code == 0
    assert [c.strip() for _, c, _ in history(vault, mid)] == [
        "Standup is at 11:00", "Standup is at 10:30", "Standup is at 10:00"]


def test_rebuild_keeps_everything_only_memvault_knows(vault: Path) -> None:
    m = populated(vault)
    before = {k: history(vault, i) for k, i in m.items() if k != "gone"}
    facts_before, strength_before = facts_of(vault), strengths(vault)
    assert any((s or 0) > 0.5 for s in strength_before.values())  # the recall moved a strength
    r = run(vault, "rebuild", "--no-embed", "--json")
    assert r.exit_code == 0, r.output
    restored = json.loads(r.stdout)["restored"]
    assert restored["versions"] == 2 and restored["forgotten"] == 1 and restored["facts"] >= 1
    assert {k: history(vault, i) for k, i in m.items() if k != "gone"} == before
    assert facts_of(vault) == facts_before and strengths(vault) == strength_before
    hits = json.loads(run(vault, "search", "tea", "--include-deleted", "--json").stdout.splitlines()[0])
    assert hits["id"] == m["gone"] and hits["status"] == "deleted"
    assert run(vault, "restore", m["gone"]).exit_code == 0


def test_deleting_the_index_file_by_hand_loses_nothing_either(vault: Path) -> None:
    m = populated(vault)
    before = history(vault, m["moved"])
    with opened(vault) as v:
        index = v.index_path
    for p in index.parent.glob("index.db*"):
        p.unlink()
    assert run(vault, "sync", "--no-embed").exit_code == 0
    assert history(vault, m["moved"]) == before


def test_without_the_state_the_vault_alone_gives_back_its_memories(vault: Path) -> None:
    m = populated(vault)
    shutil.rmtree(vault_data_dir(vault))
    # The history logs gone too (a sync tool that skips dot-folders): only the notes and .trash/ are left.
    shutil.rmtree(vault / "Memory/.memvault/history")
    r = run(vault, "sync", "--no-embed", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["restored"]["from_trash"] == 1
    hit = json.loads(run(vault, "search", "tea", "--include-deleted", "--json").stdout.splitlines()[0])
    assert hit["id"] == m["gone"] and hit["status"] == "deleted"  # same id, from .trash
    assert run(vault, "restore", m["gone"]).exit_code == 0
    assert (vault / "Memory/semantic").exists() and any("tea" in p.read_text() for p in (vault / "Memory").rglob("*.md"))
    assert [c for _, c, _ in history(vault, m["moved"])] == ["Lives in Porto"]  # versions were only memvault's


def test_without_the_state_the_history_logs_give_back_everything(vault: Path) -> None:
    m = populated(vault)
    before = {k: history(vault, i) for k, i in m.items() if k != "gone"}
    shutil.rmtree(vault_data_dir(vault))
    r = run(vault, "rebuild", "--no-embed", "--json")
    assert r.exit_code == 0, r.output
    restored = json.loads(r.stdout)["restored"]
    assert restored["versions"] == 2 and restored["forgotten"] == 1 and restored["from_trash"] == 0
    assert {k: history(vault, i) for k, i in m.items() if k != "gone"} == before
    with opened(vault) as v:
        assert v.con.execute("SELECT reason FROM state.forgotten WHERE memory_id = ?", (m["gone"],)).fetchone() == (
            "not true",)


def test_rebuild_is_refused_while_a_daemon_serves_the_vault(vault: Path) -> None:
    run(vault, "sync", "--no-embed")
    with DaemonLock(vault, vault_data_dir(vault)):
        r = run(vault, "rebuild")
        assert r.exit_code == 1 and "stop it before rebuilding" in r.output and "Traceback" not in r.output
        assert run(vault, "doctor", "--repair").exit_code == 1


def test_doctor_finds_and_repairs(vault: Path) -> None:
    assert run(vault, "doctor").exit_code == 1  # no index yet: says so
    populated(vault)
    r = run(vault, "doctor")
    assert r.exit_code == 0 and "in order" in r.output, r.output
    write(vault, "New.md", "a note the index has not seen\n")
    with opened(vault) as v:
        v.con.execute("INSERT INTO state.recall (trace_id, retrieval_count) VALUES ('f-nowhere', 3)")
        v.con.execute("DELETE FROM traces WHERE id LIKE '%.v1'")  # a version lost from the index
    r = run(vault, "doctor", "--json")
    assert r.exit_code == 1
    found = {f["repair"] for f in json.loads(r.stdout)["findings"]}
    # populated() syncs without embedding: the texts wait for their vectors (a warning).
    assert found == {"sync", "prune", "state", "embed"}
    r = run(vault, "doctor", "--repair", "--json")
    assert r.exit_code == 0, r.output
    assert set(json.loads(r.stdout)["repaired"]) == {"sync", "prune", "state", "embed"}
    r = run(vault, "doctor")
    assert r.exit_code == 0 and r.output.startswith("Everything is in order"), r.output


def test_doctor_rebuilds_a_damaged_full_text_index(vault: Path) -> None:
    populated(vault)
    with opened(vault) as v:
        rowid = v.con.execute("SELECT rowid FROM traces LIMIT 1").fetchone()[0]
        # Make the FTS table disagree with its content table.
        v.con.execute("INSERT INTO traces_fts(rowid, title, content, tags) VALUES (?, 'x', 'ghost words', '')", (rowid,))
    r = run(vault, "doctor", "--json")
    assert r.exit_code == 1 and "fts" in {f["repair"] for f in json.loads(r.stdout)["findings"]}
    assert run(vault, "doctor", "--repair").exit_code == 0
    assert "ghost" not in run(vault, "search", "ghost", "--mode", "keyword").output


def test_an_old_index_moves_its_durable_rows_into_the_state(tmp_path: Path) -> None:
    """m008: an index from before the state database keeps its history."""
    path = tmp_path / "index.db"
    con = apsw.Connection(str(path))
    con.execute("ATTACH DATABASE ? AS state", (str(tmp_path / "state.db"),))
    from memvault.store.db import state_schema

    for i, m in enumerate(index_schema.MIGRATIONS[:7], 1):
        m(con)
    con.execute("PRAGMA user_version = 7")
    for m in state_schema.MIGRATIONS:
        m(con)
    con.execute(f"PRAGMA state.user_version = {len(state_schema.MIGRATIONS)}")
    con.execute(
        "INSERT INTO traces (id, kind, type, title, content, metadata, status, reason, created, updated, "
        "retrieval_count, strength) VALUES "
        "('m-1', 'memory', 'semantic', 'Porto', 'Lives in Porto', '{}', 'active', NULL, 't', 't', 2, 0.7),"
        "('m-1.v1', 'memory', 'semantic', 'Lisbon', 'Lives in Lisbon', '{\"version_of\": \"m-1\", \"version\": 1}', "
        "'superseded', 'moved', 't', 't', 0, 0.5),"
        "('m-2', 'memory', 'semantic', 'Tea', 'Prefers tea', '{}', 'deleted', 'forgotten', 't', 't', 0, 0.5)"
    )
    con.execute("INSERT INTO outbox VALUES ('m-1', 'write', 'Memory/semantic/a.md', 'abc', 1.0)")
    con.execute("INSERT INTO conflicts (trace_id, path, conflict_path, kind, detail, created) VALUES "
                "('m-1', 'a.md', 'a (conflict).md', 'edit', 'x', 't')")
    con.close()
    con = connect(path)
    assert user_version(con) == len(index_schema.MIGRATIONS)
    state = lambda sql: con.execute(sql).fetchall()  # noqa: E731
    assert state("SELECT id, memory_id, version, reason FROM state.memory_versions") == [("m-1.v1", "m-1", 1, "moved")]
    assert state("SELECT memory_id, reason FROM state.forgotten") == [("m-2", "forgotten")]
    assert state("SELECT trace_id, retrieval_count, strength FROM state.recall") == [("m-1", 2, 0.7)]
    assert state("SELECT trace_id, expected_path FROM state.outbox") == [("m-1", "Memory/semantic/a.md")]
    assert json.loads(state("SELECT trace FROM state.outbox")[0][0])["content"] == "Lives in Porto"
    assert state("SELECT conflict_path FROM state.conflicts") == [("a (conflict).md",)]
    assert not state("SELECT name FROM sqlite_master WHERE name IN ('outbox', 'conflicts')")
    con.close()


@pytest.mark.parametrize("damage", ["index", "state"])
def test_a_damaged_database_is_one_clear_line(vault: Path, damage: str) -> None:
    run(vault, "sync", "--no-embed")
    target = vault_data_dir(vault) / f"{damage}.db"
    for p in target.parent.glob(f"{damage}.db*"):
        p.unlink()
    target.write_bytes(b"this is not a database" * 100)
    r = run(vault, "search", "anything")
    assert r.exit_code == 1 and "Traceback" not in r.output and "cannot open index" in r.output


def test_the_store_itself_refuses_a_rebuild_restore_or_repair_while_a_daemon_serves(vault: Path) -> None:
    """The refusal lives behind the API: any front end (not only the CLI) gets it."""
    from memvault.store.serving import DaemonServesError

    run(vault, "sync", "--no-embed")
    with opened(vault) as v, DaemonLock(vault, vault_data_dir(vault)):
        for call in (v.rebuild, lambda: v.doctor(repair=True), lambda: v.restore_backup(vault / "none.zip")):
            with pytest.raises(DaemonServesError, match="serves this vault: stop it before"):
                call()
        assert v.doctor().findings is not None  # checking alone is allowed
