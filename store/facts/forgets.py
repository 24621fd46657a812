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

from collections.abc import Callable
from typing import TYPE_CHECKING

import apsw

from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.db.rows import first
from memvault.store.facts import rows as sf
from memvault.store.facts.reextract import REASON_REMOVED
from memvault.store.memories.mirror import MemoryOpError, WriteResult
from memvault.vault_io.note import NoteReadError
from memvault.vault_io.parser import parse_note

if TYPE_CHECKING:
    from memvault.store.context import StoreContext
    from memvault.store.facts.observer import FactObserver

DEFAULT_REASON = "forgotten"

#: Builds a fact observer on the store's connection (the facade's ``fact_observer``).
ObserverFactory = Callable[[], "FactObserver"]


def _path_of(con: apsw.Connection, trace_id: str) -> str | None:
    """The vault path of a trace's file (None: not in the index)."""
    row = first(con, "SELECT path FROM files WHERE trace_id = ?", (trace_id,))
    return str(row[0]) if row else None


def _source(con: apsw.Connection, fact: rec.TraceRow) -> tuple[str, str | None]:
    """(source note's trace id, its vault path) of a fact."""
    meta = sf.get_meta(con, fact.id)
    if meta is None:
        raise MemoryOpError(f"fact {fact.id} has no source note in the index")
    return meta.source_id, _path_of(con, meta.source_id)


def forget_fact(con: apsw.Connection, fact: rec.TraceRow, reason: str | None = None) -> WriteResult:
    """Retire one fact for good (until restored); its source note is not touched."""
    source_id, path = _source(con, fact)
    if fact.status == sf.FORGOTTEN:
        return WriteResult(fact.id, "forgotten", path, warnings=[f"fact {fact.id} was already forgotten"])
    if fact.status != sf.ACTIVE:
        raise MemoryOpError(f"fact {fact.id} is {fact.status} ({fact.reason}), not a live fact")
    with write_transaction(con):
        sf.forget(con, fact.id, source_id, reason or DEFAULT_REASON)
    return WriteResult(fact.id, "forgotten", path)


def restore_fact(ctx: StoreContext, fact_observer: ObserverFactory, fact: rec.TraceRow) -> WriteResult:
    """Take back a fact's forget and extract its note again (with an
    observer ``fact_observer`` builds)."""
    con = ctx.con
    source_id, path = _source(con, fact)
    with write_transaction(con):
        known = sf.unforget(con, fact.id)
        if known:
            # Extract the note again even though its bytes did not change.
            con.execute("UPDATE fact_sources SET hash = NULL WHERE source_id = ?", (source_id,))
    if not known:
        raise MemoryOpError(f"fact {fact.id} is {fact.status}, not forgotten")
    warnings = _reextract(ctx, fact_observer, source_id, path)
    now = rec.get_trace(con, fact.id)
    if now is not None and now.status == sf.ACTIVE:
        return WriteResult(fact.id, "restored", path, warnings=warnings)
    with write_transaction(con):
        sf.retire(con, fact.id, REASON_REMOVED)
    warnings.append(f"{path or 'its source note'} no longer says this; the fact stays in its history")
    return WriteResult(fact.id, "superseded", path, warnings=warnings)


def _reextract(ctx: StoreContext, fact_observer: ObserverFactory, source_id: str, path: str | None) -> list[str]:
    """Run fact extraction of one source note now (its hash was cleared)."""
    trace = rec.get_trace(ctx.con, source_id)
    if path is None or trace is None:
        return []
    try:
        note = parse_note(path, (ctx.root / path).read_bytes())
    except (OSError, NoteReadError) as exc:
        return [f"{path}: cannot read it to extract its facts again: {exc}"]
    return fact_observer().notes_changed([(note, trace)], [])


def extract_again(ctx: StoreContext, fact_observer: ObserverFactory, fact_id: str) -> list[str]:
    """Extract a fact's source note again now, with an observer
    ``fact_observer`` builds (another device restored the fact: its forget is
    gone from the durable state, and its hash was cleared)."""
    meta = sf.get_meta(ctx.con, fact_id)
    if meta is None:
        return []
    return _reextract(ctx, fact_observer, meta.source_id, _path_of(ctx.con, meta.source_id))
