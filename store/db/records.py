"""Reading and writing the rows of the index: files, traces, tags, edges.

These functions run inside a transaction the caller opened with
:func:`memvault.store.db.connection.write_transaction`; none of them commits. They
treat paths as opaque strings: the store never looks at the vault itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import apsw

from memvault.store.db.rows import scalar

#: Edge kinds that come from a note's own text; rewritten on every re-index.
TEXT_EDGE_KINDS = ("link", "embed", "property", "related")
TEXT_KINDS_SQL = ",".join(f"'{k}'" for k in TEXT_EDGE_KINDS)


def now_iso() -> str:
    """The current UTC time as ISO 8601 with seconds, the store's timestamp form."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


@dataclass
class FileRow:
    """One tracked vault file."""

    path: str
    kind: str  # "note" | "attachment"
    trace_id: str | None
    mtime_ns: int
    size: int
    hash: str | None = None
    parse_error: str | None = None
    read_error: str | None = None
    #: The inode change time when recorded; 0 when unknown or when the file
    #: changed too recently to trust its timestamps (read it again next time).
    ctime_ns: int = 0
    #: The inode number when recorded; 0 when unknown (read it again next time).
    inode: int = 0


@dataclass
class TraceRow:
    """One trace as stored. ``tags`` keeps the first spelling of each tag."""

    id: str
    kind: str  # "note" | "memory" | "fact"
    type: str
    title: str
    content: str
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    path: str | None = None
    source: str | None = None
    scope: str | None = None
    strength: float | None = None
    status: str = "active"
    reason: str | None = None
    created: str = ""
    updated: str = ""
    retrieval_count: int = 0
    last_access: str | None = None
    rowid: int | None = None
    content_key: str | None = None


@dataclass
class EdgeRow:
    """One typed edge from a trace."""

    kind: str
    target_name: str = ""
    target_key: str = ""
    target_path: str | None = None
    target_id: str | None = None
    anchor: str | None = None
    display: str | None = None
    prop: str | None = None
    line: int | None = None
    ambiguous: bool = False
    source_id: str = ""
    id: int | None = None


# -- files -------------------------------------------------------------------

_FILE_COLS = "path, kind, trace_id, mtime_ns, size, hash, parse_error, read_error, ctime_ns, inode"


def load_files(con: apsw.Connection) -> dict[str, FileRow]:
    """Every tracked file, by path."""
    return {row[0]: FileRow(*row) for row in con.execute(f"SELECT {_FILE_COLS} FROM files")}


def get_file(con: apsw.Connection, path: str) -> FileRow | None:
    """The tracked file at ``path``, if any."""
    row = con.execute(f"SELECT {_FILE_COLS} FROM files WHERE path = ?", (path,)).fetchone()
    return FileRow(*row) if row else None


_PUT_FILE = f"INSERT OR REPLACE INTO files ({_FILE_COLS}, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)"


def _file_values(f: FileRow, now: str) -> tuple[Any, ...]:
    return (f.path, f.kind, f.trace_id, f.mtime_ns, f.size, f.hash, f.parse_error, f.read_error, f.ctime_ns, f.inode,
            now)


def put_file(con: apsw.Connection, f: FileRow) -> None:
    """Insert or replace a file row."""
    con.execute(_PUT_FILE, _file_values(f, now_iso()))


def put_files(con: apsw.Connection, files: Sequence[FileRow]) -> None:
    """:func:`put_file` for each of ``files``, in order, in one statement."""
    now = now_iso()
    con.executemany(_PUT_FILE, [_file_values(f, now) for f in files])


def touch_file(
    con: apsw.Connection, path: str, mtime_ns: int, size: int, ctime_ns: int = 0, inode: int = 0
) -> None:
    """Record a new mtime/size/ctime/inode for a file whose content did not change."""
    con.execute(
        "UPDATE files SET mtime_ns = ?, size = ?, ctime_ns = ?, inode = ?, read_error = NULL WHERE path = ?",
        (mtime_ns, size, ctime_ns, inode, path),
    )


def set_read_error(con: apsw.Connection, path: str, message: str | None) -> None:
    """Remember why a tracked file could not be read this time."""
    con.execute("UPDATE files SET read_error = ? WHERE path = ?", (message, path))


def delete_file(con: apsw.Connection, path: str) -> None:
    """Stop tracking ``path``."""
    con.execute("DELETE FROM files WHERE path = ?", (path,))


# -- traces ------------------------------------------------------------------

_TRACE_COLS = (
    "id, kind, type, title, content, tags, metadata, path, source, scope, strength, "
    "status, reason, created, updated, retrieval_count, last_access, rowid, content_key"
)


def _trace_from_row(row: Sequence[Any]) -> TraceRow:
    values = list(row)
    values[5] = values[5].split(" ") if values[5] else []
    values[6] = json.loads(values[6]) if values[6] else {}
    return TraceRow(*values)


#: The fields of a trace that a JSON snapshot keeps (not its rowid, nor the
#: content key, which is derived from type, scope and content).
_SNAPSHOT_FIELDS = (
    "id", "kind", "type", "title", "content", "tags", "metadata", "path", "source", "scope", "strength",
    "status", "reason", "created", "updated", "retrieval_count", "last_access",
)


def trace_json(t: TraceRow) -> str:
    """A trace as a JSON snapshot (for the durable state)."""
    return json.dumps({f: getattr(t, f) for f in _SNAPSHOT_FIELDS}, ensure_ascii=False, sort_keys=True, default=str)


def trace_from_json(text: str) -> TraceRow:
    """The trace a :func:`trace_json` snapshot holds."""
    data = json.loads(text)
    return TraceRow(**{f: data[f] for f in _SNAPSHOT_FIELDS if f in data})


def get_trace(con: apsw.Connection, trace_id: str) -> TraceRow | None:
    """The trace with id ``trace_id``, if any."""
    row = con.execute(f"SELECT {_TRACE_COLS} FROM traces WHERE id = ?", (trace_id,)).fetchone()
    return _trace_from_row(row) if row else None


def get_traces(con: apsw.Connection, where: str, params: Sequence[Any] = ()) -> list[TraceRow]:
    """Traces matching an SQL condition (``where`` is trusted code, not input)."""
    return [_trace_from_row(r) for r in con.execute(f"SELECT {_TRACE_COLS} FROM traces WHERE {where}", params)]


#: Insert a trace or update it in place (:func:`put_trace`).
_PUT_TRACE = """
    INSERT INTO traces (id, kind, type, title, content, tags, metadata, path, source, scope,
                        strength, status, reason, created, updated, content_key)
    VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
    ON CONFLICT(id) DO UPDATE SET
        kind = excluded.kind, type = excluded.type, title = excluded.title,
        content = excluded.content, tags = excluded.tags, metadata = excluded.metadata,
        path = excluded.path, source = excluded.source, scope = excluded.scope,
        -- Recall moves strength in the durable state; the note's value is
        -- only a snapshot from the store's last write of it.
        strength = coalesce(
            (SELECT r.strength FROM state.recall r WHERE r.trace_id = excluded.id),
            excluded.strength, traces.strength),
        status = excluded.status, reason = excluded.reason, updated = excluded.updated,
        content_key = excluded.content_key
    RETURNING rowid
"""
_PUT_TAG = "INSERT OR IGNORE INTO trace_tags (trace_id, tag, trace_rowid) VALUES (?, ?, ?)"


def _trace_values(t: TraceRow, now: str) -> tuple[Any, ...]:
    return (
        t.id, t.kind, t.type, t.title, t.content, " ".join(t.tags),
        json.dumps(t.metadata, ensure_ascii=False, sort_keys=True, default=str), t.path, t.source, t.scope,
        t.strength, t.status, t.reason, t.created or now, t.updated or now, t.content_key,
    )


def put_trace(con: apsw.Connection, t: TraceRow, *, new: bool = False) -> None:
    """Insert a trace, or update it in place keeping its creation time and
    retrieval statistics (which belong to the index, not to the note).
    ``new``: the caller knows the id is not in the index (no old tags)."""
    rowid = scalar(con, _PUT_TRACE, _trace_values(t, now_iso()))
    if not new:
        con.execute("DELETE FROM trace_tags WHERE trace_id = ?", (t.id,))
    if t.tags:
        con.executemany(_PUT_TAG, [(t.id, tag.lower(), rowid) for tag in t.tags])


def add_traces(con: apsw.Connection, traces: Sequence[TraceRow]) -> None:
    """:func:`put_trace` (``new=True``) for each of ``traces``, in order:
    one statement for the traces, one for their tags."""
    now = now_iso()
    rowids = [r[0] for r in con.executemany(_PUT_TRACE, [_trace_values(t, now) for t in traces])]
    tags = [(t.id, tag.lower(), rowid) for t, rowid in zip(traces, rowids, strict=True) for tag in t.tags]
    if tags:
        con.executemany(_PUT_TAG, tags)


def rename_trace(con: apsw.Connection, old_id: str, new_id: str) -> None:
    """Give a trace a new id (its note gained or changed a front-matter ``id``).

    Edges and tags follow through ``ON UPDATE CASCADE``; links that other
    traces resolved to the old id are pointed at the new one.
    """
    con.execute("UPDATE traces SET id = ? WHERE id = ?", (new_id, old_id))
    con.execute("UPDATE edges SET target_id = ? WHERE target_id = ?", (new_id, old_id))
    con.execute("UPDATE files SET trace_id = ? WHERE trace_id = ?", (new_id, old_id))
    # What the durable state keeps about the trace follows it.
    con.execute("UPDATE OR IGNORE state.recall SET trace_id = ? WHERE trace_id = ?", (new_id, old_id))
    # A version number the new id holds already (two notes' versions met under
    # one id) stays under the old id: kept, never a reason for the batch to fail.
    con.execute("UPDATE OR IGNORE state.memory_versions SET memory_id = ? WHERE memory_id = ?", (new_id, old_id))
    con.execute("UPDATE OR IGNORE state.forgotten SET memory_id = ? WHERE memory_id = ?", (new_id, old_id))
    con.execute("UPDATE state.fact_history SET source_id = ? WHERE source_id = ?", (new_id, old_id))
    con.execute("UPDATE state.fact_history SET replaced_by = ? WHERE replaced_by = ?", (new_id, old_id))


def delete_trace(con: apsw.Connection, trace_id: str) -> None:
    """Remove a trace and its outgoing edges; links to it become unresolved."""
    con.execute("DELETE FROM traces WHERE id = ?", (trace_id,))
    con.execute("UPDATE edges SET target_id = NULL WHERE target_id = ?", (trace_id,))


def set_status(con: apsw.Connection, trace_id: str, status: str, reason: str | None = None) -> None:
    """Mark a trace active, superseded or deleted."""
    con.execute(
        "UPDATE traces SET status = ?, reason = ?, updated = ? WHERE id = ?",
        (status, reason, now_iso(), trace_id),
    )


# -- edges -------------------------------------------------------------------

_EDGE_COLS = (
    "kind, target_name, target_key, target_path, target_id, anchor, display, prop, line, ambiguous, source_id, id"
)


def _edge_from_row(row: Sequence[Any]) -> EdgeRow:
    e = EdgeRow(*row)
    e.ambiguous = bool(e.ambiguous)
    return e


def replace_edges(
    con: apsw.Connection, source_id: str, edges: Iterable[EdgeRow], kinds: Sequence[str] = TEXT_EDGE_KINDS
) -> None:
    """Replace the outgoing edges of ``kinds`` from ``source_id`` with ``edges``."""
    marks = ",".join("?" * len(kinds))
    con.execute(f"DELETE FROM edges WHERE source_id = ? AND kind IN ({marks})", (source_id, *kinds))
    add_edges(con, source_id, edges)


_ADD_EDGE = (
    "INSERT INTO edges (source_id, kind, target_name, target_key, target_path, target_id, "
    "anchor, display, prop, line, ambiguous) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
)


def add_edges(con: apsw.Connection, source_id: str, edges: Iterable[EdgeRow]) -> None:
    """Insert edges from ``source_id``."""
    add_edges_of(con, [(source_id, edges)])


def add_edges_of(con: apsw.Connection, sources: Iterable[tuple[str, Iterable[EdgeRow]]]) -> None:
    """Insert the edges of each (source id, edges) pair, in order, in one statement."""
    con.executemany(
        _ADD_EDGE,
        [
            (source_id, e.kind, e.target_name, e.target_key, e.target_path, e.target_id,
             e.anchor, e.display, e.prop, e.line, int(e.ambiguous))
            for source_id, edges in sources
            for e in edges
        ],
    )


def edges_from(con: apsw.Connection, source_id: str) -> list[EdgeRow]:
    """Outgoing edges of a trace, in insertion (document) order."""
    return [
        _edge_from_row(r)
        for r in con.execute(f"SELECT {_EDGE_COLS} FROM edges WHERE source_id = ? ORDER BY id", (source_id,))
    ]


def edges_to(con: apsw.Connection, target_id: str) -> list[EdgeRow]:
    """Incoming edges of a trace."""
    return [
        _edge_from_row(r)
        for r in con.execute(
            f"SELECT {_EDGE_COLS} FROM edges WHERE target_id = ? ORDER BY source_id, id", (target_id,)
        )
    ]


def edges_to_path(con: apsw.Connection, path: str, key: str) -> list[EdgeRow]:
    """Incoming edges of a file that has no trace (an attachment), found by
    its link ``key`` (indexed) and then its exact path."""
    return [
        _edge_from_row(r)
        for r in con.execute(
            f"SELECT {_EDGE_COLS} FROM edges WHERE target_key = ? AND target_path = ? ORDER BY source_id, id",
            (key, path),
        )
    ]


def edges_with_keys(con: apsw.Connection, keys: Iterable[str]) -> list[EdgeRow]:
    """Vault-link edges whose target name could match any of ``keys``."""
    keys = list(set(keys))
    out: list[EdgeRow] = []
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        marks = ",".join("?" * len(chunk))
        out.extend(
            _edge_from_row(r)
            for r in con.execute(
                f"SELECT {_EDGE_COLS} FROM edges WHERE target_key IN ({marks}) AND kind IN ({TEXT_KINDS_SQL})",
                chunk,
            )
        )
    return out


def fill_edge_target_ids(con: apsw.Connection) -> None:
    """Give every edge that resolved to a note path that note's trace id."""
    con.execute(
        "UPDATE edges SET target_id = (SELECT trace_id FROM files f WHERE f.path = edges.target_path) "
        "WHERE target_id IS NULL AND target_path IS NOT NULL"
    )


def set_edge_target(
    con: apsw.Connection, edge_id: int, target_path: str | None, target_id: str | None, ambiguous: bool
) -> None:
    """Record where an edge now resolves."""
    con.execute(
        "UPDATE edges SET target_path = ?, target_id = ?, ambiguous = ? WHERE id = ?",
        (target_path, target_id, int(ambiguous), edge_id),
    )


def files_generation(con: apsw.Connection) -> str | None:
    """A counter that moves whenever the tracked files or their trace ids change."""
    return get_meta(con, "files_generation")


# -- bulk loads ----------------------------------------------------------------

BULK_FLAG = "bulk_load"

#: Indexes dropped during a bulk load and rebuilt once at its end: building
#: an index over 200,000 edges at once costs a third of growing it row by row.
_DEFERRED_INDEXES = {
    "edges_target_key": "CREATE INDEX IF NOT EXISTS edges_target_key ON edges(target_key)",
    "edges_target_id": "CREATE INDEX IF NOT EXISTS edges_target_id ON edges(target_id)",
    # Only into an empty index: the loader then never deletes edges by source.
    "edges_source": "CREATE INDEX IF NOT EXISTS edges_source ON edges(source_id)",
}


def begin_bulk_load(con: apsw.Connection, *, fresh: bool = False) -> None:
    """Pause the FTS triggers and drop the deferred indexes (a first index).

    ``fresh``: the index holds no traces, so nothing will be deleted or
    replaced and even the index on edge sources can wait. The flag row
    commits with the dropped indexes, so a loader that dies half-way leaves
    it set, and the next reconcile finishes the job (:func:`bulk_load_pending`,
    :func:`end_bulk_load`). Search meanwhile sees the notes indexed before.
    """
    set_meta(con, BULK_FLAG, now_iso())
    for name in _DEFERRED_INDEXES:
        if fresh or name != "edges_source":
            con.execute(f"DROP INDEX IF EXISTS {name}")


def bulk_load_pending(con: apsw.Connection) -> bool:
    """Whether a bulk load is under way or was left unfinished."""
    return get_meta(con, BULK_FLAG) is not None


def end_bulk_load(con: apsw.Connection) -> None:
    """Rebuild the FTS index and the deferred indexes; resume the triggers."""
    for sql in _DEFERRED_INDEXES.values():
        con.execute(sql)
    con.execute("INSERT INTO traces_fts(traces_fts) VALUES ('rebuild')")
    con.execute("DELETE FROM meta WHERE key = ?", (BULK_FLAG,))


# -- meta --------------------------------------------------------------------


def get_meta(con: apsw.Connection, key: str, default: str | None = None) -> str | None:
    """A value from the index's key/value table."""
    row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def set_meta(con: apsw.Connection, key: str, value: str) -> None:
    """Store a value in the index's key/value table."""
    con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


#: The ``meta`` key that says the durable state was applied to this index
#: (:func:`memvault.store.index.rebuild.apply_state` sets it).
STATE_APPLIED = "state_applied"


def state_applied(con: apsw.Connection) -> bool:
    """Whether this index has had the durable state applied (every store
    open asks, so it lives here, not with the rebuild's heavier imports)."""
    return get_meta(con, STATE_APPLIED) is not None
