"""Keyword search over the FTS5 index, BM25-ranked.

A plain query is natural language: it is cut into words, each word is quoted
so no character can be read as FTS5 syntax; traces matching every word come
first, and when they leave room on the page, traces matching any *content*
word (no stop words) follow, by BM25. ``raw=True`` hands the query to FTS5
as written (phrases, AND/OR/NOT, ``prefix*``) and turns its syntax errors
into :class:`QuerySyntaxError`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw

from memvault.store.db import rows as db
from memvault.store.index.turn_traces import WITHOUT_TURN_NOTES_SQL
from memvault.store.retrieval.neighbours import smooth_scores, turn_neighbours
from memvault.store.retrieval.snippet import (  # noqa: F401 - MARK_*: re-exported for bench/profile_search.py
    ELLIPSIS,
    MARK_END,
    MARK_START,
    SCAN_CHARS,
    SNIPPET_TOKENS,
    WINDOW_CHARS,
    Term,
    opening,
    query_terms,
    snippet,
)
from memvault.vault_io.errors import UsageError

#: BM25 column weights for (title, content, tags, context): a title or tag
#: match counts for much more than a word somewhere in the body. Only titles
#: a person gave are in ``title``; derived ones (a memory's first line, a
#: fact's heading path) and a memory's speaker are ``context``, weighed like
#: body text (index migration 11; measured in bench/bench_recall.py and
#: bench/bench_retrieval.py).
BM25_WEIGHTS = (10.0, 1.0, 5.0, 1.0)

#: Words beyond this are dropped; FTS5 cost grows with every phrase.
MAX_QUERY_WORDS = 32


# Letters and digits in any script, as unicode61 sees a token (underscore
# and emoji are separators to it, so they are to us).
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class QuerySyntaxError(UsageError):
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
    #: When the trace happened (its ``happened`` time, index migration 11):
    #: at or after ``since``, before ``until`` (index time strings).
    since: str | None = None
    until: str | None = None
    #: Memory scopes (user, a project...): a memory must have one of them;
    #: notes and facts have no scope and are not affected.
    scopes: Sequence[str] = ()


#: Words too common to be evidence on their own: left out of the any-word
#: expression (and of the content words of hybrid search and recall).
STOPWORDS = frozenset(
    "a am an and are as at be been but by can could did do does for from had has have how i if in into is it its "
    "may me might must my no not of on or our shall should so than that the their them then there these they this "
    "to was we were what when where which who why will with would you your".split()
)


def content_words(words: Sequence[str], common: set[str]) -> list[str]:
    """The distinct words of a query that can be evidence, lower-cased:
    no stop words, no words in more than COMMON_DOCS traces."""
    out: list[str] = []
    for w in words:
        low = w.lower()
        if low not in STOPWORDS and w not in common and low not in out:
            out.append(low)
    return out


def query_words(query: str) -> list[str]:
    """The words of a natural-language query, as FTS5 will tokenize them."""
    return _WORD.findall(query)[:MAX_QUERY_WORDS]


#: A word found in more traces than this is too common to rank on: scoring
#: every one of its matches costs tens of milliseconds at 20,000 notes and
#: says nothing about relevance (think "the"). See :func:`common_words`.
COMMON_DOCS = 2000


def quoted(words: Sequence[str]) -> list[str]:
    """Each word as an FTS5 string, so no character in it is read as syntax."""
    return ['"' + w.replace('"', '""') + '"' for w in words]


def common_words(con: apsw.Connection, words: Sequence[str], limit: int | None = None) -> set[str]:
    """The words that match more than ``limit`` (default :data:`COMMON_DOCS`) traces.

    Checked by stepping that far into the word's match list in rowid order
    (cheap, no ranking), so the test uses FTS5's own tokenizer and stemmer.
    """
    limit = COMMON_DOCS if limit is None else limit
    out = set()
    for w in set(words):
        row = con.execute(
            "SELECT rowid FROM traces_fts WHERE traces_fts MATCH ? LIMIT 1 OFFSET ?", (quoted([w])[0], limit)
        ).fetchone()
        if row is not None:
            out.add(w)
    return out


def trace_count_estimate(con: apsw.Connection) -> int:
    """About how many traces the index holds (the largest rowid: no scan)."""
    return int(db.scalar(con, "SELECT max(rowid) FROM traces") or 0)


def natural_match_expressions(
    query: str, con: apsw.Connection | None = None, common: set[str] | None = None
) -> list[str]:
    """FTS5 MATCH expressions for a plain query, strictest first: every word,
    then any content word (any word at all when the query has no content
    word). Empty when the query has no words at all.

    Each word is quoted, so ``NEAR(``, ``*``, ``"``, ``:`` and ``OR`` are just
    words. Given the index (``con``), very common words are left out when the
    query has others; a query of nothing but common words looks for them in
    titles and tags only, where they can still stand out. ``common`` may
    pass :func:`common_words` already computed. Stop words stay in the
    every-word expression (they cost nothing there) but not in the any-word
    one, where "what" and "did" would match half the notes: on the
    conversational set that lifts recall@10 of the any-word list by 0.01 on
    dev and 0.09 on test.
    """
    words = query_words(query)
    if not words:
        return []
    if common is None:
        common = common_words(con, words) if con is not None else set()
    rare = [w for w in words if w not in common]
    if not rare:
        return [TITLE_TAGS + "(" + " ".join(quoted(words)) + ")", " ".join(quoted(words))]
    exprs = [" ".join(quoted(rare))]
    if len(rare) > 1:
        any_words = content_words(rare, common) or rare
        exprs.append(" OR ".join(quoted(any_words)))
    return exprs


#: Column filter of the expression used for a query of only common words.
TITLE_TAGS = "{title tags} : "


#: The rowids of traces with a tag or a tag nested under it ("project" finds
#: "project/x"), from two ranges of the tag index: an OR of them makes SQLite
#: collect and de-duplicate keys, ten times slower.
TAGGED_SQL = (
    "SELECT trace_rowid FROM trace_tags WHERE tag = ? "
    "UNION ALL SELECT trace_rowid FROM trace_tags WHERE tag >= ? AND tag < ?"
)


def tag_params(tag: str) -> list[str]:
    """The parameters of :data:`TAGGED_SQL` for ``tag`` (as typed: ``#A/b/``).

    '0' is the character after '/', so the range covers "tag/..." only.
    """
    tag = tag.lstrip("#").lower().rstrip("/")
    return [tag, tag + "/", tag + "0"]


def filter_sql(f: Filters) -> tuple[str, list[Any]]:
    """SQL conditions (on ``traces t``) and parameters for ``f``, each
    prefixed with AND."""
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
        clauses.append(f"t.rowid IN ({TAGGED_SQL})")
        params += tag_params(tag)
    if f.path_glob:
        clauses.append("t.path GLOB ?")
        params.append(f.path_glob)
    if f.since:
        clauses.append("t.happened >= ?")
        params.append(f.since)
    if f.until:
        clauses.append("t.happened < ?")
        params.append(f.until)
    if f.scopes:
        clauses.append(f"(t.kind != 'memory' OR t.scope IN ({','.join('?' * len(f.scopes))}))")
        params += list(f.scopes)
    if not f.kinds or "note" in f.kinds:
        # A session note's turns are traces of their own and stand for it.
        clauses.append(WITHOUT_TURN_NOTES_SQL)
    return (" AND " + " AND ".join(clauses)) if clauses else "", params


def placeholders(n: int) -> str:
    """``?,?,...`` for an IN list of ``n`` values."""
    return ",".join("?" * n)


Prefilter = tuple[str, list[Any], float]


def fts_top(
    con: apsw.Connection, match: str, filters: Filters, k: int, pre: Prefilter | None = None
) -> list[tuple[int, float]]:
    """The ``k`` best (trace rowid, BM25 score) for an FTS5 expression that pass ``filters``.

    Ranks on the FTS table alone (no join, no snippet), among the traces a
    selective filter lists from an index (:func:`prefilter_sql`), then checks
    every filter on the few rows that come back, asking for more when they
    removed some: a query matching thousands of traces stays cheap. ``pre``
    may pass :func:`prefilter_sql` already computed for this query.
    """
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    fsql, fparams = filter_sql(filters)
    pre_sql, pparams, share = pre if pre is not None else prefilter_sql(con, filters)
    # Every round ranks all matches (the LIMIT only bounds the sort), so ask
    # at once for enough rows that the checks afterwards leave k, and widen
    # fast when they do not.
    want = k if share >= 1.0 else min(1000, int(2 * k / max(share, 0.01)))
    while True:
        rows = db.rows(
            con,
            f"SELECT rowid, bm25(traces_fts, {weights}) FROM traces_fts "
            f"WHERE traces_fts MATCH ?{pre_sql} ORDER BY 2 LIMIT ?",
            (match, *pparams, want),
        )
        if not rows:
            return []
        ok = {
            r[0]
            for r in con.execute(
                f"SELECT t.rowid FROM traces t WHERE t.rowid IN ({placeholders(len(rows))}){fsql}", [r[0] for r in rows] + fparams
            )
        }
        kept = [(r[0], -r[1]) for r in rows if r[0] in ok]
        if len(kept) >= k or len(rows) < want:
            return kept[:k]
        want *= 8


#: A tag on more than this share of the traces is no help in narrowing a
#: search down first: ranking and then checking the tag is cheaper.
TAG_SHARE_MAX = 0.3


def prefilter_sql(con: apsw.Connection, f: Filters) -> Prefilter:
    """Conditions (each prefixed with AND) restricting an FTS5 query to the
    traces that the selective parts of ``f`` allow, listed from an index: a
    tag used by few traces, a path glob, kinds other than ordinary notes;
    a time range few traces fall in; and the estimated share of what is
    left that the other filters pass.

    Computing BM25 for matches among those only is what makes a filtered
    search fast; the rest of ``f`` is checked afterwards (:func:`fts_top`).
    The "+" keeps SQLite from handing each IN list to FTS5 as rowid lookups,
    one full-text seek per listed trace.
    """
    clauses: list[str] = []
    params: list[Any] = []
    share = 1.0
    if f.tags:
        total = trace_count_estimate(con)
        for tag in f.tags:
            args = tag_params(tag)
            n = db.count(con, f"SELECT count(*) FROM ({TAGGED_SQL})", args)
            if n <= TAG_SHARE_MAX * total:
                clauses.append(f"+rowid IN ({TAGGED_SQL})")
                params += args
            else:
                share *= n / total
    if f.since or f.until:
        # A time range reads from its own index; like a tag, it narrows the
        # search first only when few traces fall in it.
        rng = " AND ".join(c for c, v in (("happened >= ?", f.since), ("happened < ?", f.until)) if v)
        args = [v for v in (f.since, f.until) if v]
        n = db.count(con, f"SELECT count(*) FROM traces INDEXED BY traces_happened WHERE {rng}", args)
        total = trace_count_estimate(con)
        if n <= TAG_SHARE_MAX * total:
            clauses.append(f"+rowid IN (SELECT rowid FROM traces INDEXED BY traces_happened WHERE {rng})")
            params += args
        else:
            share *= n / max(total, 1)
    if f.path_glob:
        # The path index holds every path: scanning it beats the table,
        # whose rows carry the notes' text.
        clauses.append("+rowid IN (SELECT rowid FROM traces INDEXED BY traces_path WHERE path GLOB ?)")
        params.append(f.path_glob)
    kinds = set(f.kinds) if f.kinds else {"note", "memory", "fact", "turn"}
    if f.types and "note" not in f.types:
        kinds.discard("note")  # only ordinary notes have the type "note"
    if "note" not in kinds:
        clauses.append(
            f"+rowid IN (SELECT rowid FROM traces INDEXED BY traces_kind_status WHERE kind IN ({placeholders(len(kinds))}))"
        )
        params += sorted(kinds)
    return "".join(" AND " + c for c in clauses), params, share


#: Keyword hits re-scored with their conversation neighbours: enough that a
#: reply whose prompt ranks in the top ten can join.
NEIGHBOUR_CANDIDATES = 50


def with_neighbours(
    con: apsw.Connection, match: str, ranked: list[tuple[int, float]], filters: Filters, k: int
) -> tuple[list[tuple[int, float]], dict[int, float]]:
    """``ranked`` (rowid, BM25 for ``match``) re-scored with conversation
    neighbours (:func:`~memvault.store.retrieval.neighbours.smooth_scores`):
    turns next to a match join when they pass ``filters``. The best ``k``,
    and what each gained from its neighbours (traces that are no turn: as
    they were)."""
    if not ranked:
        return ranked, {}
    nb = turn_neighbours(con, [r for r, _ in ranked])
    if not nb:
        return ranked[:k], {}
    scored = dict(ranked)
    smoothed = smooth_scores(con, match, scored, nb)
    joined = [r for r in smoothed if r not in scored]
    if joined:
        fsql, fparams = filter_sql(filters)
        ok = {r for (r,) in con.execute(f"SELECT t.rowid FROM traces t WHERE t.rowid IN ({placeholders(len(joined))}){fsql}",
                                        [*joined, *fparams])}
        smoothed = {r: v for r, v in smoothed.items() if r in scored or r in ok}
    order = sorted(smoothed, key=lambda r: (-smoothed[r][0], r))[:k]
    return [(r, smoothed[r][0]) for r in order], {r: smoothed[r][1] for r in order if smoothed[r][1] > 0}


def snippets(con: apsw.Connection, match: str, rowids: Sequence[int]) -> dict[int, str]:
    """Snippets of ``rowids`` for ``match`` (computed for shown hits only),
    from a bounded window of each text (:mod:`~memvault.store.retrieval.snippet`:
    the cost does not grow with a note's size or its number of hits, as
    FTS5's snippet() did).

    A fact's or memory's snippet always comes from its text: a fact's
    context is the note title and heading path, which often holds the
    matched word ("About me > Preferences") and would hide the fact itself,
    and a memory's context is who said it. A note whose text does not hold
    a term (it matched by its title or tags) shows its title when that does,
    else its first words.
    """
    if not match or not rowids:
        return {}
    terms = query_terms(con, match)
    out: dict[int, str] = {}
    for rowid, kind, title, head, size in con.execute(
        f"SELECT rowid, kind, title, substr(content, 1, {SCAN_CHARS}), length(content) FROM traces "
        f"WHERE rowid IN ({placeholders(len(rowids))})", list(rowids),
    ):
        found = snippet(con, terms, head)
        if found is None and size > SCAN_CHARS:
            found = _far_snippet(con, terms, rowid)
        if found is None and kind not in ("fact", "memory"):
            found = snippet(con, terms, title)
        out[rowid] = found if found is not None else opening(head)
    return out


def _far_snippet(con: apsw.Connection, terms: Sequence[Term], rowid: int) -> str | None:
    """A snippet from past the scanned prefix of a very long text: where a
    term's key first occurs (SQLite's instr(), one pass in C per term, as
    written in lower case), the window there."""
    places = [p for (p,) in (db.one(con, "SELECT instr(content, ?) FROM traces WHERE rowid = ?", (t.key, rowid))
                             for t in terms[:MAX_FAR_TERMS]) if p]
    if not places:
        return None
    start = max(1, min(places) - WINDOW_CHARS // 2)
    (window,) = db.one(con, "SELECT substr(content, ?, ?) FROM traces WHERE rowid = ?", (start, WINDOW_CHARS, rowid))
    found = snippet(con, terms, window)
    return None if found is None else (found if found.startswith(ELLIPSIS) else ELLIPSIS + found)


#: Terms looked for past a long text's scanned prefix (each costs a pass over it).
MAX_FAR_TERMS = 4


def _hits(
    con: apsw.Connection, match: str, top: list[tuple[int, float]], strict: int | None = None,
    gains: dict[int, float] | None = None,
) -> list[Hit]:
    """Hits for ranked (rowid, score) pairs, snippets marked for ``match``;
    the first ``strict`` matched every word (``extra["match"]``), ``gains``
    is what conversation neighbours added (``extra["neighbours"]``). A
    turn that joined for its neighbours alone shows its first words."""
    rowids = [r for r, _ in top]
    rows = {
        r[0]: r
        for r in con.execute(
            f"SELECT rowid, id, title, type, kind, path, status FROM traces WHERE rowid IN ({placeholders(len(rowids))})", rowids
        )
    }
    marks = snippets(con, match, rowids)
    gains = gains or {}
    for r in gains:
        if r in rows and r not in marks:
            marks[r] = _opening(con, r)
    return [
        Hit(id=rows[r][1], title=rows[r][2], type=rows[r][3], kind=rows[r][4], path=rows[r][5], status=rows[r][6],
            score=float(f"{score:.4g}"), snippet=marks.get(r, ""),
            extra={} if strict is None else {"match": "all" if n < strict else "any", "neighbours": gains.get(r, 0.0)})
        for n, (r, score) in enumerate(top)
        if r in rows
    ]


def _opening(con: apsw.Connection, rowid: int, words: int = SNIPPET_TOKENS) -> str:
    """The first words of a trace's content (a snippet for a hit no word matched)."""
    row = con.execute("SELECT substr(content, 1, 400) FROM traces WHERE rowid = ?", (rowid,)).fetchone()
    return opening(row[0] if row else "", words)


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
            return _hits(con, query, fts_top(con, query, filters, limit))
        except apsw.SQLError as exc:
            raise QuerySyntaxError(f"invalid FTS5 query {query!r}: {_clean_error(exc)}") from None
    exprs = natural_match_expressions(query, con)
    pre = prefilter_sql(con, filters) if exprs else None
    if exprs and exprs[0].startswith(TITLE_TAGS):
        # Only very common words: where they are in a title or tag first,
        # then (only if that leaves room) wherever they are, fully ranked.
        top = fts_top(con, exprs[0], filters, limit, pre)
        if len(top) < limit:
            seen = {r for r, _ in top}
            top += [t for t in fts_top(con, exprs[1], filters, limit, pre) if t[0] not in seen][: limit - len(top)]
        return _hits(con, exprs[1], top, len(top))
    if not exprs:
        return []
    # Every word first; then, to fill the page, any content word.
    # A turn of a conversation is scored with its neighbours (neighbours.py).
    top = fts_top(con, exprs[0], filters, limit, pre)
    strict = len(top)
    if strict < limit and len(exprs) > 1:
        seen = {r for r, _ in top}
        fill = fts_top(con, exprs[1], filters, limit, pre)
        if fill and turn_neighbours(con, [r for r, _ in fill]):
            # Conversation turns: rank a wider pool with their neighbours.
            fill = fts_top(con, exprs[1], filters, max(limit, NEIGHBOUR_CANDIDATES), pre)
        fill, gains = with_neighbours(con, exprs[1], fill, filters, len(fill) + limit)
        top += [t for t in fill if t[0] not in seen][: limit - strict]
        return _hits(con, exprs[-1], top, strict, gains)
    return _hits(con, exprs[-1], top, strict)


def _clean_error(exc: apsw.Error) -> str:
    msg = str(exc)
    return msg.split(": ", 1)[1] if msg.startswith("SQLError: ") else msg
