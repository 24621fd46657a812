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
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, Any

from memvault.store.consolidation import links
from memvault.store.consolidation import rows as log
from memvault.store.consolidation.merge import merge
from memvault.store.consolidation.plan import Action, Context, Plan, Policy, make_plan
from memvault.store.consolidation.records import load_records, load_vectors
from memvault.store.consolidation.rules import Thresholds
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.memories import rows as mem
from memvault.store.memories.mirror import MemoryOpError
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.note import content_hash

if TYPE_CHECKING:
    from memvault.store.memory_store import MemoryStore

#: Source recorded on memories a run creates (promoted statements).
SOURCE = "consolidate"
#: Actions that write notes (and so wait while a person edits one of them).
WRITES_NOTES = ("archive", "merge", "promote", "task_done")


class UndoError(MemvaultError):
    """A run cannot be undone (unknown, already undone)."""


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
    """
    plan = plan_for(store, today)
    report = RunReport(None, plan.day, dry_run, stats=dict(plan.stats))
    if dry_run:
        report.actions = plan.as_dicts()
        return report
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
                undo = _do(store, action, run_id, plan.day)
            except MemoryOpError as exc:  # one memory that cannot be changed now: the rest go on
                report.failed.append({**action.as_dict(), "error": str(exc)})
                continue
            with write_transaction(con):
                log.log_action(con, run_id, action.kind, action.ids, action.reason, action.detail, undo)
            report.actions.append(action.as_dict())
    except BaseException:
        with write_transaction(con):
            log.finish_run(con, run_id, "failed", report.counts())
        raise
    with write_transaction(con):
        log.finish_run(con, run_id, "done", report.counts())
    return report


def _do(store: "MemoryStore", action: Action, run_id: str, day: str) -> dict[str, Any]:
    """Carry out one action; returns what undoing it needs."""
    con = store.con
    if action.kind == "decay":
        return _decay(store, action, run_id)
    if action.kind == "archive":
        before = rec.get_trace(con, action.ids[0])
        store.memories.forget(action.ids[0], "faded")
        return {"trace": rec.trace_json(before) if before else None}
    if action.kind == "merge":
        recall = con.execute("SELECT retrieval_count, last_access, strength, decayed_at FROM state.recall "
                             "WHERE trace_id = ?", (action.ids[0],)).fetchone()
        outcome = merge(store, action.ids, None, run_id=run_id, detail=action.detail)
        _decayed_on(store, action.ids[0], day)  # its strength is this run's: no more decay today
        return {**outcome.undo, "recall": list(recall) if recall else None}
    if action.kind == "promote":
        d = action.detail
        result = store.memories.add(d["statement"], "semantic", tags=d["tags"], scope=d["scope"], source=SOURCE,
                                    allow_duplicate=True, extra={"derived_from": list(d["members"])})
        with write_transaction(con):
            for member in d["members"]:
                log.put_link(con, result.id, links.DERIVED_FROM, member, run_id)
            links.apply_durable_edges(con)
        _decayed_on(store, result.id, day)  # made on the run's day, whatever the clock says
        return {"id": result.id, **_after(store, result.id)}
    if action.kind == "contradiction":
        d = action.detail
        with write_transaction(con):
            cid = log.put_contradiction(con, d["older"], d["newer"], d["kind"], action.reason, run_id)
            links.apply_durable_edges(con)
        return {"contradiction": cid}
    if action.kind == "task_done":
        memory_id = action.ids[0]
        before = rec.get_trace(con, memory_id)
        path = mem.trace_path(con, memory_id)
        text = (store.root / path).read_bytes().decode("utf-8", "surrogateescape") if path else None
        store.memories.update(memory_id, type_="episodic", reason="due task done")
        after = rec.get_trace(con, memory_id)
        return {"trace": rec.trace_json(before) if before else None, "path": path, "text": text,
                "version": after.metadata.get("supersedes") if after else None, **_after(store, memory_id)}
    raise ValueError(f"unknown action {action.kind!r}")


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
    """Where a memory's note is after the run, and its hash (undo checks it)."""
    path = mem.trace_path(store.con, memory_id)
    data = (store.root / path).read_bytes() if path and (store.root / path).is_file() else None
    return {"path_after": path, "hash_after": content_hash(data) if data is not None else None}


def _decay(store: "MemoryStore", action: Action, run_id: str) -> dict[str, Any]:
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
    return {"rows": rows}


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
    con = store.con
    run = log.get_run(con, run_ref)
    if run is None:
        raise UndoError(f"no consolidation run matches {run_ref!r} (see `memvault consolidate --log`)")
    if run.status == "undone":
        raise UndoError(f"run {run.id} is already undone")
    report = UndoReport(run.id)
    for action in reversed(log.actions(con, run.id)):
        try:
            _undo_one(store, action)
        except MemoryOpError as exc:
            report.refused.append({"seq": action.seq, "kind": action.kind, "ids": action.ids, "why": str(exc)})
            continue
        report.undone.append({"seq": action.seq, "kind": action.kind, "ids": action.ids})
    if not report.refused:
        with write_transaction(con):
            log.set_run_status(con, run.id, "undone")
    return report


def _unchanged(store: "MemoryStore", undo_info: dict[str, Any], memory_id: str) -> None:
    """Refuse to undo when a person changed the note since the run."""
    path, expected = undo_info.get("path_after"), undo_info.get("hash_after")
    if path is None or expected is None:
        return
    now = (store.root / path).read_bytes() if (store.root / path).is_file() else None
    if now is None or content_hash(now) != expected:
        raise MemoryOpError(f"the note of {memory_id} ({path}) changed since the run; undo that part by hand")


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
        if rec.get_trace(con, memory_id) is not None:
            _unchanged(store, u, memory_id)
            store.memories.discard(memory_id)
        with write_transaction(con):
            log.drop_links(con, memory_id)
        return
    if action.kind == "task_done":
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
    _unchanged(store, u, survivor)
    for memory_id in sorted(u.get("members", {})):
        found = log.merged_into(con, memory_id)
        if found is None:
            continue  # taken back out already (`memvault restore`)
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
    ``consolidate --undo`` reverses it too)."""
    con = store.con
    day = datetime.now(timezone.utc).date().isoformat()
    run_id = log.new_run_id(day)
    with write_transaction(con):
        log.start_run(con, run_id, day, "merge")
    try:
        outcome = merge(store, ids, content, run_id=run_id)
    except BaseException:
        with write_transaction(con):
            log.finish_run(con, run_id, "failed", {})
        raise
    with write_transaction(con):
        if outcome.merged:
            log.log_action(con, run_id, "merge", [outcome.survivor, *outcome.merged], "merged by hand",
                           {"survivor": outcome.survivor, "members": outcome.merged, "content": content}, outcome.undo)
        log.finish_run(con, run_id, "done", {"merge": 1 if outcome.merged else 0})
    outcome.undo = {"run": run_id}
    return outcome
