"""The recall block for a prompt, and recall feedback.

:func:`assemble` turns ranked memories and facts into a compact Markdown
block that fits a token budget, counted with the embedder's own tokenizer::

    ## Recalled Memory
    - [identity] Works as a backend engineer in Lisbon. (Memory/identity/role.md)
    - [fact] Deploys happen on Fridays. (Runbook > Deploys)
    - 2023-05-08 Teodor: I sailed in a harbour regatta two weeks ago [2023-04-24]. (turn 4)
    - 2023-05-20 Ana: Is the exam still in June? · Ben: Moved it to July. (turns 7-8)

Each item is one plain line: a memory or fact as ``[type] date text
(source)`` (the date when it has an event time), a turn of a conversation as
``date speaker: text (turn N)`` (:mod:`~memvault.store.retrieval.turns`);
consecutive turns of one session the block holds are one exchange, one line
in the order they were said (:mod:`~memvault.store.retrieval.exchange`);
relative times in the text are followed by the dates they mean
(:func:`~memvault.store.retrieval.when.with_dates`).

The best relevant item is placed first, so identity can never crowd it
out: identity memories then get at most :data:`IDENTITY_SHARE` of what is
left (they are listed first all the same), and the other relevant items,
best first, fill the rest. An item longer than the room it has is cut at a
word boundary and marked with an ellipsis; a lesser item that would keep
fewer than :data:`MIN_TRUNCATED_WORDS` words is skipped for a shorter one
after it. With no relevant item the block is empty, identity included: an
agent gets nothing rather than noise. An identity memory that is itself
relevant counts as relevant (it is shown once, with the identity lines).

An ordinary note (or a long memory) is recalled by the passage that
matches, not by its first lines: :func:`passages` picks its best chunk (and
other chunks of it nearly as good) and each becomes an item of its own that
quotes the chunk's text under its heading path, ``(Note.md > Heading)``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import apsw

from memvault.store.db import rows as db
from memvault.store.db.connection import write_transaction
from memvault.store.db.records import now_iso
from memvault.store.embedding.model import count_tokens
from memvault.store.retrieval.exchange import Exchanges, joinable

if TYPE_CHECKING:

    pass

HEADER = "## Recalled Memory"
#: Longest single item, in tokens; longer memories are cut with an ellipsis.
ITEM_MAX_TOKENS = 120
#: Longest quoted passage of a note, in tokens: a chunk is at most 256
#: tokens, and the sentence that answers is rarely in its first 120.
PASSAGE_MAX_TOKENS = 200
#: Identity memories may take at most this share of the budget left after
#: the best relevant item (so at a small budget relevance is not starved).
IDENTITY_SHARE = 0.4
#: A lesser item cut to fit keeps at least this many words, else it is
#: skipped: a two-word fragment says nothing. (The best relevant item may be
#: cut to one word: something relevant is better than an empty block.)
MIN_TRUNCATED_WORDS = 4
#: Strength gained each time a memory is recalled (capped at 1).
RECALL_BOOST = 0.02
#: Decimals a recalled strength is rounded to in the index.
STRENGTH_DECIMALS = 6


@dataclass
class RecallItem:
    """One line of the block."""

    id: str
    kind: str
    type: str
    title: str
    path: str | None
    content: str
    score: float | None = None
    text: str = ""
    tokens: int = 0
    #: A quoted passage: its heading path ("" for the note's opening) and
    #: where it starts in the trace's content; None for a whole trace.
    heading: str | None = None
    start: int | None = None
    max_tokens: int = ITEM_MAX_TOKENS
    #: The newer claim that contradicts this one (see :func:`mark_outdated`).
    outdated_by: str | None = None
    #: When it happened (its event time, "2023-05-08" or "2023-05-08 13:56"; "" when unknown).
    when: str = ""
    #: Who said it, for a turn of a conversation ("" for anything else).
    speaker: str = ""
    #: The block id of a session note's turn this item quotes (``^t12``).
    anchor: str = ""
    #: A turn recalled because it stands beside a recalled turn: never the
    #: item a block is built around (:func:`assemble`).
    beside: bool = False
    #: For a turn: its session and its place in it (consecutive turns of one
    #: session share a line: :mod:`~memvault.store.retrieval.exchange`).
    session: str = ""
    position: int | None = None

    @property
    def key(self) -> str:
        """What makes an item distinct: its trace, and for a passage its place."""
        return self.id if self.start is None else f"{self.id}@{self.start}"

    @property
    def said(self) -> str:
        """What an item says, case, spaces, a list or quote mark and end
        punctuation aside ("" for a turn, which is about who said it when):
        one statement from several sources, or a fact and the line of its
        source note, is one line of the block."""
        if self.anchor:
            return ""
        text = " ".join(self.content.casefold().split())
        return _LIST_MARK.sub("", text).rstrip(".!;:, ")

    @property
    def source(self) -> str:
        """Where the item comes from: a fact's "Note > Heading", a turn's
        "note name#^t12", a passage's "path > heading path", else the note path."""
        if self.kind == "fact":
            return self.title or (self.path or self.id)
        where = self.path or self.id
        if self.anchor:
            return f"{_short(where.rsplit('/', 1)[-1].removesuffix('.md'))}#{self.anchor}"
        return f"{where} > {self.heading}" if self.heading else where

    @property
    def short_source(self) -> str:
        """:attr:`source` as a recall line shows it: a note by its name, not its
        folders (the full path is in ``source`` and ``path``); a turn by its
        number ("turn 4")."""
        if self.anchor:
            # The line already says when and who: the turn's number finds it in
            # that day's session, and its ``ref`` has the note's path. A note
            # name here cost 12 tokens a line, a third of a short turn's.
            number = self.anchor.removeprefix("^t")
            return f"turn {number}" if number.isdigit() else self.anchor
        if self.kind == "fact":
            return self.source
        name = _short((self.path or self.id).rsplit("/", 1)[-1].removesuffix(".md"))
        return f"{name} > {self.heading}" if self.heading else name

    def dated(self) -> "RecallItem":
        """The item with each relative time in its text ("yesterday")
        followed by the date it means, counted from when it happened."""
        if not self.when:
            return self
        from memvault.store.retrieval.when import with_dates

        return replace(self, content=with_dates(self.content, self.when))

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        data: dict[str, Any] = {
            "id": self.id, "kind": self.kind, "type": self.type, "source": self.source, "path": self.path,
            "score": self.score, "tokens": self.tokens, "text": self.text,
        }
        if self.start is not None:
            data.update(heading=self.heading, passage=self.content)
        if self.anchor:
            data.update(anchor=self.anchor, ref=f"{self.path}#{self.anchor}")
        if self.speaker:
            data["speaker"] = self.speaker
        if self.when:
            data["when"] = self.when
        if self.outdated_by:
            data["outdated_by"] = self.outdated_by
        return data


#: Longest note name a recall line's source shows.
SOURCE_NAME_CHARS = 40


#: A list item's or quote's mark at the start of a line ("- ", "1. ", "> ").
_LIST_MARK = re.compile(r"^(?:[-*+>]|\d+[.)])\s+")


def _short(name: str, most: int = SOURCE_NAME_CHARS) -> str:
    """``name`` cut at a word to ``most`` characters (marked "…")."""
    if len(name) <= most:
        return name
    cut = name[:most].rsplit(" ", 1)[0] if " " in name[:most] else name[:most]
    return cut.rstrip(" .,;:!?…") + "…"


#: How a recalled claim that a newer one contradicts is labelled.
OUTDATED = "possibly outdated"


def _label(item: RecallItem) -> str:
    label = "fact" if item.kind == "fact" and item.type in ("", "semantic", "fact") else item.type
    return f"{label}, {OUTDATED}" if item.outdated_by else label


def _render(item: RecallItem, words: list[str], cut: bool) -> str:
    """One plain line: a turn as "date speaker: text (turn N)", anything
    else as "[type] date text (source)"; the date only when known."""
    body = " ".join(words) + ("…" if cut else "")
    source, when = item.short_source, item.when[:10]
    if item.speaker:
        who = f"{when} {item.speaker}:" if when else f"{item.speaker}:"
        return f"- {who} {body} ({source})" if body else f"- {who} ({source})"
    head = f"[{_label(item)}] {when}" if when else f"[{_label(item)}]"
    return f"- {head} {body} ({source})" if body else f"- {head} ({source})"


def _tokens(line: str) -> int:
    return count_tokens([line])[0]


def fit_line(item: RecallItem, max_tokens: int, min_words: int = 1) -> str | None:
    """The item's line within ``max_tokens``: whole if it fits, else its
    longest word prefix that does, marked with "…"; None when even
    ``min_words`` words (or the whole line, if it has no more) do not fit."""
    # A word is at least one token, so no more than max_tokens words can
    # fit: the rest are never read (a memory of megabytes costs no more).
    words = _first_words(item.content, max_tokens + 1)
    cut_anyway = len(words) > max_tokens
    whole = _render(item, words, False)
    if not cut_anyway and _tokens(whole) <= max_tokens:
        return whole
    lo, hi = 0, len(words) - 1  # lo words are known to fit (0: unknown)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _tokens(_render(item, words[:mid], True)) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    if lo < max(1, min_words):
        return None
    return _render(item, words[:lo], True)


def _first_words(text: str, n: int) -> list[str]:
    """The first ``n`` whitespace-separated words of ``text``, reading no further than needed."""
    out: list[str] = []
    for m in re.finditer(r"\S+", text):
        if len(out) >= n:
            break
        out.append(m.group(0))
    return out


def whole_line(item: RecallItem) -> str | None:
    """The item's uncut line, or None when it is longer than its cap."""
    whole = _whole(item)
    return whole[0] if whole else None


def _whole(item: RecallItem) -> tuple[str, int] | None:
    """The item's uncut line and its tokens, or None when over its cap."""
    words = _first_words(item.content, item.max_tokens + 1)
    if len(words) > item.max_tokens:
        return None
    line = _render(item, words, False)
    tokens = _tokens(line)
    return (line, tokens) if tokens <= item.max_tokens else None


def min_item_tokens(item: RecallItem) -> int:
    """Tokens of the shortest line the item can have (its first word, cut)."""
    words = _first_words(item.content, 2)
    return _tokens(_render(item, words[:1], len(words) > 1))


def block_tokens(text: str) -> int:
    """Tokens of a block as the budget counts them."""
    return count_tokens([text])[0] if text else 0


def _join(lines: Sequence[str]) -> str:
    return "\n".join([HEADER, *lines])


def _place(item: RecallItem, room: int, min_words: int = MIN_TRUNCATED_WORDS) -> bool:
    """Give ``item`` its line within ``room`` tokens (and its own cap); False when it cannot have one."""
    line = fit_line(item, min(item.max_tokens, room), min_words)
    if line is None:
        return False
    item.text, item.tokens = line, _tokens(line)
    return True


def assemble(
    identity: Sequence[RecallItem], relevant: Sequence[RecallItem], budget: int, *, always_identity: bool = False
) -> tuple[str, list[RecallItem]]:
    """The block and the items in it, within ``budget`` tokens of the
    embedder's tokenizer; empty when ``relevant`` is empty or not even the
    shortest cut of one relevant item fits beside the header.

    ``identity`` is listed first and ``relevant`` (best first) after it; an
    item in both is shown once, among the identity lines. With
    ``always_identity`` (``recall.identity = always``: a session start) the
    identity memories make a block of their own when nothing is relevant.
    """
    rel = _distinct(relevant)
    if not rel and always_identity and identity and budget > 0:
        return _identity_only(identity, budget)
    if not rel or budget <= 0:
        return "", []
    room = budget - block_tokens(HEADER)  # lines join with newlines, which add no tokens
    # 1. The best relevant item that fits at all, cut down if need be: it is
    # what makes the block worth having, so it is placed before identity.
    anchor = _anchor(rel, room)
    if anchor is None:
        return "", []
    room -= anchor.tokens
    exchanges = Exchanges(_tokens)
    if joinable(anchor) and anchor.text == whole_line(anchor):
        exchanges.start(anchor)
    # 2. Identity: first in the block, but only a share of what is left.
    seen = {anchor.key, anchor.said}
    shown_identity, room = _place_identity(identity, anchor, room, seen)
    # 3. The other relevant items, best first, in what remains.
    shown_relevant = _place_relevant(rel, anchor, {i.id for i in identity}, room, seen, exchanges)
    lines = exchanges.lines(_block_order(identity, shown_identity, shown_relevant))
    return _within_budget(lines, anchor, budget)


def _distinct(relevant: Sequence[RecallItem]) -> list[RecallItem]:
    """``relevant`` with a trace (or passage), or one statement, listed twice
    kept once, at its best rank."""
    rel: list[RecallItem] = []
    said: set[str] = set()
    for item in relevant:
        if all(item.key != r.key for r in rel) and (not item.said or item.said not in said):
            rel.append(item)
            said.add(item.said)
    return rel


def _anchor(rel: Sequence[RecallItem], room: int) -> RecallItem | None:
    """The best relevant item that fits ``room`` at all, cut down if need be
    (its text and tokens set); None when none does."""
    for item in sorted(rel, key=lambda i: i.beside):  # stable: the best item not merely beside another
        line = fit_line(item, min(item.max_tokens, room))
        if line is not None:
            item.text, item.tokens = line, _tokens(line)
            return item
    return None


def _place_identity(
    identity: Sequence[RecallItem], anchor: RecallItem, room: int, seen: set[str]
) -> tuple[list[RecallItem], int]:
    """The identity items shown (the anchor among them when it is one), in
    :data:`IDENTITY_SHARE` of ``room``; and the room left. Adds what they
    show to ``seen``."""
    id_room = int(room * IDENTITY_SHARE)
    shown: list[RecallItem] = []
    for item in identity:
        if item.id == anchor.id:
            shown.append(anchor)
            continue
        if item.key in seen or (item.said and item.said in seen) or not _place(item, id_room):
            continue
        id_room -= item.tokens
        room -= item.tokens
        shown.append(item)
        seen.update((item.key, item.said))
    return shown, room


def _place_relevant(
    rel: Sequence[RecallItem], anchor: RecallItem, id_ids: set[str], room: int, seen: set[str],
    exchanges: Exchanges,
) -> list[RecallItem]:
    """The relevant items shown, best first, in ``room``: whole turns join
    their exchange's line where they can, the others are cut to fit (or
    left out). The anchor is among them unless it is an identity item."""
    shown: list[RecallItem] = []
    for item in rel:
        if item is anchor:
            if anchor.id not in id_ids:
                shown.append(anchor)
            continue
        if item.key in seen or (item.said and item.said in seen):
            continue
        whole = _whole(item) if joinable(item) else None
        added = exchanges.join(item, room) if whole is not None else None
        if added is None:
            if whole is not None and whole[1] <= room:  # whole on a line of its own: its neighbours may join it
                item.text, item.tokens = whole
                exchanges.start(item)
            elif not _place(item, room):  # cut to fit (or not at all): joins nothing
                continue
            added = item.tokens
        room -= added
        shown.append(item)
        seen.update((item.key, item.said))
    return shown


def _block_order(
    identity: Sequence[RecallItem], shown_identity: list[RecallItem], shown_relevant: list[RecallItem]
) -> list[RecallItem]:
    """The items in the block's order. An identity memory let in on its
    relevance still reads best among the identity lines: identity first, in
    its own order, then the rest."""
    order = {i.id: n for n, i in enumerate(identity)}
    chosen = sorted(shown_identity + [i for i in shown_relevant if i.id in order], key=lambda i: order[i.id])
    chosen += [i for i in shown_relevant if i.id not in order]
    return chosen


def _within_budget(
    lines: list[tuple[str, list[RecallItem]]], anchor: RecallItem, budget: int
) -> tuple[str, list[RecallItem]]:
    """The block of ``lines`` and its items. Lines tokenize independently
    (the tokenizer splits on whitespace), so the sum holds; should a
    tokenizer ever join across lines, shed the least important lines (never
    the anchor's) rather than break the budget."""
    text = _join([line for line, _ in lines])
    while block_tokens(text) > budget and len(lines) > 1:
        lines.remove(next(e for e in reversed(lines) if all(i is not anchor for i in e[1])))
        text = _join([line for line, _ in lines])
    if block_tokens(text) > budget:
        return "", []
    return text, [i for _, members in lines for i in members]


def _identity_only(identity: Sequence[RecallItem], budget: int) -> tuple[str, list[RecallItem]]:
    """A block of identity memories alone (``recall.identity = always``), in
    their order, as many as fit ``budget``."""
    room = budget - block_tokens(HEADER)
    chosen: list[RecallItem] = []
    for item in identity:
        if _place(item, room):
            room -= item.tokens
            chosen.append(item)
    text = _join([i.text for i in chosen])
    while chosen and block_tokens(text) > budget:
        chosen.pop()
        text = _join([i.text for i in chosen])
    return (text, chosen) if chosen else ("", [])


def identity_items(con: apsw.Connection, limit: int, scopes: Sequence[str] = ()) -> list[RecallItem]:
    """Active identity memories (of ``scopes``, when given) and identity
    facts, strongest and newest first; a source's facts in their note's order.

    A fact of type identity (a line of "About me.md", marked a memory source,
    or "I'm a data engineer" said in a conversation) says who the person is
    as much as an identity memory does. Facts have no scope, so a scope
    filter keeps them, as it does in search.
    """
    where = f" AND (t.kind = 'fact' OR t.scope IN ({','.join('?' * len(scopes))}))" if scopes else ""
    return [
        RecallItem(r[0], r[1], r[2], r[3], r[4], r[5])
        for r in con.execute(
            "SELECT t.id, t.kind, t.type, t.title, t.path, t.content FROM traces t "
            "LEFT JOIN facts f ON f.trace_id = t.id "
            "WHERE t.kind IN ('memory', 'fact') AND t.type = 'identity' "
            f"AND t.status = 'active'{where} ORDER BY coalesce(t.strength, 0.5) DESC, t.updated DESC, "
            "f.source_id, f.ordinal, t.id LIMIT ?",
            (*scopes, limit),
        )
    ]


def items_for(con: apsw.Connection, ranked: Sequence[tuple[str, float]]) -> list[RecallItem]:
    """RecallItems for (trace id, score) pairs, in the given order."""
    if not ranked:
        return []
    ids = [i for i, _ in ranked]
    marks = ",".join("?" * len(ids))
    found = {r[0]: r for r in db.rows(con, f"SELECT id, kind, type, title, path, content FROM traces WHERE id IN ({marks})", ids)}
    out: list[RecallItem] = []
    for i, s in ranked:
        if i in found:
            tid, kind, type_, title, path, content = found[i]
            out.append(RecallItem(tid, kind, type_, title, path, content, score=s))
    return out


def mark_outdated(con: apsw.Connection, relevant: Sequence[RecallItem],
                  identity: Sequence[RecallItem] = ()) -> list[RecallItem]:
    """Contradictions flagged by consolidation: an item that a newer live
    claim contradicts is marked :data:`OUTDATED`, and the newer claim is
    recalled just before it (fetched if the ranking left it out), so an agent
    reads which one holds now instead of two claims as equally true."""
    from memvault.store.consolidation.rows import outdated_by

    newer_of = outdated_by(con, [i.id for i in [*relevant, *identity]])
    if not newer_of:
        return list(relevant)
    for item in identity:
        item.outdated_by = newer_of.get(item.id)
    by_id = {i.id: i for i in relevant}
    missing = [(n, 0.0) for n in newer_of.values() if n not in by_id]
    by_id.update({i.id: i for i in items_for(con, missing)})
    out: list[RecallItem] = []
    for item in relevant:
        newer = by_id.get(newer_of.get(item.id, ""))
        if newer is not None and newer not in out:
            newer.score = max(newer.score or 0.0, item.score or 0.0)
            out.append(newer)
        item.outdated_by = newer_of.get(item.id)
        if item not in out:
            out.append(item)
    return out


def record_recall(con: apsw.Connection, ids: Sequence[str]) -> int:
    """Count a recall of each memory or fact in ``ids``: retrieval count + 1,
    last access now, strength + :data:`RECALL_BOOST` (capped at 1). Written to
    the index and the durable state; the notes are never rewritten for it."""
    if not ids:
        return 0
    marks = ",".join("?" * len(ids))
    with write_transaction(con):
        con.execute(
            f"UPDATE traces SET retrieval_count = retrieval_count + 1, last_access = ?, "
            # Rounded: repeated float additions would store 0.5800000000000001.
            f"strength = round(min(1.0, coalesce(strength, 0.5) + ?), {STRENGTH_DECIMALS}) "
            f"WHERE id IN ({marks}) AND kind IN ('memory', 'fact')",
            (now_iso(), RECALL_BOOST, *ids),
        )
        changed = con.changes()
        # Recall statistics are memvault's own: kept durably, so a rebuilt
        # index (and the note's strength after a person's edit) gets them back.
        con.execute(
            "INSERT INTO state.recall (trace_id, retrieval_count, last_access, strength) "
            f"SELECT id, retrieval_count, last_access, strength FROM traces WHERE id IN ({marks}) "
            "AND kind IN ('memory', 'fact') "
            "ON CONFLICT(trace_id) DO UPDATE SET retrieval_count = excluded.retrieval_count, "
            "last_access = excluded.last_access, strength = excluded.strength",
            ids,
        )
        return changed
