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

What a change keeps in the durable state besides the trace (the version
it supersedes, a forget's record) commits in step 2's transaction too, so a
writer killed before the outbox entry leaves no trace of the change at all.

A writer that dies between 2 and 4 leaves the outbox entry behind;
:func:`flush_outbox` (run by ``sync`` and by the daemon) finishes it, and
because step 3 is idempotent (identical bytes are not rewritten) finishing
twice is harmless. The entry is the record of what the dead writer meant and
how far it got: a note at its path with its hash is that writer's own write
(a move then only removes the old note, unless a person edited it since); a
restored note is found by its ``id``, and a note already moved to ``.trash``
is found there by its ``id`` and recorded with the forget's own reason. So
a killed write is finished, never done a second time beside the first. The
watcher recognises its own writes by the outbox's (path, hash), so one store
change is one file write and no feedback loop.
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

Versions: a memory's version is what its note says: the ``version`` counter
memvault writes with each of its own changes, plus one when the text, type or
tags no longer match the ``version_hash`` written with it (edited in the vault
since, on this device or another). A note without a counter (written before
memvault kept one, or by hand) is at 1 plus the earlier versions this device
kept, until memvault's next write of it. :meth:`Memories.update` with
``expect_version`` refuses (:class:`.guard.VersionConflict`, carrying the current
text) when the memory moved on since that version was read, after first
importing any edit a person saved meanwhile.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from memvault.store.answers.write import WriteResult
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.index.classify import memory_key
from memvault.store.index.lookup import find_trace
from memvault.store.memories import rows as mem
from memvault.store.memories.guard import check_size, check_version, redaction_warnings
from memvault.store.memories.memtypes import canonical_type
from memvault.store.memories.writer import (
    EDITED,
    TRASH,
    MemoryOpError,
    MemoryWriteError,
    NoteWriter,
    doc_from_trace,
    flush_outbox,
    render_note,
)
from memvault.vault_io.atomic import free_path
from memvault.vault_io.gate import Kind
from memvault.vault_io.markdown import check_tag
from memvault.vault_io.memory_note import check_related, memory_filename, render_memory
from memvault.vault_io.note import content_hash
from memvault.vault_io.secrets import redact

#: Strength a new memory starts with (0-1); recall nudges it up over time.
DEFAULT_STRENGTH = 0.5

# The writer's names are the mirror's public names too.
__all__ = [
    "DEFAULT_STRENGTH", "TRASH", "Memories", "MemoryOpError", "MemoryWriteError", "WriteResult",
    "doc_from_trace", "flush_outbox", "memory_id_for", "render_note",
]

if TYPE_CHECKING:
    import apsw

    from memvault.store.consolidation import at_write
    from memvault.store.consolidation.dedup import VectorsElsewhere
    from memvault.store.context import StoreContext
    from memvault.store.index.reconcile import Indexer


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


class Memories(NoteWriter):
    """Add, update, forget and restore memories of one vault."""

    def __init__(
        self, ctx: StoreContext, reconciler: Indexer, vectors_elsewhere: VectorsElsewhere | None = None
    ) -> None:
        """The mirror of ``ctx``'s vault: ``reconciler`` indexes the notes it
        writes; ``vectors_elsewhere`` embeds an ``add``'s neighbours in a
        process whose model is loaded (None: the model is loaded here)."""
        self.ctx = ctx
        self.root = ctx.root
        self.gate = ctx.gate
        self.con = ctx.con
        self.indexer = reconciler
        self.vectors_elsewhere = vectors_elsewhere
        self.folder = ctx.settings.memory_folder  # checked and normalised by load_settings
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
        key: str | None = None,
    ) -> WriteResult:
        """Create a memory and its note. A memory that is certainly the same claim
        as a live one of the same type and scope (the same text up to case,
        punctuation and inflection: :mod:`memvault.store.consolidation.dedup`)
        is not added: the existing one is returned (``duplicate_of``), its
        strength and last-seen time bumped, unless ``allow_duplicate``. A new
        memory that merely resembles live ones is added, and they are listed
        in ``similar_to``.
        ``extra``: front-matter keys of the new note besides memvault's own;
        ``key``: the slot it fills (checked by the caller: :mod:`.keys`)."""
        slot = key  # (``key`` names the dedup key below)
        type_ = canonical_type(type_)
        check_size(content)
        clean_tags = _clean_tags(tags)  # a bad tag is refused before anything, a duplicate's bump too
        links = check_related(links)  # so is a link the note could not hold as itself
        content, secrets_found = redact(content.strip())
        if not content:
            raise MemoryOpError("a memory needs some content")
        scope = scope.strip() or "user"
        key = memory_key(type_, scope, content)
        from memvault.store.consolidation.dedup import find_duplicate, find_similar, live_block

        block = live_block(self.ctx, type_, scope)  # read once: the duplicate test and the neighbours
        if not allow_duplicate:
            found = find_duplicate(self.ctx, type_, scope, content, rows=block)
            if found is not None:
                with write_transaction(self.con):
                    mem.bump_seen(self.con, found.id)
                return WriteResult(found.id, "duplicate_of", mem.trace_path(self.con, found.id),
                                   version=mem.current_version(self.con, found.id), redacted=secrets_found,
                                   warnings=redaction_warnings(secrets_found), reason=found.reason)
        # Looked up before the new memory exists, so it is never its own neighbour.
        cosines: dict[str, float] = {}
        similar = [s.as_dict() for s in find_similar(self.ctx, type_, scope, content, rows=block,
                                                     vectors_elsewhere=self.vectors_elsewhere, cosines=cosines)]
        from memvault.store.consolidation import at_write

        rivals = at_write.find(self.ctx, type_, scope, content, cosines)  # stored all the same: flagged below
        trace_id = memory_id_for(self.con, key)
        now = rec.now_iso()
        trace = rec.TraceRow(
            id=trace_id, kind="memory", type=type_, title=content.splitlines()[0][:80], content=content,
            tags=clean_tags,
            metadata={"frontmatter": dict(extra or {}), "aliases": [], "related": list(links), "fm_tags": clean_tags},
            source=source, scope=scope, strength=DEFAULT_STRENGTH, created=now, updated=now, content_key=key,
        )
        if slot is not None:
            trace.metadata.update(key=slot, fm_updated=now)
        mem.stamp_version(trace, 1)  # the note carries its version: the same on every device
        target = self._new_note_path(type_, memory_filename(content, trace_id[2:10]))
        self.gate.check(target, Kind.MEMORY)  # a memory folder that leads elsewhere: refused before anything
        data = render_memory(doc_from_trace(trace)).encode("utf-8")
        self._commit(trace, "write", target, content_hash(data), lambda: rec.put_trace(self.con, trace))
        result = self.flush(trace_id) or WriteResult(trace_id, "added", target)
        result.action = "added" if result.conflict is None else result.action
        result.warnings += self._unresolved_links(trace_id)
        result.version, result.redacted, result.similar_to = 1, secrets_found, similar
        result.warnings[:0] = redaction_warnings(secrets_found)
        self._contradicts(result, trace_id, rivals)
        return result

    def _contradicts(self, result: WriteResult, trace_id: str, rivals: "list[at_write.Contradicts]") -> None:
        """Flag what a new claim contradicts at once (:mod:`..consolidation.at_write`) and say so in the answer."""
        from memvault.store.consolidation import at_write

        at_write.record(self.con, trace_id, rivals)
        result.contradicts = [r.as_dict() for r in rivals]

    def create(self, trace: rec.TraceRow, path: str | None = None) -> WriteResult:
        """Write a memory made elsewhere (an import: its id, times, strength and
        front-matter kept) as a new note, by the same protocol as :meth:`add`
        (outbox, atomic write, conflict check). ``path`` (vault-relative) is
        used when no file is there yet and it is a memory note's place
        (``<memory folder>/<type>/NAME.md``), else a fresh name in the type's
        folder (with a warning when ``path`` was no such place)."""
        warnings = []
        if path is not None and not self.gate.allows(path, Kind.MEMORY):
            warnings.append(f"{path} is not a memory note's place ({self.folder}/<type>/NAME.md); written elsewhere")
            path = None
        if path is None or (self.root / path).exists():
            path = self._new_note_path(trace.type, memory_filename(trace.content, trace.id[2:10]))
        self.gate.check(path, Kind.MEMORY)
        data = render_memory(doc_from_trace(trace)).encode("utf-8")
        self._commit(trace, "write", path, content_hash(data), lambda: rec.put_trace(self.con, trace))
        result = self.flush(trace.id) or WriteResult(trace.id, "added", path)
        result.action = "added" if result.conflict is None else result.action
        result.warnings += warnings + self._unresolved_links(trace.id)
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
        key: str | None = None,
    ) -> WriteResult:
        """Change a memory, keeping the previous version as superseded; a type
        change moves its note to the new type's folder. With
        ``expect_version``, refuse (:class:`.guard.VersionConflict`) unless the
        memory is still at that version once pending vault edits are in.
        ``related`` (its links), ``created`` and ``strength`` are what a merge
        gives the memory it keeps; ``key`` the slot it fills (:mod:`.keys`)."""
        trace = self._live_memory(ref)
        trace, deleted_at = self._import_pending(trace)
        version = check_version(self.con, trace, expect_version)
        changed, secrets_found = _changed(trace, content=content, tags=tags, type_=type_, related=related,
                                          created=created, strength=strength, key=key)
        if _note_form(trace) == _note_form(changed):
            if deleted_at is not None:  # no edit to win over the deletion
                raise MemoryOpError(
                    f"memory {trace.id} was deleted in the vault ({deleted_at}); `memvault restore {trace.id}` first"
                )
            return WriteResult(trace.id, "unchanged", mem.trace_path(self.con, trace.id), version=version,
                               redacted=secrets_found, warnings=redaction_warnings(secrets_found))
        changed.updated = rec.now_iso()
        changed.content_key = memory_key(changed.type, changed.scope or "user", changed.content)
        if changed.content != trace.content:
            changed.title = changed.content.splitlines()[0][:80]
        # The next version, as the note will say (every device reads it from there).
        mem.stamp_version(changed, version + 1)
        current = mem.trace_path(self.con, trace.id)
        target, warnings = self._update_target(trace, changed, current, deleted_at)
        if target is not None and target != current:
            self.gate.check(target, Kind.NOTE)  # its new folder leads elsewhere: refused before anything
        existing = self._read_text(current) if current else None

        def index() -> None:
            mem.put_version(self.con, snap)
            rec.put_trace(self.con, changed)
            if created is not None:  # put_trace keeps a trace's creation time
                self.con.execute("UPDATE traces SET created = ? WHERE id = ?", (created, trace.id))
            if strength is not None:
                mem.set_strength(self.con, trace.id, strength)

        # The version commits with the outbox entry (what _commit does for
        # the other changes): staged alone, a writer killed before the entry
        # would leave a version equal to the live text, and a version number
        # one ahead of the memory's.
        with write_transaction(self.con):
            snap = mem.stage_version(self.con, trace, reason)
            if deleted_at is not None:  # the update brings the memory back: its deletion ends
                mem.clear_deleted(self.con, trace.id)
            # The note names the version it replaced (``supersedes``), so the
            # chain can be followed from the vault too.
            changed.metadata = dict(changed.metadata, supersedes=snap.id)
            data = render_note(changed, existing).encode("utf-8")
            mem.put_outbox(self.con, changed, "write", target, content_hash(data))
        rivals = self._rivals(changed) if content is not None and changed.content != trace.content else None
        self._index(index)
        result = self.flush(trace.id) or WriteResult(trace.id, "updated", target)
        if result.conflict is None:
            result.action = "updated"
        result.warnings = redaction_warnings(secrets_found) + warnings + result.warnings
        result.version, result.redacted = mem.current_version(self.con, trace.id), secrets_found
        if rivals is not None:
            self._contradicts(result, trace.id, rivals)
        return result

    def _rivals(self, changed: rec.TraceRow) -> "list[at_write.Contradicts]":
        """What a memory's new text contradicts among the other live claims of its scope."""
        from memvault.store.consolidation import at_write
        from memvault.store.consolidation.dedup import find_similar
        from memvault.store.consolidation.rules import CLAIM_TYPES

        scope = changed.scope or "user"
        if changed.type not in CLAIM_TYPES:
            return []
        cosines: dict[str, float] = {}
        find_similar(self.ctx, changed.type, scope, changed.content, vectors_elsewhere=self.vectors_elsewhere,
                     cosines=cosines)
        return at_write.find(self.ctx, changed.type, scope, changed.content, cosines, exclude=changed.id)

    def _update_target(
        self, trace: rec.TraceRow, changed: rec.TraceRow, current: str | None, deleted_at: str | None
    ) -> tuple[str | None, list[str]]:
        """Where an updated memory's note goes, and what to tell the person."""
        warnings: list[str] = []
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
            # A note keeps its file name when its text changes: the name is the
            # note's identity in Obsidian (links, embeds, an open tab, bookmarks,
            # canvases all name it), and memvault edits no note of yours to
            # follow a rename. A type change moves it, name and all.
            name = PurePosixPath(current).name if current else memory_filename(changed.content, trace.id[2:10])
            if current != f"{self.folder}/{changed.type}/{name}":  # already in that folder: stays put
                target = self._new_note_path(changed.type, name)
        return target, warnings

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
        self._commit(gone, "trash", current, None,
                     lambda: rec.set_status(self.con, trace.id, "deleted", gone.reason),
                     stage=lambda: mem.stage_deleted(self.con, gone, gone.reason or "forgotten"))
        return self.flush(trace.id) or WriteResult(trace.id, "forgotten")

    def restore(self, ref: str) -> WriteResult:
        """Bring back a forgotten (or deleted-in-the-vault) memory and its note."""
        trace = find_trace(self.con, ref)
        if trace is None or trace.kind != "memory":
            raise no_match(ref)
        finished = self.flush(trace.id)
        if finished is not None:
            trace = rec.get_trace(self.con, trace.id) or trace
            if finished.action == "restored" and trace.status == "active":
                return finished  # a restore a dead writer left, done now: what was asked
        if trace.status == "deleted" and not trace.metadata.get("trash_path"):
            # Deleted in the vault, not forgotten here: the note may be back
            # (restored from Obsidian's trash, moved) before we write a copy.
            self.indexer.sync()
            trace = rec.get_trace(self.con, trace.id) or trace
            if trace.status == "active":
                return WriteResult(trace.id, "restored", mem.trace_path(self.con, trace.id))
        if trace.status != "deleted":
            raise MemoryOpError(f"memory {trace.id} is {trace.status}, not deleted")
        self._commit(replace(trace, status="active", reason=None), "restore", None, None,
                     lambda: rec.set_status(self.con, trace.id, "active", None),
                     stage=lambda: mem.clear_deleted(self.con, trace.id))
        return self.flush(trace.id) or WriteResult(trace.id, "restored")

    def history(self, ref: str) -> list[rec.TraceRow]:
        """The memory (or fact) and its earlier versions, newest first."""
        trace = find_trace(self.con, ref)
        if trace is None:
            raise no_match(ref, "memory or fact")
        newer = mem.newer_versions(self.con, trace.id)
        head = newer[-1] if newer else trace
        if head.kind == "memory":
            return [head, *mem.state_versions(self.con, head.id)]
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

        self.gate.check(path, Kind.NOTE)  # where the undo puts it: a visible note, refused before anything
        self._commit(back, "write", path, content_hash(data), index)
        if self.before_write is not None and current:
            self.before_write(current)
        expected = None
        if current and (self.root / current).exists():
            expected = content_hash((self.root / current).read_bytes())
            if expected != mem.synced_hash(self.con, current):
                return self._conflict(rec.get_trace(self.con, trace.id) or trace, current, EDITED)
        mode = (self.root / current).stat().st_mode & 0o7777 if current and (self.root / current).exists() else None
        if not self._place(trace.id, current, path, data, mode, expected):
            assert current is not None  # only a note that was there can have changed
            return self._conflict(rec.get_trace(self.con, trace.id) or trace, current, EDITED)
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
            synced = mem.synced_hash(self.con, path)
            if content_hash((self.root / path).read_bytes()) != synced \
                    or not self.gate.remove_if_unchanged(path, synced or ""):
                raise MemoryOpError(f"memory {trace.id}: its note {path} was edited in the vault; forget it instead")
            self.indexer.sync_paths([path])
        with write_transaction(self.con):
            mem.drop_memory(self.con, trace.id)
        return WriteResult(trace.id, "discarded", path)

    # -- mirroring -------------------------------------------------------------

    # -- helpers ---------------------------------------------------------------

    def _live_memory(self, ref: str) -> rec.TraceRow:
        trace = find_trace(self.con, ref)
        if trace is None:
            raise no_match(ref)
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

    def _unresolved_links(self, trace_id: str) -> list[str]:
        return [
            f"link [[{e.target_name}]] does not match any note yet (kept; it resolves when the note appears)"
            for e in rec.edges_from(self.con, trace_id)
            if e.kind == "related" and e.target_path is None
        ]


def _clean_tags(tags: tuple[str, ...] | list[str]) -> list[str]:
    """The tags, each as Obsidian reads it, once (case-insensitively); a tag
    Obsidian would not read ("two words", "1984") is a usage error, never
    silently dropped. Blank entries are nothing to refuse."""
    out: list[str] = []
    seen: set[str] = set()
    for tag in tags:
        if not tag.strip().lstrip("#").strip():
            continue
        t = check_tag(tag)
        if t.lower() not in seen:
            seen.add(t.lower())
            out.append(t)
    return out


def no_match(ref: str, what: str = "memory") -> MemoryOpError:
    """The error for a ref nothing matches, naming what it looks like (an
    ``f-`` id is a fact, however the command reads it)."""
    if ref.strip().startswith("f-"):
        what = "fact"
    return MemoryOpError(f"no {what} matches {ref!r}")


def _changed(
    trace: rec.TraceRow, *, content: str | None, tags: list[str] | None, type_: str | None,
    related: list[str] | None, created: str | None, strength: float | None, key: str | None = None,
) -> tuple[rec.TraceRow, int]:
    """A copy of ``trace`` with the given changes (content redacted), and
    how many secrets the redaction replaced."""
    changed = replace(trace)
    secrets_found = 0
    if content is not None:
        check_size(content)
        content, secrets_found = redact(content.strip())
        if not content.strip():
            raise MemoryOpError("a memory needs some content")
        changed.content = content.strip()
    if tags is not None:
        changed.tags = _clean_tags(tags)
        changed.metadata = dict(changed.metadata, fm_tags=changed.tags)
    if type_ is not None:
        changed.type = canonical_type(type_)
    if related is not None:
        changed.metadata = dict(changed.metadata, related=list(related))
    if created is not None:
        changed.created = created
        changed.metadata = dict(changed.metadata, fm_created=created)
    if strength is not None:
        changed.strength = strength
    if key is not None:
        changed.metadata = dict(changed.metadata, key=key)
    return changed, secrets_found


def _note_form(trace: rec.TraceRow) -> tuple[object, ...]:
    """What of a memory its note shows: an update that leaves it equal changes nothing."""
    doc = doc_from_trace(trace)
    return (doc.content, doc.tags, doc.type, doc.related, doc.created, doc.strength, doc.key)
