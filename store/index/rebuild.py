"""Giving a freshly built index back what only the durable state knows.

The index is derived: a full sync rebuilds every live note, memory and fact
from the vault. What the vault does not hold lives in ``state.db`` (see
:mod:`memvault.store.db.state_schema`), and :func:`apply_state` puts it back
into an index built from scratch (``memvault rebuild``, a deleted
``index.db``, a schema change that chose a rebuild over a migration):

- forgotten memories, as deleted traces (a note live in the vault wins);
- earlier versions of memories, with their ``supersedes`` edges;
- the history of facts (changed, removed, retired), with ``updates`` edges;
- forgotten facts the index has live (an import's forgets of a note already indexed);
- recall statistics and strength;
- store-side writes still pending in the outbox, as the traces to write;
- conflict copies in the vault the state has no record of, as open conflicts.

:func:`recover_trash` then reads the vault's ``.trash/`` for memory notes
(front-matter ``id`` and a memory ``type``) that neither the index nor the
state knows: when the state is lost too (a new machine, a deleted data
dir), forgotten memories come back from the vault alone, with their ids.

Both are idempotent; :func:`apply_state` runs once per index (a ``meta``
mark records that it did).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.db.rows import rows
from memvault.store.facts import rows as sf
from memvault.store.memories import rows as mem
from memvault.store.memories.memtypes import maybe_type
from memvault.vault_io.errors import MemvaultError

if TYPE_CHECKING:
    from memvault.store.history.replicate import Change

TRASH = ".trash"
FOUND_IN_TRASH = "found in .trash"


@dataclass
class Restored:
    """What :func:`apply_state` and :func:`recover_trash` put back."""

    forgotten: int = 0
    versions: int = 0
    facts: int = 0
    facts_forgotten: int = 0
    recall: int = 0
    pending: int = 0
    from_trash: int = 0
    conflicts: int = 0

    def as_dict(self) -> dict[str, int]:
        """JSON-ready form."""
        return dict(self.__dict__)


def apply_state(con: apsw.Connection, done: Restored | None = None) -> Restored:
    """Put the durable state into the index (after a full sync built it)."""
    done = done or Restored()
    with write_transaction(con):
        _forgotten(con, done)
        _versions(con, done)
        _fact_history(con, done)
        _fact_forgets(con, done)
        _pending_writes(con, done)
        _conflict_copies(con, done)
        done.recall = _recall(con)
        rec.set_meta(con, rec.STATE_APPLIED, rec.now_iso())
    return done


def _forgotten(con: apsw.Connection, done: Restored) -> None:
    for memory_id, snapshot in rows(con, "SELECT memory_id, trace FROM state.forgotten"):
        now = rec.get_trace(con, memory_id)
        if now is not None:
            if now.status == "active" and now.kind == "memory":
                mem.clear_deleted(con, memory_id)  # its note is live in the vault: the vault wins
            continue
        t = rec.trace_from_json(snapshot)
        rec.put_trace(con, replace(t, status="deleted", path=None))
        done.forgotten += 1


def _versions(con: apsw.Connection, done: Restored) -> None:
    for version_id, snapshot in rows(con, "SELECT id, trace FROM state.memory_versions ORDER BY memory_id, version"):
        if rec.get_trace(con, version_id) is None:
            mem.put_version(con, rec.trace_from_json(snapshot))
            done.versions += 1


def _fact_history(con: apsw.Connection, done: Restored) -> None:
    added: list[tuple[str, str | None]] = []
    for fact_id, snapshot, anchor, replaced_by in rows(con, "SELECT fact_id, trace, anchor, replaced_by FROM state.fact_history"):
        if rec.get_trace(con, fact_id) is not None:
            continue
        t = rec.trace_from_json(snapshot)
        meta = sf.FactMeta(**json.loads(anchor))
        sf.put_fact(con, t, meta)
        rec.add_edges(con, fact_id, [rec.EdgeRow(
            kind=sf.DERIVED_FROM, target_name=t.path or "", target_path=t.path,
            target_id=meta.source_id, anchor=meta.anchor, line=meta.line_start,
        )])
        added.append((fact_id, replaced_by))
        done.facts += 1
    # Edges last: a fact may have been replaced by another retired fact.
    for fact_id, replaced_by in added:
        if replaced_by and rec.get_trace(con, replaced_by) is not None:
            rec.add_edges(con, replaced_by, [rec.EdgeRow(kind=sf.UPDATES, target_id=fact_id, target_name=fact_id)])


def _fact_forgets(con: apsw.Connection, done: Restored) -> None:
    """A fact the durable state says was forgotten but the index has live
    (its source note was indexed before the forget came: an import into a
    vault that already had the note) is retired, as re-extracting it would."""
    live = rows(con, "SELECT f.fact_id, f.reason FROM state.fact_forgets f JOIN traces t ON t.id = f.fact_id "
                     "WHERE t.kind = 'fact' AND t.status = ?", (sf.ACTIVE,))
    for fact_id, reason in live:
        sf.retire_forgotten(con, fact_id, reason or "forgotten")
        done.facts_forgotten += 1


def _pending_writes(con: apsw.Connection, done: Restored) -> None:
    """A store-side change not yet in its note: the index gets the trace as
    the store wants it, so the next flush writes that (the note holds the old)."""
    for (snapshot,) in rows(con, "SELECT trace FROM state.outbox WHERE action = 'write' AND trace IS NOT NULL"):
        t = rec.trace_from_json(snapshot)
        current = rec.get_trace(con, t.id)
        rec.put_trace(con, replace(t, path=current.path if current else None))
        done.pending += 1


def _conflict_copies(con: apsw.Connection, done: Restored) -> None:
    """Conflict copies in the vault that the state has no record of (it was
    lost) are open conflicts again: the person still has to merge them."""
    copies = rows(
        con,
        "SELECT t.path, json_extract(t.metadata, '$.frontmatter.conflict_of') FROM traces t "
        "WHERE t.kind = 'note' AND json_valid(t.metadata) "
        "AND json_extract(t.metadata, '$.frontmatter.conflict_of') IS NOT NULL "
        "AND t.path NOT IN (SELECT conflict_path FROM state.conflicts WHERE conflict_path IS NOT NULL)",
    )
    for path, memory_id in copies:
        note = mem.trace_path(con, str(memory_id)) or path
        mem.add_conflict(con, str(memory_id), note, path, "edit", "a conflict copy found in the vault")
        done.conflicts += 1


def _recall(con: apsw.Connection) -> int:
    con.execute(
        "UPDATE traces SET retrieval_count = r.retrieval_count, last_access = r.last_access, "
        "strength = coalesce(r.strength, traces.strength) FROM state.recall r WHERE r.trace_id = traces.id"
    )
    return con.changes()


def backfill_state(con: apsw.Connection) -> int:
    """Copy into the durable state the versions and forgets the index has
    and the state lacks; how many.

    A reconcile writes both databases in one transaction, and SQLite commits
    the index first: a process killed between the two commits leaves such
    rows (every full sync calls this, so they never stay behind long)."""
    versions = rec.get_traces(
        con, "kind = 'memory' AND status = 'superseded' AND id NOT IN (SELECT id FROM state.memory_versions) "
        "AND id NOT IN (SELECT memory_id FROM state.merges)")  # a merged memory is in state.merges
    deleted = rec.get_traces(
        con, "kind = 'memory' AND status = 'deleted' AND id NOT IN (SELECT memory_id FROM state.forgotten)")
    if not versions and not deleted:
        return 0
    with write_transaction(con):
        for t in versions:
            memory_id, version = t.metadata.get("version_of"), t.metadata.get("version")
            if memory_id and version:
                con.execute(
                    "INSERT OR IGNORE INTO state.memory_versions (id, memory_id, version, trace, reason, superseded_at) "
                    "VALUES (?,?,?,?,?,?)", (t.id, memory_id, int(version), rec.trace_json(t), t.reason, t.updated))
        for t in deleted:
            mem.stage_deleted(con, t, t.reason or "deleted")
    return len(versions) + len(deleted)


def recover_trash(con: apsw.Connection, root: Path, done: Restored | None = None) -> Restored:
    """Memory notes in the vault's ``.trash/`` that neither the index nor the
    state knows come back as forgotten memories with their own ids (the
    newest copy when several hold one id)."""
    # Imported here: only this function reads notes, and the note parser
    # with its YAML is a third of a short command's start-up.
    from memvault.vault_io.confine import read_inside
    from memvault.vault_io.memory_note import read_memory
    from memvault.vault_io.parser import parse_note

    done = done or Restored()
    folder = root / TRASH
    if not folder.is_dir():
        return done
    found: dict[str, tuple[float, str, rec.TraceRow]] = {}
    for path in folder.rglob("*.md"):
        rel = path.relative_to(root).as_posix()
        try:
            data = read_inside(root, rel)  # a symlink in .trash must not bring a file from elsewhere
            note = parse_note(rel, data)
        except (OSError, MemvaultError):
            continue
        memory_id, type_ = note.frontmatter.get("id"), maybe_type(note.frontmatter.get("type"))
        if not isinstance(memory_id, str) or not memory_id.strip() or type_ is None or "conflict_of" in note.frontmatter:
            continue
        doc = read_memory(note.frontmatter, note.body)
        trace = rec.TraceRow(
            id=memory_id.strip(), kind="memory", type=type_, title=(doc.content.splitlines() or [""])[0][:80],
            content=doc.content, tags=list(doc.tags), scope=doc.scope, source=doc.source or "vault",
            strength=doc.strength, status="deleted", reason=FOUND_IN_TRASH, created=doc.created,
            updated=doc.updated or doc.created,
            metadata={"frontmatter": doc.extra, "aliases": [], "related": doc.related, "fm_tags": doc.tags,
                      "trash_path": rel},
        )
        mtime = path.stat().st_mtime
        if trace.id not in found or found[trace.id][0] < mtime:
            found[trace.id] = (mtime, rel, trace)
    if not found:
        return done
    with write_transaction(con):
        for memory_id, (_, _, trace) in sorted(found.items()):
            if rec.get_trace(con, memory_id) is not None:
                continue
            rec.put_trace(con, trace)
            mem.mark_deleted(con, memory_id, FOUND_IN_TRASH)
            done.from_trash += 1
    return done


def follow_history(con: apsw.Connection, changes: "list[Change]") -> None:
    """The index follows durable rows another device's history log set
    (:mod:`memvault.store.history`), inside the caller's transaction. The
    vault decides whether a memory is live: a forget of a memory whose note
    is still here waits for the sync tool to carry its note away."""
    for table, key, row in changes:
        if table == "memory_versions":
            _follow_version(con, str(key[0]), row)
        elif table == "forgotten" and row is not None:
            now = rec.get_trace(con, str(key[0]))
            t = rec.trace_from_json(row["trace"])
            if now is None:
                rec.put_trace(con, replace(t, status="deleted", path=None))
            elif now.status == "deleted":
                rec.set_status(con, now.id, "deleted", row.get("reason"))
        elif table == "fact_history" and row is not None and rec.get_trace(con, str(key[0])) is None:
            _fact_history(con, Restored())
        elif table == "fact_forgets":
            _follow_fact_forget(con, str(key[0]), row)
    if any(table == "consolidation_actions" and row is not None and row.get("kind") == "retention"
           for table, _, row in changes):
        from memvault.store.consolidation.retention import restore_facts

        restore_facts(con)  # another device's retention: the facts of the note it trashed stay live here


def _follow_fact_forget(con: apsw.Connection, fact_id: str, row: dict[str, Any] | None) -> None:
    """A fact forgotten on another device is forgotten here; one restored
    there has its note extracted again here (at this sync's reconcile)."""
    fact = rec.get_trace(con, fact_id)
    if fact is None or fact.kind != "fact":
        return
    if row is not None and fact.status == sf.ACTIVE:
        sf.forget(con, fact.id, row["source_id"], row.get("reason") or "forgotten")
    elif row is None and fact.status == sf.FORGOTTEN:
        meta = sf.get_meta(con, fact_id)
        if meta is not None:
            con.execute("UPDATE fact_sources SET hash = NULL WHERE source_id = ?", (meta.source_id,))


def _follow_version(con: apsw.Connection, version_id: str, row: dict[str, Any] | None) -> None:
    """One version row set from a log: index it (or drop it, undone)."""
    now = rec.get_trace(con, version_id)
    if row is None:
        if now is not None and now.status == "superseded":
            con.execute("DELETE FROM edges WHERE target_id = ? AND kind = 'supersedes'", (version_id,))
            rec.delete_trace(con, version_id)
        return
    snap = rec.trace_from_json(row["trace"])
    if now is None:
        if rec.get_trace(con, str(row["memory_id"])) is not None:  # else: index_versions, once its note came
            mem.put_version(con, snap)
    elif (now.content, now.reason, now.tags) != (snap.content, snap.reason, snap.tags):
        rec.put_trace(con, snap)
    memory_id = str(row["memory_id"])
    if now is not None and not con.execute(
            "SELECT 1 FROM edges WHERE source_id = ? AND target_id = ? AND kind = 'supersedes'",
            (memory_id, version_id)).fetchone():
        # The version belongs to another memory now (the log moved it, as
        # when two devices settled a contested id): its edge moves too.
        con.execute("DELETE FROM edges WHERE target_id = ? AND kind = 'supersedes'", (version_id,))
        if rec.get_trace(con, memory_id) is not None:
            rec.add_edges(con, memory_id, [rec.EdgeRow(kind="supersedes", target_id=version_id, target_name=version_id)])


#: Versions the durable state has and the index lacks, of memories the index has.
_UNINDEXED_VERSIONS = (
    "SELECT v.trace FROM state.memory_versions v WHERE NOT EXISTS (SELECT 1 FROM traces t WHERE t.id = v.id) "
    "AND EXISTS (SELECT 1 FROM traces t WHERE t.id = v.memory_id) ORDER BY v.memory_id, v.version"
)


def index_versions(con: apsw.Connection) -> int:
    """Index the versions the durable state has and the index lacks, of
    memories the index now has (another device's log came before the note
    of its memory); how many."""
    missing = rows(con, _UNINDEXED_VERSIONS)
    if missing:
        with write_transaction(con):
            for (snapshot,) in rows(con, _UNINDEXED_VERSIONS):
                mem.put_version(con, rec.trace_from_json(snapshot))
    return len(missing)
