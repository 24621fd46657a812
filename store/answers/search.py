"""What a search answers: :class:`SearchResult`, its hits :class:`SearchHit`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from memvault.store.answers import _Answer


@dataclass(frozen=True)
class SearchHit(_Answer):
    """One hit of a search: a note, memory, fact or turn, and where it matched."""

    ALWAYS: ClassVar[tuple[str, ...]] = ("passage",)

    id: str
    title: str | None
    type: str | None
    path: str | None
    #: An ``obsidian://`` link to the note (at the fact's or turn's block).
    uri: str | None
    score: float
    #: The matching words in context, marked ``**like this**``.
    snippet: str | None
    #: The plain text of the matching passage.
    passage: str | None = None
    #: ``fact`` or ``turn`` (None: a note or memory).
    kind: str | None = None
    #: The block id of a fact or turn (``^t12``).
    anchor: str | None = None
    #: ``path#anchor`` of a turn.
    ref: str | None = None
    source_uri: str | None = None
    heading_path: str | None = None
    #: First and last line of a fact in its source note.
    lines: tuple[int, ...] | None = None
    turn: int | None = None
    speaker: str | None = None
    #: When a turn was said.
    at: str | None = None
    #: ``deleted`` or ``superseded`` (None: active).
    status: str | None = None
    #: The memory's current version (what ``update --expect-version`` takes); MCP fills it.
    version: int | None = None
    #: The signals that ranked the hit (``--explain``).
    explain: dict[str, Any] | None = None
    #: A memory's scope (``user``, a project's name).
    scope: str | None = None


@dataclass(frozen=True)
class SearchResult(_Answer):
    """What a search answers: the mode it ran in, its hits, best first, and notices for people."""

    NESTED: ClassVar[dict[str, type[_Answer]]] = {"hits": SearchHit}

    mode: str
    hits: tuple[SearchHit, ...]
    notices: tuple[str, ...] = ()
