"""The questions the store answers, typed, one module per kind:
:mod:`.search` (:class:`~.search.SearchQuery`), :mod:`.recall`
(:class:`~.recall.ContextQuery`, :class:`~.recall.SessionStartQuery`); and
the one write a front end hands the daemon, :mod:`.write`'s
:class:`~.write.NewMemory`.

Each option of ``search``, ``context`` and ``session_start`` is declared
once, in its query's class. The CLI, the MCP server and the hooks build a
query, the daemon's socket carries it as :meth:`to_json` and reads it back
with :meth:`from_json` (which refuses what it does not know, so a new option
needs no second list anywhere), and the retriever answers it. (One module
per kind, as :mod:`memvault.store.answers`: a process loads only the
dataclasses it asks with.)
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from memvault.vault_io.errors import UsageError

Q = TypeVar("Q", bound="_Query")


class QueryError(UsageError):
    """A query read from JSON that is not one (an unknown key, a wrong type)."""


def _strings(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """One string, a list of them, or nothing, as a tuple of non-blank strings."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    return tuple(v.strip() for v in value if v and v.strip())


@dataclass(frozen=True)
class _Query:
    """What the three queries share: the daemon op that answers them, JSON both ways."""

    #: The op of the daemon's socket (and the retriever's method) that answers it.
    OP: ClassVar[str] = ""

    @property
    def warm_helps(self) -> bool:
        """Whether the daemon's loaded model makes this answer faster (else it is asked for nothing)."""
        return True

    def to_json(self) -> dict[str, Any]:
        """The query as JSON values (tuples as lists), every field named."""
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
                for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls: type[Q], data: object) -> Q:
        """The query ``data`` (from :meth:`to_json`) describes; raises
        :class:`QueryError` naming an unknown key or a value of the wrong type."""
        if not isinstance(data, Mapping):
            raise QueryError(f"a {cls.OP} query is a JSON object")
        hints = typing.get_type_hints(cls)
        known = {f.name for f in dataclasses.fields(cls)}
        for key, value in data.items():
            if key not in known:
                raise QueryError(f"{cls.OP}: unknown option {key!r}")
            if not _fits(value, hints[key]):
                raise QueryError(f"{cls.OP}: option {key!r} has the wrong type")
        return cls(**dict(data))


def _fits(value: object, hint: Any) -> bool:
    """Whether a JSON value can stand for a field of type ``hint``."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if typing.get_origin(hint) is tuple:
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
    if hint is type(None):
        return value is None
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


#: The ops of the daemon's socket a query answers.
QUERY_OPS = ("search", "context", "session_start")


def query_type(op: str) -> type[_Query]:
    """The query type of an op of :data:`QUERY_OPS` (imported on first use); KeyError for another."""
    if op == "search":
        from memvault.store.queries.search import SearchQuery

        return SearchQuery
    from memvault.store.queries.recall import ContextQuery, SessionStartQuery

    return {"context": ContextQuery, "session_start": SessionStartQuery}[op]
