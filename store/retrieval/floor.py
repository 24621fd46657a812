"""The relevance floor: whether a candidate is evidence enough to show.

A candidate passes when its best-chunk similarity reaches ``min_similarity``,
or when its words are evidence enough (see :func:`floor_rule`): a strong
match on a distinctive (rare) word passes whatever its similarity
(identifiers embed poorly); one of the first ``KEYWORD_FLOOR_RANK`` keyword
hits that shares at least ``KEYWORD_MIN_WORDS`` content words with the query
needs only ``min_similarity - KEYWORD_FLOOR_MARGIN``; a trace with no vector
yet is judged by its words alone (:func:`keyword_relevant`). Stop words and
very common words are never evidence, so an unrelated query still returns
nothing rather than the least bad notes.

``context`` keeps only what passes. ``search`` uses the floor as a gate:
nothing passes, nothing is shown; otherwise candidates down to
``SEARCH_FLOOR_MARGIN`` under it stay in the list (:func:`~.rank.rank`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import apsw

from memvault.store.retrieval.keyword import common_words, placeholders, quoted, trace_count_estimate

if TYPE_CHECKING:
    from memvault.store.retrieval.candidate import Candidate
    from memvault.store.retrieval.rank import KeywordLists

#: The relevance floor (cosine similarity), calibrated on the labelled set:
#: at 0.30 every unrelated query returns nothing and 34/40 paraphrase
#: targets stay findable; 0.25 keeps 37/40 but lets 3/10 unrelated queries
#: return noise (bench/bench_retrieval.py --only calibrate).
MIN_SIMILARITY = 0.3
#: In ``search`` (not ``context``), once some candidate passes the floor, the
#: others stay in the list when their similarity is at most this far below
#: it: evidence a conversation spreads over several turns often sits under
#: the floor. Conversational dev split, hybrid recall@10 by margin: 0 (the
#: floor cuts every candidate under it) 0.670, 0.05 0.684, 0.10 0.696, 0.15
#: and more 0.708; 0.15 keeps "what is the time" from listing a note that
#: only shares stop words and a common word with it (similarity 0.10).
SEARCH_FLOOR_MARGIN = 0.15
#: A keyword hit below the floor still counts when it is among the first
#: KEYWORD_FLOOR_RANK keyword hits, shares at least KEYWORD_MIN_WORDS
#: distinct content words with the query and its similarity is at most
#: KEYWORD_FLOOR_MARGIN under the floor. On the labelled set this finds the
#: four paraphrase targets keyword mode found and hybrid dropped (similarity
#: 0.24-0.27, two shared words each) while every unrelated query stays
#: silent: their keyword hits share one content word ("machine" at 0.285)
#: or sit far below (two shared words at most 0.10).
KEYWORD_FLOOR_RANK = 10
KEYWORD_MIN_WORDS = 2
KEYWORD_FLOOR_MARGIN = 0.07
#: A word is distinctive (rare) when at most max(RARE_MIN_DOCS, RARE_SHARE x
#: traces) traces contain it: an identifier like ERR_CONNECTION_RESET, a
#: name, a term of art. Only a strong match on such a word skips the floor;
#: "time" (in 17% of the labelled vault) or a stop word never does.
RARE_MIN_DOCS = 3
RARE_SHARE = 0.01


def matched_words(con: apsw.Connection, words: Sequence[str], rowids: Sequence[int]) -> dict[int, set[str]]:
    """Which of ``words`` each of ``rowids`` contains (FTS5's own tokenizer
    and stemmer decide: one lookup per word, on those rows only)."""
    out: dict[int, set[str]] = {r: set() for r in rowids}
    if not rowids:
        return out
    marks = placeholders(len(rowids))
    for w, expr in zip(words, quoted(words)):
        for (rowid,) in con.execute(f"SELECT rowid FROM traces_fts WHERE traces_fts MATCH ? AND rowid IN ({marks})", (expr, *rowids)):
            out[rowid].add(w)
    return out


def rare_words(con: apsw.Connection, words: Sequence[str]) -> set[str]:
    """The distinctive ones among ``words``: in at most max(RARE_MIN_DOCS,
    RARE_SHARE x traces) traces (stepping that far into each word's match
    list, as :func:`~store.search.common_words` does: no counting)."""
    if not words:
        return set()
    limit = max(RARE_MIN_DOCS, int(RARE_SHARE * trace_count_estimate(con)))
    return set(words) - common_words(con, words, limit)


def keyword_relevant(words_matched: int, content: int) -> bool:
    """Whether a keyword hit is relevant on its words alone (no vector to
    judge it by): it shares at least half the query's content words."""
    return content > 0 and words_matched >= max(1, math.ceil(content / 2))


def floor_rule(c: Candidate, floor: float, content: int, rare_matched: bool) -> str:
    """The rule by which ``c`` passes the relevance floor, "" when none does:

    * "similarity": its best chunk reaches ``floor``;
    * "distinctive word": every query word matches and one of them is rare;
    * "keyword words": one of the first KEYWORD_FLOOR_RANK keyword hits,
      sharing at least KEYWORD_MIN_WORDS content words, with similarity at
      least ``floor - KEYWORD_FLOOR_MARGIN``;
    * "keyword (no vector)": no vector yet, and :func:`keyword_relevant`.

    ``content`` is the number of the query's content words and
    ``rare_matched`` whether ``c`` contains a rare one; ``c.words_matched``
    must be set for keyword hits below the floor.
    """
    if c.similarity is not None and c.similarity >= floor:
        return "similarity"
    if c.keyword_rank is None:
        return ""
    if c.similarity is None:
        return "keyword (no vector)" if keyword_relevant(c.words_matched or 0, content) else ""
    if c.keyword_strong and rare_matched:
        return "distinctive word"
    if (
        c.keyword_rank <= KEYWORD_FLOOR_RANK
        and (c.words_matched or 0) >= KEYWORD_MIN_WORDS
        and c.similarity >= floor - KEYWORD_FLOOR_MARGIN
    ):
        return "keyword words"
    return ""


def apply_floor(con: apsw.Connection, cands: dict[int, Candidate], kw: KeywordLists, floor: float) -> dict[int, Candidate]:
    """Set each candidate's floor rule (:func:`floor_rule`); the ones that pass."""
    # Words are weighed only for keyword hits the similarity alone would
    # drop and a word rule could still keep: a strong hit contains every
    # content word by definition; a weak one is looked up only when it has
    # no vector, or its rank and similarity leave "keyword words" open.
    def needs_words(c: Candidate) -> bool:
        if c.keyword_rank is None or c.keyword_strong:
            return False
        if c.similarity is None:
            return True
        return c.similarity < floor and c.keyword_rank <= KEYWORD_FLOOR_RANK and c.similarity >= floor - KEYWORD_FLOOR_MARGIN

    words = matched_words(con, kw.content, [c.rowid for c in cands.values() if needs_words(c)])
    rare: set[str] | None = None
    passed: dict[int, Candidate] = {}
    for rowid, c in cands.items():
        rare_matched = False
        if c.keyword_strong:
            c.words_matched = len(kw.content)
            if c.similarity is not None and c.similarity < floor:
                rare = rare_words(con, kw.content) if rare is None else rare
                rare_matched = bool(rare)
        elif rowid in words:
            c.words_matched = len(words[rowid])
        c.passed = floor_rule(c, floor, len(kw.content), rare_matched)
        if c.passed:
            passed[rowid] = c
    return passed
