"""The memories and facts consolidation looks at, read once per run.

A :class:`Record` is everything the planner needs about one live memory or
fact: its text and type, when it was made, recalled, decayed and last edited
by a person, whether it is pinned, and a prospective memory's due date and
whether it is done. :func:`load_records` reads them from the index and the
durable state in a few queries; the labelled sets build them directly
(``bench/bench_consolidate_quality.py``), so both go through one planner.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any

import apsw

from memvault.store.consolidation.rules import Memo
from memvault.store.consolidation.text import features
from memvault.store.index.event_time import parse_stamp

if TYPE_CHECKING:
    import numpy as np

#: Version reasons that are memvault's own doing, not a person's edit.
OWN_REASONS = ("merged", "unmerged", "consolidate", "due task done", "ongoing work done", "undo")
_DUE = re.compile(r"(?:📅|due::)\s*(\d{4}-\d{2}-\d{2})")
_DONE = re.compile(r"^\s*(?:[-*+]\s*)?\[[xX]\]")


def parse_day(value: object) -> date | None:
    """A date (or the date of a time), or None."""
    t = parse_stamp(value)
    return t.date() if t else None


@dataclass
class Record:
    """One live memory or fact as consolidation sees it."""

    id: str
    kind: str  # "memory" | "fact"
    type: str
    scope: str
    content: str
    created: datetime
    tags: tuple[str, ...] = ()
    strength: float | None = None
    last_access: datetime | None = None
    decayed_at: date | None = None
    pinned: bool = False
    edited_at: datetime | None = None  # the last time a person changed it
    due: date | None = None
    done: bool = False
    path: str | None = None
    related: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def memo(self) -> Memo:
        """The record as the pair rules see it."""
        return Memo(self.id, self.type, self.scope, self.content, self.created, features(self.content))

    @property
    def last_seen(self) -> datetime:
        """When it was last recalled, else when it was made."""
        return self.last_access or self.created


#: ``status`` values that close a task or a piece of work: the closed status
#: types of Obsidian's Tasks plugin (DONE, CANCELLED), as people write them.
CLOSED_STATUSES = frozenset({"done", "cancelled", "canceled"})


def note_says_done(content: str, fm: dict[str, Any]) -> bool:
    """Whether a memory's note says it is done: ``done: true`` or a closed
    ``status`` property in its front-matter, or its text a checked task
    (``- [x] ...``), as a person marks it in Obsidian."""
    status = fm.get("status")
    closed = isinstance(status, str) and status.strip().lower() in CLOSED_STATUSES
    return fm.get("done") is True or closed or bool(_DONE.match(content))


def _due_and_done(content: str, fm: dict[str, Any]) -> tuple[date | None, bool]:
    due = parse_day(fm.get("due"))
    if due is None:
        m = _DUE.search(content)
        due = parse_day(m.group(1)) if m else None
    return due, note_says_done(content, fm)


def load_records(con: apsw.Connection) -> list[Record]:
    """Every live memory and fact, sorted by id (the planner's order)."""
    edited: dict[str, datetime] = {}
    own = " AND ".join(f"reason NOT LIKE '{r}%'" for r in OWN_REASONS)
    for memory_id, at in con.execute(
        f"SELECT memory_id, max(superseded_at) FROM state.memory_versions WHERE {own} GROUP BY memory_id"
    ):
        t = parse_stamp(at)
        if t:
            edited[memory_id] = t
    decayed = dict(con.execute("SELECT trace_id, decayed_at FROM state.recall WHERE decayed_at IS NOT NULL"))
    out: list[Record] = []
    for (tid, kind, type_, scope, content, tags, meta, path, strength, created, last_access) in con.execute(
        "SELECT id, kind, type, scope, content, tags, metadata, path, strength, created, last_access FROM traces "
        "WHERE kind IN ('memory', 'fact') AND status = 'active' ORDER BY id"
    ):
        metadata: dict[str, Any] = json.loads(meta) if meta else {}
        front = metadata.get("frontmatter")
        fm: dict[str, Any] = front if isinstance(front, dict) else {}
        due, done = _due_and_done(content, fm)
        out.append(Record(
            id=tid, kind=kind, type=type_, scope=scope or "user", content=content,
            created=parse_stamp(created) or datetime.now(timezone.utc),
            tags=tuple(t for t in (tags or "").split(" ") if t),
            strength=strength, last_access=parse_stamp(last_access), decayed_at=parse_day(decayed.get(tid)),
            pinned=fm.get("pinned") is True, edited_at=edited.get(tid), due=due, done=done, path=path,
            related=tuple(metadata.get("related") or ()),
            extra=fm,
        ))
    return out


def load_vectors(con: apsw.Connection, cache: apsw.Connection | None, model: str | None,
                 records: Sequence[Record]) -> "dict[str, np.ndarray]":
    """Unit vectors of the records that have one (the mean of a long memory's
    chunks), by id; empty without a model or cache."""
    import numpy as np

    from memvault.store.embedding.vectors import vectors_of

    if cache is None or model is None or not records:
        return {}
    wanted = {r.id for r in records}
    hashes: dict[str, list[bytes]] = {}
    for tid, h in con.execute(
        "SELECT t.id, c.hash FROM chunks c JOIN traces t ON t.rowid = c.trace_rowid "
        "WHERE t.kind IN ('memory', 'fact') AND t.status = 'active' ORDER BY t.id, c.seq"
    ):
        if tid in wanted:
            hashes.setdefault(tid, []).append(h)
    blobs = vectors_of(cache, model, [h for hs in hashes.values() for h in hs])
    out: dict[str, np.ndarray] = {}
    for tid, hs in hashes.items():
        rows = [np.frombuffer(blobs[h], dtype=np.float16).astype(np.float64) for h in hs if h in blobs]
        if len(rows) != len(hs) or not rows:
            continue  # not (fully) embedded yet: compared by text only
        v = np.mean(rows, axis=0)
        norm = float(np.linalg.norm(v))
        if norm > 0:
            out[tid] = v / norm
    return out


def by_id(records: Iterable[Record]) -> dict[str, Record]:
    """Records by id."""
    return {r.id: r for r in records}
