"""``stats``: counts of what the index holds (see :mod:`memvault.store.answers.browse`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memvault.store.answers import _Answer


@dataclass(frozen=True)
class NoteParseError(_Answer):
    """A note indexed with a parse error (``stats --errors``)."""

    path: str
    error: str


@dataclass(frozen=True)
class IndexStats(_Answer):
    """Counts of what the index holds (``stats``)."""

    NESTED: ClassVar[dict[str, type[_Answer]]] = {"parse_error_list": NoteParseError}

    notes: int
    attachments: int
    traces: int
    #: Traces of each kind (``fact``, ``memory``, ``note``), by kind's name.
    traces_by_kind: dict[str, int]
    edges: int
    links_unresolved: int
    links_ambiguous: int
    #: Distinct tags.
    tags: int
    parse_errors: int
    read_errors: int
    #: Notes indexed with U+FFFD for bytes that are not UTF-8 (counted in parse errors too).
    undecodable: int
    #: Symlinks leading out of the vault that the last scan skipped unread.
    skipped_outside_vault: int
    #: Conflicts memvault ever recorded.
    conflicts: int
    #: Memory notes not written yet.
    pending_writes: int
    #: When the vault was last synced (None: never).
    last_sync: str | None
    #: Active facts of memory sources.
    facts: int
    facts_superseded: int
    fact_sources: int
    #: Secrets redacted out of fact text.
    secrets_redacted: int
    #: The index database, and its size with its WAL files (None: not asked).
    index_path: str | None = None
    index_bytes: int | None = None
    #: The vault's folder.
    vault: str | None = None
    #: Every note with a parse error (None: not asked).
    parse_error_list: tuple[NoteParseError, ...] | None = None
