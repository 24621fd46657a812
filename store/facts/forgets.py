"""Forgetting one fact, and taking that back.

A fact is extracted from a note a person wrote; memvault never edits that
note to drop a wrong fact. ``forget`` retires the fact instead: it is kept
as ``deleted`` with the reason (searchable with ``--include-deleted``, in
``history``), and the forget is recorded in the durable state
(``state.fact_forgets``), so re-extracting the note, however often, and
rebuilding the index keep it forgotten (see :mod:`.reextract`). ``restore``
drops that record and extracts the note again: the fact is back if the
note still says it, else it stays history ("removed from source").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.facts import rows as sf
from memvault.store.facts.reextract import REASON_REMOVED
from memvault.store.memories.mirror import MemoryOpError, WriteResult
from memvault.vault_io.note import NoteReadError
from memvault.vault_io.parser import parse_note

if TYPE_CHECKING:
    from memvault.store.memory_store import MemoryStore

DEFAULT_REASON = "forgotten"


def _source(store: "MemoryStore", fact: rec.TraceRow) -> tuple[str, str | None]:
    """(source note's trace id, its vault path) of a fact."""
    meta = sf.get_meta(store.con, fact.id)
    if meta is None:
        raise MemoryOpError(f"fact {fact.id} has no source note in the index")
    row = store.con.execute("SELECT path FROM files WHERE trace_id = ?", (meta.source_id,)).fetchone()
    return meta.source_id, row[0] if row else None


def forget_fact(store: "MemoryStore", fact: rec.TraceRow, reason: str | None = None) -> WriteResult:
    """Retire one fact for good (until restored); its source note is not touched."""
    source_id, path = _source(store, fact)
    if fact.status == sf.FORGOTTEN:
        return WriteResult(fact.id, "forgotten", path, warnings=[f"fact {fact.id} was already forgotten"])
    if fact.status != sf.ACTIVE:
        raise MemoryOpError(f"fact {fact.id} is {fact.status} ({fact.reason}), not a live fact")
    with write_transaction(store.con):
        sf.forget(store.con, fact.id, source_id, reason or DEFAULT_REASON)
    return WriteResult(fact.id, "forgotten", path)


def restore_fact(store: "MemoryStore", fact: rec.TraceRow) -> WriteResult:
    """Take back a fact's forget and extract its note again."""
    source_id, path = _source(store, fact)
    with write_transaction(store.con):
        known = sf.unforget(store.con, fact.id)
        if known:
            # Extract the note again even though its bytes did not change.
            store.con.execute("UPDATE fact_sources SET hash = NULL WHERE source_id = ?", (source_id,))
    if not known:
        raise MemoryOpError(f"fact {fact.id} is {fact.status}, not forgotten")
    warnings = _reextract(store, source_id, path)
    now = rec.get_trace(store.con, fact.id)
    if now is not None and now.status == sf.ACTIVE:
        return WriteResult(fact.id, "restored", path, warnings=warnings)
    with write_transaction(store.con):
        sf.retire(store.con, fact.id, REASON_REMOVED)
    warnings.append(f"{path or 'its source note'} no longer says this; the fact stays in its history")
    return WriteResult(fact.id, "superseded", path, warnings=warnings)


def _reextract(store: "MemoryStore", source_id: str, path: str | None) -> list[str]:
    """Run fact extraction of one source note now (its hash was cleared)."""
    trace = rec.get_trace(store.con, source_id)
    if path is None or trace is None:
        return []
    try:
        note = parse_note(path, (store.root / path).read_bytes())
    except (OSError, NoteReadError) as exc:
        return [f"{path}: cannot read it to extract its facts again: {exc}"]
    return store.fact_observer().notes_changed([(note, trace)], [])


def extract_again(store: "MemoryStore", fact_id: str) -> list[str]:
    """Extract a fact's source note again now (another device restored the
    fact: its forget is gone from the durable state, and its hash was cleared)."""
    meta = sf.get_meta(store.con, fact_id)
    if meta is None:
        return []
    row = store.con.execute("SELECT path FROM files WHERE trace_id = ?", (meta.source_id,)).fetchone()
    return _reextract(store, meta.source_id, row[0] if row else None)
