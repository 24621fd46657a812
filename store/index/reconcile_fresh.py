"""A first index's notes written a batch at a time, table by table.

Into an index that holds no trace (a first sync, a rebuild), a note's
writes are plain inserts: its file row, its trace (and its turns') and its
edges, drafted in the parse workers (:func:`~memvault.store.index.classify.draft_note`).
:func:`write_new_notes` writes a batch of such notes with one statement per
table instead of three to five per note: the same rows, in the same order
(trace rowids and edge ids are given in insertion order, and each table
gets its rows in the notes' order), so the index is the one the row-by-row
path (:meth:`~memvault.store.index.reconcile.Indexer._write_note`) builds.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from memvault.store.db import records as rec
from memvault.store.index.classify import TraceDraft, finish_edges, finish_trace
from memvault.store.index.identity import with_error
from memvault.store.index.reconcile import NoteChange, trusted_ctime
from memvault.store.index.turn_traces import turn_rows


def new_note_draft(c: NoteChange) -> TraceDraft | None:
    """The worker's draft of a note that :func:`write_new_notes` can write
    (a note new at its path, displacing nothing, drafted with its edges), else None."""
    if c.draft is None or c.draft[0] is not c.note or c.old_path is not None or c.displaces is not None:
        return None
    return c.draft[1] if c.draft[1].edges is not None else None


def write_new_notes(
    con: apsw.Connection, changes: Sequence[tuple[NoteChange, TraceDraft]], all_files: dict[str, str | None]
) -> list[rec.TraceRow]:
    """Write notes new to an index that held no trace (each with its
    :func:`new_note_draft`), in the caller's transaction; their trace rows, in order."""
    files: list[rec.FileRow] = []
    traces: list[rec.TraceRow] = []
    edges: list[tuple[str, list[rec.EdgeRow]]] = []
    written: list[rec.TraceRow] = []
    for c, draft in changes:
        st = c.stat
        trace = finish_trace(draft, c.trace_id, st)
        if draft.warning:
            c.note = with_error(c.note, draft.warning)
        files.append(rec.FileRow(st.path, "note", c.trace_id, st.mtime_ns, st.size, c.note.hash, c.note.error,
                                 ctime_ns=trusted_ctime(st), inode=st.inode))
        traces.append(trace)
        traces += turn_rows(trace)  # a first index: every turn is new
        assert draft.edges is not None
        edges.append((c.trace_id, finish_edges(draft.edges, all_files)))
        written.append(trace)
    rec.put_files(con, files)
    rec.add_traces(con, traces)
    rec.add_edges_of(con, edges)
    return written
