"""Memories written through the store, mirrored into the vault as notes.

Every store-side change follows the same protocol, whether the daemon runs
or not:

1. import any pending edit a person made to the note (so it is never
   overwritten, and a store change applies on top of it);
2. in one ``BEGIN IMMEDIATE`` transaction: change the trace (keeping the old
   version as a superseded snapshot) and record an outbox entry with the
   path and hash of the note about to be written;
3. write the note atomically, unless the file changed since it was last
   indexed, in which case the person's version is imported and the store's
   version is written beside it as ``<name> (conflict <time>).md``;
4. clear the outbox entry and index the written path.

A writer that dies between 2 and 4 leaves the outbox entry behind;
:func:`flush_outbox` (run by ``sync`` and by the daemon) finishes it, and
because step 3 is idempotent (identical bytes are not rewritten) finishing
twice is harmless. The watcher recognises its own writes by the outbox's
(path, hash), so one store change is one file write and no feedback loop.
A write that fails (a full disk, a read-only folder) is the same case: the
change stays in the index, the outbox entry stays as it was, the command
ends with one line saying so (:class:`MemoryWriteError`), and the next
``sync``, daemon batch or command on that memory tries the write again.

Secrets: content given to :meth:`Memories.add` and :meth:`Memories.update`
is redacted (:func:`~memvault.vault_io.secrets.redact`) before anything is
stored, named or written, and the result says so. A memory note a person
typed a secret into is indexed redacted (see
:func:`~memvault.store.index.classify.note_trace`) but never rewritten for
it: a store-side write that leaves the content as it was keeps the person's
body as they typed it (:func:`render_note`).

Versions: a memory's version is 1 plus the number of earlier versions kept
(store updates and edits in the vault alike). :meth:`Memories.update` with
``expect_version`` refuses (:class:`.guard.VersionConflict`, carrying the current
text) when the memory moved on since that version was read, after first
importing any edit a person saved meanwhile.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.index.classify import content_key
from memvault.store.index.lookup import find_trace
from memvault.store.memories import rows as mem
from memvault.store.memories.guard import check_version, redaction_warnings
from memvault.store.memories.memtypes import canonical_type, maybe_type
from memvault.vault_io.atomic import NAME_MAX, atomic_move, atomic_write, fit_name, free_path, fsync_dir
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.fm_edit import edit_frontmatter
from memvault.vault_io.memory_note import MemoryDoc, memory_filename, render_memory, split_related
from memvault.vault_io.note import content_hash
from memvault.vault_io.secrets import redact

#: Strength a new memory starts with (0-1); recall nudges it up over time.
DEFAULT_STRENGTH = 0.5
TRASH = ".trash"
#: Bytes kept free in a conflict copy's name for free_path's " 2" counter.
_COUNTER_ROOM = 8

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import apsw

    from memvault.store.memory_store import MemoryStore


class MemoryOpError(MemvaultError):
    """A memory operation that cannot be done (unknown id, wrong state)."""


class MemoryWriteError(MemoryOpError):
    """The index has the change, but its note could not be written (yet).

    The outbox entry is left as it was, so the write is retried by the next
    ``sync``, the daemon, or the next command on the same memory.
    """


@dataclass
class WriteResult:
    """What a store-side change did."""

    id: str
    action: str  # added | duplicate_of | updated | unchanged | forgotten | restored | reverted | discarded
    path: str | None = None
    conflict: str | None = None
    conflict_path: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: The memory's version after the change (None when not looked up).
    version: int | None = None
    #: Secrets replaced by ``[redacted]`` in the content given.
    redacted: int = 0
    #: For ``duplicate_of``: why the new memory was taken for the existing one.
    reason: str | None = None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form for ``--json`` output."""
        data: dict[str, object] = {
            "id": self.id, "action": self.action, "path": self.path,
            "conflict": self.conflict, "conflict_path": self.conflict_path, "warnings": self.warnings,
        }
        if self.version is not None:
            data["version"] = self.version
        if self.redacted:
            data["redacted"] = self.redacted
        if self.action == "duplicate_of":
            data.update(duplicate_of=self.id, reason=self.reason)
        return data


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


def memory_id_for(con: "apsw.Connection", key: str) -> str:
    """The id of a new memory with dedup key ``key``: ``m-`` and 12 hex digits
    derived from it, so two devices that add the same memory give it the same
    id (and the same note name: their sync tool sees one file, not two
    memories). An id some trace already holds (an earlier memory of that text,
    forgotten) moves on to the next derivation."""
    n = 0
    while True:
        seed = key if n == 0 else f"{key}\x00{n}"
        candidate = "m-" + hashlib.sha256(seed.encode()).hexdigest()[:12]
        if not mem.id_in_use(con, candidate):
            return candidate
        n += 1


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
        # Keys a person added, for a note written from scratch (it was
        # deleted): an existing note keeps its own lines instead.
        extra=dict(extra) if isinstance(extra := t.metadata.get("frontmatter"), dict) else {},
    )


class Memories:
    """Add, update, forget and restore memories of one vault."""

    def __init__(self, store: "MemoryStore") -> None:
        self.store = store
        self.root = store.root
        self.con = store.con
        self.indexer = store.reconciler
        self.folder = store.settings.memory_folder  # checked and normalised by load_settings
        #: Called with a note's vault path just before the writer checks that
        #: the note is still as last indexed and replaces it: the moment a
        #: person's save races the store's write. A test seam (the stateful
        #: mirror test edits the note here to get real conflicts); None in use.
        self.before_write: Callable[[str], None] | None = None

    # -- commands ------------------------------------------------------------

    def add(
        self,
        content: str,
        type_: str = "semantic",
        *,
        tags: tuple[str, ...] | list[str] = (),
        scope: str = "user",
        links: tuple[str, ...] | list[str] = (),
        source: str = "manual",
        allow_duplicate: bool = False,
        extra: dict[str, object] | None = None,
    ) -> WriteResult:
        """Create a memory and its note. A memory that says the same as a live
        one of the same type and scope (:mod:`memvault.store.consolidation.dedup`)
        is not added: the existing one is returned (``duplicate_of``), its
        strength and last-seen time bumped, unless ``allow_duplicate``.
        ``extra``: front-matter keys of the new note besides memvault's own."""
        type_ = canonical_type(type_)
        content, secrets_found = redact(content.strip())
        if not content:
            raise MemoryOpError("a memory needs some content")
        scope = scope.strip() or "user"
        key = content_key(type_, scope, content)
        if not allow_duplicate:
            from memvault.store.consolidation.dedup import find_duplicate

            found = find_duplicate(self.store, type_, scope, content)
            if found is not None:
                with write_transaction(self.con):
                    mem.bump_seen(self.con, found.id)
                return WriteResult(found.id, "duplicate_of", mem.trace_path(self.con, found.id),
                                   version=mem.current_version(self.con, found.id), redacted=secrets_found,
                                   warnings=redaction_warnings(secrets_found), reason=found.reason)
        trace_id = memory_id_for(self.con, key)
        now = rec.now_iso()
        clean_tags = _clean_tags(tags)
        trace = rec.TraceRow(
            id=trace_id, kind="memory", type=type_, title=content.splitlines()[0][:80], content=content,
            tags=clean_tags,
            metadata={"frontmatter": dict(extra or {}), "aliases": [], "related": list(links), "fm_tags": clean_tags},
            source=source, scope=scope, strength=DEFAULT_STRENGTH, created=now, updated=now, content_key=key,
        )
        target = self._new_note_path(type_, memory_filename(content, trace_id[2:10]))
        data = render_memory(doc_from_trace(trace)).encode("utf-8")
        self._commit(trace, "write", target, content_hash(data), lambda: rec.put_trace(self.con, trace))
        result = self.flush(trace_id) or WriteResult(trace_id, "added", target)
        result.action = "added" if result.conflict is None else result.action
        result.warnings += self._unresolved_links(trace_id)
        result.version, result.redacted = 1, secrets_found
        result.warnings[:0] = redaction_warnings(secrets_found)
        return result

    def create(self, trace: rec.TraceRow, path: str | None = None) -> WriteResult:
        """Write a memory made elsewhere (an import: its id, times, strength and
        front-matter kept) as a new note, by the same protocol as :meth:`add`
        (outbox, atomic write, conflict check). ``path`` (vault-relative) is
        used when no file is there yet, else a fresh name in the type's folder."""
        if path is None or (self.root / path).exists():
            path = self._new_note_path(trace.type, memory_filename(trace.content, trace.id[2:10]))
        data = render_memory(doc_from_trace(trace)).encode("utf-8")
        self._commit(trace, "write", path, content_hash(data), lambda: rec.put_trace(self.con, trace))
        result = self.flush(trace.id) or WriteResult(trace.id, "added", path)
        result.action = "added" if result.conflict is None else result.action
        result.warnings += self._unresolved_links(trace.id)
        return result

    def update(
        self,
        ref: str,
        *,
        content: str | None = None,
        tags: list[str] | None = None,
        type_: str | None = None,
        reason: str | None = None,
        expect_version: int | None = None,
        related: list[str] | None = None,
        created: str | None = None,
        strength: float | None = None,
    ) -> WriteResult:
        """Change a memory, keeping the previous version as superseded; a type
        change moves its note to the new type's folder. With
        ``expect_version``, refuse (:class:`.guard.VersionConflict`) unless the
        memory is still at that version once pending vault edits are in.
        ``related`` (its links), ``created`` and ``strength`` are what a merge
        gives the memory it keeps."""
        new_type = canonical_type(type_) if type_ is not None else None
        trace = self._live_memory(ref)
        trace, deleted_at = self._import_pending(trace)
        version = check_version(self.con, trace, expect_version)
        changed = replace(trace)
        secrets_found = 0
        if content is not None:
            content, secrets_found = redact(content.strip())
            if not content.strip():
                raise MemoryOpError("a memory needs some content")
            changed.content = content.strip()
        if tags is not None:
            changed.tags = _clean_tags(tags)
            changed.metadata = dict(changed.metadata, fm_tags=changed.tags)
        if new_type is not None:
            changed.type = new_type
        if related is not None:
            changed.metadata = dict(changed.metadata, related=list(related))
        if created is not None:
            changed.created = created
            changed.metadata = dict(changed.metadata, fm_created=created)
        if strength is not None:
            changed.strength = strength
        before = doc_from_trace(trace)
        after = doc_from_trace(changed)
        if (before.content, before.tags, before.type, before.related, before.created, before.strength) == (
            after.content, after.tags, after.type, after.related, after.created, after.strength
        ):
            if deleted_at is not None:  # no edit to win over the deletion
                raise MemoryOpError(
                    f"memory {trace.id} was deleted in the vault ({deleted_at}); `memvault restore {trace.id}` first"
                )
            return WriteResult(trace.id, "unchanged", mem.trace_path(self.con, trace.id), version=version,
                               redacted=secrets_found, warnings=redaction_warnings(secrets_found))
        changed.updated = rec.now_iso()
        changed.content_key = content_key(changed.type, changed.scope or "user", changed.content)
        if changed.content != trace.content:
            changed.title = changed.content.splitlines()[0][:80]
        warnings: list[str] = []
        current = mem.trace_path(self.con, trace.id)
        target = current
        if deleted_at is not None:
            # The note was deleted in the vault and nobody had told the index
            # yet: an edit beats a deletion, so the memory comes back with
            # the new text, where its note was (or in its new type's folder).
            changed.status, changed.reason = "active", None
            if changed.type == trace.type:
                target = free_path(self.root / deleted_at).relative_to(self.root).as_posix()
            else:
                target = self._new_note_path(changed.type, PurePosixPath(deleted_at).name)
            warnings.append(
                f"the note {deleted_at} had been deleted in the vault; the update wins "
                f"(an edit beats a deletion) and writes the memory back to {target}"
            )
        elif current is None or changed.type != trace.type:
            name = PurePosixPath(current).name if current else memory_filename(changed.content, trace.id[2:10])
            if current != f"{self.folder}/{changed.type}/{name}":  # already in that folder: stays put
                target = self._new_note_path(changed.type, name)
        existing = self._read_text(current) if current else None
        with write_transaction(self.con):
            snap = mem.stage_version(self.con, trace, reason)
        # The note names the version it replaced (``supersedes``), so the
        # chain can be followed from the vault too.
        changed.metadata = dict(changed.metadata, supersedes=snap.id)
        data = render_note(changed, existing).encode("utf-8")

        def index() -> None:
            mem.put_version(self.con, snap)
            rec.put_trace(self.con, changed)
            if created is not None:  # put_trace keeps a trace's creation time
                self.con.execute("UPDATE traces SET created = ? WHERE id = ?", (created, trace.id))
            if strength is not None:
                mem.set_strength(self.con, trace.id, strength)

        self._commit(changed, "write", target, content_hash(data), index)
        result = self.flush(trace.id) or WriteResult(trace.id, "updated", target)
        if result.conflict is None:
            result.action = "updated"
        result.warnings = redaction_warnings(secrets_found) + warnings + result.warnings
        result.version, result.redacted = mem.current_version(self.con, trace.id), secrets_found
        return result

    def forget(self, ref: str, reason: str | None = None) -> WriteResult:
        """Soft-delete a memory: the trace stays (``--include-deleted``), the
        note moves to the vault's ``.trash`` folder."""
        trace, deleted_at = self._import_pending(self._live_memory(ref))
        if deleted_at is not None:
            # Deleted in the vault a moment ago: already what forget asks for.
            return WriteResult(trace.id, "forgotten", None,
                               warnings=[f"the note {deleted_at} had already been deleted in the vault"])
        current = mem.trace_path(self.con, trace.id)
        gone = replace(trace, status="deleted", reason=reason or "forgotten")
        with write_transaction(self.con):
            mem.stage_deleted(self.con, gone, gone.reason or "forgotten")
        self._commit(gone, "trash", current, None,
                     lambda: rec.set_status(self.con, trace.id, "deleted", gone.reason))
        return self.flush(trace.id) or WriteResult(trace.id, "forgotten")

    def restore(self, ref: str) -> WriteResult:
        """Bring back a forgotten (or deleted-in-the-vault) memory and its note."""
        trace = find_trace(self.con, ref)
        if trace is None or trace.kind != "memory":
            raise MemoryOpError(f"no memory matches {ref!r}")
        if self.flush(trace.id) is not None:
            trace = rec.get_trace(self.con, trace.id) or trace
        if trace.status == "deleted" and not trace.metadata.get("trash_path"):
            # Deleted in the vault, not forgotten here: the note may be back
            # (restored from Obsidian's trash, moved) before we write a copy.
            self.indexer.sync()
            trace = rec.get_trace(self.con, trace.id) or trace
            if trace.status == "active":
                return WriteResult(trace.id, "restored", mem.trace_path(self.con, trace.id))
        if trace.status != "deleted":
            raise MemoryOpError(f"memory {trace.id} is {trace.status}, not deleted")
        with write_transaction(self.con):
            mem.clear_deleted(self.con, trace.id)
        self._commit(replace(trace, status="active", reason=None), "restore", None, None,
                     lambda: rec.set_status(self.con, trace.id, "active", None))
        return self.flush(trace.id) or WriteResult(trace.id, "restored")

    def history(self, ref: str) -> list[rec.TraceRow]:
        """The memory (or fact) and its earlier versions, newest first."""
        trace = find_trace(self.con, ref)
        if trace is None:
            raise MemoryOpError(f"no memory or fact matches {ref!r}")
        newer = mem.newer_versions(self.con, trace.id)
        head = newer[-1] if newer else trace
        return [head, *mem.versions(self.con, head.id)]

    def revert(self, snapshot: rec.TraceRow, path: str, data: bytes, *, drop_versions: Sequence[str] = ()) -> WriteResult:
        """Put a live memory back exactly as it was (an undo): its trace as in
        ``snapshot`` and its note as ``data`` at ``path``, dropping the
        versions the change being undone made. The writer's conflict check
        holds: a note edited meanwhile is kept, the reverted one goes beside it."""
        trace, deleted_at = self._import_pending(self._live_memory(snapshot.id))
        if deleted_at is not None:
            raise MemoryOpError(f"memory {trace.id} was deleted in the vault ({deleted_at}); nothing to revert")
        current = mem.trace_path(self.con, trace.id)
        back = replace(snapshot, path=current, status="active", reason=None)

        def index() -> None:
            for version_id in drop_versions:
                mem.drop_version(self.con, version_id)
            rec.put_trace(self.con, back)
            self.con.execute("UPDATE traces SET created = ? WHERE id = ?", (snapshot.created, trace.id))

        self._commit(back, "write", path, content_hash(data), index)
        if self.before_write is not None and current:
            self.before_write(current)
        if current and (self.root / current).exists():
            if content_hash((self.root / current).read_bytes()) != mem.synced_hash(self.con, current):
                return self._conflict(rec.get_trace(self.con, trace.id) or trace, current,
                                      "the note was edited in the vault meanwhile")
        mode = (self.root / current).stat().st_mode & 0o7777 if current and (self.root / current).exists() else None
        self._place(trace.id, current, path, data, mode)
        return WriteResult(trace.id, "reverted", path)

    def discard(self, ref: str) -> WriteResult:
        """Remove a memory the store made itself, note, trace and history (an
        undo of the run that made it). Refused when a person changed its note."""
        trace, _ = self._import_pending(self._live_memory(ref))
        path = mem.trace_path(self.con, trace.id)
        if trace.retrieval_count or len(mem.versions(self.con, trace.id)):
            raise MemoryOpError(f"memory {trace.id} was recalled or changed since it was made; forget it instead")
        if path and (self.root / path).exists():
            if self.before_write is not None:
                self.before_write(path)
            if content_hash((self.root / path).read_bytes()) != mem.synced_hash(self.con, path):
                raise MemoryOpError(f"memory {trace.id}: its note {path} was edited in the vault; forget it instead")
            (self.root / path).unlink()
            fsync_dir((self.root / path).parent)
            self.indexer.sync_paths([path])
        with write_transaction(self.con):
            mem.drop_memory(self.con, trace.id)
        return WriteResult(trace.id, "discarded", path)

    def _commit(
        self, trace: rec.TraceRow, action: str, path: str | None, digest: str | None, index: Callable[[], None]
    ) -> None:
        """Record a store-side change: the durable state (the outbox entry
        with the memory as it must be written) commits first, the index
        second. SQLite commits two attached databases one after the other,
        so a writer killed between them leaves the index behind the state,
        never ahead: :func:`~.rows.index_catch_up` levels it from the outbox."""
        with write_transaction(self.con):
            mem.put_outbox(self.con, trace, action, path, digest)
        with write_transaction(self.con):
            index()

    # -- mirroring -------------------------------------------------------------

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
                return self._trash(trace, current)
            if entry.action == "restore":
                return self._restore(trace)
            return self._write(trace, current, entry.expected_path or current)
        except OSError as exc:
            # The change is committed and its outbox entry untouched: the
            # write is retried later, and the person gets one line, not a
            # traceback.
            raise MemoryWriteError(self._write_failure(trace_id, entry, exc)) from None

    def _write_failure(self, trace_id: str, entry: mem.OutboxEntry, exc: OSError) -> str:
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

    def _write(self, trace: rec.TraceRow, current: str | None, target: str | None) -> WriteResult:
        if current and not (self.root / current).exists():
            moved_to = self._locate(trace.id)
            if moved_to and moved_to != current:
                target = moved_to if target == current else target
            current = moved_to
            trace = rec.get_trace(self.con, trace.id) or trace
        if target is None:
            target = self._new_note_path(trace.type, memory_filename(trace.content, trace.id[2:10]))
        existing: str | None = None
        mode = None
        if self.before_write is not None and current:
            self.before_write(current)
        if current and (self.root / current).exists():
            data = (self.root / current).read_bytes()
            if content_hash(data) != mem.synced_hash(self.con, current):
                return self._conflict(trace, current, "the note was edited in the vault meanwhile")
            existing = data.decode("utf-8", "replace")
            mode = (self.root / current).stat().st_mode & 0o7777
        new = render_note(trace, existing).encode("utf-8")
        if target != current and (self.root / target).exists() and (self.root / target).read_bytes() != new:
            # Someone created a file at the planned name meanwhile: never overwrite it.
            target = free_path(self.root / target).relative_to(self.root).as_posix()
        # An edit always beats a deletion: a note the person deleted while
        # the store changed it is written again.
        self._place(trace.id, current, target, new, mode)
        return WriteResult(trace.id, "written", target)

    def _place(self, trace_id: str, current: str | None, target: str, data: bytes, mode: int | None) -> None:
        """Write a note's new bytes at ``target`` atomically, remove it from
        ``current`` when it moved, confirm the outbox entry and index both."""
        atomic_write(self.root / target, data, mode=mode)
        if current and current != target and (self.root / current).exists():
            (self.root / current).unlink()
            fsync_dir((self.root / current).parent)
        with write_transaction(self.con):
            mem.clear_outbox(self.con, trace_id)
        self.indexer.sync_paths([target] + ([current] if current and current != target else []))

    def _trash(self, trace: rec.TraceRow, current: str | None) -> WriteResult:
        if self.before_write is not None and current:
            self.before_write(current)
        if current is None or not (self.root / current).exists():
            with write_transaction(self.con):
                mem.clear_outbox(self.con, trace.id)
            if current:
                self.indexer.sync_paths([current])
                self._set_deleted(trace, None, None)
            return WriteResult(trace.id, "forgotten", None)
        if content_hash((self.root / current).read_bytes()) != mem.synced_hash(self.con, current):
            return self._conflict(trace, current, "forget cancelled: the note was edited in the vault meanwhile")
        trash = free_path(self.root / TRASH / PurePosixPath(current).name)
        atomic_move(self.root / current, trash)
        trash_rel = trash.relative_to(self.root).as_posix()
        with write_transaction(self.con):
            mem.clear_outbox(self.con, trace.id)
        self.indexer.sync_paths([current])
        self._set_deleted(trace, current, trash_rel)
        return WriteResult(trace.id, "forgotten", trash_rel)

    def _set_deleted(self, trace: rec.TraceRow, trashed_from: str | None, trash_path: str | None) -> None:
        """Record the forget reason and where the note went (the indexer's
        own deletion handling only knows the file disappeared)."""
        where = {"trashed_from": trashed_from, "trash_path": trash_path} if trashed_from else {}
        with write_transaction(self.con):
            self.con.execute("UPDATE traces SET path = NULL WHERE id = ?", (trace.id,))
            mem.mark_deleted(self.con, trace.id, trace.reason or "forgotten", **where)

    def _restore(self, trace: rec.TraceRow) -> WriteResult:
        origin = trace.metadata.get("trashed_from") or (
            f"{self.folder}/{trace.type}/{memory_filename(trace.content, trace.id[2:10])}"
        )
        target = free_path(self.root / origin)
        trash = trace.metadata.get("trash_path")
        if trash and (self.root / trash).is_file():
            text = (self.root / trash).read_bytes().decode("utf-8", "replace")
            # The trash copy may predate the note's id; give it the id so the
            # restored note is recognised as this memory.
            atomic_write(target, edit_frontmatter(text, {"id": trace.id}).encode("utf-8"))
            (self.root / trash).unlink()
        else:
            atomic_write(target, render_memory(doc_from_trace(trace)).encode("utf-8"))
        rel = target.relative_to(self.root).as_posix()
        with write_transaction(self.con):
            mem.clear_outbox(self.con, trace.id)
        self.indexer.sync_paths([rel])
        return WriteResult(trace.id, "restored", rel)

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
        beside = free_path((self.root / current).with_name(name))
        atomic_write(beside, store_text.encode("utf-8"))
        rel = beside.relative_to(self.root).as_posix()
        with write_transaction(self.con):
            mem.clear_outbox(self.con, trace.id)
            mem.add_conflict(self.con, trace.id, current, rel, "edit", detail)
        # Importing the person's version makes it the live trace again (an
        # edit beats a deletion, too); ours stays readable in the conflict note.
        self.indexer.sync_paths([current, rel])
        return WriteResult(trace.id, "conflict", current, conflict=detail, conflict_path=rel)

    # -- helpers ---------------------------------------------------------------

    def _live_memory(self, ref: str) -> rec.TraceRow:
        trace = find_trace(self.con, ref)
        if trace is None:
            raise MemoryOpError(f"no memory matches {ref!r}")
        # Finish a write a crashed writer left behind before starting another,
        # so the outbox never holds two changes for one memory.
        if self.flush(trace.id) is not None:
            trace = rec.get_trace(self.con, trace.id) or trace
        if trace.kind != "memory":
            raise MemoryOpError(f"{ref!r} is {'a fact' if trace.kind == 'fact' else 'an ordinary note'}, not a memory")
        if trace.status == "superseded":
            raise MemoryOpError(f"{trace.id} is an old version; update {trace.metadata.get('version_of', 'the memory')} instead")
        if trace.status == "deleted":
            raise MemoryOpError(f"memory {trace.id} is deleted; `memvault restore {trace.id}` first")
        return trace

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

    def _unresolved_links(self, trace_id: str) -> list[str]:
        return [
            f"link [[{e.target_name}]] does not match any note yet (kept; it resolves when the note appears)"
            for e in rec.edges_from(self.con, trace_id)
            if e.kind == "related" and e.target_path is None
        ]


def _clean_tags(tags: tuple[str, ...] | list[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for tag in tags:
        t = tag.strip().lstrip("#").strip()
        if t and " " not in t and t.lower() not in seen:
            seen.add(t.lower())
            out.append(t)
    return out


#: The last failure logged for each memory whose write keeps failing, so a
#: daemon retrying every batch logs it once, not every batch.
_reported: dict[str, str] = {}


def flush_outbox(store: "MemoryStore", older_than: float = 30.0, *, errors: list[str] | None = None) -> list[WriteResult]:
    """Finish store-side writes whose writer died (older than ``older_than`` s).

    A write that fails again stays in the outbox for the next try; its one-line
    reason goes to ``errors`` when given, else to the log (once per memory and
    reason). Returns the writes that were finished.
    """
    memories = store.memories
    results = []
    for entry in mem.stale_outbox(store.con, older_than):
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
