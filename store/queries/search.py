"""A search: :class:`SearchQuery`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memvault.store.queries import _Query, _strings


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
