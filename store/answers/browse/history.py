"""``history``: the versions of a memory or fact (see :mod:`memvault.store.answers.browse`)."""

from __future__ import annotations

from dataclasses import dataclass

from memvault.store.answers import _Answer


@dataclass(frozen=True)
class MemoryVersion(_Answer):
    """One version of a memory or fact (``history``): the current one, an
    older one, or a memory merged into it."""

    #: The memory's id (the current version), ``<id>.v<n>`` (an older one), or a merged memory's id.
    id: str
    #: ``active`` (current), ``superseded`` or ``deleted``.
    status: str
    #: Why it was replaced, forgotten or merged (``updated``, ``merged into m-...``; None: current).
    reason: str | None
    type: str
    updated: str
    content: str
    tags: tuple[str, ...]
