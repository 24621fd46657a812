"""The index's view of what consolidation knows: kept in line with the durable state.

The index is derived, so everything consolidation adds to it comes from
``state.db`` and is put back after every sync (:func:`apply_durable`, called
by the store's post-sync sequence; each step is one indexed statement per
state row, so a sync that changed nothing pays next to nothing):

* a merged memory is superseded with ``merged_into`` (unless its note is live
  in the vault again: the vault wins, and the merge is over; a note the sync
  tool has yet to move away, its forget still recorded, only waits);
* links and backlinks to a merged memory (by id, or by its note's old name)
  point to the memory it was merged into (:func:`redirect`);
* an open contradiction is a ``contradicts`` edge from the newer claim to the
  older;
* a promoted memory has ``derived_from`` edges to its episodes.
"""

from __future__ import annotations

import json

import apsw

from memvault.store.db.connection import write_transaction
from memvault.store.db.records import TEXT_KINDS_SQL
from memvault.store.db.rows import rows, scalar

CONTRADICTS = "contradicts"
DERIVED_FROM = "derived_from"


def redirect(con: apsw.Connection) -> None:
    """Point links to merged memories at their survivors (in a transaction)."""
    con.execute(
        f"""
        UPDATE edges SET target_id = m.survivor_id,
            target_path = (SELECT path FROM traces WHERE id = m.survivor_id)
        FROM state.merges m
        WHERE (edges.target_id = m.memory_id AND edges.kind IN ({TEXT_KINDS_SQL}))
           OR (edges.target_id IS NULL AND edges.target_path IS NULL AND m.old_key IS NOT NULL
               AND edges.target_key = m.old_key AND edges.kind IN ({TEXT_KINDS_SQL}))
        """
    )


def _merged(con: apsw.Connection) -> None:
    merged = rows(
        con,
        "SELECT m.memory_id, m.survivor_id, t.status, t.path, "
        "EXISTS (SELECT 1 FROM state.forgotten f WHERE f.memory_id = m.memory_id) "
        "FROM state.merges m JOIN traces t ON t.id = m.memory_id",
    )
    for memory_id, survivor_id, status, path, forgotten in merged:
        if status == "active" and path is not None:
            # The person brought the note back from .trash (or an edit beat
            # the merge's move of it), and reading it ended the member's
            # forget: the vault wins. With the forget still there, the merge
            # came in another device's history log before the sync tool
            # moved the note away: the merge waits for it, as the forget does.
            if not forgotten:
                con.execute("DELETE FROM state.merges WHERE memory_id = ?", (memory_id,))
            continue
        if status != "superseded":
            mark_merged(con, memory_id, survivor_id)


def mark_merged(con: apsw.Connection, memory_id: str, survivor_id: str) -> None:
    """A memory is superseded by the one it was merged into (in a transaction)."""
    row = con.execute("SELECT metadata FROM traces WHERE id = ?", (memory_id,)).fetchone()
    if row is None:
        return
    metadata = dict(json.loads(row[0]) if row[0] else {}, merged_into=survivor_id)
    con.execute(
        "UPDATE traces SET status = 'superseded', reason = ?, metadata = ? WHERE id = ?",
        (f"merged into {survivor_id}", json.dumps(metadata, ensure_ascii=False, sort_keys=True, default=str),
         memory_id),
    )


def apply_durable_edges(con: apsw.Connection) -> None:
    """Contradiction and ``derived_from`` edges as the state has them (in a transaction)."""
    con.execute(
        f"""
        INSERT INTO edges (source_id, kind, target_name, target_key, target_id)
        SELECT c.newer_id, '{CONTRADICTS}', c.older_id, '', c.older_id FROM state.contradictions c
        WHERE c.status = 'open' AND EXISTS (SELECT 1 FROM traces WHERE id = c.newer_id)
          AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.source_id = c.newer_id AND e.kind = '{CONTRADICTS}'
                          AND e.target_id = c.older_id)
        """
    )
    con.execute(
        f"""
        DELETE FROM edges WHERE kind = '{CONTRADICTS}' AND source_id IN (
            SELECT newer_id FROM state.contradictions WHERE status != 'open')
          AND NOT EXISTS (SELECT 1 FROM state.contradictions c WHERE c.status = 'open'
                          AND c.newer_id = edges.source_id AND c.older_id = edges.target_id)
        """
    )
    con.execute(
        f"""
        INSERT INTO edges (source_id, kind, target_name, target_key, target_id)
        SELECT l.source_id, l.kind, l.target_id, '', l.target_id FROM state.memory_links l
        WHERE l.kind = '{DERIVED_FROM}' AND EXISTS (SELECT 1 FROM traces WHERE id = l.source_id)
          AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.source_id = l.source_id AND e.kind = l.kind
                          AND e.target_id = l.target_id)
        """
    )


def apply_durable(con: apsw.Connection) -> None:
    """Bring the index in line with consolidation's durable state (idempotent)."""
    if scalar(
        con,
        "SELECT NOT EXISTS (SELECT 1 FROM state.merges) AND NOT EXISTS (SELECT 1 FROM state.contradictions) "
        "AND NOT EXISTS (SELECT 1 FROM state.memory_links)",
    ):
        return
    with write_transaction(con):
        _merged(con)
        redirect(con)
        apply_durable_edges(con)


def drop_edge(con: apsw.Connection, source_id: str, kind: str, target_id: str) -> None:
    """Remove one consolidation edge from the index (its flag or link is undone)."""
    con.execute("DELETE FROM edges WHERE source_id = ? AND kind = ? AND target_id = ?", (source_id, kind, target_id))
