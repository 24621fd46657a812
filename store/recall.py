"""The recall block for a prompt, and recall feedback.

:func:`assemble` turns ranked memories and facts into a compact Markdown
block that fits a token budget, counted with the embedder's own tokenizer::

    ## Recalled Memory
    - [identity] Works as a backend engineer in Lisbon. (Memory/identity/role.md)
    - [fact] Deploys happen on Fridays. (Runbook > Deploys)

Identity memories come first (capped), then the relevant items best first;
an item that does not fit is skipped for a shorter one after it. With no
relevant item the block is empty, identity included: an agent gets nothing
rather than noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from .db import write_transaction
from .embed import count_tokens
from .records import now_iso

HEADER = "## Recalled Memory"
#: Longest single item, in tokens; longer memories are cut with an ellipsis.
ITEM_MAX_TOKENS = 120
#: Identity memories may take at most this share of the budget.
IDENTITY_SHARE = 0.4
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

    @property
    def source(self) -> str:
        """Where the item comes from: a fact's "Note > Heading", else the note path."""
        if self.kind == "fact":
            return self.title or (self.path or self.id)
        return self.path or self.id

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "id": self.id, "kind": self.kind, "type": self.type, "source": self.source, "path": self.path,
            "score": self.score, "tokens": self.tokens, "text": self.text,
        }


def _label(item: RecallItem) -> str:
    return "fact" if item.kind == "fact" and item.type in ("", "semantic", "fact") else item.type


def _line(item: RecallItem, max_tokens: int) -> str:
    body = " ".join(item.content.split())
    line = f"- [{_label(item)}] {body} ({item.source})"
    if count_tokens([line])[0] <= max_tokens:
        return line
    words = body.split(" ")
    lo, hi = 0, len(words)
    while lo < hi:  # the longest prefix of words that fits
        mid = (lo + hi + 1) // 2
        cand = f"- [{_label(item)}] {' '.join(words[:mid])}… ({item.source})"
        if count_tokens([cand])[0] <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return f"- [{_label(item)}] {' '.join(words[:lo])}… ({item.source})"


def block_tokens(text: str) -> int:
    """Tokens of a block as the budget counts them."""
    return count_tokens([text])[0] if text else 0


def assemble(identity: Sequence[RecallItem], relevant: Sequence[RecallItem], budget: int) -> tuple[str, list[RecallItem]]:
    """The block and the items in it, within ``budget`` tokens; empty when
    ``relevant`` is empty or nothing fits."""
    if not relevant or budget <= 0:
        return "", []
    used = block_tokens(HEADER)
    chosen: list[RecallItem] = []
    seen: set[str] = set()
    id_budget = int(budget * IDENTITY_SHARE)
    id_used = 0

    def fits(item: RecallItem, cap: int) -> bool:
        nonlocal used
        item.text = _line(item, min(ITEM_MAX_TOKENS, cap))
        item.tokens = block_tokens(item.text)
        if used + item.tokens > budget or item.tokens > cap:
            return False
        used += item.tokens
        return True

    for item in identity:
        if item.id in seen:
            continue
        if fits(item, id_budget - id_used):
            id_used += item.tokens
            chosen.append(item)
            seen.add(item.id)
    n_identity = len(chosen)
    for item in relevant:
        if item.id in seen:
            continue
        if fits(item, ITEM_MAX_TOKENS):
            chosen.append(item)
            seen.add(item.id)
    if len(chosen) == n_identity:  # nothing relevant fitted
        return "", []
    text = "\n".join([HEADER, *(i.text for i in chosen)])
    # Joined lines may tokenize a little differently from the parts: recheck.
    while chosen and block_tokens(text) > budget:
        chosen.pop()
        text = "\n".join([HEADER, *(i.text for i in chosen)]) if len(chosen) > n_identity else ""
    return (text, chosen) if text else ("", [])


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


def record_recall(con: apsw.Connection, ids: Sequence[str]) -> int:
    """Count a recall of each memory or fact in ``ids``: retrieval count + 1,
    last access now, strength + :data:`RECALL_BOOST` (capped at 1). Written to
    the index only; the notes are never rewritten for it."""
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
        return con.changes()
