"""The answers the store gives, typed, one module per kind of question:
:mod:`.search` (:class:`~.search.SearchResult` of
:class:`~.search.SearchHit`), :mod:`.recall` (:class:`~.recall.RecallBlock`
of :class:`~.recall.RecallLine`, :class:`~.recall.SessionStartText`) and
:mod:`.write` (:class:`~.write.WriteResult`); the counterparts of
:mod:`memvault.store.queries`; and the answers of the store's other reads:
:mod:`.browse` (list, recent, show, read, history, links, stats, facts: a
module per kind) and :mod:`.review` (conflicts and one conflict copy,
contradictions, identity, sources, the model).

The retriever builds them; the daemon's socket, the CLI's ``--json``, the
MCP server and the hooks all read and write them through one
:meth:`to_json` / :meth:`from_json` each. In JSON a hit or a recall line
always has its main keys (``null`` when empty) and has each optional key
(a fact's anchor, a turn's speaker, ``explain`` ...) only when it is set.

One module per kind, because a process loads only what it asks: every
frozen dataclass costs start-up time, and ``memvault search`` as a process
needs the search answers alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
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


def answer_type(op: str) -> type[_Answer]:
    """The answer type of a query op of the daemon's socket (``search``,
    ``context``, ``session_start``); KeyError for another."""
    if op == "search":
        from memvault.store.answers.search import SearchResult

        return SearchResult
    from memvault.store.answers.recall import RecallBlock, SessionStartText

    return {"context": RecallBlock, "session_start": SessionStartText}[op]
