"""Keyword search over the FTS5 index, BM25-ranked.

A plain query is natural language: it is cut into words, each word is quoted
so no character can be read as FTS5 syntax, and all words must match; when
that finds nothing, any word may match. ``raw=True`` hands the query to FTS5
as written (phrases, AND/OR/NOT, ``prefix*``) and turns its syntax errors
into :class:`QuerySyntaxError`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw

#: BM25 column weights for (title, content, tags): a title or tag match
#: counts for much more than a word somewhere in the body.
BM25_WEIGHTS = (10.0, 1.0, 5.0)

#: Words beyond this are dropped; FTS5 cost grows with every phrase.
MAX_QUERY_WORDS = 32

SNIPPET_TOKENS = 16
MARK_START, MARK_END = "**", "**"

# Letters and digits in any script, as unicode61 sees a token (underscore
# and emoji are separators to it, so they are to us).
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class QuerySyntaxError(Exception):
    """A ``--raw`` query that FTS5 cannot parse."""


@dataclass
class Hit:
    """One search result."""

    id: str
    title: str
    type: str
    kind: str
    path: str | None
    score: float
    snippet: str
    status: str = "active"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Filters:
    """Restrictions applied inside the query, before the limit."""

    types: Sequence[str] = ()
    kinds: Sequence[str] = ()
    tags: Sequence[str] = ()
    path_glob: str | None = None
    statuses: Sequence[str] = ("active",)


def query_words(query: str) -> list[str]:
    """The words of a natural-language query, as FTS5 will tokenize them."""
    return _WORD.findall(query)[:MAX_QUERY_WORDS]


def natural_match_expressions(query: str) -> list[str]:
    """FTS5 MATCH expressions for a plain query, strictest first.

    Each word becomes a quoted string, so ``NEAR(``, ``*``, ``"``, ``:`` and
    ``OR`` are just words. Empty when the query has no words at all.
    """
    words = query_words(query)
    if not words:
        return []
    quoted = ['"' + w.replace('"', '""') + '"' for w in words]
    exprs = [" ".join(quoted)]
    if len(quoted) > 1:
        exprs.append(" OR ".join(quoted))
    return exprs


def _filter_sql(f: Filters) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if f.statuses:
        clauses.append(f"t.status IN ({','.join('?' * len(f.statuses))})")
        params += list(f.statuses)
    if f.types:
        clauses.append(f"t.type IN ({','.join('?' * len(f.types))})")
        params += list(f.types)
    if f.kinds:
        clauses.append(f"t.kind IN ({','.join('?' * len(f.kinds))})")
        params += list(f.kinds)
    for tag in f.tags:
        tag = tag.lstrip("#").lower().rstrip("/")
        # A tag filter also matches nested tags: "project" finds "project/x".
        # '0' is the character after '/', so the range covers "tag/..." only.
        clauses.append(
            "EXISTS (SELECT 1 FROM trace_tags g WHERE g.trace_id = t.id AND "
            "(g.tag = ? OR (g.tag >= ? AND g.tag < ?)))"
        )
        params += [tag, tag + "/", tag + "0"]
    if f.path_glob:
        clauses.append("t.path GLOB ?")
        params.append(f.path_glob)
    return (" AND " + " AND ".join(clauses)) if clauses else "", params


def _run(con: apsw.Connection, match: str, filters: Filters, limit: int, offset: int = 0) -> list[Hit]:
    where, params = _filter_sql(filters)
    w_title, w_content, w_tags = BM25_WEIGHTS
    sql = f"""
        SELECT t.id, t.title, t.type, t.kind, t.path, t.status,
               bm25(traces_fts, {w_title}, {w_content}, {w_tags}) AS rank,
               snippet(traces_fts, -1, '{MARK_START}', '{MARK_END}', '…', {SNIPPET_TOKENS})
        FROM traces_fts JOIN traces t ON t.rowid = traces_fts.rowid
        WHERE traces_fts MATCH ? {where}
        ORDER BY rank LIMIT ? OFFSET ?
    """
    rows = con.execute(sql, (match, *params, limit, offset)).fetchall()
    return [
        Hit(id=r[0], title=r[1], type=r[2], kind=r[3], path=r[4], status=r[5], score=round(-r[6], 4), snippet=r[7])
        for r in rows
    ]


def keyword_search(
    con: apsw.Connection,
    query: str,
    *,
    limit: int = 10,
    filters: Filters | None = None,
    raw: bool = False,
) -> list[Hit]:
    """BM25-ranked hits for ``query``; never raises for a plain query."""
    filters = filters or Filters()
    if limit <= 0:
        return []
    if raw:
        if not query.strip():
            return []
        try:
            return _run(con, query, filters, limit)
        except apsw.SQLError as exc:
            raise QuerySyntaxError(f"invalid FTS5 query {query!r}: {_clean_error(exc)}") from None
    for expr in natural_match_expressions(query):
        hits = _run(con, expr, filters, limit)
        if hits:
            return hits
    return []


def _clean_error(exc: apsw.Error) -> str:
    msg = str(exc)
    return msg.split(": ", 1)[1] if msg.startswith("SQLError: ") else msg
