"""The syncing part of :class:`~memvault.store.memory_store.MemoryStore`:
the vault's history logs, a full sync and a sync of given paths.

The post-sync sequence lives here once (:meth:`SyncAPI._after_sync`): after a
reconcile (whose observers extract facts) the outbox of store-side writes
that a dead writer left behind is finished, ``last_sync`` is recorded, and
whoever listens (the daemon's embedding service) is told.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.store.api_parts import StoreParts

if TYPE_CHECKING:
    import apsw

    from memvault.store.embedding.pipeline import EmbedReport
    from memvault.store.history.replicate import Change, HistorySync
    from memvault.store.index.rebuild import Restored
    from memvault.store.index.reconcile import SyncSummary
    from memvault.vault_io.scan import IgnoreRules

log = logging.getLogger(__name__)

#: Store-side writes older than this (seconds) are taken for a dead writer's
#: and finished by the next sync; younger ones may still be in progress.
STALE_WRITE_S = 30.0

Progress = Callable[[int, int], None]
SyncListener = Callable[[str, "SyncSummary"], None]


@dataclass
class SyncReport:
    """What one sync did: the reconcile's summary, the store-side writes it
    finished or could not finish, and the embedding run (when asked for)."""

    summary: "SyncSummary"
    restored: "Restored | None" = None  # what a fresh index got back from the durable state
    finished: list[str] = field(default_factory=list)  # ids whose interrupted write was finished
    unwritten: list[str] = field(default_factory=list)  # one line per note that still cannot be written
    #: Note writes still pending after it (:func:`~.memories.rows.pending_writes`).
    pending: list[dict[str, Any]] = field(default_factory=list)
    embedding: "EmbedReport | None" = None

    def __getattr__(self, name: str) -> Any:
        # A report reads like its reconcile summary: report.added, report.warnings.
        if name == "summary":
            raise AttributeError(name)
        return getattr(self.summary, name)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the summary's keys, plus ``unwritten`` and ``embedding``)."""
        data = self.summary.as_dict()
        data["unwritten"] = list(self.unwritten)
        data["pending"] = list(self.pending)
        if self.restored is not None:
            data["restored"] = self.restored.as_dict()
        if self.embedding is not None:
            data["embedding"] = self.embedding.as_dict()
        return data


class SyncAPI(StoreParts):
    """History, sync and the post-sync sequence of a :class:`MemoryStore` (a mixin)."""

    def sync_history(self) -> "HistorySync":
        """Read every device's history log into the durable state and append
        this device's changes to its own (:mod:`.history.replicate`); an
        index that had the state applied follows the rows the logs set."""
        from memvault.store.db.records import state_applied
        from memvault.store.history.replicate import sync_history
        from memvault.store.index.rebuild import follow_history

        con = self.con
        applied = state_applied(con)

        def follow(changes: "list[Change]") -> None:
            if applied:
                follow_history(con, changes)

        done = sync_history(con, self.history_folder, on_change=follow, gate=self.ctx.gate)
        if applied:
            from memvault.store.facts.forgets import extract_again

            for table, key, row in done.changed:
                if table == "fact_forgets" and row is None:  # restored on another device
                    extract_again(self.ctx, self.fact_observer, str(key[0]))
        return done

    def device_id(self) -> str:
        """This data dir's device id: the name of its history log in the vault."""
        from memvault.store.history.replicate import device_id

        return device_id(self.con)

    def _flush_history(self, con: apsw.Connection) -> None:
        """Append this device's queued changes to its history log (a command's
        end, a sync's); a vault that refuses keeps them queued, never raises."""
        from memvault.store.history import has_queued

        try:
            if not has_queued(con):
                return  # most commands change nothing: the replication module stays unloaded
            from memvault.store.history.replicate import flush_only

            flush_only(con, self.history_folder, gate=self.ctx.gate)
        except Exception as exc:  # noqa: BLE001 - a command's end must not fail for its log
            log.warning("the history log was not written (%s); the next sync writes it", exc)

    # -- syncing --------------------------------------------------------------------

    def sync(
        self,
        progress: Progress | None = None,
        *,
        embed: bool = False,
        embed_progress: Progress | None = None,
        stale_after: float = STALE_WRITE_S,
    ) -> SyncReport:
        """Bring the index in line with the whole vault, then (``embed``)
        embed what changed. ``progress(done, total)`` is called per note read."""
        self._syncing = True  # the connection it opens is not to sync first
        try:
            self.sync_history()  # before the reconcile: what other devices knew of these notes
            self.refresh_source_globs()
            dialect = self._glob_dialect_check()
            report = self._after_sync("sync", self.reconciler.sync(progress=progress), stale_after)
        finally:
            self._syncing = False
        if dialect is not None:
            report.summary.warnings += dialect(report)
        if embed:
            report.embedding = self.embed(embed_progress)
        return report

    def _glob_dialect_check(self) -> "Callable[[SyncReport], list[str]] | None":
        """Once per set of ``ignore``/``sources`` patterns on an existing
        index: a check, run after the sync, of patterns that match the paths
        seen before or after it differently than memvault 0.1's dialects did."""
        import json

        from memvault.store.db import records as rec
        from memvault.store.db.connection import write_transaction
        from memvault.store.index import lookup
        from memvault.vault_io.globs import old_dialect_differences

        patterns = json.dumps([self.settings.ignore, self.settings.sources])
        if not (self.settings.ignore or self.settings.sources) or rec.get_meta(self.con, "globs_checked") == patterns:
            return None
        before = lookup.paths_under(self.con, "")

        def check(report: SyncReport) -> list[str]:
            with write_transaction(self.con):
                rec.set_meta(self.con, "globs_checked", patterns)
            if not before:
                return []  # a first index: nothing was ever matched the old way
            seen = before | lookup.paths_under(self.con, "")
            return (old_dialect_differences("ignore", self.settings.ignore, seen)
                    + old_dialect_differences("sources", self.settings.sources, seen))

        return check

    def sync_paths(self, paths: Iterable[str], *, stale_after: float = STALE_WRITE_S) -> SyncReport:
        """Reconcile only ``paths`` (a watcher's hints); others are untouched."""
        self.sync_history()
        self.refresh_source_globs()  # one meta read while the globs stay as they were
        return self._after_sync("paths", self.reconciler.sync_paths(paths), stale_after)

    def expand_paths(self, folders: Iterable[str], rules: "IgnoreRules | None" = None) -> set[str]:
        """The vault paths a watcher's hints of changed ``folders`` stand for
        (what :meth:`sync_paths` is then given): the files under each on disk
        now that ``rules`` do not exclude (default: the vault's own ignore
        rules), plus the indexed paths under it. Together they cover a folder
        created, filled, moved in, moved out or deleted."""
        from memvault.vault_io.scan import excluded, vault_rules

        if rules is None:
            rules = vault_rules(self.root, self.settings.ignore)
        out: set[str] = set()
        for folder in folders:
            for dirpath, dirnames, filenames in os.walk(self.root / folder):
                base = Path(dirpath).relative_to(self.root).as_posix()
                dirnames[:] = [d for d in dirnames if not excluded(rules, f"{base}/{d}", is_dir=True)]
                for name in filenames:
                    if not excluded(rules, f"{base}/{name}"):
                        out.add(f"{base}/{name}")
            out.update(self.indexed_paths_under(folder))
        return out

    def _after_sync(self, kind: str, summary: "SyncSummary", stale_after: float) -> SyncReport:
        """The one post-sync sequence (module docstring)."""
        from memvault.store.db import records as rec
        from memvault.store.db.connection import write_transaction
        from memvault.store.db.records import state_applied
        from memvault.store.index.rebuild import apply_state, backfill_state, index_versions, recover_trash
        from memvault.store.memories.mirror import flush_outbox

        report = SyncReport(summary)
        if kind == "sync" and not state_applied(self.con):
            # A fresh index (first sync, rebuild, deleted index.db): give it
            # back what only the durable state (or the vault's .trash) knows,
            # before pending writes are finished on top of it.
            report.restored = recover_trash(self.con, self.root, apply_state(self.con))
            from memvault.store.consolidation.retention import apply_durable as retained_facts

            retained_facts(self.con)  # the facts of session notes retention moved to the trash
        elif kind == "sync":
            backfill_state(self.con)
        if state_applied(self.con):
            index_versions(self.con)  # versions a log brought before their memory's note came
        for result in flush_outbox(self.memories, stale_after, errors=report.unwritten):
            report.finished.append(result.id)
            summary.warnings.append(f"finished an interrupted write of {result.id}")
        from memvault.store.consolidation.links import apply_durable

        apply_durable(self.con)  # merges, contradictions and links only the durable state holds
        from memvault.store.memories.rows import pending_writes

        report.pending = pending_writes(self.con)
        self._flush_history(self.con)  # what this sync changed, into this device's log
        if kind == "sync":
            with write_transaction(self.con):
                rec.set_meta(self.con, "last_sync", rec.now_iso())
        for listener in list(self.sync_listeners):
            listener(kind, summary)
        return report
