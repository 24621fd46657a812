"""Facts in the index: their anchor rows, their sources, retiring and history.

A fact is a trace of kind ``fact`` (its type is a memory type) plus one row
of the ``facts`` table that says where in its source note it came from.
Everything here runs inside a transaction the caller opened (except the
read-only queries) and treats paths and URIs as opaque strings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import apsw

from memvault.store.db import records as rec
from memvault.store.db.rows import scalar

ACTIVE, SUPERSEDED = "active", "superseded"

#: Edge kinds a fact has: links in its text, its source note, its predecessor.
LINK, DERIVED_FROM, UPDATES = "link", "derived_from", "updates"


@dataclass
class FactMeta:
    """The ``facts`` row of one fact: where it points back to."""

    trace_id: str
    source_id: str
    ordinal: int = 0
    segment: str = "sentence"
    heading_path: str = ""
    heading: str | None = None
    block_id: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    source_uri: str = ""
    context: str = ""
    due: str | None = None
    text_key: str = ""
    extractor: str = "default"
    redacted: int = 0

    @property
    def anchor(self) -> str | None:
        """``^blockid``, else the innermost heading, else None (the top of the note)."""
        if self.block_id:
            return f"^{self.block_id}"
        return self.heading or None


@dataclass
class SourceState:
    """What was last extracted from one source note."""

    source_id: str
    path: str
    hash: str | None
    marks: str
    extractor: str
    facts: int
    redacted: int
    extracted_at: str


@dataclass
class FactAnchor:
    """Where a fact points back to, for search output and Obsidian links."""

    trace_id: str
    path: str | None  # the source note's vault path
    anchor: str | None  # "Heading" or "^blockid", for obsidian://open?file=<path>%23<anchor>
    source_uri: str  # vault://<path>#<heading> or vault://<path>#^<block>
    heading_path: str
    block_id: str | None
    line_start: int | None
    line_end: int | None
    source_id: str
    status: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


_META_COLS = (
    "trace_id, source_id, ordinal, segment, heading_path, heading, block_id, line_start, line_end, "
    "source_uri, context, due, text_key, extractor, redacted"
)
_META_MARKS = ",".join("?" * 15)


def _meta_values(m: FactMeta) -> tuple[Any, ...]:
    return (
        m.trace_id, m.source_id, m.ordinal, m.segment, m.heading_path, m.heading, m.block_id,
        m.line_start, m.line_end, m.source_uri, m.context, m.due, m.text_key, m.extractor, m.redacted,
    )


# -- facts -------------------------------------------------------------------


def put_fact(con: apsw.Connection, trace: rec.TraceRow, meta: FactMeta) -> None:
    """Insert or update a fact's trace and anchor row (created time and
    retrieval statistics of an existing trace are kept by put_trace)."""
    rec.put_trace(con, trace)
    con.execute(f"INSERT OR REPLACE INTO facts ({_META_COLS}) VALUES ({_META_MARKS})", _meta_values(meta))


def insert_facts(con: apsw.Connection, items: Sequence[tuple[rec.TraceRow, FactMeta]]) -> None:
    """Insert facts whose ids are new to the index, in a few statements.

    The bulk form of :func:`put_fact` for a note's new facts (a first
    extraction writes thousands): one timestamp, ``executemany`` for the
    traces, their tags and their anchor rows. An id that exists already is
    an error (:func:`put_fact` is for those).
    """
    if not items:
        return
    now = rec.now_iso()
    con.executemany(
        "INSERT INTO traces (id, kind, type, title, content, tags, metadata, path, source, scope, strength, "
        "status, reason, created, updated, content_key) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [
            (t.id, t.kind, t.type, t.title, t.content, " ".join(t.tags),
             json.dumps(t.metadata, ensure_ascii=False, sort_keys=True, default=str), t.path, t.source, t.scope,
             t.strength, t.status, t.reason, t.created or now, t.updated or now, t.content_key)
            for t, _ in items
        ],
    )
    con.executemany(
        "INSERT OR IGNORE INTO trace_tags (trace_id, tag, trace_rowid) "
        "VALUES (?1, ?2, (SELECT rowid FROM traces WHERE id = ?1))",
        [(t.id, tag.lower()) for t, _ in items for tag in t.tags],
    )
    con.executemany(f"INSERT INTO facts ({_META_COLS}) VALUES ({_META_MARKS})", [_meta_values(m) for _, m in items])


def put_meta(con: apsw.Connection, meta: FactMeta) -> None:
    """Update only the anchor row (the fact moved within its note)."""
    con.execute(f"INSERT OR REPLACE INTO facts ({_META_COLS}) VALUES ({_META_MARKS})", _meta_values(meta))


def facts_of(
    con: apsw.Connection, source_ids: Sequence[str], statuses: Sequence[str] | None = None
) -> list[tuple[rec.TraceRow, FactMeta]]:
    """Facts of the given source notes (by trace id), in note order."""
    if not source_ids:
        return []
    where = f"id IN (SELECT trace_id FROM facts WHERE source_id IN ({','.join('?' * len(source_ids))}))"
    params: list[Any] = list(source_ids)
    if statuses:
        where += f" AND status IN ({','.join('?' * len(statuses))})"
        params += list(statuses)
    traces = {t.id: t for t in rec.get_traces(con, where, params)}
    if not traces:
        return []
    metas = [
        FactMeta(*row)
        for row in con.execute(
            f"SELECT {_META_COLS} FROM facts WHERE source_id IN ({','.join('?' * len(source_ids))}) "
            "ORDER BY ordinal, trace_id",
            list(source_ids),
        )
    ]
    return [(traces[m.trace_id], m) for m in metas if m.trace_id in traces]


def get_meta(con: apsw.Connection, trace_id: str) -> FactMeta | None:
    """The anchor row of one fact."""
    row = con.execute(f"SELECT {_META_COLS} FROM facts WHERE trace_id = ?", (trace_id,)).fetchone()
    return FactMeta(*row) if row else None


def retire(con: apsw.Connection, trace_id: str, reason: str) -> None:
    """Keep a fact as superseded with ``reason``; its link edges go (a
    superseded fact is history, not a backlink), its source edge stays.
    The durable state keeps it too, so a rebuilt index has its history."""
    rec.set_status(con, trace_id, SUPERSEDED, reason)
    con.execute("DELETE FROM edges WHERE source_id = ? AND kind = ?", (trace_id, LINK))
    t, m = rec.get_trace(con, trace_id), get_meta(con, trace_id)
    if t is not None and m is not None:
        con.execute(
            "INSERT OR REPLACE INTO state.fact_history (fact_id, source_id, trace, anchor, reason, replaced_by, retired_at) "
            "VALUES (?,?,?,?,?,NULL,?)",
            (trace_id, m.source_id, rec.trace_json(t), json.dumps(asdict(m), ensure_ascii=False), reason, rec.now_iso()),
        )


#: Status of a fact a person forgot (as for a forgotten memory).
FORGOTTEN = "deleted"


def forget(con: apsw.Connection, trace_id: str, source_id: str, reason: str) -> None:
    """A person forgets a fact: it is kept as deleted with ``reason`` and
    recorded in the durable state, so re-extraction keeps it forgotten."""
    con.execute(
        "INSERT OR REPLACE INTO state.fact_forgets (fact_id, source_id, reason, at) VALUES (?,?,?,?)",
        (trace_id, source_id, reason, rec.now_iso()),
    )
    retire_forgotten(con, trace_id, reason)


def retire_forgotten(con: apsw.Connection, trace_id: str, reason: str) -> None:
    """Retire a live fact as forgotten (its forget record already in the
    durable state: made here, or brought by an import)."""
    retire(con, trace_id, reason)
    rec.set_status(con, trace_id, FORGOTTEN, reason)
    trace = rec.get_trace(con, trace_id)
    assert trace is not None  # the fact just retired
    con.execute("UPDATE state.fact_history SET trace = ? WHERE fact_id = ?", (rec.trace_json(trace), trace_id))


def unforget(con: apsw.Connection, trace_id: str) -> bool:
    """Drop a fact's forget record; whether there was one."""
    con.execute("DELETE FROM state.fact_forgets WHERE fact_id = ?", (trace_id,))
    return con.changes() > 0


def forgotten_facts(con: apsw.Connection, source_id: str) -> dict[str, str]:
    """The facts of a source note a person forgot, with the reason given."""
    return {
        r[0]: r[1] or "forgotten"
        for r in con.execute("SELECT fact_id, reason FROM state.fact_forgets WHERE source_id = ?", (source_id,))
    }


def reactivate_cleanup(con: apsw.Connection, trace_id: str) -> None:
    """A superseded fact's text is back: drop the ``updates`` edges that
    pointed at it, so its history does not loop back onto itself, and its
    history row (it is live again)."""
    con.execute("DELETE FROM edges WHERE target_id = ? AND kind = ?", (trace_id, UPDATES))
    con.execute("DELETE FROM state.fact_history WHERE fact_id = ?", (trace_id,))
    con.execute("UPDATE state.fact_history SET replaced_by = NULL WHERE replaced_by = ?", (trace_id,))


def link_update(con: apsw.Connection, new_id: str, old_id: str) -> None:
    """Record that ``new_id`` replaced ``old_id`` (``updates`` edge, new -> old)."""
    rec.add_edges(con, new_id, [rec.EdgeRow(kind=UPDATES, target_id=old_id, target_name=old_id)])
    con.execute("UPDATE state.fact_history SET replaced_by = ? WHERE fact_id = ?", (new_id, old_id))


def repath(con: apsw.Connection, source_id: str, path: str) -> None:
    """Point every fact of a source (superseded ones too) at its note's new path."""
    con.execute(
        "UPDATE traces SET path = ? WHERE id IN (SELECT trace_id FROM facts WHERE source_id = ?)",
        (path, source_id),
    )
    con.execute(
        "UPDATE edges SET target_path = ? WHERE kind = ? AND target_id = ? ",
        (path, DERIVED_FROM, source_id),
    )


def retire_source(con: apsw.Connection, source_id: str, reason: str) -> int:
    """Retire every active fact of a source and forget the source; returns how many."""
    ids = [
        r[0]
        for r in con.execute(
            "SELECT f.trace_id FROM facts f JOIN traces t ON t.id = f.trace_id "
            "WHERE f.source_id = ? AND t.status = ?",
            (source_id, ACTIVE),
        )
    ]
    for trace_id in ids:
        retire(con, trace_id, reason)
    con.execute("DELETE FROM fact_sources WHERE source_id = ?", (source_id,))
    return len(ids)


# -- sources -----------------------------------------------------------------

_SOURCE_COLS = "source_id, path, hash, marks, extractor, facts, redacted, extracted_at"


def get_source(con: apsw.Connection, source_id: str) -> SourceState | None:
    """The extraction state of one source note."""
    row = con.execute(f"SELECT {_SOURCE_COLS} FROM fact_sources WHERE source_id = ?", (source_id,)).fetchone()
    return SourceState(*row) if row else None


def sources_at(con: apsw.Connection, path: str) -> list[SourceState]:
    """Source states recorded for a path (an old trace id of a renamed note too)."""
    return [
        SourceState(*r) for r in con.execute(f"SELECT {_SOURCE_COLS} FROM fact_sources WHERE path = ?", (path,))
    ]


def put_source(con: apsw.Connection, s: SourceState) -> None:
    """Record what was extracted from a source note."""
    con.execute(
        f"INSERT OR REPLACE INTO fact_sources ({_SOURCE_COLS}) VALUES (?,?,?,?,?,?,?,?)",
        (s.source_id, s.path, s.hash, s.marks, s.extractor, s.facts, s.redacted, s.extracted_at),
    )


def all_sources(con: apsw.Connection) -> list[SourceState]:
    """Every source note memvault extracted facts from, by path."""
    return [SourceState(*r) for r in con.execute(f"SELECT {_SOURCE_COLS} FROM fact_sources ORDER BY path")]


def recorded_sources(con: apsw.Connection, source_ids: Iterable[str]) -> set[str]:
    """Which of ``source_ids`` have an extraction state (were sources once)."""
    ids = list(set(source_ids))
    found: set[str] = set()
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        found.update(r[0] for r in con.execute(
            f"SELECT source_id FROM fact_sources WHERE source_id IN ({','.join('?' * len(chunk))})", chunk))
    return found


def source_ids_with_facts(con: apsw.Connection, source_ids: Iterable[str]) -> set[str]:
    """Which of ``source_ids`` have at least one active fact."""
    ids = list(set(source_ids))
    found: set[str] = set()
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        found.update(
            r[0]
            for r in con.execute(
                f"SELECT DISTINCT f.source_id FROM facts f JOIN traces t ON t.id = f.trace_id "
                f"WHERE t.status = 'active' AND f.source_id IN ({','.join('?' * len(chunk))})",
                chunk,
            )
        )
    return found


# -- anchors, counts -----------------------------------------------------------


def fact_anchor(con: apsw.Connection, trace_id: str) -> FactAnchor | None:
    """Where the fact ``trace_id`` came from: source path, Obsidian anchor
    (``Heading`` or ``^blockid``), ``vault://`` URI, heading path, block id and
    file line range. None when ``trace_id`` is not a fact."""
    row = con.execute(
        f"SELECT {', '.join('f.' + c.strip() for c in _META_COLS.split(','))}, t.path, t.status "
        "FROM facts f JOIN traces t ON t.id = f.trace_id WHERE f.trace_id = ?",
        (trace_id,),
    ).fetchone()
    if row is None:
        return None
    meta = FactMeta(*row[:15])
    return FactAnchor(
        trace_id=meta.trace_id,
        path=row[15],
        anchor=meta.anchor,
        source_uri=meta.source_uri,
        heading_path=meta.heading_path,
        block_id=meta.block_id,
        line_start=meta.line_start,
        line_end=meta.line_end,
        source_id=meta.source_id,
        status=row[16],
    )


def fact_stats(con: apsw.Connection) -> dict[str, int]:
    """Counts for ``memvault stats``: facts by status, sources, redacted secrets."""

    def one(sql: str) -> int:
        return int(scalar(con, sql) or 0)

    return {
        "facts": one("SELECT count(*) FROM traces WHERE kind = 'fact' AND status = 'active'"),
        "facts_superseded": one("SELECT count(*) FROM traces WHERE kind = 'fact' AND status = 'superseded'"),
        "fact_sources": one("SELECT count(*) FROM fact_sources"),
        "secrets_redacted": one("SELECT coalesce(sum(redacted), 0) FROM fact_sources"),
    }
