"""Bulk loads: many notes parsed in worker processes, FTS and edge indexes built once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from helpers import write

from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.index.reconcile import BATCH, BULK_MIN
from memvault.store.memory_store import MemoryStore
from memvault.store.retrieval.keyword import keyword_search


def make_vault(root: Path, n: int) -> None:
    for i in range(n):
        # every note links forward and back, so links cross batch boundaries
        write(root, f"d{i % 7}/note {i}.md", f"---\ntags: [t{i % 5}]\n---\nword{i} body [[note {(i + 1) % n}]] [[note {(i * 37) % n}]]\n")


def test_bulk_load_equals_row_by_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = BULK_MIN + BATCH + 7
    bulk_root, small_root = tmp_path / "bulk", tmp_path / "small"
    make_vault(bulk_root, n)
    make_vault(small_root, n)

    def index(root: Path) -> list[tuple]:
        v = MemoryStore.open(str(root))
        s = v.sync()
        assert s.added == n and not rec.bulk_load_pending(v.con)
        v.con.execute("INSERT INTO traces_fts(traces_fts) VALUES ('integrity-check')")
        assert {r[0] for r in v.con.execute("SELECT name FROM sqlite_master WHERE type='index'")} >= {
            "edges_target_key", "edges_target_id"}
        edges = v.con.execute(
            "SELECT s.path, e.target_path, t.path FROM edges e JOIN traces s ON s.id = e.source_id "
            "LEFT JOIN traces t ON t.id = e.target_id ORDER BY 1, 2"
        ).fetchall()
        assert [h.path for h in keyword_search(v.con, f"word{n - 1}")] == [f"d{(n - 1) % 7}/note {n - 1}.md"]
        v.close()
        return edges

    bulk_edges = index(bulk_root)
    monkeypatch.setattr("memvault.store.index.reconcile.BULK_MIN", 10**9)
    monkeypatch.setattr("memvault.vault_io.bulk.POOL_MIN", 10**9)
    small_edges = index(small_root)
    assert bulk_edges == small_edges
    assert all(target == via_id for _, target, via_id in bulk_edges)  # every note link carries its trace id


def test_interrupted_bulk_load_is_finished_by_next_sync(vault: Path) -> None:
    write(vault, "a.md", "alpha words")
    v = MemoryStore.open(str(vault))
    v.sync()
    with write_transaction(v.con):  # a loader that died after writing rows without FTS
        rec.begin_bulk_load(v.con)
        rec.put_trace(v.con, rec.TraceRow(id="x", kind="note", type="note", title="Orphan", content="zeta words"))
    assert keyword_search(v.con, "zeta") == []
    v.sync()
    assert not rec.bulk_load_pending(v.con)
    assert [h.id for h in keyword_search(v.con, "zeta")] == ["x"]
    v.close()


def test_stop_during_pooled_read_leaves_no_workers(tmp_path: Path) -> None:
    root = tmp_path / "v"
    make_vault(root, 900)

    class Stop(Exception):
        pass

    def progress(done: int, total: int) -> None:
        if done > 100:
            raise Stop

    v = MemoryStore.open(str(root))
    with pytest.raises(Stop):
        v.sync(progress=progress)
    assert multiprocessing.active_children() == []
    assert v.con.execute("SELECT count(*) FROM files").fetchone()[0] <= BATCH
    v.close()


def test_a_streamed_first_index_lets_go_of_written_notes_but_not_of_sources(tmp_path: Path) -> None:
    # More than two batches, with memory sources scattered through them: each
    # gets its facts, though the reconcile keeps only what an observer wants.
    root = tmp_path / "vault"
    n = 2 * BATCH + 50
    make_vault(root, n)
    sources = [3, BATCH + 11, 2 * BATCH + 40]
    for i in sources:
        write(root, f"about {i}.md", f"---\nmemory_source: true\n---\n- Prefers tea number {i}\n")
    v = MemoryStore.open(str(root))
    kept: list[int] = []
    # Reaching the reconciler opens the connection, which would index a never-synced
    # vault at once; this test watches that first index, so it holds that back.
    v._syncing = True
    observer = v.reconciler.observers[0]
    v._syncing = False
    real = observer.notes_changed

    def counting(written, removed):  # type: ignore[no-untyped-def]
        kept.append(len(written))
        return real(written, removed)

    observer.notes_changed = counting  # type: ignore[method-assign]
    s = v.sync()
    assert s.added == n + len(sources)
    # the sources, and at most the last (partial) batch: never the whole vault
    assert len(kept) == 1 and len(sources) <= kept[0] <= len(sources) + (n + len(sources)) % BATCH
    texts = {r[0] for r in v.con.execute("SELECT content FROM traces WHERE kind = 'fact' AND status = 'active'")}
    assert all(any(f"tea number {i}" in t for t in texts) for i in sources)
    # links across the let-go batches still resolve
    assert v.con.execute("SELECT count(*) FROM edges WHERE target_path IS NOT NULL AND target_id IS NULL").fetchone()[0] == 0
    v.close()
