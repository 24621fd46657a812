"""``facts``: the facts of one source note (see :mod:`memvault.store.answers.browse`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memvault.store.answers import _Answer


@dataclass(frozen=True)
class SourceFact(_Answer):
    """One fact of a source note: a line (an item, a task, a paragraph) of
    it, where it stands, and its state. The fields are in the order ``facts
    --json`` has always printed its keys, every one of them (``null`` when empty)."""

    #: The fact's trace (``f-...``).
    id: str
    #: ``identity``, ``semantic``, ``prospective`` ...
    type: str
    #: ``active`` or ``superseded`` (changed or removed in its source).
    status: str
    #: Why it is superseded (``changed in source`` ...; None: active).
    reason: str | None
    #: The line's text (secrets redacted when it was extracted).
    text: str
    #: The headings above it, ``A > B`` (empty: none).
    heading_path: str
    #: Its ``^block`` id in the note, if it has one.
    block_id: str | None
    #: What to append to the note's link to reach it (``^block`` or a heading).
    anchor: str | None
    #: Its first and last line in the note (1-based; ``(None, None)``: not known).
    lines: tuple[int | None, int | None]
    #: ``vault://path#anchor``.
    source_uri: str
    #: What kind of line: ``item``, ``task``, ``sentence`` ...
    segment: str
    #: The text it was read in (the item it is nested under ...; None: none).
    context: str | None
    #: A task's due date (``YYYY-MM-DD``).
    due: str | None
    tags: tuple[str, ...]
    #: The notes it links to (``[[...]]`` targets).
    links: tuple[str, ...]
    created: str
    updated: str


@dataclass(frozen=True)
class SourceFacts(_Answer):
    """The facts of one source note (``facts PATH``): its vault path, its
    facts (active ones, or all) and whether the note is indexed at all (a
    note with no facts may simply not be synced yet)."""

    NESTED: ClassVar[dict[str, type[_Answer]]] = {"facts": SourceFact}

    #: The note's vault path.
    path: str
    facts: tuple[SourceFact, ...]
    #: Whether the index holds the note.
    indexed: bool
