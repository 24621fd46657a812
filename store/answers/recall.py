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
    #: Relevant memories, facts or passages ranked for the message that did not fit (None: none).
    left_out: int | None = None
    #: Said when the block uses over :data:`FULL_SHARE` of its budget and
    #: items were left out: a larger budget would recall them (None: not so).
    full: str | None = None


#: Share of the budget past which a block with items left out says so (``full``).
FULL_SHARE = 0.8


def full_note(tokens: int, budget: int, left_out: int) -> str | None:
    """What :attr:`RecallBlock.full` says for a block of ``tokens`` of ``budget`` with ``left_out`` items out."""
    if not left_out or budget <= 0 or tokens <= FULL_SHARE * budget:
        return None
    return (f"the block uses {round(100 * tokens / budget)} % of its {budget}-token budget and {left_out} relevant "
            f"item{'s' if left_out != 1 else ''} did not fit: a larger budget recalls "
            f"{'them' if left_out != 1 else 'it'}")


@dataclass(frozen=True)
class SessionStartText(_Answer):
    """What an agent's session starts with."""

    text: str
    tokens: int
    budget: int
