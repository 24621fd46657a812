"""The store's review answers, typed: what a person checks now and then
rather than browses: conflict copies (:data:`ConflictCopy`; one of them
side by side, :class:`CopySides`, and settled, :class:`SettledCopy`), flagged
contradictions (:class:`Contradiction`), who the person is
(:class:`IdentityItem`), the memory sources (:class:`MemorySource`) and
the embedding model's state (:class:`ModelStatus`).

A module of its own, as :mod:`.browse` and the search answers are (a
process loads only what it asks). Each answer's :meth:`to_json` gives
the JSON the CLI's ``--json``, ``status`` and the MCP tools print, key for
key, and :meth:`from_json` reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from memvault.store.answers import AnswerError, _Answer
from memvault.store.answers.browse.parts import _Flat, _Part

P = TypeVar("P", bound="_WithParts")


@dataclass(frozen=True)
class _WithParts(_Answer):
    """An answer with fields that each hold one other answer (:attr:`PARTS`), as JSON objects."""

    #: Fields holding one other answer (its type).
    PARTS: ClassVar[dict[str, type[_Answer]]] = {}

    def to_json(self) -> dict[str, Any]:
        """JSON values, each part as an object."""
        out = super().to_json()
        for name in self.PARTS:
            if out.get(name) is not None:
                out[name] = getattr(self, name).to_json()
        return out

    @classmethod
    def from_json(cls: type[P], data: object) -> P:
        """The answer ``data`` (from :meth:`to_json`) describes, its parts read back too."""
        if not isinstance(data, Mapping):
            raise AnswerError(f"{cls.__name__}: not a JSON object")
        values = dict(data)
        for name, kind in cls.PARTS.items():
            if values.get(name) is not None:
                values[name] = kind.from_json(values[name])
        return super().from_json(values)


# -- conflict copies --------------------------------------------------------------------
# Three kinds, each with the keys in the order ``conflicts`` has always
# given them (``status --json`` prints them as they are).


@dataclass(frozen=True)
class OwnConflict(_Answer):
    """memvault's own conflict copy, written on this device: the store's
    version of a memory, beside its note that a person changed meanwhile."""

    #: The memory.
    id: str
    #: The memory's note.
    note: str
    #: The ``(conflict ...)`` note with the store's version (None: not written).
    conflict_note: str | None
    detail: str
    #: When it was recorded.
    when: str
    #: ``memvault``.
    kind: str
    #: Whose version the copy holds.
    side: str


@dataclass(frozen=True)
class CarriedConflict(_Answer):
    """A memvault conflict copy written on another device, brought here by the sync tool."""

    #: The memory (its note's ``conflict_of``).
    id: str | None
    #: The memory's note (None: not in this index).
    note: str | None
    conflict_note: str
    #: ``memvault``.
    kind: str
    #: None: this device has no record of when.
    when: str | None
    detail: str
    side: str


@dataclass(frozen=True)
class SyncCopy(_Answer):
    """A sync tool's conflict copy of a note (the other device's version)."""

    #: The trace of the note it sits beside (None: that note is not indexed).
    id: str | None
    #: The note it is a copy of.
    note: str
    conflict_note: str
    #: ``Syncthing``, ``Dropbox`` ...
    tool: str
    #: The device whose version the copy holds, when its name says.
    device: str | None
    #: Whether its text differs from the note's.
    differs: bool
    #: ``sync``.
    kind: str
    #: None: the sync tool does not say when.
    when: str | None
    side: str
    detail: str


#: One conflict copy, as ``conflicts`` lists it.
ConflictCopy = OwnConflict | CarriedConflict | SyncCopy


@dataclass(frozen=True)
class CopySides(_Answer):
    """A conflict copy beside the note it is a copy of (``conflicts --copy
    PATH``): whose version each side holds and both texts."""

    #: The conflict copy's vault path.
    copy: str
    #: The note it is a copy of (None: memvault's own copy of a memory whose note is gone).
    note: str | None
    #: The active memory the note holds (None: an ordinary note).
    memory: str | None
    #: Whose version the copy holds (``Syncthing's copy of device LAPTOP1's version`` ...).
    copy_side: str
    #: Whose version the note holds.
    note_side: str
    copy_content: str
    #: The note's text (None: the note is not there).
    note_content: str | None


@dataclass(frozen=True)
class SettledCopy(CopySides):
    """A conflict copy settled (``conflicts --copy PATH --take note|copy``):
    its two sides as they were, the side taken, and where the other went.
    The keys in the order ``--json`` has always printed them."""

    #: ``note`` or ``copy``.
    took: str
    #: The memory's version after taking the copy (None: nothing was updated).
    version: int | None
    #: Where an ordinary note's own file went when the copy was taken (None: not moved).
    note_trashed: str | None
    #: The earlier version of the memory that keeps the copy's text when the
    #: note was taken (left out of JSON when none was written: the texts did
    #: not differ, or no memory). Keyword-only: a field with a default must
    #: stand here, before ``copy_trashed``, for the JSON's order.
    kept_as: str | None = field(default=None, kw_only=True)
    #: Where the copy file went (in ``.trash/``).
    copy_trashed: str


# -- contradictions, identity, sources, the model ---------------------------------------


@dataclass(frozen=True)
class ContradictionSide(_Answer):
    """One of the two memories or facts that contradict each other."""

    id: str
    #: Its text (None: it is gone from the index).
    content: str | None
    path: str | None


@dataclass(frozen=True)
class Contradiction(_WithParts):
    """Two memories or facts that consolidation flagged as contradicting (the newer one wins)."""

    PARTS: ClassVar[dict[str, type[_Answer]]] = {"newer": ContradictionSide, "older": ContradictionSide}

    #: Its number (what ``conflicts --dismiss/--resolve`` take).
    id: int
    #: Which rule flagged it (``number``, ``negation``, ``llm`` ...).
    kind: str
    #: ``open``, ``dismissed`` or ``resolved``.
    status: str
    reason: str
    #: The consolidation run that flagged it.
    run: str | None
    #: When it was flagged.
    flagged: str
    newer: ContradictionSide
    older: ContradictionSide


@dataclass(frozen=True)
class IdentityItem(_Answer):
    """An active identity memory or identity fact (an "About me" source's line)."""

    id: str
    #: ``memory`` or ``fact``.
    kind: str
    type: str
    path: str | None
    content: str


@dataclass(frozen=True)
class MemorySource(_Answer):
    """A note whose lines are facts (``source list``)."""

    path: str
    #: The source note's trace.
    id: str
    #: How it is marked: ``frontmatter``, ``tag``, ``glob`` ...
    marks: tuple[str, ...]
    #: Its active facts.
    facts: int
    #: Secrets redacted out of its facts.
    redacted: int
    #: Which extractor read it (``default``, ``llm``).
    extractor: str
    extracted_at: str


@dataclass(frozen=True)
class ModelCoverage(_Part):
    """How much of the vault has a model's vectors."""

    KEY: ClassVar[str] = "chunks"

    #: Chunks of the vault.
    chunks: int
    #: Chunks with this model's vectors.
    embedded: int
    #: Chunks without one: semantic search does not see them yet.
    unembedded: int
    #: Traces whose text changed and waits to be cut into chunks (their
    #: texts are not counted above until it is).
    queued: int
    #: Why the model could not be loaded last time (None: it could, or was not tried).
    unavailable: str | None


@dataclass(frozen=True)
class ModelStatus(_Flat):
    """The configured embedding model and how much of the vault has its vectors."""

    FLAT: ClassVar[dict[str, type[_Part]]] = {"coverage": ModelCoverage}

    #: The model as configured.
    model: str
    #: The model's cache key (None: embedding is off, or the name is unknown).
    key: str | None
    #: Its vectors (None when there is no model to have them); its keys stand in this answer's JSON.
    coverage: ModelCoverage | None = None
