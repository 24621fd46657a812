"""The recall block for a prompt, and recall feedback.

:func:`assemble` turns ranked memories and facts into a compact Markdown
block that fits a token budget, counted with the embedder's own tokenizer::

    ## Recalled Memory
    - [identity] Works as a backend engineer in Lisbon. (Memory/identity/role.md)
    - [fact] Deploys happen on Fridays. (Runbook > Deploys)

The best relevant item is placed first, so identity can never crowd it
out: identity memories then get at most :data:`IDENTITY_SHARE` of what is
left (they are listed first all the same), and the other relevant items,
best first, fill the rest. An item longer than the room it has is cut at a
word boundary and marked with an ellipsis; a lesser item that would keep
fewer than :data:`MIN_TRUNCATED_WORDS` words is skipped for a shorter one
after it. With no relevant item the block is empty, identity included: an
agent gets nothing rather than noise. An identity memory that is itself
relevant counts as relevant (it is shown once, with the identity lines).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from memvault.store.db.connection import write_transaction
from memvault.store.db.records import now_iso
from memvault.store.embedding.model import count_tokens

HEADER = "## Recalled Memory"
#: Longest single item, in tokens; longer memories are cut with an ellipsis.
ITEM_MAX_TOKENS = 120
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
    #: The newer claim that contradicts this one (see :func:`mark_outdated`).
    outdated_by: str | None = None

    @property
    def source(self) -> str:
        """Where the item comes from: a fact's "Note > Heading", else the note path."""
        if self.kind == "fact":
            return self.title or (self.path or self.id)
        return self.path or self.id

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        data: dict[str, Any] = {
            "id": self.id, "kind": self.kind, "type": self.type, "source": self.source, "path": self.path,
            "score": self.score, "tokens": self.tokens, "text": self.text,
        }
        if self.outdated_by:
            data["outdated_by"] = self.outdated_by
        return data


#: How a recalled claim that a newer one contradicts is labelled.
OUTDATED = "possibly outdated"


def _label(item: RecallItem) -> str:
    label = "fact" if item.kind == "fact" and item.type in ("", "semantic", "fact") else item.type
    return f"{label}, {OUTDATED}" if item.outdated_by else label


def _render(item: RecallItem, words: list[str], cut: bool) -> str:
    body = " ".join(words) + ("…" if cut else "")
    return f"- [{_label(item)}] {body} ({item.source})" if body else f"- [{_label(item)}] ({item.source})"


def _tokens(line: str) -> int:
    return count_tokens([line])[0]


def fit_line(item: RecallItem, max_tokens: int, min_words: int = 1) -> str | None:
    """The item's line within ``max_tokens``: whole if it fits, else its
    longest word prefix that does, marked with "…"; None when even
    ``min_words`` words (or the whole line, if it has no more) do not fit."""
    words = item.content.split()
    whole = _render(item, words, False)
    if _tokens(whole) <= max_tokens:
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


def min_item_tokens(item: RecallItem) -> int:
    """Tokens of the shortest line the item can have (its first word, cut)."""
    words = item.content.split()
    return _tokens(_render(item, words[:1], len(words) > 1))


def block_tokens(text: str) -> int:
    """Tokens of a block as the budget counts them."""
    return count_tokens([text])[0] if text else 0


def _join(lines: Sequence[str]) -> str:
    return "\n".join([HEADER, *lines])


def assemble(identity: Sequence[RecallItem], relevant: Sequence[RecallItem], budget: int) -> tuple[str, list[RecallItem]]:
    """The block and the items in it, within ``budget`` tokens of the
    embedder's tokenizer; empty when ``relevant`` is empty or not even the
    shortest cut of one relevant item fits beside the header.

    ``identity`` is listed first and ``relevant`` (best first) after it; an
    item in both is shown once, among the identity lines.
    """
    rel: list[RecallItem] = []
    for item in relevant:  # a trace listed twice is shown once, at its best rank
        if all(item.id != r.id for r in rel):
            rel.append(item)
    if not rel or budget <= 0:
        return "", []
    header = block_tokens(HEADER)
    room = budget - header  # lines join with newlines, which add no tokens
    # 1. The best relevant item that fits at all, cut down if need be: it is
    # what makes the block worth having, so it is placed before identity.
    anchor: RecallItem | None = None
    for item in rel:
        line = fit_line(item, min(ITEM_MAX_TOKENS, room))
        if line is not None:
            anchor, item.text, item.tokens = item, line, _tokens(line)
            break
    if anchor is None:
        return "", []
    room -= anchor.tokens
    # 2. Identity: first in the block, but only a share of what is left.
    id_ids = {i.id for i in identity}
    id_room = int(room * IDENTITY_SHARE)
    shown_identity: list[RecallItem] = []
    seen = {anchor.id}
    for item in identity:
        if item.id == anchor.id:
            shown_identity.append(anchor)
            continue
        if item.id in seen:
            continue
        line = fit_line(item, min(ITEM_MAX_TOKENS, id_room), MIN_TRUNCATED_WORDS)
        if line is None:
            continue
        item.text, item.tokens = line, _tokens(line)
        id_room -= item.tokens
        room -= item.tokens
        shown_identity.append(item)
        seen.add(item.id)
    # 3. The other relevant items, best first, in what remains.
    shown_relevant: list[RecallItem] = []
    for item in rel:
        if item is anchor:
            if anchor.id not in id_ids:
                shown_relevant.append(anchor)
            continue
        if item.id in seen:
            continue
        line = fit_line(item, min(ITEM_MAX_TOKENS, room), MIN_TRUNCATED_WORDS)
        if line is None:
            continue
        item.text, item.tokens = line, _tokens(line)
        room -= item.tokens
        shown_relevant.append(item)
        seen.add(item.id)
    # An identity memory let in on its relevance still reads best among the
    # identity lines: identity first, in its own order, then the rest.
    order = {i.id: n for n, i in enumerate(identity)}
    chosen = sorted(shown_identity + [i for i in shown_relevant if i.id in order], key=lambda i: order[i.id])
    chosen += [i for i in shown_relevant if i.id not in order]
    text = _join([i.text for i in chosen])
    # Lines tokenize independently (the tokenizer splits on whitespace), so
    # the sum holds; should a tokenizer ever join across lines, shed the
    # least important lines (never the anchor) rather than break the budget.
    while block_tokens(text) > budget and len(chosen) > 1:
        drop = next(i for i in reversed(chosen) if i is not anchor)
        chosen.remove(drop)
        text = _join([i.text for i in chosen])
    if block_tokens(text) > budget:
        return "", []
    return text, chosen


def identity_items(con: apsw.Connection, limit: int) -> list[RecallItem]:
    """Active identity memories, strongest and newest first."""
    return [
        RecallItem(r[0], r[1], r[2], r[3], r[4], r[5])
        for r in con.execute(
            "SELECT id, kind, type, title, path, content FROM traces WHERE kind = 'memory' AND type = 'identity' "
            "AND status = 'active' ORDER BY coalesce(strength, 0.5) DESC, updated DESC, id LIMIT ?",
            (limit,),
        )
    ]


def items_for(con: apsw.Connection, ranked: Sequence[tuple[str, float]]) -> list[RecallItem]:
    """RecallItems for (trace id, score) pairs, in the given order."""
    if not ranked:
        return []
    ids = [i for i, _ in ranked]
    marks = ",".join("?" * len(ids))
    rows = {
        r[0]: r
        for r in con.execute(f"SELECT id, kind, type, title, path, content FROM traces WHERE id IN ({marks})", ids)
    }
    return [RecallItem(*rows[i], score=s) for i, s in ranked if i in rows]


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
