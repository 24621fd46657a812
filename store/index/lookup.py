"""Read-only questions about the index: find a trace, count things."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import apsw

from memvault.store.db import records as rec
from memvault.store.facts.rows import fact_stats


def find_trace(con: apsw.Connection, ref: str) -> rec.TraceRow | None:
    """The trace named by ``ref``: an id, a vault path (``.md`` optional,
    case-insensitive), or a unique note title."""
    t = rec.get_trace(con, ref)
    if t:
        return t
    path = ref.strip().lstrip("/").replace("\\", "/")
    for candidate in (path, path + ".md"):
        row = con.execute(
            "SELECT trace_id FROM files WHERE path = ? COLLATE NOCASE AND trace_id IS NOT NULL", (candidate,)
        ).fetchone()
        if row:
            return rec.get_trace(con, row[0])
    rows = con.execute(
        "SELECT id FROM traces WHERE kind != 'fact' AND title = ? COLLATE NOCASE AND status = 'active' LIMIT 2",
        (ref,),
    ).fetchall()
    if len(rows) == 1:
        return rec.get_trace(con, rows[0][0])
    return None


def find_attachment(con: apsw.Connection, ref: str) -> str | None:
    """The tracked attachment (a file with no trace) at vault path ``ref``,
    case-insensitively, as stored."""
    row = con.execute(
        "SELECT path FROM files WHERE path = ? COLLATE NOCASE AND kind = 'attachment'",
        (ref.strip().lstrip("/").replace("\\", "/"),),
    ).fetchone()
    return row[0] if row else None


def stats(con: apsw.Connection, db_path: Path | None = None) -> dict[str, Any]:
    """Counts of what the index holds, for ``memvault stats``."""

    def one(sql: str) -> int:
        return int(con.execute(sql).fetchone()[0])

    out: dict[str, Any] = {
        "notes": one("SELECT count(*) FROM files WHERE kind = 'note'"),
        "attachments": one("SELECT count(*) FROM files WHERE kind = 'attachment'"),
        "traces": one("SELECT count(*) FROM traces"),
        "traces_by_kind": dict(con.execute("SELECT kind, count(*) FROM traces GROUP BY kind ORDER BY kind").fetchall()),
        "edges": one("SELECT count(*) FROM edges"),
        "links_unresolved": one(
            f"SELECT count(*) FROM edges WHERE kind IN ({rec.TEXT_KINDS_SQL}) AND target_path IS NULL"
        ),
        "links_ambiguous": one("SELECT count(*) FROM edges WHERE ambiguous = 1"),
        "tags": one("SELECT count(DISTINCT tag) FROM trace_tags"),
        "parse_errors": one("SELECT count(*) FROM files WHERE parse_error IS NOT NULL"),
        "read_errors": one("SELECT count(*) FROM files WHERE read_error IS NOT NULL"),
        "conflicts": one("SELECT count(*) FROM conflicts"),
        "pending_writes": one("SELECT count(*) FROM outbox"),
        "last_sync": rec.get_meta(con, "last_sync"),
    }
    # Facts from memory sources: active and superseded, sources, and secrets
    # redacted out of fact text (see memvault.store.facts.rows).
    out.update(fact_stats(con))
    if db_path is not None:
        out["index_path"] = str(db_path)
        out["index_bytes"] = sum(
            os.path.getsize(p) for p in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")) if p.exists()
        )
    return out


def parse_errors(con: apsw.Connection) -> list[tuple[str, str]]:
    """Every note indexed with a parse error, with the error."""
    return con.execute("SELECT path, parse_error FROM files WHERE parse_error IS NOT NULL ORDER BY path").fetchall()
