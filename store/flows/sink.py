"""``memvault import``: entries from an importer, written through the store.

:func:`run_import` reads one format (:mod:`.importers`), converts each entry
and writes what it holds: conversations as session notes (in batches: one
flush and one index pass per batch, :mod:`.sessions`), memories through the
mirror (:mod:`.memories`), ordinary notes (project documents) under the
import folder. An entry that fails to convert or write is one line of the
report and the import goes on; the report counts imported / updated /
skipped items. Everything written is indexed before this returns, so it is
searchable at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.store.context import StoreContext
from memvault.store.db.connection import write_transaction
from memvault.store.flows import keys as ik
from memvault.store.flows import unindexed
from memvault.store.flows.conversation import Conversation
from memvault.store.flows.importers import Entry, MemoryItem, NoteItem, Progress, Reader, Skip, reader
from memvault.store.flows.importers.precheck import check
from memvault.store.flows.importers.stream import outside
from memvault.store.flows.memories import import_memory
from memvault.store.flows.sessions import SessionPlan, SessionWriter, Sync, SyncPaths
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.gate import Kind
from memvault.vault_io.note import content_hash
from memvault.vault_io.secrets import redact

if TYPE_CHECKING:
    from memvault.store.memories.mirror import Memories

log = logging.getLogger(__name__)

#: Conversations written (flushed and indexed) together: enough that the
#: reconcile parses them on every core (see vault_io.bulk.POOL_MIN).
BATCH = 500
#: Names tried for a new document when each is taken just before it is written.
CREATE_TRIES = 3
#: Default vault folder of imported ordinary notes (project documents).
IMPORT_FOLDER = "Imports"


@dataclass
class ImportReport:
    """What an import did (or, with ``dry_run``, would do)."""

    format: str
    path: str
    dry_run: bool = False
    imported: int = 0
    updated: int = 0
    skipped: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)  # (item, why)
    redacted: int = 0
    warnings: list[str] = field(default_factory=list)

    def count(self, action: str) -> None:
        """Count one item's outcome."""
        setattr(self, action, getattr(self, action) + 1)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "format": self.format, "path": self.path, "dry_run": self.dry_run, "imported": self.imported,
            "updated": self.updated, "skipped": self.skipped, "errors": len(self.errors),
            "failed": [{"item": ref, "error": why} for ref, why in self.errors], "redacted": self.redacted,
            "warnings": list(self.warnings),
        }


class ImportSink:
    """Writes converted items through the store's collaborators, counting
    outcomes: memories through the memory mirror ``memories``, conversations
    through a :class:`SessionWriter`, written notes indexed by ``sync_paths``.
    ``fact_keep`` is the store's map of the facts a restored session note keeps
    (:mod:`.importers.memvault` fills it while its export is restored)."""

    def __init__(self, ctx: StoreContext, report: ImportReport, *, memories: "Memories", sync: Sync,
                 sync_paths: SyncPaths, fact_keep: dict[str, set[str]], folder: str = IMPORT_FOLDER) -> None:
        self.ctx = ctx
        self.memories = memories
        self.sync_paths = sync_paths
        self.fact_keep = fact_keep
        self.report = report
        self.folder = folder.strip("/") or IMPORT_FOLDER
        self.sessions = SessionWriter(ctx, sync, sync_paths)
        self.pending: list[tuple[str, SessionPlan]] = []
        self.pending_ids: set[str] = set()
        self.note_paths: list[str] = []

    def put(self, ref: str, item: Any) -> None:
        """Write one converted item (errors propagate to :meth:`run`)."""
        if isinstance(item, Conversation):
            self._conversation(ref, item)
        elif isinstance(item, MemoryItem):
            outcome = import_memory(self.ctx, self.memories, item, dry_run=self.report.dry_run)
            if outcome.action != "skipped":
                self.report.redacted += outcome.redacted
            self.report.count(outcome.action)
            self.report.warnings += outcome.warnings
        elif isinstance(item, Skip):
            self.report.count("skipped")
        elif isinstance(item, NoteItem):
            self._note(item)
        elif hasattr(item, "restore"):
            action = item.restore(self)  # memvault's own export records (None: not an item to count)
            if action:
                self.report.count(action)
        else:
            raise MemvaultError(f"cannot import a {type(item).__name__}")

    def _conversation(self, ref: str, conv: Conversation) -> None:
        if _note_id(conv) in self.pending_ids:
            self.flush()  # the same conversation twice in one file: the second sees the first
        plan = self.sessions.plan(conv)
        if plan.action != "skipped":
            self.report.redacted += conv.redacted
        if self.report.dry_run or plan.data is None:
            self.report.count(plan.action)
            if plan.key is not None and plan.data is None and not self.report.dry_run:
                with write_transaction(self.ctx.con):
                    ik.put_key(self.ctx.con, plan.key)
            return
        self.pending.append((ref, plan))
        self.pending_ids.add(plan.note_id)
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        """Write and index the pending session notes."""
        pending, self.pending = self.pending, []
        self.pending_ids = set()
        if not pending:
            return
        try:
            sync = self.sessions.write([p for _, p in pending])
        except (OSError, MemvaultError) as exc:
            for ref, _ in pending:
                self.report.errors.append((ref, f"could not write its session note: {exc}"))
            return
        for _, plan in pending:
            self.report.count(plan.action)
        if sync is not None:
            self.report.warnings += sync.summary.warnings

    def _note(self, item: NoteItem) -> None:
        text, n = redact(item.text)
        digest = ik.item_hash(text)
        row = ik.get_key(self.ctx.con, item.source, item.key)
        root = self.ctx.root
        if row is not None and row.hash == digest and row.path and (root / row.path).exists():
            self.report.count("skipped")
            return
        gate = self.ctx.gate
        expected: str | None = None
        if row is not None and row.path and (root / row.path).exists():
            target, action = row.path, "updated"
            data = (root / target).read_bytes()
            if ik.item_hash(data.decode("utf-8", "replace")) != row.hash:
                self.report.warnings.append(f"{target} was edited in the vault; the changed document was not written over it")
                self.report.count("skipped")
                return
            expected = content_hash(data)
            gate.check(target, Kind.NOTE)
        else:
            target = gate.free(f"{self.folder}/{item.path}")
            gate.check(target, Kind.IMPORTED, folder=self.folder)
            action = "imported"
        self.report.redacted += n
        if not self.report.dry_run:
            self.will_write(target)
            if expected is None:
                target = self._create(target, text.encode("utf-8"))
            elif not gate.replace(target, expected, text.encode("utf-8")):
                self.report.warnings.append(f"{target} was edited in the vault; the changed document was not written over it")
                self.report.count("skipped")
                return
            with write_transaction(self.ctx.con):
                ik.put_key(self.ctx.con, ik.ImportKey(item.source, item.key, target, digest, target))
        self.report.count(action)

    def _create(self, target: str, data: bytes) -> str:
        """Write a new document at the free name ``target``; a name taken
        meanwhile (a sync tool's delivery) keeps its bytes: the next free
        name. Where it was written."""
        for n in range(2, 2 + CREATE_TRIES):
            if self.ctx.gate.create(target, data, Kind.IMPORTED, folder=self.folder):
                return target
            stem, _, ext = target.rpartition(".")
            target = self.ctx.gate.free(f"{stem} {n}.{ext}")
            self.will_write(target)
        raise MemvaultError(f"{target}: a file appeared at each name tried; not written")

    def will_write(self, rel: str) -> None:
        """A note is about to be written at ``rel``: it is indexed by
        :meth:`finish`, or, if this process is killed first, by the next
        command that opens the store (:mod:`.unindexed`)."""
        unindexed.will_write(self.ctx.con, [rel])
        self.note_paths.append(rel)

    def finish(self) -> None:
        """Write what is pending and index the written notes."""
        self.flush()
        if self.note_paths:
            sync = self.sync_paths(self.note_paths)
            self.report.warnings += sync.summary.warnings
            unindexed.indexed(self.ctx.con, self.note_paths)
            self.note_paths = []


def _note_id(conv: Conversation) -> str:
    from memvault.vault_io.session_note import session_note_id

    return session_note_id(conv.client, conv.session_id)


def run_import(
    ctx: StoreContext,
    fmt: str,
    path: Path,
    *,
    memories: "Callable[[], Memories]",
    sync: Sync,
    sync_paths: SyncPaths,
    fact_keep: dict[str, set[str]],
    dry_run: bool = False,
    folder: str = IMPORT_FOLDER,
    progress: Progress | None = None,
    read: Reader | None = None,
) -> ImportReport:
    """Import ``path`` in format ``fmt`` (see :data:`.importers.FORMATS`)
    through the store's collaborators (:class:`ImportSink`); ``memories``
    gives the memory mirror, built once the vault has an index."""
    if read is None:
        read = reader(fmt)
        check(fmt, path)  # a file of another kind, or not text, is refused before anything is written
    report = ImportReport(fmt, str(path), dry_run)
    report.warnings += [f"{name}: leads outside {path} (to {real}); not read" for name, real in outside(path)]
    if not ctx.has_index():
        sync()  # a first index, so what is imported meets the vault's notes
    sink = ImportSink(ctx, report, memories=memories(), sync=sync, sync_paths=sync_paths, fact_keep=fact_keep,
                      folder=folder)
    for entry in read(path, progress):
        _one(sink, entry)
    sink.finish()
    return report


def _one(sink: ImportSink, entry: Entry) -> None:
    """Convert and write one entry; whatever goes wrong is that entry's error line."""
    try:
        items = entry.convert()
    except Exception as exc:  # one odd item must never stop the others
        sink.report.errors.append((entry.ref, _why(exc)))
        return
    for item in items:
        try:
            sink.put(entry.ref, item)
        except Exception as exc:
            log.debug("importing %s failed", entry.ref, exc_info=True)
            sink.report.errors.append((entry.ref, _why(exc)))


def _why(exc: Exception) -> str:
    """An error as one line: a memvault error's message, else its type too."""
    if isinstance(exc, MemvaultError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
