"""The turns of an ingested session note, as units of search and recall.

A session note ([flows](../../docs/flows.md)) holds a whole conversation,
each turn a callout closed by its own block id::

    > [!user] Noor · 2023-05-08 13:56
    > I went to a beekeeping club yesterday.

    ^t12

Search and recall address a turn by that block id (``path#^t12``): a hit on
a session note is the turn that matches best (:func:`best_turns_by_words`,
or the turn holding the best-matching chunk), and a recalled turn is one
plain line, ``2023-05-08 13:56 Noor: I went to a beekeeping club
yesterday [2023-05-07].``, with the turns before and after it beside it.

Reading is bounded: only the first :data:`TURN_SCAN_CHARS` characters of a
note are read for turns, and choosing a turn by words costs a substring
search per word of the message, not a pass over every turn's words.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import apsw

from memvault.store.retrieval.passages import _STOPWORDS, Passage
from memvault.store.retrieval.recall import ITEM_MAX_TOKENS, RecallItem
from memvault.vault_io.errors import MemvaultError

if TYPE_CHECKING:
    from memvault.store.answers.browse.trace import ReadResult, ShowResult

#: A trace as ``show`` or ``read`` gives it.
Shown = TypeVar("Shown", "ShowResult", "ReadResult")

#: Characters of a session note read for its turns (about 4,000 turns).
TURN_SCAN_CHARS = 1 << 20
#: Characters of one turn's text kept (a pasted log can be a whole file).
TURN_TEXT_CHARS = 4096

# The callout that opens a turn (a superseded turn's, "> [!superseded]-",
# is no part of the conversation any more), and the block id that closes it.
_HEAD = re.compile(r"^> \[!(user|assistant|tool|system)\][+-]?[ \t]*(.*?)[ \t]*$")
_END = re.compile(r"^\^t(\d+)[ \t]*$")
_STAMP = re.compile(r"^\d{4}-\d\d-\d\d(?: \d\d:\d\d)?$")
_WORD = re.compile(r"[^\W_]+")
#: Letters of a message word looked for (a cheap stem, as recall's passages use).
_STEM = 5
_MIN_WORD = 3


@dataclass(frozen=True)
class NoteTurn:
    """One turn of a session note: its block id number, who spoke (the name
    the callout shows, else the role's label), when ("2023-05-08 13:56", or
    ""), where it is in the note's content and its plain text."""

    n: int
    role: str
    speaker: str
    at: str
    start: int
    stop: int
    text: str

    @property
    def anchor(self) -> str:
        """The block id that addresses the turn (``^t12``)."""
        return f"^t{self.n}"


def has_turns(content: str) -> bool:
    """Whether ``content`` looks like a session note's transcript (cheap test first)."""
    return "> [!" in content and "\n^t" in content


def note_turns(content: str) -> list[NoteTurn]:
    """The turns of a session note's content, in order (the first
    :data:`TURN_SCAN_CHARS` characters; a turn whose block id a person
    removed is left out)."""
    if not has_turns(content):
        return []
    out: list[NoteTurn] = []
    head: tuple[int, str, str, str] | None = None
    lines: list[str] = []
    pos = 0
    text = content[:TURN_SCAN_CHARS]
    for line in text.split("\n"):
        start, pos = pos, pos + len(line) + 1
        m = _HEAD.match(line)
        if m:
            speaker, _, stamp = m.group(2).rpartition(" · ")
            if not _STAMP.match(stamp):
                speaker, stamp = m.group(2), ""
            head, lines = (start, m.group(1), speaker.strip() or m.group(1).title(), stamp), []
            continue
        if head is None:
            continue
        end = _END.match(line)
        if end:
            body = " ".join(" ".join(lines).split())[:TURN_TEXT_CHARS]
            out.append(NoteTurn(int(end.group(1)), head[1], head[2], head[3], head[0], min(pos, len(text)), body))
            head = None
        elif line.startswith(">"):
            lines.append(line[1:].strip())
        elif line.strip():
            head = None  # text outside a callout: not a turn after all
    return out


def turn_at(turns: Sequence[NoteTurn], offset: int) -> int | None:
    """The index in ``turns`` of the turn holding character ``offset`` (else the
    first turn after it), None when no turn is at or after it."""
    i = bisect.bisect_right([t.start for t in turns], offset) - 1
    if i >= 0 and offset < turns[i].stop:
        return i
    return i + 1 if i + 1 < len(turns) else None


def best_turns_by_words(content: str, turns: Sequence[NoteTurn], message: str, stopwords: frozenset[str]) -> int | None:
    """The index of the turn sharing most distinct words with ``message``
    (the earliest of equals; None when none shares one). One substring
    search per message word over the scanned text, whatever the number of
    turns."""
    if not turns:
        return None
    keys = {w.lower()[:_STEM] for w in _WORD.findall(message) if len(w) >= _MIN_WORD and w.lower() not in stopwords}
    if not keys:
        return None
    low = content[: turns[-1].stop].lower()
    starts = [t.start for t in turns]
    seen: dict[int, set[str]] = {}
    for key in keys:
        for m in re.finditer(r"(?<![^\W_])" + re.escape(key), low):
            i = bisect.bisect_right(starts, m.start()) - 1
            if i >= 0 and m.start() < turns[i].stop:
                seen.setdefault(i, set()).add(key)
    if not seen:
        return None
    return min(seen, key=lambda i: (-len(seen[i]), i))


def neighbours(turns: Sequence[NoteTurn], i: int) -> list[NoteTurn]:
    """Turn ``i`` with the turns before and after it, in order (the
    conversation's order: a superseded turn was never listed)."""
    return list(turns[max(0, i - 1) : i + 2])


def narrow_to_block(data: Shown, block: str) -> Shown:
    """A shown or read trace (``lookup.describe``, ``browse.read_trace``)
    narrowed to its turn ``^block``: the turn as one plain line, with its
    ``anchor``, ``ref``, speaker and time. Raises :class:`MemvaultError`
    when the note has no such turn."""
    from memvault.store.answers.browse.trace import TurnRef

    turn = next((t for t in note_turns(data.content or "") if t.anchor == f"^{block}"), None)
    if turn is None:
        raise MemvaultError(f"{data.path or data.id} has no turn ^{block}")
    return replace(data, content=turn_line(turn), turn=TurnRef(
        anchor=turn.anchor, ref=f"{data.path}#{turn.anchor}", speaker=turn.speaker, at=turn.at))


def turn_line(turn: NoteTurn) -> str:
    """A session note's turn as one plain line: date, speaker, text (relative
    times followed by the dates they mean)."""
    from memvault.store.retrieval.when import with_dates

    return " ".join(p for p in (turn.at, f"{turn.speaker}:", with_dates(turn.text, turn.at)) if p)


def turn_hit(con: apsw.Connection, hit: Any, turn: NoteTurn, query: str) -> dict[str, Any]:
    """What a search hit on a session note says of its best turn: its block
    id (``anchor``), ``ref`` (``path#^t12``), speaker and time, and a snippet
    of the turn itself."""
    from memvault.store.retrieval.keyword import query_words, quoted
    from memvault.store.retrieval.snippet import query_terms, snippet

    found = snippet(con, query_terms(con, " ".join(quoted(query_words(query)))), turn.text)
    return {"kind": "turn", "anchor": turn.anchor, "ref": f"{hit.path}#{turn.anchor}", "turn": turn.n, "speaker": turn.speaker,
            "at": turn.at, "snippet": found or hit.snippet}


def as_turns(content: str, spans: Sequence[Passage], message: str) -> list[Passage]:
    """``spans`` of a session note (best first) as the turns to quote: for
    each, among the turns it overlaps, the one sharing most words with
    ``message`` (so a chunk of several turns, or the whole transcript when
    there are no chunks, comes down to its turn), each turn once; a span
    holding no turn (the digest) is left out unless it is the best and no
    turn shares a word. ``spans`` as they are for any other note."""
    if not spans or not has_turns(content):
        return list(spans)
    turns = note_turns(content)
    out: list[Passage] = []
    for n, span in enumerate(spans):
        inside = [t for t in turns if t.start < span.stop and span.start < t.stop]
        if not inside and n > 0:
            continue
        pool = inside or turns
        i = 0 if len(pool) == 1 else best_turns_by_words(content, pool, message, _STOPWORDS)
        if i is None and not inside:
            return list(spans) if not out else out  # nothing to go by: the passage as it is
        turn = pool[i or 0]
        if all(p.turn is None or p.turn.n != turn.n for p in out):
            out.append(Passage(turn.start, turn.stop, "", span.similarity, turn=turn))
    return out


def turn_items(item: RecallItem, content: str, turn: NoteTurn) -> list[RecallItem]:
    """A recalled turn of a session note as plain items, with the turns
    before and after it beside it (a reply means little without what it
    answers): each one line of date, speaker and text, relative times
    followed by the dates they mean."""
    from memvault.store.retrieval.when import with_dates

    turns = note_turns(content)
    at = next((i for i, t in enumerate(turns) if t.n == turn.n), None)
    around = neighbours(turns, at) if at is not None else [turn]
    return [
        replace(item, content=with_dates(t.text, t.at), heading="", start=t.start, max_tokens=ITEM_MAX_TOKENS,
                when=t.at, speaker=t.speaker, anchor=t.anchor, beside=t.n != turn.n)
        for t in around
    ]


def trace_turn(con: apsw.Connection, trace_id: str) -> NoteTurn | None:
    """The turn a turn trace (:mod:`memvault.store.index.turn_traces`) stands
    for, as its session note holds it (its place in the note's content is
    not kept: ``start``/``stop`` are 0); None for any other trace."""
    from memvault.store.retrieval.passages import event_when

    row = con.execute(
        "SELECT content, title, event_time, json_extract(metadata, '$.role'), json_extract(metadata, '$.seq') "
        "FROM traces WHERE id = ? AND kind = 'turn' AND json_valid(metadata)",
        (trace_id,),
    ).fetchone()
    if row is None:
        return None
    text, speaker, event_time, role, seq = row
    return NoteTurn(int(seq or 0), role or "", speaker or "", event_when(event_time), 0, 0, text)
