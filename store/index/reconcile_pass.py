"""One reconcile of the index with (part of) the vault, step by step.

:meth:`Indexer.sync` and :meth:`Indexer.sync_paths` differ only in what they
scan (and in that ``sync_paths`` reads each note it was given, whatever its
stat); both hand the scan to a :class:`ReconcilePass`, which

1. **plans**: sets store-side writes in flight apart (their events are our
   own), finds the vanished paths, and updates the in-memory path index the
   new links resolve against;
2. **reads** the candidate notes (in worker processes for many), sorting each
   into touched (same bytes), changed, new, or unreadable; without vanished
   notes nothing can be a move, so changes are written batch by batch while
   the rest is still being read;
3. **applies** what is not a note write: read errors, touched files,
   attachments, and vanished paths (moves found first: same front-matter id,
   same bytes, or half the words);
4. **writes** the remaining changes in batches of :data:`BATCH`, each one
   ``BEGIN IMMEDIATE`` transaction;
5. **finishes**: ends a bulk load, re-resolves links elsewhere whose targets
   appeared or vanished, and tells the observers (facts) what changed.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import apsw

from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.db.rows import count, rows, scalar
from memvault.store.index.classify import TraceDraft, draft_note, draft_trace
from memvault.store.index.reconcile import (
    BATCH,
    BULK_MIN,
    WAL_AUTOCHECKPOINT,
    NoteChange,
    SyncSummary,
    needs_look,
    trusted_ctime,
)
from memvault.store.index.reconcile_fresh import new_note_draft, write_new_notes
from memvault.vault_io.bulk import read_notes
from memvault.vault_io.note import ParsedNote, content_hash
from memvault.vault_io.resolve import path_key
from memvault.vault_io.scan import FileStat, ScanResult, stat_file

if TYPE_CHECKING:
    from memvault.store.index.reconcile import Indexer, Progress


class ReconcilePass:
    """The state of one reconcile (see the module docstring)."""

    def __init__(
        self, ix: "Indexer", scan: ScanResult, absent: set[str], known: dict[str, rec.FileRow], *, reread: bool = False
    ) -> None:
        self.ix, self.con, self.scan, self.known = ix, ix.con, scan, known
        self.reread = reread  # read every note of the scan, whatever its stat (Indexer.sync_paths)
        self.absent = absent - scan.skipped  # a skipped file still exists: keep its entry
        self.summary: SyncSummary = SyncSummary(warnings=[str(w) for w in scan.warnings])
        self.changes: list[NoteChange] = []
        self.touched: list[FileStat] = []
        self.attachments: list[FileStat] = []
        self.read_errors: list[tuple[str, str]] = []
        self.written: set[str] = set()
        self.written_notes: list[tuple[ParsedNote, rec.TraceRow]] = []
        self.removed: list[str] = []
        self.appeared: set[str] = set()  # paths new to the index, of batches already let go
        self.let_go_upto = 0  # written_notes before this index were already filtered
        self.batches = 0

    def run(self, progress: "Progress | None") -> SyncSummary:
        """All five steps; returns what the reconcile did."""
        notes = self._plan()
        self._read(notes, progress)
        moves = set() if self.stream else self.ix._detect_moves(self.changes, self.gone)
        self._apply_rest(moves)
        self._write_remaining()
        self._finish()
        return self.summary

    # -- 1. plan -----------------------------------------------------------------

    def _plan(self) -> list[FileStat]:
        """Set our own writes apart, find what vanished, prepare the path
        index; returns the notes to read."""
        known = self.known
        outbox = rows(self.con, "SELECT trace_id, expected_path, expected_hash, action FROM state.outbox")
        # Store-side writes in flight: their events are our own, and their
        # writer (or the outbox flush) records them. See store.memories.
        self.pending = {(path, digest) for _, path, digest, _ in outbox}
        # A memory whose store-side change is not written yet: a person's edit
        # of its note is not imported here, or it would overwrite that change
        # in the index; the writer's own check finds the edit and keeps both
        # (the store's version as a conflict copy).
        self.unwritten = {tid for tid, _, _, action in outbox if action == "write"}
        # A note that vanished while its memory's new note is already on disk
        # is the writer moving it (a type change): left to that writer. Any
        # other vanished note is a person's rename or deletion.
        moving = {tid for tid, path, _, _ in outbox if path and (self.ix.root / path).exists()}
        self.gone = {p: known[p] for p in self.absent if known[p].trace_id not in moving}

        # The paths every link can point at once this reconcile is applied.
        # data_version first: a commit by another connection from here on
        # (a CLI's writer) shows in it (see _finish).
        self.data_version = _data_version(self.con)
        self.all_files, self.resolver = self.ix._path_index()
        # Links elsewhere can only need re-resolving when the index held
        # files before (not on a first index); `known` alone cannot say so
        # for sync_paths, where it holds just the rows of the given paths.
        self.indexed_before = bool(known) or bool(self.all_files)
        for p in self.gone:
            self.all_files.pop(p, None)
            self.resolver.remove(p)
        for p in self.scan.files:
            if p not in self.all_files:
                self.all_files[p] = None
                self.resolver.add(p)

        notes: list[FileStat] = []
        for st in self.scan.files.values():
            if (self.reread and st.is_note) or needs_look(st, known.get(st.path)):
                (notes if st.is_note else self.attachments).append(st)
        # Without vanished notes no new path can be a move, so notes are
        # written batch by batch as they are read: SQLite work overlaps the
        # parsing in the worker processes. Otherwise all are read first.
        self.stream = not self.gone
        self.bulk = len(notes) >= BULK_MIN and len(notes) >= len(self.all_files) // 2
        # A first index: every note written is new, nothing to delete first.
        self.fresh = self.bulk and scalar(self.con, "SELECT NOT EXISTS (SELECT 1 FROM traces)") == 1
        if self.bulk and not rec.bulk_load_pending(self.con):
            with write_transaction(self.con):
                rec.begin_bulk_load(self.con, fresh=self.fresh)
        if self.bulk:
            # Checkpoint once after the load rather than every 1,000 pages:
            # hot index pages are otherwise copied into the database over and over.
            self.con.execute("PRAGMA wal_autocheckpoint=0")
        self.taken = {tid: path for path, tid in self.all_files.items() if tid}  # id -> path holding it
        return notes

    # -- 2. read ---------------------------------------------------------------------

    def _read(self, notes: list[FileStat], progress: "Progress | None") -> None:
        known = self.known
        items = [
            (st.path, row.hash if (row := known.get(st.path)) is not None and row.kind == "note" else None)
            for st in notes
        ]
        # Each note's trace row and edges are drafted where it is parsed (in the workers, for many).
        results = read_notes(self.ix.root, items, self.all_files, self.resolver,
                             derive=partial(draft_note, memory_folder=self.ix.memory_folder))
        try:
            for n, (st, res) in enumerate(zip(notes, results), 1):
                if progress:
                    progress(n, len(notes))
                if res.error is not None:
                    self.read_errors.append((st.path, res.error))
                elif res.note is None:
                    self.touched.append(st)
                elif (st.path, res.digest) in self.pending:
                    continue  # our own write
                elif _mid_save(st, res.digest, known.get(st.path)):
                    continue  # left as recorded: its write's own event reads it again
                elif st.path in known and known[st.path].trace_id in self.unwritten:
                    self.summary.warnings.append(
                        f"{st.path}: edited while memvault's own change of it waits to be written; "
                        "both are kept when it is written"
                    )
                else:
                    note = res.note
                    old = st.path if st.path in known else None
                    draft = res.derived
                    if not isinstance(draft, TraceDraft):
                        draft = draft_trace(note, self.ix.memory_folder)
                    self.changes.append(NoteChange(st, note, old, memory=draft.trace.kind == "memory",
                                                   resolutions=res.resolutions, keys=res.keys, draft=(note, draft)))
                    if self.stream and len(self.changes) == BATCH:
                        self._write(self.changes)
                        self._let_go()
        finally:
            results.close()  # stops the worker pool early if progress() gave up
        for path, message in self.read_errors:
            self.summary.warnings.append(f"{path}: {message}; skipped")
            if path not in known:  # never indexed: not a link target after all
                self.all_files.pop(path, None)
                self.resolver.remove(path)
        self.summary.skipped = len(self.scan.skipped) + len(self.scan.outside) + len(self.read_errors)

    # -- 3. apply what is not a note write -------------------------------------------

    def _apply_rest(self, moves: set[str]) -> None:
        with write_transaction(self.con):
            for path, message in self.read_errors:
                if path in self.known:
                    rec.set_read_error(self.con, path, message)
            for st in self.touched:
                rec.touch_file(self.con, st.path, st.mtime_ns, st.size, trusted_ctime(st), st.inode)
            for st in self.attachments:
                rec.put_file(self.con, rec.FileRow(st.path, "attachment", None, st.mtime_ns, st.size,
                                                   ctime_ns=trusted_ctime(st), inode=st.inode))
            for path, row in self.gone.items():
                rec.delete_file(self.con, path)
                if row.trace_id and row.trace_id not in moves:
                    self.ix._remove_trace(row.trace_id)
                    self.removed.append(row.trace_id)
                    self.summary.deleted += 1

    # -- 4. write ----------------------------------------------------------------------

    def _write(self, batch: list[NoteChange]) -> None:
        """One batch of changed notes in one transaction."""
        for c in batch:
            self.ix.identity.count_edit(c)  # before the id: both may rewrite the note, one after the other
        self.ix.identity.assign_ids(batch, self.known, self.taken)
        for c in batch:
            self.ix.identity.write_identity(c)
            self.all_files[c.stat.path] = c.trace_id
        with write_transaction(self.con):
            new: list[tuple[NoteChange, TraceDraft]] = []  # notes of a first index, written together
            for c in batch:
                # A note that took an id over, or gave one up, meets rows already written.
                fresh = self.fresh and not (c.takeover or c.own_trace)
                if fresh and (draft := new_note_draft(c)) is not None:
                    new.append((c, draft))
                    continue
                self._write_new(new)  # first: the rows keep the notes' order
                if not fresh and self._recorded_since(c):
                    continue
                self._written(c, self.ix._write_note(c, self.resolver, self.all_files, self.known, fresh))
            self._write_new(new)
            self.ix._retire_released()
        self.batches += 1

    def _write_new(self, new: list[tuple[NoteChange, TraceDraft]]) -> None:
        """Write (and empty) ``new``: notes of a first index (:mod:`~memvault.store.index.reconcile_fresh`)."""
        for (c, _), trace in zip(new, write_new_notes(self.con, new, self.all_files), strict=True):
            self._written(c, trace)
        new.clear()

    def _written(self, c: NoteChange, trace: rec.TraceRow) -> None:
        self.written_notes.append((c.note, trace))
        self.written.add(c.trace_id)
        self.summary.count(c)

    def _recorded_since(self, c: NoteChange) -> bool:
        """Whether another connection (the daemon, a CLI's writer) recorded
        this note as it is on disk now, after this pass read an older state
        of it: writing ours would put that older state back, and with the
        newer state's event already handled, nothing would read it again.
        Left alone then (in this pass's write transaction, so the check
        holds). A note whose change settles ids with other notes is written."""
        if c.takeover or c.own_trace or c.displaces is not None:
            return False
        st = c.stat
        now = stat_file(self.ix.root, st.path)
        if now is None or ((now.mtime_ns, now.size, now.inode) == (st.mtime_ns, st.size, st.inode)
                           and st.ctime_ns in (0, now.ctime_ns)):
            return False  # what was read is (as far as a stat can tell) what is there
        # Recorded from this very file (its inode; a ctime of 0 is a racy
        # entry, still of this file, read again on its next look).
        row = rec.get_file(self.con, st.path)
        return (row is not None and row.inode != 0 and row.hash != c.note.hash
                and (row.mtime_ns, row.size, row.inode) == (now.mtime_ns, now.size, now.inode)
                and row.ctime_ns in (0, now.ctime_ns))

    def _let_go(self) -> None:
        """Drop a written batch's parsed notes (streaming only): a first index
        of a large vault then holds one batch of notes at a time, not the vault.
        What later steps need of them is kept: the paths that appeared, and
        the notes an observer still has work for."""
        self.appeared.update(c.stat.path for c in self.changes if c.old_path != c.stat.path)
        self.changes = []
        batch = self.written_notes[self.let_go_upto :]
        keep: dict[str, tuple[ParsedNote, rec.TraceRow]] = {}
        for o in self.ix.observers:
            for w in o.wanted(batch) if hasattr(o, "wanted") else batch:
                keep[w[1].id] = w
        self.written_notes[self.let_go_upto :] = [w for w in batch if w[1].id in keep]
        self.let_go_upto = len(self.written_notes)

    def _write_remaining(self) -> None:
        changes = self.changes
        for i in range(0, len(changes), BATCH):
            self._write(changes[i : i + BATCH])
        if self.stream and self.batches > 1:
            # Links written before their target note's batch had no trace id yet.
            with write_transaction(self.con):
                rec.fill_edge_target_ids(self.con)

    # -- 5. finish -----------------------------------------------------------------------

    def _finish(self) -> None:
        if rec.bulk_load_pending(self.con):  # this bulk load, or one that died half-way
            with write_transaction(self.con):
                rec.end_bulk_load(self.con)
        if self.bulk:
            self.con.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
            self.con.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT}")
        appeared = self.appeared | {c.stat.path for c in self.changes if c.old_path != c.stat.path}
        appeared |= {st.path for st in self.attachments if st.path not in self.known}
        if self.indexed_before and (appeared or self.gone):
            keys = {path_key(p) for p in appeared | set(self.gone)}
            with write_transaction(self.con):
                self.ix._reresolve(keys, self.resolver, self.all_files, self.written)
        # Our own writes moved the files generation; the cached index already
        # has them, so adopt the new number instead of reloading. Unless
        # another connection committed meanwhile: its changes to the files
        # table (a writer moving a note) would be adopted unseen, and the
        # next reconcile would settle ids against paths that no longer hold
        # them (two notes under one id). Then the next reconcile reloads.
        if _data_version(self.con) == self.data_version:
            self.ix._paths_gen = rec.files_generation(self.con)
        else:
            self.ix._paths = None
        if self.written_notes or self.removed:
            for observer in self.ix.observers:
                self.summary.warnings += observer.notes_changed(self.written_notes, self.removed)


def _data_version(con: apsw.Connection) -> int:
    """SQLite's counter of commits to the index by other connections."""
    return count(con, "PRAGMA main.data_version")


#: The content hash of an empty file.
EMPTY_DIGEST = content_hash(b"")


def _mid_save(st: FileStat, digest: str | None, row: rec.FileRow | None) -> bool:
    """Whether a note read empty is an editor's save caught between its
    truncation and its write (Obsidian's ``fs.writeFile`` opens with
    ``O_TRUNC``, then writes): the index holds it with text and it was
    written moments ago (racy), or had bytes when its stat was taken, just
    before the read. That is no text anyone saved: no version or fact change
    may come of it. Its row stays as it was, so its next look (the write's
    own event, or a later scan once it is no longer racy, if it really was
    emptied) reads it again."""
    return (digest == EMPTY_DIGEST and row is not None and row.size > 0
            and (st.size > 0 or trusted_ctime(st) == 0))
