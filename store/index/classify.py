"""What a parsed note is to the index: an ordinary note or a memory, and its rows.

A memory note is any note under the memory folder (``Memory/`` by default)
or one whose front-matter says ``memory: <type>``. Its type comes from the
front-matter ``type``, else from its folder (``Memory/procedural/...``),
else from the ``memory:`` value, else ``semantic``. Everything else is an
ordinary note of type ``note``.

A session note (front-matter ``session_id``, written by ``memvault ingest``
and the conversation importers under ``<memory folder>/episodic/sessions/``)
is an ordinary note and a memory source, never a memory.

A conflict copy (front-matter ``conflict_of: <id>``, written beside a note a
person changed while the store changed it too, or a file-sync tool's copy
named like ``Note.sync-conflict-…md``, see :mod:`memvault.vault_io.sync_conflicts`)
is never a memory, wherever it lies: it holds the store's side of a clash for the person to merge, and
as a memory it would be a second live copy of one (or bring back text that
was forgotten). It is indexed as an ordinary note, so it stays searchable.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from copy import copy
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from memvault.store.db import records as rec
from memvault.store.index.event_time import time_metadata
from memvault.store.memories.memtypes import NOTE_TYPE, maybe_type
from memvault.vault_io.memory_note import note_version, read_memory, related_section, text_fingerprint
from memvault.vault_io.note import ParsedNote
from memvault.vault_io.resolve import LinkResolver, Resolution, link_key
from memvault.vault_io.scan import FileStat
from memvault.vault_io.secrets import redact, redact_tree
from memvault.vault_io.session_note import is_session_note
from memvault.vault_io.sync_conflicts import sync_conflict

DEFAULT_MEMORY_TYPE = "semantic"


def iso_from_ns(ns: int) -> str:
    """A file mtime in nanoseconds as an ISO 8601 UTC timestamp."""
    return datetime.fromtimestamp(ns / 1e9, timezone.utc).replace(microsecond=0).isoformat()


def content_key(*parts: object) -> str:
    """``sha256:<hex>`` of the parts joined by NUL (None as ""): the key of
    content without an id of its own (an imported item, a transcript turn)
    and, through :func:`memory_key`, of a memory."""
    seed = "\x00".join("" if p is None else str(p) for p in parts)
    return "sha256:" + hashlib.sha256(seed.encode("utf-8")).hexdigest()


def memory_key(type_: str, scope: str, content: str) -> str:
    """The dedup key of a memory (the ``content_key`` column of its trace):
    same type, scope and (whitespace-normalised, case-folded) content means
    the same memory. :func:`content_key` of the three, as bare hex."""
    return content_key(type_, scope, " ".join(content.split()).casefold()).removeprefix("sha256:")


def in_memory_folder(path: str, memory_folder: str) -> bool:
    """Whether ``path`` lies under the memory folder."""
    folder = memory_folder.strip("/")
    return bool(folder) and path.startswith(folder + "/")


#: Front-matter key of a conflict copy: the id of the memory it clashed with.
CONFLICT_KEY = "conflict_of"


def is_conflict_copy(note: ParsedNote) -> bool:
    """Whether the note is a conflict copy memvault wrote beside a memory note."""
    return CONFLICT_KEY in note.frontmatter


def is_memory_note(note: ParsedNote, memory_folder: str) -> bool:
    """Whether the note is a memory (by folder or by ``memory: <type>``, and
    not a conflict copy, memvault's or a sync tool's, nor a session note: a
    conversation's transcript is a memory source, searchable, but never a
    memory of its own)."""
    if is_conflict_copy(note) or sync_conflict(note.path) is not None or is_session_note(note.frontmatter):
        return False
    return in_memory_folder(note.path, memory_folder) or maybe_type(note.frontmatter.get("memory")) is not None


def memory_type(note: ParsedNote, memory_folder: str) -> tuple[str, str | None]:
    """The memory type of a memory note, and a warning when its ``type`` was unusable."""
    written = note.frontmatter.get("type")
    found = maybe_type(written)
    if found:
        return found, None
    if in_memory_folder(note.path, memory_folder):
        rest = note.path[len(memory_folder.strip("/")) + 1 :]
        if "/" in rest:
            found = maybe_type(rest.split("/", 1)[0])
    found = found or maybe_type(note.frontmatter.get("memory")) or DEFAULT_MEMORY_TYPE
    warning = f"type {written!r} is not a memory type; using {found!r}" if written not in (None, "") else None
    return found, warning


def _first_line(text: str, limit: int = 80) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = re.sub(r"^#+\s*", "", line)
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class TraceDraft:
    """A note's trace row before its id and its file's time are known: all
    that comes from the note's text alone, so a worker process that parsed
    the note can make it (:func:`draft_trace`; the redaction is most of it),
    and the reconcile finishes it (:func:`finish_trace`)."""

    trace: rec.TraceRow  # id "", updated "" where the file's mtime gives it
    warning: str | None  # to record with the note (an unusable memory type)
    edges: tuple[EdgeDraft, ...] | None = None  # its links (:func:`draft_note`)


def draft_note(
    note: ParsedNote, resolutions: Sequence[Resolution], keys: Sequence[str], memory_folder: str
) -> TraceDraft:
    """The :class:`TraceDraft` of ``note`` with its edges (a worker's
    ``derive``, :mod:`memvault.vault_io.bulk`: ``resolutions`` and ``keys``
    are its links')."""
    draft = draft_trace(note, memory_folder)
    return replace(draft, edges=draft_edges(note, draft.trace.kind, resolutions, keys))


def note_trace(note: ParsedNote, trace_id: str, st: FileStat, memory_folder: str) -> tuple[rec.TraceRow, str | None]:
    """The trace row for a note, and a warning to record with it (or None)."""
    draft = draft_trace(note, memory_folder)
    return finish_trace(draft, trace_id, st), draft.warning


def finish_trace(draft: TraceDraft, trace_id: str, st: FileStat) -> rec.TraceRow:
    """The trace row of a :class:`TraceDraft` under ``trace_id``, for the file as ``st`` saw it."""
    # A shallow copy with two fields set: what dataclasses.replace makes, at a
    # tenth of its cost (it is called once per note of a sync).
    trace = copy(draft.trace)
    trace.id, trace.updated = trace_id, draft.trace.updated or iso_from_ns(st.mtime_ns)
    return trace


def _kept(redacted: str, text: str) -> str:
    # The very same string where redaction found nothing: a draft sent from a
    # worker process then carries the note's text once, not twice.
    return text if redacted == text else redacted


def draft_trace(note: ParsedNote, memory_folder: str) -> TraceDraft:
    """What :func:`note_trace` makes of ``note`` that needs neither its trace
    id nor its file's stat."""
    aliases = list(note.aliases)
    if not is_memory_note(note, memory_folder):
        created = note.frontmatter.get("created") or note.frontmatter.get("date")
        # A credential in a person's note (its text, title, properties or
        # aliases) is never indexed, embedded, shown in a snippet or handed to
        # an agent; the note itself is left as typed. A private key block
        # keeps its line count, so what follows it keeps its line.
        metadata: dict[str, object] = {
            "frontmatter": redact_tree(note.frontmatter), "aliases": redact_tree(aliases),
            **time_metadata(note.frontmatter, note.path),
        }
        copy = sync_conflict(note.path)
        if copy is not None:
            # A sync tool's conflict copy: listed with the note it sits beside.
            metadata["sync_conflict"] = {"tool": copy.tool, "original": copy.original, "device": copy.device}
        return TraceDraft(rec.TraceRow(
            id="",
            kind="note",
            type=NOTE_TYPE,
            title=_kept(redact(note.title)[0], note.title),
            content=_kept(redact(note.body)[0], note.body),
            tags=[t for t in note.tags if not redact(t)[1]],  # a tag holding a credential is not indexed
            metadata=metadata,
            path=note.path,
            source="vault",
            created=str(created) if isinstance(created, str) and created else "",
            updated="",
        ), None)
    doc = read_memory(note.frontmatter, note.body)
    type_, warning = memory_type(note, memory_folder)
    extra = doc.extra
    title = note.frontmatter.get("title")
    # A credential typed into a memory note is never indexed, embedded,
    # shown in a snippet or recalled; the note itself is left as typed.
    doc.content = _kept(redact(doc.content)[0], doc.content)
    title = redact(title)[0] if isinstance(title, str) and title.strip() else None
    return TraceDraft(rec.TraceRow(
        id="",
        kind="memory",
        type=type_,
        title=title or _first_line(doc.content) or redact(note.title)[0],
        content=doc.content,
        tags=list(note.tags),
        metadata={
            "frontmatter": extra,
            "aliases": aliases,
            "related": doc.related,
            "fm_tags": doc.tags,
            # The note's own `created`, as written: the trace's creation time
            # is kept by the index across updates, but a person who edits the
            # property must get it back as they wrote it on the next rewrite.
            "fm_created": doc.created,
            "fm_type": doc.type,  # as spelled ("goal"); the trace's type is canonical
            "supersedes": doc.supersedes,
            # The version counter and fingerprint as the note carries them,
            # and the version every device reads from them (memory_note.note_version).
            "fm_version": doc.version,
            "fm_version_hash": doc.version_hash,
            # The id the note itself names (it differs from the trace's id
            # only while another note keeps that id and this one is not yet
            # rewritten: see identity.NoteIdentity._contest).
            "fm_id": _usable_id(note.frontmatter.get("id")),
            "version": note_version(doc.version, doc.version_hash, text_fingerprint(doc.content, type_, doc.tags)),
            # When it happened and the conversation it is part of (event_time.py).
            **time_metadata(note.frontmatter, note.path, episodic=type_ == "episodic"),
            # A keyed fact's key as written, and the note's own `updated`
            # (else `created`): which of two notes holding one key is its
            # holder is decided from the vault alone (memories/keys.py).
            **({"key": doc.key, "fm_updated": doc.updated or doc.created} if doc.key else {}),
        },
        path=note.path,
        source=doc.source or "vault",
        scope=doc.scope,
        strength=doc.strength,
        created=doc.created,
        updated=doc.updated or "",
        content_key=memory_key(type_, doc.scope, doc.content),
    ), warning)


def _usable_id(value: object) -> str | None:
    """A front-matter ``id`` as the reconcile takes it (identity.frontmatter_id)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value).strip()
    return text if 0 < len(text) <= 200 and "\n" not in text else None


def related_start_line(note: ParsedNote) -> int | None:
    """The file line of a memory note's trailing ``## Related`` section, if any."""
    found = related_section(note.body)
    if found is None or not found[1]:
        return None
    return note.body_line + note.body.count("\n", 0, found[0])


#: An edge of a note before the trace id of its target is known: kind,
#: target name, target key, target path, anchor, display, property, line,
#: ambiguous. A plain tuple: a worker process sends tens of thousands.
EdgeDraft = tuple[str, str, str, str | None, str | None, str | None, str | None, int | None, bool]


def note_edges(
    note: ParsedNote,
    resolver: LinkResolver,
    all_files: dict[str, str | None],
    kind: str,
    resolutions: Sequence[Resolution] | None = None,
    keys: Sequence[str] | None = None,
) -> list[rec.EdgeRow]:
    """The link, embed, property (and, for memories, related) edges of a note,
    resolved (``resolutions`` and ``keys``, when given, were computed with
    the note in a worker process)."""
    links = (*note.links, *note.embeds)
    if resolutions is None:
        resolutions = [resolver.resolve(link.target, note.path) for link in links]
    if keys is None:
        keys = [link_key(link.target) if link.target else "" for link in links]
    return finish_edges(draft_edges(note, kind, resolutions, keys), all_files)


def draft_edges(
    note: ParsedNote, kind: str, resolutions: Sequence[Resolution], keys: Sequence[str]
) -> tuple[EdgeDraft, ...]:
    """What :func:`note_edges` makes of a note's links (``resolutions`` and
    ``keys`` in their order) that needs no trace ids."""
    related_from = related_start_line(note) if kind == "memory" else None
    out = []
    for link, hit, key in zip((*note.links, *note.embeds), resolutions, keys):
        edge_kind = link.kind
        if related_from is not None and link.kind == "link" and link.line >= related_from:
            edge_kind = "related"
        # A link's text and heading are text a person typed (the target is
        # the note's name: an identifier, like its path, redacted in answers).
        anchor = redact(link.subpath)[0] if link.subpath else link.subpath
        display = redact(link.display)[0] if link.display else link.display
        out.append((edge_kind, link.target, key, hit.path, anchor, display, link.prop, link.line, hit.ambiguous))
    return tuple(out)


def finish_edges(drafts: Sequence[EdgeDraft], all_files: dict[str, str | None]) -> list[rec.EdgeRow]:
    """The edge rows of :func:`draft_edges`, each to the trace ``all_files`` gives its target path."""
    return [
        rec.EdgeRow(kind, name, key, path, all_files.get(path) if path else None, anchor, display, prop, line, ambiguous)
        for kind, name, key, path, anchor, display, prop, line, ambiguous in drafts
    ]
