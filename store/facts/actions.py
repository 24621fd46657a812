"""Action items: the tasks of session digests, as facts, and the open ones.

Each task line of a session note's digest block
(:mod:`memvault.vault_io.session_digest`) is a fact of the note (segment
``action``; the plan a turn stated in its words, anchored to that turn, or
else the task line): prospective while open (``- [ ]``), episodic once a person ticks
it in Obsidian (``- [x]``, or cancels it, ``- [-]``), with its due date
(``📅 2026-12-04``). So an item lives where the vault says, on every device,
and closes when a person ticks it: :func:`open_action_items` lists only the
open ones (session start, ``reflect``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

import apsw

from memvault.store.db import rows as db
from memvault.vault_io.facts import EPISODIC, PROSPECTIVE, DraftBuilder, Extraction, FactDraft, fact_id, is_fact_text
from memvault.vault_io.note import ParsedNote
from memvault.vault_io.secrets import redact
from memvault.vault_io.session_digest import ActionItem, find_block

#: The fact segment of an action item.
SEGMENT = "action"


def action_facts(note: ParsedNote, source_id: str, said: Sequence[FactDraft] = ()) -> list[FactDraft]:
    """The facts of the task lines of a session note's digest block (none
    without one): each is the fact ``said`` holds in the same words (the plan
    a turn stated, anchored to its turn) with the item's due date and state,
    else a fact of the task line itself."""
    lines = note.body.split("\n")
    found = find_block(lines)
    if found is None:
        return []
    turns = {ActionItem(f.text).key: f for f in said if f.type == PROSPECTIVE}
    builder = DraftBuilder(note, source_id)
    out = []
    for index, item in found.actions:
        type_ = PROSPECTIVE if item.open else EPISODIC
        stated = turns.pop(item.key, None)
        if stated is not None:
            out.append(replace(stated, segment=SEGMENT, type=type_, due=item.due or stated.due))
            continue
        text, n = redact(item.text)
        if not is_fact_text(text):
            continue
        line = note.body_line + index
        draft = builder.add(SEGMENT, text, line, line, (), (), type_, item.due, n, ("plan",))  # weighed as a plan
        # its own id space: an item that says what another fact says is still a fact of its own
        out.append(replace(draft, id=fact_id(source_id, f"action\x00{draft.key}")))
    return out


def with_action_items(note: ParsedNote, source_id: str, extraction: Extraction) -> Extraction:
    """``extraction`` (a session note's facts) with its digest's action items:
    the plan a turn stated in an item's words becomes the item (its due date,
    and its state: a plan a person ticked is done, no longer an open plan in
    recall), any other item is added."""
    actions = action_facts(note, source_id, extraction.facts)
    if actions:
        taken = {a.id for a in actions}
        extraction.facts = [f for f in extraction.facts if f.id not in taken] + actions
    return extraction


@dataclass(frozen=True)
class ActionItemRow:
    """An open action item: the fact, its text, due date, and the session note it belongs to."""

    id: str
    text: str
    due: str | None
    source_id: str
    path: str | None
    created: str | None

    def to_json(self) -> dict[str, object]:
        """JSON-ready form."""
        return {"id": self.id, "text": self.text, "due": self.due, "source": self.source_id, "path": self.path}

    def line(self) -> str:
        """``- [ ] text (due 2026-12-04) ([[session note]])``: one line of a text for an agent."""
        due = f" (due {self.due})" if self.due and self.due not in self.text else ""
        where = f" ([[{PurePosixPath(self.path).stem}]])" if self.path else ""
        return f"- [ ] {self.text}{due}{where}"


def open_action_items(con: apsw.Connection, limit: int = 20, source_ids: list[str] | None = None) -> list[ActionItemRow]:
    """The open action items (nobody ticked them), those due soonest first,
    then the newest sessions' (``source_ids``: of those session notes only)."""
    where = ""
    args: list[object] = [SEGMENT, PROSPECTIVE, "active"]
    if source_ids is not None:
        if not source_ids:
            return []
        where = f" AND f.source_id IN ({','.join('?' * len(source_ids))})"
        args += source_ids
    sql = (
        "SELECT t.id, t.content, f.due, f.source_id, s.path, s.created FROM facts f "
        "JOIN traces t ON t.id = f.trace_id LEFT JOIN traces s ON s.id = f.source_id "
        f"WHERE f.segment = ? AND t.type = ? AND t.status = ?{where} "
        "ORDER BY f.due IS NULL, f.due, s.created DESC, f.source_id, f.ordinal LIMIT ?"
    )
    return [ActionItemRow(*row) for row in db.rows(con, sql, (*args, int(limit)))]
