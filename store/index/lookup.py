"""Read-only questions about the index: find a trace, count things."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from memvault.store.db import records as rec
from memvault.store.db.rows import count, first, rows
from memvault.store.facts.rows import fact_stats
from memvault.vault_io.note import UNDECODABLE

if TYPE_CHECKING:
    from memvault.store.answers.browse.stats import IndexStats
    from memvault.store.answers.browse.trace import Backlink, Link, ShowResult


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
    titled = rows(
        con,
        "SELECT id FROM traces WHERE kind != 'fact' AND title = ? COLLATE NOCASE AND status = 'active' LIMIT 2",
        (ref,),
    )
    if len(titled) == 1:
        return rec.get_trace(con, titled[0][0])
    return None


def find_attachment(con: apsw.Connection, ref: str) -> str | None:
    """The tracked attachment (a file with no trace) at vault path ``ref``,
    case-insensitively, as stored."""
    row = con.execute(
        "SELECT path FROM files WHERE path = ? COLLATE NOCASE AND kind = 'attachment'",
        (ref.strip().lstrip("/").replace("\\", "/"),),
    ).fetchone()
    return row[0] if row else None


def stats(con: apsw.Connection, db_path: Path | None = None) -> IndexStats:
    """Counts of what the index holds, for ``memvault stats`` (with the
    index's path and size when given ``db_path``)."""
    from memvault.store.answers.browse.stats import IndexStats

    def one(sql: str) -> int:
        return count(con, sql)

    facts = fact_stats(con)  # facts from memory sources (see memvault.store.facts.rows)
    files = (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")) if db_path is not None else ()
    return IndexStats(
        notes=one("SELECT count(*) FROM files WHERE kind = 'note'"),
        attachments=one("SELECT count(*) FROM files WHERE kind = 'attachment'"),
        traces=one("SELECT count(*) FROM traces"),
        traces_by_kind={k: n for k, n in rows(con, "SELECT kind, count(*) FROM traces GROUP BY kind ORDER BY kind")},
        edges=one("SELECT count(*) FROM edges"),
        links_unresolved=one(
            f"SELECT count(*) FROM edges WHERE kind IN ({rec.TEXT_KINDS_SQL}) AND target_path IS NULL"
        ),
        links_ambiguous=one("SELECT count(*) FROM edges WHERE ambiguous = 1"),
        tags=one("SELECT count(DISTINCT tag) FROM trace_tags"),
        parse_errors=one("SELECT count(*) FROM files WHERE parse_error IS NOT NULL"),
        read_errors=one("SELECT count(*) FROM files WHERE read_error IS NOT NULL"),
        undecodable=one(f"SELECT count(*) FROM files WHERE parse_error LIKE '{UNDECODABLE}%'"),
        skipped_outside_vault=len(outside_paths(con)),
        conflicts=one("SELECT count(*) FROM state.conflicts"),
        pending_writes=one("SELECT count(*) FROM state.outbox"),
        last_sync=rec.get_meta(con, "last_sync"),
        facts=facts["facts"], facts_superseded=facts["facts_superseded"], fact_sources=facts["fact_sources"],
        secrets_redacted=facts["secrets_redacted"],
        index_path=str(db_path) if db_path is not None else None,
        index_bytes=sum(os.path.getsize(p) for p in files if p.exists()) if db_path is not None else None,
    )


def outside_paths(con: apsw.Connection) -> list[str]:
    """The vault paths the last scans skipped because they lead outside the vault."""
    from memvault.store.index.reconcile import OUTSIDE_META

    return list(json.loads(rec.get_meta(con, OUTSIDE_META) or "[]"))


def undecodable_files(con: apsw.Connection) -> list[tuple[str, str]]:
    """Notes indexed with replacement characters for bytes that are not UTF-8, with the reason."""
    return rows(con, f"SELECT path, parse_error FROM files WHERE parse_error LIKE '{UNDECODABLE}%' ORDER BY path")


def parse_errors(con: apsw.Connection) -> list[tuple[str, str]]:
    """Every note indexed with a parse error, with the error."""
    return rows(con, "SELECT path, parse_error FROM files WHERE parse_error IS NOT NULL ORDER BY path")


def sync_conflicts(con: apsw.Connection) -> list[dict[str, Any]]:
    """Sync tools' conflict copies in the index, each with the note it sits
    beside and whether its text differs from that note's."""
    from memvault.vault_io.sync_conflicts import sync_conflict

    out = []
    for path, tool, original, device, content in con.execute(
        "SELECT path, json_extract(metadata, '$.sync_conflict.tool'), "
        "json_extract(metadata, '$.sync_conflict.original'), json_extract(metadata, '$.sync_conflict.device'), "
        "content FROM traces "
        "WHERE kind = 'note' AND json_valid(metadata) AND json_extract(metadata, '$.sync_conflict') IS NOT NULL "
        "ORDER BY path"
    ):
        row = con.execute(
            "SELECT t.id, t.content FROM files f JOIN traces t ON t.id = f.trace_id WHERE f.path = ?", (original,)
        ).fetchone()
        out.append({
            "id": row[0] if row else None, "note": original, "conflict_note": path, "tool": tool,
            # Whose version the copy holds (the note keeps the one the tool kept).
            "device": device if device is not None else (sc.device if (sc := sync_conflict(path)) else None),
            "differs": row is None or _memory_text(row[1]) != _memory_text(content),
        })
    return out


def _memory_text(body: str) -> str:
    from memvault.vault_io.memory_note import split_related

    return " ".join(split_related(body)[0].split())


def count_notes(con: apsw.Connection) -> int:
    """How many notes the index holds."""
    return count(con, "SELECT count(*) FROM files WHERE kind = 'note'")


def paths_under(con: apsw.Connection, folder: str) -> set[str]:
    """Every indexed path under ``folder`` (vault-relative, no trailing
    slash; "" for the whole vault)."""
    if not folder:
        return {r[0] for r in con.execute("SELECT path FROM files")}
    # "/" + 1 is "0": the range holds exactly the paths that start with "folder/".
    found = con.execute("SELECT path FROM files WHERE path >= ? AND path < ?", (folder + "/", folder + "0"))
    return {r[0] for r in found}


def parse_error(con: apsw.Connection, trace_id: str) -> str | None:
    """Why the front matter of the note of ``trace_id`` could not be read (None: it could, or no note)."""
    row = first(con, "SELECT parse_error FROM files WHERE trace_id = ?", (trace_id,))
    error: str | None = row[0] if row else None
    return error


def describe(con: apsw.Connection, t: rec.TraceRow, vault_name: str) -> ShowResult:
    """One trace as ``memvault show`` prints it."""
    from memvault.store.answers.browse.trace import ShowResult
    from memvault.vault_io.uri import obsidian_uri

    return ShowResult(
        id=t.id, kind=t.kind, type=t.type, title=t.title, path=t.path,
        uri=obsidian_uri(vault_name, t.path) if t.path else None,
        status=t.status, tags=tuple(t.tags), created=t.created, updated=t.updated,
        source=t.source, scope=t.scope, strength=t.strength,
        metadata=t.metadata, parse_error=parse_error(con, t.id), content=t.content,
        links=len(rec.edges_from(con, t.id)),
    )


def _link(e: rec.EdgeRow) -> Link:
    from memvault.store.answers.browse.trace import Link

    status = "ambiguous" if e.ambiguous else "resolved" if e.target_path or e.target_id else "unresolved"
    return Link(kind=e.kind, target=e.target_name, anchor=e.anchor, display=e.display, property=e.prop,
                line=e.line, status=status, target_path=e.target_path, target_id=e.target_id)


def _backlink(con: apsw.Connection, e: rec.EdgeRow) -> Backlink:
    from memvault.store.answers.browse.trace import Backlink

    row = first(con, "SELECT path, title FROM traces WHERE id = ?", (e.source_id,))
    return Backlink(source_id=e.source_id, source_path=row[0] if row else None, source_title=row[1] if row else None,
                    link=_link(e))


def outgoing(con: apsw.Connection, trace_id: str) -> list[Link]:
    """The outgoing edges of a trace, in document order, with resolution status."""
    return [_link(e) for e in rec.edges_from(con, trace_id)]


def incoming(con: apsw.Connection, trace_id: str) -> list[Backlink]:
    """The edges that point at a trace, with their sources."""
    return [_backlink(con, e) for e in rec.edges_to(con, trace_id)]


def incoming_to_path(con: apsw.Connection, path: str) -> list[Backlink]:
    """The edges that point at an attachment (no trace) by its path."""
    from memvault.vault_io.resolve import path_key

    return [_backlink(con, e) for e in rec.edges_to_path(con, path, path_key(path))]
