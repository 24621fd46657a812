"""The turns of a session note as traces of their own.

An ingested session note (:mod:`memvault.vault_io.session_note`) holds a
whole conversation, each turn a callout closed by its block id (``^t12``).
Ranked as one note, a conversation of a hundred turns is one hit, and a
recall block quotes at most a couple of its turns. So the index derives one
trace per turn (kind :data:`TURN_KIND`), as it derives chunks: from the
note's indexed (redacted) content, rebuilt whenever the note is, never
written anywhere but the index, and nothing memvault alone knows hangs on it.

A turn trace:

* ``id`` ``<note id>#^t12`` and ``path`` the note's, so a hit or a recall
  line addresses the turn (``path#^t12``);
* ``content`` the turn's plain text (no callout markup, no block id) and
  ``title`` its speaker: the embedded text is "Noor: I went to ...", as
  a sentence model reads a turn best; the full-text index keeps the title
  out and the speaker in its unboosted ``context`` column (migration 13), so
  a name is searchable without every turn of that person outranking the rest;
* ``metadata``: the speaker (``frontmatter.speaker``, which recall and the
  speaker lift read), when it was said (``event_time``), and its place in
  the conversation (``session`` :func:`session_key`, ``seq`` the turn's
  number), so its neighbours are the turns before and after it;
* ``source``: the note's id.

Search and recall leave the session note itself out when it has turn traces
(:data:`WITHOUT_TURN_NOTES_SQL`): its turns stand for it.
"""

from __future__ import annotations

from typing import Any

import apsw

from memvault.store.db import records as rec
from memvault.store.db.rows import rows
from memvault.store.index.event_time import parse_event_time

#: The kind of a turn's trace.
TURN_KIND = "turn"
#: The memory type a turn is recalled as: something that was said, when.
TURN_TYPE = "episodic"
#: Prefix of a turn trace's ``session``: the turns of one note are one
#: conversation, apart from the note (which carries the transcript's own
#: session id and must not sit among its turns as a neighbour).
SESSION_PREFIX = "turns:"

#: A filter condition on ``traces t`` (for search and recall): no note
#: whose turns are traces of their own.
WITHOUT_TURN_NOTES_SQL = (
    "(t.kind <> 'note' OR NOT EXISTS (SELECT 1 FROM traces u WHERE u.session = "
    f"'{SESSION_PREFIX}' || t.id))"
)


def session_key(note_id: str) -> str:
    """The ``session`` of a note's turn traces."""
    return f"{SESSION_PREFIX}{note_id}"


def turn_trace_id(note_id: str, n: int) -> str:
    """The id of turn ``n`` (its block id ``^tn``) of note ``note_id``."""
    return f"{note_id}#^t{n}"


def turn_rows(note: rec.TraceRow) -> list[rec.TraceRow]:
    """The turn traces of an indexed note (none unless it holds a transcript)."""
    if note.kind != "note":
        return []  # before the import: a memory's write (``memvault add``) need not load the recall modules
    from memvault.store.retrieval.turns import has_turns, note_turns

    if not has_turns(note.content):
        return []
    note_time = note.metadata.get("event_time") if isinstance(note.metadata, dict) else None
    out: list[rec.TraceRow] = []
    for t in note_turns(note.content):
        if not t.text:
            continue
        meta: dict[str, Any] = {
            "frontmatter": {"speaker": t.speaker},
            "role": t.role,
            "anchor": t.anchor,
            "note_title": note.title,
            "session": session_key(note.id),
            "seq": t.n,
        }
        when = parse_event_time(t.at) if t.at else None
        if when or note_time:
            meta["event_time"] = when or note_time
        out.append(rec.TraceRow(
            id=turn_trace_id(note.id, t.n), kind=TURN_KIND, type=TURN_TYPE, title=t.speaker, content=t.text,
            metadata=meta, path=note.path, source=note.id, status=note.status,
            created=note.created, updated=note.updated,
        ))
    return out


def sync_turns(con: apsw.Connection, note: rec.TraceRow, *, new: bool = False) -> int:
    """Make the index's turn traces of ``note`` match its content: new and
    changed turns written, gone ones (and any left under the note's path by
    an earlier id) removed; a turn that did not change is not touched.
    ``new``: the caller knows the index held no trace before this one was
    written (a first index), so there is nothing to remove. Returns how many
    traces were written or removed."""
    wanted = {t.id: t for t in turn_rows(note)}
    if new and not wanted:
        return 0  # most notes of a first index: no lookup at all
    # Two index lookups (every note is written through here, most with no
    # turns): the turns under its id (a key range of the id index) and any
    # left under its path by an id it had before. ``+kind`` keeps the kind
    # out of the index choice: on ``kind = ?`` the planner took the
    # (kind, status) index and read every turn trace of the vault for each
    # note, so an import of N conversations grew as N squared.
    cols = "id, content, title, metadata, status, path"
    have = {
        tid: (content, title, metadata, status, path)
        for tid, content, title, metadata, status, path in con.execute(
            f"SELECT {cols} FROM traces WHERE id >= ? AND id < ? AND +kind = ? "
            f"UNION SELECT {cols} FROM traces WHERE path = ? AND +kind = ?",
            (f"{note.id}#^t", f"{note.id}#^u", TURN_KIND, note.path, TURN_KIND),
        )
    }
    changed = 0
    for tid in have.keys() - wanted.keys():
        rec.delete_trace(con, tid)
        changed += 1
    for tid, row in wanted.items():
        old = have.get(tid)
        if old is not None and old == (row.content, row.title, _json(row.metadata), row.status, row.path):
            continue
        rec.put_trace(con, row, new=old is None)
        changed += 1
    return changed


def drop_turns(con: apsw.Connection, note_id: str) -> None:
    """Remove the turn traces of a note that left the index."""
    # ``+kind``: the id range, not every turn trace (see sync_turns).
    for (tid,) in rows(con, "SELECT id FROM traces WHERE id >= ? AND id < ? AND +kind = ?",
                       (f"{note_id}#^t", f"{note_id}#^u", TURN_KIND)):
        rec.delete_trace(con, tid)


def _json(metadata: dict[str, Any]) -> str:
    import json

    return json.dumps(metadata, ensure_ascii=False, sort_keys=True, default=str)
