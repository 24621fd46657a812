"""Passages: the part of a recalled note or long memory that matches.

An ordinary note (or a long memory) is recalled by the passage that matches,
not by its first lines: its best chunk by the query's vector
(:func:`passages_by_vector`, with another chunk nearly as good), else by the
query's words (:func:`passages_by_words`); :func:`quote` gives a passage's
text, bounded, so a recall's cost is bounded by this, not by the note.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import apsw

from memvault.store.db import rows as db

if TYPE_CHECKING:
    import numpy as np

    from memvault.store.embedding.vectors import VectorMatrix
    from memvault.store.retrieval.turns import NoteTurn

#: Further chunks of a note are quoted when their similarity to the message
#: is within this of the note's best chunk (and it passes the floor).
PASSAGE_MARGIN = 0.04
#: Most passages one note may put in the block.
PASSAGES_PER_NOTE = 2

_WORD = re.compile(r"[^\W_]+")
#: Words shorter than this are not evidence when a passage is chosen by words.
_MIN_WORD = 3
#: Letters of a word compared when a passage is chosen by words (a cheap
#: stem: "deploying" and "deploys" meet at "deplo").
_STEM = 5


@dataclass(frozen=True)
class Passage:
    """A span of a trace's content under a heading path, and how well it matches."""

    start: int
    stop: int
    heading: str
    similarity: float | None = None
    #: The session note's turn this passage is (:mod:`~memvault.store.retrieval.turns`).
    turn: "NoteTurn | None" = None


def _stems(text: str) -> set[str]:
    return {w[:_STEM] for w in (m.group(0).lower() for m in _WORD.finditer(text)) if len(w) >= _MIN_WORD}


#: Characters of a trace read when its passage is chosen by words, or cut
#: into sections when it has no chunks: the cost of a search or a recall is
#: bounded by this, not by the note (a 2.5 MB note took 1.6 s per search).
PASSAGE_SCAN_CHARS = 256 * 1024
#: Characters of one span compared with the message (a section of a note
#: without chunks can be the whole note).
SPAN_SCAN_CHARS = 8192
#: Longest quoted passage, in characters (a chunk is at most 256 tokens).
QUOTE_CHARS = 4096


def trace_spans(con: apsw.Connection, rowid: int, content: str) -> list[Passage]:
    """The chunks of a trace as spans (its sections when it has no chunks
    yet, of its first :data:`PASSAGE_SCAN_CHARS` characters)."""
    spans = db.rows(
        con,
        "SELECT start, stop, heading FROM chunks WHERE trace_rowid = ? AND start < ? ORDER BY seq",
        (rowid, PASSAGE_SCAN_CHARS),
    )
    if spans:
        return [Passage(r[0], r[1], r[2] or "") for r in spans]
    from memvault.store.embedding.chunk import sections

    return [Passage(s.start, s.stop, s.heading) for s in sections(content[:PASSAGE_SCAN_CHARS])]


def passages_by_words(spans: Sequence[Passage], content: str, message: str) -> list[Passage]:
    """The span sharing most words with ``message`` (no vectors to judge by),
    among those starting in the first :data:`PASSAGE_SCAN_CHARS` characters;
    the first span when none shares any."""
    wanted = _stems(message) - {w[:_STEM] for w in _STOPWORDS}
    best, best_n = None, 0
    for span in spans:
        if span.start >= PASSAGE_SCAN_CHARS:
            break
        n = len(wanted & _stems(span.heading + " " + content[span.start : min(span.stop, span.start + SPAN_SCAN_CHARS)]))
        if n > best_n:
            best, best_n = span, n
    if best is None:
        return list(spans[:1])
    return [best]


def passages_by_vector(
    con: apsw.Connection, matrix: "VectorMatrix", query: "np.ndarray", rowid: int, floor: float
) -> list[Passage]:
    """The trace's best chunk by similarity to ``query``, and up to
    :data:`PASSAGES_PER_NOTE` - 1 more within :data:`PASSAGE_MARGIN` of it
    (and at least ``floor``); overlapping chunks of one section are merged.
    Empty when the trace has no vectors."""
    import numpy as np

    from memvault.store.embedding.vectors import chunk_rows

    rows = matrix.rows_of_trace(rowid)
    if rows is None or len(rows) == 0:
        return []
    sims = matrix.matrix[rows] @ query
    order = np.argsort(-sims, kind="stable")
    best = float(sims[order[0]])
    picked = [int(i) for i in order[:PASSAGES_PER_NOTE]
              if float(sims[i]) >= max(floor, best - PASSAGE_MARGIN) or int(i) == int(order[0])]
    ids = [int(matrix.chunk_ids[rows[i]]) for i in picked]
    spans = chunk_rows(con, ids)
    out: list[Passage] = []
    for i, cid in zip(picked, ids):
        if cid not in spans:
            continue
        _, start, stop, heading = spans[cid]
        out.append(Passage(start, stop, heading or "", float(sims[i])))
    return merge_overlaps(out)


def event_when(event_time: str | None) -> str:
    """An event time as a recall line shows it: "2023-05-08 13:56", or the
    date alone when it has no time of day; "" when unknown."""
    if not event_time or len(event_time) < 10:
        return ""
    day, clock = event_time[:10], event_time[11:16]
    return f"{day} {clock}" if len(clock) == 5 and clock != "00:00" else day


def merge_overlaps(spans: list[Passage]) -> list[Passage]:
    """Spans of one heading that overlap or touch become one (best first kept)."""
    out: list[Passage] = []
    for p in spans:
        for n, q in enumerate(out):
            if p.heading == q.heading and p.start <= q.stop and q.start <= p.stop:
                out[n] = Passage(min(p.start, q.start), max(p.stop, q.stop), q.heading, q.similarity)
                break
        else:
            out.append(p)
    return out


def quote(content: str, span: Passage) -> str:
    """The text of a passage as the note has it (whitespace trimmed), at most
    :data:`QUOTE_CHARS` characters (cut at a word, marked "…")."""
    text = content[span.start : min(span.stop, span.start + QUOTE_CHARS + 1)].strip()
    if span.stop - span.start <= QUOTE_CHARS:
        return text
    cut = text[:QUOTE_CHARS].rsplit(None, 1)[0] if " " in text[:QUOTE_CHARS] else text[:QUOTE_CHARS]
    return cut.rstrip() + "…"


_STOPWORDS = frozenset(
    "about after again also and are because been before being between both but can could did does doing down "
    "during each for from further had has have having her here hers him his how into its itself just more most "
    "not now off once only other our out over own same she should some such than that the their theirs them "
    "then there these they this those through too under until very was were what when where which while who "
    "whom why will with would you your yours".split()
)
