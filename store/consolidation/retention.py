"""Retention: old session notes go to the trash; what they taught stays.

With ``sessions.retention_days`` set (default 0: off), a consolidation run
plans one ``retention`` action per session note whose conversation ended
(its ``ended``, else ``started``) more than that many days before the run's
day. Carrying it out moves the note to the vault's ``.trash/`` through the
write gate, the same trash ``forget`` uses. Its facts, the digest's fact
among them, stay live and searchable: they point at the note's copy in the
trash (same turn block ids), and the run's log keeps them, so a rebuilt
index (or another device) gets them back from the durable state
(:func:`apply_durable`). ``memvault restore <the note's id>`` or
``consolidate --undo RUN`` moves the note back where it was, and its facts
follow it.

**A note with a person's writing stays.** memvault trashes only a note it
can show is entirely its own: the bytes it last wrote, recorded by hash when
it wrote them (``note_hash`` in the session's import key, which a revision
keeps only while no one else wrote in the note). A note someone edited,
one written before memvault recorded that, or one changed since the plan
was made is kept, and the plan says how many (``stats``). This is what
package managers do with configuration files (dpkg removes a conffile only
while it still has the checksum it was installed with; one the admin
changed stays) and what ``git clean`` does with tracked files: a tool
removes only what it can prove is its own, unchanged.

Nothing changes without asking: the daemon's scheduled runs carry out
``retention`` only when ``consolidate.auto`` names it, and otherwise
propose it, as they propose merges.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from dataclasses import asdict
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from memvault.store.consolidation.plan import Action
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.facts import rows as sf
from memvault.store.memories.writer import MemoryOpError
from memvault.vault_io.facts import source_uri
from memvault.vault_io.gate import TRASH_FOLDER, Kind
from memvault.vault_io.note import content_hash

if TYPE_CHECKING:
    import apsw

    from memvault.store.answers.write import WriteResult
    from memvault.store.context import StoreContext
    from memvault.store.memories.mirror import Memories

KIND = "retention"
#: Why the facts of a session note stay live while its note is in the trash.
REASON = "session note older than sessions.retention_days"


class RetentionError(MemoryOpError):
    """A session note retention planned cannot be moved now (changed, gone)."""


def _day(value: object) -> date | None:
    """The UTC date an ISO time or date string begins with."""
    if not isinstance(value, str) or len(value) < 10:
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None


def _own_hashes(con: "apsw.Connection") -> dict[str, str]:
    """Session note id -> the hash of the note as memvault last wrote it (none: a person wrote in it)."""
    from memvault.store.flows.sessions import NOTE_HASH, SESSION_SOURCE

    out = {}
    for target, detail in con.execute("SELECT target_id, detail FROM state.import_keys WHERE source = ?",
                                      (SESSION_SOURCE,)):
        value = json.loads(detail or "{}").get(NOTE_HASH)
        if isinstance(value, str):
            out[target] = value
    return out


def plan(ctx: "StoreContext", today: date) -> tuple[list[Action], dict[str, int]]:
    """The retention actions for ``today`` (none while ``sessions.retention_days``
    is 0), and how many old session notes stay because a person wrote in them."""
    days = ctx.settings.sessions.retention_days
    if days <= 0:
        return [], {}
    con = ctx.con
    cutoff = today - timedelta(days=days)
    own = _own_hashes(con)
    actions, kept = [], 0
    rows = con.execute(
        "SELECT t.id, f.path, coalesce(json_extract(t.metadata, '$.frontmatter.ended'), "
        "json_extract(t.metadata, '$.frontmatter.started')) FROM traces t JOIN files f ON f.trace_id = t.id "
        "WHERE t.kind = 'note' AND json_extract(t.metadata, '$.frontmatter.session_id') IS NOT NULL "
        "ORDER BY f.path")
    for note_id, path, ended in rows:
        day = _day(ended)
        if day is None or day >= cutoff:
            continue
        try:
            current = content_hash((ctx.root / path).read_bytes())
        except OSError:
            continue  # gone since the last sync: nothing to move
        if own.get(note_id) != current:
            kept += 1
            continue
        actions.append(Action(KIND, [note_id], f"the conversation ended {day.isoformat()}, more than {days} days ago",
                              {"path": path, "hash": current}))
    return actions, ({"sessions_kept_edited": kept} if kept else {})


def _snapshot(con: "apsw.Connection", note_id: str) -> list[dict[str, Any]]:
    """The live facts of a session note as the log keeps them (trace and anchor)."""
    return [{"trace": rec.trace_json(t), "meta": asdict(m)} for t, m in sf.facts_of(con, [note_id], [sf.ACTIVE])]


def carry_out(ctx: "StoreContext", action: Action, log_begin: Any, log_confirm: Any,
              sync_paths: Any) -> None:
    """Move one session note to the trash (module docstring): logged first
    (``log_begin(undo) -> seq``) with where it goes and its facts, moved only
    while it has the bytes the plan saw, confirmed (``log_confirm(seq, undo)``),
    then indexed (``sync_paths``), which keeps its facts live at the trash copy."""
    note_id, path, expected = action.ids[0], action.detail["path"], action.detail["hash"]
    try:
        now = content_hash((ctx.root / path).read_bytes())
    except FileNotFoundError:
        raise RetentionError(f"{path} is gone; nothing to move") from None
    if now != expected:
        raise RetentionError(f"{path} changed since the plan (a person's edit stays); not moved")
    trash = ctx.gate.free(f"{TRASH_FOLDER}/{posixpath.basename(path)}")
    undo = {"path": path, "trash_path": trash, "hash": expected, "facts": _snapshot(ctx.con, note_id)}
    seq = log_begin(undo)
    ctx.gate.move(path, trash, Kind.TRASH)
    moved = (ctx.root / trash).read_bytes()
    if content_hash(moved) != expected:
        # Saved in the moment between the check and the move: a person's
        # edit goes back where they made it, if the place is still free.
        if not (ctx.root / path).exists():
            ctx.gate.move(trash, path, Kind.NOTE)
        log_confirm(seq, {**undo, "undone": True})
        sync_paths([path])
        raise RetentionError(f"{path} changed while it was being moved (a person's edit stays); not moved")
    log_confirm(seq, undo)
    sync_paths([path])


def _ids_json(note_id: str) -> str:
    """The ``ids`` column of an action on one note, as the log writes it (:mod:`.rows`)."""
    return json.dumps([note_id], ensure_ascii=False, sort_keys=True, default=str)


def retained(con: "apsw.Connection", source_ids: Iterable[str]) -> dict[str, str]:
    """Of ``source_ids``, the session notes a retention action moved to the
    trash and nothing brought back: source id -> its trash path."""
    wanted = set(source_ids)
    if not wanted:
        return {}
    out: dict[str, str] = {}
    keys = [_ids_json(i) for i in sorted(wanted)]
    for ids, undo in con.execute(
            f"SELECT ids, undo FROM state.consolidation_actions WHERE kind = ? AND ids IN ({','.join('?' * len(keys))}) "
            "ORDER BY run_id, seq", (KIND, *keys)):
        note_id = json.loads(ids)[0]
        u = json.loads(undo or "{}")
        if note_id in wanted and isinstance(u.get("trash_path"), str):
            if u.get("undone"):
                out.pop(note_id, None)
            else:
                out[note_id] = u["trash_path"]
    return out


def keep_facts(con: "apsw.Connection", source_id: str, trash_path: str) -> None:
    """The facts of a retained session note stay live, pointing at its copy
    in the trash; its extraction state forgets the note's hash, so the note
    brought back (by memvault or by hand) is read again and its facts follow
    it. The caller holds a write transaction."""
    sf.repath(con, source_id, trash_path)
    for _, m in sf.facts_of(con, [source_id]):
        m.source_uri = source_uri(trash_path, m.anchor)
        sf.put_meta(con, m)
    con.execute("UPDATE fact_sources SET path = ?, hash = NULL WHERE source_id = ?", (trash_path, source_id))


def apply_durable(con: "apsw.Connection") -> int:
    """Put back the facts of retained session notes that the index lacks (a
    rebuilt index); how many. See :func:`restore_facts`."""
    with write_transaction(con):
        return restore_facts(con)


def restore_facts(con: "apsw.Connection") -> int:
    """The facts the run's log kept for each session note retention moved to
    the trash, live in the index, pointing at the trash copy: added when the
    index lacks them (a rebuild), made live again when this device retired
    them because the note left the vault before the log that says why
    reached it (another device's run). The caller holds a write transaction."""
    from memvault.store.facts.observer import REASON_DELETED

    missing: list[tuple[rec.TraceRow, sf.FactMeta]] = []
    for undo in retained_all(con).values():
        trash = undo["trash_path"]
        for item in undo.get("facts") or []:
            trace = rec.trace_from_json(item["trace"])
            now = rec.get_trace(con, trace.id)
            if now is None:
                meta = sf.FactMeta(**item["meta"])
                trace.path, meta.source_uri = trash, source_uri(trash, meta.anchor)
                missing.append((trace, meta))
            elif now.status == sf.SUPERSEDED and now.reason == REASON_DELETED:
                rec.set_status(con, now.id, sf.ACTIVE)
                sf.reactivate_cleanup(con, now.id)
                keep_facts(con, str(item["meta"]["source_id"]), trash)
    sf.insert_facts(con, missing)
    return len(missing)


def retained_all(con: "apsw.Connection") -> dict[str, dict[str, Any]]:
    """Every session note in the trash by retention and not brought back: id -> its logged undo."""
    out: dict[str, dict[str, Any]] = {}
    for ids, undo in con.execute(
            "SELECT ids, undo FROM state.consolidation_actions WHERE kind = ? ORDER BY run_id, seq", (KIND,)):
        note_id, u = json.loads(ids)[0], json.loads(undo or "{}")
        if not isinstance(u.get("trash_path"), str) or u.get("pending"):
            continue
        if u.get("undone"):
            out.pop(note_id, None)
        else:
            out[note_id] = u
    return out


def find(con: "apsw.Connection", ref: str) -> tuple[str, int, dict[str, Any]] | None:
    """The retention action that holds session note ``ref`` (its id, or the
    path it had) in the trash: (run id, seq, undo), or None."""
    found = None
    for run_id, seq, ids, undo in con.execute(
            "SELECT run_id, seq, ids, undo FROM state.consolidation_actions WHERE kind = ? "
            "AND (ids = ? OR json_extract(undo, '$.path') = ?) ORDER BY run_id, seq", (KIND, _ids_json(ref), ref)):
        u = json.loads(undo or "{}")
        if ref in (json.loads(ids)[0], u.get("path")) and isinstance(u.get("trash_path"), str):
            found = None if u.get("undone") else (run_id, seq, u)
    return found


def bring_back(ctx: "StoreContext", undo: dict[str, Any], sync_paths: Any) -> str:
    """Move a retained session note from the trash back where it was (beside
    it under a free name when that place is taken), index it (its facts
    follow it); its vault path. Whatever the trash copy holds now comes back:
    nothing is dropped."""
    trash, path = undo["trash_path"], undo["path"]
    if not (ctx.root / trash).is_file():
        if (ctx.root / path).is_file():
            return str(path)  # back already (an undo cut short, or a person moved it)
        raise RetentionError(f"{trash} is no longer in the trash; the note's facts stay as they are")
    target = path if not (ctx.root / path).exists() else ctx.gate.free(path)
    ctx.gate.move(trash, target, Kind.NOTE)
    sync_paths([target])
    return str(target)


def settle(ctx: "StoreContext", undo: dict[str, Any]) -> dict[str, Any] | None:
    """A retention action a dead writer left pending: done when the note is
    in the trash and not at its path (its undo then), else nothing happened."""
    trash, path = undo.get("trash_path"), undo.get("path")
    if isinstance(trash, str) and isinstance(path, str) and (ctx.root / trash).is_file() \
            and not (ctx.root / path).exists():
        return undo
    return None


def restore_session(ctx: "StoreContext", memories: "Memories", ref: str) -> "WriteResult":
    """``memvault restore`` of a session note retention moved to the trash:
    the note back where it was, its log entry marked undone (its run's other
    actions stay; ``consolidate --undo`` reverses them all)."""
    from memvault.store.answers.write import WriteResult
    from memvault.store.consolidation import rows as log
    from memvault.store.consolidation.journal import exclusive

    with exclusive(ctx):
        found = find(ctx.con, ref)
        if found is None:
            raise RetentionError(f"{ref} is not a session note in the trash")
        run_id, seq, undo = found
        path = bring_back(ctx, undo, memories.indexer.sync_paths)
        with write_transaction(ctx.con):
            log.update_action(ctx.con, run_id, seq, {**undo, "undone": True})
    action = log.actions(ctx.con, run_id)
    note_id = next(a.ids[0] for a in action if a.seq == seq)
    return WriteResult(note_id, "restored", path)
