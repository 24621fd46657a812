"""Carrying out a consolidation plan, logging every action with its reason.

:func:`consolidate` reads the store (:func:`.records.load_records`, vectors
from the embedding cache), makes the plan (:mod:`.plan`) and, unless it is a
dry run, carries it out action by action through the memory mirror, the one
writer of memory notes (outbox, atomic write, conflict check). Each action is
logged in ``state.consolidation_actions`` with its reason, the plan's detail
(so a dry run's plan and the run's log can be compared) and what undoing it
needs: earlier traces, the note's bytes and path, the hash the run left.

Undoing a run is :mod:`.undo`; the lock that keeps to one run at a time and
the settling of what a dead run left (pending actions, a run still marked
``running``) are :mod:`.journal`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, Any

from memvault.store.consolidation import links, retention
from memvault.store.consolidation import rows as log
from memvault.store.consolidation.journal import (
    SOURCE,
    RunWriteError,
    action_counts,
    after_state,
    decayed_on,
    done_reason,
    exclusive,
    link_promoted,
    recover,
    settle_run,
)
from memvault.store.consolidation.merge import MergeOutcome, merge
from memvault.store.consolidation.plan import Action, Context, Plan, Policy, count_actions, make_plan
from memvault.store.consolidation.records import load_records, load_vectors
from memvault.store.consolidation.rules import Thresholds
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.index.classify import memory_key
from memvault.store.memories import rows as mem
from memvault.store.memories.mirror import MemoryOpError, MemoryWriteError, memory_id_for
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.secrets import redact

if TYPE_CHECKING:
    import threading

    import apsw

    from memvault.store.context import StoreContext
    from memvault.store.memories.mirror import Memories
    from memvault.store.settings import Settings

#: Actions that write notes (and so wait while a person edits one of them).
WRITES_NOTES = ("archive", "merge", "promote", "task_done", retention.KIND)


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
    plan: str | None = None  # the id of the plan shown or carried out (:func:`.plan.plan_id`)
    #: Planned actions of kinds the run was not to carry out (the daemon's
    #: runs do only ``consolidate.auto``): left for a person to review.
    proposed: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Done (or planned) actions per kind; decay counts memories."""
        return count_actions((a["kind"], a["detail"]) for a in self.actions)

    def proposed_counts(self) -> dict[str, int]:
        """Proposed actions per kind (see :attr:`proposed`)."""
        return count_actions((a["kind"], a["detail"]) for a in self.proposed)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary (without the actions, printed one per line)."""
        return {"run": self.run_id, "plan": self.plan, "day": self.day, "dry_run": self.dry_run,
                "counts": self.counts(), "proposed": self.proposed_counts(),
                "deferred": len(self.deferred), "failed": len(self.failed), "stats": self.stats}


class PlanChanged(MemvaultError):
    """The plan is no longer the one whose id was given: nothing was applied."""

    def __init__(self, expected: str, current: str) -> None:
        super().__init__(f"the plan changed since you saw it ({expected}): the plan now is {current}; "
                         f"look at it (a dry run) and apply that id, or leave it")
        self.expected, self.current = expected, current


def policy_for(settings: "Settings") -> Policy:
    """The plan's knobs from the store's settings."""
    c, r = settings.consolidate, settings.recall
    return Policy(
        half_lives=dict(r.half_life), evergreen_tags=frozenset(r.evergreen_tags),
        archive_strength=c.archive_strength, archive_days=c.archive_days, protect_days=c.protect_days,
        thresholds=Thresholds(duplicate=c.duplicate_similarity, merge=c.merge_similarity),
    )


def plan_for(ctx: "StoreContext", today: date | None = None, cancel: "threading.Event | None" = None) -> Plan:
    """The plan for the store as it is now; with ``extractor = "llm"`` its
    contradictions confirmed by the model (:mod:`.confirm`; ``cancel`` set
    abandons a question in flight with :class:`~..facts.llm_extract.LLMCancelled`)."""
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import resolve_model

    con = ctx.con
    records = load_records(con)
    spec = resolve_model(ctx.settings.embedding.model)
    vectors = {}
    if spec is not None:
        cache = vec.open_cache(ctx.data_dir, create=False)
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
    day = today or datetime.now(timezone.utc).date()
    plan = make_plan(records, vectors, policy_for(ctx.settings), day, context)
    retire, kept = retention.plan(ctx, day)  # session notes past sessions.retention_days, last
    plan.actions += retire
    plan.stats.update(kept)
    if ctx.settings.extractor == "llm":
        from memvault.store.consolidation.confirm import confirm_plan

        confirm_plan(ctx, plan, {r.id: r for r in records}, cancel=cancel)
    return plan


def touched_paths(con: "apsw.Connection", action: Action) -> list[str]:
    """The notes an action would write or move."""
    if action.kind not in WRITES_NOTES:
        return []
    if action.kind == retention.KIND:
        return [action.detail["path"]]
    ids = [] if action.kind == "promote" else action.ids
    return [p for i in ids if (p := mem.trace_path(con, i))]


def consolidate(ctx: "StoreContext", memories: "Memories", *, dry_run: bool = False, today: date | None = None,
                trigger: str = "cli", avoid: Callable[[str], bool] | None = None, cancel: "threading.Event | None" = None,
                expect_plan: str | None = None, kinds: Collection[str] | None = None) -> RunReport:
    """Plan and (unless ``dry_run``) carry out one consolidation run, its
    notes written through ``memories`` (the memory mirror).

    ``avoid(path)`` says a note is being edited by a person right now (the
    daemon's view): an action that would write it is deferred to a later run.
    A note that cannot be written (a full disk, a read-only vault) ends the
    run there with one line (:class:`~.mirror.MemoryWriteError`): what was
    done is logged, and the next ``sync`` writes the note. ``cancel`` (the
    daemon's stop) abandons the llm's confirmation of contradictions, and
    with it the run, before anything is written.

    ``expect_plan``: the id of the plan the caller saw (a dry run's
    ``plan``). The plan made under the lock is carried out only when its id
    is that one; otherwise :class:`PlanChanged` and nothing is done (an agent
    applies only what it was shown).

    ``kinds``: carry out only actions of these kinds (the daemon's runs:
    ``consolidate.auto``); the rest of the plan is reported and logged as
    proposed (:attr:`RunReport.proposed`), for ``memvault consolidate``.
    """
    if dry_run:
        plan = plan_for(ctx, today, cancel)
        report = RunReport(None, plan.day, dry_run, stats=dict(plan.stats), plan=plan.id)
        report.actions = plan.as_dicts()
        return report
    if ctx.settings.extractor == "llm":
        # The model's answers first, outside the lock (kept in state): a slow
        # endpoint must not keep `merge` or `--undo` waiting on the lock. The
        # plan made under the lock then asks nothing it has not asked here.
        plan_for(ctx, today, cancel)
    with exclusive(ctx):
        recover(ctx, memories)
        plan = plan_for(ctx, today, cancel)
        if expect_plan is not None and plan.id != expect_plan.strip():
            raise PlanChanged(expect_plan.strip(), plan.id)
        return _carry_out(ctx, memories, plan, trigger, avoid, kinds)


def _carry_out(ctx: "StoreContext", memories: "Memories", plan: Plan, trigger: str,
               avoid: Callable[[str], bool] | None, kinds: Collection[str] | None = None) -> RunReport:
    report = RunReport(None, plan.day, False, stats=dict(plan.stats), plan=plan.id)
    con = ctx.con
    run_id = log.new_run_id(plan.day)
    with write_transaction(con):
        log.start_run(con, run_id, plan.day, trigger)
    report.run_id = run_id
    try:
        for action in plan.actions:
            if kinds is not None and action.kind not in kinds:
                report.proposed.append(action.as_dict())
                continue
            # Asked right before each action: a person may start editing mid-run.
            if avoid is not None and any(avoid(p) for p in touched_paths(con, action)):
                report.deferred.append(action.as_dict())
                continue
            try:
                _do(ctx, memories, action, run_id, plan.day)
            except MemoryOpError as exc:
                # What the action got done before it stopped is logged (or,
                # when it changed nothing, its row is dropped).
                done = settle_run(ctx, memories, run_id)
                if done:
                    report.actions.append(action.as_dict())
                if isinstance(exc, MemoryWriteError):
                    raise  # a full disk or a read-only vault fails every write after this one
                if not done:  # one memory that cannot be changed now: the rest go on
                    report.failed.append({**action.as_dict(), "error": str(exc)})
                continue
            except OSError as exc:  # a note read or removed outside the mirror's writer
                settle_run(ctx, memories, run_id)
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
    summary: dict[str, Any] = report.counts()
    if report.proposed:  # what a person is to review: `status` and `consolidate --log` say it
        summary["proposed"] = report.proposed_counts()
    with write_transaction(con):
        log.finish_run(con, run_id, "done", summary)
    return report


def _do(ctx: "StoreContext", memories: "Memories", action: Action, run_id: str, day: str) -> None:
    """Carry out one action and log it with what undoing it needs. An action
    that writes notes is logged ``pending`` first and confirmed after, so its
    row survives a writer that dies halfway (see :func:`recover`)."""
    con = ctx.con
    if action.kind == "decay":
        _decay(con, action, run_id)  # one transaction, its log row in it
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
        memories.forget(action.ids[0], "faded")
        _confirm(con, run_id, seq, {"trace": rec.trace_json(before) if before else None})
        return
    if action.kind == "merge":
        recall = con.execute("SELECT retrieval_count, last_access, strength, decayed_at FROM state.recall "
                             "WHERE trace_id = ?", (action.ids[0],)).fetchone()
        seq = _begin(con, run_id, action, {})
        outcome = merge(ctx, memories, action.ids, None, run_id=run_id, detail=action.detail, seq=seq,
                        undo_extra={"recall": list(recall) if recall else None})
        decayed_on(con, action.ids[0], day)  # its strength is this run's: no more decay today
        _confirm(con, run_id, seq, outcome.undo)
        return
    if action.kind == "promote":
        d = action.detail
        # The id the new memory will get, logged before it exists, so a
        # recovery can tell whether it was made.
        expected = memory_id_for(con, memory_key("semantic", d["scope"] or "user", redact(d["statement"].strip())[0]))
        seq = _begin(con, run_id, action, {"id": expected})
        result = memories.add(d["statement"], "semantic", tags=d["tags"], scope=d["scope"], source=SOURCE,
                              allow_duplicate=True, extra={"derived_from": list(d["members"])})
        _confirm(con, run_id, seq, link_promoted(ctx, action, run_id, day, result.id))
        return
    if action.kind == "task_done":
        memory_id = action.ids[0]
        before = rec.get_trace(con, memory_id)
        path = mem.trace_path(con, memory_id)
        text = (ctx.root / path).read_bytes().decode("utf-8", "surrogateescape") if path else None
        undo = {"trace": rec.trace_json(before) if before else None, "path": path, "text": text}
        seq = _begin(con, run_id, action, undo)
        memories.update(memory_id, type_="episodic", reason=done_reason(action.detail))
        after = rec.get_trace(con, memory_id)
        _confirm(con, run_id, seq, {**undo, "version": after.metadata.get("supersedes") if after else None,
                                    **after_state(ctx, memory_id)})
        return
    if action.kind == retention.KIND:
        retention.carry_out(ctx, action, lambda undo: _begin(con, run_id, action, undo),
                            lambda seq, undo: _confirm(con, run_id, seq, undo), memories.indexer.sync_paths)
        return
    raise ValueError(f"unknown action {action.kind!r}")


def _begin(con: "apsw.Connection", run_id: str, action: Action, undo: dict[str, Any]) -> int:
    """Log an action before it starts (``pending``); returns its row's seq."""
    with write_transaction(con):
        return log.log_action(con, run_id, action.kind, action.ids, action.reason, action.detail,
                              {**undo, "pending": True})


def _confirm(con: "apsw.Connection", run_id: str, seq: int, undo: dict[str, Any], **changes: Any) -> None:
    """An action is done: its row gets the whole of what undoing it needs."""
    with write_transaction(con):
        log.update_action(con, run_id, seq, {k: v for k, v in undo.items() if k != "pending"}, **changes)


def _decay(con: "apsw.Connection", action: Action, run_id: str) -> None:
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


# -- undo ----------------------------------------------------------------------


def runs(con: "apsw.Connection", limit: int = 20) -> list[dict[str, Any]]:
    """The latest runs, newest first, as dicts."""
    return [{"run": r.id, "started": r.started, "finished": r.finished, "day": r.day, "trigger": r.trigger,
             "status": r.status, "counts": {k: v for k, v in r.summary.items() if k != "proposed"},
             "proposed": dict(r.summary.get("proposed") or {})} for r in log.runs(con, limit)]


def merge_now(ctx: "StoreContext", memories: "Memories", ids: Sequence[str], content: str | None,
              why: str | None = None) -> MergeOutcome:
    """``memvault merge``: one merge, logged as a run of its own (so
    ``consolidate --undo`` reverses it too), ahead of the merge like a run's
    actions (see :func:`recover`); ``why`` (who merged, and why) goes into
    the log and the survivor's history; ``memories``: the memory mirror."""
    with exclusive(ctx):
        recover(ctx, memories)
        return _merge_run(ctx, memories, ids, content, why)


def _merge_run(ctx: "StoreContext", memories: "Memories", ids: Sequence[str], content: str | None,
               why: str | None) -> MergeOutcome:
    con = ctx.con
    day = datetime.now(timezone.utc).date().isoformat()
    run_id = log.new_run_id(day)
    reason = "merged by hand" + (f" ({why})" if why else "")
    with write_transaction(con):
        log.start_run(con, run_id, day, "merge")
        seq = log.log_action(con, run_id, "merge", list(ids), reason, {"content": content}, {"pending": True})
    try:
        outcome = merge(ctx, memories, ids, content, run_id=run_id, seq=seq, why=why)
    except BaseException:
        try:
            settle_run(ctx, memories, run_id)  # a merge cut short by a failed write is logged as far as it got
            with write_transaction(con):
                log.finish_run(con, run_id, "failed", action_counts(log.actions(con, run_id)))
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
