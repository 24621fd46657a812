"""The questions the store answers, typed: :class:`SearchQuery`,
:class:`ContextQuery` and :class:`SessionStartQuery`; and the one write a
front end hands the daemon, :class:`NewMemory`.

Each option of ``search``, ``context`` and ``session_start`` is declared
here once. The CLI, the MCP server and the hooks build a query, the daemon's
socket carries it as :meth:`to_json` and reads it back with
:meth:`from_json` (which refuses what it does not know, so a new option
needs no second list anywhere), and the retriever answers it.
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


@dataclass(frozen=True)
class SearchQuery(_Query):
    """A search: hits for ``query`` by words and meaning (:meth:`Retriever.search`)."""

    OP: ClassVar[str] = "search"

    query: str
    #: keyword, semantic or hybrid; None: hybrid when vectors exist, else keyword.
    mode: str | None = None
    limit: int = 10
    #: Only traces of these types (``note`` or a memory type).
    types: tuple[str, ...] = ()
    #: Only traces with one of these tags (or a nested tag).
    tags: tuple[str, ...] = ()
    #: Only notes whose vault path matches this glob.
    path_glob: str | None = None
    #: ``query`` is FTS5 syntax, passed as written (keyword mode).
    raw: bool = False
    #: notes, memories, facts or all.
    what: str = "all"
    #: Only memories of these scopes (notes and facts have none and pass).
    memory_scope: tuple[str, ...] = ()
    include_deleted: bool = False
    include_superseded: bool = False
    #: Each hit carries the signals that ranked it.
    explain: bool = False
    #: Count the memories and facts found as recalled.
    record: bool = False
    #: When the hits happened, as a person writes it (see :mod:`~.retrieval.when`).
    since: str | None = None
    until: str | None = None
    #: Each hit carries its matching passage's plain text. A reader that shows
    #: only the snippet (the CLI's human output) asks without: choosing a
    #: note's passage reads it again, which is most of a keyword search's time.
    passages: bool = True

    def __post_init__(self) -> None:
        for name in ("types", "tags", "memory_scope"):
            object.__setattr__(self, name, _strings(getattr(self, name)))

    @property
    def warm_helps(self) -> bool:
        """Keyword and FTS5 searches need no model: the daemon is not asked."""
        return self.mode != "keyword" and not self.raw


@dataclass(frozen=True)
class ContextQuery(_Query):
    """A recall block for ``message`` within ``budget`` tokens (:meth:`Retriever.context`)."""

    OP: ClassVar[str] = "context"

    message: str
    #: Most tokens the block may use; None: ``recall.budget``.
    budget: int | None = None
    #: memories (memories and facts) or all (ordinary notes too).
    what: str = "memories"
    #: Only memories of these scopes.
    memory_scope: tuple[str, ...] = ()
    #: always or relevant; None: ``recall.identity``.
    identity: str | None = None
    #: Count this recall (strength, last access).
    record: bool = True
    since: str | None = None
    until: str | None = None
    #: Relevant memories marked ``pinned: true`` come first in the block.
    pinned: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "memory_scope", _strings(self.memory_scope))


@dataclass(frozen=True)
class SessionStartQuery(_Query):
    """What an agent's session starts with (:meth:`Retriever.session_start`)."""

    OP: ClassVar[str] = "session_start"

    #: The working directory's project; None: none.
    project: str | None = None
    budget: int | None = None


@dataclass(frozen=True)
class NewMemory(_Query):
    """A memory to add (:meth:`MemoryStore.add`, whose docstring says what
    each option does). While a daemon runs, ``memvault add`` has it write the
    memory (``daemon.client.add``): its modules and model are loaded."""

    OP: ClassVar[str] = "add"

    content: str
    #: A memory type or an alias of one (``fact``, ``todo``...).
    type: str = "semantic"
    tags: tuple[str, ...] = ()
    scope: str = "user"
    #: Notes the memory relates to.
    links: tuple[str, ...] = ()
    source: str = "manual"
    allow_duplicate: bool = False

    def __post_init__(self) -> None:
        # Kept as given (the store checks and cleans them): only made tuples.
        for name in ("tags", "links"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))


#: The query type of each op the daemon answers.
QUERIES: dict[str, type[_Query]] = {q.OP: q for q in (SearchQuery, ContextQuery, SessionStartQuery)}
