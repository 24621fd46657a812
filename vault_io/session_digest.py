"""The session digest: the part of a session note that says what a conversation came to.

memvault owns the lines between two Obsidian comments (hidden in reading
view) and writes nothing outside them; a person's text above, below or
beside the block stays as it is::

    %% memvault digest: begin (rules; memvault rewrites these lines; 5d41402a) %%
    The user and claude-code worked on "Fix the deploy script". 1 decision was made. 1 action item is open.

    Decisions:
    - Let's go with Postgres for the billing service.

    Action items:
    - [ ] I'll rotate the staging keys next Friday 📅 2026-12-04

    Named: Postgres, Lisbon
    %% memvault digest: end %%

The begin marker ends with a fingerprint of what memvault wrote between the
markers (ticks aside). A block whose lines no longer match it holds a
person's edit: memvault then leaves the whole block as it is, for good
(never deleting text a person wrote), until they delete it, when a fresh
one is written.

The action items are Obsidian tasks (``- [ ]``, a due date as the Tasks
plugin writes it, ``📅 YYYY-MM-DD``). A person ticks one in Obsidian to close
it: the block is rewritten only when what it says changes, and then every
item keeps the state a person gave it (:func:`merge_ticks`), so a tick is
never lost. What the block holds is derived from the conversation
(``store/flows/digest.py``); this module only renders, finds and replaces it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from memvault.vault_io.facts import due_date

#: The first and last line of the block (the maker, "rules" or "llm", goes into the first).
BEGIN = "%% memvault digest: begin ({maker}; memvault rewrites these lines; {mark}) %%"
END = "%% memvault digest: end %%"
_BEGIN_RE = re.compile(r"^%% memvault digest: begin \((?P<maker>[a-z]+)(?P<rest>[;)].*)%%[ \t]*$")
#: The fingerprint at the end of the begin marker's parenthesis.
_MARK_RE = re.compile(r"; (?P<mark>[0-9a-f]{8})\)\s*$")
#: A task's state character, which a person's tick changes without editing the block.
_STATE_RE = re.compile(r"^- \[.\] ")
_END_RE = re.compile(r"^%% memvault digest: end %%[ \t]*$")
#: The label of the action items' list inside the block.
ACTIONS_LABEL = "Action items:"
DECISIONS_LABEL = "Decisions:"
NAMED_LABEL = "Named: "
#: An Obsidian task line: its state character and its text.
_TASK_RE = re.compile(r"^- \[(?P<state>.)\] (?P<text>.+)$")
#: What a line inside the block may not hold: a comment mark would end it, a trailing ``^id`` name a block.
_UNSAFE_RE = re.compile(r"%%|\s\^[A-Za-z0-9-]+\s*$")
_DUE_MARK_RE = re.compile(r"\s*(?:📅|🗓️?)\s*\d{4}-\d{2}-\d{2}")
#: Task states that close an item (done, cancelled), as Obsidian's Tasks plugin reads them.
CLOSED = frozenset("xX-")


@dataclass(frozen=True)
class ActionItem:
    """One open or closed task of a session: what is to be done, and when it is due."""

    text: str
    due: str | None = None
    state: str = " "  # the task's checkbox character: " " open, "x" done

    @property
    def open(self) -> bool:
        """Whether nobody has ticked (or cancelled) it."""
        return self.state not in CLOSED

    @property
    def key(self) -> str:
        """What makes two renderings one item: its text without the due date, case and spacing."""
        bare = _DUE_MARK_RE.sub("", self.text)
        return " ".join(unicodedata.normalize("NFC", bare).casefold().split()).rstrip(".!")

    def line(self) -> str:
        """``- [ ] text 📅 2026-12-04``."""
        due = f" 📅 {self.due}" if self.due and due_date(self.text) is None else ""
        return f"- [{self.state}] {self.text}{due}"


@dataclass(frozen=True)
class SessionDigest:
    """What a session came to: a few sentences, decisions, action items, the names it named."""

    summary: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    actions: tuple[ActionItem, ...] = ()
    named: tuple[str, ...] = ()
    maker: str = "rules"  # rules | llm

    def lines(self) -> list[str]:
        """The block's lines, markers included."""
        out: list[str] = []
        if self.summary:
            out.append(safe(" ".join(self.summary)))
        if self.decisions:
            out += ["", DECISIONS_LABEL, *(f"- {safe(d)}" for d in self.decisions)]
        if self.actions:
            out += ["", ACTIONS_LABEL, *(safe(a.line()) for a in self.actions)]
        if self.named:
            out += ["", NAMED_LABEL + safe(", ".join(self.named))]
        return [BEGIN.format(maker=self.maker, mark=fingerprint(out)), *out, END]


def fingerprint(inner: Sequence[str]) -> str:
    """Eight hex digits of the block's lines between its markers, each task
    read as open (a tick is the one change a person makes that memvault
    merges, not an edit of the block)."""
    flat = "\n".join(_STATE_RE.sub("- [ ] ", line.rstrip()) for line in inner)
    return hashlib.sha256(flat.encode("utf-8")).hexdigest()[:8]


def safe(text: str) -> str:
    """``text`` on one line that cannot end the block or name a block of its own."""
    flat = " ".join(text.split())
    return _UNSAFE_RE.sub(lambda m: m.group(0).replace("%%", "%\\%").replace("^", "\\^"), flat)


@dataclass
class Found:
    """Where the block sits in a note's lines (0-based, ``end`` the end marker's line)."""

    start: int
    end: int
    maker: str
    edited: bool = False  # the lines between the markers are not what memvault wrote (ticks aside)
    actions: list[tuple[int, ActionItem]] = field(default_factory=list)  # (line index, item)


def find_block(lines: Sequence[str]) -> Found | None:
    """The digest block of a note's lines: the first end marker and the begin
    marker nearest before it; None without such a pair. A marker a person
    deleted leaves its partner alone, never pairing it with another block's
    (which would take the person's lines between them for memvault's)."""
    start: int | None = None
    end: int | None = None
    for i, line in enumerate(lines):
        if _BEGIN_RE.match(line):
            start = i
        elif start is not None and _END_RE.match(line):
            end = i
            break
    if start is None or end is None:
        return None
    begin = _BEGIN_RE.match(lines[start])
    assert begin is not None
    mark = _MARK_RE.search(begin.group("rest"))
    # A marker without a fingerprint (or one a person changed) cannot vouch
    # for the lines: they are kept as a person's.
    edited = mark is None or mark.group("mark") != fingerprint(lines[start + 1 : end])
    found = Found(start, end, begin.group("maker"), edited)
    in_actions = False
    for i in range(start + 1, end):
        line = lines[i]
        if not line.strip():
            in_actions = False
        elif line.strip() == ACTIONS_LABEL:
            in_actions = True
        elif in_actions and (m := _TASK_RE.match(line)):
            text = m.group("text").strip()
            found.actions.append((i, ActionItem(text, due_date(text), m.group("state"))))
    return found


def block_maker(text: str) -> str | None:
    """Who wrote the note's digest block ("rules", "llm"), None without one."""
    found = find_block(text.split("\n"))
    return found.maker if found else None


def merge_ticks(digest: SessionDigest, old: Sequence[ActionItem]) -> SessionDigest:
    """``digest`` with each action item in the state the note's block gave it
    (a person's tick kept), and an item a person ticked that the new digest no
    longer names kept too, as a record (closed items are never dropped)."""
    states = {a.key: a.state for a in old}
    actions = [ActionItem(a.text, a.due, states.get(a.key, a.state)) for a in digest.actions]
    keys = {a.key for a in actions}
    actions += [a for a in old if not a.open and a.key not in keys]
    return SessionDigest(digest.summary, digest.decisions, tuple(actions), digest.named, digest.maker)


def old_actions(text: str) -> list[ActionItem]:
    """The action items of the note's block as it is (none without one)."""
    found = find_block(text.split("\n"))
    return [a for _, a in found.actions] if found else []


def put_block(text: str, digest: SessionDigest, before: str) -> str:
    """``text`` with its digest block saying ``digest`` (ticks merged from the
    block it had): replaced in place where it is, else put before the first
    line that is ``before`` (the transcript's heading), else at the end.
    Nothing outside the block changes, and a block a person edited stays
    as it is (``text`` is returned unchanged)."""
    lines = text.split("\n")
    found = find_block(lines)
    if found is not None and found.edited:
        return text
    new = merge_ticks(digest, [a for _, a in found.actions] if found else []).lines()
    if found is not None:
        return "\n".join(lines[: found.start] + new + lines[found.end + 1 :])
    at = next((i for i, line in enumerate(lines) if line.strip() == before), None)
    if at is None:
        tail = "" if text.endswith("\n") or not text else "\n"
        return text + tail + "\n" + "\n".join(new) + "\n"
    head = lines[:at]
    if head and head[-1].strip():
        head.append("")
    return "\n".join([*head, *new, "", *lines[at:]])


def block_lines(text: str) -> set[int]:
    """The indexes (0-based) of the lines of the note's digest block: what a
    reader of the conversation (the llm's prompt) leaves out, being memvault's
    own summary of it."""
    found = find_block(text.split("\n"))
    return set(range(found.start, found.end + 1)) if found else set()
