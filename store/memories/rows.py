"""Index-side bookkeeping for memories written through the store.

Versions: updating a memory keeps the old text as a superseded snapshot
trace (``<id>.v<n>``) linked from the live trace by a ``supersedes`` edge.
Outbox: every store-side change that must reach the vault is recorded here
in the same transaction as the change, and cleared once its note is written.
Conflicts: where a store version had to be written beside a person's edit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import apsw

from memvault.store.db import records as rec


@dataclass
class OutboxEntry:
    """A note write that has not been confirmed yet."""

    trace_id: str
    action: str  # "write" | "trash" | "restore"
    expected_path: str | None
    expected_hash: str | None
    created: float


@dataclass
class Conflict:
    """A store version written beside a note a person changed meanwhile."""

    id: int
    trace_id: str
    path: str
    conflict_path: str | None
    kind: str
    detail: str
    created: str


def find_by_content_key(con: apsw.Connection, key: str) -> rec.TraceRow | None:
    """The live memory with this dedup key, if any."""
    found = rec.get_traces(con, "content_key = ? AND kind = 'memory' AND status = 'active' LIMIT 1", (key,))
    return found[0] if found else None


def trace_path(con: apsw.Connection, trace_id: str) -> str | None:
    """The vault path of the note that currently holds a trace, if any."""
    row = con.execute("SELECT path FROM files WHERE trace_id = ?", (trace_id,)).fetchone()
    return row[0] if row else None


def synced_hash(con: apsw.Connection, path: str) -> str | None:
    """The hash memvault last indexed for ``path`` (what it believes is on disk)."""
    row = con.execute("SELECT hash FROM files WHERE path = ?", (path,)).fetchone()
    return row[0] if row else None


def snapshot_version(con: apsw.Connection, current: rec.TraceRow, reason: str | None) -> str:
    """Keep ``current`` as a superseded version before it changes; return its id."""
    n = 1 + int(
        con.execute(
            "SELECT count(*) FROM edges WHERE source_id = ? AND kind = 'supersedes'", (current.id,)
        ).fetchone()[0]
    )
    version_id = f"{current.id}.v{n}"
    meta = dict(current.metadata, version_of=current.id, version=n)
    snap = replace(
        current, id=version_id, status="superseded", reason=reason or "updated", path=None,
        metadata=meta, content_key=None, rowid=None,
    )
    rec.put_trace(con, snap)
    # put_trace keeps an existing row's created time; a snapshot is new.
    con.execute("UPDATE traces SET created = ? WHERE id = ?", (current.created, version_id))
    rec.add_edges(con, current.id, [rec.EdgeRow(kind="supersedes", target_id=version_id, target_name=version_id)])
    return version_id


def versions(con: apsw.Connection, trace_id: str) -> list[rec.TraceRow]:
    """Older versions of a trace, newest first, following ``supersedes`` and
    ``updates`` edges (memory updates and fact re-extractions alike)."""
    out: list[rec.TraceRow] = []
    seen = {trace_id}
    frontier = [trace_id]
    while frontier:
        nxt = []
        for tid in frontier:
            for (target,) in con.execute(
                "SELECT target_id FROM edges WHERE source_id = ? AND kind IN ('supersedes', 'updates') "
                "AND target_id IS NOT NULL ORDER BY id DESC",
                (tid,),
            ):
                if target not in seen:
                    seen.add(target)
                    t = rec.get_trace(con, target)
                    if t:
                        out.append(t)
                        nxt.append(target)
        frontier = nxt
    return out


def newer_versions(con: apsw.Connection, trace_id: str) -> list[rec.TraceRow]:
    """Traces that replaced this one (for a version id or a superseded fact), oldest first."""
    out: list[rec.TraceRow] = []
    seen = {trace_id}
    current = trace_id
    while True:
        row = con.execute(
            "SELECT source_id FROM edges WHERE target_id = ? AND kind IN ('supersedes', 'updates') LIMIT 1",
            (current,),
        ).fetchone()
        if not row or row[0] in seen:
            return out
        seen.add(row[0])
        t = rec.get_trace(con, row[0])
        if t is None:
            return out
        out.append(t)
        current = t.id


# -- outbox ------------------------------------------------------------------


def put_outbox(
    con: apsw.Connection, trace_id: str, action: str, expected_path: str | None, expected_hash: str | None
) -> None:
    """Record (or replace) the pending vault write for a trace."""
    con.execute(
        "INSERT OR REPLACE INTO outbox (trace_id, action, expected_path, expected_hash, created) VALUES (?,?,?,?,?)",
        (trace_id, action, expected_path, expected_hash, time.time()),
    )


def get_outbox(con: apsw.Connection, trace_id: str) -> OutboxEntry | None:
    """The pending write of one trace."""
    row = con.execute(
        "SELECT trace_id, action, expected_path, expected_hash, created FROM outbox WHERE trace_id = ?", (trace_id,)
    ).fetchone()
    return OutboxEntry(*row) if row else None


def stale_outbox(con: apsw.Connection, older_than: float) -> list[OutboxEntry]:
    """Pending writes older than ``older_than`` seconds: their writer died."""
    cutoff = time.time() - older_than
    return [
        OutboxEntry(*r)
        for r in con.execute(
            "SELECT trace_id, action, expected_path, expected_hash, created FROM outbox WHERE created <= ? "
            "ORDER BY created",
            (cutoff,),
        )
    ]


def clear_outbox(con: apsw.Connection, trace_id: str) -> None:
    """The write is done (or settled as a conflict)."""
    con.execute("DELETE FROM outbox WHERE trace_id = ?", (trace_id,))


# -- conflicts ---------------------------------------------------------------


def add_conflict(
    con: apsw.Connection, trace_id: str, path: str, conflict_path: str | None, kind: str, detail: str
) -> None:
    """Remember a conflict so ``memvault status`` can report it."""
    con.execute(
        "INSERT INTO conflicts (trace_id, path, conflict_path, kind, detail, created) VALUES (?,?,?,?,?,?)",
        (trace_id, path, conflict_path, kind, detail, rec.now_iso()),
    )


def conflicts(con: apsw.Connection) -> list[Conflict]:
    """Every recorded conflict, newest first."""
    return [
        Conflict(*r)
        for r in con.execute(
            "SELECT id, trace_id, path, conflict_path, kind, detail, created FROM conflicts ORDER BY id DESC"
        )
    ]


def resolve_conflict(con: apsw.Connection, conflict_id: int) -> None:
    """Forget a conflict (its conflict file was merged or deleted)."""
    con.execute("DELETE FROM conflicts WHERE id = ?", (conflict_id,))
