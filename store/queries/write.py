"""The one write a front end hands the daemon: :class:`NewMemory`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memvault.store.queries import _Query


@dataclass(frozen=True)
class NewMemory(_Query):
    """A memory to add (:meth:`MemoryStore.add`, whose docstring says what
    each option does). While a daemon runs, ``memvault add`` has it write the
    memory (``daemon.client.add``): its modules and model are loaded."""

    OP: ClassVar[str] = "add"

    content: str
    #: A memory type or an alias of one (``fact``, ``todo``...); None: semantic
    #: (for a keyed write: the type of the memory holding the key).
    type: str | None = "semantic"
    tags: tuple[str, ...] = ()
    scope: str = "user"
    #: Notes the memory relates to.
    links: tuple[str, ...] = ()
    source: str = "manual"
    allow_duplicate: bool = False
    #: The slot the memory fills (``editor.theme``): see :mod:`memvault.store.memories.keys`.
    key: str | None = None
    #: Why a keyed write supersedes the memory holding its key.
    reason: str | None = None

    def __post_init__(self) -> None:
        # Kept as given (the store checks and cleans them): only made tuples.
        for name in ("tags", "links"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))
