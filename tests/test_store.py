"""The index database: pragmas, migrations, permissions, FTS kept in step."""

from __future__ import annotations

import stat
from pathlib import Path

import apsw
import pytest

from memvault.store import location
from memvault.store.db import index_schema as migrations
from memvault.store.db import records as rec
from memvault.store.db.connection import BUSY_TIMEOUT_MS, IndexDatabaseError, connect, user_version, write_transaction
from memvault.store.retrieval.keyword import keyword_search


@pytest.fixture
def con(tmp_path: Path) -> apsw.Connection:
    c = connect(tmp_path / "data" / "index.db")
    yield c
    c.close()


def _trace(i: str, title: str, content: str, tags: list[str] | None = None) -> rec.TraceRow:
    return rec.TraceRow(id=i, kind="note", type="note", title=title, content=content, tags=tags or [], path=f"{i}.md")


def test_pragmas_applied(con: apsw.Connection) -> None:
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert con.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS
    assert user_version(con) == len(migrations.MIGRATIONS)


def test_private_permissions(tmp_path: Path) -> None:
    path = tmp_path / "d" / "index.db"
    connect(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_data_dir_is_per_vault_and_under_memvault_home(memvault_env: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "one" / "Notes", tmp_path / "two" / "Notes"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    da, db = location.vault_data_dir(a), location.vault_data_dir(b)
    assert da != db
    assert da.parent.parent == memvault_env and da.name.startswith("Notes-")


def test_migrations_are_idempotent_and_newer_schema_refused(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    connect(path).close()
    c = connect(path)  # second open applies nothing and does not fail
    assert user_version(c) == len(migrations.MIGRATIONS)
    c.execute(f"PRAGMA user_version={len(migrations.MIGRATIONS) + 1}")
    c.close()
    with pytest.raises(IndexDatabaseError, match="newer"):
        connect(path)


def test_connect_without_create_refuses_missing(tmp_path: Path) -> None:
    with pytest.raises(IndexDatabaseError):
        connect(tmp_path / "nope.db", create=False)


def test_write_transaction_rolls_back_on_error(con: apsw.Connection) -> None:
    with pytest.raises(RuntimeError):
        with write_transaction(con):
            rec.put_trace(con, _trace("a", "Alpha", "first body"))
            raise RuntimeError("boom")
    assert rec.get_trace(con, "a") is None
    assert keyword_search(con, "alpha") == []


def test_fts_follows_insert_update_delete(con: apsw.Connection) -> None:
    with write_transaction(con):
        rec.put_trace(con, _trace("a", "Alpha", "the quick brown fox", ["animals"]))
    assert [h.id for h in keyword_search(con, "fox")] == ["a"]
    with write_transaction(con):
        rec.put_trace(con, _trace("a", "Alpha", "a lazy dog", ["animals"]))
    assert keyword_search(con, "fox") == []
    assert [h.id for h in keyword_search(con, "dog")] == ["a"]
    with write_transaction(con):
        rec.delete_trace(con, "a")
    assert keyword_search(con, "dog") == []
    assert con.execute("SELECT count(*) FROM traces_fts").fetchone()[0] == 0
    con.execute("INSERT INTO traces_fts(traces_fts) VALUES('integrity-check')")


def test_put_trace_keeps_created_and_retrieval_stats(con: apsw.Connection) -> None:
    t = _trace("a", "Alpha", "x")
    t.created = "2020-01-01T00:00:00+00:00"
    with write_transaction(con):
        rec.put_trace(con, t)
        con.execute("UPDATE traces SET retrieval_count = 7 WHERE id = 'a'")
    t2 = _trace("a", "Alpha 2", "y")
    t2.created = "2024-01-01T00:00:00+00:00"
    with write_transaction(con):
        rec.put_trace(con, t2)
    got = rec.get_trace(con, "a")
    assert got and got.created == "2020-01-01T00:00:00+00:00" and got.retrieval_count == 7 and got.title == "Alpha 2"


def test_rename_trace_carries_edges_and_tags(con: apsw.Connection) -> None:
    with write_transaction(con):
        rec.put_trace(con, _trace("a", "Alpha", "x", ["t"]))
        rec.put_trace(con, _trace("b", "Beta", "y"))
        rec.add_edges(con, "a", [rec.EdgeRow(kind="link", target_name="Beta", target_id="b")])
        rec.add_edges(con, "b", [rec.EdgeRow(kind="link", target_name="Alpha", target_id="a")])
        rec.rename_trace(con, "a", "alpha-id")
    assert [e.target_id for e in rec.edges_from(con, "alpha-id")] == ["b"]
    assert [e.source_id for e in rec.edges_to(con, "alpha-id")] == ["b"]
    assert con.execute("SELECT tag FROM trace_tags WHERE trace_id='alpha-id'").fetchall() == [("t",)]


def test_deleting_trace_cascades_edges_and_tags(con: apsw.Connection) -> None:
    with write_transaction(con):
        rec.put_trace(con, _trace("a", "Alpha", "x", ["t"]))
        rec.add_edges(con, "a", [rec.EdgeRow(kind="link", target_name="B")])
        rec.delete_trace(con, "a")
    assert con.execute("SELECT count(*) FROM edges").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM trace_tags").fetchone()[0] == 0


def test_fresh_index_opened_while_another_connection_creates_it(tmp_path: Path) -> None:
    """Switching a new database to WAL gets SQLITE_BUSY at once (no busy
    handler) while another connection writes it in rollback mode, as the
    first connection to a new index does for an instant: connect() retries."""
    import threading

    path = tmp_path / "index.db"
    creator = apsw.Connection(str(path))
    creator.execute("CREATE TABLE early(x)")
    creator.execute("BEGIN IMMEDIATE")
    creator.execute("INSERT INTO early VALUES (1)")
    released = threading.Event()

    def release_soon() -> None:
        released.wait(0.3)  # a deadline, not a sleep the test relies on: commit then
        creator.execute("COMMIT")

    t = threading.Thread(target=release_soon)
    t.start()
    try:
        con = connect(path)
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        con.close()
    finally:
        released.set()
        t.join()
        creator.close()


def test_tag_rows_name_their_trace_by_rowid_after_inserts_and_updates(con: apsw.Connection) -> None:
    with write_transaction(con):
        rec.put_trace(con, rec.TraceRow(id="a", kind="note", type="note", title="A", content="x", tags=["one"]), new=True)
        rec.put_file(con, rec.FileRow("b.md", "attachment", None, 1, 1))  # moves last_insert_rowid elsewhere
        rec.put_trace(con, rec.TraceRow(id="b", kind="note", type="note", title="B", content="y", tags=["two"]))
        rec.put_trace(con, rec.TraceRow(id="a", kind="note", type="note", title="A", content="z", tags=["one", "three"]))
    wrong = con.execute(
        "SELECT count(*) FROM trace_tags g JOIN traces t ON t.id = g.trace_id WHERE g.trace_rowid IS NOT t.rowid"
    ).fetchone()[0]
    assert wrong == 0 and con.execute("SELECT count(*) FROM trace_tags").fetchone()[0] == 3
