"""The MCP tools with which an agent tidies its own memory: ``merge`` and ``consolidate``.

Both are the CLI's commands (``memvault merge``, ``memvault consolidate``)
over the same store methods, with the same guards: the vault's consolidation
lock (one run, merge or undo at a time, the daemon's schedule included) and
its recovery of what a dead run left. Everything they do is reversible: a
merge by ``restore`` of a merged memory or by undoing its run, a run by
``consolidate`` with ``undo``.

``consolidate`` shows before it changes anything. Called plainly it is a dry
run that returns the plan (what ``consolidate --dry-run --json`` prints) and
its id, a hash of its actions (:func:`~memvault.store.consolidation.plan.plan_id`).
``apply=<plan id>`` makes the plan again under the lock and carries it out
only when its id is the one given: an agent applies only what it was shown,
and a store that changed meanwhile gets "the plan changed since you saw it"
with the new id, nothing applied.

Registered by :func:`memvault.cli.mcp_server.build_server` unless the server
is read-only.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations

from memvault.cli.mcp_server import Backend, Reason, _as_list, _field, _ok, client_source
from memvault.store.memory_store import MemoryStore

# Both change memories (a merge and an archive move notes to .trash/), reversibly.
_TIDY = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)

Ids = Annotated[str | list[str], _field("the first keeps the merge", "ids", "id", "memory_ids", "memories", "refs")]
MergedText = Annotated[str | None, _field(None, "content", "text", "merged_content", "merged_text")]
Apply = Annotated[str | None, _field("a plan id to carry out", "apply", "plan", "plan_id", "apply_plan")]
Undo = Annotated[str | None, _field("a run id to reverse", "undo", "run", "run_id", "undo_run")]


def tidy_tools(server: MCPServer, backend: Backend) -> None:
    """Register ``merge`` and ``consolidate`` (write tools: not on a read-only server)."""

    @server.tool(annotations=_TIDY)
    def merge(ids: Ids, content: MergedText = None, reason: Reason = None,
              ctx: Context = None) -> CallToolResult:  # type: ignore[assignment]
        """Merge memories into the first id (undoable)."""
        refs = _as_list(ids)
        if len(refs) < 2:
            raise ToolError("give two or more memory ids to merge")
        who = client_source(ctx)
        why = f"{reason}, by {who}" if reason else f"by {who}"
        outcome = backend.run(lambda s: s.merge(refs, content, why))
        return merge_result(backend, outcome)

    @server.tool(annotations=_TIDY)
    def consolidate(apply: Apply = None, undo: Undo = None) -> CallToolResult:
        """Tidy memory: alone, the plan; apply carries it out."""
        if apply and undo:
            raise ToolError("give apply or undo, not both")
        if undo:
            return undo_result(backend.run(lambda s: s.undo_consolidation(undo.strip())))
        expect = apply.strip() if apply else None

        def run(s: MemoryStore) -> Any:
            s.read_con()  # a clear error before anything when the vault was never synced
            if expect is None:
                return s.consolidate(dry_run=True)
            return s.consolidate(trigger="mcp", expect_plan=expect)

        return run_result(backend.run(run))


def merge_result(backend: Backend, outcome: Any) -> CallToolResult:
    """A merge as the other write tools answer: id, path, uri, the survivor's version, the run."""
    from memvault.vault_io.uri import obsidian_uri

    run_id = outcome.undo.get("run")
    data = {**outcome.as_dict(), "run": run_id, "version": backend.versions([outcome.survivor])[outcome.survivor]}
    if outcome.path:
        data["uri"] = obsidian_uri(backend.store.name, outcome.path)
    lines = [f"merged {', '.join(outcome.merged) or 'nothing'} into {outcome.survivor}"
             + (f" -> {outcome.path}" if outcome.path else "") + f" (version {data['version']})",
             f"undo: restore one of {', '.join(outcome.merged)}, or consolidate undo={run_id}" if outcome.merged
             else "nothing was merged", *outcome.warnings]
    return _ok(data, "\n".join(lines))


def run_result(report: Any) -> CallToolResult:
    """A plan (dry run) or a run: the summary ``--json`` prints last, with the actions and what was not done."""
    from memvault.cli.consolidate_cmds import describe

    data = {**report.as_dict(), "actions": report.actions}
    if not report.dry_run:
        data["deferred_actions"] = report.deferred
        data["failed_actions"] = report.failed
    counts = ", ".join(f"{n} {k}" for k, n in report.counts().items() if n) or "nothing to do"
    head = "Plan" if report.dry_run else "Consolidated"
    lines = [f"{head} {report.plan} for {report.day}: {counts}", *("  " + describe(a) for a in report.actions)]
    lines += [f"not done: {describe(a)}: {a['error']}" for a in report.failed]
    lines += [f"deferred (a note is being edited): {describe(a)}" for a in report.deferred]
    if report.dry_run:
        lines.append(f"Nothing changed. Apply exactly this plan with consolidate apply={report.plan}"
                     if report.actions else "Nothing to apply.")
    else:
        lines.append(f"Run {report.run_id}. Undo with consolidate undo={report.run_id}")
    return _ok(data, "\n".join(lines))


def undo_result(report: Any) -> CallToolResult:
    """An undone run: how many actions were reversed, and which were not (a person changed their notes)."""
    data = report.as_dict()
    lines = [f"Undid {len(report.undone)} actions of {report.run_id}"]
    lines += [f"not undone: {r['kind']} {', '.join(r['ids'])}: {r['why']}" for r in report.refused]
    return _ok(data, "\n".join(lines))
