"""The changing half of :class:`~memvault.store.memory_store.MemoryStore`.

Remember, update, forget and restore (memories and single facts),
consolidation and merge, conversation ingest, imports, export and backup,
memory sources and the embedding cache. Every one of them goes through the
store's collaborators (the memory mirror's state-first writer, the fact
sources); none assembles the pipeline itself.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from memvault.store.api_parts import StoreParts
from memvault.vault_io.errors import MemvaultError

if TYPE_CHECKING:
    from datetime import timedelta

    import apsw

    from memvault.store.answers.review import SettledCopy
    from memvault.store.answers.write import ScopeForgotten
    from memvault.store.consolidation.merge import MergeOutcome
    from memvault.store.consolidation.run import RunReport
    from memvault.store.consolidation.undo import UndoReport
    from memvault.store.embedding.cache import PruneReport
    from memvault.store.flows.backup import RestoreReport
    from memvault.store.flows.export import ExportOptions, ExportReport
    from memvault.store.flows.ingest import IngestReport
    from memvault.store.flows.sink import ImportReport
    from memvault.store.memories.mirror import WriteResult
    from memvault.store.pause import PauseRow
    from memvault.store.project import Project
    from memvault.store.retrieval.retriever import Retriever
    from memvault.vault_io.memory_views import ViewFile

Progress = Callable[[int, int], None]
P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound=StoreParts)


def logged(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A change on request: what it changed of the history is in this
    device's history log in the vault when the call returns (a long-lived
    caller, the daemon or the MCP server, makes changes no sync follows)."""
    @functools.wraps(method)
    def change(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        finally:
            con = self.__dict__.get("con")
            if con is not None:
                self._flush_history(con)

    return change


def _redacted(text: str | None) -> str | None:
    """``text`` (a reason, a merge's text) with its credentials redacted: it is
    kept in the history log in the vault and printed by ``history``."""
    if not text:
        return text
    from memvault.vault_io.secrets import redact

    return redact(text)[0]


class ChangeAPI(StoreParts):
    """Every change a :class:`MemoryStore` makes on request (a mixin)."""

    def cache_prune(self, index: apsw.Connection | None = None) -> "PruneReport":
        """Drop cached vectors no note uses (older than ``embedding.cache_keep_days``,
        or past ``embedding.cache_max_mb``); ``index``: another thread's own connection."""
        from memvault.store.embedding import cache, vectors

        con = vectors.open_cache(self.data_dir)
        assert con is not None
        try:
            e = self.settings.embedding
            return cache.prune(con, index or self.read_con(), keep_days=e.cache_keep_days,
                               max_bytes=e.cache_max_mb * 2**20)
        finally:
            con.close()

    def cache_vectors(self, texts: Sequence[str], retriever: "Retriever | None" = None) -> int:
        """Put the vectors of ``texts`` into the embedding cache with the model
        ``retriever`` has loaded (default: the store's own); how many were
        missing. A process whose model is warm (the daemon's ``embed`` op)
        does this for a write in another (``add``'s neighbours). Raises
        :class:`~.embedding.model.ModelUnavailable` (vectors turned off, or a
        model that cannot be loaded)."""
        from memvault.store.embedding.model import ModelUnavailable
        from memvault.store.embedding.vectors import cache_texts, open_cache

        r = self.retriever if retriever is None else retriever
        if r.spec is None:
            raise ModelUnavailable("vectors are turned off")
        embedder = r.embedder()
        cache = open_cache(self.data_dir)
        assert cache is not None  # created when missing
        try:
            return cache_texts(cache, r.spec.key, embedder, texts)
        finally:
            cache.close()

    def cache_export(self, target: Path) -> int:
        """Write a copy of the embedding cache to ``target``; how many vectors."""
        from memvault.store.embedding.cache import export_cache

        return export_cache(self.data_dir, target)

    def cache_import(self, source: Path) -> int:
        """Add the vectors of a cache file (another device's export); how many were new."""
        from memvault.store.embedding.cache import import_cache

        return import_cache(self.data_dir, source)

    @logged
    def add(
        self, content: str, type_: str | None = "semantic", *, tags: Sequence[str] = (), scope: str = "user",
        links: Sequence[str] = (), source: str = "manual", allow_duplicate: bool = False,
        extra: dict[str, object] | None = None, key: str | None = None, reason: str | None = None,
    ) -> "WriteResult":
        """Remember ``content`` as a memory of ``type_`` (:meth:`.memories.mirror.Memories.add`
        says what each option does; None: semantic); a duplicate of a live memory returns that one.
        ``key``: the slot it fills; a live memory holding it is superseded when
        ``reason`` says why, else the write is refused (:mod:`.memories.keys`;
        there None for ``type_`` keeps the holder's type)."""
        if key is not None:
            from memvault.store.memories.keys import keyed_add

            result = keyed_add(self.memories, content, type_, key=key, reason=reason, tags=tags, scope=scope,
                               links=links, source=source, allow_duplicate=allow_duplicate, extra=extra)
        else:
            result = self.memories.add(content, type_ or "semantic", tags=tuple(tags), scope=scope,
                                       links=tuple(links), source=source, allow_duplicate=allow_duplicate, extra=extra)
        if result.action in ("added", "updated"):
            result.warnings += self.embed_written([result.id])
        return result

    @logged
    def update(
        self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None, type_: str | None = None,
        reason: str | None = None, expect_version: int | None = None, done: bool = False,
    ) -> "WriteResult":
        """Change a memory (its content, tags or type); the old version is kept.
        ``expect_version`` refuses a change based on a version that is no
        longer current (:class:`~.memories.guard.VersionConflict`). ``done``:
        ongoing work is finished, and becomes what happened (``episodic``)."""
        if done:
            type_, reason = self._closing(ref, type_, reason)
        result = self.memories.update(ref, content=content, tags=None if tags is None else list(tags), type_=type_,
                                      reason=_redacted(reason), expect_version=expect_version)
        if result.action == "updated":
            result.warnings += self.embed_written([result.id])
        return result

    def _closing(self, ref: str, type_: str | None, reason: str | None) -> tuple[str, str]:
        """The type and reason of an ``update --done`` of ``ref``: only
        ongoing work is closed that way (:class:`UsageError` otherwise)."""
        from memvault.store.memories.memtypes import CLOSED_AS, ONGOING
        from memvault.vault_io.errors import UsageError

        if type_ is not None:
            raise UsageError("give done or a new type, not both (done makes ongoing work episodic)")
        from memvault.store.index.lookup import find_trace

        found = find_trace(self.read_con(), ref)  # None: the update says the memory is not there
        if found is not None and (found.kind != "memory" or found.type != ONGOING):
            what = found.type if found.kind == "memory" else "not a memory"
            raise UsageError(f"{found.id} is {what}, not ongoing work: only ongoing work is closed with done")
        return CLOSED_AS, reason if reason and reason.startswith("done") else f"done: {reason}" if reason else "done"

    @logged
    def forget(self, ref: str, reason: str | None = None) -> "WriteResult":
        """Soft-delete a memory (its note moves to ``.trash/``), or retire one
        fact (its source note untouched; it stays retired until restored)."""
        reason = _redacted(reason)  # kept in the history log the vault syncs, and printed by `history`
        fact = self._fact(ref)
        if fact is not None:
            from memvault.store.facts.forgets import forget_fact

            return forget_fact(self.con, fact, reason)
        return self.memories.forget(ref, reason)

    @logged
    def pause(self, scope: str = "*", *, span: "timedelta | None" = None, reason: str | None = None) -> "PauseRow":
        """Pause memory (``scope``: ``*`` for all, else a project's scope) for
        ``span`` (None: until resumed): see :mod:`.pause`. Shared with every
        device through the history log."""
        from memvault.store.db.connection import write_transaction
        from memvault.store.pause import pause

        with write_transaction(self.con):
            return pause(self.con, self.device_id(), scope, span, reason)

    @logged
    def resume(self, scope: str | None = None) -> "list[PauseRow]":
        """End the pauses holding now (``scope``: that one's only); the ones ended."""
        from memvault.store.db.connection import write_transaction
        from memvault.store.pause import resume

        with write_transaction(self.con):
            return resume(self.con, scope)

    def pauses(self, scope: str | None = None) -> "list[PauseRow]":
        """The pauses holding now (``scope``: those covering that project)."""
        from memvault.store.pause import active

        return active(self.read_con(), scope)

    def check_capture(self, project: "Project | None", what: str = "nothing was stored") -> None:
        """Raise :class:`~memvault.store.pause.MemoryPaused` when a session of
        ``project`` (None: of no known project) must store nothing now."""
        from memvault.store.pause import check_capture

        check_capture(self.read_con(), project, what)

    def live_in_scope(self, scope: str) -> list[str]:
        """Ids of the live memories of ``scope``, oldest first."""
        return [r[0] for r in self.read_con().execute(
            "SELECT id FROM traces WHERE kind = 'memory' AND status = 'active' AND coalesce(scope, 'user') = ? "
            "ORDER BY created, id", (scope,))]

    @logged
    def forget_scope(self, scope: str, *, reason: str | None = None, backup: Path | None = None) -> "ScopeForgotten":
        """Forget every live memory of ``scope`` (each note to ``.trash/``,
        each restorable), after writing a backup of the durable state to
        ``backup`` (a file or folder; default: ``backups/`` in memvault's data
        dir): ``memvault forget --all --scope S``."""
        from memvault.store.answers.write import ScopeForgotten
        from memvault.store.flows.backup import backup as write_backup
        from memvault.store.memories.mirror import MemoryOpError

        scope = scope.strip()
        if not scope:
            raise MemvaultError("give the scope whose memories to forget")
        ids = self.live_in_scope(scope)
        done = ScopeForgotten(scope, str(write_backup(self.ctx, backup or self.data_dir / "backups")))
        why = reason or f"forgot all of scope {scope}"
        for memory_id in ids:
            try:
                self.memories.forget(memory_id, why)
            except MemoryOpError as exc:  # changed meanwhile, a note that cannot move: the rest go on
                done.failed.append((memory_id, str(exc)))
            else:
                done.forgotten.append(memory_id)
        return done

    @logged
    def restore(self, ref: str) -> "WriteResult":
        """Bring back a forgotten memory and its note, or a forgotten fact; a
        merged memory is taken back out of the memory it was merged into; a
        session note retention moved to the trash goes back where it was."""
        fact = self._fact(ref)
        if fact is not None:
            from memvault.store.facts.forgets import restore_fact

            return restore_fact(self.ctx, self.fact_observer, fact)
        from memvault.store.consolidation.retention import find, restore_session

        if find(self.con, ref) is not None:  # a session note retention moved to the trash
            return restore_session(self.ctx, self.memories, ref)
        from memvault.store.consolidation.rows import merged_into
        from memvault.store.index.lookup import find_trace

        found = find_trace(self.con, ref)
        if found is not None and found.status == "superseded" and merged_into(self.con, found.id):
            from memvault.store.consolidation.merge import unmerge

            result = unmerge(self.ctx, self.memories, found.id)
        else:
            result = self.memories.restore(ref)
        result.warnings += self.embed_written([result.id])
        return result

    def _fact(self, ref: str) -> Any:
        """The fact ``ref`` names, if it names one."""
        from memvault.store.index.lookup import find_trace

        trace = find_trace(self.con, ref)
        return trace if trace is not None and trace.kind == "fact" else None

    @logged
    def consolidate(self, *, dry_run: bool = False, today: Any = None, trigger: str = "cli",
                    avoid: Callable[[str], bool] | None = None, cancel: Any = None,
                    expect_plan: str | None = None, kinds: Collection[str] | None = None) -> "RunReport":
        """Plan and (unless ``dry_run``) carry out a consolidation run (see
        :mod:`memvault.store.consolidation.run`); ``avoid(path)``: a note a
        person is editing, whose actions wait for a later run; ``cancel``: a
        ``threading.Event`` that abandons the llm's confirmation (and the run);
        ``expect_plan``: carry the plan out only if its id is this one (else
        :class:`~memvault.store.consolidation.run.PlanChanged`, nothing done);
        ``kinds``: carry out only actions of these kinds, proposing the rest
        (the daemon's runs: ``consolidate.auto``)."""
        from memvault.store.consolidation.run import consolidate

        return consolidate(self.ctx, self.memories, dry_run=dry_run, today=today, trigger=trigger, avoid=avoid,
                           cancel=cancel, expect_plan=expect_plan, kinds=kinds)

    @logged
    def undo_consolidation(self, run: str) -> "UndoReport":
        """Reverse a whole consolidation run (or ``memvault merge``)."""
        from memvault.store.consolidation.undo import undo

        return undo(self.ctx, self.memories, run)

    def consolidation_runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest consolidation runs, newest first."""
        from memvault.store.consolidation.run import runs

        return runs(self.con, limit)

    @logged
    def merge(self, ids: Sequence[str], content: str | None = None, why: str | None = None) -> "MergeOutcome":
        """Merge memories into the first of ``ids`` (see :mod:`memvault.store.consolidation.merge`);
        ``why`` (who merged, and why) is kept in the log and the survivor's history."""
        from memvault.store.consolidation.run import merge_now

        # The merge's text and why go into the consolidation log and the history log as given.
        return merge_now(self.ctx, self.memories, ids, _redacted(content), _redacted(why))

    @logged
    def set_contradiction(self, number: int, status: str) -> None:
        """Resolve or dismiss a flagged contradiction (a dismissed pair is never flagged again)."""
        from memvault.store.consolidation import rows as clog
        from memvault.store.consolidation.links import apply_durable
        from memvault.store.db.connection import write_transaction

        con = self.read_con()
        if not any(c.id == number for c in clog.contradictions(con, None)):
            raise MemvaultError(f"no contradiction number {number} (see `memvault conflicts --all`)")
        with write_transaction(con):
            clog.set_contradiction_status(con, number, status)
        apply_durable(con)

    @logged
    def ingest(
        self,
        source: "str | os.PathLike[str] | IO[str] | IO[bytes]",
        *,
        session: str | None = None,
        title: str | None = None,
        client: str | None = None,
        cwd: str | None = None,
        llm_digest: bool = True,
    ) -> "IngestReport":
        """Write a conversation transcript (Claude Code or generic JSONL, a
        path or a stream) as its session note, appending only new turns, and
        index it (see :mod:`.flows.ingest`). ``cwd``: the session's working
        folder, whose project's pause or ``memory: off`` applies (:mod:`.pause`).
        ``llm_digest`` False: the digest block by the rules even with
        ``extractor = "llm"``, for a per-turn ingest."""
        from memvault.store.flows.ingest import ingest
        from memvault.store.project import project_at

        path_or_stream = Path(source) if isinstance(source, os.PathLike) else source
        report = ingest(self.ctx, path_or_stream, sync=self.sync, sync_paths=self.sync_paths, session=session,
                        title=title, client=client, project=project_at(cwd), llm_digest=llm_digest)
        if report.action != "skipped" and report.path:
            report.warnings += self.embed_written(paths=[report.path])
        return report

    @logged
    def import_(
        self, fmt: str | None, path: "str | os.PathLike[str]", *, dry_run: bool = False, folder: str = "Imports",
        progress: Progress | None = None,
    ) -> "ImportReport":
        """Import a file of another tool (``chatgpt``, ``claude``, ``mem0``,
        ``mcp-memory``, ``csv``, ``markdown``) or memvault's own export
        (``json``/``jsonl``); see :mod:`.flows.sink`. ``progress(done, total)``.
        ``fmt`` None: the one format that takes the file (:mod:`.flows.importers.detect`;
        refused in one line when none or several do)."""
        from memvault.store.flows.sink import run_import

        if fmt is None:
            from memvault.store.flows.importers.detect import detect

            fmt = detect(Path(path).expanduser())
        return run_import(self.ctx, fmt, Path(path).expanduser(), memories=lambda: self.memories, sync=self.sync,
                          sync_paths=self.sync_paths, fact_keep=self.fact_keep, dry_run=dry_run, folder=folder,
                          progress=progress)

    def export(self, options: "ExportOptions") -> "ExportReport":
        """Write an export (see :mod:`.flows.export`); ``sqlite`` is a backup."""
        from memvault.store.flows.export import export

        return export(self.ctx, options)

    def restore_backup(self, file: "str | os.PathLike[str]") -> "RestoreReport":
        """Put a backup's durable state (and vectors) in place and rebuild the
        index (see :mod:`.flows.backup`). Refused while a daemon serves the vault."""
        from memvault.store.flows.backup import restore
        from memvault.store.serving import refuse_while_served

        refuse_while_served(self.data_dir, "restoring a backup")
        return restore(self.ctx, Path(file).expanduser(), close=self.close, rebuild=self.rebuild)

    def views_install(self, *, force: bool = False) -> "list[ViewFile]":
        """Write memvault's Obsidian Bases views into the memory folder; a
        file someone changed is kept unless ``force`` (which backs it up
        first). Files only: works without an index (see :mod:`memvault.vault_io.memory_views`)."""
        from memvault.vault_io.memory_views import install_views

        return install_views(self.ctx.gate, self.settings.memory_folder, force=force)

    def views_remove(self) -> "list[ViewFile]":
        """Delete the views memvault wrote and nobody changed since."""
        from memvault.vault_io.memory_views import remove_views

        return remove_views(self.ctx.gate, self.settings.memory_folder)

    def settle_conflict_copy(self, copy_path: str, take: str) -> SettledCopy:
        """Take one side of a conflict copy (``take``: "note" or "copy") and
        keep the other (see :mod:`.memories.copies`); what was done."""
        from memvault.store.memories.copies import settle_copy

        return settle_copy(self.ctx, self.memories, self.reconciler, copy_path, take)

    def source_add(self, paths: Sequence[str]) -> tuple[list[Any], list[str]]:
        """Mark notes as memory sources and extract their facts: (results, warnings)."""
        results, warnings = self.sources.add(list(paths))
        warnings += self.embed_written(paths=[r.path for r in results if r.facts])
        return results, warnings

    def source_remove(self, paths: Sequence[str]) -> tuple[list[Any], list[str]]:
        """Unmark notes; their facts are retired: (results, warnings)."""
        return self.sources.remove(list(paths))
