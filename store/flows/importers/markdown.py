"""A folder of Markdown notes with front-matter, copied in as memory notes.

Every ``.md`` file under the folder (or one file) becomes a memory: its
body is the content (a trailing ``## Related`` list of links stays a Related
section), its front-matter gives ``id`` (kept when free), ``type`` (else the
folder it sits in when that names a type, else ``memory:``, else semantic),
``scope``, ``tags``, ``strength``, ``created``, ``updated`` and ``source``;
other keys are kept. The note keeps its file name, under the type's folder.
Keyed by its ``id``, else its path in the folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from memvault.store.flows.importers import Entry, Item, MemoryItem, Progress, Skip
from memvault.store.flows.importers.stream import ImportFormatError, Member, members
from memvault.store.memories.memtypes import canonical_type, maybe_type
from memvault.vault_io.memory_note import read_memory
from memvault.vault_io.parser import parse_note

#: Front-matter keys that say what a note is to memvault, not what it holds.
_BOOKKEEPING = {"memory", "memory_source", "conflict_of", "session_id"}


def read(path: Path, progress: Progress | None = None) -> Iterator[Entry]:
    """Entries for every note of the folder."""
    found = members(path, lambda rel: rel.lower().endswith(".md") and not rel.startswith(".trash/"))
    if not found:
        raise ImportFormatError(f"{path}: no .md notes in it")
    root = path if path.is_dir() else path.parent
    for n, member in enumerate(found, 1):
        rel = Path(member.name).relative_to(root).as_posix() if path.is_dir() else Path(member.name).name
        yield Entry.of(rel, _convert, member, rel)
        if progress is not None:
            progress(n, len(found))


def _convert(member: Member, rel: str) -> list[Item]:
    with member.opener() as fh:
        note = parse_note(rel, fh.read())
    if note.undecodable or (note.error and "front-matter" in note.error):
        # Bytes that are not UTF-8 would become U+FFFD in the new memory for good.
        raise ImportFormatError(note.error or "not valid UTF-8")
    fm = note.frontmatter
    if "conflict_of" in fm or "session_id" in fm:
        return [Skip("a conflict copy or session note, not a memory note")]
    doc = read_memory(fm, note.body)
    if not doc.content.strip():
        raise ImportFormatError("the note has no content")
    parts = PurePosixPath(rel).parts
    type_ = (canonical_type(doc.type) if doc.type else None) or next(
        (t for t in (maybe_type(p) for p in reversed(parts[:-1])) if t), None) or maybe_type(fm.get("memory")) or "semantic"
    return [MemoryItem(
        source="markdown", key=doc.id or rel, content=doc.content, type=type_, tags=list(doc.tags), scope=doc.scope,
        created=doc.created or None, updated=doc.updated or None,
        strength=doc.strength, origin=doc.source if doc.source and doc.source != "vault" else "import:markdown",
        related=list(doc.related), id=doc.id or None, path=f"{type_}/{parts[-1]}",
        extra={k: v for k, v in doc.extra.items() if k not in _BOOKKEEPING},
    )]
