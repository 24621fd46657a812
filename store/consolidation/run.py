"""Carrying out a plan, logging every action with its reason, and undoing a run.

:func:`consolidate` reads the store (:func:`.records.load_records`, vectors
from the embedding cache), makes the plan (:mod:`.plan`) and, unless it is a
dry run, carries it out action by action through the memory mirror, the one
writer of memory notes (outbox, atomic write, conflict check). Each action is
logged in ``state.consolidation_actions`` with its reason, the plan's detail
(so a dry run's plan and the run's log can be compared) and what undoing it
needs: earlier traces, the note's bytes and path, the hash the run left.

:func:`undo` reverses a run, last action first, back to the same traces and
the same note bytes. An action whose notes a person changed since the run is
not undone (it is reported, and the run stays ``done``): an undo never
overwrites a person's edit.

A writer can die at any point (SIGKILL, a full disk, the machine). So one
run, merge or undo at a time holds the vault's consolidation lock
(:func:`exclusive`, released by the kernel when its process dies), and every
action that writes notes is logged *before* it starts, ``pending``, and kept
up to date as it goes. The next run, merge or undo first calls
:func:`recover`: each pending action is settled from what the store shows
(confirmed with what undoing it needs, or dropped when it never changed
anything), and a run still marked ``running`` is marked ``interrupted``. An
undo marks each action it reverses, and reversing one again is harmless, so
an undo that was cut short is finished by running it again.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, Any

from memvault.store.consolidation import links
from memvault.store.consolidation import rows as log
from memvault.store.consolidation.merge import mark_member, merge
from memvault.store.consolidation.plan import Action, Context, Plan, Policy, make_plan
from memvault.store.consolidation.records import load_records, load_vectors
from memvault.store.consolidation.rules import Thresholds
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.index.classify import content_key
from memvault.store.memories import rows as mem
from memvault.store.memories.mirror import MemoryOpError, MemoryWriteError, memory_id_for
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.note import content_hash
from memvault.vault_io.secrets import redact

if TYPE_CHECKING:
    from memvault.store.memory_store import MemoryStore

#: Source recorded on memories a run creates (promoted statements).
SOURCE = "consolidate"
#: Actions that write notes (and so wait while a person edits one of them).
WRITES_NOTES = ("archive", "merge", "promote", "task_done")


#: How long a run, merge or undo waits for another one to end (seconds).
LOCK_WAIT = 10.0
#: Why a task's update supersedes its version (undo and recovery look for it).
TASK_DONE = "due task done"


class UndoError(MemvaultError):
    """A run cannot be undone (unknown, already undone)."""


class RunBusyError(MemvaultError):
    """Another run, merge or undo of the same vault is going on."""


class RunWriteError(MemvaultError):
    """A run could not write a note or the lock (a full disk, a read-only vault)."""


@contextmanager
def exclusive(store: "MemoryStore") -> Iterator[None]:
    """Hold the vault's consolidation lock: one run, merge or undo at a time
    (the daemon's schedule and a command alike). The kernel releases it when
    its process dies, so a run found ``running`` while holding it is dead."""
    store.con  # a vault never synced is named as such, before any lock
    path = store.data_dir / "consolidate.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise RunWriteError(f"cannot open the consolidation lock {path}: {exc.strerror}") from None
    try:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RunBusyError("another consolidation run, merge or undo is going on for this vault "
                                       "(the daemon's, or a command's); try again when it ends") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@dataclass
class RunReport:
    """What :func:`consolidate` planned and (unless a dry run) did."""

    run_id: str | None
    day: str
    dry_run: bool
    actions: list[dict[str, Any]] = field(default_factory=list)
    deferred: list[dict[str, Any]] = field(default_factory=list)  # left for a person's edit to finish
    failed: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Done (or planned) actions per kind; decay counts memories."""
        out: dict[str, int] = {}
        for a in self.actions:
            out[a["kind"]] = out.get(a["kind"], 0) + (len(a["detail"].get("changes", ())) if a["kind"] == "decay" else 1)
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary (without the actions, printed one per line)."""
        return {"run": self.run_id, "day": self.day, "dry_run": self.dry_run, "counts": self.counts(),
                "deferred": len(self.deferred), "failed": len(self.failed), "stats": self.stats}


def policy_for(store: "MemoryStore") -> Policy:
    """The plan's knobs from the store's settings."""
    c, r = store.settings.consolidate, store.settings.recall
    return Policy(
        half_lives=dict(r.half_life), evergreen_tags=frozenset(r.evergreen_tags),
        archive_strength=c.archive_strength, archive_days=c.archive_days, protect_days=c.protect_days,
        thresholds=Thresholds(duplicate=c.duplicate_similarity, merge=c.merge_similarity),
    )


def plan_for(store: "MemoryStore", today: date | None = None) -> Plan:
    """The plan for the store as it is now."""
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import resolve_model

    con = store.con
    records = load_records(con)
    spec = resolve_model(store.settings.embedding.model)
    vectors = {}
    if spec is not None:
        cache = vec.open_cache(store.data_dir, create=False)
        try:
            vectors = load_vectors(con, cache, spec.key, records)
        finally:
            if cache is not None:
                cache.close()
    context = Context(
        flagged=log.known_pairs(con),
        promoted={r[0] for r in con.execute(
            "SELECT l.target_id FROM state.memory_links l JOIN traces t ON t.id = l.source_id "
            "WHERE l.kind = 'derived_from' AND t.status = 'active'")},
    )
    return make_plan(records, vectors, policy_for(store), today or datetime.now(timezone.utc).date(), context)


def touched_paths(store: "MemoryStore", action: Action) -> list[str]:
    """The notes an action would write or move."""
    if action.kind not in WRITES_NOTES:
        return []
    ids = [] if action.kind == "promote" else action.ids
    return [p for i in ids if (p := mem.trace_path(store.con, i))]


def consolidate(store: "MemoryStore", *, dry_run: bool = False, today: date | None = None, trigger: str = "cli",
                avoid: Callable[[str], bool] | None = None) -> RunReport:
    """Plan and (unless ``dry_run``) carry out one consolidation run.

    ``avoid(path)`` says a note is being edited by a person right now (the
    daemon's view): an action that would write it is deferred to a later run.
    A note that cannot be written (a full disk, a read-only vault) ends the
    run there with one line (:class:`~.mirror.MemoryWriteError`): what was
    done is logged, and the next ``sync`` writes the note.
    """
    if dry_run:
        plan = plan_for(store, today)
        report = RunReport(None, plan.day, dry_run, stats=dict(plan.stats))
        report.actions = plan.as_dicts()
        return report
    with exclusive(store):
        recover(store)
        return _carry_out(store, plan_for(store, today), trigger, avoid)


def _carry_out(store: "MemoryStore", plan: Plan, trigger: str, avoid: Callable[[str], bool] | None) -> RunReport:
    report = RunReport(None, plan.day, False, stats=dict(plan.stats))
    con = store.con
    run_id = log.new_run_id(plan.day)
    with write_transaction(con):
        log.start_run(con, run_id, plan.day, trigger)
    report.run_id = run_id
    try:
        for action in plan.actions:
            # Asked right before each action: a person may start editing mid-run.
            if avoid is not None and any(avoid(p) for p in touched_paths(store, action)):
                report.deferred.append(action.as_dict())
                continue
            try:
                _do(store, action, run_id, plan.day)
            except MemoryOpError as exc:
                # What the action got done before it stopped is logged (or,
                # when it changed nothing, its row is dropped).
                done = _settle_run(store, run_id)
                if done:
                    report.actions.append(action.as_dict())
                if isinstance(exc, MemoryWriteError):
                    raise  # a full disk or a read-only vault fails every write after this one
                if not done:  # one memory that cannot be changed now: the rest go on
                    report.failed.append({**action.as_dict(), "error": str(exc)})
                continue
            except OSError as exc:  # a note read or removed outside the mirror's writer
                _settle_run(store, run_id)
                where = f" ({exc.filename})" if exc.filename else ""
                raise RunWriteError(f"consolidation run {run_id} stopped{where}: {exc.strerror or exc}; "
                                    f"what it did is logged, and the next run goes on") from None
            report.actions.append(action.as_dict())
    except BaseException:
        try:
            with write_transaction(con):
                log.finish_run(con, run_id, "failed", report.counts())
        except MemvaultError:
            pass  # the database fails too: the next run marks this one (recover)
        raise
    with write_transaction(con):
        log.finish_run(con, run_id, "done", report.counts())
    return report


def _do(store: "MemoryStore", action: Action, run_id: str, day: str) -> None:
    """Carry out one action and log it with what undoing it needs. An action
    that writes notes is logged ``pending`` first and confirmed after, so its
    row survives a writer that dies halfway (see :func:`recover`)."""
    con = store.con
    if action.kind == "decay":
        _decay(store, action, run_id)  # one transaction, its log row in it
        return
    if action.kind == "contradiction":
        d = action.detail
        with write_transaction(con):
            cid = log.put_contradiction(con, d["older"], d["newer"], d["kind"], action.reason, run_id)
            links.apply_durable_edges(con)
            log.log_action(con, run_id, action.kind, action.ids, action.reason, action.detail, {"contradiction": cid})
        return
    if action.kind == "archive":
        before = rec.get_trace(con, action.ids[0])
        seq = _begin(con, run_id, action, {"trace": rec.trace_json(before) if before else None})
        store.memories.forget(action.ids[0], "faded")
        _confirm(con, run_id, seq, {"trace": rec.trace_json(before) if before else None})
        return
    if action.kind == "merge":
        recall = con.execute("SELECT retrieval_count, last_access, strength, decayed_at FROM state.recall "
                             "WHERE trace_id = ?", (action.ids[0],)).fetchone()
        seq = _begin(con, run_id, action, {})
        outcome = merge(store, action.ids, None, run_id=run_id, detail=action.detail, seq=seq,
                        undo_extra={"recall": list(recall) if recall else None})
        _decayed_on(store, action.ids[0], day)  # its strength is this run's: no more decay today
        _confirm(con, run_id, seq, outcome.undo)
        return
    if action.kind == "promote":
        d = action.detail
        # The id the new memory will get, logged before it exists, so a
        # recovery can tell whether it was made.
        expected = memory_id_for(con, content_key("semantic", d["scope"] or "user", redact(d["statement"].strip())[0]))
        seq = _begin(con, run_id, action, {"id": expected})
        result = store.memories.add(d["statement"], "semantic", tags=d["tags"], scope=d["scope"], source=SOURCE,
                                    allow_duplicate=True, extra={"derived_from": list(d["members"])})
        _confirm(con, run_id, seq, _promoted(store, action, run_id, day, result.id))
        return
    if action.kind == "task_done":
        memory_id = action.ids[0]
        before = rec.get_trace(con, memory_id)
        path = mem.trace_path(con, memory_id)
        text = (store.root / path).read_bytes().decode("utf-8", "surrogateescape") if path else None
        undo = {"trace": rec.trace_json(before) if before else None, "path": path, "text": text}
        seq = _begin(con, run_id, action, undo)
        store.memories.update(memory_id, type_="episodic", reason=TASK_DONE)
        after = rec.get_trace(con, memory_id)
        _confirm(con, run_id, seq, {**undo, "version": after.metadata.get("supersedes") if after else None,
                                    **_after(store, memory_id)})
        return
    raise ValueError(f"unknown action {action.kind!r}")


def _begin(con: Any, run_id: str, action: Action, undo: dict[str, Any]) -> int:
    """Log an action before it starts (``pending``); returns its row's seq."""
    with write_transaction(con):
        return log.log_action(con, run_id, action.kind, action.ids, action.reason, action.detail,
                              {**undo, "pending": True})


def _confirm(con: Any, run_id: str, seq: int, undo: dict[str, Any], **changes: Any) -> None:
    """An action is done: its row gets the whole of what undoing it needs."""
    with write_transaction(con):
        log.update_action(con, run_id, seq, {k: v for k, v in undo.items() if k != "pending"}, **changes)


def _promoted(store: "MemoryStore", action: Action, run_id: str, day: str, memory_id: str) -> dict[str, Any]:
    """Link a promoted memory to its episodes (idempotent); its undo."""
    con = store.con
    with write_transaction(con):
        for member in action.detail["members"]:
            log.put_link(con, memory_id, links.DERIVED_FROM, member, run_id)
        links.apply_durable_edges(con)
    _decayed_on(store, memory_id, day)  # made on the run's day, whatever the clock says
    return {"id": memory_id, **_after(store, memory_id)}


def _decayed_on(store: "MemoryStore", memory_id: str, day: str) -> None:
    """A memory's strength is as of ``day`` (the run's): decay starts from there."""
    with write_transaction(store.con):
        store.con.execute(
            "INSERT INTO state.recall (trace_id, retrieval_count, last_access, strength, decayed_at) "
            "SELECT id, retrieval_count, last_access, strength, ? FROM traces WHERE id = ? "
            "ON CONFLICT(trace_id) DO UPDATE SET decayed_at = excluded.decayed_at",
            (day, memory_id),
        )


def _after(store: "MemoryStore", memory_id: str) -> dict[str, Any]:
    """Where a memory's note is after the run, and its hash (undo checks it);
    no hash while its note still waits to be written (the next sync writes it)."""
    if mem.get_outbox(store.con, memory_id) is not None:
        return {"path_after": mem.trace_path(store.con, memory_id), "hash_after": None}
    path = mem.trace_path(store.con, memory_id)
    data = (store.root / path).read_bytes() if path and (store.root / path).is_file() else None
    return {"path_after": path, "hash_after": content_hash(data) if data is not None else None}


def _decay(store: "MemoryStore", action: Action, run_id: str) -> None:
    con = store.con
    rows = []
    day = action.detail["day"]
    with write_transaction(con):
        for memory_id, _old, new, _days in action.detail["changes"]:
            trace_strength = con.execute("SELECT strength FROM traces WHERE id = ?", (memory_id,)).fetchone()
            state = con.execute(
                "SELECT strength, decayed_at FROM state.recall WHERE trace_id = ?", (memory_id,)
            ).fetchone()
            rows.append([memory_id, trace_strength[0] if trace_strength else None,
                         list(state) if state else None])
            con.execute("UPDATE traces SET strength = ? WHERE id = ?", (new, memory_id))
            con.execute(
                "INSERT INTO state.recall (trace_id, retrieval_count, last_access, strength, decayed_at) "
                "SELECT id, retrieval_count, last_access, ?, ? FROM traces WHERE id = ? "
                "ON CONFLICT(trace_id) DO UPDATE SET strength = excluded.strength, decayed_at = excluded.decayed_at",
                (new, day, memory_id),
            )
        log.log_action(con, run_id, action.kind, action.ids, action.reason, action.detail, {"rows": rows})


# -- recovery --------------------------------------------------------------------


def recover(store: "MemoryStore") -> None:
    """Settle what a writer that died left (call with :func:`exclusive` held):
    every ``pending`` action, then every run still marked ``running``."""
    con = store.con
    for run in log.unfinished_runs(con):
        _settle_run(store, run.id)
        with write_transaction(con):
            log.finish_run(con, run.id, "interrupted", _counts(log.actions(con, run.id)))
    for run_id in log.runs_with_pending(con):  # runs that failed halfway through an action
        _settle_run(store, run_id)


def _counts(actions: Sequence[log.LoggedAction]) -> dict[str, int]:
    """A run's summary from its log (decay counts memories)."""
    out: dict[str, int] = {}
    for a in actions:
        out[a.kind] = out.get(a.kind, 0) + (len(a.detail.get("changes", ())) if a.kind == "decay" else 1)
    return out


def _settle_run(store: "MemoryStore", run_id: str) -> bool:
    """Settle a run's pending actions; True when one turned out done (even in part)."""
    run = log.get_run(store.con, run_id)
    done = False
    for action in log.actions(store.con, run_id):
        if action.pending and run is not None:
            done = _settle(store, run, action) or done
    return done


def _flush(store: "MemoryStore", ids: Sequence[str]) -> None:
    """Finish the note writes a dead writer left for ``ids``; one that fails
    again stays in the outbox for the next ``sync`` (the index has the change)."""
    for memory_id in ids:
        try:
            store.memories.flush(memory_id)
        except MemoryWriteError:
            pass


def _superseded_by(con: Any, t: rec.TraceRow | None, before: rec.TraceRow, reason: str) -> str | None:
    """The version ``t`` got from a change logged with ``reason`` since
    ``before``, or None when that change never reached the trace (a version
    staged in the state alone is not one)."""
    version = t.metadata.get("supersedes") if t is not None else None
    if not version or version == before.metadata.get("supersedes"):
        return None
    row = con.execute("SELECT reason FROM state.memory_versions WHERE id = ?", (version,)).fetchone()
    return version if row and row[0] == reason else None


def _settle(store: "MemoryStore", run: log.Run, action: log.LoggedAction) -> bool:
    """Confirm a pending action from what the store shows, with what undoing
    it needs, or drop its row when it changed nothing; True when confirmed."""
    con = store.con
    u = dict(action.undo or {})
    u.pop("pending", None)
    kept: dict[str, Any] | None = None
    changes: dict[str, Any] = {}
    if action.kind == "archive":
        _flush(store, action.ids)
        t = rec.get_trace(con, action.ids[0])
        # Live when the run began, deleted now: archived by it (the reason may
        # read "note deleted in the vault" when the writer stopped right after
        # moving the note to .trash and sync recorded the rest).
        kept = u if t is not None and t.status == "deleted" else None
    elif action.kind == "promote":
        memory_id = u.get("id")
        _flush(store, [memory_id] if memory_id else [])
        t = rec.get_trace(con, memory_id) if memory_id else None
        if t is not None and t.status == "active" and t.source == SOURCE:
            kept = _promoted(store, Action(action.kind, action.ids, action.reason, action.detail), run.id, run.day,
                             t.id)
    elif action.kind == "task_done":
        _flush(store, action.ids)
        t = rec.get_trace(con, action.ids[0])
        before = rec.trace_from_json(u["trace"]) if u.get("trace") else None
        version = _superseded_by(con, t, before, TASK_DONE) if before is not None else None
        if version is not None:
            kept = {**u, "version": version, **_after(store, action.ids[0])}
    elif action.kind == "merge":
        kept = _settle_merge(store, run, u)
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


def _settle_merge(store: "MemoryStore", run: log.Run, u: dict[str, Any]) -> dict[str, Any] | None:
    """How far a killed merge got (see :func:`.merge.merge`): the survivor's
    update and each member forgotten for it; the members forgotten but not yet
    marked merged are merged now, as the merge would have done next."""
    if "survivor" not in u:
        return None  # killed before its first change
    con = store.con
    survivor, reason, others = u["survivor"], u["reason"], u.get("others", {})
    _flush(store, [survivor, *others])
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
            mark_member(store, memory_id, survivor, run.id, info["path"])
        members[memory_id] = info
    if version is None and not members:
        return None
    if "path_after" not in u:
        u.update(version=version, **_after(store, survivor))
    if run.trigger != "merge":
        _decayed_on(store, survivor, run.day)
    return {**u, "members": members}


# -- undo ----------------------------------------------------------------------


@dataclass
class UndoReport:
    """What :func:`undo` reversed, and what it could not."""

    run_id: str
    undone: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"run": self.run_id, "undone": len(self.undone), "refused": self.refused}


def undo(store: "MemoryStore", run_ref: str) -> UndoReport:
    """Reverse a whole run, last action first (module docstring)."""
    with exclusive(store):
        recover(store)
        return _undo_run(store, run_ref)


def _undo_run(store: "MemoryStore", run_ref: str) -> UndoReport:
    con = store.con
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
            _undo_one(store, action)
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


def _unchanged(store: "MemoryStore", undo_info: dict[str, Any], memory_id: str) -> bool:
    """Refuse to undo when a person changed the note since the run; False
    when the note is back as it was before the run (an undo cut short after
    putting it back), so undoing it again is harmless."""
    back, before = undo_info.get("path"), undo_info.get("text")
    if back is not None and before is not None and (store.root / back).is_file() and \
            (store.root / back).read_bytes() == before.encode("utf-8", "surrogateescape"):
        return False
    # Put back by an undo cut short whose note write a sync finished: the
    # trace is as before the run, its note where it was (written from the
    # trace, so reverting again puts the exact bytes back).
    now, snapshot = rec.get_trace(store.con, memory_id), undo_info.get("trace")
    if back is not None and now is not None and snapshot and now.path == back and (store.root / back).is_file():
        was = rec.trace_from_json(snapshot)
        # ``supersedes`` too: any change since (the run's, a person's) made a version.
        if (now.content, now.type, now.tags, now.metadata.get("supersedes")) == (
                was.content, was.type, was.tags, was.metadata.get("supersedes")):
            return False
    path, expected = undo_info.get("path_after"), undo_info.get("hash_after")
    if path is None or expected is None:
        return True
    now = (store.root / path).read_bytes() if (store.root / path).is_file() else None
    if now is None or content_hash(now) != expected:
        raise MemoryOpError(f"the note of {memory_id} ({path}) changed since the run; undo that part by hand")
    return True


def _undo_one(store: "MemoryStore", action: log.LoggedAction) -> None:
    con = store.con
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
            store.memories.restore(t.id)
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
            _unchanged(store, u, memory_id)
            store.memories.discard(memory_id)
        with write_transaction(con):
            if t is not None and t.status != "active":
                # Its note is gone (an undo cut short after removing it, or a
                # person deleted it): the run's own statement goes entirely.
                mem.drop_memory(con, memory_id)
            log.drop_links(con, memory_id)
        return
    if action.kind == "task_done":
        _flush(store, action.ids)  # a revert cut short is finished first
        _unchanged(store, u, action.ids[0])
        _revert(store, u)
        return
    if action.kind == "merge":
        _undo_merge(store, action)
        return
    raise MemoryOpError(f"cannot undo an action of kind {action.kind!r}")


def _revert(store: "MemoryStore", u: dict[str, Any]) -> None:
    """Put a memory's trace and note back as they were before the run."""
    snapshot = rec.trace_from_json(u["trace"]) if u.get("trace") else None
    if snapshot is None or u.get("path") is None or u.get("text") is None:
        raise MemoryOpError("the run kept no copy of the note to put back")
    store.memories.revert(snapshot, u["path"], u["text"].encode("utf-8", "surrogateescape"),
                          drop_versions=[u["version"]] if u.get("version") else [])
    _restore_recall(store, snapshot)


def _restore_recall(store: "MemoryStore", snapshot: rec.TraceRow) -> None:
    with write_transaction(store.con):
        store.con.execute("UPDATE traces SET strength = ?, retrieval_count = ?, last_access = ? WHERE id = ?",
                          (snapshot.strength, snapshot.retrieval_count, snapshot.last_access, snapshot.id))
        store.con.execute("UPDATE state.recall SET strength = ? WHERE trace_id = ?", (snapshot.strength, snapshot.id))


def _undo_merge(store: "MemoryStore", action: log.LoggedAction) -> None:
    con = store.con
    u = action.undo or {}
    survivor = action.ids[0]
    _flush(store, [survivor, *u.get("members", {})])  # writes an undo cut short left
    _unchanged(store, u, survivor)
    for memory_id in sorted(u.get("members", {})):
        found = log.merged_into(con, memory_id)
        t = rec.get_trace(con, memory_id)
        if found is None and (t is None or t.status != "deleted"):
            continue  # taken back out already (`memvault restore`, or an undo cut short)
        if found is not None:
            with write_transaction(con):
                log.drop_merge(con, memory_id)
                con.execute("UPDATE traces SET status = 'deleted', reason = 'forgotten' WHERE id = ?", (memory_id,))
        store.memories.restore(memory_id)
        _restore_member(store, u["members"][memory_id])
    _revert(store, u)
    with write_transaction(con):  # the survivor's recall row as it was
        con.execute("DELETE FROM state.recall WHERE trace_id = ?", (survivor,))
        if u.get("recall"):
            con.execute("INSERT INTO state.recall (trace_id, retrieval_count, last_access, strength, decayed_at) "
                        "VALUES (?,?,?,?,?)", (survivor, *u["recall"]))


def _restore_member(store: "MemoryStore", info: dict[str, Any]) -> None:
    """A restored member's trace gets back its state from before the merge
    (status, reason and the trash bookkeeping the forget added)."""
    before = rec.trace_from_json(info["trace"])
    with write_transaction(store.con):
        store.con.execute("UPDATE traces SET reason = ?, metadata = ? WHERE id = ? AND status = 'active'", (
            before.reason, json.dumps(before.metadata, ensure_ascii=False, sort_keys=True, default=str), before.id))


def runs(store: "MemoryStore", limit: int = 20) -> list[dict[str, Any]]:
    """The latest runs, newest first, as dicts."""
    return [{"run": r.id, "started": r.started, "finished": r.finished, "day": r.day, "trigger": r.trigger,
             "status": r.status, "counts": r.summary} for r in log.runs(store.con, limit)]


def merge_now(store: "MemoryStore", ids: Sequence[str], content: str | None) -> Any:
    """``memvault merge``: one merge, logged as a run of its own (so
    ``consolidate --undo`` reverses it too), ahead of the merge like a run's
    actions (see :func:`recover`)."""
    with exclusive(store):
        recover(store)
        return _merge_run(store, ids, content)


def _merge_run(store: "MemoryStore", ids: Sequence[str], content: str | None) -> Any:
    con = store.con
    day = datetime.now(timezone.utc).date().isoformat()
    run_id = log.new_run_id(day)
    reason = "merged by hand"
    with write_transaction(con):
        log.start_run(con, run_id, day, "merge")
        seq = log.log_action(con, run_id, "merge", list(ids), reason, {"content": content}, {"pending": True})
    try:
        outcome = merge(store, ids, content, run_id=run_id, seq=seq)
    except BaseException:
        try:
            _settle_run(store, run_id)  # a merge cut short by a failed write is logged as far as it got
            with write_transaction(con):
                log.finish_run(con, run_id, "failed", _counts(log.actions(con, run_id)))
        except MemvaultError:
            pass  # the database fails too: the next run, merge or undo settles it (recover)
        raise
    with write_transaction(con):
        if outcome.merged:
            log.update_action(con, run_id, seq, {k: v for k, v in outcome.undo.items() if k != "pending"},
                              ids=[outcome.survivor, *outcome.merged],
                              detail={"survivor": outcome.survivor, "members": outcome.merged, "content": content})
        else:
            log.drop_action(con, run_id, seq)
        log.finish_run(con, run_id, "done", {"merge": 1 if outcome.merged else 0})
    outcome.undo = {"run": run_id}
    return outcome
