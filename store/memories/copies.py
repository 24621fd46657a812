"""Settling a conflict copy: take one side, keep the other as an earlier version.

A conflict copy is a second version of a note: a sync tool's
(``Note.sync-conflict-…-DEVICE.md``, Dropbox's and Nextcloud's
"conflicted copy", see :mod:`memvault.vault_io.sync_conflicts`), or
memvault's own ``Note (conflict …).md`` (``conflict_of:`` in its
front-matter: the store's version written beside a person's edit).
``memvault conflicts --copy PATH --take note|copy`` settles one, and nothing
is dropped:

- the note belongs to a memory: taking the copy updates the memory to the
  copy's text and tags (the note's text becomes an earlier version, as any
  update keeps it); keeping the note records the copy's text as an earlier
  version of the memory (``history`` shows it, with where it came from);
- an ordinary note: taking the copy puts the copy's text in the note's
  place and moves the note's own file to ``.trash/``;
- either way the copy file then goes to the vault's ``.trash/``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from memvault.store.answers.review import CopySides, SettledCopy
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.db.rows import first
from memvault.store.memories import rows as mem
from memvault.store.memories.writer import MemoryOpError
from memvault.vault_io.gate import Kind
from memvault.vault_io.memory_note import read_memory
from memvault.vault_io.parser import parse_note
from memvault.vault_io.sync_conflicts import sync_conflict

if TYPE_CHECKING:
    from memvault.store.context import StoreContext
    from memvault.store.index.reconcile import Indexer
    from memvault.store.memories.mirror import Memories

SIDES = ("note", "copy")


def describe_copy(ctx: StoreContext, copy_path: str) -> CopySides:
    """What a conflict copy is: the note it belongs to, the memory (if any),
    whose version each side holds, and both texts."""
    root, con = ctx.root, ctx.con
    rel = _relative(root, copy_path)
    if not (root / rel).is_file():
        raise MemoryOpError(f"no conflict copy at {rel}")
    copy = parse_note(rel, (root / rel).read_bytes())
    synced = sync_conflict(rel)
    memory_id = copy.frontmatter.get("conflict_of") if synced is None else None
    if synced is None and not isinstance(memory_id, str):
        raise MemoryOpError(f"{rel} is not a conflict copy (no sync tool's mark in its name, no conflict_of)")
    note: str | None
    if synced is not None:
        note = synced.original
        row = first(con, "SELECT trace_id FROM files WHERE path = ?", (note,))
        memory_id = row[0] if row else None
        copy_side = synced.describe()
        note_side = f"the version {synced.tool} kept"
    else:
        note = mem.trace_path(con, str(memory_id))
        copy_side = "the store's version memvault wrote beside an edit"
        note_side = "the edited note"
    trace = rec.get_trace(con, str(memory_id)) if memory_id else None
    if trace is not None and (trace.kind != "memory" or trace.status != "active"):
        trace = None
    held = parse_note(note, (root / note).read_bytes()) if note and (root / note).is_file() else None
    return CopySides(
        copy=rel, note=note, memory=trace.id if trace else None, copy_side=copy_side, note_side=note_side,
        copy_content=read_memory(copy.frontmatter, copy.body).content,
        note_content=read_memory(held.frontmatter, held.body).content if held is not None else None,
    )


def settle_copy(
    ctx: StoreContext, memories: Memories, reconciler: Indexer, copy_path: str, take: str
) -> SettledCopy:
    """Take one side of a conflict copy (``take``: "note" or "copy"), keep
    the other as an earlier version (a memory, through ``memories``) or in
    ``.trash/`` (an ordinary note), move the copy to ``.trash/`` and have
    ``reconciler`` index both paths. Returns what was done."""
    if take not in SIDES:
        raise MemoryOpError(f"--take must be one of {', '.join(SIDES)}")
    info = describe_copy(ctx, copy_path)
    root, con, rel, note = ctx.root, ctx.con, info.copy, info.note
    copy = parse_note(rel, (root / rel).read_bytes())
    doc = read_memory(copy.frontmatter, copy.body)
    version: int | None = None
    kept_as: str | None = None
    note_trashed: str | None = None
    if info.memory is not None:
        memory_id = info.memory
        if take == "copy":
            result = memories.update(
                memory_id, content=doc.content, tags=doc.tags,
                reason=f"took {info.copy_side} ({rel}); this was {info.note_side}")
            version = result.version
        else:
            trace = rec.get_trace(con, memory_id)
            assert trace is not None
            if mem.meaningfully_changed(trace, replace(trace, content=doc.content, metadata=dict(
                    trace.metadata, fm_tags=doc.tags))):
                other = replace(trace, content=doc.content, tags=doc.tags,
                                metadata=dict(trace.metadata, fm_tags=doc.tags))
                with write_transaction(con):
                    snap = mem.stage_version(con, other, f"not taken: {info.copy_side} ({rel})")
                with write_transaction(con):
                    mem.put_version(con, snap)
                kept_as = snap.id
    elif take == "copy":
        data = (root / rel).read_bytes()
        if note:
            ctx.gate.check(note, Kind.NOTE)  # before anything moves
        if note and (root / note).is_file():
            note_trashed = ctx.gate.to_trash(note)
        # The note's name is free only while nobody writes there: a file a
        # person or a sync tool put there after the note went to the trash is
        # theirs, never replaced (the copy then stays where it is).
        if note and not ctx.gate.create(note, data, Kind.NOTE):
            raise MemoryOpError(f"{note}: a file appeared there while the copy was being taken; nothing was "
                                f"replaced, the copy stays at {rel} and the note is in .trash/")
    trash = ctx.gate.to_trash(rel)
    with write_transaction(con):
        con.execute("DELETE FROM state.conflicts WHERE conflict_path = ?", (rel,))
    reconciler.sync_paths([p for p in (rel, note) if p])
    return SettledCopy(
        copy=rel, note=note, memory=info.memory, copy_side=info.copy_side, note_side=info.note_side,
        copy_content=info.copy_content, note_content=info.note_content, took=take, version=version,
        note_trashed=note_trashed, kept_as=kept_as, copy_trashed=trash,
    )


def _relative(root: Path, path: str) -> str:
    """``path`` relative to the vault ``root`` (refused when outside it)."""
    p = Path(path)
    if p.is_absolute():
        try:
            return p.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            raise MemoryOpError(f"{path} is outside the vault") from None
    return PurePosixPath(path).as_posix()
