"""Browsing the index without a query: list, what changed lately, read one trace.

These answer the questions an agent (or a person at a shell) asks before
it knows what to search for: which memories exist (:func:`list_traces`,
filtered by kind, type, memory scope, tag and time, sorted, in pages),
what changed since yesterday (:func:`recent`), and everything about one
note, memory or fact (:func:`read_trace`: metadata, its version, links both
ways, an ``obsidian://`` URI, optionally one section of a note).

Times given as ``since``/``until`` are read as every ``--since``/``--until``
is (:func:`memvault.store.retrieval.when.parse_bound`: an ISO date or
date-time, a month or a year, or a span back from now, "2 days", "3h",
"last week", "yesterday"; ``until`` takes the end of a day, month or year). For
:func:`list_traces` they bound when a memory *happened* (its event time: a
session date, ``occurred``, a daily note's date; else when it was created),
the time ``search`` and ``context`` filter on too; for :func:`recent` they
bound when it last *changed* (``updated``). Read-only throughout.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import apsw

from memvault.store.answers.browse.listing import ListedTrace, TracePage
from memvault.store.db import records as rec
from memvault.store.db.rows import count, rows
from memvault.store.retrieval.keyword import TAGGED_SQL, tag_params
from memvault.vault_io import json_input
from memvault.vault_io.errors import UsageError
from memvault.vault_io.fact_keys import check_key, read_key
from memvault.vault_io.uri import obsidian_uri

if TYPE_CHECKING:
    from memvault.store.answers.browse.trace import FactSource, ReadResult

#: Trace kinds of each ``what`` choice for listing (facts only when asked:
#: one source note holds hundreds).
LIST_KINDS: dict[str, tuple[str, ...]] = {
    "memories": ("memory",),
    "facts": ("fact",),
    "notes": ("note",),
    "all": ("memory", "note"),
}
SORTS = {
    "updated": "coalesce(nullif(t.updated, ''), t.created) DESC, t.id",
    "created": "t.created DESC, t.id",
    "strength": "coalesce(t.strength, 0.5) DESC, coalesce(nullif(t.updated, ''), t.created) DESC, t.id",
    "happened": "t.happened DESC, t.id",
    "title": "t.title COLLATE NOCASE, t.id",
}
PREVIEW_CHARS = 200
MAX_LIMIT = 500

class BrowseError(UsageError):
    """A bad argument to list/recent/read (a time, a cursor, a sort)."""


def _key_pattern(given: str) -> str:
    """A key to list by, checked: exact, or ``deploy.*`` (every key ``deploy.`` begins)."""
    text = given.strip()
    if not text.endswith("*"):
        return check_key(text)
    stem = text[:-1]
    dot = stem.endswith(".")
    return check_key(stem[:-1] if dot else stem) + ("." if dot else "") + "*"


def _cursor_offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        data = json_input.loads(base64.urlsafe_b64decode(cursor.encode() + b"=" * (-len(cursor) % 4)))
        return max(0, int(data["o"]))
    except (ValueError, KeyError, TypeError):
        raise BrowseError(f"cursor {cursor!r} is not one this list handed out") from None


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def _item(vault_name: str, r: Sequence[Any], versions: dict[str, int]) -> ListedTrace:
    (trace_id, kind, type_, title, path, status, tags, scope, strength, created, updated, source, content, key) = r
    preview = " ".join((content or "").split())
    return ListedTrace(
        id=trace_id, kind=kind, type=type_, title=title, path=path,
        uri=obsidian_uri(vault_name, path) if path else None, status=status,
        tags=tuple(tags.split(" ")) if tags else (), scope=scope, strength=strength,
        created=created, updated=updated, source=source,
        preview=preview[:PREVIEW_CHARS] + ("…" if len(preview) > PREVIEW_CHARS else ""),
        version=versions[trace_id] if kind == "memory" else None,
        key=read_key(key) if kind == "memory" else None,
    )


#: A memory's key as its note writes it (:mod:`memvault.store.memories.keys`).
_KEY_SQL = "CASE WHEN t.kind = 'memory' AND json_valid(t.metadata) THEN json_extract(t.metadata, '$.key') END"
_ITEM_COLS = ("t.id, t.kind, t.type, t.title, t.path, t.status, t.tags, t.scope, t.strength, t.created, "
              f"coalesce(nullif(t.updated, ''), t.created), t.source, t.content, {_KEY_SQL}")


def _query(
    con: apsw.Connection,
    *,
    kinds: Sequence[str],
    types: Sequence[str],
    scopes: Sequence[str],
    tags: Sequence[str],
    statuses: Sequence[str],
    since: str | None,
    until: str | None,
    stamp: str = "coalesce(nullif(t.updated, ''), t.created)",
    key: str | None = None,
) -> tuple[str, list[Any]]:
    clauses = [f"t.kind IN ({','.join('?' * len(kinds))})", f"t.status IN ({','.join('?' * len(statuses))})"]
    params: list[Any] = [*kinds, *statuses]
    if types:
        clauses.append(f"t.type IN ({','.join('?' * len(types))})")
        params += list(types)
    if scopes:
        clauses.append(f"(t.kind != 'memory' OR t.scope IN ({','.join('?' * len(scopes))}))")
        params += list(scopes)
    for tag in tags:
        clauses.append(f"t.rowid IN ({TAGGED_SQL})")
        params += tag_params(tag)
    if key:
        # A key, or with a trailing ``*`` every key it begins (``deploy.*``).
        exact = not key.endswith("*")
        clauses.append(f"lower(trim({_KEY_SQL})) {'=' if exact else 'GLOB'} ?")
        params.append(key)
    if since:
        clauses.append(f"{stamp} >= ?")
        params.append(since)
    if until:
        clauses.append(f"{stamp} < ?")
        params.append(until)
    return " AND ".join(clauses), params


def list_traces(
    con: apsw.Connection,
    vault_name: str,
    *,
    what: str = "memories",
    types: Sequence[str] = (),
    scopes: Sequence[str] = (),
    tags: Sequence[str] = (),
    sort: str = "updated",
    since: str | None = None,
    until: str | None = None,
    include_deleted: bool = False,
    limit: int = 50,
    cursor: str | None = None,
    by_change: bool = False,
    key: str | None = None,
) -> TracePage:
    """A page of traces (its ``next_cursor`` is None on the last page; pass
    it back as ``cursor`` for the next).
    ``since``/``until`` bound when each happened (``by_change``: when it
    last changed)."""
    if what not in LIST_KINDS:
        raise BrowseError(f"what to list must be one of {', '.join(LIST_KINDS)}, not {what!r}")
    if sort not in SORTS:
        raise BrowseError(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
    if key:
        key = _key_pattern(key)
    limit = max(1, min(MAX_LIMIT, int(limit)))
    offset = _cursor_offset(cursor)
    from memvault.store.retrieval.when import time_bounds

    bounds = time_bounds(since, until, datetime.now(timezone.utc))
    stamp = "coalesce(nullif(t.updated, ''), t.created)" if by_change else "t.happened"
    where, params = _query(
        con, kinds=LIST_KINDS[what], types=types, scopes=scopes, tags=tags,
        statuses=("active", "deleted") if include_deleted else ("active",), stamp=stamp, key=key, **bounds,
    )
    total = count(con, f"SELECT count(*) FROM traces t WHERE {where}", params)
    page = rows(
        con,
        f"SELECT {_ITEM_COLS} FROM traces t WHERE {where} ORDER BY {SORTS[sort]} LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    from memvault.store.memories.rows import current_versions

    versions = current_versions(con, [r[0] for r in page if r[1] == "memory"])
    items = tuple(_item(vault_name, r, versions) for r in page)
    more = offset + len(items) < total
    return TracePage(items, total, _cursor(offset + len(items)) if more else None)


def recent(
    con: apsw.Connection,
    vault_name: str,
    *,
    since: str | None = "7 days",
    until: str | None = None,
    what: str = "all",
    types: Sequence[str] = (),
    scopes: Sequence[str] = (),
    limit: int = 20,
    cursor: str | None = None,
) -> TracePage:
    """What changed lately, newest first: notes and memories (facts with
    ``what="facts"``) changed since ``since``, forgotten memories included
    (their ``status`` says so); ``cursor``: where the last page ended."""
    if what not in LIST_KINDS:
        raise BrowseError(f"what must be one of {', '.join(LIST_KINDS)}, not {what!r}")
    return list_traces(con, vault_name, what=what, types=types, scopes=scopes, since=since or "7 days", until=until,
                       include_deleted=True, limit=limit, by_change=True, cursor=cursor)


def section_span(content: str, heading: str) -> tuple[int, int, str] | None:
    """(start, stop, heading path) of the section under ``heading`` (its text
    and its subsections), matched by the heading's own text or its whole
    path, case-insensitively; None when the note has no such heading."""
    from memvault.store.embedding.chunk import sections

    want = heading.strip().lstrip("#").strip().casefold()
    parts = sections(content)
    for i, sec in enumerate(parts):
        names = [p.strip().casefold() for p in sec.heading.split(" > ")] if sec.heading else []
        if names and (names[-1] == want or sec.heading.casefold() == want):
            stop = sec.stop
            for later in parts[i + 1:]:
                if later.heading.startswith(sec.heading + " > "):
                    stop = later.stop
                else:
                    break
            return sec.start, stop, sec.heading
    return None


def read_trace(con: apsw.Connection, vault_name: str, t: rec.TraceRow, heading: str | None = None) -> ReadResult:
    """Everything about one trace: metadata, content (or one section of a
    note), version (memories), source anchor (facts), links out and in."""
    from memvault.store.answers.browse.trace import ReadResult
    from memvault.store.index.lookup import incoming, outgoing, parse_error

    meta = t.metadata or {}
    uri = obsidian_uri(vault_name, t.path) if t.path else None
    content, version, supersedes, fact, properties, section = t.content, None, None, None, None, None
    key = None
    if t.kind == "memory":
        from memvault.store.memories.rows import current_version

        version = current_version(con, t.id)
        supersedes = meta.get("supersedes") or None
        key = read_key(meta.get("key"))
    elif t.kind == "fact":
        fact, uri = _fact_source(con, vault_name, t.id, uri)
    elif isinstance(meta.get("frontmatter"), dict) and meta["frontmatter"]:
        properties = meta["frontmatter"]
    if heading:
        found = section_span(t.content, heading)
        if found is None:
            raise BrowseError(f"{t.path or t.id} has no heading {heading!r}")
        start, stop, section = found
        content = t.content[start:stop].strip()
        if t.path:
            uri = obsidian_uri(vault_name, t.path, section.split(" > ")[-1])
    return ReadResult(
        id=t.id, kind=t.kind, type=t.type, title=t.title, path=t.path, uri=uri, status=t.status,
        tags=tuple(t.tags), created=t.created, updated=t.updated, source=t.source, scope=t.scope,
        strength=t.strength, parse_error=parse_error(con, t.id), content=content, version=version,
        supersedes=supersedes, fact=fact, properties=properties, reason=t.reason or None, heading=section,
        links=tuple(outgoing(con, t.id)), backlinks=tuple(incoming(con, t.id)), key=key,
    )


def _fact_source(con: apsw.Connection, vault_name: str, fact_id: str, uri: str | None) -> tuple[FactSource | None, str | None]:
    """Where a fact came from, and its ``obsidian://`` link there (``uri`` when it has no source path)."""
    from memvault.store.answers.browse.trace import FactSource
    from memvault.store.facts.rows import fact_anchor

    anchor = fact_anchor(con, fact_id)
    if anchor is None:
        return None, uri
    source = FactSource(source_path=anchor.path, anchor=anchor.anchor, heading_path=anchor.heading_path,
                        lines=(anchor.line_start, anchor.line_end), source_uri=anchor.source_uri)
    return source, obsidian_uri(vault_name, anchor.path, anchor.anchor) if anchor.path else uri
