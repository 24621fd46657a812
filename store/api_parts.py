"""What the halves of the store API (:mod:`.api_read`, :mod:`.api_change`)
may use of :class:`~memvault.store.memory_store.MemoryStore`.

Only declarations for the type checker: the store's core provides every
one of them at run time.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import apsw

    from memvault.store.facts.source_notes import Sources
    from memvault.store.memories.mirror import Memories
    from memvault.store.retrieval.retriever import Retriever
    from memvault.store.settings import Settings


class StoreParts:
    """The store's core, as its API halves see it (a mixin base)."""

    if TYPE_CHECKING:
        root: Path
        settings: Settings
        name: str
        data_dir: Path
        index_path: Path
        con: apsw.Connection
        memories: Memories
        sources: Sources
        retriever: Retriever

        def read_con(self) -> apsw.Connection: ...
        def _flush_history(self, con: apsw.Connection) -> None: ...
