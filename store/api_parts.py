"""What the parts of the store API (:mod:`.api_read`, :mod:`.api_change`,
:mod:`.api_sync`) may use of :class:`~memvault.store.memory_store.MemoryStore`.

Only declarations for the type checker: the store's core provides every
one of them at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import apsw

    from memvault.store.api_sync import SyncListener, SyncReport
    from memvault.store.context import StoreContext
    from memvault.store.embedding.pipeline import EmbedReport
    from memvault.store.facts.observer import FactObserver
    from memvault.store.facts.source_notes import Sources
    from memvault.store.index.reconcile import Indexer
    from memvault.store.memories.mirror import Memories
    from memvault.store.retrieval.retriever import Retriever
    from memvault.store.settings import Settings


class StoreParts:
    """The store's core, as its API halves see it (a mixin base)."""

    if TYPE_CHECKING:
        root: Path
        settings: Settings

        # Read-only here: the core computes them (properties, cached or not).
        @property
        def name(self) -> str: ...
        @property
        def data_dir(self) -> Path: ...
        @property
        def index_path(self) -> Path: ...
        @property
        def history_folder(self) -> Path: ...
        @property
        def con(self) -> apsw.Connection: ...
        @property
        def ctx(self) -> StoreContext: ...
        @property
        def reconciler(self) -> Indexer: ...
        @property
        def memories(self) -> Memories: ...
        @property
        def sources(self) -> Sources: ...
        @property
        def retriever(self) -> Retriever: ...

        fact_keep: dict[str, set[str]]
        sync_listeners: list[SyncListener]

        def read_con(self) -> apsw.Connection: ...
        def sync(self) -> SyncReport: ...
        def sync_paths(self, paths: Iterable[str]) -> SyncReport: ...
        def rebuild(self) -> SyncReport: ...
        def close(self) -> None: ...
        def fact_observer(self, con: apsw.Connection | None = None) -> FactObserver: ...
        def _flush_history(self, con: apsw.Connection) -> None: ...
        def refresh_source_globs(self) -> None: ...
        def embed(self, progress: Callable[[int, int], None] | None = None) -> EmbedReport: ...
        def indexed_paths_under(self, folder: str) -> set[str]: ...
        def embed_written(self, ids: Sequence[str] = (), paths: Sequence[str] = ()) -> list[str]: ...
