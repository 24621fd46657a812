"""Undoing a consolidation run (or a ``merge``).

:func:`undo` reverses a run, last action first, back to the same traces and
the same note bytes. An action whose notes a person changed since the run is
not undone (it is reported, and the run stays ``done``): an undo never
overwrites a person's edit. An undo marks each action it reverses, and
reversing one again is harmless, so an undo that was cut short is finished
by running it again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memvault.store.consolidation import links
from memvault.store.consolidation import rows as log
from memvault.store.consolidation.journal import (
    RunWriteError,
    exclusive,
    flush_notes,
    recover,
)
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.memories import rows as mem
from memvault.store.memories.mirror import MemoryOpError
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.note import content_hash

if TYPE_CHECKING:
    import apsw

    from memvault.store.context import StoreContext
    from memvault.store.memories.mirror import Memories


class UndoError(MemvaultError):
    """A run cannot be undone (unknown, already undone)."""

@dataclass
class UndoReport:
    """What :func:`undo` reversed, and what it could not."""

    run_id: str
    undone: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"run": self.run_id, "undone": len(self.undone), "refused": self.refused}

def undo(ctx: "StoreContext", memories: "Memories", run_ref: str) -> UndoReport:
    """Reverse a whole run, last action first (module docstring), its notes
    put back through ``memories``, the memory mirror."""
    with exclusive(ctx):
        recover(ctx, memories)
        return _undo_run(ctx, memories, run_ref)

def _undo_run(ctx: "StoreContext", memories: "Memories", run_ref: str) -> UndoReport:
    con = ctx.con
    run = log.get_run(con, run_ref)
    if run is None:
        raise UndoError(f"no consolidation run matches {run_ref!r} (see `memvault consolidate --log`)")
    if run.status == "undone":
        raise UndoError(f"run {run.id} is already undone")
    report = UndoReport(run.id)
    for action in reversed(log.actions(con, run.id)):
        entry = {"seq": action.seq, "kind": action.kind, "ids": action.ids}
        if (action.undo or {}).get("undone"):  # an earlier undo, cut short, got this far
            report.undone.append(entry)
            continue
        try:
            _undo_one(ctx, memories, action)
        except MemoryOpError as exc:
            report.refused.append({**entry, "why": str(exc)})
            continue
        except OSError as exc:
            raise RunWriteError(f"undo of {run.id} stopped ({exc.filename or 'a note'}): {exc.strerror or exc}; "
                                f"run the undo again to finish it") from None
        with write_transaction(con):  # undone: an undo run again skips it
            log.update_action(con, run.id, action.seq, {**(action.undo or {}), "undone": True})
        report.undone.append(entry)
    if not report.refused:
        with write_transaction(con):
            log.set_run_status(con, run.id, "undone")
    return report

def _unchanged(ctx: "StoreContext", undo_info: dict[str, Any], memory_id: str) -> bool:
    """Refuse to undo when a person changed the note since the run; False
    when the note is back as it was before the run (an undo cut short after
    putting it back), so undoing it again is harmless."""
    back, before = undo_info.get("path"), undo_info.get("text")
    if back is not None and before is not None and (ctx.root / back).is_file() and \
            (ctx.root / back).read_bytes() == before.encode("utf-8", "surrogateescape"):
        return False
    # Put back by an undo cut short whose note write a sync finished: the
    # trace is as before the run, its note where it was (written from the
    # trace, so reverting again puts the exact bytes back).
    now, snapshot = rec.get_trace(ctx.con, memory_id), undo_info.get("trace")
    if back is not None and now is not None and snapshot and now.path == back and (ctx.root / back).is_file():
        was = rec.trace_from_json(snapshot)
        # ``supersedes`` too: any change since (the run's, a person's) made a version.
        if (now.content, now.type, now.tags, now.metadata.get("supersedes")) == (
                was.content, was.type, was.tags, was.metadata.get("supersedes")):
            return False
    path, expected = undo_info.get("path_after"), undo_info.get("hash_after")
    if path is None or expected is None:
        return True
    now = (ctx.root / path).read_bytes() if (ctx.root / path).is_file() else None
    if now is None or content_hash(now) != expected:
        raise MemoryOpError(f"the note of {memory_id} ({path}) changed since the run; undo that part by hand")
    return True

def _undo_one(ctx: "StoreContext", memories: "Memories", action: log.LoggedAction) -> None:
    con = ctx.con
    u = action.undo or {}
    if action.kind == "decay":
        with write_transaction(con):
            for memory_id, trace_strength, state in u.get("rows", []):
                con.execute("UPDATE traces SET strength = ? WHERE id = ?", (trace_strength, memory_id))
                if state is None:
                    con.execute("DELETE FROM state.recall WHERE trace_id = ?", (memory_id,))
                else:
                    con.execute("UPDATE state.recall SET strength = ?, decayed_at = ? WHERE trace_id = ?",
                                (state[0], state[1], memory_id))
        return
    if action.kind == "archive":
        t = rec.get_trace(con, action.ids[0])
        if t is not None and t.status == "deleted":
            memories.restore(t.id)
        return
    if action.kind == "contradiction":
        row = con.execute("SELECT older_id, newer_id FROM state.contradictions WHERE id = ?",
                          (u.get("contradiction"),)).fetchone()
        with write_transaction(con):
            if row:
                links.drop_edge(con, row[1], links.CONTRADICTS, row[0])
            log.drop_contradiction(con, int(u.get("contradiction") or 0))
        return
    if action.kind == "promote":
        memory_id = u["id"]
        t = rec.get_trace(con, memory_id)
        if t is not None and t.status == "active":
            _unchanged(ctx, u, memory_id)
            memories.discard(memory_id)
        with write_transaction(con):
            if t is not None and t.status != "active":
                # Its note is gone (an undo cut short after removing it, or a
                # person deleted it): the run's own statement goes entirely.
                mem.drop_memory(con, memory_id)
            log.drop_links(con, memory_id)
        return
    if action.kind == "task_done":
        flush_notes(memories, action.ids)  # a revert cut short is finished first
        _unchanged(ctx, u, action.ids[0])
        _revert(ctx, memories, u)
        return
    if action.kind == "merge":
        _undo_merge(ctx, memories, action)
        return
    if action.kind == "retention":
        from memvault.store.consolidation.retention import bring_back

        if not u.get("undone"):
            bring_back(ctx, u, memories.indexer.sync_paths)
        return
    raise MemoryOpError(f"cannot undo an action of kind {action.kind!r}")

def _revert(ctx: "StoreContext", memories: "Memories", u: dict[str, Any]) -> None:
    """Put a memory's trace and note back as they were before the run."""
    snapshot = rec.trace_from_json(u["trace"]) if u.get("trace") else None
    if snapshot is None or u.get("path") is None or u.get("text") is None:
        raise MemoryOpError("the run kept no copy of the note to put back")
    memories.revert(snapshot, u["path"], u["text"].encode("utf-8", "surrogateescape"),
                          drop_versions=[u["version"]] if u.get("version") else [])
    _restore_recall(ctx.con, snapshot)

def _restore_recall(con: "apsw.Connection", snapshot: rec.TraceRow) -> None:
    with write_transaction(con):
        con.execute("UPDATE traces SET strength = ?, retrieval_count = ?, last_access = ? WHERE id = ?",
                          (snapshot.strength, snapshot.retrieval_count, snapshot.last_access, snapshot.id))
        con.execute("UPDATE state.recall SET strength = ? WHERE trace_id = ?", (snapshot.strength, snapshot.id))

def _undo_merge(ctx: "StoreContext", memories: "Memories", action: log.LoggedAction) -> None:
    con = ctx.con
    u = action.undo or {}
    survivor = action.ids[0]
    flush_notes(memories, [survivor, *u.get("members", {})])  # writes an undo cut short left
    _unchanged(ctx, u, survivor)
    for memory_id in sorted(u.get("members", {})):
        found = log.merged_into(con, memory_id)
        t = rec.get_trace(con, memory_id)
        if found is None and (t is None or t.status != "deleted"):
            continue  # taken back out already (`memvault restore`, or an undo cut short)
        if found is not None:
            with write_transaction(con):
                log.drop_merge(con, memory_id)
                con.execute("UPDATE traces SET status = 'deleted', reason = 'forgotten' WHERE id = ?", (memory_id,))
        memories.restore(memory_id)
        _restore_member(con, u["members"][memory_id])
    _revert(ctx, memories, u)
    with write_transaction(con):  # the survivor's recall row as it was
        con.execute("DELETE FROM state.recall WHERE trace_id = ?", (survivor,))
        if u.get("recall"):
            con.execute("INSERT INTO state.recall (trace_id, retrieval_count, last_access, strength, decayed_at) "
                        "VALUES (?,?,?,?,?)", (survivor, *u["recall"]))

def _restore_member(con: "apsw.Connection", info: dict[str, Any]) -> None:
    """A restored member's trace gets back its state from before the merge
    (status, reason and the trash bookkeeping the forget added)."""
    before = rec.trace_from_json(info["trace"])
    with write_transaction(con):
        con.execute("UPDATE traces SET reason = ?, metadata = ? WHERE id = ? AND status = 'active'", (
            before.reason, json.dumps(before.metadata, ensure_ascii=False, sort_keys=True, default=str), before.id))
