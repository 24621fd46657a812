"""``list`` and ``recent``: a page of traces (see :mod:`memvault.store.answers.browse`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memvault.store.answers import _Answer


@dataclass(frozen=True)
class _TraceKey(_Answer):
    """What every answer about one trace begins with (a listing's item,
    ``show``, ``read``): what it is and where."""

    id: str
    #: ``note``, ``memory`` or ``fact``.
    kind: str
    type: str
    title: str
    path: str | None
    #: An ``obsidian://`` link to the note (None: no path; ``show`` and
    #: ``read`` link a fact's place in its source, a read section's heading).
    uri: str | None
    #: ``active``, ``deleted`` (forgotten) or ``superseded``.
    status: str
    tags: tuple[str, ...]


@dataclass(frozen=True)
class ListedTrace(_TraceKey):
    """One note, memory or fact in a listing: what it is and a preview of its text."""

    #: A memory's scope (``user`` or a project).
    scope: str | None
    strength: float | None
    created: str
    #: When it last changed (``created`` when never changed).
    updated: str
    #: Where it came from (``manual``, ``vault``, ``mcp:<client>`` ...).
    source: str | None
    #: The start of its text on one line (``…`` where cut).
    preview: str
    #: A memory's current version (what ``update --expect-version`` takes); only memories have one.
    version: int | None = None
    #: The key a keyed memory holds (``editor.theme``).
    key: str | None = None


@dataclass(frozen=True)
class TracePage(_Answer):
    """One page of a listing: its items, how many match in all, and where the next page starts."""

    NESTED: ClassVar[dict[str, type[_Answer]]] = {"items": ListedTrace}

    items: tuple[ListedTrace, ...]
    #: Traces that match, on every page.
    total: int
    #: Give it back as ``cursor`` for the next page (None: the last page).
    next_cursor: str | None
