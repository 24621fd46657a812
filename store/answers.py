"""The answers the store gives, typed: :class:`SearchResult` (of
:class:`SearchHit`), :class:`RecallBlock` (of :class:`RecallLine`) and
:class:`SessionStartText`, the counterparts of :mod:`.queries`.

The retriever builds them; the daemon's socket, the CLI's ``--json``, the
MCP server and the hooks all read and write them through one
:meth:`to_json` / :meth:`from_json` each. In JSON a hit or a recall line
always has its main keys (``null`` when empty) and has each optional key
(a fact's anchor, a turn's speaker, ``explain`` ...) only when it is set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from memvault.vault_io.errors import MemvaultError

A = TypeVar("A", bound="_Answer")


class AnswerError(MemvaultError):
    """JSON that is not the answer it should be (a daemon of another version)."""


@dataclass(frozen=True)
class _Answer:
    """JSON both ways: required fields and those in :attr:`ALWAYS` always, the rest when not None."""

    #: Fields written even when None.
    ALWAYS: ClassVar[tuple[str, ...]] = ()
    #: Fields holding a tuple of other answers (their type), read back from lists.
    NESTED: ClassVar[dict[str, type[_Answer]]] = {}

    def to_json(self) -> dict[str, Any]:
        """JSON values (tuples as lists, nested answers as objects)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if value is None and not required and f.name not in self.ALWAYS:
                continue
            if f.name in self.NESTED:
                value = [v.to_json() for v in value]
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_json(cls: type[A], data: object) -> A:
        """The answer ``data`` (from :meth:`to_json`) describes; raises
        :class:`AnswerError` for a key it does not know or a missing one."""
        if not isinstance(data, Mapping):
            raise AnswerError(f"{cls.__name__}: not a JSON object")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise AnswerError(f"{cls.__name__}: unknown keys {sorted(unknown)}")
        values = dict(data)
        for name, kind in cls.NESTED.items():
            if name in values:
                values[name] = tuple(kind.from_json(v) for v in values[name])
        for name, value in values.items():
            if isinstance(value, list) and name not in cls.NESTED:
                values[name] = tuple(value)
        try:
            return cls(**values)
        except TypeError as exc:  # a required key missing
            raise AnswerError(f"{cls.__name__}: {exc}") from None


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


@dataclass(frozen=True)
class SearchResult(_Answer):
    """What a search answers: the mode it ran in, its hits, best first, and notices for people."""

    NESTED: ClassVar[dict[str, type[_Answer]]] = {"hits": SearchHit}

    mode: str
    hits: tuple[SearchHit, ...]
    notices: tuple[str, ...] = ()


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


#: The answer type of each query op.
ANSWERS: dict[str, type[_Answer]] = {"search": SearchResult, "context": RecallBlock, "session_start": SessionStartText}


@dataclass
class WriteResult:
    """What a store-side change did (``add``, ``update``, ``forget``, ...):
    :meth:`as_dict` for ``--json``, MCP and the daemon's socket, read back by
    :meth:`from_dict`."""

    id: str
    action: str  # added | duplicate_of | updated | unchanged | forgotten | restored | reverted | discarded
    path: str | None = None
    conflict: str | None = None
    conflict_path: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: The memory's version after the change (None when not looked up).
    version: int | None = None
    #: Secrets replaced by ``[redacted]`` in the content given.
    redacted: int = 0
    #: For ``duplicate_of``: why the new memory was taken for the existing one.
    reason: str | None = None
    #: For ``added``: live memories the new one resembles (``Similar.as_dict`` each), closest first.
    similar_to: list[dict[str, object]] | None = None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form for ``--json`` output."""
        data: dict[str, object] = {
            "id": self.id, "action": self.action, "path": self.path,
            "conflict": self.conflict, "conflict_path": self.conflict_path, "warnings": self.warnings,
        }
        if self.version is not None:
            data["version"] = self.version
        if self.redacted:
            data["redacted"] = self.redacted
        if self.action == "duplicate_of":
            data.update(duplicate_of=self.id, reason=self.reason)
        if self.similar_to is not None:
            data["similar_to"] = self.similar_to
        return data

    @classmethod
    def from_dict(cls, data: object) -> "WriteResult":
        """The result :meth:`as_dict` gave (another process's: the daemon's);
        ValueError when ``data`` is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not isinstance(data.get("action"), str):
            raise ValueError("not a write result")
        kinds: dict[str, tuple[type, ...]] = {
            "path": (str, type(None)), "conflict": (str, type(None)), "conflict_path": (str, type(None)),
            "warnings": (list,), "version": (int, type(None)), "redacted": (int,), "reason": (str, type(None)),
            "similar_to": (list, type(None)),
        }
        fields = {k: data[k] for k in kinds if k in data}
        if any(not isinstance(v, kinds[k]) for k, v in fields.items()):
            raise ValueError("not a write result")
        return cls(data["id"], data["action"], **fields)
