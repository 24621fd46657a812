"""Bookkeeping for memories: versions, forgets, the outbox, conflicts.

Versions: changing a memory (through the store or in the vault) keeps the
old text as a superseded snapshot trace (``<id>.v<n>``) linked from the live
trace by a ``supersedes`` edge, and as a row of the durable state.
Forgotten: a deleted memory's last text and reason, in the durable state.
Outbox: every store-side change that must reach the vault is recorded (with
the memory as it must be written) in the same transaction as the change,
and cleared once its note is written. Conflicts: where a store version had
to be written beside a person's edit. Outbox and conflicts live only in the
durable state; versions and forgets in both, so a rebuilt index gets them
back (:mod:`memvault.store.index.rebuild`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import apsw

from memvault.store.db import records as rec
from memvault.store.db.rows import first, rows, scalar


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


def id_in_use(con: apsw.Connection, trace_id: str) -> bool:
    """Whether any trace, or the durable state, knows ``trace_id``."""
    return bool(scalar(
        con,
        "SELECT EXISTS (SELECT 1 FROM traces WHERE id = ?) OR EXISTS (SELECT 1 FROM state.forgotten WHERE memory_id = ?) "
        "OR EXISTS (SELECT 1 FROM state.memory_versions WHERE memory_id = ?)",
        (trace_id, trace_id, trace_id),
    ) == 1)


def trace_path(con: apsw.Connection, trace_id: str) -> str | None:
    """The vault path of the note that currently holds a trace, if any."""
    row = con.execute("SELECT path FROM files WHERE trace_id = ?", (trace_id,)).fetchone()
    return row[0] if row else None


def synced_hash(con: apsw.Connection, path: str) -> str | None:
    """The hash memvault last indexed for ``path`` (what it believes is on disk)."""
    row = con.execute("SELECT hash FROM files WHERE path = ?", (path,)).fetchone()
    return row[0] if row else None


def snapshot_version(con: apsw.Connection, current: rec.TraceRow, reason: str | None) -> str:
    """Keep ``current`` as a superseded version before it changes (in the
    durable state and the index, one transaction); return its id."""
    snap = stage_version(con, current, reason)
    put_version(con, snap)
    return snap.id


def stage_version(con: apsw.Connection, current: rec.TraceRow, reason: str | None) -> rec.TraceRow:
    """Record ``current`` as the next version of its memory in the durable
    state only, and return the version's trace (for :func:`put_version`).

    Idempotent: a retry after a crash (the state committed, the index not)
    finds its own version as the last one and returns it again."""
    last = con.execute(
        "SELECT version, trace FROM state.memory_versions WHERE memory_id = ? ORDER BY version DESC LIMIT 1",
        (current.id,),
    ).fetchone()
    if last is not None:
        prev = rec.trace_from_json(last[1])
        if (prev.content, prev.type, prev.tags) == (current.content, current.type, current.tags):
            return prev
    # Past this id's versions a trace rename carried to another memory too
    # (they keep their "<id>.v<n>" ids): the id, kept by another note, would
    # otherwise number from 1 again and overwrite one of them.
    top = scalar(
        con,
        "SELECT max(version) FROM state.memory_versions WHERE memory_id = ? OR (id >= ? AND id < ?)",
        (current.id, current.id + ".v", current.id + ".w"),
    )
    n = 1 + int(top or 0)
    version_id = f"{current.id}.v{n}"
    meta = dict(current.metadata, version_of=current.id, version=n)
    snap = replace(
        current, id=version_id, status="superseded", reason=reason or "updated", path=None,
        metadata=meta, content_key=None, rowid=None,
    )
    con.execute(
        "INSERT OR REPLACE INTO state.memory_versions (id, memory_id, version, trace, reason, superseded_at) "
        "VALUES (?,?,?,?,?,?)",
        (version_id, current.id, n, rec.trace_json(snap), snap.reason, rec.now_iso()),
    )
    return snap


#: The version a memory is at, for ``traces t``: what its note says (its
#: ``version`` counter, one more when its text changed since memvault wrote
#: it: the same on every device, see memory_note.note_version), else, for a
#: note memvault has not written a counter into yet, 1 plus the earlier
#: versions this device kept.
VERSION_SQL = (
    "coalesce(CASE WHEN json_valid(t.metadata) THEN json_extract(t.metadata, '$.version') END, "
    "1 + coalesce((SELECT max(v.version) FROM state.memory_versions v WHERE v.memory_id = t.id), 0))"
)


def current_versions(con: apsw.Connection, memory_ids: Sequence[str]) -> dict[str, int]:
    """The version each memory is at (:data:`VERSION_SQL`; a memory the
    index no longer holds: 1 plus the earlier versions this device kept).
    The one place a memory's version is computed: ``show``, ``list``,
    ``read``, search hits, the update guard and the write results read it here."""
    ids = list(dict.fromkeys(memory_ids))
    out: dict[str, int] = {}
    for i in range(0, len(ids), 500):  # SQLite's bound-parameter limit
        part = ids[i : i + 500]
        out.update((k, int(v)) for k, v in rows(
            con, f"SELECT t.id, {VERSION_SQL} FROM traces t WHERE t.id IN ({','.join('?' * len(part))})", part,
        ))
    for memory_id in ids:
        if memory_id not in out:
            out[memory_id] = int(scalar(
                con, "SELECT 1 + coalesce(max(version), 0) FROM state.memory_versions WHERE memory_id = ?", (memory_id,)))
    return out


def current_version(con: apsw.Connection, memory_id: str) -> int:
    """The version a memory is at (:func:`current_versions`)."""
    return current_versions(con, [memory_id])[memory_id]


def stamp_version(trace: rec.TraceRow, version: int) -> None:
    """Give a memory the version ``version`` as its note will carry it: the
    counter and the fingerprint of its text, type and tags (a store-side
    write: add, update)."""
    from memvault.vault_io.memory_note import text_fingerprint

    fm_tags = trace.metadata.get("fm_tags")
    tags = fm_tags if isinstance(fm_tags, list) else trace.tags
    trace.metadata = dict(trace.metadata, fm_version=version, version=version,
                          fm_version_hash=text_fingerprint(trace.content, trace.type, tags))


def last_version_reason(con: apsw.Connection, memory_id: str) -> str | None:
    """Why the memory's latest earlier version was superseded ("edited in the vault", a reason given)."""
    row = con.execute(
        "SELECT reason FROM state.memory_versions WHERE memory_id = ? ORDER BY version DESC LIMIT 1", (memory_id,)
    ).fetchone()
    return row[0] if row else None


def put_version(con: apsw.Connection, snap: rec.TraceRow) -> None:
    """Index one version snapshot and its ``supersedes`` edge from the memory
    (a no-op when the index has it already)."""
    if rec.get_trace(con, snap.id) is not None:
        return
    rec.put_trace(con, snap)
    # put_trace keeps an existing row's created time; a snapshot is new.
    con.execute("UPDATE traces SET created = ? WHERE id = ?", (snap.created or rec.now_iso(), snap.id))
    memory_id = snap.metadata.get("version_of")
    if memory_id and rec.get_trace(con, memory_id) is not None:
        rec.add_edges(con, memory_id, [rec.EdgeRow(kind="supersedes", target_id=snap.id, target_name=snap.id)])


def _normalised(text: str) -> str:
    """Content as the note format normalises it: trailing blanks of lines
    and blank lines around it do not count."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def meaningfully_changed(old: rec.TraceRow, new: rec.TraceRow) -> bool:
    """Whether ``new`` changes the content, tags or type of memory ``old``
    (whitespace the note format normalises, and tag case, do not count)."""
    def tags(t: rec.TraceRow) -> list[str]:
        # The front-matter tags: inline #tags change only with the content.
        fm = t.metadata.get("fm_tags")
        return [x.casefold() for x in (fm if isinstance(fm, list) else t.tags)]

    return _normalised(old.content) != _normalised(new.content) or old.type != new.type or tags(old) != tags(new)


def drop_version(con: apsw.Connection, version_id: str) -> None:
    """Forget a version snapshot entirely (the change that made it is undone)."""
    con.execute("DELETE FROM state.memory_versions WHERE id = ?", (version_id,))
    con.execute("DELETE FROM edges WHERE target_id = ? AND kind = 'supersedes'", (version_id,))
    rec.delete_trace(con, version_id)


def drop_memory(con: apsw.Connection, trace_id: str) -> None:
    """Forget a memory entirely: trace, versions, recall statistics, forget
    record (a memory the store made and then took back)."""
    for (version_id,) in rows(con, "SELECT id FROM state.memory_versions WHERE memory_id = ?", (trace_id,)):
        drop_version(con, version_id)
    con.execute("DELETE FROM state.forgotten WHERE memory_id = ?", (trace_id,))
    con.execute("DELETE FROM state.recall WHERE trace_id = ?", (trace_id,))
    con.execute("DELETE FROM state.outbox WHERE trace_id = ?", (trace_id,))
    rec.delete_trace(con, trace_id)


#: Strength a memory gains when a write says it again (as a recall does).
SEEN_BOOST = 0.02


def bump_seen(con: apsw.Connection, trace_id: str) -> None:
    """A write said this memory again: last seen now, strength + :data:`SEEN_BOOST`
    (capped at 1), in the index and the durable state (never in the note)."""
    con.execute(
        "UPDATE traces SET last_access = ?, strength = round(min(1.0, coalesce(strength, 0.5) + ?), 6) WHERE id = ?",
        (rec.now_iso(), SEEN_BOOST, trace_id),
    )
    _keep_recall(con, trace_id)


def set_strength(con: apsw.Connection, trace_id: str, strength: float) -> None:
    """Give a memory a strength (a merge keeps the highest of its group)."""
    con.execute("UPDATE traces SET strength = ? WHERE id = ?", (strength, trace_id))
    _keep_recall(con, trace_id)


def _keep_recall(con: apsw.Connection, trace_id: str) -> None:
    con.execute(
        "INSERT INTO state.recall (trace_id, retrieval_count, last_access, strength) "
        "SELECT id, retrieval_count, last_access, strength FROM traces WHERE id = ? "
        "ON CONFLICT(trace_id) DO UPDATE SET retrieval_count = excluded.retrieval_count, "
        "last_access = excluded.last_access, strength = excluded.strength",
        (trace_id,),
    )


# -- forgotten ---------------------------------------------------------------


def mark_deleted(con: apsw.Connection, trace_id: str, reason: str, **metadata: object) -> None:
    """A memory is deleted (forgotten, or its note deleted in the vault):
    soft-delete its trace and remember it durably with its last text.

    A note gone from the vault whose forget is already recorded (another
    device forgot it, and its history log came before the sync tool moved
    the note) keeps that forget and its reason."""
    if reason == NOTE_DELETED:
        known = con.execute("SELECT reason FROM state.forgotten WHERE memory_id = ?", (trace_id,)).fetchone()
        if known is not None:
            rec.set_status(con, trace_id, "deleted", known[0])
            return
    rec.set_status(con, trace_id, "deleted", reason)
    t = rec.get_trace(con, trace_id)
    if t is None:
        return
    if metadata:
        t.metadata = dict(t.metadata, **metadata)
        con.execute(
            "UPDATE traces SET metadata = ? WHERE id = ?",
            (json.dumps(t.metadata, ensure_ascii=False, sort_keys=True, default=str), trace_id),
        )
    stage_deleted(con, t, reason)


def stage_deleted(con: apsw.Connection, t: rec.TraceRow, reason: str) -> None:
    """Remember durably that memory ``t`` is deleted, with its last text."""
    con.execute(
        "INSERT OR REPLACE INTO state.forgotten (memory_id, reason, at, trace) VALUES (?,?,?,?)",
        (t.id, reason, rec.now_iso(), rec.trace_json(replace(t, status="deleted", reason=reason))),
    )


#: Why a memory whose note is nowhere in the vault is no longer live: the
#: reason a note deleted in the vault gives (the same case, seen late).
NOTE_DELETED = "note deleted in the vault"

#: Live memories that no note holds: no indexed file points at them, and no
#: store-side write of theirs is pending (a new memory has its trace a moment
#: before its note is written).
_PHANTOMS = (
    "SELECT t.id, t.path FROM traces t WHERE t.kind = 'memory' AND t.status = 'active' "
    "AND NOT EXISTS (SELECT 1 FROM files f WHERE f.trace_id = t.id) "
    "AND NOT EXISTS (SELECT 1 FROM state.outbox o WHERE o.trace_id = t.id)"
)


#: Memory notes that name an id other than the one they are indexed under
#: (another note kept it and this one's front-matter was not rewritten yet):
#: (path, indexed id, the id the note names).
UNSETTLED = (
    "SELECT f.path, t.id, json_extract(t.metadata, '$.fm_id') FROM traces t JOIN files f ON f.trace_id = t.id "
    "WHERE t.kind = 'memory' AND t.status = 'active' AND json_valid(t.metadata) "
    "AND json_extract(t.metadata, '$.fm_id') IS NOT NULL AND json_extract(t.metadata, '$.fm_id') != t.id"
)

#: Whether any phantom exists (cheap: the first one found is enough).
PHANTOMS_EXIST = f"SELECT EXISTS ({_PHANTOMS})"


def phantoms(con: apsw.Connection) -> list[tuple[str, str | None, str | None]]:
    """Live memories without their note: (id, the path the memory claims,
    the memory that path's note belongs to, if another holds it)."""
    out: list[tuple[str, str | None, str | None]] = []
    for trace_id, path in rows(con, _PHANTOMS):
        holder = first(con, "SELECT trace_id FROM files WHERE path = ?", (path,)) if path else None
        out.append((trace_id, path, holder[0] if holder else None))
    return out


def note_deleted(con: apsw.Connection, trace_id: str) -> None:
    """A memory's note is gone from the vault: soft-delete the memory
    (searchable with ``--include-deleted``, back with ``restore``), its last
    text kept in the durable state with where its note was (``trashed_from``),
    so that ``restore`` writes it back under its own name, the one links use."""
    row = con.execute("SELECT path FROM traces WHERE id = ?", (trace_id,)).fetchone()
    con.execute("UPDATE traces SET path = NULL WHERE id = ?", (trace_id,))
    con.execute("UPDATE edges SET target_path = NULL WHERE target_id = ?", (trace_id,))
    mark_deleted(con, trace_id, NOTE_DELETED, **({"trashed_from": row[0]} if row and row[0] else {}))


def retire_phantom(con: apsw.Connection, trace_id: str) -> None:
    """A live memory whose note is not in the vault is what a note deleted in
    the vault makes: retired as one (:func:`note_deleted`)."""
    note_deleted(con, trace_id)


def retire_phantoms(con: apsw.Connection) -> list[str]:
    """Retire every live memory that no note holds (:func:`retire_phantom`);
    returns their ids. Call inside a write transaction."""
    found = [trace_id for trace_id, _, _ in phantoms(con)]
    for trace_id in found:
        retire_phantom(con, trace_id)
    return found


def clear_deleted(con: apsw.Connection, trace_id: str) -> None:
    """The memory is live again (restored, or its note is back in the vault)."""
    con.execute("DELETE FROM state.forgotten WHERE memory_id = ?", (trace_id,))


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


def state_versions(con: apsw.Connection, memory_id: str) -> list[rec.TraceRow]:
    """A memory's earlier versions as the durable state holds them, newest
    first: what every device's history logs agree on (the index's edges
    depend on the order a device saw the notes and logs in)."""
    out = []
    for version_id, snapshot, reason in rows(
            con, "SELECT id, trace, reason FROM state.memory_versions WHERE memory_id = ? ORDER BY version DESC, id",
            (memory_id,)):
        t = rec.trace_from_json(snapshot)
        out.append(replace(t, id=version_id, status="superseded", reason=reason, path=None))
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
    con: apsw.Connection, trace: rec.TraceRow, action: str, expected_path: str | None, expected_hash: str | None
) -> None:
    """Record (or replace) the pending vault write of ``trace``, with the
    trace as the store wants it: the index may lag behind the state (see
    :func:`index_catch_up`)."""
    con.execute(
        "INSERT OR REPLACE INTO state.outbox (trace_id, action, expected_path, expected_hash, created, trace) "
        "VALUES (?,?,?,?,?,?)",
        (trace.id, action, expected_path, expected_hash, time.time(), rec.trace_json(trace)),
    )


def index_catch_up(con: apsw.Connection, trace_id: str) -> rec.TraceRow | None:
    """Bring the index's copy of a memory up to what its pending outbox
    entry (and its versions in the state) say, and return it.

    A store-side change commits the durable state first and the index
    second; a writer killed in between leaves the index behind, and this is
    where the next writer (or the outbox flush) puts it level again."""
    row = first(con, "SELECT trace FROM state.outbox WHERE trace_id = ?", (trace_id,))
    have = rec.get_trace(con, trace_id)
    if row is None or row[0] is None:
        return have
    want = rec.trace_from_json(row[0])
    for (snapshot,) in rows(
        con, "SELECT trace FROM state.memory_versions WHERE memory_id = ? ORDER BY version", (trace_id,)
    ):
        if have is not None:
            put_version(con, rec.trace_from_json(snapshot))
    if have is None or (have.content, have.type, have.tags, have.status) != (want.content, want.type, want.tags, want.status):
        from memvault.store.index.classify import memory_key

        want.path = have.path if have is not None else None
        want.content_key = memory_key(want.type, want.scope or "user", want.content)
        rec.put_trace(con, want)
        if have is None:
            for (snapshot,) in rows(
                con, "SELECT trace FROM state.memory_versions WHERE memory_id = ? ORDER BY version", (trace_id,)
            ):
                put_version(con, rec.trace_from_json(snapshot))
    return rec.get_trace(con, trace_id)


def outbox_trace(con: apsw.Connection, trace_id: str) -> rec.TraceRow | None:
    """The memory as its pending change wants it (the record of intent: a
    forget's reason, where a restore brings the note back from)."""
    row = con.execute("SELECT trace FROM state.outbox WHERE trace_id = ?", (trace_id,)).fetchone()
    return rec.trace_from_json(row[0]) if row and row[0] else None


def retarget_outbox(con: apsw.Connection, trace_id: str, expected_path: str, expected_hash: str) -> None:
    """The pending write of ``trace_id`` goes to ``expected_path`` with
    ``expected_hash`` after all (a free name, bytes rendered afresh)."""
    con.execute(
        "UPDATE state.outbox SET expected_path = ?, expected_hash = ? WHERE trace_id = ?",
        (expected_path, expected_hash, trace_id),
    )


def get_outbox(con: apsw.Connection, trace_id: str) -> OutboxEntry | None:
    """The pending write of one trace."""
    row = con.execute(
        "SELECT trace_id, action, expected_path, expected_hash, created FROM state.outbox WHERE trace_id = ?", (trace_id,)
    ).fetchone()
    return OutboxEntry(*row) if row else None


def mark_outbox_failed(con: apsw.Connection, trace_id: str) -> None:
    """A pending write failed: its writer gave up, so it is due for a retry
    now (``created`` 0: older than any age :func:`stale_outbox` asks for)."""
    con.execute("UPDATE state.outbox SET created = 0 WHERE trace_id = ?", (trace_id,))


def pending_writes(con: apsw.Connection) -> list[dict[str, object]]:
    """Every note write not confirmed yet: memory id, action, path, and
    whether its last try failed (else a writer may still be at it)."""
    return [
        {"id": r[0], "action": r[1], "path": r[2], "failed": r[3] == 0}
        for r in con.execute(
            "SELECT o.trace_id, o.action, coalesce(o.expected_path, t.path, json_extract(o.trace, '$.path')), "
            "o.created FROM state.outbox o LEFT JOIN traces t ON t.id = o.trace_id ORDER BY o.created, o.trace_id")
    ]


def stale_outbox(con: apsw.Connection, older_than: float) -> list[OutboxEntry]:
    """Pending writes older than ``older_than`` seconds: their writer died."""
    cutoff = time.time() - older_than
    return [
        OutboxEntry(*r)
        for r in con.execute(
            "SELECT trace_id, action, expected_path, expected_hash, created FROM state.outbox WHERE created <= ? "
            "ORDER BY created",
            (cutoff,),
        )
    ]


def clear_outbox(con: apsw.Connection, trace_id: str) -> None:
    """The write is done (or settled as a conflict)."""
    con.execute("DELETE FROM state.outbox WHERE trace_id = ?", (trace_id,))


# -- conflicts ---------------------------------------------------------------


def add_conflict(
    con: apsw.Connection, trace_id: str, path: str, conflict_path: str | None, kind: str, detail: str
) -> None:
    """Remember a conflict so ``memvault status`` can report it."""
    con.execute(
        "INSERT INTO state.conflicts (trace_id, path, conflict_path, kind, detail, created) VALUES (?,?,?,?,?,?)",
        (trace_id, path, conflict_path, kind, detail, rec.now_iso()),
    )


def conflicts(con: apsw.Connection) -> list[Conflict]:
    """Every recorded conflict, newest first."""
    return [
        Conflict(*r)
        for r in con.execute(
            "SELECT id, trace_id, path, conflict_path, kind, detail, created FROM state.conflicts ORDER BY id DESC"
        )
    ]


def resolve_conflict(con: apsw.Connection, conflict_id: int) -> None:
    """Forget a conflict (its conflict file was merged or deleted)."""
    con.execute("DELETE FROM state.conflicts WHERE id = ?", (conflict_id,))
