"""The records of memvault's own export: everything the vault and ``state.db`` know.

The export is lossless in this sense: what a rebuild keeps (the memory notes,
the memory sources and session notes, and the durable state) is in it, so
importing it into an empty vault gives back the same memories with every
version and reason, forgotten ones, strengths and recall statistics, facts
(re-extracted from their sources, with the same ids) with their history and
anchors, and the import keys. Exporting that vault again gives the same
records (tested). What only the derived index holds (rowids, when a fact
was first indexed, the order of rows) is not part of it.

Records are plain JSON-ready dicts, yielded in a stable order (by id) so two
exports of the same knowledge are byte for byte the same:

- ``memory``: id, type, status (active | deleted), content, scope, key (a keyed fact's), tags,
  strength, created, updated, source, path, related, supersedes, extra
  (front-matter keys a person added), forgotten {reason, at}, recall
  {retrieval_count, last_access, strength}, versions [{version, id, reason,
  superseded_at, trace}], and with ``--embeddings`` its chunks' vectors;
- ``source``: a memory source or session note: id, path, kind (source |
  session), session {session_id, client, title, started, ended, turns}, text;
- ``fact``: a live fact: id, source_id, path, type, text, tags, anchor, recall;
- ``fact_history``: a retired or changed fact as ``state.db`` keeps it;
- ``edge``: source_id, kind, target (as written), target_id (only when the
  target is itself exported: portable ids, never an ordinary note's);
- ``import``: one import key (see :mod:`.keys`);
- ``fact_forget``: a fact a person forgot (it stays retired when its source
  is extracted again);
- ``merge``: a memory merged into another (the merged-away memory itself is
  a ``memory`` record with status ``superseded``);
- ``contradiction``: a flagged contradiction, with its number;
- ``link``: a link only memvault knows (``derived_from``);
- ``consolidation``: a consolidation run (or ``merge``) with its actions and
  what undoing each needs, so ``consolidate --undo`` works after a restore;
- ``conflict``: a store version written beside a note a person had changed,
  with the conflict copy's text;
- ``verdict``: the llm's answer about a contradiction candidate.

Per install, never compared: ``exported_at`` and ``vault`` (the header).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import apsw

from memvault.store.db import records as rec
from memvault.store.db.rows import rows
from memvault.store.facts import rows as sf
from memvault.store.flows.keys import all_keys
from memvault.vault_io.session_note import SESSION_KEY

FORMAT = "memvault-export"
#: 2: the consolidation log, merges, contradictions, links, conflicts, fact forgets,
#: verdicts, merged-away memories, note texts and decay times were added.
VERSION = 2
#: Record kinds in the order a document holds them.
KINDS = ("memory", "source", "fact", "fact_history", "fact_forget", "edge", "import", "merge", "contradiction",
         "link", "consolidation", "conflict", "verdict")


def _recall(con: apsw.Connection, trace_id: str) -> dict[str, Any] | None:
    row = con.execute(
        "SELECT retrieval_count, last_access, strength, decayed_at FROM state.recall WHERE trace_id = ?", (trace_id,)
    ).fetchone()
    if row is None:
        return None
    return {"retrieval_count": row[0], "last_access": row[1], "strength": row[2], "decayed_at": row[3]}


def _note_text(root: Path | None, path: str | None) -> str | None:
    """A note's text as it is in the vault (None: no root given, or unreadable)."""
    if root is None or not path:
        return None
    try:
        return (root / path).read_bytes().decode("utf-8", "surrogateescape")
    except OSError:
        return None


def memory_record(con: apsw.Connection, t: rec.TraceRow, root: Path | None = None) -> dict[str, Any]:
    """One memory (live, deleted, or merged away: ``superseded``) with its
    versions and recall statistics, and (given the vault's ``root``) a live
    memory's note text: a restore writes the same bytes, so what was logged
    of them (a consolidation run's undo) still matches."""
    meta = t.metadata
    fm_tags = meta.get("fm_tags")
    forgotten = con.execute(
        "SELECT reason, at, json_extract(trace, '$.metadata.trashed_from') FROM state.forgotten WHERE memory_id = ?",
        (t.id,),
    ).fetchone()
    versions = [
        {"version": v, "id": vid, "reason": reason, "superseded_at": at, "trace": json.loads(trace)}
        for vid, v, reason, at, trace in con.execute(
            "SELECT id, version, reason, superseded_at, trace FROM state.memory_versions WHERE memory_id = ? "
            "ORDER BY version", (t.id,),
        )
    ]
    extra = meta.get("frontmatter")
    return {
        "id": t.id, "type": t.type, "status": t.status, "content": t.content, "scope": t.scope or "user",
        "key": meta.get("key") if isinstance(meta.get("key"), str) else None,
        "tags": list(fm_tags if isinstance(fm_tags, list) else t.tags), "strength": t.strength,
        "created": str(meta.get("fm_created") or t.created), "updated": t.updated, "source": t.source,
        "path": t.path if t.status == "active" else None, "related": list(meta.get("related") or []),
        "supersedes": meta.get("supersedes"), "extra": dict(extra) if isinstance(extra, dict) else {},
        "forgotten": {"reason": forgotten[0], "at": forgotten[1], "from": forgotten[2]} if forgotten else None,
        "recall": _recall(con, t.id), "versions": versions,
        "note": _note_text(root, t.path) if t.status == "active" else None,
    }


def memories(
    con: apsw.Connection, *, types: Sequence[str] = (), scope: str | None = None, include_deleted: bool = True,
    root: Path | None = None,
) -> Iterator[dict[str, Any]]:
    """Memory records (live, and deleted and merged-away ones unless told
    not to), by id; ``root``: the vault, for the notes' texts."""
    if include_deleted:
        where = ("kind = 'memory' AND (status IN ('active', 'deleted') OR (status = 'superseded' "
                 "AND id IN (SELECT memory_id FROM state.merges)))")
    else:
        where = "kind = 'memory' AND status = 'active'"
    params: list[Any] = []
    if types:
        where += f" AND type IN ({','.join('?' * len(types))})"
        params += list(types)
    if scope is not None:
        where += " AND coalesce(scope, 'user') = ?"
        params.append(scope)
    ids = [r[0] for r in con.execute(f"SELECT id FROM traces WHERE {where} ORDER BY id", params)]
    for i in range(0, len(ids), 500):
        batch = ids[i : i + 500]
        traces = {t.id: t for t in rec.get_traces(con, f"id IN ({','.join('?' * len(batch))})", batch)}
        for trace_id in batch:
            yield memory_record(con, traces[trace_id], root)


def sources(con: apsw.Connection, root: Path) -> Iterator[dict[str, Any]]:
    """Memory sources and session notes with their text (facts come back from it)."""
    found = rows(
        con, "SELECT t.id, f.path, t.metadata FROM fact_sources s JOIN traces t ON t.id = s.source_id "
        "JOIN files f ON f.trace_id = t.id ORDER BY t.id"
    )
    for trace_id, path, metadata in found:
        fm = (json.loads(metadata) if metadata else {}).get("frontmatter") or {}
        try:
            text = (root / path).read_bytes().decode("utf-8", "replace")
        except OSError:
            continue  # gone since the last sync: the next export has it again
        record: dict[str, Any] = {"id": trace_id, "path": path, "kind": "source", "session": None, "text": text}
        if fm.get(SESSION_KEY):
            record["kind"] = "session"
            record["session"] = {k: fm.get(k) for k in (SESSION_KEY, "client", "title", "started", "ended", "turns")}
        yield record


def facts(con: apsw.Connection) -> Iterator[dict[str, Any]]:
    """Live facts with their anchors and recall statistics, by id."""
    ids = [r[0] for r in con.execute("SELECT id FROM traces WHERE kind = 'fact' AND status = 'active' ORDER BY id")]
    for i in range(0, len(ids), 500):
        batch = ids[i : i + 500]
        traces = {t.id: t for t in rec.get_traces(con, f"id IN ({','.join('?' * len(batch))})", batch)}
        for trace_id in batch:
            t, m = traces[trace_id], sf.get_meta(con, trace_id)
            if m is None:
                continue
            yield {
                "id": t.id, "source_id": m.source_id, "path": t.path, "type": t.type, "text": t.content,
                "tags": list(t.tags), "anchor": {
                    "segment": m.segment, "heading_path": m.heading_path, "heading": m.heading,
                    "block_id": m.block_id, "lines": [m.line_start, m.line_end], "source_uri": m.source_uri,
                    "context": m.context, "due": m.due, "extractor": m.extractor,
                },
                "recall": _recall(con, t.id),
            }


def fact_history(con: apsw.Connection) -> Iterator[dict[str, Any]]:
    """Retired and changed facts exactly as the durable state keeps them."""
    for fact_id, source_id, trace, anchor, reason, replaced_by, at in con.execute(
        "SELECT fact_id, source_id, trace, anchor, reason, replaced_by, retired_at FROM state.fact_history "
        "ORDER BY fact_id"
    ):
        yield {"id": fact_id, "source_id": source_id, "reason": reason, "replaced_by": replaced_by,
               "retired_at": at, "trace": json.loads(trace), "anchor": json.loads(anchor),
               "recall": _recall(con, fact_id)}


def edges(con: apsw.Connection) -> Iterator[dict[str, Any]]:
    """Edges from memories and facts; a target id only when it is exported too."""
    exported = (
        "(SELECT id FROM traces WHERE kind IN ('memory', 'fact') UNION SELECT source_id FROM fact_sources "
        "UNION SELECT id FROM state.memory_versions UNION SELECT fact_id FROM state.fact_history)"
    )
    cursor = con.execute(
        "SELECT e.source_id, e.kind, e.target_name, CASE WHEN e.target_id IN " + exported + " THEN e.target_id END, "
        "e.anchor FROM edges e JOIN traces t ON t.id = e.source_id WHERE t.kind IN ('memory', 'fact') "
        "ORDER BY 1, 2, 3, 4, 5"
    )
    for source_id, kind, target, target_id, anchor in cursor:
        yield {"source_id": source_id, "kind": kind, "target": target, "target_id": target_id, "anchor": anchor}


def imports(con: apsw.Connection) -> Iterator[dict[str, Any]]:
    """Every import key."""
    for k in all_keys(con):
        yield k.as_dict()


def embeddings_of(con: apsw.Connection, cache: apsw.Connection | None, model: str | None,
                  trace_id: str) -> dict[str, Any] | None:
    """The vectors of a trace's chunks (``--embeddings``): model, and per chunk
    its text hash and float16 vector, base64."""
    if cache is None or model is None:
        return None
    chunks = []
    for seq, digest in con.execute(
        "SELECT c.seq, c.hash FROM chunks c JOIN traces t ON t.rowid = c.trace_rowid WHERE t.id = ? ORDER BY c.seq",
        (trace_id,),
    ):
        row = cache.execute("SELECT vec FROM vectors WHERE model = ? AND hash = ?", (model, digest)).fetchone()
        if row is not None:
            chunks.append({"seq": seq, "hash": bytes(digest).hex(), "vector": base64.b64encode(row[0]).decode()})
    return {"model": model, "chunks": chunks} if chunks else None


def _rows(con: apsw.Connection, sql: str, names: Sequence[str]) -> Iterator[dict[str, Any]]:
    for row in con.execute(sql):
        yield dict(zip(names, row))


def fact_forgets(con: apsw.Connection) -> Iterator[dict[str, Any]]:
    """Facts a person forgot (they stay retired however often their source is extracted)."""
    return _rows(con, "SELECT fact_id, source_id, reason, at FROM state.fact_forgets ORDER BY fact_id",
                 ("id", "source_id", "reason", "at"))


def merges(con: apsw.Connection) -> Iterator[dict[str, Any]]:
    """Memories merged into others."""
    return _rows(con, "SELECT memory_id, survivor_id, run_id, old_path, old_key, at FROM state.merges "
                      "ORDER BY memory_id", ("memory_id", "survivor_id", "run_id", "old_path", "old_key", "at"))


def contradictions(con: apsw.Connection) -> Iterator[dict[str, Any]]:
    """Flagged contradictions with their numbers (a run's undo and `conflicts --resolve N` name them)."""
    return _rows(con, "SELECT id, older_id, newer_id, kind, reason, run_id, status, created "
                      "FROM state.contradictions ORDER BY id",
                 ("id", "older_id", "newer_id", "kind", "reason", "run_id", "status", "created"))


def links(con: apsw.Connection) -> Iterator[dict[str, Any]]:
    """Links only memvault knows (``derived_from``)."""
    return _rows(con, "SELECT source_id, kind, target_id, run_id, created FROM state.memory_links ORDER BY 1, 2, 3",
                 ("source_id", "kind", "target_id", "run_id", "created"))


def consolidation_runs(con: apsw.Connection) -> Iterator[dict[str, Any]]:
    """Consolidation runs (and merges), each with its actions and their undo data."""
    runs = rows(con, "SELECT id, started, finished, day, trigger, status, summary FROM state.consolidation_runs "
                     "ORDER BY id")
    for run_id, started, finished, day, trigger, status, summary in runs:
        actions = [
            {"seq": seq, "kind": kind, "ids": json.loads(ids), "reason": reason, "detail": json.loads(detail),
             "undo": json.loads(undo) if undo else None}
            for seq, kind, ids, reason, detail, undo in con.execute(
                "SELECT seq, kind, ids, reason, detail, undo FROM state.consolidation_actions WHERE run_id = ? "
                "ORDER BY seq", (run_id,))
        ]
        yield {"id": run_id, "started": started, "finished": finished, "day": day, "trigger": trigger,
               "status": status, "summary": json.loads(summary or "{}"), "actions": actions}


def conflicts(con: apsw.Connection, root: Path) -> Iterator[dict[str, Any]]:
    """Store versions written beside notes a person had changed, with the
    conflict copy's text while it is in the vault (resolving one deletes it)."""
    for record in _rows(con, "SELECT id, trace_id, path, conflict_path, kind, detail, created FROM state.conflicts "
                             "ORDER BY id", ("id", "trace_id", "path", "conflict_path", "kind", "detail", "created")):
        record["text"] = _note_text(root, record["conflict_path"])
        yield record


def verdicts(con: apsw.Connection) -> Iterator[dict[str, Any]]:
    """The llm's answers about contradiction candidates (asked once per pair of texts)."""
    return _rows(con, "SELECT pair, verdict, why, model, at FROM state.contradiction_verdicts ORDER BY pair",
                 ("pair", "verdict", "why", "model", "at"))
