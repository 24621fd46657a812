"""The consolidation journal's safety: one run at a time, and settling what a
dead run left.

A writer can die at any point (SIGKILL, a full disk, the machine). So one
run, merge or undo at a time holds the vault's consolidation lock
(:func:`exclusive`, released by the kernel when its process dies), and every
action that writes notes is logged *before* it starts, ``pending``, and kept
up to date as it goes. The next run, merge or undo first calls
:func:`recover`: each pending action is settled from what the store shows
(confirmed with what undoing it needs, or dropped when it never changed
anything), and a run still marked ``running`` is marked ``interrupted``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memvault.store.consolidation import links
from memvault.store.consolidation import rows as log
from memvault.store.consolidation.merge import mark_member
from memvault.store.consolidation.plan import Action, count_actions
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.memories import rows as mem
from memvault.store.memories.mirror import MemoryWriteError
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.locks import flock_within, held_elsewhere
from memvault.vault_io.note import content_hash

if TYPE_CHECKING:
    import apsw

    from memvault.store.context import StoreContext
    from memvault.store.memories.mirror import Memories


#: Source recorded on memories a run creates (promoted statements).
SOURCE = "consolidate"

#: Why a task's update supersedes its version (undo and recovery look for it).
TASK_DONE = "due task done"
#: The version reason of ongoing work a run closed (its note said it is done).
WORK_DONE = "ongoing work done"


def done_reason(detail: dict[str, Any]) -> str:
    """The version reason of a ``task_done`` action (a due task's, or ongoing work's)."""
    return WORK_DONE if detail.get("ongoing") else TASK_DONE

#: How long a run, merge or undo waits for another one to end (seconds).
LOCK_WAIT = 10.0

class RunBusyError(MemvaultError):
    """Another run, merge or undo of the same vault is going on."""

class RunWriteError(MemvaultError):
    """A run could not write a note or the lock (a full disk, a read-only vault)."""

@contextmanager
def exclusive(ctx: "StoreContext") -> Iterator[None]:
    """Hold the vault's consolidation lock: one run, merge or undo at a time
    (the daemon's schedule and a command alike). The kernel releases it when
    its process dies, so a run found ``running`` while holding it is dead."""
    ctx.con  # a vault never synced is named as such, before any lock
    path = ctx.data_dir / "consolidate.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise RunWriteError(f"cannot open the consolidation lock {path}: {exc.strerror}") from None
    try:
        if not flock_within(fd, LOCK_WAIT, interval=0.05):
            raise RunBusyError("another consolidation run, merge or undo is going on for this vault "
                               "(the daemon's, or a command's); try again when it ends")
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def decayed_on(con: "apsw.Connection", memory_id: str, day: str) -> None:
    """A memory's strength is as of ``day`` (the run's): decay starts from there."""
    with write_transaction(con):
        con.execute(
            "INSERT INTO state.recall (trace_id, retrieval_count, last_access, strength, decayed_at) "
            "SELECT id, retrieval_count, last_access, strength, ? FROM traces WHERE id = ? "
            "ON CONFLICT(trace_id) DO UPDATE SET decayed_at = excluded.decayed_at",
            (day, memory_id),
        )

def after_state(ctx: "StoreContext", memory_id: str) -> dict[str, Any]:
    """Where a memory's note is after the run, and its hash (undo checks it);
    no hash while its note still waits to be written (the next sync writes it)."""
    if mem.get_outbox(ctx.con, memory_id) is not None:
        return {"path_after": mem.trace_path(ctx.con, memory_id), "hash_after": None}
    path = mem.trace_path(ctx.con, memory_id)
    data = (ctx.root / path).read_bytes() if path and (ctx.root / path).is_file() else None
    return {"path_after": path, "hash_after": content_hash(data) if data is not None else None}

def link_promoted(ctx: "StoreContext", action: Action, run_id: str, day: str, memory_id: str) -> dict[str, Any]:
    """Link a promoted memory to its episodes (idempotent); its undo."""
    con = ctx.con
    with write_transaction(con):
        for member in action.detail["members"]:
            log.put_link(con, memory_id, links.DERIVED_FROM, member, run_id)
        links.apply_durable_edges(con)
    decayed_on(con, memory_id, day)  # made on the run's day, whatever the clock says
    return {"id": memory_id, **after_state(ctx, memory_id)}


def recover(ctx: "StoreContext", memories: "Memories") -> None:
    """Settle what a writer that died left (call with :func:`exclusive` held):
    every ``pending`` action, then every run still marked ``running``
    (``memories``: the mirror that finishes the note writes it left)."""
    con = ctx.con
    for run in log.unfinished_runs(con):
        settle_run(ctx, memories, run.id)
        with write_transaction(con):
            log.finish_run(con, run.id, "interrupted", action_counts(log.actions(con, run.id)))
    for run_id in log.runs_with_pending(con):  # runs that failed halfway through an action
        settle_run(ctx, memories, run_id)

def _finish_members(ctx: "StoreContext", memories: "Memories", run: log.Run, survivor: str, reason: str,
                    others: dict[str, Any], members: dict[str, Any]) -> dict[str, Any]:
    """Forget and mark merged each member of a killed merge still live and
    as the merge found it (one a person changed since stays live, as a merge
    leaves a member edited meanwhile); the members merged now."""
    con = ctx.con
    merged: dict[str, Any] = {}
    for memory_id, info in others.items():
        t = rec.get_trace(con, memory_id)
        if memory_id in members or t is None or t.status != "active":
            continue
        if t.content != rec.trace_from_json(info["trace"]).content:
            continue
        try:
            done = memories.forget(memory_id, reason)
        except MemvaultError:
            continue  # its note cannot be moved now: it stays live, the merge ends without it
        if done.action != "forgotten":
            continue
        with write_transaction(con):
            mark_member(con, memory_id, survivor, run.id, info["path"])
        merged[memory_id] = info
    return merged


def left_unfinished(ctx: "StoreContext") -> list[log.Run]:
    """Runs (and merges, and undos) a writer that died left unfinished: still
    marked running, or with an action pending, while no run holds the lock
    (one that does is alive). Reads only."""
    con = ctx.con
    found = {r.id: r for r in log.unfinished_runs(con)}
    for run_id in log.runs_with_pending(con):
        if run_id not in found and (run := log.get_run(con, run_id)) is not None:
            found[run_id] = run
    if not found or _lock_held(ctx):
        return []
    return list(found.values())


def _lock_held(ctx: "StoreContext") -> bool:
    """Whether a run, merge or undo holds the vault's consolidation lock now."""
    return held_elsewhere(ctx.data_dir / "consolidate.lock")


def action_counts(actions: Sequence[log.LoggedAction]) -> dict[str, int]:
    """A run's summary from its log (decay counts memories)."""
    return count_actions((a.kind, a.detail) for a in actions)

def settle_run(ctx: "StoreContext", memories: "Memories", run_id: str) -> bool:
    """Settle a run's pending actions; True when one turned out done (even in part)."""
    run = log.get_run(ctx.con, run_id)
    done = False
    for action in log.actions(ctx.con, run_id):
        if action.pending and run is not None:
            done = _settle(ctx, memories, run, action) or done
    return done

def flush_notes(memories: "Memories", ids: Sequence[str]) -> None:
    """Finish the note writes a dead writer left for ``ids``; one that fails
    again stays in the outbox for the next ``sync`` (the index has the change)."""
    for memory_id in ids:
        try:
            memories.flush(memory_id)
        except MemoryWriteError:
            pass

def _superseded_by(con: "apsw.Connection", t: rec.TraceRow | None, before: rec.TraceRow, reason: str) -> str | None:
    """The version ``t`` got from a change logged with ``reason`` since
    ``before``, or None when that change never reached the trace (a version
    staged in the state alone is not one)."""
    version = t.metadata.get("supersedes") if t is not None else None
    if not version or version == before.metadata.get("supersedes"):
        return None
    row = con.execute("SELECT reason FROM state.memory_versions WHERE id = ?", (version,)).fetchone()
    return version if row and row[0] == reason else None

def _settle(ctx: "StoreContext", memories: "Memories", run: log.Run, action: log.LoggedAction) -> bool:
    """Confirm a pending action from what the store shows, with what undoing
    it needs, or drop its row when it changed nothing; True when confirmed."""
    con = ctx.con
    u = dict(action.undo or {})
    u.pop("pending", None)
    kept: dict[str, Any] | None = None
    changes: dict[str, Any] = {}
    if action.kind == "archive":
        flush_notes(memories, action.ids)
        t = rec.get_trace(con, action.ids[0])
        # Live when the run began, deleted now: archived by it (the reason may
        # read "note deleted in the vault" when the writer stopped right after
        # moving the note to .trash and sync recorded the rest).
        kept = u if t is not None and t.status == "deleted" else None
    elif action.kind == "promote":
        memory_id = u.get("id")
        flush_notes(memories, [memory_id] if memory_id else [])
        t = rec.get_trace(con, memory_id) if memory_id else None
        if t is not None and t.status == "active" and t.source == SOURCE:
            kept = link_promoted(ctx, Action(action.kind, action.ids, action.reason, action.detail), run.id, run.day,
                                 t.id)
    elif action.kind == "task_done":
        flush_notes(memories, action.ids)
        t = rec.get_trace(con, action.ids[0])
        before = rec.trace_from_json(u["trace"]) if u.get("trace") else None
        version = _superseded_by(con, t, before, done_reason(action.detail)) if before is not None else None
        if version is not None:
            kept = {**u, "version": version, **after_state(ctx, action.ids[0])}
    elif action.kind == "retention":
        from memvault.store.consolidation.retention import settle

        kept = settle(ctx, u)
    elif action.kind == "merge":
        kept = _settle_merge(ctx, memories, run, u)
        if kept is not None and run.trigger == "merge":  # logged as `memvault merge` logs it
            members = list(kept["members"])
            changes.update(ids=[kept["survivor"], *members],
                           detail={**action.detail, "survivor": kept["survivor"], "members": members})
    with write_transaction(con):
        if kept is None:
            log.drop_action(con, run.id, action.seq)
        else:
            log.update_action(con, run.id, action.seq, kept, **changes)
    return kept is not None

def _settle_merge(ctx: "StoreContext", memories: "Memories", run: log.Run,
                  u: dict[str, Any]) -> dict[str, Any] | None:
    """How far a killed merge got (see :func:`.merge.merge`): the survivor's
    update and each member forgotten for it; the members forgotten but not yet
    marked merged are merged now, and, once the survivor holds their text,
    so are the members not yet forgotten: the merge ends whole, as it would
    have (or, killed before the survivor changed, as if never begun)."""
    if "survivor" not in u:
        return None  # killed before its first change
    con = ctx.con
    survivor, reason, others = u["survivor"], u["reason"], u.get("others", {})
    flush_notes(memories, [survivor, *others])
    before = rec.trace_from_json(u["trace"])
    version = _superseded_by(con, rec.get_trace(con, survivor), before, reason)
    members = dict(u.get("members", {}))
    for memory_id, info in others.items():
        t = rec.get_trace(con, memory_id)
        # Live when the merge began; deleted now, after the survivor took its
        # text in: forgotten by this merge. (Not always with the merge's
        # reason: a writer killed right after moving the note to .trash
        # leaves it to sync, which records "note deleted in the vault".)
        if memory_id in members or t is None or t.status != "deleted":
            continue
        with write_transaction(con):
            mark_member(con, memory_id, survivor, run.id, info["path"])
        members[memory_id] = info
    if version is not None:
        members.update(_finish_members(ctx, memories, run, survivor, reason, others, members))
    if version is None and not members:
        return None
    if "path_after" not in u:
        u.update(version=version, **after_state(ctx, survivor))
    if run.trigger != "merge":
        decayed_on(con, survivor, run.day)
    return {**u, "members": members}
