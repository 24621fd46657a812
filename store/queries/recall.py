"""Recall's questions: :class:`ContextQuery` (a recall block) and :class:`SessionStartQuery`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memvault.store.queries import _Query, _strings


@dataclass(frozen=True)
class ContextQuery(_Query):
    """A recall block for ``message`` within ``budget`` tokens (:meth:`Retriever.context`)."""

    OP: ClassVar[str] = "context"

    message: str
    #: Most tokens the block may use; None: ``recall.budget``.
    budget: int | None = None
    #: auto (memories, facts and conversation turns ranked together, notes
    #: that beat them), memories (memories and facts) or all (ordinary notes too).
    what: str = "auto"
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
    #: The session's project scope: with no ``memory_scope``, memories of
    #: this scope and of ``user`` are recalled, this scope's first.
    prefer_scope: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "memory_scope", _strings(self.memory_scope))


@dataclass(frozen=True)
class SessionStartQuery(_Query):
    """What an agent's session starts with (:meth:`Retriever.session_start`)."""

    OP: ClassVar[str] = "session_start"

    #: The working directory's project; None: none.
    project: str | None = None
    budget: int | None = None
