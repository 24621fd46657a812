"""What recall answers: a :class:`RecallBlock` of :class:`RecallLine` (``context``),
and :class:`SessionStartText` (``session_start``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memvault.store.answers import _Answer


@dataclass(frozen=True)
class RecallLine(_Answer):
    """One memory, fact, turn or passage in a recall block, and the line it took."""


    id: str
    kind: str
    type: str | None
    #: How the line cites it (a note name, ``turn 4``).
    source: str | None
    path: str | None
    score: float | None
    #: Tokens its line added to the block.
    tokens: int
    #: The line as the block shows it.
    text: str
    heading: str | None = None
    passage: str | None = None
    anchor: str | None = None
    ref: str | None = None
    speaker: str | None = None
    #: When it happened.
    when: str | None = None
    #: The memory that says something newer.
    outdated_by: str | None = None


@dataclass(frozen=True)
class RecallBlock(_Answer):
    """A ``## Recalled Memory`` block within a token budget ("" when nothing is relevant)."""

    NESTED: ClassVar[dict[str, type[_Answer]]] = {"items": RecallLine}

    text: str
    tokens: int
    budget: int
    items: tuple[RecallLine, ...] = ()
    notices: tuple[str, ...] = ()


@dataclass(frozen=True)
class SessionStartText(_Answer):
    """What an agent's session starts with."""

    text: str
    tokens: int
    budget: int
