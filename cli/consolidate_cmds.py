"""Consolidation commands: merge, consolidate, conflicts."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

import click

from memvault.cli.main import AppContext, cli, echo, emit_json, json_option, pass_app, warn

if TYPE_CHECKING:
    from memvault.store.memory_store import MemoryStore

_VERBS = {
    "decay": "decay", "archive": "archive", "merge": "merge", "promote": "promote",
    "contradiction": "flag", "task_done": "task done", "retention": "retention",
}


_NOUNS = {
    "decay": ("memory decayed", "memories decayed"), "archive": ("archive", "archives"), "merge": ("merge", "merges"),
    "promote": ("promotion", "promotions"), "contradiction": ("contradiction flagged", "contradictions flagged"),
    "task_done": ("task closed", "tasks closed"),
    "retention": ("old session note trashed", "old session notes trashed"),
}
_PROPOSED_NOUNS = {"decay": ("memory to decay", "memories to decay"),
                   "contradiction": ("contradiction", "contradictions"),
                   "task_done": ("done task to close", "done tasks to close"),
                   "retention": ("old session note to trash", "old session notes to trash")}


def count_words(counts: dict[str, int], *, proposed: bool = False) -> str:
    """Counts per kind for a person: "2 merges, 1 contradiction flagged" (``proposed``: "2 merges, 1 contradiction")."""
    nouns = {**_NOUNS, **_PROPOSED_NOUNS} if proposed else _NOUNS
    return ", ".join(f"{n} {nouns.get(k, (k, k))[n != 1]}" for k, n in counts.items() if n)


def describe(action: dict[str, Any]) -> str:
    """One line for a person: what, which memories, why."""
    kind, ids, d = action["kind"], action["ids"], action["detail"]
    if kind == "decay":
        return f"decay     {action['reason']}"
    if kind == "merge":
        return f"merge     {ids[0]} <- {', '.join(ids[1:])}: {action['reason']}"
    if kind == "promote":
        return f"promote   {len(ids)} episodes ({', '.join(ids)}) -> \"{d['statement']}\""
    if kind == "contradiction":
        return f"flag      {d['newer']} contradicts older {d['older']}: {action['reason']}"
    if kind == "retention":
        return f"trash     {d['path']} ({ids[0]}): {action['reason']}; its facts stay"
    return f"{_VERBS[kind]:<9} {', '.join(ids)}: {action['reason']}"


@cli.command()
@click.argument("refs", metavar="ID ID...", nargs=-1, required=True)
@click.option("--content", help="The merged memory's content (default: the longest of them).")
@json_option
@pass_app
def merge(app: AppContext, refs: tuple[str, ...], content: str | None, as_json: bool) -> None:
    """Merge memories into the first ID: union of tags and links, highest
    strength, earliest created; the others go to .trash/ (`restore` takes one back)."""
    if len(refs) < 2:
        raise click.UsageError("give two or more memory ids to merge")
    outcome = app.store.merge(list(refs), content)
    if as_json:
        emit_json({**outcome.as_dict(), "run": outcome.undo.get("run")})
    else:
        echo(f"Merged {', '.join(outcome.merged) or 'nothing'} into {outcome.survivor} -> {outcome.path}")
        echo(f"Undo with: memvault consolidate --undo {outcome.undo.get('run')}")
    for w in outcome.warnings:
        warn(w)


@cli.command()
@click.option("--dry-run", is_flag=True, help="Show the plan and its reasons; change nothing (with the llm "
              "extractor, its answers about contradictions are kept).")
@click.option("--undo", "undo_run", metavar="RUN", help="Reverse a whole run (its id, or a unique prefix).")
@click.option("--log", "show_log", is_flag=True, help="List the latest runs.")
@click.option("--today", type=click.DateTime(formats=["%Y-%m-%d"]), hidden=True,
              help="Plan for another day (tests and what-if questions).")
@json_option
@pass_app
def consolidate(app: AppContext, dry_run: bool, undo_run: str | None, show_log: bool, today: Any,
                as_json: bool) -> None:
    """Decay, archive faded memories, merge duplicates, promote recurring
    episodes, flag contradictions and close done tasks: each action with its
    reason, logged, and undoable as a whole run."""
    store = app.store
    if sum(map(bool, (dry_run, undo_run, show_log))) > 1:
        raise click.UsageError("--dry-run, --undo and --log do not go together")
    if show_log:
        for run in store.consolidation_runs():
            if as_json:
                emit_json(run)
            else:
                done = ", ".join(f"{n} {k}" for k, n in sorted(run["counts"].items()) if n) or "nothing"
                proposed = f"; proposed: {count_words(run['proposed'], proposed=True)}" if run.get("proposed") else ""
                echo(f"{run['run']}  {run['started']}  {run['trigger']:<6} {run['status']:<7} {done}{proposed}")
        return
    if undo_run:
        undone = store.undo_consolidation(undo_run)
        if as_json:
            emit_json(undone.as_dict())
        else:
            echo(f"Undid {len(undone.undone)} actions of {undone.run_id}")
        for r in undone.refused:
            warn(f"not undone: {r['kind']} {', '.join(r['ids'])}: {r['why']}")
        if undone.refused:
            raise click.exceptions.Exit(1)
        return
    day: date | None = today.date() if today else None
    store.read_con()  # a clear error before anything when the vault was never synced
    report = store.consolidate(dry_run=dry_run, today=day)
    if as_json:
        for action in report.actions:
            emit_json(action)
        emit_json(report.as_dict())
        return
    counts = report.counts()
    summary = ", ".join(f"{n} {_VERBS[k]}" for k, n in counts.items() if n) or "nothing to do"
    echo(f"{'Plan' if dry_run else 'Consolidated'} for {report.day}: {summary}")
    for action in report.actions:
        echo("  " + describe(action))
    for action in report.deferred:
        warn(f"deferred (a note is being edited): {describe(action)}")
    for action in report.failed:
        warn(f"not done: {describe(action)}: {action['error']}")
    if report.stats.get("sessions_kept_edited"):
        n = report.stats["sessions_kept_edited"]
        echo(f"  kept {n} old session note{'s' if n != 1 else ''} with writing of yours in "
             f"(or not known to be memvault's own): retention never trashes those")
    llm = report.stats.get("llm")
    if llm:
        for r in llm["rejected"]:
            echo(f"  not flagged, {llm['model']} sees no contradiction: {', '.join(r['ids'])}"
                       + (f" ({r['why']})" if r["why"] else ""))
        if llm.get("error"):
            warn(llm["error"])
        if llm.get("unconfirmed"):
            warn(f"{llm['unconfirmed']} contradictions flagged by the rule alone ({llm['model']} is asked about "
                 "the first 50 of a run)")
    if dry_run:  # what an agent applies through MCP (`consolidate` with apply=<plan id>)
        echo(f"Plan id {report.plan}")
    if report.run_id:
        echo(f"Run {report.run_id}. Undo with: memvault consolidate --undo {report.run_id}")


@cli.command()
@click.option("--all", "show_all", is_flag=True, help="Also list dismissed and resolved ones.")
@click.option("--dismiss", type=int, metavar="N", help="Mark contradiction N as not one (never flagged again).")
@click.option("--resolve", type=int, metavar="N", help="Mark contradiction N as settled.")
@click.option("--copy", "copy_path", metavar="PATH",
              help="A conflict copy (a sync tool's, or memvault's own) to show or settle.")
@click.option("--take", type=click.Choice(["note", "copy"]),
              help="With --copy: keep this side; the other becomes an earlier version (nothing is dropped) "
                   "and the copy file goes to .trash/.")
@json_option
@pass_app
def conflicts(app: AppContext, show_all: bool, dismiss: int | None, resolve: int | None,
              copy_path: str | None, take: str | None, as_json: bool) -> None:
    """Contradicting memories and facts that consolidation flagged (the newer
    one is recalled, the older marked possibly outdated), and conflict copies
    of notes: sync tools' and memvault's, each with whose version it holds.
    `--copy PATH --take note|copy` settles a copy."""
    store = app.store
    if take is not None and copy_path is None:
        raise click.UsageError("--take needs --copy PATH")
    if copy_path is not None:
        _settle_copy(store, copy_path, take, as_json)
        return
    if dismiss is not None or resolve is not None:
        number, status = (dismiss, "dismissed") if dismiss is not None else (resolve, "resolved")
        store.set_contradiction(int(number), status)  # type: ignore[arg-type]
        if not as_json:
            echo(f"Contradiction {number} {status}")
        else:
            emit_json({"id": number, "status": status})
        return
    rows = store.contradictions(None if show_all else "open")
    for c in rows:
        if as_json:
            emit_json(c.to_json())
            continue
        state = "" if c.status == "open" else f" ({c.status})"
        echo(f"{c.id}. [{c.kind}]{state} {c.reason}")
        echo(f"    newer {c.newer.id}: {c.newer.content}")
        echo(f"    older {c.older.id}: {c.older.content}")
    if not rows and not as_json:
        echo("No contradictions flagged" + ("" if show_all else " (open)"))
    copies = store.conflicts()
    for copy in copies:
        if as_json:
            emit_json({"conflict_copy": copy.conflict_note, "note": copy.note, "memory": copy.id,
                       "kind": copy.kind, "side": copy.side, "detail": copy.detail})
            continue
    if copies and not as_json:
        echo(f"Conflict copies ({len(copies)}): settle one with "
                   "`memvault conflicts --copy PATH --take note|copy` (the other side is kept as a version)")
        for copy in copies:
            echo(f"  {copy.conflict_note}: {copy.side or copy.kind}; beside {copy.note}")
    clashes = store.key_clashes()
    for clash in clashes:
        if as_json:
            emit_json({**clash.to_json(), "detail": clash.detail})
    if clashes and not as_json:
        echo(f"Keys held by more than one memory ({len(clashes)}): keyed reads and writes use the holder")
        for clash in clashes:
            echo(f"  {clash.key} ({clash.scope}): {clash.holder}; also {', '.join(clash.others)}")


def _settle_copy(store: MemoryStore, copy_path: str, take: str | None, as_json: bool) -> None:
    """Show a conflict copy's two sides, or take one (--take)."""
    if take is None:
        info = store.conflict_copy(copy_path)
        if as_json:
            emit_json(info.to_json())
            return
        what = f"memory {info.memory}" if info.memory else "an ordinary note"
        echo(f"{info.copy}: a conflict copy of {info.note or '(a note no longer there)'} ({what})")
        echo(f"  note ({info.note_side}): {info.note_content}")
        echo(f"  copy ({info.copy_side}): {info.copy_content}")
        echo(f"Take a side: memvault conflicts --copy '{info.copy}' --take note   (or --take copy); "
                   "the other is kept as an earlier version")
        return
    done = store.settle_conflict_copy(copy_path, take)
    if as_json:
        emit_json(done.to_json())
        return
    kept = "the copy's text" if take == "copy" else "the note's text"
    echo(f"Took {kept} for {done.note}; the copy went to {done.copy_trashed}")
    if done.kept_as:
        echo(f"  the copy's text is kept as version {done.kept_as} (`memvault history {done.memory}`)")
    elif done.memory and take == "copy":
        echo(f"  the note's text is kept as an earlier version (`memvault history {done.memory}`)")
    if done.note_trashed:
        echo(f"  the note's own file went to {done.note_trashed}")
