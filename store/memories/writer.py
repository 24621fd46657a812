"""The state-first writer behind :class:`~.mirror.Memories`: how a store
change reaches the vault (see :mod:`.mirror` for the protocol).

:meth:`NoteWriter._commit` records a change (outbox entry in the durable
state first, the index second); :meth:`NoteWriter.flush` carries out the
pending write of one memory: an atomic write, a move to ``.trash``, a restore,
or, when a person changed the note meanwhile, a conflict copy beside it.
:func:`flush_outbox` finishes what a dead writer left behind.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from memvault.store.answers.write import WriteResult
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.memories import rows as mem
from memvault.store.memories.memtypes import maybe_type
from memvault.vault_io.atomic import NAME_MAX, fit_name, free_path
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.fm_edit import edit_frontmatter
from memvault.vault_io.frontmatter import file_frontmatter_id
from memvault.vault_io.gate import TRASH_FOLDER, Gate, Kind, WriteRefused
from memvault.vault_io.memory_note import MemoryDoc, memory_filename, render_memory, split_related
from memvault.vault_io.note import content_hash
from memvault.vault_io.secrets import redact

TRASH = TRASH_FOLDER
#: How often a note still unchanged but held open elsewhere is replaced again.
REPLACE_TRIES = 3
#: Why a store change went beside its note instead of into it.
EDITED = "the note was edited in the vault meanwhile"
#: Bytes kept free in a conflict copy's name for free_path's " 2" counter.
_COUNTER_ROOM = 8

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import apsw

    from memvault.store.index.reconcile import Indexer


class MemoryOpError(MemvaultError):
    """A memory operation that cannot be done (unknown id, wrong state)."""



class MemoryWriteError(MemoryOpError):
    """The index has the change, but its note could not be written (yet).

    The outbox entry is left as it was, so the write is retried by the next
    ``sync``, the daemon, or the next command on the same memory.
    """



def render_note(trace: rec.TraceRow, existing: str | None) -> str:
    """The note text of a memory trace (see :func:`render_memory`), keeping
    the body a person typed when only redaction tells it from the trace's
    content: memvault never rewrites a note to take a secret out of it."""
    doc = doc_from_trace(trace)
    if existing is not None:
        from memvault.vault_io.frontmatter import split_frontmatter

        _, body, _ = split_frontmatter(existing.lstrip("\ufeff").replace("\r\n", "\n"))
        typed, _ = split_related(body)
        if typed != doc.content and redact(typed)[0] == doc.content:
            doc.content = typed
    return render_memory(doc, existing)



def doc_from_trace(t: rec.TraceRow) -> MemoryDoc:
    """The note form of a memory trace."""
    fm_tags = t.metadata.get("fm_tags")
    # The note's own spelling of its type ("goal") while it still names the
    # trace's type, so an unchanged type line is not rewritten as "prospective".
    fm_type = t.metadata.get("fm_type")
    return MemoryDoc(
        id=t.id,
        type=fm_type if isinstance(fm_type, str) and maybe_type(fm_type) == t.type else t.type,
        content=t.content,
        scope=t.scope or "user",
        tags=list(fm_tags if isinstance(fm_tags, list) else t.tags),
        strength=t.strength,
        created=str(t.metadata.get("fm_created") or t.created),
        updated=t.updated,
        source=t.source or "manual",
        supersedes=t.metadata.get("supersedes"),
        related=list(t.metadata.get("related") or []),
        version=fm_version if isinstance(fm_version := t.metadata.get("fm_version"), int) else None,
        version_hash=str(t.metadata["fm_version_hash"]) if t.metadata.get("fm_version_hash") else None,
        key=key if isinstance(key := t.metadata.get("key"), str) and key else None,
        # Keys a person added, for a note written from scratch (it was
        # deleted): an existing note keeps its own lines instead.
        extra=dict(extra) if isinstance(extra := t.metadata.get("frontmatter"), dict) else {},
    )



class NoteWriter:
    """Writes memory notes for :class:`~.mirror.Memories` (a mixin: it
    holds no state of its own)."""

    if TYPE_CHECKING:  # set by Memories.__init__
        root: Path
        gate: Gate
        con: apsw.Connection
        indexer: Indexer
        folder: str
        before_write: Callable[[str], None] | None

    def _commit(
        self, trace: rec.TraceRow, action: str, path: str | None, digest: str | None, index: Callable[[], None],
        *, stage: Callable[[], None] | None = None,
    ) -> None:
        """Record a store-side change: the durable state (the outbox entry
        with the memory as it must be written) commits first, the index
        second. SQLite commits two attached databases one after the other,
        so a writer killed between them leaves the index behind the state,
        never ahead: :func:`~.rows.index_catch_up` levels it from the outbox.

        ``stage`` writes the state rows that belong to the change (a forget
        record, its removal) in the outbox entry's own transaction: committed
        alone, a writer killed before the entry would leave them describing
        a change that never happened."""
        with write_transaction(self.con):
            if stage is not None:
                stage()
            mem.put_outbox(self.con, trace, action, path, digest)
        self._index(index)

    def _index(self, index: Callable[[], None]) -> None:
        """The index's half of a commit, once the state's half (the outbox
        entry, and what was staged with it) is in."""
        with write_transaction(self.con):
            index()

    def flush(self, trace_id: str) -> WriteResult | None:
        """Carry out the pending vault write of one trace (idempotent)."""
        entry = mem.get_outbox(self.con, trace_id)
        if entry is None:
            return None
        with write_transaction(self.con):
            trace = mem.index_catch_up(self.con, trace_id)
        if trace is None:
            with write_transaction(self.con):
                mem.clear_outbox(self.con, trace_id)
            return None
        try:
            current = self._locate(trace_id)
            if entry.action == "trash":
                return self._trash(trace, current, entry)
            if entry.action == "restore":
                return self._restore(trace, current)
            return self._finish_own_write(trace, current, entry) or self._write(trace, current, entry)
        except (OSError, WriteRefused) as exc:
            # The change is committed and its outbox entry kept: the write is
            # retried later, and the person gets one line, not a traceback.
            # A failed write has no live writer left, so it is due at once
            # (the next sync retries it instead of waiting for it to age).
            self._mark_failed(trace_id)
            raise MemoryWriteError(self._write_failure(trace_id, entry, exc)) from None

    def _mark_failed(self, trace_id: str) -> None:
        try:
            with write_transaction(self.con):
                mem.mark_outbox_failed(self.con, trace_id)
        except Exception:  # the database failing too (a full disk): the entry just ages
            log.debug("could not mark the failed write of %s", trace_id, exc_info=True)

    def _write_failure(self, trace_id: str, entry: mem.OutboxEntry, exc: OSError | WriteRefused) -> str:
        if isinstance(exc, WriteRefused):
            return f"memory {trace_id} is saved in the index, but its note was refused: {exc}"
        where = exc.filename or entry.expected_path or ""
        try:
            where = Path(where).relative_to(self.root).as_posix() if Path(where).is_absolute() else str(where)
        except ValueError:
            pass
        # A temp file's name says nothing to a person: name the note.
        if where and PurePosixPath(where).name.endswith(".memvault-tmp") and entry.expected_path:
            where = entry.expected_path
        why = exc.strerror or str(exc)
        return (
            f"memory {trace_id} is saved in the index, but its note could not be written"
            f"{f' ({where})' if where else ''}: {why}; the next `memvault sync` or the running daemon "
            f"tries again"
        )

    def _finish_own_write(self, trace: rec.TraceRow, current: str | None, entry: mem.OutboxEntry) -> WriteResult | None:
        """Finish a write whose writer died after putting the note in place.

        A file at the entry's path with the entry's hash is that writer's own
        note, not someone else's file to write beside: what is left is to
        remove the note it replaces (a move: a type change, an undo putting a
        note back in its folder) and index both. The old note goes only when
        it is still as last indexed; a person's edit of it since keeps it,
        and our note is withdrawn for the ordinary write to settle the two
        as a conflict. None when there is no such note (nothing was written yet).
        """
        target = entry.expected_path
        if not target or not entry.expected_hash:
            return None
        try:
            if content_hash((self.root / target).read_bytes()) != entry.expected_hash:
                return None
        except OSError:  # not written yet (or unreadable: the ordinary write reports it)
            return None
        old = current if current and current != target and (self.root / current).exists() else None
        # A sync that ran in between may have indexed our note as a memory of its own.
        self._drop_own_copy(trace.id, target)
        if old is not None and not self.gate.remove_if_unchanged(old, mem.synced_hash(self.con, old) or ""):
            self.gate.remove(target)
            return None
        with write_transaction(self.con):
            mem.clear_outbox(self.con, trace.id)
        self.indexer.sync_paths([target] + ([old] if old else []))
        return WriteResult(trace.id, "written", target)

    def _drop_own_copy(self, trace_id: str, path: str) -> None:
        """Forget what the index made of our own note at ``path`` when it took
        it for another memory. A sync between a killed move's write and its
        finish sees two notes with one ``id`` and gives the newcomer a derived
        id; once the old note is gone that phantom would stay as a second
        memory. Dropping it (and the path's row) lets ``path`` be indexed
        again as a move of ``trace_id``'s note."""
        row = rec.get_file(self.con, path)
        if row is None or row.trace_id is None or row.trace_id == trace_id:
            return
        with write_transaction(self.con):
            rec.delete_file(self.con, path)
            mem.drop_memory(self.con, row.trace_id)

    def _write(self, trace: rec.TraceRow, current: str | None, entry: mem.OutboxEntry) -> WriteResult:
        target = entry.expected_path or current
        if current and not (self.root / current).exists():
            moved_to = self._locate(trace.id)
            if moved_to and moved_to != current:
                target = moved_to if target == current else target
            current = moved_to
            trace = rec.get_trace(self.con, trace.id) or trace
        if target is None:
            target = self._new_note_path(trace.type, memory_filename(trace.content, trace.id[2:10]))
        existing: str | None = None
        expected: str | None = None
        mode = None
        if self.before_write is not None and current:
            self.before_write(current)
        if current and (self.root / current).exists():
            data = (self.root / current).read_bytes()
            expected = content_hash(data)
            if expected != mem.synced_hash(self.con, current):
                return self._conflict(trace, current, EDITED)
            existing = data.decode("utf-8", "replace")
            mode = (self.root / current).stat().st_mode & 0o7777
        new = render_note(trace, existing).encode("utf-8")
        planned = (entry.expected_path, entry.expected_hash)
        for _ in range(REPLACE_TRIES):
            if target != current and (self.root / target).exists() and (self.root / target).read_bytes() != new:
                # Someone created a file at the planned name meanwhile: never overwrite it.
                target = free_path(self.root / target).relative_to(self.root).as_posix()
            if (target, content_hash(new)) != planned:
                # The entry names what is written, before it is: a writer killed
                # after the write leaves a note the reconciler and the retry
                # recognise as its own (else the retry would write a second one).
                with write_transaction(self.con):
                    mem.retarget_outbox(self.con, trace.id, target, content_hash(new))
                planned = (target, content_hash(new))
            # An edit always beats a deletion: a note the person deleted while
            # the store changed it is written again.
            placed = self._place(trace.id, current, target, new, mode, expected,
                                 fresh=target != current and not (self.root / target).exists())
            if placed is not None:
                break
        else:
            raise MemvaultError(f"{target}: a file appeared at each name planned for memory {trace.id}; "
                                "not written (the next write tries again)")
        if not placed:
            return self._conflict(trace, current or target, EDITED)
        return WriteResult(trace.id, "written", target)

    def _place(self, trace_id: str, current: str | None, target: str, data: bytes, mode: int | None,
               expected: str | None, *, fresh: bool = False) -> bool | None:
        """Write a note's new bytes at ``target``, remove it from ``current``
        when it moved, confirm the outbox entry and index both. ``expected``:
        the hash ``current`` had when it was checked (None: no note there).
        A person's note is replaced only by exchange-and-check, and a moved
        one removed only while unchanged, so an edit saved since that check
        is never lost: False then, nothing of ours stays in the vault, and
        the caller writes the store's version beside the note. ``fresh``: no
        file is at ``target``; one made there meanwhile (a person's note, a
        sync tool's delivery) is never replaced: None then, nothing written."""
        if expected is not None and target == current:
            if not self._replace(target, expected, data):
                # Deleted meanwhile: an edit beats it, unless a note is there again.
                if (self.root / target).exists() or not self.gate.create(target, data, Kind.NOTE, mode=mode):
                    return False
        else:
            if not fresh:
                self.gate.write(target, data, Kind.NOTE, mode=mode)
            elif not self.gate.create(target, data, Kind.NOTE, mode=mode):
                return None
            if current and current != target and expected is not None and (self.root / current).exists() \
                    and not self.gate.remove_if_unchanged(current, expected):
                self.gate.remove(target)
                return False
        with write_transaction(self.con):
            mem.clear_outbox(self.con, trace_id)
        self.indexer.sync_paths([target] + ([current] if current and current != target else []))
        return True

    def _replace(self, rel: str, expected: str, data: bytes) -> bool:
        """Exchange-and-check ``rel`` (:meth:`~memvault.vault_io.gate.Gate.replace`),
        again while the note is unchanged and only was open elsewhere (a
        sync tool reading it): False once it changed, or is gone."""
        for _ in range(REPLACE_TRIES):
            if self.gate.replace(rel, expected, data):
                return True
            try:
                if content_hash((self.root / rel).read_bytes()) != expected:
                    return False
            except FileNotFoundError:
                return False
        return False

    def _trash(self, trace: rec.TraceRow, current: str | None, entry: mem.OutboxEntry) -> WriteResult:
        # The outbox entry is the record of intent: its trace carries the
        # forget's reason even when a sync in between already took the
        # vanished note for one deleted in the vault.
        intended = mem.outbox_trace(self.con, trace.id)
        reason = (intended.reason if intended is not None else None) or trace.reason or "forgotten"
        if self.before_write is not None and current:
            self.before_write(current)
        if current is None or not (self.root / current).exists():
            return self._trash_finished(trace, current, entry.expected_path or current, reason)
        if content_hash((self.root / current).read_bytes()) != mem.synced_hash(self.con, current):
            return self._conflict(trace, current, "forget cancelled: the note was edited in the vault meanwhile")
        trash_rel = self.gate.free(f"{TRASH}/{PurePosixPath(current).name}")
        try:
            self.gate.move(current, trash_rel, Kind.TRASH)
        except OSError as exc:
            if (self.root / current).exists() or not (self.root / trash_rel).exists():
                raise
            # Renamed; only flushing a folder failed. The move is done (the
            # note is in the trash for every reader), so it is not reported
            # as failed: that would leave a forget half recorded.
            log.warning("%s moved to %s, but its folder could not be flushed: %s", current, TRASH, exc)
        self.indexer.sync_paths([current])
        self._set_deleted(trace, current, trash_rel, reason)
        return WriteResult(trace.id, "forgotten", trash_rel)

    def _trash_finished(self, trace: rec.TraceRow, current: str | None, origin: str | None, reason: str) -> WriteResult:
        """The note is gone from its place: a writer killed after moving it to
        the trash (found there by its ``id``), or a person deleting it. Either
        way the forget is recorded with its own reason, and with where the
        note went when the trash holds it (so ``restore`` brings that copy back)."""
        trash_rel = self._trashed_copy(trace.id, origin) if origin else None
        if current:
            self.indexer.sync_paths([current])
        self._set_deleted(trace, origin if trash_rel else None, trash_rel, reason)
        return WriteResult(trace.id, "forgotten", trash_rel)

    def _trashed_copy(self, trace_id: str, origin: str) -> str | None:
        """The note of memory ``trace_id`` that a move to the trash put there
        from ``origin`` (the names :func:`free_path` gives it, the newest
        first), or None."""
        name = PurePosixPath(origin)
        try:
            entries = list((self.root / TRASH).iterdir())
        except OSError:
            return None

        def named_so(p: Path) -> bool:
            counter = p.name[len(name.stem) + 1 : len(p.name) - len(name.suffix)]
            return p.name == name.name or (
                p.name.startswith(name.stem + " ") and p.name.endswith(name.suffix) and counter.isdigit()
            )

        found = [p for p in entries if named_so(p) and p.is_file() and file_frontmatter_id(p) == trace_id]
        if not found:
            return None
        # A rename updates the file's ctime: the latest is this forget's move.
        newest = max(found, key=lambda p: p.stat().st_ctime_ns)
        return newest.relative_to(self.root).as_posix()

    def _set_deleted(
        self, trace: rec.TraceRow, trashed_from: str | None, trash_path: str | None, reason: str | None = None
    ) -> None:
        """Record the forget reason and where the note went (the indexer's
        own deletion handling only knows the file disappeared), and clear
        the outbox entry in the same transaction: until this is recorded the
        entry stays, for a retry to find the note in the trash and record it."""
        where = {"trashed_from": trashed_from, "trash_path": trash_path} if trashed_from else {}
        with write_transaction(self.con):
            mem.clear_outbox(self.con, trace.id)
            self.con.execute("UPDATE traces SET path = NULL WHERE id = ?", (trace.id,))
            mem.mark_deleted(self.con, trace.id, reason or trace.reason or "forgotten", **where)

    def _restore(self, trace: rec.TraceRow, current: str | None) -> WriteResult:
        # The trace as the restore recorded it: a sync in between may have
        # indexed the restored note, and with it lost where it came from.
        intended = mem.outbox_trace(self.con, trace.id) or trace
        # Where the note was and where its copy went come from the durable
        # state, which another device's history log may have set: a place
        # that is no note's (a hidden file, the history folder) is not used.
        default = f"{self.folder}/{trace.type}/{memory_filename(trace.content, trace.id[2:10])}"
        origin = intended.metadata.get("trashed_from")
        origin = origin if isinstance(origin, str) and self.gate.allows(origin, Kind.NOTE) else default
        trash = intended.metadata.get("trash_path")
        trash = trash if isinstance(trash, str) and self.gate.allows(trash, Kind.TRASH) else None
        restored = self._restored_note(trace.id, current, origin)
        if restored is not None:
            # Back already. A trash copy still there is this restore's
            # leftover (the writer died before removing it), unless it is
            # another memory's note by now.
            if trash and (self.root / trash).is_file() and file_frontmatter_id(self.root / trash) in (None, trace.id):
                self.gate.remove(trash)
        else:
            if trash and (self.root / trash).is_file():
                text = (self.root / trash).read_bytes().decode("utf-8", "replace")
                # The trash copy may predate the note's id; give it the id so the
                # restored note is recognised as this memory.
                restored = self._create_free(origin, edit_frontmatter(text, {"id": trace.id}).encode("utf-8"))
                self.gate.remove(trash)
            else:
                restored = self._create_free(origin, render_memory(doc_from_trace(trace)).encode("utf-8"))
        with write_transaction(self.con):
            mem.clear_outbox(self.con, trace.id)
        self.indexer.sync_paths([restored])
        return WriteResult(trace.id, "restored", restored)

    def _restored_note(self, trace_id: str, current: str | None, origin: str) -> str | None:
        """The memory's note when it is back already: a restore killed after
        writing it (indexed since, or still at ``origin`` with the memory's
        ``id``), or a person restoring it themselves. Writing another would
        leave two notes of one memory."""
        if current and (self.root / current).is_file():
            return current
        if (self.root / origin).is_file() and file_frontmatter_id(self.root / origin) == trace_id:
            return origin
        return None

    def _conflict(self, trace: rec.TraceRow, current: str, detail: str) -> WriteResult:
        """The person changed the note since we last read it: import their
        version, write ours beside it, and record the conflict."""
        store_text = render_memory(doc_from_trace(trace))
        store_text = edit_frontmatter(store_text, {"conflict_of": trace.id}, ["id"])
        stamp = datetime.now().strftime("%Y-%m-%d %H%M%S")
        stem = PurePosixPath(current).stem
        # A note whose name is already near the 255-byte limit: shorten the
        # stem (by bytes), never the conflict mark, and leave room for a counter.
        name = fit_name(stem, f" (conflict {stamp}).md", NAME_MAX - _COUNTER_ROOM)
        rel = self.gate.free(posixpath.join(posixpath.dirname(current), name))
        self.gate.write(rel, store_text.encode("utf-8"), Kind.CONFLICT, near=current)
        with write_transaction(self.con):
            mem.clear_outbox(self.con, trace.id)
            mem.add_conflict(self.con, trace.id, current, rel, "edit", detail)
        # Importing the person's version makes it the live trace again (an
        # edit beats a deletion, too); ours stays readable in the conflict note.
        self.indexer.sync_paths([current, rel])
        return WriteResult(trace.id, "conflict", current, conflict=detail, conflict_path=rel)

    def _locate(self, trace_id: str) -> str | None:
        """Where the memory's note is now, as far as the vault can tell.

        The index may be behind a person's rename or move (no daemon ran):
        a note missing from its indexed path is looked for by a full sync,
        which recognises the move by the note's ``id``, instead of being
        taken for deleted and written a second time.
        """
        path = mem.trace_path(self.con, trace_id)
        if path and not (self.root / path).exists():
            self.indexer.sync()
            path = mem.trace_path(self.con, trace_id)
        return path

    def _import_pending(self, trace: rec.TraceRow) -> tuple[rec.TraceRow, str | None]:
        """Index the memory's note first, so a person's unsynced edit (or
        rename) is the base of the change instead of being overwritten.

        Returns the fresh trace, and the path its note had when this import
        is what found the note deleted in the vault (else None): the caller
        decides what a deletion it did not know about means for its change.
        """
        before = mem.trace_path(self.con, trace.id)
        path = self._locate(trace.id)
        if path:
            self.indexer.sync_paths([path])
        fresh = rec.get_trace(self.con, trace.id)
        if fresh is None:
            raise MemoryOpError(f"memory {trace.id} is gone from the index")
        if fresh.kind != "memory":
            raise MemoryOpError(f"{trace.id} is no longer a memory: its note {path} is an ordinary note now")
        if fresh.status == "deleted" and before is not None and path is None:
            return fresh, before
        if fresh.status != "active":
            raise MemoryOpError(f"memory {trace.id} is {fresh.status}; `memvault restore {trace.id}` first")
        return fresh, None

    def _create_free(self, rel: str, data: bytes) -> str:
        """Write ``data`` as a new note at ``rel`` or the first free name
        beside it; a name taken just before the write (a sync tool's
        delivery) keeps its bytes: the next free one. Where it was written."""
        for _ in range(REPLACE_TRIES):
            free = self.gate.free(rel)
            if self.gate.create(free, data, Kind.NOTE):
                return free
        raise MemvaultError(f"{rel}: a file appeared at each name tried; not written (the next write tries again)")

    def _new_note_path(self, type_: str, name: str) -> str:
        folder = self.root / self.folder / type_
        taken = {r[0] for r in self.con.execute("SELECT expected_path FROM state.outbox WHERE expected_path IS NOT NULL")}
        path = free_path(folder / name)
        rel = path.relative_to(self.root).as_posix()
        n = 2
        while rel in taken:  # another writer has claimed this name but not written it yet
            path = free_path(folder / fit_name(Path(name).stem, f" {n}.md"))
            rel = path.relative_to(self.root).as_posix()
            n += 1
        return rel

    def _read_text(self, rel: str) -> str | None:
        try:
            return (self.root / rel).read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            return None


#: The last failure logged for each memory whose write keeps failing, so a
#: daemon retrying every batch logs it once, not every batch.
_reported: dict[str, str] = {}


def flush_outbox(memories: NoteWriter, older_than: float = 30.0, *, errors: list[str] | None = None) -> list[WriteResult]:
    """Finish store-side writes whose writer died (older than ``older_than`` s)
    with ``memories`` (the store's :class:`~.mirror.Memories`).

    A write that fails again stays in the outbox for the next try; its one-line
    reason goes to ``errors`` when given, else to the log (once per memory and
    reason). Returns the writes that were finished.
    """
    results = []
    for entry in mem.stale_outbox(memories.con, older_than):
        try:
            result = memories.flush(entry.trace_id)
        except MemoryWriteError as exc:
            if errors is not None:
                errors.append(str(exc))
            elif _reported.get(entry.trace_id) != str(exc):
                _reported[entry.trace_id] = str(exc)
                log.warning("%s", exc)
            continue
        _reported.pop(entry.trace_id, None)
        if result is not None:
            results.append(result)
    return results

